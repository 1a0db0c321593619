#!/usr/bin/env python3
"""kv_decode.py - decode speed at a long context per --kv-quant scheme, against the f16 cache and
against llama.cpp with the same cache types, in one run on one machine.

Each cell is its own child process, one after the other: hearth through `hearth benchmark --json
--no-record --prompt-tokens CTX --tokens N --runs 1 --kv-quant S`, llama.cpp through
bench/llamacpp_run.py (--kv f16 | q8_0 | q4_0, flash attention with a quantized cache) under
--python (an interpreter with the oracle, llama-cpp-python; `make oracles`). Decode at a long
context reads the whole cache every token, so a smaller cache should decode faster once the
cache outweighs the model. Reports tokens/s and ratios; nothing is asserted.

Usage: .venv/bin/python bench/kv_decode.py [--model PATH] [--ctx 4096] [--tokens 32] [--threads 2]
           [--schemes off,8,4] [--python PY]
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
                        "--prompt-tokens", str(a.ctx), "--tokens", str(a.tokens), "--kv", kv],
                       capture_output=True, text=True, timeout=3600)
    if r.returncode:
        return None
    j = json.loads(r.stdout.strip().splitlines()[-1])
    return j["decode_tok_s"], j["prefill_tok_s"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model")
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--schemes", default="off,8,4")
    ap.add_argument("--python", default=sys.executable, help="interpreter with llama-cpp-python")
    a = ap.parse_args()
    model = a.model or subprocess.run([os.path.join(ROOT, "scripts", "model-path.sh"), "smollm2"],
                                      capture_output=True, text=True, check=True).stdout.strip()
    rows, base = [], None
    for s in a.schemes.split(","):
        h = hearth(model, a, s)
        l = llama(model, a, LLAMA_KV[s]) if s in LLAMA_KV else None
        if s == "off" and h:
            base = h[0]
        rows.append((s, h, l))
    print("| --kv-quant | hearth decode tok/s | vs off | llama.cpp decode tok/s (same cache) | hearth / llama.cpp |")
    print("|---|---|---|---|---|")
    for s, h, l in rows:
        hd = "%.1f" % h[0] if h and h[0] else "-"
        vs = "%.2fx" % (h[0] / base) if h and h[0] and base else "-"
        ld = "%.1f" % l[0] if l else "-"
        ratio = "%.2fx" % (h[0] / l[0]) if h and h[0] and l else "-"
        print("| %s | %s | %s | %s | %s |" % (s, hd, vs, ld, ratio))
    la = os.getloadavg()[0]
    print("\nmodel %s, context %d, %d decoded tokens, %d threads, load average %.1f at the end; `%s`"
          % (os.path.basename(model), a.ctx, a.tokens, a.threads, la, " ".join(["bench/kv_decode.py"] + sys.argv[1:])))


if __name__ == "__main__":
    main()
