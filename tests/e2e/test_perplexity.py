"""`hearth perplexity`: the output format, --json, --chunks, the errors, and agreement with llama.cpp.

The golden (tests/golden/llamacpp/perplexity.json, tools/perplexity_golden.py) holds what
llama-cpp-python computes for the same windows of text_en.txt (n_ctx 256, 3 windows) on the tiny
checkpoint and the starter models. How close hearth must come depends on which llama.cpp build
wrote it (its system_info):

- the AVX-512 build: hearth's default numerics repeat its float order, so the log-probabilities
  agree to ~1e-6 (the teacher-forced golden shows it) and the PPL to far better than 1e-4;
  the tolerance is 1e-4 relative;
- any other build (the AVX2 one, where no AVX-512 CPU was at hand): llama.cpp's AVX2 build itself
  moves each log-probability by up to ~0.3 nats against its AVX-512 build on the starter models
  (mean KL 0.003-0.006 per position, tests/golden/llamacpp/crossbuild.json); over 381 scored
  tokens hearth's PPL was measured 1.7e-3 (SmolLM2), 1.0e-3 (Gemma 3) and 1.1e-4 (tiny) away
  from it, so the tolerance is 5e-3 relative: a wrong window, a missing BOS or a shifted target
  moves the PPL by far more (a third of the tokens of a window of 256 carry ~3 nats each).
"""
import json
import os
import re

import pytest

from conftest import ROOT, TINY

TEXT = "tests/golden/llamacpp/text_en.txt"
GOLDEN = json.loads((ROOT / "tests" / "golden" / "llamacpp" / "perplexity.json").read_text())
LINE = re.compile(r"^((?:\[\d+\]\d+\.\d{4},)+)\nFinal estimate: PPL = (\d+\.\d{4}) \+/- (\d+\.\d{5})\n$")


def run_json(hearth, *args):
    r = hearth("perplexity", *args, "--json", "--device", "cpu")  # llama.cpp's numbers are the CPU's
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_text_output_and_json_agree(hearth):
    r = hearth("perplexity", TINY, TEXT, "--ctx", "64", "--chunks", "2", "--threads", "2", "--device", "cpu")
    assert r.returncode == 0, r.stderr
    m = LINE.match(r.stdout)
    assert m, r.stdout
    running = [float(x) for x in re.findall(r"\[\d+\](\d+\.\d{4}),", m.group(1))]
    assert re.findall(r"\[(\d+)\]", m.group(1)) == ["1", "2"]
    assert float(m.group(2)) == running[-1]
    assert "2 chunks of 64 (31 scored each)" in r.stderr and "tokens scored in" in r.stderr

    j = run_json(hearth, TINY, TEXT, "--ctx", "64", "--chunks", "2", "--threads", "2")
    assert (j["chunks"], j["n_ctx"], j["tokens_scored"]) == (2, 64, 2 * (64 - 32 - 1))
    assert j["tokens"] == GOLDEN["models"]["tiny-qwen2"]["n_tokens"] and j["add_bos"] is False
    assert [round(x, 4) for x in j["running_ppl"]] == running
    assert round(j["ppl"], 4) == float(m.group(2)) and round(j["stderr"], 5) == float(m.group(3))
    assert j["ppl"] == j["running_ppl"][-1] and j["stderr"] > 0
    assert (j["kv_quant"], j["kv_k"], j["kv_v"]) == ("off", "f16", "f16")
    assert j["numerics"]["tier"] == "l1" and j["device"] == "cpu"
    assert j["batch"] == 1 and "prompt cache off" in j["levers"] and j["seconds"] > 0


def test_chunks_select_the_first_windows(hearth):
    three = run_json(hearth, TINY, TEXT, "--ctx", "64", "--chunks", "3")
    one = run_json(hearth, TINY, TEXT, "--ctx", "64", "--chunks", "1")
    assert one["running_ppl"] == three["running_ppl"][:1]  # windows are independent: same bits
    every = run_json(hearth, TINY, TEXT, "--ctx", "64", "--chunks", "1000")
    assert every["chunks"] == every["tokens"] // 64 and every["running_ppl"][:3] == three["running_ppl"]
    # --batch evaluates windows side by side in one step; on the CPU each row's arithmetic does not
    # depend on the others, so the scores are the same bits
    batched = run_json(hearth, TINY, TEXT, "--ctx", "64", "--chunks", "3", "--batch", "3")
    assert batched["batch"] == 3 and batched["running_ppl"] == three["running_ppl"]


def test_a_text_shorter_than_one_window_is_refused(hearth, tmp_path):
    short = tmp_path / "short.txt"
    short.write_text("Only a few words here.\n")
    r = hearth("perplexity", TINY, str(short))
    assert r.returncode == 1 and r.stdout == ""
    assert "tokenizes to" in r.stderr and "one window of --ctx 512 needs at least 512" in r.stderr
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    r = hearth("perplexity", TINY, str(empty), "--ctx", "16")
    assert r.returncode == 1 and "tokenizes to 0 tokens" in r.stderr


def test_bad_arguments_are_refused(hearth, tmp_path):
    missing = tmp_path / "missing.txt"
    r = hearth("perplexity", TINY, str(missing))
    assert r.returncode == 1 and str(missing) in r.stderr and "No such file" in r.stderr
    r = hearth("perplexity", "no-such-model-anywhere.gguf", TEXT)
    assert r.returncode == 1 and r.stderr.startswith("hearth: ")
    for args, what in [((TINY,), "usage: hearth perplexity MODEL FILE"),
                       ((TINY, TEXT, "--chunks", "0"), "--chunks expects an integer"),
                       ((TINY, TEXT, "--ctx", "8"), "--ctx expects an integer"),
                       ((TINY, TEXT, "--frobnicate"), "unknown flag '--frobnicate'"),
                       ((TINY, TEXT, "--kv-quant", "bogus"), "--kv-quant bogus: expected"),  # an engine flag
                       ((TINY, TEXT, "extra"), "unexpected argument 'extra'")]:
        r = hearth("perplexity", *args)
        assert r.returncode == 2 and what in r.stderr, (args, r.stderr)
    r = hearth("help", "perplexity")
    assert r.returncode == 0 and "--chunks N" in r.stdout and "--kv-budget" in r.stdout


def test_the_kv_cache_flag_reaches_the_engine(hearth):
    # --kv-quant is an engine flag (engine_flags.h): the windows run on the cache it names (the
    # tiny checkpoint's heads of 16 cannot be quantized: SmolLM2's of 64)
    path = os.environ.get("HEARTH_SMOLLM2_GGUF")
    if not path:
        pytest.skip("HEARTH_SMOLLM2_GGUF is not set")
    f16 = run_json(hearth, path, TEXT, "--ctx", "64", "--chunks", "2")
    for mode, k in [("8", "q8_0"), ("4", "q4_0")]:
        q = run_json(hearth, path, TEXT, "--ctx", "64", "--chunks", "2", "--kv-quant", mode)
        assert (q["kv_quant"], q["kv_k"], q["kv_v"]) == (mode, k, k)
        assert q["tokens_scored"] == f16["tokens_scored"]
        # a quantized cache gives the attention other inputs: other bits, a PPL near the f16 one
        # (measured on these windows: 8 +0.24%, 4 +0.21%); a broken cache is far off
        assert q["ppl"] != f16["ppl"] and q["ppl"] == pytest.approx(f16["ppl"], rel=0.05)
    r = hearth("perplexity", TINY, TEXT, "--ctx", "64", "--kv-quant", "8")
    assert r.returncode == 1 and "multiple of 32" in r.stderr


def tolerance():
    return 1e-4 if "AVX512 = 1" in GOLDEN["system_info"] else 5e-3


@pytest.mark.parametrize("name", ["tiny-qwen2", "smollm2", "gemma3"])
def test_perplexity_matches_llama_cpp(hearth, name):
    g = GOLDEN["models"][name]
    if name == "tiny-qwen2":
        path = TINY
    else:
        path = os.environ.get("HEARTH_%s_GGUF" % name.upper())
        if not path:
            pytest.skip("HEARTH_%s_GGUF is not set" % name.upper())
    j = run_json(hearth, path, GOLDEN["text"], "--ctx", str(GOLDEN["n_ctx"]), "--chunks", str(g["chunks"]))
    assert (j["tokens"], j["add_bos"], j["chunks"], j["tokens_scored"]) == (g["n_tokens"], g["add_bos"], g["chunks"],
                                                                             g["tokens_scored"])
    tol = tolerance()
    assert j["ppl"] == pytest.approx(g["ppl"], rel=tol)
    assert j["stderr"] == pytest.approx(g["stderr"], rel=3 * tol)  # from a difference of two close sums
