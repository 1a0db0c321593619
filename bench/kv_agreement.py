#!/usr/bin/env python3
"""kv_agreement.py - greedy agreement of each --kv-quant scheme with the f16 cache (`off`).

For each model and scheme, 16 fixed English prompts (below; fed verbatim, --raw) are decoded
greedily for 64 tokens with end-of-generation ignored, each through its own
`hearth generate --ids --ignore-eos --temperature 0 --batch 1 --prompt-cache 0` child on the
CPU (one sequence at a time: no batch can move the bits of a Q4_K model's logits, so a
difference is the cache's alone). Each prompt's tokens are compared with the same prompt
under `off`:

  first divergence  the number of tokens equal to off's before the first that differs (64 when
                    all are equal); the table gives the mean over the prompts
  identical         the share of the 64 positions whose token equals off's at that position

Greedy decoding of a small model is chaotic: one flipped token sends the rest elsewhere, so the
mean first divergence is the steadier figure and the share mostly follows it. --jobs N runs N
children at a time (each its own process: the tokens do not depend on it, nor on --threads).
Output: a Markdown table on stdout and every prompt's tokens as JSON (--json PATH, rewritten
after each scheme; --resume takes the schemes already there). Nothing is asserted.

Usage: .venv/bin/python bench/kv_agreement.py [--models smollm2,gemma3]
           [--schemes 8,4,turbo:k8v3,turbo:k4v4,turbo:k4v3] [--tokens 64] [--threads 2] [--jobs 1]
           [--json PATH [--resume]]
"""
import argparse, concurrent.futures, json, os, subprocess, sys, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROMPTS = [
    "The history of the printing press begins in",
    "To bake a simple loaf of bread, you will need",
    "Once upon a time, in a village at the edge of a great forest,",
    "The three laws of motion described by Isaac Newton are",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "The main differences between a virus and a bacterium are",
    "Dear hiring manager, I am writing to apply for the position of",
    "The capital of Australia is Canberra, which was chosen because",
    "In 1969, the Apollo 11 mission",
    "A good night's sleep matters for your health because",
    "The recipe calls for two cups of flour, one egg and",
    "Photosynthesis is the process by which plants",
    "Here is a short poem about the sea:\n",
    "The stock market fell sharply on Monday after",
    "To install the package, open a terminal and run",
    "The most important thing I learned from my grandmother was",
]


def model_path(name):
    if os.path.exists(name):
        return name
    return subprocess.run([os.path.join(ROOT, "scripts", "model-path.sh"), name], capture_output=True, text=True,
                          check=True).stdout.strip()


def generate(model, prompt, scheme, a):
    cmd = [os.path.join(ROOT, "build", "hearth"), "generate", model, "--raw", "--prompt", prompt, "--ids",
           "--ignore-eos", "--max-tokens", str(a.tokens), "--temperature", "0", "--threads", str(a.threads),
           "--device", "cpu", "--batch", "1", "--prompt-cache", "0", "--ctx", "512", "--kv-budget", "0.1",
           "--kv-quant", scheme]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if r.returncode:
        sys.exit(f"hearth generate failed ({scheme}): {r.stderr.strip()[-400:]}")
    ids = [int(t) for t in r.stdout.replace(",", " ").split()]
    if len(ids) != a.tokens:
        sys.exit(f"expected {a.tokens} ids, got {len(ids)} ({scheme}): {r.stdout[:200]}")
    return ids


def compare(ref, got):
    first = next((i for i, (x, y) in enumerate(zip(ref, got)) if x != y), len(ref))
    same = sum(x == y for x, y in zip(ref, got))
    return first, same / len(ref)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="smollm2,gemma3")
    ap.add_argument("--schemes", default="8,4,turbo:k8v3,turbo:k4v4,turbo:k4v3")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=1, help="children at a time")
    ap.add_argument("--json", help="write every prompt's tokens and figures here")
    ap.add_argument("--resume", action="store_true", help="take the tokens already in --json instead of running them")
    a = ap.parse_args()
    out = {"command": " ".join(sys.argv), "tokens": a.tokens, "prompts": PROMPTS, "models": {}}
    t0, load0 = time.time(), os.getloadavg()[0]
    rows = []
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs)

    def run_all(model, scheme):
        return list(pool.map(lambda p: generate(model, p, scheme, a), PROMPTS))

    done = {}
    if a.resume and a.json and os.path.exists(a.json):
        with open(a.json) as f:
            done = {n: v["tokens"] for n, v in json.load(f)["models"].items()}
    for name in a.models.split(","):
        model = model_path(name)
        have = done.get(name, {})
        ref = have.get("off") or run_all(model, "off")
        res = {"off": ref}
        out["models"][name] = {"path": model, "tokens": res}
        for s in a.schemes.split(","):
            got = have.get(s) or run_all(model, s)
            res[s] = got
            cmp = [compare(r, g) for r, g in zip(ref, got)]
            first = sum(c[0] for c in cmp) / len(cmp)
            share = 100 * sum(c[1] for c in cmp) / len(cmp)
            full = sum(c[0] == a.tokens for c in cmp)
            rows.append((name, s, first, share, full))
            print(f"{name} {s}: first divergence {first:.1f} tokens, {share:.1f}% identical, "
                  f"{full}/{len(cmp)} prompts all {a.tokens} equal", file=sys.stderr, flush=True)
            if a.json:
                with open(a.json, "w") as f:
                    json.dump(out, f)
    out["load_avg_1m"] = [load0, os.getloadavg()[0]]
    out["seconds"] = time.time() - t0
    print(f"| model | `--kv-quant` | mean first divergence (of {a.tokens}) | identical tokens | "
          f"prompts all equal (of {len(PROMPTS)}) |")
    print("|---|---|---|---|---|")
    for name, s, first, share, full in rows:
        print(f"| {name} | {s} | {first:.1f} | {share:.1f}% | {full} |")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
