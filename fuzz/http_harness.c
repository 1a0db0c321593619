/*
 * http_harness.c - the in-process hearth server of the HTTP fuzz targets; see http_harness.h.
 *
 * Reading a response: the status line and headers up to the blank line (1xx interim
 * responses skipped), then the body by Content-Length, by chunked coding, or to the close of
 * the connection; HEAD, 204 and 304 have none.
 *
 * One thread does it all: the daemon has no threads of its own (hearth_server_create_driven),
 * so whenever the client's end has nothing to read, the harness writes what is left of the
 * request and runs the daemon once (MHD_run: it reads, calls the server's callbacks, writes
 * what the socket takes) - no thread is started or woken per input. Waiting is bounded by one
 * deadline per exchange, so a server that never answers is a broken promise, not a hang.
 */
#include "fuzz/http_harness.h"

#include "base/log.h"
#include "engine/engine.h"
#include "model/model.h"
#include "server/resp_store.h"
#include "server/server.h"
#include "server/server_internal.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PROMISE(x)                                                                          \
    do {                                                                                    \
        if (!(x)) {                                                                         \
            fprintf(stderr, "http_harness: broken promise: %s (line %d)\n", #x, __LINE__); \
            abort();                                                                        \
        }                                                                                   \
    } while (0)

/* ChatML with tools (Hermes-style <tool_call> markup) and <think> reasoning: the server then
 * parses tool calls and splits reasoning off the stub engine's replies. */
static const char TEMPLATE[] =
    "{%- if tools %}<|im_start|>system\n"
    "{% if messages[0].role == 'system' %}{{ messages[0].content }}\n\n{% endif %}"
    "Tools you may call:\n<tools>\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}</tools>\n"
    "Call one as <tool_call>{\"name\": NAME, \"arguments\": ARGS}</tool_call>.<|im_end|>\n"
    "{%- elif messages[0].role == 'system' %}<|im_start|>system\n{{ messages[0].content }}<|im_end|>\n"
    "{%- endif %}"
    "{%- for m in messages %}"
    "{%- if m.role == 'system' and loop.first %}"
    "{%- elif m.role == 'tool' %}<|im_start|>user\n<tool_response>\n{{ m.content }}\n</tool_response><|im_end|>\n"
    "{%- else %}<|im_start|>{{ m.role }}\n"
    "{%- if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>\n{% endif %}"
    "{{ m.content if m.content is string else '' }}"
    "{%- for c in m.tool_calls or [] %}\n<tool_call>{\"name\": \"{{ c.function.name }}\", \"arguments\": "
    "{{ c.function.arguments | tojson }}}</tool_call>{%- endfor %}<|im_end|>\n"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n"
    "{%- if enable_thinking is defined and not enable_thinking %}<think>\n\n</think>\n\n{% endif %}"
    "{%- endif %}";

static struct {
    bool            up;
    bool            verbose; /* HEARTH_FUZZ_VERBOSE set: print each response's status and body */
    char            dir[256];
    hearth_model   *m;
    hearth_engine  *e;
    hearth_server  *s;
} H;

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void teardown(void) {
    hearth_server_destroy(H.s);
    hearth_engine_destroy(H.e);
    hearth_model_destroy(H.m);
    if (H.dir[0]) nftw(H.dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Set when libmicrohttpd says it closed a connection because the response head did not fit in
 * the connection's memory (its message comes through the server's log at debug level). */
static bool no_room_for_head;

static void quiet(hearth_log_level level, const char *msg, void *user) {
    (void)level, (void)user;
    if (strstr(msg, "Closing connection (failed to create response header)")) no_room_for_head = true;
}

/* Remove the directories of earlier fuzz processes that ended without their exit handler (a
 * crash, a timeout, libFuzzer's -fork killing a job): hearth-fuzz-PID-* of a PID gone. */
static void sweep_stale(const char *tmp) {
    DIR *d = opendir(tmp);
    if (!d) return;
    for (struct dirent *de; (de = readdir(d));) {
        char *end;
        if (strncmp(de->d_name, "hearth-fuzz-", 12)) continue;
        long pid = strtol(de->d_name + 12, &end, 10);
        if (end == de->d_name + 12 || *end != '-' || pid <= 0 || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char path[512];
        snprintf(path, sizeof path, "%s/%s", tmp, de->d_name);
        nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    }
    closedir(d);
}

void fz_http_init(void) {
    if (H.up) return;
    const char *tmp = getenv("TMPDIR");
    if (!tmp || !*tmp) tmp = "/tmp";
    sweep_stale(tmp);
    snprintf(H.dir, sizeof H.dir, "%s/hearth-fuzz-%ld-XXXXXX", tmp, (long)getpid());
    PROMISE(mkdtemp(H.dir) != NULL);
    setenv("HOME", H.dir, 1);
    setenv("XDG_CACHE_HOME", H.dir, 1);
    setenv("HF_HOME", H.dir, 1);
    setenv("HF_HUB_CACHE", H.dir, 1);
    setenv("HF_ENDPOINT", "http://127.0.0.1:9", 1); /* discard port: nothing listens, a download fails at once */
    unsetenv("HF_TOKEN");
    unsetenv("HUGGING_FACE_HUB_TOKEN");
    unsetenv("HF_TOKEN_PATH");
    hearth_log_set_sink(quiet, NULL);
    hearth_log_set_level(HEARTH_LOG_DEBUG); /* libmicrohttpd's messages are debug lines */
    H.verbose = getenv("HEARTH_FUZZ_VERBOSE") != NULL;

    const char *path = getenv("HEARTH_FUZZ_MODEL");
    if (!path || !*path) path = "tests/golden/tiny/tiny-qwen2.gguf";
    hearth_err err = {0};
    if (hearth_model_load(path, &H.m, &err)) {
        fprintf(stderr, "http_harness: cannot load %s (%s): run from the repository root or set HEARTH_FUZZ_MODEL\n",
                path, err.msg);
        abort();
    }
    hearth_engine_params ep = hearth_engine_params_default();
    PROMISE(hearth_engine_create(H.m, &ep, &H.e, &err) == HEARTH_OK);
    hearth_server_params sp = hearth_server_params_default();
    sp.host = "127.0.0.1";
    sp.port = 0;
    sp.model_id = "fuzz-model";
    sp.api_key = FZ_API_KEY;
    sp.cors = FZ_ORIGIN;
    sp.chat_template = TEMPLATE;
    sp.seed = 7;
    sp.max_downloads = 1;
    sp.max_body_bytes = 8192; /* small, so a fuzzed body can pass it (413) */
    /* an admin key no input can know: POST /admin/drain is tried, and refused, but never
     * drains the server (its later answers would all be 503) */
    static char admin_key[40];
    unsigned char rnd[16] = {0};
    FILE *ur = fopen("/dev/urandom", "rb");
    PROMISE(ur && fread(rnd, 1, sizeof rnd, ur) == sizeof rnd);
    fclose(ur);
    for (size_t i = 0; i < sizeof rnd; i++) snprintf(admin_key + 2 * i, 3, "%02x", rnd[i]);
    sp.admin_key = admin_key;
    if (hearth_server_create_driven(&sp, H.m, H.e, &H.s, &err)) {
        fprintf(stderr, "http_harness: the server did not start: %s\n", err.msg);
        abort();
    }
    PROMISE(H.s->tmpl != NULL); /* the template above parses */
    atexit(teardown);
    H.up = true;
}

/* ---- the client side ---- */

typedef struct {
    char  *p;
    size_t n, cap;
} bytes;

static void put(bytes *b, const void *d, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1) cap *= 2;
        char *q = realloc(b->p, cap);
        PROMISE(q != NULL);
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void puts_(bytes *b, const char *s) { put(b, s, strlen(s)); }

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The request bytes not yet written to the client's end of the current connection; when they
 * are all out and shut_wr is set, the client's write side is shut (end of input). */
static struct {
    int         fd;
    const char *p;
    size_t      n;
    bool        shut_wr;
} OUT = {.fd = -1};

/* A connection handed to the daemon, with data[0..n) to write to it; returns the client's end
 * (non-blocking: the fuzzing thread both writes it and runs the daemon). */
static int connect_pair(const char *data, size_t n, bool shut_wr) {
    int sv[2];
    PROMISE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    struct sockaddr_in peer = {.sin_family = AF_INET, .sin_port = htons(40000),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    PROMISE(MHD_add_connection(H.s->d, sv[0], (const struct sockaddr *)&peer, sizeof peer) == MHD_YES);
    PROMISE(fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK) == 0);
    OUT.fd = sv[1];
    OUT.p = data;
    OUT.n = n;
    OUT.shut_wr = shut_wr;
    return sv[1];
}

/* Write what the socket takes of the request. */
static void pump(void) {
    while (OUT.n) {
        ssize_t k = send(OUT.fd, OUT.p, OUT.n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return; /* full: the daemon reads first */
        if (k <= 0) { /* the server closed early (it refused the request): what it said is read next */
            OUT.n = 0;
            break;
        }
        OUT.p += k;
        OUT.n -= (size_t)k;
    }
    if (OUT.shut_wr) {
        shutdown(OUT.fd, SHUT_WR);
        OUT.shut_wr = false;
    }
}

/* Read more into b before the deadline, running the daemon while nothing is there: > 0 bytes
 * read, 0 end of stream; a timeout aborts. */
static ssize_t read_more(int fd, bytes *b, double deadline) {
    char tmp[16384];
    for (;;) {
        pump();
        ssize_t k = recv(fd, tmp, sizeof tmp, MSG_DONTWAIT);
        if (k > 0) {
            put(b, tmp, (size_t)k);
            return k;
        }
        if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return 0; /* a reset: the end too */
        if (now_ms() > deadline) {
            fprintf(stderr, "http_harness: no answer from the server in %d ms\n", FZ_TIMEOUT_MS);
            abort();
        }
        MHD_run(H.s->d); /* the server's turn: it reads, answers, writes what the socket takes */
    }
}

/* The daemon has let go of every connection (the client's end is closed: the daemon sees it,
 * ends the request and closes its end); then the Responses store is emptied, so that no input
 * sees what an earlier one stored (its ids are unguessable anyway) and an input's allocations
 * are all freed by its end, which keeps libFuzzer's leak check to the inputs that really leak. */
static void wait_idle(void) {
    double deadline = now_ms() + FZ_TIMEOUT_MS;
    OUT.fd = -1;
    OUT.n = 0;
    for (;;) {
        MHD_run(H.s->d);
        const union MHD_DaemonInfo *di = MHD_get_daemon_info(H.s->d, MHD_DAEMON_INFO_CURRENT_CONNECTIONS);
        if (!di || di->num_connections == 0) {
            hearth_resp_store_destroy(H.s->responses);
            H.s->responses = hearth_resp_store_create((hearth_resp_store_params){0});
            PROMISE(H.s->responses != NULL);
            return;
        }
        if (now_ms() > deadline) {
            fprintf(stderr, "http_harness: a connection is still open %d ms after its client left\n", FZ_TIMEOUT_MS);
            abort();
        }
    }
}

/* The value of header name in the head [h, e) (case-insensitive), or NULL; *len its length. */
static const char *header_of(const char *h, const char *e, const char *name, size_t *len) {
    size_t nl = strlen(name);
    for (const char *line = h; line < e;) {
        const char *eol = memmem(line, (size_t)(e - line), "\r\n", 2);
        if (!eol) eol = e;
        if ((size_t)(eol - line) > nl && !strncasecmp(line, name, nl) && line[nl] == ':') {
            const char *v = line + nl + 1;
            while (v < eol && (*v == ' ' || *v == '\t')) v++;
            const char *ve = eol;
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
            *len = (size_t)(ve - v);
            return v;
        }
        line = eol + 2;
    }
    return NULL;
}

/* Every data line of an event stream is JSON (or [DONE]). */
static void check_sse(const char *p, size_t n) {
    const char *e = p + n;
    while (p < e) {
        const char *eol = memchr(p, '\n', (size_t)(e - p));
        if (!eol) eol = e;
        if (eol - p >= 6 && !memcmp(p, "data: ", 6)) {
            const char *d = p + 6;
            size_t dn = (size_t)(eol - d);
            if (!(dn == 6 && !memcmp(d, "[DONE]", 6))) {
                cJSON *j = cJSON_ParseWithLength(d, dn);
                if (!j) fprintf(stderr, "http_harness: event data is not JSON: %.*s\n", (int)(dn > 300 ? 300 : dn), d);
                PROMISE(j != NULL);
                cJSON_Delete(j);
            }
        }
        p = eol + 1;
    }
}

/* Read one response and check it; false when the connection ended before a whole one, with
 * *n_got the bytes that came. */
static bool read_response(int fd, bool head_request, double deadline, size_t *n_got) {
    bytes b = {0};
    size_t start = 0; /* where the current response begins */
    const char *hend;
    int status;
    for (;;) { /* status line and headers; 1xx responses are skipped */
        while (!(hend = b.n > start ? memmem(b.p + start, b.n - start, "\r\n\r\n", 4) : NULL))
            if (read_more(fd, &b, deadline) == 0) {
                *n_got = b.n;
                free(b.p);
                return false;
            }
        const char *sl = b.p + start;
        PROMISE(!strncmp(sl, "HTTP/1.", 7) && (sl[7] == '0' || sl[7] == '1') && sl[8] == ' ');
        PROMISE(sl[9] >= '1' && sl[9] <= '5' && sl[10] >= '0' && sl[10] <= '9' && sl[11] >= '0' && sl[11] <= '9');
        status = (sl[9] - '0') * 100 + (sl[10] - '0') * 10 + (sl[11] - '0');
        if (status >= 200) break;
        start = (size_t)(hend - b.p) + 4;
    }
    size_t hoff = (size_t)(hend - b.p) + 4; /* body offset */
    size_t ctn = 0, cln = 0, ten = 0;
    const char *ct = header_of(b.p + start, hend + 2, "Content-Type", &ctn);
    const char *cl = header_of(b.p + start, hend + 2, "Content-Length", &cln);
    const char *te = header_of(b.p + start, hend + 2, "Transfer-Encoding", &ten);
    char ctype[128] = "";
    if (ct) snprintf(ctype, sizeof ctype, "%.*s", (int)ctn, ct);
    bytes body = {0};
    if (head_request || status == 204 || status == 304) {
        /* no body */
    } else if (te && ten == 7 && !strncasecmp(te, "chunked", 7)) {
        size_t at = hoff;
        for (;;) {
            const char *eol;
            while (!(eol = b.n > at ? memmem(b.p + at, b.n - at, "\r\n", 2) : NULL))
                if (read_more(fd, &b, deadline) == 0) goto cut;
            char *end;
            unsigned long long sz = strtoull(b.p + at, &end, 16);
            PROMISE(end > b.p + at && end <= eol);
            at = (size_t)(eol - b.p) + 2;
            while (b.n < at + sz + 2)
                if (read_more(fd, &b, deadline) == 0) goto cut;
            if (sz == 0) break; /* the last chunk: no trailers are sent */
            put(&body, b.p + at, (size_t)sz);
            PROMISE(!memcmp(b.p + at + sz, "\r\n", 2));
            at += (size_t)sz + 2;
        }
    } else if (cl) {
        char *end;
        unsigned long long want = strtoull(cl, &end, 10);
        PROMISE(end == cl + cln);
        while (b.n - hoff < want)
            if (read_more(fd, &b, deadline) == 0) goto cut;
        put(&body, b.p + hoff, (size_t)want);
    } else {
        while (read_more(fd, &b, deadline) > 0) {
        }
        put(&body, b.p + hoff, b.n - hoff);
    }
    if (H.verbose)
        fprintf(stderr, "http_harness: %d %s %.*s\n", status, ctype, (int)(body.n > 600 ? 600 : body.n),
                body.p ? body.p : "");
    if (status >= 500 && status != 505)
        fprintf(stderr, "http_harness: %d %.*s\n", status, (int)(body.n > 400 ? 400 : body.n), body.p ? body.p : "");
    PROMISE(status < 500 || status == 505); /* 505: libmicrohttpd's own answer to a version it does not speak */
    if (!strncasecmp(ctype, "application/json", 16) && body.n) {
        cJSON *j = cJSON_ParseWithLength(body.p, body.n);
        if (!j) fprintf(stderr, "http_harness: a JSON response that does not parse: %.*s\n",
                        (int)(body.n > 400 ? 400 : body.n), body.p);
        PROMISE(j != NULL);
        if (status >= 400) PROMISE(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j, "error")));
        cJSON_Delete(j);
    }
    if (!strncasecmp(ctype, "text/event-stream", 17)) check_sse(body.p ? body.p : "", body.n);
    free(body.p);
    free(b.p);
    return true;
cut:
    *n_got = b.n;
    free(body.p);
    free(b.p);
    return false;
}

/* Does the request head [p, p + n) take at least half of libmicrohttpd's memory for its
 * connection, as libmicrohttpd keeps it: its bytes, plus an entry (some 60 bytes; 64 counted)
 * per header line, query argument and cookie? Only such a head may end without an answer:
 * libmicrohttpd passes on a head that just fits in that memory, then, when the room it leaves
 * cannot hold the response head, closes the connection with nothing sent (src/server/http.c,
 * "Request heads"). The server cannot see that room, so it cannot answer otherwise; what is
 * checked is that it is that case - no byte came, libmicrohttpd said so, the head is big (a
 * response head too large for a small request's room would be the server's fault). */
static bool head_fills_memory(const char *p, size_t n) {
    size_t entries = 0;
    for (size_t i = 0; i < n; i++) entries += p[i] == '\n' || p[i] == '&' || p[i] == ';';
    return n + 64 * entries >= HEARTH_MHD_CONN_MEMORY / 2;
}

void fz_http_framed(const char *method, const char *target, const char *version, const char *head,
                    const uint8_t *body, size_t n_body) {
    fz_http_init();
    bytes req = {0};
    char cl[64];
    puts_(&req, method);
    puts_(&req, " ");
    puts_(&req, target);
    puts_(&req, " ");
    puts_(&req, version ? version : "HTTP/1.1");
    puts_(&req, "\r\n");
    puts_(&req, head);
    snprintf(cl, sizeof cl, "Content-Length: %zu\r\n\r\n", n_body);
    puts_(&req, cl);
    put(&req, body, n_body);
    int fd = connect_pair(req.p, req.n, false);
    double deadline = now_ms() + FZ_TIMEOUT_MS;
    size_t n_got = 0;
    no_room_for_head = false;
    bool whole = read_response(fd, !strcmp(method, "HEAD"), deadline, &n_got);
    if (!whole && !(n_got == 0 && no_room_for_head && head_fills_memory(req.p, req.n - n_body))) {
        fprintf(stderr, "http_harness: the connection ended without a whole response (%zu bytes came)\n", n_got);
        PROMISE(whole);
    }
    if (!whole && H.verbose)
        fprintf(stderr, "http_harness: no response: libmicrohttpd had no room left for its head (a %zu-byte request head)\n",
                req.n - n_body);
    close(fd);
    wait_idle();
    free(req.p);
}

void fz_http_raw(const uint8_t *data, size_t n) {
    fz_http_init();
    int fd = connect_pair((const char *)data, n, true);
    double deadline = now_ms() + FZ_TIMEOUT_MS;
    bytes b = {0};
    while (read_more(fd, &b, deadline) > 0) {
    }
    free(b.p);
    close(fd);
    wait_idle();
}

void fz_http_post_json(const char *path, const uint8_t *body, size_t n_body) {
    fz_http_framed("POST", path, NULL,
                   "Host: localhost\r\nContent-Type: application/json\r\nAuthorization: Bearer " FZ_API_KEY
                   "\r\nOrigin: " FZ_ORIGIN "\r\nAnthropic-Version: 2023-06-01\r\n",
                   body, n_body);
}
