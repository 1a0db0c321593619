#!/usr/bin/env python3
"""Make GGUF files of the hybrid families (gated DeltaNet beside gated attention: llama.cpp's
qwen35, qwen35moe, qwen3next) with llama.cpp's own converter, and record llama.cpp's logits on
them through llama-cpp-python.

How the goldens were made (two interpreters: the converter needs torch, the oracle is
llama-cpp-python in the project venv; deterministic for given library versions, which each
golden's "provenance" records):
    python3 -m venv /tmp/tenv && /tmp/tenv/bin/pip install -r requirements/transformers.txt
    /tmp/tenv/bin/python tools/make_deltanet_gguf.py convert \\
        --sdist ~/.cache/hearth/sdist/llama_cpp_python-0.3.36.tar.gz --out tests/golden/hf
    .venv/bin/python tools/make_deltanet_gguf.py golden --out tests/golden/hf

convert: builds three tiny random-init checkpoints with transformers (make_deltanet_tiny.py's
recipe for the weights: norms off their trivial values, A_log so the decay stays near 0.3..1,
a wide conv; make_hf_tiny.py's 288-token byte-level BPE tokenizer and ChatML template), each
with hidden 32, DeltaNet layers of 2 key heads and 4 value heads of 8 dims (so llama.cpp's
converter reorders the value heads) and conv width 4, attention layers of 2 heads of 16 dims
(1 kv head, 4 rotated dims; interleaved M-RoPE sections [1, 1, 0] over those 2 frequencies,
which for text, where every section's position is the token's, is plain NeoX RoPE: the
converter's default sections [11, 11, 10] would not fit 4 rotated dims), tied embeddings:
2 layers (a gated DeltaNet, then a gated full attention):
    qwen35_gguf          Qwen3_5ForCausalLM, a dense MLP of 32 on both layers
    qwen35moe_gguf       Qwen3_5MoeForCausalLM: on both layers 4 experts of 16, 2 per token,
                         and a shared expert of 16 under its sigmoid gate
    qwen3next_gguf       Qwen3NextForCausalLM: that mixture on both layers (llama.cpp's qwen3next
                         has no dense layers), the projections fused per key head
and runs the llama.cpp sdist's convert_hf_to_gguf.py on them (the sdist's own gguf-py, with
--no-mtp). Written to --out:
    qwen35_gguf/                  the checkpoint, save_pretrained in f32 (the safetensors twin)
    qwen35_gguf.gguf              --outtype f32
    qwen35_gguf-q8_0.gguf         --outtype q8_0 (the converter's own Q8_0 quantizer: every
                                  matrix, the embedding too; norms and vectors stay f32)
    qwen35moe_gguf-q8_0.gguf      --outtype q8_0: the down projections (16 inputs, not whole
                                  blocks of 32) stay in f16 there
    qwen3next_gguf-q8_0.gguf      the same
(only the GGUF files of the two mixtures are kept). A model of DeltaNet layers alone is no
smaller choice: llama.cpp refuses to build a cache without an attention layer. NOTE: the converter identifies a BPE
pre-tokenizer by hashing its output on a fixed text and refuses one it does not know; the tiny
tokenizer splits as GPT-2 does (ByteLevel), so convert tells it "gpt-2" (get_vocab_base_pre; llama.cpp's name for that split).

golden: for each GGUF, llama-cpp-python 0.3.36 (llama_model_params.use_extra_bufts = false:
with the repacking buffer types this CPU's AMX path crashes in llama.cpp; the repacking moves
weights, not arithmetic; f16 KV cache, no flash attention, 1 thread) evaluates the first prompt
of make_hf_tiny.py's PROMPTS, its first 8 ids (given directly, no BOS added) with logits at every position,
then decodes 32 greedy tokens one at a time (our own argmax over the raw logits, no sampler).
Written as <gguf name>.llamacpp.json (ids, argmax at every position, greedy32: the layout of
make_hf_tiny.py's goldens, so tests/models/hf_golden.h reads it) and
<gguf name>.llamacpp.logits.bin (f32 [positions][288]).
"""
import argparse, datetime, glob, json, os, shutil, subprocess, sys, tarfile, tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
LINEAR = dict(linear_conv_kernel_dim=4, linear_key_head_dim=8, linear_value_head_dim=8, linear_num_key_heads=2,
              linear_num_value_heads=4)
MOE = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=16, shared_expert_intermediate_size=16,
           norm_topk_prob=True)
# name -> (transformers model_type, config overrides, seed, converter output types)
MODELS = {
    "qwen35_gguf": ("qwen3_5_text", dict(intermediate_size=32), 41, ("f32", "q8_0")),
    "qwen35moe_gguf": ("qwen3_5_moe_text", dict(MOE), 42, ("q8_0",)),
    "qwen3next_gguf": ("qwen3_next", dict(MOE, intermediate_size=32, decoder_sparse_step=1, mlp_only_layers=[]), 43,
                       ("q8_0",)),
}
PROMPT = [5, 77, 120, 33, 250, 9, 61, 200]  # make_hf_tiny.PROMPTS[0]'s first 8
N_GREEDY = 32


def config(model_type, over):
    import transformers
    import make_hf_tiny as hf
    common = dict(hf.COMMON, hidden_size=32, num_attention_heads=2, num_key_value_heads=1, head_dim=16,
                  num_hidden_layers=2, tie_word_embeddings=True, layer_types=["linear_attention", "full_attention"],
                  rope_parameters=dict(rope_type="default", rope_theta=10000.0, partial_rotary_factor=0.25,
                                       mrope_section=[1, 1, 0], mrope_interleaved=True), **LINEAR)
    common.pop("intermediate_size", None)
    return transformers.AutoConfig.for_model(model_type, **dict(common, **over))


def build(name):
    import torch
    import transformers
    model_type, over, seed, _ = MODELS[name]
    cfg = config(model_type, over)
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").float().eval()
    with torch.no_grad():  # make_deltanet_tiny.py's recipe
        for pname, p in model.named_parameters():
            if pname.endswith("linear_attn.norm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif pname.endswith("norm.weight"):
                p.copy_(0.2 * torch.randn_like(p))
            elif pname.endswith("A_log"):
                p.copy_(torch.log(torch.empty_like(p).uniform_(0.05, 0.6)))
            elif pname.endswith("dt_bias"):
                p.copy_(torch.randn_like(p) - 1.0)
            elif pname.endswith("conv1d.weight"):
                p.copy_(0.5 * torch.randn_like(p))
            elif "experts" in pname or pname.endswith("mlp.gate.weight"):
                p.copy_(0.25 * torch.randn_like(p))
    model.generation_config = transformers.GenerationConfig(eos_token_id=[2], do_sample=False)
    return model


def run_converter(llama_dir, ckpt, outtype, outfile):
    """convert_hf_to_gguf.py in a child process, its pre-tokenizer check told "gpt-2"."""
    code = ("import sys; sys.path.insert(0, %r); sys.path.insert(1, %r)\n"
            "import conversion.base as base\n"
            "base.TextModel.get_vocab_base_pre = lambda self, tokenizer: 'gpt-2'\n"
            "import convert_hf_to_gguf as c\n"
            "sys.argv = ['convert_hf_to_gguf.py', '--no-mtp', '--outtype', %r, '--outfile', %r, %r]\n"
            "c.main()\n") % (llama_dir, os.path.join(llama_dir, "gguf-py"), outtype, outfile, ckpt)
    subprocess.run([sys.executable, "-c", code], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def convert(args):
    import torch
    sys.path.insert(0, HERE)
    import make_hf_tiny as hf
    torch.set_num_threads(1)
    tmp = tempfile.mkdtemp(prefix="deltanet_gguf_")
    try:
        with tarfile.open(os.path.expanduser(args.sdist)) as tf:
            tf.extractall(tmp, filter="data")
        llama_dir = glob.glob(os.path.join(tmp, "*", "vendor", "llama.cpp"))[0]
        tok = hf.make_tokenizer()
        for name, (_, _, _, outtypes) in MODELS.items():
            d = os.path.join(args.out if name == "qwen35_gguf" else tmp, name)
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)
            tok.save_pretrained(d)
            if os.path.exists(os.path.join(d, "special_tokens_map.json")):
                os.remove(os.path.join(d, "special_tokens_map.json"))
            build(name).save_pretrained(d)
            for t in outtypes:
                out = os.path.join(args.out, name + ("" if t == "f32" else "-" + t) + ".gguf")
                run_converter(llama_dir, d, t, out)
                print(out, os.path.getsize(out), "bytes", file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def golden(args):
    import llama_cpp
    default = llama_cpp.llama_model_default_params

    def params():  # see the head comment: no repacking buffer types
        p = default()
        p.use_extra_bufts = False
        return p

    llama_cpp.llama.llama_cpp.llama_model_default_params = params
    for path in sorted(glob.glob(os.path.join(args.out, "qwen3*_gguf*.gguf"))):
        name = os.path.basename(path)[:-5]
        llm = llama_cpp.Llama(model_path=path, n_ctx=64, n_batch=64, n_ubatch=64, n_threads=1, n_threads_batch=1,
                              logits_all=True, flash_attn=False, verbose=False, seed=0)
        llm.reset()
        llm.eval(PROMPT)
        logits = np.array(llm.scores[:len(PROMPT)], dtype="<f4")
        seq = []
        for _ in range(N_GREEDY):
            t = int(np.argmax(llm.scores[llm.n_tokens - 1]))  # the lowest id among exact ties
            seq.append(t)
            llm.eval([t])
        meta = {"provenance": {"tool": "tools/make_deltanet_gguf.py", "llama_cpp_python": llama_cpp.__version__,
                               "numpy": np.__version__, "date": datetime.date.today().isoformat(),
                               "gguf": os.path.basename(path), "use_extra_bufts": False, "kv_cache": "f16",
                               "flash_attn": False, "n_threads": 1},
                "prompts": [{"ids": PROMPT, "argmax": [int(x) for x in logits.argmax(-1)], "greedy32": seq}]}
        logits.tofile(os.path.join(args.out, name + ".llamacpp.logits.bin"))
        json.dump(meta, open(os.path.join(args.out, name + ".llamacpp.json"), "w"), indent=1)
        print(name, "greedy", seq[:8], "...", file=sys.stderr)
        del llm


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("stage", choices=("convert", "golden"))
    ap.add_argument("--out", default="tests/golden/hf")
    ap.add_argument("--sdist", default="~/.cache/hearth/sdist/llama_cpp_python-0.3.36.tar.gz")
    args = ap.parse_args()
    convert(args) if args.stage == "convert" else golden(args)


if __name__ == "__main__":
    main()
