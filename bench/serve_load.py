"""Served throughput: N concurrent streaming clients against `hearth serve`, beside the engine's own
figure for the same workload, and where the server's host time goes.

    .venv/bin/python bench/serve_load.py --model M.gguf [--device cuda] [--streams 64] [--gen 128]
        [--prompt-words 24] [--engine build/bench_cuda] [--serve-arg=--flag ...] [--json OUT]

Each client opens its own loopback connection and POSTs a streamed greedy /v1/completions request
(`ignore_eos`, `max_tokens` = --gen, `stream_options.include_usage`) with its own prompt of
--prompt-words random words, all at once; one warm-up round of 4 tokens each comes first. The
figure is generated tokens (the usage chunks' completion_tokens) over the wall time from the
first request sent to the last stream's end; beside it the median and worst time to first token.
With --engine, `bench_cuda MODEL --streams N --gen G` runs on the same machine right after (the
engine alone at the same batch: 32 prompt tokens, G new), and the ratio served / engine is the
issue's "within 10%" figure.

Host time: the server's CPU seconds per thread name (/proc/PID/task/*/stat) over the timed round,
so a bottleneck in HTTP, JSON, detokenization or the engine's host work shows by name. The client
is stdlib asyncio (one process), and its own CPU seconds are printed too: if the client is near
one core the figure is the client's limit, not the server's.

A measurement, not a test; it binds 127.0.0.1 only and ends the server it started.
"""
import argparse
import asyncio
import json
import os
import pathlib
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
WORDS = ("river stone lantern orchard meadow copper violet harbor thunder willow candle falcon granite pepper "
         "silver marble garden winter summer engine window basket ladder pencil rocket mirror forest island").split()


def start_server(exe, model, device, batch, extra):
    log = tempfile.NamedTemporaryFile(prefix="hearth-serve-load-", suffix=".log", delete=False)
    args = [exe, "serve", model, "--device", device, "--batch", str(batch), "--port", "0", "--no-open",
            "--seed", "1", "--temperature", "0", *extra]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        m = re.search(r"API +http://127\.0\.0\.1:(\d+)/v1", pathlib.Path(log.name).read_text())
        if m:
            return proc, int(m.group(1)), log.name
        if proc.poll() is not None:
            sys.exit("server exited:\n" + pathlib.Path(log.name).read_text())
        time.sleep(0.2)
    proc.kill()
    sys.exit("server did not start in 600 s")


def thread_cpu(pid):
    """{thread name: CPU seconds} of a process, from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    out = {}
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            s = pathlib.Path(f"/proc/{pid}/task/{t}/stat").read_text()
        except OSError:
            continue
        name = s[s.index("(") + 1:s.rindex(")")]
        f = s[s.rindex(")") + 2:].split()
        out[name] = out.get(name, 0.0) + (int(f[11]) + int(f[12])) / tick
    return out


async def one_stream(port, body):
    """(seconds to the first text chunk, completion tokens, seconds to the end)."""
    data = json.dumps(body).encode()
    t0 = time.perf_counter()
    r, w = await asyncio.open_connection("127.0.0.1", port)
    w.write(b"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Connection: close\r\nContent-Length: " + str(len(data)).encode() + b"\r\n\r\n" + data)
    await w.drain()
    ttft, usage, buf = None, None, b""
    status = await r.readline()
    if b" 200 " not in status:
        rest = await r.read()
        raise RuntimeError(f"HTTP {status!r}: {rest[:300]!r}")
    while True:
        chunk = await r.read(65536)
        if not chunk:
            break
        buf += chunk
        while b"\n\n" in buf:
            ev, buf = buf.split(b"\n\n", 1)
            line = ev[ev.find(b"data: "):] if b"data: " in ev else b""
            if not line.startswith(b"data: {"):
                continue
            if ttft is None and b'"text"' in line and b'"text":""' not in line:
                ttft = time.perf_counter() - t0
            if b'"usage"' in line:
                u = json.loads(line[6:]).get("usage")
                if u:
                    usage = u
    w.close()
    end = time.perf_counter() - t0
    if usage is None:
        raise RuntimeError("the stream ended without a usage chunk")
    return ttft if ttft is not None else end, usage["completion_tokens"], end


async def round_(port, n, gen, words, rng):
    bodies = [{"model": "m", "prompt": " ".join(rng.choice(WORDS) for _ in range(words)), "max_tokens": gen,
               "temperature": 0, "ignore_eos": True, "stream": True, "stream_options": {"include_usage": True}}
              for _ in range(n)]
    t0 = time.perf_counter()
    res = await asyncio.gather(*(one_stream(port, b) for b in bodies))
    return time.perf_counter() - t0, res


def engine_figure(exe, model, device, n, gen):
    out = subprocess.run([exe, model, "--device", device, "--streams", str(n), "--gen", str(gen)],
                         capture_output=True, text=True, timeout=900)
    for line in out.stdout.splitlines():
        if line.startswith("{") and '"streams"' in line:
            return json.loads(line)
    sys.exit("bench_cuda gave no streams line:\n" + out.stdout + out.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--hearth", default=str(ROOT / "build" / "hearth"))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--streams", type=int, default=64)
    ap.add_argument("--gen", type=int, default=128)
    ap.add_argument("--prompt-words", type=int, default=24)
    ap.add_argument("--engine", help="bench_cuda binary: also measure the engine alone")
    ap.add_argument("--serve-arg", action="append", default=[], help="one more `hearth serve` argument")
    ap.add_argument("--json", help="append the result as one JSON line to this file")
    a = ap.parse_args()

    proc, port, log = start_server(a.hearth, a.model, a.device, a.streams, a.serve_arg)
    rng = random.Random(1)
    try:
        asyncio.run(round_(port, a.streams, 4, a.prompt_words, rng))  # warm-up: graphs, pool, first allocations
        cpu0, self0 = thread_cpu(proc.pid), time.process_time()
        wall, res = asyncio.run(round_(port, a.streams, a.gen, a.prompt_words, rng))
        cpu1, self1 = thread_cpu(proc.pid), time.process_time()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
    generated = sum(r[1] for r in res)
    ttfts = sorted(r[0] for r in res)
    host = {k: round(cpu1.get(k, 0.0) - cpu0.get(k, 0.0), 3) for k in cpu1}
    host = {k: v for k, v in sorted(host.items(), key=lambda kv: -kv[1]) if v > 0}
    out = {"what": "served_streams", "model": os.path.basename(a.model), "device": a.device, "n": a.streams,
           "gen": a.gen, "generated": generated, "wall_s": round(wall, 3), "agg_tok_s": round(generated / wall, 1),
           "ttft_median_s": round(statistics.median(ttfts), 3), "ttft_max_s": round(ttfts[-1], 3),
           "server_cpu_s_by_thread": host, "server_cpu_s": round(sum(host.values()), 3),
           "client_cpu_s": round(self1 - self0, 3)}
    if a.engine:
        eng = engine_figure(a.engine, a.model, a.device, a.streams, a.gen)
        out["engine_agg_tok_s"] = eng["agg_tok_s"]
        out["served_over_engine"] = round(out["agg_tok_s"] / eng["agg_tok_s"], 3)
    print(json.dumps(out))
    if a.json:
        with open(a.json, "a") as f:
            f.write(json.dumps(out) + "\n")
    os.unlink(log)


if __name__ == "__main__":
    main()
