/*
 * log.h - leveled logging through a replaceable sink.
 *
 * Library code never prints: it calls hearth_log and the sink decides (the CLI's sink writes
 * to stderr; tests install one that captures). The sink and level are the only mutable
 * globals in the library (STYLE 2.6); set them before threads start. Any thread may log.
 */
#pragma once

typedef enum {
    HEARTH_LOG_DEBUG = 0,
    HEARTH_LOG_INFO  = 1,
    HEARTH_LOG_WARN  = 2,
    HEARTH_LOG_ERROR = 3,
    HEARTH_LOG_NONE  = 4,
} hearth_log_level;

typedef void (*hearth_log_sink)(hearth_log_level level, const char *msg, void *user);

/* Install a sink (NULL: the default, stderr with a level prefix) and its user pointer. */
void hearth_log_set_sink(hearth_log_sink sink, void *user);
/* Messages below level are dropped before formatting. Default: HEARTH_LOG_WARN. */
void hearth_log_set_level(hearth_log_level level);
hearth_log_level hearth_log_get_level(void);

void hearth_log(hearth_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
