/*
 * statedb.h - opening one of hearth's SQLite state files (the registry, the evals database).
 *
 * Both keep their file in the state directory unless a path is given, create that directory,
 * wait up to 5 s on a lock held by another hearth, and version their schema with PRAGMA
 * user_version. What differs (the schema, what an old version means) stays with each.
 */
#ifndef HEARTH_STORE_STATEDB_H
#define HEARTH_STORE_STATEDB_H

#include "base/status.h"

#include <sqlite3.h>
#include <stddef.h>

/* Open db_path, or `name` in the state directory when db_path is NULL, creating the file and
 * its directory; `path` (cap bytes) gets the path used, *db the handle, *version the file's
 * user_version (0 for a new file). `what` names the database in errors ("registry"). On
 * failure nothing stays open. */
hearth_status hearth_statedb_open(const char *db_path, const char *name, const char *what, char *path, size_t cap,
                                  sqlite3 **db, int *version, hearth_err *err);

/* Run sql inside BEGIN IMMEDIATE ... PRAGMA user_version=version; COMMIT, rolled back on failure. */
hearth_status hearth_statedb_migrate(sqlite3 *db, const char *what, const char *path, const char *sql, int version,
                                     hearth_err *err);

#endif
