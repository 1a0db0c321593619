#!/usr/bin/env python3
"""tokjson_golden.py - goldens of Hugging Face `tokenizers` for hearth's tokenizer.json front end
(tests/unit/test_tokjson.c).

The oracle is tokenizers' Tokenizer.from_file(tokenizer.json) with truncation and padding
switched off (hearth does not apply them, as transformers overrides them on every call). For
every line of tests/golden/tokjson/corpus.txt (split on b"\\n") and of invalid.txt (\\xHH
escapes turned into raw bytes; the oracle gets bytes.decode("utf-8", "replace"), which is what
hearth does with invalid UTF-8), it records

  * the ids of encode(text, add_special_tokens=A) with encode_special_tokens = not P, for the
    four (A, P) modes, as (FNV-1a 64 of the int32 little-endian ids, count);
  * decode(ids of (1, 1), skip_special_tokens=S) for S = True and False, as (FNV of the UTF-8,
    byte count);
  * for the real models (--full), the ids of mode (0, 1) in full;
and, for every 7th line i, the pair encode((line i, line i+1)) with add_special_tokens 1 and 0.

Format (one record per line, fields separated by one space; '#' lines are comments):
  tokenizer_fnv HEX           FNV-1a 64 of the tokenizer.json bytes
  corpus_fnv HEX / invalid_fnv HEX   of the two corpus files
  L|V IDX N00 N01 N10 N11 HI ND0 ND1 HD
        a corpus (L) or invalid (V) line: the id counts of the four modes, HI the FNV-1a 64 of
        (for each mode: u32 LE count, then the ids as int32 LE), the byte counts of the two
        decodes (skip_special_tokens True, False) and HD the FNV of (u32 LE length + bytes) of
        each
  I ID...                     the full ids of mode (0, 1) of the line above (--full only)
  P IDX N1 N0 H               the pair (IDX, IDX + 1), add_special 1 and 0, parse_special 1;
                              H over (u32 count + ids) of each
  end

Usage:
  python tools/tokjson_golden.py                  every synthetic file of tests/golden/tokjson/synth
  python tools/tokjson_golden.py --name minilm --full PATH/tokenizer.json
Needs tokenizers (requirements/tokjson.txt); commit the goldens with the corpus they were made from.
"""
import argparse
import datetime
import glob
import hashlib
import os
import shlex
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIR = os.path.join(ROOT, "tests", "golden", "tokjson")
MODES = ((0, 0), (0, 1), (1, 0), (1, 1))
PAIR_EVERY = 7


def fnv1a64(data, h=0xCBF29CE484222325):
    for b in data:
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def unescape(line):
    out, i = bytearray(), 0
    while i < len(line):
        if line[i:i + 2] == b"\\x":
            out.append(int(line[i + 2:i + 4], 16))
            i += 4
        elif line[i:i + 2] == b"\\\\":
            out.append(0x5C)
            i += 2
        else:
            out.append(line[i])
            i += 1
    return bytes(out)


def lines_of(data):
    ls = data.split(b"\n")
    if ls and ls[-1] == b"":
        ls.pop()
    return ls


def write_golden(name, path, full, source, argv):
    import tokenizers
    from tokenizers import Tokenizer

    with open(path, "rb") as f:
        tj = f.read()
    tok = Tokenizer.from_str(tj.decode("utf-8"))
    tok.no_truncation()
    tok.no_padding()
    with open(os.path.join(DIR, "corpus.txt"), "rb") as f:
        corpus = f.read()
    with open(os.path.join(DIR, "invalid.txt"), "rb") as f:
        invalid = f.read()
    out = [
        "# hearth tokenizer.json golden for %s, written by tools/tokjson_golden.py; do not edit." % name,
        "# oracle: tokenizers %s, Tokenizer.from_str, no truncation / padding" % tokenizers.__version__,
        "# tokenizer.json: %s, sha256 %s" % (source, hashlib.sha256(tj).hexdigest()),
        "# corpus: tests/golden/tokjson/corpus.txt sha256 %s, invalid.txt sha256 %s"
        % (hashlib.sha256(corpus).hexdigest(), hashlib.sha256(invalid).hexdigest()),
        "# command: %s" % " ".join(shlex.quote(a) for a in argv),
        "# date: %s" % datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "tokenizer_fnv %016x" % fnv1a64(tj),
        "corpus_fnv %016x" % fnv1a64(corpus),
        "invalid_fnv %016x" % fnv1a64(invalid),
    ]
    texts = [("L", l.decode("utf-8")) for l in lines_of(corpus)]
    texts += [("V", unescape(l).decode("utf-8", "replace")) for l in lines_of(invalid)]

    def enc(text, a, p, pair=None):
        tok.encode_special_tokens = not p
        e = tok.encode(text, pair, add_special_tokens=bool(a)) if pair is not None else \
            tok.encode(text, add_special_tokens=bool(a))
        return e.ids

    def u32(n):
        return n.to_bytes(4, "little")

    def packed(ids):
        return u32(len(ids)) + b"".join(i.to_bytes(4, "little", signed=True) for i in ids)

    idx = {"L": 0, "V": 0}
    for kind, text in texts:
        i = idx[kind]
        idx[kind] += 1
        ids = {(a, p): enc(text, a, p) for a, p in MODES}
        decs = [tok.decode(ids[1, 1], skip_special_tokens=skip).encode("utf-8")
                for skip in (True, False)]
        rec = [kind, str(i)] + [str(len(ids[m])) for m in MODES]
        rec.append("%016x" % fnv1a64(b"".join(packed(ids[m]) for m in MODES)))
        rec += [str(len(d)) for d in decs]
        rec.append("%016x" % fnv1a64(b"".join(u32(len(d)) + d for d in decs)))
        out.append(" ".join(rec))
        if full:
            out.append(" ".join(["I"] + [str(x) for x in ids[0, 1]]))
    lines = [t for k, t in texts if k == "L"]
    for i in range(0, len(lines) - 1, PAIR_EVERY):
        pair = [enc(lines[i], a, 1, lines[i + 1]) for a in (1, 0)]
        out.append("P %d %d %d %016x" % (i, len(pair[0]), len(pair[1]),
                                         fnv1a64(b"".join(packed(x) for x in pair))))
    out.append("end")
    dst = os.path.join(DIR, name + ".golden")
    with open(dst, "w") as f:
        f.write("\n".join(out) + "\n")
    print("tokjson_golden: %s: %d lines -> %s" % (name, len(texts), os.path.relpath(dst, ROOT)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--name", help="golden name for a single tokenizer.json given as PATH")
    ap.add_argument("--full", action="store_true", help="also record the ids in full")
    ap.add_argument("--source", default=None, help="where PATH came from (for the header)")
    ap.add_argument("path", nargs="?")
    args = ap.parse_args()
    home = os.path.expanduser("~")
    argv = ["tools/tokjson_golden.py"] + ["~" + a[len(home):] if a.startswith(home + "/") else a
                                          for a in sys.argv[1:]]
    if args.name:
        write_golden(args.name, args.path, args.full, args.source or os.path.basename(args.path),
                     argv)
        return
    for path in sorted(glob.glob(os.path.join(DIR, "synth", "*.json"))):
        name = os.path.splitext(os.path.basename(path))[0]
        write_golden("synth_" + name, path, args.full,
                     "tests/golden/tokjson/synth/%s.json (tools/make_tokjson_synth.py)" % name, argv)


if __name__ == "__main__":
    main()
