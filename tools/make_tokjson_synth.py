#!/usr/bin/env python3
"""make_tokjson_synth.py - synthetic tokenizer.json files that exercise every component hearth's
tokenizer.json front end supports (tests/golden/tokjson/synth/*.json).

Each file is a small model trained by `tokenizers` itself on tests/golden/tokjson/corpus.txt
(vocab of a few hundred to ~1500), then dressed with a combination of normalizers,
pre-tokenizers, post-processors, decoders and added tokens (flags special / lstrip / rstrip /
normalized / single_word), so that together the files cover:

  models        BPE byte-level (+ ignore_merges), BPE with byte_fallback + fuse_unk, BPE with
                continuing_subword_prefix + end_of_word_suffix, WordPiece, Unigram (+ byte_fallback)
  normalizers   NFC NFD NFKC NFKD Lowercase Prepend Replace(string, regex) Strip StripAccents
                BertNormalizer Sequence
  pre-tokenizers ByteLevel (add_prefix_space, use_regex on/off) Split(string, regex; Removed,
                Isolated, MergedWithPrevious, MergedWithNext, Contiguous; invert) Metaspace
                (always / first / never, split on/off) Whitespace WhitespaceSplit Digits
                (individual on/off) Punctuation BertPreTokenizer Sequence
  post          TemplateProcessing (single + pair) BertProcessing RobertaProcessing ByteLevel
                Sequence
  decoders      ByteLevel Metaspace ByteFallback Fuse Strip WordPiece Replace BPEDecoder Sequence

Usage: python tools/make_tokjson_synth.py   (needs tokenizers, requirements/tokjson.txt)
Then regenerate the goldens: python tools/tokjson_golden.py
"""
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIR = os.path.join(ROOT, "tests", "golden", "tokjson")
OUT = os.path.join(DIR, "synth")


def corpus_lines():
    with open(os.path.join(DIR, "corpus.txt"), "rb") as f:
        return [l.decode("utf-8") for l in f.read().split(b"\n") if l]


def added(content, id_, special=True, lstrip=False, rstrip=False, normalized=None,
          single_word=False):
    return {"id": id_, "content": content, "single_word": single_word, "lstrip": lstrip,
            "rstrip": rstrip, "normalized": (not special) if normalized is None else normalized,
            "special": special}


def byte_tokens():
    return ["<0x%02X>" % b for b in range(256)]


def main():
    from tokenizers import (Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers,
                            processors, trainers)
    from tokenizers import AddedToken

    lines = corpus_lines()
    # Unigram's trainer wants every character in its vocab: train it on the Latin lines only
    # (the others then exercise unk and byte fallback)
    latin = [l for l in lines if all(ord(c) < 0x250 for c in l)]
    os.makedirs(OUT, exist_ok=True)
    made = []

    def save(name, tok, edit=None):
        d = json.loads(tok.to_str())
        if edit:
            edit(d)
        path = os.path.join(OUT, name + ".json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(d, f, ensure_ascii=False, separators=(",", ":"))
            f.write("\n")
        Tokenizer.from_file(path)  # the oracle must accept it
        made.append(name)

    # 1. byte-level BPE, Llama-3-like regex split before ByteLevel(use_regex=False), NFC,
    #    ignore_merges, TemplateProcessing with a pair, added tokens with lstrip / rstrip.
    t = Tokenizer(models.BPE(ignore_merges=True))
    t.normalizer = normalizers.NFC()
    t.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|"
                                   r"\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"),
                             "isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    t.decoder = decoders.ByteLevel()
    t.train_from_iterator(lines, trainers.BpeTrainer(
        vocab_size=1200, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
        special_tokens=["<|begin|>", "<|sep|>"]))
    t.add_tokens([AddedToken("<tool>", lstrip=True, rstrip=True, normalized=False)])
    t.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin|> $A", pair="<|begin|> $A <|sep|> $B:1",
                                      special_tokens=[("<|begin|>", 0), ("<|sep|>", 1)])])
    save("bpe_bytelevel_split", t)

    # 2. byte-level BPE the GPT-2 way: ByteLevel(add_prefix_space, use_regex), RobertaProcessing,
    #    NFKC + Replace(regex) normalizers, a normalized non-special added token, single_word.
    t = Tokenizer(models.BPE())
    t.normalizer = normalizers.Sequence([normalizers.NFKC(),
                                         normalizers.Replace(Regex(r"\t+"), "    ")])
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    t.decoder = decoders.ByteLevel()
    t.train_from_iterator(lines, trainers.BpeTrainer(
        vocab_size=900, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>"]))
    t.add_special_tokens([AddedToken("<mask>", lstrip=True, single_word=True, normalized=False)])
    t.add_tokens([AddedToken("hello world", normalized=True),
                  AddedToken("word", single_word=True, normalized=False)])
    t.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0))
    save("bpe_gpt2_roberta", t)

    # 3. SentencePiece-style BPE: byte_fallback + fuse_unk, Prepend + Replace(string)
    #    normalizers, no pre-tokenizer, decoder Replace + ByteFallback + Fuse + Strip.
    t = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    t.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    t.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                   decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    t.train_from_iterator(lines, trainers.BpeTrainer(
        vocab_size=1000, show_progress=False, limit_alphabet=300,
        special_tokens=["<unk>", "<s>", "</s>"] + byte_tokens()))
    t.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)])
    t.add_special_tokens([AddedToken("<start_of_turn>", normalized=False)])
    save("bpe_bytefallback_spm", t)

    # 4. BPE with Metaspace pre-tokenizer (prepend first, split), NFKD + StripAccents + Lowercase,
    #    Metaspace decoder, a special token matched on normalized text.
    t = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    t.normalizer = normalizers.Sequence([normalizers.NFKD(), normalizers.StripAccents(),
                                         normalizers.Lowercase()])
    t.pre_tokenizer = pre_tokenizers.Metaspace(prepend_scheme="first", split=True)
    t.decoder = decoders.Sequence([decoders.Metaspace(prepend_scheme="first"),
                                   decoders.ByteFallback(), decoders.Fuse()])
    t.train_from_iterator(lines, trainers.BpeTrainer(
        vocab_size=900, show_progress=False, limit_alphabet=200,
        special_tokens=["<unk>", "<bos>"] + byte_tokens()))
    t.add_special_tokens([AddedToken("<Think>", normalized=True)])
    t.post_processor = processors.TemplateProcessing(
        single="<bos> $A", pair="<bos> $A $B:1", special_tokens=[("<bos>", 1)])
    save("bpe_metaspace_first", t)

    # 5. BPE with a subword prefix and an end-of-word suffix, split behaviours, BPEDecoder.
    t = Tokenizer(models.BPE(unk_token="[UNK]", continuing_subword_prefix="##",
                             end_of_word_suffix="</w>", fuse_unk=True))
    t.normalizer = normalizers.Sequence([normalizers.Replace(Regex(r"\s+"), " "),
                                         normalizers.Strip(left=True, right=True)])
    t.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(" ", "merged_with_next"),
        pre_tokenizers.Split(Regex(r"\d"), "contiguous"),
        pre_tokenizers.Split(Regex(r"[,.;:!?]"), "merged_with_previous"),
        pre_tokenizers.Split(Regex(r"[\p{P}\p{S}]"), "isolated"),
        pre_tokenizers.Split(" ", "removed")])
    t.decoder = decoders.BPEDecoder(suffix="</w>")
    t.train_from_iterator(lines, trainers.BpeTrainer(
        vocab_size=1200, show_progress=False, limit_alphabet=400, continuing_subword_prefix="##",
        end_of_word_suffix="</w>", special_tokens=["[UNK]", "[CLS]", "[SEP]"]))
    t.post_processor = processors.BertProcessing(("[SEP]", 2), ("[CLS]", 1))
    save("bpe_suffix_splits", t)

    # 6. Unigram with byte fallback, Metaspace (always, no split) after WhitespaceSplit-free
    #    Digits(individual) and Punctuation, NFKC + Strip, Metaspace + ByteFallback decoder.
    t = Tokenizer(models.Unigram())
    t.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Strip(left=True,
                                                                              right=False)])
    t.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.Punctuation("isolated"),
        pre_tokenizers.Metaspace(prepend_scheme="always", split=False)])
    t.decoder = decoders.Sequence([decoders.Metaspace(prepend_scheme="always"),
                                   decoders.ByteFallback(), decoders.Fuse()])
    t.train_from_iterator(latin, trainers.UnigramTrainer(
        vocab_size=800, show_progress=False, unk_token="<unk>", max_piece_length=8,
        special_tokens=["<unk>", "<s>", "</s>"]))
    t.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B:1 </s>:1",
        special_tokens=[("<s>", 1), ("</s>", 2)])

    def unigram_bytes(d):
        d["model"]["byte_fallback"] = True
        low = min(s for _, s in d["model"]["vocab"]) - 1.0
        have = {p for p, _ in d["model"]["vocab"]}
        d["model"]["vocab"] += [[b, low] for b in byte_tokens() if b not in have]
    save("unigram_bytefallback", t, unigram_bytes)

    # 7. Unigram, Metaspace never + split, NFD + Lowercase, Whitespace pre-tokenizer first.
    t = Tokenizer(models.Unigram())
    t.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.Lowercase()])
    t.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.WhitespaceSplit(),
        pre_tokenizers.Metaspace(replacement="_", prepend_scheme="never", split=True)])
    t.decoder = decoders.Metaspace(replacement="_", prepend_scheme="never")
    t.train_from_iterator(latin, trainers.UnigramTrainer(
        vocab_size=600, show_progress=False, unk_token="<unk>", max_piece_length=6,
        special_tokens=["<unk>", "<cls>", "<sep>"]))
    t.add_tokens([AddedToken("<tool>", rstrip=True, normalized=False)])
    t.post_processor = processors.BertProcessing(("<sep>", 2), ("<cls>", 1))
    save("unigram_metaspace_never", t)

    # 8. WordPiece, BertNormalizer (accents kept, no lowercase), BertPreTokenizer, Bert post.
    t = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=30))
    t.normalizer = normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True,
                                              strip_accents=False, lowercase=False)
    t.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    t.decoder = decoders.WordPiece(cleanup=False)
    t.train_from_iterator(lines, trainers.WordPieceTrainer(
        vocab_size=1500, show_progress=False, limit_alphabet=600,
        special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    t.add_special_tokens([AddedToken("[MASK]", lstrip=True)])
    t.post_processor = processors.BertProcessing(("[SEP]", 3), ("[CLS]", 2))
    save("wordpiece_bert_cased", t)

    # 9. WordPiece, NFC + Lowercase + StripAccents, Whitespace + Digits + Punctuation,
    #    WordPiece decoder with cleanup, TemplateProcessing inside a Sequence.
    t = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    t.normalizer = normalizers.Sequence([normalizers.NFC(), normalizers.Lowercase(),
                                         normalizers.StripAccents()])
    t.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=False),
        pre_tokenizers.Punctuation("contiguous")])
    t.decoder = decoders.WordPiece(prefix="##", cleanup=True)
    t.train_from_iterator(lines, trainers.WordPieceTrainer(
        vocab_size=1200, show_progress=False, limit_alphabet=500,
        special_tokens=["[UNK]", "[CLS]", "[SEP]"]))
    t.add_tokens([AddedToken("<mask>", single_word=True, normalized=True)])
    t.post_processor = processors.Sequence([processors.ByteLevel(), processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 1), ("[SEP]", 2)])])
    save("wordpiece_lower_digits", t)

    # 10. BertNormalizer defaults (lowercase + strip accents by default), Split invert,
    #     MergedWithPrevious, WhitespaceSplit; WordPiece; no post-processor, no decoder.
    t = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    t.normalizer = normalizers.BertNormalizer()
    t.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(r"\w+|[^\w\s]+"), "removed", invert=True),
        pre_tokenizers.Split("-", "merged_with_previous")])
    t.train_from_iterator(lines, trainers.WordPieceTrainer(
        vocab_size=900, show_progress=False, limit_alphabet=500, special_tokens=["[UNK]"]))
    save("wordpiece_invert_nodecoder", t)

    print("make_tokjson_synth: %s" % ", ".join(made))


if __name__ == "__main__":
    main()
