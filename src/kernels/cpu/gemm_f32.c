/*
 * gemm_f32.c - the packed f32 GEMM on the pool (kernels/gemm_f32.h): the work is cut into
 * items of TOK_BLOCK token rows x one panel (AVX2: 16 outputs) or two (AVX-512: 32), handed
 * out from an atomic counter; each item runs the micro-kernel over its rows 6 (AVX2) or 12
 * (AVX-512) at a time, in ranges of KC along k so that the panels' part stays in L1 while the
 * rows pass (the outputs carry the chains from one range to the next). The ref and scalar sets
 * run the reference instead.
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

enum { TOK_BLOCK = 48, KC = 256 }; /* TOK_BLOCK a multiple of both kernels' rows */

typedef struct {
    const float *packed, *x;
    float       *y;
    int64_t      n_out, n_in, ldx, n_tok, ldy;
    int64_t      n_cols;       /* column items: panels (AVX2), pairs of panels (AVX-512) */
    int64_t      n_tblocks;
    bool         avx512;       /* the 12 x 32 AVX-512 kernel, else the 6 x 16 AVX2 one */
    atomic_int_fast64_t next;
} gemm_job;

#if HAVE_X86
/* AVX2: one panel, 6 rows at a time; a last group of fewer rows repeats a row, unstored. */
static void item_avx2(const gemm_job *j, int64_t p, int64_t t0, int64_t t1) {
    const float *panel = j->packed + (size_t)p * (size_t)j->n_in * HEARTH_GEMM_NR;
    const int64_t o0 = p * HEARTH_GEMM_NR;
    const int nc = (int)(j->n_out - o0 < HEARTH_GEMM_NR ? j->n_out - o0 : HEARTH_GEMM_NR);
    for (int64_t k0 = 0; k0 < j->n_in; k0 += KC) { /* KC of the panel stay in L1 for the block's rows */
        const int64_t k1 = k0 + KC < j->n_in ? k0 + KC : j->n_in;
        for (int64_t t = t0; t < t1; t += 6) {
            const float *x[6];
            float *y[6];
            for (int r = 0; r < 6; r++) {
                const bool in = t + r < t1;
                x[r] = j->x + (in ? t + r : t) * j->ldx;
                y[r] = in ? j->y + (t + r) * j->ldy + o0 : NULL;
            }
            hearth_gemm_f32_6x16_avx2(panel, k0, k1, x, y, nc, k0 > 0);
        }
    }
}

/* AVX-512: two panels, 12 rows at a time; a last group of fewer rows reads a copy of them
 * padded with zero rows (the kernel reads 12), and stores only its own. */
static void item_avx512(const gemm_job *j, int64_t pair, int64_t t0, int64_t t1) {
    const size_t panel_floats = (size_t)j->n_in * HEARTH_GEMM_NR;
    const int64_t o0 = pair * 2 * HEARTH_GEMM_NR;
    const int nc = (int)(j->n_out - o0 < 2 * HEARTH_GEMM_NR ? j->n_out - o0 : 2 * HEARTH_GEMM_NR);
    const float *p0 = j->packed + (size_t)(2 * pair) * panel_floats;
    const float *p1 = nc > HEARTH_GEMM_NR ? p0 + panel_floats : p0;
    float tail[12 * KC];
    for (int64_t k0 = 0; k0 < j->n_in; k0 += KC) {
        const int64_t kc = (k0 + KC < j->n_in ? k0 + KC : j->n_in) - k0;
        for (int64_t t = t0; t < t1; t += 12) {
            const int rows = (int)(t1 - t < 12 ? t1 - t : 12);
            const float *x = j->x + t * j->ldx + k0;
            int64_t ldx = j->ldx;
            if (rows < 12) {
                for (int r = 0; r < 12; r++)
                    for (int64_t k = 0; k < kc; k++) tail[r * KC + k] = r < rows ? x[r * j->ldx + k] : 0.0f;
                x = tail;
                ldx = KC;
            }
            hearth_gemm_f32_12x32_avx512(p0 + (size_t)k0 * HEARTH_GEMM_NR, p1 + (size_t)k0 * HEARTH_GEMM_NR, kc, x,
                                         ldx, j->y + t * j->ldy + o0, j->ldy, rows, nc, k0 > 0);
        }
    }
}
#endif

static void item(const gemm_job *j, int64_t it) {
    const int64_t c = it % j->n_cols, tb = it / j->n_cols;
    const int64_t t0 = tb * TOK_BLOCK, t1 = t0 + TOK_BLOCK < j->n_tok ? t0 + TOK_BLOCK : j->n_tok;
#if HAVE_X86
    if (j->avx512) item_avx512(j, c, t0, t1);
    else item_avx2(j, c, t0, t1);
#else
    (void)c, (void)t0, (void)t1;
#endif
}

static void worker(void *arg, int ith, int nth) {
    (void)ith, (void)nth;
    gemm_job *j = arg;
    const int64_t n_items = j->n_cols * j->n_tblocks;
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
    const int64_t n_panels = (n_out + HEARTH_GEMM_NR - 1) / HEARTH_GEMM_NR;
    const bool avx512 = isa == HEARTH_ISA_AVX512;
    gemm_job j = {.packed = packed, .x = x, .y = y, .n_out = n_out, .n_in = n_in, .ldx = ldx, .n_tok = n_tok,
                  .ldy = ldy, .n_cols = avx512 ? (n_panels + 1) / 2 : n_panels,
                  .n_tblocks = (n_tok + TOK_BLOCK - 1) / TOK_BLOCK, .avx512 = avx512};
    atomic_init(&j.next, 0);
    hearth_pool_run(pool, worker, &j);
}
