/*
 * statedb.c - opening hearth's SQLite state files; see statedb.h.
 */
#include "store/statedb.h"

#include "store/hub.h"

#include <stdio.h>
#include <string.h>

static int user_version(sqlite3 *db) {
    sqlite3_stmt *st;
    int v = -1;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return v;
}

hearth_status hearth_statedb_open(const char *db_path, const char *name, const char *what, char *path, size_t cap,
                                  sqlite3 **db, int *version, hearth_err *err) {
    *db = NULL;
    char dir[4096];
    hearth_status st;
    if (db_path) {
        if (snprintf(path, cap, "%s", db_path) >= (int)cap)
            return hearth_err_set(err, HEARTH_E_INVALID, -1, "%s path is too long", what);
    } else if (!hearth_hub_state_dir(dir, sizeof dir) || snprintf(path, cap, "%s/%s", dir, name) >= (int)cap) {
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "the hearth state directory path is too long");
    }
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        if ((st = hearth_hub_mkdirs(dir, err))) return st;
    }
    if (sqlite3_open_v2(path, db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        st = hearth_err_set(err, HEARTH_E_IO, -1, "%s %s: open: %s", what, path,
                            *db ? sqlite3_errmsg(*db) : "out of memory");
        goto fail;
    }
    sqlite3_busy_timeout(*db, 5000);
    if ((*version = user_version(*db)) < 0) {
        st = hearth_err_set(err, HEARTH_E_IO, -1, "%s %s: read the schema version: %s", what, path,
                            sqlite3_errmsg(*db));
        goto fail;
    }
    return HEARTH_OK;
fail:
    sqlite3_close(*db);
    *db = NULL;
    return st;
}

hearth_status hearth_statedb_migrate(sqlite3 *db, const char *what, const char *path, const char *sql, int version,
                                     hearth_err *err) {
    char buf[4096];
    if (snprintf(buf, sizeof buf, "BEGIN IMMEDIATE; %s PRAGMA user_version=%d; COMMIT;", sql, version) >=
        (int)sizeof buf)
        return hearth_err_set(err, HEARTH_E_INVALID, -1, "%s: schema text too long", what);
    if (sqlite3_exec(db, buf, NULL, NULL, NULL) == SQLITE_OK) return HEARTH_OK;
    hearth_status st = hearth_err_set(err, HEARTH_E_IO, -1, "%s %s: create the schema: %s", what, path,
                                      sqlite3_errmsg(db));
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return st;
}
