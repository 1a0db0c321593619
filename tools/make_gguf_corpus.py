#!/usr/bin/env python3
"""make_gguf_corpus.py - write the seed corpus of the GGUF fuzz target (fuzz/corpus/gguf/).

Usage (from the repo root, with the project venv that has the `gguf` package):

    .venv/bin/python tools/make_gguf_corpus.py [OUT_DIR]      # default fuzz/corpus/gguf

Valid seeds are written by gguf-py's GGUFWriter, the reference writer, so the corpus also checks
that files hearth did not write itself open; each is read back with gguf-py's GGUFReader as a
sanity check. Invalid seeds are valid images cut short, or records spelled byte by byte with
struct (no correct writer produces them). Every file stays under a few KB so the fuzzer mutates
structure, not payload.

Names carry the expectation that tests/unit/test_gguf.c (fuzz_corpus_replay) enforces:
    ok_*    must open, and every key, value and tensor is walked
    bad_*   must be refused with an error record
    other   (crashers found by fuzz/fuzz_gguf.c, crash_*.gguf) must not crash either way
The output is deterministic: rerunning the script rewrites identical bytes.
"""
import os
import struct
import sys
import tempfile

import numpy as np
import gguf
from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as V


# ---- valid files, written by gguf-py ---------------------------------------------------------

def write_with_gguf_py(fill, alignment=None):
    """Bytes of the file GGUFWriter makes after fill(writer) has added keys and tensors."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "seed.gguf")
        w = gguf.GGUFWriter(path, arch="llama")
        if alignment is not None:
            w.add_custom_alignment(alignment)
        fill(w)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        gguf.GGUFReader(path)  # the reference reader must accept what the reference writer wrote
        with open(path, "rb") as f:
            return f.read()


def fill_scalars(w):
    """Every scalar value type, extremes included, and strings with odd bytes."""
    w.add_uint8("s.u8", 255)
    w.add_int8("s.i8", -128)
    w.add_uint16("s.u16", 65535)
    w.add_int16("s.i16", -32768)
    w.add_uint32("s.u32", 4000000000)
    w.add_int32("s.i32", -2147483648)
    w.add_float32("s.f32", 1.5)
    w.add_bool("s.bool_true", True)
    w.add_bool("s.bool_false", False)
    w.add_string("s.str", "hello \u2581world")
    w.add_key_value("s.str_empty", "", V.STRING)
    w.add_key_value("s.str_bytes", b"a\x00b\xff\n", V.STRING)
    w.add_uint64("s.u64", 2**64 - 1)
    w.add_int64("s.i64", -(2**63))
    w.add_float64("s.f64", 1e300)
    w.add_float32("s.f32_nan", float("nan"))
    w.add_float64("s.f64_inf", float("-inf"))
    w.add_uint32("llama.block_count", 2)


def fill_arrays(w):
    """An array of every element type (gguf-py refuses empty arrays)."""
    typed = [
        ("a.u8", V.UINT8, [0, 1, 255]), ("a.i8", V.INT8, [-128, 0, 127]),
        ("a.u16", V.UINT16, [1, 65535]), ("a.i16", V.INT16, [-2, 2]),
        ("a.u32", V.UINT32, [7, 4000000000]), ("a.i32", V.INT32, [-1, 0, 1]),
        ("a.f32", V.FLOAT32, [0.5, -2.0]), ("a.bool", V.BOOL, [True, False, True]),
        ("a.u64", V.UINT64, [2**64 - 1]), ("a.i64", V.INT64, [-(2**63), 3]),
        ("a.f64", V.FLOAT64, [3.25, -0.0]),
    ]
    for key, et, vals in typed:
        w.add_key_value(key, vals, V.ARRAY, sub_type=et)
    w.add_key_value("a.str", ["", "a", "hello world", "\u2581tok", "<|im_start|>"], V.ARRAY, sub_type=V.STRING)


def fill_vocab(w):
    """A tokenizer-shaped file without tensors (what a vocab-only GGUF looks like)."""
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(8)] + ["\u2581a", "\u2581b", "ab"]
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([-float(i) for i in range(len(tokens))])
    w.add_token_types([2, 3, 3] + [6] * 8 + [1, 1, 1])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(True)


def quant_bytes(qtype, rows, blocks_per_row):
    """A (rows, bytes) uint8 array of deterministic bytes for a quantized tensor."""
    _, type_size = gguf.GGML_QUANT_SIZES[qtype]
    n = rows * blocks_per_row * type_size
    return (np.arange(n, dtype=np.uint32) * 167 + 13).astype(np.uint8).reshape(rows, blocks_per_row * type_size)


def fill_tensors(w):
    """Plain and quantized tensors of 1 to 4 dims (numpy shapes are slowest dim first)."""
    w.add_uint32("llama.block_count", 1)
    w.add_tensor("t.f32", np.arange(12, dtype=np.float32).reshape(3, 4) * 0.25 - 1)
    w.add_tensor("t.f16", np.array([1, -2, 0.5, 0, 65504], dtype=np.float16))
    w.add_tensor("t.i32", np.arange(6, dtype=np.int32).reshape(1, 2, 3))
    w.add_tensor("t.q8_0", quant_bytes(Q.Q8_0, 2, 1), raw_dtype=Q.Q8_0)
    w.add_tensor("t.q4_1", quant_bytes(Q.Q4_1, 2, 2), raw_dtype=Q.Q4_1)
    w.add_tensor("t.q4_K", quant_bytes(Q.Q4_K, 1, 1).reshape(1, 1, 1, -1), raw_dtype=Q.Q4_K)
    w.add_tensor("t.q6_K", quant_bytes(Q.Q6_K, 1, 1), raw_dtype=Q.Q6_K)


# ---- raw records, for what no correct writer produces ------------------------------------------

def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, payload):
    return gstr(key) + struct.pack("<I", vtype) + payload


def tinfo(name, dims, ttype, offset):
    """A tensor info; dims ne0 first."""
    return gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims) + \
        struct.pack("<IQ", ttype, offset)


def raw_file(kvs, tinfos=(), data=b"", version=3, n_kv=None, n_tensors=None, align=32, magic=b"GGUF"):
    """Header, records, zero padding to align, data: like a writer that trusts its caller."""
    head = magic + struct.pack("<IQQ", version, len(tinfos) if n_tensors is None else n_tensors,
                               len(kvs) if n_kv is None else n_kv)
    body = head + b"".join(kvs) + b"".join(tinfos)
    body += b"\0" * (-len(body) % align)
    return body + data


ARCH = kv("general.architecture", V.STRING, gstr("llama"))
F32x16 = struct.pack("<16f", *range(16))


def hostile():
    """name -> bytes of files the reader must refuse; one broken rule each."""
    u64 = lambda v: struct.pack("<Q", v)
    return {
        "bad_magic": raw_file([ARCH], magic=b"GGML"),
        "bad_version_1": raw_file([ARCH], version=1),
        "bad_big_endian": raw_file([ARCH], version=0x03000000),
        "bad_n_tensors_huge": raw_file([ARCH], n_tensors=2**63 - 1),
        "bad_string_length_huge": raw_file([ARCH, kv("s", V.STRING, u64(2**63))]),
        "bad_array_count_huge": raw_file([ARCH, kv("a", V.ARRAY, struct.pack("<IQ", V.STRING, 2**62))]),
        "bad_nested_array": raw_file([ARCH, kv("n", V.ARRAY, struct.pack("<IQ", V.ARRAY, 1) +
                                                 struct.pack("<IQ", V.UINT8, 1) + b"\x07")]),
        "bad_value_type_13": raw_file([ARCH, kv("x", 13, b"\0\0\0\0")]),
        "bad_bool_2": raw_file([ARCH, kv("flag", V.BOOL, b"\x02")]),
        "bad_duplicate_key": raw_file([ARCH, ARCH]),
        "bad_alignment_3": raw_file([ARCH, kv("general.alignment", V.UINT32, struct.pack("<I", 3))]),
        "bad_n_dims_5": raw_file([ARCH], [tinfo("t", [16, 1, 1, 1, 1], Q.F32, 0)], F32x16),
        "bad_dims_overflow": raw_file([ARCH], [tinfo("t", [2**32, 2**32, 1], Q.F32, 0)], F32x16),
        "bad_tensor_type_4": raw_file([ARCH], [tinfo("t", [16], 4, 0)], F32x16),
        "bad_row_not_whole_blocks": raw_file([ARCH], [tinfo("t", [100], Q.Q4_K, 0)], b"\0" * 144),
        "bad_misaligned_offset": raw_file([ARCH], [tinfo("t", [8], Q.F32, 8)], F32x16),
        "bad_data_past_eof": raw_file([ARCH], [tinfo("t", [16], Q.F32, 0)], F32x16[:-1]),
        "bad_overlap": raw_file([ARCH], [tinfo("t", [16], Q.F32, 0), tinfo("u", [16], Q.F32, 32)], F32x16 * 2),
        "bad_duplicate_tensor": raw_file([ARCH], [tinfo("t", [8], Q.F32, 0), tinfo("t", [8], Q.F32, 32)],
                                         F32x16 * 2),
    }


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join("fuzz", "corpus", "gguf")
    os.makedirs(out, exist_ok=True)
    seeds = {
        "ok_scalars": write_with_gguf_py(fill_scalars),
        "ok_arrays": write_with_gguf_py(fill_arrays),
        "ok_vocab": write_with_gguf_py(fill_vocab),
        "ok_tensors": write_with_gguf_py(fill_tensors),
        "ok_tensors_align64": write_with_gguf_py(fill_tensors, alignment=64),
        "ok_empty": raw_file([]),
        "ok_v2": raw_file([ARCH], [tinfo("t", [16], Q.F32, 0)], F32x16, version=2),
        "ok_gaps_any_order": raw_file([ARCH], [tinfo("b", [8], Q.F32, 64), tinfo("a", [8], Q.F32, 0)],
                                      F32x16 + bytes(32) + F32x16[:32]),
    }
    tensors = seeds["ok_tensors"]
    seeds["bad_truncated_in_infos"] = tensors[: len(tensors) // 4]
    seeds["bad_truncated_in_data"] = tensors[: len(tensors) - 100]
    seeds["bad_truncated_header"] = tensors[:13]
    seeds.update(hostile())
    for name, data in sorted(seeds.items()):
        assert len(data) <= 8192, name
        with open(os.path.join(out, name + ".gguf"), "wb") as f:
            f.write(data)
    print(f"wrote {len(seeds)} seeds to {out}")


if __name__ == "__main__":
    main()
