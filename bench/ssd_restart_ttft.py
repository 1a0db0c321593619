"""Restart-warm time to first token with the prompt cache's SSD tier (docs/engine.md "SSD tier").

A long shared prefix (about --prefix-tokens tokens) is prefilled by a `hearth serve --ssd-cache
DIR`; the server is stopped (SIGTERM: the cached blocks are written out) and started again on DIR;
then the prefix plus a few new words is sent. Its time to first token is compared with the same
request on a fresh server with an empty DIR (a cold prefill). Greedy, one token, --seed 1.

    .venv/bin/python bench/ssd_restart_ttft.py [--model PATH] [--prefix-tokens 4000] [--reps 3]

Prints each figure and the ratio cold / warm. A measurement, not a test.
"""
import argparse
import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXE = ROOT / "build" / "hearth"
WORDS = ("river stone lantern orchard meadow copper violet harbor thunder willow candle falcon granite pepper "
         "silver marble garden winter summer engine window basket ladder pencil rocket mirror forest island "
         "castle bridge").split()


class Server:
    def __init__(self, model, d, threads):
        self.log = tempfile.NamedTemporaryFile(prefix="hearth-ssd-bench-", suffix=".log", delete=False)
        self.proc = subprocess.Popen([str(EXE), "serve", model, "--ssd-cache", str(d), "--ctx", "8192", "--seed", "1",
                                      "--threads", str(threads), "--port", "0", "--no-open"],
                                     stdout=subprocess.DEVNULL, stderr=self.log, stdin=subprocess.DEVNULL, cwd=ROOT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            m = re.search(r"API +http://127\.0\.0\.1:(\d+)/v1", pathlib.Path(self.log.name).read_text())
            if m:
                self.base = f"http://127.0.0.1:{m.group(1)}"
                return
            if self.proc.poll() is not None:
                sys.exit(pathlib.Path(self.log.name).read_text())
            time.sleep(0.05)
        sys.exit("the server did not start")

    def post(self, path, body):
        req = urllib.request.Request(self.base + path, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=600) as r:
            return json.loads(r.read())

    def stats(self):
        with urllib.request.urlopen(self.base + "/stats", timeout=30) as r:
            return json.loads(r.read())

    def ttft_ms(self, prompt):
        t0 = time.perf_counter()
        out = self.post("/v1/completions", {"model": "m", "prompt": prompt, "max_tokens": 1, "temperature": 0})
        return (time.perf_counter() - t0) * 1e3, out["usage"]["prompt_tokens"], out["choices"][0]["text"]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=120)
        os.unlink(self.log.name)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=None, help="GGUF path (default: SmolLM2 from scripts/model-path.sh)")
    ap.add_argument("--prefix-tokens", type=int, default=4000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="compute threads (default: all CPUs)")
    a = ap.parse_args()
    model = a.model or subprocess.run([str(ROOT / "scripts" / "model-path.sh"), "smollm2"], capture_output=True,
                                      text=True, check=True).stdout.strip()
    threads = a.threads or os.cpu_count()
    prefix = "You are a careful assistant. Facts: " + " ".join(
        WORDS[(i * 7 + i // 31) % len(WORDS)] for i in range(int(a.prefix_tokens * 0.95)))
    cold, warm = [], []
    for rep in range(a.reps):
        question = f" Question {rep}: which word came first, and which came last? Answer briefly please."
        with tempfile.TemporaryDirectory(prefix="hearth-ssd-") as d:
            s = Server(model, d, threads)  # a cold prefill of the prefix and the question
            ms, n_prompt, text_cold = s.ttft_ms(prefix + question)
            cold.append(ms)
            s.stop()
            with tempfile.TemporaryDirectory(prefix="hearth-ssd-") as d2:  # the prefix alone, then a restart
                s = Server(model, d2, threads)
                s.ttft_ms(prefix)
                s.stop()
                s = Server(model, d2, threads)
                ms_w, n2, text_warm = s.ttft_ms(prefix + question)
                time.sleep(0.5)  # the counters are published after the engine's step
                st = s.stats()
                s.stop()
            warm.append(ms_w)
            assert text_cold == text_warm, (text_cold, text_warm)
            print(f"rep {rep}: {n_prompt} prompt tokens; cold {ms:.0f} ms, restart-warm {ms_w:.0f} ms "
                  f"({st['ssd_cache']['restores']} blocks restored, {st['prompt_cache']['hit_tokens']} tokens "
                  f"reused)", flush=True)
    c, w = sorted(cold)[len(cold) // 2], sorted(warm)[len(warm) // 2]
    print(f"median TTFT: cold {c:.0f} ms, restart-warm {w:.0f} ms, ratio {c / w:.1f}x")


if __name__ == "__main__":
    main()
