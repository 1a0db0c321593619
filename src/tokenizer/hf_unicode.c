/*
 * hf_unicode.c - lookups over the tables of hf_unicode_data.c (generated from tokenizers by
 * tools/tokjson_unicode.py).
 */
#include "tokenizer/hf_unicode.h"

int hf_uni_lower_of(uint32_t cp, uint32_t out[3]) {
    if (cp < 0x80) {
        out[0] = cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
        return 1;
    }
    int lo = 0, hi = hf_uni_n_lower - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (hf_uni_lower[mid][0] == cp) {
            int k = 0;
            for (int i = 1; i < 4 && hf_uni_lower[mid][i]; i++) out[k++] = hf_uni_lower[mid][i];
            return k;
        }
        if (hf_uni_lower[mid][0] < cp) lo = mid + 1;
        else hi = mid - 1;
    }
    out[0] = cp;
    return 1;
}
