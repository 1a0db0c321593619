"""logprobs / top_logprobs (chat) and logprobs (completions) through the OpenAI SDK, checked
against llama.cpp, plus usage.prompt_tokens_details.cached_tokens on a repeated prefix.

The values are checked against the llama.cpp golden of SmolLM2 (tests/golden/llamacpp, made by
tools/golden_llamacpp.py with llama-cpp-python): for the golden's first prompt, sent as token
ids to /v1/completions with greedy decoding, each generated token's logprob must equal
llama.cpp's logit minus its log-sum-exp at that step (each within 0.25 and 0.1 on average:
the two engines' quantized kernels round differently, which moves single logprobs by up to
about 0.15 here; tests/models/test_llamacpp.c bounds the KL divergence), up to the first near
tie, after which the two may continue differently. A wrong normalization (no log-sum-exp,
temperature applied, a softmax over the top-k only) is off by far more. The shapes and invariants of the chat form are checked too: top
alternatives sorted, the greedy choice equal to the first alternative, exp() of the
alternatives summing to at most 1, the stream carrying the same entries as the body.
"""
import math
import pathlib
import struct

import pytest

from conftest import ROOT, smol_server

GOLDEN = ROOT / "tests" / "golden" / "llamacpp" / "smollm2.golden"


def read_golden(path, prompt=0):
    """(prompt ids, greedy ids, [(lse, {id: logit})] per step) of one prompt of a golden."""
    b = pathlib.Path(path).read_bytes()
    assert b[:8] == b"HRTHGOLD"
    V, K, P, G, T, N, B = struct.unpack_from("<7I", b, 16)
    off = 128
    table = [struct.unpack_from("<4I", b, off + 16 * i) for i in range(P)]
    off += 16 * P
    toks = struct.unpack_from(f"<{N}i", b, off)
    off += 4 * N
    gen = struct.unpack_from(f"<{P * G}i", b, off)
    off += 4 * P * G
    R = 4 + 8 * K
    n, first = table[prompt][0], table[prompt][1]
    steps = []
    for s in range(G):
        rec = off + (prompt * G + s) * R
        lse = struct.unpack_from("<f", b, rec)[0]
        pairs = struct.unpack_from(f"<{2 * K}i", b, rec + 4)
        top = {pairs[2 * j]: struct.unpack_from("<f", b, rec + 4 + 8 * j + 4)[0] for j in range(K)}
        steps.append((lse, top))
    return list(toks[first:first + n]), list(gen[prompt * G:(prompt + 1) * G]), steps


@pytest.fixture(scope="module")
def smol():
    yield from smol_server()


def test_completion_logprobs_match_llamacpp(smol):
    prompt, _, steps = read_golden(GOLDEN)
    n = 8
    r = smol.client().completions.create(model="x", prompt=prompt, max_tokens=n, temperature=0, logprobs=5)
    lp = r.choices[0].logprobs
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) == n
    compared, diffs = 0, []
    for s in range(n):
        lse, top = steps[s]
        best = max(top.values())
        assert lp.token_logprobs[s] == pytest.approx(max(lp.top_logprobs[s].values()), abs=1e-6)
        assert len(lp.top_logprobs[s]) <= 5
        assert sum(math.exp(v) for v in lp.top_logprobs[s].values()) <= 1 + 1e-5
        diff = abs(lp.token_logprobs[s] - (best - lse))
        assert diff < 0.25, (s, lp.token_logprobs[s], best - lse)
        diffs.append(diff)
        compared += 1
        second = sorted(top.values())[-2]
        if best - second < 0.1:
            break  # a near tie: the engines may pick different tokens, later steps see other text
    assert compared >= 4 and sum(diffs) / len(diffs) < 0.1
    assert lp.text_offset == [sum(len(t.encode()) for t in lp.tokens[:i]) for i in range(n)]
    assert "".join(lp.tokens) == r.choices[0].text


def test_chat_logprobs_shapes_and_stream(smol):
    c = smol.client()
    kw = dict(model="x", messages=[{"role": "user", "content": "Name three colors."}], max_tokens=12, temperature=0,
              logprobs=True, top_logprobs=4)
    r = c.chat.completions.create(**kw)
    content = r.choices[0].logprobs.content
    assert len(content) == r.usage.completion_tokens >= 8
    assert "".join(e.token for e in content) == r.choices[0].message.content
    for e in content:
        tops = [t.logprob for t in e.top_logprobs]
        assert len(tops) == 4 and tops == sorted(tops, reverse=True)
        assert e.logprob == pytest.approx(tops[0], abs=1e-6)  # greedy picks the most likely
        assert e.token == e.top_logprobs[0].token
        assert e.logprob <= 0 and sum(math.exp(v) for v in tops) <= 1 + 1e-5
        assert bytes(e.bytes) == e.token.encode()
    streamed = []
    for chunk in c.chat.completions.create(stream=True, **kw):
        for ch in chunk.choices:
            if ch.logprobs and ch.logprobs.content:
                streamed += ch.logprobs.content
    assert [(e.token, round(e.logprob, 5)) for e in streamed] == [(e.token, round(e.logprob, 5)) for e in content]
    # without top_logprobs: only the chosen token; without logprobs: null
    r = c.chat.completions.create(**{**kw, "top_logprobs": None, "max_tokens": 3})
    assert all(e.top_logprobs == [] for e in r.choices[0].logprobs.content)
    r = c.chat.completions.create(**{**kw, "logprobs": None, "top_logprobs": None, "max_tokens": 3})
    assert r.choices[0].logprobs is None


def test_cached_tokens_on_repeated_prefix(smol):
    c = smol.client()
    long = " ".join(f"Fact {i}: the number {i} is {'even' if i % 2 == 0 else 'odd'}." for i in range(40))
    msgs = [{"role": "system", "content": long}, {"role": "user", "content": "Is 7 odd?"}]
    first = c.chat.completions.create(model="x", messages=msgs, max_tokens=2, temperature=0)
    again = c.chat.completions.create(model="x", messages=msgs[:1] + [{"role": "user", "content": "Is 8 even?"}],
                                      max_tokens=2, temperature=0)
    assert first.usage.prompt_tokens > 200
    cached = again.usage.prompt_tokens_details.cached_tokens
    assert 200 < cached < again.usage.prompt_tokens  # the shared system prompt, not the new question
