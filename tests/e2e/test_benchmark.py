"""`hearth benchmark` and `hearth evals`: runs are measured, recorded in the evals database and
listed back. Figures are checked for sanity (positive, consistent with the flags), never for speed."""
import json
import sqlite3

from conftest import TINY

HEADER = ("id created_at kind model model_path version cpu kernels levers threads prompt_tokens gen_tokens runs "
          "prefill_tok_s decode_tok_s peak_rss_bytes load_avg").split()


def raw_rows(hearth, env, *args):
    r = hearth("evals", "--raw", *args, env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].split("\t") == HEADER
    return [dict(zip(HEADER, l.split("\t"))) for l in lines[1:]]


def test_benchmark_records_rows(hearth, tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    r = hearth("evals", env=env)
    assert r.returncode == 0 and "no recorded runs" in r.stdout

    r = hearth("benchmark", TINY, "--tokens", "6", "--runs", "3", "--prompt-tokens", "20", "--threads", "1", env=env)
    assert r.returncode == 0, r.stderr
    assert "prefill" in r.stdout and "decode" in r.stdout and "kernels=" in r.stdout
    assert "recorded as eval 1" in r.stdout
    rows = raw_rows(hearth, env)
    assert len(rows) == 1
    row = rows[0]
    assert row["id"] == "1" and row["kind"] == "benchmark" and row["model_path"] == TINY
    assert (row["threads"], row["prompt_tokens"], row["gen_tokens"], row["runs"]) == ("1", "20", "6", "3")
    assert float(row["prefill_tok_s"]) > 0 and float(row["decode_tok_s"]) > 0
    assert row["kernels"] in ("ref", "scalar", "avx2", "avx512") and f"kernels={row['kernels']}" in row["levers"]
    assert "threads=1" in row["levers"]
    assert int(row["peak_rss_bytes"]) > 1 << 20  # at least the model file and the binary are mapped
    assert float(row["load_avg"]) >= 0

    # --json prints the same figures the row holds; the medians are medians of the runs
    r = hearth("benchmark", TINY, "--tokens", "4", "--runs", "3", "--prompt-tokens", "8", "--threads", "2", "--json",
               env=env)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["eval_id"] == 2 and j["threads"] == 2 and j["runs"] == 3
    assert len(j["decode_runs"]) == 3 and sorted(j["decode_runs"])[1] == j["decode_tok_s"]
    assert sorted(j["prefill_runs"])[1] == j["prefill_tok_s"]
    assert j["weight_read_bytes"] > 0
    newest = raw_rows(hearth, env, "--limit", "1")
    assert len(newest) == 1 and newest[0]["id"] == "2" and newest[0]["threads"] == "2"
    assert float(newest[0]["decode_tok_s"]) == round(j["decode_tok_s"], 3)

    # --no-record leaves the database alone; the plain listing shows both rows, newest first
    r = hearth("benchmark", TINY, "--tokens", "2", "--runs", "1", "--prompt-tokens", "4", "--no-record", env=env)
    assert r.returncode == 0 and "recorded" not in r.stdout
    r = hearth("evals", env=env)
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and len(lines) == 3 and lines[1].split()[0] == "2" and lines[2].split()[0] == "1"


def test_benchmark_bad_input(hearth, tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    r = hearth("benchmark", TINY, "--runs", "0", env=env)
    assert r.returncode == 2 and "--runs" in r.stderr
    r = hearth("benchmark", TINY, "--bogus", env=env)
    assert r.returncode == 2 and "--bogus" in r.stderr
    r = hearth("benchmark", str(tmp_path / "nope.gguf"), env=env)
    assert r.returncode == 1 and "nope.gguf" in r.stderr
    r = hearth("evals", "--limit", "ten", env=env)
    assert r.returncode == 2 and "--limit" in r.stderr
    # nothing was recorded by the failures
    assert raw_rows(hearth, env) == []


def test_evals_refuses_a_newer_schema(hearth, tmp_path):
    db = tmp_path / "hearth" / "evals.sqlite"
    db.parent.mkdir(parents=True)
    c = sqlite3.connect(db)
    c.execute("PRAGMA user_version = 99")
    c.commit()
    c.close()
    r = hearth("evals", env={"XDG_CACHE_HOME": str(tmp_path)})
    assert r.returncode == 1 and "schema 99" in r.stderr
    r = hearth("benchmark", TINY, "--tokens", "2", "--runs", "1", "--prompt-tokens", "4",
               env={"XDG_CACHE_HOME": str(tmp_path)})
    assert r.returncode == 1 and "schema 99" in r.stderr


def test_help_lists_the_verbs(hearth):
    r = hearth("help")
    assert "benchmark" in r.stdout and "evals" in r.stdout
    r = hearth("help", "benchmark")
    assert r.returncode == 0 and "--prompt-tokens" in r.stdout and "--runs" in r.stdout
    r = hearth("help", "evals")
    assert r.returncode == 0 and "--raw" in r.stdout
