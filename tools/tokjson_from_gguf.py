#!/usr/bin/env python3
"""tokjson_from_gguf.py - the tokenizer.json that Hugging Face transformers makes from a GGUF.

hearth's tokenizer.json conformance test compares hearth with `tokenizers` on the tokenizers of
the starter models. Those files derive from the models, so they are not committed: this script
builds them from the GGUFs with transformers (AutoTokenizer.from_pretrained(dir, gguf_file=...)
then save_pretrained), into the hearth cache, where tests/unit/test_tokjson.c looks for them:

  ${XDG_CACHE_HOME:-~/.cache}/hearth/tokjson/{smollm2,gemma3}/tokenizer.json

(HEARTH_TOKJSON_DIR overrides the folder). The goldens in tests/golden/tokjson/{smollm2,
gemma3}.golden record the FNV of the file they were made from; a file made by another
transformers version that differs makes the test skip those two, saying so.
transformers and torch are not in the test venv: run this with a Python that has them
(requirements/transformers.txt), e.g. from scripts/setup.sh with HEARTH_TRANSFORMERS_PYTHON set.

Usage: PY tools/tokjson_from_gguf.py [--models smollm2,gemma3] [--out DIR]
Model paths: HEARTH_SMOLLM2_GGUF / HEARTH_GEMMA3_GGUF, else scripts/model-path.sh.
"""
import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cache_dir():
    d = os.environ.get("HEARTH_TOKJSON_DIR")
    if d:
        return d
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "hearth", "tokjson")


def model_path(name):
    env = os.environ.get("HEARTH_%s_GGUF" % name.upper())
    if env:
        return env
    out = subprocess.run([os.path.join(ROOT, "scripts", "model-path.sh"), name],
                         capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit("tokjson_from_gguf: no path for %s: %s" % (name, out.stderr.strip()))
    return out.stdout.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="smollm2,gemma3")
    ap.add_argument("--out", default=cache_dir())
    args = ap.parse_args()
    import transformers
    from transformers import AutoTokenizer

    for name in args.models.split(","):
        path = model_path(name)
        dst = os.path.join(args.out, name)
        os.makedirs(dst, exist_ok=True)
        tok = AutoTokenizer.from_pretrained(os.path.dirname(path),
                                            gguf_file=os.path.basename(path))
        tok.save_pretrained(dst)
        print("tokjson_from_gguf: %s (transformers %s) -> %s"
              % (name, transformers.__version__, os.path.join(dst, "tokenizer.json")))


if __name__ == "__main__":
    main()
