#!/usr/bin/env python3
"""Make GPU-sized test checkpoints with transformers and measure hearth's CUDA backend against
PyTorch + transformers on the same checkpoints, in one run on the GPU host (docs/cuda.md).

The vocabulary is padded to the embedding's row count with control tokens <|reserved_N|> (as
bench/llama_shapes.py pads it), so llama.cpp, which wants one token per embedding row, reads the
files as hearth does.

The GPU host is offline and keeps nothing, so every checkpoint is made here: a Llama model of the
named shape is built by transformers with random weights (seed fixed), kept on the GPU for
PyTorch, and written as GGUF (gguf-py) for hearth, with the SmolLM2 byte-level BPE vocabulary
copied from the committed tiny checkpoint (tests/golden/tiny/tiny-qwen2.gguf; its 49,152 tokens
index the first rows of a larger embedding). Projections are bf16, or Q4_0 for the 4-bit
variant (quantized from the same bf16 values with ggml's reference rounding), or, for the
"kq" variant that times K-quant kernels, random but well-formed Q4_K blocks (Q6_K for the
output projection and for v and down in every other layer, as a Q4_K_M file mixes them): gguf-py
has no K-quant quantizer, and only the kernels' speed is measured on that file.

  python3 tools/cuda_h200.py mid OUT_DIR          two small checkpoints for the GPU-vs-CPU model test
  python3 tools/cuda_h200.py write OUT_DIR SHAPE KINDS   OUT_DIR/SHAPE-KIND.gguf for each of KINDS
                                                  (comma-separated), one model, files that exist
                                                  kept; a JSON line per file on stdout. The tiny
                                                  shape's weights come from numpy (no PyTorch
                                                  needed: a check here that this writer's files
                                                  load in hearth and llama.cpp); tools/h200_peer.py
                                                  uses this stage
  python3 tools/cuda_h200.py bench OUT_DIR BENCH  measurements: JSON lines on stdout and in OUT_DIR
  python3 tools/cuda_h200.py spec OUT_DIR BENCH_SPEC   speculative decoding: a target (HEARTH_SPEC_SHAPE,
                                                  default 1b) in bf16 with its own Q4_0 as the draft,
                                                  bench/bench_spec at 1 and 8 streams on CUDA

BENCH is the bench/bench_cuda binary. Measurements, never assertions; the figures go to
bench/cuda-h200.md by hand with the command that made them. HEARTH_BENCH_ONLY=1b-bf16,... limits
the checkpoints (and runs them in that order); HEARTH_BENCH_VARIANTS="new:;old:HEARTH_CUDA_MV=waves,HEARTH_CUDA_FUSE_Q8=0"
runs hearth once per named variant with those environment variables (the first variant alone
gets the prefill and streams measurements; records carry "variant"); HEARTH_BENCH_TORCH=0 skips
PyTorch; HEARTH_BENCH_NCU="8b-q4_0:mv_q8_k:200:4;..." runs Nsight Compute over COUNT
launches of the kernels matching the regex after SKIP of them (bench_cuda with 16 decode steps
and a 4096-token prefill) and writes OUT_DIR/ncuN.txt.
"""
import json, os, subprocess, sys, time, types

import numpy as np
import gguf
try:  # the GPU host has them; bench/llama_shapes.py imports this file for its shapes and GGUF header only
    import torch
    import transformers
except ImportError:
    torch = transformers = None
no_grad = torch.no_grad() if torch is not None else (lambda f: f)
from gguf import GGUFWriter, GGMLQuantizationType as Q
from gguf.quants import quantize

DEVICE = "cuda"
ROPE_THETA = 500000.0
VOCAB_FROM = "tests/golden/tiny/tiny-qwen2.gguf"
SHAPES = {  # hidden, layers, heads, kv heads, ffn, vocab
    "1b": (2048, 16, 32, 8, 8192, 128256),
    "8b": (4096, 32, 32, 8, 14336, 128256),
    "mid": (1024, 8, 16, 4, 2816, 49152),
    "tiny": (256, 2, 4, 2, 512, 49408),  # the smallest the kq kind allows (rows of 256); 256 pad tokens
}


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def vocab_fields(path):
    r = gguf.GGUFReader(path)
    f = lambda k: r.fields[k].contents()
    return {"model": f("tokenizer.ggml.model"), "pre": f("tokenizer.ggml.pre"), "tokens": f("tokenizer.ggml.tokens"),
            "types": f("tokenizer.ggml.token_type"), "merges": f("tokenizer.ggml.merges"),
            "bos": int(f("tokenizer.ggml.bos_token_id")), "eos": int(f("tokenizer.ggml.eos_token_id"))}


def pad_vocab(vocab, n):
    """vocab with control tokens <|reserved_N|> appended up to n tokens (the embedding's rows)."""
    have = len(vocab["tokens"])
    if n < have:
        raise ValueError(f"the vocabulary has {have} tokens, more than the {n} embedding rows")
    return dict(vocab, tokens=list(vocab["tokens"]) + [f"<|reserved_{i}|>" for i in range(n - have)],
                types=list(vocab["types"]) + [3] * (n - have))  # 3: control


def add_llama_header(w, name, dims, vocab, eps=1e-5, ctx=8192):
    """The llama metadata and vocabulary of a GGUF file: dims = (hidden, layers, heads, kv heads, ffn)."""
    E, L, H, KV, FF = dims
    w.add_name(name)
    w.add_context_length(ctx)
    w.add_embedding_length(E)
    w.add_block_count(L)
    w.add_feed_forward_length(FF)
    w.add_head_count(H)
    w.add_head_count_kv(KV)
    w.add_layer_norm_rms_eps(eps)
    w.add_rope_freq_base(ROPE_THETA)
    w.add_rope_dimension_count(E // H)
    w.add_tokenizer_model(vocab["model"])
    w.add_tokenizer_pre(vocab["pre"])
    w.add_token_list(vocab["tokens"])
    w.add_token_types(vocab["types"])
    w.add_token_merges(vocab["merges"])
    w.add_bos_token_id(vocab["bos"])
    w.add_eos_token_id(vocab["eos"])
    w.add_add_bos_token(False)


def make_model(shape, std):
    E, L, H, KV, FF, V = SHAPES[shape]
    cfg = transformers.LlamaConfig(hidden_size=E, num_hidden_layers=L, num_attention_heads=H, num_key_value_heads=KV,
                                   intermediate_size=FF, vocab_size=V, max_position_embeddings=8192,
                                   rope_theta=ROPE_THETA, rms_norm_eps=1e-5, tie_word_embeddings=False,
                                   initializer_range=std)
    torch.manual_seed(0)
    with torch.device(DEVICE):
        m = transformers.LlamaForCausalLM(cfg).to(torch.bfloat16)
    # random norms around 1, so the norms are not all the same value
    with torch.no_grad():
        for n, p in m.named_parameters():
            if p.dim() == 1:
                p.copy_(1.0 + 0.1 * torch.randn_like(p))
    return m.eval(), cfg


def make_model_np(shape, std, seed=0):
    """make_model's parameters without PyTorch: {HF name: float32 array} in transformers' order,
    normal(0, std) matrices and norms 1 + 0.1 N(0, 1) from numpy's generator, and a config with
    the fields write_gguf reads. For the tiny shape, where a GPU and PyTorch are not at hand."""
    E, L, H, KV, FF, V = SHAPES[shape]
    hd = E // H
    rng = np.random.default_rng(seed)
    mat = lambda r, c: (std * rng.standard_normal((r, c), dtype=np.float32))
    norm = lambda n: 1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32)
    sd = {"model.embed_tokens.weight": mat(V, E)}
    for i in range(L):
        b = f"model.layers.{i}."
        sd.update({b + "self_attn.q_proj.weight": mat(E, E), b + "self_attn.k_proj.weight": mat(KV * hd, E),
                   b + "self_attn.v_proj.weight": mat(KV * hd, E), b + "self_attn.o_proj.weight": mat(E, E),
                   b + "mlp.gate_proj.weight": mat(FF, E), b + "mlp.up_proj.weight": mat(FF, E),
                   b + "mlp.down_proj.weight": mat(E, FF), b + "input_layernorm.weight": norm(E),
                   b + "post_attention_layernorm.weight": norm(E)})
    sd["model.norm.weight"] = norm(E)
    sd["lm_head.weight"] = mat(V, E)
    cfg = types.SimpleNamespace(hidden_size=E, num_hidden_layers=L, num_attention_heads=H, num_key_value_heads=KV,
                                intermediate_size=FF, vocab_size=V, rms_norm_eps=1e-5)
    return sd, cfg


def bf16_bits(t):
    """bf16 bits (uint16) of a torch tensor, or of a float32 array rounded to nearest even."""
    if isinstance(t, np.ndarray):
        b = np.ascontiguousarray(t, np.float32).view(np.uint32)
        return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16).astype(np.uint16)
    return t.contiguous().view(torch.int16).cpu().numpy().view(np.uint16)


def as_f32(t):
    return np.ascontiguousarray(t, np.float32) if isinstance(t, np.ndarray) else t.float().cpu().numpy()


def q4_0_rows(w):
    """ggml's reference Q4_0 of a 2-D tensor on the GPU: bytes [rows][blocks * 18]."""
    rows, n = w.shape
    x = w.float().reshape(rows, n // 32, 32)
    idx = x.abs().argmax(dim=-1, keepdim=True)
    mx = torch.gather(x, -1, idx)
    d = mx / -8.0
    idd = torch.where(d != 0, 1.0 / d, torch.zeros_like(d))
    q = torch.clamp((x * idd + 8.5).to(torch.int8), max=15).to(torch.uint8)
    qs = q[..., :16] | (q[..., 16:] << 4)
    dh = d.to(torch.float16).view(torch.uint8).reshape(rows, n // 32, 2)
    return torch.cat([dh, qs], dim=-1).reshape(rows, n // 32 * 18).cpu().numpy()


def kquant_random_rows(rows, n, qtype, seed):
    """rows x n values as random well-formed blocks of qtype (Q4_K or Q6_K): codes and sub-block
    scales uniform, the f16 super-block scales chosen so that values stay within about 0.02."""
    rng = np.random.default_rng(seed)
    nb = rows * (n // 256)
    if qtype == Q.Q4_K:
        b = rng.integers(0, 256, size=(nb, 144), dtype=np.uint8)
        b[:, 0:2] = np.frombuffer(np.float16(2e-5).tobytes(), np.uint8)
        b[:, 2:4] = np.frombuffer(np.float16(2e-5).tobytes(), np.uint8)
        return b.reshape(rows, (n // 256) * 144)
    b = rng.integers(0, 256, size=(nb, 210), dtype=np.uint8)
    b[:, 208:210] = np.frombuffer(np.float16(5e-6).tobytes(), np.uint8)
    return b.reshape(rows, (n // 256) * 210)


def write_gguf(m, cfg, path, kind, vocab):
    """kind: bf16 | q4_0 | mixed | kq. m: a transformers model, or make_model_np's dict. Returns the
    bytes one decode step reads (every matrix but the embedding, plus the norms)."""
    if kind not in ("bf16", "q4_0", "mixed", "kq"):
        raise ValueError(f"unknown kind '{kind}' (bf16, q4_0, mixed or kq)")
    vocab = pad_vocab(vocab, cfg.vocab_size)
    w = GGUFWriter(path, "llama")
    add_llama_header(w, f"hearth bench llama {kind}", (cfg.hidden_size, cfg.num_hidden_layers,
                     cfg.num_attention_heads, cfg.num_key_value_heads, cfg.intermediate_size), vocab,
                     eps=cfg.rms_norm_eps)
    names = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
             "lm_head.weight": "output.weight"}
    per = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
           "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
           "mlp.down_proj": "ffn_down", "input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}
    mixed = {"attn_q": Q.Q8_0, "attn_k": Q.Q4_0, "attn_v": Q.Q4_1, "attn_output": Q.Q5_0, "ffn_gate": Q.Q4_1,
             "ffn_up": Q.Q5_1, "ffn_down": Q.Q8_0, "token_embd": Q.Q4_0, "output": Q.Q8_0}
    step_bytes = 0
    step_bytes_seen = []  # the kq variant's tensors so far (each gets its own seed)
    for hf, t in (m.items() if isinstance(m, dict) else m.state_dict().items()):
        if hf in names:
            name = names[hf]
        else:
            parts = hf.split(".")  # model.layers.N.<sub>.<proj>.weight
            name = f"blk.{parts[2]}.{per['.'.join(parts[3:-1])]}.weight"
        short = name.split(".")[-2]
        if t.ndim == 1:
            a = as_f32(t)
            w.add_tensor(name, a)
        elif kind == "bf16":
            a = bf16_bits(t)
            w.add_tensor(name, a, raw_dtype=Q.BF16)
        elif kind == "q4_0":
            a = quantize(t, Q.Q4_0) if isinstance(t, np.ndarray) else q4_0_rows(t)
            w.add_tensor(name, a, raw_shape=a.shape, raw_dtype=Q.Q4_0)
        elif kind == "kq":
            il = int(name.split(".")[1]) if name.startswith("blk.") else 0
            six = short == "output" or (short in ("attn_v", "ffn_down") and il % 2 == 1)
            qt = Q.Q6_K if six else Q.Q4_K
            a = kquant_random_rows(t.shape[0], t.shape[1], qt, len(step_bytes_seen))
            step_bytes_seen.append(name)
            w.add_tensor(name, a, raw_shape=a.shape, raw_dtype=qt)
        else:
            a = quantize(as_f32(t), mixed[short])
            w.add_tensor(name, a, raw_shape=a.shape, raw_dtype=mixed[short])
        if short != "token_embd":
            step_bytes += a.nbytes
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return step_bytes


def write_files(od, shape, kinds, vocab):
    """OUT_DIR/SHAPE-KIND.gguf for each kind not there yet (written as .part, then renamed), from
    one model: PyTorch's on the GPU, or numpy's for the tiny shape."""
    if shape not in SHAPES or any(k not in ("bf16", "q4_0", "mixed", "kq") for k in kinds):
        sys.exit(f"cuda_h200: write: shape one of {', '.join(SHAPES)}, kinds of bf16,q4_0,mixed,kq "
                 f"(not {shape} {','.join(kinds)})")
    todo = [k for k in kinds if not os.path.exists(f"{od}/{shape}-{k}.gguf")]
    for k in kinds:
        if k not in todo:
            print(json.dumps({"what": "model", "model": f"{shape}-{k}", "path": f"{od}/{shape}-{k}.gguf",
                              "file_bytes": os.path.getsize(f"{od}/{shape}-{k}.gguf"), "reused": True}), flush=True)
    if not todo:
        return
    t = time.time()
    if shape == "tiny":
        m, cfg = make_model_np(shape, 0.02)
    elif torch is None:
        sys.exit("cuda_h200: write: the %s shape needs PyTorch and transformers" % shape)
    else:
        m, cfg = make_model(shape, 0.02)
    made = time.time() - t
    for k in todo:
        path, t = f"{od}/{shape}-{k}.gguf", time.time()
        step_bytes = write_gguf(m, cfg, path + ".part", k, vocab)
        os.replace(path + ".part", path)
        print(json.dumps({"what": "model", "model": f"{shape}-{k}", "path": path, "file_bytes": os.path.getsize(path),
                          "decode_step_bytes": step_bytes, "model_s": round(made, 3),
                          "write_s": round(time.time() - t, 3), "reused": False}), flush=True)
    del m
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def measure_device():
    x = torch.empty(1 << 32, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    for _ in range(3):
        y.copy_(x)
    torch.cuda.synchronize()
    t = time.time()
    for _ in range(20):
        y.copy_(x)
    torch.cuda.synchronize()
    bw = 2 * x.numel() * 20 / (time.time() - t)
    del x, y
    a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    t = time.time()
    for _ in range(10):
        a @ b
    torch.cuda.synchronize()
    flops = 2 * 8192 ** 3 * 10 / (time.time() - t)
    return {"what": "device", "name": torch.cuda.get_device_name(), "copy_bytes_s": bw, "bf16_gemm_flop_s": flops,
            "torch": torch.__version__, "transformers": transformers.__version__}


@no_grad
def torch_decode(m, gen, batch=1, static=False):
    ids = torch.randint(100, 10100, (batch, 32), device="cuda")
    kw = dict(do_sample=False, pad_token_id=0, eos_token_id=None)
    if static:
        kw["cache_implementation"] = "static"
    m.generate(ids, max_new_tokens=8, min_new_tokens=8, **kw)
    if static:
        m.generate(ids, max_new_tokens=8, min_new_tokens=8, **kw)
    torch.cuda.synchronize()
    t = time.time()
    out = m.generate(ids, max_new_tokens=gen, min_new_tokens=gen, **kw)
    torch.cuda.synchronize()
    dt = time.time() - t
    return batch * (out.shape[1] - 32) / dt


@no_grad
def torch_prefill(m, n):
    ids = torch.randint(100, 10100, (1, n), device="cuda")
    m(ids, logits_to_keep=1)
    torch.cuda.synchronize()
    best = 1e30
    for _ in range(2):
        t = time.time()
        m(ids, logits_to_keep=1)
        torch.cuda.synchronize()
        best = min(best, time.time() - t)
    return best


def hearth(bench, path, *args, env=None):
    env = dict(os.environ, **(env or {}))
    r = subprocess.run([bench, path, *args], capture_output=True, text=True, env=env, timeout=400)
    sys.stderr.write(r.stderr[-3000:])
    return [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]


def emit(out, rec):
    line = json.dumps(rec)
    print(line, flush=True)
    out.write(line + "\n")
    out.flush()


def main():
    stage, od = sys.argv[1], sys.argv[2]
    os.makedirs(od, exist_ok=True)
    vocab = vocab_fields(VOCAB_FROM)
    if stage == "write":
        write_files(od, sys.argv[3], sys.argv[4].split(","), vocab)
        return
    if stage == "mid":
        m, cfg = make_model("mid", 0.05)
        for kind in ("mixed", "bf16"):
            write_gguf(m, cfg, f"{od}/mid-{kind}.gguf", kind, vocab)
        return
    if stage == "spec":
        shape = os.environ.get("HEARTH_SPEC_SHAPE", "1b")
        m, cfg = make_model(shape, 0.02)
        paths = {k: f"{od}/spec-{shape}-{k}.gguf" for k in ("bf16", "q4_0")}
        for kind, path in paths.items():
            t = time.time()
            write_gguf(m, cfg, path, kind, vocab)
            log(f"{shape}-{kind}: {os.path.getsize(path) / 1e9:.2f} GB in {time.time() - t:.0f} s")
        del m
        torch.cuda.empty_cache()
        for streams in (1, 8):
            r = subprocess.run([sys.argv[3], paths["bf16"], paths["q4_0"], "8", "128", str(streams), "cuda", "3"],
                               capture_output=True, text=True, timeout=400)
            print(f"== {shape} bf16 target, {shape} q4_0 draft, {streams} streams\n{r.stdout}{r.stderr[-2000:]}",
                  flush=True)
        for path in paths.values():
            os.remove(path)
        return
    bench = sys.argv[3]
    out = open(f"{od}/bench.jsonl", "w")
    emit(out, measure_device())
    plan = [("1b", "bf16", []), ("8b", "bf16", ["--prefill", "4096", "--streams", "64"]), ("8b", "q4_0", [])]
    only = os.environ.get("HEARTH_BENCH_ONLY")
    if only:  # those checkpoints, in that order
        plan = [p for o in only.split(",") for p in plan if f"{p[0]}-{p[1]}" == o]
    for shape, kind, extra in plan:
        t = time.time()
        m, cfg = make_model(shape, 0.02)
        path = f"{od}/{shape}-{kind}.gguf"
        step_bytes = write_gguf(m, cfg, path, kind, vocab)
        emit(out, {"what": "model", "model": f"{shape}-{kind}", "decode_step_bytes": step_bytes,
                   "file_bytes": os.path.getsize(path), "made_s": time.time() - t})
        variants = [v.split(":", 1) for v in os.environ.get("HEARTH_BENCH_VARIANTS", "default:").split(";") if v]
        for vi, (vname, venv) in enumerate(variants):
            env = {k: v for k, v in (kv.split("=", 1) for kv in venv.split(",") if "=" in kv)}
            for rec in hearth(bench, path, "--gen", "128", *(extra if vi == 0 else []), env=env):
                rec["model"] = f"{shape}-{kind}"
                rec["engine"] = "hearth"
                rec["variant"] = vname
                emit(out, rec)
        # HEARTH_BENCH_NCU="MODEL:KERNEL_REGEX:SKIP:COUNT;..." profiles those kernels with Nsight Compute
        for i, spec in enumerate(os.environ.get("HEARTH_BENCH_NCU", "").split(";")):
            parts = spec.split(":")
            if len(parts) != 4 or parts[0] != f"{shape}-{kind}":
                continue
            r = subprocess.run(["ncu", "--clock-control", "none", "-k", "regex:" + parts[1], "--launch-skip", parts[2],
                                "--launch-count", parts[3], "--section", "SpeedOfLight", "--section",
                                "MemoryWorkloadAnalysis", "--section", "Occupancy", "--section", "WarpStateStats",
                                "--section", "LaunchStats", bench, path, "--gen", "16", "--prefill", "4096"],
                               capture_output=True, text=True, timeout=400)
            with open(f"{od}/ncu{i}.txt", "w") as f:
                f.write(r.stdout[-60000:] + r.stderr[-5000:])
        os.remove(path)
        if kind == "bf16" and os.environ.get("HEARTH_BENCH_TORCH") != "0":
            emit(out, {"what": "decode", "engine": "torch-eager", "model": f"{shape}-{kind}",
                       "tok_s": torch_decode(m, 128)})
            if f"{shape}-{kind}" in os.environ.get("HEARTH_BENCH_COMPILE", "").split(","):
                try:
                    m.forward = torch.compile(m.forward, mode="reduce-overhead", fullgraph=True)
                    emit(out, {"what": "decode", "engine": "torch-static-compile", "model": f"{shape}-{kind}",
                               "tok_s": torch_decode(m, 128, static=True)})
                except Exception as e:  # report, keep going
                    emit(out, {"what": "decode", "engine": "torch-static-compile", "error": str(e)[:300]})
                m.forward = m.__class__.forward.__get__(m)
            if "--prefill" in extra:
                s = torch_prefill(m, 4096)
                emit(out, {"what": "prefill", "engine": "torch-eager", "model": f"{shape}-{kind}", "tokens": 4096,
                           "ms": s * 1e3, "tok_s": 4096 / s})
            if "--streams" in extra:
                emit(out, {"what": "streams", "engine": "torch-eager", "model": f"{shape}-{kind}", "n": 64,
                           "agg_tok_s": torch_decode(m, 128, batch=64)})
        del m
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
