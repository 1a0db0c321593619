#!/usr/bin/env python3
"""tokjson_unicode.py - the character classes of Hugging Face `tokenizers`, as C tables.

tokenizers decides "is this a space / digit / punctuation / accent / word character" with
several Unicode tables of different ages: Rust's std (char::is_whitespace, is_numeric,
to_lowercase), the unicode_categories crate (BertNormalizer's is_control, BertPreTokenizer's
and Punctuation's is_punctuation), the unicode-normalization-alignments crate (StripAccents),
the Rust regex crate (\\w around single_word added tokens) and Oniguruma (\\s, \\p{L}, \\p{N},
\\w in Split / ByteLevel / Whitespace regexes). A code point assigned after one of those
tables was made (many emoji) is treated differently by each, and hearth must give the same
ids. So we do not guess: this script asks the oracle itself, code point by code point, and
writes the answers as src/tokenizer/hf_unicode_data.c (generated; do not edit).

Probes (c = one code point, surrogates skipped):
  WS    WhitespaceSplit cuts "a" c "b" in two                  (Rust char::is_whitespace)
  NUM   Digits(individual_digits=True) cuts "a" c "b" in three (Rust char::is_numeric)
  PUNC  Punctuation cuts "a" c "b" in three
  BPUNC BertPreTokenizer cuts "a" c "b" in three
  BDROP BertNormalizer(clean_text only) removes c
  BWS   BertNormalizer(clean_text only) turns c into " "
  MN    StripAccents removes c
  WORD  an added token "x" with single_word is NOT found in c "x" (regex \\w)
  CJK   BertNormalizer(handle_chinese_chars only) pads c with spaces
  OL ON OS OW  Split(Regex(\\p{L} | \\p{N} | \\s | \\w), removed) removes c (Oniguruma)
  BMN   BertNormalizer(strip_accents only) removes c (its own mark table)
and the Lowercase normalizer's output for every c it changes.

Usage: python tools/tokjson_unicode.py [--out src/tokenizer/hf_unicode_data.c]
Needs tokenizers (requirements/tokjson.txt).
"""
import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "src", "tokenizer", "hf_unicode_data.c")
BITS = ["WS", "NUM", "PUNC", "BPUNC", "BDROP", "BWS", "MN", "WORD", "CJK", "OL", "ON", "OS", "OW",
        "BMN"]


CLASSES = ["L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "Mn", "Mc", "N", "Nd", "Nl", "No", "P", "S",
           "Z", "s", "w"]
WHITE_SPACE = list(range(9, 14)) + [0x20, 0x85, 0xA0, 0x1680] + list(range(0x2000, 0x200B)) + \
    [0x2028, 0x2029, 0x202F, 0x205F, 0x3000]


def ranges(s):
    out = []
    for c in sorted(s):
        if out and out[-1][1] == c - 1:
            out[-1][1] = c
        else:
            out.append([c, c])
    return [tuple(r) for r in out]


def cps():
    for c in range(0x110000):
        if 0xD800 <= c <= 0xDFFF:
            continue
        yield c


def regex_set(pt, Regex, pattern):
    """Code points that Split(Regex(pattern), removed) removes, probed in chunks."""
    split = pt.Split(Regex(pattern), "removed")
    out = set()
    chunk = []
    def flush():
        s = "".join(chr(c) for c in chunk)
        kept = bytearray(len(chunk))
        for _, (a, b) in split.pre_tokenize_str(s):
            for i in range(a, b):
                kept[i] = 1
        out.update(c for c, k in zip(chunk, kept) if not k)
        chunk.clear()
    for c in cps():
        chunk.append(c)
        if len(chunk) == 4096:
            flush()
    if chunk:
        flush()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    import tokenizers
    from tokenizers import AddedToken, Regex, Tokenizer, models
    from tokenizers import normalizers as nm
    from tokenizers import pre_tokenizers as pt

    ws, digits, punc, bert = (pt.WhitespaceSplit(), pt.Digits(individual_digits=True),
                              pt.Punctuation(), pt.BertPreTokenizer())
    clean = nm.BertNormalizer(clean_text=True, handle_chinese_chars=False, strip_accents=False,
                              lowercase=False)
    cjk = nm.BertNormalizer(clean_text=False, handle_chinese_chars=True, strip_accents=False,
                            lowercase=False)
    strip, lower = nm.StripAccents(), nm.Lowercase()
    bstrip = nm.BertNormalizer(clean_text=False, handle_chinese_chars=False, strip_accents=True,
                               lowercase=False)
    word = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    word.add_tokens([AddedToken("x", single_word=True)])
    x_id = word.token_to_id("x")

    flags = {}
    lower_map = {}
    for c in cps():
        ch = chr(c)
        f = 0
        if len(ws.pre_tokenize_str("a" + ch + "b")) == 2: f |= 1 << 0
        if len(digits.pre_tokenize_str("a" + ch + "b")) == 3: f |= 1 << 1
        if len(punc.pre_tokenize_str("a" + ch + "b")) == 3: f |= 1 << 2
        if len(bert.pre_tokenize_str("a" + ch + "b")) == 3: f |= 1 << 3
        cl = clean.normalize_str(ch)
        if cl == "": f |= 1 << 4
        if cl == " ": f |= 1 << 5
        if strip.normalize_str(ch) == "": f |= 1 << 6
        if x_id not in word.encode(ch + "x").ids: f |= 1 << 7
        if cjk.normalize_str(ch) == " " + ch + " ": f |= 1 << 8
        if bstrip.normalize_str(ch) == "": f |= 1 << 13
        lo = lower.normalize_str(ch)
        if lo != ch:
            lower_map[c] = [ord(k) for k in lo]
        if f:
            flags[c] = f
    for bit, pat in ((9, r"\p{L}"), (10, r"\p{N}"), (11, r"\s"), (12, r"\w")):
        for c in regex_set(pt, Regex, pat):
            flags[c] = flags.get(c, 0) | (1 << bit)

    # Regex classes: Oniguruma's sets against what PCRE2 (Unicode %s, the same tables as
    # this Python's unicodedata) gives for the spelling hf_pretok.c compiles them to.
    import unicodedata
    classes = []
    for cname in CLASSES + ["[%s]" % c for c in CLASSES]:
        # Oniguruma's \w inside a bracket class is not its \w outside one (superscript digits
        # are word characters only outside), so both forms are probed
        br = cname.startswith("[")
        name = cname.strip("[]")
        pat = "\\s" if name == "s" else "\\w" if name == "w" else "\\p{%s}" % name
        onig = regex_set(pt, Regex, "[%s]" % pat if br else pat)
        if name == "s":
            base = set(WHITE_SPACE)
        elif name == "w":
            base = {c for c in cps() if unicodedata.category(chr(c))[0] in "LM" or
                    unicodedata.category(chr(c)) in ("Nd", "Pc")}
        else:
            base = {c for c in cps() if unicodedata.category(chr(c)).startswith(name)}
        classes.append((cname, ranges(onig - base), ranges(base - onig)))

    # two-level table: 4352 blocks of 256 code points, identical blocks shared
    blocks, index = [], []
    seen = {}
    for b in range(0x110000 // 256):
        row = tuple(flags.get(b * 256 + i, 0) for i in range(256))
        if row not in seen:
            seen[row] = len(blocks)
            blocks.append(row)
        index.append(seen[row])

    lines = [
        "/*",
        " * hf_unicode_data.c - GENERATED by tools/tokjson_unicode.py; do not edit.",
        " *",
        " * Character classes of Hugging Face tokenizers %s, probed code point by code point"
        % tokenizers.__version__,
        " * (see the script for each probe), for hf_unicode.c. %d blocks of 256 code points."
        % len(blocks),
        " */",
        '#include "tokenizer/hf_unicode.h"',
        "",
        "const uint16_t hf_uni_index[4352] = {",
    ]
    for i in range(0, len(index), 16):
        lines.append("    " + ", ".join(str(v) for v in index[i:i + 16]) + ",")
    lines.append("};")
    lines.append("")
    lines.append("const uint16_t hf_uni_blocks[%d][256] = {" % len(blocks))
    for row in blocks:
        lines.append("    {")
        for i in range(0, 256, 16):
            lines.append("        " + ", ".join(str(v) for v in row[i:i + 16]) + ",")
        lines.append("    },")
    lines.append("};")
    lines.append("")
    lines.append("/* Lowercase: (code point, first, second, third) sorted; 0 = none. */")
    lines.append("const uint32_t hf_uni_lower[%d][4] = {" % len(lower_map))
    for c in sorted(lower_map):
        v = lower_map[c] + [0] * (3 - len(lower_map[c]))
        assert len(v) == 3, (c, lower_map[c])
        lines.append("    {0x%X, 0x%X, 0x%X, 0x%X}," % (c, v[0], v[1], v[2]))
    lines.append("};")
    lines.append("const int hf_uni_n_lower = %d;" % len(lower_map))
    lines.append("")
    lines.append("/* Regex classes: code points Oniguruma has and PCRE2 (Unicode %s) lacks (add),"
                 % unicodedata.unidata_version)
    lines.append(" * and the other way round (sub), as [first, last] pairs. */")
    for name, add, sub in classes:
        cid = name.replace("[", "br_").replace("]", "")
        for kind, rs in (("add", add), ("sub", sub)):
            lines.append("static const uint32_t cls_%s_%s[][2] = {%s};" % (
                cid, kind, ", ".join("{0x%X, 0x%X}" % r for r in rs) or "{0, 0}"))
    lines.append("const hf_uni_class hf_uni_classes[] = {")
    for name, add, sub in classes:
        cid = name.replace("[", "br_").replace("]", "")
        lines.append('    {"%s", cls_%s_add, %d, cls_%s_sub, %d},' % (name, cid, len(add), cid,
                                                                     len(sub)))
    lines.append("    {NULL, NULL, 0, NULL, 0},")
    lines.append("};")
    lines.append('const char hf_uni_pcre2_unicode[] = "%s";' % unicodedata.unidata_version)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("tokjson_unicode: %d flagged code points, %d blocks, %d lowercase -> %s"
          % (len(flags), len(blocks), len(lower_map), os.path.relpath(args.out, ROOT)))


if __name__ == "__main__":
    main()
