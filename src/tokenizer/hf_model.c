/*
 * hf_model.c - tokenizers' models, one pre-tokenized piece at a time.
 *
 * BPE (models/bpe): the piece is cut into characters; each becomes the id of its string in
 * the vocab (with continuing_subword_prefix on all but the first and end_of_word_suffix on
 * the last), else its bytes' <0xXX> tokens (byte_fallback), else unk (runs fused with
 * fuse_unk), else nothing. Byte-level pieces arrive as raw bytes: each byte is the id of its
 * GPT-2 alphabet character (tok->byte_sym). Then merges by rank, the lowest first and the
 * leftmost on ties, with tokenizers' own staleness test: a queued merge of symbol i is still
 * valid when the pair (i, next(i)) maps to the same merged id today (not "the same two
 * symbols as when queued"). ignore_merges: a piece that is a whole vocab token is that token.
 *
 * WordPiece (models/wordpiece): greedy longest match from the left, "##"-style prefix on
 * non-initial sub-words; a piece of more than max_input_chars_per_word characters, or one
 * with a part that matches nothing, is the single unk token.
 *
 * Unigram (models/unigram, SentencePiece's Viterbi): best_path[i] is the best total score
 * of a segmentation of the first i bytes. From each character boundary, every vocab piece
 * that starts there (found by walking a byte trie of all pieces) relaxes its end position;
 * when no one-character piece starts there, unk (score = min score - 10) covers the
 * character. Ties keep the first candidate (shorter pieces are seen first). Backtracking
 * gives the pieces; consecutive unks fuse; a piece that is no vocab token becomes its
 * <0xXX> bytes (byte_fallback) or unk.
 */
#include "tokenizer/hf_unicode.h"
#include "tokenizer/tok_pipe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/size.h"

static int32_t vocab_id(const hearth_tok *tok, const char *s, size_t n) {
    if (n > tok->max_token_bytes) return -1;
    int32_t id = tok_strmap_find(&tok->map, tok->blob, tok->strs, s, n);
    return id < tok->n_vocab ? id : -1;
}

/* ------------------------------------------------------------------ BPE */

static bool word_add(tok_model_work *w, int32_t id, uint32_t len) {
    if (w->n_sym == w->cap_sym &&
        !hearth_buf_grow(&w->sym, &w->cap_sym, w->n_sym + 1, sizeof *w->sym, 64))
        return false;
    size_t n = w->n_sym;
    uint32_t start = n ? w->sym[n - 1].start + w->sym[n - 1].len : 0;
    w->sym[n] = (tok_sym){(int32_t)n - 1, -1, id, start, len};
    if (n) w->sym[n - 1].next = (int32_t)n;
    w->n_sym++;
    return true;
}

static bool push_merge(const hearth_tok *tok, tok_heap *h, const tok_sym *v, int32_t pos) {
    if (pos < 0 || v[pos].next < 0) return true;
    const tok_merge_slot *m = tok_merges_find(tok, v[pos].id, v[v[pos].next].id);
    if (!m) return true;
    return tok_heap_push(h, (tok_bigram){-(double)m->rank, pos, v[pos].next, 0, m->result});
}

/* The characters of s as symbols (merge_word's first half). */
static bool bpe_symbols(const hearth_tok *tok, const tok_model *m, const char *s, size_t n,
                        tok_model_work *w) {
    hearth_buf *scratch = &w->scratch;
    int32_t unk_id = -1;
    uint32_t unk_len = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp = 0;
        size_t k = m->byte_level ? 1 : hf_utf8_next(s + i, n - i, &cp);
        int32_t id;
        const char *str = s + i;
        size_t str_n = k;
        bool affixed = (m->prefix && i > 0) || (m->suffix && i + k == n);
        if (m->byte_level) {
            id = tok->byte_sym[(uint8_t)s[i]];
            if (id >= tok->n_vocab) id = -1;
            if (id < 0 && (m->byte_fallback || m->unk_id >= 0)) {
                scratch->len = 0;
                if (!hearth_buf_put_cp(scratch, tok_byte_to_cp((uint8_t)s[i]))) return false;
                str = scratch->p;
                str_n = scratch->len;
            }
        } else if (!affixed && cp < 0x800) {
            id = m->char_id[cp];
        } else {
            if (affixed) {
                scratch->len = 0;
                if ((m->prefix && i > 0 && !hearth_buf_put(scratch, m->prefix, m->prefix_n)) ||
                    !hearth_buf_put(scratch, s + i, k) ||
                    (m->suffix && i + k == n && !hearth_buf_put(scratch, m->suffix, m->suffix_n)))
                    return false;
                str = scratch->p;
                str_n = scratch->len;
            }
            id = vocab_id(tok, str, str_n);
        }
        if (id >= 0) {
            if (unk_id >= 0 && !word_add(w, unk_id, unk_len)) return false;
            unk_id = -1;
            if (!word_add(w, id, (uint32_t)k)) return false;
            i += k;
            continue;
        }
        if (m->byte_fallback) {
            bool all = true;
            for (size_t j = 0; j < str_n && all; j++) all = tok->byte_tok[(uint8_t)str[j]] >= 0;
            if (all) {
                /* tokenizers flushes no pending unk here: the bytes go first */
                for (size_t j = 0; j < str_n; j++)
                    if (!word_add(w, tok->byte_tok[(uint8_t)str[j]], 1)) return false;
                i += k;
                continue;
            }
        }
        if (m->unk_id >= 0) {
            if (unk_id >= 0 && m->fuse_unk) {
                unk_len += (uint32_t)k;
            } else {
                if (unk_id >= 0 && !word_add(w, unk_id, unk_len)) return false;
                unk_id = m->unk_id;
                unk_len = (uint32_t)k;
            }
        }
        i += k;
    }
    if (unk_id >= 0 && !word_add(w, unk_id, unk_len)) return false;
    return true;
}

static bool bpe_encode(const hearth_tok *tok, const tok_model *m, const char *s, size_t n,
                       tok_vec *out, tok_model_work *w) {
    if (m->ignore_merges) {
        int32_t id;
        if (m->byte_level) {
            w->scratch.len = 0;
            for (size_t i = 0; i < n; i++)
                if (!hearth_buf_put_cp(&w->scratch, tok_byte_to_cp((uint8_t)s[i]))) return false;
            id = vocab_id(tok, w->scratch.p, w->scratch.len);
        } else {
            id = vocab_id(tok, s, n);
        }
        if (id >= 0) return tok_vec_push(out, id);
    }
    w->n_sym = 0;
    w->heap.n = 0;
    if (!bpe_symbols(tok, m, s, n, w)) return false;
    tok_sym *v = w->sym;
    tok_heap *h = &w->heap;
    for (int32_t i = 0; i + 1 < (int32_t)w->n_sym; i++)
        if (!push_merge(tok, h, v, i)) return false;
    while (h->n) {
        tok_bigram b = tok_heap_pop(h);
        tok_sym *l = &v[b.left];
        if (l->len == 0 || l->next < 0) continue;
        int32_t nx = l->next;
        const tok_merge_slot *cur = tok_merges_find(tok, l->id, v[nx].id);
        if (!cur || cur->result != b.id) continue; /* stale */
        tok_sym *r = &v[nx];
        l->id = b.id;
        l->len += r->len;
        l->next = r->next;
        if (r->next >= 0) v[r->next].prev = b.left;
        r->len = 0;
        if (!push_merge(tok, h, v, l->prev) || !push_merge(tok, h, v, b.left)) return false;
    }
    for (size_t i = 0; i < w->n_sym; i++)
        if (v[i].len > 0 && !tok_vec_push(out, v[i].id)) return false;
    return true;
}

/* ------------------------------------------------------------------ WordPiece */

static bool wordpiece_encode(const hearth_tok *tok, const tok_model *m, const char *s, size_t n,
                             tok_vec *out, hearth_buf *scratch) {
    size_t n_chars = 0;
    for (size_t i = 0; i < n; i++) n_chars += ((uint8_t)s[i] & 0xC0) != 0x80;
    if ((int64_t)n_chars > m->max_chars) return tok_vec_push(out, m->unk_id);
    size_t mark = out->n;
    for (size_t start = 0; start < n;) {
        size_t end = n;
        int32_t id = -1;
        while (start < end) {
            const char *str = s + start;
            size_t str_n = end - start;
            if (start > 0) {
                scratch->len = 0;
                if (!hearth_buf_put(scratch, m->prefix, m->prefix_n) ||
                    !hearth_buf_put(scratch, s + start, end - start))
                    return false;
                str = scratch->p;
                str_n = scratch->len;
            }
            if ((id = vocab_id(tok, str, str_n)) >= 0) break;
            end = hf_utf8_prev(s, end);
            if (end < start) end = start;
        }
        if (id < 0) {
            out->n = mark;
            return tok_vec_push(out, m->unk_id);
        }
        if (!tok_vec_push(out, id)) return false;
        start = end;
    }
    return true;
}

/* ------------------------------------------------------------------ Unigram */

static uint32_t edge_slot(uint64_t key, uint32_t mask) { return tok_hash_slot(key, mask); }

static int32_t trie_next(const tok_model *m, int32_t node, uint8_t b) {
    uint64_t key = (((uint64_t)(uint32_t)node << 8) | b) + 1;
    for (uint32_t i = edge_slot(key, m->edge_mask);; i = (i + 1) & m->edge_mask) {
        if (m->edges[i].key == key) return m->edges[i].child;
        if (m->edges[i].key == 0) return -1;
    }
}

hearth_status tok_model_unigram_build(const hearth_tok *tok, tok_model *m, hearth_err *err) {
    size_t total = 1;
    for (int32_t id = 0; id < tok->n_vocab; id++) total += tok->strs[id].len;
    if (total > INT32_MAX / 4) return hearth_err_set(err, HEARTH_E_LIMIT, -1, "vocab too large");
    size_t cap = 0; /* edges: a power of two, at most half full */
    if (!hearth_grow_cap(0, total * 2, sizeof *m->edges, 64, &cap))
        return hearth_err_set(err, HEARTH_E_LIMIT, -1, "vocab too large");
    m->edges = calloc(cap, sizeof *m->edges);
    m->node_tok = malloc(total * sizeof *m->node_tok);
    if (!m->edges || !m->node_tok) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    m->edge_mask = (uint32_t)(cap - 1);
    m->n_nodes = 1;
    m->node_tok[0] = -1;
    for (int32_t id = 0; id < tok->n_vocab; id++) {
        const uint8_t *p = (const uint8_t *)tok->blob + tok->strs[id].off;
        uint32_t len = tok->strs[id].len;
        if (len == 0) continue;
        int32_t node = 0;
        for (uint32_t i = 0; i < len; i++) {
            uint64_t key = (((uint64_t)(uint32_t)node << 8) | p[i]) + 1;
            uint32_t s = edge_slot(key, m->edge_mask);
            while (m->edges[s].key && m->edges[s].key != key) s = (s + 1) & m->edge_mask;
            if (!m->edges[s].key) {
                m->edges[s] = (tok_trie_edge){key, m->n_nodes};
                m->node_tok[m->n_nodes++] = -1;
            }
            node = m->edges[s].child;
        }
        m->node_tok[node] = id; /* a repeated piece: the last, as tokenizers' map has it */
    }
    return HEARTH_OK;
}

typedef struct {
    double  score;
    int32_t start; /* -1: not reached */
    int32_t id;
} uni_node;

static bool unigram_emit(const hearth_tok *tok, const tok_model *m, const char *s, size_t n,
                         tok_vec *out) {
    int32_t id = vocab_id(tok, s, n);
    if (id >= 0) return tok_vec_push(out, id);
    if (m->byte_fallback) {
        bool all = true;
        for (size_t j = 0; j < n && all; j++) all = tok->byte_tok[(uint8_t)s[j]] >= 0;
        if (all) {
            for (size_t j = 0; j < n; j++)
                if (!tok_vec_push(out, tok->byte_tok[(uint8_t)s[j]])) return false;
            return true;
        }
    }
    return tok_vec_push(out, m->unk_id);
}

static bool unigram_encode(const hearth_tok *tok, const tok_model *m, const char *s, size_t n,
                           tok_vec *out, tok_model_work *w) {
    if (n == 0) return true;
    if (!hearth_buf_grow(&w->best, &w->cap_best, n + 1, sizeof(uni_node), 64)) return false;
    uni_node *best = w->best;
    tok_vec *segv = &w->seg; /* (start, end, fused) triples, backwards */
    segv->n = 0;
    bool ok = true;
    for (size_t i = 0; i <= n; i++) best[i] = (uni_node){0, -1, -1};
    double unk_score = m->min_score - 10.0;
    for (size_t at = 0; at < n;) {
        uint32_t cp;
        size_t mb = hf_utf8_next(s + at, n - at, &cp);
        double here = best[at].score;
        bool single = false;
        int32_t node = 0;
        for (size_t e = at; e < n; e++) {
            node = trie_next(m, node, (uint8_t)s[e]);
            if (node < 0) break;
            int32_t id = m->node_tok[node];
            if (id < 0) continue;
            size_t end = e + 1;
            double cand = here + m->uscores[id];
            if (best[end].start < 0 || cand > best[end].score)
                best[end] = (uni_node){cand, (int32_t)at, id};
            if (end - at == mb) single = true;
        }
        if (!single) {
            double cand = unk_score + here;
            if (best[at + mb].start < 0 || cand > best[at + mb].score)
                best[at + mb] = (uni_node){cand, (int32_t)at, m->unk_id};
        }
        at += mb;
    }
    /* backtrack; unk runs fuse into one piece */
    for (size_t end = n; ok && end > 0;) {
        size_t start = (size_t)best[end].start;
        bool is_unk = m->unk_id >= 0 && best[end].id == m->unk_id;
        if (is_unk && segv->n >= 3 && segv->v[segv->n - 1] == 1 && (size_t)segv->v[segv->n - 3] == end) {
            segv->v[segv->n - 3] = (int32_t)start; /* extend the unk run leftwards */
        } else {
            ok = tok_vec_push(segv, (int32_t)start) && tok_vec_push(segv, (int32_t)end) &&
                 tok_vec_push(segv, is_unk ? 1 : 0);
        }
        end = start;
    }
    for (size_t k = segv->n; ok && k >= 3; k -= 3) {
        size_t a = (size_t)segv->v[k - 3], b = (size_t)segv->v[k - 2];
        ok = unigram_emit(tok, m, s + a, b - a, out);
    }
    return ok;
}

bool tok_model_encode(const hearth_tok *tok, const tok_model *m, const char *s, size_t n,
                      tok_vec *out, tok_model_work *w) {
    if (n == 0) return true;
    switch (m->kind) {
    case MODEL_BPE:       return bpe_encode(tok, m, s, n, out, w);
    case MODEL_WORDPIECE: return wordpiece_encode(tok, m, s, n, out, &w->scratch);
    case MODEL_UNIGRAM:   return unigram_encode(tok, m, s, n, out, w);
    }
    return false;
}

void tok_model_work_free(tok_model_work *w) {
    hearth_buf_fini(&w->scratch);
    free(w->sym);
    tok_heap_free(&w->heap);
    free(w->best);
    tok_vec_free(&w->seg);
    memset(w, 0, sizeof *w);
}
