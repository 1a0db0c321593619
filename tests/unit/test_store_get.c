/*
 * test_store_get.c - the pieces under `hearth get`: lock files (held, stale and stolen, shared
 * against exclusive, across processes), the digests the hub publishes, the revision reply
 * parser with hostile file names, URLs. The transfers themselves are tested end to end
 * against a loopback hub in tests/e2e/test_store.py.
 */
#include "test.h"
#include "store_cache.h"

#include "store/digest.h"
#include "store/get.h"
#include "store/hubapi.h"
#include "store/lock.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

TEST(lock_exclusive_and_release) {
    char dir[512], path[600];
    sc_tmpdir(dir, sizeof dir, "lock");
    snprintf(path, sizeof path, "%s/.locks/models--a--b/blob.lock", dir);
    hearth_lock a, b;
    int pid = -1;
    CHECK_EQ(hearth_lock_acquire(path, false, 0, &a, &pid, NULL), HEARTH_LOCK_TAKEN);
    CHECK_EQ(pid, 0);
    CHECK(hearth_lock_is_held(path, &pid));
    CHECK_EQ(pid, getpid());
    /* a second holder in this process is refused too: holds are per open file */
    CHECK_EQ(hearth_lock_acquire(path, false, 50, &b, &pid, NULL), HEARTH_LOCK_BUSY);
    CHECK_EQ(pid, getpid());
    CHECK_EQ(b.fd, -1);
    hearth_lock_release(&a);
    CHECK(!hearth_lock_is_held(path, NULL));
    CHECK(sc_exists(path)); /* released, not removed */
    CHECK_EQ(hearth_lock_acquire(path, false, 0, &b, &pid, NULL), HEARTH_LOCK_TAKEN); /* clean: not stolen */
    hearth_lock_release(&b);
    hearth_lock_release(&b); /* harmless twice */
    /* shared holders coexist; an exclusive taker waits for them */
    CHECK_EQ(hearth_lock_acquire(path, true, 0, &a, NULL, NULL), HEARTH_LOCK_TAKEN);
    CHECK_EQ(hearth_lock_acquire(path, true, 0, &b, NULL, NULL), HEARTH_LOCK_TAKEN);
    hearth_lock c;
    CHECK_EQ(hearth_lock_acquire(path, false, 0, &c, NULL, NULL), HEARTH_LOCK_BUSY);
    hearth_lock_release(&a);
    hearth_lock_release(&b);
    CHECK_EQ(hearth_lock_acquire(path, false, 0, &c, NULL, NULL), HEARTH_LOCK_TAKEN);
    hearth_lock_release(&c);
    CHECK(!hearth_lock_is_held("/nonexistent/x.lock", NULL));
    sc_rmrf(dir);
}

TEST(lock_of_a_dead_process_is_stolen) {
    char dir[512], path[600];
    sc_tmpdir(dir, sizeof dir, "lock");
    snprintf(path, sizeof path, "%s/x.lock", dir);
    pid_t child = fork();
    if (child == 0) { /* take the lock and die holding it, as a crash would */
        hearth_lock l;
        _exit(hearth_lock_acquire(path, false, 0, &l, NULL, NULL) == HEARTH_LOCK_TAKEN ? 0 : 1);
    }
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(sc_exists(path));
    CHECK(!hearth_lock_is_held(path, NULL));
    hearth_lock l;
    int pid = 0;
    CHECK_EQ(hearth_lock_acquire(path, false, 0, &l, &pid, NULL), HEARTH_LOCK_STOLEN);
    CHECK_EQ(pid, child);
    hearth_lock_release(&l);
    sc_rmrf(dir);
}

TEST(lock_of_a_live_process_is_respected) {
    char dir[512], path[600];
    sc_tmpdir(dir, sizeof dir, "lock");
    snprintf(path, sizeof path, "%s/x.lock", dir);
    int to_child[2], to_parent[2];
    CHECK(pipe(to_child) == 0 && pipe(to_parent) == 0);
    pid_t child = fork();
    if (child == 0) {
        hearth_lock l;
        char c = hearth_lock_acquire(path, false, 0, &l, NULL, NULL) == HEARTH_LOCK_TAKEN ? 'y' : 'n';
        if (write(to_parent[1], &c, 1) != 1 || read(to_child[0], &c, 1) != 1) _exit(2);
        hearth_lock_release(&l);
        _exit(0);
    }
    char c = 0;
    CHECK(read(to_parent[0], &c, 1) == 1 && c == 'y');
    hearth_lock l;
    int pid = 0;
    CHECK_EQ(hearth_lock_acquire(path, false, 100, &l, &pid, NULL), HEARTH_LOCK_BUSY);
    CHECK_EQ(pid, child);
    int held_pid = 0;
    CHECK(hearth_lock_is_held(path, &held_pid));
    CHECK_EQ(held_pid, child);
    CHECK(write(to_child[1], "x", 1) == 1); /* let it release; the taker waits for it */
    CHECK_EQ(hearth_lock_acquire(path, false, 5000, &l, &pid, NULL), HEARTH_LOCK_TAKEN);
    hearth_lock_release(&l);
    waitpid(child, NULL, 0);
    close(to_child[0]), close(to_child[1]), close(to_parent[0]), close(to_parent[1]);
    sc_rmrf(dir);
}

TEST(digests) {
    char hex[80];
    hearth_digest *d = hearth_digest_create(HEARTH_DIGEST_SHA256, 0);
    CHECK(d && hearth_digest_update(d, "abc", 3) && hearth_digest_final_hex(d, hex, sizeof hex));
    CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    hearth_digest_destroy(d);
    /* git's blob id: `printf 'hello\n' | git hash-object --stdin` */
    d = hearth_digest_create(HEARTH_DIGEST_GIT_SHA1, 6);
    CHECK(hearth_digest_update(d, "hel", 3) && hearth_digest_update(d, "lo\n", 3));
    CHECK(hearth_digest_final_hex(d, hex, sizeof hex));
    CHECK_STR(hex, "ce013625030ba8dba906f756967f9e9ca394464a");
    /* reset, then hash from a file descriptor */
    char dir[512], path[600];
    sc_tmpdir(dir, sizeof dir, "dg");
    snprintf(path, sizeof path, "%s/f", dir);
    sc_write(path, "hello\nextra", 11);
    int fd = open(path, O_RDONLY);
    CHECK(hearth_digest_reset(d));
    CHECK(hearth_digest_update_fd(d, fd, 6, NULL) == HEARTH_OK);
    CHECK(hearth_digest_final_hex(d, hex, sizeof hex));
    CHECK_STR(hex, "ce013625030ba8dba906f756967f9e9ca394464a");
    CHECK(hearth_digest_reset(d));
    CHECK(hearth_digest_update_fd(d, fd, 100, NULL) == HEARTH_E_IO); /* shorter than asked */
    close(fd);
    hearth_digest_destroy(d);
    CHECK(hearth_digest_is_hex("ce013625030ba8dba906f756967f9e9ca394464a", 40));
    CHECK(!hearth_digest_is_hex("CE013625030ba8dba906f756967f9e9ca394464a", 40));
    CHECK(!hearth_digest_is_hex("ce01", 40));
    sc_rmrf(dir);
}

TEST(revision_reply) {
    const char *ok = "{\"sha\":\"0123456789abcdef0123456789abcdef01234567\",\"siblings\":["
                     "{\"rfilename\":\"README.md\",\"blobId\":\"ce013625030ba8dba906f756967f9e9ca394464a\",\"size\":6},"
                     "{\"rfilename\":\"q/model.gguf\",\"blobId\":\"ce013625030ba8dba906f756967f9e9ca394464a\",\"size\":9,"
                     "\"lfs\":{\"sha256\":\"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\",\"size\":3}}]}";
    hearth_hub_revision r;
    hearth_err err = {0};
    CHECK(hearth_hub_revision_parse(ok, strlen(ok), &r, &err) == HEARTH_OK);
    CHECK_STR(r.commit, "0123456789abcdef0123456789abcdef01234567");
    CHECK_EQ(r.n_files, 2);
    if (r.n_files == 2) {
        CHECK(!r.files[0].lfs);
        CHECK_EQ(r.files[0].size, 6);
        CHECK_STR(r.files[0].oid, "ce013625030ba8dba906f756967f9e9ca394464a");
        CHECK(r.files[1].lfs);
        CHECK_EQ(r.files[1].size, 3); /* the LFS size, not the pointer's */
        CHECK_STR(r.files[1].path, "q/model.gguf");
    }
    hearth_hub_revision_free(&r);
    static const char *bad[] = {
        "not json", "{}", "{\"sha\":\"abc\",\"siblings\":[]}",
        "{\"sha\":\"0123456789abcdef0123456789abcdef01234567\",\"siblings\":[{\"rfilename\":\"../x\","
        "\"blobId\":\"ce013625030ba8dba906f756967f9e9ca394464a\",\"size\":1}]}",
        "{\"sha\":\"0123456789abcdef0123456789abcdef01234567\",\"siblings\":[{\"rfilename\":\"x\",\"size\":1}]}",
        "{\"sha\":\"0123456789abcdef0123456789abcdef01234567\",\"siblings\":[{\"rfilename\":\"x\","
        "\"blobId\":\"ce013625030ba8dba906f756967f9e9ca394464a\",\"size\":-5}]}",
        "{\"sha\":\"0123456789abcdef0123456789abcdef01234567\",\"siblings\":[{\"rfilename\":\"x\","
        "\"blobId\":\"ce01\",\"size\":1,\"lfs\":{\"sha256\":\"../../etc\",\"size\":1}}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(hearth_hub_revision_parse(bad[i], strlen(bad[i]), &r, &err) == HEARTH_E_FORMAT);
        CHECK(r.files == NULL && r.n_files == 0);
    }
}

TEST(names_and_urls) {
    CHECK(hearth_hub_valid_path("model.gguf"));
    CHECK(hearth_hub_valid_path("sub/dir/model.gguf"));
    CHECK(hearth_hub_valid_path(".gitattributes"));
    CHECK(!hearth_hub_valid_path(""));
    CHECK(!hearth_hub_valid_path("/etc/passwd"));
    CHECK(!hearth_hub_valid_path("a/../b"));
    CHECK(!hearth_hub_valid_path(".."));
    CHECK(!hearth_hub_valid_path("a//b"));
    CHECK(!hearth_hub_valid_path("a/./b"));
    CHECK(!hearth_hub_valid_path("a\\b"));
    CHECK(!hearth_hub_valid_path("a\nb"));
    CHECK(hearth_hub_valid_revision("main"));
    CHECK(hearth_hub_valid_revision("refs/pr/1"));
    CHECK(hearth_hub_valid_revision("v1.0"));
    CHECK(!hearth_hub_valid_revision("../x"));
    CHECK(!hearth_hub_valid_revision("/main"));
    CHECK(!hearth_hub_valid_revision("a b"));
    CHECK(!hearth_hub_valid_revision(".hidden"));
    char url[256];
    CHECK(hearth_hub_resolve_url("http://h", "org/m", "abc", "dir/a b+c.gguf", url, sizeof url));
    CHECK_STR(url, "http://h/org/m/resolve/abc/dir/a%20b%2Bc.gguf");
    CHECK(!hearth_hub_resolve_url("http://h", "org/m", "abc", "x", url, 10));
    CHECK(hearth_get_repo_lock_path("/hub", "org/m", url, sizeof url));
    CHECK_STR(url, "/hub/.locks/models--org--m/hearth-repo.lock");
    /* the endpoint and the token come from the environment */
    setenv("HF_ENDPOINT", "http://127.0.0.1:9/", 1);
    CHECK(hearth_hub_endpoint(url, sizeof url));
    CHECK_STR(url, "http://127.0.0.1:9");
    unsetenv("HF_ENDPOINT");
    CHECK(hearth_hub_endpoint(url, sizeof url));
    CHECK_STR(url, HEARTH_HUB_DEFAULT_ENDPOINT);
    setenv("HF_TOKEN", "tok123", 1);
    CHECK(hearth_hub_token(url, sizeof url));
    CHECK_STR(url, "tok123");
    unsetenv("HF_TOKEN");
    char dir[512], path[600];
    sc_tmpdir(dir, sizeof dir, "tok");
    snprintf(path, sizeof path, "%s/token", dir);
    sc_write(path, "filetok\n", 8);
    setenv("HF_TOKEN_PATH", path, 1);
    CHECK(hearth_hub_token(url, sizeof url));
    CHECK_STR(url, "filetok");
    unsetenv("HF_TOKEN_PATH");
    sc_rmrf(dir);
}

/* Without a reachable hub, get fails cleanly and leaves nothing behind. */
TEST(get_unreachable_hub) {
    char dir[512];
    sc_tmpdir(dir, sizeof dir, "get");
    hearth_get_params p = hearth_get_params_default();
    p.repo_id = "org/model";
    p.hub_dir = dir;
    p.endpoint = "http://127.0.0.1:1"; /* nothing listens on port 1 */
    p.token = "";
    hearth_get_result res;
    hearth_err err = {0};
    CHECK(hearth_get(&p, &res, &err) == HEARTH_E_IO);
    CHECK(strstr(err.msg, "cannot reach") != NULL);
    p.repo_id = "not a repo";
    CHECK(hearth_get(&p, &res, &err) == HEARTH_E_INVALID);
    p.repo_id = "org/model";
    p.revision = "../../x";
    CHECK(hearth_get(&p, &res, &err) == HEARTH_E_INVALID);
    char path[600];
    snprintf(path, sizeof path, "%s/models--org--model", dir);
    CHECK(!sc_exists(path));
    sc_rmrf(dir);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
