/*
 * bpe.c - GPT-2 style byte-level BPE: merge table construction and the merge loop.
 *
 * Encoding one raw fragment (text between special tokens):
 *
 *   fragment ──pretok──> words ──bytes──> symbols (one per byte) ──merges by rank──> ids
 *
 * Every byte b of a word starts as the symbol of its byte-level character (GPT-2's
 * bytes_to_unicode, unicode.c); as each byte maps to exactly one character we never build
 * the mapped string: a symbol is an id plus a byte span of the original text. Merges are the
 * hash table of merges.c, (left id, right id) -> (rank, merged id): a merge step is one probe.
 *
 * The loop is the linked-list + heap algorithm (as llama.cpp's llm_tokenizer_bpe_session):
 * all adjacent pairs that have a merge go into a heap ordered by rank, then leftmost; popping
 * the best pair merges the right symbol into the left one and pushes the two new neighbour
 * pairs. Entries made stale by earlier merges are recognised by their byte size no longer
 * matching (a symbol only grows by absorbing its right neighbour), so each word costs
 * O(n log n), not O(n^2), however long it is.
 *
 * Merge sides or results missing from the vocab are interned as extra strings (ids >=
 * n_vocab) so that the loop stays id-based; a final symbol that is not a vocab token falls
 * back to the tokens of its bytes (llama.cpp does the same; a complete byte-level vocab never
 * needs it).
 *
 * Invalid UTF-8: PCRE2 needs valid input, so the regexes run on a copy where each invalid
 * byte reads U+FFFD (what llama.cpp substitutes) and the piece bounds are mapped back. The
 * bytes themselves are then encoded as they are, so decode(encode(x)) == x for any bytes the
 * vocab has a symbol for (llama.cpp would emit the tokens of U+FFFD instead). Bytes that never
 * occur in UTF-8 (0xC0, 0xC1, 0xF5..0xFF) are often missing from byte-level vocabs (SmolLM2
 * lacks them); such a byte becomes the tokens of U+FFFD, never nothing.
 */
#include "tokenizer/tok_internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/size.h"

static bool encode_fffd(hearth_tok *tok);

typedef struct {
    size_t blob_bytes, blob_cap; /* bytes used / allocated in tok->blob */
    size_t strs_cap;             /* entries allocated in tok->strs */
} intern_state;

/* Id of s[0..n): a vocab token, an earlier extra string, or a new extra string; -1 on OOM. */
static int32_t intern(hearth_tok *tok, intern_state *st, const char *s, size_t n) {
    int32_t id = tok_strmap_find(&tok->map, tok->blob, tok->strs, s, n);
    if (id >= 0) return id;
    if (tok->n_strs == INT32_MAX || st->blob_bytes + n > UINT32_MAX) return -1;
    if (!hearth_buf_grow(&tok->strs, &st->strs_cap, (size_t)tok->n_strs + 1, sizeof *tok->strs, 64) ||
        !hearth_buf_grow(&tok->blob, &st->blob_cap, st->blob_bytes + n, 1, 64))
        return -1;
    memcpy(tok->blob + st->blob_bytes, s, n);
    id = tok->n_strs++;
    tok->strs[id] = (tok_str){(uint32_t)st->blob_bytes, (uint32_t)n};
    st->blob_bytes += n;
    tok_strmap_insert(&tok->map, tok->blob, tok->strs, s, n, id);
    return id;
}

hearth_status tok_bpe_build(hearth_tok *tok, const hearth_tok_spec *spec, hearth_err *err) {
    hearth_status st = HEARTH_OK;
    const char *pre = spec->pre ? spec->pre : "gpt2";
    st = tok_pretok_create(pre, &tok->pre, &tok->ignore_merges, err);
    if (st) return st;

    int32_t n_merges = spec->n_merges > 0 && spec->merges ? spec->n_merges : 0;
    if (!tok_merges_init(tok, (size_t)n_merges))
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");

    /* tokenizer.c sized the string map for the vocab plus up to 3 extras per merge */
    intern_state is = {0, 0, (size_t)tok->n_strs};
    for (int32_t id = 0; id < tok->n_strs; id++) is.blob_bytes += tok->strs[id].len;
    is.blob_cap = is.blob_bytes;

    char *cat = NULL;
    size_t cat_cap = 0;
    for (int32_t i = 0; i < n_merges; i++) {
        hearth_span m = spec->merges[i];
        const char *sp = m.len > 1 ? memchr(m.ptr + 1, ' ', m.len - 1) : NULL;
        if (!sp) {
            st = hearth_err_set(err, HEARTH_E_FORMAT, i, "merge %d '%.*s' has no space", i,
                                (int)(m.len > 64 ? 64 : m.len), m.ptr ? m.ptr : "");
            goto done;
        }
        size_t nl = (size_t)(sp - m.ptr), nr = m.len - nl - 1;
        if (!hearth_buf_grow(&cat, &cat_cap, nl + nr, 1, 64)) goto oom;
        memcpy(cat, m.ptr, nl);
        memcpy(cat + nl, sp + 1, nr);
        int32_t l = intern(tok, &is, m.ptr, nl);
        int32_t r = l < 0 ? -1 : intern(tok, &is, sp + 1, nr);
        int32_t res = r < 0 ? -1 : intern(tok, &is, cat, nl + nr);
        if (res < 0) goto oom;
        tok_merges_add(tok, l, r, i, res, true); /* a duplicate pair keeps its first (best) rank */
    }
    for (int b = 0; b < 256; b++) {
        char u[4];
        size_t n = hearth_utf8_encode(tok_byte_to_cp((uint8_t)b), u);
        tok->byte_sym[b] = tok_strmap_find(&tok->map, tok->blob, tok->strs, u, n);
    }
    if (!encode_fffd(tok)) goto oom;
    goto done;
oom:
    st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
done:
    free(cat);
    return st;
}

typedef struct {
    tok_sym *sym;  /* owned */
    size_t   cap;
    tok_heap heap;
    char    *enc;  /* owned: byte-level spelling of a word (ignore_merges lookups) */
    size_t   enc_cap;
} bpe_work;

static bool try_add(const hearth_tok *tok, bpe_work *w, int32_t l, int32_t r) {
    if (l < 0 || r < 0 || w->sym[l].id < 0 || w->sym[r].id < 0) return true;
    const tok_merge_slot *m = tok_merges_find(tok, w->sym[l].id, w->sym[r].id);
    if (!m) return true;
    tok_bigram b = {-(double)m->rank, l, r, w->sym[l].len + w->sym[r].len, m->result};
    return tok_heap_push(&w->heap, b);
}

/* The tokens of single bytes; a byte whose symbol the vocab lacks (GPT-2 style vocabs omit
 * bytes that never occur in UTF-8, such as 0xFF) becomes the tokens of U+FFFD. */
static bool emit_bytes(const hearth_tok *tok, const uint8_t *p, size_t n, tok_vec *out) {
    for (size_t i = 0; i < n; i++) {
        int32_t id = tok->byte_sym[p[i]];
        if (id >= 0 && id < tok->n_vocab) {
            if (!tok_vec_push(out, id)) return false;
        } else {
            for (int32_t k = 0; k < tok->n_fffd; k++)
                if (!tok_vec_push(out, tok->fffd_ids[k])) return false;
        }
    }
    return true;
}

/* Whole-word lookup of the byte-level spelling (llama3's ignore_merges). */
static int32_t word_token(const hearth_tok *tok, bpe_work *w, const uint8_t *p, size_t n) {
    if (n > tok->max_token_bytes) return -1; /* its spelling is at least n bytes long */
    if (!hearth_buf_grow(&w->enc, &w->enc_cap, n * 2, 1, 64)) return -1; /* bytes map to U+0000..U+0143 */
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += hearth_utf8_encode(tok_byte_to_cp(p[i]), w->enc + k);
    int32_t id = tok_strmap_find(&tok->map, tok->blob, tok->strs, w->enc, k);
    return id < tok->n_vocab ? id : -1;
}

static bool encode_word(const hearth_tok *tok, bpe_work *w, const uint8_t *p, size_t n,
                        tok_vec *out) {
    if (n == 1) return emit_bytes(tok, p, 1, out);
    if (tok->ignore_merges) {
        int32_t id = word_token(tok, w, p, n);
        if (id >= 0) return tok_vec_push(out, id);
    }
    if (!hearth_buf_grow(&w->sym, &w->cap, n, sizeof *w->sym, 64)) return false;
    for (size_t i = 0; i < n; i++)
        w->sym[i] = (tok_sym){(int32_t)i - 1, i + 1 < n ? (int32_t)i + 1 : -1, tok->byte_sym[p[i]],
                              (uint32_t)i, 1};
    w->heap.n = 0;
    for (size_t i = 1; i < n; i++)
        if (!try_add(tok, w, (int32_t)i - 1, (int32_t)i)) return false;
    while (w->heap.n) {
        tok_bigram b = tok_heap_pop(&w->heap);
        tok_sym *l = &w->sym[b.left], *r = &w->sym[b.right];
        if (l->len == 0 || r->len == 0 || l->len + r->len != b.size) continue; /* stale */
        l->len += r->len;
        l->id = b.id;
        r->len = 0;
        l->next = r->next;
        if (r->next >= 0) w->sym[r->next].prev = b.left;
        if (!try_add(tok, w, l->prev, b.left) || !try_add(tok, w, b.left, l->next)) return false;
    }
    for (int32_t i = 0; i >= 0; i = w->sym[i].next) {
        const tok_sym *s = &w->sym[i];
        if (s->id >= 0 && s->id < tok->n_vocab) {
            if (!tok_vec_push(out, s->id)) return false;
        } else if (!emit_bytes(tok, p + s->start, s->len, out)) {
            return false;
        }
    }
    return true;
}

/* If text has invalid UTF-8, make *san a copy with each invalid byte as U+FFFD and *map the
 * original offset of each copy offset (valid at character starts and at the end). */
static bool sanitize(const uint8_t *t, size_t n, char **san, size_t *san_n, int32_t **map) {
    size_t i = 0;
    uint32_t cp;
    while (i < n) {
        if (t[i] < 0x80) { i++; continue; }
        size_t k = hearth_utf8_decode(t + i, n - i, &cp);
        if (!k) break;
        i += k;
    }
    *san = NULL;
    *map = NULL;
    if (i == n) return true;
    size_t cap;
    if (!hearth_mul_size(n, 3, &cap) || !hearth_add_size(cap, 1, &cap) || cap > INT32_MAX)
        return false;
    char *s = malloc(cap);
    int32_t *m = malloc(cap * sizeof *m);
    if (!s || !m) {
        free(s);
        free(m);
        return false;
    }
    size_t o = 0;
    for (i = 0; i < n;) {
        size_t k = hearth_utf8_decode(t + i, n - i, &cp);
        m[o] = (int32_t)i;
        if (k) {
            memcpy(s + o, t + i, k);
            o += k;
            i += k;
        } else {
            memcpy(s + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i += 1;
        }
    }
    m[o] = (int32_t)n;
    *san = s;
    *san_n = o;
    *map = m;
    return true;
}

bool tok_bpe_encode(const hearth_tok *tok, const char *text, size_t n, tok_vec *out) {
    const uint8_t *t = (const uint8_t *)text;
    char *san = NULL;
    size_t san_n = 0;
    int32_t *map = NULL;
    tok_vec bounds = {0};
    bpe_work w = {0};
    bool ok = false;
    if (!sanitize(t, n, &san, &san_n, &map)) goto done;
    if (!tok_pretok_split(tok->pre, san ? san : text, san ? san_n : n, &bounds)) goto done;
    for (size_t k = 0; k < bounds.n; k += 2) {
        size_t s = (size_t)bounds.v[k], e = (size_t)bounds.v[k + 1];
        if (map) {
            s = (size_t)map[s];
            e = (size_t)map[e];
        }
        if (e > s && !encode_word(tok, &w, t + s, e - s, out)) goto done;
    }
    ok = true;
done:
    free(san);
    free(map);
    tok_vec_free(&bounds);
    free(w.sym);
    free(w.enc);
    tok_heap_free(&w.heap);
    return ok;
}

static bool encode_fffd(hearth_tok *tok) {
    tok_vec ids = {0};
    bpe_work w = {0};
    tok->n_fffd = 0; /* while encoding, an unknown byte of U+FFFD itself maps to nothing */
    bool ok = encode_word(tok, &w, (const uint8_t *)"\xEF\xBF\xBD", 3, &ids);
    for (size_t i = 0; ok && i < ids.n && i < 4; i++) tok->fffd_ids[tok->n_fffd++] = ids.v[i];
    free(w.sym);
    free(w.enc);
    tok_heap_free(&w.heap);
    tok_vec_free(&ids);
    return ok;
}
