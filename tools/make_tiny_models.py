#!/usr/bin/env python3
"""Make tiny random qwen2 and qwen3 checkpoints with transformers, write them as GGUF, and
record transformers' f32 reference logits for the exact (dequantized) weights in the file.

How the goldens were made (re-run to regenerate; the output is deterministic for a given
torch/transformers/gguf version):
    python -m venv /tmp/tenv && /tmp/tenv/bin/pip install -r requirements/transformers.txt
    /tmp/tenv/bin/python tools/make_tiny_models.py --vocab-from <SmolLM2 GGUF> --out tests/golden/tiny

For each family the script
  1. builds the model from a small config with transformers (random init, seed fixed, a
     larger init range so next-token distributions are peaked and greedy choices are stable),
  2. writes a GGUF with gguf-py: hparams under the family's keys, the SmolLM2 byte-level BPE
     vocabulary copied from --vocab-from (so llama.cpp and hearth can tokenize), norms in f32,
     projections in a mix of Q8_0 / Q4_0 / Q5_1 / F16 / F32 to exercise the kernels,
  3. loads the dequantized GGUF weights back into the transformers model and records, for fixed
     prompts (eager attention, f32): the last position's full logits (little-endian f32 in
     tiny-<family>.logits.bin, one n_vocab row per prompt), every position's argmax, and a
     32-token greedy continuation (in tiny-<family>.json).
"""
import argparse, datetime, hashlib, json, os, struct, sys

import numpy as np
import torch
import transformers
import gguf
from gguf import GGUFWriter, GGMLQuantizationType as Q
from gguf.quants import quantize, dequantize

FAMILIES = {
    "qwen2": dict(cls="Qwen2ForCausalLM", cfg="Qwen2Config", bias=True, qk_norm=False),
    "qwen3": dict(cls="Qwen3ForCausalLM", cfg="Qwen3Config", bias=False, qk_norm=True),
}
HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FF = 64, 2, 4, 2, 16, 160
ROPE_THETA, EPS, CTX = 10000.0, 1e-6, 2048
# tensor type per projection (weights quantized in the file; the reference uses the dequantized values)
TYPES = {"attn_q": Q.Q8_0, "attn_k": Q.Q4_0, "attn_v": Q.Q5_1, "attn_output": Q.F16,
         "ffn_gate": Q.Q4_1, "ffn_up": Q.Q5_0, "ffn_down": Q.F32, "token_embd": Q.Q4_0}
PROMPTS = [
    [1, 504, 3527, 28, 253, 1345, 2284, 30, 378, 5536],
    [4, 19, 7052, 3009, 314, 260, 1692, 28, 1007, 5, 198, 6421, 42, 5, 200, 3000, 1500, 77, 9],
    list(range(100, 164)),
]


def vocab_fields(path):
    r = gguf.GGUFReader(path)
    out = {}
    for k in ("tokenizer.ggml.model", "tokenizer.ggml.pre"):
        out[k] = r.fields[k].contents()
    out["tokens"] = r.fields["tokenizer.ggml.tokens"].contents()
    out["token_type"] = r.fields["tokenizer.ggml.token_type"].contents()
    out["merges"] = r.fields["tokenizer.ggml.merges"].contents()
    for k in ("bos_token_id", "eos_token_id", "unknown_token_id", "padding_token_id"):
        out[k] = int(r.fields["tokenizer.ggml." + k].contents())
    return out


def build(family, vocab):
    f = FAMILIES[family]
    cfg_cls = getattr(transformers, f["cfg"])
    kw = dict(vocab_size=len(vocab["tokens"]), hidden_size=HIDDEN, intermediate_size=FF,
              num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
              max_position_embeddings=CTX, rms_norm_eps=EPS, rope_theta=ROPE_THETA,
              tie_word_embeddings=True, initializer_range=0.25, attn_implementation="eager")
    if family == "qwen3":
        kw["head_dim"] = HEAD_DIM
    cfg = cfg_cls(**kw)
    torch.manual_seed(1234 if family == "qwen2" else 4321)
    model = getattr(transformers, f["cls"])(cfg).float().eval()
    with torch.no_grad():  # norms and biases away from their trivial init
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn_like(p))
    return model


def gguf_name(hf):
    """HF parameter name -> (GGUF tensor name, kind)."""
    if hf == "model.embed_tokens.weight": return "token_embd.weight", "token_embd"
    if hf == "model.norm.weight": return "output_norm.weight", "norm"
    p = hf.split(".")
    il, rest = p[2], ".".join(p[3:])
    table = {
        "input_layernorm.weight": ("attn_norm.weight", "norm"),
        "post_attention_layernorm.weight": ("ffn_norm.weight", "norm"),
        "self_attn.q_proj.weight": ("attn_q.weight", "attn_q"),
        "self_attn.k_proj.weight": ("attn_k.weight", "attn_k"),
        "self_attn.v_proj.weight": ("attn_v.weight", "attn_v"),
        "self_attn.o_proj.weight": ("attn_output.weight", "attn_output"),
        "self_attn.q_proj.bias": ("attn_q.bias", "norm"),
        "self_attn.k_proj.bias": ("attn_k.bias", "norm"),
        "self_attn.v_proj.bias": ("attn_v.bias", "norm"),
        "self_attn.q_norm.weight": ("attn_q_norm.weight", "norm"),
        "self_attn.k_norm.weight": ("attn_k_norm.weight", "norm"),
        "mlp.gate_proj.weight": ("ffn_gate.weight", "ffn_gate"),
        "mlp.up_proj.weight": ("ffn_up.weight", "ffn_up"),
        "mlp.down_proj.weight": ("ffn_down.weight", "ffn_down"),
    }
    name, kind = table[rest]
    return f"blk.{il}.{name}", kind


def write_gguf(family, model, vocab, path):
    w = GGUFWriter(path, family)
    w.add_name(f"hearth tiny {family}")
    w.add_context_length(CTX)
    w.add_embedding_length(HIDDEN)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FF)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_layer_norm_rms_eps(EPS)
    w.add_rope_freq_base(ROPE_THETA)
    if family == "qwen3":
        w.add_key_length(HEAD_DIM)
        w.add_value_length(HEAD_DIM)
    w.add_tokenizer_model(vocab["tokenizer.ggml.model"])
    w.add_tokenizer_pre(vocab["tokenizer.ggml.pre"])
    w.add_token_list(vocab["tokens"])
    w.add_token_types(vocab["token_type"])
    w.add_token_merges(vocab["merges"])
    w.add_bos_token_id(vocab["bos_token_id"])
    w.add_eos_token_id(vocab["eos_token_id"])
    w.add_unk_token_id(vocab["unknown_token_id"])
    w.add_pad_token_id(vocab["padding_token_id"])
    w.add_add_bos_token(False)
    deq = {}
    for hf, p in model.state_dict().items():
        if hf == "lm_head.weight":
            continue  # tied
        name, kind = gguf_name(hf)
        a = p.detach().float().numpy()
        qt = Q.F32 if kind == "norm" else TYPES[kind]
        if qt == Q.F32:
            w.add_tensor(name, a)
            deq[hf] = a
        elif qt == Q.F16:
            h = a.astype(np.float16)
            w.add_tensor(name, h)
            deq[hf] = h.astype(np.float32)
        else:
            qd = quantize(a, qt)
            w.add_tensor(name, qd, raw_shape=qd.shape, raw_dtype=qt)
            deq[hf] = dequantize(qd, qt).reshape(a.shape).astype(np.float32)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return deq


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab-from", required=True, help="SmolLM2 GGUF to copy the tokenizer from")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    vocab = vocab_fields(args.vocab_from)
    torch.set_num_threads(2)
    for family in FAMILIES:
        model = build(family, vocab)
        gpath = os.path.join(args.out, f"tiny-{family}.gguf")
        deq = write_gguf(family, model, vocab, gpath)
        sd = model.state_dict()
        for k, v in deq.items():
            sd[k] = torch.from_numpy(v.copy())
        sd["lm_head.weight"] = sd["model.embed_tokens.weight"]
        model.load_state_dict(sd)
        n_vocab = len(vocab["tokens"])
        meta = {"family": family, "n_vocab": n_vocab, "prompts": [], "gguf": os.path.basename(gpath),
                "gguf_sha256": hashlib.sha256(open(gpath, "rb").read()).hexdigest(),
                "made_by": "tools/make_tiny_models.py", "torch": torch.__version__,
                "transformers": transformers.__version__, "gguf": getattr(gguf, "__version__", "0.17.1"),
                "date": datetime.date.today().isoformat(),
                "layout": "for each prompt in order: the last position's n_vocab little-endian f32 logits"}
        with open(os.path.join(args.out, f"tiny-{family}.logits.bin"), "wb") as fo:
            for ids in PROMPTS:
                with torch.no_grad():
                    out = model(torch.tensor([ids]), use_cache=False).logits[0].float().numpy()
                    seq = list(ids)
                    for _ in range(32):  # greedy, full recompute each step (no cache subtleties)
                        nxt = model(torch.tensor([seq]), use_cache=False).logits[0, -1]
                        seq.append(int(torch.argmax(nxt)))
                fo.write(out[-1].astype("<f4").tobytes())
                top = np.sort(out[-1])[::-1]
                meta["prompts"].append({"ids": ids, "argmax": [int(x) for x in out.argmax(-1)],
                                        "greedy32": seq[len(ids):],
                                        "top1_margin_last": float(top[0] - top[1])})
        with open(os.path.join(args.out, f"tiny-{family}.json"), "w") as fo:
            json.dump(meta, fo, indent=1)
        print(family, gpath, os.path.getsize(gpath), [p["top1_margin_last"] for p in meta["prompts"]])


if __name__ == "__main__":
    main()
