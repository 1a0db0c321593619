"""The prompt cache's SSD tier through a real `hearth serve --ssd-cache` (docs/engine.md "SSD
tier"), on the committed tiny model: a server killed with SIGKILL while it writes blocks leaves a
directory the next server starts from, and every answer equals a cold server's; flipped bytes in
the stored files are caught and counted, and the answers stay right; a second server on the
directory is refused; the directory deleted while serving turns the tier read-only with one
warning and no failed request; the tier's flags without --ssd-cache warn.

Every request is greedy (temperature 0) on servers started with --seed 1. A prompt cache of
one block makes every finished request evict (and so write) nearly all its blocks.
"""
import json
import os
import pathlib
import signal
import subprocess
import threading
import time

import pytest

from conftest import ROOT, TINY
from test_server_openai import EXE, Server

WORDS = ("river stone lantern orchard meadow copper violet harbor thunder willow candle falcon "
         "granite pepper silver marble garden winter summer engine window basket").split()


def prompts(n=6):
    """n prompts of a few hundred tokens; pairs share their first half (a shared prefix)."""
    out = []
    for i in range(n):
        base = " ".join(WORDS[(j * 7 + (i // 2) * 3) % len(WORDS)] for j in range(90))
        tail = " ".join(WORDS[(j * 5 + i) % len(WORDS)] for j in range(60))
        out.append(f"Story {i // 2}: {base}. Part {i}: {tail}.")
    return out


def complete(s, prompt):
    st, _, body = s.raw("POST", "/v1/completions",
                        {"model": "tiny", "prompt": prompt, "max_tokens": 8, "temperature": 0}, timeout=60)
    assert st == 200, body
    return json.loads(body)["choices"][0]["text"]


def ssd(s):
    return s.stats()["ssd_cache"]


def ssd_when(s, ok, timeout=5):
    """The tier's counters once ok(them) holds (they are published after the engine's step, which
    may end after the answer went out), or as they are at the timeout."""
    deadline = time.monotonic() + timeout
    st = ssd(s)
    while not ok(st) and time.monotonic() < deadline:
        time.sleep(0.01)
        st = ssd(s)
    return st


def block_files(d):
    return sorted(p for p in pathlib.Path(d).iterdir() if p.name.endswith(".kv"))


def flip(path, off):
    b = bytearray(path.read_bytes())
    b[off] ^= 0x20
    path.write_bytes(bytes(b))


@pytest.fixture(scope="module")
def cold():
    """The answers of a server without any prompt cache."""
    s = Server(TINY, "--prompt-cache", "0")
    try:
        yield [complete(s, p) for p in prompts()]
    finally:
        s.stop()


SMALL = ("--prompt-cache", "1KB")  # below one block: every released block is evicted


def test_kill_while_writing_then_restart(cold, tmp_path):
    d = tmp_path / "kv"
    ps = prompts()
    s = Server(TINY, "--ssd-cache", str(d), *SMALL, "--ssd-cache-verify")
    stop = threading.Event()
    answers = []

    def loop():
        i = 0
        while not stop.is_set():
            try:
                answers.append((i % len(ps), complete(s, ps[i % len(ps)])))
            except Exception:  # the server is killed under it
                return
            i += 1

    t = threading.Thread(target=loop)
    t.start()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and ssd(s)["writes"] < 20:
        time.sleep(0.01)
    assert ssd(s)["writes"] >= 20
    os.kill(s.proc.pid, signal.SIGKILL)  # mid-stream: requests and writes in flight
    s.proc.wait()
    stop.set()
    t.join(timeout=30)
    s.stop(check=False)
    assert answers and all(a == cold[i] for i, a in answers)
    assert block_files(d)

    s = Server(TINY, "--ssd-cache", str(d), *SMALL, "--ssd-cache-verify")
    try:
        st = ssd(s)
        assert st["enabled"] and st["state"] == "on" and st["blocks"] > 0
        assert not list(d.glob("*.tmp")), "a killed writer's temporary files are gone at start"
        got = [complete(s, p) for p in ps]
        assert got == cold
        st = ssd_when(s, lambda st: st["restores"] > 0)
        assert st["restores"] > 0 and st["verify_failures"] == 0 and st["write_errors"] == 0
        prompt_cache = s.stats()["prompt_cache"]
        assert prompt_cache["hit_tokens"] >= 16 * st["restores"] // 2
        # a second server on the same directory is refused, saying why
        r = subprocess.run([str(EXE), "serve", TINY, "--ssd-cache", str(d), "--port", "0", "--no-open"],
                           capture_output=True, text=True, timeout=30, cwd=ROOT, stdin=subprocess.DEVNULL)
        assert r.returncode != 0
        assert "in use by another hearth" in r.stderr and f"pid {s.proc.pid}" in r.stderr
    finally:
        s.stop()


def test_flipped_bytes_are_caught(cold, tmp_path):
    d = tmp_path / "kv"
    ps = prompts()
    s = Server(TINY, "--ssd-cache", str(d), *SMALL)
    try:
        assert [complete(s, p) for p in ps] == cold
    finally:
        s.stop()  # a clean stop writes what is cached
    files = block_files(d)
    assert len(files) >= 10
    for f in files:  # a payload byte: caught with --ssd-cache-verify
        flip(f, f.stat().st_size - 3)
    s = Server(TINY, "--ssd-cache", str(d), *SMALL, "--ssd-cache-verify")
    try:
        assert [complete(s, p) for p in ps] == cold
        # (blocks recomputed and written again may be restored later: they are sound)
        st = ssd_when(s, lambda st: st["verify_failures"] > 0)
        assert st["verify_failures"] > 0
    finally:
        s.stop()
    for f in block_files(d):  # a header byte: always caught
        flip(f, 40)
    s = Server(TINY, "--ssd-cache", str(d), *SMALL)
    try:
        assert [complete(s, p) for p in ps] == cold
        st = ssd_when(s, lambda st: st["verify_failures"] > 0)
        assert st["verify_failures"] > 0
        m = s.raw("GET", "/metrics")[2].decode()
        assert f"hearth_ssd_cache_verify_failures_total {st['verify_failures']}" in m
    finally:
        s.stop()


def test_directory_deleted_while_serving(cold, tmp_path):
    d = tmp_path / "kv"
    ps = prompts()
    s = Server(TINY, "--ssd-cache", str(d), *SMALL)
    try:
        assert complete(s, ps[0]) == cold[0]
        subprocess.run(["rm", "-rf", str(d)], check=True)
        assert [complete(s, p) for p in ps] == cold
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and ssd(s)["state"] != "read_only":
            time.sleep(0.01)
        st = ssd(s)
        assert st["state"] == "read_only" and st["write_errors"] == 1
        assert [complete(s, p) for p in ps] == cold
        assert s.stderr().count("going on with the RAM prompt cache only") == 1
    finally:
        s.stop()


def test_tier_flags_without_a_directory_warn(hearth, tmp_path):
    r = hearth("generate", TINY, "--raw", "--max-tokens", "1", "--temp", "0", "--ssd-cache-verify",
               "--ssd-demote-idle", "5", "hello", timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("without --ssd-cache DIR is ignored") == 1
    r = hearth("help", "serve")
    for flag in ("--ssd-cache DIR", "--ssd-cache-max GB", "--ssd-demote-idle SEC", "--ssd-cache-verify"):
        assert flag in r.stdout + r.stderr
