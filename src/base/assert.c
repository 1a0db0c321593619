/* assert.c - the abort hook behind HEARTH_ASSERT. */
#include "base/assert.h"

#include <stdio.h>
#include <stdlib.h>

static hearth_abort_fn abort_hook; /* process-wide, set before threads start */

void hearth_set_abort_hook(hearth_abort_fn fn) { abort_hook = fn; }

_Noreturn void hearth_abort(const char *file, int line, const char *expr) {
    if (abort_hook) abort_hook(file, line, expr);
    fprintf(stderr, "hearth: assertion failed at %s:%d: %s\n", file, line, expr);
    abort();
}
