/*
 * unixsock.c - unix-domain listening and connecting sockets (unixsock.h).
 *
 * The mode is set by umask around bind(2) rather than chmod after it, so there is no moment
 * when the socket exists with wider permissions.
 */
#include "server/unixsock.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static bool fill(struct sockaddr_un *a, const char *path) {
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    size_t n = strlen(path);
    if (!n || n > HEARTH_UNIX_PATH_MAX) return false;
    memcpy(a->sun_path, path, n);
    return true;
}

int hearth_unix_connect(const char *path) {
    struct sockaddr_un a;
    if (!fill(&a, path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int hearth_unix_listen(const char *path, hearth_err *err) {
    struct sockaddr_un a;
    if (!fill(&a, path)) {
        hearth_err_set(err, HEARTH_E_INVALID, -1, "the unix socket path '%.200s' is empty or longer than %d bytes",
                       path, HEARTH_UNIX_PATH_MAX);
        return -1;
    }
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            hearth_err_set(err, HEARTH_E_INVALID, -1, "'%.200s' exists and is not a socket (pick another --unix path)",
                           path);
            return -1;
        }
        int probe = hearth_unix_connect(path);
        if (probe >= 0) {
            close(probe);
            hearth_err_set(err, HEARTH_E_IO, -1, "a server is already listening on the unix socket '%.200s'", path);
            return -1;
        }
        unlink(path); /* stale: its server is gone */
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        hearth_err_set(err, HEARTH_E_IO, -1, "cannot create a unix socket: %s", strerror(errno));
        return -1;
    }
    mode_t old = umask(0177);
    int rc = bind(fd, (struct sockaddr *)&a, sizeof a);
    int e = errno;
    umask(old);
    if (rc != 0 || listen(fd, 128) != 0) {
        if (rc == 0) e = errno;
        close(fd);
        hearth_err_set(err, HEARTH_E_IO, -1, "cannot listen on the unix socket '%.200s': %s", path, strerror(e));
        return -1;
    }
    return fd;
}
