/*
 * numerics.c - the numerics value's names and defaults (numerics.h).
 */
#include "backend/numerics.h"
#include "kernels/kernels.h"

#include <stdio.h>
#include <string.h>

hearth_numerics hearth_numerics_resolve(hearth_numerics nx) {
    if (nx.tier == HEARTH_NUMERICS_AUTO) nx.tier = hearth_kernels_f32() ? HEARTH_NUMERICS_REF : HEARTH_NUMERICS_L1;
    return nx;
}

const char *hearth_numerics_tier_name(hearth_numerics_tier t) {
    switch (t) {
    case HEARTH_NUMERICS_L1: return "l1";
    case HEARTH_NUMERICS_L2: return "l2";
    case HEARTH_NUMERICS_REF: return "ref";
    case HEARTH_NUMERICS_AUTO: break;
    }
    return "auto";
}

bool hearth_numerics_tier_parse(const char *s, hearth_numerics_tier *out) {
    static const struct { const char *name; hearth_numerics_tier t; } names[] = {
        {"l1", HEARTH_NUMERICS_L1}, {"L1", HEARTH_NUMERICS_L1}, {"l2", HEARTH_NUMERICS_L2},
        {"L2", HEARTH_NUMERICS_L2}, {"ref", HEARTH_NUMERICS_REF},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(s, names[i].name)) {
            *out = names[i].t;
            return true;
        }
    return false;
}

bool hearth_switch_parse(const char *s, bool *on) {
    static const char *yes[] = {"on", "true", "1", "yes"}, *no[] = {"off", "false", "0", "no"};
    for (size_t i = 0; i < 4; i++) {
        if (!strcmp(s, yes[i])) {
            *on = true;
            return true;
        }
        if (!strcmp(s, no[i])) {
            *on = false;
            return true;
        }
    }
    return false;
}

void hearth_numerics_describe(const hearth_numerics *nx, char *buf, size_t cap) {
    snprintf(buf, cap, "%s, compiled-decode %s, fused-sdpa %s, compiled-activations %s",
             hearth_numerics_tier_name(nx->tier), nx->no_compiled_decode ? "off" : "on",
             nx->no_fused_sdpa ? "off" : "on", nx->no_compiled_activations ? "off" : "on");
    if (nx->batch_invariant) {
        size_t n = strlen(buf);
        if (n < cap) snprintf(buf + n, cap - n, ", batch-invariant on");
    }
}
