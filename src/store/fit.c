/* fit.c - the memory contract arithmetic; see fit.h. */
#include "store/fit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int64_t hearth_fit_kv_bytes(const hearth_model_facts *f, int64_t ctx) {
    if (ctx <= 0) return 0;
    int64_t global = f->kv_bytes_per_token - f->kv_swa_bytes_per_token;
    int64_t swa_ctx = f->n_swa > 0 && f->n_swa < ctx ? f->n_swa : ctx;
    return global * ctx + f->kv_swa_bytes_per_token * swa_ctx;
}

int64_t hearth_fit_transient_bytes(const hearth_model_facts *f, int64_t ctx) {
    int64_t chunk = ctx < HEARTH_FIT_PREFILL_CHUNK ? ctx : HEARTH_FIT_PREFILL_CHUNK;
    if (chunk < 1) chunk = 1;
    return chunk * f->act_bytes_per_token + 4 * (int64_t)f->n_vocab + (32LL << 20) + 64 * (int64_t)f->n_vocab;
}

static int64_t total_at(const hearth_model_facts *f, int64_t ctx) {
    return f->weight_bytes + hearth_fit_kv_bytes(f, ctx) + hearth_fit_transient_bytes(f, ctx);
}

hearth_fit hearth_fit_compute(const hearth_model_facts *f, const hearth_fit_params *p) {
    hearth_fit r;
    memset(&r, 0, sizeof r);
    int32_t train = f->n_ctx_train > 0 ? f->n_ctx_train : 4096;
    r.ctx = p->ctx > 0 ? p->ctx : (train < 4096 ? train : 4096);
    r.budget_bytes = p->budget_bytes > 0 ? p->budget_bytes
                                         : (int64_t)(HEARTH_FIT_BUDGET_SHARE * (double)hearth_fit_ram_bytes());
    r.weights_bytes = f->weight_bytes;
    r.kv_bytes = hearth_fit_kv_bytes(f, r.ctx);
    r.transient_bytes = hearth_fit_transient_bytes(f, r.ctx);
    r.total_bytes = r.weights_bytes + r.kv_bytes + r.transient_bytes;
    r.fits = r.total_bytes <= r.budget_bytes;
    /* total is monotone in ctx: bisect for the largest that fits */
    int64_t lo = 0, hi = train;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (total_at(f, mid) <= r.budget_bytes) lo = mid;
        else hi = mid - 1;
    }
    r.max_ctx = (int32_t)lo;
    r.read_bytes_per_token = f->weight_read_bytes + hearth_fit_kv_bytes(f, r.ctx / 2);
    if (p->bw_bytes_per_s > 0 && r.read_bytes_per_token > 0)
        r.decode_tok_s = HEARTH_FIT_DECODE_EFFICIENCY * p->bw_bytes_per_s / (double)r.read_bytes_per_token;
    return r;
}

int64_t hearth_fit_ram_bytes(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    int64_t ram = pages > 0 && page > 0 ? (int64_t)pages * page : 0;
    FILE *fp = fopen("/sys/fs/cgroup/memory.max", "r"); /* a container's limit (cgroup v2) */
    if (fp) {
        char buf[64] = "";
        if (fgets(buf, sizeof buf, fp)) {
            char *end;
            long long lim = strtoll(buf, &end, 10);
            if (end != buf && lim > 0 && (ram == 0 || lim < ram)) ram = lim;
        }
        fclose(fp);
    }
    return ram;
}
