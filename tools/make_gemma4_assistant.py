#!/usr/bin/env python3
"""Make a tiny random-init Gemma 4 assistant drafter (transformers' gemma4_assistant) for the tiny
Gemma 4 target tests/golden/hf/gemma4_text, and record transformers' drafts as the golden.

How the golden was made (re-run to regenerate; deterministic for given library versions, which
the golden's "provenance" records):
    python3 -m venv /tmp/tenv && /tmp/tenv/bin/pip install -r requirements/transformers.txt
    /tmp/tenv/bin/python tools/make_gemma4_assistant.py --out tests/golden/hf

What it writes:
  gemma4_assistant/           the drafter, save_pretrained in f32 (config.json, model.safetensors):
                              hidden 32, 2 layers (sliding window 8, then full attention) whose
                              query shapes are the target's (sliding: 4 heads of 16 over its 2 kv
                              heads; full: 4 heads of 32 over its 1 kv head), every layer reading
                              the target's KV (num_kv_shared_layers = num_hidden_layers), pre and
                              post projections to the target's hidden size 64, and centroid-masked
                              logits (use_ordered_embeddings: 8 centroids of 36 tokens, the top 2
                              kept; token_ordering a fixed random permutation of the 288 ids)
  gemma4_assistant.json       per prompt: the ids, the target's greedy token after them, the
                              drafts, and every draft step's logits (f32 as a list)

The drafts follow transformers' Gemma4AssistantCandidateGenerator for the first round after a
prefill (generation/candidate_generator.py): the target runs on the prompt (eager attention, f32)
with output_hidden_states and return_shared_kv_states; its next token t is the argmax of the last
logits row; the assistant is then called K times, each with inputs_embeds = [target
embed_tokens(last token), last hidden] (the target's final-normed hidden state of the last prompt
row the first time, the assistant's own projected output after that), position_ids = the
position of t, and the target's shared KV of the prompt positions (the last layer of each kind
that stores its own); each draft is the argmax of the assistant's logits. The second prompt is
longer than the window plus 2, so the assistant's sliding layer reads only part of the KV: its
bidirectional sliding mask keeps the last sliding_window + 1 positions (the script checks that
truncating the sliding KV to them gives the same logits).
"""
import argparse, datetime, json, os

import torch
import transformers
from transformers import Gemma4AssistantConfig, Gemma4AssistantForCausalLM, Gemma4TextConfig

K = 4
PROMPTS = [
    [5, 77, 120, 33, 250, 9],
    [12, 270, 3, 88, 150, 6, 230, 47, 19, 111, 64, 205, 31, 140, 72, 260, 8, 95, 177, 55],
]
SEED = 23


def make_assistant(target_cfg):
    text = Gemma4TextConfig(
        vocab_size=target_cfg.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16, global_head_dim=32,
        num_global_key_value_heads=1, attention_k_eq_v=True, sliding_window=8,
        layer_types=["sliding_attention", "full_attention"], num_kv_shared_layers=2,
        hidden_size_per_layer_input=0, vocab_size_per_layer_input=0, use_double_wide_mlp=False,
        enable_moe_block=False, rms_norm_eps=1e-6, max_position_embeddings=256, final_logit_softcapping=None,
        rope_parameters=target_cfg.rope_parameters, tie_word_embeddings=True, bos_token_id=None, eos_token_id=2,
        pad_token_id=None)
    cfg = Gemma4AssistantConfig(text_config=text, backbone_hidden_size=target_cfg.hidden_size,
                                use_ordered_embeddings=True, num_centroids=8, centroid_intermediate_top_k=2,
                                tie_word_embeddings=True)
    cfg._attn_implementation = "eager"
    cfg.text_config._attn_implementation = "eager"
    torch.manual_seed(SEED)
    model = Gemma4AssistantForCausalLM(cfg).float().eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight") or name.endswith("layernorm.weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            else:
                p.copy_(0.25 * torch.randn_like(p))
        for name, b in model.named_buffers():
            if name.endswith("layer_scalar"):
                b.copy_(0.5 + torch.rand_like(b))
        g = torch.Generator().manual_seed(SEED)
        model.masked_embedding.token_ordering.copy_(torch.randperm(target_cfg.vocab_size, generator=g))
    return model


def draft(target, asst, ids, sliding_keep=None):
    x = torch.tensor([ids])
    with torch.no_grad():
        out = target(x, output_hidden_states=True, return_shared_kv_states=True, use_cache=True)
    t = int(out.logits[0, -1].argmax())
    hidden = out.hidden_states[-1][:, -1:]
    kv = {k: (v[0], v[1]) for k, v in out.shared_kv_states.items()}
    if sliding_keep is not None:  # the positions the sliding mask lets through, alone
        kv["sliding_attention"] = tuple(s[:, :, -sliding_keep:] for s in kv["sliding_attention"])
    embed = target.get_input_embeddings()
    last, drafts, rows = torch.tensor([[t]]), [], []
    pos = torch.tensor([[len(ids)]])
    for _ in range(K):
        with torch.no_grad():
            o = asst(inputs_embeds=torch.cat([embed(last), hidden], dim=-1), position_ids=pos,
                     shared_kv_states=kv, use_cache=False)
        last = o.logits.argmax(dim=-1)
        hidden = o.last_hidden_state
        drafts.append(int(last[0, 0]))
        rows.append(o.logits[0, 0].tolist())
    return t, drafts, rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/golden/hf")
    a = ap.parse_args()
    target = transformers.AutoModelForCausalLM.from_pretrained(os.path.join(a.out, "gemma4_text"),
                                                               dtype=torch.float32, attn_implementation="eager")
    target.eval()
    asst = make_assistant(target.config)
    asst.save_pretrained(os.path.join(a.out, "gemma4_assistant"))
    # the checkpoint as written, read back: what hearth loads
    asst = Gemma4AssistantForCausalLM.from_pretrained(os.path.join(a.out, "gemma4_assistant"), dtype=torch.float32,
                                                      attn_implementation="eager").eval()
    window = asst.config.text_config.sliding_window
    golden = {"provenance": {"script": "tools/make_gemma4_assistant.py", "transformers": transformers.__version__,
                             "torch": torch.__version__, "target": "gemma4_text", "k": K,
                             "date": datetime.date.today().isoformat()},
              "prompts": []}
    for ids in PROMPTS:
        t, drafts, rows = draft(target, asst, ids)
        if len(ids) > window + 1:
            _, d2, r2 = draft(target, asst, ids, sliding_keep=window + 1)
            assert d2 == drafts and max(abs(x - y) for a_, b_ in zip(rows, r2) for x, y in zip(a_, b_)) < 1e-5
        golden["prompts"].append({"ids": ids, "next": t, "drafts": drafts, "logits": rows})
        print(len(ids), t, drafts)
    with open(os.path.join(a.out, "gemma4_assistant.json"), "w") as f:
        json.dump(golden, f)


if __name__ == "__main__":
    main()
