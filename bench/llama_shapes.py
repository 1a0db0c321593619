#!/usr/bin/env python3
"""llama_shapes.py - Llama-3.2-1B and Llama-3.1-8B shaped GGUF files with random weights, made at
set-up of a benchmark (bench/speed.py --models llama1b-q4_0,...) and kept in a cache directory.

The point is speed at the sizes people run, so only the shapes and the file layout are real:
  llama1b  hidden 2048, 16 layers, 32 heads / 8 kv heads, ffn 8192, embeddings tied (as the
           released Llama-3.2-1B: no output.weight, the embedding is the output projection)
  llama8b  hidden 4096, 32 layers, 32 heads / 8 kv heads, ffn 14336, its own output.weight
(the shapes are tools/cuda_h200.py's, imported with its GGUF header writer). The vocabulary has
128,256 entries: the committed tiny checkpoint's 49,152-token byte-level BPE vocabulary (tokens,
types, merges) followed by control tokens <|reserved_N|>, so both hearth and llama.cpp load it
and the embedding has Llama 3's row count. Weights: normal, std 0.02 (the initializer range of
the released configs), norms 1 + 0.1 N(0, 1), from numpy's generator with a fixed seed.

Types: bf16 is written directly (round to nearest even from f32); q4_0, q8_0 and q4_k_m are made
from the bf16 file by llama.cpp's own quantizer (llama_model_quantize through llama-cpp-python,
the same mixes `llama-quantize` writes: Q4_0 keeps the output projection in Q6_K, Q4_K_M mixes
Q4_K and Q6_K). Files go to $HEARTH_BENCH_MODELS, else ${XDG_CACHE_HOME:-~/.cache}/hearth/
bench-models/, written under a temporary name and renamed when complete, and are reused by later
runs. The 8B bf16 file (16 GB) that the 8B quantized files come from is removed afterwards
unless llama8b-bf16 itself was asked for.

  .venv/bin/python bench/llama_shapes.py llama1b-q4_0 [NAME ...]   make (or find) and print paths
"""
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import cuda_h200  # noqa: E402  (SHAPES, vocab_fields, add_llama_header)
from gguf import GGUFWriter, GGMLQuantizationType as Q  # noqa: E402

N_VOCAB = 128256
STD = 0.02
TYPES = ("bf16", "q4_0", "q8_0", "q4_k_m")
# llama.cpp's llama_ftype values (include/llama.h)
FTYPE = {"q4_0": 2, "q8_0": 7, "q4_k_m": 15}
SHAPE = {"llama1b": ("1b", True), "llama8b": ("8b", False)}  # cuda_h200 shape, tied embeddings
NAMES = [f"{s}-{t}" for s in SHAPE for t in TYPES]


def log(*a):
    print("llama_shapes:", *a, file=sys.stderr, flush=True)


def cache_dir():
    d = os.environ.get("HEARTH_BENCH_MODELS")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "hearth", "bench-models")
    os.makedirs(d, exist_ok=True)
    return d


def vocab():
    v = cuda_h200.vocab_fields(os.path.join(ROOT, cuda_h200.VOCAB_FROM))
    n = len(v["tokens"])
    v["tokens"] = list(v["tokens"]) + [f"<|reserved_{i}|>" for i in range(N_VOCAB - n)]
    v["types"] = list(v["types"]) + [3] * (N_VOCAB - n)  # 3: control
    return v


def to_bf16(a):
    """f32 -> bf16 bits, round to nearest even (the values are finite)."""
    b = a.view(np.uint32)
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)


def tensors(shape, tied):
    """(name, rows, cols) in llama.cpp's order; cols 0 for a 1-D norm of `rows` elements."""
    E, L, H, KV, FF, V = cuda_h200.SHAPES[shape]
    hd = E // H
    out = [("token_embd.weight", V, E)]
    for i in range(L):
        b = f"blk.{i}."
        out += [(b + "attn_norm.weight", E, 0), (b + "attn_q.weight", E, E), (b + "attn_k.weight", KV * hd, E),
                (b + "attn_v.weight", KV * hd, E), (b + "attn_output.weight", E, E), (b + "ffn_norm.weight", E, 0),
                (b + "ffn_gate.weight", FF, E), (b + "ffn_up.weight", FF, E), (b + "ffn_down.weight", E, FF)]
    out.append(("output_norm.weight", E, 0))
    if not tied:
        out.append(("output.weight", V, E))
    return out


def write_bf16(name, path):
    shape, tied = SHAPE[name]
    E, L, H, KV, FF, _ = cuda_h200.SHAPES[shape]
    tmp = path + ".part"
    w = GGUFWriter(tmp, "llama")
    cuda_h200.add_llama_header(w, f"hearth bench {name} (random weights)", (E, L, H, KV, FF), vocab(),
                               ctx=131072)
    w.add_file_type(32)  # LLAMA_FTYPE_MOSTLY_BF16
    ts = tensors(shape, tied)
    for n, r, c in ts:
        if c:
            w.add_tensor_info(n, (r, c), np.dtype(np.uint16), r * c * 2, raw_dtype=Q.BF16)
        else:
            w.add_tensor_info(n, (r,), np.dtype(np.float32), r * 4)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    rng = np.random.default_rng(26)
    for n, r, c in ts:
        if c:
            a = rng.standard_normal((r, c), dtype=np.float32)
            a *= STD
            w.write_tensor_data(to_bf16(a))
        else:
            w.write_tensor_data(1.0 + 0.1 * rng.standard_normal(r, dtype=np.float32))
    w.close()
    os.replace(tmp, path)


def quantize(src, dst, kind, threads):
    """llama.cpp's quantizer in a child process (llama-cpp-python; requirements/oracle.txt)."""
    tmp = dst + ".part"
    code = ("import ctypes, sys, llama_cpp as L\n"
            "L.llama_backend_init()\n"
            "p = L.llama_model_quantize_default_params()\n"
            f"p.ftype = {FTYPE[kind]}\n"
            f"p.nthread = {threads}\n"
            f"sys.exit(L.llama_model_quantize({src!r}.encode(), {tmp!r}.encode(), ctypes.byref(p)))\n")
    r = subprocess.run([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"llama_model_quantize {kind} failed: {r.stderr.strip()[-500:]}")
    os.replace(tmp, dst)


def ensure(names, threads=None):
    """Paths of the named models ({name: path}), making the missing ones."""
    bad = [n for n in names if n not in NAMES]
    if bad:
        raise ValueError(f"unknown model {', '.join(bad)} (known: {', '.join(NAMES)})")
    threads = threads or os.cpu_count() or 1
    d = cache_dir()
    paths, made = {}, set()
    for n in names:
        base, kind = n.split("-", 1)
        path = os.path.join(d, f"{n}.gguf")
        if not os.path.exists(path):
            src = os.path.join(d, f"{base}-bf16.gguf")
            if not os.path.exists(src):
                t = time.time()
                log(f"writing {src} (random weights)")
                write_bf16(base, src)
                made.add(base)
                log(f"{base}-bf16: {os.path.getsize(src) / 1e9:.2f} GB in {time.time() - t:.0f} s")
            if kind != "bf16":
                t = time.time()
                log(f"quantizing {n} with llama.cpp")
                quantize(src, path, kind, threads)
                log(f"{n}: {os.path.getsize(path) / 1e9:.2f} GB in {time.time() - t:.0f} s")
        paths[n] = path
    if "llama8b" in made and "llama8b-bf16" not in names:  # 16 GB, kept only when asked for
        os.remove(os.path.join(d, "llama8b-bf16.gguf"))
    return paths


def main():
    names = sys.argv[1:]
    if not names or names[0] in ("-h", "--help"):
        print(__doc__)
        print("names:", ", ".join(NAMES))
        return 0 if names else 2
    try:
        paths = ensure(names)
    except (ValueError, RuntimeError) as e:
        print(f"llama_shapes.py: {e}", file=sys.stderr)
        return 2
    for n, p in paths.items():
        print(n, p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
