/*
 * registry.c - the SQLite model registry; see registry.h.
 *
 * A scan walks models--ORG--NAME/snapshots/REV/ (four levels deep at most), collects model files,
 * and compares each with its row by a change key (size, mtime in ns, canonical, vision):
 * unchanged rows are only stamped with this scan's generation, changed or new ones are
 * re-read (store/facts.h) and upserted, and at the end rows of an older generation are reaped.
 * All of it runs in one transaction, so a reader never sees half a scan.
 */
#include "store/registry.h"

#include "base/buf.h"
#include "base/log.h"
#include "store/hub.h"
#include "store/modality.h"
#include "store/statedb.h"

#include <dirent.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

struct hearth_registry {
    sqlite3 *db;
    char     path[4096];
};

static const char schema_sql[] =
    "CREATE TABLE models("
    " path TEXT PRIMARY KEY, repo_id TEXT NOT NULL, revision TEXT NOT NULL, file TEXT NOT NULL,"
    " canonical INTEGER NOT NULL, format TEXT NOT NULL, arch TEXT NOT NULL, name TEXT NOT NULL,"
    " n_params INTEGER NOT NULL, bytes INTEGER NOT NULL, weight_bytes INTEGER NOT NULL,"
    " weight_read_bytes INTEGER NOT NULL, quant TEXT NOT NULL, n_ctx INTEGER NOT NULL,"
    " n_layer INTEGER NOT NULL, n_layer_swa INTEGER NOT NULL, n_swa INTEGER NOT NULL,"
    " n_vocab INTEGER NOT NULL, kv_bytes_per_token INTEGER NOT NULL,"
    " kv_swa_bytes_per_token INTEGER NOT NULL, act_bytes_per_token INTEGER NOT NULL,"
    " caps TEXT NOT NULL, license TEXT NOT NULL, scanned_at INTEGER NOT NULL,"
    " file_size INTEGER NOT NULL, file_mtime_ns INTEGER NOT NULL, scan_gen INTEGER NOT NULL,"
    " error TEXT NOT NULL);"
    "CREATE INDEX models_repo ON models(repo_id);";

static const char cols[] =
    "path, repo_id, revision, file, canonical, format, arch, name, n_params, bytes, weight_bytes,"
    " weight_read_bytes, quant, n_ctx, n_layer, n_layer_swa, n_swa, n_vocab, kv_bytes_per_token,"
    " kv_swa_bytes_per_token, act_bytes_per_token, caps, license, scanned_at, file_size,"
    " file_mtime_ns, scan_gen, error";

static hearth_status db_err(hearth_registry *r, hearth_err *err, const char *what) {
    return hearth_err_set(err, HEARTH_E_IO, -1, "registry %s: %s: %s", r->path, what, sqlite3_errmsg(r->db));
}

hearth_status hearth_registry_open(const char *db_path, hearth_registry **out, hearth_err *err) {
    *out = NULL;
    hearth_registry *r = calloc(1, sizeof *r);
    if (!r) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    int v;
    hearth_status st =
        hearth_statedb_open(db_path, "registry.sqlite", "registry", r->path, sizeof r->path, &r->db, &v, err);
    if (st) {
        free(r);
        return st;
    }
    if (v != HEARTH_REGISTRY_SCHEMA) {
        if (v != 0) hearth_log(HEARTH_LOG_INFO, "registry schema %d is not %d: rebuilding", v, HEARTH_REGISTRY_SCHEMA);
        char sql[2048];
        snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS models; %s", schema_sql);
        if ((st = hearth_statedb_migrate(r->db, "registry", r->path, sql, HEARTH_REGISTRY_SCHEMA, err))) goto fail;
    }
    *out = r;
    return HEARTH_OK;
fail:
    sqlite3_close(r->db);
    free(r);
    return st;
}

void hearth_registry_close(hearth_registry *r) {
    if (!r) return;
    sqlite3_close(r->db);
    free(r);
}

const char *hearth_registry_path(const hearth_registry *r) { return r->path; }

/* ---- scanning ------------------------------------------------------------------------------ */

typedef struct {
    hearth_registry   *r;
    hearth_scan_stats *stats;
    sqlite3_stmt      *get, *touch, *upsert;
    int64_t            gen, now;
    const char        *repo_id, *revision;
    bool               canonical, vision;
} scan_ctx;

static bool has_suffix(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* "name-00002-of-00003.gguf": true with *index = 2, *prefix_len = strlen("name"). */
static bool shard_of(const char *name, int *index, size_t *prefix_len) {
    size_t n = strlen(name);
    const char *tail = "-00000-of-00000.gguf";
    size_t t = strlen(tail);
    if (n <= t) return false;
    const char *p = name + n - t;
    for (size_t i = 0; i < t; i++) {
        if (tail[i] == '0' ? (p[i] < '0' || p[i] > '9') : p[i] != tail[i]) return false;
    }
    *index = atoi(p + 1);
    *prefix_len = n - t;
    return true;
}

/* A projector GGUF (llama.cpp's mmproj) is not a model: it marks the models beside it as
 * vision-capable (store/modality.h). The name is the quick test; a model-looking file whose
 * header says projector is left out too (index_model). */
static bool is_projector(const char *name) { return strcasestr(name, "mmproj") != NULL; }

static void store_row(scan_ctx *c, const char *path, const char *file, const hearth_model_facts *f, int64_t size,
                      int64_t mtime_ns, const char *error) {
    sqlite3_stmt *s = c->upsert;
    char caps[96];
    hearth_facts_caps_str(f->caps, caps, sizeof caps);
    int i = 1;
    sqlite3_bind_text(s, i++, path, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, i++, c->repo_id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, i++, c->revision, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, i++, file, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(s, i++, c->canonical);
    sqlite3_bind_text(s, i++, f->format, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, i++, f->arch, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, i++, f->name, -1, SQLITE_TRANSIENT);
    const int64_t nums[] = {f->n_params, f->file_bytes, f->weight_bytes, f->weight_read_bytes};
    for (int k = 0; k < 4; k++) sqlite3_bind_int64(s, i++, nums[k]);
    sqlite3_bind_text(s, i++, f->quant, -1, SQLITE_TRANSIENT);
    const int64_t nums2[] = {f->n_ctx_train, f->n_layer, f->n_layer_swa, f->n_swa, f->n_vocab,
                             f->kv_bytes_per_token, f->kv_swa_bytes_per_token, f->act_bytes_per_token};
    for (int k = 0; k < 8; k++) sqlite3_bind_int64(s, i++, nums2[k]);
    sqlite3_bind_text(s, i++, caps, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(s, i++, f->license, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, i++, c->now);
    sqlite3_bind_int64(s, i++, size);
    sqlite3_bind_int64(s, i++, mtime_ns);
    sqlite3_bind_int64(s, i++, c->gen);
    sqlite3_bind_text(s, i++, error, -1, SQLITE_TRANSIENT);
    sqlite3_step(s);
    sqlite3_reset(s);
}

/* Index one model (a GGUF file or a safetensors snapshot dir) whose change key is size and
 * mtime_ns. Re-reads it only when the key differs from its row. */
static void index_model(scan_ctx *c, const char *path, const char *file, bool is_gguf, int64_t size,
                        int64_t mtime_ns, bool sharded) {
    c->stats->n_models++;
    sqlite3_stmt *g = c->get;
    sqlite3_bind_text(g, 1, path, -1, SQLITE_TRANSIENT);
    bool have = false, same = false;
    if (sqlite3_step(g) == SQLITE_ROW) {
        have = true;
        uint32_t caps = hearth_facts_caps_parse((const char *)sqlite3_column_text(g, 3));
        same = sqlite3_column_int64(g, 0) == size && sqlite3_column_int64(g, 1) == mtime_ns &&
               sqlite3_column_int(g, 2) == (int)c->canonical && !!(caps & HEARTH_CAP_VISION) == c->vision &&
               !strcmp((const char *)sqlite3_column_text(g, 4), c->revision);
    }
    sqlite3_reset(g);
    if (same) {
        sqlite3_bind_int64(c->touch, 1, c->gen);
        sqlite3_bind_text(c->touch, 2, path, -1, SQLITE_TRANSIENT);
        sqlite3_step(c->touch);
        sqlite3_reset(c->touch);
        return;
    }
    hearth_model_facts f;
    hearth_err e = {0};
    hearth_status st = is_gguf ? hearth_facts_gguf(path, &f, &e) : hearth_facts_safetensors(path, &f, &e);
    if (st) {
        c->stats->n_errors++;
        hearth_log(HEARTH_LOG_WARN, "registry: cannot read %s: %s", path, e.msg);
        memset(&f, 0, sizeof f);
        snprintf(f.format, sizeof f.format, "%s", is_gguf ? "gguf" : "safetensors");
        snprintf(f.arch, sizeof f.arch, "?");
        f.file_bytes = size;
    }
    if (is_gguf && !st && !strcmp(f.arch, "clip")) { /* a projector under another name: not a model */
        c->stats->n_models--;
        return;
    }
    if (sharded) { /* hearth does not load split GGUF; the tensors of later shards are elsewhere */
        f.caps &= ~(uint32_t)HEARTH_CAP_SUPPORTED;
        f.file_bytes = f.weight_bytes = f.weight_read_bytes = size;
    }
    if (c->vision) f.caps |= HEARTH_CAP_VISION;
    store_row(c, path, file, &f, size, mtime_ns, st ? e.msg : "");
    if (have) c->stats->n_updated++;
    else c->stats->n_added++;
}

static int64_t mtime_ns_of(const struct stat *st) {
    return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* Walk a snapshot folder; rel is the path below the snapshot ("" at the top). */
static void walk(scan_ctx *c, const char *snap, const char *rel, int depth) {
    char dir[4352];
    snprintf(dir, sizeof dir, "%s%s%s", snap, rel[0] ? "/" : "", rel);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    bool has_config = false, has_st = false;
    int  vision = -1; /* the folder's projector verdict (store/modality.h), probed at its first GGUF */
    while ((de = readdir(d))) {
        const char *nm = de->d_name;
        if (nm[0] == '.') continue;
        char p[4608], file[1024];
        struct stat st;
        if (snprintf(p, sizeof p, "%s/%s", dir, nm) >= (int)sizeof p ||
            snprintf(file, sizeof file, "%s%s%s", rel, rel[0] ? "/" : "", nm) >= (int)sizeof file ||
            stat(p, &st) != 0) /* stat follows the link: a dangling one (blob gone) is skipped */
            continue;
        if (S_ISDIR(st.st_mode)) {
            if (depth < 3) walk(c, snap, file, depth + 1);
            continue;
        }
        if (!S_ISREG(st.st_mode)) continue;
        if (!strcmp(nm, "config.json")) has_config = true;
        if (has_suffix(nm, ".safetensors")) has_st = true;
        if (!has_suffix(nm, ".gguf") || is_projector(nm)) continue;
        int index;
        size_t plen;
        int64_t size = (int64_t)st.st_size;
        bool sharded = shard_of(nm, &index, &plen);
        if (sharded) {
            if (index != 1) continue;
            /* fold the other shards' sizes into the first one's row */
            char sib[4608];
            for (int k = 2; k < 100000; k++) {
                const char *of = nm + plen + 6; /* "-of-NNNNN.gguf" */
                struct stat s2;
                if (snprintf(sib, sizeof sib, "%s/%.*s-%05d%s", dir, (int)plen, nm, k, of) >= (int)sizeof sib ||
                    stat(sib, &s2) != 0)
                    break;
                size += (int64_t)s2.st_size;
            }
        }
        if (vision < 0) {
            hearth_modality mo;
            hearth_err me = {0};
            vision = hearth_modality_probe(p, &mo, &me) == HEARTH_OK && mo.vision;
            if (mo.note[0]) hearth_log(HEARTH_LOG_WARN, "registry: %s", mo.note);
        }
        c->vision = vision > 0;
        index_model(c, p, file, true, size, mtime_ns_of(&st), sharded);
    }
    closedir(d);
    if (depth == 0 && has_config && has_st) {
        /* the change key of a safetensors snapshot: its config.json's mtime and total size */
        struct stat st;
        char cfg[4608];
        snprintf(cfg, sizeof cfg, "%s/config.json", dir);
        if (stat(cfg, &st) == 0) {
            hearth_model_facts f;
            hearth_err e;
            bool ok = hearth_facts_safetensors(dir, &f, &e) == HEARTH_OK;
            int64_t size = ok ? f.file_bytes : 0;
            c->vision = ok && (f.caps & HEARTH_CAP_VISION); /* a tower in config and weights */
            index_model(c, dir, "", false, size, mtime_ns_of(&st), false);
        }
    }
}

static void scan_repo(scan_ctx *c, const char *hub, const char *folder) {
    char repo_id[256], repo_dir[4352], snaps[4480], canon[4608];
    if (!hearth_hub_repo_id_of(folder, repo_id, sizeof repo_id)) return;
    if (c->repo_id && strcmp(c->repo_id, repo_id)) return;
    snprintf(repo_dir, sizeof repo_dir, "%s/%s", hub, folder);
    snprintf(snaps, sizeof snaps, "%s/snapshots", repo_dir);
    if (!hearth_hub_snapshot_dir(repo_dir, canon, sizeof canon)) canon[0] = 0;
    DIR *d = opendir(snaps);
    if (!d) return;
    c->stats->n_repos++;
    const char *saved = c->repo_id;
    c->repo_id = repo_id;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        char snap[4608];
        struct stat st;
        if (snprintf(snap, sizeof snap, "%s/%s", snaps, de->d_name) >= (int)sizeof snap || stat(snap, &st) != 0 ||
            !S_ISDIR(st.st_mode))
            continue;
        c->revision = de->d_name;
        c->canonical = !strcmp(snap, canon);
        walk(c, snap, "", 0);
    }
    closedir(d);
    c->repo_id = saved;
}

hearth_status hearth_registry_scan(hearth_registry *r, const char *hub_dir, const char *repo_id,
                                   hearth_scan_stats *stats, hearth_err *err) {
    hearth_scan_stats local;
    if (!stats) stats = &local;
    memset(stats, 0, sizeof *stats);
    char hub[4096];
    if (hub_dir) snprintf(hub, sizeof hub, "%s", hub_dir);
    else if (!hearth_hub_cache_dir(hub, sizeof hub))
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "hub cache path is too long");
    scan_ctx c = {.r = r, .stats = stats, .repo_id = repo_id, .now = (int64_t)time(NULL)};
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    c.gen = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    hearth_status st = HEARTH_OK;
    char sql[1024];
    if (sqlite3_exec(r->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK) return db_err(r, err, "begin");
    snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO models(%s) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
             cols);
    if (sqlite3_prepare_v2(r->db, "SELECT file_size, file_mtime_ns, canonical, caps, revision FROM models WHERE path=?",
                           -1, &c.get, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(r->db, "UPDATE models SET scan_gen=? WHERE path=?", -1, &c.touch, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(r->db, sql, -1, &c.upsert, NULL) != SQLITE_OK) {
        st = db_err(r, err, "prepare");
        goto done;
    }
    DIR *d = opendir(hub);
    if (d) {
        struct dirent *de;
        while ((de = readdir(d)))
            if (!strncmp(de->d_name, "models--", 8)) scan_repo(&c, hub, de->d_name);
        closedir(d);
    }
    sqlite3_stmt *del = NULL;
    if (sqlite3_prepare_v2(r->db, repo_id ? "DELETE FROM models WHERE scan_gen<>? AND repo_id=?"
                                          : "DELETE FROM models WHERE scan_gen<>?",
                           -1, &del, NULL) != SQLITE_OK) {
        st = db_err(r, err, "prepare");
        goto done;
    }
    sqlite3_bind_int64(del, 1, c.gen);
    if (repo_id) sqlite3_bind_text(del, 2, repo_id, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(del) != SQLITE_DONE) st = db_err(r, err, "reap");
    stats->n_removed = sqlite3_changes(r->db);
    sqlite3_finalize(del);
done:
    sqlite3_finalize(c.get);
    sqlite3_finalize(c.touch);
    sqlite3_finalize(c.upsert);
    if (st == HEARTH_OK && sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) st = db_err(r, err, "commit");
    if (st) sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
    return st;
}

/* ---- reading ------------------------------------------------------------------------------- */

static void col_text(sqlite3_stmt *s, int i, char *dst, size_t n) {
    const unsigned char *t = sqlite3_column_text(s, i);
    snprintf(dst, n, "%s", t ? (const char *)t : "");
}

static void read_row(sqlite3_stmt *s, hearth_registry_row *row) {
    memset(row, 0, sizeof *row);
    hearth_model_facts *f = &row->f;
    int i = 0;
    col_text(s, i++, row->path, sizeof row->path);
    col_text(s, i++, row->repo_id, sizeof row->repo_id);
    col_text(s, i++, row->revision, sizeof row->revision);
    col_text(s, i++, row->file, sizeof row->file);
    row->canonical = sqlite3_column_int(s, i++) != 0;
    col_text(s, i++, f->format, sizeof f->format);
    col_text(s, i++, f->arch, sizeof f->arch);
    col_text(s, i++, f->name, sizeof f->name);
    f->n_params = sqlite3_column_int64(s, i++);
    f->file_bytes = sqlite3_column_int64(s, i++);
    f->weight_bytes = sqlite3_column_int64(s, i++);
    f->weight_read_bytes = sqlite3_column_int64(s, i++);
    col_text(s, i++, f->quant, sizeof f->quant);
    f->n_ctx_train = sqlite3_column_int(s, i++);
    f->n_layer = sqlite3_column_int(s, i++);
    f->n_layer_swa = sqlite3_column_int(s, i++);
    f->n_swa = sqlite3_column_int(s, i++);
    f->n_vocab = sqlite3_column_int(s, i++);
    f->kv_bytes_per_token = sqlite3_column_int64(s, i++);
    f->kv_swa_bytes_per_token = sqlite3_column_int64(s, i++);
    f->act_bytes_per_token = sqlite3_column_int64(s, i++);
    char caps[128];
    col_text(s, i++, caps, sizeof caps);
    f->caps = hearth_facts_caps_parse(caps);
    col_text(s, i++, f->license, sizeof f->license);
    row->scanned_at = sqlite3_column_int64(s, i++);
    i += 3; /* file_size, file_mtime_ns, scan_gen */
    col_text(s, i++, row->error, sizeof row->error);
}

hearth_status hearth_registry_list(hearth_registry *r, const hearth_registry_filter *filter,
                                   hearth_registry_row **rows, size_t *n, hearth_err *err) {
    *rows = NULL;
    *n = 0;
    hearth_registry_filter none = {0};
    if (!filter) filter = &none;
    char sql[1024];
    snprintf(sql, sizeof sql, "SELECT %s FROM models%s ORDER BY repo_id COLLATE NOCASE, file, revision", cols,
             filter->all_revisions ? "" : " WHERE canonical=1");
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(r->db, sql, -1, &s, NULL) != SQLITE_OK) return db_err(r, err, "list");
    size_t cap = 0;
    hearth_status st = HEARTH_OK;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        hearth_registry_row row;
        read_row(s, &row);
        char label[512];
        snprintf(label, sizeof label, "%s/%s", row.repo_id, row.file);
        if (filter->query && !hearth_hub_match(label, filter->query)) continue;
        if (filter->max_bytes > 0 && row.f.file_bytes > filter->max_bytes) continue;
        if ((row.f.caps & filter->caps) != filter->caps) continue;
        if (*n == cap && !hearth_buf_grow(rows, &cap, *n + 1, sizeof **rows, 16)) {
            st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
            break;
        }
        (*rows)[(*n)++] = row;
    }
    if (st == HEARTH_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) st = db_err(r, err, "list");
    sqlite3_finalize(s);
    if (st) {
        free(*rows);
        *rows = NULL;
        *n = 0;
    }
    return st;
}

hearth_status hearth_registry_resolve(hearth_registry *r, const char *query, hearth_registry_row *out,
                                      hearth_err *err) {
    hearth_registry_filter f = {.query = query};
    hearth_registry_row *rows;
    size_t n;
    hearth_status st = hearth_registry_list(r, &f, &rows, &n, err);
    if (st) return st;
    /* exact names first: "org/name/file" or the repo id of a one-model repo */
    size_t exact = n, n_exact = 0;
    for (size_t i = 0; i < n; i++) {
        char label[512];
        snprintf(label, sizeof label, "%s/%s", rows[i].repo_id, rows[i].file);
        if (!strcasecmp(label, query) || !strcasecmp(rows[i].repo_id, query)) {
            exact = i;
            n_exact++;
        }
    }
    if (n_exact == 1) {
        *out = rows[exact];
    } else if (n == 1) {
        *out = rows[0];
    } else if (n == 0) {
        st = hearth_err_set(err, HEARTH_E_NOTFOUND, -1, "no model matches '%s' (try 'hearth ls', or 'hearth scan')",
                            query);
    } else {
        char list[200] = {0};
        size_t off = 0;
        for (size_t i = 0; i < n && off < sizeof list; i++) {
            int w = snprintf(list + off, sizeof list - off, "%s%s%s%s", i ? ", " : "", rows[i].repo_id,
                             rows[i].file[0] ? "/" : "", rows[i].file);
            if (w < 0) break;
            off += (size_t)w;
        }
        st = hearth_err_set(err, HEARTH_E_AMBIGUOUS, -1, "'%s' matches %zu models: %s", query, n, list);
    }
    free(rows);
    return st;
}
