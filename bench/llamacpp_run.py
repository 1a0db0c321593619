#!/usr/bin/env python3
"""llamacpp_run.py - one llama.cpp measurement in its own process, for bench/speed.py.

Loads MODEL through llama-cpp-python's low-level API (the llama.cpp C functions, no Python
sampling or logits copies in the timed region), then, like `hearth benchmark`:
  warm-up    a 32-token prompt and 4 decoded tokens (not timed), then the cache is cleared;
  prefill    a prompt of --prompt-tokens pseudo-random ids in one llama_decode (n_batch = the
             prompt length; n_ubatch = --ubatch, default 512 as llama.cpp's own, so a longer
             prompt runs in chunks of 512 as hearth's does), timed from the call to
             llama_synchronize;
  decode     --tokens greedy tokens (argmax of the logits, temperature 0), each one
             llama_decode + llama_synchronize, timed per token and summed; the argmax is
             outside the timed region.
Prints one JSON object: prefill_tok_s, decode_tok_s, and the stack's own counters
(llama_perf_context) for comparison. Peak RSS is read by the parent (os.wait4).
With --idle it loads nothing and only imports llama_cpp: the interpreter's own RSS, which the
parent subtracts so the two stacks are compared on what the library costs.
"""
import argparse
import json
import random
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", nargs="?")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--prompt-tokens", type=int, default=512)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--ubatch", type=int, default=512, help="llama.cpp's n_ubatch (default 512)")
    ap.add_argument("--idle", action="store_true")
    ap.add_argument("--kv", default="f16", choices=("f16", "q8_0", "q4_0"),
                    help="KV cache type (-ctk/-ctv); a quantized one runs with flash attention")
    a = ap.parse_args()

    import numpy as np
    import llama_cpp as L

    if a.idle:
        print(json.dumps({"idle": True}))
        return 0
    L.llama_backend_init()
    mp = L.llama_model_default_params()
    model = L.llama_model_load_from_file(a.model.encode(), mp)
    if not model:
        print(json.dumps({"error": "cannot load " + a.model}))
        return 1
    n_ctx = a.prompt_tokens + a.tokens + 64
    cp = L.llama_context_default_params()
    cp.n_ctx = n_ctx
    cp.n_batch = max(a.prompt_tokens, 32)
    cp.n_ubatch = max(min(a.prompt_tokens, a.ubatch), 32)
    cp.n_threads = a.threads
    cp.n_threads_batch = a.threads
    cp.no_perf = False
    if a.kv != "f16":
        cp.type_k = cp.type_v = {"q8_0": 8, "q4_0": 2}[a.kv]
        cp.flash_attn_type = 1  # enabled: llama.cpp needs it for a quantized V
    ctx = L.llama_init_from_model(model, cp)
    vocab = L.llama_model_get_vocab(model)
    n_vocab = L.llama_vocab_n_tokens(vocab)
    mem = L.llama_get_memory(ctx)
    batch = L.llama_batch_init(cp.n_batch, 0, 1)

    def fill(tokens, pos0):
        batch.n_tokens = len(tokens)
        for i, t in enumerate(tokens):
            batch.token[i] = t
            batch.pos[i] = pos0 + i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = 1 if i == len(tokens) - 1 else 0

    def decode(tokens, pos0):
        fill(tokens, pos0)
        t0 = time.perf_counter()
        if L.llama_decode(ctx, batch) != 0:
            raise RuntimeError("llama_decode failed")
        L.llama_synchronize(ctx)
        return time.perf_counter() - t0

    def argmax_last():
        p = L.llama_get_logits_ith(ctx, -1)
        return int(np.ctypeslib.as_array(p, shape=(n_vocab,)).argmax())

    def run(n_prompt, n_gen):
        L.llama_memory_clear(mem, True)
        rng = random.Random(1234)
        prompt = [rng.randrange(100, min(n_vocab, 10100)) for _ in range(n_prompt)]
        t_prefill = sum(decode(prompt[i:i + cp.n_batch], i) for i in range(0, n_prompt, cp.n_batch))
        tok, t_decode = argmax_last(), 0.0
        for i in range(n_gen):
            t_decode += decode([tok], n_prompt + i)
            tok = argmax_last()
        return t_prefill, t_decode

    run(32, 4)  # warm-up
    L.llama_perf_context_reset(ctx)
    t_prefill, t_decode = run(a.prompt_tokens, a.tokens)
    perf = L.llama_perf_context(ctx)
    out = {
        "prefill_tok_s": a.prompt_tokens / t_prefill,
        "decode_tok_s": a.tokens / t_decode,
        "perf_prefill_tok_s": perf.n_p_eval / (perf.t_p_eval_ms / 1e3) if perf.t_p_eval_ms > 0 else 0,
        "perf_decode_tok_s": perf.n_eval / (perf.t_eval_ms / 1e3) if perf.t_eval_ms > 0 else 0,
        "system_info": L.llama_print_system_info().decode(errors="replace"),
        "n_ubatch": cp.n_ubatch, "flash_attn_type": int(cp.flash_attn_type),
    }
    L.llama_batch_free(batch)
    L.llama_free(ctx)
    L.llama_model_free(model)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
