/* units.c - sizes and counts for people; see units.h. */
#include "store/units.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void hearth_fmt_bytes(int64_t n, char *buf, size_t len) {
    static const char *unit[] = {"kB", "MB", "GB", "TB", "PB"};
    if (n < 1000) {
        snprintf(buf, len, "%lld B", (long long)n);
        return;
    }
    double v = (double)n / 1000.0;
    int u = 0;
    while (v >= 1000.0 && u < 4) {
        v /= 1000.0;
        u++;
    }
    snprintf(buf, len, v < 10 ? "%.2f %s" : v < 100 ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

void hearth_fmt_count(int64_t n, char *buf, size_t len) {
    static const char *unit[] = {"K", "M", "B", "T"};
    if (n < 1000) {
        snprintf(buf, len, "%lld", (long long)n);
        return;
    }
    double v = (double)n / 1000.0;
    int u = 0;
    while (v >= 1000.0 && u < 3) {
        v /= 1000.0;
        u++;
    }
    snprintf(buf, len, v < 10 ? "%.2f%s" : v < 100 ? "%.1f%s" : "%.0f%s", v, unit[u]);
}

bool hearth_parse_bytes(const char *s, int64_t *out) {
    static const struct { const char *name; double mul; } units[] = {
        {"", 1}, {"b", 1}, {"k", 1e3}, {"kb", 1e3}, {"m", 1e6}, {"mb", 1e6}, {"g", 1e9}, {"gb", 1e9},
        {"t", 1e12}, {"tb", 1e12}, {"kib", 1024.0}, {"mib", 1048576.0}, {"gib", 1073741824.0},
        {"tib", 1099511627776.0},
    };
    if (!s) return false;
    while (isspace((unsigned char)*s)) s++;
    if (!isdigit((unsigned char)*s) && *s != '.') return false;
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || !isfinite(v) || v < 0) return false;
    while (isspace((unsigned char)*end)) end++;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(end, units[i].name)) continue;
        double b = v * units[i].mul;
        if (!(b < 9.2e18)) return false;
        *out = (int64_t)llround(b);
        return true;
    }
    return false;
}
