/*
 * stop.h - stop strings matched on decoded text, across token boundaries (OpenAI `stop`).
 *
 * Text arrives piece by piece as tokens decode. A stop string may begin in one piece and end
 * several pieces later, so the matcher holds back the longest tail of what it has seen that is
 * still the start of some stop string, and releases it once it can no longer be one. When a
 * stop string completes, everything before it is released and the stop text itself is not
 * (OpenAI and mlx_lm.server exclude it). With several stop strings the first to complete
 * wins (a generation would have ended there), whatever the piece boundaries. With no stop strings text passes through uncopied.
 *
 * Held-back text always begins where a stop string begins, so with valid UTF-8 stop strings
 * and whole-character input the released text never splits a character.
 *
 * Thread rule: one matcher per request, one thread at a time.
 */
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "base/span.h"
#include "base/status.h"

#define HEARTH_STOP_MAX 16          /* stop strings per request */
#define HEARTH_STOP_MAX_BYTES 1024  /* bytes of one stop string */

typedef struct {
    hearth_span stops[HEARTH_STOP_MAX]; /* borrowed: must outlive the matcher */
    int         n_stops;
    char       *held;       /* owned: text not yet released, [n_held) */
    size_t      n_held, cap, n_released; /* n_released: front of held already handed out */
    bool        stopped;    /* a stop string was found; later pushes release nothing */
    int         hit;        /* stopped: the index in stops[] of the string that matched, else -1 */
} hearth_stop;

/* Set up a matcher over stops[0..n) (borrowed). Empty strings are ignored. HEARTH_E_LIMIT when
 * n > HEARTH_STOP_MAX or a string is longer than HEARTH_STOP_MAX_BYTES. */
hearth_status hearth_stop_init(hearth_stop *s, const hearth_span *stops, int n);
void          hearth_stop_fini(hearth_stop *s);

/* Feed text[0..n). *out gets the text that is now final (valid until the next call). Returns
 * true when a stop string completed: *out is then the text before it, and the caller ends
 * the generation. */
bool        hearth_stop_push(hearth_stop *s, const char *text, size_t n, hearth_span *out);
/* The generation ended without a stop: the held-back text (valid until the next call). */
hearth_span hearth_stop_flush(hearth_stop *s);
