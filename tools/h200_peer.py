#!/usr/bin/env python3
"""h200_peer.py - hearth against llama.cpp's CUDA build on one GPU, in one run, on the same files.

The GPU host is offline and keeps nothing, so everything is made or carried: the checkpoints are
written in the run by tools/cuda_h200.py (`write` stage: transformers Llama shapes with random
weights, seed 0, as GGUF both engines read; a file that already exists is reused), llama.cpp's
binaries come from tools/build_llamacpp_cuda.sh (build-xfer/llamacpp-cuda.tar.xz, unpacked into
build-xfer/), hearth's from tools/pack_device.sh or a build on the host (bench_cuda, bench_spec).

Measured (the default sizes are chosen to keep the whole run, checkpoints included, under 8
minutes on an H200, not yet timed there; --budget-s skips what is left once the run is past that
many seconds):
  per kind (--kinds, default bf16,q4_0,kq of the 8B shape):
    decode   one stream, --gen tokens after a short prompt: bench_cuda's decode tok/s against
             llama-bench's tg (-n GEN -fa 1 -ngl 99);
    prefill  a --prefill-token prompt (4096): bench_cuda's prefill against llama-bench's pp;
    streams  --streams 16,64 concurrent sequences of 32 prompt and --gen new tokens:
             bench_cuda's generated tokens per second of wall time, prefill included, against
             llama-batched-bench (-npp 32 -ntg GEN -npl 16,64) on the same terms (PL*TG / T);
             llama.cpp's decode-only S_TG is recorded too;
  kv       decode with a q8_0 key/value cache --kv-depth tokens deep (16384) on --kv-kind
           (q4_0): bench_cuda --kv-quant 8 --depth against llama-bench -ctk q8_0 -ctv q8_0 -d;
  spec     greedy speculative decoding, the bf16 target with its own q4_0 as the draft,
           --n-draft tokens a round: bench_spec (two-model mode, one stream) against
           llama-speculative (--temp 0), decode tok/s and drafts accepted (llama-server with -md and
           one greedy /completion when the pack has no llama-speculative); each engine's plain
           decode of the same target is in the decode rows.
--deadline-s (540) stops a tool still running then, so the run ends within a device command's
10 minutes. Every step tolerates failure: a tool that fails or times out leaves a record with its error and
the run goes on. Output in OUT_DIR (--out, else $OUT, else build/h200-peer): h200_peer.json (the
records, the ratios hearth / llama.cpp and each command with its exit status and seconds), h200_peer.md (the table of ratios) and
logs/ (each tool's output). Measurements, never assertions.

  python3 tools/h200_peer.py [--out DIR] [--hearth-bin DIR] [--llama-bin DIR] [--models DIR] ...
  (--help lists every option; `--shape tiny --device cpu` runs the same steps on a tiny file.)
"""
import argparse
import datetime
import json
import os
import re
import shlex
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KINDS = ("bf16", "q4_0", "mixed", "kq")
SHAPES = ("1b", "8b", "mid", "tiny")
# bench/bench_spec.c's first prompt, so both engines draft over the same text
SPEC_PROMPT = ("Write a short story about a lighthouse keeper. Please answer in plain English, with complete "
               "sentences and without lists, as if talking to a curious friend who has a few minutes to listen.")


# ---- parsers of each tool's output (pure functions, tested on the tools' real output)

def parse_hearth_bench(text):
    """bench_cuda's JSON lines -> {"decode": rec, "prefill": rec, "streams": {n: rec}}."""
    out = {"streams": {}}
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        rec = json.loads(line)
        if rec.get("what") == "streams":
            out["streams"][int(rec["n"])] = rec
        elif rec.get("what") in ("decode", "prefill", "load"):
            out[rec["what"]] = rec
    return out


def parse_llama_bench(text):
    """llama-bench -o json -> [{n_prompt, n_gen, n_depth, avg_ts, stddev_ts, type_k, type_v, ...}]."""
    start = text.find("[")
    if start < 0:
        raise ValueError("no JSON array in llama-bench's output")
    rows = json.loads(text[start:text.rindex("]") + 1])
    for r in rows:
        for k in ("n_prompt", "n_gen", "avg_ts"):
            if k not in r:
                raise ValueError(f"llama-bench record without {k}")
    return rows


def pick_llama_bench(rows, n_prompt, n_gen, n_depth=0):
    hits = [r for r in rows if r["n_prompt"] == n_prompt and r["n_gen"] == n_gen and r.get("n_depth", 0) == n_depth]
    if not hits:
        raise ValueError(f"llama-bench has no test pp{n_prompt} tg{n_gen} d{n_depth}")
    return hits[0]


BB_COLS = ("pp", "tg", "pl", "n_kv", "t_pp", "speed_pp", "t_tg", "speed_tg", "t", "speed")


def parse_batched_bench(text):
    """llama-batched-bench's table rows (or its --output-format jsonl lines) -> [{pp, tg, pl, ...}]."""
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and '"speed_tg"' in line:
            r = json.loads(line)
            rows.append({k: r[k] for k in BB_COLS})
            continue
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) != len(BB_COLS) or not re.fullmatch(r"\d+", cells[0]):
            continue  # the header and the rule
        vals = [int(c) for c in cells[:4]] + [float(c) for c in cells[4:]]
        rows.append(dict(zip(BB_COLS, vals)))
    if not rows:
        raise ValueError("no result rows in llama-batched-bench's output")
    return rows


def parse_speculative(text):
    """llama-speculative's summary -> {decoded, seconds, tok_s, n_draft, n_drafted, n_accept, accept}."""
    m = re.search(r"decoded\s+(\d+) tokens in\s+([\d.]+) seconds, speed:\s+([\d.]+) t/s", text)
    if not m:
        raise ValueError("no 'decoded N tokens' line in llama-speculative's output")
    out = {"decoded": int(m.group(1)), "seconds": float(m.group(2)), "tok_s": float(m.group(3))}
    for key in ("n_draft", "n_drafted", "n_accept"):
        k = re.search(rf"^.*\b{key}\s*=\s*(\d+)\s*$", text, re.M)
        if not k:
            raise ValueError(f"no '{key} =' line in llama-speculative's output")
        out[key] = int(k.group(1))
    out["accept"] = out["n_accept"] / out["n_drafted"] if out["n_drafted"] else None
    return out


def parse_bench_spec(text):
    """bench_spec's lines -> {mode: {streams, tok_s, tokens, seconds, steps, drafted, accepted}}."""
    out = {}
    pat = (r"^(\S+)\s+(\d+) streams:\s+([\d.]+) decode tok/s \((\d+) tokens in ([\d.]+) s, wall [\d.]+ s\), "
           r"(\d+) steps, (\d+) drafted, (\d+) accepted")
    for m in re.finditer(pat, text, re.M):
        out[m.group(1)] = {"streams": int(m.group(2)), "tok_s": float(m.group(3)), "tokens": int(m.group(4)),
                           "seconds": float(m.group(5)), "steps": int(m.group(6)), "drafted": int(m.group(7)),
                           "accepted": int(m.group(8))}
    if not out:
        raise ValueError("no result lines in bench_spec's output")
    return out


# ---- the run

class Run:
    def __init__(self, a):
        self.a = a
        self.t0 = time.time()
        self.records = []
        self.commands = []
        self.n_logs = 0
        os.makedirs(os.path.join(a.out, "logs"), exist_ok=True)

    def elapsed(self):
        return time.time() - self.t0

    def env(self, bindir):
        """The environment of a tool in bindir: its pack's lib/ and the CUDA toolkit's lib64 first
        (none for the checkpoint writer: PyTorch brings its own CUDA libraries)."""
        e = dict(os.environ)
        if bindir is None:
            return e
        dirs = [d for d in (os.path.join(bindir, "..", "lib"), os.path.join(bindir, "lib"), self.a.cuda_lib)
                if d and os.path.isdir(d)]
        if e.get("LD_LIBRARY_PATH"):
            dirs.append(e["LD_LIBRARY_PATH"])
        e["LD_LIBRARY_PATH"] = ":".join(dirs)
        return e

    def tool(self, name, argv, bindir, timeout=None):
        """Run one tool; its output goes to logs/NN-name.log. Returns (rc, stdout, stderr)."""
        self.n_logs += 1
        log = os.path.join(self.a.out, "logs", f"{self.n_logs:02d}-{name}.log")
        cmd = " ".join(shlex.quote(x) for x in argv)
        print(f"h200_peer: [{self.elapsed():5.0f} s] {cmd}", file=sys.stderr, flush=True)
        t = time.time()
        limit = min(timeout or self.a.tool_timeout_s, self.a.deadline_s - self.elapsed())
        try:
            if limit < 1:
                raise subprocess.TimeoutExpired(argv, 0)
            r = subprocess.run(argv, capture_output=True, text=True, errors="replace", env=self.env(bindir),
                               timeout=limit, cwd=ROOT)
            rc, so, se = r.returncode, r.stdout, r.stderr
        except subprocess.TimeoutExpired as ex:
            rc, so, se = "timeout", _text(ex.stdout), _text(ex.stderr) + f"\n(stopped after {ex.timeout:.0f} s: "\
                f"--tool-timeout-s {self.a.tool_timeout_s:.0f}, --deadline-s {self.a.deadline_s:.0f})"
        except OSError as ex:
            rc, so, se = "not run", "", str(ex)
        self.commands.append({"cmd": cmd, "rc": rc, "s": round(time.time() - t, 1), "log": os.path.basename(log)})
        with open(log, "w") as f:
            f.write(f"$ {cmd}\n# rc {rc}, {time.time() - t:.1f} s\n--- stdout\n{so}\n--- stderr\n{se}\n")
        return rc, so, se, cmd

    def add(self, rec):
        self.records.append(rec)
        print("h200_peer: " + json.dumps(rec), file=sys.stderr, flush=True)

    def step(self, label, fn):
        """fn() inside the budget; an exception becomes an error record and the run goes on."""
        if self.elapsed() > self.a.budget_s:
            self.add({"step": label, "skipped": f"past the {self.a.budget_s} s budget"})
            return
        try:
            fn()
        except Exception as ex:  # a failed step is a result, not the end of the run
            self.add({"step": label, "error": f"{type(ex).__name__}: {ex}"[:2000]})


def _text(b):
    return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")


def checked(rc, so, se, cmd):
    if rc != 0:
        raise RuntimeError(f"rc {rc}: {cmd}: {(se or so).strip()[-1500:]}")
    return so


def model_path(a, kind):
    return os.path.join(a.models, f"{a.shape}-{kind}.gguf")


def make_models(run, kinds):
    a = run.a
    os.makedirs(a.models, exist_ok=True)
    rc, so, se, cmd = run.tool("write-models", [a.python, os.path.join(ROOT, "tools", "cuda_h200.py"), "write",
                                                a.models, a.shape, ",".join(kinds)], None, timeout=a.write_timeout_s)
    for line in so.splitlines():
        if line.startswith("{"):
            run.add(dict(json.loads(line), step="models"))
    checked(rc, so, se, cmd)


def hearth_kind(run, kind):
    a = run.a
    rc, so, se, cmd = run.tool(f"bench_cuda-{kind}", [os.path.join(a.hearth_bin, "bench_cuda"), model_path(a, kind),
                                                      "--device", a.device, "--gen", str(a.gen), "--prefill",
                                                      str(a.prefill), "--streams", a.streams], a.hearth_bin)
    res = parse_hearth_bench(so)
    model = f"{a.shape}-{kind}"
    if "decode" in res:
        run.add({"what": "decode", "engine": "hearth", "model": model, "tokens": a.gen,
                 "tok_s": res["decode"]["tok_s"], "cmd": cmd})
    if "prefill" in res:
        run.add({"what": "prefill", "engine": "hearth", "model": model, "tokens": a.prefill,
                 "tok_s": res["prefill"]["tok_s"], "cmd": cmd})
    for n, r in sorted(res["streams"].items()):
        run.add({"what": "streams", "engine": "hearth", "model": model, "n": n, "gen": r["gen"],
                 "tok_s": r["agg_tok_s"], "cmd": cmd})
    checked(rc, so, se, cmd)
    want = {"decode", "prefill"} | {f"streams {n}" for n in a.stream_list}
    have = set(res) | {f"streams {n}" for n in res["streams"]}
    if want - have:
        raise RuntimeError(f"bench_cuda printed no {', '.join(sorted(want - have))}: {cmd}")


def ngl(a):
    return "99" if a.device == "cuda" else "0"


def llama_kind(run, kind):
    a = run.a
    model = f"{a.shape}-{kind}"
    rc, so, se, cmd = run.tool(f"llama-bench-{kind}", [os.path.join(a.llama_bin, "llama-bench"), "-m",
                                                       model_path(a, kind), "-p", str(a.prefill), "-n", str(a.gen),
                                                       "-ngl", ngl(a), "-fa", "1", "-r", str(a.reps), "-o", "json"],
                               a.llama_bin)
    rows = parse_llama_bench(checked(rc, so, se, cmd))
    tg, pp = pick_llama_bench(rows, 0, a.gen), pick_llama_bench(rows, a.prefill, 0)
    run.add({"what": "decode", "engine": "llama.cpp", "model": model, "tokens": a.gen, "tok_s": tg["avg_ts"],
             "stddev": tg.get("stddev_ts"), "backends": tg.get("backends"), "gpu": tg.get("gpu_info"), "cmd": cmd})
    run.add({"what": "prefill", "engine": "llama.cpp", "model": model, "tokens": a.prefill, "tok_s": pp["avg_ts"],
             "stddev": pp.get("stddev_ts"), "cmd": cmd})


def llama_streams(run, kind):
    a = run.a
    model = f"{a.shape}-{kind}"
    n_ctx = max(a.stream_list) * (32 + a.gen) + 256
    rc, so, se, cmd = run.tool(f"llama-batched-bench-{kind}",
                               [os.path.join(a.llama_bin, "llama-batched-bench"), "-m", model_path(a, kind),
                                "-c", str(n_ctx), "-b", "2048", "-ub", "512", "-npp", "32", "-ntg", str(a.gen),
                                "-npl", a.streams, "-ngl", ngl(a), "-fa", "on"], a.llama_bin)
    rows = parse_batched_bench(checked(rc, so, se, cmd) + "\n" + se)  # the table is on stdout, logs on stderr
    for n in a.stream_list:
        r = [x for x in rows if x["pl"] == n]
        if not r:
            raise RuntimeError(f"llama-batched-bench has no row for {n} streams: {cmd}")
        r = r[0]
        run.add({"what": "streams", "engine": "llama.cpp", "model": model, "n": n, "gen": r["tg"],
                 "tok_s": r["pl"] * r["tg"] / r["t"], "decode_only_tok_s": r["speed_tg"], "cmd": cmd})


def kv_step(run):
    a = run.a
    model = f"{a.shape}-{a.kv_kind}"
    rc, so, se, cmd = run.tool("bench_cuda-kv", [os.path.join(a.hearth_bin, "bench_cuda"), model_path(a, a.kv_kind),
                                                 "--device", a.device, "--gen", str(a.kv_gen), "--kv-quant", "8",
                                                 "--depth", str(a.kv_depth)], a.hearth_bin)
    res = parse_hearth_bench(checked(rc, so, se, cmd))
    if "decode" not in res:
        raise RuntimeError(f"bench_cuda printed no decode: {cmd}")
    run.add({"what": "kv_q8_decode", "engine": "hearth", "model": model, "depth": res["decode"].get("depth"),
             "tokens": a.kv_gen, "tok_s": res["decode"]["tok_s"], "cmd": cmd})


def kv_llama(run):
    a = run.a
    model = f"{a.shape}-{a.kv_kind}"
    rc, so, se, cmd = run.tool("llama-bench-kv", [os.path.join(a.llama_bin, "llama-bench"), "-m",
                                                  model_path(a, a.kv_kind), "-p", "0", "-n", str(a.kv_gen), "-d",
                                                  str(a.kv_depth), "-ctk", "q8_0", "-ctv", "q8_0", "-fa", "1",
                                                  "-ngl", ngl(a), "-r", str(a.kv_reps), "-o", "json"], a.llama_bin)
    r = pick_llama_bench(parse_llama_bench(checked(rc, so, se, cmd)), 0, a.kv_gen, a.kv_depth)
    run.add({"what": "kv_q8_decode", "engine": "llama.cpp", "model": model, "depth": r["n_depth"],
             "tokens": a.kv_gen, "tok_s": r["avg_ts"], "type_k": r.get("type_k"), "cmd": cmd})


def spec_hearth(run):
    a = run.a
    threads = str(min(8, os.cpu_count() or 1))
    rc, so, se, cmd = run.tool("bench_spec", [os.path.join(a.hearth_bin, "bench_spec"), model_path(a, "bf16"),
                                              model_path(a, "q4_0"), threads, str(a.spec_gen), "1", a.device,
                                              str(a.n_draft)], a.hearth_bin)
    try:
        res = parse_bench_spec(so)
    except ValueError:
        checked(rc, so, se, cmd)  # a failed run says why; a run that printed nothing usable, the parser
        raise
    if "two-model" not in res:
        checked(rc, so, se, cmd)
        raise RuntimeError(f"bench_spec printed no two-model line: {cmd}")
    r = res["two-model"]
    run.add({"what": "spec", "engine": "hearth", "model": f"{a.shape}-bf16+q4_0", "n_draft": a.n_draft,
             "tokens": r["tokens"], "tok_s": r["tok_s"], "drafted": r["drafted"], "accepted": r["accepted"],
             "accept": r["accepted"] / r["drafted"] if r["drafted"] else None,
             "plain_tok_s": res.get("plain", {}).get("tok_s"), "cmd": cmd})


def spec_llama(run):
    a = run.a
    if not os.access(os.path.join(a.llama_bin, "llama-speculative"), os.X_OK) and \
            os.access(os.path.join(a.llama_bin, "llama-server"), os.X_OK):
        return spec_llama_server(run)
    rc, so, se, cmd = run.tool("llama-speculative", [os.path.join(a.llama_bin, "llama-speculative"), "-m",
                                                     model_path(a, "bf16"), "-md", model_path(a, "q4_0"), "-ngl",
                                                     ngl(a), "-ngld", ngl(a), "-fa", "on", "-c", "2048", "--temp",
                                                     "0", "--seed", "1", "-n", str(a.spec_gen),
                                                     "--spec-draft-n-max", str(a.n_draft), "-p", SPEC_PROMPT],
                               a.llama_bin)
    r = parse_speculative(checked(rc, so, se, cmd) + "\n" + se)
    run.add({"what": "spec", "engine": "llama.cpp", "model": f"{a.shape}-bf16+q4_0", "n_draft": r["n_draft"],
             "tokens": r["decoded"], "tok_s": r["tok_s"], "drafted": r["n_drafted"], "accepted": r["n_accept"],
             "accept": r["accept"], "cmd": cmd})


def spec_llama_server(run):
    """The same greedy two-model drafting through llama-server (127.0.0.1, one slot), for a pack
    without llama-speculative: one /completion request, its timings and draft counters."""
    a = run.a
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [os.path.join(a.llama_bin, "llama-server"), "-m", model_path(a, "bf16"), "-md", model_path(a, "q4_0"),
            "-ngl", ngl(a), "-ngld", ngl(a), "-fa", "on", "-c", "2048", "-np", "1", "--spec-type", "draft-simple",
            "--spec-draft-n-max",
            str(a.n_draft), "--spec-draft-p-min", "0", "--host", "127.0.0.1", "--port", str(port)]
    cmd = " ".join(shlex.quote(x) for x in argv)
    run.n_logs += 1
    log = open(os.path.join(a.out, "logs", f"{run.n_logs:02d}-llama-server-spec.log"), "w")
    log.write(f"$ {cmd}\n")
    log.flush()
    print(f"h200_peer: [{run.elapsed():5.0f} s] {cmd}", file=sys.stderr, flush=True)
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=run.env(a.llama_bin), cwd=ROOT)
    res, t0 = None, time.time()
    try:
        end = time.time() + min(a.tool_timeout_s, a.deadline_s - run.elapsed())
        url = f"http://127.0.0.1:{port}"
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"llama-server exited with rc {proc.returncode} (log {log.name}): {cmd}")
            if time.time() > end:
                raise RuntimeError(f"llama-server was not ready in time: {cmd}")
            try:
                with urllib.request.urlopen(url + "/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except (OSError, urllib.error.URLError):
                pass
            time.sleep(0.5)
        body = json.dumps({"prompt": SPEC_PROMPT, "n_predict": a.spec_gen, "temperature": 0, "top_k": 1,
                           "ignore_eos": True, "cache_prompt": False}).encode()
        req = urllib.request.Request(url + "/completion", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=max(1, end - time.time())) as r:
            res = json.loads(r.read())
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.write("\n--- /completion\n" + json.dumps(res, indent=1) + "\n")
        log.close()
        run.commands.append({"cmd": cmd, "rc": proc.returncode, "s": round(time.time() - t0, 1),
                             "log": os.path.basename(log.name)})
    t = res.get("timings") or {}
    if "predicted_per_second" not in t or "draft_n" not in t:
        raise RuntimeError(f"llama-server's /completion has no timings with draft counts: {cmd}")
    drafted, accepted = t["draft_n"], t["draft_n_accepted"]
    run.add({"what": "spec", "engine": "llama.cpp", "model": f"{a.shape}-bf16+q4_0", "n_draft": a.n_draft,
             "tokens": t["predicted_n"], "tok_s": t["predicted_per_second"], "drafted": drafted, "accepted": accepted,
             "accept": accepted / drafted if drafted else None, "via": "llama-server", "cmd": cmd})


# ---- the report

LABEL = {"decode": "decode, 1 stream, {tokens} tokens", "prefill": "prefill, {tokens}-token prompt",
         "streams": "{n} streams, 32 + {gen} tokens each (generated / wall)",
         "kv_q8_decode": "decode at depth {depth}, q8_0 KV", "spec": "speculative, draft {n_draft}: decode"}


def ratios(records):
    """hearth / llama.cpp for each measurement both engines have (same what, model and stream count)."""
    key = lambda r: (r["what"], r["model"], r.get("n"))
    h = {key(r): r for r in records if r.get("engine") == "hearth" and "tok_s" in r}
    out = []
    for r in records:
        if r.get("engine") != "llama.cpp" or "tok_s" not in r:
            continue
        hr = h.get(key(r))
        if hr is None:
            continue
        out.append({"what": r["what"], "model": r["model"], "n": r.get("n"),
                    "label": LABEL[r["what"]].format(**{**hr, **{k: v for k, v in r.items() if v is not None}}),
                    "hearth_tok_s": hr["tok_s"], "llamacpp_tok_s": r["tok_s"],
                    "ratio": hr["tok_s"] / r["tok_s"] if r["tok_s"] else None,
                    "hearth_accept": hr.get("accept"), "llamacpp_accept": r.get("accept")})
    return out


def markdown(meta, records, rat):
    lines = [f"# hearth / llama.cpp on {meta.get('gpu') or meta['device']}", "",
             f"{meta['date']}, `{meta['argv']}`; llama.cpp: {meta.get('llamacpp_build', '?')}.", "",
             "| model | measurement | hearth tok/s | llama.cpp tok/s | hearth / llama.cpp |", "|---|---|---|---|---|"]
    for r in rat:
        extra = ""
        if r["what"] == "spec":
            fa = lambda x: "?" if x is None else f"{100 * x:.1f}%"
            extra = f" (accepted {fa(r['hearth_accept'])} / {fa(r['llamacpp_accept'])})"
        ratio = "?" if r["ratio"] is None else f"{r['ratio']:.2f}"
        lines.append(f"| {r['model']} | {r['label']}{extra} | {r['hearth_tok_s']:.1f} | {r['llamacpp_tok_s']:.1f} "
                     f"| **{ratio}** |")
    bad = [r for r in records if "error" in r or "skipped" in r]
    if bad:
        lines += ["", "Steps that did not complete:", ""]
        lines += [f"- {r['step']}: {r.get('error') or r.get('skipped')}".replace("\n", " ")[:400] for r in bad]
    return "\n".join(lines) + "\n"


def device_info(a):
    if a.device != "cuda":
        return "cpu"
    try:
        r = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                           capture_output=True, text=True, timeout=30)
        return r.stdout.strip() or r.stderr.strip()
    except (OSError, subprocess.TimeoutExpired) as ex:
        return f"nvidia-smi: {ex}"


def parse_args(argv):
    ap = argparse.ArgumentParser(description="hearth against llama.cpp on one GPU, same run, same files "
                                             "(the top of this file says what is measured)")
    ap.add_argument("--out", default=os.environ.get("OUT") or os.path.join(ROOT, "build", "h200-peer"),
                    help="output directory (default $OUT, else build/h200-peer)")
    ap.add_argument("--hearth-bin", default=os.path.join(ROOT, "build"), help="holds bench_cuda and bench_spec")
    ap.add_argument("--llama-bin", default=os.path.join(ROOT, "build-xfer", "llamacpp-cuda", "bin"),
                    help="holds llama-bench, llama-batched-bench, llama-speculative")
    ap.add_argument("--models", default=os.path.join(ROOT, "build", "h200-models"),
                    help="where the checkpoints are written (and reused when there)")
    ap.add_argument("--python", default=sys.executable, help="the interpreter for tools/cuda_h200.py (PyTorch)")
    ap.add_argument("--cuda-lib", default="/usr/local/cuda/lib64", help="the CUDA toolkit's libraries")
    ap.add_argument("--shape", default="8b", choices=SHAPES)
    ap.add_argument("--kinds", default="bf16,q4_0,kq", help=f"comma-separated, of {','.join(KINDS)}")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--gen", type=int, default=128, help="decoded tokens (decode, streams)")
    ap.add_argument("--prefill", type=int, default=4096, help="prompt tokens of the prefill measurement")
    ap.add_argument("--streams", default="16,64", help="concurrent sequences, comma-separated")
    ap.add_argument("--reps", type=int, default=3, help="llama-bench repetitions")
    ap.add_argument("--kv-kind", default="q4_0", choices=KINDS, help="the file of the q8_0-KV measurement")
    ap.add_argument("--kv-depth", type=int, default=16384, help="cached tokens before the q8_0-KV decode")
    ap.add_argument("--kv-gen", type=int, default=64, help="decoded tokens at that depth")
    ap.add_argument("--kv-reps", type=int, default=2, help="llama-bench repetitions at that depth")
    ap.add_argument("--spec-gen", type=int, default=128, help="tokens of the speculative runs")
    ap.add_argument("--n-draft", type=int, default=3, help="draft tokens a round")
    ap.add_argument("--steps", default="kinds,kv,spec", help="of kinds,kv,spec")
    ap.add_argument("--engines", default="hearth,llama.cpp", help="of hearth,llama.cpp")
    ap.add_argument("--budget-s", type=float, default=450, help="skip the steps that start later than this")
    ap.add_argument("--tool-timeout-s", type=float, default=240, help="the longest one tool may run")
    ap.add_argument("--deadline-s", type=float, default=540,
                    help="no tool runs past this many seconds from the start (a device command's limit is 600)")
    ap.add_argument("--write-timeout-s", type=float, default=300, help="the longest writing the checkpoints may take")
    a = ap.parse_args(argv)
    kinds = [k for k in a.kinds.split(",") if k]
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        ap.error(f"--kinds: unknown kind {','.join(bad) or '(none)'} (known: {','.join(KINDS)})")
    a.kind_list = kinds
    try:
        a.stream_list = [int(x) for x in a.streams.split(",")]
    except ValueError:
        a.stream_list = []
    if not a.stream_list or any(n < 1 or n > 4096 for n in a.stream_list):
        ap.error(f"--streams: counts of 1 to 4096, comma-separated (16,64), not '{a.streams}'")
    for name in ("gen", "prefill", "reps", "kv_depth", "kv_gen", "kv_reps", "spec_gen", "n_draft"):
        if getattr(a, name) < 1:
            ap.error(f"--{name.replace('_', '-')} must be at least 1, not {getattr(a, name)}")
    a.step_set = set(s for s in a.steps.split(",") if s)
    if not a.step_set or a.step_set - {"kinds", "kv", "spec"}:
        ap.error(f"--steps: of kinds,kv,spec, not '{a.steps}'")
    a.engine_set = set(e for e in a.engines.split(",") if e)
    if not a.engine_set or a.engine_set - {"hearth", "llama.cpp"}:
        ap.error(f"--engines: of hearth,llama.cpp, not '{a.engines}'")
    if "hearth" in a.engine_set:
        for b in ("bench_cuda", "bench_spec"):
            if not os.access(os.path.join(a.hearth_bin, b), os.X_OK):
                ap.error(f"--hearth-bin: no {b} in {a.hearth_bin} (cmake --build build --target bench_cuda "
                         "bench_spec, or tools/pack_device.sh)")
    if "llama.cpp" in a.engine_set and not os.path.isdir(a.llama_bin):
        ap.error(f"--llama-bin: no directory {a.llama_bin} (tools/build_llamacpp_cuda.sh, then unpack "
                 "build-xfer/llamacpp-cuda.tar.xz into build-xfer/)")
    return a


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    run = Run(a)
    hearth, llama = "hearth" in a.engine_set, "llama.cpp" in a.engine_set
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "argv": " ".join(["tools/h200_peer.py"] + [shlex.quote(x) for x in (sys.argv[1:] if argv is None
                                                                                 else argv)]),
            "device": a.device, "gpu": device_info(a), "shape": a.shape}
    info = os.path.join(a.llama_bin, "..", "BUILD-INFO")
    if os.path.exists(info):
        meta["llamacpp_build"] = open(info).readline().strip()
    need = list(a.kind_list) if "kinds" in a.step_set else []
    if "kv" in a.step_set:
        need.append(a.kv_kind)
    if "spec" in a.step_set:
        need += ["bf16", "q4_0"]
    need = list(dict.fromkeys(need))
    run.step("models", lambda: make_models(run, need))
    if "kinds" in a.step_set:
        for kind in a.kind_list:
            if hearth:
                run.step(f"hearth {kind}", lambda k=kind: hearth_kind(run, k))
            if llama:
                run.step(f"llama-bench {kind}", lambda k=kind: llama_kind(run, k))
                run.step(f"llama-batched-bench {kind}", lambda k=kind: llama_streams(run, k))
    if "kv" in a.step_set:
        if hearth:
            run.step("hearth kv", lambda: kv_step(run))
        if llama:
            run.step("llama-bench kv", lambda: kv_llama(run))
    if "spec" in a.step_set:
        if hearth:
            run.step("hearth spec", lambda: spec_hearth(run))
        if llama:
            run.step("llama-speculative", lambda: spec_llama(run))
    meta["seconds"] = round(run.elapsed(), 1)
    rat = ratios(run.records)
    with open(os.path.join(a.out, "h200_peer.json"), "w") as f:
        json.dump({"meta": meta, "records": run.records, "ratios": rat, "commands": run.commands}, f, indent=1)
        f.write("\n")
    md = markdown(meta, run.records, rat)
    with open(os.path.join(a.out, "h200_peer.md"), "w") as f:
        f.write(md)
    sys.stdout.write(md)
    print(f"h200_peer: {len(rat)} ratios, {sum('error' in r for r in run.records)} failed steps, "
          f"{meta['seconds']} s; {a.out}/h200_peer.json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
