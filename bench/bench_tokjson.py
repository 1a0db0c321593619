#!/usr/bin/env python3
"""bench_tokjson.py - hearth's tokenizer.json encoder against Hugging Face tokenizers, one thread,
same corpus, same run.

Runs build/bench_tokjson (bench/bench_tokjson.c; see its top comment to build it) on each
tokenizer.json, then tokenizers' Tokenizer.encode on the same text with one thread
(RAYON_NUM_THREADS=1, TOKENIZERS_PARALLELISM=false, set before tokenizers is imported), and
prints MB/s of input for both and the ratio hearth / tokenizers:
  lines  every line of the text encoded on its own (add_special_tokens=True): the chat shape;
         tokenizers pays a Python call per line, so its whole-text number is shown too
  whole  the text as one string
The token counts of both sides are printed too: they must agree (the conformance test checks
the ids themselves). Measurements, never assertions.

Usage: PY bench/bench_tokjson.py [--bin build/bench_tokjson] [--text FILE] TOKENIZER.json...
PY needs tokenizers (requirements/tokjson.txt).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

os.environ["RAYON_NUM_THREADS"] = "1"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def measure(fn, nbytes):
    rates, spent = [], 0.0
    while len(rates) < 3 or spent < 0.3:
        t0 = time.perf_counter()
        n_tok = fn()
        dt = time.perf_counter() - t0
        spent += dt
        rates.append(nbytes / 1e6 / dt)
    return statistics.median(rates), n_tok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bench_tokjson"))
    ap.add_argument("--text", default=os.path.join(ROOT, "tests", "golden", "tokjson", "corpus.txt"))
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    import tokenizers
    from tokenizers import Tokenizer

    with open(args.text, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8", "replace")
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    lines = [l.decode("utf-8", "replace") for l in lines]
    print("tokenizers %s, one thread; text %s (%d bytes, %d lines)"
          % (tokenizers.__version__, os.path.relpath(args.text, ROOT), len(raw), len(lines)))
    print("%-28s %6s %9s %9s %7s   %9s %9s %7s  %9s" % (
        "tokenizer", "", "hearth", "tokenizrs", "ratio", "hearth", "tokenizrs", "ratio",
        "tok(all)"))
    print("%-28s %6s %9s %9s %7s   %9s %9s %7s  %9s" % (
        "", "", "lines", "lines", "", "whole", "whole", "", "whole"))
    for path in args.files:
        out = subprocess.run([args.bin, path, args.text], capture_output=True, text=True, check=True)
        h = json.loads([l for l in out.stdout.splitlines() if l.startswith("{")][-1])
        tok = Tokenizer.from_file(path)
        tok.no_truncation()
        tok.no_padding()
        tok.encode_special_tokens = False
        lines_mbs, lines_tok = measure(
            lambda: sum(len(tok.encode(l).ids) for l in lines), len(raw))
        whole_mbs, whole_tok = measure(lambda: len(tok.encode(text).ids), len(raw))
        name = os.path.basename(os.path.dirname(path)) + "/" + os.path.basename(path)
        print("%-28s %6s %9.2f %9.2f %6.2fx   %9.2f %9.2f %6.2fx  %9s" % (
            name[-28:], "MB/s", h["lines_mbs"], lines_mbs, h["lines_mbs"] / lines_mbs,
            h["whole_mbs"], whole_mbs, h["whole_mbs"] / whole_mbs,
            "same" if (h["lines_tokens"], h["whole_tokens"]) == (lines_tok, whole_tok)
            else "DIFFER"))
        print("%-28s load %.1f ms, decode %.1f MB/s" % ("", h["load_ms"], h["decode_mbs"]))


if __name__ == "__main__":
    sys.exit(main())
