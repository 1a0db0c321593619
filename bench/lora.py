#!/usr/bin/env python3
"""lora.py - decode throughput of many LoRA adapters in one batch against the base model alone,
on one server, in one run.

One `hearth serve MODEL --batch N` mounts N random rank-R adapters (GGUF LoRA files written here
with gguf-py, every projection of every layer: q, k, v, o, gate, up, down; f16 tensors as
convert_lora_to_gguf.py writes by default, or f32 with --dtype f32) through
POST /v1/adapters, then answers, alternately:

  base      N concurrent streams on the base model ("adapter": "none")
  adapters  N concurrent streams, stream i on adapter i (every step mixes N adapters)

each stream greedy with its own prompt (no prefix shared between streams, as adapters never share
KV) and max_tokens completion tokens (ignore_eos); the figure
is aggregate completion tokens/s over the wall time, the median of --reps runs. Prints one JSON
line per run and a summary with the ratio adapters / base. A measurement, not a test: nothing is
asserted. Bounded: N x reps x 2 requests, each at most max_tokens.

    .venv/bin/python bench/lora.py [--model GGUF] [--streams 8] [--rank 16] [--max-tokens 64]
        [--reps 3] [--serve-args "--threads 2"] [--dtype f16|f32]

The model defaults to the SmolLM2 starter (scripts/model-path.sh smollm2); it must be a GGUF (the
adapters are GGUF LoRA files made for its shapes).
"""
import argparse
import json
import pathlib
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

import numpy as np
import gguf

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXE = ROOT / "build" / "hearth"
TARGETS = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")


def make_adapter(base, out, rank, seed, dtype):
    r = gguf.GGUFReader(base)
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
    shapes = {t.name: [int(x) for x in t.shape] for t in r.tensors}
    n_layer = 1 + max(int(n.split(".")[1]) for n in shapes if n.startswith("blk."))
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(out, arch)
    w.add_type("adapter")
    w.add_string("adapter.type", "lora")
    w.add_float32("adapter.lora.alpha", float(rank))
    for il in range(n_layer):
        for name in TARGETS:
            n_in, n_out = shapes[f"blk.{il}.{name}.weight"][:2]
            w.add_tensor(f"blk.{il}.{name}.weight.lora_a",
                         (rng.standard_normal((rank, n_in)) / np.sqrt(n_in)).astype(dtype))
            w.add_tensor(f"blk.{il}.{name}.weight.lora_b", (rng.standard_normal((n_out, rank)) * 0.01).astype(dtype))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def call(base, method, path, body=None, timeout=600):
    req = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode() if body else None,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def run(base, adapters, prompt, max_tokens):
    out = [None] * len(adapters)

    def one(i):
        # each stream its own prompt (its index first), so that no stream reuses another's prefix:
        # adapters never share KV, and the base streams must not get a head start from the cache
        out[i] = call(base, "POST", "/v1/completions", {"model": "m", "prompt": f"{i}. {prompt}",
                                                        "max_tokens": max_tokens,
                                                        "temperature": 0, "ignore_eos": True,
                                                        "adapter": adapters[i]})
    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(adapters))]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    dt = time.perf_counter() - t0
    n = sum(o["usage"]["completion_tokens"] for o in out)
    return n / dt, n, dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model")
    ap.add_argument("--streams", type=int, default=8)
    ap.add_argument("--rank", type=int, default=16)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--serve-args", default="")
    ap.add_argument("--dtype", choices=("f16", "f32"), default="f16",
                    help="the adapters' tensor type (convert_lora_to_gguf.py writes f16 by default; hearth keeps f16 "
                         "adapters as f16, f32 ones as f32)")
    args = ap.parse_args()
    model = args.model or subprocess.run([str(ROOT / "scripts" / "model-path.sh"), "smollm2"], capture_output=True,
                                         text=True, check=True).stdout.strip()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="hearth-lora-bench-"))
    names = []
    for i in range(args.streams):
        make_adapter(model, str(tmp / f"a{i}.gguf"), args.rank, 1000 + i,
                     np.float16 if args.dtype == "f16" else np.float32)
        names.append(f"a{i}")
    log = tempfile.NamedTemporaryFile(prefix="hearth-lora-bench-", suffix=".log", delete=False)
    cmd = [str(EXE), "serve", model, "--port", "0", "--no-open", "--seed", "1", "--batch", str(args.streams),
           *shlex.split(args.serve_args)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL, cwd=ROOT)
    try:
        base = None
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and base is None:
            m = re.search(r"API +http://127\.0\.0\.1:(\d+)/v1", pathlib.Path(log.name).read_text())
            if m:
                base = f"http://127.0.0.1:{m.group(1)}"
            elif proc.poll() is not None:
                sys.exit(f"hearth serve exited:\n{pathlib.Path(log.name).read_text()}")
            else:
                time.sleep(0.05)
        for i, n in enumerate(names):
            call(base, "POST", "/v1/adapters", {"path": str(tmp / f"a{i}.gguf"), "id": n})
        prompt = "Write a short story about a lighthouse keeper who finds a message in a bottle."
        run(base, ["none"] * args.streams, prompt, 8)  # warm up
        res = {"base": [], "adapters": []}
        for rep in range(args.reps):
            for kind, ads in (("base", ["none"] * args.streams), ("adapters", names)):
                tps, n, dt = run(base, ads, prompt, args.max_tokens)
                res[kind].append(tps)
                print(json.dumps({"bench": "lora", "kind": kind, "rep": rep, "streams": args.streams,
                                  "rank": args.rank, "dtype": args.dtype, "tokens": n, "seconds": round(dt, 3), "tok_s": round(tps, 2)}))
        b, a = statistics.median(res["base"]), statistics.median(res["adapters"])
        print(f"{args.streams} streams, rank {args.rank} {args.dtype}, {args.max_tokens} tokens each: base {b:.1f} tok/s, "
              f"{args.streams} adapters {a:.1f} tok/s, ratio {a / b:.3f}")
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()


if __name__ == "__main__":
    main()
