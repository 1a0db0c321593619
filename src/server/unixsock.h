/*
 * unixsock.h - unix-domain stream sockets: the listening socket of `serve --unix PATH`, and
 * the client side the isolating proxy uses to reach its engine children (proxy.h).
 *
 * A listening socket is created with mode 0600 (only this user's processes may connect: the
 * file's permissions are the whole access control of a unix socket, so the API key and the
 * Host / Origin checks of TCP are not what guards it). A path that already exists is taken
 * over only when it is a socket nobody answers on (a stale one left by a killed server); a
 * live socket or any other file is refused with an error naming it.
 *
 * Thread rule: any thread; no state.
 */
#pragma once
#include <stdbool.h>

#include "base/status.h"

/* The longest path a sockaddr_un holds (its sun_path, less the NUL). */
#define HEARTH_UNIX_PATH_MAX 107

/* Bind and listen on path (mode 0600); returns the socket (close-on-exec) or -1 with err set
 * (HEARTH_E_INVALID: path too long or not a stale socket; HEARTH_E_IO: in use or not bindable). */
int hearth_unix_listen(const char *path, hearth_err *err);
/* Connect to path; the socket (close-on-exec, blocking) or -1 (errno says why). */
int hearth_unix_connect(const char *path);
