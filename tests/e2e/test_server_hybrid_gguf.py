"""The hybrid families served from GGUF (llama.cpp's qwen35 / qwen3next files of
tools/make_deltanet_gguf.py): a greedy chat completion through the official openai SDK gives the
bytes `hearth generate` prints for the same message, token for token (the response's logprobs
carry each token's bytes; these random tiny models emit arbitrary bytes, not UTF-8 text)."""
import subprocess

import pytest

from conftest import ROOT
from test_server_openai import EXE, Server

GOLD = ROOT / "tests" / "golden" / "hf"
MESSAGE = "hello there"
N = 12


@pytest.mark.parametrize("name", ["qwen35_gguf-q8_0.gguf", "qwen3next_gguf-q8_0.gguf"])
def test_greedy_chat_equals_generate(name):
    path = str(GOLD / name)
    gen = subprocess.run([str(EXE), "generate", path, "--prompt", MESSAGE, "--max-tokens", str(N),
                          "--temperature", "0", "--ignore-eos", "--threads", "2"],
                         capture_output=True, timeout=120, cwd=ROOT)
    assert gen.returncode == 0, gen.stderr.decode(errors="replace")
    assert gen.stdout.endswith(b"\n")
    want = gen.stdout[:-1]
    s = Server(path, "--threads", "2")
    try:
        r = s.client().chat.completions.create(
            model="any", messages=[{"role": "user", "content": MESSAGE}], max_tokens=N, temperature=0,
            logprobs=True, extra_body={"ignore_eos": True})
        toks = r.choices[0].logprobs.content
        assert len(toks) == N and r.usage.completion_tokens == N
        got = b"".join(bytes(t.bytes) for t in toks)
        assert got == want, (got, want)
        assert r.choices[0].finish_reason == "length"
    finally:
        s.stop()
