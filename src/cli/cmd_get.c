/*
 * cmd_get.c - `hearth get org/repo[:glob] [--revision REV]`: download into the hub cache
 * (store/get.h) with a progress bar on a terminal and plain lines otherwise; Ctrl-C keeps
 * the partial downloads for the next run. Afterwards the registry is rescanned for the repo.
 * The progress display (cli_dl_progress) is shared with the first run's starter download.
 */
#include "cli/cli.h"
#include "store/gc.h"
#include "store/get.h"
#include "store/hub.h"
#include "store/registry.h"
#include "store/units.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

const char cli_usage_get[] =
    "usage: hearth get ORG/NAME[:GLOB] [--revision REV] [--jobs N] [--retries N]\n"
    "       hearth get QUERY             (re-get a downloaded repo whose id contains QUERY)\n"
    "\n"
    "Download a model repo from the Hugging Face hub into the hub cache, where huggingface_hub,\n"
    "mlx-lm and hearth all find it. GLOB picks files (\"*Q4_K_M*.gguf\"; '*' also crosses '/').\n"
    "\n"
    "  --revision REV   branch, tag or commit (default main)\n"
    "  --jobs N         files downloaded at once (default 4)\n"
    "  --retries N      retries of a file after a dropped connection (default 3)\n"
    "\n"
    "Every file is checked against the hub's sha256 (LFS) or git blob id before it is published;\n"
    "an interrupted download resumes where it stopped on the next run. The snapshot and\n"
    "refs/<REV> are written only when every file is verified.\n"
    "\n"
    "Environment: HF_TOKEN (gated or private repos; else the token file of `hf auth login`),\n"
    "HF_ENDPOINT (another hub or a mirror), HF_HUB_CACHE / HF_HOME (where the cache is).\n";

static volatile int g_cancel; /* set by SIGINT/SIGTERM */

static void on_signal(int sig) {
    (void)sig;
    g_cancel = 1;
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void fmt_eta(double s, char *buf, size_t n) {
    if (s < 0 || s > 359999) snprintf(buf, n, "--:--");
    else if (s >= 3600) snprintf(buf, n, "%d:%02d:%02d", (int)s / 3600, (int)s / 60 % 60, (int)s % 60);
    else snprintf(buf, n, "%d:%02d", (int)s / 60, (int)s % 60);
}

void cli_dl_clear(cli_dl_view *v) {
    if (v->tty && v->drawn) fprintf(stderr, "\r%*s\r", v->drawn, "");
    v->drawn = 0;
}

void cli_dl_progress(const hearth_dl_progress *p, void *user) {
    cli_dl_view *v = user;
    char done[24], total[24], rate[24], eta[24];
    hearth_fmt_bytes(p->done_bytes, done, sizeof done);
    hearth_fmt_bytes(p->total_bytes, total, sizeof total);
    hearth_fmt_bytes((int64_t)p->bytes_per_s, rate, sizeof rate);
    fmt_eta(p->eta_s, eta, sizeof eta);
    double frac = p->total_bytes > 0 ? (double)p->done_bytes / (double)p->total_bytes : 1.0;
    if (p->event != HEARTH_DL_TICK) {
        const hearth_dl_item *it = p->item;
        char size[24];
        hearth_fmt_bytes(it->size, size, sizeof size);
        cli_dl_clear(v);
        if (p->event == HEARTH_DL_START && !it->present) {
            if (!v->tty) fprintf(stderr, "get: %s (%s)%s\n", it->name, size, it->resumed ? ", resuming" : "");
        } else if (p->event == HEARTH_DL_DONE) {
            fprintf(stderr, "get: %s (%s) %s%s\n", it->name, size, it->present ? "already in the cache" : "verified",
                    it->restarted ? " (the server ignored Range: downloaded from the start)" : "");
        } else if (p->event == HEARTH_DL_RETRY) {
            fprintf(stderr, "get: %s; retrying\n", it->msg);
        } else if (p->event == HEARTH_DL_FAIL) {
            fprintf(stderr, "get: failed: %s\n", it->msg);
        }
        if (it->stolen_from_pid && p->event == HEARTH_DL_START)
            fprintf(stderr, "get: %s: took over the lock of pid %d, which is no longer running\n", it->name,
                    it->stolen_from_pid);
    }
    if (v->tty) {
        struct winsize ws;
        int cols = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20 ? ws.ws_col : 80;
        char tail[128];
        int tl = snprintf(tail, sizeof tail, " %3.0f%% %s / %s  %s/s  ETA %s  %zu/%zu files", frac * 100, done, total,
                          rate, eta, p->n_done, p->n_items);
        int bar = cols - 3 - tl;
        if (bar > 40) bar = 40;
        fputc('\r', stderr);
        if (bar >= 5) {
            int fill = (int)(frac * bar);
            fputc('[', stderr);
            for (int i = 0; i < bar; i++) fputc(i < fill ? '#' : '.', stderr);
            fputc(']', stderr);
        }
        fputs(tail, stderr);
        fputs("\033[K", stderr); /* clear what a longer previous line left */
        v->drawn = (bar >= 5 ? bar + 2 : 0) + tl;
        fflush(stderr);
    } else if (p->event == HEARTH_DL_TICK && p->bytes_per_s > 0 && now_s() - v->last_line >= 5) {
        v->last_line = now_s();
        fprintf(stderr, "get: %.0f%%, %s of %s at %s/s, ETA %s\n", frac * 100, done, total, rate, eta);
    }
}

/* A query without '/': the one repo in the hub cache whose id contains it. */
static int repo_of_query(const char *q, char *repo, size_t n) {
    char hub[4096], list[256] = "", id[256];
    hearth_hub_cache_dir(hub, sizeof hub);
    struct dirent **names = NULL;
    int n_names = scandir(hub, &names, NULL, alphasort), n_repos = 0;
    for (int i = 0; i < n_names; i++) {
        if (hearth_hub_repo_id_of(names[i]->d_name, id, sizeof id) && hearth_hub_match(id, q)) {
            n_repos++;
            snprintf(repo, n, "%s", id);
            size_t off = strlen(list);
            if (off < sizeof list - 1 && snprintf(list + off, sizeof list - off, "%s%s", off ? ", " : "", id) < 0)
                list[off] = 0;
        }
        free(names[i]);
    }
    free(names);
    if (n_repos == 1) return 0;
    if (n_repos == 0) cli_error("no repo in %s matches '%s'; name it as ORG/NAME to download it", hub, q);
    else cli_error("'%s' matches %d repos: %s", q, n_repos, list);
    return 1;
}

int cli_get(int argc, char **argv) {
    const char *target = NULL;
    hearth_get_params gp = hearth_get_params_default();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long long v;
        if (!strcmp(a, "--revision") || !strcmp(a, "--jobs") || !strcmp(a, "--retries")) {
            if (i + 1 >= argc) {
                cli_error("%s needs a value", a);
                return 2;
            }
            const char *val = argv[++i];
            if (!strcmp(a, "--revision")) gp.revision = val;
            else if (!cli_parse_int(a, val, !strcmp(a, "--jobs") ? 1 : 0, 64, &v)) return 2;
            else if (!strcmp(a, "--jobs")) gp.max_parallel = (int)v;
            else gp.retries = (int)v;
        } else if (a[0] == '-') {
            cli_error("unknown flag '%s' for get (try 'hearth help get')", a);
            return 2;
        } else if (!target) target = a;
        else {
            cli_error("get takes one repo (got '%s' and '%s')", target, a);
            return 2;
        }
    }
    if (!target) {
        cli_error("get needs a repo: hearth get ORG/NAME[:GLOB]");
        return 2;
    }
    char repo[256];
    const char *colon = strchr(target, ':');
    size_t rl = colon ? (size_t)(colon - target) : strlen(target);
    if (rl >= sizeof repo) {
        cli_error("'%s' is not a repo id", target);
        return 2;
    }
    memcpy(repo, target, rl);
    repo[rl] = 0;
    if (colon) gp.glob = colon + 1;
    if (!strchr(repo, '/') && repo_of_query(repo, repo, sizeof repo)) return 1;
    if (!hearth_hub_valid_repo_id(repo)) {
        cli_error("'%s' is not a repo id (ORG/NAME)", repo);
        return 2;
    }
    gp.repo_id = repo;
    cli_dl_view v = {.tty = isatty(STDERR_FILENO) == 1};
    gp.on_progress = cli_dl_progress;
    gp.user = &v;
    gp.cancel = &g_cancel;
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    hearth_get_result res;
    hearth_err err = {0};
    double t0 = now_s();
    hearth_status st = hearth_get(&gp, &res, &err);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    cli_dl_clear(&v);
    if (st == HEARTH_E_CANCELLED) {
        cli_error("interrupted: partial downloads are kept; run the same command again to resume");
        return 130;
    }
    if (st) {
        cli_error("%s", err.msg);
        return 1;
    }
    double dt = now_s() - t0;
    char fetched[24], total[24], rate[24];
    hearth_fmt_bytes(res.bytes_fetched, fetched, sizeof fetched);
    hearth_fmt_bytes(res.bytes_total, total, sizeof total);
    hearth_fmt_bytes(dt > 0 ? (int64_t)((double)res.bytes_fetched / dt) : 0, rate, sizeof rate);
    printf("%s@%.12s: %zu file%s, %s (%zu downloaded, %zu already present); fetched %s in %.1f s (%s/s)\n", repo,
           res.commit, res.n_files, res.n_files == 1 ? "" : "s", total, res.n_downloaded, res.n_present, fetched, dt,
           rate);
    printf("snapshot: %s\n", res.snapshot_dir);
    hearth_gc_plan plan;
    if (res.previous_commit[0] && hearth_gc_plan_make(NULL, repo, false, &plan, &err) == HEARTH_OK) {
        char size[24];
        hearth_fmt_bytes(plan.reclaim_bytes, size, sizeof size);
        printf("%s moved from %.12s to %.12s: `hearth gc --yes` would reclaim %s\n", gp.revision ? gp.revision : "main",
               res.previous_commit, res.commit, size);
        hearth_gc_plan_free(&plan);
    }
    hearth_registry *reg = NULL;
    if (hearth_registry_open(NULL, &reg, &err) == HEARTH_OK) hearth_registry_scan(reg, NULL, repo, NULL, &err);
    hearth_registry_close(reg);
    return 0;
}
