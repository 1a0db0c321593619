/* status.c - names of status codes and the error record helpers. */
#include "base/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *hearth_status_str(hearth_status s) {
    switch (s) {
    case HEARTH_OK:            return "ok";
    case HEARTH_E_IO:          return "i/o error";
    case HEARTH_E_FORMAT:      return "format error";
    case HEARTH_E_NOMEM:       return "out of memory";
    case HEARTH_E_DEVICE:      return "device error";
    case HEARTH_E_LIMIT:       return "limit exceeded";
    case HEARTH_E_INVALID:     return "invalid argument";
    case HEARTH_E_CANCELLED:   return "cancelled";
    case HEARTH_E_NOTFOUND:    return "not found";
    case HEARTH_E_UNSUPPORTED: return "unsupported";
    case HEARTH_E_AMBIGUOUS:   return "ambiguous";
    case HEARTH_E_TIMEOUT:     return "timed out";
    case HEARTH_E_BUSY:        return "busy";
    case HEARTH_E_DENIED:      return "not authorized";
    case HEARTH_E_NOT_ALLOWED: return "operation not allowed";
    case HEARTH_E_TOO_LARGE:   return "too large";
    case HEARTH_E_MEDIA_TYPE:  return "unsupported media type";
    case HEARTH_E_NOT_IMPLEMENTED: return "not implemented";
    case HEARTH_E_FORBIDDEN:   return "forbidden";
    }
    return "unknown error";
}

hearth_status hearth_err_set(hearth_err *err, hearth_status code, int64_t pos, const char *fmt, ...) {
    if (err) {
        err->code = code;
        err->pos = pos;
        err->line = err->col = 0;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

void hearth_err_clear(hearth_err *err) {
    if (err) memset(err, 0, sizeof *err);
}
