#!/usr/bin/env python3
"""golden_llamacpp.py - greedy continuations and logits from llama.cpp, for hearth's model tests.

llama.cpp (through llama-cpp-python, requirements/oracle.txt) runs the same GGUF files hearth
loads, and this script records what it computes so C tests can compare against it:

  * 8 prompts per model: llama.cpp's tokenization of each (BOS as the model's
    tokenizer.ggml.add_bos_token says, special tokens parsed), the logits after the prompt, and
    a 64-token greedy continuation. Greedy here is our own argmax over the raw logits after
    evaluating one token at a time (no sampler, no penalties, no stop on EOS), lowest token id
    first among exact ties, so nothing but the model's logits picks the tokens. Every step's
    logits are kept (top-64 + logsumexp), so a test can tell a real divergence from a near tie.
  * teacher forcing: tests/golden/llamacpp/text_en.txt (an original ~700-word essay), tokenized
    the same way, evaluated in one pass with logits for every position; the first N_TEXT
    positions are kept (past Gemma 3's 512-token sliding window).

Output, per model NAME (the names of models/starter.tsv): NAME.golden (binary, below),
NAME.txt (the continuations decoded, for people), and provenance.json for all of them.

Binary format (little-endian throughout; version 1). Sizes in bytes. K = top_k, P = n_prompts,
G = n_gen, T = n_text, V = n_vocab, N = n_prompt_tokens, B = n_prompt_bytes.

  header, 128 bytes:
     0  char[8]  magic "HRTHGOLD"
     8  u32      version (1)
    12  u32      header_bytes (128)
    16  u32      V  n_vocab
    20  u32      K  top_k (64)
    24  u32      P  n_prompts
    28  u32      G  n_gen (tokens generated per prompt)
    32  u32      T  n_text (teacher-forced positions)
    36  u32      N  n_prompt_tokens (all prompts together)
    40  u32      B  n_prompt_bytes (all prompt texts together, UTF-8)
    44  u32      flags: bit 0 = full logits of step 0 present (f16), bit 1 = BOS was added
    48  u8[32]   sha256 of the model file
    80  u32[12]  zero
  then, back to back, no padding:
    prompt table   P x 16: u32 n_tokens, u32 first_token (index into prompt tokens),
                           u32 n_bytes, u32 first_byte (index into prompt bytes)
    prompt tokens  N x i32
    gen tokens     P x G x i32           gen[p][s] = argmax of step record [p][s]
    step records   P x G x R             record [p][s]: the logits that chose gen[p][s]
                                         (s = 0: after the prompt; s > 0: after gen[p][s-1])
    full logits    P x V x f16           only when flags bit 0: every logit of step 0
    text tokens    T x i32               the first T tokens of text_en.txt (BOS included)
    text records   T x R                 record t: the logits at position t (predicting t+1)
    prompt bytes   B x u8                the prompt texts, not NUL-terminated

  R, a logits record, 4 + 8K bytes: f32 lse = log(sum(exp(logits))) over all V logits
  (computed in float64), then K pairs (i32 token id, f32 logit), sorted by logit, highest first,
  lower id first among equal logits. So pairs[0] is the argmax and lse >= pairs[0].logit.

tests/golden_read.h reads this format; tests/golden/llamacpp/README.md describes it too.

Usage: .venv/bin/python tools/golden_llamacpp.py [--models smollm2,gemma3] [--out DIR] [--kv q8_0]
Models come from HEARTH_SMOLLM2_GGUF / HEARTH_GEMMA3_GGUF, else scripts/model-path.sh.
`--kv q8_0` runs llama.cpp with type_k = type_v = q8_0 and flash_attn=True (the cache hearth's
--l2 repeats) and writes NAME.q8_0.golden. `make goldens` installs the oracle and runs this for
the f16 cache and for the q8_0 cache; commit the files it writes.
"""

import argparse
import ctypes
import datetime
import hashlib
import json
import os
import platform
import struct
import subprocess
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DEFAULT = os.path.join(ROOT, "tests", "golden", "llamacpp")

MAGIC = b"HRTHGOLD"
VERSION = 1
HEADER_BYTES = 128
TOP_K = 64
N_GEN = 64
N_TEXT_MAX = 768
N_CTX = 1024
N_BATCH = 512
N_THREADS = 2
FULL_LOGITS_MAX_VOCAB = 65536  # full f16 step-0 logits only where they stay small (SmolLM2)
FLAG_FULL_LOGITS = 1
FLAG_BOS = 2

REC_DTYPE = np.dtype([("lse", "<f4"), ("pairs", [("id", "<i4"), ("logit", "<f4")], (TOP_K,))])
assert REC_DTYPE.itemsize == 4 + 8 * TOP_K

LONG_PARAGRAPH = (
    "The old railway station had been closed for almost thirty years when the town council "
    "finally agreed to turn it into a library. Nobody expected the project to be easy. The roof "
    "leaked in three places, the waiting room floor had warped into gentle hills, and a family of "
    "swallows had claimed the ticket office as their own. Still, the volunteers who arrived on "
    "the first Saturday brought ladders, brooms, sandwiches and an unreasonable amount of "
    "optimism. They sorted donated books on the platform, stacking novels on one bench and "
    "atlases on another, while a retired carpenter measured the old luggage racks and announced "
    "that they would make perfect shelves. By the end of the summer the building smelled of "
    "fresh paint instead of damp, the swallows had moved to a quieter barn, and children were "
    "reading in the place where their grandparents had once waited for trains. When the mayor "
    "asked what the library should be called, the answer was"
)

COMMON_PROMPTS = [
    ("story", "Once upon a time, in a small village at the edge of a dark forest, there lived"),
    ("factual", "Question: What is the boiling point of water at sea level in degrees Celsius?\n"
                "Answer:"),
    ("code", "def is_prime(n):\n    \"\"\"Return True if n is a prime number.\"\"\"\n"),
    ("list", "Here is a list of five things to pack for a camping trip:\n1."),
    ("unicode", "Café, naïve, 東京, and 😀 are words that need more than ASCII. In French, "
                "\"bonjour\" means"),
    ("numbers", "{\"city\": \"Oslo\", \"population\": 709037, \"coordinates\": [59.91,"),
    ("long", LONG_PARAGRAPH),
]

CHAT_PROMPTS = {
    "tiny-qwen2": ("chat", "<|im_start|>user\nGive me three tips for staying focused while "
                           "studying.<|im_end|>\n<|im_start|>assistant\n"),
    "tiny-qwen3": ("chat", "<|im_start|>user\nGive me three tips for staying focused while "
                           "studying.<|im_end|>\n<|im_start|>assistant\n"),
    "tiny-llama64": ("chat", "<|im_start|>user\nGive me three tips for staying focused while "
                             "studying.<|im_end|>\n<|im_start|>assistant\n"),
    "smollm2": ("chat", "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
                        "<|im_start|>user\nGive me three tips for staying focused while "
                        "studying.<|im_end|>\n<|im_start|>assistant\n"),
    "gemma3": ("chat", "<start_of_turn>user\nGive me three tips for staying focused while "
                       "studying.<end_of_turn>\n<start_of_turn>model\n"),
}


def read_manifest():
    rows = {}
    with open(os.path.join(ROOT, "models", "starter.tsv"), encoding="utf-8") as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            name, repo, rev, file, size, sha, sources = line.rstrip("\n").split("\t")
            rows[name] = dict(repo=repo, revision=rev, file=file, size=int(size), sha256=sha,
                              sources=sources)
    return rows


# The tiny random checkpoints of tools/make_tiny_models.py (committed, SmolLM2's vocabulary).
TINY_MODELS = {"tiny-qwen2": "tests/golden/tiny/tiny-qwen2.gguf",
               "tiny-qwen3": "tests/golden/tiny/tiny-qwen3.gguf",
               "tiny-llama64": "tests/golden/tiny/tiny-llama64.gguf"}  # tools/make_tiny_llama64.py

# --kv: llama.cpp's KV cache types. A quantized cache needs flash attention (llama.cpp refuses a
# quantized V without it); its goldens are NAME.<type>.golden.
KV_TYPES = {"f16": 1, "q8_0": 8, "q4_0": 2}


def model_path(name):
    if name in TINY_MODELS:
        return os.path.join(ROOT, TINY_MODELS[name])
    env = os.environ.get("HEARTH_%s_GGUF" % name.upper())
    if env:
        return env
    out = subprocess.run([os.path.join(ROOT, "scripts", "model-path.sh"), name],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("golden_llamacpp: %s" % out.stderr.strip())
    return out.stdout.strip()


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def ggml_build_info(llama_cpp):
    """The vendored ggml's version and commit, read from the shared library the package built."""
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


def record(logits):
    """One logits record: lse (float64 then f32) and the top-K (id, logit), sorted."""
    x = np.asarray(logits, dtype=np.float32)
    m = float(x.max())
    lse = m + float(np.log(np.sum(np.exp(x.astype(np.float64) - m))))
    ids = np.arange(x.size, dtype=np.int64)
    order = np.lexsort((ids, -x))[:TOP_K]  # by logit descending, then id ascending
    r = np.zeros((), dtype=REC_DTYPE)
    r["lse"] = lse
    r["pairs"]["id"] = order.astype(np.int32)
    r["pairs"]["logit"] = x[order]
    assert r["lse"] >= r["pairs"]["logit"][0]
    return r


def last_logits(llm):
    return np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32, copy=True)


def run_prompt(llm, tokens):
    """Evaluate the prompt, then N_GEN greedy steps one token at a time.
    Returns (generated ids, step records, step-0 logits, per-step top-2 margins)."""
    llm.reset()
    llm.eval(tokens)
    logits = last_logits(llm)
    first = logits.copy()
    gen, recs, margins = [], [], []
    for s in range(N_GEN):
        r = record(logits)
        tok = int(r["pairs"]["id"][0])  # == np.argmax(logits): first (lowest) id among ties
        assert tok == int(np.argmax(logits))
        gen.append(tok)
        recs.append(r)
        margins.append(float(r["pairs"]["logit"][0] - r["pairs"]["logit"][1]))
        if s + 1 < N_GEN:
            llm.eval([tok])
            logits = last_logits(llm)
    return gen, recs, first, margins


def decode(llm, prefix, tokens):
    """Text of `tokens` as they read after `prefix` (so leading spaces come out right)."""
    whole = llm.detokenize(prefix + tokens, special=True)
    head = llm.detokenize(prefix, special=True)
    raw = whole[len(head):] if whole.startswith(head) else llm.detokenize(tokens, special=True)
    return raw.decode("utf-8", errors="replace")


def build_model(llama_cpp, name, path, manifest_row, out_dir, text, kv="f16"):
    sha = sha256_file(path)
    if manifest_row and sha != manifest_row["sha256"]:
        sys.exit("golden_llamacpp: %s has sha256 %s, models/starter.tsv says %s"
                 % (path, sha, manifest_row["sha256"]))
    params = dict(n_ctx=N_CTX, n_batch=N_BATCH, n_ubatch=N_BATCH, n_threads=N_THREADS,
                  n_threads_batch=N_THREADS, logits_all=True, flash_attn=False, use_mmap=True,
                  n_gpu_layers=0, seed=0, verbose=False)
    if kv != "f16":
        params.update(type_k=KV_TYPES[kv], type_v=KV_TYPES[kv], flash_attn=True)
    llm = llama_cpp.Llama(model_path=path, **params)
    n_vocab = llm.n_vocab()
    add_bos = str(llm.metadata.get("tokenizer.ggml.add_bos_token", "false")).lower() == "true"

    prompts = COMMON_PROMPTS[:4] + [CHAT_PROMPTS[name]] + COMMON_PROMPTS[4:]
    assert len(prompts) == 8
    full = n_vocab <= FULL_LOGITS_MAX_VOCAB
    table, pool_tokens, pool_bytes, gens, steps, fulls, lines = [], [], b"", [], [], [], []
    lines.append("# %s: greedy continuations by llama.cpp (llama-cpp-python %s)"
                 % (name, llama_cpp.__version__))
    lines.append("# model %s  sha256 %s" % (os.path.basename(path), sha))
    lines.append("# %d tokens per prompt, argmax over raw logits one token at a time, no stop on "
                 "EOS; 'near ties' lists steps whose top-2 logits differ by < 0.01" % N_GEN)
    for label, text_p in prompts:
        toks = llm.tokenize(text_p.encode("utf-8"), add_bos=add_bos, special=True)
        assert len(toks) + N_GEN <= N_CTX, (label, len(toks))
        gen, recs, first, margins = run_prompt(llm, toks)
        b = text_p.encode("utf-8")
        table.append((len(toks), len(pool_tokens), len(b), len(pool_bytes)))
        pool_tokens += toks
        pool_bytes += b
        gens.append(gen)
        steps += recs
        if full:
            fulls.append(first.astype("<f2"))
        ties = [(s, m) for s, m in enumerate(margins) if m < 0.01]
        lines.append("")
        lines.append("## prompt %d: %s (%d tokens)" % (len(gens) - 1, label, len(toks)))
        lines.append("prompt: %s" % json.dumps(text_p, ensure_ascii=False))
        lines.append("prompt ids: %s" % " ".join(map(str, toks)))
        lines.append("generated ids: %s" % " ".join(map(str, gen)))
        lines.append("smallest top-2 margin: %.5f at step %d" % (min(margins),
                                                               margins.index(min(margins))))
        lines.append("near ties: %s" % (", ".join("step %d (%.5f)" % t for t in ties)
                                        if ties else "none"))
        lines.append("continuation: %s" % json.dumps(decode(llm, toks, gen), ensure_ascii=False))

    text_toks_all = llm.tokenize(text.encode("utf-8"), add_bos=add_bos, special=True)
    text_toks = text_toks_all[:N_TEXT_MAX]
    llm.reset()
    llm.eval(text_toks)
    text_recs = [record(llm.scores[t]) for t in range(len(text_toks))]
    hits = sum(1 for t in range(len(text_toks) - 1)
               if int(text_recs[t]["pairs"]["id"][0]) == text_toks[t + 1])
    lines.append("")
    lines.append("## teacher-forced text_en.txt: %d tokens, first %d kept; argmax == next token "
                 "at %d of %d positions" % (len(text_toks_all), len(text_toks), hits,
                                            len(text_toks) - 1))

    flags = (FLAG_FULL_LOGITS if full else 0) | (FLAG_BOS if add_bos else 0)
    header = struct.pack("<8s10I32s48x", MAGIC, VERSION, HEADER_BYTES, n_vocab, TOP_K,
                         len(prompts), N_GEN, len(text_toks), len(pool_tokens), len(pool_bytes),
                         flags, bytes.fromhex(sha))
    assert len(header) == HEADER_BYTES
    parts = [header,
             np.array(table, dtype="<u4").tobytes(),
             np.array(pool_tokens, dtype="<i4").tobytes(),
             np.array(gens, dtype="<i4").tobytes(),
             np.array(steps, dtype=REC_DTYPE).tobytes(),
             b"".join(f.tobytes() for f in fulls),
             np.array(text_toks, dtype="<i4").tobytes(),
             np.array(text_recs, dtype=REC_DTYPE).tobytes(),
             pool_bytes]
    blob = b"".join(parts)
    stem = name if kv == "f16" else name + "." + kv
    golden = os.path.join(out_dir, stem + ".golden")
    with open(golden + ".tmp", "wb") as f:
        f.write(blob)
    os.replace(golden + ".tmp", golden)
    with open(os.path.join(out_dir, stem + ".txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")

    info = dict(model_file=os.path.basename(path), model_sha256=sha,
                model_bytes=os.path.getsize(path), n_vocab=n_vocab, add_bos=add_bos,
                golden=os.path.basename(golden), golden_sha256=hashlib.sha256(blob).hexdigest(),
                golden_bytes=len(blob), n_prompts=len(prompts), n_gen=N_GEN, top_k=TOP_K,
                n_text=len(text_toks), n_text_tokens_total=len(text_toks_all),
                full_logits_step0=full, kv_cache=kv, llama_params=params)
    if manifest_row:
        info.update(repo=manifest_row["repo"], revision=manifest_row["revision"],
                    sources=manifest_row["sources"])
    del llm
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="smollm2,gemma3", help="comma-separated starter names")
    ap.add_argument("--out", default=OUT_DEFAULT, help="output folder")
    ap.add_argument("--oracle-build", default=os.environ.get("CMAKE_ARGS", ""),
                    help="how llama.cpp was built, recorded in provenance.json (default: $CMAKE_ARGS)")
    ap.add_argument("--kv", default="f16", choices=sorted(KV_TYPES),
                    help="KV cache type; a quantized one runs with flash attention (NAME.<kv>.golden)")
    args = ap.parse_args()

    import llama_cpp  # the oracle: `make oracles` installs it

    manifest = read_manifest()
    with open(os.path.join(args.out, "text_en.txt"), encoding="utf-8") as f:
        text = f.read()
    prov_path = os.path.join(args.out, "provenance.json")
    prov = {}
    if os.path.exists(prov_path):
        with open(prov_path, encoding="utf-8") as f:
            prov = json.load(f)
    models = prov.get("models", {})
    for name in args.models.split(","):
        print("golden_llamacpp: %s ..." % name, file=sys.stderr, flush=True)
        key = name if args.kv == "f16" else name + "." + args.kv
        models[key] = build_model(llama_cpp, name, model_path(name), manifest.get(name),
                                  args.out, text, args.kv)
    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    prov = dict(
        generator="tools/golden_llamacpp.py",
        command=" ".join(["python", "tools/golden_llamacpp.py"] + sys.argv[1:]),
        date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        llama_cpp_python=llama_cpp.__version__,
        ggml=ggml_build_info(llama_cpp),
        system_info=llama_cpp.llama_print_system_info().decode().strip(),
        cpu=cpu,
        python=platform.python_version(),
        numpy=np.__version__,
        n_threads=N_THREADS,
        oracle_build=args.oracle_build,
        format=dict(magic=MAGIC.decode(), version=VERSION, header_bytes=HEADER_BYTES,
                    record_bytes=REC_DTYPE.itemsize),
        models=dict(sorted(models.items())),
    )
    with open(prov_path, "w", encoding="utf-8") as f:
        json.dump(prov, f, indent=2, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
