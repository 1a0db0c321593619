/* dtype.c - the type trait table and scalar half/bfloat16 conversions. */
#include "tensor/dtype.h"

#include <string.h>

static const hearth_type_traits traits[HEARTH_TYPE_COUNT] = {
    [HEARTH_TYPE_F32]  = {"f32", 1, 4, false, true},
    [HEARTH_TYPE_F16]  = {"f16", 1, 2, false, true},
    [HEARTH_TYPE_Q4_0] = {"q4_0", 32, 18, true, true},
    [HEARTH_TYPE_Q4_1] = {"q4_1", 32, 20, true, true},
    [HEARTH_TYPE_Q5_0] = {"q5_0", 32, 22, true, true},
    [HEARTH_TYPE_Q5_1] = {"q5_1", 32, 24, true, true},
    [HEARTH_TYPE_Q8_0] = {"q8_0", 32, 34, true, true},
    [HEARTH_TYPE_Q8_1] = {"q8_1", 32, 36, true, true},
    [HEARTH_TYPE_Q2_K] = {"q2_K", 256, 84, true, false},
    [HEARTH_TYPE_Q3_K] = {"q3_K", 256, 110, true, false},
    [HEARTH_TYPE_Q4_K] = {"q4_K", 256, 144, true, true},
    [HEARTH_TYPE_Q5_K] = {"q5_K", 256, 176, true, true},
    [HEARTH_TYPE_Q6_K] = {"q6_K", 256, 210, true, true},
    [HEARTH_TYPE_Q8_K] = {"q8_K", 256, 292, true, true},
    [HEARTH_TYPE_I8]   = {"i8", 1, 1, false, false},
    [HEARTH_TYPE_I16]  = {"i16", 1, 2, false, false},
    [HEARTH_TYPE_I32]  = {"i32", 1, 4, false, false},
    [HEARTH_TYPE_I64]  = {"i64", 1, 8, false, false},
    [HEARTH_TYPE_F64]  = {"f64", 1, 8, false, false},
    [HEARTH_TYPE_BF16] = {"bf16", 1, 2, false, true},
    [HEARTH_TYPE_MLX4_G32] = {"mlx4_g32", 32, 8 + 16, true, true, true},
    [HEARTH_TYPE_MLX4_G64] = {"mlx4_g64", 64, 8 + 32, true, true, true},
    [HEARTH_TYPE_MLX8_G32] = {"mlx8_g32", 32, 8 + 32, true, true, true},
    [HEARTH_TYPE_MLX8_G64] = {"mlx8_g64", 64, 8 + 64, true, true, true},
};

int hearth_type_mlx(int bits, int group_size) {
    if (bits == 4) return group_size == 32 ? HEARTH_TYPE_MLX4_G32 : group_size == 64 ? HEARTH_TYPE_MLX4_G64 : -1;
    if (bits == 8) return group_size == 32 ? HEARTH_TYPE_MLX8_G32 : group_size == 64 ? HEARTH_TYPE_MLX8_G64 : -1;
    return -1;
}

const hearth_type_traits *hearth_type_traits_of(int t) {
    if (t < 0 || t >= HEARTH_TYPE_COUNT || !traits[t].name) return NULL;
    return &traits[t];
}

const char *hearth_type_name(int t) {
    const hearth_type_traits *tr = hearth_type_traits_of(t);
    return tr ? tr->name : "unknown";
}

size_t hearth_row_size(hearth_type t, int64_t ne0) {
    const hearth_type_traits *tr = hearth_type_traits_of((int)t);
    if (!tr || ne0 < 0 || ne0 % tr->blck_size) return 0;
    return (size_t)(ne0 / tr->blck_size) * tr->type_size;
}

static uint32_t f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

float hearth_fp16_to_fp32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0) {
        /* zero or subnormal: man * 2^-24 exactly */
        float v = (float)man * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    if (exp == 31) return u2f(sign | 0x7f800000u | (man << 13));
    return u2f(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t hearth_fp32_to_fp16(float f) {
    uint32_t u = f2u(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t absu = u & 0x7fffffffu;
    if (absu >= 0x7f800000u) /* inf or nan */
        return (uint16_t)(sign | 0x7c00 | (absu > 0x7f800000u ? 0x200 : 0));
    if (absu >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65520: inf */
    if (absu < 0x38800000u) {
        /* subnormal half (or zero): scale to integer units of 2^-24, round to nearest even */
        float a = u2f(absu) * 16777216.0f; /* exact: power-of-two scaling */
        uint32_t m = (uint32_t)a;
        float rem = a - (float)m;
        if (rem > 0.5f || (rem == 0.5f && (m & 1))) m++;
        return (uint16_t)(sign | m);
    }
    uint32_t exp = (absu >> 23) - 112, man = absu & 0x7fffffu;
    uint32_t h = (exp << 10) | (man >> 13);
    uint32_t rest = man & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) h++; /* carry may bump exponent: fine */
    return (uint16_t)(sign | h);
}

float hearth_bf16_to_fp32(uint16_t h) { return u2f((uint32_t)h << 16); }

uint16_t hearth_fp32_to_bf16(float f) {
    uint32_t u = f2u(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet nan */
    u += 0x7fffu + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}
