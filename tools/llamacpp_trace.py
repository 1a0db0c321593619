#!/usr/bin/env python3
"""llamacpp_trace.py - dump every node llama.cpp computes for one prompt (a debugging tool).

llama.cpp's context parameter cb_eval (ggml_backend_sched_eval_callback) is called after each
graph node; this script copies every f32/f16 node's data out (ggml_backend_tensor_get, strides
honoured) and saves them to OUT.npz keyed "STEP:NAME:OP" (NAME as llama.cpp's graph names it,
e.g. "Qcur-3"; STEP 0 is the prompt batch, STEP s the s-th greedy token evaluated alone), plus
OUT.npz.order listing the nodes in execution order. The prompt ids are printed for
tools/hearth_trace.c; tools/trace_compare.py lines the two dumps up.

Usage: .venv/bin/python tools/llamacpp_trace.py MODEL.gguf PROMPT OUT.npz [STEPS] [--ids 1,2,3]
Settings match tools/golden_llamacpp.py (n_ctx 1024, n_batch = n_ubatch 512, 2 threads, f16 KV,
no flash attention).
"""
import argparse
import ctypes
import os
import sys

import numpy as np

TYPES = {0: np.float32, 1: np.float16, 26: np.int32}  # ggml_type -> numpy
OFF_TYPE, OFF_NE, OFF_NB, OFF_NAME, TENSOR_BYTES = 0, 16, 48, 256, 336  # struct ggml_tensor


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("prompt")
    ap.add_argument("out")
    ap.add_argument("steps", nargs="?", type=int, default=0)
    ap.add_argument("--ids", help="comma-separated token ids instead of tokenizing PROMPT")
    args = ap.parse_args()
    import llama_cpp as L

    llm = L.Llama(model_path=args.model, n_ctx=1024, n_batch=512, n_ubatch=512, n_threads=2,
                  n_threads_batch=2, logits_all=True, flash_attn=False, n_gpu_layers=0,
                  verbose=False)
    add_bos = str(llm.metadata.get("tokenizer.ggml.add_bos_token", "false")).lower() == "true"
    if args.ids:
        toks = [int(x) for x in args.ids.split(",")]
    else:
        toks = llm.tokenize(args.prompt.encode(), add_bos=add_bos, special=True)
    base = ctypes.CDLL(os.path.join(os.path.dirname(L.__file__), "lib", "libggml-base.so"))
    base.ggml_nbytes.restype = ctypes.c_size_t
    base.ggml_nbytes.argtypes = [ctypes.c_void_p]
    base.ggml_op_desc.restype = ctypes.c_char_p
    base.ggml_op_desc.argtypes = [ctypes.c_void_p]
    base.ggml_backend_tensor_get.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                             ctypes.c_size_t]
    dump, order, step = {}, [], [0]

    def on_node(t, ask, _ud):
        if ask:
            return True
        raw = ctypes.string_at(t, TENSOR_BYTES)
        typ = int.from_bytes(raw[OFF_TYPE:OFF_TYPE + 4], "little")
        ne = [int(x) for x in np.frombuffer(raw[OFF_NE:OFF_NE + 32], dtype=np.int64)]
        nb = [int(x) for x in np.frombuffer(raw[OFF_NB:OFF_NB + 32], dtype=np.uint64)]
        name = raw[OFF_NAME:OFF_NAME + 64].split(b"\0")[0].decode()
        key = "%d:%s:%s" % (step[0], name, base.ggml_op_desc(t).decode())
        order.append("%s %s %s" % (key, ne, TYPES.get(typ, "type%d" % typ)))
        if typ not in TYPES:
            return True
        dt = np.dtype(TYPES[typ])
        n = base.ggml_nbytes(t)
        buf = ctypes.create_string_buffer(n)
        base.ggml_backend_tensor_get(t, buf, 0, n)
        u8 = np.frombuffer(buf.raw + b"\0" * 16, dtype=np.uint8)
        view = np.lib.stride_tricks.as_strided(u8, shape=tuple(ne[::-1]) + (dt.itemsize,),
                                               strides=tuple(nb[::-1]) + (1,))
        dump[key] = np.ascontiguousarray(view).view(dt).reshape(tuple(ne[::-1])).copy()
        return True

    cb = L.ggml_backend_sched_eval_callback(on_node)
    cp = L.llama_context_default_params()
    cp.n_ctx, cp.n_batch, cp.n_ubatch, cp.n_threads, cp.n_threads_batch = 1024, 512, 512, 2, 2
    if hasattr(L, "LLAMA_FLASH_ATTN_TYPE_DISABLED"):
        cp.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_DISABLED  # the default (auto) may pick it
    else:
        cp.flash_attn = False
    cp.cb_eval = cb
    ctx = L.llama_init_from_model(llm._model.model, cp)

    def decode(tk, pos0):
        b = L.llama_batch_init(len(tk), 0, 1)
        b.n_tokens = len(tk)
        for i, x in enumerate(tk):
            b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = x, pos0 + i, 1, 1
            b.seq_id[i][0] = 0
        assert L.llama_decode(ctx, b) == 0
        L.llama_batch_free(b)
        return np.ctypeslib.as_array(L.llama_get_logits_ith(ctx, -1),
                                     shape=(llm.n_vocab(),)).copy()

    logits = decode(toks, 0)
    dump["0:logits_last"] = logits
    for s in range(1, args.steps + 1):
        step[0] = s
        logits = decode([int(np.argmax(logits))], len(toks) + s - 1)
        dump["%d:logits_last" % s] = logits
    np.savez(args.out, **dump)
    with open(args.out + ".order", "w", encoding="utf-8") as f:
        f.write("\n".join(order) + "\n")
    print(",".join(map(str, toks)))


if __name__ == "__main__":
    sys.exit(main())
