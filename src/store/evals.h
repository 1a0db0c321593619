/*
 * evals.h - the evals database: one SQLite row per measured run (`hearth benchmark` today), at
 * ${XDG_CACHE_HOME:-~/.cache}/hearth/evals.sqlite by default.
 *
 * Unlike the registry (a derived cache that is rebuilt at will), these rows are a record: a
 * schema this build does not know is refused, never dropped. Version 1 is the table below;
 * later versions may only add columns (ALTER TABLE ... ADD COLUMN), so old rows stay readable.
 *
 * Thread rule: a handle belongs to one thread at a time; several processes may share the file
 * (SQLite locking, 5 s busy timeout).
 */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

typedef struct hearth_evals hearth_evals;

#define HEARTH_EVALS_SCHEMA 1

typedef struct {
    int64_t id;              /* assigned by add; ignored on input */
    int64_t created_at;      /* unix seconds; 0 on input: now */
    char    kind[32];        /* "benchmark" */
    char    model[256];      /* what the user named (a query or a path) */
    char    model_path[1024];/* the file that ran */
    char    version[32];     /* hearth version */
    char    cpu[128];        /* the CPU model name */
    char    kernels[16];     /* the kernel set (ref, scalar, avx2, avx512) */
    char    levers[256];     /* the speed levers that were active, "name=value" separated by spaces */
    int32_t threads;
    int32_t prompt_tokens;   /* per run */
    int32_t gen_tokens;      /* per run */
    int32_t runs;
    double  prefill_tok_s;   /* medians over the runs */
    double  decode_tok_s;
    int64_t peak_rss_bytes;  /* of the process that measured */
    double  load_avg;        /* 1-minute load average when the run started (shared machines) */
} hearth_eval_row;

/* Open (creating the file, its directory and the table) the database at db_path; NULL: the
 * default path. HEARTH_E_UNSUPPORTED when the file has a schema newer than this build's. */
hearth_status hearth_evals_open(const char *db_path, hearth_evals **out, hearth_err *err);
void          hearth_evals_close(hearth_evals *e); /* accepts NULL */
const char   *hearth_evals_path(const hearth_evals *e);

/* Append a row; row->id and row->created_at (when 0) are filled in. */
hearth_status hearth_evals_add(hearth_evals *e, hearth_eval_row *row, hearth_err *err);

/* The newest rows first, at most limit (<= 0: all). *rows is malloc'ed (free() it), NULL when
 * *n is 0. */
/* Delete every recorded run; *n_deleted (may be NULL) says how many there were. */
hearth_status hearth_evals_clear(hearth_evals *e, int64_t *n_deleted, hearth_err *err);
hearth_status hearth_evals_list(hearth_evals *e, int64_t limit, hearth_eval_row **rows, size_t *n,
                                hearth_err *err);
