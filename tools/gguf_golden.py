#!/usr/bin/env python3
"""gguf_golden.py - dump a GGUF file's structure, as read by the reference reader (gguf-py),
into a small line-oriented golden that tests/unit/test_gguf.c compares with hearth's reader.

Usage (from the repo root, with the project venv that has the `gguf` package):

    .venv/bin/python tools/gguf_golden.py MODEL.gguf > tests/golden/gguf/NAME.txt

Why not JSON: the C side would need a JSON parser for one test; this format is one record per
line, whitespace-separated, with every free-form text field escaped so it contains no spaces:

    # comment lines (provenance)
    version 3
    alignment 32
    data_offset 1785664                          absolute byte offset of the data section
    n_kv 33                                      real key/value pairs (not gguf-py's GGUF.* pseudo-fields)
    n_tensors 272
    kv KEY TYPE VALUE                            scalars, file order; TYPE as gguf-py's GGUFValueType
                                                 in lower case; ints in decimal, bool 0/1, floats as
                                                 Python repr of the value widened to double,
                                                 strings as "ESCAPED"
    arr KEY ELEM_TYPE N FNV                      arrays: element type, count, FNV-1a 64 (hex) of the
                                                 array payload exactly as stored in the file (numeric:
                                                 the packed elements; strings: u64 length + bytes each)
    tensor NAME TYPE_ID N_DIMS NE0,NE1,.. OFFSET N_BYTES
                                                 file order; dims ne0 first; OFFSET relative to the
                                                 data section

Escaping (KEY, NAME and string values): bytes 0x21..0x7e other than '\\' and '"' stand for
themselves; every other byte is written \\xHH (two lower-case hex digits).

The header lines of the output record the gguf-py version, the file name and size, and the date
the golden was made.
"""
import datetime
import os
import sys

import numpy as np
import gguf
from importlib.metadata import version as pkg_version

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3


def fnv1a64(chunks):
    h = FNV_OFFSET
    for b in chunks:
        for x in b:
            h = ((h ^ x) * FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def esc(b: bytes) -> str:
    out = []
    for x in b:
        if 0x21 <= x <= 0x7E and x not in (0x5C, 0x22):
            out.append(chr(x))
        else:
            out.append("\\x%02x" % x)
    return "".join(out)


def scalar_text(vt, part) -> str:
    T = gguf.GGUFValueType
    v = part[0]
    if vt == T.STRING:
        return '"' + esc(bytes(part)) + '"'
    if vt == T.BOOL:
        return "1" if bool(v) else "0"
    if vt in (T.FLOAT32, T.FLOAT64):
        return repr(float(v))
    return str(int(v))


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    path = sys.argv[1]
    r = gguf.GGUFReader(path)
    T = gguf.GGUFValueType
    fields = [(k, f) for k, f in r.fields.items() if not k.startswith("GGUF.")]
    out = []
    out.append("# golden of %s (%d bytes), made by tools/gguf_golden.py" % (os.path.basename(path), os.path.getsize(path)))
    out.append("# reader: gguf-py %s, numpy %s, on %s" % (pkg_version("gguf"), np.__version__, datetime.date.today().isoformat()))
    out.append("version %d" % int(r.fields["GGUF.version"].parts[-1][0]))
    out.append("alignment %d" % r.alignment)
    out.append("data_offset %d" % r.data_offset)
    out.append("n_kv %d" % len(fields))
    out.append("n_tensors %d" % len(r.tensors))
    for k, f in fields:
        key = esc(k.encode("utf-8"))
        vt = f.types[0]
        if vt == T.ARRAY:
            et = T(int(f.parts[3][0]))  # parts: key len, key, type, elem type, count, elements...
            if et == T.STRING:
                chunks = []
                for i in f.data:
                    b = bytes(f.parts[i])
                    chunks.append(len(b).to_bytes(8, "little"))
                    chunks.append(b)
            else:
                chunks = [np.ascontiguousarray(f.parts[i]).astype(f.parts[i].dtype.newbyteorder("<")).tobytes() for i in f.data]
            out.append("arr %s %s %d %016x" % (key, et.name.lower(), len(f.data), fnv1a64(chunks)))
        else:
            out.append("kv %s %s %s" % (key, vt.name.lower(), scalar_text(vt, f.parts[f.data[0]])))
    for t in r.tensors:
        dims = ",".join(str(int(d)) for d in t.shape)
        out.append("tensor %s %d %d %s %d %d" % (esc(t.name.encode("utf-8")), int(t.tensor_type), len(t.shape), dims,
                                                 t.data_offset - r.data_offset, t.n_bytes))
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
