#!/usr/bin/env python3
"""kv_decode.py - decode speed at a long context per --kv-quant scheme, against the f16 cache and
against llama.cpp with the same cache types, in one run on one machine.

Each cell is its own child process: hearth through `hearth benchmark --json --no-record
--prompt-tokens CTX --tokens N --runs 1 --kv-quant S`, llama.cpp through bench/llamacpp_run.py
(--kv f16 | q8_0 | q4_0, flash attention with a quantized cache, the prompt in calls of 512
tokens) under --python (an interpreter with the oracle, llama-cpp-python; `make oracles`).
--llama names the llama.cpp caches to run (default f16 and q8_0: `-ctk q8_0 -ctv q8_0`). Each
repetition runs every cell once, the order rotated by one cell per repetition, so a machine
whose load drifts weighs on every cell alike; the table gives each cell's median and the median
of the ratios taken within each repetition, and the 1-minute load average around each cell.
Decode at a long context reads the whole cache every token, so a smaller cache should decode
faster once the cache outweighs the model. Nothing is asserted.

Usage: .venv/bin/python bench/kv_decode.py [--model PATH] [--ctx 4096] [--tokens 32] [--threads 2]
           [--schemes off,8,4] [--llama f16,q8_0] [--reps 1] [--python PY] [--json PATH]
"""
import argparse, json, os, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LLAMA_KV = {"off": "f16", "8": "q8_0", "4": "q4_0"}


def hearth(model, a, scheme):
    r = subprocess.run([os.path.join(ROOT, "build", "hearth"), "benchmark", model, "--json", "--no-record",
                        "--prompt-tokens", str(a.ctx), "--tokens", str(a.tokens), "--runs", "1",
                        "--threads", str(a.threads), "--device", "cpu", "--kv-quant", scheme],
                       capture_output=True, text=True, timeout=3600)
    if r.returncode:
        return None
    j = json.loads(r.stdout)
    return j.get("decode_tok_s") or j.get("decode", {}).get("tok_s"), j.get("prefill_tok_s")


def llama(model, a, kv):
    r = subprocess.run([a.python, os.path.join(ROOT, "bench", "llamacpp_run.py"), model, "--threads", str(a.threads),
                        "--prompt-tokens", str(a.ctx), "--tokens", str(a.tokens), "--kv", kv, "--ubatch", "512"],
                       capture_output=True, text=True, timeout=3600)
    if r.returncode:
        return None
    j = json.loads(r.stdout.strip().splitlines()[-1])
    return j["decode_tok_s"], j["prefill_tok_s"]


def median(xs):
    xs = sorted(x for x in xs if x)
    if not xs:
        return None
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model")
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--schemes", default="off,8,4")
    ap.add_argument("--llama", default="f16,q8_0", help="llama.cpp cache types to run (empty: none)")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--python", default=sys.executable, help="interpreter with llama-cpp-python")
    ap.add_argument("--json", help="write every cell's figures here")
    a = ap.parse_args()
    model = a.model or subprocess.run([os.path.join(ROOT, "scripts", "model-path.sh"), "smollm2"],
                                      capture_output=True, text=True, check=True).stdout.strip()
    cells = [("hearth", s) for s in a.schemes.split(",")] + [("llama.cpp", k) for k in a.llama.split(",") if k]
    got = {c: [] for c in cells}  # per repetition: (decode tok/s, prefill tok/s, load before, load after)
    for rep in range(a.reps):
        k = rep % len(cells)
        for c in cells[k:] + cells[:k]:
            l0 = os.getloadavg()[0]
            r = hearth(model, a, c[1]) if c[0] == "hearth" else llama(model, a, c[1])
            got[c].append((r[0], r[1], l0, os.getloadavg()[0]) if r else (None, None, l0, os.getloadavg()[0]))
            print("rep %d %s %s: %s tok/s decode, load %.1f -> %.1f" % (rep, c[0], c[1], "%.1f" % r[0] if r else
                  "failed", l0, got[c][-1][3]), file=sys.stderr, flush=True)
    base_h = got.get(("hearth", "off"))
    base_l = {c[1]: got[c] for c in cells if c[0] == "llama.cpp"}
    print("| stack | cache | decode tok/s (median of %d) | vs hearth off | vs llama.cpp same cache | load avg |" % a.reps)
    print("|---|---|---|---|---|---|")
    for c in cells:
        runs = got[c]
        dec = median([r[0] for r in runs])
        vs_off = median([r[0] / b[0] for r, b in zip(runs, base_h) if r[0] and b[0]]) if base_h else None
        peer = base_l.get(LLAMA_KV.get(c[1])) if c[0] == "hearth" else None
        vs_l = median([r[0] / b[0] for r, b in zip(runs, peer) if r[0] and b[0]]) if peer else None
        name = "--kv-quant " + c[1] if c[0] == "hearth" else "-ctk %s -ctv %s" % (c[1], c[1])
        loads = [x for r in runs for x in r[2:]]
        print("| %s | %s | %s | %s | %s | %.1f-%.1f |" % (c[0], name, "%.1f" % dec if dec else "-",
              "%.2fx" % vs_off if vs_off else "-", "%.2fx" % vs_l if vs_l else "-", min(loads), max(loads)))
    print("\nmodel %s, context %d, %d decoded tokens, %d threads, %d repetitions; `%s`"
          % (os.path.basename(model), a.ctx, a.tokens, a.threads, a.reps,
             " ".join(["bench/kv_decode.py"] + sys.argv[1:])))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": model, "ctx": a.ctx, "tokens": a.tokens, "threads": a.threads,
                       "cells": {"%s %s" % c: got[c] for c in cells}}, f)


if __name__ == "__main__":
    main()
