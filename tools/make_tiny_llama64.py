#!/usr/bin/env python3
"""make_tiny_llama64.py - a tiny random llama checkpoint with 64-wide attention heads, as GGUF.

The quantized KV cache stores keys and values in blocks of 32 elements per head, so a model for
its golden tests needs heads of a multiple of 32; the transformers-made tiny checkpoints
(make_tiny_models.py) have heads of 16. This one is made with numpy alone (no torch): a llama
(SmolLM2's architecture) of 2 layers, n_embd 256, 4 query heads and 2 kv heads of 64, a
feed-forward of 512, weights drawn from a fixed seed and stored in SmolLM2's types (Q4_1
projections, a Q8_0 embedding, F32 norms), whose llama.cpp order hearth repeats bit for bit, the output tied to the embedding, and
SmolLM2's byte-level BPE vocabulary cut to its first N_VOCAB tokens (merges kept where both
halves and the result survive), copied from tests/golden/tiny/tiny-qwen2.gguf.

The file is deterministic for a given numpy and gguf-py: re-running writes the same bytes.
Goldens for it come from llama.cpp (tools/golden_llamacpp.py --models tiny-llama64 [--kv q8_0]).

Usage: .venv/bin/python tools/make_tiny_llama64.py [--out tests/golden/tiny/tiny-llama64.gguf]
"""
import argparse, os

import numpy as np
import gguf
from gguf import GGUFWriter, GGMLQuantizationType as Q
from gguf.quants import quantize

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB_FROM = os.path.join(ROOT, "tests", "golden", "tiny", "tiny-qwen2.gguf")
N_VOCAB = 4096
EMBD, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FF = 256, 2, 4, 2, 64, 512
ROPE_THETA, EPS, CTX = 10000.0, 1e-5, 2048
SEED = 64
# SmolLM2-135M-Instruct Q4_1's types, whose order hearth repeats bit for bit (docs/engine.md);
# Q4_0 and Q8_0 projections would go through llama.cpp's repacked and tiled paths instead
TYPES = {"attn_q": Q.Q4_1, "attn_k": Q.Q4_1, "attn_v": Q.Q4_1, "attn_output": Q.Q4_1,
         "ffn_gate": Q.Q4_1, "ffn_up": Q.Q4_1, "ffn_down": Q.Q4_1, "token_embd": Q.Q8_0}


def vocab():
    r = gguf.GGUFReader(VOCAB_FROM)
    tokens = [str(t) for t in r.fields["tokenizer.ggml.tokens"].contents()][:N_VOCAB]
    types = [int(t) for t in r.fields["tokenizer.ggml.token_type"].contents()][:N_VOCAB]
    keep = set(tokens)
    merges = []
    for m in r.fields["tokenizer.ggml.merges"].contents():
        a, b = str(m).split(" ")
        if a in keep and b in keep and a + b in keep:
            merges.append(str(m))
    return tokens, types, merges


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "golden", "tiny", "tiny-llama64.gguf"))
    args = ap.parse_args()
    rng = np.random.default_rng(SEED)
    tokens, types, merges = vocab()

    w = GGUFWriter(args.out, "llama")
    w.add_name("hearth tiny llama, 64-wide heads")
    w.add_context_length(CTX)
    w.add_embedding_length(EMBD)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FF)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_layer_norm_rms_eps(EPS)
    w.add_rope_freq_base(ROPE_THETA)
    w.add_vocab_size(N_VOCAB)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_pad_token_id(2)
    w.add_add_bos_token(False)

    def tensor(name, rows, cols, kind, scale):
        x = (rng.standard_normal((rows, cols)) * scale).astype(np.float32)
        t = TYPES[kind]
        if t in (Q.F16, Q.F32):
            w.add_tensor(name, x.astype(np.float16 if t == Q.F16 else np.float32))
        else:
            w.add_tensor(name, quantize(x, t), raw_dtype=t)

    # larger than a trained model's init, so next-token distributions are peaked
    tensor("token_embd.weight", N_VOCAB, EMBD, "token_embd", 0.5)
    w.add_tensor("output_norm.weight", (1.0 + 0.1 * rng.standard_normal(EMBD)).astype(np.float32))
    for il in range(LAYERS):
        p = "blk.%d." % il
        w.add_tensor(p + "attn_norm.weight", (1.0 + 0.1 * rng.standard_normal(EMBD)).astype(np.float32))
        tensor(p + "attn_q.weight", HEADS * HEAD_DIM, EMBD, "attn_q", 0.15)
        tensor(p + "attn_k.weight", KV_HEADS * HEAD_DIM, EMBD, "attn_k", 0.15)
        tensor(p + "attn_v.weight", KV_HEADS * HEAD_DIM, EMBD, "attn_v", 0.12)
        tensor(p + "attn_output.weight", EMBD, HEADS * HEAD_DIM, "attn_output", 0.08)
        w.add_tensor(p + "ffn_norm.weight", (1.0 + 0.1 * rng.standard_normal(EMBD)).astype(np.float32))
        tensor(p + "ffn_gate.weight", FF, EMBD, "ffn_gate", 0.1)
        tensor(p + "ffn_up.weight", FF, EMBD, "ffn_up", 0.1)
        tensor(p + "ffn_down.weight", EMBD, FF, "ffn_down", 0.15)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("wrote %s (%d bytes)" % (args.out, os.path.getsize(args.out)))


if __name__ == "__main__":
    main()
