/*
 * special.c - cutting special and added tokens out of the text before the model runs.
 *
 * Which tokens: CONTROL, USER_DEFINED and UNKNOWN ones (llama.cpp's cache_special_tokens).
 * With parse_special = false only USER_DEFINED tokens that are not also CONTROL/UNKNOWN are
 * matched: added tokens such as Gemma's runs of spaces / newlines / tabs and its HTML tags are
 * always split out (as Hugging Face tokenizers and llama.cpp do), control tokens never.
 *
 * The rule we must reproduce is llama.cpp's tokenizer_st_partition: take the special tokens
 * in order of text length, longest first; for each, cut every leftmost non-overlapping
 * occurrence out of the text fragments that are still raw. That is not "longest match at
 * each position": with tokens "bcd" and "ab", "abcd" gives "a" + <bcd>, not <ab> + "cd".
 * Done literally it costs one full-text search per special token (Gemma has 6414), so we get
 * the same answer another way:
 *
 *   1. one pass over the text with a byte trie of all special tokens lists every occurrence
 *      (rank, pos), rank being the token's place in the priority order (consecutive
 *      occurrences of one token, as in a long run of spaces, are kept as one run);
 *   2. the occurrences are ordered by (rank, pos) (a counting sort when there are many);
 *   3. they are accepted in that order when neither their first nor their last byte is
 *      already covered. Checking the two ends suffices: every accepted occurrence is at
 *      least as long as the current one, so one that lies strictly inside it cannot exist.
 *
 * Ties between different tokens of equal length (std::sort is not stable in llama.cpp) are
 * broken by id; they only matter if two equal-length tokens overlap in the text.
 * Not modelled: the LSTRIP/RSTRIP attributes llama.cpp sets by model name (phi-3, some
 * BERTs), which neither GGUF nor our spec carries.
 */
#include "tokenizer/tok_internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

static bool matched_without_parse(uint8_t attr) {
    return (attr & TOK_ATTR_USER) && !(attr & (TOK_ATTR_CONTROL | TOK_ATTR_UNKNOWN));
}

static const tok_str *spec_str(const hearth_tok *tok, int32_t rank) {
    return &tok->strs[tok->specials[rank]];
}

static int cmp_special(const void *pa, const void *pb, void *ctx) {
    const hearth_tok *tok = ctx;
    int32_t a = *(const int32_t *)pa, b = *(const int32_t *)pb;
    uint32_t la = tok->strs[a].len, lb = tok->strs[b].len;
    if (la != lb) return la > lb ? -1 : 1;
    return (a > b) - (a < b);
}

static int32_t trie_child(const hearth_tok *tok, int32_t node, uint8_t b) {
    if (node == 0) return tok->root_child[b];
    for (int32_t c = tok->trie[node].first_child; c >= 0; c = tok->trie[c].next_sibling)
        if (tok->trie[c].byte == b) return c;
    return -1;
}

hearth_status tok_special_build(hearth_tok *tok, hearth_err *err) {
    int32_t n = 0;
    size_t n_bytes = 0;
    for (int32_t id = 0; id < tok->n_vocab; id++)
        if ((tok->attr[id] & (TOK_ATTR_CONTROL | TOK_ATTR_USER | TOK_ATTR_UNKNOWN)) &&
            tok->strs[id].len > 0) {
            n++;
            n_bytes += tok->strs[id].len;
        }
    for (int i = 0; i < 256; i++) tok->root_child[i] = -1;
    tok->n_specials = n;
    tok->n_user = 0;
    tok->specials = malloc(((size_t)n + 1) * sizeof *tok->specials);
    tok->trie = malloc((n_bytes + 1) * sizeof *tok->trie);
    if (!tok->specials || !tok->trie)
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    n = 0;
    for (int32_t id = 0; id < tok->n_vocab; id++)
        if ((tok->attr[id] & (TOK_ATTR_CONTROL | TOK_ATTR_USER | TOK_ATTR_UNKNOWN)) &&
            tok->strs[id].len > 0) {
            tok->specials[n++] = id;
            if (matched_without_parse(tok->attr[id])) tok->n_user++;
        }
    qsort_r(tok->specials, (size_t)n, sizeof *tok->specials, cmp_special, tok);

    tok->trie[0] = (tok_trie_node){-1, -1, -1, 0};
    tok->n_trie = 1;
    for (int32_t r = 0; r < n; r++) {
        const tok_str *s = spec_str(tok, r);
        const uint8_t *p = (const uint8_t *)tok->blob + s->off;
        int32_t node = 0;
        for (uint32_t i = 0; i < s->len; i++) {
            int32_t c = trie_child(tok, node, p[i]);
            if (c < 0) {
                c = tok->n_trie++;
                tok->trie[c] = (tok_trie_node){-1, -1, -1, p[i]};
                if (node == 0) {
                    tok->root_child[p[i]] = c;
                } else {
                    tok->trie[c].next_sibling = tok->trie[node].first_child;
                    tok->trie[node].first_child = c;
                }
            }
            node = c;
        }
        tok->trie[node].rank = r; /* texts are unique: no two specials end on one node */
    }
    return HEARTH_OK;
}

/* Occurrences of one special token at consecutive positions pos .. pos+count-1. Only a token
 * made of one repeated byte (Gemma's runs of spaces, newlines, tabs) can occur at consecutive
 * positions, and there a run of R bytes holds ~31 R occurrences: keeping them as runs keeps
 * memory linear in the number of runs, not in R times the number of such tokens. */
typedef struct {
    uint32_t rank, pos, count;
} occ_run;

static int cmp_run(const void *pa, const void *pb) {
    const occ_run *a = pa, *b = pb;
    if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

/* Order runs by (rank, pos); they arrive with pos ascending per rank. */
static bool sort_runs(occ_run *occ, size_t k, int32_t n_ranks) {
    if (k < 4096) {
        qsort(occ, k, sizeof *occ, cmp_run);
        return true;
    }
    size_t *start = calloc((size_t)n_ranks + 1, sizeof *start);
    occ_run *tmp = malloc(k * sizeof *tmp);
    if (!start || !tmp) {
        free(start);
        free(tmp);
        return false;
    }
    for (size_t i = 0; i < k; i++) start[occ[i].rank + 1]++;
    for (int32_t r = 0; r < n_ranks; r++) start[r + 1] += start[r];
    for (size_t i = 0; i < k; i++) tmp[start[occ[i].rank]++] = occ[i]; /* stable */
    memcpy(occ, tmp, k * sizeof *occ);
    free(start);
    free(tmp);
    return true;
}

static int cmp_u64(const void *pa, const void *pb) {
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return (a > b) - (a < b);
}

static bool push_frag(tok_vec *frags, size_t s, size_t e, int32_t id) {
    return tok_vec_push(frags, (int32_t)s) && tok_vec_push(frags, (int32_t)e) &&
           tok_vec_push(frags, id);
}

bool tok_plain_overlaps(const tok_plain *pl, size_t s, size_t e) {
    if (!pl) return false;
    size_t lo = 0, hi = pl->n; /* the first range ending after s */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (pl->v[2 * mid + 1] <= s) lo = mid + 1;
        else hi = mid;
    }
    return lo < pl->n && pl->v[2 * lo] < e;
}

bool tok_special_split(const hearth_tok *tok, const char *text, size_t n, bool parse_special,
                       const tok_plain *plain, tok_vec *frags) {
    if (n == 0) return true;
    if (n > INT32_MAX) return false;
    if (tok->n_specials == 0 || (!parse_special && tok->n_user == 0))
        return push_frag(frags, 0, n, -1);

    const uint8_t *t = (const uint8_t *)text;
    occ_run *occ = NULL;
    uint32_t *last = NULL; /* per rank: 1 + index of its latest run, 0 = none */
    uint64_t *acc = NULL;
    uint8_t *covered = NULL;
    size_t n_occ = 0, cap_occ = 0, n_acc = 0;
    bool ok = false;

    /* 1. every occurrence of every enabled special token, as runs */
    for (size_t p = 0; p < n; p++) {
        int32_t node = tok->root_child[t[p]];
        for (size_t q = p + 1; node >= 0; q++) {
            int32_t r = tok->trie[node].rank;
            if (r >= 0 && ((parse_special && !tok_plain_overlaps(plain, p, q)) ||
                           matched_without_parse(tok->attr[tok->specials[r]]))) {
                if (!last && !(last = calloc((size_t)tok->n_specials, sizeof *last))) goto done;
                occ_run *prev = last[r] ? &occ[last[r] - 1] : NULL;
                if (prev && prev->pos + prev->count == p) {
                    prev->count++;
                } else {
                    if (n_occ == cap_occ &&
                        !hearth_buf_grow(&occ, &cap_occ, n_occ + 1, sizeof *occ, 64))
                        goto done;
                    occ[n_occ++] = (occ_run){(uint32_t)r, (uint32_t)p, 1};
                    last[r] = (uint32_t)n_occ;
                }
            }
            if (q >= n) break;
            node = trie_child(tok, node, t[q]);
        }
    }
    if (n_occ == 0) {
        ok = push_frag(frags, 0, n, -1);
        goto done;
    }

    /* 2-3. accept by priority, leftmost first within a token */
    if (!sort_runs(occ, n_occ, tok->n_specials)) goto done;
    covered = calloc(n, 1);
    acc = malloc(n * sizeof *acc);
    if (!covered || !acc) goto done;
    for (size_t i = 0; i < n_occ; i++) {
        size_t len = spec_str(tok, (int32_t)occ[i].rank)->len;
        size_t end = (size_t)occ[i].pos + occ[i].count;
        for (size_t p = occ[i].pos; p < end;) {
            if (covered[p] || covered[p + len - 1]) {
                p++;
                continue;
            }
            memset(covered + p, 1, len);
            acc[n_acc++] = ((uint64_t)p << 32) | occ[i].rank;
            p += len; /* the run's next positions overlap this one */
        }
    }
    qsort(acc, n_acc, sizeof *acc, cmp_u64);

    size_t done_to = 0;
    for (size_t i = 0; i < n_acc; i++) {
        size_t p = (size_t)(acc[i] >> 32);
        int32_t r = (int32_t)(uint32_t)acc[i];
        size_t len = spec_str(tok, r)->len;
        if (p > done_to && !push_frag(frags, done_to, p, -1)) goto done;
        if (!push_frag(frags, p, p + len, tok->specials[r])) goto done;
        done_to = p + len;
    }
    if (done_to < n && !push_frag(frags, done_to, n, -1)) goto done;
    ok = true;
done:
    free(occ);
    free(last);
    free(acc);
    free(covered);
    return ok;
}
