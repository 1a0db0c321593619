#!/usr/bin/env python3
"""kv_capacity.py - how many 4,096-token sequences fit one KV budget, per --kv-quant scheme.

For each scheme, `hearth generate` loads the model with a fixed --kv-budget and a 4,096-token
context and logs the pool it made (blocks of 16 tokens); a sequence of the full context holds
ceil(4096 / 16) blocks in every layer group (the model's sliding-window layers hold only their
window: the engine's own layout arithmetic, so this counts what the scheduler would admit). The
ratio is against the f16 cache (`off`) in the same run. Nothing is timed.

Usage: .venv/bin/python bench/kv_capacity.py [--model PATH] [--budget GB] [--schemes off,8,4,...]
"""
import argparse, math, os, re, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEARTH = os.path.join(ROOT, "build", "hearth")


def pool(model, budget, scheme, ctx):
    env = dict(os.environ, HEARTH_LOG="info")
    r = subprocess.run([HEARTH, "generate", model, "--raw", "--prompt", "hi", "--max-tokens", "1", "--threads", "1",
                        "--kv-budget", str(budget), "--ctx", str(ctx), "--kv-quant", scheme],
                       capture_output=True, text=True, env=env, timeout=600)
    m = re.search(r"KV (\S+) (\d+) MiB in (\d+) blocks of (\d+) tokens", r.stderr)
    if r.returncode != 0 or not m:
        return None, r.stderr.strip().splitlines()[-1:] or ["?"]
    return dict(types=m.group(1), mib=int(m.group(2)), blocks=int(m.group(3)), bs=int(m.group(4))), None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=None, help="GGUF (default: SmolLM2, scripts/model-path.sh)")
    ap.add_argument("--budget", type=float, default=1.0, help="--kv-budget in GB (default 1)")
    ap.add_argument("--ctx", type=int, default=4096)
    ap.add_argument("--schemes", default="off,8,4,turbo:k8v3,turbo:k4v4,turbo:k4v3")
    a = ap.parse_args()
    model = a.model or subprocess.run([os.path.join(ROOT, "scripts", "model-path.sh"), "smollm2"],
                                      capture_output=True, text=True, check=True).stdout.strip()
    rows, base = [], None
    for s in a.schemes.split(","):
        p, err = pool(model, a.budget, s, a.ctx)
        if not p:
            rows.append((s, "-", "-", "-", "refused: " + err[0]))
            continue
        seqs = p["blocks"] // math.ceil(a.ctx / p["bs"])  # full-attention layers: every block of the context
        if base is None and s == "off":
            base = (seqs, p["blocks"])
        ratio = "%.2fx (blocks %.3fx)" % (seqs / base[0], p["blocks"] / base[1]) if base else "-"
        rows.append((s, p["types"], str(p["blocks"]), str(seqs), ratio))
    print("| --kv-quant | K/V types | blocks in %.2f GB | %d-token sequences | vs off |" % (a.budget, a.ctx))
    print("|---|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    print("\nmodel %s, `%s`" % (os.path.basename(model), " ".join(["bench/kv_capacity.py"] + sys.argv[1:])))


if __name__ == "__main__":
    main()
