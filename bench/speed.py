#!/usr/bin/env python3
"""speed.py - hearth against llama.cpp on the same GGUF files, the same machine, the same threads,
in one run (`make bench`; bench/README.md).

For each model, thread count and prompt length, each repetition runs both stacks, one after the
other in their own child processes, alternating which goes first:
  hearth     build/hearth benchmark MODEL --prompt-tokens P --tokens T --runs 1 --json --no-record
  llama.cpp  bench/llamacpp_run.py MODEL (llama-cpp-python's C API; requirements/oracle.txt)
Both load the model, warm up, prefill P pseudo-random tokens (pp512; --prompt-tokens 512,4096 adds
pp4096 runs) in chunks of 512 (hearth's prefill chunk, llama.cpp's default ubatch) and decode T
greedy tokens after them (tg128), timing only their own compute. Peak RSS is the child's ru_maxrss
(os.wait4); llama.cpp's has the Python interpreter's own RSS (measured in an idle child)
subtracted so the comparison is of the libraries. Medians over the repetitions, the ratio
hearth / llama.cpp per cell, the time to first token (the prompt's prefill time: a long prompt
gives the TTFT at that length), and decode as a fraction of the roofline:
  roofline tok/s = read bandwidth at that thread count (bench/membw.c) / weight bytes one
                   decoded token reads (every matrix once; the embedding only when it is also the
                   output projection, as the starter models and the 1B shape tie them), as
                   hearth reports it.
Models: the starter models (smollm2, gemma3), and Llama-3.2-1B / Llama-3.1-8B shapes with random
weights in bf16, q4_0, q8_0 and q4_k_m (llama1b-q4_0, ..., llama8b-q4_k_m), made by
bench/llama_shapes.py at set-up into a cache directory and reused (a few minutes the first time).
The machine may be shared: every measurement records the 1-minute load average and the CPU
time other processes took while it ran (from /proc/stat, minus the child's own); figures taken
while others were busy are marked provisional.

Writes JSON (--out, default build/bench/speed.json) and prints a Markdown table (also written
next to the JSON as speed.md). Measurements, never assertions.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = {"smollm2": "SmolLM2-135M-Instruct Q4_1", "gemma3": "Gemma 3 270M Q4_K_M"}
for _s, _label in (("llama1b", "Llama 1B shape"), ("llama8b", "Llama 8B shape")):
    for _t in ("bf16", "q4_0", "q8_0", "q4_k_m"):
        MODELS[f"{_s}-{_t}"] = f"{_label} {_t.upper()}"
HZ = os.sysconf("SC_CLK_TCK")


def busy_jiffies():
    """Busy CPU time of the whole machine so far (every field of /proc/stat's cpu line except idle
    and iowait), in jiffies."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    return sum(v) - v[3] - v[4]


def run_child(cmd, timeout, env=None):
    """Run cmd; returns (stdout, stderr, rc, peak_rss_bytes, wall_s, others_cpu). others_cpu is the
    average number of CPUs that other processes kept busy while it ran."""
    with tempfile.TemporaryFile() as err:
        busy0, t0 = busy_jiffies(), time.monotonic()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, env=env, cwd=ROOT)
        timer = threading.Timer(timeout, p.kill)
        timer.start()
        out = p.stdout.read()
        _, status, ru = os.wait4(p.pid, 0)
        timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.monotonic() - t0
        busy = (busy_jiffies() - busy0) / HZ
        own = ru.ru_utime + ru.ru_stime
        err.seek(0)
        return (out.decode(errors="replace"), err.read().decode(errors="replace"), p.returncode,
                ru.ru_maxrss * 1024, wall, max(0.0, (busy - own) / wall) if wall > 0 else 0.0)


def machine_info():
    info = {"platform": platform.platform(), "cpus": os.cpu_count()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                k, _, v = line.partition(":")
                k = k.strip()
                if k == "model name" and "cpu" not in info:
                    info["cpu"] = v.strip()
                if k == "flags" and "flags" not in info:
                    want = ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
                            "avx_vnni", "amx_int8")
                    info["flags"] = [x for x in v.split() if x in want]
        with open("/proc/meminfo") as f:
            info["mem_total_kb"] = int(f.readline().split()[1])
    except OSError:
        pass
    try:
        info["git_commit"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                            text=True, cwd=ROOT).stdout.strip()
    except OSError:
        pass
    return info


def model_paths(names):
    """{name: path}; the Llama shapes are made (once) by bench/llama_shapes.py."""
    shapes = [n for n in names if n.startswith("llama")]
    out = {}
    if shapes:
        sys.path.insert(0, os.path.join(ROOT, "bench"))
        import llama_shapes
        try:
            out = llama_shapes.ensure(shapes)
        except (ValueError, RuntimeError) as e:
            sys.exit(f"speed.py: {e}")
    for n in names:
        if n not in out:
            if n not in MODELS:
                sys.exit(f"speed.py: unknown model {n!r} (known: {', '.join(MODELS)})")
            out[n] = model_path(n)
    return out


def model_path(name):
    env_key = {"smollm2": "HEARTH_SMOLLM2_GGUF", "gemma3": "HEARTH_GEMMA3_GGUF"}[name]
    p = os.environ.get(env_key)
    if not p:
        p = subprocess.run([os.path.join(ROOT, "scripts", "model-path.sh"), name], capture_output=True,
                           text=True).stdout.strip()
    if not p or not os.path.exists(p):
        sys.exit(f"speed.py: no {name} model (run `make setup`, or set {env_key})")
    return p


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec=".1f"):
    return "-" if x is None else format(x, spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=5, help="repetitions per cell and stack (default 5)")
    ap.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    ap.add_argument("--models", default="smollm2,gemma3",
                    help="models (default smollm2,gemma3; also llama1b-TYPE, llama8b-TYPE with TYPE bf16, q4_0, "
                         "q8_0 or q4_k_m)")
    ap.add_argument("--prompt-tokens", default="512", help="prompt lengths, comma-separated (default 512)")
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--hearth", default=os.path.join(ROOT, "build", "hearth"))
    ap.add_argument("--membw", default=os.path.join(ROOT, "build", "membw"))
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "bench", "speed.json"))
    ap.add_argument("--timeout", type=int, default=600, help="seconds per child process")
    a = ap.parse_args()
    threads = [int(t) for t in a.threads.split(",")]
    models = a.models.split(",")
    prompts = [int(p) for p in a.prompt_tokens.split(",")]
    py = sys.executable
    runner = os.path.join(ROOT, "bench", "llamacpp_run.py")
    for exe in (a.hearth, a.membw):
        if not os.access(exe, os.X_OK):
            sys.exit(f"speed.py: {exe} is missing (make bench builds it)")
    try:
        import llama_cpp
        llama_version = llama_cpp.__version__
    except ImportError:
        sys.exit("speed.py: llama-cpp-python is missing (make oracles installs requirements/oracle.txt)")

    paths = model_paths(models)  # set-up: the Llama shapes are made here the first time
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    info = machine_info()
    info["load_avg_start"] = os.getloadavg()
    print(f"machine: {info.get('cpu')} x{info['cpus']}, load average {info['load_avg_start'][0]:.2f}", flush=True)

    bw = {}
    for t in threads:
        out, err, rc, _, _, others = run_child([a.membw, str(t)], a.timeout)
        if rc != 0:
            sys.exit(f"speed.py: membw failed: {err}")
        bw[t] = json.loads(out) | {"others_cpu": others}
        print(f"read bandwidth, {t} thread(s): {bw[t]['best_gbps']:.1f} GB/s (median {bw[t]['median_gbps']:.1f})",
              flush=True)

    idle = []
    for _ in range(3):
        _, _, rc, rss, _, _ = run_child([py, runner, "--idle"], a.timeout)
        if rc == 0:
            idle.append(rss)
    py_base = med(idle) or 0

    runs = []
    grid = [(m, t, pt) for m in models for t in threads for pt in prompts]
    for rep in range(a.reps):
        for m, t, pt in grid:
            stacks = ["hearth", "llama.cpp"] if rep % 2 == 0 else ["llama.cpp", "hearth"]
            for s in stacks:
                if s == "hearth":
                    cmd = [a.hearth, "benchmark", paths[m], "--prompt-tokens", str(pt), "--tokens",
                           str(a.tokens), "--runs", "1", "--threads", str(t), "--json", "--no-record"]
                else:
                    cmd = [py, runner, paths[m], "--prompt-tokens", str(pt), "--tokens",
                           str(a.tokens), "--threads", str(t)]
                load = os.getloadavg()[0]
                out, err, rc, rss, wall, others = run_child(cmd, a.timeout)
                r = {"rep": rep, "model": m, "threads": t, "prompt": pt, "stack": s, "rc": rc,
                     "peak_rss_bytes": rss, "wall_s": wall, "load_avg": load, "others_cpu": others}
                try:
                    j = json.loads(out.strip().splitlines()[-1])
                except (ValueError, IndexError):
                    j = {}
                if rc != 0 or "decode_tok_s" not in j:
                    r["error"] = (err.strip().splitlines() or ["no output"])[-1]
                    if s == "llama.cpp" and rc == -11:  # SIGSEGV
                        r["error"] = ("killed by SIGSEGV (llama.cpp built with AMX crashes in ggml_backend_amx_mul_mat "
                                      "on some CPUs: bench/README.md, 'A peer without AMX')")
                    print(f"  {m} t={t} pp{pt} {s}: FAILED ({r['error']})", flush=True)
                else:
                    r.update(prefill_tok_s=j["prefill_tok_s"], decode_tok_s=j["decode_tok_s"])
                    if s == "hearth":
                        r.update(weight_read_bytes=j.get("weight_read_bytes"), levers=j.get("levers"))
                    else:
                        r["system_info"] = j.get("system_info")
                    print(f"  rep {rep} {m} t={t} pp{pt} {s:9s}: pp {j['prefill_tok_s']:8.1f}  tg "
                          f"{j['decode_tok_s']:7.1f} tok/s  rss {rss / 2**20:6.1f} MiB  load {load:.2f} "
                          f"others {others:.2f}", flush=True)
                runs.append(r)

    cells = []
    for m, t, pt in grid:
        c = {"model": m, "threads": t, "prompt": pt}
        for s in ("hearth", "llama.cpp"):
            rs = [r for r in runs if r["model"] == m and r["threads"] == t and r["prompt"] == pt and r["stack"] == s
                  and "error" not in r]
            k = "h" if s == "hearth" else "l"
            c[k + "_prefill"] = med([r["prefill_tok_s"] for r in rs])
            c[k + "_decode"] = med([r["decode_tok_s"] for r in rs])
            c[k + "_ttft_s"] = pt / c[k + "_prefill"] if c[k + "_prefill"] else None  # the prompt's prefill time
            c[k + "_rss"] = med([r["peak_rss_bytes"] for r in rs])
            c[k + "_n"] = len(rs)
            c[k + "_others_cpu_max"] = max([r["others_cpu"] for r in rs], default=None)
        if c["l_rss"] is not None:
            c["l_rss_net"] = c["l_rss"] - py_base
        wrb = med([r.get("weight_read_bytes") for r in runs if r["model"] == m and r.get("weight_read_bytes")])
        c["weight_read_bytes"] = wrb
        c["bandwidth_gbps"] = bw[t]["best_gbps"]
        roof = bw[t]["best_gbps"] * 1e9 / wrb if wrb else None
        c["roofline_tok_s"] = roof
        for k in ("prefill", "decode"):
            h, l = c["h_" + k], c["l_" + k]
            c["ratio_" + k] = h / l if h and l else None
        c["ratio_rss"] = c["h_rss"] / c["l_rss_net"] if c.get("h_rss") and c.get("l_rss_net") else None
        c["h_roofline_frac"] = c["h_decode"] / roof if roof and c["h_decode"] else None
        c["l_roofline_frac"] = c["l_decode"] / roof if roof and c["l_decode"] else None
        c["provisional"] = max(c["h_others_cpu_max"] or 0, c["l_others_cpu_max"] or 0) > 0.25
        cells.append(c)

    loads = [r["load_avg"] for r in runs]
    others = [r["others_cpu"] for r in runs]
    result = {
        "started": started, "machine": info, "llama_cpp_python": llama_version,
        "llama_cpp_system_info": next((r.get("system_info") for r in runs if r.get("system_info")), None),
        "hearth_levers": next((r.get("levers") for r in runs if r.get("levers")), None),
        "prompt_tokens": prompts, "gen_tokens": a.tokens, "reps": a.reps,
        "bandwidth": bw, "python_idle_rss_bytes": py_base,
        "load_avg": {"min": min(loads, default=None), "median": med(loads), "max": max(loads, default=None)},
        "others_cpu": {"median": med(others), "max": max(others, default=None)},
        "cells": cells, "runs": runs,
    }
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)

    lines = [
        f"hearth vs llama.cpp (llama-cpp-python {llama_version}), pp{'/'.join(map(str, prompts))} / tg{a.tokens} "
        f"(decoded after the prompt), "
        f"medians of {a.reps} reps; {info.get('cpu')} x{info['cpus']}; {started}",
        "",
        "| model | thr | prompt | prefill hearth | prefill llama.cpp | ratio | TTFT s hearth / llama.cpp | decode hearth | decode llama.cpp | ratio "
        "| roofline tok/s | hearth % roof | llama.cpp % roof | RSS hearth MiB | RSS llama.cpp MiB (net) | ratio |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        pct = lambda x: "-" if x is None else f"{100 * x:.0f}%"
        mib = lambda x: "-" if x is None else f"{x / 2**20:.1f}"
        lines.append(
            f"| {MODELS.get(c['model'], c['model'])}{' (provisional)' if c['provisional'] else ''} | {c['threads']} "
            f"| {c['prompt']} "
            f"| {fmt(c['h_prefill'])} | {fmt(c['l_prefill'])} | {fmt(c['ratio_prefill'], '.2f')} "
            f"| {fmt(c['h_ttft_s'], '.2f')} / {fmt(c['l_ttft_s'], '.2f')} "
            f"| {fmt(c['h_decode'])} | {fmt(c['l_decode'])} | {fmt(c['ratio_decode'], '.2f')} "
            f"| {fmt(c['roofline_tok_s'])} | {pct(c['h_roofline_frac'])} | {pct(c['l_roofline_frac'])} "
            f"| {mib(c['h_rss'])} | {mib(c.get('l_rss_net'))} | {fmt(c['ratio_rss'], '.2f')} |")
    lines += [
        "",
        "read bandwidth: " + ", ".join(f"{t} thr {bw[t]['best_gbps']:.1f} GB/s" for t in threads)
        + f"; weight bytes per token: "
        + ", ".join(f"{c['model']} {c['weight_read_bytes'] / 1e6:.1f} MB" for c in cells if c["threads"] == threads[0]
                    and c["prompt"] == prompts[0] and c["weight_read_bytes"]),
        f"load average during the run: min {fmt(result['load_avg']['min'], '.2f')}, median "
        f"{fmt(result['load_avg']['median'], '.2f')}, max {fmt(result['load_avg']['max'], '.2f')}; CPUs busy with "
        f"other processes: median {fmt(result['others_cpu']['median'], '.2f')}, max "
        f"{fmt(result['others_cpu']['max'], '.2f')}",
        "(provisional) = other processes kept more than a quarter of a CPU busy during some run of that cell.",
        f"hearth levers: {result['hearth_levers']}",
    ]
    table = "\n".join(lines)
    print("\n" + table)
    with open(os.path.splitext(a.out)[0] + ".md", "w") as f:
        f.write(table + "\n")
    print(f"\nwrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
