"""The model store over HTTP and the first run: `hearth serve`'s /library, /fit and /downloads
against a loopback hub (fakehub.py), and bare `hearth` fetching its starter model.

As in test_store.py, every test has its own hub cache, hearth state dir and HOME under tmp_path,
and HF_ENDPOINT points at the fake hub: nothing can reach a real hub or the user's caches. The
models are the committed tiny GGUFs (tests/golden/tiny), so a server starts in a fraction of a
second. The first-run test serves every starter candidate of src/store/starter.c (read from the
source, so the table and the test cannot drift) with the tiny model's bytes: whichever one fit
picks for this machine downloads, loads and serves.
"""
import http.client
import json
import os
import pathlib
import re
import signal
import subprocess
import time

import pytest

from fakehub import FakeHub, random_bytes

ROOT = pathlib.Path(__file__).resolve().parents[2]
TINY = ROOT / "tests" / "golden" / "tiny" / "tiny-qwen2.gguf"
TINY3 = ROOT / "tests" / "golden" / "tiny" / "tiny-qwen3.gguf"


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


def write_membw(env, bytes_per_s=20e9):
    """A cached bandwidth figure, so nothing measures (and /library predicts decode speed)."""
    d = pathlib.Path(env["XDG_CACHE_HOME"]) / "hearth"
    d.mkdir(parents=True, exist_ok=True)
    (d / "membw").write_text("bytes_per_s=%.0f\nthreads=%d\nbuffer_bytes=268435456\ndate=%s\n" % (
        bytes_per_s, os.sysconf("SC_NPROCESSORS_ONLN"), time.strftime("%Y-%m-%d")))


class Server:
    def __init__(self, exe, env, args, log_path, timeout=60):
        self.log_path = log_path
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen([str(exe), *args, "--host", "127.0.0.1", "--port", "0", "--no-open"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log, env=env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(r"API +http://127\.0\.0\.1:(\d+)/v1", self.text())
            if m:
                self.port = int(m.group(1))
                return
            if self.proc.poll() is not None:
                pytest.fail(f"hearth exited with {self.proc.returncode}:\n{self.text()}")
            time.sleep(0.02)
        self.stop()
        pytest.fail("hearth was not ready in time:\n" + self.text())

    def text(self):
        return pathlib.Path(self.log_path).read_text(errors="replace")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def request(self, method, path, body=None, headers=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
        h = dict(headers or {})
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
            h.setdefault("Content-Type", "application/json")
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        c.close()
        try:
            j = json.loads(data) if data else None
        except ValueError:
            j = None
        return r.status, j, {k.lower(): v for k, v in r.getheaders()}

    def get(self, path, headers=None):
        st, j, _ = self.request("GET", path, headers=headers)
        return st, j

    def wait_download(self, job_id, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            st, j = self.get("/downloads")
            assert st == 200
            job = next(d for d in j["downloads"] if d["id"] == job_id)
            if job["state"] != "running":
                return job
            time.sleep(0.05)
        pytest.fail(f"download {job_id} did not finish: {job}")


@pytest.fixture
def serve(exe, env, tmp_path):
    started = []

    def go(*args, extra=None, timeout=60):
        s = Server(exe, dict(env, **(extra or {})), args, tmp_path / f"serve{len(started)}.log", timeout)
        started.append(s)
        return s
    yield go
    for s in started:
        s.stop()


def get(exe, env, target):
    r = subprocess.run([str(exe), "get", target], capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr


FIT_KEYS = {"ctx", "fits", "max_ctx", "weights_bytes", "kv_bytes", "transient_bytes", "total_bytes", "budget_bytes",
            "read_bytes_per_token", "decode_tok_s"}


def test_library_and_fit(exe, env, hub, serve):
    hub.add_repo("acme/tiny", {"tiny-qwen2.gguf": TINY.read_bytes(), "README.md": b"# tiny\n"})
    hub.add_repo("acme/tiny3", {"tiny-qwen3.gguf": TINY3.read_bytes()})
    get(exe, env, "acme/tiny")
    get(exe, env, "acme/tiny3")
    write_membw(env)
    s = serve("serve", "tiny-qwen2")

    st, lib = s.get("/library")
    assert st == 200, lib
    models = {m["id"]: m for m in lib["models"]}
    assert set(models) == {"acme/tiny/tiny-qwen2.gguf", "acme/tiny3/tiny-qwen3.gguf"}
    m = models["acme/tiny/tiny-qwen2.gguf"]
    assert m["repo"] == "acme/tiny" and m["file"] == "tiny-qwen2.gguf" and m["format"] == "gguf"
    assert m["architecture"] == "qwen2" and m["size"] == TINY.stat().st_size and m["quantization"]
    assert m["context_length"] == 2048 and m["supported"] and "supported" in m["capabilities"]
    assert m["serving"] is True and models["acme/tiny3/tiny-qwen3.gguf"]["serving"] is False
    assert models["acme/tiny3/tiny-qwen3.gguf"]["architecture"] == "qwen3"
    for mm in models.values():
        f = mm["fit"]
        assert set(f) == FIT_KEYS
        assert f["fits"] and f["ctx"] == 2048 and f["max_ctx"] == 2048
        assert f["total_bytes"] == f["weights_bytes"] + f["kv_bytes"] + f["transient_bytes"] <= f["budget_bytes"]
        assert f["decode_tok_s"] > 0  # from the cached bandwidth
    assert lib["machine"]["bandwidth_bytes_per_s"] == 20e9 and lib["machine"]["ram_bytes"] > 0
    # a substring filter; a browser navigation goes to the web app instead
    st, j = s.get("/library?q=tiny3")
    assert [x["id"] for x in j["models"]] == ["acme/tiny3/tiny-qwen3.gguf"]
    st, _, h = s.request("GET", "/library", headers={"Accept": "text/html,*/*"})
    assert st == 302 and h["location"] == "/#/library"

    # /fit for one model, at a context; the serving model without one
    st, j = s.get("/fit?model=tiny3&ctx=64")
    assert st == 200, j
    assert j["model"]["id"] == "acme/tiny3/tiny-qwen3.gguf" and j["model"]["serving"] is False
    assert j["model"]["fit"]["ctx"] == 64 and j["model"]["fit"]["kv_bytes"] == 64 * j["model"]["kv_bytes_per_token"]
    st, j = s.get("/fit")
    assert st == 200 and j["model"]["id"] == "acme/tiny/tiny-qwen2.gguf" and j["model"]["serving"] is True
    st, j = s.get("/fit?model=tiny")
    assert st == 400 and j["error"]["code"] == "ambiguous_model" and "acme/tiny3" in j["error"]["message"]
    st, j = s.get("/fit?model=nothing-like-it")
    assert st == 404 and j["error"]["param"] == "model"
    st, j = s.get("/fit?model=tiny3&ctx=0")
    assert st == 400 and j["error"]["param"] == "ctx"

    # the store answers behind the API key too
    s.stop()
    s = serve("serve", "tiny-qwen2", "--api-key", "k")
    assert s.get("/library")[0] == 401 and s.get("/fit")[0] == 401 and s.get("/downloads")[0] == 401
    assert s.get("/library", {"Authorization": "Bearer k"})[0] == 200


def test_post_download_then_library(exe, env, hub, serve):
    repo = hub.add_repo("acme/new", {"tiny-qwen2.gguf": TINY.read_bytes(), "README.md": b"# new\n",
                                     "big.bin": random_bytes(300_000, 7)})
    s = serve("serve", str(TINY))
    assert s.get("/library")[1]["models"] == []
    st, j, _ = s.request("POST", "/downloads", {"repo": "acme/new", "file": "*.gguf"})
    assert st == 202 and j["id"] == "dl-1" and j["state"] == "running"
    job = s.wait_download("dl-1")
    assert job["state"] == "done", job
    assert job["repo"] == "acme/new" and job["file"] == "*.gguf" and job["commit"] == repo.commit
    assert job["bytes_done"] == job["bytes_total"] == TINY.stat().st_size
    assert job["files_total"] == job["files_done"] == 1 and job["error"] is None and job["finished_at"]
    ids = [m["id"] for m in s.get("/library")[1]["models"]]
    assert ids == ["acme/new/tiny-qwen2.gguf"]
    # only the glob's file came
    snap = pathlib.Path(env["HF_HUB_CACHE"]) / "models--acme--new" / "snapshots" / repo.commit
    assert sorted(p.name for p in snap.iterdir()) == ["tiny-qwen2.gguf"]

    # "org/name:glob" as `hearth get` takes it; the served file outside the cache is not "serving"
    st, j, _ = s.request("POST", "/downloads", {"repo": "acme/new:README.md", "revision": "main"})
    assert st == 202 and s.wait_download(j["id"])["state"] == "done"
    assert (snap / "README.md").read_bytes() == b"# new\n"
    assert [m["serving"] for m in s.get("/library")[1]["models"]] == [False]

    # bounded: one job per repo, two at once; a slow file keeps them running
    hub.faults["big.bin"] = {"throttle": 200_000}
    for name in ("slow/a", "slow/b", "slow/c"):
        hub.add_repo(name, {"big.bin": random_bytes(300_000, 8)})
    st, a, _ = s.request("POST", "/downloads", {"repo": "slow/a"})
    assert st == 202
    st, again, _ = s.request("POST", "/downloads", {"repo": "slow/a"})
    assert st == 200 and again["id"] == a["id"] and again["existing"] is True
    st, b, _ = s.request("POST", "/downloads", {"repo": "slow/b"})
    assert st == 202
    st, c, _ = s.request("POST", "/downloads", {"repo": "slow/c"})
    assert st == 429 and c["error"]["code"] == "too_many_downloads"
    # jobs are keyed by (repo, revision, files): another revision or file pattern of a running
    # repo is a job of its own (here refused: two are running), not the running one
    for other in ({"repo": "slow/a", "revision": "v2"}, {"repo": "slow/a", "file": "*.bin"}, {"repo": "slow/a:x"}):
        st, j, _ = s.request("POST", "/downloads", other)
        assert st == 429 and j["error"]["code"] == "too_many_downloads", (other, j)
    st, again, _ = s.request("POST", "/downloads", {"repo": "slow/a", "revision": "main"})  # main is the default
    assert st == 200 and again["id"] == a["id"] and again["existing"] is True
    st, j = s.get("/downloads")
    running = [d for d in j["downloads"] if d["state"] == "running"]
    assert {d["repo"] for d in running} == {"slow/a", "slow/b"}
    assert [d["id"] for d in j["downloads"]][:2] == [b["id"], a["id"]]  # newest first
    assert j["max_active"] == 2
    # a shutdown in the middle cancels them and keeps the partials, without hanging
    t0 = time.monotonic()
    s.stop()
    assert s.proc.returncode == 0 and time.monotonic() - t0 < 10
    assert not (pathlib.Path(env["HF_HUB_CACHE"]) / "models--slow--a" / "snapshots").exists()


def test_download_errors(exe, env, hub, serve):
    hub.add_repo("acme/gated", {"tiny-qwen2.gguf": TINY.read_bytes()}, gated=True)
    hub.add_repo("acme/bad", {"tiny-qwen2.gguf": TINY.read_bytes()})
    hub.faults["tiny-qwen2.gguf"] = {"corrupt": True}
    s = serve("serve", str(TINY), extra={"HF_TOKEN": ""})
    jobs = {}
    for repo in ("acme/missing", "acme/gated", "acme/bad"):
        st, j, _ = s.request("POST", "/downloads", {"repo": repo})
        assert st == 202, j
        jobs[repo] = s.wait_download(j["id"])
    for job in jobs.values():
        assert job["state"] == "failed" and job["error"] and job["finished_at"], job
    assert "acme/missing" in jobs["acme/missing"]["error"]
    assert "HF_TOKEN" in jobs["acme/gated"]["error"] or "401" in jobs["acme/gated"]["error"]
    assert "sha256" in jobs["acme/bad"]["error"] or "checksum" in jobs["acme/bad"]["error"]
    st, j = s.get("/downloads")
    assert [d["repo"] for d in j["downloads"]] == ["acme/bad", "acme/gated", "acme/missing"]
    assert s.get("/library")[1]["models"] == []
    # requests that never start a job
    for body, code, param in [({"repo": "not-a-repo"}, 400, None), ({"repo": "a/../b"}, 400, None),
                              ({"file": "*.gguf"}, 400, "repo"), ({"repo": 7}, 400, "repo"),
                              ({"repo": "a/b", "revision": "x\ny"}, 400, None)]:
        st, j, _ = s.request("POST", "/downloads", body)
        assert st == code and j["error"]["param"] == param, (body, j)
    st, j, _ = s.request("POST", "/downloads", '{"repo": "a/b"}', {"Content-Type": "text/plain"})
    assert st == 415
    st, j, _ = s.request("POST", "/downloads", "[1,2", {"Content-Type": "application/json"})
    assert st == 400 and j["error"]["code"] == "invalid_json"
    assert len(s.get("/downloads")[1]["downloads"]) == 3


STARTERS = re.findall(r'\{"([\w.-]+/[\w.-]+)",\s*"([^"]+\.gguf)",\s*"(\w+)"',
                      (ROOT / "src" / "store" / "starter.c").read_text())


def test_first_run_fetches_the_starter(exe, env, hub, serve):
    assert len(STARTERS) >= 2, "the starter table of src/store/starter.c did not parse"
    for repo_id, fname, rev in STARTERS:
        hub.add_repo(repo_id, {fname: TINY.read_bytes(), "README.md": b"# starter\n"},
                     commit=rev if re.fullmatch(r"[0-9a-f]{40}", rev) else None)
    write_membw(env)
    s = serve()  # bare `hearth` (flags only), empty cache
    log = s.text()
    m = re.search(r"fetching the starter model that fits this machine: ([\w.-]+/[\w.-]+)/(\S+) \(", log)
    assert m, log
    picked = (m.group(1), m.group(2))
    assert picked in {(r, f) for r, f, _ in STARTERS}
    assert "verified" in log  # get's progress lines
    assert re.search(r"model +%s " % re.escape(picked[0]), log)
    st, j = s.get("/v1/models")
    assert st == 200 and j["data"][0]["id"] == picked[0]
    lib = s.get("/library")[1]["models"]
    assert [(x["repo"], x["file"], x["serving"]) for x in lib] == [(picked[0], picked[1], True)]
    # only that file was fetched, and a second start finds it without the hub
    assert {e["path"].rsplit("/", 1)[-1] for e in hub.requests("resolve")} == {picked[1]}
    s.stop()
    n = len(hub.log)
    s = serve()
    assert "fetching" not in s.text() and len(hub.log) == n
    assert s.get("/v1/models")[1]["data"][0]["id"] == picked[0]


def test_first_run_offline_and_failures(exe, env, hub):
    def bare(**extra):
        return subprocess.run([str(exe), "--port", "0", "--no-open"], capture_output=True, text=True, timeout=60,
                              env=dict(env, **extra))
    write_membw(env)
    r = bare(HF_HUB_OFFLINE="1")
    assert r.returncode == 1 and "HF_HUB_OFFLINE" in r.stderr and "make setup" in r.stderr
    assert not hub.log
    r = bare()  # the hub has none of the starters
    assert r.returncode == 1 and "cannot fetch the starter model" in r.stderr
    assert not list(pathlib.Path(env["HF_HUB_CACHE"]).glob("models--*/snapshots"))
    # a cache with other models: no download, a pointer to them instead
    hub.add_repo("acme/tiny", {"tiny-qwen2.gguf": TINY.read_bytes()})
    get(exe, env, "acme/tiny")
    n = len(hub.log)
    r = bare()
    assert r.returncode == 1 and "1 other model" in r.stderr and "hearth ls" in r.stderr
    assert len(hub.log) == n
