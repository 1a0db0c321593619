"""`hearth serve` on the tiny Qwen3.5 checkpoint (gated DeltaNet layers beside full attention,
tests/golden/hf/qwen3_5_text, made by tools/make_deltanet_tiny.py), driven by the OpenAI SDK:
chat requests that share a system prompt reuse its prefix, resuming the linear-attention state
from the snapshot kept at a block boundary (docs/engine.md, "Prefix caching on hybrid models").

The first request computes everything (cached_tokens 0) and keeps state snapshots after blocks
1, 2, 4, 8, 16 of 16 tokens; the second, whose prompt shares the ~300-token system prompt and
differs in the user turn, hits the longest of those inside the share (256 tokens) and takes a
snapshot where the shared chain ends; the third hits there (more than 256, a whole number of
blocks, still short of its prompt). Each answer is the one a server without a prompt cache gives
(greedy, the end of text ignored).
"""
import pytest

from test_server_openai import Server

MODEL = "tests/golden/hf/qwen3_5_text"
SYSTEM = "You are a terse assistant. " * 12
QUESTIONS = ["Say hi.", "Count to three.", "Name a colour."]
BLOCK = 16


def ask(s, question):
    return s.client().chat.completions.create(
        model="qwen3_5_text", temperature=0, max_tokens=6, extra_body={"ignore_eos": True},
        messages=[{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}])


@pytest.fixture(scope="module")
def cold_answers():
    s = Server(MODEL, "--ctx", "512", "--prompt-cache", "0")
    try:
        yield [ask(s, q).choices[0].message.content for q in QUESTIONS]
    finally:
        s.stop()


def test_shared_system_prompt_is_cached(cold_answers):
    s = Server(MODEL, "--ctx", "512")
    try:
        rs = [ask(s, q) for q in QUESTIONS]
        cached = [r.usage.prompt_tokens_details.cached_tokens for r in rs]
        prompt = [r.usage.prompt_tokens for r in rs]
        assert cached[0] == 0
        assert cached[1] == 256  # the snapshot after block 16, inside the shared system prompt
        assert 256 < cached[2] < prompt[2] and cached[2] % BLOCK == 0  # where the second one's chain ended
        assert [r.choices[0].message.content for r in rs] == cold_answers
        pc = s.stats()["prompt_cache"]
        assert (pc["hits"], pc["misses"], pc["hit_tokens"]) == (2, 1, cached[1] + cached[2])
        assert pc["state_snapshots"] > 0 and pc["state_snapshot_bytes"] > 0
        assert "hearth warn" not in s.stderr(), s.stderr()[-2000:]
    finally:
        s.stop()


def test_ssd_cache_is_refused_with_a_message(tmp_path):
    s = Server(MODEL, "--ctx", "512", "--ssd-cache", str(tmp_path / "ssd"))
    try:
        assert "ssd cache: off for qwen3_5_text" in s.stderr()
        r1, r2 = ask(s, QUESTIONS[0]), ask(s, QUESTIONS[1])
        assert r2.usage.prompt_tokens_details.cached_tokens == 256  # the RAM prompt cache still works
        assert r1.usage.prompt_tokens_details.cached_tokens == 0
    finally:
        s.stop()


def test_state_snapshots_flag(hearth):
    s = Server(MODEL, "--ctx", "512", "--state-snapshots", "0")
    try:
        assert "no room for the linear-attention state snapshots" in s.stderr()
        cached = [ask(s, q).usage.prompt_tokens_details.cached_tokens for q in QUESTIONS[:2]]
        assert cached == [0, 0]  # without snapshots no prefix is reused
        assert s.stats()["prompt_cache"]["state_snapshots"] == 0
    finally:
        s.stop()
    s = Server(MODEL, "--ctx", "512", "--state-snapshots", "3")
    try:
        assert "+ 3 state snapshots" in s.stderr()
        assert s.stats()["prompt_cache"]["state_snapshots"] == 3
    finally:
        s.stop()
    r = hearth("serve", MODEL, "--state-snapshots", "-1", "--port", "0", "--no-open", timeout=30)
    assert r.returncode != 0 and "--state-snapshots" in r.stderr
