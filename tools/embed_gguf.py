#!/usr/bin/env python3
"""embed_gguf.py - GGUF embedding models made from the committed tiny safetensors checkpoints,
and llama.cpp's embeddings of them (the goldens of tests/models/test_bert_gguf.c).

Writing: gguf-py's GGUFWriter lays the weights of tests/golden/embed/tiny-bert (a BertModel),
tiny-qwen3 (a Qwen3Model used for embeddings) and tiny-nomic (tools/nomic_ref.py's NomicBERT) out as llama.cpp's convert_hf_to_gguf names them,
so hearth's GGUF path and its safetensors path read the same numbers:

  bert:  general.architecture "bert"; token_embd, position_embd, token_types, token_embd_norm,
         blk.N.attn_q/attn_k/attn_v/attn_output (+ biases), attn_output_norm, ffn_up, ffn_down,
         layer_output_norm; bert.pooling_type from 1_Pooling/config.json (CLS: 2),
         bert.attention.causal false; the WordPiece vocabulary in the converter's spelling
         ("##lo" -> "lo", "hello" -> "\u2581hello", "[CLS]" as it is), tokenizer.ggml.model "bert",
         [CLS] as the BOS id, [SEP] as the separator, normalizer.lowercase from tokenizer.json.
         The f32 file also gets the fused attn_qkv form (tiny-bert-qkv-f32.gguf), which newer
         converters write.
  qwen3: general.architecture "qwen3", qwen3.pooling_type 3 (last token); token_embd,
         output_norm, blk.N.attn_norm/attn_q/attn_k/attn_v/attn_output/attn_q_norm/attn_k_norm/
         ffn_norm/ffn_gate/ffn_up/ffn_down; tokenizer.ggml.model "gpt2", pre "gpt-2" (the
         tokenizer.json's ByteLevel regex), its merges, add_eos_token (the "$A <|endoftext|>"
         post-processor).
  nomic-bert: token_embd, token_types, token_embd_norm; blk.N.attn_qkv, attn_output,
         attn_output_norm, ffn_up (fc11), ffn_gate (fc12), ffn_down (fc2), layer_output_norm;
         nomic-bert.rope.freq_base; f32 only. Its llama.cpp embeddings are also compared with
         tools/nomic_ref.py's reference (tests/golden/embed/tiny-nomic.json): cosine >= 0.99999
         per vector or the tool fails, which checks that reference against llama.cpp.

Types: f32, f16 (every matrix in f16, vectors in f32, as the converter writes --outtype f16) and
q8_0 (matrices quantized with gguf-py's quants.quantize, the embedding tables of positions and
token types kept f32, rows that are not whole 32-element blocks in f16 as the converter falls
back). Files go to tests/golden/embed/gguf/NAME-TYPE.gguf.

Goldens: llama-cpp-python's Llama(path, embedding=True, n_ctx=..., n_threads=1).embed(texts), with
weight repacking off (its repacked Q8_0 kernels crash on matrices this small)
(llama.cpp's own pooling, L2-normalized as embed() returns them) for the sentences of
tests/golden/embed/sentences.txt, with llama.cpp's token ids (Llama.tokenize, special tokens
added), in the JSON shape of tools/embed_golden.py: tests/golden/embed/gguf-NAME-TYPE.json.

Run in the project's .venv after `make oracles` (gguf, numpy and llama-cpp-python):
  .venv/bin/python tools/embed_gguf.py
  .venv/bin/python tools/embed_gguf.py --convert DIR OUT.gguf [--type f32|f16|q8_0]
(--convert: one BERT checkpoint folder to a GGUF file, no golden; for bench/embed.py --gguf.)
"""
import json
import os
import shlex
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from embed_golden import DIR, read_sentences, sha256_of, write_golden  # noqa: E402

OUT = os.path.join(DIR, "gguf")
TYPES = ("f32", "f16", "q8_0")


def read_safetensors(path):
    """{name: float32 array} of the f32/f16/bf16 tensors of a safetensors file (no torch needed);
    integer buffers are left out."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        raw = data[a:b]
        if t["dtype"] == "F32":
            arr = np.frombuffer(raw, dtype="<f4")
        elif t["dtype"] == "F16":
            arr = np.frombuffer(raw, dtype="<f2").astype(np.float32)
        elif t["dtype"] == "BF16":
            arr = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        elif t["dtype"] in ("I64", "I32"):  # buffers such as embeddings.position_ids: not weights
            continue
        else:
            raise SystemExit("embed_gguf: %s is %s" % (name, t["dtype"]))
        out[name] = arr.reshape(t["shape"]).copy()
    return out


def read_json(folder, name):
    with open(os.path.join(folder, name), encoding="utf-8") as f:
        return json.load(f)


def add(w, name, arr, qtype):
    """A tensor: 1-D ones always f32, matrices in qtype ("f32", "f16", "q8_0")."""
    import gguf
    arr = np.ascontiguousarray(arr, dtype=np.float32)
    if arr.ndim == 1 or qtype == "f32":
        w.add_tensor(name, arr)
    elif qtype == "f16":
        w.add_tensor(name, arr.astype(np.float16))
    elif arr.shape[-1] % 32:  # not whole q8_0 blocks: f16, as the converter falls back
        w.add_tensor(name, arr.astype(np.float16))
    else:
        q = gguf.quants.quantize(arr, gguf.GGMLQuantizationType.Q8_0)
        w.add_tensor(name, q, raw_dtype=gguf.GGMLQuantizationType.Q8_0)


def pooling_type(folder):
    import gguf
    mods = read_json(folder, "modules.json")
    for m in mods:
        if m["type"].endswith("Pooling"):
            cfg = read_json(folder, os.path.join(m["path"], "config.json"))
            if cfg.get("pooling_mode_cls_token"):
                return gguf.PoolingType.CLS
            if cfg.get("pooling_mode_lasttoken"):
                return gguf.PoolingType.LAST
            return gguf.PoolingType.MEAN
    return gguf.PoolingType.MEAN


def wordpiece_vocab(w, tok):
    """tokenizer.json's WordPiece vocabulary in the converter's spelling and keys."""
    import gguf
    vocab = sorted(tok["model"]["vocab"].items(), key=lambda kv: kv[1])
    assert [i for _, i in vocab] == list(range(len(vocab)))
    special = {a["content"] for a in tok["added_tokens"] if a.get("special")}

    def phantom(s):  # the converter's spelling of a WordPiece token
        if s.startswith("[") and s.endswith("]"):
            return s
        return s[2:] if s.startswith("##") else "\u2581" + s
    w.add_tokenizer_model("bert")
    w.add_token_list([phantom(s) for s, _ in vocab])
    w.add_token_types([gguf.TokenType.CONTROL if s in special else gguf.TokenType.NORMAL for s, _ in vocab])
    ids = dict(vocab)
    w.add_bos_token_id(ids["[CLS]"])  # llama.cpp's WordPiece opens with the BOS id and closes with SEP
    w.add_sep_token_id(ids["[SEP]"])
    w.add_unk_token_id(ids["[UNK]"])
    w.add_pad_token_id(ids["[PAD]"])
    if "[MASK]" in ids:
        w.add_mask_token_id(ids["[MASK]"])
    w.add_add_bos_token(True)
    w.add_bool("tokenizer.ggml.add_sep_token", True)
    w.add_bool("tokenizer.ggml.normalizer.lowercase", bool(tok["normalizer"].get("lowercase", True)))


def bpe_vocab(w, tok, n_vocab, pre, bos, eos):
    """A byte-level BPE tokenizer.json as tokenizer.ggml.model "gpt2": the tokens (ids past the
    vocabulary as unused [PADn]), the merges, pre, and the special tokens the post-processor
    puts around a text: bos (or None) in front, eos (or None) at the end."""
    import gguf
    model = tok["model"]
    assert model["type"] == "BPE" and tok["pre_tokenizer"]["type"] == "ByteLevel"
    names = ["[PAD%d]" % i for i in range(n_vocab)]
    types = [gguf.TokenType.UNUSED] * n_vocab
    for s, i in model["vocab"].items():
        names[i], types[i] = s, gguf.TokenType.NORMAL
    for a in tok["added_tokens"]:
        names[a["id"]] = a["content"]
        types[a["id"]] = gguf.TokenType.CONTROL if a.get("special") else gguf.TokenType.USER_DEFINED
    merges = [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(names)
    w.add_token_types(types)
    w.add_token_merges(merges)
    if bos is not None:
        w.add_bos_token_id(names.index(bos))
    if eos is not None:
        w.add_eos_token_id(names.index(eos))
    w.add_add_bos_token(bos is not None)
    w.add_add_eos_token(eos is not None)
    return names


def unigram_vocab(w, tok):
    """A Unigram tokenizer.json (XLM-R's SentencePiece kind: NFKC, Metaspace, "<s> $A </s>") as
    the converter's "t5" vocabulary: the pieces and scores in id order, the unknown piece typed
    UNKNOWN and the special added tokens CONTROL, add_space_prefix, remove_extra_whitespaces, BOS
    and EOS added. The converter would also copy the normalizer's precompiled_charsmap; this
    tokenizer.json has NFKC instead, which is the identity on the test sentences, so the file
    has no charsmap (llama.cpp then normalizes nothing but the spaces)."""
    import gguf
    model = tok["model"]
    assert model["type"] == "Unigram" and tok["normalizer"]["type"] == "NFKC"
    assert tok["pre_tokenizer"]["type"] == "Metaspace" and tok["pre_tokenizer"]["prepend_scheme"] == "always"
    special = {a["id"] for a in tok["added_tokens"] if a.get("special")}
    unk = model["unk_id"]
    names = [p for p, _ in model["vocab"]]
    types = [gguf.TokenType.UNKNOWN if i == unk else gguf.TokenType.CONTROL if i in special
             else gguf.TokenType.NORMAL for i in range(len(names))]
    post = tok["post_processor"]["single"]
    specials = [p["SpecialToken"]["id"] for p in post if "SpecialToken" in p]
    assert len(specials) == 2 and "SpecialToken" in post[0] and "Sequence" in post[1], "expected '<s> $A </s>'"
    w.add_tokenizer_model("t5")
    w.add_tokenizer_pre("default")
    w.add_token_list(names)
    w.add_token_scores([float(sc) for _, sc in model["vocab"]])
    w.add_token_types(types)
    w.add_add_space_prefix(True)
    w.add_remove_extra_whitespaces(True)
    w.add_bos_token_id(names.index(specials[0]))
    w.add_eos_token_id(names.index(specials[1]))
    w.add_unk_token_id(unk)
    if "<pad>" in names:
        w.add_pad_token_id(names.index("<pad>"))
    w.add_add_bos_token(True)
    w.add_add_eos_token(True)


def write_bert(src, path, qtype, fused):
    """A BertModel, or a RobertaModel / XLMRobertaModel-shaped checkpoint with a byte-level BPE
    tokenizer (RoBERTa): the same "bert" layers, the position table cut to start at
    pad_token_id + 1 as the converter cuts it, "<s> $A </s>" as BOS and EOS, pre "roberta-bpe"."""
    import gguf
    cfg = read_json(src, "config.json")
    tok = read_json(src, "tokenizer.json")
    roberta = cfg["model_type"] in ("roberta", "xlm-roberta")
    t = read_safetensors(os.path.join(src, "model.safetensors"))
    pfx = "roberta." if roberta else "bert."
    t = {k[len(pfx):] if k.startswith(pfx) else k: v for k, v in t.items()}
    d, n_layer = cfg["hidden_size"], cfg["num_hidden_layers"]
    n_ctx = cfg["max_position_embeddings"]
    if roberta:  # positions start at pad_token_id + 1: the converter drops the rows before
        off = cfg["pad_token_id"] + 1
        t["embeddings.position_embeddings.weight"] = t["embeddings.position_embeddings.weight"][off:]
        n_ctx -= off
    w = gguf.GGUFWriter(path, "bert")
    w.add_name(os.path.basename(src))
    w.add_context_length(n_ctx)
    w.add_embedding_length(d)
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_block_count(n_layer)
    w.add_head_count(cfg["num_attention_heads"])
    w.add_layer_norm_eps(cfg["layer_norm_eps"])
    w.add_causal_attention(False)
    w.add_pooling_type(pooling_type(src))
    w.add_token_type_count(cfg.get("type_vocab_size", 2))
    w.add_file_type({"f32": gguf.LlamaFileType.ALL_F32, "f16": gguf.LlamaFileType.MOSTLY_F16,
                     "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}[qtype])
    if roberta and tok["model"]["type"] == "Unigram":
        unigram_vocab(w, tok)
    elif roberta:
        post = tok["post_processor"]
        assert post["type"] == "RobertaProcessing", "expected RoBERTa's post-processor"
        bpe_vocab(w, tok, cfg["vocab_size"], "roberta-bpe", post["cls"][0], post["sep"][0])
    else:
        wordpiece_vocab(w, tok)
    add(w, "token_embd.weight", t["embeddings.word_embeddings.weight"], qtype)
    add(w, "position_embd.weight", t["embeddings.position_embeddings.weight"], "f32" if qtype == "q8_0" else qtype)
    add(w, "token_types.weight", t["embeddings.token_type_embeddings.weight"], "f32")
    add(w, "token_embd_norm.weight", t["embeddings.LayerNorm.weight"], qtype)
    add(w, "token_embd_norm.bias", t["embeddings.LayerNorm.bias"], qtype)
    for i in range(n_layer):
        p, b = "encoder.layer.%d." % i, "blk.%d." % i
        q, k, v = ("%sattention.self.%s" % (p, n) for n in ("query", "key", "value"))
        if fused:
            add(w, b + "attn_qkv.weight", np.concatenate([t[q + ".weight"], t[k + ".weight"], t[v + ".weight"]]), qtype)
            add(w, b + "attn_qkv.bias", np.concatenate([t[q + ".bias"], t[k + ".bias"], t[v + ".bias"]]), qtype)
        else:
            for name, src_name in (("attn_q", q), ("attn_k", k), ("attn_v", v)):
                add(w, b + name + ".weight", t[src_name + ".weight"], qtype)
                add(w, b + name + ".bias", t[src_name + ".bias"], qtype)
        for name, src_name in (("attn_output", "attention.output.dense"),
                               ("attn_output_norm", "attention.output.LayerNorm"),
                               ("ffn_up", "intermediate.dense"), ("ffn_down", "output.dense"),
                               ("layer_output_norm", "output.LayerNorm")):
            add(w, b + name + ".weight", t[p + src_name + ".weight"], qtype)
            add(w, b + name + ".bias", t[p + src_name + ".bias"], qtype)
    finish(w)


def write_qwen3(src, path, qtype):
    import gguf
    cfg = read_json(src, "config.json")
    tok = read_json(src, "tokenizer.json")
    t = read_safetensors(os.path.join(src, "model.safetensors"))
    t = {k[len("model."):] if k.startswith("model.") else k: v for k, v in t.items()}
    n_layer = cfg["num_hidden_layers"]
    w = gguf.GGUFWriter(path, "qwen3")
    w.add_name(os.path.basename(src))
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_block_count(n_layer)
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    w.add_key_length(cfg["head_dim"])
    w.add_value_length(cfg["head_dim"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_rope_freq_base(cfg.get("rope_parameters", {}).get("rope_theta", cfg.get("rope_theta", 1e6)))
    w.add_pooling_type(pooling_type(src))
    w.add_file_type({"f32": gguf.LlamaFileType.ALL_F32, "f16": gguf.LlamaFileType.MOSTLY_F16,
                     "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}[qtype])
    post = tok["post_processor"]["single"]
    eos = [p["SpecialToken"]["id"] for p in post if "SpecialToken" in p]
    assert len(eos) == 1 and "Sequence" in post[0], "expected the '$A <eos>' post-processor"
    bpe_vocab(w, tok, cfg["vocab_size"], "gpt-2", None, eos[0])
    add(w, "token_embd.weight", t["embed_tokens.weight"], qtype)
    add(w, "output_norm.weight", t["norm.weight"], qtype)
    parts = (("attn_norm", "input_layernorm"), ("attn_q", "self_attn.q_proj"), ("attn_k", "self_attn.k_proj"),
             ("attn_v", "self_attn.v_proj"), ("attn_output", "self_attn.o_proj"),
             ("attn_q_norm", "self_attn.q_norm"), ("attn_k_norm", "self_attn.k_norm"),
             ("ffn_norm", "post_attention_layernorm"), ("ffn_gate", "mlp.gate_proj"), ("ffn_up", "mlp.up_proj"),
             ("ffn_down", "mlp.down_proj"))
    for i in range(n_layer):
        for name, src_name in parts:
            add(w, "blk.%d.%s.weight" % (i, name), t["layers.%d.%s.weight" % (i, src_name)], qtype)
    finish(w)


def write_nomic(src, path, qtype):
    """A NomicBERT folder (tools/nomic_ref.py's layout) as llama.cpp's nomic-bert GGUF."""
    import gguf
    cfg = read_json(src, "config.json")
    tok = read_json(src, "tokenizer.json")
    t = read_safetensors(os.path.join(src, "model.safetensors"))
    w = gguf.GGUFWriter(path, "nomic-bert")
    w.add_name(os.path.basename(src))
    w.add_context_length(cfg["n_positions"])
    w.add_embedding_length(cfg["n_embd"])
    w.add_feed_forward_length(cfg["n_inner"])
    w.add_block_count(cfg["n_layer"])
    w.add_head_count(cfg["n_head"])
    w.add_layer_norm_eps(cfg["layer_norm_epsilon"])
    w.add_causal_attention(False)
    w.add_token_type_count(cfg.get("type_vocab_size", 2))
    w.add_rope_freq_base(cfg["rotary_emb_base"])
    w.add_pooling_type(pooling_type(src))
    w.add_file_type({"f32": gguf.LlamaFileType.ALL_F32, "f16": gguf.LlamaFileType.MOSTLY_F16,
                     "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}[qtype])
    wordpiece_vocab(w, tok)
    add(w, "token_embd.weight", t["embeddings.word_embeddings.weight"], qtype)
    add(w, "token_types.weight", t["embeddings.token_type_embeddings.weight"], "f32")
    add(w, "token_embd_norm.weight", t["emb_ln.weight"], qtype)
    add(w, "token_embd_norm.bias", t["emb_ln.bias"], qtype)
    parts = (("attn_qkv.weight", "attn.Wqkv.weight"), ("attn_output.weight", "attn.out_proj.weight"),
             ("attn_output_norm.weight", "norm1.weight"), ("attn_output_norm.bias", "norm1.bias"),
             ("ffn_up.weight", "mlp.fc11.weight"), ("ffn_gate.weight", "mlp.fc12.weight"),
             ("ffn_down.weight", "mlp.fc2.weight"), ("layer_output_norm.weight", "norm2.weight"),
             ("layer_output_norm.bias", "norm2.bias"))
    for i in range(cfg["n_layer"]):
        for name, src_name in parts:
            add(w, "blk.%d.%s" % (i, name), t["encoder.layers.%d.%s" % (i, src_name)], qtype)
    finish(w)


def write_modernbert(src, path, qtype):
    """A ModernBertModel as llama.cpp's "modern-bert": token_embd, token_embd_norm, output_norm
    (LayerNorms without biases), blk.N.attn_norm (none in layer 0), attn_qkv, attn_output,
    ffn_norm, ffn_up (Wi: the GELU half, then the gate half), ffn_down; the sliding window
    (local_attention, seen as half each way), global_attn_every_n_layers as the pattern, the
    global and local rotary bases, hidden_act; "[CLS] $A [SEP]" as BOS and EOS, pre "modern-bert"."""
    import gguf
    cfg = read_json(src, "config.json")
    tok = read_json(src, "tokenizer.json")
    t = read_safetensors(os.path.join(src, "model.safetensors"))
    t = {k[len("model."):] if k.startswith("model.") else k: v for k, v in t.items()}
    assert not cfg.get("norm_bias") and not cfg.get("mlp_bias") and not cfg.get("attention_bias")
    every = cfg["global_attn_every_n_layers"]
    assert cfg["layer_types"] == ["full_attention" if i % every == 0 else "sliding_attention"
                                  for i in range(cfg["num_hidden_layers"])]
    rp = cfg["rope_parameters"]
    w = gguf.GGUFWriter(path, "modern-bert")
    w.add_name(os.path.basename(src))
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_layer_norm_eps(cfg["norm_eps"])
    w.add_causal_attention(False)
    w.add_pooling_type(pooling_type(src))
    w.add_rope_freq_base(rp["full_attention"]["rope_theta"])
    w.add_float32("modern-bert.rope.freq_base_swa", rp["sliding_attention"]["rope_theta"])
    w.add_sliding_window(cfg["local_attention"])
    w.add_uint32("modern-bert.attention.sliding_window_pattern", every)
    w.add_rope_scaling_type(gguf.RopeScalingType.NONE)
    w.add_vocab_size(cfg["vocab_size"])
    w.add_string("modern-bert.hidden_act", cfg["hidden_activation"])
    w.add_file_type({"f32": gguf.LlamaFileType.ALL_F32, "f16": gguf.LlamaFileType.MOSTLY_F16,
                     "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}[qtype])
    post = tok["post_processor"]["single"]
    specials = [p["SpecialToken"]["id"] for p in post if "SpecialToken" in p]
    assert len(specials) == 2 and "SpecialToken" in post[0] and "Sequence" in post[1], "expected '[CLS] $A [SEP]'"
    bpe_vocab(w, tok, cfg["vocab_size"], "modern-bert", specials[0], specials[1])
    add(w, "token_embd.weight", t["embeddings.tok_embeddings.weight"], qtype)
    add(w, "token_embd_norm.weight", t["embeddings.norm.weight"], qtype)
    add(w, "output_norm.weight", t["final_norm.weight"], qtype)
    for i in range(cfg["num_hidden_layers"]):
        parts = [("attn_qkv", "attn.Wqkv"), ("attn_output", "attn.Wo"), ("ffn_norm", "mlp_norm"),
                 ("ffn_up", "mlp.Wi"), ("ffn_down", "mlp.Wo")]
        if i > 0:
            parts.insert(0, ("attn_norm", "attn_norm"))
        for name, src_name in parts:
            add(w, "blk.%d.%s.weight" % (i, name), t["layers.%d.%s.weight" % (i, src_name)], qtype)
    finish(w)


def write_gemma(src, path, qtype):
    """An EmbeddingGemma folder (Gemma3TextModel with use_bidirectional_attention, saved by
    sentence-transformers) as llama.cpp's "gemma-embedding": token_embd, output_norm; blk.N.
    attn_norm, attn_q/k/v, attn_q_norm, attn_k_norm, attn_output, post_attention_norm, ffn_norm
    (pre_feedforward_layernorm), ffn_gate, ffn_up, ffn_down, post_ffw_norm; every RMSNorm weight
    stored as 1 + w, as the converter shifts it; the Dense modules as dense_2 and dense_3 with
    their dense_N_feat_in/out keys (the converter's --sentence-transformers-dense-modules); the
    sliding window as config.json has it; which layers slide as one bool per layer from
    layer_types (the converter leaves the key out and llama.cpp then takes every 6th layer as
    global, which is what the real 24-layer model has; this 3-layer one has a global third)."""
    import gguf
    cfg = read_json(src, "config.json")
    tok = read_json(src, "tokenizer.json")
    t = read_safetensors(os.path.join(src, "model.safetensors"))
    t = {k[len("model."):] if k.startswith("model.") else k: v for k, v in t.items()}
    assert cfg["query_pre_attn_scalar"] == cfg["head_dim"], "llama.cpp scales queries by head_dim ** -0.5"
    d, n_layer = cfg["hidden_size"], cfg["num_hidden_layers"]
    rp = cfg["rope_parameters"]
    arch = "gemma-embedding"
    w = gguf.GGUFWriter(path, arch)
    w.add_name(os.path.basename(src))
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(d)
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_block_count(n_layer)
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    w.add_key_length(cfg["head_dim"])
    w.add_value_length(cfg["head_dim"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_rope_freq_base(rp["full_attention"]["rope_theta"])
    w.add_float32(arch + ".rope.freq_base_swa", rp["sliding_attention"]["rope_theta"])
    w.add_sliding_window(cfg["sliding_window"])
    w.add_array(arch + ".attention.sliding_window_pattern", [x == "sliding_attention" for x in cfg["layer_types"]])
    w.add_pooling_type(pooling_type(src))
    w.add_file_type({"f32": gguf.LlamaFileType.ALL_F32, "f16": gguf.LlamaFileType.MOSTLY_F16,
                     "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0}[qtype])
    post = tok["post_processor"]["single"]
    specials = [p["SpecialToken"]["id"] for p in post if "SpecialToken" in p]
    assert len(specials) == 2 and "SpecialToken" in post[0] and "Sequence" in post[1], "expected '<bos> $A <eos>'"
    bpe_vocab(w, tok, cfg["vocab_size"], "gpt-2", specials[0], specials[1])
    dense = []
    for m in read_json(src, "modules.json"):
        if m["type"].endswith("Dense"):
            mc = read_json(src, os.path.join(m["path"], "config.json"))
            assert not mc.get("bias") and mc["activation_function"].endswith("Identity")
            dense.append((mc, read_safetensors(os.path.join(src, m["path"], "model.safetensors"))["linear.weight"]))
    assert len(dense) == 2
    for name, (mc, _) in zip(("dense_2", "dense_3"), dense):
        w.add_uint32("%s.%s_feat_in" % (arch, name), mc["in_features"])
        w.add_uint32("%s.%s_feat_out" % (arch, name), mc["out_features"])
    add(w, "token_embd.weight", t["embed_tokens.weight"], qtype)
    add(w, "output_norm.weight", t["norm.weight"] + 1.0, qtype)
    parts = (("attn_norm", "input_layernorm", True), ("attn_q", "self_attn.q_proj", False),
             ("attn_k", "self_attn.k_proj", False), ("attn_v", "self_attn.v_proj", False),
             ("attn_output", "self_attn.o_proj", False), ("attn_q_norm", "self_attn.q_norm", True),
             ("attn_k_norm", "self_attn.k_norm", True), ("post_attention_norm", "post_attention_layernorm", True),
             ("ffn_norm", "pre_feedforward_layernorm", True), ("ffn_gate", "mlp.gate_proj", False),
             ("ffn_up", "mlp.up_proj", False), ("ffn_down", "mlp.down_proj", False),
             ("post_ffw_norm", "post_feedforward_layernorm", True))
    for i in range(n_layer):
        for name, src_name, norm in parts:
            v = t["layers.%d.%s.weight" % (i, src_name)]
            add(w, "blk.%d.%s.weight" % (i, name), v + 1.0 if norm else v, qtype)
    add(w, "dense_2.weight", dense[0][1], qtype)
    add(w, "dense_3.weight", dense[1][1], qtype)
    finish(w)


def finish(w):
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def golden(name, path, command):
    import gguf
    import llama_cpp
    corpus, queries = read_sentences()
    texts = corpus + queries
    # weight repacking off (use_extra_bufts): llama.cpp's repacked Q8_0 kernels crash on matrices
    # this small; its plain CPU kernels run instead, for every file alike
    default_params = llama_cpp.llama_model_default_params

    def no_repack():
        p = default_params()
        p.use_extra_bufts = False
        return p
    llama_cpp.llama.llama_cpp.llama_model_default_params = no_repack
    try:
        llm = llama_cpp.Llama(model_path=path, embedding=True, n_ctx=256, n_batch=256, n_ubatch=256, n_threads=1,
                              verbose=False)
    finally:
        llama_cpp.llama.llama_cpp.llama_model_default_params = default_params
    emb = np.array(llm.embed(texts), dtype=np.float32)
    ids = [llm.tokenize(s.encode("utf-8"), add_bos=True, special=False) for s in texts]
    write_golden("gguf-" + name, "llama.cpp embeddings (llama-cpp-python embed()) for tests/models/test_bert_gguf.c; "
                 "written by tools/embed_gguf.py, do not edit", command,
                 {"llama_cpp_python": llama_cpp.__version__, "gguf": gguf.__version__ if hasattr(gguf, "__version__")
                  else "?", "numpy": np.__version__}, sha256_of(path), 256, len(corpus), texts, ids, emb)
    return emb


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--convert":
        import argparse
        ap = argparse.ArgumentParser()
        ap.add_argument("--convert", nargs=2, metavar=("DIR", "OUT"))
        ap.add_argument("--type", default="f32", choices=TYPES)
        a = ap.parse_args()
        write_bert(a.convert[0], a.convert[1], a.type, False)
        print("embed_gguf: wrote %s" % a.convert[1])
        return
    command = "tools/embed_gguf.py " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    os.makedirs(OUT, exist_ok=True)
    jobs = [("tiny-bert-" + q, lambda p, q=q: write_bert(os.path.join(DIR, "tiny-bert"), p, q, False)) for q in TYPES]
    jobs.append(("tiny-bert-qkv-f32", lambda p: write_bert(os.path.join(DIR, "tiny-bert"), p, "f32", True)))
    jobs += [("tiny-qwen3-" + q, lambda p, q=q: write_qwen3(os.path.join(DIR, "tiny-qwen3"), p, q)) for q in TYPES]
    jobs.append(("tiny-nomic-f32", lambda p: write_nomic(os.path.join(DIR, "tiny-nomic"), p, "f32")))
    jobs.append(("tiny-roberta-f32", lambda p: write_bert(os.path.join(DIR, "tiny-roberta"), p, "f32", False)))
    jobs.append(("tiny-xlmr-f32", lambda p: write_bert(os.path.join(DIR, "tiny-xlmr"), p, "f32", False)))
    jobs += [("tiny-modernbert-" + q, lambda p, q=q: write_modernbert(os.path.join(DIR, "tiny-modernbert"), p, q))
             for q in ("f32", "f16")]
    jobs.append(("tiny-gemma-f32", lambda p: write_gemma(os.path.join(DIR, "tiny-gemma"), p, "f32")))
    only = [a for a in sys.argv[1:] if not a.startswith("-")]
    if only:  # NAME ...: only these files and goldens
        jobs = [j for j in jobs if j[0] in only]
    for name, write in jobs:
        path = os.path.join(OUT, name + ".gguf")
        write(path)
        emb = golden(name, path, command.strip())
        if name == "tiny-nomic-f32":  # tools/nomic_ref.py's reference against llama.cpp
            with open(os.path.join(DIR, "tiny-nomic.json"), encoding="utf-8") as f:
                ref = np.array(json.load(f)["embeddings"], dtype=np.float64)
            e = emb.astype(np.float64)
            cos = (ref * e).sum(1) / np.linalg.norm(ref, axis=1) / np.linalg.norm(e, axis=1)
            print("embed_gguf: NomicBERT reference vs llama.cpp: worst cosine 1 - %.3g" % (1 - cos.min()))
            if cos.min() < 0.99999:
                raise SystemExit("embed_gguf: tools/nomic_ref.py disagrees with llama.cpp's nomic-bert")


if __name__ == "__main__":
    main()
