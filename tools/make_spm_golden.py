#!/usr/bin/env python3
"""Tiny SentencePiece BPE models (tokenizer.model protobufs) and the ids the sentencepiece
library gives for a set of texts, for tests/unit/test_spm_model.c (checkpoints that ship only
tokenizer.model).

    /tmp/tenv/bin/pip install -r requirements/transformers.txt   # pins sentencepiece
    /tmp/tenv/bin/python tools/make_spm_golden.py --out tests/golden/tok/spm

Two models are trained on a fixed text with sentencepiece's own trainer, as Llama / Gemma
tokenizers are configured: model_type BPE, identity normalization, no whitespace removal,
byte fallback (256 <0xXX> pieces; not in bpe-288), the default <unk> <s> </s>, and one user-defined symbol:
  bpe-prefix.model     add_dummy_prefix true  (Llama 1/2, Mistral)
  bpe-noprefix.model   add_dummy_prefix false (Gemma)
  bpe-288.model        add_dummy_prefix true, no byte fallback (unknown characters are <unk>),
                       288 pieces: the vocabulary of make_hf_tiny.py's checkpoints, so a copy of
                       one with this file instead of tokenizer.json loads
<name>.json records, for each text, SentencePieceProcessor.encode(text) (no BOS / EOS),
sp.decode of those ids, and the library version. Deterministic for a given sentencepiece version (one trainer thread).
"""
import argparse, io, json, os

import sentencepiece as spm

TRAIN = ("Once upon a time there was a tiny model that read safetensors files.\n"
         "The quick brown fox jumps over the lazy dog; the dog sleeps.\n"
         "hearth loads checkpoints, tokenizes text and streams tokens back.\n"
         "Numbers 0123456789 and punctuation: (a, b) [c] {d} \"e\" 'f' - g_h.\n")
TEXTS = [
    "Once upon a time",
    "The quick brown fox jumps over the lazy dog.",
    " leading space and trailing space ",
    "two  spaces,   three   and\ttabs\tand\nnew\n\nlines",
    "unseen letters: \u00e9t\u00e9 na\u00efve \u65e5\u672c\u8a9e \U0001F600 \u0416",
    "the user symbol [[x]] inside, and <s> </s> <unk> as plain text",
    "",
    " ",
    "hearth",
    "tokenizes tokenizers tokenized",
    "x\u2581y with a literal U+2581",
    "0123456789 (a, b) [c] {d}",
]


def train(prefix, add_dummy_prefix, vocab_size=400, byte_fallback=True):
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(TRAIN.splitlines() * 20), model_writer=model, model_type="bpe",
        vocab_size=vocab_size, character_coverage=1.0, byte_fallback=byte_fallback, normalization_rule_name="identity",
        remove_extra_whitespaces=False, add_dummy_prefix=add_dummy_prefix, user_defined_symbols=["[[x]]"],
        num_threads=1, minloglevel=2, split_digits=False)
    with open(prefix + ".model", "wb") as f:
        f.write(model.getvalue())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/golden/tok/spm")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, dummy, n_vocab, fallback in (("bpe-prefix", True, 400, True), ("bpe-noprefix", False, 400, True),
                                           ("bpe-288", True, 288, False)):
        prefix = os.path.join(args.out, name)
        train(prefix, dummy, n_vocab, fallback)
        sp = spm.SentencePieceProcessor(model_file=prefix + ".model")
        cases = [{"text": t, "ids": sp.encode(t), "decoded": sp.decode(sp.encode(t))} for t in TEXTS]
        meta = {"provenance": {"tool": "tools/make_spm_golden.py", "sentencepiece": spm.__version__,
                               "call": "SentencePieceProcessor.encode(text)"},
                "vocab_size": sp.get_piece_size(), "bos_id": sp.bos_id(), "eos_id": sp.eos_id(),
                "unk_id": sp.unk_id(), "pad_id": sp.pad_id(), "cases": cases}
        json.dump(meta, open(prefix + ".json", "w"), indent=1, ensure_ascii=False)
        print(name, sp.get_piece_size(), [c["ids"][:6] for c in cases[:3]])


if __name__ == "__main__":
    main()
