/*
 * wire.h - locking a model's weights in RAM (mlock), the --force-wire lever.
 *
 * A model's weights live in its file mapping; under memory pressure the kernel may drop
 * their pages and read them back on the next step. Wiring keeps them resident. The lock is
 * RLIMIT_MEMLOCK-bound for unprivileged processes: a failure says so with the limit and what
 * it would take, and leaves nothing locked.
 */
#pragma once
#include <stdbool.h>

#include "base/status.h"
#include "model/model.h"

/* on: mlock every weight's bytes (the norm vectors are small heap copies and stay as they
 * are); off: munlock them (err may be NULL). */
hearth_status hearth_model_wire(const hearth_model *m, bool on, hearth_err *err);
