#!/usr/bin/env python3
"""Make tiny random-init Hugging Face checkpoints of every family hearth loads from safetensors,
with transformers' own save_pretrained, and record transformers' f32 reference logits.

How the goldens were made (re-run to regenerate; deterministic for given library versions,
which are recorded in each golden's "provenance"):
    python3 -m venv /tmp/tenv && /tmp/tenv/bin/pip install -r requirements/transformers.txt
    /tmp/tenv/bin/python tools/make_hf_tiny.py --out tests/golden/hf

For each family (llama, mistral, qwen2, qwen3, gemma2, gemma3_text, gemma4_text, phi3, smollm3) the script
  1. builds a 2-layer model (hidden 64, 4 heads, 2 kv heads, head dim 16, ffn 128, vocab 288)
     from a config that exercises the family's features (RoPE scaling kinds, sliding windows
     shorter than the prompts, soft-caps, partial rotary, layers without RoPE), random init with
     a fixed seed and a wide init range so greedy choices are stable; norms and biases are moved
     away from their trivial init; gemma4_text has 4 layers (sliding / full alternating, the last
     two reusing the first two's KV cache), full layers with head dim 32, one kv head shared by
     keys and values (attention_k_eq_v) and proportional RoPE, per-layer inputs of width 32,
     double-wide MLPs on the KV-shared layers, a final soft-cap, and layer scalars moved off 1;
     gemma4_moe has 2 layers whose feed-forward adds a mixture of 4 experts (2 per token, router
     scales moved off 1) to the dense MLP, no per-layer inputs;
  2. writes three checkpoints, each with a tiny byte-level BPE tokenizer.json made with the
     tokenizers library (tokenizer_config.json, chat_template.jinja) and generation_config.json:
       <family>/        save_pretrained in f32
       <family>-bf16/   save_pretrained in bf16 (qwen2's sharded in 64 KB files with an index)
       llama-f16/       save_pretrained in f16 (one family: the f16 path is the bf16 one's twin)
       gemma3-mm/       gemma3_text-bf16's weights in a multimodal Gemma 3 layout (text_config,
                        language_model.model.* names), checked against gemma3_text-bf16's golden
       gemma4-mm/       gemma4_text-bf16's weights in the multimodal Gemma 4 layout (model_type
                        gemma4 with a text_config, model.language_model.* names)
       <family>-mlx/    MLX affine quantized (this script's quantizer, written from the format's
                        definition: per group of G inputs, w ~ scale * q + bias with q unsigned
                        `bits`-bit; q packed little-endian into uint32 words, element k of a word
                        at bits k*bits; scales and biases stored in bf16). Default 4-bit group 64;
                        per-module overrides in config.json "quantization" cover 8-bit group 32,
                        8-bit group 64 and 4-bit group 32; the embedding is quantized; an untied
                        lm_head is quantized (llama) or left in bf16 ("lm_head": false, mistral).
                        gemma4_moe's 3-D expert tensors stay in bf16 there (transformers' layout).
       gemma4_moe-mlxlm/ gemma4_moe as mlx-lm converts and quantizes it: the multimodal wrapper's
                        config and names, experts split into switch_glu.{gate,up,down}_proj and
                        quantized as stacked [expert, out, in] triples (4-bit group 64; the
                        experts' down_proj group 32 at 4 and 8 bits, one up_proj 8-bit group 32;
                        the router 8-bit, as mlx-lm's recipe has it)
       gemma4_moe-mlxlm-bf16/ gemma4_moe-bf16's weights in an unquantized mlx-lm conversion's
                        layout (switch_glu experts in bf16), checked against gemma4_moe-bf16's
                        golden
  3. for each checkpoint, loads the weights hearth will see as f32 into the transformers model
     (bf16 values widened; MLX weights dequantized as scale * q + bias in f32) and records, with
     eager attention in f32, for fixed token prompts: the logits at every position
     (<name>.logits.bin, little-endian f32 [positions of all prompts][vocab]), the argmax at every
     position, and a 32-token greedy continuation (full recompute per step) in <name>.json, with
     the parameter count (tensors as stored: a tied lm_head once).
"""
import argparse, datetime, json, os, shutil, struct, sys

import numpy as np
import torch
import transformers
import tokenizers
import safetensors
from safetensors.torch import save_file
from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers

HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD_DIM, FF, VOCAB = 64, 2, 4, 2, 16, 128, 288
PROMPTS = [
    [5, 77, 120, 33, 250, 9, 61, 200, 14, 180, 99, 42],
    [12, 270, 3, 88, 150, 6, 230, 47, 19, 111, 64, 205, 31, 140, 72, 260, 8, 95, 177, 55, 128, 36, 190, 66],
]
CHATML = ("{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
          "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")

COMMON = dict(vocab_size=VOCAB, hidden_size=HIDDEN, intermediate_size=FF, num_hidden_layers=LAYERS,
              num_attention_heads=HEADS, num_key_value_heads=KV_HEADS, max_position_embeddings=256,
              rms_norm_eps=1e-6, initializer_range=0.25, bos_token_id=None, eos_token_id=2,
              pad_token_id=None)

# family -> (config overrides, seed); each row turns on what the family adds
FAMILIES = {
    "llama": (dict(head_dim=HEAD_DIM, attention_bias=True, tie_word_embeddings=False,
                   rope_parameters=dict(rope_type="llama3", rope_theta=10000.0, factor=8.0, low_freq_factor=1.0,
                                        high_freq_factor=4.0, original_max_position_embeddings=32)), 11),
    "mistral": (dict(head_dim=HEAD_DIM, sliding_window=8, tie_word_embeddings=False,
                     rope_parameters=dict(rope_type="dynamic", rope_theta=10000.0, factor=2.0)), 12),
    "qwen2": (dict(tie_word_embeddings=True,
                   rope_parameters=dict(rope_type="yarn", rope_theta=10000.0, factor=4.0,
                                        original_max_position_embeddings=32)), 13),
    "qwen3": (dict(head_dim=HEAD_DIM, tie_word_embeddings=True,
                   rope_parameters=dict(rope_type="linear", rope_theta=1000000.0, factor=2.0)), 14),
    "gemma2": (dict(head_dim=HEAD_DIM, sliding_window=8, query_pre_attn_scalar=32, attn_logit_softcapping=5.0,
                    final_logit_softcapping=10.0, layer_types=["sliding_attention", "full_attention"]), 15),
    "gemma3_text": (dict(head_dim=HEAD_DIM, sliding_window=8, query_pre_attn_scalar=16,
                         layer_types=["sliding_attention", "full_attention"],
                         rope_parameters={"sliding_attention": dict(rope_type="default", rope_theta=10000.0),
                                          "full_attention": dict(rope_type="linear", rope_theta=1000000.0,
                                                                 factor=8.0)}), 16),
    "gemma4_text": (dict(head_dim=HEAD_DIM, tie_word_embeddings=False, global_head_dim=32, num_global_key_value_heads=1, attention_k_eq_v=True,
                         num_hidden_layers=4, sliding_window=8, num_kv_shared_layers=2, use_double_wide_mlp=True,
                         hidden_size_per_layer_input=32, vocab_size_per_layer_input=VOCAB,
                         final_logit_softcapping=10.0,
                         layer_types=["sliding_attention", "full_attention"] * 2,
                         rope_parameters={"sliding_attention": dict(rope_type="default", rope_theta=10000.0),
                                          "full_attention": dict(rope_type="proportional", rope_theta=1000000.0,
                                                                 partial_rotary_factor=0.25)}), 19),
    "gemma4_moe": (dict(head_dim=HEAD_DIM, tie_word_embeddings=False, global_head_dim=32, sliding_window=8,
                        layer_types=["sliding_attention", "full_attention"], enable_moe_block=True, num_experts=4,
                        top_k_experts=2, moe_intermediate_size=32, hidden_size_per_layer_input=0,
                        final_logit_softcapping=10.0,
                        rope_parameters={"sliding_attention": dict(rope_type="default", rope_theta=10000.0),
                                         "full_attention": dict(rope_type="proportional", rope_theta=1000000.0,
                                                                partial_rotary_factor=0.25)}), 20),
    "phi3": (dict(tie_word_embeddings=False, pad_token_id=None,
                  rope_parameters=dict(rope_type="default", rope_theta=10000.0, partial_rotary_factor=0.5)), 17),
    "smollm3": (dict(tie_word_embeddings=True, no_rope_layer_interval=2, no_rope_layers=[1, 0],
                     rope_parameters=dict(rope_type="default", rope_theta=2000000.0)), 18),
}

# MLX quantization of every checkpoint: default + per-module overrides
MLX_DEFAULT = {"group_size": 64, "bits": 4}
MLX_OVERRIDES = {
    "model.layers.0.mlp.down_proj": {"group_size": 32, "bits": 8},
    "model.layers.1.self_attn.o_proj": {"group_size": 64, "bits": 8},
    "model.layers.0.mlp.up_proj": {"group_size": 32, "bits": 4},
}
# gemma4's per_layer_projection reads 32 inputs: group 32
FAMILY_OVERRIDES = {"gemma4_text": {"model.layers.%d.per_layer_projection" % i: {"group_size": 32, "bits": 4}
                                    for i in range(4)}}

# gemma4_moe in mlx-lm's layout: the multimodal wrapper's names, experts as switch_glu modules
MLXLM_PREFIX = "language_model.model."
MLXLM_OVERRIDES = {
    # mlx-lm's Gemma 4 recipe keeps the router at 8 bits
    **{MLXLM_PREFIX + "layers.%d.router.proj" % i: {"group_size": 64, "bits": 8} for i in range(2)},
    # the experts' down_proj reads moe_intermediate_size (32) inputs: group 32, one of them 8-bit
    MLXLM_PREFIX + "layers.0.experts.switch_glu.down_proj": {"group_size": 32, "bits": 4},
    MLXLM_PREFIX + "layers.1.experts.switch_glu.down_proj": {"group_size": 32, "bits": 8},
    MLXLM_PREFIX + "layers.1.experts.switch_glu.up_proj": {"group_size": 32, "bits": 8},
    MLXLM_PREFIX + "layers.0.mlp.down_proj": {"group_size": 32, "bits": 8},
}


def make_tokenizer():
    """A byte-level BPE of 280 tokens (256 bytes, merges, 3 specials) trained on a fixed text."""
    text = ("Once upon a time there was a tiny model that read safetensors files. " * 20 +
            "The quick brown fox jumps over the lazy dog. " * 20 + "hearth loads checkpoints. " * 20)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=280, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([text], trainer)
    assert tok.get_vocab_size() <= VOCAB
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>",
                                                unk_token=None, chat_template=CHATML)


def build(family):
    over, seed = FAMILIES[family]
    kw = dict(COMMON)
    kw.update(over)
    cfg = transformers.AutoConfig.for_model({"gemma4_moe": "gemma4_text"}.get(family, family), **kw)
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or name.endswith("layernorm.weight"):
                # gemma 2/3 norms multiply by (1 + w): keep w small there; others (gemma4) around 1
                p.copy_((0.0 if family in ("gemma2", "gemma3_text") else 1.0) + 0.2 * torch.randn_like(p))
            elif name.endswith("router.scale") or name.endswith("per_expert_scale"):
                p.copy_(1.0 + 0.3 * torch.randn_like(p))  # gemma4_moe router scales, off their init of 1
            elif "experts." in name:
                p.copy_(0.25 * torch.randn_like(p))
            elif name.endswith(".bias"):
                p.copy_(0.1 * torch.randn_like(p))
        for name, b in model.named_buffers():
            if name.endswith("layer_scalar"):  # gemma4: each layer's output is scaled by it
                b.copy_(0.5 + torch.rand_like(b))
    return model


def mlx_quantize(w, bits, group):
    """w [out, in] f32 -> (packed uint32 [out, in*bits/32], scales [out, in/G], biases [out, in/G])
    with w ~ scales * q + biases, q in [0, 2^bits - 1]: the affine rule over each group's range."""
    out_f, in_f = w.shape
    g = w.reshape(out_f, in_f // group, group).double()
    n_bins = (1 << bits) - 1
    w_min, w_max = g.min(-1).values, g.max(-1).values
    scales = torch.clamp((w_max - w_min) / n_bins, min=1e-8)
    biases = w_min
    # what the file stores (bf16), and the integers chosen against those stored values
    scales_b, biases_b = scales.to(torch.bfloat16), biases.to(torch.bfloat16)
    q = torch.round((g - biases_b.double()[..., None]) / scales_b.double()[..., None]).clamp(0, n_bins).to(torch.int64)
    q = q.reshape(out_f, in_f)
    per = 32 // bits
    q = q.reshape(out_f, in_f // per, per)
    words = torch.zeros(out_f, in_f // per, dtype=torch.int64)
    for k in range(per):
        words |= q[..., k] << (k * bits)
    packed = words.to(torch.uint32)
    deq = (scales_b.float()[..., None] * q.reshape(out_f, in_f // group, group).float() + biases_b.float()[..., None])
    return packed, scales_b, biases_b, deq.reshape(out_f, in_f)


def mlx_quantize_nd(w, bits, group):
    """mlx_quantize over the last dim of a 2-D or 3-D (stacked experts) tensor: the leading dims
    keep their shape in every output."""
    lead = w.shape[:-1]
    packed, s, b, deq = mlx_quantize(w.reshape(-1, w.shape[-1]), bits, group)
    return (packed.reshape(*lead, -1), s.reshape(*lead, -1), b.reshape(*lead, -1), deq.reshape(w.shape))


def switch_glu_of(name, t):
    """transformers' expert tensors as mlx-lm's (its sanitize): gate_up_proj [NE, 2I, E] is cut in
    its middle row into switch_glu.gate_proj and .up_proj [NE, I, E]; down_proj [NE, E, I] is
    switch_glu.down_proj. Returns [(module, tensor)], or None for any other tensor."""
    for tail in (".experts.gate_up_proj", ".experts.down_proj"):
        if name.endswith(tail):
            base = name[:-len(tail)] + ".experts.switch_glu."
            if tail.endswith("down_proj"):
                return [(base + "down_proj", t)]
            half = t.shape[-2] // 2
            return [(base + "gate_proj", t[..., :half, :]), (base + "up_proj", t[..., half:, :])]
    return None


def write_mlxlm(model, path):
    """gemma4_moe-mlxlm/: what mlx_lm.convert -q writes for a Gemma 4 with experts: the multimodal
    wrapper's config (model_type gemma4, text_config) and names (language_model.model.*,
    language_model.lm_head), every matrix and the stacked experts MLX quantized (4-bit group 64,
    MLXLM_OVERRIDES per module). Returns the f32 state dict hearth will compute with, in
    transformers' names (the experts' gate and up dequantized and joined again)."""
    sd = model.state_dict()
    out, ref = {}, {}
    qcfg = dict(MLX_DEFAULT)
    qcfg.update(MLXLM_OVERRIDES)

    def quant(module, t):
        q = MLXLM_OVERRIDES.get(module, MLX_DEFAULT)
        packed, s, b, deq = mlx_quantize_nd(t.float(), q["bits"], q["group_size"])
        out[module + ".weight"], out[module + ".scales"], out[module + ".biases"] = (
            packed.contiguous(), s.contiguous(), b.contiguous())
        return deq

    for name, t in sd.items():
        mlx_name = (MLXLM_PREFIX + name[len("model."):]) if name.startswith("model.") else "language_model." + name
        parts = switch_glu_of(mlx_name, t)
        if parts:
            ref[name] = torch.cat([quant(mod, w) for mod, w in parts], dim=-2)
        elif t.dim() == 2 and name.endswith(".weight"):
            ref[name] = quant(mlx_name[:-len(".weight")], t)
        else:
            out[mlx_name] = t.to(torch.bfloat16).contiguous()
            ref[name] = out[mlx_name].float()
    save_file(out, os.path.join(path, "model.safetensors"), metadata={"format": "mlx"})
    text = json.load(open(os.path.join(path, "config.json")))
    cfg = {"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4", "text_config": text,
           "vocab_size": text["vocab_size"], "eos_token_id": text.get("eos_token_id"),
           "tie_word_embeddings": text.get("tie_word_embeddings"), "quantization": qcfg, "quantization_config": qcfg}
    json.dump(cfg, open(os.path.join(path, "config.json"), "w"), indent=2)
    return ref


def write_mlxlm_float(src, d):
    """gemma4_moe-mlxlm-bf16/: gemma4_moe-bf16's weights as an unquantized mlx-lm conversion of
    the text model stores them (model.* names, experts as switch_glu.{gate,up,down}_proj.weight
    [NE, out, in] in bf16). Its golden is gemma4_moe-bf16's."""
    from safetensors.torch import load_file
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(src, d)
    sd, out = load_file(os.path.join(d, "model.safetensors")), {}
    for name, t in sd.items():
        for mod, w in switch_glu_of(name, t) or [(None, t)]:
            out[mod + ".weight" if mod else name] = w.contiguous()
    save_file(out, os.path.join(d, "model.safetensors"), metadata={"format": "mlx"})


def overrides_of(family):
    o = dict(MLX_OVERRIDES)
    o.update(FAMILY_OVERRIDES.get(family, {}))
    return o


def quant_of(module, family):
    return overrides_of(family).get(module, MLX_DEFAULT)


def write_mlx(model, family, path):
    """The MLX layout of model: returns the f32 state dict hearth will compute with."""
    sd = model.state_dict()
    tied = model.config.tie_word_embeddings
    out, ref = {}, {}
    qcfg = dict(MLX_DEFAULT)
    qcfg.update(overrides_of(family))
    for name, t in sd.items():
        if name == "lm_head.weight" and tied:
            continue
        module = name[:-len(".weight")] if name.endswith(".weight") else None
        quantize = t.dim() == 2 and module is not None
        if name == "lm_head.weight" and family == "mistral":
            quantize = False
            qcfg["lm_head"] = False
        if quantize:
            q = quant_of(module, family)
            packed, s, b, deq = mlx_quantize(t.float(), q["bits"], q["group_size"])
            out[module + ".weight"] = packed
            out[module + ".scales"] = s.contiguous()
            out[module + ".biases"] = b.contiguous()
            ref[name] = deq
        else:
            out[name] = t.to(torch.bfloat16).contiguous()
            ref[name] = out[name].float()
    if tied:
        ref["lm_head.weight"] = ref["model.embed_tokens.weight"]
    save_file(out, os.path.join(path, "model.safetensors"), metadata={"format": "mlx"})
    cfg = json.load(open(os.path.join(path, "config.json")))
    cfg["quantization"] = qcfg
    cfg["quantization_config"] = qcfg
    json.dump(cfg, open(os.path.join(path, "config.json"), "w"), indent=2)
    return ref


def write_gemma4_multimodal_layout(src, d):
    """gemma4-mm/: the bf16 gemma4_text weights as Gemma4ForConditionalGeneration saves them
    (model_type gemma4 with a text_config, tensors under "model.language_model."), no vision or
    audio tower. Its golden is gemma4_text-bf16's."""
    from safetensors.torch import load_file
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(src, d)
    sd = load_file(os.path.join(d, "model.safetensors"))
    save_file({k.replace("model.", "model.language_model.", 1): v for k, v in sd.items()},
              os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    text = json.load(open(os.path.join(d, "config.json")))
    cfg = {"architectures": ["Gemma4ForConditionalGeneration"], "model_type": "gemma4", "text_config": text,
           "vision_config": None, "audio_config": None, "eos_token_id": text.get("eos_token_id"),
           "tie_word_embeddings": text.get("tie_word_embeddings")}
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=2)


def write_multimodal_layout(src, d):
    """gemma3-mm/: the bf16 gemma3_text weights in the layout of a multimodal Gemma 3 checkpoint
    as mlx-community repos have it (config model_type "gemma3" with a text_config, tensors under
    "language_model.model."); the vision tower is left out. Its golden is gemma3_text-bf16's."""
    from safetensors.torch import load_file
    shutil.rmtree(d, ignore_errors=True)
    shutil.copytree(src, d)
    sd = load_file(os.path.join(d, "model.safetensors"))
    save_file({"language_model." + k: v for k, v in sd.items()}, os.path.join(d, "model.safetensors"),
              metadata={"format": "mlx"})
    text = json.load(open(os.path.join(d, "config.json")))
    cfg = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3", "text_config": text,
           "vision_config": {"model_type": "siglip_vision_model"}, "eos_token_id": text.get("eos_token_id")}
    json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=2)


def reference(model, state, name, out_dir, provenance):
    """Load state (f32) into model and record logits / argmax / greedy for PROMPTS."""
    model.load_state_dict(state, strict=False)
    if model.config.tie_word_embeddings:
        model.tie_weights()
    # parameters as the checkpoint stores them (a tied lm_head once), for the registry facts
    n_params = sum(v.numel() for k, v in model.state_dict().items()
                   if not (k == "lm_head.weight" and model.config.tie_word_embeddings))
    meta = {"provenance": provenance, "n_params": [n_params], "prompts": []}
    rows = []
    with torch.no_grad():
        for ids in PROMPTS:
            out = model(torch.tensor([ids])).logits[0].float()
            rows.append(out.numpy().astype("<f4"))
            seq = list(ids)
            for _ in range(32):
                nxt = model(torch.tensor([seq])).logits[0, -1]
                seq.append(int(torch.argmax(nxt)))
            meta["prompts"].append({"ids": ids, "argmax": [int(x) for x in out.argmax(-1)],
                                    "greedy32": seq[len(ids):]})
    np.concatenate(rows).tofile(os.path.join(out_dir, name + ".logits.bin"))
    json.dump(meta, open(os.path.join(out_dir, name + ".json"), "w"), indent=1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/golden/hf")
    ap.add_argument("--only", nargs="*")
    args = ap.parse_args()
    torch.set_num_threads(1)
    provenance = {"tool": "tools/make_hf_tiny.py", "transformers": transformers.__version__,
                  "torch": torch.__version__, "tokenizers": tokenizers.__version__,
                  "safetensors": safetensors.__version__, "date": datetime.date.today().isoformat(),
                  "attention": "eager", "dtype": "float32"}
    tok = make_tokenizer()
    os.makedirs(args.out, exist_ok=True)
    for family in FAMILIES:
        if args.only and family not in args.only:
            continue
        model = build(family)
        # sampling defaults and a second eos id, to be read from generation_config.json
        model.generation_config = transformers.GenerationConfig(eos_token_id=[2, 0], temperature=0.7, top_p=0.9,
                                                                top_k=20, do_sample=True)
        f32_state = {k: v.clone() for k, v in model.state_dict().items()}
        extra = {"llama": ("-f16",), "gemma4_moe": ("-mlxlm",)}.get(family, ())
        for variant in ("", "-bf16", "-mlx") + extra:
            d = os.path.join(args.out, family + variant)
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            tok.save_pretrained(d)
            if variant in ("-bf16", "-f16"):
                dt = torch.bfloat16 if variant == "-bf16" else torch.float16
                m16 = build(family)
                m16.load_state_dict(f32_state)
                # one sharded checkpoint (model.safetensors.index.json + shards)
                shard = {"max_shard_size": "64KB"} if family == "qwen2" else {}
                m16.to(dt).save_pretrained(d, **shard)
                state = {k: v.to(dt).float() for k, v in f32_state.items()}
            else:
                model.load_state_dict(f32_state)
                model.save_pretrained(d)
                state = f32_state
                if variant in ("-mlx", "-mlxlm"):
                    for f in os.listdir(d):
                        if f.endswith(".safetensors"):
                            os.remove(os.path.join(d, f))
                    state = write_mlx(model, family, d) if variant == "-mlx" else write_mlxlm(model, d)
            for f in ("special_tokens_map.json",):
                if os.path.exists(os.path.join(d, f)):
                    os.remove(os.path.join(d, f))
            ref_model = build(family)
            reference(ref_model, state, family + variant, args.out, provenance)
            print(family + variant, "ok", file=sys.stderr)
            if family == "gemma3_text" and variant == "-bf16":
                write_multimodal_layout(d, os.path.join(args.out, "gemma3-mm"))
            if family == "gemma4_text" and variant == "-bf16":
                write_gemma4_multimodal_layout(d, os.path.join(args.out, "gemma4-mm"))
            if family == "gemma4_moe" and variant == "-bf16":
                write_mlxlm_float(d, os.path.join(args.out, "gemma4_moe-mlxlm-bf16"))


if __name__ == "__main__":
    main()
