#!/usr/bin/env python3
"""spec_decode.py - speculative decoding with prompt lookup (--draft-kind ngram) on a code-editing
workload, against the same server without speculation, in one run on one machine.

The workload is what prompt lookup is for: a source file in the prompt and "rewrite it with one
change", greedy, so most of the answer repeats text the prompt holds. For each model two servers
run one after the other (`hearth serve` plain, then with `--draft-kind ngram` and any
--spec-args), each answering:

  single   the request alone: decode tokens/s of the stream (completion tokens after the first /
           time from the first to the last token)
  streams  --streams copies at once (each with its own small change, so that they are different
           sequences): aggregate completion tokens/s over the wall time

Both servers stay up and their runs alternate (plain, ngram, plain, ngram ...), so that a slow
spell of a shared machine falls on both; each figure is the median of --reps runs.

and the speculative server's /stats (drafted, accepted, acceptance rate, mean accepted length).
The greedy answers of the two servers are compared (they match token for token under
--batch-invariant on; in the default numerics a near tie may part them, docs/engine.md).
Prints a markdown table with the ratios. A measurement, not a test: nothing is asserted.

    .venv/bin/python bench/spec_decode.py [--models smollm2,gemma3] [--threads 2] [--reps 3]
        [--streams 8] [--max-tokens 320] [--file src/engine/spec_ngram.c] [--serve-args "..."]
        [--spec-args "--num-draft-tokens 10"]
"""
import argparse
import json
import os
import pathlib
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
EXE = ROOT / "build" / "hearth"
RENAMES = [("ngram_propose", "ngram_fill"), ("ngram_release", "ngram_forget"), ("ngram_destroy", "ngram_free"),
           ("ngram_src", "lookup_src"), ("hearth_ngram_draft", "hearth_lookup_draft"), ("tail", "suffix"),
           ("from", "start"), ("jobs", "work")]


class Server:
    def __init__(self, model, args):
        self.log = tempfile.NamedTemporaryFile(prefix="hearth-spec-bench-", suffix=".log", delete=False)
        cmd = [str(EXE), "serve", model, "--port", "0", "--no-open", "--seed", "1"] + args
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.log, stdin=subprocess.DEVNULL,
                                     cwd=ROOT)
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            m = re.search(r"API +http://127\.0\.0\.1:(\d+)/v1", pathlib.Path(self.log.name).read_text())
            if m:
                self.base = f"http://127.0.0.1:{m.group(1)}"
                return
            if self.proc.poll() is not None:
                sys.exit(f"{' '.join(cmd)}\n" + pathlib.Path(self.log.name).read_text())
            time.sleep(0.05)
        sys.exit("the server did not start")

    def stats(self):
        with urllib.request.urlopen(self.base + "/stats", timeout=60) as r:
            return json.loads(r.read())

    def stream(self, messages, max_tokens):
        """One streamed greedy chat request: (text, completion tokens, seconds first..last token)."""
        body = {"model": "m", "messages": messages, "max_tokens": max_tokens, "temperature": 0, "stream": True,
                "stream_options": {"include_usage": True}}
        req = urllib.request.Request(self.base + "/v1/chat/completions", json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
        text, n, t_first, t_last = [], 0, None, None
        with urllib.request.urlopen(req, timeout=3600) as r:
            for line in r:
                line = line.strip()
                if not line.startswith(b"data: ") or line == b"data: [DONE]":
                    continue
                ev = json.loads(line[6:])
                if ev.get("usage"):
                    n = ev["usage"]["completion_tokens"]
                for ch in ev.get("choices", []):
                    piece = ch.get("delta", {}).get("content")
                    if piece:
                        now = time.perf_counter()
                        t_first = t_first or now
                        t_last = now
                        text.append(piece)
        return "".join(text), n, (t_last - t_first) if t_first and t_last else 0.0

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=120)
        os.unlink(self.log.name)


def chat_args(name):
    """Gemma 3's GGUF carries no chat template: the Gemma template file from the template cache."""
    if "gemma" not in name:
        return []
    cache = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache")
    tmpl = cache / "hearth" / "templates" / "llama-cpp-python-0.3.16" / "google-gemma-2-2b-it.jinja"
    return ["--chat-template-file", str(tmpl)] if tmpl.exists() else []


def messages(source, k):
    old, new = RENAMES[k % len(RENAMES)]
    return [{"role": "user", "content": f"Here is a C source file:\n\n```c\n{source}```\n\nRewrite the whole file "
                                        f"with one change: rename `{old}` to `{new}` everywhere. Answer with the "
                                        f"complete file only, in one code block."}]


def single(srv, source, a):
    _, n, dt = srv.stream(messages(source, 0), a.max_tokens)
    return (n - 1) / dt if dt > 0 and n > 1 else 0.0


def streams(srv, source, a):
    outs = [None] * a.streams

    def one(i):
        outs[i] = srv.stream(messages(source, i), a.max_tokens)

    t0 = time.perf_counter()
    th = [threading.Thread(target=one, args=(i,)) for i in range(a.streams)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    return sum(o[1] for o in outs if o) / (time.perf_counter() - t0)


def measure_pair(model, plain_args, spec_args, source, a):
    """Both servers up (an idle one costs nothing); the runs alternate, so that a slow spell of
    the machine falls on both; medians of --reps."""
    srv = {"plain": Server(model, plain_args), "spec": Server(model, spec_args)}
    try:
        text = {}
        for k, s in srv.items():
            s.stream(messages(source, 0), 16)  # warm-up
            text[k] = s.stream(messages(source, 0), a.max_tokens)[0]
        res = {k: {"single": [], "streams": []} for k in srv}
        for _ in range(a.reps):
            for k, s in srv.items():
                res[k]["single"].append(single(s, source, a))
            for k, s in srv.items():
                res[k]["streams"].append(streams(s, source, a))
        out = {}
        for k in srv:
            med = {m: sorted(v)[len(v) // 2] for m, v in res[k].items()}
            out[k] = dict(med, text=text[k], stats=srv[k].stats().get("speculative"))
        return out["plain"], out["spec"]
    finally:
        for s in srv.values():
            s.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="smollm2,gemma3", help="starter names or GGUF paths, comma-separated")
    ap.add_argument("--threads", type=int, default=0, help="compute threads (default: all CPUs)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--streams", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=320)
    ap.add_argument("--file", default="src/engine/spec_ngram.c", help="the source file to edit")
    ap.add_argument("--serve-args", default="", help="extra flags for both servers (e.g. --device cuda)")
    ap.add_argument("--spec-args", default="", help="extra flags for the speculative server")
    a = ap.parse_args()
    source = (ROOT / a.file).read_text()
    common = ["--threads", str(a.threads or os.cpu_count()), "--batch", str(max(a.streams, 1)), "--ctx", "4096"]
    common += shlex.split(a.serve_args)
    rows = []
    for name in a.models.split(","):
        model = name if os.path.exists(name) else subprocess.run(
            [str(ROOT / "scripts" / "model-path.sh"), name], capture_output=True, text=True, check=True).stdout.strip()
        args = common + chat_args(name)
        plain, spec = measure_pair(model, args, args + ["--draft-kind", "ngram"] + shlex.split(a.spec_args), source,
                                   a)
        rows.append((os.path.basename(model), plain, spec))
        print(f"{os.path.basename(model)}: plain {plain['single']:.1f} tok/s single, {plain['streams']:.1f} tok/s x"
              f"{a.streams}; ngram {spec['single']:.1f} / {spec['streams']:.1f}; stats {spec['stats']}",
              file=sys.stderr)
    print(f"\n{a.file} rewritten with one rename, greedy, up to {a.max_tokens} tokens; {a.streams} streams; "
          f"serve args: {' '.join(common)}; speculative: --draft-kind ngram {a.spec_args}\n")
    print("| model | plain tok/s | ngram tok/s | ratio | plain x{0} tok/s | ngram x{0} tok/s | ratio | drafted | "
          "accepted | acceptance | mean accepted | same text |".format(a.streams))
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, p, s in rows:
        st = s["stats"] or {}
        print(f"| {name} | {p['single']:.1f} | {s['single']:.1f} | {s['single'] / max(p['single'], 1e-9):.2f}x | "
              f"{p['streams']:.1f} | {s['streams']:.1f} | {s['streams'] / max(p['streams'], 1e-9):.2f}x | "
              f"{st.get('drafted', '?')} | {st.get('accepted', '?')} | {st.get('acceptance_rate', 0):.2f} | "
              f"{st.get('mean_accepted_length', 0):.2f} | {'yes' if p['text'] == s['text'] else 'no'} |")


if __name__ == "__main__":
    main()
