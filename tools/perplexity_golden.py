#!/usr/bin/env python3
"""perplexity_golden.py - llama.cpp's windowed perplexity of a text, for `hearth perplexity`'s test.

Computes with llama-cpp-python (the oracle, requirements/oracle.txt) what llama.cpp's perplexity
tool computes (docs/engine.md, "Perplexity"):

  * the text is tokenized once as the tool does (add_special: BOS first when the vocabulary
    adds one; special-token text stays plain text);
  * windows of --ctx tokens, non-overlapping, the first --chunks of them; each evaluated from an
    empty cache with logits for every position, its first token replaced by BOS when the
    vocabulary adds one;
  * with first = ctx // 2, the logits at positions first .. ctx - 2 score tokens first + 1 ..
    ctx - 1: nll = logsumexp(row) - row[token], in float64 numpy;
  * the running estimate after each window, the final PPL and its standard error as the tool
    prints them.

Every scored token's nll is kept, so a test can compare token by token. The output JSON
(default tests/golden/llamacpp/perplexity.json) records the provenance: versions, the ggml
build, CPU, command, date, and the sha256 of the text and of each model.

Usage: python tools/perplexity_golden.py [--models tiny-qwen2,smollm2] [--ctx 256] [--chunks 3]
"""
import argparse
import ctypes
import datetime
import hashlib
import json
import os
import platform
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY_MODELS = {"tiny-qwen2": "tests/golden/tiny/tiny-qwen2.gguf",
               "tiny-qwen3": "tests/golden/tiny/tiny-qwen3.gguf"}
N_THREADS = 2
N_BATCH = 512


def model_path(name):
    if name in TINY_MODELS:
        return os.path.join(ROOT, TINY_MODELS[name])
    env = os.environ.get("HEARTH_%s_GGUF" % name.upper())
    if env:
        return env
    out = subprocess.run([os.path.join(ROOT, "scripts", "model-path.sh"), name],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("perplexity_golden: %s" % out.stderr.strip())
    return out.stdout.strip()


def sha256_bytes(b):
    return hashlib.sha256(b).hexdigest()


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def ggml_build_info(llama_cpp):
    info = {}
    lib = os.path.join(os.path.dirname(llama_cpp.__file__), "lib", "libggml-base.so")
    try:
        g = ctypes.CDLL(lib)
        for fn in ("ggml_version", "ggml_commit"):
            f = getattr(g, fn)
            f.restype = ctypes.c_char_p
            info[fn] = f().decode()
    except (OSError, AttributeError):
        pass
    return info


def perplexity(llama_cpp, path, text, n_ctx, n_chunks):
    llm = llama_cpp.Llama(model_path=path, n_ctx=n_ctx, n_batch=N_BATCH, n_ubatch=N_BATCH,
                          n_threads=N_THREADS, n_threads_batch=N_THREADS, logits_all=True,
                          flash_attn=False, use_mmap=True, n_gpu_layers=0, seed=0, verbose=False)
    add_bos = str(llm.metadata.get("tokenizer.ggml.add_bos_token", "false")).lower() == "true"
    # llama_tokenize(add_special=True, parse_special=False): what the perplexity tool calls
    tokens = llm.tokenize(text, add_bos=True, special=False)
    if add_bos:
        assert tokens[0] == llm.token_bos()
    n_max = len(tokens) // n_ctx
    if n_max < 1:
        sys.exit("perplexity_golden: the text has %d tokens, less than one window" % len(tokens))
    n_chunks = min(n_chunks, n_max) if n_chunks > 0 else n_max
    first = n_ctx // 2
    nll_all, running = [], []
    for c in range(n_chunks):
        win = list(tokens[c * n_ctx:(c + 1) * n_ctx])
        if add_bos:
            win[0] = llm.token_bos()
        llm.reset()
        llm.eval(win)
        rows = np.array(llm.scores[first:n_ctx - 1], dtype=np.float64)
        mx = rows.max(axis=1, keepdims=True)
        lse = mx[:, 0] + np.log(np.exp(rows - mx).sum(axis=1))
        target = np.array(win[first + 1:n_ctx], dtype=np.int64)
        nll = lse - rows[np.arange(rows.shape[0]), target]
        nll_all.extend(float(v) for v in nll)
        running.append(float(np.exp(np.mean(nll_all))))
    nll = np.array(nll_all, dtype=np.float64)
    mean = float(nll.mean())
    ppl = float(np.exp(mean))
    var = float((nll * nll).mean() - mean * mean)
    se = ppl * float(np.sqrt(var / (nll.size - 1))) if nll.size > 1 and var > 0 else None
    ids = np.array(tokens, dtype="<i4").tobytes()
    del llm
    return dict(model_file=os.path.basename(path), model_sha256=sha256_file(path), add_bos=add_bos,
                n_tokens=len(tokens), tokens_sha256=sha256_bytes(ids), chunks=n_chunks,
                tokens_scored=int(nll.size), ppl=ppl, stderr=se, running_ppl=running,
                nll=[float(v) for v in nll])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="tiny-qwen2,smollm2", help="comma-separated model names")
    ap.add_argument("--text", default="tests/golden/llamacpp/text_en.txt")
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--chunks", type=int, default=3)
    ap.add_argument("--out", default="tests/golden/llamacpp/perplexity.json")
    args = ap.parse_args()

    import llama_cpp  # the oracle: `make oracles` installs it

    with open(os.path.join(ROOT, args.text), "rb") as f:
        raw = f.read()
    models = {}
    for name in args.models.split(","):
        print("perplexity_golden: %s ..." % name, file=sys.stderr, flush=True)
        models[name] = perplexity(llama_cpp, model_path(name), raw, args.ctx, args.chunks)
        print("perplexity_golden: %s PPL = %.4f" % (name, models[name]["ppl"]), file=sys.stderr)
    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    out = dict(
        generator="tools/perplexity_golden.py",
        command=" ".join(["python", "tools/perplexity_golden.py"] + sys.argv[1:]),
        date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        llama_cpp_python=llama_cpp.__version__,
        ggml=ggml_build_info(llama_cpp),
        system_info=llama_cpp.llama_print_system_info().decode().strip(),
        cpu=cpu,
        python=platform.python_version(),
        numpy=np.__version__,
        n_threads=N_THREADS,
        n_batch=N_BATCH,
        text=args.text,
        text_sha256=sha256_bytes(raw),
        n_ctx=args.ctx,
        method="llama.cpp perplexity: windows of n_ctx from an empty cache, BOS replacing the first "
               "token when the vocabulary adds one, tokens n_ctx/2+1..n_ctx-1 scored, nll in float64",
        models=models,
    )
    with open(os.path.join(ROOT, args.out), "w", encoding="utf-8") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
