/*
 * evals.c - the evals database; see evals.h.
 *
 * One table, append-only from hearth's side. Text columns are bound as given and read back
 * into the row's fixed buffers (truncated to fit); numbers are stored as SQLite INTEGER/REAL.
 */
#include "store/evals.h"

#include "store/statedb.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/buf.h"

struct hearth_evals {
    sqlite3 *db;
    char     path[4096];
};

static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS evals("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, created_at INTEGER NOT NULL, kind TEXT NOT NULL,"
    " model TEXT NOT NULL, model_path TEXT NOT NULL, version TEXT NOT NULL, cpu TEXT NOT NULL,"
    " kernels TEXT NOT NULL, levers TEXT NOT NULL, threads INTEGER NOT NULL,"
    " prompt_tokens INTEGER NOT NULL, gen_tokens INTEGER NOT NULL, runs INTEGER NOT NULL,"
    " prefill_tok_s REAL NOT NULL, decode_tok_s REAL NOT NULL, peak_rss_bytes INTEGER NOT NULL,"
    " load_avg REAL NOT NULL);";

static const char cols[] =
    "id, created_at, kind, model, model_path, version, cpu, kernels, levers, threads,"
    " prompt_tokens, gen_tokens, runs, prefill_tok_s, decode_tok_s, peak_rss_bytes, load_avg";

static hearth_status db_err(hearth_evals *e, hearth_err *err, const char *what) {
    return hearth_err_set(err, HEARTH_E_IO, -1, "evals %s: %s: %s", e->path, what, sqlite3_errmsg(e->db));
}

hearth_status hearth_evals_open(const char *db_path, hearth_evals **out, hearth_err *err) {
    *out = NULL;
    hearth_evals *e = calloc(1, sizeof *e);
    if (!e) return hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
    int v;
    hearth_status st = hearth_statedb_open(db_path, "evals.sqlite", "evals", e->path, sizeof e->path, &e->db, &v, err);
    if (st) {
        free(e);
        return st;
    }
    if (v > HEARTH_EVALS_SCHEMA) {
        st = hearth_err_set(err, HEARTH_E_UNSUPPORTED, -1,
                            "evals %s has schema %d, newer than this build's %d: use a newer hearth", e->path, v,
                            HEARTH_EVALS_SCHEMA);
        goto fail;
    }
    if (v < HEARTH_EVALS_SCHEMA &&
        (st = hearth_statedb_migrate(e->db, "evals", e->path, schema_sql, HEARTH_EVALS_SCHEMA, err)))
        goto fail;
    *out = e;
    return HEARTH_OK;
fail:
    sqlite3_close(e->db);
    free(e);
    return st;
}

void hearth_evals_close(hearth_evals *e) {
    if (!e) return;
    sqlite3_close(e->db);
    free(e);
}

const char *hearth_evals_path(const hearth_evals *e) { return e->path; }

hearth_status hearth_evals_add(hearth_evals *e, hearth_eval_row *row, hearth_err *err) {
    char sql[512];
    snprintf(sql, sizeof sql, "INSERT INTO evals(%s) VALUES(NULL,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", cols);
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(e->db, sql, -1, &s, NULL) != SQLITE_OK) return db_err(e, err, "prepare insert");
    if (row->created_at == 0) row->created_at = (int64_t)time(NULL);
    int i = 1;
    sqlite3_bind_int64(s, i++, row->created_at);
    const char *texts[] = {row->kind, row->model, row->model_path, row->version, row->cpu, row->kernels, row->levers};
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) sqlite3_bind_text(s, i++, texts[k], -1, SQLITE_STATIC);
    sqlite3_bind_int(s, i++, row->threads);
    sqlite3_bind_int(s, i++, row->prompt_tokens);
    sqlite3_bind_int(s, i++, row->gen_tokens);
    sqlite3_bind_int(s, i++, row->runs);
    sqlite3_bind_double(s, i++, row->prefill_tok_s);
    sqlite3_bind_double(s, i++, row->decode_tok_s);
    sqlite3_bind_int64(s, i++, row->peak_rss_bytes);
    sqlite3_bind_double(s, i++, row->load_avg);
    hearth_status st = HEARTH_OK;
    if (sqlite3_step(s) != SQLITE_DONE) st = db_err(e, err, "insert");
    else row->id = sqlite3_last_insert_rowid(e->db);
    sqlite3_finalize(s);
    return st;
}

static void col_text(sqlite3_stmt *s, int i, char *dst, size_t n) {
    const unsigned char *t = sqlite3_column_text(s, i);
    snprintf(dst, n, "%s", t ? (const char *)t : "");
}

hearth_status hearth_evals_clear(hearth_evals *e, int64_t *n_deleted, hearth_err *err) {
    if (sqlite3_exec(e->db, "DELETE FROM evals", NULL, NULL, NULL) != SQLITE_OK) return db_err(e, err, "delete");
    if (n_deleted) *n_deleted = sqlite3_changes(e->db);
    return HEARTH_OK;
}

hearth_status hearth_evals_list(hearth_evals *e, int64_t limit, hearth_eval_row **rows, size_t *n,
                                hearth_err *err) {
    *rows = NULL;
    *n = 0;
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT %s FROM evals ORDER BY id DESC LIMIT ?", cols);
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(e->db, sql, -1, &s, NULL) != SQLITE_OK) return db_err(e, err, "prepare select");
    sqlite3_bind_int64(s, 1, limit > 0 ? limit : -1);
    hearth_eval_row *out = NULL;
    size_t len = 0, cap = 0;
    hearth_status st = HEARTH_OK;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (len == cap && !hearth_buf_grow(&out, &cap, len + 1, sizeof *out, 16)) {
            st = hearth_err_set(err, HEARTH_E_NOMEM, -1, "out of memory");
            goto done;
        }
        hearth_eval_row *r = &out[len++];
        memset(r, 0, sizeof *r);
        int i = 0;
        r->id = sqlite3_column_int64(s, i++);
        r->created_at = sqlite3_column_int64(s, i++);
        col_text(s, i++, r->kind, sizeof r->kind);
        col_text(s, i++, r->model, sizeof r->model);
        col_text(s, i++, r->model_path, sizeof r->model_path);
        col_text(s, i++, r->version, sizeof r->version);
        col_text(s, i++, r->cpu, sizeof r->cpu);
        col_text(s, i++, r->kernels, sizeof r->kernels);
        col_text(s, i++, r->levers, sizeof r->levers);
        r->threads = sqlite3_column_int(s, i++);
        r->prompt_tokens = sqlite3_column_int(s, i++);
        r->gen_tokens = sqlite3_column_int(s, i++);
        r->runs = sqlite3_column_int(s, i++);
        r->prefill_tok_s = sqlite3_column_double(s, i++);
        r->decode_tok_s = sqlite3_column_double(s, i++);
        r->peak_rss_bytes = sqlite3_column_int64(s, i++);
        r->load_avg = sqlite3_column_double(s, i++);
    }
    if (rc != SQLITE_DONE) st = db_err(e, err, "select");
done:
    sqlite3_finalize(s);
    if (st) {
        free(out);
        return st;
    }
    *rows = out;
    *n = len;
    return HEARTH_OK;
}
