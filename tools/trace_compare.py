#!/usr/bin/env python3
"""trace_compare.py - line up hearth's and llama.cpp's activations and show the first bit
difference (a debugging tool; dumps by tools/hearth_trace.c and tools/llamacpp_trace.py).

Usage: .venv/bin/python tools/trace_compare.py HEARTH.bin LLAMACPP.npz [--all] [--step S]

For each hearth tensor, in hearth's order, the llama.cpp node of the same key (as f32,
[rows][width]) is compared bit for bit: the count of differing elements, the first one
(row, column, both values, difference in ulps) and max |difference|. Stops at the first
tensor that differs unless --all.
"""
import argparse
import struct
import sys

import numpy as np


def read_hearth(path):
    out = []
    with open(path, "rb") as f:
        while True:
            h = f.read(4)
            if not h:
                break
            (n,) = struct.unpack("<I", h)
            key = f.read(n).decode()
            rows, width = struct.unpack("<qq", f.read(16))
            out.append((key, np.frombuffer(f.read(4 * rows * width), dtype="<f4").reshape(rows, width)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("hearth")
    ap.add_argument("llamacpp")
    ap.add_argument("--all", action="store_true")
    args = ap.parse_args()
    ref = np.load(args.llamacpp)
    for key, h in read_hearth(args.hearth):
        if key not in ref:
            print("%-28s (no llama.cpp node)" % key)
            continue
        r = ref[key].astype(np.float32).reshape(-1)
        if key.endswith("result_output:MUL_MAT"):
            r = r.reshape(-1, h.shape[1])[-h.shape[0]:].reshape(-1)  # rows that asked for logits
        if r.size != h.size:
            print("%-28s shape differs: hearth %s, llama.cpp %d" % (key, h.shape, r.size))
            continue
        hv = h.reshape(-1)
        diff = np.nonzero(hv.view(np.uint32) != r.view(np.uint32))[0]
        if diff.size == 0:
            print("%-28s identical (%d)" % (key, hv.size))
            continue
        i = int(diff[0])
        ulps = int(hv.view(np.int32)[i]) - int(r.view(np.int32)[i])
        print("%-28s %d of %d differ; first at row %d col %d: hearth %.9g llama.cpp %.9g (%d ulp); max |d| %.3g"
              % (key, diff.size, hv.size, i // h.shape[1], i % h.shape[1], hv[i], r[i], ulps,
                 float(np.max(np.abs(hv - r)))))
        if not args.all:
            break


if __name__ == "__main__":
    sys.exit(main())
