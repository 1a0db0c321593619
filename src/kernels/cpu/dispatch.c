/*
 * dispatch.c - CPU feature detection and the per-ISA kernel trait tables (ggml's
 * type_traits_cpu + its x86 feature checks).
 *
 * The four tables are static and const: one row per tensor type, filled at compile time with
 * the functions of that set (a set without its own kernel for a type names the scalar one).
 * What is decided at run time is only which sets this CPU can run (CPUID + XGETBV, once, under
 * pthread_once) and which one is active (HEARTH_KERNELS, or hearth_kernels_select).
 *
 * Requirements, matching the -m flags CMake compiles the ISA files with:
 *   avx2    AVX2, FMA, F16C, BMI2, and the OS saving YMM state (XCR0 bits 1-2)
 *   avx512  all of avx2, plus AVX-512 F/BW/VL/DQ and VNNI, and the OS saving opmask and ZMM
 *           state (XCR0 bits 5-7). VNNI is required rather than branched on: the integer
 *           dots are written around vpdpbusd/vpdpwssd, and AVX-512 CPUs without VNNI
 *           (Skylake-SP/X) run the avx2 set well. AVX512-BF16 is reported, and used only
 *           when asked (HEARTH_BF16_DPBF16=1): the avx512 set's bf16 tile is then vdpbf16ps
 *           (tab_avx512_bf16) instead of the same order in f32 FMAs (bf16_x86.h), which
 *           measured faster on Sapphire Rapids.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "kernels/kernels.h"
#include "kernels/ref/argmax_ref.h"
#include "kernels/ref/dot_ref.h"
#include "kernels/ref/mlx_ref.h"
#include "kernels/ref/ops_ref.h"
#include "kernels/ref/quant_ref.h"
#include "kernels/ref/llamacpp_order_ref.h"
#include "kernels/ref/bf16_dp_ref.h"

#if defined(__x86_64__)
#include <cpuid.h>

#include "kernels/cpu/x86/attn_x86.h"
#include "kernels/cpu/x86/bf16_x86.h"
#include "kernels/cpu/x86/quant_x86.h"
#include "kernels/cpu/x86/tile_x86.h"
#define HEARTH_HAVE_X86 1
#else
#define HEARTH_HAVE_X86 0
#endif

/* Short names for the table rows: to_float, from_float, vec_dot, vec_dot_type (and vec_dot_tile). */
#define ROWT(tf, ff, vd, vdt, tile)                                                                \
    {.to_float = tf, .from_float = ff, .vec_dot = vd, .vec_dot_type = HEARTH_TYPE_##vdt,            \
     .vec_dot_tile = tile}
#define ROW(tf, ff, vd, vdt) ROWT(tf, ff, vd, vdt, NULL)
#define TF(t) hearth_##t##_to_float_ref
#define FF(t) hearth_##t##_from_float_ref
/* MLX rows off the ref set: f32 activations dotted directly (the ref set dequantizes) */
#define MLX_DIRECT(T, t, dot) [HEARTH_TYPE_##T] = {TF(t), FF(t), dot, HEARTH_TYPE_F32, true}

/* ref: every weight dequantized and dotted with f32 activations in plain C. */
static const hearth_kernel_traits tab_ref[HEARTH_TYPE_COUNT] = {
    [HEARTH_TYPE_F32]  = ROW(TF(f32), FF(f32), hearth_vec_dot_f32_ref, F32),
    [HEARTH_TYPE_F16]  = ROW(TF(f16), FF(f16), hearth_vec_dot_f16_f32_ref, F32),
    [HEARTH_TYPE_BF16] = ROW(TF(bf16), FF(bf16), hearth_vec_dot_bf16_f32_ref, F32),
    [HEARTH_TYPE_Q4_0] = ROW(TF(q4_0), FF(q4_0), hearth_vec_dot_q4_0_f32_ref, F32),
    [HEARTH_TYPE_Q4_1] = ROW(TF(q4_1), FF(q4_1), hearth_vec_dot_q4_1_f32_ref, F32),
    [HEARTH_TYPE_Q5_0] = ROW(TF(q5_0), FF(q5_0), hearth_vec_dot_q5_0_f32_ref, F32),
    [HEARTH_TYPE_Q5_1] = ROW(TF(q5_1), FF(q5_1), hearth_vec_dot_q5_1_f32_ref, F32),
    [HEARTH_TYPE_Q8_0] = ROW(TF(q8_0), FF(q8_0), hearth_vec_dot_q8_0_f32_ref, F32),
    [HEARTH_TYPE_Q8_1] = ROW(TF(q8_1), FF(q8_1), NULL, F32),
    [HEARTH_TYPE_Q4_K] = ROW(TF(q4_K), FF(q4_K), hearth_vec_dot_q4_K_f32_ref, F32),
    [HEARTH_TYPE_Q5_K] = ROW(TF(q5_K), FF(q5_K), hearth_vec_dot_q5_K_f32_ref, F32),
    [HEARTH_TYPE_Q6_K] = ROW(TF(q6_K), FF(q6_K), hearth_vec_dot_q6_K_f32_ref, F32),
    [HEARTH_TYPE_Q8_K] = ROW(TF(q8_K), FF(q8_K), NULL, F32),
    [HEARTH_TYPE_MLX4_G32] = ROW(TF(mlx4_g32), FF(mlx4_g32), hearth_vec_dot_mlx4_g32_f32_ref, F32),
    [HEARTH_TYPE_MLX4_G64] = ROW(TF(mlx4_g64), FF(mlx4_g64), hearth_vec_dot_mlx4_g64_f32_ref, F32),
    [HEARTH_TYPE_MLX8_G32] = ROW(TF(mlx8_g32), FF(mlx8_g32), hearth_vec_dot_mlx8_g32_f32_ref, F32),
    [HEARTH_TYPE_MLX8_G64] = ROW(TF(mlx8_g64), FF(mlx8_g64), hearth_vec_dot_mlx8_g64_f32_ref, F32),
};

/* scalar: quantized activations, plain C; the specification of the SIMD sets. The q8_0/q8_1
 * activation quantizers, the 32-element block dots and the q4_K/q6_K dots are llama.cpp's x86 order
 * (kernels/ref/llamacpp_order_ref.h), which the SIMD sets repeat bit for bit. */
static const hearth_kernel_traits tab_scalar[HEARTH_TYPE_COUNT] = {
    [HEARTH_TYPE_F32]  = ROW(TF(f32), FF(f32), hearth_vec_dot_f32_ref, F32),
    [HEARTH_TYPE_F16]  = ROW(TF(f16), FF(f16), hearth_vec_dot_f16_ref, F16),
    [HEARTH_TYPE_BF16] = {.to_float = TF(bf16), .from_float = FF(bf16), .vec_dot = hearth_vec_dot_bf16_ref,
                          .vec_dot_type = HEARTH_TYPE_BF16, .vec_dot_batch = hearth_vec_dot_bf16_dp_ref,
                          .vec_dot_batch_min = HEARTH_BF16_DP_MIN_TOK},
    [HEARTH_TYPE_Q4_0] = ROW(TF(q4_0), FF(q4_0), hearth_vec_dot_q4_0_q8_0_x86_ref, Q8_0),
    [HEARTH_TYPE_Q4_1] = ROW(TF(q4_1), FF(q4_1), hearth_vec_dot_q4_1_q8_1_x86_ref, Q8_1),
    [HEARTH_TYPE_Q5_0] = ROW(TF(q5_0), FF(q5_0), hearth_vec_dot_q5_0_q8_0_x86_ref, Q8_0),
    [HEARTH_TYPE_Q5_1] = ROW(TF(q5_1), FF(q5_1), hearth_vec_dot_q5_1_q8_1_ref, Q8_1),
    [HEARTH_TYPE_Q8_0] = ROW(TF(q8_0), hearth_q8_0_from_float_x86_ref, hearth_vec_dot_q8_0_q8_0_x86_ref, Q8_0),
    [HEARTH_TYPE_Q8_1] = ROW(TF(q8_1), hearth_q8_1_from_float_x86_ref, NULL, F32),
    [HEARTH_TYPE_Q4_K] = {.to_float = TF(q4_K), .from_float = FF(q4_K), .vec_dot = hearth_vec_dot_q4_K_q8_K_x86_ref,
                          .vec_dot_type = HEARTH_TYPE_Q8_K, .vec_dot_gemm = hearth_vec_dot_q4_K_q8_K_x86_gemm_ref},
    [HEARTH_TYPE_Q5_K] = ROW(TF(q5_K), FF(q5_K), hearth_vec_dot_q5_K_q8_K_ref, Q8_K),
    [HEARTH_TYPE_Q6_K] = {.to_float = TF(q6_K), .from_float = FF(q6_K), .vec_dot = hearth_vec_dot_q6_K_q8_K_x86_ref,
                          .vec_dot_type = HEARTH_TYPE_Q8_K, .vec_dot_batch = hearth_vec_dot_q6_K_q8_K_x86_tiled_ref,
                          .vec_dot_batch_min = HEARTH_Q6_K_TILED_MIN_TOK},
    [HEARTH_TYPE_Q8_K] = ROW(TF(q8_K), FF(q8_K), NULL, F32),
    MLX_DIRECT(MLX4_G32, mlx4_g32, hearth_vec_dot_mlx4_g32_ref),
    MLX_DIRECT(MLX4_G64, mlx4_g64, hearth_vec_dot_mlx4_g64_ref),
    MLX_DIRECT(MLX8_G32, mlx8_g32, hearth_vec_dot_mlx8_g32_ref),
    MLX_DIRECT(MLX8_G64, mlx8_g64, hearth_vec_dot_mlx8_g64_ref),
};

#if HEARTH_HAVE_X86
/* The SIMD sets: dots and q8 quantizers per ISA; dequantizers and weight quantizers scalar.
 * q4_0, q4_1, q5_0, q8_0, q4_K and q6_K have tiles (rows in 4s x up to HEARTH_TILE_NT
 * tokens, tile_x86.h), each result equal to the set's vec_dot bit for bit (q4_K's gemm tile to
 * its vec_dot_gemm, q6_K's tiled one to vec_dot_batch, the scalar twin, which the sets share:
 * only its tile is SIMD). */
#define SIMD_TABLE(isa, bf16_tile)                                                               \
    {                                                                                            \
        [HEARTH_TYPE_F32]  = ROW(TF(f32), FF(f32), hearth_vec_dot_f32_##isa, F32),               \
        [HEARTH_TYPE_F16]  = ROW(TF(f16), FF(f16), hearth_vec_dot_f16_##isa, F16),               \
        [HEARTH_TYPE_BF16] = {.to_float = TF(bf16), .from_float = FF(bf16),                       \
                              .vec_dot = hearth_vec_dot_bf16_##isa, .vec_dot_type = HEARTH_TYPE_BF16, \
                              .vec_dot_batch = hearth_vec_dot_bf16_dp_ref,                      \
                              .vec_dot_batch_min = HEARTH_BF16_DP_MIN_TOK,                      \
                              .vec_dot_batch_tile = bf16_tile},                                 \
        [HEARTH_TYPE_Q4_0] = ROWT(TF(q4_0), FF(q4_0), hearth_vec_dot_q4_0_q8_0_##isa, Q8_0,      \
                                  hearth_tile_q4_0_q8_0_##isa),                                  \
        [HEARTH_TYPE_Q4_1] = ROWT(TF(q4_1), FF(q4_1), hearth_vec_dot_q4_1_q8_1_##isa, Q8_1,      \
                                  hearth_tile_q4_1_q8_1_##isa),                                  \
        [HEARTH_TYPE_Q5_0] = ROWT(TF(q5_0), FF(q5_0), hearth_vec_dot_q5_0_q8_0_##isa, Q8_0,      \
                                  hearth_tile_q5_0_q8_0_##isa),                                  \
        [HEARTH_TYPE_Q5_1] = ROW(TF(q5_1), FF(q5_1), hearth_vec_dot_q5_1_q8_1_##isa, Q8_1),      \
        [HEARTH_TYPE_Q8_0] = ROWT(TF(q8_0), hearth_q8_0_from_float_##isa,                        \
                                  hearth_vec_dot_q8_0_q8_0_##isa, Q8_0, hearth_tile_q8_0_q8_0_##isa), \
        [HEARTH_TYPE_Q8_1] = ROW(TF(q8_1), hearth_q8_1_from_float_##isa, NULL, F32),             \
        [HEARTH_TYPE_Q4_K] = {.to_float = TF(q4_K), .from_float = FF(q4_K),                       \
                              .vec_dot = hearth_vec_dot_q4_K_q8_K_##isa,                        \
                              .vec_dot_type = HEARTH_TYPE_Q8_K, .vec_dot_gemm = Q4_K_GEMM_##isa, \
                              .vec_dot_tile = Q4_K_TILE_##isa, .vec_dot_gemm_tile = Q4_K_GEMM_TILE_##isa}, \
        [HEARTH_TYPE_Q5_K] = ROW(TF(q5_K), FF(q5_K), hearth_vec_dot_q5_K_q8_K_##isa, Q8_K),      \
        [HEARTH_TYPE_Q6_K] = {.to_float = TF(q6_K), .from_float = FF(q6_K),                       \
                              .vec_dot = hearth_vec_dot_q6_K_q8_K_##isa,                        \
                              .vec_dot_type = HEARTH_TYPE_Q8_K, .vec_dot_tile = Q6_K_TILE_##isa, \
                              .vec_dot_batch = hearth_vec_dot_q6_K_q8_K_x86_tiled_ref,          \
                              .vec_dot_batch_min = HEARTH_Q6_K_TILED_MIN_TOK,                   \
                              .vec_dot_batch_tile = hearth_tile_q6_K_q8_K_tiled_##isa},         \
        [HEARTH_TYPE_Q8_K] = ROW(TF(q8_K), hearth_q8_K_from_float_##isa, NULL, F32),             \
        MLX_DIRECT(MLX4_G32, mlx4_g32, hearth_vec_dot_mlx4_g32_##isa),                           \
        MLX_DIRECT(MLX4_G64, mlx4_g64, hearth_vec_dot_mlx4_g64_##isa),                           \
        MLX_DIRECT(MLX8_G32, mlx8_g32, hearth_vec_dot_mlx8_g32_##isa),                           \
        MLX_DIRECT(MLX8_G64, mlx8_g64, hearth_vec_dot_mlx8_g64_##isa),                           \
    }
#define Q4_K_GEMM_avx2 hearth_vec_dot_q4_K_q8_K_gemm_avx2
#define Q4_K_GEMM_avx512 hearth_vec_dot_q4_K_q8_K_gemm_avx512
#define Q6_K_TILE_avx2 hearth_tile_q6_K_q8_K_avx2
#define Q6_K_TILE_avx512 hearth_tile_q6_K_q8_K_avx512
#define Q4_K_TILE_avx2 hearth_tile_q4_K_q8_K_avx2
#define Q4_K_GEMM_TILE_avx2 hearth_tile_q4_K_q8_K_gemm_avx2
#define Q4_K_TILE_avx512 hearth_tile_q4_K_q8_K_avx512
#define Q4_K_GEMM_TILE_avx512 hearth_tile_q4_K_q8_K_gemm_avx512
static const hearth_kernel_traits tab_avx2[HEARTH_TYPE_COUNT] = SIMD_TABLE(avx2, hearth_tile_bf16_dp_avx2);
static const hearth_kernel_traits tab_avx512[HEARTH_TYPE_COUNT] = SIMD_TABLE(avx512, hearth_tile_bf16_dp_avx512);
/* the avx512 set with vdpbf16ps as its bf16 tile (same bits): HEARTH_BF16_DPBF16=1 and AVX512-BF16 */
static const hearth_kernel_traits tab_avx512_bf16[HEARTH_TYPE_COUNT] =
    SIMD_TABLE(avx512, hearth_tile_bf16_dp_avx512bf16);
#endif

static const hearth_kernel_traits *const tables[HEARTH_ISA_COUNT] = {
    [HEARTH_ISA_REF] = tab_ref,
    [HEARTH_ISA_SCALAR] = tab_scalar,
#if HEARTH_HAVE_X86
    [HEARTH_ISA_AVX2] = tab_avx2,
    [HEARTH_ISA_AVX512] = tab_avx512,
#endif
};

static const char *const isa_names[HEARTH_ISA_COUNT] = {"ref", "scalar", "avx2", "avx512"};

/* Written once under init_once, read-only after (active_isa may be switched by select). */
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static bool           isa_ok[HEARTH_ISA_COUNT];
static bool           avx512_bf16; /* the avx512 set runs tab_avx512_bf16 (written once, in init) */
static _Atomic int    active_isa = HEARTH_ISA_SCALAR;

typedef struct {
    bool avx2, fma, f16c, bmi2, ymm_os;
    bool avx512f, avx512bw, avx512vl, avx512dq, avx512vnni, avx512bf16, zmm_os;
} cpu_features;

#if HEARTH_HAVE_X86
static uint64_t xgetbv0(void) {
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (uint64_t)hi << 32 | lo;
}

static cpu_features detect(void) {
    cpu_features f = {0};
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    bool osxsave = c >> 27 & 1, avx = c >> 28 & 1;
    f.fma = c >> 12 & 1;
    f.f16c = c >> 29 & 1;
    uint64_t xcr0 = osxsave ? xgetbv0() : 0;
    f.ymm_os = avx && (xcr0 & 0x6) == 0x6;        /* SSE + AVX state */
    f.zmm_os = f.ymm_os && (xcr0 & 0xe0) == 0xe0; /* opmask, ZMM_Hi256, Hi16_ZMM */
    if (__get_cpuid_max(0, NULL) < 7) return f;
    __cpuid_count(7, 0, a, b, c, d);
    unsigned max_sub = a;
    f.avx2 = b >> 5 & 1;
    f.bmi2 = b >> 8 & 1;
    f.avx512f = b >> 16 & 1;
    f.avx512dq = b >> 17 & 1;
    f.avx512bw = b >> 30 & 1;
    f.avx512vl = b >> 31 & 1;
    f.avx512vnni = c >> 11 & 1;
    if (max_sub >= 1) {
        __cpuid_count(7, 1, a, b, c, d);
        f.avx512bf16 = a >> 5 & 1;
    }
    return f;
}
#else
static cpu_features detect(void) { return (cpu_features){0}; }
#endif

static hearth_isa best_isa(void) {
    for (int i = HEARTH_ISA_COUNT - 1; i > HEARTH_ISA_SCALAR; i--)
        if (isa_ok[i]) return (hearth_isa)i;
    return HEARTH_ISA_SCALAR;
}

static void init(void) {
    cpu_features f = detect();
    isa_ok[HEARTH_ISA_REF] = isa_ok[HEARTH_ISA_SCALAR] = true;
    isa_ok[HEARTH_ISA_AVX2] = HEARTH_HAVE_X86 && f.ymm_os && f.avx2 && f.fma && f.f16c && f.bmi2;
    isa_ok[HEARTH_ISA_AVX512] = isa_ok[HEARTH_ISA_AVX2] && f.zmm_os && f.avx512f && f.avx512bw &&
                                f.avx512vl && f.avx512dq && f.avx512vnni;
    /* HEARTH_BF16_DPBF16=1: the vdpbf16ps bf16 tile where CPUID reports AVX512-BF16 (an A/B
     * lever, the same bits on normal numbers). Off by default: on Sapphire Rapids the FMA tile
     * ran the 1B bf16 shape's prefill matmuls 1.2x faster (bench/README.md). */
    const char *dpbf16 = getenv("HEARTH_BF16_DPBF16");
    avx512_bf16 = HEARTH_HAVE_X86 && isa_ok[HEARTH_ISA_AVX512] && f.avx512bf16 && dpbf16 && *dpbf16 == '1';
    hearth_isa pick = best_isa();
    const char *env = getenv("HEARTH_KERNELS");
    if (env && *env && strcmp(env, "auto") != 0) {
        int want = -1;
        for (int i = 0; i < HEARTH_ISA_COUNT; i++)
            if (!strcmp(env, isa_names[i])) want = i;
        if (want < 0)
            hearth_log(HEARTH_LOG_WARN,
                       "HEARTH_KERNELS=%s: unknown set (ref|scalar|avx2|avx512|auto), using %s",
                       env, isa_names[pick]);
        else if (!isa_ok[want])
            hearth_log(HEARTH_LOG_WARN, "HEARTH_KERNELS=%s: this CPU cannot run it, using %s", env,
                       isa_names[pick]);
        else
            pick = (hearth_isa)want;
    }
    atomic_store_explicit(&active_isa, (int)pick, memory_order_relaxed);
    hearth_log(HEARTH_LOG_INFO,
               "kernels: %s (cpu:%s%s%s%s%s%s%s%s%s%s)", isa_names[pick], f.avx2 ? " avx2" : "",
               f.fma ? " fma" : "", f.f16c ? " f16c" : "", f.avx512f ? " avx512f" : "",
               f.avx512bw ? " bw" : "", f.avx512vl ? " vl" : "", f.avx512dq ? " dq" : "",
               f.avx512vnni ? " vnni" : "", f.avx512bf16 ? " bf16" : "",
               f.ymm_os ? (f.zmm_os ? "" : " (os: no zmm)") : " (os: no ymm)");
}

void hearth_kernels_init(void) { pthread_once(&init_once, init); }

hearth_isa hearth_kernels_isa(void) {
    hearth_kernels_init();
    return (hearth_isa)atomic_load_explicit(&active_isa, memory_order_relaxed);
}

bool hearth_kernels_select(hearth_isa isa) {
    if (!hearth_isa_available(isa)) return false;
    atomic_store_explicit(&active_isa, (int)isa, memory_order_relaxed);
    return true;
}

const char *hearth_kernels_name(void) { return hearth_isa_name(hearth_kernels_isa()); }

bool hearth_kernels_f32(void) { return hearth_kernels_isa() == HEARTH_ISA_REF; }

const char *hearth_isa_name(hearth_isa isa) {
    return (unsigned)isa < HEARTH_ISA_COUNT ? isa_names[isa] : "unknown";
}

bool hearth_isa_available(hearth_isa isa) {
    hearth_kernels_init();
    return (unsigned)isa < HEARTH_ISA_COUNT && isa_ok[isa];
}

const hearth_kernel_traits *hearth_kernels_traits_isa(hearth_type t, hearth_isa isa) {
    if (!hearth_isa_available(isa) || (unsigned)t >= HEARTH_TYPE_COUNT) return NULL;
    const hearth_kernel_traits *tr = &tables[isa][t];
#if HEARTH_HAVE_X86
    if (isa == HEARTH_ISA_AVX512 && avx512_bf16) tr = &tab_avx512_bf16[t];
#endif
    return tr->to_float ? tr : NULL;
}

hearth_swiglu_fn hearth_kernels_swiglu(void) {
    switch (hearth_kernels_isa()) {
    case HEARTH_ISA_REF: return hearth_swiglu_ref;
#if HEARTH_HAVE_X86
    case HEARTH_ISA_AVX512: return hearth_swiglu_avx512;
#endif
    default: return hearth_swiglu_x86_ref;
    }
}

hearth_swiglu_fn hearth_kernels_geglu_f16(void) {
#if HEARTH_HAVE_X86
    if (hearth_kernels_isa() == HEARTH_ISA_AVX512) return hearth_geglu_f16_avx512;
#endif
    return hearth_geglu_f16_ref;
}

hearth_attn_head_x86_fn hearth_kernels_attn_head(void) {
    switch (hearth_kernels_isa()) {
    case HEARTH_ISA_REF: return NULL;
#if HEARTH_HAVE_X86
    case HEARTH_ISA_AVX2: return hearth_attn_head_x86_avx2;
    case HEARTH_ISA_AVX512: return hearth_attn_head_x86_avx512;
#endif
    default: return hearth_attn_head_x86_ref;
    }
}

hearth_attn_group_x86_fn hearth_kernels_attn_group_isa(hearth_isa isa) {
    if (!hearth_isa_available(isa)) return NULL;
    switch (isa) {
#if HEARTH_HAVE_X86
    case HEARTH_ISA_AVX2: return hearth_attn_group_x86_avx2;
    case HEARTH_ISA_AVX512: return hearth_attn_group_x86_avx512;
#endif
    default: return NULL;
    }
}

hearth_attn_sgroup_x86_fn hearth_kernels_attn_sgroup_isa(hearth_isa isa) {
    if (!hearth_isa_available(isa)) return NULL;
    switch (isa) {
#if HEARTH_HAVE_X86
    case HEARTH_ISA_AVX2: return hearth_attn_sgroup_x86_avx2;
    case HEARTH_ISA_AVX512: return hearth_attn_sgroup_x86_avx512;
#endif
    default: return NULL;
    }
}

hearth_attn_sgroup_x86_fn hearth_kernels_attn_sgroup(void) { return hearth_kernels_attn_sgroup_isa(hearth_kernels_isa()); }

hearth_attn_quant_fn hearth_kernels_attn_quant_isa(hearth_isa isa) {
    if (!hearth_isa_available(isa)) return NULL;
    switch (isa) {
#if HEARTH_HAVE_X86
    case HEARTH_ISA_AVX2: return hearth_attn_quant_avx2;
    case HEARTH_ISA_AVX512: return hearth_attn_quant_avx512;
#endif
    default: return hearth_attn_quant_ref;
    }
}

hearth_from_float_fn hearth_kernels_kv_quantizer(hearth_type t) {
    hearth_isa isa = hearth_kernels_isa() == HEARTH_ISA_REF ? HEARTH_ISA_SCALAR : hearth_kernels_isa();
    const hearth_kernel_traits *tr = hearth_kernels_traits_isa(t, isa);
    return tr ? tr->from_float : NULL;
}

hearth_attn_quant_fn hearth_kernels_attn_quant(void) { return hearth_kernels_attn_quant_isa(hearth_kernels_isa()); }

hearth_attn_turbo_fn hearth_kernels_attn_turbo_isa(hearth_isa isa) {
    if (!hearth_isa_available(isa)) return NULL;
    switch (isa) {
#if HEARTH_HAVE_X86
    case HEARTH_ISA_AVX2: return hearth_attn_turbo_avx2;
    case HEARTH_ISA_AVX512: return hearth_attn_turbo_avx512;
#endif
    default: return hearth_attn_turbo_ref;
    }
}

hearth_attn_turbo_fn hearth_kernels_attn_turbo(void) { return hearth_kernels_attn_turbo_isa(hearth_kernels_isa()); }

static void f16_row_scalar(const float *x, uint16_t *y, int64_t n) { hearth_f16_from_float_ref(x, y, n); }

hearth_f16_row_fn hearth_kernels_f16_row_isa(hearth_isa isa) {
    if (!hearth_isa_available(isa)) return NULL;
    switch (isa) {
#if HEARTH_HAVE_X86
    case HEARTH_ISA_AVX2: return hearth_f16_row_avx2;
    case HEARTH_ISA_AVX512: return hearth_f16_row_avx512;
#endif
    default: return f16_row_scalar;
    }
}

hearth_f16_row_fn hearth_kernels_f16_row(void) { return hearth_kernels_f16_row_isa(hearth_kernels_isa()); }

hearth_attn_group_x86_fn hearth_kernels_attn_group(void) { return hearth_kernels_attn_group_isa(hearth_kernels_isa()); }

const hearth_kernel_traits *hearth_kernels_traits(hearth_type t) {
    return hearth_kernels_traits_isa(t, hearth_kernels_isa());
}

int64_t hearth_kernels_argmax(const float *x, int64_t n) {
#if HEARTH_HAVE_X86
    if (hearth_kernels_isa() == HEARTH_ISA_AVX512) return hearth_argmax_avx512(x, n);
#endif
    return hearth_argmax_ref(x, n);
}
