"""`hearth serve --unix` and `serve --isolate`: the engine in a child process that may die or
hang while the server keeps answering (docs/isolation.md).

Every server binds 127.0.0.1 or a unix socket in a temporary directory; every load is bounded
(8 streams, a few requests) and every wait has a deadline. The expected tokens are never
written by hand: each isolated answer is compared with the same greedy request served
in-process by the same binary and model.
"""
import json
import os
import pathlib
import re
import signal
import subprocess
import tempfile
import threading
import time

import httpx2 as httpx  # the HTTP library this openai SDK is built on (its uds transport)
import openai
import pytest

from conftest import ROOT, smol_server
from test_server_openai import EXE, Server

MSG = [{"role": "user", "content": "Write a long story about a dragon who learns to bake bread."}]


def chat_text(s, model="x", max_tokens=12, **kw):
    r = s.client().chat.completions.create(model=model, messages=MSG, max_tokens=max_tokens, temperature=0, **kw)
    return r.choices[0].message.content


def stream_text(s, model="x", max_tokens=12):
    out = []
    for ch in s.client().chat.completions.create(model=model, messages=MSG, max_tokens=max_tokens, temperature=0,
                                                 stream=True):
        if ch.choices and ch.choices[0].delta.content:
            out.append(ch.choices[0].delta.content)
    return "".join(out)


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


def pid_gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.fixture(scope="module")
def plain():
    yield from smol_server()


@pytest.fixture(scope="module")
def iso():
    yield from smol_server("--isolate", "--heartbeat-timeout", "2")


# ---- --unix -----------------------------------------------------------------------------------

class UnixServer:
    def __init__(self, model, path, *args, timeout=60):
        self.path = path
        self.log = tempfile.NamedTemporaryFile(prefix="hearth-unix-", suffix=".log", delete=False)
        self.proc = subprocess.Popen([str(EXE), "serve", model, "--unix", path, "--no-open", "--seed", "1", *args],
                                     stdout=subprocess.DEVNULL, stderr=self.log, stdin=subprocess.DEVNULL, cwd=ROOT)
        wait_for(lambda: "unix:" + path in self.stderr() or self.proc.poll() is not None, timeout, "the ready card")
        assert self.proc.poll() is None, self.stderr()

    def stderr(self):
        return pathlib.Path(self.log.name).read_text(errors="replace")

    def client(self):
        http = httpx.Client(transport=httpx.HTTPTransport(uds=self.path), timeout=60)
        return openai.OpenAI(base_url="http://localhost/v1", api_key="none", max_retries=0, http_client=http)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=15)
        assert self.proc.returncode == 0, self.stderr()[-2000:]
        os.unlink(self.log.name)


def test_unix_socket_through_the_sdk(plain, smollm2, tmp_path):
    path = str(tmp_path / "h.sock")
    s = UnixServer(smollm2, path)
    try:
        assert (os.stat(path).st_mode & 0o777) == 0o600
        r = s.client().chat.completions.create(model="x", messages=MSG, max_tokens=12, temperature=0)
        assert r.choices[0].message.content == chat_text(plain)
        # a second server on the live socket is refused, naming it; the first keeps serving
        p = subprocess.run([str(EXE), "serve", smollm2, "--unix", path, "--no-open"], capture_output=True,
                           text=True, timeout=60, cwd=ROOT)
        assert p.returncode == 1 and "already listening" in p.stderr and path in p.stderr, p.stderr
        assert s.client().models.list().data
    finally:
        s.stop()
    assert not os.path.exists(path), "the socket file outlived its server"


def test_unix_socket_refuses_a_file_and_takes_a_stale_socket(smollm2, tmp_path):
    f = tmp_path / "not-a-socket"
    f.write_text("x")
    p = subprocess.run([str(EXE), "serve", smollm2, "--unix", str(f), "--no-open"], capture_output=True, text=True,
                       timeout=60, cwd=ROOT)
    assert p.returncode == 1 and "is not a socket" in p.stderr, p.stderr
    assert f.read_text() == "x"
    # a socket left by a killed server is taken over
    path = str(tmp_path / "stale.sock")
    s = UnixServer(smollm2, path)
    s.proc.kill()
    s.proc.wait()
    os.unlink(s.log.name)
    assert os.path.exists(path)
    s2 = UnixServer(smollm2, path)
    try:
        assert s2.client().models.list().data
    finally:
        s2.stop()


# ---- --isolate --------------------------------------------------------------------------------

def engine_pid(s):
    return s.stats()["engine_pid"]


def test_isolated_answers_match_in_process(plain, iso):
    st = iso.stats()
    pid = st["engine_pid"]
    assert pid > 0 and pid != iso.proc.pid
    assert [e["state"] for e in st["engines"]] == ["ready"]
    assert chat_text(iso) == chat_text(plain)
    assert stream_text(iso) == stream_text(plain)
    # the other APIs and the small routes pass through too
    assert iso.client().models.list().data[0].id == plain.client().models.list().data[0].id
    st_code, _, body = iso.raw("POST", "/tokenize", {"content": "hello world"})
    assert st_code == 200 and json.loads(body) == json.loads(plain.raw("POST", "/tokenize",
                                                                       {"content": "hello world"})[2])
    st_code, hdr, body = iso.raw("GET", "/")
    assert st_code == 200 and "text/html" in hdr.get("Content-Type", "")


SAMPLE = re.compile(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)')


def parse_prometheus(text):
    """{(name, ((label, value), ...)): value} of a text exposition (format 0.0.4), failing on
    what a Prometheus scrape refuses: a second HELP or TYPE of a family, a family whose lines
    are not together, a repeated label name, a series given twice, a malformed line."""
    series, typed, helped, done, cur = {}, set(), set(), set(), None
    for ln in text.splitlines():
        if not ln:
            continue
        m = re.match(r"# (HELP|TYPE) (\S+)", ln)
        if m:
            kind, name = m.groups()
            seen = typed if kind == "TYPE" else helped
            assert name not in seen, f"a second {kind} of {name}"
            seen.add(name)
            if name != cur:
                assert name not in done, f"the family {name} is split"
                if cur:
                    done.add(cur)
                cur = name
            continue
        assert not ln.startswith("#"), ln
        m = SAMPLE.match(ln)
        assert m, f"malformed sample line: {ln!r}"
        name, labels, value = m.groups()
        fam = cur if cur and re.fullmatch(re.escape(cur) + r"(_bucket|_sum|_count|_total)?", name) else name
        if fam != cur:
            assert fam not in done, f"the family {fam} is split"
            if cur:
                done.add(cur)
            cur = fam
        pairs, rest = [], labels or ""
        while rest:
            lm = LABEL.match(rest)
            assert lm, f"malformed labels in {ln!r}"
            pairs.append(lm.group(1, 2))
            rest = rest[lm.end():]
        names = [k for k, _ in pairs]
        assert len(names) == len(set(names)), f"a repeated label in {ln!r}"
        key = (name, tuple(sorted(pairs)))
        assert key not in series, f"the series is given twice: {ln!r}"
        series[key] = float(value)
    return series


def by_label(series, name, **labels):
    return [v for (n, ls), v in series.items() if n == name and all((k, w) in ls for k, w in labels.items())]


def test_isolated_metrics_include_the_childs_series(iso):
    model = iso.client().models.list().data[0].id
    assert chat_text(iso)
    st, hdr, body = iso.raw("GET", "/metrics")
    assert st == 200 and hdr["Content-Type"].startswith("text/plain")
    m = parse_prometheus(body.decode())
    # the child's engine counters, labelled with its model; the serving process's own too
    assert by_label(m, "hearth_completion_tokens_total", model=model)[0] > 0
    assert by_label(m, "hearth_kv_blocks_free", model=model)[0] > 0
    assert by_label(m, "hearth_requests_total", model=model, endpoint="chat_completions", code="2xx")[0] >= 1
    assert m[("hearth_requests_total", (("code", "2xx"), ("endpoint", "chat_completions")))] >= 1
    assert [v for (n, ls), v in m.items() if n == "hearth_info"] == [1.0]
    assert m[("hearth_engine_scrape_failures_total", ())] == 0


def test_isolated_metrics_skip_a_child_that_does_not_answer(iso):
    """A stopped child is left out of the scrape within its deadline (1 s) and counted; it is
    resumed before the hang detection (2 s here) takes it."""
    model = iso.client().models.list().data[0].id
    pid = engine_pid(iso)
    os.kill(pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        st, _, body = iso.raw("GET", "/metrics")
        took = time.monotonic() - t0
    finally:
        os.kill(pid, signal.SIGCONT)
    assert st == 200 and took < 1.8, took
    m = parse_prometheus(body.decode())
    assert not by_label(m, "hearth_completion_tokens_total", model=model)
    assert m[("hearth_engine_scrape_failures_total", ())] == 1
    wait_for(lambda: by_label(parse_prometheus(iso.raw("GET", "/metrics")[2].decode()),
                              "hearth_completion_tokens_total", model=model), 20, "the child's series again")


def test_kill9_during_streams(iso):
    """8 streams in flight, the engine child SIGKILLed: every stream ends with an error event (no
    client hangs), /health never fails, the child is replaced and the next request is served."""
    pid = engine_pid(iso)
    health_fail, stop_probe = [], threading.Event()

    def probe():
        while not stop_probe.is_set():
            try:
                c, _, _ = iso.raw("GET", "/health", timeout=2)
                if c != 200:
                    health_fail.append(c)
            except Exception as ex:  # noqa: BLE001 - any failure counts
                health_fail.append(repr(ex))
            time.sleep(0.05)

    started = threading.Barrier(9, timeout=120)
    results = [None] * 8

    def stream(i):
        c = iso.client()
        try:
            it = c.chat.completions.create(model="x", messages=MSG, max_tokens=400, temperature=0, stream=True)
            first = True
            n = 0
            for ch in it:
                n += 1
                if first:
                    first = False
                    started.wait()
            results[i] = ("finished", n)
        except openai.APIError as ex:
            results[i] = ("error", str(ex))
        except Exception as ex:  # noqa: BLE001
            results[i] = ("other", repr(ex))

    pt = threading.Thread(target=probe)
    pt.start()
    ts = [threading.Thread(target=stream, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    started.wait()
    t_kill = time.monotonic()
    os.kill(pid, signal.SIGKILL)
    for t in ts:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in ts), "a client hung after the engine died"
    assert all(r and r[0] == "error" and "engine process" in r[1] for r in results), results
    # the next request waits for the respawn and is served
    assert chat_text(iso, max_tokens=4)
    recovered_s = time.monotonic() - t_kill
    time.sleep(0.2)
    stop_probe.set()
    pt.join()
    assert not health_fail, health_fail
    st = iso.stats()
    assert st["engine_pid"] != pid and st["engine_pid"] > 0
    assert st["engines"][0]["restarts"] >= 1
    assert pid_gone(pid)
    print(f"kill -9 during 8 streams: 8 errors, recovered in {recovered_s:.2f} s")


def test_killed_child_non_stream_gets_503_retry_after(iso):
    pid = engine_pid(iso)
    box = {}

    def go():
        box["r"] = iso.raw("POST", "/v1/chat/completions",
                           {"model": "x", "messages": MSG, "max_tokens": 400, "temperature": 0}, timeout=60)

    t = threading.Thread(target=go)
    t.start()
    wait_for(lambda: iso.stats()["engines"][0]["in_flight"] >= 1, 30, "the request to reach the engine")
    time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)
    t.join(timeout=60)
    status, hdr, body = box["r"]
    assert status == 503, body
    assert int(hdr["Retry-After"]) >= 1
    err = json.loads(body)["error"]
    assert err["code"] == "engine_restarting" and err["type"] == "server_error"
    assert chat_text(iso, max_tokens=4)


def sse_events(resp):
    """(event name or None, data) of each SSE frame until the stream's end."""
    ev, data, out = None, [], []
    for line in resp:
        line = line.decode().rstrip("\r\n")
        if line.startswith("event: "):
            ev = line[7:]
        elif line.startswith("data: "):
            data.append(line[6:])
        elif not line and data:
            out.append((ev, "\n".join(data)))
            ev, data = None, []
    return out


@pytest.mark.parametrize("path,body,last", [
    ("/v1/messages", {"model": "x", "max_tokens": 400, "messages": MSG, "stream": True}, "error"),
    ("/v1/responses", {"model": "x", "max_output_tokens": 400, "input": MSG[0]["content"], "stream": True},
     "response.failed"),
    ("/v1/completions", {"model": "x", "max_tokens": 400, "prompt": "Once upon a time", "stream": True}, None),
])
def test_killed_child_ends_each_dialects_stream(iso, path, body, last):
    """The error event of each API when the engine dies mid-stream; every frame before it is
    whole JSON."""
    import http.client
    pid = engine_pid(iso)
    c = http.client.HTTPConnection("127.0.0.1", iso.port, timeout=60)
    try:
        c.request("POST", path, body=json.dumps(dict(body, temperature=0)),
                  headers={"Content-Type": "application/json", "anthropic-version": "2023-06-01"})
        r = c.getresponse()
        assert r.status == 200 and r.getheader("Content-Type").startswith("text/event-stream")
        first = r.readline()  # the stream has started (read through the chunked framing)
        assert first.strip()
        time.sleep(0.3)
        os.kill(pid, signal.SIGKILL)
        events = sse_events(r)
    finally:
        c.close()
    assert events, "the stream ended with no frame"
    for _, data in events:
        if data != "[DONE]":
            json.loads(data)
    if last is None:  # OpenAI: an error object, then [DONE]
        assert events[-1][1] == "[DONE]"
        err = json.loads(events[-2][1])["error"]
    else:
        assert events[-1][0] == last, events[-3:]
        j = json.loads(events[-1][1])
        err = j["error"] if last == "error" else j["response"]["error"]
        if last == "response.failed":
            assert j["response"]["status"] == "failed"
    assert "engine process" in err["message"]
    assert chat_text(iso, max_tokens=4)


def test_hung_child_is_killed_and_replaced(iso):
    pid = engine_pid(iso)
    os.kill(pid, signal.SIGSTOP)
    try:
        t0 = time.monotonic()
        # the server itself answers while its engine is stopped
        for path in ("/health", "/stats", "/"):
            assert iso.raw("GET", path, timeout=2)[0] == 200
        new = wait_for(lambda: (p := engine_pid(iso)) != pid and p, 30, "a new engine after SIGSTOP")
        took = time.monotonic() - t0
        assert 1.5 <= took < 30, took  # the heartbeat timeout is 2 s
        assert new > 0
        wait_for(lambda: pid_gone(pid), 10, "the stopped engine to be killed")
    finally:
        try:
            os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            pass
    assert chat_text(iso, max_tokens=4)


def test_isolate_flags_are_checked(smollm2):
    p = subprocess.run([str(EXE), "serve", smollm2, "--model-pool", "2", "--no-open"], capture_output=True,
                       text=True, timeout=30, cwd=ROOT)
    assert p.returncode == 2 and "--model-pool needs --isolate" in p.stderr, p.stderr


# ---- --model-pool -----------------------------------------------------------------------------

def link_model(hub, repo, src):
    """Put the model file or folder src into a hub cache at hub as repo (org/name), the way
    huggingface_hub lays it out (snapshot entries are symlinks)."""
    org, name = repo.split("/")
    d = hub / f"models--{org}--{name}"
    snap = d / "snapshots" / "r1"
    snap.mkdir(parents=True)
    (d / "refs").mkdir()
    (d / "refs" / "main").write_text("r1")
    src = pathlib.Path(src)
    if src.is_dir():
        for f in src.iterdir():
            (snap / f.name).symlink_to(f.resolve())
    else:
        (snap / src.name).symlink_to(src.resolve())


def complete_text(s, model, prompt="The capital of France is", n=8):
    r = s.client().completions.create(model=model, prompt=prompt, max_tokens=n, temperature=0)
    return r.choices[0].text


def loaded(s):
    return {m.id: m.loaded for m in s.client().models.list().data}


def test_pool_of_two_over_three_models(smollm2, tmp_path):
    from conftest import TINY
    gemma = os.environ.get("HEARTH_GEMMA3_GGUF")
    if not gemma:
        pytest.skip("HEARTH_GEMMA3_GGUF is not set")
    models = {"test/smol": smollm2, "test/gemma": gemma, "test/tiny": TINY}
    want = {}
    for repo, path in models.items():  # each model served alone, in-process
        s = Server(path)
        try:
            want[repo] = complete_text(s, "x")
        finally:
            s.stop()
    hub = tmp_path / "hub"
    for repo, path in models.items():
        link_model(hub, repo, path)
    env = {"HF_HUB_CACHE": str(hub), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    s = Server("test/smol", "--isolate", "--model-pool", "2", env=env, timeout=60)
    try:
        assert loaded(s) == {"test/smol": True, "test/gemma": False, "test/tiny": False}
        assert complete_text(s, "test/smol") == want["test/smol"]
        assert complete_text(s, "test/gemma") == want["test/gemma"]
        assert loaded(s) == {"test/smol": True, "test/gemma": True, "test/tiny": False}
        # a third model: the least recently used one (smol) drains and exits
        smol_pid = [e["pid"] for e in s.stats()["engines"] if e["model"] == "test/smol"][0]
        assert complete_text(s, "test/tiny") == want["test/tiny"]
        assert loaded(s) == {"test/smol": False, "test/gemma": True, "test/tiny": True}
        wait_for(lambda: pid_gone(smol_pid), 10, "the evicted engine to exit")
        # gemma is now the least recently used: smol comes back in its place
        assert complete_text(s, "test/smol") == want["test/smol"]
        assert loaded(s) == {"test/smol": True, "test/gemma": False, "test/tiny": True}
        assert complete_text(s, "test/tiny") == want["test/tiny"]
        st = s.stats()
        assert sorted(e["model"] for e in st["engines"] if e["state"] == "ready") == ["test/smol", "test/tiny"]
        assert st["model_pool"] == 2
        # a name the store does not know, and a path, are 404s naming the model
        for bad in ("no/such-model", "/etc/passwd", "../x"):
            with pytest.raises(openai.NotFoundError) as ex:
                complete_text(s, bad)
            assert bad in str(ex.value) and "test/smol" in str(ex.value)
    finally:
        s.stop()


def test_pool_serves_embeddings_beside_a_chat_model(smollm2, plain, tmp_path):
    minilm = os.environ.get("HEARTH_MINILM")
    if not minilm:
        pytest.skip("HEARTH_MINILM is not set")
    texts = ["a cat sat on the mat", "stock markets fell today"]
    alone = Server(minilm)
    try:
        want = [d.embedding for d in alone.client().embeddings.create(model="x", input=texts).data]
    finally:
        alone.stop()
    hub = tmp_path / "hub"
    link_model(hub, "test/smol", smollm2)
    link_model(hub, "test/minilm", minilm)
    env = {"HF_HUB_CACHE": str(hub), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    s = Server("test/smol", "--isolate", "--model-pool", "2", env=env, timeout=60)
    try:
        got = [d.embedding for d in s.client().embeddings.create(model="test/minilm", input=texts).data]
        assert got == want
        assert chat_text(s, model="test/smol") == chat_text(plain)
        assert loaded(s) == {"test/smol": True, "test/minilm": True}
    finally:
        s.stop()


def test_pool_eviction_keeps_the_prompt_cache_on_the_ssd_tier(smollm2, tmp_path):
    """An engine evicted from the pool writes its prompt cache to its folder of --ssd-cache;
    started again, it answers the same long prompt from there (cached tokens) with the same
    tokens."""
    from conftest import TINY
    hub = tmp_path / "hub"
    link_model(hub, "test/smol", smollm2)
    link_model(hub, "test/tiny", TINY)
    env = {"HF_HUB_CACHE": str(hub), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    d = tmp_path / "ssd"
    prompt = "Facts: " + " ".join(["river stone lantern orchard meadow copper violet harbor"] * 16)
    s = Server("test/smol", "--isolate", "--model-pool", "1", "--ssd-cache", str(d), env=env, timeout=60)
    try:
        def ask():
            c = openai.OpenAI(base_url=s.base + "/v1", api_key="none", max_retries=0, timeout=300)  # sanitizer builds
            r = c.completions.create(model="test/smol", prompt=prompt, max_tokens=6, temperature=0)
            return r.choices[0].text, r.usage.prompt_tokens_details.cached_tokens

        first, cached0 = ask()
        assert cached0 == 0
        assert complete_text(s, "test/tiny")  # evicts smol: its cache goes to d/test--smol
        assert loaded(s)["test/smol"] is False
        assert list((d / "test--smol").glob("*.kv")), sorted(p.name for p in d.rglob("*"))
        again, cached1 = ask()  # smol again, in a fresh process
        assert again == first
        assert cached1 > 0
    finally:
        s.stop()


def test_pool_of_one_under_concurrent_requests_for_two_models(smollm2, tmp_path):
    """Two clients asking for two models at once through a pool of one: every request is
    served (the engines take turns; none is evicted before its waiting request ran) with
    each model's own tokens."""
    from conftest import TINY
    models = {"test/smol": smollm2, "test/tiny": TINY}
    want = {}
    for repo, path in models.items():
        alone = Server(path)
        try:
            want[repo] = complete_text(alone, "x", n=4)
        finally:
            alone.stop()
    hub = tmp_path / "hub"
    for repo, path in models.items():
        link_model(hub, repo, path)
    env = {"HF_HUB_CACHE": str(hub), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    s = Server("test/smol", "--isolate", "--model-pool", "1", env=env, timeout=60)
    got, errors = [], []
    try:
        def client(order):
            try:
                for m in order:
                    got.append((m, complete_text(s, m, n=4)))
            except Exception as ex:  # noqa: BLE001 - reported below
                errors.append(repr(ex))

        ts = [threading.Thread(target=client, args=(o,)) for o in
              (["test/smol", "test/tiny"] * 2, ["test/tiny", "test/smol"] * 2)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(timeout=240)
        assert not any(t.is_alive() for t in ts), "a request waited forever"
        assert not errors, errors
        assert len(got) == 8 and all(text == want[m] for m, text in got), got
        assert sum(e["state"] == "ready" for e in s.stats()["engines"]) <= 1
    finally:
        s.stop()


def test_pool_finds_a_stored_response_in_its_models_child(smollm2, tmp_path):
    """GET and DELETE /v1/responses/ID reach the child of the model that made the response,
    not only the default model's. The second model is the same file under another id: a child
    of its own, and a cheap one."""
    hub = tmp_path / "hub"
    link_model(hub, "test/smol", smollm2)
    link_model(hub, "test/other", smollm2)
    env = {"HF_HUB_CACHE": str(hub), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    s = Server("test/smol", "--isolate", "--model-pool", "2", env=env, timeout=60)
    try:
        made = {}
        for model in ("test/other", "test/smol"):
            r = s.client().responses.create(model=model, input="The capital of France is", max_output_tokens=4,
                                            temperature=0)
            made[model] = r
        assert loaded(s) == {"test/smol": True, "test/other": True}
        for model, r in made.items():
            st, _, body = s.raw("GET", f"/v1/responses/{r.id}")
            assert st == 200, body
            got = json.loads(body)
            assert got["id"] == r.id and got["model"] == r.model == model
            assert got["output"][0]["content"][0]["text"] == r.output_text
        other_id = made["test/other"].id
        st, _, body = s.raw("DELETE", f"/v1/responses/{other_id}")
        assert st == 200 and json.loads(body) == {"id": other_id, "object": "response", "deleted": True}
        st, _, body = s.raw("GET", f"/v1/responses/{other_id}")
        assert st == 404 and other_id in json.loads(body)["error"]["message"]
        st, _, body = s.raw("GET", "/v1/responses/resp_nosuch")
        assert st == 404 and "resp_nosuch" in body.decode()
        assert s.raw("GET", f"/v1/responses/{made['test/smol'].id}")[0] == 200
    finally:
        s.stop()


def test_pool_admits_models_by_memory(smollm2, tmp_path):
    """--memory-budget bounds the sum over the resident engines: a model that does not fit next
    to the others makes the least recently used one drain (the count cap, 3, is not reached), and
    one over the budget on its own is refused with memory_admission in each API's error shape.
    test/other is SmolLM2 under another id (about 0.25 GB each: weights, one context of KV,
    transients); Gemma 3 270M needs about 0.34 GB, over the 0.3 GB budget alone."""
    gemma = os.environ.get("HEARTH_GEMMA3_GGUF")
    if not gemma:
        pytest.skip("HEARTH_GEMMA3_GGUF is not set")
    hub = tmp_path / "hub"
    link_model(hub, "test/smol", smollm2)
    link_model(hub, "test/other", smollm2)
    link_model(hub, "test/gemma", gemma)
    env = {"HF_HUB_CACHE": str(hub), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    s = Server("test/smol", "--isolate", "--model-pool", "3", "--memory-budget", "0.3", env=env, timeout=60)
    try:
        want = complete_text(s, "test/smol")
        st = s.stats()
        assert st["memory_budget"] == 300_000_000
        smol = [e for e in st["engines"] if e["model"] == "test/smol"][0]
        wait_for(lambda: [e for e in s.stats()["engines"] if e["model"] == "test/smol"][0]["memory_measured"], 10,
                 "the child's own memory figures")
        held = [e for e in s.stats()["engines"] if e["model"] == "test/smol"][0]["memory_bytes"]
        assert 150_000_000 < held <= 300_000_000, held
        # a second model of the same size does not fit next to the first: the first drains
        assert complete_text(s, "test/other") == want
        assert loaded(s) == {"test/smol": False, "test/other": True, "test/gemma": False}
        wait_for(lambda: pid_gone(smol["pid"]), 10, "the evicted engine to exit")
        assert sum(e["memory_bytes"] for e in s.stats()["engines"]) <= 300_000_000
        # a model over the budget on its own is refused, naming it, its estimate and the budget
        with pytest.raises(openai.BadRequestError) as ex:
            complete_text(s, "test/gemma")
        err = ex.value.body
        assert err["type"] == "memory_admission" and err["code"] == "model_over_budget", err
        assert "test/gemma" in err["message"] and "300 MB" in err["message"], err["message"]
        assert re.search(r"needs about 3\d\d(\.\d)? MB", err["message"]), err["message"]
        status, _, body = s.raw("POST", "/v1/messages", {"model": "test/gemma", "max_tokens": 4,
                                                        "messages": [{"role": "user", "content": "hi"}]},
                                headers={"anthropic-version": "2023-06-01"})
        assert status == 400, body
        j = json.loads(body)
        assert j["type"] == "error" and j["error"]["type"] == "invalid_request_error", j
        assert "test/gemma" in j["error"]["message"] and "memory budget" in j["error"]["message"]
        status, _, body = s.raw("POST", "/v1/responses", {"model": "test/gemma", "input": "hi",
                                                         "max_output_tokens": 4})
        assert status == 400 and json.loads(body)["error"]["type"] == "memory_admission", body
        # the refusal left the pool as it was
        assert loaded(s) == {"test/smol": False, "test/other": True, "test/gemma": False}
        assert complete_text(s, "test/other") == want
    finally:
        s.stop()


def test_pool_refuses_a_default_model_over_the_memory_budget(smollm2, tmp_path):
    hub = tmp_path / "hub"
    link_model(hub, "test/smol", smollm2)
    env = dict(os.environ, HF_HUB_CACHE=str(hub), XDG_CACHE_HOME=str(tmp_path / "xdg"))
    p = subprocess.run([str(EXE), "serve", "test/smol", "--isolate", "--model-pool", "2", "--memory-budget", "0.1",
                        "--port", "0", "--no-open"], capture_output=True, text=True, timeout=60, cwd=ROOT, env=env)
    assert p.returncode == 1, p.stderr
    assert "test/smol" in p.stderr and "100 MB" in p.stderr and "memory budget" in p.stderr, p.stderr


@pytest.mark.parametrize("flags", [(), ("--isolate",)], ids=["in-process", "isolate"])
def test_without_a_pool_another_model_of_the_store_is_a_404(smollm2, tmp_path, flags):
    """Without --model-pool, a request naming another model of the store (its exact id, or
    id/file, in any case) is refused naming the served model and the flag; the served model's
    own registry id, and names that are no model of the store, are served by the one model."""
    from conftest import TINY
    hub = tmp_path / "hub"
    link_model(hub, "test/smol", smollm2)
    link_model(hub, "test/tiny", TINY)
    env = {"HF_HUB_CACHE": str(hub), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    s = Server(smollm2, *flags, env=env, timeout=60)
    try:
        want = complete_text(s, "x", n=4)
        for name in ("test/smol", "gpt-4", "tiny", "no/such-model", "test/smol/SmolLM2-135M-Instruct.Q4_1.gguf"):
            assert complete_text(s, name, n=4) == want, name
        served = s.client().models.list().data[0].id
        for name in ("test/tiny", "TEST/Tiny", "test/tiny/tiny-qwen2.gguf"):
            with pytest.raises(openai.NotFoundError) as ex:
                complete_text(s, name, n=4)
            err = ex.value.body
            assert err["code"] == "model_not_found" and err["param"] == "model", err
            assert "test/tiny" in err["message"] and served in err["message"], err["message"]
            assert "--model-pool" in err["message"], err["message"]
        status, _, body = s.raw("POST", "/v1/messages", {"model": "test/tiny", "max_tokens": 4,
                                                        "messages": [{"role": "user", "content": "hi"}]},
                                headers={"anthropic-version": "2023-06-01"})
        j = json.loads(body)
        assert status == 404 and j["type"] == "error" and j["error"]["type"] == "not_found_error", j
        assert "--model-pool" in j["error"]["message"]
        assert complete_text(s, "x", n=4) == want
    finally:
        s.stop()


def test_pool_stored_responses_outlive_eviction_and_chain_across_models(smollm2, tmp_path):
    """The children share one store of responses: with a pool of one, a response made by
    test/smol is found after smol was evicted, test/other continues it (previous_response_id),
    and smol continues other's. Each continuation is the chat of the whole conversation on the
    continuing model, token for token. test/other is SmolLM2 under another id: a model of the
    pool with a child of its own (the starter models here have no other chat template)."""
    hub = tmp_path / "hub"
    link_model(hub, "test/smol", smollm2)
    link_model(hub, "test/other", smollm2)
    env = {"HF_HUB_CACHE": str(hub), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    s = Server("test/smol", "--isolate", "--model-pool", "1", env=env, timeout=60)
    q1, q2, q3 = "Name a color.", "Name a fruit.", "Name a city."

    def create(model, **kw):
        return s.client().responses.create(model=model, max_output_tokens=8, temperature=0, **kw)

    def chat(model, messages):
        return s.client().chat.completions.create(model=model, messages=messages, max_tokens=8, temperature=0)

    try:
        r1 = create("test/smol", input=q1)
        r2 = create("test/other", input=q2, previous_response_id=r1.id)  # smol's child is evicted for it
        assert loaded(s) == {"test/smol": False, "test/other": True}
        conv = [{"role": "user", "content": q1}, {"role": "assistant", "content": r1.output_text},
                {"role": "user", "content": q2}]
        ref = chat("test/other", conv)
        assert r2.output_text == ref.choices[0].message.content
        assert r2.usage.input_tokens == ref.usage.prompt_tokens
        # smol's response, after smol's child is gone
        st, _, body = s.raw("GET", f"/v1/responses/{r1.id}")
        assert st == 200, body
        got = json.loads(body)
        assert got["id"] == r1.id and got["model"] == "test/smol"
        assert got["output"][0]["content"][0]["text"] == r1.output_text
        # and back: smol continues other's response (other is evicted now)
        r3 = create("test/smol", input=q3, previous_response_id=r2.id)
        assert loaded(s) == {"test/smol": True, "test/other": False}
        ref3 = chat("test/smol", conv + [{"role": "assistant", "content": r2.output_text},
                                         {"role": "user", "content": q3}])
        assert r3.output_text == ref3.choices[0].message.content
        assert r3.usage.input_tokens == ref3.usage.prompt_tokens
        # a delete is seen by every child
        assert s.raw("DELETE", f"/v1/responses/{r2.id}")[0] == 200
        st, _, body = s.raw("GET", f"/v1/responses/{r2.id}")
        assert st == 404 and r2.id in json.loads(body)["error"]["message"]
        with pytest.raises(openai.NotFoundError):
            create("test/other", input=q3, previous_response_id=r2.id)
    finally:
        s.stop()


def test_metrics_scrape_has_one_deadline_for_all_children(smollm2, tmp_path):
    """Two stopped children cost a /metrics scrape one deadline (1 s), not one each: they are
    asked at once. Both are left out and counted; resumed before the hang detection (5 s here)
    takes them, their series come back."""
    hub = tmp_path / "hub"
    link_model(hub, "test/smol", smollm2)
    link_model(hub, "test/other", smollm2)
    env = {"HF_HUB_CACHE": str(hub), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    s = Server("test/smol", "--isolate", "--model-pool", "2", "--heartbeat-timeout", "5", env=env, timeout=60)
    try:
        for m in ("test/smol", "test/other"):
            assert complete_text(s, m, n=2)
        pids = {e["model"]: e["pid"] for e in s.stats()["engines"] if e["state"] == "ready"}
        assert sorted(pids) == ["test/other", "test/smol"]
        m0 = parse_prometheus(s.raw("GET", "/metrics")[2].decode())
        assert all(by_label(m0, "hearth_completion_tokens_total", model=m) for m in pids)
        for pid in pids.values():
            os.kill(pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            st, _, body = s.raw("GET", "/metrics")
            took = time.monotonic() - t0
        finally:
            for pid in pids.values():
                os.kill(pid, signal.SIGCONT)
        assert st == 200 and 0.9 <= took < 1.8, took
        m = parse_prometheus(body.decode())
        assert not any(by_label(m, "hearth_completion_tokens_total", model=x) for x in pids)
        assert m[("hearth_engine_scrape_failures_total", ())] == 2
        wait_for(lambda: all(by_label(parse_prometheus(s.raw("GET", "/metrics")[2].decode()),
                                      "hearth_completion_tokens_total", model=x) for x in pids), 20,
                 "both children's series again")
        assert {e["model"]: e["pid"] for e in s.stats()["engines"] if e["state"] == "ready"} == pids
    finally:
        s.stop()
