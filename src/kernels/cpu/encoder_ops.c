/*
 * encoder_ops.c - which encoder kernel each set runs (kernels/encoder_ops.h).
 */
#include "kernels/encoder_ops.h"

#include "kernels/kernels.h"
#include "kernels/ref/encoder_ref.h"

#if defined(__x86_64__)
#include "kernels/cpu/x86/encoder_x86.h"
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

static bool simd(int isa) { return HAVE_X86 && (isa == HEARTH_ISA_AVX2 || isa == HEARTH_ISA_AVX512); }

hearth_gelu_fn hearth_kernels_gelu_erf_isa(int isa) {
    if (isa < 0 || isa >= HEARTH_ISA_COUNT || !hearth_isa_available((hearth_isa)isa)) return NULL;
#if HAVE_X86
    if (isa == HEARTH_ISA_AVX512) return hearth_gelu_erf_avx512;
    if (simd(isa)) return hearth_gelu_erf_avx2;
#endif
    return hearth_gelu_erf_ref;
}

hearth_attn_full_fn hearth_kernels_attn_full_isa(int isa) {
    if (isa < 0 || isa >= HEARTH_ISA_COUNT || !hearth_isa_available((hearth_isa)isa)) return NULL;
#if HAVE_X86
    if (isa == HEARTH_ISA_AVX512) return hearth_attn_full_avx512;
    if (simd(isa)) return hearth_attn_full_avx2;
#endif
    return hearth_attn_full_ref;
}

hearth_layernorm_fn hearth_kernels_layernorm_isa(int isa) {
    if (isa < 0 || isa >= HEARTH_ISA_COUNT || !hearth_isa_available((hearth_isa)isa)) return NULL;
#if HAVE_X86
    if (isa == HEARTH_ISA_AVX512) return hearth_layernorm_avx512;
#endif
    return hearth_layernorm_ref;
}

hearth_gelu_fn      hearth_kernels_gelu_erf(void) { return hearth_kernels_gelu_erf_isa(hearth_kernels_isa()); }
hearth_attn_full_fn hearth_kernels_attn_full(void) { return hearth_kernels_attn_full_isa(hearth_kernels_isa()); }
hearth_layernorm_fn hearth_kernels_layernorm(void) { return hearth_kernels_layernorm_isa(hearth_kernels_isa()); }
