/* log.c - the log sink. Messages are formatted into a stack buffer, one call per line. */
#include "base/log.h"

#include <stdarg.h>
#include <stdio.h>

static hearth_log_sink  log_sink;  /* NULL: default sink */
static void            *log_user;
static hearth_log_level log_level = HEARTH_LOG_WARN;

void hearth_log_set_sink(hearth_log_sink sink, void *user) {
    log_sink = sink;
    log_user = user;
}

void hearth_log_set_level(hearth_log_level level) { log_level = level; }
hearth_log_level hearth_log_get_level(void) { return log_level; }

void hearth_log(hearth_log_level level, const char *fmt, ...) {
    if (level < log_level) return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (log_sink) {
        log_sink(level, buf, log_user);
        return;
    }
    static const char *names[] = {"debug", "info", "warn", "error", ""};
    fprintf(stderr, "hearth %s: %s\n", names[level < HEARTH_LOG_NONE ? level : HEARTH_LOG_NONE], buf);
}
