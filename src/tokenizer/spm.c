/*
 * spm.c - SentencePiece-style BPE, as llama.cpp's "llama" vocab type runs it (Llama 1/2,
 * Gemma 1-3: tokenizer.ggml.model = "llama", tokens with scores).
 *
 * One raw fragment (text between special tokens; Gemma's user-defined runs of spaces,
 * newlines and tabs are already cut out by special.c) is encoded as a whole, no pre-split:
 *
 *   "Hello  world" ──escape──> "▁Hello▁▁world"  (a leading ▁ only when asked, see below)
 *                  ──split───> characters, cut by the lead byte's length (llama.cpp's count,
 *                              unvalidated: an invalid lead swallows up to 3 following bytes)
 *                  ──merge───> repeatedly join the adjacent pair whose concatenation is a vocab
 *                              token with the highest score (ties: leftmost)
 *                  ──emit────> each final symbol's id; a symbol that is no token (an unknown
 *                              character) becomes its bytes' <0xXX> tokens.
 *
 * The merge loop is the same linked-list + heap as bpe.c, keyed by score: a pair is looked up
 * as the byte span it covers (symbols are contiguous in the escaped text), so no string is
 * built. llama.cpp's "resegment" step (splitting a non-token symbol back along the merges that
 * built it) never fires: a merge happens only when its result is a vocab token, so the only
 * non-token symbols are unmerged single characters, which go to byte fallback.
 *
 * The caller decides the space prefix: llama.cpp adds one " " before a fragment that starts the
 * text or follows a special token, when add_space_prefix is set (Gemma 3: not set).
 */
#include "tokenizer/tok_internal.h"

#include <stdlib.h>
#include <string.h>

#include "base/size.h"

#define ESC "\xE2\x96\x81" /* U+2581 LOWER ONE EIGHTH BLOCK */

typedef struct {
    const hearth_tok *tok;
    const char       *text; /* escaped */
    tok_sym          *sym;  /* owned */
    tok_heap          heap;
} spm_work;

static bool try_add(spm_work *w, int32_t l, int32_t r) {
    if (l < 0 || r < 0) return true;
    const hearth_tok *tok = w->tok;
    size_t n = (size_t)w->sym[l].len + w->sym[r].len;
    if (n > tok->max_token_bytes) return true;
    int32_t id = tok_strmap_find(&tok->map, tok->blob, tok->strs, w->text + w->sym[l].start, n);
    if (id < 0 || id >= tok->n_vocab) return true;
    tok_bigram b = {(double)tok->scores[id], l, r, (uint32_t)n, id};
    return tok_heap_push(&w->heap, b);
}

static bool emit_symbol(const hearth_tok *tok, const uint8_t *p, const tok_sym *s, tok_vec *out) {
    int32_t id = s->id;
    if (id < 0)
        id = tok_strmap_find(&tok->map, tok->blob, tok->strs, (const char *)p + s->start, s->len);
    if (id >= 0 && id < tok->n_vocab) return tok_vec_push(out, id);
    for (uint32_t i = 0; i < s->len; i++) {
        int32_t b = tok->byte_tok[p[s->start + i]];
        if (b < 0) b = tok->unk_id; /* a vocab without byte tokens: <unk> (llama.cpp throws) */
        if (b >= 0 && !tok_vec_push(out, b)) return false;
    }
    return true;
}

bool tok_spm_encode(const hearth_tok *tok, const char *text, size_t n, bool space_prefix,
                    tok_vec *out) {
    size_t cap;
    if (!hearth_mul_size(n + 1, 3, &cap) || cap > INT32_MAX) return false;
    char *esc = malloc(cap);
    spm_work w = {tok, esc, NULL, {0}};
    bool ok = false;
    if (!esc) return false;

    size_t m = 0;
    if (space_prefix) {
        memcpy(esc, ESC, 3);
        m = 3;
    }
    for (size_t i = 0; i < n; i++) {
        if (text[i] == ' ') {
            memcpy(esc + m, ESC, 3);
            m += 3;
        } else {
            esc[m++] = text[i];
        }
    }
    if (m == 0) {
        ok = true;
        goto done;
    }

    w.sym = malloc(m * sizeof *w.sym);
    if (!w.sym) goto done;
    int32_t n_sym = 0;
    for (size_t off = 0; off < m;) {
        size_t len = hearth_utf8_len_lead((uint8_t)esc[off]);
        if (len > m - off) len = m - off;
        w.sym[n_sym] = (tok_sym){n_sym - 1, off + len < m ? n_sym + 1 : -1, -1, (uint32_t)off,
                                 (uint32_t)len};
        n_sym++;
        off += len;
    }
    for (int32_t i = 1; i < n_sym; i++)
        if (!try_add(&w, i - 1, i)) goto done;
    while (w.heap.n) {
        tok_bigram b = tok_heap_pop(&w.heap);
        tok_sym *l = &w.sym[b.left], *r = &w.sym[b.right];
        if (l->len == 0 || r->len == 0 || l->len + r->len != b.size) continue; /* stale */
        l->len += r->len;
        l->id = b.id;
        r->len = 0;
        l->next = r->next;
        if (r->next >= 0) w.sym[r->next].prev = b.left;
        if (!try_add(&w, l->prev, b.left) || !try_add(&w, b.left, l->next)) goto done;
    }
    bool prev_unk = false;
    for (int32_t i = 0; i >= 0; i = w.sym[i].next) {
        if (tok->spm_library && tok->byte_tok[(uint8_t)esc[w.sym[i].start]] < 0 && w.sym[i].id < 0 &&
            tok_strmap_find(&tok->map, tok->blob, tok->strs, esc + w.sym[i].start, w.sym[i].len) < 0) {
            /* sentencepiece without byte fallback: one <unk> for a run of unknown characters */
            if (!prev_unk && tok->unk_id >= 0 && !tok_vec_push(out, tok->unk_id)) goto done;
            prev_unk = true;
            continue;
        }
        prev_unk = false;
        if (!emit_symbol(tok, (const uint8_t *)esc, &w.sym[i], out)) goto done;
    }
    ok = true;
done:
    free(esc);
    free(w.sym);
    tok_heap_free(&w.heap);
    return ok;
}
