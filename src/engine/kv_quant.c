/*
 * kv_quant.c - parsing and naming of `--kv-quant` schemes (kv_quant.h).
 */
#include "engine/kv_quant.h"

#include <stdio.h>
#include <string.h>

static bool bits_in(int b, const int *set, int n) {
    for (int i = 0; i < n; i++)
        if (set[i] == b) return true;
    return false;
}

static bool fail(char *why, size_t cap, const char *s, const char *what) {
    if (why && cap) snprintf(why, cap, "--kv-quant %s: %s", s, what);
    return false;
}

bool hearth_kv_quant_parse(const char *s, hearth_kv_quant *out, char *why, size_t cap) {
    hearth_kv_quant q = {HEARTH_KVQ_OFF, 0, 0};
    if (!s) return fail(why, cap, "", "missing value");
    if (!strcmp(s, "off") || !strcmp(s, "none") || !strcmp(s, "f16")) q.mode = HEARTH_KVQ_OFF;
    else if (!strcmp(s, "8") || !strcmp(s, "q8_0") || !strcmp(s, "q8")) q.mode = HEARTH_KVQ_8;
    else if (!strcmp(s, "4") || !strcmp(s, "q4_0") || !strcmp(s, "q4")) q.mode = HEARTH_KVQ_4;
    else if (!strcmp(s, "config")) q.mode = HEARTH_KVQ_CONFIG;
    else if (!strncmp(s, "turbo", 5) && (s[5] == 0 || s[5] == ':')) {
        static const int kset[] = {2, 4, 5, 8}, vset[] = {2, 3, 4, 5, 8};
        int k = 8, v = 3, n = 0;
        if (s[5] == ':' && (sscanf(s + 6, "k%dv%d%n", &k, &v, &n) != 2 || s[6 + n] != 0))
            return fail(why, cap, s, "expected turbo or turbo:k<bits>v<bits>, e.g. turbo:k4v3");
        if (!bits_in(k, kset, 4)) return fail(why, cap, s, "key bits must be 2, 4, 5 or 8");
        if (!bits_in(v, vset, 5)) return fail(why, cap, s, "value bits must be 2, 3, 4, 5 or 8");
        q.mode = HEARTH_KVQ_TURBO;
        q.k_bits = (int8_t)k;
        q.v_bits = (int8_t)v;
    } else return fail(why, cap, s, "expected off, 8, 4, turbo[:k<bits>v<bits>] or config");
    *out = q;
    return true;
}

void hearth_kv_quant_name(const hearth_kv_quant *q, char *buf, size_t cap) {
    switch (q->mode) {
    case HEARTH_KVQ_8: snprintf(buf, cap, "8"); break;
    case HEARTH_KVQ_4: snprintf(buf, cap, "4"); break;
    case HEARTH_KVQ_TURBO: snprintf(buf, cap, "turbo:k%dv%d", q->k_bits, q->v_bits); break;
    case HEARTH_KVQ_CONFIG: snprintf(buf, cap, "config"); break;
    default: snprintf(buf, cap, "off"); break;
    }
}
