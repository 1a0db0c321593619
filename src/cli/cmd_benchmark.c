/*
 * cmd_benchmark.c - `hearth benchmark`: prefill and decode speed of one model on this machine,
 * measured through the engine as a request runs, and recorded in the evals database
 * (store/evals.h); `hearth evals` lists the recorded rows.
 *
 * A run submits one request: a prompt of --prompt-tokens pseudo-random ids (the cost of a
 * forward does not depend on which ids), then --tokens greedy tokens with end-of-generation
 * ignored. Prefill tok/s = prompt tokens / time to the first token; decode tok/s = tokens after
 * the first / the time after it (the engine's own timings, hearth_event); the CLI thread reads
 * the events every 20 ms rather than per token, so it does not contend for a CPU. One warm-up
 * request runs first and is not counted. The engine runs one sequence at a time with prefix
 * caching off, so every run computes its whole prompt. Peak memory is the process's peak RSS
 * (getrusage), which includes the mapped weights the runs touched.
 */
#include "cli/cli.h"
#include "cli/engine_flags.h"
#include "engine/engine.h"
#include "backend/backend.h"
#include "kernels/kernels.h"
#include "model/model.h"
#include "store/evals.h"
#include "store/facts.h"
#include "store/hub.h"
#include "store/units.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define STARTER_QUERY "SmolLM2" /* as `hearth serve` picks the starter model */

const char cli_usage_benchmark[] =
    "usage: hearth benchmark [model] [--tokens N] [--runs N] [--prompt-tokens N] [--threads N]\n"
    "                        [--device auto|cpu|cuda] [--l1|--l2] [--compiled-decode on|off]\n"
    "                        [--fused-sdpa on|off] [--compiled-activations on|off] [--force-wire]\n"
    "                        [--draft-model MODEL | --draft-kind ngram] [--num-draft-tokens N]\n"
    "\n"
    "Measure prefill and decode speed of a model here and record the result in the evals\n"
    "database (`hearth evals` lists it). Each run is one request: a prompt of N pseudo-random\n"
    "tokens, then greedy decoding (temperature 0, end-of-generation ignored). A warm-up request\n"
    "runs first; the figures are medians over the runs.\n"
    "\n"
    "  --tokens N          tokens to decode per run (default 256)\n"
    "  --runs N            measured runs (default 3)\n"
    "  --prompt-tokens N   prompt length (default 512)\n"
    "  --threads N         compute threads (default: all CPUs)\n"
    "  --device D          auto (default: the GPU when usable), cpu or cuda\n"
    "  --json              print one JSON object instead of the table\n"
    "  --no-record         do not write the evals database\n"
    CLI_NUMERICS_FLAGS_USAGE CLI_DRAFT_FLAGS_USAGE
    "\n"
    "The model defaults to the starter model. Rows go to ${XDG_CACHE_HOME:-~/.cache}/hearth/\n"
    "evals.sqlite with the machine's CPU, the load average when the runs started (figures taken\n"
    "on a busy machine are not comparable) and the active speed levers, the numerics tier and\n"
    "its switches among them (run twice with a switch off for an A/B).\n";

const char cli_usage_evals[] =
    "usage: hearth evals [--limit N] [--raw] | hearth evals --clear\n"
    "\n"
    "List the recorded benchmark runs, newest first.\n"
    "\n"
    "  --limit N   at most N rows (default 20; 0 = all)\n"
    "  --raw       every column, tab-separated with a header line (for scripts)\n"
    "  --clear     delete every recorded run\n";

typedef struct {
    const char *model;
    long long   tokens, runs, prompt_tokens, threads;
    bool        json, no_record;
    hearth_device device;
    cli_engine_flags nx; /* the numerics and draft flags only */
} bench_opts;

static int parse(int argc, char **argv, bench_opts *o) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int nf = cli_numerics_flag(argc, argv, &i, &o->nx);
        if (nf == 0) nf = cli_draft_flag(argc, argv, &i, &o->nx.draft);
        if (nf == 0) nf = cli_run_flag(argc, argv, &i, &o->threads, &o->device, NULL);
        if (nf < 0) return 2;
        if (nf > 0) continue;
        if (FLAG("--json")) o->json = true;
        else if (FLAG("--no-record")) o->no_record = true;
        else if (FLAG("--model")) { NEEDVAL(); o->model = val; }
        else if (FLAG("--tokens")) { NEEDVAL(); if (!cli_parse_int(a, val, 2, 1 << 20, &o->tokens)) return 2; }
        else if (FLAG("--runs")) { NEEDVAL(); if (!cli_parse_int(a, val, 1, 1000, &o->runs)) return 2; }
        else if (FLAG("--prompt-tokens")) {
            NEEDVAL();
            if (!cli_parse_int(a, val, 1, 1 << 20, &o->prompt_tokens)) return 2;
        } else if (a[0] == '-' && a[1]) {
            cli_error("unknown flag '%s' (try 'hearth help benchmark')", a);
            return 2;
        } else if (!o->model) o->model = a;
        else {
            cli_error("unexpected argument '%s'", a);
            return 2;
        }
    }
    return cli_draft_flags_check(&o->nx.draft) ? 0 : 2;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The CPU's model name from /proc/cpuinfo, or "unknown". */
static void cpu_name(char *buf, size_t n) {
    snprintf(buf, n, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10)) continue;
        const char *c = strchr(line, ':');
        if (!c) break;
        c++;
        while (*c == ' ' || *c == '\t') c++;
        snprintf(buf, n, "%s", c);
        buf[strcspn(buf, "\n")] = 0;
        break;
    }
    fclose(f);
}

/* One request; fills prefill and decode tok/s. Returns 0, or 1 after printing why not. */
static int one_run(hearth_engine *e, const int32_t *prompt, int32_t n_prompt, int32_t n_gen, double *prefill,
                   double *decode) {
    hearth_err err = {0};
    hearth_request *req = NULL;
    hearth_sampler_params sp = hearth_sampler_params_default();
    sp.temperature = 0;
    hearth_request_params rp = {.prompt = prompt, .n_prompt = (size_t)n_prompt, .max_tokens = n_gen,
                                .sampling = sp, .ignore_eog = true};
    if (hearth_engine_submit(e, &rp, &req, &err)) {
        cli_error("%s", err.msg);
        return 1;
    }
    /* Drain the events every 20 ms instead of waking on each token: a waiter woken per token
     * would compete with the engine thread for a CPU and measure the scheduler's latency too. */
    hearth_event ev = {0};
    const struct timespec nap = {0, 20 * 1000 * 1000};
    for (;;) {
        while (ev.kind != HEARTH_EV_DONE && hearth_request_next(req, &ev, 0) == HEARTH_OK) {}
        if (ev.kind == HEARTH_EV_DONE) break;
        nanosleep(&nap, NULL);
    }
    hearth_request_release(req);
    if (ev.finish != HEARTH_FINISH_LENGTH || ev.n_generated != n_gen) {
        cli_error("the benchmark request ended early: %s", ev.msg[0] ? ev.msg : "no reason given");
        return 1;
    }
    *prefill = ev.prefill_ms > 0 ? ev.n_prompt / (ev.prefill_ms / 1e3) : 0;
    *decode = ev.decode_ms > 0 ? (ev.n_generated - 1) / (ev.decode_ms / 1e3) : 0;
    return 0;
}

static void print_json(const bench_opts *o, const hearth_eval_row *row, const double *pf, const double *dc,
                       int64_t weight_read_bytes, const hearth_engine_info *ein) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "model", row->model);
    cJSON_AddStringToObject(j, "model_path", row->model_path);
    cJSON_AddStringToObject(j, "cpu", row->cpu);
    cJSON_AddStringToObject(j, "kernels", row->kernels);
    cJSON_AddStringToObject(j, "levers", row->levers);
    cJSON *nx = cJSON_AddObjectToObject(j, "numerics");
    cJSON_AddStringToObject(nx, "tier", hearth_numerics_tier_name(ein->numerics.tier));
    cJSON_AddBoolToObject(nx, "compiled_decode", !ein->numerics.no_compiled_decode);
    cJSON_AddBoolToObject(nx, "fused_sdpa", !ein->numerics.no_fused_sdpa);
    cJSON_AddBoolToObject(nx, "compiled_activations", !ein->numerics.no_compiled_activations);
    cJSON_AddBoolToObject(nx, "force_wire", ein->force_wire);
    cJSON_AddNumberToObject(j, "threads", row->threads);
    cJSON_AddNumberToObject(j, "prompt_tokens", row->prompt_tokens);
    cJSON_AddNumberToObject(j, "gen_tokens", row->gen_tokens);
    cJSON_AddNumberToObject(j, "runs", row->runs);
    cJSON_AddNumberToObject(j, "prefill_tok_s", row->prefill_tok_s);
    cJSON_AddNumberToObject(j, "decode_tok_s", row->decode_tok_s);
    cJSON_AddItemToObject(j, "prefill_runs", cJSON_CreateDoubleArray(pf, (int)o->runs));
    cJSON_AddItemToObject(j, "decode_runs", cJSON_CreateDoubleArray(dc, (int)o->runs));
    cJSON_AddNumberToObject(j, "peak_rss_bytes", (double)row->peak_rss_bytes);
    cJSON_AddNumberToObject(j, "weight_read_bytes", (double)weight_read_bytes);
    cJSON_AddNumberToObject(j, "load_avg", row->load_avg);
    if (row->id) cJSON_AddNumberToObject(j, "eval_id", (double)row->id);
    char *s = cJSON_PrintUnformatted(j);
    if (s) puts(s);
    free(s);
    cJSON_Delete(j);
}

int cli_benchmark(int argc, char **argv) {
    bench_opts o = {.tokens = 256, .runs = 3, .prompt_tokens = 512};
    cli_draft_flags_init(&o.nx.draft);
    int rc = parse(argc, argv, &o);
    if (rc) return rc;

    hearth_err err = {0};
    char *path = NULL;
    hearth_model *m = NULL, *draft = NULL;
    hearth_engine *e = NULL;
    hearth_evals *db = NULL;
    int32_t *prompt = NULL;
    double *pf = NULL, *dc = NULL;
    hearth_model_facts facts = {0};
    rc = 1;
    if (hearth_hub_resolve(o.model ? o.model : STARTER_QUERY, &path, &err)) {
        if (o.model) cli_error("%s", err.msg);
        else cli_error("no model given and the starter model is not in the cache (`hearth` fetches it)");
        goto out;
    }
    if (hearth_model_load(path, &m, &err)) {
        cli_error("cannot load %s: %s", path, err.msg);
        goto out;
    }
    if (hearth_facts_gguf(path, &facts, &err)) facts.weight_read_bytes = 0; /* not fatal: JSON only */
    const hearth_hparams *hp = hearth_model_hparams(m);
    int64_t n_ctx = o.prompt_tokens + o.tokens + 16;
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_threads = (int)o.threads;
    ep.n_ctx = (int32_t)(n_ctx > INT32_MAX ? INT32_MAX : n_ctx);
    ep.batch = 1;
    ep.prompt_cache = 0;
    ep.device = (int)o.device;
    cli_numerics_apply(&o.nx, &ep);
    if (cli_draft_apply(&o.nx.draft, &ep, &draft)) goto out;
    ep.model_path = path; /* --kv-quant config reads its kv_config.json */
    if (hearth_engine_create(m, &ep, &e, &err)) {
        cli_error("%s", err.msg);
        goto out;
    }
    prompt = malloc((size_t)o.prompt_tokens * sizeof *prompt);
    pf = calloc((size_t)o.runs, sizeof *pf);
    dc = calloc((size_t)o.runs, sizeof *dc);
    if (!prompt || !pf || !dc) {
        cli_error("out of memory");
        goto out;
    }
    int32_t lo = hp->n_vocab > 200 ? 100 : 0, span = hp->n_vocab - lo < 10000 ? hp->n_vocab - lo : 10000;
    uint32_t state = 1234;
    for (long long i = 0; i < o.prompt_tokens; i++) {
        state = state * 1664525u + 1013904223u;
        prompt[i] = lo + (int32_t)((state >> 8) % (uint32_t)span);
    }

    hearth_eval_row row = {.threads = (int32_t)(o.threads > 0 ? o.threads : 0), .runs = (int32_t)o.runs,
                           .prompt_tokens = (int32_t)o.prompt_tokens, .gen_tokens = (int32_t)o.tokens};
    double la[1];
    row.load_avg = getloadavg(la, 1) == 1 ? la[0] : -1;
    snprintf(row.kind, sizeof row.kind, "benchmark");
    snprintf(row.model, sizeof row.model, "%s", o.model ? o.model : "starter");
    snprintf(row.model_path, sizeof row.model_path, "%s", path);
    snprintf(row.version, sizeof row.version, "%s", HEARTH_VERSION);
    snprintf(row.kernels, sizeof row.kernels, "%s", hearth_kernels_name());
    cpu_name(row.cpu, sizeof row.cpu);
    if (!row.threads) row.threads = hearth_cpu_count();
    hearth_engine_info ein;
    hearth_engine_info_get(e, &ein);
    char nxl[160];
    cli_numerics_levers(e, nxl, sizeof nxl);
    snprintf(row.levers, sizeof row.levers, "kernels=%.15s threads=%d kv=%s batch=1 prefill_chunk=512 %.150s", row.kernels,
             row.threads, hearth_kv_type_name(ein.kv.k), nxl);
    hearth_engine_device_info dev;
    hearth_engine_device(e, &dev);
    if (strcmp(dev.backend, "cpu") != 0) { /* the GPU computes: say which */
        snprintf(row.kernels, sizeof row.kernels, "%s", dev.backend);
        snprintf(row.levers, sizeof row.levers, "device=%.15s (%.40s) kv=%s batch=1 prefill_chunk=512 %.150s", dev.backend,
                 dev.device, hearth_kv_type_name(ein.kv.k), nxl);
    }

    double wpf, wdc;
    int32_t warm_prompt = o.prompt_tokens < 32 ? (int32_t)o.prompt_tokens : 32;
    if (one_run(e, prompt, warm_prompt, 4, &wpf, &wdc)) goto out;
    for (long long r = 0; r < o.runs; r++)
        if (one_run(e, prompt, (int32_t)o.prompt_tokens, (int32_t)o.tokens, &pf[r], &dc[r])) goto out;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    row.peak_rss_bytes = (int64_t)ru.ru_maxrss * 1024;
    double *sorted = malloc(2 * (size_t)o.runs * sizeof *sorted);
    if (!sorted) {
        cli_error("out of memory");
        goto out;
    }
    memcpy(sorted, pf, (size_t)o.runs * sizeof *sorted);
    memcpy(sorted + o.runs, dc, (size_t)o.runs * sizeof *sorted);
    row.prefill_tok_s = median(sorted, (int)o.runs);
    row.decode_tok_s = median(sorted + o.runs, (int)o.runs);
    free(sorted);

    if (!o.no_record) {
        if (hearth_evals_open(NULL, &db, &err) || hearth_evals_add(db, &row, &err)) {
            cli_error("%s", err.msg);
            goto out;
        }
    }
    if (o.json) {
        print_json(&o, &row, pf, dc, facts.weight_read_bytes, &ein);
    } else {
        char rss[24];
        hearth_fmt_bytes(row.peak_rss_bytes, rss, sizeof rss);
        const char *base = strrchr(path, '/');
        printf("%s: %d threads, %d run%s of %d prompt + %d decoded tokens\n", base ? base + 1 : path, row.threads,
               row.runs, row.runs == 1 ? "" : "s", row.prompt_tokens, row.gen_tokens);
        printf("  prefill   %9.1f tok/s   (median)\n", row.prefill_tok_s);
        printf("  decode    %9.1f tok/s   (median)\n", row.decode_tok_s);
        printf("  peak RSS  %9s\n", rss);
        printf("  levers    %s\n", row.levers);
        char nxs[128];
        hearth_numerics_describe(&ein.numerics, nxs, sizeof nxs);
        printf("  numerics  %s, force-wire %s\n", nxs, ein.force_wire ? "on" : "off");
        printf("  cpu       %s, load average %.2f%s\n", row.cpu, row.load_avg,
               row.load_avg > 0.5 ? " (busy machine: figures are provisional)" : "");
        if (db) printf("recorded as eval %lld in %s\n", (long long)row.id, hearth_evals_path(db));
    }
    rc = 0;
out:
    hearth_evals_close(db);
    hearth_engine_destroy(e);
    hearth_model_destroy(draft); /* after the engine, which borrows it */
    hearth_model_destroy(m);
    free(prompt);
    free(pf);
    free(dc);
    free(path);
    return rc;
}

int cli_evals(int argc, char **argv) {
    long long limit = 20;
    bool raw = false, clear = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--raw")) raw = true;
        else if (!strcmp(argv[i], "--clear")) clear = true;
        else if (!strcmp(argv[i], "--limit")) {
            if (i + 1 >= argc) {
                cli_error("--limit needs a value");
                return 2;
            }
            if (!cli_parse_int("--limit", argv[++i], 0, INT64_MAX, &limit)) return 2;
        } else {
            cli_error("unknown argument '%s' (try 'hearth help evals')", argv[i]);
            return 2;
        }
    }
    hearth_err err = {0};
    hearth_evals *db = NULL;
    hearth_eval_row *rows = NULL;
    size_t n = 0;
    if (clear) {
        int64_t gone = 0;
        if (hearth_evals_open(NULL, &db, &err) || hearth_evals_clear(db, &gone, &err)) {
            cli_error("%s", err.msg);
            hearth_evals_close(db);
            return 1;
        }
        printf("deleted %lld recorded runs from %s\n", (long long)gone, hearth_evals_path(db));
        hearth_evals_close(db);
        return 0;
    }
    if (hearth_evals_open(NULL, &db, &err) || hearth_evals_list(db, limit, &rows, &n, &err)) {
        cli_error("%s", err.msg);
        hearth_evals_close(db);
        return 1;
    }
    if (raw) {
        puts("id\tcreated_at\tkind\tmodel\tmodel_path\tversion\tcpu\tkernels\tlevers\tthreads\tprompt_tokens\t"
             "gen_tokens\truns\tprefill_tok_s\tdecode_tok_s\tpeak_rss_bytes\tload_avg");
        for (size_t i = 0; i < n; i++) {
            const hearth_eval_row *r = &rows[i];
            printf("%lld\t%lld\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%.3f\t%.3f\t%lld\t%.2f\n",
                   (long long)r->id, (long long)r->created_at, r->kind, r->model, r->model_path, r->version, r->cpu,
                   r->kernels, r->levers, r->threads, r->prompt_tokens, r->gen_tokens, r->runs, r->prefill_tok_s,
                   r->decode_tok_s, (long long)r->peak_rss_bytes, r->load_avg);
        }
    } else if (n == 0) {
        printf("no recorded runs in %s (run `hearth benchmark`)\n", hearth_evals_path(db));
    } else {
        printf("%5s  %-16s  %-32s  %3s  %9s  %9s  %9s  %5s\n", "id", "when (UTC)", "model", "thr", "prefill/s",
               "decode/s", "peak RSS", "load");
        for (size_t i = 0; i < n; i++) {
            const hearth_eval_row *r = &rows[i];
            char when[32], rss[24];
            time_t t = (time_t)r->created_at;
            struct tm tm;
            gmtime_r(&t, &tm);
            strftime(when, sizeof when, "%Y-%m-%d %H:%M", &tm);
            hearth_fmt_bytes(r->peak_rss_bytes, rss, sizeof rss);
            const char *base = strrchr(r->model_path, '/');
            printf("%5lld  %-16s  %-32.32s  %3d  %9.1f  %9.1f  %9s  %5.2f\n", (long long)r->id, when,
                   base ? base + 1 : r->model_path, r->threads, r->prefill_tok_s, r->decode_tok_s, rss, r->load_avg);
        }
    }
    free(rows);
    hearth_evals_close(db);
    return 0;
}
