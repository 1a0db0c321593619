/*
 * unicode.c - the GPT-2 byte-level alphabet.
 *
 * UTF-8 itself is base/utf8.h: the tokenizers use its lenient hearth_utf8_len_lead to cut text
 * into symbols as llama.cpp does (SPM symbols must be cut exactly that way for invalid input
 * to give the same <0xXX> fallback ids) and its strict decoder where PCRE2 needs valid input
 * or the streaming decoder must know whether bytes may still complete.
 *
 * Byte-level BPE (GPT-2's bytes_to_unicode): the 188 printable bytes 0x21..0x7E, 0xA1..0xAC,
 * 0xAE..0xFF stand for themselves; the other 68 (0x00..0x20, 0x7F..0xA0, 0xAD) map in order
 * to U+0100..U+0143. Both directions are closed forms, so there is no table to build.
 */
#include "tokenizer/tok_internal.h"

uint32_t tok_byte_to_cp(uint8_t b) {
    if (b <= 0x20) return 0x100u + b;                  /* 0x00..0x20 -> U+0100..U+0120 */
    if (b >= 0x7F && b <= 0xA0) return 0x121u + (b - 0x7Fu); /* -> U+0121..U+0142 */
    if (b == 0xAD) return 0x143;
    return b;
}

int tok_cp_to_byte(uint32_t cp) {
    if ((cp >= 0x21 && cp <= 0x7E) || (cp >= 0xA1 && cp <= 0xAC) || (cp >= 0xAE && cp <= 0xFF))
        return (int)cp;
    if (cp >= 0x100 && cp <= 0x120) return (int)(cp - 0x100);
    if (cp >= 0x121 && cp <= 0x142) return (int)(0x7F + cp - 0x121);
    if (cp == 0x143) return 0xAD;
    return -1;
}
