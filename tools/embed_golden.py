#!/usr/bin/env python3
"""embed_golden.py - sentence-transformers goldens for hearth's encoder embeddings
(tests/models/test_bert.c), and the tiny random BERT checkpoint they are checked on.

The oracle is sentence-transformers' SentenceTransformer(folder, device="cpu").encode(...) in
float32 on PyTorch's CPU, batch 32, with the model's own modules (pooling, normalization) and
max_seq_length. For each model it records, for every sentence of a fixed set (tests/golden/
embed/sentences.txt: a retrieval corpus and queries, one per line, "Q " marking a query):
the token ids the model's tokenizer gives it (add_special_tokens as sentence-transformers
calls it) and the embedding. For every query it also records the corpus sentences ranked by
cosine similarity (top 3) with their scores, so the C test can ask for the same nearest
neighbours. The JSON says which versions made it and with which command.

  --make-tiny DIR   write the tiny random BERT (transformers BertModel from a small BertConfig
                    with a fixed seed, f32 safetensors), a tokenizer.json built with `tokenizers`
                    from a small WordPiece vocabulary, and sentence-transformers' modules.json,
                    1_Pooling/config.json (CLS pooling) and a Normalize module, then its golden
  --make-tiny-roberta DIR   the same for a tiny random RoBERTa (RobertaModel, positions from
                    padding_idx + 1, one token type): a byte-level BPE tokenizer.json trained with
                    `tokenizers` on the sentences (RobertaProcessing), mean pooling, no normalization
  --make-tiny-xlmr DIR   a tiny random XLM-R (XLMRobertaModel): a SentencePiece-style Unigram
                    tokenizer.json (NFKC, Metaspace) trained with `tokenizers` on the sentences,
                    "<s> $A </s>", CLS pooling and normalization
  --make-tiny-modernbert DIR   a tiny random ModernBERT (ModernBertModel, 3 layers: global, then
                    two sliding ones with a window of 4 tokens each way, so the sentences cross it):
                    a byte-level BPE tokenizer.json, "[CLS] $A [SEP]", mean pooling, normalized
  --make-tiny-qwen3 DIR   a tiny random Qwen3 decoder as Qwen3-Embedding uses one (Qwen3Model,
                    grouped-query attention, causal): a byte-level BPE tokenizer.json with
                    "$A <|endoftext|>", last-token pooling, normalized
  --make-tiny-gemma DIR   a tiny random EmbeddingGemma (Gemma3TextModel with
                    use_bidirectional_attention: 3 layers, two sliding ones with a window of 4
                    tokens each way, grouped-query attention): a byte-level BPE tokenizer.json
                    with "<bos> $A <eos>", mean pooling, two Dense projections without bias
                    (32 -> 64 -> 32, as EmbeddingGemma's 2_Dense and 3_Dense), normalized
  --name NAME --model DIR   the golden of an existing checkpoint folder (the real model:
                    --name minilm --model "$(scripts/model-path.sh minilm)")

Writes tests/golden/embed/NAME.json. Needs torch, transformers, sentence-transformers and
tokenizers in a throwaway venv (never the project's .venv):
  python3 -m venv /tmp/stenv && /tmp/stenv/bin/pip install torch transformers sentence-transformers
  /tmp/stenv/bin/python tools/embed_golden.py --make-tiny tests/golden/embed/tiny-bert
  /tmp/stenv/bin/python tools/embed_golden.py --name minilm --model "$(scripts/model-path.sh minilm)"
"""
import argparse
import datetime
import hashlib
import json
import os
import shlex
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIR = os.path.join(ROOT, "tests", "golden", "embed")

# The tiny vocabulary: specials, then whole words and pieces the sentences use, then single
# letters and digits (and their ## forms) so that every word of the set tokenizes without [UNK].
TINY_WORDS = """the a an is are of on in to and cat dog sat mat sun sky blue rain ran fast slow
bird sing song eat food man woman child play park tree green red car road city night day
water river sea fish boat book read write code computer music loud quiet cold hot""".split()


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def read_sentences():
    corpus, queries = [], []
    with open(os.path.join(DIR, "sentences.txt"), encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            if line.startswith("Q "):
                queries.append(line[2:])
            else:
                corpus.append(line)
    return corpus, queries


def make_tiny(out):
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import BertConfig, BertModel

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = list("abcdefghijklmnopqrstuvwxyz0123456789.,!?'-")
    vocab = specials + TINY_WORDS + chars + ["##" + c for c in "abcdefghijklmnopqrstuvwxyz0123456789"]
    vocab = list(dict.fromkeys(vocab))
    tok = Tokenizer(models.WordPiece({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]",
                                     max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                                strip_accents=None, lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab.index("[CLS]")), ("[SEP]", vocab.index("[SEP]"))])
    tok.add_special_tokens(specials)

    torch.manual_seed(20260)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=64, max_position_embeddings=64, type_vocab_size=2,
                     hidden_act="gelu", layer_norm_eps=1e-12, initializer_range=0.6)
    model = BertModel(cfg, add_pooling_layer=False).eval()
    # A random init leaves LayerNorm at (1, 0) and the biases at 0; perturb them so the test
    # sees each one used.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                p.add_(torch.randn_like(p) * 0.3)
    os.makedirs(os.path.join(out, "1_Pooling"), exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tok.save(os.path.join(out, "tokenizer.json"))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "BertTokenizerFast", "do_lower_case": True, "model_max_length": 64,
                   "cls_token": "[CLS]", "sep_token": "[SEP]", "pad_token": "[PAD]", "unk_token": "[UNK]",
                   "mask_token": "[MASK]"}, f, indent=2)
    with open(os.path.join(out, "modules.json"), "w") as f:
        json.dump([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                   {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                   {"idx": 2, "name": "2", "path": "2_Normalize",
                    "type": "sentence_transformers.models.Normalize"}], f, indent=2)
    with open(os.path.join(out, "1_Pooling", "config.json"), "w") as f:
        json.dump({"word_embedding_dimension": 32, "pooling_mode_cls_token": True,
                   "pooling_mode_mean_tokens": False, "pooling_mode_max_tokens": False,
                   "pooling_mode_mean_sqrt_len_tokens": False}, f, indent=2)
    with open(os.path.join(out, "sentence_bert_config.json"), "w") as f:
        json.dump({"max_seq_length": 64, "do_lower_case": False}, f, indent=2)


def write_st_modules(out, dim, pooling, normalize):
    mods = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    if normalize:
        mods.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
    os.makedirs(os.path.join(out, "1_Pooling"), exist_ok=True)
    with open(os.path.join(out, "modules.json"), "w") as f:
        json.dump(mods, f, indent=2)
    with open(os.path.join(out, "1_Pooling", "config.json"), "w") as f:
        json.dump({"word_embedding_dimension": dim, "pooling_mode_cls_token": pooling == "cls",
                   "pooling_mode_mean_tokens": pooling == "mean", "pooling_mode_max_tokens": False,
                   "pooling_mode_mean_sqrt_len_tokens": False, "pooling_mode_lasttoken": pooling == "lasttoken"},
                  f, indent=2)
    with open(os.path.join(out, "sentence_bert_config.json"), "w") as f:
        json.dump({"max_seq_length": 64, "do_lower_case": False}, f, indent=2)


def make_tiny_xlmr(out):
    import torch
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import XLMRobertaConfig, XLMRobertaModel

    corpus, queries = read_sentences()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always")
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always")
    trainer = trainers.UnigramTrainer(vocab_size=200, special_tokens=specials, unk_token="<unk>",
                                      show_progress=False)
    tok.train_from_iterator(corpus + queries, trainer=trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>",
        special_tokens=[("<s>", tok.token_to_id("<s>")), ("</s>", tok.token_to_id("</s>"))])
    torch.manual_seed(20262)
    cfg = XLMRobertaConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2,
                           num_attention_heads=4, intermediate_size=64, max_position_embeddings=66,
                           type_vocab_size=1, pad_token_id=tok.token_to_id("<pad>"), bos_token_id=0,
                           eos_token_id=2, hidden_act="gelu", layer_norm_eps=1e-5, initializer_range=0.6)
    model = XLMRobertaModel(cfg, add_pooling_layer=False).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                p.add_(torch.randn_like(p) * 0.3)
    model.save_pretrained(out, safe_serialization=True)
    tok.save(os.path.join(out, "tokenizer.json"))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "XLMRobertaTokenizerFast", "model_max_length": 64, "bos_token": "<s>",
                   "eos_token": "</s>", "cls_token": "<s>", "sep_token": "</s>", "pad_token": "<pad>",
                   "unk_token": "<unk>", "mask_token": "<mask>"}, f, indent=2)
    write_st_modules(out, 32, "cls", True)


def make_tiny_modernbert(out):
    import torch
    from tokenizers import processors
    from transformers import ModernBertConfig, ModernBertModel

    tok = train_byte_bpe(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], 380)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    torch.manual_seed(20263)
    cfg = ModernBertConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=3,
                           num_attention_heads=4, intermediate_size=48, max_position_embeddings=128,
                           local_attention=8, global_attn_every_n_layers=3, global_rope_theta=160000.0,
                           local_rope_theta=10000.0, pad_token_id=tok.token_to_id("[PAD]"),
                           cls_token_id=tok.token_to_id("[CLS]"), sep_token_id=tok.token_to_id("[SEP]"),
                           hidden_activation="gelu", initializer_range=0.6)
    cfg._attn_implementation = "eager"
    model = ModernBertModel(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(torch.randn_like(p) * 0.3)
    model.save_pretrained(out, safe_serialization=True)
    tok.save(os.path.join(out, "tokenizer.json"))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 64, "cls_token": "[CLS]",
                   "sep_token": "[SEP]", "pad_token": "[PAD]", "unk_token": "[UNK]", "mask_token": "[MASK]"},
                  f, indent=2)
    write_st_modules(out, 32, "mean", True)


def train_byte_bpe(specials, vocab_size=360):
    """A byte-level BPE tokenizer of vocab_size tokens (specials first) trained on the sentences."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    corpus, queries = read_sentences()
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(corpus + queries, trainer=trainer)
    return tok


def make_tiny_qwen3(out):
    import torch
    from tokenizers import processors
    from transformers import Qwen3Config, Qwen3Model

    tok = train_byte_bpe(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    eos = tok.token_to_id("<|endoftext|>")
    tok.post_processor = processors.TemplateProcessing(single="$A <|endoftext|>", pair="$A $B <|endoftext|>",
                                                       special_tokens=[("<|endoftext|>", eos)])
    torch.manual_seed(20264)
    cfg = Qwen3Config(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, head_dim=16, intermediate_size=48, max_position_embeddings=128,
                      rms_norm_eps=1e-6, rope_theta=10000.0, hidden_act="silu", tie_word_embeddings=True,
                      initializer_range=0.6, pad_token_id=eos, eos_token_id=eos, bos_token_id=eos)
    cfg._attn_implementation = "eager"
    model = Qwen3Model(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(torch.randn_like(p) * 0.3)
    model.save_pretrained(out, safe_serialization=True)
    tok.save(os.path.join(out, "tokenizer.json"))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 64, "eos_token": "<|endoftext|>",
                   "pad_token": "<|endoftext|>", "padding_side": "left"}, f, indent=2)
    write_st_modules(out, 32, "lasttoken", True)


def make_tiny_gemma(out):
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers import models as st_models
    from tokenizers import processors
    from transformers import Gemma3TextConfig, Gemma3TextModel

    tok = train_byte_bpe(["<pad>", "<eos>", "<bos>", "<unk>"])
    bos, eos = tok.token_to_id("<bos>"), tok.token_to_id("<eos>")
    tok.post_processor = processors.TemplateProcessing(single="<bos> $A <eos>", pair="<bos> $A $B <eos>",
                                                       special_tokens=[("<bos>", bos), ("<eos>", eos)])
    torch.manual_seed(20265)
    cfg = Gemma3TextConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=3,
                           num_attention_heads=4, num_key_value_heads=2, head_dim=16, intermediate_size=48,
                           max_position_embeddings=128, rms_norm_eps=1e-6, query_pre_attn_scalar=16,
                           sliding_window=8, layer_types=["sliding_attention", "sliding_attention", "full_attention"],
                           use_bidirectional_attention=True, hidden_activation="gelu_pytorch_tanh",
                           initializer_range=0.6, pad_token_id=0, eos_token_id=eos, bos_token_id=bos)
    cfg._attn_implementation = "eager"
    model = Gemma3TextModel(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.add_(torch.randn_like(p) * 0.3)
    model.save_pretrained(out, safe_serialization=True)
    tok.save(os.path.join(out, "tokenizer.json"))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 64, "bos_token": "<bos>",
                   "eos_token": "<eos>", "pad_token": "<pad>", "padding_side": "right"}, f, indent=2)
    tr = st_models.Transformer(out, max_seq_length=64)
    modules = [tr, st_models.Pooling(32, pooling_mode="mean"),
               st_models.Dense(32, 64, bias=False, activation_function=torch.nn.Identity()),
               st_models.Dense(64, 32, bias=False, activation_function=torch.nn.Identity()), st_models.Normalize()]
    SentenceTransformer(modules=modules, device="cpu").save(out)


def make_tiny_roberta(out):
    import torch
    from tokenizers import processors
    from transformers import RobertaConfig, RobertaModel

    tok = train_byte_bpe(["<s>", "<pad>", "</s>", "<unk>", "<mask>"], 400)
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")),
                                                      ("<s>", tok.token_to_id("<s>")), trim_offsets=True,
                                                      add_prefix_space=False)
    torch.manual_seed(20261)
    cfg = RobertaConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=64, max_position_embeddings=66, type_vocab_size=1, pad_token_id=1,
                        bos_token_id=0, eos_token_id=2, hidden_act="gelu", layer_norm_eps=1e-5,
                        initializer_range=0.6)
    model = RobertaModel(cfg, add_pooling_layer=False).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias") or "LayerNorm" in name:
                p.add_(torch.randn_like(p) * 0.3)
    os.makedirs(os.path.join(out, "1_Pooling"), exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tok.save(os.path.join(out, "tokenizer.json"))
    with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "RobertaTokenizerFast", "model_max_length": 64, "bos_token": "<s>",
                   "eos_token": "</s>", "cls_token": "<s>", "sep_token": "</s>", "pad_token": "<pad>",
                   "unk_token": "<unk>", "mask_token": "<mask>"}, f, indent=2)
    with open(os.path.join(out, "modules.json"), "w") as f:
        json.dump([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                   {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}],
                  f, indent=2)
    with open(os.path.join(out, "1_Pooling", "config.json"), "w") as f:
        json.dump({"word_embedding_dimension": 32, "pooling_mode_cls_token": False,
                   "pooling_mode_mean_tokens": True, "pooling_mode_max_tokens": False,
                   "pooling_mode_mean_sqrt_len_tokens": False}, f, indent=2)
    with open(os.path.join(out, "sentence_bert_config.json"), "w") as f:
        json.dump({"max_seq_length": 64, "do_lower_case": False}, f, indent=2)


def golden(name, folder, command):
    import numpy as np
    import sentence_transformers
    import tokenizers
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(0)
    model = SentenceTransformer(folder, device="cpu")
    corpus, queries = read_sentences()
    texts = corpus + queries
    emb = model.encode(texts, batch_size=32, convert_to_numpy=True, normalize_embeddings=False)
    emb = emb.astype(np.float32)
    feats = model.tokenize(texts)
    ids = []
    for i in range(len(texts)):
        mask = feats["attention_mask"][i].tolist()
        ids.append([int(t) for t, m in zip(feats["input_ids"][i].tolist(), mask) if m])
    weights = os.path.join(folder, "model.safetensors")
    versions = {"torch": torch.__version__, "transformers": transformers.__version__,
                "sentence_transformers": sentence_transformers.__version__,
                "tokenizers": tokenizers.__version__, "numpy": np.__version__}
    write_golden(name, "sentence-transformers embeddings for tests/models/test_bert.c; written by "
                 "tools/embed_golden.py, do not edit", command, versions, sha256_of(weights),
                 int(model.max_seq_length), len(corpus), texts, ids, emb)


def write_golden(file_name, about, command, versions, model_sha256, max_seq_length, n_corpus, texts, ids, emb):
    """tests/golden/embed/FILE_NAME.json in the shape the C tests read (tests/models/embed_harness.h):
    provenance, the texts, the oracle's ids and float32 embeddings, and for every query (the
    texts after the first n_corpus) the three corpus texts nearest by cosine, with the scores."""
    import numpy as np
    emb = np.asarray(emb, dtype=np.float32)
    n = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    sims = n[n_corpus:] @ n[:n_corpus].T
    ranking = []
    for qi in range(len(texts) - n_corpus):
        order = np.argsort(-sims[qi], kind="stable")[:3]
        ranking.append({"query": qi, "top": [int(j) for j in order], "scores": [float(sims[qi][j]) for j in order]})
    out = {
        "about": about,
        "name": file_name,
        "command": command,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "versions": versions,
        "model_sha256": model_sha256,
        "dim": int(emb.shape[1]),
        "max_seq_length": max_seq_length,
        "n_corpus": n_corpus,
        "texts": texts,
        "ids": ids,
        "embeddings": [[float("%.9g" % v) for v in row] for row in emb.tolist()],
        "ranking": ranking,
    }
    path = os.path.join(DIR, file_name + ".json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print("embed_golden: %s (%d texts, dim %d)" % (os.path.relpath(path, ROOT), len(texts), emb.shape[1]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--make-tiny", metavar="DIR")
    ap.add_argument("--make-tiny-roberta", metavar="DIR")
    ap.add_argument("--make-tiny-xlmr", metavar="DIR")
    ap.add_argument("--make-tiny-modernbert", metavar="DIR")
    ap.add_argument("--make-tiny-qwen3", metavar="DIR")
    ap.add_argument("--make-tiny-gemma", metavar="DIR")
    ap.add_argument("--name")
    ap.add_argument("--model", metavar="DIR")
    a = ap.parse_args()
    command = "tools/embed_golden.py " + " ".join(shlex.quote(x if not x.startswith(os.path.expanduser("~"))
                                                              else "~" + x[len(os.path.expanduser("~")):])
                                                  for x in sys.argv[1:])
    if a.make_tiny:
        make_tiny(a.make_tiny)
        golden(a.name or os.path.basename(os.path.normpath(a.make_tiny)), a.make_tiny, command)
    elif a.make_tiny_roberta:
        make_tiny_roberta(a.make_tiny_roberta)
        golden(a.name or os.path.basename(os.path.normpath(a.make_tiny_roberta)), a.make_tiny_roberta, command)
    elif a.make_tiny_xlmr:
        make_tiny_xlmr(a.make_tiny_xlmr)
        golden(a.name or os.path.basename(os.path.normpath(a.make_tiny_xlmr)), a.make_tiny_xlmr, command)
    elif a.make_tiny_modernbert:
        make_tiny_modernbert(a.make_tiny_modernbert)
        golden(a.name or os.path.basename(os.path.normpath(a.make_tiny_modernbert)), a.make_tiny_modernbert,
               command)
    elif a.make_tiny_qwen3:
        make_tiny_qwen3(a.make_tiny_qwen3)
        golden(a.name or os.path.basename(os.path.normpath(a.make_tiny_qwen3)), a.make_tiny_qwen3, command)
    elif a.make_tiny_gemma:
        make_tiny_gemma(a.make_tiny_gemma)
        golden(a.name or os.path.basename(os.path.normpath(a.make_tiny_gemma)), a.make_tiny_gemma, command)
    elif a.name and a.model:
        golden(a.name, a.model, command)
    else:
        ap.error("give --make-tiny DIR, --make-tiny-roberta DIR, --make-tiny-xlmr DIR, --make-tiny-modernbert DIR, "
                 "--make-tiny-qwen3 DIR, or --name NAME --model DIR")


if __name__ == "__main__":
    main()
