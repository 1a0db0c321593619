/*
 * assert.h - always-on invariant checks (STYLE 2.5, ggml's GGML_ASSERT).
 *
 * HEARTH_ASSERT(x) is for what is proven: on failure it reports file/line and calls the abort
 * hook (default: abort()). HEARTH_DASSERT is the same, compiled out unless HEARTH_DEBUG is set,
 * for hot paths. HEARTH_ALWAYS/HEARTH_NEVER mark what is believed but still handled: they
 * evaluate to the condition in release builds and assert in debug ones.
 */
#pragma once

typedef void (*hearth_abort_fn)(const char *file, int line, const char *expr);

/* Replace the abort hook (NULL restores the default). Process-wide; set it before threads start. */
void hearth_set_abort_hook(hearth_abort_fn fn);
_Noreturn void hearth_abort(const char *file, int line, const char *expr);

#define HEARTH_ASSERT(x) \
    do { if (__builtin_expect(!(x), 0)) hearth_abort(__FILE__, __LINE__, #x); } while (0)
#ifdef HEARTH_DEBUG
#define HEARTH_DASSERT(x) HEARTH_ASSERT(x)
#define HEARTH_ALWAYS(x) ((x) ? 1 : (hearth_abort(__FILE__, __LINE__, #x), 0))
#define HEARTH_NEVER(x)  ((x) ? (hearth_abort(__FILE__, __LINE__, "!(" #x ")"), 1) : 0)
#else
#define HEARTH_DASSERT(x) ((void)0)
#define HEARTH_ALWAYS(x) (x)
#define HEARTH_NEVER(x)  (x)
#endif
