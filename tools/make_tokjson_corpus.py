#!/usr/bin/env python3
"""make_tokjson_corpus.py - the tokenizer.json conformance corpus (tests/golden/tokjson/).

Writes, deterministically (seeded), from hearth's own word lists and templates below:
  corpus.txt   UTF-8 text, one case per line (>= 200 KB): the lines of tests/golden/tok/corpus.txt,
               then English prose, source code, CJK, emoji (skin tones, ZWJ families, flags,
               keycaps), combining marks and compatibility forms, RTL text, whitespace runs,
               digits in many scripts, control characters, special-token look-alikes, long lines
               and runs of characters from many scripts;
  invalid.txt  lines with invalid UTF-8, written with \\xHH escapes (and \\\\ for a backslash);
               the C test and tools/tokjson_golden.py unescape them to the raw bytes.
Commit both with the goldens made from them (tools/tokjson_golden.py). It also writes the seeds
of fuzz/fuzz_tokenizer.c into fuzz/corpus/tokenizer/: text seeds (first byte: which of the
fuzzer's tokenizers) and tokenizer.json seeds (first byte 0xFF).

Usage: python3 tools/make_tokjson_corpus.py
"""
import os
import random

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "golden", "tokjson")
R = random.Random(20261130)

NOUNS = ("lighthouse keeper harbour ferry lantern storm gull net rope anchor tide island village "
         "baker river bridge mountain valley engine compiler kernel thread buffer packet socket "
         "server client request token model vocabulary merge sentence paragraph window kitchen "
         "garden teacher student library notebook pencil question answer morning evening winter "
         "summer cloud forest meadow wolf fox owl sparrow orchard cellar staircase chimney").split()
VERBS = ("counted carried watched mended painted followed crossed opened closed measured parsed "
         "tokenized merged compiled scheduled cached streamed rendered wrote read sang built "
         "climbed dropped lifted guarded traced answered asked found lost kept").split()
ADJS = ("quiet old brisk narrow bright salty heavy patient careful sudden distant golden broken "
        "hidden little enormous gentle crooked silver wooden restless idle eager").split()
ADVS = "slowly quickly twice again carefully never always barely nearly suddenly".split()
NAMES = "Ada Brin Cato Dara Elio Fenn Greta Hugo Ines Joss Kira Lorn Mika Nell Oren Pia".split()
CONTR = ["don't", "isn't", "we'll", "you're", "they've", "I'm", "it's", "she'd", "O'Brien",
         "rock 'n' roll", "'quoted'", "DON'T", "It'S", "y'all"]
PUNCT = [".", "!", "?", "...", ";", ":", " -", " --", ",", "?!", "\u2026", "\u201d"]


def sentence():
    w = [R.choice(NAMES), R.choice(VERBS), "the", R.choice(ADJS), R.choice(NOUNS)]
    if R.random() < 0.5:
        w += [R.choice(["near", "under", "beside", "after", "before"]), "the", R.choice(NOUNS)]
    if R.random() < 0.3:
        w.insert(2, R.choice(ADVS))
    if R.random() < 0.25:
        w.append(R.choice(CONTR))
    if R.random() < 0.2:
        w[R.randrange(len(w))] = w[R.randrange(len(w))].upper()
    if R.random() < 0.2:
        w.append(str(R.randrange(0, 100000)))
    s = " ".join(w)
    return s[0].upper() + s[1:] + R.choice(PUNCT)


def prose(n):
    return [" ".join(sentence() for _ in range(R.randrange(1, 6))) for _ in range(n)]


CODE = [
    "int main(int argc, char **argv) {", "    for (size_t i = 0; i < n; i++) sum += a[i] * b[i];",
    "\tif (!p) return HEARTH_E_NOMEM;", "    return x >> 3 | (y & 0xFF) << 8;", "}",
    "def tokenize(text: str) -> list[int]:", "    return [vocab.get(w, UNK) for w in text.split()]",
    "        raise ValueError(f\"bad token {tok!r} at {i}\")", "import numpy as np  # noqa: E402",
    "const xs = [1, 2, 3].map((x) => x ** 2).filter(Boolean);", "let s = `${a}+${b}=${a + b}`;",
    "SELECT id, name FROM users WHERE age >= 18 ORDER BY name DESC LIMIT 10;",
    "for f in *.txt; do wc -l \"$f\"; done | sort -n | tail -3", "x = {\"key\": [1, 2.5, null, true]}",
    "fn merge(a: &str, b: &str) -> String { format!(\"{a}{b}\") }", "#include <stdio.h>",
    "    # TODO(hearth): handle \\r\\n line endings", "<div class=\"row\"><span>&amp;&lt;&gt;</span></div>",
    "    while (*p && *p != '\\n') p++;", "a_b_c = snake_case_name__with__doubles_",
    "CamelCaseIdentifierWithHTTPServer2Xml", "0x1F600 0b1010 0o777 1e-9 3.14159 -42 +7",
    "    }", "        ", "\t\t\treturn;", "//   comment with    spaces", "/* block */ /** doc **/",
    "if a!=b and c<=d or e>=f: pass", "x += 1; y -= 2; z *= 3; w /= 4; v %= 5; u **= 6",
    "path = r\"C:\\Users\\hearth\\file.txt\"", "url = \"https://example.org/a?b=c&d=%20e#frag\"",
]


def code(n):
    out = []
    for _ in range(n):
        k = R.randrange(1, 4)
        line = " ".join(R.choice(CODE) for _ in range(k))
        if R.random() < 0.3:
            line = R.choice(["    ", "\t", "        ", "  "]) + line
        out.append(line)
    return out


CJK_WORDS = ["灯塔", "守护者", "港口", "风暴", "海鸥", "今天", "天气", "很好", "我们", "一起", "学习",
             "分词器", "模型", "数据", "东京", "日本語", "ひらがな", "カタカナ", "です", "ました", "こんにちは",
             "世界", "한국어", "안녕하세요", "감사합니다", "토크나이저", "〇", "々", "〆", "龍", "鬱", "𠀀", "𪚥",
             "（括号）", "「引用」", "、", "。", "！", "？", "：", "；", "·", "《书名》", "１２３", "ＡＢＣ"]


def cjk(n):
    return ["".join(R.choice(CJK_WORDS) for _ in range(R.randrange(3, 20))) for _ in range(n)]


EMOJI = ["😀", "😂", "🥰", "🫠", "🫨", "👍", "👍🏻", "👍🏿", "👋🏽", "❤️", "❤", "✨", "🔥", "🚀", "🌍",
         "👨‍👩‍👧‍👦", "👩‍💻", "👩🏽‍💻", "🏳️‍🌈", "🏴‍☠️", "🧑‍🤝‍🧑", "👁️‍🗨️", "🇫🇷", "🇯🇵", "🇺🇸",
         "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "1️⃣", "#️⃣", "*️⃣", "©️", "™", "☕", "⚽", "🐈‍⬛", "🦊", "🍕", "🎉", "💯", "🤷‍♀️",
         "🙇🏾‍♂️", "🧘🏻‍♀️", "👯‍♂️", "🫶🏼", "🪿", "🩷"]


def emoji(n):
    out = []
    for _ in range(n):
        parts = []
        for _ in range(R.randrange(1, 10)):
            parts.append(R.choice(EMOJI) if R.random() < 0.6 else R.choice(NOUNS))
        out.append(R.choice(["", " "]).join(parts))
    return out


MARKS = ["e\u0301", "a\u0300", "o\u0308", "n\u0303", "c\u0327", "u\u031b\u0309", "i\u0307",
         "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e\u0349",
         "\u0301leading mark", "é", "è", "ö", "ñ", "ç", "ứ", "Å", "Å", "ﬁ", "ﬂ", "ﬃ", "Ａｂｃ",
         "ｶﾀｶﾅ", "²", "³", "¼", "Ⅻ", "ⅷ", "①", "⑳", "㍿", "㎏", "™", "℃", "İstanbul", "ısık",
         "straße", "STRASSE", "ΣΊΣΥΦΟΣ", "σοφός", "Ωμέγα", "Ǆ", "ǅ", "ǆ", "ᾼ", "ﬀ", "K", "Å",
         "Ⓐ", "𝐀𝐁𝐂", "𝔥𝔢𝔞𝔯𝔱𝔥", "x\u20d7", "a\u0363", "ᄀ\u1161\u11a8", "각", "ｈｅｌｌｏ", "Ⅸ",
         "ŉ", "ǰ", "ẞ", "ß", "Ḱ", "ḱ", "ﾞ", "ﾟ", "゙", "が", "か\u3099", "\u0915\u093c", "क़",
         "Ṩ", "s\u0323\u0307", "s\u0307\u0323", "\u1e9b\u0323", "Ⅰ", "ⅰ", "ǈ"]


def marks(n):
    return [" ".join(R.choice(MARKS) + R.choice(["", R.choice(NOUNS)])
                     for _ in range(R.randrange(2, 12))) for _ in range(n)]


RTL = ["مرحبا بالعالم", "السلام عليكم", "كِتَابٌ", "العربية ١٢٣ ٤٥٦", "שלום עולם", "עִבְרִית",
       "\u200fright-to-left mark\u200e", "فارسی ۱۲۳", "اردو", "ܫܠܡܐ", "ދިވެހި", "abc مرحبا def",
       "\u202eoverride\u202c", "\u2067isolate\u2069", "هذا نص عربي مع English words و 2024"]


def rtl(n):
    return [" ".join(R.choice(RTL) for _ in range(R.randrange(1, 6))) for _ in range(n)]


SPACES = [" ", "  ", "   ", "\t", "\t\t", " \t ", "\u00a0", "\u3000", "\u2003", "\u2009", "\u200b",
          "\ufeff", "\u000b", "\u000c", "\u0085", "\u2028", "\u2029", "\u202f", "\u205f", "\u1680",
          "\u180e", "\r", "        ", " " * 17, "\u2800"]


def spaces(n):
    out = []
    for _ in range(n):
        parts = []
        for _ in range(R.randrange(2, 12)):
            parts.append(R.choice(SPACES) if R.random() < 0.5 else R.choice(NOUNS + NAMES))
        out.append("".join(parts))
    out += [" leading", "trailing ", "  both  ", " ", "\t", "\u3000", "a" + " " * 40 + "b"]
    return out


DIGITS = ["0", "7", "42", "123", "2024", "3.14159", "1,000,000", "1e10", "-273.15", "+49 30 1234567",
          "٠١٢٣٤٥٦٧٨٩", "۰۱۲۳", "०१२३४", "০১২", "๑๒๓", "１２３４", "①②③", "¹²³", "½", "Ⅳ",
          "𝟘𝟙𝟚", "12345678901234567890", "0000", "v1.2.3", "2024-11-30T01:07:31Z", "#123", "$9.99",
          "50%", "3rd", "10x", "0.0001", "1/2", "९९", "〇一二三"]


def digits(n):
    return [" ".join(R.choice(DIGITS) for _ in range(R.randrange(1, 12))) for _ in range(n)]


LOOKALIKES = ["<|im_start|>user hello<|im_end|>", "<|endoftext|>", "<|im_start|>", "<|im_end|>",
              "<|im_sta", "im_end|>", "<s>", "</s>", "<s >", "<<s>>", "<unk>", "<pad>", "<bos>", "<eos>",
              "<start_of_turn>model", "<end_of_turn>", "[CLS]", "[SEP]", "[MASK]", "[UNK]", "[PAD]",
              "[cls]", "<mask>", "x<mask>y", " <mask> ", "<mask>,", "(<mask>)", "<0x41>", "<0xE2><0x82>",
              "▁hello", "▁▁", "##ing", "Ġthe", "Ċ", "<|begin|>", "<|sep|>", "<tool>", " <tool> ",
              "a<tool>b", "<|begin|><|begin|>", "<|BEGIN|>", "<Tool>", "  <|sep|>  ", "<|sep|",
              "<think>", "</think>", "<|user|>", "<|assistant|>", "<|fim_prefix|>", "<image>"]


def lookalikes(n):
    out = list(LOOKALIKES)
    for _ in range(n):
        out.append("".join(R.choice(LOOKALIKES + [" ", "  ", "word", "Hello", "\t"])
                           for _ in range(R.randrange(2, 9))))
    return out


CONTROL = ["\x00", "\x01", "\x07", "\x1b[31mred\x1b[0m", "\x7f", "\x08", "\u0080", "\u009f", "\u00ad",
           "\u200d", "\u200c", "\u2060", "\ue000", "\U000f0000", "\ufffd", "\ufffc", "\U0001d173"]


def control(n):
    return ["".join(R.choice(CONTROL) if R.random() < 0.4 else R.choice(NOUNS)
                    for _ in range(R.randrange(2, 8))) for _ in range(n)]


# Code point ranges of assigned characters of many scripts (Unicode 14 and earlier).
SCRIPTS = [(0x41, 0x5A), (0x61, 0x7A), (0xC0, 0x24F), (0x370, 0x3FF), (0x400, 0x4FF), (0x531, 0x556),
           (0x5D0, 0x5EA), (0x620, 0x64A), (0x905, 0x939), (0x985, 0x9B9), (0xE01, 0xE30),
           (0x10A0, 0x10C5), (0x1100, 0x1112), (0x3041, 0x3096), (0x30A1, 0x30FA), (0x4E00, 0x4FFF),
           (0xAC00, 0xAD00), (0x2000, 0x206F), (0x2190, 0x21FF), (0x2200, 0x22FF), (0x2500, 0x257F),
           (0x1F300, 0x1F5FF), (0x1F900, 0x1F9FF), (0x20A0, 0x20C0), (0x1D400, 0x1D4FF)]


def scripts(n):
    out = []
    for _ in range(n):
        lo, hi = R.choice(SCRIPTS)
        s = "".join(chr(R.randrange(lo, hi + 1)) for _ in range(R.randrange(3, 40)))
        if R.random() < 0.5:
            s = R.choice(NOUNS) + " " + s + " " + R.choice(NOUNS)
        out.append(s)
    return out


def longlines():
    return [" ".join(sentence() for _ in range(60)), "x" * 3000, "ab" * 1500, "😀" * 300,
            "9" * 1000, "- " * 800, "\t" * 200 + "end", "あ" * 1000, "a\u0301" * 400]


def invalid():
    cases = [b"\xff", b"abc\xffdef", b"\xc3", b"\xc3(", b"\xe2\x82", b"\xe2\x82(", b"\xf0\x9f\x98",
             b"\xf0\x9f\x98 ok", b"\xed\xa0\x80 surrogate", b"\xc0\xaf overlong", b"\xe0\x80\xaf",
             b"\xf4\x90\x80\x80 too big", b"\xf8\x88\x80\x80\x80", b"\x80\x80\x80", b"caf\xe9",
             b"\xfe\xff BOM-ish", b"<|im_start|>\xff<|im_end|>", b"[CLS]\x80[SEP]", b"\xe9t\xe9",
             b"mixed \xe2\x82\xac ok \xe2\x82 bad", b"\x00\xff\x00", b"\xc2", b"\xc2\xa0\xc2",
             b"\xf0\x90\x80", b"\xf0\x90\x80\x80", b"\xef\xbb\xbfBOM", b"\xcc\x81 lone mark"]
    for _ in range(40):
        s = bytearray(R.choice(NOUNS).encode())
        for _ in range(R.randrange(1, 4)):
            s.insert(R.randrange(len(s) + 1), R.randrange(0x80, 0x100))
        cases.append(bytes(s))
    out = []
    for c in cases:
        out.append("".join(chr(b) if 0x20 <= b < 0x7F and b != 0x5C else "\\x%02x" % b for b in c))
    return out


FUZZ_TEXTS = [b"Hello world, the keeper's lantern.", b"<|x|> <tool> mask x<tool>y masked",
              b"[CLS] hello [MASK] world [SEP] don't", b"<bos><start> 11 ab a.b, ab!",
              "東京 é e\u0301 ＡＢＣ ① 😀👨\u200d👩\u200d👧 مرحبا".encode(), b"\xff\xc3(\xe2\x82 ok",
              b"   \t\n  \r\n spaces  ", b"12345 3.14 \xd9\xa3\xd9\xa4", b"", b"\x00a\x00",
              b"\xe2\x96\x81\xe2\x96\x81ab", b"<0x41><0xE2>"]
FUZZ_JSON = [
    b'{"model":{"type":"WordPiece","unk_token":"[UNK]","vocab":{"[UNK]":0,"a":1,"##b":2}}}',
    b'{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]},"pre_tokenizer":'
    b'{"type":"Split","pattern":{"Regex":"\\\\s+"},"behavior":"Removed","invert":false}}',
    b'{"model":{"type":"Unigram","unk_id":0,"vocab":[["<unk>",0],["a",-1],["ab",-1.5]]},'
    b'"normalizer":{"type":"Sequence","normalizers":[{"type":"NFKD"},{"type":"StripAccents"}]}}',
    b'{"model":{"type":"BPE","vocab":{"a":0},"merges":["a a"]}}',
    b'{"model":{"type":"WordLevel","vocab":{}}}', b'{"model":', b"[]",
    b'{"added_tokens":[{"id":5,"content":"<s>","special":true,"lstrip":true}],"model":'
    b'{"type":"WordPiece","unk_token":"[UNK]","vocab":{"[UNK]":0,"a":1}},"decoder":'
    b'{"type":"Strip","content":" ","start":3,"stop":3}}',
]


def fuzz_seeds():
    d = os.path.join(ROOT, "fuzz", "corpus", "tokenizer")
    os.makedirs(d, exist_ok=True)
    k = 0
    for sel in range(4):
        for t in FUZZ_TEXTS:
            with open(os.path.join(d, "seed_text_%d_%02d" % (sel, k)), "wb") as f:
                f.write(bytes([sel]) + t)
            k += 1
    for i, j in enumerate(FUZZ_JSON):
        with open(os.path.join(d, "seed_json_%02d" % i), "wb") as f:
            f.write(b"\xff" + j)


def main():
    with open(os.path.join(ROOT, "tests", "golden", "tok", "corpus.txt"), encoding="utf-8") as f:
        base = f.read().split("\n")
    if base and base[-1] == "":
        base.pop()
    lines = base + prose(700) + code(500) + cjk(250) + emoji(200) + marks(250) + rtl(150) + \
        spaces(200) + digits(200) + lookalikes(200) + control(80) + scripts(250) + longlines()
    lines += prose(300)
    assert all("\n" not in l for l in lines)
    text = "\n".join(lines) + "\n"
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "corpus.txt"), "w", encoding="utf-8", newline="") as f:
        f.write(text)
    with open(os.path.join(OUT, "invalid.txt"), "w", encoding="ascii", newline="") as f:
        f.write("\n".join(invalid()) + "\n")
    fuzz_seeds()
    print("make_tokjson_corpus: %d lines, %d bytes" % (len(lines), len(text.encode())))


if __name__ == "__main__":
    main()
