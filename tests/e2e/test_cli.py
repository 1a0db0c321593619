"""The command line as a user meets it: verbs, flags, errors and the generate verb."""
import os
import pathlib
import re

from conftest import ROOT, TINY


def golden_greedy(name, prompt_index):
    """(prompt text, llama.cpp's greedy ids) from tests/golden/llamacpp/<name>.txt."""
    text = (ROOT / "tests" / "golden" / "llamacpp" / f"{name}.txt").read_text()
    blocks = text.split("## prompt ")[1:]
    b = blocks[prompt_index]
    prompt = re.search(r'^prompt: (".*")$', b, re.M).group(1)
    ids = [int(x) for x in re.search(r"^generated ids: (.*)$", b, re.M).group(1).split()]
    return eval(prompt), ids  # the .txt writes the prompt as a Python string literal


def one_line(stderr):
    lines = [l for l in stderr.splitlines() if l.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("hearth: ")
    return lines[0]


def test_version(hearth):
    r = hearth("--version")
    assert r.returncode == 0
    assert re.fullmatch(r"hearth \d+\.\d+\.\d+\n", r.stdout)


def test_help(hearth):
    r = hearth("help")
    assert r.returncode == 0 and "generate" in r.stdout
    r = hearth("help", "generate")
    assert r.returncode == 0 and "--raw" in r.stdout and "--ids" in r.stdout
    r = hearth("help", "nosuchverb")
    assert r.returncode == 2
    assert "nosuchverb" in one_line(r.stderr)


def test_unknown_verb_and_flag(hearth):
    r = hearth("frobnicate")
    assert r.returncode == 2 and "frobnicate" in one_line(r.stderr)
    r = hearth("generate", TINY, "--raw", "--prompt", "x", "--bogus")
    assert r.returncode == 2 and "--bogus" in one_line(r.stderr)
    r = hearth("generate", TINY, "--raw", "--prompt", "x", "--max-tokens", "ten")
    assert r.returncode == 2 and "--max-tokens" in one_line(r.stderr)


def test_missing_and_corrupt_models(hearth, tmp_path):
    r = hearth("generate", str(tmp_path / "nope.gguf"), "--raw", "--prompt", "x")
    assert r.returncode == 1 and "nope.gguf" in one_line(r.stderr)
    data = pathlib.Path(TINY).read_bytes()
    bad = tmp_path / "truncated.gguf"
    bad.write_bytes(data[: len(data) // 2])
    r = hearth("generate", str(bad), "--raw", "--prompt", "x")
    assert r.returncode == 1
    line = one_line(r.stderr)
    assert "truncated.gguf" in line and ("past end" in line or "truncated" in line or "file" in line)
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"NOTAGGUF" + bytes(100))
    r = hearth("generate", str(junk), "--raw", "--prompt", "x")
    assert r.returncode == 1 and "magic" in one_line(r.stderr).lower()


def test_generate_ids_match_llamacpp_greedy(hearth, smollm2):
    prompt, want = golden_greedy("smollm2", 0)
    r = hearth("generate", smollm2, "--raw", "--prompt", prompt, "--max-tokens", "32", "--temperature", "0",
               "--ids", "--ignore-eos")
    assert r.returncode == 0, r.stderr
    got = [int(x) for x in r.stdout.split()]
    assert got == want[:32]


def test_generate_text_and_seeds(hearth):
    args = ["generate", TINY, "--raw", "--prompt", "Once upon a time", "--max-tokens", "12", "--ignore-eos"]
    a = hearth(*args, "--temp", "1.0", "--seed", "7", "--ids")
    b = hearth(*args, "--temp", "1.0", "--seed", "7", "--ids")
    c = hearth(*args, "--temp", "1.0", "--seed", "8", "--ids")
    assert a.returncode == 0 and a.stdout == b.stdout
    assert a.stdout != c.stdout
    assert len(a.stdout.split()) == 12
    t = hearth(*args)
    assert t.returncode == 0 and len(t.stdout) > 0
    assert "generated" in t.stderr and "decode" in t.stderr


def test_model_substring_resolution(hearth, tmp_path):
    for repo in ("models--acme--tiny-one", "models--acme--tiny-two"):
        snap = tmp_path / repo / "snapshots" / ("a" * 40)
        snap.mkdir(parents=True)
        (tmp_path / repo / "refs").mkdir()
        (tmp_path / repo / "refs" / "main").write_text("a" * 40)
        os.symlink(TINY, snap / "model.gguf")
    env = {"HF_HUB_CACHE": str(tmp_path)}
    r = hearth("generate", "acme/tiny", "--raw", "--prompt", "x", "--max-tokens", "2", env=env)
    assert r.returncode == 1
    line = one_line(r.stderr)
    assert "acme/tiny-one" in line and "acme/tiny-two" in line
    r = hearth("generate", "TINY-TWO", "--raw", "--prompt", "x", "--max-tokens", "2", "--ids", env=env)
    assert r.returncode == 0, r.stderr
    assert len(r.stdout.split()) >= 1
    r = hearth("generate", "nothing-like-this", "--raw", "--prompt", "x", env=env)
    assert r.returncode == 1 and "nothing-like-this" in one_line(r.stderr)


def test_verb_help_flag_and_short_version(hearth):
    for verb in ("serve", "generate", "evals", "ls"):
        want = hearth("help", verb)
        assert want.returncode == 0 and want.stdout
        for flag in ("--help", "-h"):
            r = hearth(verb, flag)
            assert (r.returncode, r.stdout) == (0, want.stdout), (verb, flag, r.stderr)
    r = hearth("serve", "some-model", "--port", "1", "--help")  # anywhere among the arguments
    assert r.returncode == 0 and r.stdout == hearth("help", "serve").stdout
    assert "--isolate" in r.stdout and "--unix" in r.stdout and "--paged-kv" in r.stdout
    assert "_engine" not in hearth("help").stdout  # the engine child's verb is internal
    r = hearth("-v")
    assert r.returncode == 0 and r.stdout == hearth("--version").stdout


def test_seed_engine_flags_are_accepted(hearth):
    """--paged-kv (a no-op), --kv-budget 0 and --memory-budget 0 (the defaults) and
    --decode-concurrency (mlx_lm.server's --batch) give the tokens the plain command gives."""
    base = ("generate", TINY, "--raw", "--prompt", "Once upon a time", "--max-tokens", "6", "--ids")
    want = hearth(*base)
    assert want.returncode == 0 and want.stdout.split(), want.stderr
    for extra in (("--paged-kv",), ("--kv-budget", "0"), ("--memory-budget", "0"), ("--decode-concurrency", "2")):
        r = hearth(*base, *extra)
        assert (r.returncode, r.stdout) == (0, want.stdout), (extra, r.stderr)
    r = hearth(*base, "--decode-concurrency", "0")
    assert r.returncode == 2 and "--decode-concurrency" in one_line(r.stderr)


def test_evals_clear(hearth, tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    for _ in range(2):
        r = hearth("benchmark", TINY, "--tokens", "2", "--runs", "1", "--prompt-tokens", "4", env=env)
        assert r.returncode == 0, r.stderr
    assert len(hearth("evals", env=env).stdout.splitlines()) == 3  # a header and two rows
    r = hearth("evals", "--clear", env=env)
    assert r.returncode == 0 and "deleted 2 recorded runs" in r.stdout, r.stdout + r.stderr
    r = hearth("evals", env=env)
    assert r.returncode == 0 and "no recorded runs" in r.stdout
