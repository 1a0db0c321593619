/*
 * cmd_serve.c - `hearth serve [model]` and bare `hearth`: load a model, start the engine and
 * the HTTP server, print the ready card, serve until SIGINT/SIGTERM.
 *
 * Before any weights load, the port is probed: if something already answers there, starting
 * would only fail later at bind time (or worse, confuse a user who has hearth running in
 * another terminal), so we say who is there and exit 1 at once.
 *
 * The web app: when stdout is a terminal, a display is there (DISPLAY or WAYLAND_DISPLAY) and
 * --no-open is absent, the chat is opened with xdg-open (if it is on PATH; nothing happens when it
 * is not). xdg-open is spawned detached, with the stop signals unblocked and /dev/null for its
 * standard streams, so it can neither read the terminal nor scribble on the ready card.
 *
 * Signals: SIGINT and SIGTERM are blocked before the first thread starts (every thread
 * inherits the mask) and the main thread waits for them with sigtimedwait. The first one (or
 * POST /admin/drain, which the same loop notices) drains the server (server.h: running
 * requests finish within --drain-timeout, queued ones get 503); a second one exits at once.
 * Then it shuts down in order: server (ends connections, cancels their requests), engine,
 * model.
 *
 * An embedding model (a checkpoint folder or GGUF file hearth_bert_probe recognizes, such as
 * all-MiniLM-L6-v2) is served alone: no engine, POST /v1/embeddings and the model list, the
 * generation routes answering 400 (docs/embeddings.md).
 */
#include "backend/backend.h"
#include "base/log.h"
#include "cli/chat.h"
#include "cli/cli.h"
#include "cli/engine_flags.h"
#include "cli/media_flags.h"
#include "cli/serve_isolate.h"
#include "engine/engine.h"
#include "model/model.h"
#include "models/bert.h"
#include "server/server.h"
#include "store/hub.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STARTER_QUERY "SmolLM2"

const char cli_usage_serve[] =
    "usage: hearth serve [model] [flags]     (bare `hearth` serves the starter model, SmolLM2,\n"
    "                                        or on first run fetches the one that fits: docs/server.md)\n"
    "\n"
    "OpenAI-compatible API on http://HOST:PORT/v1: chat/completions, completions, models;\n"
    "plus /health, /stats, /metrics, and the web app (chat, status, library) at http://HOST:PORT/.\n"
    "See docs/server.md and docs/web.md.\n"
    "\n"
    "  --model MODEL         the model (path or hub-cache query), instead of the positional\n"
    "  --host ADDR           bind address (default 127.0.0.1; 0.0.0.0 exposes it on the LAN)\n"
    "  --port N              port (default 8080; 0 = any free port)\n"
    "  --api-key KEY         require 'Authorization: Bearer KEY' or 'x-api-key: KEY' (/health stays open)\n"
    "  --cors ORIGINS        allow browsers from these origins (comma-separated, or *); pages of\n"
    "                        other sites get 403 on POST/DELETE\n"
    "  --allowed-hosts NAMES also answer requests whose Host is one of these names (comma-separated;\n"
    "                        .example.org takes its subdomains too; * = any): by default only the\n"
    "                        bind address, localhost and loopback addresses (and with a wildcard\n"
    "                        --host this machine's addresses) are answered, others get 403\n"
    "  --admin-key KEY       key of POST /admin/drain and /admin/cache/flush (default: the\n"
    "                        --api-key; with neither, loopback clients that are not web pages)\n"
    "  --drain-timeout SEC   on SIGTERM or /admin/drain, let running requests finish this long\n"
    "                        before ending them (default 30); a second SIGTERM exits at once\n"
    "  --max-connections N   connections open at once (default 256; past it: 503)\n"
    "  --max-conns-per-addr N  connections from one address (default 128)\n"
    "  --header-timeout SEC  a request's headers must arrive within this (default 10; its body\n"
    "                        gets this plus 1 s per 64 KiB)\n"
    "  --idle-timeout SEC    close keep-alive connections idle this long (default 15)\n"
    "  --max-tokens N        completion cap when a request sets none (default: the rest of the\n"
    "                        context for chat, 512 for completions)\n"
    "  --temperature, --temp T   default temperature (default 0.7); requests may override\n"
    "  --top-p P             default nucleus sampling (default 1 = off)\n"
    "  --top-k K             default top-k (default 0 = off)\n"
    "  --seed N              seed of every request that sets none (default: a fresh random seed\n"
    "                        per request); with temperature 0 the seed does not matter\n"
    "  --thinking true|false default enable_thinking for chat templates that read it\n"
    "  --chat-template-file FILE  use this Jinja chat template instead of the model's\n"
    "  --no-special-in-content  tokenize special-token text in user and tool messages as plain\n"
    "                        text (default: as the model's tokenizer does, so \"<|im_end|>\"\n"
    "                        typed by a user is the control token)\n"
    "  --alias NAME          the model id the API reports and answers to (default: the model's\n"
    "                        repo or file name)\n"
    "  --timings             llama-server's \"timings\" in every chat / completions answer\n"
    CLI_MEDIA_FLAGS_USAGE
    "  --threads N           compute threads (default: all CPUs)\n"
    "  --device auto|cpu|cuda  where to compute (default auto: the GPU when hearth was built with\n"
    "                        CUDA and one is usable, else the CPU)\n"
    "  --ctx N               context length (default min(training context, 4096))\n"
    CLI_ENGINE_FLAGS_USAGE
    "  --no-open             do not open the chat in a browser (opened with xdg-open when\n"
    "                        stdout is a terminal and a display is set)\n"
    "  --unix PATH           listen on this unix socket (mode 0600) instead of HOST:PORT\n"
    "  --isolate             run the model in an engine process of its own: this process keeps\n"
    "                        HTTP, the web app and the store, forwards API requests to it, and\n"
    "                        restarts it when it dies or hangs (docs/isolation.md)\n"
    "  --model-pool N        with --isolate: a request whose \"model\" names another model of the\n"
    "                        store (its /v1/models id) starts that model's engine; N engines stay\n"
    "                        resident, the least recently used one stops to make room; the\n"
    "                        --memory-budget bounds their sum (each sized as `hearth fit` does,\n"
    "                        its KV pool one context unless --kv-budget): a model over it alone\n"
    "                        is refused (400 memory_admission)\n"
    "  --heartbeat-timeout SEC  with --isolate: an engine that has not answered its health probe\n"
    "                        this long is killed and restarted (default 10)\n"
    "  --adapter DIR         mount a LoRA adapter at start as the default of requests that name\n"
    "                        none (alias --adapter-path): a PEFT or mlx-lm folder, a GGUF LoRA\n"
    "                        file or a hub repo id; more with POST /v1/adapters (docs/server.md)\n";

typedef struct {
    const char *model, *adapter, *host, *api_key, *cors, *template_file, *allowed_hosts, *alias, *admin_key;
    long long   port, max_tokens, top_k, threads, ctx, seed;
    long long   drain_timeout, max_conns, max_conns_addr, header_timeout, idle_timeout;
    double      temperature, top_p;
    int         thinking;
    bool        no_open, no_special, timings, isolate;
    const char *unix_path;
    const char *responses_dir; /* an engine child's: the shared Responses store (resp_disk.h) */
    long long   model_pool, heartbeat; /* 0: not given */
    cli_engine_flags ef;
    hearth_device device;
    hearth_media_fetch_opts media;
} serve_opts;

/* Serving as an engine child of --isolate (cli_serve_child): no ready card, no browser. */
static bool engine_child;

static int parse(int argc, char **argv, serve_opts *o) {
    int n_pos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        double fv;
        int ef = cli_engine_flag(argc, argv, &i, &o->ef);
        if (ef == 0) ef = cli_run_flag(argc, argv, &i, &o->threads, &o->device, &o->ctx);
        if (ef == 0) ef = cli_media_flag(argc, argv, &i, &o->media);
        if (ef < 0) return 2;
        if (ef > 0) continue;
        if (FLAG("--no-open")) { o->no_open = true; continue; }
        if (FLAG("--no-special-in-content")) { o->no_special = true; continue; }
        if (FLAG("--timings")) { o->timings = true; continue; }
        if (FLAG("--isolate")) { o->isolate = true; continue; }
        if (engine_child && FLAG("--responses-dir")) { /* internal: given by the serving process */
            NEEDVAL();
            o->responses_dir = val;
            continue;
        }
        if (FLAG("--unix")) {
            NEEDVAL();
            o->unix_path = val;
            continue;
        }
        if (FLAG("--model-pool")) {
            NEEDVAL();
            if (!cli_parse_int(a, val, 1, 8, &o->model_pool)) return 2;
            continue;
        }
        if (FLAG("--heartbeat-timeout")) {
            NEEDVAL();
            if (!cli_parse_int(a, val, 1, 3600, &o->heartbeat)) return 2;
            continue;
        }
        else if (FLAG("--model")) { NEEDVAL(); o->model = val; }
        else if (FLAG("--adapter") || FLAG("--adapter-path")) { NEEDVAL(); o->adapter = val; }
        else if (FLAG("--host")) { NEEDVAL(); o->host = val; }
        else if (FLAG("--api-key")) { NEEDVAL(); o->api_key = val; }
        else if (FLAG("--cors")) { NEEDVAL(); o->cors = val; }
        else if (FLAG("--allowed-hosts")) { NEEDVAL(); o->allowed_hosts = val; }
        else if (FLAG("--admin-key")) { NEEDVAL(); o->admin_key = val; }
        else if (FLAG("--drain-timeout")) {
            NEEDVAL();
            if (!cli_parse_int(a, val, 0, 24 * 3600, &o->drain_timeout)) return 2;
        } else if (FLAG("--max-connections")) {
            NEEDVAL();
            if (!cli_parse_int(a, val, 1, 100000, &o->max_conns)) return 2;
        } else if (FLAG("--max-conns-per-addr")) {
            NEEDVAL();
            if (!cli_parse_int(a, val, 1, 100000, &o->max_conns_addr)) return 2;
        } else if (FLAG("--header-timeout")) {
            NEEDVAL();
            if (!cli_parse_int(a, val, 1, 3600, &o->header_timeout)) return 2;
        } else if (FLAG("--idle-timeout")) {
            NEEDVAL();
            if (!cli_parse_int(a, val, 1, 3600, &o->idle_timeout)) return 2;
        }
        else if (FLAG("--chat-template-file")) { NEEDVAL(); o->template_file = val; }
        else if (FLAG("--alias")) {
            NEEDVAL();
            if (!*val || strlen(val) > 255) {
                cli_error("--alias expects a name of 1 to 255 bytes");
                return 2;
            }
            o->alias = val;
        }
        else if (FLAG("--port")) {
            NEEDVAL();
            if (!cli_parse_int(a, val, 0, 65535, &o->port)) return 2;
        } else if (FLAG("--max-tokens")) {
            NEEDVAL();
            if (!cli_parse_int(a, val, 1, 1 << 24, &o->max_tokens)) return 2;
        } else if (FLAG("--temperature") || FLAG("--temp")) {
            NEEDVAL();
            if (!cli_parse_float(a, val, 0, 10, &o->temperature)) return 2;
        } else if (FLAG("--top-p")) {
            NEEDVAL();
            if (!cli_parse_float(a, val, 0, 1, &fv)) return 2;
            o->top_p = fv;
        } else if (FLAG("--seed")) {
            NEEDVAL();
            if (!cli_parse_int(a, val, 0, INT64_MAX, &o->seed)) return 2;
        } else if (FLAG("--top-k")) {
            NEEDVAL();
            if (!cli_parse_int(a, val, 0, 1 << 24, &o->top_k)) return 2;
        } else if (FLAG("--thinking")) {
            NEEDVAL();
            if (!strcmp(val, "true") || !strcmp(val, "on") || !strcmp(val, "1")) o->thinking = 1;
            else if (!strcmp(val, "false") || !strcmp(val, "off") || !strcmp(val, "0")) o->thinking = 0;
            else {
                cli_error("--thinking expects true or false (got \"%s\")", val);
                return 2;
            }
        } else if (a[0] == '-' && a[1]) {
            cli_error("unknown flag '%s' (try 'hearth help serve')", a);
            return 2;
        } else if (n_pos++ == 0 && !o->model) {
            o->model = a;
        } else {
            cli_error("unexpected argument '%s'", a);
            return 2;
        }
    }
    if ((o->model_pool || o->heartbeat) && !o->isolate) {
        cli_error("%s needs --isolate (the pool's engines are processes of their own)",
                  o->model_pool ? "--model-pool" : "--heartbeat-timeout");
        return 2;
    }
    return cli_draft_flags_check(&o->ef.draft) ? 0 : 2;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/*
 * Is something listening on host:port? 0 nothing, 1 hearth, 2 something else. A wildcard
 * bind address is probed on loopback.
 */
static int probe(const char *host, int port) {
    if (!strcmp(host, "0.0.0.0")) host = "127.0.0.1";
    if (!strcmp(host, "::")) host = "::1";
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *ai;
    char ps[16];
    snprintf(ps, sizeof ps, "%d", port);
    if (getaddrinfo(host, ps, &hints, &ai) != 0) return 0;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int found = 0;
    if (fd < 0) goto out;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) goto out;
        struct pollfd p = {.fd = fd, .events = POLLOUT};
        int err = 0;
        socklen_t len = sizeof err;
        if (poll(&p, 1, 500) != 1 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) goto out;
    }
    found = 2;
    char req[256], buf[2048];
    bool v6 = strchr(host, ':') != NULL; /* an IPv6 Host is bracketed */
    int n = snprintf(req, sizeof req, "GET /v1 HTTP/1.0\r\nHost: %s%s%s:%d\r\n\r\n", v6 ? "[" : "", host,
                     v6 ? "]" : "", port);
    if (send(fd, req, (size_t)n, MSG_NOSIGNAL) != n) goto out;
    size_t got = 0;
    double deadline = now_ms() + 1000;
    while (got < sizeof buf - 1 && now_ms() < deadline) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) != 1) continue;
        ssize_t k = recv(fd, buf + got, sizeof buf - 1 - got, 0);
        if (k <= 0) break;
        got += (size_t)k;
    }
    buf[got] = 0;
    if (strstr(buf, "Server: hearth") || strstr(buf, "\"name\":\"hearth\"")) found = 1;
out:
    if (fd >= 0) close(fd);
    freeaddrinfo(ai);
    return found;
}

/* "org/name" for a file in the hub cache (models--org--name/snapshots/...), else the file name
 * without .gguf. Written into out. */
void cli_model_id_of(const char *path, char *out, size_t cap) {
    const char *m = strstr(path, "models--");
    if (m) {
        m += 8;
        const char *end = strchr(m, '/');
        const char *sep = strstr(m, "--");
        if (end && sep && sep < end) {
            snprintf(out, cap, "%.*s/%.*s", (int)(sep - m), m, (int)(end - sep - 2), sep + 2);
            return;
        }
    }
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 5 && !strcmp(base + n - 5, ".gguf")) n -= 5;
    snprintf(out, cap, "%.*s", (int)n, base);
}

static void *reap(void *arg) {
    waitpid((pid_t)(intptr_t)arg, NULL, 0);
    return NULL;
}

/* Open url with xdg-open, detached; quietly nothing when it is not installed. */
static void open_browser(const char *url) {
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none;
    sigemptyset(&none);
    posix_spawn_file_actions_init(&fa);
    for (int fd = 0; fd < 3; fd++) posix_spawn_file_actions_addopen(&fa, fd, "/dev/null", fd ? O_WRONLY : O_RDONLY, 0);
    posix_spawnattr_init(&at);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSID);
    char *args[] = {"xdg-open", (char *)url, NULL};
    extern char **environ;
    pid_t pid;
    if (posix_spawnp(&pid, "xdg-open", &fa, &at, args, environ) == 0) {
        pthread_t t;
        if (pthread_create(&t, NULL, reap, (void *)(intptr_t)pid) == 0) pthread_detach(t);
    }
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
}

int cli_serve_child(int argc, char **argv) {
    engine_child = true;
    return cli_serve(argc, argv);
}

int cli_serve(int argc, char **argv) {
    double t0 = now_ms();
    serve_opts o = {.host = "127.0.0.1", .port = 8080, .temperature = -1, .top_p = -1, .top_k = -1, .seed = -1,
                    .thinking = -1, .drain_timeout = 30};
    o.media = hearth_media_fetch_opts_default();
    cli_engine_flags_init(&o.ef);
    int rc = parse(argc, argv, &o);
    if (rc) return rc;
    bool starter = !o.model;
    if (starter) o.model = STARTER_QUERY;

    if (engine_child && !o.unix_path) {
        cli_error("an engine process serves on --unix only");
        return 2;
    }
    if (o.port != 0 && !o.unix_path) { /* a unix socket is checked when it is bound */
        int who = probe(o.host, (int)o.port);
        if (who == 1) {
            cli_error("hearth is already serving on http://%s:%lld (stop it, or pick another --port)", o.host, o.port);
            return 1;
        }
        if (who == 2) {
            cli_error("port %lld on %s is in use by another program (pick another --port)", o.port, o.host);
            return 1;
        }
    }

    hearth_err err = {0};
    char *path = NULL;
    hearth_model *m = NULL, *draft = NULL;
    hearth_engine *e = NULL;
    hearth_bert *emb = NULL;
    hearth_server *srv = NULL;
    hearth_engines *eng = NULL;
    char *tmpl_text = NULL; /* --chat-template-file's text */
    rc = 1;
    if (hearth_hub_resolve(o.model, &path, &err)) {
        if (!starter || err.code != HEARTH_E_NOTFOUND) {
            cli_error("%s", err.msg);
            goto out;
        }
        free(path);
        path = NULL;
        if ((rc = cli_first_run(&path))) goto out; /* first run: fetch the starter that fits */
        rc = 1;
    }
    /* Block the stop signals before any thread starts, so only sigwait below sees them. */
    sigset_t stop_sigs;
    sigemptyset(&stop_sigs);
    sigaddset(&stop_sigs, SIGINT);
    sigaddset(&stop_sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    char model_id[256];
    cli_model_id_of(path, model_id, sizeof model_id);
    hearth_pool_memory pool_mem = {.ctx = (int32_t)o.ctx, .kv_budget = o.ef.kv_budget}; /* outlives eng */
    if (o.isolate) {
        /* the serving process loads nothing: the model runs in an engine child */
        if (cli_isolate_start(argc, argv, starter ? NULL : o.model, path, o.alias ? o.alias : model_id,
                              (int)o.model_pool, (int)o.heartbeat, &pool_mem, o.ef.memory_budget, &eng, &err) ||
            hearth_engines_wait_default(eng, 600 * 1000, &err)) {
            cli_error("cannot serve %s: %s", path, err.msg);
            goto out;
        }
    } else if (hearth_bert_probe(path)) {
        hearth_bert_params bp = hearth_bert_params_default();
        bp.n_threads = (int)o.threads;
        bp.device = (int)o.device; /* BERT, RoBERTa and XLM-R on the GPU (models/bert_device.c) */
        if (hearth_bert_load(path, &bp, &emb, &err)) {
            cli_error("cannot load %s as an embedding model: %s", path, err.msg);
            goto out;
        }
    } else if (hearth_model_load(path, &m, &err)) {
        cli_error("cannot load %s: %s", path, err.msg);
        goto out;
    }
    hearth_engine_params ep = hearth_engine_params_default();
    ep.n_threads = (int)o.threads;
    ep.n_ctx = (int32_t)o.ctx;
    cli_engine_flags_apply(&o.ef, &ep);
    ep.ssd_model_path = path; /* its identity keys the disk tier (a hub blob's sha256, else a digest) */
    ep.model_path = path;     /* --kv-quant config reads its kv_config.json */
    ep.device = (int)o.device;
    if (m && cli_draft_apply(&o.ef.draft, &ep, &draft)) goto out;
    if (m && hearth_engine_create(m, &ep, &e, &err)) {
        cli_error("cannot serve %s: %s", path, err.msg);
        goto out;
    }
    hearth_server_params sp = hearth_server_params_default();
    sp.host = o.host;
    sp.port = (int)o.port;
    sp.unix_path = o.unix_path;
    sp.engines = eng;
    sp.engine_child = engine_child;
    sp.responses_dir = o.responses_dir;
    sp.model_id = o.alias ? o.alias : model_id;
    sp.model_path = path;
    sp.embedder = emb;
    sp.adapter_path = o.adapter;
    sp.api_key = o.api_key;
    sp.cors = o.cors;
    sp.allowed_hosts = o.allowed_hosts;
    sp.no_special_in_content = o.no_special;
    sp.admin_key = o.admin_key;
    sp.drain_timeout_s = (int)o.drain_timeout;
    if (o.max_conns) sp.max_connections = (int)o.max_conns;
    if (o.max_conns_addr) sp.max_conns_per_addr = (int)o.max_conns_addr;
    if (o.header_timeout) sp.header_timeout_s = (int)o.header_timeout;
    if (o.idle_timeout) sp.idle_timeout_s = (int)o.idle_timeout;
    sp.temperature = o.temperature;
    sp.top_p = o.top_p;
    sp.top_k = (int32_t)o.top_k;
    sp.seed = o.seed;
    sp.max_tokens = o.max_tokens > 0 ? (int32_t)o.max_tokens : -1;
    sp.enable_thinking = o.thinking;
    sp.timings = o.timings;
    sp.media = o.media;
    if (o.template_file) {
        size_t n_tmpl = 0;
        if (!(tmpl_text = cli_read_file("--chat-template-file", o.template_file, &n_tmpl))) goto out;
        sp.chat_template = tmpl_text;
    }
    if (hearth_server_create(&sp, m, e, &srv, &err)) {
        cli_error("%s", err.msg);
        goto out;
    }
    double ready_ms = now_ms() - t0;
    bool v6 = strchr(o.host, ':') != NULL;
    if (engine_child) {
        hearth_log(HEARTH_LOG_INFO, "engine: %s ready in %.0f ms on %s", model_id, ready_ms, o.unix_path);
        goto wait;
    }
    char where[300];
    if (o.unix_path) snprintf(where, sizeof where, "unix:%s", o.unix_path);
    else snprintf(where, sizeof where, "http://%s%s%s:%d", v6 ? "[" : "", o.host, v6 ? "]" : "", hearth_server_port(srv));
    if (eng) {
        fprintf(stderr,
                "hearth %s ready in %.0f ms\n"
                "  API      %s/v1\n"
                "  App      %s/  (chat, status, library)\n"
                "  model    %s  (in an engine process: --isolate, model pool %lld)\n"
                "  Ctrl-C stops the server\n",
                HEARTH_VERSION, ready_ms, where, where, o.alias ? o.alias : model_id,
                o.model_pool ? o.model_pool : 1LL);
        fflush(stderr);
        goto wait;
    }
    if (emb) {
        fprintf(stderr,
                "hearth %s ready in %.0f ms\n"
                "  API      %s/v1  (POST /v1/embeddings)\n"
                "  model    %s  (embeddings: %s, %zu MiB)\n"
                "  Ctrl-C stops the server\n",
                HEARTH_VERSION, ready_ms, where, model_id, hearth_bert_desc(emb), hearth_bert_weight_bytes(emb) >> 20);
        fflush(stderr);
        goto wait;
    }
    char tk[32] = "off", mt[32] = "auto", th[32], levers[512];
    cli_engine_levers(e, levers, sizeof levers);
    if (o.top_k > 0) snprintf(tk, sizeof tk, "%lld", o.top_k);
    if (o.max_tokens > 0) snprintf(mt, sizeof mt, "%lld", o.max_tokens);
    snprintf(th, sizeof th, "%lld", o.threads > 0 ? o.threads : (long long)sysconf(_SC_NPROCESSORS_ONLN));
    fprintf(stderr,
            "hearth %s ready in %.0f ms\n"
            "  API      %s/v1\n"
            "  App      %s/  (chat, status, library)\n"
            "  model    %s  (%s, %zu MiB, %s)\n"
            "  context  %d tokens\n"
            "  levers   temperature %g, top-p %g, top-k %s, max-tokens %s, threads %s, api-key %s, cors %s\n"
            "  engine   %s\n"
            "  Ctrl-C stops the server\n",
            HEARTH_VERSION, ready_ms, where, where, model_id,
            hearth_model_name(m), hearth_model_weight_bytes(m) >> 20, hearth_model_quant_desc(m),
            hearth_engine_n_ctx(e), o.temperature >= 0 ? o.temperature : 0.7, o.top_p >= 0 ? o.top_p : 1.0, tk, mt,
            th, o.api_key && *o.api_key ? "on" : "off", o.cors ? o.cors : "off", levers);
    fflush(stderr);
    const char *display = getenv("DISPLAY"), *wayland = getenv("WAYLAND_DISPLAY");
    if (!o.no_open && !o.unix_path && isatty(STDOUT_FILENO) && ((display && *display) || (wayland && *wayland))) {
        /* A wildcard bind is reached on loopback. */
        const char *h = !strcmp(o.host, "0.0.0.0") || !strcmp(o.host, "::") ? "localhost" : o.host;
        bool h6 = strchr(h, ':') != NULL;
        char url[320];
        snprintf(url, sizeof url, "http://%s%s%s:%d/#/chat", h6 ? "[" : "", h, h6 ? "]" : "", hearth_server_port(srv));
        open_browser(url);
    }

wait:;
    const struct timespec tick = {.tv_sec = 0, .tv_nsec = 100 * 1000000L};
    int sig = 0;
    while (sig <= 0 && !hearth_server_draining(srv)) sig = sigtimedwait(&stop_sigs, NULL, &tick);
    if (sig > 0)
        fprintf(stderr, "hearth: %s, draining (up to %lld s; %s again stops at once)\n",
                sig == SIGINT ? "interrupted" : "terminated", o.drain_timeout, sig == SIGINT ? "Ctrl-C" : "SIGTERM");
    else fprintf(stderr, "hearth: drain asked (POST /admin/drain), draining (up to %lld s)\n", o.drain_timeout);
    fflush(stderr);
    hearth_server_drain(srv);
    while (!hearth_server_drained(srv)) {
        if (sigtimedwait(&stop_sigs, NULL, &tick) > 0) {
            fprintf(stderr, "hearth: stopping now\n");
            fflush(stderr);
            _exit(1); /* the second signal: at once, without waiting for anything */
        }
    }
    fprintf(stderr, "hearth: stopping\n");
    rc = 0;
out:
    hearth_server_destroy(srv);
    hearth_engines_destroy(eng, 10 * 1000); /* after the server: no request holds a child */
    hearth_engine_destroy(e);
    hearth_model_destroy(draft); /* after the engine, which borrows it */
    hearth_model_destroy(m);
    hearth_bert_destroy(emb);
    free(tmpl_text);
    free(path);
    return rc;
}
