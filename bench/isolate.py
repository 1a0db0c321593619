"""What `serve --isolate` costs (docs/isolation.md), measured in one run:

1. served decode tok/s of one streamed greedy completion (--tokens, ignore_eos), in-process and
   through an engine child, on two servers of the same model started side by side and asked in
   turn (--reps each); the figure is the median of (tokens - 1) / (last chunk - first chunk);
2. model switch time to first token with --isolate --model-pool 1 over two models: the time to
   the first streamed token of a request for the model that is not loaded (its engine starts,
   loads the model and prefills a long shared prompt), without and with --ssd-cache (the
   evicted engine's prompt cache goes to disk at exit and comes back at its next start).

    .venv/bin/python bench/isolate.py [--model A.gguf] [--other B.gguf] [--tokens 128] [--reps 5]

Defaults: SmolLM2 and Gemma 3 270M from scripts/model-path.sh. Prints each figure and the
ratios. A measurement, not a test.
"""
import argparse
import json
import os
import pathlib
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXE = ROOT / "build" / "hearth"
WORDS = ("river stone lantern orchard meadow copper violet harbor thunder willow candle falcon granite pepper "
         "silver marble garden winter summer engine window basket ladder pencil rocket mirror forest island").split()


class Server:
    def __init__(self, args, env=None):
        self.log = tempfile.NamedTemporaryFile(prefix="hearth-iso-bench-", suffix=".log", delete=False)
        e = dict(os.environ)
        e.update(env or {})
        self.proc = subprocess.Popen([str(EXE), "serve", *args, "--seed", "1", "--port", "0", "--no-open"],
                                     stdout=subprocess.DEVNULL, stderr=self.log, stdin=subprocess.DEVNULL, cwd=ROOT,
                                     env=e)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            m = re.search(r"API +http://127\.0\.0\.1:(\d+)/v1", pathlib.Path(self.log.name).read_text())
            if m:
                self.base = f"http://127.0.0.1:{m.group(1)}"
                return
            if self.proc.poll() is not None:
                sys.exit(pathlib.Path(self.log.name).read_text())
            time.sleep(0.05)
        sys.exit("the server did not start")

    def stream(self, body):
        """(seconds to the first token, seconds of each later token chunk, n chunks)."""
        body = dict(body, stream=True, temperature=0)
        req = urllib.request.Request(self.base + "/v1/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        t0 = time.perf_counter()
        times = []
        with urllib.request.urlopen(req, timeout=600) as r:
            for line in r:
                if line.startswith(b"data: {") and b'"text"' in line:
                    times.append(time.perf_counter())
        return times[0] - t0, times

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=120)
        os.unlink(self.log.name)


def decode_tok_s(s, tokens):
    _, times = s.stream({"model": "m", "prompt": "Once upon a time", "max_tokens": tokens, "ignore_eos": True})
    return (len(times) - 1) / (times[-1] - times[0])


def link(hub, repo, src):
    org, name = repo.split("/")
    snap = hub / f"models--{org}--{name}" / "snapshots" / "r1"
    snap.mkdir(parents=True)
    (hub / f"models--{org}--{name}" / "refs").mkdir()
    (hub / f"models--{org}--{name}" / "refs" / "main").write_text("r1")
    (snap / pathlib.Path(src).name).symlink_to(pathlib.Path(src).resolve())


def switch_ttft(model, other, reps, prefix, ssd, tmp):
    hub = pathlib.Path(tmp) / "hub"
    if not hub.exists():
        link(hub, "bench/a", model)
        link(hub, "bench/b", other)
    env = {"HF_HUB_CACHE": str(hub), "XDG_CACHE_HOME": str(pathlib.Path(tmp) / "xdg")}
    extra = ["--ssd-cache", str(pathlib.Path(tmp) / f"ssd-{time.monotonic_ns()}")] if ssd else []
    s = Server(["bench/a", "--isolate", "--model-pool", "1", "--ctx", "4096", *extra], env)
    try:
        out = []
        for m in ["bench/a", "bench/b"] * (reps + 1):
            ttft, _ = s.stream({"model": m, "prompt": prefix, "max_tokens": 2})
            out.append(ttft)
        return statistics.median(out[2:])  # the first round fills the caches
    finally:
        s.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--other", default=None)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--prefix-words", type=int, default=1500)
    a = ap.parse_args()

    def path(name):
        return subprocess.run([str(ROOT / "scripts" / "model-path.sh"), name], capture_output=True, text=True,
                              check=True).stdout.strip()

    model, other = a.model or path("smollm2"), a.other or path("gemma3")
    plain, iso = Server([model]), Server([model, "--isolate"])
    try:
        rp, ri = [], []
        for _ in range(a.reps):
            rp.append(decode_tok_s(plain, a.tokens))
            ri.append(decode_tok_s(iso, a.tokens))
    finally:
        plain.stop()
        iso.stop()
    mp, mi = statistics.median(rp), statistics.median(ri)
    print(f"decode, {a.tokens} tokens, median of {a.reps}: in-process {mp:.1f} tok/s, --isolate {mi:.1f} tok/s, "
          f"ratio {mi / mp:.3f}")
    prefix = "Facts to remember: " + " ".join(WORDS[(i * 7 + i // 29) % len(WORDS)] for i in range(a.prefix_words))
    with tempfile.TemporaryDirectory() as tmp:
        cold = switch_ttft(model, other, max(2, a.reps // 2), prefix, False, tmp)
        warm = switch_ttft(model, other, max(2, a.reps // 2), prefix, True, tmp)
    print(f"model switch, time to first token ({a.prefix_words}-word prompt): without SSD tier {cold * 1e3:.0f} ms, "
          f"with --ssd-cache {warm * 1e3:.0f} ms, ratio {cold / warm:.2f}")


if __name__ == "__main__":
    main()
