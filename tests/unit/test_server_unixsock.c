/*
 * test_server_unixsock.c - unix-domain listening sockets (server/unixsock.h): created with
 * mode 0600 and reachable; a live socket, a regular file and a too-long path are refused with
 * an error naming them, leaving them as they were; a stale socket (its server gone) is taken
 * over.
 */
#include "server/unixsock.h"
#include "test.h"

#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[64];

static void tmp_path(char *out, size_t cap, const char *name) {
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/hearth-unixsock-XXXXXX");
        if (!mkdtemp(dir)) dir[0] = 0;
    }
    snprintf(out, cap, "%s/%s", dir, name);
}

TEST(listen_is_private_and_reachable) {
    char p[128];
    tmp_path(p, sizeof p, "a.sock");
    hearth_err err = {0};
    int fd = hearth_unix_listen(p, &err);
    CHECK(fd >= 0);
    struct stat st;
    CHECK(stat(p, &st) == 0 && S_ISSOCK(st.st_mode));
    CHECK_EQ(st.st_mode & 0777, 0600);
    int c = hearth_unix_connect(p);
    CHECK(c >= 0);
    int a = accept(fd, NULL, NULL);
    CHECK(a >= 0);
    CHECK_EQ(send(c, "hi", 2, 0), 2);
    char b[4] = {0};
    CHECK_EQ(recv(a, b, sizeof b, 0), 2);
    CHECK(!strcmp(b, "hi"));
    /* a second server on the live socket is refused, and the first keeps it */
    int fd2 = hearth_unix_listen(p, &err);
    CHECK_EQ(fd2, -1);
    CHECK_EQ(err.code, HEARTH_E_IO);
    CHECK(strstr(err.msg, "already listening") && strstr(err.msg, p));
    int c2 = hearth_unix_connect(p);
    CHECK(c2 >= 0);
    close(c2);
    close(a);
    close(c);
    close(fd);
    unlink(p);
}

TEST(stale_socket_is_taken_over) {
    char p[128];
    tmp_path(p, sizeof p, "stale.sock");
    hearth_err err = {0};
    int fd = hearth_unix_listen(p, &err);
    CHECK(fd >= 0);
    close(fd); /* the server died: the file stays, nobody answers */
    CHECK(access(p, F_OK) == 0);
    CHECK_EQ(hearth_unix_connect(p), -1);
    fd = hearth_unix_listen(p, &err);
    CHECK(fd >= 0);
    int c = hearth_unix_connect(p);
    CHECK(c >= 0);
    close(c);
    close(fd);
    unlink(p);
}

TEST(refuses_a_file_and_a_long_path) {
    char p[128];
    tmp_path(p, sizeof p, "file");
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("keep", f);
        fclose(f);
    }
    hearth_err err = {0};
    CHECK_EQ(hearth_unix_listen(p, &err), -1);
    CHECK_EQ(err.code, HEARTH_E_INVALID);
    CHECK(strstr(err.msg, "not a socket") && strstr(err.msg, p));
    struct stat st;
    CHECK(stat(p, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 4);
    unlink(p);
    char longp[300];
    memset(longp, 'x', sizeof longp - 1);
    longp[0] = '/';
    longp[sizeof longp - 1] = 0;
    CHECK_EQ(hearth_unix_listen(longp, &err), -1);
    CHECK_EQ(err.code, HEARTH_E_INVALID);
    CHECK(strstr(err.msg, "longer than"));
    CHECK_EQ(hearth_unix_connect(longp), -1);
}

int main(int argc, char **argv) {
    int rc = test_main(argc, argv);
    if (dir[0]) rmdir(dir);
    return rc;
}
