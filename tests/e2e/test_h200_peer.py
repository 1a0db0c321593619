"""tools/h200_peer.py, the one-run comparison of hearth and llama.cpp on a GPU host, exercised here
on the CPU with the tiny shape of tools/cuda_h200.py: its arguments, hearth's measurements, the
records a failing llama.cpp leaves, and, when the llama.cpp build of tools/build_llamacpp_cuda.sh
is present, every llama.cpp tool it drives on the same files, with each tool's real output parsed.

The llama.cpp binaries are CUDA builds; without a GPU driver they are run against the CUDA
toolkit's stub libcuda, where ggml finds no CUDA device and runs on the CPU. HEARTH_LLAMACPP_BIN
names another directory of them (default: the build directory of tools/build_llamacpp_cuda.sh).
The speeds are not checked, only that each measurement is there, positive and of the sizes asked."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import h200_peer  # noqa: E402

PY = sys.executable
SIZES = ["--shape", "tiny", "--device", "cpu", "--kinds", "bf16,q4_0,kq", "--gen", "8", "--prefill", "64",
         "--streams", "2,4", "--reps", "1", "--kv-depth", "256", "--kv-gen", "4", "--kv-reps", "1", "--spec-gen",
         "8", "--n-draft", "3"]
LLAMA_BIN = os.environ.get("HEARTH_LLAMACPP_BIN") or os.path.join(
    os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "hearth", "llamacpp-cuda", "build", "bin")


def peer(*args, env=None):
    e = dict(os.environ, **(env or {}))
    e.pop("OUT", None)
    return subprocess.run([PY, str(ROOT / "tools" / "h200_peer.py"), *args], capture_output=True, text=True,
                          timeout=600, cwd=ROOT, env=e)


@pytest.fixture(scope="module")
def bench_bins():
    """bench_cuda and bench_spec (built on demand, as the other benchmarks are)."""
    r = subprocess.run(["cmake", "--build", "build", "--target", "bench_cuda", "bench_spec"], cwd=ROOT,
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    return str(ROOT / "build")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("h200-models")
    r = subprocess.run([PY, str(ROOT / "tools" / "cuda_h200.py"), "write", str(d), "tiny", "bf16,q4_0,kq"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    recs = [json.loads(l) for l in r.stdout.splitlines()]
    assert [x["model"] for x in recs] == ["tiny-bf16", "tiny-q4_0", "tiny-kq"] and not any(x["reused"] for x in recs)
    return str(d)


def by(records, **kw):
    return [r for r in records if all(r.get(k) == v for k, v in kw.items())]


def test_bad_arguments_are_refused(tmp_path, bench_bins):
    base = ["--out", str(tmp_path), "--hearth-bin", bench_bins, "--llama-bin", str(tmp_path)]
    cases = [(["--kinds", "bf16,q3"], "unknown kind q3"), (["--streams", "16,0"], "--streams"),
             (["--streams", "a"], "--streams"), (["--gen", "0"], "--gen must be at least 1"),
             (["--steps", "kinds,warp"], "--steps"), (["--engines", "vllm"], "--engines"),
             (["--shape", "70b"], "invalid choice")]
    for extra, msg in cases:
        r = peer(*base, *extra)
        assert r.returncode == 2 and msg in r.stderr, (extra, r.stderr)
    r = peer("--out", str(tmp_path), "--hearth-bin", str(tmp_path), "--llama-bin", str(tmp_path))
    assert r.returncode == 2 and "no bench_cuda in" in r.stderr
    r = peer("--out", str(tmp_path), "--hearth-bin", bench_bins, "--llama-bin", str(tmp_path / "none"))
    assert r.returncode == 2 and "--llama-bin: no directory" in r.stderr
    assert not (tmp_path / "h200_peer.json").exists()


def test_the_writer_keeps_files_that_exist(models):
    r = subprocess.run([PY, str(ROOT / "tools" / "cuda_h200.py"), "write", models, "tiny", "q4_0,mixed"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    recs = {x["model"]: x for x in map(json.loads, r.stdout.splitlines())}
    assert recs["tiny-q4_0"]["reused"] and not recs["tiny-mixed"]["reused"]
    r = subprocess.run([PY, str(ROOT / "tools" / "cuda_h200.py"), "write", models, "tiny", "q4_0,fp8"],
                       capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode != 0 and "fp8" in r.stderr


def test_a_failing_llamacpp_is_recorded_and_hearth_measured(tmp_path, bench_bins, models):
    empty = tmp_path / "no-llama"
    empty.mkdir()
    out = tmp_path / "out"
    r = peer("--out", str(out), "--hearth-bin", bench_bins, "--llama-bin", str(empty), "--models", models, *SIZES)
    assert r.returncode == 0, r.stderr[-3000:]
    j = json.loads((out / "h200_peer.json").read_text())
    rec = j["records"]
    for kind in ("bf16", "q4_0", "kq"):
        m = f"tiny-{kind}"
        assert by(rec, what="decode", engine="hearth", model=m, tokens=8)[0]["tok_s"] > 0
        assert by(rec, what="prefill", engine="hearth", model=m, tokens=64)[0]["tok_s"] > 0
        assert sorted(x["n"] for x in by(rec, what="streams", engine="hearth", model=m)) == [2, 4]
        assert all(x["tok_s"] > 0 and x["gen"] == 8 for x in by(rec, what="streams", engine="hearth", model=m))
    kv = by(rec, what="kv_q8_decode", engine="hearth")
    assert len(kv) == 1 and kv[0]["depth"] == 256 and kv[0]["model"] == "tiny-q4_0" and kv[0]["tok_s"] > 0
    sp = by(rec, what="spec", engine="hearth")
    assert len(sp) == 1 and 0 < sp[0]["accepted"] <= sp[0]["drafted"] and sp[0]["tok_s"] > 0
    # every llama.cpp step failed, was recorded, and the run went on
    failed = {x["step"] for x in rec if "error" in x}
    assert failed == {"llama-bench bf16", "llama-batched-bench bf16", "llama-bench q4_0", "llama-batched-bench q4_0",
                      "llama-bench kq", "llama-batched-bench kq", "llama-bench kv", "llama-speculative"}
    assert all("llama-" in x["error"] for x in rec if "error" in x)
    assert j["ratios"] == []
    md = (out / "h200_peer.md").read_text()
    assert "Steps that did not complete" in md and "llama-speculative:" in md
    assert len(list((out / "logs").iterdir())) == len(j["commands"])
    rcs = {c["log"].split("-", 1)[1].rsplit(".", 1)[0]: c["rc"] for c in j["commands"]}
    assert rcs["llama-bench-bf16"] == "not run" and rcs["llama-speculative"] == "not run"
    assert rcs["bench_cuda-kq"] == 0 and rcs["bench_spec"] == 0 and rcs["write-models"] == 0


def test_a_budget_skips_the_rest(tmp_path, bench_bins, models):
    out = tmp_path / "out"
    r = peer("--out", str(out), "--hearth-bin", bench_bins, "--engines", "hearth", "--models", models,
             "--budget-s", "0", *SIZES)
    assert r.returncode == 0, r.stderr[-3000:]
    rec = json.loads((out / "h200_peer.json").read_text())["records"]
    assert rec and all("skipped" in x for x in rec)
    assert [x["step"] for x in rec] == ["models", "hearth bf16", "hearth q4_0", "hearth kq", "hearth kv", "hearth spec"]
    # past the deadline no tool starts: each step says so, and the run still writes its report
    r = peer("--out", str(out), "--hearth-bin", bench_bins, "--engines", "hearth", "--models", models,
             "--deadline-s", "0", *SIZES)
    assert r.returncode == 0, r.stderr[-3000:]
    rec = json.loads((out / "h200_peer.json").read_text())["records"]
    assert len(rec) == 6 and all("stopped after 0 s" in x["error"] for x in rec), rec


def stub_env(tmp_path):
    """LD_LIBRARY_PATH with the toolkit's stub libcuda when there is no driver, so the CUDA build
    starts, finds no device and runs on the CPU."""
    have = subprocess.run(["sh", "-c", "ldconfig -p | grep -q 'libcuda.so.1 '"]).returncode == 0
    if have:
        return {}
    stub = pathlib.Path("/usr/local/cuda/lib64/stubs/libcuda.so")
    if not stub.exists():
        pytest.skip("no libcuda.so.1 and no CUDA stub library")
    d = tmp_path / "stub"
    d.mkdir()
    (d / "libcuda.so.1").symlink_to(stub)
    return {"LD_LIBRARY_PATH": str(d) + (":" + os.environ["LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH")
                                         else "")}


def need_llama():
    for b in ("llama-bench", "llama-batched-bench", "llama-speculative"):
        if not os.access(os.path.join(LLAMA_BIN, b), os.X_OK):
            pytest.skip(f"no {b} in {LLAMA_BIN} (tools/build_llamacpp_cuda.sh builds it)")


def test_batched_bench_table_and_jsonl_parse_alike(tmp_path, models):
    need_llama()
    env = dict(os.environ, **stub_env(tmp_path))
    args = [os.path.join(LLAMA_BIN, "llama-batched-bench"), "-m", os.path.join(models, "tiny-q4_0.gguf"), "-c",
            "1024", "-npp", "16", "-ntg", "4", "-npl", "1,3", "-ngl", "0", "-t", "2"]
    runs = [subprocess.run(args + extra, capture_output=True, text=True, timeout=300, env=env)
            for extra in ([], ["--output-format", "jsonl"])]
    for r in runs:
        assert r.returncode == 0, r.stderr[-2000:]
    table, jsonl = (h200_peer.parse_batched_bench(r.stdout + "\n" + r.stderr) for r in runs)
    assert "|" in runs[0].stdout and '"speed_tg"' in runs[1].stdout + runs[1].stderr
    for rows in (table, jsonl):
        assert [(x["pp"], x["tg"], x["pl"], x["n_kv"]) for x in rows] == [(16, 4, 1, 20), (16, 4, 3, 60)]
        assert all(x["t"] > 0 and x["speed_tg"] > 0 and abs(x["t"] - x["t_pp"] - x["t_tg"]) < 0.01 for x in rows)
    with pytest.raises(ValueError):
        h200_peer.parse_batched_bench(runs[0].stderr.replace("|", " "))


def test_every_llamacpp_tool_runs_and_parses(tmp_path, bench_bins, models):
    need_llama()
    out = tmp_path / "out"
    r = peer("--out", str(out), "--hearth-bin", bench_bins, "--llama-bin", LLAMA_BIN, "--models", models, *SIZES,
             env=stub_env(tmp_path))
    assert r.returncode == 0, r.stderr[-3000:]
    j = json.loads((out / "h200_peer.json").read_text())
    rec = j["records"]
    assert [x for x in rec if "error" in x or "skipped" in x] == []
    for kind in ("bf16", "q4_0", "kq"):
        m = f"tiny-{kind}"
        assert by(rec, what="decode", engine="llama.cpp", model=m, tokens=8)[0]["tok_s"] > 0
        assert by(rec, what="prefill", engine="llama.cpp", model=m, tokens=64)[0]["tok_s"] > 0
        st = by(rec, what="streams", engine="llama.cpp", model=m)
        assert sorted(x["n"] for x in st) == [2, 4] and all(x["gen"] == 8 and x["tok_s"] > 0 for x in st)
        assert all(x["decode_only_tok_s"] > x["tok_s"] for x in st)  # the wall time holds the prompts too
    kv = by(rec, what="kv_q8_decode", engine="llama.cpp")
    assert len(kv) == 1 and kv[0]["depth"] == 256 and kv[0]["type_k"] == "q8_0" and kv[0]["tok_s"] > 0
    sp = by(rec, what="spec", engine="llama.cpp")
    assert len(sp) == 1 and sp[0]["n_draft"] == 3 and 0 <= sp[0]["accepted"] <= sp[0]["drafted"]
    assert sp[0]["drafted"] > 0 and sp[0]["tokens"] >= 8
    # one ratio per measurement both engines made: 3 kinds x (decode, prefill, 2 stream counts) + kv + spec
    assert len(j["ratios"]) == 3 * 4 + 2 and all(x["ratio"] > 0 for x in j["ratios"])
    md = (out / "h200_peer.md").read_text()
    assert md.count("\n| tiny-") == len(j["ratios"]) and "did not complete" not in md


def test_speculative_through_llama_server(tmp_path, models):
    """A pack without llama-speculative drafts through llama-server: same files, same counters."""
    need_llama()
    if not os.access(os.path.join(LLAMA_BIN, "llama-server"), os.X_OK):
        pytest.skip(f"no llama-server in {LLAMA_BIN}")
    only = tmp_path / "server-only"
    only.mkdir()
    (only / "llama-server").symlink_to(os.path.join(LLAMA_BIN, "llama-server"))
    out = tmp_path / "out"
    r = peer("--out", str(out), "--llama-bin", str(only), "--engines", "llama.cpp", "--steps", "spec",
             "--models", models, *SIZES, env=stub_env(tmp_path))
    assert r.returncode == 0, r.stderr[-3000:]
    rec = json.loads((out / "h200_peer.json").read_text())["records"]
    assert [x for x in rec if "error" in x] == []
    sp = by(rec, what="spec", engine="llama.cpp")
    assert len(sp) == 1 and sp[0]["via"] == "llama-server" and sp[0]["n_draft"] == 3
    assert sp[0]["tokens"] == 8 and 0 <= sp[0]["accepted"] <= sp[0]["drafted"] and sp[0]["drafted"] > 0
    assert sp[0]["tok_s"] > 0
