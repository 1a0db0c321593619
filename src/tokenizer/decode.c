/*
 * decode.c - ids back to bytes: pieces, whole-sequence decode and the streaming decoder.
 *
 * A token's piece is precomputed at build time (tokenizer.c), as llama.cpp's token_to_piece:
 * control and unknown tokens render their text only when special is asked, user-defined ones
 * always; byte-level tokens map back to bytes, SPM's U+2581 to a space, <0xXX> to its byte;
 * unused/undefined tokens render nothing.
 *
 * decode() is llama_detokenize(remove_special = false, unparse_special = special) minus the
 * clean_up_tokenization_spaces pass (llama.cpp applies it for a few BPE pre-types only; not
 * for SmolLM2 or Gemma): the concatenated pieces, where the first token loses one leading
 * space when the vocab adds a space prefix. No other transformation, so the streaming decoder
 * below, fed the same ids, yields exactly the same bytes.
 *
 * Streaming: a token may end inside a UTF-8 character (byte-fallback tokens <0xE2><0x82><0xAC>
 * spell one "€"). The decoder emits everything except a trailing sequence that is valid so far
 * but incomplete (at most 3 bytes), and keeps that for the next token; bytes that can never
 * complete are emitted as they are. flush() releases whatever is held.
 */
#include "tokenizer/tok_internal.h"
#include "tokenizer/tok_pipe.h"

#include <stdlib.h>
#include <string.h>

#include "base/size.h"

static const hearth_span empty_span = {"", 0};

hearth_span hearth_tok_piece(const hearth_tok *tok, int32_t id, bool special) {
    if (!tok || id < 0 || id >= tok->n_vocab) return empty_span;
    if (!special && (tok->attr[id] & (TOK_ATTR_CONTROL | TOK_ATTR_UNKNOWN))) return empty_span;
    hearth_span s = {tok->piece_blob + tok->pieces[id].off, tok->pieces[id].len};
    return s;
}

hearth_span hearth_tok_text(const hearth_tok *tok, int32_t id) {
    if (!tok || id < 0 || id >= tok->n_vocab) return empty_span;
    hearth_span s = {tok->blob + tok->strs[id].off, tok->strs[id].len};
    return s;
}

/* The piece as it appears at position first/not first of the output. */
static hearth_span piece_at(const hearth_tok *tok, int32_t id, bool special, bool first) {
    hearth_span s = hearth_tok_piece(tok, id, special);
    if (first && tok->add_space_prefix && s.len && s.ptr[0] == ' ') {
        s.ptr++;
        s.len--;
    }
    return s;
}

char *hearth_tok_decode(const hearth_tok *tok, const int32_t *ids, size_t n_ids, bool special) {
    if (!tok || (!ids && n_ids)) return NULL;
    if (tok->pipe) return tok_pipe_decode(tok, ids, n_ids, special);
    size_t total = 1;
    for (size_t i = 0; i < n_ids; i++) {
        size_t len = piece_at(tok, ids[i], special, i == 0).len;
        if (!hearth_add_size(total, len, &total)) return NULL;
    }
    char *out = malloc(total);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n_ids; i++) {
        hearth_span s = piece_at(tok, ids[i], special, i == 0);
        memcpy(out + o, s.ptr, s.len);
        o += s.len;
    }
    out[o] = 0;
    return out;
}

void hearth_tok_decoder_init(hearth_tok_decoder *d, const hearth_tok *tok, bool special) {
    memset(d, 0, sizeof *d);
    d->tok = tok;
    d->special = special;
    d->first = true;
}

int hearth_tok_decoder_push(hearth_tok_decoder *d, int32_t id, char *out, size_t cap) {
    hearth_span s = piece_at(d->tok, id, d->special, d->first);
    size_t n = (size_t)d->n_pending + s.len;
    if (!out || cap < n + 1 || n > INT32_MAX) return -1;
    memcpy(out, d->pending, (size_t)d->n_pending);
    memcpy(out + d->n_pending, s.ptr, s.len);
    size_t hold = hearth_utf8_incomplete_tail((const uint8_t *)out, n);
    memcpy(d->pending, out + n - hold, hold);
    d->n_pending = (int)hold;
    d->first = false;
    out[n - hold] = 0;
    return (int)(n - hold);
}

int hearth_tok_decoder_flush(hearth_tok_decoder *d, char *out, size_t cap) {
    size_t n = (size_t)d->n_pending;
    if (!out || cap < n + 1) return -1;
    memcpy(out, d->pending, n);
    out[n] = 0;
    d->n_pending = 0;
    return (int)n;
}
