/*
 * gemm_f32.c - the packed f32 GEMM on the pool (kernels/gemm_f32.h): the work is cut into
 * items of one panel (16 outputs) x TOK_BLOCK token rows, handed out from an atomic counter;
 * each item runs the micro-kernel over its rows 6 at a time (AVX2) or 12 (AVX-512) (a last group of fewer rows
 * repeats a row and does not store it), in ranges of KC along k so that the panel's part stays
 * in L1 while the rows pass (the outputs carry the chains from one range to the next). The ref and scalar sets run the reference instead.
 */
#include "kernels/gemm_f32.h"

#include "kernels/kernels.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#if defined(__x86_64__)
#include "kernels/cpu/x86/gemm_x86.h"
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

enum { MR_MAX = 12, TOK_BLOCK = 48, KC = 256 }; /* TOK_BLOCK a multiple of both kernels' rows */

typedef struct {
    const float *packed, *x;
    float       *y;
    int64_t      n_out, n_in, ldx, n_tok, ldy;
    int64_t      n_panels, n_tblocks;
    bool         avx512;       /* the 12-row AVX-512 kernel, else the 6-row AVX2 one */
    atomic_int_fast64_t next;
} gemm_job;

static void item(const gemm_job *j, int64_t it) {
    const int64_t p = it % j->n_panels, tb = it / j->n_panels;
    const int64_t t0 = tb * TOK_BLOCK, t1 = t0 + TOK_BLOCK < j->n_tok ? t0 + TOK_BLOCK : j->n_tok;
    const float *panel = j->packed + (size_t)p * (size_t)j->n_in * HEARTH_GEMM_NR;
    const int64_t o0 = p * HEARTH_GEMM_NR;
    const int nc = (int)(j->n_out - o0 < HEARTH_GEMM_NR ? j->n_out - o0 : HEARTH_GEMM_NR);
    for (int64_t k0 = 0; k0 < j->n_in; k0 += KC) { /* KC of the panel stay in L1 for the block's rows */
        const int64_t k1 = k0 + KC < j->n_in ? k0 + KC : j->n_in;
        const int mr = j->avx512 ? 12 : 6;
        for (int64_t t = t0; t < t1; t += mr) {
            const float *x[MR_MAX];
            float *y[MR_MAX];
            for (int r = 0; r < mr; r++) {
                const bool in = t + r < t1;
                x[r] = j->x + (in ? t + r : t) * j->ldx;
                y[r] = in ? j->y + (t + r) * j->ldy + o0 : NULL;
            }
#if HAVE_X86
            if (j->avx512) hearth_gemm_f32_12x16_avx512(panel, k0, k1, x, y, nc, k0 > 0);
            else hearth_gemm_f32_6x16_avx2(panel, k0, k1, x, y, nc, k0 > 0);
#endif
        }
    }
}

static void worker(void *arg, int ith, int nth) {
    (void)ith, (void)nth;
    gemm_job *j = arg;
    const int64_t n_items = j->n_panels * j->n_tblocks;
    for (;;) {
        int64_t it = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (it >= n_items) break;
        item(j, it);
    }
}

void hearth_gemm_f32(hearth_pool *pool, const float *packed, int64_t n_out, int64_t n_in, const float *x, int64_t ldx,
                     int64_t n_tok, float *y, int64_t ldy) {
    if (n_tok <= 0 || n_out <= 0) return;
    const hearth_isa isa = hearth_kernels_isa();
    if (!HAVE_X86 || (isa != HEARTH_ISA_AVX2 && isa != HEARTH_ISA_AVX512)) {
        hearth_gemm_f32_ref(packed, n_out, n_in, x, ldx, n_tok, y, ldy);
        return;
    }
    gemm_job j = {.packed = packed, .x = x, .y = y, .n_out = n_out, .n_in = n_in, .ldx = ldx, .n_tok = n_tok,
                  .ldy = ldy, .n_panels = (n_out + HEARTH_GEMM_NR - 1) / HEARTH_GEMM_NR,
                  .n_tblocks = (n_tok + TOK_BLOCK - 1) / TOK_BLOCK, .avx512 = isa == HEARTH_ISA_AVX512};
    atomic_init(&j.next, 0);
    hearth_pool_run(pool, worker, &j);
}
