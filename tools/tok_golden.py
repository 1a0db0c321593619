#!/usr/bin/env python3
"""tok_golden.py - tokenizer goldens from llama.cpp, for tests/unit/test_tokenizer.c.

llama.cpp (llama-cpp-python, the model loaded with vocab_only=True) is the oracle: hearth must
give the ids llama.cpp gives for the same GGUF, because those are the ids the models were run
with. For each starter model this writes tests/golden/tok/NAME.txt with, for every case:

  * the ids of llama_tokenize(text, add_special, parse_special) for the four combinations
    (blocks and the whole file: (0,0) and (1,1) only);
  * llama_detokenize(ids, remove_special=False, unparse_special=special) of the (0,0) ids with
    special=0 and of the (1,1) ids with special=0 and special=1.

The cases are every line of tests/golden/tok/corpus.txt without its newline, blocks of 16
consecutive lines with their newlines, the whole file, and a few inline strings (\\r\\n, empty,
lone spaces) that a committed text file should not carry. Per model it also records the
vocab size, BOS/EOS and the add_bos flag, the end-of-generation ids (llama_vocab_is_eog), a
digest of the control-token ids (llama_vocab_is_control) and digests of every token's piece
(llama_token_to_piece, special = 0 and 1).

Format (text, one record per line, fields separated by one space; '#' lines are comments):

  corpus_fnv HEX            FNV-1a 64 of corpus.txt (the C test refuses a stale golden)
  vocab N bos B eos E add_bos A
  eog K ID...
  control K FNV             K control ids; FNV over their int32 little-endian bytes
  pieces S FNV              FNV over, for each id, u32 LE length + the piece bytes
  case span OFF LEN         a byte range of corpus.txt
  case hex HEX              an inline text
  enc AS PS N ID...         ids of the case above (2 or 4 such lines)
  dec AS PS SP HEX          detokenized ids of (AS, PS), special rendering SP
  end

FNV-1a 64: offset 0xcbf29ce484222325, prime 0x100000001b3.

Usage: .venv/bin/python tools/tok_golden.py [--models smollm2,gemma3] [--out DIR]
Models come from HEARTH_SMOLLM2_GGUF / HEARTH_GEMMA3_GGUF, else scripts/model-path.sh.
Commit the files it writes together with any change to corpus.txt.
"""

import argparse
import ctypes
import datetime
import hashlib
import os
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DEFAULT = os.path.join(ROOT, "tests", "golden", "tok")
CORPUS = os.path.join(ROOT, "tests", "golden", "tok", "corpus.txt")
BLOCK_LINES = 16
ALL_MODES = ((0, 0), (0, 1), (1, 0), (1, 1))
TWO_MODES = ((0, 0), (1, 1))

INLINE_CASES = [
    b"",
    b" ",
    b"  ",
    b"\n",
    b"\n\n\n",
    b"\t",
    b"Hello\r\nWorld\r\n",
    b"a\rb\r\rc",
    b" \r\n \r\n",
    b"line one\n\n\nline four\n",
    b"trailing newline\n",
    b"'s",
    b"<|im_start|><|im_end|>",
    b"<start_of_turn><end_of_turn>",
    b"\xe2\x96\x81already\xe2\x96\x81escaped",
    b"x" * 2000,
    b" " * 70 + b"x",
    b"\n" * 40 + b"x",
    b"9" * 100,
]


def fnv1a64(data, h=0xCBF29CE484222325):
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def model_path(name):
    env = os.environ.get("HEARTH_%s_GGUF" % name.upper())
    if env:
        return env
    out = subprocess.run([os.path.join(ROOT, "scripts", "model-path.sh"), name],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("tok_golden: no path for %s: %s" % (name, out.stderr.strip()))
    return out.stdout.strip()


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def ggml_build_info(llama_cpp):
    info = {}
    lib = os.path.join(os.path.dirname(llama_cpp.__file__), "lib", "libggml-base.so")
    try:
        g = ctypes.CDLL(lib)
        for fn in ("ggml_version", "ggml_commit"):
            f = getattr(g, fn)
            f.restype = ctypes.c_char_p
            info[fn] = f().decode()
    except (OSError, AttributeError):
        pass
    return info


class Oracle:
    def __init__(self, llama_cpp, path):
        self.lc = llama_cpp
        self.llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
        self.vocab = llama_cpp.llama_model_get_vocab(self.llm._model.model)
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(self.vocab)

    def tokenize(self, text, add_special, parse_special):
        lc = self.lc
        cap = len(text) + 16
        while True:
            buf = (lc.llama_token * cap)()
            n = lc.llama_tokenize(self.vocab, text, len(text), buf, cap, add_special, parse_special)
            if n >= 0:
                return list(buf[:n])
            cap = -n

    def detokenize(self, ids, special):
        lc = self.lc
        arr = (lc.llama_token * max(1, len(ids)))(*ids)
        cap = 64 + 8 * len(ids)
        while True:
            buf = ctypes.create_string_buffer(cap)
            n = lc.llama_detokenize(self.vocab, arr, len(ids), buf, cap, False, special)
            if n >= 0:
                return buf.raw[:n]
            cap = -n + 1

    def piece(self, tid, special):
        cap = 64
        while True:
            buf = ctypes.create_string_buffer(cap)
            n = self.lc.llama_token_to_piece(self.vocab, tid, buf, cap, 0, special)
            if n >= 0:
                return buf.raw[:n]
            cap = -n


def cases(corpus):
    """(kind, value, text, modes): every line and inline string in the four (add_special,
    parse_special) modes, 16-line blocks and the whole file in (0,0) and (1,1) only."""
    out = []
    starts = [0]
    for i, b in enumerate(corpus):
        if b == 0x0A:
            starts.append(i + 1)
    lines = [(starts[k], starts[k + 1] - 1 - starts[k]) for k in range(len(starts) - 1)]
    if starts[-1] < len(corpus):  # a last line without newline
        lines.append((starts[-1], len(corpus) - starts[-1]))
    for off, n in lines:
        out.append(("span", (off, n), corpus[off:off + n], ALL_MODES))
    for k in range(0, len(lines), BLOCK_LINES):
        group = lines[k:k + BLOCK_LINES]
        off = group[0][0]
        end = min(group[-1][0] + group[-1][1] + 1, len(corpus))
        out.append(("span", (off, end - off), corpus[off:end], TWO_MODES))
    out.append(("span", (0, len(corpus)), corpus, TWO_MODES))
    for t in INLINE_CASES:
        out.append(("hex", t.hex(), t, ALL_MODES))
    return out


def write_golden(name, path, out_dir, corpus, llama_cpp, argv):
    o = Oracle(llama_cpp, path)
    lc = llama_cpp
    info = ggml_build_info(llama_cpp)
    lines = [
        "# hearth tokenizer golden for %s, written by tools/tok_golden.py; do not edit by hand."
        % name,
        "# oracle: llama-cpp-python %s (ggml %s, commit %s), Llama(vocab_only=True)"
        % (llama_cpp.__version__, info.get("ggml_version", "?"), info.get("ggml_commit", "?")),
        "# model: %s sha256 %s" % (os.path.basename(path), sha256_file(path)),
        "# corpus: tests/golden/tok/corpus.txt sha256 %s" % hashlib.sha256(corpus).hexdigest(),
        "# command: %s" % " ".join(shlex.quote(a) for a in argv),
        "# date: %s" % datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "corpus_fnv %016x" % fnv1a64(corpus),
        "vocab %d bos %d eos %d add_bos %d" % (o.n_vocab, lc.llama_vocab_bos(o.vocab),
                                               lc.llama_vocab_eos(o.vocab),
                                               int(lc.llama_vocab_get_add_bos(o.vocab))),
    ]
    eog = [i for i in range(o.n_vocab) if lc.llama_vocab_is_eog(o.vocab, i)]
    lines.append("eog %d %s" % (len(eog), " ".join(map(str, eog))))
    ctl = [i for i in range(o.n_vocab) if lc.llama_vocab_is_control(o.vocab, i)]
    h = 0xCBF29CE484222325
    for i in ctl:
        h = fnv1a64(i.to_bytes(4, "little", signed=True), h)
    lines.append("control %d %016x" % (len(ctl), h))
    for sp in (0, 1):
        h = 0xCBF29CE484222325
        for i in range(o.n_vocab):
            p = o.piece(i, bool(sp))
            h = fnv1a64(len(p).to_bytes(4, "little") + p, h)
        lines.append("pieces %d %016x" % (sp, h))
    n_cases = 0
    for kind, val, text, modes in cases(corpus):
        if kind == "span":
            lines.append("case span %d %d" % val)
        else:
            lines.append("case hex %s" % val)
        ids = {}
        for a, p in modes:
            ids[a, p] = o.tokenize(text, bool(a), bool(p))
            lines.append("enc %d %d %d %s" % (a, p, len(ids[a, p]), " ".join(map(str, ids[a, p]))))
        for a, p, sp in ((0, 0, 0), (1, 1, 0), (1, 1, 1)):
            lines.append("dec %d %d %d %s" % (a, p, sp, o.detokenize(ids[a, p], bool(sp)).hex()))
        n_cases += 1
    lines.append("end")
    dst = os.path.join(out_dir, name + ".txt")
    with open(dst, "w") as f:
        f.write("\n".join(l.rstrip() for l in lines) + "\n")
    print("tok_golden: %s: %d cases -> %s" % (name, n_cases, os.path.relpath(dst, ROOT)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="smollm2,gemma3")
    ap.add_argument("--out", default=OUT_DEFAULT)
    args = ap.parse_args()
    import llama_cpp  # the oracle; imported late so --help works without it

    with open(CORPUS, "rb") as f:
        corpus = f.read()
    argv = ["tools/tok_golden.py"] + sys.argv[1:]
    for name in args.models.split(","):
        write_golden(name, model_path(name), args.out, corpus, llama_cpp, argv)


if __name__ == "__main__":
    main()
