#!/usr/bin/env python3
"""embed.py - embeddings per second: hearth's /v1/embeddings against sentence-transformers
(PyTorch on the CPU) and llama.cpp, the same model, the same 1,000 short sentences, batches of
32, same run.

hearth: `hearth serve MODEL` (its encoder, models/bert.c) is started once; after a warm-up batch
the sentences are posted 32 at a time with encoding_format base64 (so JSON float printing is not
what is measured), one request after the other, and the wall time of all of them is taken
(tokenization, the forward, HTTP and base64 included).
sentence-transformers (--st-python PY, a Python with torch and sentence-transformers; never the
project's .venv): SentenceTransformer(MODEL, device=cpu).encode(sentences, batch_size=32) after
a warm-up batch, in a subprocess of PY, with torch.set_num_threads as --threads.
llama.cpp (--gguf FILE, the same model as a GGUF file, e.g. from tools/embed_gguf.py --convert):
llama-cpp-python's Llama(FILE, embedding=True, n_threads=--threads, n_batch=n_ubatch=4096)
.embed(batch) for each batch of 32 after a warm-up batch, in a subprocess of this Python (the
project's .venv has llama-cpp-python after `make oracles`).
All use --threads threads (default: all CPUs). Besides the wall-clock rate each engine's rate per
CPU second is printed (the server process's user + system time for hearth, time.process_time()
of the subprocess for the others, over the timed part): on a shared machine the wall clock
measures the neighbours' load too, the CPU time much less so. The sentences are made from a fixed word list
with a fixed seed (6 to 16 words each). Prints one line per engine and the ratio; with --json,
the numbers as one JSON object. Measurements, never assertions.

Usage: .venv/bin/python bench/embed.py MODEL_DIR [--st-python PY] [--gguf FILE] [--threads N]
       [--n 1000] [--batch 32] [--bin build/hearth] [--json]
"""
import argparse
import base64
import http.client
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = ("the a one some every small large quick slow red green blue old new happy quiet loud cat dog bird "
         "fish horse child woman man teacher doctor city river mountain garden kitchen road house book song "
         "car train boat computer phone picture letter runs walks sings reads writes builds finds sees likes "
         "opens closes watches carries paints near under over beside through after before today yesterday "
         "tomorrow quickly slowly").split()


def sentences(n, seed=1234):
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randint(6, 16)
        out.append(" ".join(rng.choice(WORDS) for _ in range(k)).capitalize() + ".")
    return out


def post(port, body):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request("POST", "/v1/embeddings", json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    if r.status != 200:
        sys.exit("embed.py: /v1/embeddings answered %d: %s" % (r.status, data[:300]))
    return json.loads(data)


def cpu_seconds(pid):
    """User + system CPU seconds of a process, all its threads (/proc/PID/stat fields 14, 15)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_hearth(exe, model, sents, batch, threads):
    log = tempfile.NamedTemporaryFile(prefix="hearth-embed-bench-", suffix=".log", delete=False)
    args = [exe, "serve", model, "--host", "127.0.0.1", "--port", "0", "--no-open"]
    if threads:
        args += ["--threads", str(threads)]
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL)
    try:
        port = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and port is None:
            m = re.search(r"API +http://127\.0\.0\.1:(\d+)/v1", open(log.name, errors="replace").read())
            if m:
                port = int(m.group(1))
            elif p.poll() is not None:
                sys.exit("embed.py: hearth serve exited: " + open(log.name, errors="replace").read()[-2000:])
            else:
                time.sleep(0.05)
        if port is None:
            sys.exit("embed.py: hearth serve was not ready in 60 s")
        post(port, {"input": sents[:batch], "encoding_format": "base64"})  # warm-up
        c0 = cpu_seconds(p.pid)
        t0 = time.perf_counter()
        n_vec = 0
        for i in range(0, len(sents), batch):
            r = post(port, {"input": sents[i:i + batch], "encoding_format": "base64"})
            n_vec += sum(1 for d in r["data"] if base64.b64decode(d["embedding"]))
        dt = time.perf_counter() - t0
        return n_vec / dt, dt, cpu_seconds(p.pid) - c0
    finally:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        os.unlink(log.name)


ST_SNIPPET = r"""
import json, sys, time, torch
from sentence_transformers import SentenceTransformer
model_dir, batch, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if threads > 0:
    torch.set_num_threads(threads)
sents = json.load(sys.stdin)
m = SentenceTransformer(model_dir, device="cpu")
m.encode(sents[:batch], batch_size=batch)
c0 = time.process_time()
t0 = time.perf_counter()
v = m.encode(sents, batch_size=batch, convert_to_numpy=True)
dt = time.perf_counter() - t0
cpu = time.process_time() - c0
import sentence_transformers
print(json.dumps({"n": int(v.shape[0]), "seconds": dt, "cpu_seconds": cpu, "torch": torch.__version__,
                  "sentence_transformers": sentence_transformers.__version__,
                  "threads": torch.get_num_threads()}))
"""


def bench_st(py, model, sents, batch, threads):
    r = subprocess.run([py, "-c", ST_SNIPPET, model, str(batch), str(threads or 0)], input=json.dumps(sents),
                       capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        sys.exit("embed.py: sentence-transformers failed:\n" + r.stderr[-2000:])
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return out["n"] / out["seconds"], out


LLAMA_SNIPPET = r"""
import json, os, sys, time
import llama_cpp
path, batch, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
threads = threads if threads > 0 else os.cpu_count()
sents = json.load(sys.stdin)
llm = llama_cpp.Llama(model_path=path, embedding=True, n_ctx=4096, n_batch=4096, n_ubatch=4096,
                      n_threads=threads, n_threads_batch=threads, verbose=False)
llm.embed(sents[:batch])
c0 = time.process_time()
t0 = time.perf_counter()
n = 0
for i in range(0, len(sents), batch):
    n += len(llm.embed(sents[i:i + batch]))
dt = time.perf_counter() - t0
cpu = time.process_time() - c0
print(json.dumps({"n": n, "seconds": dt, "cpu_seconds": cpu, "llama_cpp_python": llama_cpp.__version__,
                  "threads": threads}))
"""


def bench_llama(gguf, sents, batch, threads):
    r = subprocess.run([sys.executable, "-c", LLAMA_SNIPPET, gguf, str(batch), str(threads or 0)],
                       input=json.dumps(sents), capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        sys.exit("embed.py: llama.cpp failed:\n" + r.stderr[-2000:])
    out = json.loads(r.stdout.strip().splitlines()[-1])
    return out["n"] / out["seconds"], out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--st-python")
    ap.add_argument("--gguf")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "hearth"))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    sents = sentences(a.n)
    m = re.search(r"models--([^/]+?)--([^/]+)", a.model)
    name = "%s/%s" % m.groups() if m else os.path.basename(os.path.normpath(a.model))
    res = {"model": name, "n": a.n, "batch": a.batch,
           "threads": a.threads or os.cpu_count()}
    h, h_s, h_cpu = bench_hearth(a.bin, a.model, sents, a.batch, a.threads)
    hc = a.n / h_cpu
    res["hearth_per_s"] = round(h, 1)
    res["hearth_per_cpu_s"] = round(hc, 1)
    print("hearth                 %8.1f embeddings/s  %8.1f per CPU second  (%d in %.2f s)" % (h, hc, a.n, h_s),
          file=sys.stderr)
    if a.st_python:
        s, info = bench_st(a.st_python, a.model, sents, a.batch, a.threads)
        sc = info["n"] / info["cpu_seconds"]
        res["st_per_s"] = round(s, 1)
        res["st_per_cpu_s"] = round(sc, 1)
        res["ratio_hearth_st_cpu"] = round(hc / sc, 2)
        res["st_versions"] = {"torch": info["torch"], "sentence_transformers": info["sentence_transformers"]}
        res["ratio_hearth_st"] = round(h / s, 2)
        print("sentence-transformers  %8.1f embeddings/s  %8.1f per CPU second  (torch %s, %d threads)" % (
            s, sc, info["torch"], info["threads"]), file=sys.stderr)
        print("hearth / sentence-transformers: %.2fx (per CPU second: %.2fx)" % (h / s, hc / sc), file=sys.stderr)
    if a.gguf:
        ll, info = bench_llama(a.gguf, sents, a.batch, a.threads)
        lc = info["n"] / info["cpu_seconds"]
        res["llama_per_s"] = round(ll, 1)
        res["llama_per_cpu_s"] = round(lc, 1)
        res["ratio_hearth_llama_cpu"] = round(hc / lc, 2)
        res["llama_versions"] = {"llama_cpp_python": info["llama_cpp_python"]}
        res["ratio_hearth_llama"] = round(h / ll, 2)
        print("llama.cpp              %8.1f embeddings/s  %8.1f per CPU second  (llama-cpp-python %s, %d threads)" % (
            ll, lc, info["llama_cpp_python"], info["threads"]), file=sys.stderr)
        print("hearth / llama.cpp: %.2fx (per CPU second: %.2fx)" % (h / ll, hc / lc), file=sys.stderr)
    if a.json:
        print(json.dumps(res))


if __name__ == "__main__":
    main()
