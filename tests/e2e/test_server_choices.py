"""Several choices per request (`n`, and `best_of` on top) through the official OpenAI SDK.

The engine prefills the prompt once and forks the n sequences off its KV blocks; choice i
samples with seed + i. So each choice must equal a single request with that seed, greedy
choices are all the same, usage counts the prompt once, and the engine's step counters show
the prompt computed once. Streams interleave the choices' chunks by index and end each choice
with its own finish_reason. Completions run on the committed tiny model, chat on SmolLM2.
"""
import json
import time

import openai
import pytest

from conftest import TINY, smol_server
from test_server_openai import Server, complete

PROMPT = "Once upon a time"


@pytest.fixture(scope="module")
def tiny():
    s = Server(TINY)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def tiny_batch2():
    """A batch of 2 and a small KV pool: forks wait for slots, sequences get preempted."""
    s = Server(TINY, "--batch", "2", "--ctx", "256", "--paged-kv-block-size", "4", "--kv-budget", "0.00003")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def smol():
    yield from smol_server()


def idle_stats(s):
    """/stats once the engine has published its last step (nothing running or waiting)."""
    for _ in range(500):
        st = s.stats()
        if st["engine"]["running"] == 0 and st["engine"]["waiting"] == 0:
            return st
        time.sleep(0.01)
    pytest.fail("the engine did not go idle")


# ---- completions ---------------------------------------------------------------------------

def test_completions_choices_are_their_seeds(tiny):
    r = complete(tiny, n=3, temperature=0.8, seed=42, max_tokens=12)
    assert [c.index for c in r.choices] == [0, 1, 2]
    texts = [c.text for c in r.choices]
    assert len(set(texts)) > 1, texts  # different seeds, different choices
    total = 0
    for i, c in enumerate(r.choices):
        one = complete(tiny, temperature=0.8, seed=42 + i, max_tokens=12)
        assert c.text == one.choices[0].text, i
        assert c.finish_reason == one.choices[0].finish_reason
        total += one.usage.completion_tokens
    assert r.usage.prompt_tokens == one.usage.prompt_tokens  # the prompt once
    assert r.usage.completion_tokens == total
    assert r.usage.total_tokens == r.usage.prompt_tokens + total


def test_completions_greedy_choices_are_equal(tiny):
    r = complete(tiny, n=4, temperature=0, max_tokens=10)
    assert len(r.choices) == 4
    assert len(complete(tiny, temperature=0, max_tokens=10, extra_body={"n_cmpl": 2}).choices) == 2  # llama-server's n
    assert len({c.text for c in r.choices}) == 1
    assert r.choices[0].text == complete(tiny, temperature=0, max_tokens=10).choices[0].text


def test_completions_prompt_is_prefilled_once(tiny):
    prompt = "A unique prompt about lighthouses and the sea, told slowly: " + str(time.time_ns())
    before = idle_stats(tiny)["engine"]["step_tokens"]
    r = complete(tiny, prompt=prompt, n=3, temperature=0.7, seed=5, max_tokens=9,
                 extra_body={"ignore_eos": True})
    after = idle_stats(tiny)["engine"]["step_tokens"]
    assert all(c.finish_reason == "length" for c in r.choices)
    computed = r.usage.prompt_tokens - r.usage.prompt_tokens_details.cached_tokens
    # the prompt (less what the cache held) once, then each choice's tokens but its last
    assert after - before == computed + 3 * (9 - 1)


def stream_by_index(s, **kw):
    """(texts by index, finish_reason by index, every chunk) of a streamed completion."""
    chunks = list(s.client().completions.create(stream=True, model="tiny", **kw))
    texts, finish, order = {}, {}, []
    for ch in chunks:
        if not ch.choices:
            continue
        assert len(ch.choices) == 1
        c = ch.choices[0]
        assert c.index not in finish, "a chunk after its choice's finish_reason"
        texts[c.index] = texts.get(c.index, "") + c.text
        order.append(c.index)
        if c.finish_reason:
            finish[c.index] = c.finish_reason
    return texts, finish, chunks, order


def test_completions_stream_interleaves_choices(tiny):
    kw = dict(prompt=PROMPT, n=3, temperature=0.8, seed=7, max_tokens=16)
    texts, finish, chunks, order = stream_by_index(tiny, stream_options={"include_usage": True}, **kw)
    whole = complete(tiny, **kw)
    assert sorted(texts) == [0, 1, 2] and sorted(finish) == [0, 1, 2]
    for c in whole.choices:
        assert texts[c.index] == c.text
        assert finish[c.index] == c.finish_reason
    # interleaved: some chunk of a later choice comes before the last chunk of an earlier one
    assert any(order[j] > order[j + 1] for j in range(len(order) - 1)), order
    assert chunks[-1].usage.prompt_tokens == whole.usage.prompt_tokens
    assert chunks[-1].usage.completion_tokens == whole.usage.completion_tokens


def test_completions_stop_strings_per_choice(tiny):
    kw = dict(temperature=0.9, max_tokens=24, stop=["e "])
    r = complete(tiny, n=3, seed=30, **kw)
    for i, c in enumerate(r.choices):
        one = complete(tiny, seed=30 + i, **kw).choices[0]
        assert (c.text, c.finish_reason) == (one.text, one.finish_reason), i
    assert any(c.finish_reason == "stop" for c in r.choices)
    texts, finish, _, _ = stream_by_index(tiny, prompt=PROMPT, n=3, seed=30, **kw)
    assert [(texts[i], finish[i]) for i in range(3)] == [(c.text, c.finish_reason) for c in r.choices]


def test_completions_logprobs_per_choice(tiny):
    r = complete(tiny, n=2, temperature=0.9, seed=3, max_tokens=6, logprobs=2)
    for c in r.choices:
        lp = c.logprobs
        assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == 6
        assert "".join(lp.tokens) == c.text
    assert r.choices[0].logprobs.tokens != r.choices[1].logprobs.tokens


def test_completions_best_of_keeps_the_most_likely(tiny):
    r = complete(tiny, n=1, best_of=3, temperature=1.0, seed=11, max_tokens=8)
    assert len(r.choices) == 1 and r.choices[0].index == 0
    assert r.choices[0].logprobs is None  # not asked for
    runs = [complete(tiny, temperature=1.0, seed=11 + i, max_tokens=8, logprobs=0) for i in range(3)]
    sums = [sum(x.choices[0].logprobs.token_logprobs) for x in runs]
    best = max(range(3), key=lambda i: (sums[i], -i))
    assert r.choices[0].text == runs[best].choices[0].text
    assert r.usage.completion_tokens == sum(x.usage.completion_tokens for x in runs)
    r2 = complete(tiny, n=2, best_of=3, temperature=1.0, seed=11, max_tokens=8)
    ranked = sorted(range(3), key=lambda i: (-sums[i], i))[:2]
    assert [c.text for c in r2.choices] == [runs[i].choices[0].text for i in ranked]
    assert [c.index for c in r2.choices] == [0, 1]


def test_bad_choices(tiny):
    for kw in [dict(n=0), dict(n=129), dict(n=3, best_of=2), dict(best_of=129),
               dict(n=1, best_of=2, stream=True)]:
        with pytest.raises(openai.BadRequestError) as ei:
            complete(tiny, max_tokens=4, **kw)
        assert ei.value.body["param"] in ("n", "best_of"), (kw, ei.value.body)
    with pytest.raises(openai.BadRequestError) as ei:
        complete(tiny, max_tokens=4, extra_body={"n_cmpl": 0})
    assert ei.value.body["param"] == "n_cmpl"


def test_choices_with_a_small_batch_and_preemption(tiny_batch2):
    """n above --batch: the forks that find no slot run later (the prompt then comes from the
    prefix cache or is recomputed); a pool of a few blocks preempts sequences. Every choice
    still equals its seed alone."""
    kw = dict(prompt=PROMPT + " there was a small house by the river.", temperature=0.8, max_tokens=60,
              extra_body={"ignore_eos": True})
    r = complete(tiny_batch2, n=3, seed=21, **kw)
    for i, c in enumerate(r.choices):
        assert c.text == complete(tiny_batch2, seed=21 + i, **kw).choices[0].text, i
    texts, finish, _, _ = stream_by_index(tiny_batch2, n=3, seed=21, stream_options={"include_usage": True}, **kw)
    assert [texts[i] for i in range(3)] == [c.text for c in r.choices]
    assert idle_stats(tiny_batch2)["engine"]["preemptions"] > 0


# ---- chat (SmolLM2) -----------------------------------------------------------------------

MESSAGES = [{"role": "user", "content": "Name a colour and say why you like it."}]


def test_chat_choices_are_their_seeds(smol):
    c = smol.client()
    r = c.chat.completions.create(model="m", messages=MESSAGES, n=3, temperature=0.8, seed=9, max_tokens=16)
    assert [x.index for x in r.choices] == [0, 1, 2]
    assert len({x.message.content for x in r.choices}) > 1
    for i, x in enumerate(r.choices):
        one = c.chat.completions.create(model="m", messages=MESSAGES, temperature=0.8, seed=9 + i, max_tokens=16)
        assert x.message.content == one.choices[0].message.content, i
        assert x.message.role == "assistant"
    assert r.usage.prompt_tokens == one.usage.prompt_tokens
    g = c.chat.completions.create(model="m", messages=MESSAGES, n=2, temperature=0, max_tokens=12)
    assert g.choices[0].message.content == g.choices[1].message.content


def test_chat_stream_interleaves_and_finishes_each_choice(smol):
    c = smol.client()
    kw = dict(model="m", messages=MESSAGES, n=2, temperature=0.8, seed=4, max_tokens=14)
    whole = c.chat.completions.create(**kw)
    chunks = list(c.chat.completions.create(stream=True, stream_options={"include_usage": True}, **kw))
    text, role, finish = {}, {}, {}
    for ch in chunks[:-1]:
        x = ch.choices[0]
        assert x.index not in finish
        if x.delta.role:
            assert x.index not in role and x.index not in text  # the role comes first, once
            role[x.index] = x.delta.role
        text[x.index] = text.get(x.index, "") + (x.delta.content or "")
        if x.finish_reason:
            finish[x.index] = x.finish_reason
    assert role == {0: "assistant", 1: "assistant"}
    assert [text[i] for i in (0, 1)] == [x.message.content for x in whole.choices]
    assert [finish[i] for i in (0, 1)] == [x.finish_reason for x in whole.choices]
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == whole.usage.completion_tokens


def test_chat_choices_with_structured_output_and_logprobs(smol):
    c = smol.client()
    schema = {"type": "object", "properties": {"colour": {"type": "string", "maxLength": 12}},
              "required": ["colour"], "additionalProperties": False}
    r = c.chat.completions.create(model="m", messages=MESSAGES, n=3, temperature=1.0, seed=2, max_tokens=40,
                                  logprobs=True, top_logprobs=1,
                                  response_format={"type": "json_schema",
                                                   "json_schema": {"name": "c", "schema": schema, "strict": True}})
    for x in r.choices:
        assert x.finish_reason == "stop", x
        assert set(json.loads(x.message.content)) == {"colour"}
        assert "".join(t.token for t in x.logprobs.content) == x.message.content
    # each choice's tokens, its end-of-turn token not among them (nor in the text)
    assert r.usage.completion_tokens == sum(len(x.logprobs.content) for x in r.choices)


def test_chat_choices_with_tools(smol):
    c = smol.client()
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    msgs = [{"role": "user", "content": "What is the weather in Paris?"}]
    r = c.chat.completions.create(model="m", messages=msgs, tools=tools, tool_choice="required", n=2,
                                  temperature=0.7, seed=8, max_tokens=60)
    ids = set()
    for x in r.choices:
        assert x.finish_reason == "tool_calls", x
        for call in x.message.tool_calls:
            assert call.function.name == "get_weather"
            json.loads(call.function.arguments)
            ids.add(call.id)
    assert len(ids) == sum(len(x.message.tool_calls) for x in r.choices)  # ids unique across choices
