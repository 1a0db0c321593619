#!/usr/bin/env python3
"""Make tiny random-init checkpoints of the mixture-of-experts families (Qwen3 MoE, gpt-oss) with
transformers, write the same weights as GGUF with gguf-py, and record transformers' f32 reference
logits.

How the goldens were made (re-run to regenerate; deterministic for given library versions,
which are recorded in each golden's "provenance"):
    python3 -m venv /tmp/tenv && /tmp/tenv/bin/pip install -r requirements/transformers.txt
    /tmp/tenv/bin/python tools/make_moe_tiny.py --out tests/golden/hf

qwen3_moe (transformers' Qwen3MoeForCausalLM): 3 layers (hidden 64, 4 heads, 2 kv heads, head
dim 16, vocab 288, the tiny BPE tokenizer of tools/make_hf_tiny.py), 4 experts of width 32 with 2
per token and norm_topk_prob, layer 1 a dense MLP of width 128 (mlp_only_layers = [1]), tied
embeddings; random init with a fixed seed, the experts and router at std 0.25 so that routing
differs between tokens, norms moved off 1. Written as:
    qwen3_moe/          save_pretrained in f32: one module per expert
                        (mlp.experts.<e>.{gate,up,down}_proj.weight), as the released Qwen3 MoE
                        checkpoints store them (transformers 5 saves them so)
    qwen3_moe-bf16/     save_pretrained in bf16
    qwen3_moe-stacked/  the f32 weights in transformers' in-memory layout (mlp.experts.gate_up_proj
                        [expert, 2 * width, hidden], mlp.experts.down_proj); golden: qwen3_moe's
    qwen3_moe-mlx/      mlx-lm's layout: experts stacked as mlp.switch_mlp.{gate,up,down}_proj
                        [expert, out, in], every matrix MLX affine quantized with
                        make_hf_tiny.py's quantizer (4-bit group 64; the experts' down_proj
                        group 32, 8-bit on layer 2; the router 8-bit group 64)
    qwen3_moe.gguf      the f32 weights as llama.cpp's convert_hf_to_gguf.py names them for
                        general.architecture = qwen3moe (blk.N.ffn_gate_inp, stacked 3-D
                        ffn_{gate,up,down}_exps, qwen3moe.expert_count / expert_used_count /
                        expert_feed_forward_length), the tokenizer as gpt2 BPE metadata; its
                        golden is qwen3_moe's (llama.cpp's qwen3moe graph always renormalizes
                        the chosen experts, as norm_topk_prob does)
gpt_oss (transformers' GptOssForCausalLM): 2 layers (sliding window 8, then full), 4 experts of
width 32 with 2 per token, sinks, biases, YaRN (factor 4 over 32 positions, truncate: false), see
gpt_oss() below for its four forms (f32, bf16, MXFP4 safetensors, GGUF).

For each, with eager attention in f32 on the weights hearth computes with (bf16 widened, MLX
dequantized), <name>.logits.bin holds the logits at every position of each prompt and
<name>.json the argmax at every position and a 32-token greedy continuation (full recompute per
step), as make_hf_tiny.py's reference() writes them.
"""
import argparse, datetime, json, os, shutil, sys

import numpy as np
import torch
import transformers
import tokenizers
import safetensors
from safetensors.torch import save_file, load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_hf_tiny as hf  # noqa: E402  (the tokenizer, the MLX quantizer, reference())

NE, TOPK, FF_EXP = 4, 2, 32
QWEN3_MOE = dict(hf.COMMON, head_dim=hf.HEAD_DIM, num_hidden_layers=3, tie_word_embeddings=True,
                 num_experts=NE, num_experts_per_tok=TOPK, moe_intermediate_size=FF_EXP, norm_topk_prob=True,
                 decoder_sparse_step=1, mlp_only_layers=[1], rope_parameters=dict(rope_type="default", rope_theta=1e6))
MLX_OVERRIDES = {
    **{"model.layers.%d.mlp.gate" % i: {"group_size": 64, "bits": 8} for i in (0, 2)},
    **{"model.layers.%d.mlp.switch_mlp.down_proj" % i: {"group_size": 32, "bits": b} for i, b in ((0, 4), (2, 8))},
}


def build():
    cfg = transformers.AutoConfig.for_model("qwen3_moe", **QWEN3_MOE)
    torch.manual_seed(23)
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif "experts" in name or name.endswith("mlp.gate.weight"):
                p.copy_(0.25 * torch.randn_like(p))
    return model


def experts_of(sd):
    """{layer: (gate [NE, I, E], up [NE, I, E], down [NE, E, I])} from a state dict in either of
    transformers' expert layouts (stacked gate_up_proj / down_proj, or one module per expert)."""
    out = {}
    for name in sd:
        if name.endswith("mlp.experts.gate_up_proj"):
            pre = name[:-len("gate_up_proj")]
            gu = sd[name]
            out[pre] = (gu[:, :FF_EXP], gu[:, FF_EXP:], sd[pre + "down_proj"])
        elif name.endswith("mlp.experts.0.gate_proj.weight"):
            pre = name[:-len("0.gate_proj.weight")]
            out[pre] = tuple(torch.stack([sd["%s%d.%s.weight" % (pre, e, p)] for e in range(NE)])
                             for p in ("gate_proj", "up_proj", "down_proj"))
    return out


def non_expert(sd):
    return {k: v for k, v in sd.items() if ".mlp.experts." not in k}


def write_stacked_layout(src_sd, d):
    """transformers' stacked expert tensors: mlp.experts.gate_up_proj / down_proj."""
    out = {k: v for k, v in non_expert(src_sd).items() if k != "lm_head.weight"}
    for pre, (g, u, dn) in experts_of(src_sd).items():
        out[pre + "gate_up_proj"] = torch.cat([g, u], dim=1).contiguous()
        out[pre + "down_proj"] = dn.contiguous()
    for f in os.listdir(d):
        if f.endswith(".safetensors") or f.endswith(".index.json"):
            os.remove(os.path.join(d, f))
    save_file(out, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})


def write_mlx(src_sd, d):
    """mlx-lm's layout, quantized; returns the f32 state dict (transformers' names) it stands for."""
    out, deq = {}, {}
    qcfg = dict(hf.MLX_DEFAULT)
    qcfg.update(MLX_OVERRIDES)

    def quant(module, t):
        q = MLX_OVERRIDES.get(module, hf.MLX_DEFAULT)
        packed, s, b, w = hf.mlx_quantize_nd(t.float(), q["bits"], q["group_size"])
        out[module + ".weight"], out[module + ".scales"], out[module + ".biases"] = (
            packed.contiguous(), s.contiguous(), b.contiguous())
        return w

    for name, t in non_expert(src_sd).items():
        if name == "lm_head.weight":
            continue  # tied
        if t.dim() == 2 and name.endswith(".weight"):
            deq[name] = quant(name[:-len(".weight")], t)
        else:
            out[name] = t.to(torch.bfloat16).contiguous()
            deq[name] = out[name].float()
    deq["lm_head.weight"] = deq["model.embed_tokens.weight"]
    for pre, (g, u, dn) in experts_of(src_sd).items():
        sw = pre.replace("mlp.experts.", "mlp.switch_mlp.")
        deq[pre] = tuple(quant(sw + p, t) for p, t in (("gate_proj", g), ("up_proj", u), ("down_proj", dn)))
    for f in os.listdir(d):
        if f.endswith(".safetensors"):
            os.remove(os.path.join(d, f))
    save_file(out, os.path.join(d, "model.safetensors"), metadata={"format": "mlx"})
    cfg = json.load(open(os.path.join(d, "config.json")))
    cfg["quantization"] = qcfg
    cfg["quantization_config"] = qcfg
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=2)
    return deq


def state_for(model, sd_nonexp, experts):
    """A state dict for model (its own expert layout) from non-expert tensors and
    {prefix: (gate, up, down)} stacks."""
    own = model.state_dict()
    out = dict(sd_nonexp)
    for pre, (g, u, dn) in experts.items():
        if pre + "gate_up_proj" in own:
            out[pre + "gate_up_proj"] = torch.cat([g, u], dim=1)
            out[pre + "down_proj"] = dn
        else:
            for e in range(NE):
                out["%s%d.gate_proj.weight" % (pre, e)] = g[e]
                out["%s%d.up_proj.weight" % (pre, e)] = u[e]
                out["%s%d.down_proj.weight" % (pre, e)] = dn[e]
    return out


def write_gguf(sd, tok_dir, path):
    """The f32 weights as llama.cpp's converter writes a qwen3moe GGUF."""
    import gguf
    c = QWEN3_MOE
    w = gguf.GGUFWriter(path, "qwen3moe")
    w.add_name("tiny qwen3 moe")
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(c["hidden_size"])
    w.add_block_count(c["num_hidden_layers"])
    w.add_feed_forward_length(c["intermediate_size"])
    w.add_head_count(c["num_attention_heads"])
    w.add_head_count_kv(c["num_key_value_heads"])
    w.add_key_length(c["head_dim"])
    w.add_value_length(c["head_dim"])
    w.add_rope_freq_base(c["rope_parameters"]["rope_theta"])
    w.add_layer_norm_rms_eps(c["rms_norm_eps"])
    w.add_expert_count(NE)
    w.add_expert_used_count(TOPK)
    w.add_expert_feed_forward_length(FF_EXP)
    add_tokenizer(w, tok_dir, c["vocab_size"])

    def put(name, t):
        w.add_tensor(name, t.float().contiguous().numpy().astype(np.float32))

    put("token_embd.weight", sd["model.embed_tokens.weight"])
    put("output_norm.weight", sd["model.norm.weight"])
    experts = experts_of(sd)
    names = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm", "self_attn.q_proj": "attn_q",
             "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm", "mlp.gate": "ffn_gate_inp",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}
    for il in range(c["num_hidden_layers"]):
        for hfn, gn in names.items():
            key = "model.layers.%d.%s.weight" % (il, hfn)
            if key in sd:
                put("blk.%d.%s.weight" % (il, gn), sd[key])
        pre = "model.layers.%d.mlp.experts." % il
        if pre in experts:
            g, u, dn = experts[pre]
            put("blk.%d.ffn_gate_exps.weight" % il, g)  # numpy [NE, I, E]: ne [E, I, NE]
            put("blk.%d.ffn_up_exps.weight" % il, u)
            put("blk.%d.ffn_down_exps.weight" % il, dn)  # [NE, E, I]: ne [I, E, NE]
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def add_tokenizer(w, tok_dir, n_vocab):
    """The tiny BPE of tokenizer.json as gpt2 tokenizer metadata, with the ChatML template."""
    import gguf
    tj = json.load(open(os.path.join(tok_dir, "tokenizer.json")))
    vocab = dict(tj["model"]["vocab"])
    special = {a["content"]: a["id"] for a in tj["added_tokens"]}
    vocab.update(special)
    toks = ["[PAD%d]" % i for i in range(n_vocab)]
    types = [gguf.TokenType.UNUSED] * n_vocab
    for t, i in vocab.items():
        toks[i] = t
        types[i] = gguf.TokenType.CONTROL if t in special else gguf.TokenType.NORMAL
    merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen2")
    w.add_token_list(toks)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_eos_token_id(special["<|im_end|>"])
    w.add_chat_template(hf.CHATML)


def hf_blocks_to_ggml(blocks, scales):
    """MXFP4 as the safetensors store it ([.., rows, n/32, 16] with elements 2j, 2j+1 in byte j;
    [.., rows, n/32] e8m0) -> GGML's type 39 rows ([.., rows, n/32 * 17]: the e8m0 byte, then
    byte j = element j | element j + 16 << 4)."""
    lo, hi = blocks & 15, blocks >> 4
    codes = torch.stack([lo, hi], dim=-1).reshape(*blocks.shape[:-1], 32)
    qs = codes[..., :16] | (codes[..., 16:] << 4)
    out = torch.cat([scales[..., None], qs], dim=-1)
    return out.reshape(*blocks.shape[:-2], -1).to(torch.uint8).numpy()


def write_gguf_gpt_oss(sd, path):
    """gpt_oss-mxfp4's weights as llama.cpp's converter writes a gpt-oss GGUF: experts in MXFP4
    (type 39; gate and up are the even and odd rows of gate_up), everything else f32, the
    pre-ffn norm named post_attention_norm, sinks as attn_sinks.weight."""
    import gguf
    c = GPT_OSS
    w = gguf.GGUFWriter(path, "gpt-oss")
    w.add_name("tiny gpt-oss")
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(c["hidden_size"])
    w.add_block_count(c["num_hidden_layers"])
    w.add_feed_forward_length(c["intermediate_size"])
    w.add_head_count(c["num_attention_heads"])
    w.add_head_count_kv(c["num_key_value_heads"])
    w.add_key_length(c["head_dim"])
    w.add_value_length(c["head_dim"])
    w.add_rope_freq_base(c["rope_parameters"]["rope_theta"])
    w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
    w.add_rope_scaling_factor(c["rope_parameters"]["factor"])
    w.add_rope_scaling_orig_ctx_len(c["rope_parameters"]["original_max_position_embeddings"])
    w.add_layer_norm_rms_eps(c["rms_norm_eps"])
    w.add_sliding_window(c["sliding_window"])
    w.add_expert_count(c["num_local_experts"])
    w.add_expert_used_count(c["num_experts_per_tok"])
    w.add_expert_feed_forward_length(c["intermediate_size"])
    add_tokenizer(w, os.path.join(os.path.dirname(path), "gpt_oss-mxfp4"), c["vocab_size"])

    def put(name, t):
        w.add_tensor(name, t.float().contiguous().numpy().astype(np.float32))

    def put_mxfp4(name, blocks, scales, want):
        raw = hf_blocks_to_ggml(blocks, scales)
        # gguf-py's own MXFP4 reader gives back the values the golden uses
        assert np.array_equal(gguf.quants.dequantize(raw, gguf.GGMLQuantizationType.MXFP4), want.numpy())
        w.add_tensor(name, raw, raw_dtype=gguf.GGMLQuantizationType.MXFP4)

    put("token_embd.weight", sd["model.embed_tokens.weight"])
    put("output_norm.weight", sd["model.norm.weight"])
    put("output.weight", sd["lm_head.weight"])
    names = {"input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "post_attention_norm.weight",
             "self_attn.sinks": "attn_sinks.weight", "mlp.router.weight": "ffn_gate_inp.weight",
             "mlp.router.bias": "ffn_gate_inp.bias", "mlp.experts.down_proj_bias": "ffn_down_exps.bias"}
    for p, g in (("q", "q"), ("k", "k"), ("v", "v"), ("o", "output")):
        names["self_attn.%s_proj.weight" % p] = "attn_%s.weight" % g
        names["self_attn.%s_proj.bias" % p] = "attn_%s.bias" % g
    for il in range(c["num_hidden_layers"]):
        pre = "model.layers.%d." % il
        for hfn, gn in names.items():
            put("blk.%d.%s" % (il, gn), sd[pre + hfn])
        gub = sd[pre + "mlp.experts.gate_up_proj_bias"]
        put("blk.%d.ffn_gate_exps.bias" % il, gub[:, 0::2])
        put("blk.%d.ffn_up_exps.bias" % il, gub[:, 1::2])
        gb, gs = sd[pre + "mlp.experts.gate_up_proj_blocks"], sd[pre + "mlp.experts.gate_up_proj_scales"]
        db, ds = sd[pre + "mlp.experts.down_proj_blocks"], sd[pre + "mlp.experts.down_proj_scales"]
        from transformers.integrations.mxfp4 import convert_moe_packed_tensors
        gu = convert_moe_packed_tensors(gb, gs, dtype=torch.float32).transpose(1, 2)  # [NE, 2I, E]
        dn = convert_moe_packed_tensors(db, ds, dtype=torch.float32).transpose(1, 2)  # [NE, E, I]
        put_mxfp4("blk.%d.ffn_gate_exps.weight" % il, gb[:, 0::2], gs[:, 0::2], gu[:, 0::2])
        put_mxfp4("blk.%d.ffn_up_exps.weight" % il, gb[:, 1::2], gs[:, 1::2], gu[:, 1::2])
        put_mxfp4("blk.%d.ffn_down_exps.weight" % il, db, ds, dn)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


GPT_OSS = dict(hf.COMMON, head_dim=hf.HEAD_DIM, max_position_embeddings=128, intermediate_size=32, num_local_experts=4, num_experts_per_tok=2,
               sliding_window=8, layer_types=["sliding_attention", "full_attention"], tie_word_embeddings=False,
               rope_parameters=dict(rope_type="yarn", rope_theta=150000.0, factor=4.0, beta_fast=32.0, beta_slow=1.0,
                                    truncate=False, original_max_position_embeddings=32))
E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])


def build_gpt_oss(kw=None):
    cfg = transformers.AutoConfig.for_model("gpt_oss", **(kw or GPT_OSS))
    torch.manual_seed(24)
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif name.endswith("sinks"):
                p.copy_(1.5 * torch.randn_like(p))  # some heads put much weight on their sink
            elif name.endswith("bias"):
                p.copy_(0.3 * torch.randn_like(p))
            elif "experts" in name or "router" in name:
                p.copy_(0.5 * torch.randn_like(p))  # pre-activations past the SwiGLU's clamps at 7
    return model


def mxfp4_encode(w):
    """w [..., rows, n] f32 -> (blocks uint8 [..., rows, n/32, 16], scales uint8 [..., rows, n/32], the values
    they hold): per 32 inputs the power of two 2^e with max|w| / 2^e <= 6, each w / 2^e rounded to the
    nearest e2m1 magnitude (ties to the lower code), the sign in bit 3; low nibble = even element."""
    *lead, rows, n = w.shape
    g = w.reshape(*lead, rows, n // 32, 32).double()
    amax = g.abs().amax(-1).clamp(min=2.0 ** -120)
    e = torch.ceil(torch.log2(amax / 6.0)).clamp(-127, 127)
    x = g / torch.pow(2.0, e)[..., None]
    code = (x.abs()[..., None] - E2M1.double()).abs().argmin(-1)
    code = code | ((x < 0).long() << 3)
    vals = torch.where(x < 0, -E2M1[code & 7].double(), E2M1[code & 7].double()) * torch.pow(2.0, e)[..., None]
    blocks = (code[..., 0::2] | (code[..., 1::2] << 4)).to(torch.uint8)
    scales = (e + 127).to(torch.uint8)
    return blocks.contiguous(), scales.contiguous(), vals.reshape(w.shape).float()


def gpt_oss(args, tok, provenance):
    """gpt_oss/ (f32), gpt_oss-bf16/ and gpt_oss-mxfp4/ (the experts as the released checkpoints store
    them: gate_up_proj_blocks / _scales [expert, 2 * width, hidden / 32, 16 | -], down_proj_* likewise,
    quantization_config quant_method mxfp4; the golden on the MXFP4 values), and gpt_oss.gguf (those
    weights as a llama.cpp gpt-oss GGUF, experts in MXFP4 type 39; golden gpt_oss-gguf: transformers
    with YaRN truncate: true, as llama.cpp rounds the ramp)."""
    model = build_gpt_oss()
    model.generation_config = transformers.GenerationConfig(eos_token_id=[2], do_sample=False)
    f32 = {k: v.clone() for k, v in model.state_dict().items()}
    fam = "gpt_oss"
    for variant in ("", "-bf16", "-mxfp4"):
        d = os.path.join(args.out, fam + variant)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        tok.save_pretrained(d)
        if os.path.exists(os.path.join(d, "special_tokens_map.json")):
            os.remove(os.path.join(d, "special_tokens_map.json"))
        ref = build_gpt_oss()
        state = dict(f32)
        if variant == "-bf16":
            m16 = build_gpt_oss()
            m16.load_state_dict(f32)
            m16.to(torch.bfloat16).save_pretrained(d)
            state = {k: v.to(torch.bfloat16).float() for k, v in f32.items()}
        else:
            model.load_state_dict(f32)
            model.save_pretrained(d)
        if variant == "-mxfp4":
            sd = load_file(os.path.join(d, "model.safetensors"))
            out = {}
            for k, v in sd.items():
                if k.endswith("experts.gate_up_proj") or k.endswith("experts.down_proj"):
                    # the checkpoint's [expert, out, in] rows: the parameter ([expert, in, out]) transposed
                    b, s_, vals = mxfp4_encode(v.transpose(1, 2).contiguous())
                    # transformers' own MXFP4 reader gives back the values the golden uses
                    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
                    assert torch.equal(convert_moe_packed_tensors(b, s_, dtype=torch.float32), vals.transpose(1, 2))
                    out[k + "_blocks"], out[k + "_scales"] = b, s_
                    state[k] = vals.transpose(1, 2).contiguous()
                else:
                    out[k] = v
            os.remove(os.path.join(d, "model.safetensors"))
            save_file(out, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
            cfg = json.load(open(os.path.join(d, "config.json")))
            cfg["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": [
                "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
            json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=2)
        missing = set(ref.state_dict()) - set(state)
        assert not missing, "the golden would keep random weights for %s" % sorted(missing)
        hf.reference(ref, state, fam + variant, args.out, provenance)
        print(fam + variant, "ok", file=sys.stderr)
        if variant == "-mxfp4":
            write_gguf_gpt_oss(load_file(os.path.join(d, "model.safetensors")), os.path.join(args.out, fam + ".gguf"))
            # llama.cpp rounds YaRN's ramp ends to whole dims: transformers' truncate: true
            tcfg = dict(GPT_OSS, rope_parameters=dict(GPT_OSS["rope_parameters"], truncate=True))
            gref = build_gpt_oss(tcfg)
            hf.reference(gref, state, fam + "-gguf", args.out, provenance)
            print(fam + ".gguf ok (golden: gpt_oss-gguf)", file=sys.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/golden/hf")
    ap.add_argument("--only", nargs="*", help="qwen3_moe, gpt_oss (default: both)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    provenance = {"tool": "tools/make_moe_tiny.py", "transformers": transformers.__version__,
                  "torch": torch.__version__, "tokenizers": tokenizers.__version__,
                  "safetensors": safetensors.__version__, "date": datetime.date.today().isoformat(),
                  "attention": "eager", "dtype": "float32"}
    ap_only = args.only or ["qwen3_moe", "gpt_oss"]
    tok = hf.make_tokenizer()
    if "gpt_oss" in ap_only:
        gpt_oss(args, tok, provenance)
    if "qwen3_moe" not in ap_only:
        return
    model = build()
    model.generation_config = transformers.GenerationConfig(eos_token_id=[2], temperature=0.7, top_p=0.8,
                                                            top_k=20, do_sample=True)
    f32 = {k: v.clone() for k, v in model.state_dict().items()}
    fam = "qwen3_moe"
    for variant in ("", "-bf16", "-stacked", "-mlx"):
        d = os.path.join(args.out, fam + variant)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        tok.save_pretrained(d)
        if os.path.exists(os.path.join(d, "special_tokens_map.json")):
            os.remove(os.path.join(d, "special_tokens_map.json"))
        ref = build()
        if variant == "-bf16":
            m16 = build()
            m16.load_state_dict(f32)
            m16.to(torch.bfloat16).save_pretrained(d)
            state = {k: v.to(torch.bfloat16).float() for k, v in f32.items()}
        else:
            model.load_state_dict(f32)
            model.save_pretrained(d)
            saved = load_file(os.path.join(d, "model.safetensors"))
            state = f32
            if variant == "-stacked":
                write_stacked_layout(saved, d)
                # same weights as qwen3_moe: its golden
                print(fam + variant, "ok (golden: qwen3_moe)", file=sys.stderr)
                continue
            if variant == "-mlx":
                deq = write_mlx(saved, d)
                experts = {p: v for p, v in deq.items() if isinstance(v, tuple)}
                state = state_for(ref, {k: v for k, v in deq.items() if not isinstance(v, tuple)}, experts)
            if variant == "":
                write_gguf(saved if experts_of(saved) else f32, d, os.path.join(args.out, fam + ".gguf"))
        missing = set(ref.state_dict()) - set(state)
        assert not missing, "the golden would keep random weights for %s" % sorted(missing)
        hf.reference(ref, state, fam + variant, args.out, provenance)
        print(fam + variant, "ok", file=sys.stderr)


if __name__ == "__main__":
    main()
