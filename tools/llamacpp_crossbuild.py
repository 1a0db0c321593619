#!/usr/bin/env python3
"""How closely does llama.cpp agree with itself? Compare a second build of llama.cpp (another
SIMD path) with the committed goldens of tests/golden/llamacpp/ (made by the default build),
with the same measures tests/models/test_llamacpp.c applies to hearth.

Two builds of the same llama.cpp version differ only in float summation order inside their
kernels; with 8-bit activations re-quantized before every matmul and f16 KV, such differences
flip roundings and spread, so this is the floor of agreement any second implementation can
expect short of reproducing the reference build's arithmetic bit for bit.

The second build must be of the llama-cpp-python release pinned in requirements/oracle.txt
(the one the goldens were made with; the tool reads the pin from there and refuses another).
How the figures in tests/golden/llamacpp/crossbuild.json are made (its "llama_cpp_python"
field records the release measured):
    python3 -m venv /tmp/lcpp_avx2
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \\
      -DGGML_AVX512=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AVX512_VBMI=OFF \\
      -DGGML_AVX_VNNI=OFF" /tmp/lcpp_avx2/bin/pip install --no-cache-dir --no-binary llama-cpp-python \\
      -r requirements/oracle.txt
    /tmp/lcpp_avx2/bin/python tools/llamacpp_crossbuild.py --models smollm2,gemma3,tiny-qwen2,tiny-qwen3
"""
import argparse, datetime, json, os, struct, subprocess, sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLD = os.path.join(ROOT, "tests", "golden", "llamacpp")
PINS = os.path.join(ROOT, "requirements", "oracle.txt")
TINY = {"tiny-qwen2": "tests/golden/tiny/tiny-qwen2.gguf", "tiny-qwen3": "tests/golden/tiny/tiny-qwen3.gguf"}


def model_path(name):
    if name in TINY:
        return os.path.join(ROOT, TINY[name])
    out = subprocess.run([os.path.join(ROOT, "scripts", "model-path.sh"), name], capture_output=True, text=True)
    if out.returncode:
        sys.exit(out.stderr.strip())
    return out.stdout.strip()


def pinned_version(path=PINS):
    """The llama-cpp-python version pinned in requirements/oracle.txt (a `llama-cpp-python==X` line)."""
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        name, sep, ver = line.partition("==")
        if sep and name.strip().lower().replace("_", "-") == "llama-cpp-python":
            return ver.strip()
    sys.exit("llamacpp_crossbuild: %s pins no llama-cpp-python==VERSION" % os.path.relpath(path, ROOT))


def read_golden(path):
    b = open(path, "rb").read()
    V, K, P, G, T, N, B, flags = struct.unpack_from("<8I", b, 16)
    R = 4 + 8 * K
    off = 128
    table = [struct.unpack_from("<4I", b, off + 16 * i) for i in range(P)]
    off += 16 * P
    toks = np.frombuffer(b, "<i4", N, off); off += 4 * N
    gen = np.frombuffer(b, "<i4", P * G, off).reshape(P, G); off += 4 * P * G

    def recs(n, at):
        out = []
        for i in range(n):
            lse = struct.unpack_from("<f", b, at + i * R)[0]
            pairs = np.frombuffer(b, "<i4", 2 * K, at + i * R + 4)
            out.append((lse, pairs[0::2].copy(), pairs[1::2].view("<f4").copy()))
        return out

    steps = recs(P * G, off); off += P * G * R
    if flags & 1:
        off += P * V * 2
    text = np.frombuffer(b, "<i4", T, off); off += 4 * T
    trecs = recs(T, off)
    return dict(V=V, K=K, P=P, G=G, T=T, table=table, toks=toks, gen=gen, steps=steps, text=text, trecs=trecs)


def kl_topk(rec, logits):
    lse_r, ids, lg = rec
    l = logits.astype(np.float64)
    lse_h = np.log(np.exp(l - l.max()).sum()) + l.max()
    lp_r, lp_h = lg - lse_r, l[ids] - lse_h
    pr, ph = np.exp(lp_r), np.exp(lp_h)
    kl = float((pr * (lp_r - lp_h)).sum())
    rr, rh = 1 - pr.sum(), 1 - ph.sum()
    if rr > 1e-12 and rh > 1e-12:
        kl += rr * np.log(rr / rh)
    return kl


def measure(llama_cpp, name):
    g = read_golden(os.path.join(GOLD, name + ".golden"))
    m = llama_cpp.Llama(model_path=model_path(name), n_ctx=1024, n_batch=512, n_ubatch=512, n_threads=2,
                        n_threads_batch=2, logits_all=True, flash_attn=False, verbose=False)
    m.eval(list(g["text"]))
    sc = np.array(m.scores[: g["T"]])
    agree = [int(sc[t].argmax() == g["trecs"][t][1][0]) for t in range(g["T"])]
    kls = [kl_topk(g["trecs"][t], sc[t]) for t in range(g["T"])]
    dis_margins = [float(g["trecs"][t][2][0] - g["trecs"][t][2][1]) for t in range(g["T"]) if not agree[t]]
    exact, first = 0, []
    for p in range(g["P"]):
        n, f0, _, _ = g["table"][p]
        seq = list(g["toks"][f0:f0 + n]) + list(g["gen"][p])
        m.reset()
        m.eval(seq[: n + g["G"] - 1])
        am = np.array(m.scores[n - 1: n + g["G"] - 1]).argmax(-1)
        bad = np.nonzero(am != g["gen"][p])[0]
        first.append(int(bad[0]) if len(bad) else -1)
        exact += len(bad) == 0
    first_margins = [float(g["steps"][p * g["G"] + s][2][0] - g["steps"][p * g["G"] + s][2][1])
                     for p, s in enumerate(first) if s >= 0]
    return dict(top1=sum(agree) / g["T"], mean_kl=float(np.mean(kls)), positions=g["T"], greedy_exact=exact,
                greedy_first_diff=first, max_margin_at_disagreement=max(dis_margins + first_margins, default=0.0))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="smollm2,gemma3,tiny-qwen2,tiny-qwen3")
    args = ap.parse_args()
    pin = pinned_version()
    import llama_cpp
    if llama_cpp.__version__ != pin:
        sys.exit("llamacpp_crossbuild: llama-cpp-python %s is installed; the goldens are of %s "
                 "(requirements/oracle.txt): install that one" % (llama_cpp.__version__, pin))
    out = dict(generator="tools/llamacpp_crossbuild.py", date=datetime.date.today().isoformat(),
               llama_cpp_python=llama_cpp.__version__,
               system_info=llama_cpp.llama_print_system_info().decode().strip(), models={})
    for name in args.models.split(","):
        out["models"][name] = measure(llama_cpp, name)
        print(name, out["models"][name], file=sys.stderr)
    with open(os.path.join(GOLD, "crossbuild.json"), "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
