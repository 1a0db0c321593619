#!/usr/bin/env python3
"""Make tiny random-init checkpoints of the hybrid families (gated DeltaNet layers beside full
attention: Qwen3.5 text, Qwen3-Next) with transformers, and record transformers' f32 reference
logits.

How the goldens were made (re-run to regenerate; deterministic for given library versions,
which are recorded in each golden's "provenance"):
    python3 -m venv /tmp/tenv && /tmp/tenv/bin/pip install -r requirements/transformers.txt
    /tmp/tenv/bin/python tools/make_deltanet_tiny.py --out tests/golden/hf

qwen3_5_text (transformers' Qwen3_5ForCausalLM): 3 layers (hidden 64, MLP 32, the tiny BPE
tokenizer of tools/make_hf_tiny.py, vocab 288, tied embeddings), layer_types linear, full,
linear (the state of layer 2 carries across a full-attention layer). The full-attention layers: 4 heads, 2 kv heads, head dim 16, q_proj doubled for
the per-head output gate, QK-norm, partial rotary (0.25: 4 rotated dims, rotate_half). The
linear-attention (gated DeltaNet) layers: 2 key heads and 4 value heads of 16 dims, a causal
conv of width 4. Random init with a fixed seed; the zero-centred norms (1 + w) moved off 0, the
gated norms off 1, A_log drawn so that the decay exp(g) stays near 0.3..1 (the state then carries
over many tokens, as the released models' does), dt_bias random. Written as:
    qwen3_5_text/       save_pretrained in f32
    qwen3_5_text-bf16/  save_pretrained in bf16 (golden on the bf16 values widened; its json
                        also records how far transformers' logits move when every Linear's
                        input is rounded to bf16, bf16_activations_max_dlogit)
qwen3_next (transformers' Qwen3NextForCausalLM): the same shapes, every layer a dense MLP
(mlp_only_layers: all) and the DeltaNet projections in Qwen3-Next's fused, per-key-head grouped
in_proj_qkvz / in_proj_ba:
    qwen3_next/         save_pretrained in f32
    qwen3_next-moe/     layers 0 and 2 routed (layer 1 dense, mlp_only_layers): 4 experts of width
                        16, 2 per token, renormalized (norm_topk_prob), a shared expert of width 32
                        weighed by sigmoid(shared_expert_gate); experts and router drawn at std
                        0.25 so that routing differs between tokens
qwen3_5_moe_text (transformers' Qwen3_5MoeForCausalLM): Qwen3.5's layers with that mixture on
every layer (no dense MLP):
    qwen3_5_moe_text/   save_pretrained in f32

For each, with eager attention in f32 on the weights hearth computes with (bf16 widened),
<name>.logits.bin holds the logits at every position of each prompt and <name>.json the argmax
at every position and a 32-token greedy continuation (full recompute per step: transformers'
chunked gated delta rule over the whole sequence), as make_hf_tiny.py's reference() writes them.
"""
import argparse, datetime, json, os, shutil, sys

import numpy as np

import torch
import transformers
import tokenizers
import safetensors

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_hf_tiny as hf  # noqa: E402  (the tokenizer, reference())

LINEAR = dict(linear_conv_kernel_dim=4, linear_key_head_dim=16, linear_value_head_dim=16, linear_num_key_heads=2,
              linear_num_value_heads=4)
HYBRID = dict(hf.COMMON, head_dim=hf.HEAD_DIM, num_hidden_layers=3, intermediate_size=32, tie_word_embeddings=True,
              layer_types=["linear_attention", "full_attention", "linear_attention"],
              rope_parameters=dict(rope_type="default", rope_theta=10000.0, partial_rotary_factor=0.25), **LINEAR)
MOE = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16, shared_expert_intermediate_size=32)
NO_MLP = {k: v for k, v in HYBRID.items() if k != "intermediate_size"}
# checkpoint name -> (model_type, config, seed)
FAMILIES = {
    "qwen3_5_text": ("qwen3_5_text", dict(HYBRID), 35),
    "qwen3_next": ("qwen3_next", dict(HYBRID, num_experts=0, mlp_only_layers=[0, 1, 2]), 36),
    "qwen3_next-moe": ("qwen3_next", dict(HYBRID, mlp_only_layers=[1], norm_topk_prob=True, decoder_sparse_step=1,
                                          **MOE), 37),
    "qwen3_5_moe_text": ("qwen3_5_moe_text", dict(NO_MLP, **MOE), 38),
}


def build(family):
    model_type, over, seed = FAMILIES[family]
    cfg = transformers.AutoConfig.for_model(model_type, **over)
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("linear_attn.norm.weight"):  # the gated RMSNorm multiplies by w
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif name.endswith("norm.weight"):  # the others by (1 + w)
                p.copy_(0.2 * torch.randn_like(p))
            elif name.endswith("A_log"):
                p.copy_(torch.log(torch.empty_like(p).uniform_(0.05, 0.6)))
            elif name.endswith("dt_bias"):
                p.copy_(torch.randn_like(p) - 1.0)
            elif name.endswith("conv1d.weight"):
                p.copy_(0.5 * torch.randn_like(p))
            elif "experts" in name or name.endswith("mlp.gate.weight"):  # routing that differs between tokens
                p.copy_(0.25 * torch.randn_like(p))
    return model


def bf16_sensitivity(model, state, name, out_dir):
    """How far transformers' own logits move when every Linear's input is rounded to bf16 (what
    a bf16 matmul kernel does to its activations): the largest |dlogit| against the golden,
    recorded in <name>.json as "bf16_activations_max_dlogit" (test_deltanet.c's bound for the
    bf16 checkpoint on the fast kernel sets rests on it)."""
    model.load_state_dict(state, strict=False)
    model.tie_weights()
    hooks = [mod.register_forward_pre_hook(lambda mod, args: (args[0].to(torch.bfloat16).float(),))
             for mod in model.modules() if isinstance(mod, torch.nn.Linear)]
    with torch.no_grad():
        got = np.concatenate([model(torch.tensor([ids])).logits[0].float().numpy() for ids in hf.PROMPTS])
    for h in hooks:
        h.remove()
    gold = np.fromfile(os.path.join(out_dir, name + ".logits.bin"), dtype="<f4").reshape(got.shape)
    meta = json.load(open(os.path.join(out_dir, name + ".json")))
    meta["bf16_activations_max_dlogit"] = float(np.abs(got - gold).max())
    json.dump(meta, open(os.path.join(out_dir, name + ".json"), "w"), indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/golden/hf")
    ap.add_argument("--only", nargs="*", help="names of FAMILIES (default: all)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    provenance = {"tool": "tools/make_deltanet_tiny.py", "transformers": transformers.__version__,
                  "torch": torch.__version__, "tokenizers": tokenizers.__version__,
                  "safetensors": safetensors.__version__, "date": datetime.date.today().isoformat(),
                  "attention": "eager", "dtype": "float32"}
    tok = hf.make_tokenizer()
    for fam in FAMILIES:
        if args.only and fam not in args.only:
            continue
        model = build(fam)
        model.generation_config = transformers.GenerationConfig(eos_token_id=[2], do_sample=False)
        f32 = {k: v.clone() for k, v in model.state_dict().items()}
        for variant in ("", "-bf16") if fam == "qwen3_5_text" else ("",):
            d = os.path.join(args.out, fam + variant)
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            tok.save_pretrained(d)
            if os.path.exists(os.path.join(d, "special_tokens_map.json")):
                os.remove(os.path.join(d, "special_tokens_map.json"))
            ref = build(fam)
            if variant == "-bf16":
                m16 = build(fam)
                m16.load_state_dict(f32)
                m16.to(torch.bfloat16).save_pretrained(d)
                state = {k: v.to(torch.bfloat16).float() for k, v in f32.items()}
            else:
                model.load_state_dict(f32)
                model.save_pretrained(d)
                state = f32
            missing = set(ref.state_dict()) - set(state)
            assert not missing, "the golden would keep random weights for %s" % sorted(missing)
            hf.reference(ref, state, fam + variant, args.out, provenance)
            if variant == "-bf16":
                bf16_sensitivity(build(fam), state, fam + variant, args.out)
            print(fam + variant, "ok", file=sys.stderr)


if __name__ == "__main__":
    main()
