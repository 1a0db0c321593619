/*
 * cmd_perplexity.c - `hearth perplexity MODEL FILE`: how well a model predicts a text, measured
 * as llama.cpp's perplexity tool measures it, so that the two numbers can be compared.
 *
 * The method (llama.cpp's tools/perplexity, its default mode):
 *
 *   - the whole file is tokenized once, with BOS first when the vocabulary adds one (special
 *     tokens' text stays plain text);
 *   - the tokens are cut into non-overlapping windows of n_ctx (--ctx, default 512); the tail
 *     that does not fill a window is dropped; --chunks N keeps the first N windows;
 *   - each window is evaluated from an empty cache, its first token replaced by BOS when the
 *     vocabulary adds one;
 *   - only the second half is scored: with first = n_ctx / 2, the logits at positions first ..
 *     n_ctx - 2 give the negative log-likelihood of tokens first + 1 .. n_ctx - 1 (n_ctx -
 *     first - 1 tokens per window), the log-softmax taken in double;
 *   - after chunk i the running estimate exp(sum nll / count) prints as "[i]%.4f,", and at the
 *     end "Final estimate: PPL = exp(mean) +/- ppl * sqrt(var / (count - 1))", var being the
 *     mean of nll^2 minus the squared mean (the standard error of the mean, carried through
 *     exp to first order).
 *
 * One difference: llama.cpp refuses a text of fewer than 2 windows; hearth needs one.
 *
 * Each window is one engine request that scores its prompt (engine.h, score_from = first + 1)
 * and generates one token nobody reads, so the windows go through the engine exactly as serving
 * does: the same device, numerics and KV cache flags (engine_flags.h), prefill in steps of the
 * engine's max step (512), logits only for the scored half. The prompt cache is off (windows
 * share nothing) and the batch is 1 unless --batch says otherwise.
 */
#include "cli/chat.h"
#include "cli/cli.h"
#include "cli/engine_flags.h"
#include "engine/engine.h"
#include "model/model.h"
#include "store/hub.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

const char cli_usage_perplexity[] =
    "usage: hearth perplexity MODEL FILE [--ctx N] [--chunks N] [--json] [--threads N]\n"
    "                         [--device auto|cpu|cuda] [engine flags]\n"
    "\n"
    "Measure the perplexity of a model on a text file as llama.cpp's perplexity tool does: the\n"
    "text is tokenized once (BOS first when the model adds one), cut into windows of N tokens,\n"
    "each evaluated from an empty cache (its first token replaced by BOS when the model adds\n"
    "one), and the second half of each window scored. Prints the running estimate after each\n"
    "window ([1]12.3456,[2]...) and \"Final estimate: PPL = X +/- Y\" (Y: the standard error).\n"
    "\n"
    "  --ctx N               tokens per window (default 512); the text must fill one\n"
    "  --chunks N            score only the first N windows (default: all)\n"
    "  --json                print one JSON object instead (ppl, stderr, chunks, tokens scored,\n"
    "                        n_ctx, KV cache scheme and types, numerics, seconds)\n"
    "  --threads N           compute threads (default: all CPUs)\n"
    "  --device D            auto (default: the GPU when usable), cpu or cuda\n"
    CLI_ENGINE_FLAGS_USAGE
    "\n"
    "The prompt cache is off whatever --prompt-cache says; --batch N evaluates N windows at once\n"
    "(default 1). `make perplexity` runs the starter models on the text that `make setup` fetches\n"
    "(docs/engine.md, \"Perplexity\").\n";

typedef struct {
    const char *model, *file;
    long long   ctx, chunks, threads;
    bool        json;
    hearth_device device;
    cli_engine_flags ef;
} ppl_opts;

static int parse(int argc, char **argv, ppl_opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int nf = cli_engine_flag(argc, argv, &i, &o->ef);
        if (nf == 0) nf = cli_run_flag(argc, argv, &i, &o->threads, &o->device, &o->ctx);
        if (nf < 0) return 2;
        if (nf > 0) continue;
        if (FLAG("--json")) o->json = true;
        else if (FLAG("--chunks")) {
            NEEDVAL();
            if (!cli_parse_int(a, val, 1, 1 << 30, &o->chunks)) return 2;
        } else if (a[0] == '-' && a[1]) {
            cli_error("unknown flag '%s' (try 'hearth help perplexity')", a);
            return 2;
        } else if (!o->model) o->model = a;
        else if (!o->file) o->file = a;
        else {
            cli_error("unexpected argument '%s'", a);
            return 2;
        }
    }
    if (!o->model || !o->file) {
        cli_error("usage: hearth perplexity MODEL FILE [flags] (try 'hearth help perplexity')");
        return 2;
    }
    return 0;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The text's tokens as llama.cpp's tokenizer call gives them (add_special, no special parsing):
 * BOS first when the vocabulary adds one (*add_bos). 0, or 1 after printing why not. */
static int tokenize(const hearth_tok *tok, const char *text, size_t n, int32_t **ids, size_t *n_ids, bool *add_bos) {
    int32_t *probe = NULL, *body = NULL;
    size_t n_probe = 0, n_body = 0;
    /* what add_special adds to an empty text tells whether the vocabulary adds BOS (and EOS,
     * which llama.cpp's tool refuses too) */
    if (hearth_tok_encode(tok, "", 0, true, false, &probe, &n_probe) ||
        hearth_tok_encode(tok, text, n, false, false, &body, &n_body)) {
        free(probe);
        cli_error("cannot tokenize the text");
        return 1;
    }
    int32_t bos = hearth_tok_bos(tok);
    *add_bos = n_probe >= 1 && bos >= 0 && probe[0] == bos;
    size_t extra = n_probe - (*add_bos ? 1 : 0);
    free(probe);
    if (extra) {
        free(body);
        cli_error("the model's vocabulary appends end-of-sequence tokens to every text; perplexity needs it not to");
        return 1;
    }
    if (*add_bos) {
        int32_t *all = malloc((n_body + 1) * sizeof *all);
        if (!all) {
            free(body);
            cli_error("out of memory");
            return 1;
        }
        all[0] = bos;
        memcpy(all + 1, body, n_body * sizeof *all);
        free(body);
        body = all;
        n_body++;
    }
    *ids = body;
    *n_ids = n_body;
    return 0;
}

static void print_json(const ppl_opts *o, const char *path, hearth_engine *e, double ppl, double se, int32_t chunks,
                       int64_t count, size_t n_ids, bool add_bos, const double *running, double seconds) {
    hearth_engine_info ein;
    hearth_engine_info_get(e, &ein);
    hearth_engine_device_info dev;
    hearth_engine_device(e, &dev);
    char levers[512];
    cli_engine_levers(e, levers, sizeof levers);
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "model", o->model);
    cJSON_AddStringToObject(j, "model_path", path);
    cJSON_AddStringToObject(j, "file", o->file);
    cJSON_AddNumberToObject(j, "ppl", ppl);
    if (se > 0) cJSON_AddNumberToObject(j, "stderr", se);
    else cJSON_AddNullToObject(j, "stderr");
    cJSON_AddNumberToObject(j, "chunks", chunks);
    cJSON_AddNumberToObject(j, "tokens_scored", (double)count);
    cJSON_AddNumberToObject(j, "tokens", (double)n_ids);
    cJSON_AddNumberToObject(j, "n_ctx", (double)o->ctx);
    cJSON_AddBoolToObject(j, "add_bos", add_bos);
    char kvq[32];
    hearth_kv_quant_name(&ein.kv_quant, kvq, sizeof kvq);
    cJSON_AddStringToObject(j, "kv_quant", kvq);
    cJSON_AddStringToObject(j, "kv_k", hearth_kv_type_name(ein.kv.k));
    cJSON_AddStringToObject(j, "kv_v", hearth_kv_type_name(ein.kv.v));
    cJSON *nx = cJSON_AddObjectToObject(j, "numerics");
    cJSON_AddStringToObject(nx, "tier", hearth_numerics_tier_name(ein.numerics.tier));
    cJSON_AddBoolToObject(nx, "compiled_decode", !ein.numerics.no_compiled_decode);
    cJSON_AddBoolToObject(nx, "fused_sdpa", !ein.numerics.no_fused_sdpa);
    cJSON_AddBoolToObject(nx, "compiled_activations", !ein.numerics.no_compiled_activations);
    cJSON_AddStringToObject(j, "levers", levers);
    cJSON_AddStringToObject(j, "device", dev.backend);
    cJSON_AddNumberToObject(j, "batch", ein.batch);
    cJSON_AddItemToObject(j, "running_ppl", cJSON_CreateDoubleArray(running, chunks));
    cJSON_AddNumberToObject(j, "seconds", seconds);
    char *s = cJSON_PrintUnformatted(j);
    if (s) puts(s);
    free(s);
    cJSON_Delete(j);
}

int cli_perplexity(int argc, char **argv) {
    ppl_opts o = {.ctx = 512};
    cli_engine_flags_init(&o.ef);
    int rc = parse(argc, argv, &o);
    if (rc) return rc;

    hearth_err err = {0};
    char *path = NULL, *text = NULL;
    hearth_model *m = NULL;
    hearth_engine *e = NULL;
    hearth_request **reqs = NULL;
    int32_t *ids = NULL, *win = NULL;
    double *running = NULL;
    size_t n_text = 0, n_ids = 0;
    int32_t n_chunks = 0;
    rc = 1;
    if (!(text = cli_read_file("text file", o.file, &n_text))) goto out;
    if (hearth_hub_resolve(o.model, &path, &err)) {
        cli_error("%s", err.msg);
        goto out;
    }
    if (hearth_model_load(path, &m, &err)) {
        cli_error("cannot load %s: %s", path, err.msg);
        goto out;
    }
    bool add_bos = false;
    if (tokenize(hearth_model_tok(m), text, n_text, &ids, &n_ids, &add_bos)) goto out;
    const int32_t n_ctx = (int32_t)o.ctx, first = n_ctx / 2, per_chunk = n_ctx - first - 1;
    size_t n_max = n_ids / (size_t)n_ctx;
    if (n_max < 1) {
        cli_error("%s tokenizes to %zu tokens; one window of --ctx %d needs at least %d", o.file, n_ids, n_ctx, n_ctx);
        goto out;
    }
    n_chunks = (int32_t)(o.chunks > 0 && (size_t)o.chunks < n_max ? (size_t)o.chunks : n_max);
    const hearth_hparams *hp = hearth_model_hparams(m);
    if (hp->n_ctx_train > 0 && n_ctx > hp->n_ctx_train)
        fprintf(stderr, "hearth: warning: --ctx %d is past the model's training context (%d)\n", n_ctx,
                hp->n_ctx_train);

    hearth_engine_params ep = hearth_engine_params_default();
    ep.batch = 1;
    ep.n_threads = (int)o.threads;
    ep.device = (int)o.device;
    cli_engine_flags_apply(&o.ef, &ep);
    ep.prompt_cache = 0;
    ep.n_ctx = n_ctx + 1; /* the window and the one token each request generates */
    ep.model_path = path; /* --kv-quant config reads its kv_config.json */
    if (hearth_engine_create(m, &ep, &e, &err)) {
        cli_error("cannot run %s: %s", path, err.msg);
        goto out;
    }
    hearth_engine_device_info dev;
    hearth_engine_device(e, &dev);
    if (!o.json) {
        const char *base = strrchr(path, '/');
        hearth_engine_info ein;
        hearth_engine_info_get(e, &ein);
        char kvq[32];
        hearth_kv_quant_name(&ein.kv_quant, kvq, sizeof kvq);
        fprintf(stderr, "perplexity: %s on %s, KV cache %s/%s (--kv-quant %s), %zu tokens%s, %d chunk%s of %d (%d scored each)\n",
                base ? base + 1 : path, dev.backend, hearth_kv_type_name(ein.kv.k), hearth_kv_type_name(ein.kv.v), kvq,
                n_ids, add_bos ? " (BOS first)" : "", n_chunks, n_chunks == 1 ? "" : "s", n_ctx, per_chunk);
    }

    reqs = calloc((size_t)n_chunks, sizeof *reqs);
    win = malloc((size_t)n_ctx * sizeof *win);
    running = calloc((size_t)n_chunks, sizeof *running);
    if (!reqs || !win || !running) {
        cli_error("out of memory");
        goto out;
    }
    double t0 = now_s();
    hearth_sampler_params sp = hearth_sampler_params_default();
    sp.temperature = 0;
    for (int32_t c = 0; c < n_chunks; c++) { /* every window queued now: the engine runs them in order */
        memcpy(win, ids + (size_t)c * (size_t)n_ctx, (size_t)n_ctx * sizeof *win);
        if (add_bos) win[0] = hearth_tok_bos(hearth_model_tok(m));
        hearth_request_params rp = {.prompt = win, .n_prompt = (size_t)n_ctx, .max_tokens = 1, .sampling = sp,
                                    .ignore_eog = true, .score_from = first + 1};
        if (hearth_engine_submit(e, &rp, &reqs[c], &err)) {
            cli_error("%s", err.msg);
            goto out;
        }
    }
    double nll = 0, nll2 = 0;
    int64_t count = 0;
    for (int32_t c = 0; c < n_chunks; c++) {
        hearth_event ev;
        do hearth_request_next(reqs[c], &ev, -1);
        while (ev.kind != HEARTH_EV_DONE);
        if (ev.finish != HEARTH_FINISH_LENGTH && ev.finish != HEARTH_FINISH_STOP) {
            if (!o.json) fputc('\n', stdout);
            cli_error("chunk %d: %s", c + 1, ev.msg[0] ? ev.msg : "the request did not finish");
            goto out;
        }
        int32_t n = 0;
        const double *lp = hearth_request_scores(reqs[c], &n);
        if (!lp || n != per_chunk) {
            cli_error("chunk %d: the engine returned %d scores, %d expected", c + 1, n, per_chunk);
            goto out;
        }
        for (int32_t i = 0; i < n; i++) {
            if (!isfinite(lp[i])) {
                if (!o.json) fputc('\n', stdout);
                cli_error("chunk %d: the log-probability of token %d is not finite (%g)", c + 1, first + 1 + i, lp[i]);
                goto out;
            }
            nll -= lp[i];
            nll2 += lp[i] * lp[i];
        }
        count += n;
        hearth_request_release(reqs[c]);
        reqs[c] = NULL;
        running[c] = exp(nll / (double)count);
        if (!o.json) {
            printf("[%d]%.4f,", c + 1, running[c]);
            fflush(stdout);
        }
    }
    double seconds = now_s() - t0;
    double mean = nll / (double)count, ppl = exp(mean), var = nll2 / (double)count - mean * mean;
    double se = count > 1 && var > 0 ? ppl * sqrt(var / (double)(count - 1)) : 0;
    if (o.json) {
        print_json(&o, path, e, ppl, se, n_chunks, count, n_ids, add_bos, running, seconds);
    } else {
        fputc('\n', stdout);
        if (se > 0) printf("Final estimate: PPL = %.4f +/- %.5f\n", ppl, se);
        else printf("Final estimate: PPL = %.4f (no standard error: the log-likelihoods do not vary)\n", ppl);
        fprintf(stderr, "perplexity: %lld tokens scored in %.2f s (%.1f window tokens/s)\n", (long long)count, seconds,
                seconds > 0 ? (double)n_chunks * n_ctx / seconds : 0);
    }
    rc = 0;
out:
    for (int32_t c = 0; reqs && c < n_chunks; c++) hearth_request_release(reqs[c]);
    free(reqs);
    hearth_engine_destroy(e);
    hearth_model_destroy(m);
    free(running);
    free(win);
    free(ids);
    free(text);
    free(path);
    return rc;
}
