"""A bounded load test over the three chat dialects: 32 concurrent streaming clients x 4
requests each (8 tokens), rotating through OpenAI chat, Anthropic Messages and Responses,
against one `hearth serve` of SmolLM2. Every stream must arrive complete and well-formed in
its dialect's grammar (the checkers of the dialect suites), and /health is probed throughout;
its worst latency, the time to first token and the wall time are printed, not asserted (a
shared CI machine makes timings noise).
"""
import http.client
import json
import threading
import time

import pytest

from test_server_anthropic import check_grammar as anthropic_grammar
from conftest import smol_server
from test_server_responses import check_grammar as responses_grammar

N_CLIENTS, N_REQUESTS, MAX_TOKENS = 32, 4, 8


@pytest.fixture(scope="module")
def smol():
    yield from smol_server()


def stream(s, path, body):
    """(frames as (event name or None, data text), seconds to the first content frame)."""
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=120)
    t0 = time.monotonic()
    first = None
    try:
        c.request("POST", path, body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        assert r.status == 200, r.read()
        buf, frames = b"", []
        while True:
            chunk = r.read1(65536)
            if not chunk:
                break
            buf += chunk
            while b"\n\n" in buf:
                frame, buf = buf.split(b"\n\n", 1)
                lines = frame.decode().split("\n")
                name = lines[0][7:] if lines[0].startswith("event: ") else None
                data = lines[-1]
                assert data.startswith("data: "), frame
                if first is None and ("delta" in data):
                    first = time.monotonic() - t0
                frames.append((name, data[6:]))
        assert buf == b"", buf
    finally:
        c.close()
    return frames, first


def check_openai(frames):
    assert frames[-1] == (None, "[DONE]")
    chunks = [json.loads(d) for _, d in frames[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert len({c["id"] for c in chunks}) == 1
    assert chunks[-2]["choices"][0]["finish_reason"] in ("stop", "length")
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] <= MAX_TOKENS


def check_anthropic(frames):
    events = [(n, json.loads(d)) for n, d in frames]
    assert all(n == d["type"] for n, d in events)
    anthropic_grammar(events)
    assert events[-2][1]["usage"]["output_tokens"] <= MAX_TOKENS


def check_responses(frames):
    events = [json.loads(d) for _, d in frames]
    assert all(n == d["type"] for (n, _), d in zip(frames, events))
    _, final = responses_grammar(events)
    assert final["usage"]["output_tokens"] <= MAX_TOKENS


def request(k, j):
    """The (path, body, checker) of client k's j-th request: the dialects take turns."""
    msg = [{"role": "user", "content": f"Tell me a fact about the number {k * N_REQUESTS + j}."}]
    d = (k + j) % 3
    if d == 0:
        return "/v1/chat/completions", {"messages": msg, "max_tokens": MAX_TOKENS, "stream": True,
                                        "stream_options": {"include_usage": True}}, check_openai
    if d == 1:
        return "/v1/messages", {"messages": msg, "max_tokens": MAX_TOKENS, "stream": True}, check_anthropic
    return "/v1/responses", {"input": msg, "max_output_tokens": MAX_TOKENS, "stream": True,
                             "store": False}, check_responses


def test_concurrent_streams_all_dialects(smol):
    before = smol.stats()["generations"]
    results, errors, health_ms = [], [], []
    done = threading.Event()

    def client(k):
        for j in range(N_REQUESTS):
            path, body, check = request(k, j)
            try:
                t0 = time.monotonic()
                frames, first = stream(smol, path, body)
                check(frames)
                results.append((path, first, time.monotonic() - t0))
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(f"{path}: {e!r}")

    def health():
        while not done.is_set():
            t0 = time.monotonic()
            st, _, body = smol.raw("GET", "/health", timeout=10)
            health_ms.append((time.monotonic() - t0) * 1e3)
            assert st == 200 and json.loads(body) == {"status": "ok"}
            time.sleep(0.02)

    hz = threading.Thread(target=health)
    hz.start()
    t0 = time.monotonic()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(N_CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    wall = time.monotonic() - t0
    done.set()
    hz.join()
    assert not errors, errors[:3]
    assert len(results) == N_CLIENTS * N_REQUESTS
    after = smol.stats()["generations"]
    assert after["completed"] - before["completed"] == N_CLIENTS * N_REQUESTS
    assert after["active"] == 0 and after["failed"] == before["failed"]
    ttft = sorted(r[1] for r in results if r[1] is not None)
    per = {p: sum(1 for r in results if r[0] == p) for p in {r[0] for r in results}}
    print(f"\nload: {N_CLIENTS} clients x {N_REQUESTS} streams x {MAX_TOKENS} tokens ({per}) in {wall:.1f} s; "
          f"TTFT p50 {ttft[len(ttft) // 2] * 1e3:.0f} ms, max {ttft[-1] * 1e3:.0f} ms; "
          f"/health worst {max(health_ms):.1f} ms, median {sorted(health_ms)[len(health_ms) // 2]:.1f} ms "
          f"over {len(health_ms)} probes")
