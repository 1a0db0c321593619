#!/usr/bin/env python3
"""Reference logits from transformers (f32, eager attention) for the starter GGUF models.

transformers reads the GGUF file itself and dequantizes every tensor to f32 (through gguf-py),
so its forward pass is the f32 specification of what hearth's reference path
(HEARTH_KERNELS=ref: weights dequantized to f32, f32 activations and KV) must compute.

How the goldens were made:
    python -m venv /tmp/tenv && /tmp/tenv/bin/pip install -r requirements/transformers.txt
    /tmp/tenv/bin/python tools/golden_transformers.py --name smollm2 --gguf <SmolLM2 GGUF> --prompts 4
    /tmp/tenv/bin/python tools/golden_transformers.py --name gemma3 --gguf <Gemma 3 GGUF> --prompts 2

Output in tests/golden/transformers/: <name>.json (provenance, prompt ids from transformers'
GGUF tokenizer with the model's BOS rule, each position's argmax, a 32-token greedy
continuation) and <name>.logits.bin (the last position's logits per prompt: n_vocab
little-endian f32 each, in prompt order).
"""
import argparse, datetime, hashlib, json, os

import numpy as np
import torch
import transformers
from transformers import AutoModelForCausalLM, AutoTokenizer

PROMPTS = [
    "The lighthouse keeper climbed the stairs every evening, and",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Water boils at a lower temperature on a mountain because",
    "List three facts about the Moon:\n1.",
]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--name", required=True)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--prompts", type=int, default=len(PROMPTS))
    ap.add_argument("--out", default="tests/golden/transformers")
    args = ap.parse_args()
    torch.set_num_threads(2)
    d, f = os.path.split(os.path.abspath(args.gguf))
    tok = AutoTokenizer.from_pretrained(d, gguf_file=f)
    model = AutoModelForCausalLM.from_pretrained(d, gguf_file=f, dtype=torch.float32,
                                                 attn_implementation="eager").eval()
    meta = {"name": args.name, "gguf_sha256": sha256(args.gguf), "made_by": "tools/golden_transformers.py",
            "torch": torch.__version__, "transformers": transformers.__version__,
            "date": datetime.date.today().isoformat(), "n_vocab": model.config.vocab_size,
            "layout": "for each prompt in order: the last position's n_vocab little-endian f32 logits",
            "prompts": []}
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"{args.name}.logits.bin"), "wb") as fo:
        for text in PROMPTS[: args.prompts]:
            ids = tok(text)["input_ids"]
            with torch.no_grad():
                out = model(torch.tensor([ids]), use_cache=False).logits[0].float().numpy()
                seq = list(ids)
                for _ in range(32):
                    nxt = model(torch.tensor([seq]), use_cache=False).logits[0, -1]
                    seq.append(int(torch.argmax(nxt)))
            fo.write(out[-1].astype("<f4").tobytes())
            top = np.sort(out[-1])[::-1]
            meta["prompts"].append({"text": text, "ids": ids, "argmax": [int(x) for x in out.argmax(-1)],
                                    "greedy32": seq[len(ids):], "top1_margin_last": float(top[0] - top[1])})
            print(args.name, len(ids), "tokens; margin", top[0] - top[1], repr(tok.decode(seq[len(ids):])))
    with open(os.path.join(args.out, f"{args.name}.json"), "w") as fo:
        json.dump(meta, fo, indent=1)


if __name__ == "__main__":
    main()
