/* lock.c - flock-held lock files that survive a crash; see lock.h. */
#include "store/lock.h"

#include "store/hub.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

static int read_pid(int fd) {
    char buf[32] = {0};
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0) return 0;
    long v = strtol(buf, NULL, 10);
    return v > 0 && v < (1L << 30) ? (int)v : 0;
}

hearth_lock_result hearth_lock_acquire(const char *path, bool shared, int wait_ms, hearth_lock *out,
                                       int *other_pid, hearth_err *err) {
    out->fd = -1;
    if (other_pid) *other_pid = 0;
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = 0;
        if (hearth_hub_mkdirs(dir, err)) return HEARTH_LOCK_ERROR;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        hearth_err_set(err, HEARTH_E_IO, -1, "cannot open lock %s: %s", path, strerror(errno));
        return HEARTH_LOCK_ERROR;
    }
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (flock(fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) == 0) break;
        if (errno != EWOULDBLOCK && errno != EINTR) {
            hearth_err_set(err, HEARTH_E_IO, -1, "cannot lock %s: %s", path, strerror(errno));
            close(fd);
            return HEARTH_LOCK_ERROR;
        }
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        double waited_ms = (double)(t.tv_sec - t0.tv_sec) * 1e3 + (double)(t.tv_nsec - t0.tv_nsec) / 1e6;
        if (waited_ms >= wait_ms) {
            if (other_pid) *other_pid = read_pid(fd);
            close(fd);
            return HEARTH_LOCK_BUSY;
        }
        struct timespec nap = {0, 20 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    out->fd = fd;
    if (shared) return HEARTH_LOCK_TAKEN; /* shared holders leave the file alone */
    /* A free lock that still names a pid: its holder died without releasing. */
    int prev = read_pid(fd);
    char buf[32];
    int len = snprintf(buf, sizeof buf, "%d\n", (int)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, buf, (size_t)len, 0) != len) { /* the hold is what counts */ }
    if (prev > 0 && prev != (int)getpid()) {
        /* Its holder is dead (or the pid was reused since): the kernel dropped the hold. */
        if (other_pid) *other_pid = prev;
        return HEARTH_LOCK_STOLEN;
    }
    return HEARTH_LOCK_TAKEN;
}

void hearth_lock_release(hearth_lock *l) {
    if (l->fd < 0) return;
    /* Only an exclusive holder wrote its pid; truncating under a shared hold is harmless
     * because shared holders never write. */
    if (flock(l->fd, LOCK_EX | LOCK_NB) == 0 && ftruncate(l->fd, 0) != 0) { /* nothing to do */ }
    flock(l->fd, LOCK_UN);
    close(l->fd);
    l->fd = -1;
}

bool hearth_lock_is_held(const char *path, int *pid) {
    if (pid) *pid = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool held = flock(fd, LOCK_EX | LOCK_NB) != 0;
    if (!held) flock(fd, LOCK_UN);
    else if (pid) *pid = read_pid(fd);
    close(fd);
    return held;
}
