/*
 * utf8.h - the one UTF-8 codec: strict decoding, encoding, validation, and the two lenient
 * views the tokenizer and the template language need.
 *
 * Strict means RFC 3629: no overlong forms, no surrogates (U+D800..U+DFFF), nothing above
 * U+10FFFF, no stray continuation bytes, no truncated sequences. hearth_utf8_decode returns the
 * length of the sequence at s, or 0 where it is not one (invalid or cut short), so callers
 * choose their own recovery: U+FFFD (HTTP, lossy decode), a byte fallback (tokenizers), or an
 * error with the offset (template source, context JSON).
 *
 * Two deliberate relaxations sit beside the strict decoder:
 *   - hearth_utf8_decode_wtf8 also accepts encoded surrogates (WTF-8). The template language
 *     stores a lone "\ud800" from JSON that way and must still count it as one character.
 *   - hearth_utf8_len_lead is the lead byte's length by its high nibble alone, without
 *     validation (how SentencePiece and llama.cpp cut symbols; invalid input must be cut the
 *     same way to give the same byte fallback ids).
 * Pure functions, any thread.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HEARTH_UTF8_MAX_CP 0x10FFFFu

/* Length (1..4) of the strict sequence at s[0..n) with its code point in *cp, or 0. */
size_t hearth_utf8_decode(const void *s, size_t n, uint32_t *cp);
/* As hearth_utf8_decode, but encoded surrogates U+D800..U+DFFF are accepted (WTF-8). */
size_t hearth_utf8_decode_wtf8(const void *s, size_t n, uint32_t *cp);
/* Writes cp (<= U+10FFFF; surrogates are encoded as WTF-8) to out; returns 1..4. */
size_t hearth_utf8_encode(uint32_t cp, char out[4]);
/* Whether s[0..n) is strict UTF-8; if not, *bad_at (optional) is the first bad offset. */
bool   hearth_utf8_valid(const char *s, size_t n, size_t *bad_at);
/* Code points in s[0..n), an invalid byte counting as one (WTF-8 surrogates count as one);
 * *ascii (optional) says whether every byte was below 0x80. */
size_t hearth_utf8_count(const char *s, size_t n, bool *ascii);
/* Sequence length by the lead byte's high nibble alone (1 for continuation bytes). */
size_t hearth_utf8_len_lead(uint8_t b);
/* How many trailing bytes of s[0..n) begin a strict sequence that more bytes could still
 * complete (0..3); 0 when the text ends on a boundary or the tail can never be valid. */
size_t hearth_utf8_incomplete_tail(const void *s, size_t n);
