#!/usr/bin/env python3
"""Make tiny random LoRA adapters for the tiny Hugging Face checkpoints of tests/golden/hf/ with
peft, in PEFT's and mlx-lm's layouts, and record peft's f32 logits with each adapter.

How the goldens were made (re-run to regenerate; deterministic for given library versions, which
are recorded in each golden's "provenance"):
    python3 -m venv .venv && .venv/bin/pip install -r requirements/transformers.txt -r requirements/lora.txt
    .venv/bin/python tools/make_lora_tiny.py --out tests/golden/lora

The base models are the committed f32 checkpoints tests/golden/hf/{llama,qwen3,gemma3_text,phi3}
(tools/make_hf_tiny.py made them). For each, the script
  1. wraps the base in peft's get_peft_model with a LoraConfig of rank 8 and random A and B
     (init_lora_weights=False, a fixed seed; B then multiplied by 4 so that the update moves the
     logits well past the test bound): llama adapts all seven projections (lora_alpha 16),
     qwen3 uses rsLoRA (use_rslora, alpha 8) on q_proj, v_proj and down_proj, gemma3_text all
     seven with alpha 32, phi3 its fused qkv_proj and gate_up_proj plus o_proj and down_proj;
  2. saves the adapter with save_pretrained (adapter_config.json + adapter_model.safetensors)
     into <out>/<family>-peft/;
  3. records, with eager attention in f32, for the base goldens' prompts: the logits at every
     position through peft's unmerged forward (<family>.unmerged.logits.bin, little-endian f32
     [positions of all prompts][vocab]) and after merge_and_unload (<family>.merged.logits.bin),
     the unmerged argmax at every position and the largest |merged - unmerged| in <family>.json;
  4. for llama also writes the same weights as mlx-lm's LoRALinear holds them (<out>/llama-mlx/:
     adapters.safetensors with model.layers.N.<block>.<module>.lora_a = A^T [in][r] and lora_b =
     B^T [r][out], adapter_config.json with fine_tune_type lora, lora_parameters.rank and scale =
     lora_alpha / r), checked against llama's peft goldens: mlx-lm computes
     y + scale * (x lora_a) lora_b, the same sum.
"""
import argparse, datetime, json, os, shutil, sys

import numpy as np
import torch
import transformers
import peft
import safetensors
from safetensors.torch import save_file

ALL7 = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
# family -> (LoraConfig overrides, seed)
FAMILIES = {
    "llama": (dict(r=8, lora_alpha=16, target_modules=ALL7), 101),
    "qwen3": (dict(r=8, lora_alpha=8, use_rslora=True, target_modules=["q_proj", "v_proj", "down_proj"]), 102),
    "gemma3_text": (dict(r=8, lora_alpha=32, target_modules=ALL7), 103),
    "phi3": (dict(r=8, lora_alpha=16, target_modules=["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]), 104),
}


def logits_of(model, prompts):
    rows = []
    with torch.no_grad():
        for ids in prompts:
            out = model(input_ids=torch.tensor([ids]), use_cache=False)
            rows.append(out.logits[0].float().numpy())
    return np.concatenate(rows, 0).astype("<f4")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/golden/lora")
    ap.add_argument("--hf", default="tests/golden/hf")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    prov = {"tool": "tools/make_lora_tiny.py", "transformers": transformers.__version__, "torch": torch.__version__,
            "peft": peft.__version__, "safetensors": safetensors.__version__,
            "date": datetime.date.today().isoformat(), "attention": "eager", "dtype": "float32"}
    for fam, (over, seed) in FAMILIES.items():
        base_dir = os.path.join(args.hf, fam)
        prompts = [p["ids"] for p in json.load(open(os.path.join(args.hf, fam + ".json")))["prompts"]]
        torch.manual_seed(seed)
        base = transformers.AutoModelForCausalLM.from_pretrained(base_dir, dtype=torch.float32,
                                                                 attn_implementation="eager").eval()
        cfg = peft.LoraConfig(lora_dropout=0.0, bias="none", init_lora_weights=False, task_type="CAUSAL_LM", **over)
        model = peft.get_peft_model(base, cfg).eval()
        with torch.no_grad():
            for name, p in model.named_parameters():
                if "lora_B" in name:
                    p.mul_(4.0)
        adir = os.path.join(args.out, fam + "-peft")
        shutil.rmtree(adir, ignore_errors=True)
        model.save_pretrained(adir)
        os.remove(os.path.join(adir, "README.md"))  # peft's model-card template: not needed here
        unmerged = logits_of(model, prompts)
        if fam == "llama":  # the same weights in mlx-lm's layout
            sd = {}
            for name, p in model.named_parameters():
                if "lora_A" in name or "lora_B" in name:
                    key = name.replace("base_model.model.", "").replace(".default.weight", "")
                    key = key.replace("lora_A", "lora_a").replace("lora_B", "lora_b")
                    sd[key] = p.detach().float().t().contiguous()
            mdir = os.path.join(args.out, "llama-mlx")
            shutil.rmtree(mdir, ignore_errors=True)
            os.makedirs(mdir)
            save_file(sd, os.path.join(mdir, "adapters.safetensors"), metadata={"format": "mlx"})
            json.dump({"fine_tune_type": "lora", "num_layers": base.config.num_hidden_layers,
                       "lora_parameters": {"rank": over["r"], "scale": over["lora_alpha"] / over["r"], "dropout": 0.0,
                                           "keys": ["self_attn." + m if m[0] in "qkvo" else "mlp." + m
                                                    for m in over["target_modules"]]}},
                      open(os.path.join(mdir, "adapter_config.json"), "w"), indent=2)
        merged_model = model.merge_and_unload().eval()
        merged = logits_of(merged_model, prompts)
        unmerged.tofile(os.path.join(args.out, fam + ".unmerged.logits.bin"))
        merged.tofile(os.path.join(args.out, fam + ".merged.logits.bin"))
        base_logits = np.fromfile(os.path.join(args.hf, fam + ".logits.bin"), dtype="<f4").reshape(unmerged.shape)
        info = {"provenance": prov, "base": base_dir, "lora": {k: v for k, v in over.items()},
                "max_merged_vs_unmerged": float(np.abs(merged - unmerged).max()),
                "max_adapter_vs_base": float(np.abs(unmerged - base_logits).max()),
                "prompts": [{"ids": ids} for ids in prompts],
                "argmax": [int(i) for i in unmerged.argmax(-1)]}
        json.dump(info, open(os.path.join(args.out, fam + ".json"), "w"), indent=1)
        print(f"{fam}: adapter moves logits by {info['max_adapter_vs_base']:.3f}, "
              f"merged vs unmerged {info['max_merged_vs_unmerged']:.2e}", file=sys.stderr)


if __name__ == "__main__":
    main()
