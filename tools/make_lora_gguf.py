#!/usr/bin/env python3
"""Make a small random GGUF LoRA adapter for the SmolLM2 starter model with gguf-py, and record
what llama.cpp computes with it (llama-cpp-python's lora_path), for tests/models/test_lora_gguf.c.

How the files were made (re-run to regenerate; deterministic for the given library versions,
which the JSON records):
    .venv/bin/pip install -r requirements/oracle.txt
    .venv/bin/python tools/make_lora_gguf.py --out tests/golden/lora

The adapter (<out>/smollm2-lora.gguf) is written as llama.cpp's convert_lora_to_gguf.py writes
one: general.type "adapter", adapter.type "lora", adapter.lora.alpha, general.architecture of
the base, and per adapted weight blk.N.<name>.weight.lora_a (numpy [r][n_in], ggml ne
[n_in, r]) and .lora_b (numpy [n_out][r], ggml ne [r, n_out]), f32. To stay small it adapts
attn_q, attn_v and ffn_down of two layers (0 and 29) at rank 4, alpha 8; A and B are normal
with a fixed seed, B scaled so that the update changes the greedy continuations.

The golden (<out>/smollm2-lora.json): for each prompt its token ids (llama.cpp's tokenization,
BOS added as the model says), a 16-token greedy continuation with the adapter (our own argmax
over the raw logits after evaluating one token at a time; no sampler) and without it (so a test
can tell the adapter was applied), and the top-8 (id, logit) after the prompt with the adapter.

NOTE: both models load with llama_model_params.use_extra_bufts = false. With the default (true),
llama.cpp repacks the base weights into an extra CPU buffer type where the CPU has one (AMX on
Sapphire Rapids and later: "lora for 'blk.0.attn_q.weight' cannot use buft 'AMX', fallback to
CPU" at load), and the first llama_decode with the adapter then dies with SIGSEGV
(llama-cpp-python 0.3.36); without the repacking the same adapter evaluates. The repacking
changes where the weights live, not the arithmetic hearth is compared with.

NOTE (conditioning): with B's values at a spread of 0.5 the adapter made SmolLM2's logits
chaotic: hearth agreed with llama.cpp bit for bit on the first prompt but by only 0.33 on the
top-8 logits of the other two, and scaling hearth's own update by 1 + 2e-7 moved its top logit
by 0.1 (an 8-bit activation rounding flips, and the adapted last layer amplifies it). Neither
side is wrong there; no tolerance can be stated. At a spread of 1.0 (B_STD) hearth's logits
equal llama.cpp's to the printed digits on all three prompts, and the greedy continuations with
and without the adapter differ, as the test needs.
"""
import argparse, datetime, hashlib, json, os, subprocess, sys

import numpy as np
import gguf
import llama_cpp

PROMPTS = ["The capital of France is", "Once upon a time, a small robot", "def fibonacci(n):"]
LAYERS, RANK, ALPHA, N_GEN, TOP = (0, 29), 4, 8.0, 16, 8
TARGETS = ("attn_q", "attn_v", "ffn_down")
B_STD = 1.0  # the spread of B's values (see NOTE on conditioning above)


def model_path():
    p = os.environ.get("HEARTH_SMOLLM2_GGUF")
    if p:
        return p
    return subprocess.run(["scripts/model-path.sh", "smollm2"], capture_output=True, text=True, check=True).stdout.strip()


def write_adapter(base, out):
    r = gguf.GGUFReader(base)
    arch = bytes(r.fields["general.architecture"].parts[-1]).decode()
    shapes = {t.name: [int(x) for x in t.shape] for t in r.tensors}  # ggml order: [n_in, n_out]
    rng = np.random.default_rng(20261202)
    w = gguf.GGUFWriter(out, arch)
    w.add_type("adapter")
    w.add_string("adapter.type", "lora")
    w.add_float32("adapter.lora.alpha", ALPHA)
    for il in LAYERS:
        for name in TARGETS:
            n_in, n_out = shapes[f"blk.{il}.{name}.weight"][:2]
            a = (rng.standard_normal((RANK, n_in)) / np.sqrt(n_in)).astype(np.float32)
            b = (rng.standard_normal((n_out, RANK)) * B_STD).astype(np.float32)
            w.add_tensor(f"blk.{il}.{name}.weight.lora_a", a)
            w.add_tensor(f"blk.{il}.{name}.weight.lora_b", b)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def no_extra_bufts():
    """Make Llama() load without the extra (repacking) buffer types (see NOTE above)."""
    default = llama_cpp.llama_model_default_params

    def params():
        p = default()
        p.use_extra_bufts = False
        return p

    llama_cpp.llama.llama_cpp.llama_model_default_params = params


def greedy(llm, ids):
    llm.reset()
    llm.eval(ids)
    out, first = [], None
    for s in range(N_GEN):
        logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        if s == 0:
            first = logits
        t = int(np.argmax(logits))  # the lowest id among exact ties
        out.append(t)
        llm.eval([t])
    return out, first


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/golden/lora")
    args = ap.parse_args()
    base = model_path()
    adapter = os.path.join(args.out, "smollm2-lora.gguf")
    write_adapter(base, adapter)
    no_extra_bufts()
    kw = dict(n_ctx=256, n_threads=2, logits_all=True, verbose=False, seed=0)
    plain = llama_cpp.Llama(model_path=base, **kw)
    lora = llama_cpp.Llama(model_path=base, lora_path=adapter, **kw)
    prompts = []
    for text in PROMPTS:
        ids = lora.tokenize(text.encode(), add_bos=True, special=True)
        g_lora, first = greedy(lora, ids)
        g_base, _ = greedy(plain, ids)
        top = np.argsort(-first, kind="stable")[:TOP]
        prompts.append({"text": text, "ids": ids, "greedy_lora": g_lora, "greedy_base": g_base,
                        "top_ids": [int(i) for i in top], "top_logits": [float(first[i]) for i in top]})
        print(f"{text!r}: lora {g_lora[:6]}... base {g_base[:6]}...", file=sys.stderr)
    sha = hashlib.sha256(open(base, "rb").read()).hexdigest()
    info = {"provenance": {"tool": "tools/make_lora_gguf.py", "llama_cpp_python": llama_cpp.__version__,
                           "gguf": gguf.__version__ if hasattr(gguf, "__version__") else "0.17.1",
                           "numpy": np.__version__, "date": datetime.date.today().isoformat(),
                           "base_sha256": sha, "layers": list(LAYERS), "rank": RANK, "alpha": ALPHA,
                           "targets": list(TARGETS), "use_extra_bufts": False},
            "prompts": prompts}
    json.dump(info, open(os.path.join(args.out, "smollm2-lora.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
