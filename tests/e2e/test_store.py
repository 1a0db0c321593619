"""The model store from the command line: `hearth get` against a loopback hub (fakehub.py)
with injected faults, and `hearth ls` / `scan` / `gc` / `fit` on the caches it makes.

Every test gets its own hub cache, hearth state dir and HOME under tmp_path, and HF_ENDPOINT
points at the fake hub on 127.0.0.1: nothing here can reach a real hub or touch the user's
caches. The binary is $HEARTH_BIN, else build/hearth.
"""
import fcntl
import hashlib
import os
import pathlib
import signal
import subprocess
import time

import pytest

from fakehub import FakeHub, git_blob_id, random_bytes, sha256

ROOT = pathlib.Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "golden" / "tiny" / "tiny-qwen2.gguf"
MB = 1 << 20


@pytest.fixture(scope="module")
def exe():
    p = pathlib.Path(os.environ.get("HEARTH_BIN") or ROOT / "build" / "hearth")
    if not p.exists():
        pytest.fail(f"{p} is missing: run `make build` first")
    return p


@pytest.fixture
def hub():
    h = FakeHub().start()
    yield h
    h.stop()


@pytest.fixture
def env(tmp_path, hub):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING", "XDG_"))}
    e.update(HF_HUB_CACHE=str(tmp_path / "hub"), XDG_CACHE_HOME=str(tmp_path / "xdg"), HOME=str(tmp_path / "home"),
             HF_ENDPOINT=hub.url, NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    return e


@pytest.fixture
def run(exe, env):
    def go(*args, extra=None, timeout=60):
        e = dict(env, **(extra or {}))
        return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=timeout, env=e)
    return go


def repo_dir(env, repo):
    return pathlib.Path(env["HF_HUB_CACHE"]) / ("models--" + repo.replace("/", "--"))


def standard_repo(hub, name="acme/tiny", **kw):
    files = {
        "tiny-qwen2.gguf": TINY.read_bytes(),
        "big.bin": random_bytes(3 * MB + 123, 1),
        "README.md": b"# tiny\nA test repo.\n",
        "sub/config.json": b'{"model_type": "qwen2"}\n',
    }
    return hub.add_repo(name, files, **kw)


def assert_snapshot(env, repo, files=None):
    """The layout huggingface_hub writes: relative links into blobs named by checksum."""
    d = repo_dir(env, repo.repo_id)
    snap = d / "snapshots" / repo.commit
    for path in files or repo.files:
        data = repo.files[path]
        link = snap / path
        assert link.is_symlink(), path
        target = os.readlink(link)
        oid = sha256(data) if path in repo.lfs else git_blob_id(data)
        assert target == "../" * path.count("/") + "../../blobs/" + oid
        assert link.read_bytes() == data
    assert not list((d / "blobs").glob("*.incomplete"))
    return snap


def no_snapshot(env, repo_id):
    d = repo_dir(env, repo_id)
    return not (d / "snapshots").exists() and not (d / "refs").exists()


def test_get_whole_repo_and_reget(run, hub, env):
    repo = standard_repo(hub)
    r = run("get", "acme/tiny")
    assert r.returncode == 0, r.stderr
    assert_snapshot(env, repo)
    assert (repo_dir(env, "acme/tiny") / "refs" / "main").read_text() == repo.commit
    assert "4 files" in r.stdout and "4 downloaded" in r.stdout
    assert "verified" in r.stderr
    # LFS files came through the CDN redirect, small files straight from the hub
    assert {e["path"].split("/")[-1] for e in hub.requests("cdn")} == {sha256(repo.files["tiny-qwen2.gguf"]),
                                                                         sha256(repo.files["big.bin"])}
    # the registry knows it now
    r = run("ls")
    assert r.returncode == 0 and "acme/tiny" in r.stdout and "tiny-qwen2.gguf" in r.stdout
    # again: nothing to fetch
    n = len(hub.requests("cdn"))
    r = run("get", "acme/tiny")
    assert r.returncode == 0 and "4 already present" in r.stdout
    assert len(hub.requests("cdn")) == n
    # a query without '/' re-gets a downloaded repo
    r = run("get", "TINY")
    assert r.returncode == 0 and "acme/tiny@" in r.stdout


def test_get_glob_and_revision(run, hub, env):
    repo = standard_repo(hub)
    repo.refs["v1"] = repo.commit
    r = run("get", "acme/tiny:*.gguf", "--revision", "v1")
    assert r.returncode == 0, r.stderr
    assert_snapshot(env, repo, ["tiny-qwen2.gguf"])
    snap = repo_dir(env, "acme/tiny") / "snapshots" / repo.commit
    assert sorted(p.name for p in snap.iterdir()) == ["tiny-qwen2.gguf"]
    assert (repo_dir(env, "acme/tiny") / "refs" / "v1").read_text() == repo.commit
    assert not (repo_dir(env, "acme/tiny") / "refs" / "main").exists()
    # a commit hash names itself: no ref is written for it
    r = run("get", "acme/tiny:README.md", "--revision", repo.commit)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (repo_dir(env, "acme/tiny") / "refs").iterdir()) == ["v1"]
    r = run("get", "acme/tiny:*.nothing")
    assert r.returncode == 1 and "no file" in r.stderr and "tiny-qwen2.gguf" in r.stderr


def test_connection_cut_then_rerun_resumes(run, hub, env):
    repo = standard_repo(hub)
    hub.faults["big.bin"] = {"cut": MB + 7, "times": 1}
    r = run("get", "acme/tiny", "--retries", "0")
    assert r.returncode == 1
    assert "big.bin" in r.stderr and "run again" in r.stderr
    part = repo_dir(env, "acme/tiny") / "blobs" / (sha256(repo.files["big.bin"]) + ".incomplete")
    assert part.stat().st_size == MB + 7
    assert no_snapshot(env, "acme/tiny")  # nothing looks complete
    r = run("get", "acme/tiny")
    assert r.returncode == 0, r.stderr
    assert_snapshot(env, repo)
    assert "bytes=%d-" % (MB + 7) in [e["range"] for e in hub.requests("cdn")]
    assert "resuming" in r.stderr


def test_connection_cut_retried_in_the_same_run(run, hub, env):
    repo = standard_repo(hub)
    hub.faults["big.bin"] = {"cut": 2 * MB, "times": 2}
    r = run("get", "acme/tiny")
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("retrying") == 2
    assert_snapshot(env, repo)
    assert [e["range"] for e in hub.requests("cdn") if e["range"]] == ["bytes=%d-" % (2 * MB)] * 2


def test_corrupt_bytes_are_rejected(run, hub, env):
    repo = standard_repo(hub)
    hub.faults["big.bin"] = {"corrupt": True}
    r = run("get", "acme/tiny")
    assert r.returncode == 1
    assert "checksum mismatch" in r.stderr and "deleted" in r.stderr
    blobs = repo_dir(env, "acme/tiny") / "blobs"
    assert not (blobs / sha256(repo.files["big.bin"])).exists()
    assert not list(blobs.glob("*.incomplete"))
    assert no_snapshot(env, "acme/tiny")
    # a small (git blob id) file too
    hub.add_repo("acme/small", {"notes.txt": b"some notes\n"})
    hub.faults["notes.txt"] = {"corrupt": True}
    r = run("get", "acme/small")
    assert r.returncode == 1 and "checksum mismatch" in r.stderr
    assert no_snapshot(env, "acme/small")


@pytest.mark.parametrize("fault,words", [({"extra": 1000}, "more than"), ({"short": MB}, "fewer than")])
def test_wrong_size_is_rejected(run, hub, env, fault, words):
    repo = standard_repo(hub)
    hub.faults["big.bin"] = fault
    r = run("get", "acme/tiny", extra={})
    assert r.returncode == 1
    assert words in r.stderr and "deleted" in r.stderr
    assert not list((repo_dir(env, "acme/tiny") / "blobs").glob("*.incomplete"))
    assert no_snapshot(env, "acme/tiny")


def test_server_that_ignores_range_restarts(run, hub, env):
    repo = standard_repo(hub)
    hub.faults["big.bin"] = {"cut": MB, "times": 1}
    assert run("get", "acme/tiny", "--retries", "0").returncode == 1
    hub.faults["big.bin"] = {"ignore_range": True}
    r = run("get", "acme/tiny")
    assert r.returncode == 0, r.stderr
    assert "ignored Range" in r.stderr
    assert_snapshot(env, repo)


def test_headers_that_disagree_are_refused(run, hub, env):
    standard_repo(hub)
    hub.faults["README.md"] = {"wrong_commit": True}
    r = run("get", "acme/tiny:README.md")
    assert r.returncode == 1 and "commit" in r.stderr


@pytest.mark.parametrize("gated", [True, "files"])
def test_gated_repo(run, hub, env, gated):
    repo = standard_repo(hub, "acme/gated", gated=gated)
    r = run("get", "acme/gated")
    assert r.returncode == 1
    assert "gated" in r.stderr and "HF_TOKEN" in r.stderr
    assert no_snapshot(env, "acme/gated")
    r = run("get", "acme/gated", extra={"HF_TOKEN": "wrong"})
    assert r.returncode == 1 and "gated" in r.stderr
    r = run("get", "acme/gated", extra={"HF_TOKEN": hub.token})
    assert r.returncode == 0, r.stderr
    assert_snapshot(env, repo)
    assert not [e for e in hub.requests("cdn") if e.get("leak")]  # the token stayed on the hub
    # the token file of `hf auth login` works as well
    token_file = pathlib.Path(env["HOME"]) / ".cache" / "huggingface" / "token"
    token_file.parent.mkdir(parents=True)
    token_file.write_text(hub.token + "\n")
    r = run("get", "acme/gated")
    assert r.returncode == 0, r.stderr


def test_unknown_repo_and_bad_names(run, hub):
    r = run("get", "acme/nothing")
    assert r.returncode == 1 and "acme/nothing" in r.stderr
    r = run("get", "../etc/passwd")
    assert r.returncode == 2
    r = run("get", "acme/x", "--revision", "../../x")
    assert r.returncode == 1 and "revision" in r.stderr
    r = run("get")
    assert r.returncode == 2


def test_unsafe_file_names_from_the_hub_are_refused(run, hub, env):
    hub.add_repo("acme/evil", {"../../escape.txt": b"x", "ok.txt": b"y"})
    r = run("get", "acme/evil")
    assert r.returncode == 1 and "unsafe" in r.stderr
    assert not (pathlib.Path(env["HF_HUB_CACHE"]) / "escape.txt").exists()


def test_parallel_downloads(run, hub, env):
    files = {"part-%d.bin" % i: random_bytes(2 * MB, 10 + i) for i in range(6)}
    for p in files:
        hub.faults[p] = {"throttle": 8 * MB}
    repo = hub.add_repo("acme/many", files)
    r = run("get", "acme/many", "--jobs", "3")
    assert r.returncode == 0, r.stderr
    assert_snapshot(env, repo)
    assert hub.max_active == 3


def test_locks_stale_stolen_live_respected(run, hub, env, tmp_path):
    repo = standard_repo(hub)
    oid = sha256(repo.files["big.bin"])
    locks = pathlib.Path(env["HF_HUB_CACHE"]) / ".locks" / "models--acme--tiny"
    locks.mkdir(parents=True)
    # a live holder: a flock on the blob's lock file
    lock = locks / (oid + ".lock")
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.write(fd, b"%d\n" % os.getpid())
    r = run("get", "acme/tiny")
    assert r.returncode == 1 and "pid %d" % os.getpid() in r.stderr
    assert no_snapshot(env, "acme/tiny")
    os.close(fd)  # the holder "crashes": the lock file stays, naming a pid
    dead = subprocess.Popen(["true"])
    dead.wait()
    lock.write_text("%d\n" % dead.pid)
    r = run("get", "acme/tiny")
    assert r.returncode == 0, r.stderr
    assert "took over the lock of pid %d" % dead.pid in r.stderr
    assert lock.exists() and lock.read_text() == ""  # released, not deleted (as huggingface_hub does)


def test_interrupt_keeps_partial_and_resumes(exe, env, hub):
    repo = hub.add_repo("acme/slow", {"slow.bin": random_bytes(4 * MB, 3)})
    hub.faults["slow.bin"] = {"throttle": 2 * MB}
    p = subprocess.Popen([str(exe), "get", "acme/slow"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    part = repo_dir(env, "acme/slow") / "blobs" / (sha256(repo.files["slow.bin"]) + ".incomplete")
    deadline = time.time() + 20
    while time.time() < deadline and not (part.exists() and part.stat().st_size > 256 * 1024):
        time.sleep(0.05)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=20)
    assert p.returncode == 130, err
    assert "interrupted" in err
    assert 0 < part.stat().st_size < 4 * MB
    assert no_snapshot(env, "acme/slow")
    hub.faults.clear()
    r = subprocess.run([str(exe), "get", "acme/slow"], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert_snapshot(env, repo)


def test_gc_after_upstream_moves(run, hub, env):
    """Two revisions from the hub: the old snapshot is superseded, its blobs go, shared ones stay."""
    repo = standard_repo(hub)
    old_commit = repo.commit
    assert run("get", "acme/tiny").returncode == 0
    # upstream pushes a new revision: big.bin changes, the rest stays
    repo.files["big.bin"] = random_bytes(3 * MB, 99)
    repo.commit = "b" * 40
    repo.refs["main"] = repo.commit
    hub.add_repo("acme/tiny", repo.files, commit=repo.commit)
    r = run("get", "acme/tiny")
    assert r.returncode == 0, r.stderr
    assert "moved from" in r.stdout and "reclaim 3.15 MB" in r.stdout
    d = repo_dir(env, "acme/tiny")
    blobs = d / "blobs"
    (blobs / ("f" * 64 + ".incomplete")).write_bytes(b"partial")
    r = run("gc")
    assert r.returncode == 0, r.stderr
    assert "nothing deleted" in r.stdout and "3.15 MB" in r.stdout
    assert (d / "snapshots" / old_commit).exists()
    r = run("gc", "--yes", "--dry-run")
    assert r.returncode == 0 and "nothing deleted (--dry-run)" in r.stdout
    assert (d / "snapshots" / old_commit).exists()
    r = run("gc", "--yes")
    assert r.returncode == 0, r.stderr
    assert "deleted 1 snapshot and 1 blob" in r.stdout
    assert not (d / "snapshots" / old_commit).exists()
    assert (blobs / ("f" * 64 + ".incomplete")).exists()
    new = repo_dir(env, "acme/tiny") / "snapshots" / repo.commit
    for p, data in repo.files.items():
        assert (new / p).read_bytes() == data
    r = run("gc")
    assert "nothing to delete" in r.stdout
    r = run("ls", "--all-revisions")
    assert r.returncode == 0 and old_commit[:8] not in r.stdout and repo.commit[:8] in r.stdout


def test_gc_keeps_the_only_copy_unless_forced(run, hub, env):
    repo = hub.add_repo("acme/q", {"m-q4.gguf": TINY.read_bytes(), "m-q8.gguf": TINY.read_bytes()[::-1]})
    old_commit = repo.commit
    assert run("get", "acme/q").returncode == 0
    del repo.files["m-q8.gguf"]  # upstream drops a quantization
    repo2 = hub.add_repo("acme/q", repo.files, commit="c" * 40)
    assert run("get", "acme/q").returncode == 0
    r = run("gc", "--yes")
    assert r.returncode == 0
    assert "m-q8.gguf" in r.stdout and "--force" in r.stdout
    assert (repo_dir(env, "acme/q") / "snapshots" / old_commit / "m-q8.gguf").exists()
    r = run("gc", "--yes", "--force")
    assert r.returncode == 0 and "deleted 1 snapshot and 1 blob" in r.stdout
    assert not (repo_dir(env, "acme/q") / "snapshots" / old_commit).exists()
    assert (repo_dir(env, "acme/q") / "snapshots" / repo2.commit / "m-q4.gguf").exists()
    assert run("gc", "--bogus").returncode == 2


def test_fit_from_the_cache(run, hub, env):
    standard_repo(hub)
    assert run("get", "acme/tiny:*.gguf").returncode == 0
    # a cached bandwidth figure of today: fit uses it and says where it came from
    state = pathlib.Path(env["XDG_CACHE_HOME"]) / "hearth"
    state.mkdir(parents=True, exist_ok=True)
    (state / "membw").write_text("bytes_per_s=10000000000\nthreads=%d\nbuffer_bytes=268435456\ndate=%s\n"
                                 % (os.cpu_count(), time.strftime("%Y-%m-%d")))
    r = run("fit", "acme/tiny", "--ctx", "1024")
    assert r.returncode == 0, r.stderr
    assert "FITS at 1024 tokens" in r.stdout
    assert "10.0 GB/s" in r.stdout and "cached in" in r.stdout
    # tiny-qwen2: 2 layers x 2 kv heads x (16 + 16) x 2 bytes = 256 B/token
    assert "1024 tokens x 256 B/token" in r.stdout
    r = run("fit", str(TINY), "--budget", "0.035")
    assert r.returncode == 0
    assert "DOES NOT FIT" in r.stdout and "largest safe context: none" in r.stdout
    r = run("fit", "nothing-like-this")
    assert r.returncode == 1 and "nothing-like-this" in r.stderr
    assert run("fit").returncode == 2
    assert run("fit", "acme/tiny", "--ctx", "zero").returncode == 2


def test_ls_filters(run, hub, env):
    standard_repo(hub)
    hub.add_repo("acme/other", {"other.gguf": TINY.read_bytes()[::-1]})  # not a GGUF: listed as unreadable
    assert run("get", "acme/tiny:*.gguf").returncode == 0
    assert run("get", "acme/other").returncode == 0
    r = run("ls")
    assert r.returncode == 0 and "acme/tiny" in r.stdout and "unreadable" in r.stdout
    r = run("ls", "TINY")
    assert "acme/tiny" in r.stdout and "acme/other" not in r.stdout
    r = run("ls", "--max-size", "1MB")
    assert "no model" in r.stdout
    assert run("ls", "--max-size", "lots").returncode == 2
    r = run("scan")
    assert r.returncode == 0 and "2 models in 2 repos" in r.stdout and "1 unreadable" not in r.stdout


def test_ls_vision(run, hub, env, tmp_path):
    """ls --vision keeps models with a vision tower (src/store/modality.h): a safetensors config
    with vision_config and the tower's weights, or a GGUF with a projector beside it; a text
    model, a multimodal config without tower weights, and a GGUF beside a file merely named
    mmproj are left out, and no projector is listed as a model."""
    from vision_fixture import projector_bytes, with_tower
    mm = ROOT / "tests" / "golden" / "hf" / "gemma3-mm"
    files = {p.name: p.read_bytes() for p in mm.iterdir()}
    hub.add_repo("acme/textonly", dict(files))  # vision_config, language weights only
    files["model.safetensors"] = with_tower(files["model.safetensors"])
    hub.add_repo("acme/seer", files)
    hub.add_repo("acme/eyes", {"tiny-qwen2.gguf": TINY.read_bytes(),
                               "mmproj-tiny-f16.gguf": projector_bytes(tmp_path)})
    hub.add_repo("acme/named", {"tiny-qwen2.gguf": TINY.read_bytes(), "mmproj-tiny-f16.gguf": TINY.read_bytes()})
    standard_repo(hub, "acme/plain")
    repos = ("acme/seer", "acme/textonly", "acme/eyes", "acme/named", "acme/plain")
    for repo in repos:
        assert run("get", repo).returncode == 0
    r = run("ls")
    assert all(n in r.stdout for n in repos), r.stdout
    assert "mmproj" not in r.stdout, r.stdout
    r = run("ls", "--vision")
    assert r.returncode == 0 and "acme/seer" in r.stdout and "acme/eyes" in r.stdout, r.stdout
    for n in ("acme/plain", "acme/textonly", "acme/named", "mmproj"):
        assert n not in r.stdout, r.stdout
    assert "vision" in r.stdout
    r = run("ls", "plain", "--vision")
    assert r.returncode == 0 and "no model" in r.stdout
