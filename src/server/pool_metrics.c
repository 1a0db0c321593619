/*
 * pool_metrics.c - the children's /metrics merged into the serving process's (pool_metrics.h).
 *
 * The texts are parsed into families in the order they first appear: a family's HELP and
 * TYPE lines (the first of each kind kept) and its sample lines. A sample belongs to the
 * family of the TYPE/HELP lines before it when its name is that family's name or the name
 * plus a histogram or summary suffix; any other sample is a family of its own name (untyped).
 */
#include "server/pool_metrics.h"
#include "base/buf.h"
#include "base/log.h"
#include "server/engine_get.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CHILDREN    16
#define SCRAPE_TIMEOUT_MS 1000
#define SCRAPE_FAILURES "hearth_engine_scrape_failures_total"

typedef struct {
    char       name[128];
    bool       has_help, has_type;
    hearth_buf head;    /* its HELP and TYPE lines */
    hearth_buf samples; /* its sample lines */
} family;

typedef struct {
    family *f;
    size_t  n, cap;
    bool    oom;
} families;

static family *fam_get(families *fs, const char *name, size_t len) {
    if (len >= sizeof fs->f[0].name) len = sizeof fs->f[0].name - 1;
    for (size_t i = 0; i < fs->n; i++)
        if (!strncmp(fs->f[i].name, name, len) && !fs->f[i].name[len]) return &fs->f[i];
    if (!hearth_buf_grow(&fs->f, &fs->cap, fs->n + 1, sizeof *fs->f, 64)) {
        fs->oom = true;
        return NULL;
    }
    family *f = &fs->f[fs->n++];
    memset(f, 0, sizeof *f);
    memcpy(f->name, name, len);
    return f;
}

static void fams_fini(families *fs) {
    for (size_t i = 0; i < fs->n; i++) {
        hearth_buf_fini(&fs->f[i].head);
        hearth_buf_fini(&fs->f[i].samples);
    }
    free(fs->f);
}

/* Is sample name [s, s+n) one of family f's? */
static bool of_family(const family *f, const char *s, size_t n) {
    size_t k = strlen(f->name);
    if (n < k || strncmp(s, f->name, k)) return false;
    static const char *const suffix[] = {"", "_bucket", "_sum", "_count", "_total", "_created"};
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++)
        if (n - k == strlen(suffix[i]) && !strncmp(s + k, suffix[i], n - k)) return true;
    return false;
}

/* The label value v, escaped as the text format asks. */
static void put_label(hearth_buf *b, const char *v) {
    for (const char *p = v; *p; p++) {
        if (*p == '\\' || *p == '"') hearth_buf_putc(b, '\\');
        if (*p == '\n') hearth_buf_puts(b, "\\n");
        else hearth_buf_putc(b, *p);
    }
}

/* Does the label set starting after '{' at p already have a label `model`? */
static bool has_model_label(const char *p, const char *eol) {
    bool in_value = false;
    bool at_name = true;
    for (; p < eol && *p != '}'; p++) {
        if (in_value) {
            if (*p == '\\') p++;
            else if (*p == '"') in_value = false;
            continue;
        }
        if (*p == '"') in_value = true;
        else if (*p == ',') at_name = true;
        else if (at_name && *p != ' ') {
            if ((size_t)(eol - p) > 6 && !strncmp(p, "model", 5) && (p[5] == '=' || p[5] == ' ')) return true;
            at_name = false;
        }
    }
    return false;
}

/* Add the sample line [l, eol) to b, with model="model" in its labels when model is given. */
static void put_sample(hearth_buf *b, const char *l, const char *eol, size_t name_len, const char *model) {
    const char *rest = l + name_len;
    if (!model || (*rest == '{' && has_model_label(rest + 1, eol))) {
        hearth_buf_put(b, l, (size_t)(eol - l));
        hearth_buf_putc(b, '\n');
        return;
    }
    hearth_buf_put(b, l, name_len);
    hearth_buf_puts(b, "{model=\"");
    put_label(b, model);
    hearth_buf_putc(b, '"');
    if (*rest == '{') {
        rest++;
        while (*rest == ' ') rest++;
        if (*rest != '}') hearth_buf_putc(b, ',');
    } else
        hearth_buf_putc(b, '}');
    hearth_buf_put(b, rest, (size_t)(eol - rest));
    hearth_buf_putc(b, '\n');
}

/* Parse the text [p, p+n) into fs; its samples labelled with model (NULL: as they are). */
static void add_text(families *fs, const char *p, size_t n, const char *model) {
    const char *end = p + n;
    family *cur = NULL;
    while (p < end && !fs->oom) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        const char *l = p;
        p = eol + 1;
        if (l == eol) continue;
        if (*l == '#') {
            bool help = eol - l > 7 && !strncmp(l, "# HELP ", 7), type = eol - l > 7 && !strncmp(l, "# TYPE ", 7);
            if (!help && !type) continue; /* another comment */
            const char *nm = l + 7, *ne = nm;
            while (ne < eol && *ne != ' ') ne++;
            cur = fam_get(fs, nm, (size_t)(ne - nm));
            if (!cur) return;
            if ((help && cur->has_help) || (type && cur->has_type)) continue;
            if (help) cur->has_help = true;
            else cur->has_type = true;
            hearth_buf_put(&cur->head, l, (size_t)(eol - l));
            hearth_buf_putc(&cur->head, '\n');
            continue;
        }
        const char *ne = l;
        while (ne < eol && *ne != '{' && *ne != ' ') ne++;
        size_t name_len = (size_t)(ne - l);
        family *f = cur && of_family(cur, l, name_len) ? cur : fam_get(fs, l, name_len);
        if (!f) return;
        if (model && !strcmp(f->name, "hearth_info")) continue; /* the serving process's is the one */
        put_sample(&f->samples, l, eol, name_len, model);
        if (f->samples.oom || f->head.oom) fs->oom = true;
    }
}

static void emit(const families *fs, hearth_buf *out) {
    for (size_t i = 0; i < fs->n; i++) {
        hearth_buf_put(out, fs->f[i].head.p, fs->f[i].head.len);
        hearth_buf_put(out, fs->f[i].samples.p, fs->f[i].samples.len);
    }
}

static bool any_oom(const families *fs) {
    if (fs->oom) return true;
    for (size_t i = 0; i < fs->n; i++)
        if (fs->f[i].head.oom || fs->f[i].samples.oom) return true;
    return false;
}

bool hearth_prom_merge(const hearth_prom_part *parts, int n, hearth_buf *out) {
    families fs = {0};
    for (int i = 0; i < n; i++) add_text(&fs, parts[i].text ? parts[i].text : "", parts[i].len, parts[i].model);
    bool ok = !any_oom(&fs);
    if (ok) emit(&fs, out);
    fams_fini(&fs);
    return ok && !out->oom;
}

void hearth_pool_metrics(hearth_engines *g, hearth_jw *w) {
    if (w->b.oom) return;
    hearth_engine_addr *kids = calloc(MAX_CHILDREN, sizeof *kids);
    hearth_buf *bodies = calloc(MAX_CHILDREN, sizeof *bodies);
    hearth_prom_part *parts = calloc(MAX_CHILDREN + 2, sizeof *parts);
    if (!kids || !bodies || !parts) {
        free(kids);
        free(bodies);
        free(parts);
        return;
    }
    int n = hearth_engines_ready(g, kids, MAX_CHILDREN), missed = 0, np = 0;
    parts[np++] = (hearth_prom_part){w->b.p, w->b.len, NULL};
    const char *socks[MAX_CHILDREN];
    int status[MAX_CHILDREN] = {0};
    bool ok[MAX_CHILDREN] = {0};
    for (int i = 0; i < n; i++) socks[i] = kids[i].sock;
    /* all children at once, one deadline for the scrape: N stopped children cost it once */
    hearth_engine_get_all(socks, n, "GET", "/metrics", SCRAPE_TIMEOUT_MS, status, bodies, ok);
    for (int i = 0; i < n; i++) {
        if (!ok[i] || status[i] != 200) {
            hearth_log(HEARTH_LOG_WARN, "isolate: the engine of %s did not answer /metrics; left out of this scrape",
                       kids[i].model_id);
            missed++;
            continue;
        }
        parts[np++] = (hearth_prom_part){bodies[i].p, bodies[i].len, kids[i].model_id};
    }
    hearth_buf own = {0};
    hearth_buf_printf(&own,
                      "# HELP %s Engine children that did not answer a /metrics scrape in time (their series were "
                      "left out).\n# TYPE %s counter\n%s %lld\n",
                      SCRAPE_FAILURES, SCRAPE_FAILURES, SCRAPE_FAILURES, hearth_engines_scrape_missed(g, missed));
    parts[np++] = (hearth_prom_part){own.p, own.len, NULL};
    hearth_buf out = {0};
    if (!own.oom && hearth_prom_merge(parts, np, &out)) {
        hearth_jw_reset(w);
        hearth_jw_raw(w, out.p ? out.p : "", out.len);
    }
    hearth_buf_fini(&out);
    hearth_buf_fini(&own);
    for (int i = 0; i < n; i++) hearth_buf_fini(&bodies[i]);
    free(bodies);
    free(parts);
    free(kids);
}
