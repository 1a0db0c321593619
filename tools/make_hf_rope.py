#!/usr/bin/env python3
"""Tiny Hugging Face checkpoints whose RoPE changes with the sequence length, and transformers'
f32 reference outputs past the lengths where it changes (companion of make_hf_tiny.py, whose
tokenizer, sizes and init it reuses).

    /tmp/tenv/bin/python tools/make_hf_rope.py --out tests/golden/hf

  rope-dynamic/   llama, rope_type "dynamic" (factor 2), max_position_embeddings 32: past 32
                  tokens transformers grows the base with the sequence length of each forward
                  call (its largest position + 1)
  rope-longrope/  phi3, rope_type "longrope" (short and long factor lists, original context 32,
                  max_position_embeddings 64, so factor 2 and the default attention factor):
                  the long factors apply when a call's sequence is longer than 32

For each, <name>.json / <name>.logits.bin hold, for prompts of 20 and 40 tokens (one on each
side of the 32-token boundary): the logits at every position of one forward over the prompt
(little-endian f32 [positions][vocab]), and 32 greedy tokens decoded one at a time on
transformers' KV cache (each step a forward of one token at the next position, so its keys
are rotated with that step's frequencies and the cached ones keep theirs). A fresh model runs
each prompt, since the rotary module keeps the longest length it has seen.

Note: Phi-3's generate() (prepare_inputs_for_generation) throws its cache away once when a
sequence first crosses original_max_position_embeddings and recomputes every key with the long
factors; these goldens are the forward with its cache, without that recompute.
"""
import argparse, datetime, json, os, shutil, sys

import numpy as np
import torch
import transformers
import tokenizers
import safetensors

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_hf_tiny as tiny  # noqa: E402

PROMPT_LEN = (20, 40)
VARIANTS = {
    "rope-dynamic": ("llama", dict(head_dim=tiny.HEAD_DIM, tie_word_embeddings=False, max_position_embeddings=32,
                                   rope_parameters=dict(rope_type="dynamic", rope_theta=10000.0, factor=2.0)), 21),
    "rope-longrope": ("phi3", dict(tie_word_embeddings=False, max_position_embeddings=64,
                                   original_max_position_embeddings=32,
                                   rope_parameters=dict(rope_type="longrope", rope_theta=10000.0,
                                                        original_max_position_embeddings=32,
                                                        short_factor=[1.0, 1.1, 1.3, 1.6, 2.0, 2.5, 3.1, 3.8],
                                                        long_factor=[1.0, 1.5, 2.4, 3.9, 6.0, 9.1, 13.5, 19.0])),
                      22),
}


def build(family, over, seed):
    kw = dict(tiny.COMMON)
    kw.update(over)
    cfg = transformers.AutoConfig.for_model(family, **kw)
    cfg._attn_implementation = "eager"
    torch.manual_seed(seed)
    model = transformers.AutoModelForCausalLM.from_config(cfg, attn_implementation="eager").float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or name.endswith("layernorm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
    return model


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/golden/hf")
    args = ap.parse_args()
    torch.set_num_threads(1)
    provenance = {"tool": "tools/make_hf_rope.py", "transformers": transformers.__version__,
                  "torch": torch.__version__, "tokenizers": tokenizers.__version__,
                  "safetensors": safetensors.__version__, "date": datetime.date.today().isoformat(),
                  "attention": "eager", "dtype": "float32", "greedy": "one token per forward on the KV cache"}
    tok = tiny.make_tokenizer()
    rng = np.random.default_rng(7)
    prompts = [[int(x) for x in rng.integers(3, tiny.VOCAB, n)] for n in PROMPT_LEN]
    for name, (family, over, seed) in VARIANTS.items():
        model = build(family, over, seed)
        state = {k: v.clone() for k, v in model.state_dict().items()}
        d = os.path.join(args.out, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        tok.save_pretrained(d)
        model.save_pretrained(d)
        for f in ("special_tokens_map.json",):
            if os.path.exists(os.path.join(d, f)):
                os.remove(os.path.join(d, f))
        meta = {"provenance": provenance, "prompts": []}
        rows = []
        with torch.no_grad():
            for ids in prompts:
                m = build(family, over, seed)
                m.load_state_dict(state)
                out = m(torch.tensor([ids])).logits[0].float()
                rows.append(out.numpy().astype("<f4"))
                m = build(family, over, seed)  # a fresh rotary state for the cached run
                m.load_state_dict(state)
                r = m(torch.tensor([ids]), use_cache=True)
                cache, seq = r.past_key_values, []
                nxt = int(torch.argmax(r.logits[0, -1]))
                for step in range(32):
                    seq.append(nxt)
                    pos = len(ids) + step
                    r = m(torch.tensor([[nxt]]), past_key_values=cache, use_cache=True,
                          position_ids=torch.tensor([[pos]]))
                    cache = r.past_key_values
                    nxt = int(torch.argmax(r.logits[0, -1]))
                meta["prompts"].append({"ids": ids, "argmax": [int(x) for x in out.argmax(-1)], "greedy32": seq})
        np.concatenate(rows).tofile(os.path.join(args.out, name + ".logits.bin"))
        json.dump(meta, open(os.path.join(args.out, name + ".json"), "w"), indent=1)
        print(name, "ok", [p["greedy32"][:8] for p in meta["prompts"]], file=sys.stderr)


if __name__ == "__main__":
    main()
