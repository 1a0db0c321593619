#!/usr/bin/env python3
"""nomic_ref.py - a tiny random NomicBERT checkpoint and its reference embeddings, computed by a
small PyTorch forward written here (transformers does not ship NomicBERT: nomic-embed-text's
modeling code is a trust_remote_code module).

The forward is NomicBertModel as nomic-embed-text-v1.5 configures it (and as llama.cpp's
nomic-bert graph computes it): post-LN layers like BERT's, with
  x   = LayerNorm(word[id] + token_type[0])          emb_ln; no position table
  qkv = x Wqkv^T                                     fused, no bias; q | k | v
  q, k rotated by position p (from 0), rotate-half over the whole head, base rotary_emb_base
  x   = LayerNorm(x + softmax(q k^T / sqrt(head_dim)) v Wo^T)       norm1, both directions
  x   = LayerNorm(x + ((x fc11^T) * silu(x fc12^T)) fc2^T)           norm2
then sentence-transformers' mean pooling and L2 normalization (nomic-embed's modules.json). It
runs in float64, so the golden is the exact function, not one float32 evaluation order.
tools/embed_gguf.py writes the same weights as a nomic-bert GGUF and checks this reference
against llama.cpp's embed() of that file (cosine >= 0.99999 per vector), so the reference is
itself checked against an independent implementation.

  --make-tiny-nomic DIR   write the checkpoint (config.json with model_type "nomic_bert",
                    model.safetensors f32, tiny-bert's WordPiece tokenizer.json, modules.json
                    with mean pooling and Normalize, sentence_bert_config.json) and its golden
                    tests/golden/embed/NAME.json (NAME = the folder's name), in the shape of
                    tools/embed_golden.py's goldens, ids from `tokenizers`.

Needs torch, safetensors and tokenizers (the sentence-transformers venv of embed_golden.py):
  /tmp/stenv/bin/python tools/nomic_ref.py --make-tiny-nomic tests/golden/embed/tiny-nomic
"""
import argparse
import json
import os
import shlex
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from embed_golden import DIR, read_sentences, sha256_of, write_golden  # noqa: E402

CONFIG = {
    "model_type": "nomic_bert", "architectures": ["NomicBertModel"], "n_embd": 32, "n_layer": 2, "n_head": 4,
    "n_inner": 64, "n_positions": 64, "vocab_size": 136, "type_vocab_size": 2, "layer_norm_epsilon": 1e-12,
    "rotary_emb_base": 1000, "rotary_emb_fraction": 1.0, "rotary_emb_interleaved": False,
    "activation_function": "swiglu", "prenorm": False, "qkv_proj_bias": False, "mlp_fc1_bias": False,
    "mlp_fc2_bias": False, "causal": False,
}


def make_weights(cfg, seed=0):
    import torch
    g = torch.Generator().manual_seed(seed)
    d, ff = cfg["n_embd"], cfg["n_inner"]

    def rnd(*shape, std=0.3):
        return (torch.randn(*shape, generator=g, dtype=torch.float64) * std).float()

    def ln():
        return 1 + rnd(d, std=0.1), rnd(d, std=0.1)
    w = {"embeddings.word_embeddings.weight": rnd(cfg["vocab_size"], d, std=0.6),
         "embeddings.token_type_embeddings.weight": rnd(cfg["type_vocab_size"], d, std=0.6)}
    w["emb_ln.weight"], w["emb_ln.bias"] = ln()
    for i in range(cfg["n_layer"]):
        p = "encoder.layers.%d." % i
        w[p + "attn.Wqkv.weight"] = rnd(3 * d, d)
        w[p + "attn.out_proj.weight"] = rnd(d, d)
        w[p + "mlp.fc11.weight"] = rnd(ff, d)
        w[p + "mlp.fc12.weight"] = rnd(ff, d)
        w[p + "mlp.fc2.weight"] = rnd(d, ff)
        w[p + "norm1.weight"], w[p + "norm1.bias"] = ln()
        w[p + "norm2.weight"], w[p + "norm2.bias"] = ln()
    return w


def rope(x, base):
    """x: [T, H, hd] rotated rotate-half style by position t (from 0)."""
    import torch
    T, _, hd = x.shape
    inv = 1.0 / (base ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]  # [T, hd/2]
    cos, sin = torch.cos(ang)[:, None, :], torch.sin(ang)[:, None, :]
    a, b = x[..., :hd // 2], x[..., hd // 2:]
    return torch.cat([a * cos - b * sin, b * cos + a * sin], dim=-1)


def forward(w, cfg, ids):
    """The mean-pooled, L2-normalized embedding of one token sequence, in float64."""
    import torch
    import torch.nn.functional as F
    W = {k: v.double() for k, v in w.items()}
    d, H, eps = cfg["n_embd"], cfg["n_head"], cfg["layer_norm_epsilon"]
    hd = d // H

    def ln(x, name):
        return F.layer_norm(x, (d,), W[name + ".weight"], W[name + ".bias"], eps)
    x = W["embeddings.word_embeddings.weight"][torch.tensor(ids)] + W["embeddings.token_type_embeddings.weight"][0]
    x = ln(x, "emb_ln")
    T = x.shape[0]
    for i in range(cfg["n_layer"]):
        p = "encoder.layers.%d." % i
        q, k, v = (x @ W[p + "attn.Wqkv.weight"].T).split(d, dim=-1)
        q, k, v = (t.reshape(T, H, hd) for t in (q, k, v))
        q, k = rope(q, cfg["rotary_emb_base"]), rope(k, cfg["rotary_emb_base"])
        att = torch.softmax(torch.einsum("thc,shc->hts", q, k) / hd ** 0.5, dim=-1)
        ctx = torch.einsum("hts,shc->thc", att, v).reshape(T, d)
        x = ln(x + ctx @ W[p + "attn.out_proj.weight"].T, p + "norm1")
        h = (x @ W[p + "mlp.fc11.weight"].T) * F.silu(x @ W[p + "mlp.fc12.weight"].T)
        x = ln(x + h @ W[p + "mlp.fc2.weight"].T, p + "norm2")
    e = x.mean(dim=0)
    return (e / e.norm()).tolist()


def make_tiny_nomic(out, command):
    import numpy as np
    import safetensors
    import tokenizers
    import torch
    from safetensors.torch import save_file
    os.makedirs(os.path.join(out, "1_Pooling"), exist_ok=True)
    cfg = dict(CONFIG)
    w = make_weights(cfg)
    save_file({k: v.contiguous() for k, v in w.items()}, os.path.join(out, "model.safetensors"),
              metadata={"format": "pt"})
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(os.path.join(DIR, "tiny-bert", name), os.path.join(out, name))
    with open(os.path.join(out, "modules.json"), "w") as f:
        json.dump([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                   {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                   {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}],
                  f, indent=2)
    with open(os.path.join(out, "1_Pooling", "config.json"), "w") as f:
        json.dump({"word_embedding_dimension": cfg["n_embd"], "pooling_mode_cls_token": False,
                   "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
                   "pooling_mode_mean_sqrt_len_tokens": False}, f, indent=2)
    with open(os.path.join(out, "sentence_bert_config.json"), "w") as f:
        json.dump({"max_seq_length": cfg["n_positions"], "do_lower_case": False}, f, indent=2)
    tok = tokenizers.Tokenizer.from_file(os.path.join(out, "tokenizer.json"))
    corpus, queries = read_sentences()
    texts = corpus + queries
    ids = [tok.encode(t).ids for t in texts]
    emb = [forward(w, cfg, i) for i in ids]
    versions = {"torch": torch.__version__, "safetensors": safetensors.__version__,
                "tokenizers": tokenizers.__version__, "numpy": np.__version__}
    write_golden(os.path.basename(os.path.normpath(out)), "NomicBERT reference embeddings (tools/nomic_ref.py's "
                 "float64 forward) for tests/models/test_bert.c; written by tools/nomic_ref.py, do not edit",
                 command, versions, sha256_of(os.path.join(out, "model.safetensors")), cfg["n_positions"],
                 len(corpus), texts, ids, emb)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--make-tiny-nomic", metavar="DIR", required=True)
    a = ap.parse_args()
    make_tiny_nomic(a.make_tiny_nomic, "tools/nomic_ref.py " + " ".join(shlex.quote(x) for x in sys.argv[1:]))


if __name__ == "__main__":
    main()
