/*
 * serve_isolate.c - `serve --isolate`'s command line (serve_isolate.h).
 *
 * A child is `hearth _engine PATH --unix SOCK --alias ID` plus serve's own flags, less those
 * that belong to the serving process (where and to whom it listens, the pool, the model
 * argument). Flags that name things of the default model (--chat-template-file,
 * --draft-model) go to that model's child only. Everything else - sampling defaults, the
 * engine's levers, threads, device, context, --ssd-cache - goes to every child, in the order
 * given, with its values: this pass needs no list of which flags take a value, because only
 * the flags it drops or moves must be known, and those are listed here.
 *
 * The pool finds a requested model in the registry (pool_models.h), never as a filesystem
 * path: a client must not make the server open files of its choosing. It admits models by
 * their memory (pool_memory.h) against --memory-budget, which then bounds the sum over the
 * resident children rather than each one.
 */
#include "cli/serve_isolate.h"
#include "cli/cli.h"
#include "server/pool_models.h"
#include "store/fit.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

typedef struct {
    const char *name;
    bool        value; /* takes the next argument */
} flag_info;

static const flag_info serving_only[] = {
    {"--host", true},          {"--port", true},           {"--api-key", true},       {"--cors", true},
    {"--allowed-hosts", true}, {"--admin-key", true},      {"--max-connections", true},
    {"--max-conns-per-addr", true}, {"--header-timeout", true}, {"--idle-timeout", true},
    {"--unix", true},          {"--isolate", false},       {"--model-pool", true},    {"--heartbeat-timeout", true},
    {"--alias", true},         {"--model", true},          {"--no-open", false},
};
static const flag_info default_only[] = {{"--chat-template-file", true}, {"--draft-model", true}};

static const flag_info *lookup(const flag_info *t, size_t n, const char *a) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].name, a)) return &t[i];
    return NULL;
}

hearth_status cli_isolate_start(int argc, char **argv, const char *model_arg, const char *path, const char *model_id,
                                int pool, int heartbeat, hearth_pool_memory *mem, int64_t budget_bytes,
                                hearth_engines **out, hearth_err *err) {
    const char **common = calloc((size_t)argc + 1, sizeof *common);
    const char **dflt = calloc((size_t)argc + 1, sizeof *dflt);
    if (!common || !dflt) {
        free(common);
        free(dflt);
        return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    }
    int n_common = 0, n_dflt = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (a == model_arg) continue;
        const flag_info *f = lookup(serving_only, sizeof serving_only / sizeof serving_only[0], a);
        if (f) {
            i += f->value;
            continue;
        }
        f = lookup(default_only, sizeof default_only / sizeof default_only[0], a);
        if (f) {
            dflt[n_dflt++] = a;
            if (f->value && i + 1 < argc) dflt[n_dflt++] = argv[++i];
            continue;
        }
        common[n_common++] = a;
    }
    hearth_engines_params p = {
        .exe = "/proc/self/exe", .argv_common = common, .n_common = n_common, .argv_default = dflt,
        .n_default = n_dflt, .model_id = model_id, .model_path = path, .pool_size = pool > 0 ? pool : 1,
        .hang_timeout_s = heartbeat, .resolve = pool > 0 ? hearth_pool_resolve : NULL,
    };
    if (pool > 0 && mem) { /* a pool admits by memory: the sum over its resident models */
        p.memory_budget = budget_bytes > 0 ? budget_bytes
                                           : (int64_t)(HEARTH_FIT_BUDGET_SHARE * (double)hearth_fit_ram_bytes());
        p.estimate = hearth_pool_estimate;
        p.estimate_cls = mem;
    }
    hearth_status st = hearth_engines_create(&p, out, err);
    free(common);
    free(dflt);
    return st;
}

int cli_engine_child(int argc, char **argv) {
    /* die with the serving process, whatever kills it */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    return cli_serve_child(argc, argv);
}
