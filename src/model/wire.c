/*
 * wire.c - mlock of a model's weights (wire.h): every weight's rows, page-aligned.
 */
#include "model/wire.h"
#include "model/model_internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

/* The weights of m, listed into ws (n at most cap); returns how many. */
static size_t weights_of(const hearth_model *m, const hearth_weight **ws, size_t cap) {
    size_t n = 0;
#define ADD(w)                                                   \
    do {                                                         \
        if ((w)->data && n < cap) ws[n++] = (w);                 \
    } while (0)
    ADD(&m->tok_embd);
    ADD(&m->output);
    ADD(&m->ple_embd);
    ADD(&m->ple_model_proj);
    for (int32_t il = 0; il < m->hp.n_layer; il++) {
        const hearth_layer *l = &m->layers[il];
        ADD(&l->wq);
        ADD(&l->wk);
        ADD(&l->wv);
        ADD(&l->wo);
        ADD(&l->w_gate);
        ADD(&l->w_up);
        ADD(&l->w_down);
        ADD(&l->router);
        ADD(&l->exp_gate);
        ADD(&l->exp_up);
        ADD(&l->exp_down);
        ADD(&l->ple_gate);
        ADD(&l->ple_proj);
    }
#undef ADD
    return n;
}

enum { PER_LAYER = 13, GLOBAL = 4 };

static int lock_range(const void *p, size_t bytes, bool on) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)(page - 1);
    size_t len = bytes + ((uintptr_t)p - a);
    return on ? mlock((const void *)a, len) : munlock((const void *)a, len);
}

hearth_status hearth_model_wire(const hearth_model *m, bool on, hearth_err *err) {
    size_t cap = GLOBAL + (size_t)m->hp.n_layer * PER_LAYER;
    const hearth_weight **ws = malloc(cap * sizeof *ws);
    if (!ws) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    size_t n = weights_of(m, ws, cap), total = 0;
    for (size_t i = 0; i < n; i++) {
        size_t bytes = (size_t)ws[i]->ne1 * ws[i]->row_bytes;
        total += bytes;
        if (lock_range(ws[i]->data, bytes, on) == 0 || !on) continue;
        int e = errno;
        for (size_t j = 0; j < i; j++) lock_range(ws[j]->data, (size_t)ws[j]->ne1 * ws[j]->row_bytes, false);
        free(ws);
        struct rlimit rl = {0};
        getrlimit(RLIMIT_MEMLOCK, &rl);
        char lim[48];
        if (rl.rlim_cur == RLIM_INFINITY) snprintf(lim, sizeof lim, "unlimited");
        else snprintf(lim, sizeof lim, "%.0f MB", (double)rl.rlim_cur / 1e6);
        size_t all = hearth_model_weight_bytes(m);
        return hearth_err_set(err, HEARTH_E_LIMIT, -1,
                              "--force-wire: locking the weights (%.0f MB) in RAM failed after %.0f MB (%s); the "
                              "limit of locked memory (RLIMIT_MEMLOCK) is %s: raise it (ulimit -l, or LimitMEMLOCK= "
                              "in a systemd unit) or run without --force-wire",
                              (double)all / 1e6, (double)(total - bytes) / 1e6, strerror(e), lim);
    }
    free(ws);
    return HEARTH_OK;
}
