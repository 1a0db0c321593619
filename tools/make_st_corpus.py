#!/usr/bin/env python3
"""Write the seed corpus of fuzz/fuzz_safetensors.c (fuzz/corpus/safetensors/) with the
safetensors library (the oracle of the format): ok_* files the library itself wrote, which hearth
must open, and bad_* files (truncated or edited copies) that the library refuses to load, which
hearth must refuse too. Re-run after changing the list:
    /tmp/tenv/bin/python tools/make_st_corpus.py
"""
import os, struct

import numpy as np
from safetensors.numpy import save, load

OUT = "fuzz/corpus/safetensors"


def header_edit(blob, old, new):
    n = struct.unpack("<Q", blob[:8])[0]
    h = blob[8:8 + n].replace(old, new)
    return struct.pack("<Q", len(h)) + h + blob[8 + n:]


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(7)
    ok = {
        "ok_one_f32": save({"w": rng.standard_normal((3, 4)).astype(np.float32)}),
        "ok_mixed": save({"a": rng.standard_normal(5).astype(np.float16), "b": np.arange(6, dtype=np.int64),
                          "c": np.zeros((0, 3), np.float32), "u": np.arange(4, dtype=np.uint32)},
                         metadata={"format": "pt"}),
        "ok_empty": save({}),
        "ok_scalar": save({"s": np.array(3.5, dtype=np.float64)}),
    }
    base = ok["ok_mixed"]
    bad = {
        "bad_truncated_data": base[:-3],
        "bad_truncated_header": base[:20],
        "bad_dtype": header_edit(base, b'"F16"', b'"F17"'),
        "bad_shape_size": header_edit(base, b"[5]", b"[6]"),
        "bad_huge_len": struct.pack("<Q", 1 << 40) + base[8:],
        "bad_not_json": base[:8] + b"x" * (len(base) - 8),
    }
    for name, blob in {**ok, **bad}.items():
        if name.startswith("ok_"):
            load(blob)  # the library reads it back
        else:
            try:
                load(blob)
                raise SystemExit(name + ": the library accepted it")
            except SystemExit:
                raise
            except Exception:
                pass
        with open(os.path.join(OUT, name + ".safetensors"), "wb") as f:
            f.write(blob)


if __name__ == "__main__":
    main()
