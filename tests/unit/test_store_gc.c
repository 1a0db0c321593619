/*
 * test_store_gc.c - hub cache gc (store/gc.h) on synthetic caches: superseded snapshots,
 * blobs shared between snapshots, orphans, .incomplete partials, locked blobs, the
 * only-copy tripwire and --force, repos without refs or with a download in progress, extra
 * refs (refs/pr/N), and execution that re-plans under the repo lock.
 */
#include "test.h"
#include "store_cache.h"

#include "store/gc.h"
#include "store/get.h"
#include "store/lock.h"

static const hearth_gc_repo *find_repo(const hearth_gc_plan *p, const char *id) {
    for (size_t i = 0; i < p->n_repos; i++)
        if (!strcmp(p->repos[i].repo_id, id)) return &p->repos[i];
    return NULL;
}

static bool planned(const hearth_gc_plan *p, const char *suffix) {
    size_t n = strlen(suffix);
    for (size_t i = 0; i < p->n_actions; i++) {
        size_t m = strlen(p->actions[i].path);
        if (m >= n && !strcmp(p->actions[i].path + m - n, suffix)) return true;
    }
    return false;
}

static void blob_path(const char *hub, const char *repo, const char *blob, char *out, size_t n) {
    char dir[900];
    sc_repo_dir(hub, repo, dir, sizeof dir);
    if (snprintf(out, n, "%s/blobs/%s", dir, blob) >= (int)n) sc_die("path", dir);
}

/* org/a: old and new snapshots sharing README; an orphan, a partial, a locked blob. */
static void build(const char *hub) {
    sc_blob(hub, "org/a", "b-old", "old model bytes", 15);
    sc_blob(hub, "org/a", "b-new", "new model bytes!", 16);
    sc_blob(hub, "org/a", "readme", "# readme", 8);
    sc_blob(hub, "org/a", "orphan", "0123456789", 10);
    sc_blob(hub, "org/a", "partial.incomplete", "01234", 5);
    sc_blob(hub, "org/a", "locked", "abc", 3);
    sc_link(hub, "org/a", "old", "model.gguf", "b-old");
    sc_link(hub, "org/a", "old", "docs/README.md", "readme");
    sc_link(hub, "org/a", "new", "model.gguf", "b-new");
    sc_link(hub, "org/a", "new", "docs/README.md", "readme");
    sc_ref(hub, "org/a", "main", "new");
    /* org/b: the old snapshot has a file the new one lacks */
    sc_blob(hub, "org/b", "q4", "q4 bytes", 8);
    sc_blob(hub, "org/b", "q8", "q8 bytes!", 9);
    sc_link(hub, "org/b", "old", "m-q4.gguf", "q4");
    sc_link(hub, "org/b", "old", "m-q8.gguf", "q8");
    sc_link(hub, "org/b", "new", "m-q4.gguf", "q4");
    sc_ref(hub, "org/b", "main", "new");
    /* org/c: no refs at all */
    sc_blob(hub, "org/c", "x", "x", 1);
    sc_link(hub, "org/c", "r1", "x.gguf", "x");
    /* org/d: superseded snapshot, but a download holds the repo lock */
    sc_blob(hub, "org/d", "x", "x", 1);
    sc_blob(hub, "org/d", "y", "yy", 2);
    sc_link(hub, "org/d", "old", "f.gguf", "x");
    sc_link(hub, "org/d", "new", "f.gguf", "y");
    sc_ref(hub, "org/d", "main", "new");
    /* org/e: refs/pr/1 keeps the older snapshot */
    sc_blob(hub, "org/e", "x", "x", 1);
    sc_blob(hub, "org/e", "y", "yy", 2);
    sc_link(hub, "org/e", "pr", "f.gguf", "x");
    sc_link(hub, "org/e", "new", "f.gguf", "y");
    sc_ref(hub, "org/e", "main", "new");
    sc_ref(hub, "org/e", "pr/1", "pr");
}

TEST(gc_plan) {
    char hub[512], lp[700];
    sc_tmpdir(hub, sizeof hub, "gc");
    build(hub);
    hearth_lock locked, dl;
    snprintf(lp, sizeof lp, "%s/.locks/models--org--a/locked.lock", hub);
    CHECK_EQ(hearth_lock_acquire(lp, false, 0, &locked, NULL, NULL), HEARTH_LOCK_TAKEN);
    CHECK(hearth_get_repo_lock_path(hub, "org/d", lp, sizeof lp));
    CHECK_EQ(hearth_lock_acquire(lp, true, 0, &dl, NULL, NULL), HEARTH_LOCK_TAKEN);

    hearth_gc_plan p;
    hearth_err err = {0};
    CHECK(hearth_gc_plan_make(hub, NULL, false, &p, &err) == HEARTH_OK);
    CHECK_EQ(p.n_repos, 5);
    const hearth_gc_repo *a = find_repo(&p, "org/a"), *b = find_repo(&p, "org/b"), *c = find_repo(&p, "org/c"),
                         *d = find_repo(&p, "org/d"), *e = find_repo(&p, "org/e");
    CHECK(a && b && c && d && e);
    if (!(a && b && c && d && e)) return;
    CHECK_EQ(a->n_keep, 1);
    CHECK_EQ(a->n_prune, 1);
    CHECK_EQ(a->n_blobs, 2); /* b-old and the orphan; not readme (shared), the partial, or locked */
    CHECK(planned(&p, "models--org--a/snapshots/old"));
    CHECK(planned(&p, "models--org--a/blobs/b-old"));
    CHECK(planned(&p, "models--org--a/blobs/orphan"));
    CHECK(!planned(&p, "blobs/readme"));
    CHECK(!planned(&p, "partial.incomplete"));
    CHECK(!planned(&p, "blobs/locked"));
    CHECK_EQ(a->reclaim_bytes, 15 + 10);
    /* the tripwire: org/b's old snapshot holds the only m-q8.gguf */
    CHECK_EQ(b->n_skip, 1);
    CHECK_EQ(b->n_prune, 0);
    CHECK_EQ(b->n_blobs, 0);
    CHECK(strstr(b->note, "m-q8.gguf") != NULL);
    CHECK(c->skipped && strstr(c->note, "no ref"));
    CHECK(d->skipped && strstr(d->note, "download"));
    CHECK_EQ(e->n_keep, 2);
    CHECK_EQ(e->n_prune + e->n_blobs, 0);
    CHECK_EQ(p.reclaim_bytes, 25);
    hearth_gc_plan_free(&p);

    /* force prunes the only copy too */
    CHECK(hearth_gc_plan_make(hub, "org/b", true, &p, &err) == HEARTH_OK);
    CHECK_EQ(p.n_repos, 1);
    CHECK_EQ(p.repos[0].n_prune, 1);
    CHECK_EQ(p.repos[0].n_blobs, 1);
    CHECK(planned(&p, "models--org--b/blobs/q8"));
    CHECK(!planned(&p, "models--org--b/blobs/q4"));
    hearth_gc_plan_free(&p);

    hearth_lock_release(&dl);
    hearth_lock_release(&locked);
    sc_rmrf(hub);
}

TEST(gc_execute) {
    char hub[512], path[700];
    sc_tmpdir(hub, sizeof hub, "gc");
    build(hub);
    hearth_gc_plan p;
    hearth_err err = {0};
    CHECK(hearth_gc_plan_make(hub, NULL, false, &p, &err) == HEARTH_OK);
    /* nothing is deleted by planning */
    blob_path(hub, "org/a", "b-old", path, sizeof path);
    CHECK(sc_exists(path));
    /* before executing, someone tags the old snapshot of org/a: it must survive */
    sc_ref(hub, "org/a", "v1", "old");
    hearth_gc_result res;
    CHECK(hearth_gc_execute(hub, &p, false, &res, &err) == HEARTH_OK);
    CHECK_EQ(res.n_snapshots, 1); /* org/d's old snapshot (no longer locked) */
    CHECK_EQ(res.n_blobs, 3);     /* org/a: the orphan and "locked" (not locked now); org/d: x */
    CHECK(sc_exists(path));       /* b-old: its snapshot is kept now */
    blob_path(hub, "org/a", "orphan", path, sizeof path);
    CHECK(!sc_exists(path));
    blob_path(hub, "org/a", "partial.incomplete", path, sizeof path);
    CHECK(sc_exists(path));
    blob_path(hub, "org/a", "readme", path, sizeof path);
    CHECK(sc_exists(path));
    hearth_gc_plan_free(&p);

    /* again with the tag gone: the old snapshot goes, its links are removed, not followed */
    snprintf(path, sizeof path, "%s/models--org--a/refs/v1", hub);
    unlink(path);
    CHECK(hearth_gc_plan_make(hub, "org/a", false, &p, &err) == HEARTH_OK);
    CHECK(hearth_gc_execute(hub, &p, false, &res, &err) == HEARTH_OK);
    CHECK_EQ(res.n_snapshots, 1);
    CHECK_EQ(res.n_blobs, 1);
    CHECK_EQ(res.bytes, 15);
    snprintf(path, sizeof path, "%s/models--org--a/snapshots/old", hub);
    CHECK(!sc_exists(path));
    snprintf(path, sizeof path, "%s/models--org--a/snapshots/new/docs/README.md", hub);
    CHECK(sc_exists(path));
    blob_path(hub, "org/a", "readme", path, sizeof path);
    CHECK(sc_exists(path));
    hearth_gc_plan_free(&p);

    /* a download starting between plan and execute makes gc skip the repo */
    CHECK(hearth_gc_plan_make(hub, "org/b", true, &p, &err) == HEARTH_OK);
    hearth_lock dl;
    CHECK(hearth_get_repo_lock_path(hub, "org/b", path, sizeof path));
    CHECK_EQ(hearth_lock_acquire(path, true, 0, &dl, NULL, NULL), HEARTH_LOCK_TAKEN);
    CHECK(hearth_gc_execute(hub, &p, true, &res, &err) == HEARTH_OK);
    CHECK_EQ(res.n_repos_busy, 1);
    CHECK_EQ(res.n_snapshots + res.n_blobs, 0);
    hearth_lock_release(&dl);
    CHECK(hearth_gc_execute(hub, &p, true, &res, &err) == HEARTH_OK);
    CHECK_EQ(res.n_snapshots, 1);
    CHECK_EQ(res.n_blobs, 1);
    hearth_gc_plan_free(&p);

    /* a clean cache plans nothing; a missing one is fine */
    CHECK(hearth_gc_plan_make(hub, NULL, false, &p, &err) == HEARTH_OK);
    CHECK_EQ(p.n_actions, 0);
    hearth_gc_plan_free(&p);
    CHECK(hearth_gc_plan_make("/nonexistent/hub", NULL, false, &p, &err) == HEARTH_OK);
    CHECK_EQ(p.n_repos, 0);
    sc_rmrf(hub);
}

int main(int argc, char **argv) { return test_main(argc, argv); }
