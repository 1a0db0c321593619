"""What clients of llama-server and vLLM send and call, against `hearth serve` of SmolLM2: the
tokenizer endpoints (/tokenize in both peers' shapes, /detokenize, /apply-template), /props,
the paths without /v1, --alias, the request fields (min_tokens, ignore_eos, n_probs,
cache_prompt, timings, return_progress), and Anthropic thinking blocks in the history. Through
the official openai and anthropic SDKs where they carry the field, raw HTTP otherwise.

Reference values come from outside the endpoint under test: the chat path's own prompt size
(usage.prompt_tokens) for /tokenize and /apply-template, the tokenizer of the GGUF through
gguf-py for the pieces, and the chat prompt of the equivalent OpenAI conversation for the
Anthropic history (Qwen3's template, which renders an assistant turn's reasoning_content).
"""
import contextlib
import json

import anthropic
import pytest

from conftest import smol_server
from test_server_tools import template_server

QWEN3 = "Qwen-Qwen3-0.6B.jinja"


@pytest.fixture(scope="module")
def smol():
    yield from smol_server()


def post(s, path, body):
    st, _, raw = s.raw("POST", path, body)
    return st, json.loads(raw)


def chat_prompt_tokens(s, messages, **kw):
    r = s.client().chat.completions.create(model="x", messages=messages, max_tokens=1, temperature=0, **kw)
    return r.usage.prompt_tokens


MSGS = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name a colour."}]


# --- /tokenize, /detokenize, /apply-template -------------------------------------------------

def test_tokenize_llama_shape(smol):
    text = "Hello world, <|im_end|> héllo"
    st, plain = post(smol, "/tokenize", {"content": text})
    assert st == 200 and set(plain) == {"tokens"} and all(isinstance(t, int) for t in plain["tokens"])
    st, pieces = post(smol, "/tokenize", {"content": text, "with_pieces": True})
    assert [p["id"] for p in pieces["tokens"]] == plain["tokens"]
    assert "".join(p["piece"] for p in pieces["tokens"]) == text  # every piece here is whole UTF-8
    # parse_special (default true) makes the marker one token; false spells it out
    st, lit = post(smol, "/tokenize", {"content": "<|im_end|>", "parse_special": False})
    st, sp = post(smol, "/tokenize", {"content": "<|im_end|>"})
    assert len(sp["tokens"]) == 1 and len(lit["tokens"]) > 1
    # round trip through /detokenize (both peers' keys)
    st, back = post(smol, "/detokenize", {"tokens": plain["tokens"]})
    assert st == 200 and back["content"] == back["prompt"] == text
    # a piece that is not whole UTF-8 comes as its bytes
    st, emoji = post(smol, "/tokenize", {"content": "\U0001F600", "with_pieces": True})
    got = b"".join(bytes(p["piece"]) if isinstance(p["piece"], list) else p["piece"].encode()
                   for p in emoji["tokens"])
    assert got == "\U0001F600".encode()


def test_tokenize_vllm_shape(smol):
    st, r = post(smol, "/tokenize", {"model": "x", "prompt": "Hello world", "return_token_strs": True})
    assert st == 200 and r["count"] == len(r["tokens"]) == len(r["token_strs"]) == 2
    assert r["max_model_len"] == smol.client().models.list().data[0].model_extra["context_window"]
    assert r["token_strs"][1] == "\u0120world"  # the vocabulary's own string (byte-level BPE)
    st, plain = post(smol, "/tokenize", {"prompt": "Hello world"})
    assert plain["token_strs"] is None and plain["tokens"] == r["tokens"]
    # messages: the prompt chat renders, so its size is chat's prompt_tokens
    st, m = post(smol, "/tokenize", {"messages": MSGS})
    assert st == 200 and m["count"] == chat_prompt_tokens(smol, MSGS)
    st, nogen = post(smol, "/tokenize", {"messages": MSGS, "add_generation_prompt": False})
    assert nogen["tokens"] == m["tokens"][:nogen["count"]] and nogen["count"] < m["count"]


def test_apply_template(smol):
    st, r = post(smol, "/apply-template", {"messages": MSGS})
    assert st == 200 and r["prompt"].endswith("<|im_start|>assistant\n") and "Name a colour." in r["prompt"]
    st, t = post(smol, "/tokenize", {"content": r["prompt"]})
    assert len(t["tokens"]) == chat_prompt_tokens(smol, MSGS)


def test_tokenizer_bad_input(smol):
    for path, body, param in [("/tokenize", {}, "content"), ("/tokenize", {"content": 3}, "content"),
                              ("/tokenize", {"prompt": "x", "add_special_tokens": "yes"}, "add_special_tokens"),
                              ("/detokenize", {}, "tokens"), ("/detokenize", {"tokens": [10 ** 9]}, "tokens"),
                              ("/detokenize", {"tokens": [1.5]}, "tokens"),
                              ("/apply-template", {"messages": []}, "messages"),
                              ("/apply-template", {"messages": MSGS, "chat_template": "{{ 1 }}"}, "chat_template"),
                              ("/tokenize", {"messages": MSGS, "chat_template": "x"}, "chat_template"),
                              ("/v1/chat/completions", {"messages": MSGS, "chat_template": "x"}, "chat_template")]:
        st, r = post(smol, path, body)
        assert st == 400 and r["error"]["param"] == param, (path, body, r)


# --- paths without /v1, /props, --alias --------------------------------------------------------

def test_paths_without_v1(smol):
    for path in ["/models", "/models/" + smol.client().models.list().data[0].id]:
        st, _, a = smol.raw("GET", path)
        st1, _, b = smol.raw("GET", "/v1" + path)
        assert st == st1 == 200 and json.loads(a) == json.loads(b)
    st, r = post(smol, "/responses", {"model": "x", "input": "Hi", "max_output_tokens": 2, "temperature": 0})
    assert st == 200 and r["object"] == "response"
    st, _, got = smol.raw("GET", "/responses/" + r["id"])
    assert st == 200 and json.loads(got)["id"] == r["id"]
    assert smol.raw("GET", "/responses/resp_unknown")[0] == 404
    # /embeddings answers exactly as /v1/embeddings does
    a, b = smol.raw("POST", "/embeddings", {"input": "hi"}), smol.raw("POST", "/v1/embeddings", {"input": "hi"})
    assert a[0] == b[0] and json.loads(a[2]).keys() == json.loads(b[2]).keys()
    assert smol.raw("GET", "/nowhere")[0] == 404
    assert smol.raw("DELETE", "/models")[0] == 405


def test_props(smol):
    st, _, raw = smol.raw("GET", "/props")
    p = json.loads(raw)
    m = smol.client().models.list().data[0]
    assert st == 200 and p["n_ctx"] == p["default_generation_settings"]["n_ctx"] == m.model_extra["context_window"]
    assert p["model_alias"] == m.id and p["total_slots"] >= 1
    assert "<|im_start|>" in p["chat_template"] and p["chat_template_usable"] is True
    assert p["eos_token"] == "<|im_end|>" and p["build_info"].startswith("hearth ")
    assert p["modalities"] == {"vision": False, "audio": False}
    assert smol.raw("POST", "/props", {})[0] == 405


def test_alias():
    with contextlib.contextmanager(smol_server)("--alias", "team/model:v1") as s:
        c = s.client()
        assert [m.id for m in c.models.list().data] == ["team/model:v1"]
        assert c.models.retrieve("team/model:v1").id == "team/model:v1"
        r = c.chat.completions.create(model="anything", messages=MSGS, max_tokens=2, temperature=0)
        assert r.model == "team/model:v1"
        assert json.loads(s.raw("GET", "/props")[2])["model_alias"] == "team/model:v1"


def test_alias_flag_errors(hearth, smollm2):
    r = hearth("serve", smollm2, "--alias", "", "--port", "0")
    assert r.returncode == 2 and "--alias" in r.stderr


# --- Anthropic thinking blocks in the history --------------------------------------------------

TOOLS_A = [{"name": "get_weather", "description": "Weather for a city",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
TOOLS_O = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                             "parameters": TOOLS_A[0]["input_schema"]}}]
THOUGHT = "The user wants the weather, so I call the tool."


def test_anthropic_thinking_in_history():
    """thinking (and redacted_thinking) blocks of an assistant turn reach the template as that
    turn's reasoning_content, with tool_use in the same turn too, and count_tokens counts them:
    the prompt equals the chat prompt of the same conversation with reasoning_content."""
    with template_server(QWEN3) as s:
        a = anthropic.Anthropic(base_url=s.base, api_key="none", max_retries=0, timeout=60)

        def turn(blocks):
            return [{"role": "user", "content": "Weather in Paris?"},
                    {"role": "assistant", "content": blocks + [
                        {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1",
                                                  "content": "Sunny, 21 C"}]}]

        def chat(reasoning):
            m = {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}}]}
            if reasoning:
                m["reasoning_content"] = reasoning
            return [{"role": "user", "content": "Weather in Paris?"}, m,
                    {"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 21 C"}]

        def count(blocks):
            return a.messages.count_tokens(model="x", tools=TOOLS_A, messages=turn(blocks)).input_tokens

        think = [{"type": "thinking", "thinking": THOUGHT, "signature": ""}]
        with_t, without = count(think), count([])
        assert with_t > without
        assert with_t == chat_prompt_tokens(s, chat(THOUGHT), tools=TOOLS_O)
        assert without == chat_prompt_tokens(s, chat(None), tools=TOOLS_O)
        # the generating path renders the same prompt
        r = a.messages.create(model="x", max_tokens=1, tools=TOOLS_A, messages=turn(think))
        assert r.usage.input_tokens + (r.usage.cache_read_input_tokens or 0) == with_t
        # several blocks join with newlines; redacted_thinking gives its data
        two = [{"type": "thinking", "thinking": "First.", "signature": ""},
               {"type": "redacted_thinking", "data": "opaque"}]
        assert count(two) == chat_prompt_tokens(s, chat("First.\nopaque"), tools=TOOLS_O)
        # a thinking block needs its text
        st, _, body = s.raw("POST", "/v1/messages/count_tokens",
                            {"model": "x", "messages": turn([{"type": "thinking"}])})
        assert st == 400 and json.loads(body)["type"] == "error"
        # a prefilled (continued) assistant turn with thinking: the chat prompt of the same
        prefill = [{"role": "user", "content": "Say four."},
                   {"role": "assistant", "content": [{"type": "thinking", "thinking": "Easy.", "signature": ""},
                                                     {"type": "text", "text": "Four"}]}]
        n = a.messages.count_tokens(model="x", messages=prefill).input_tokens
        assert n == chat_prompt_tokens(s, [{"role": "user", "content": "Say four."},
                                           {"role": "assistant", "content": "Four", "reasoning_content": "Easy."}])
        assert n > a.messages.count_tokens(model="x", messages=[prefill[0], {
            "role": "assistant", "content": "Four"}]).input_tokens


# --- fields clients send -----------------------------------------------------------------------

SAY = [{"role": "user", "content": "Say OK."}]


def test_min_tokens_and_ignore_eos(smol):
    c = smol.client()
    kw = dict(model="x", messages=SAY, temperature=0, max_tokens=60)
    plain = c.chat.completions.create(**kw)
    n = plain.usage.completion_tokens
    assert plain.choices[0].finish_reason == "stop" and n < 40  # the model ends its turn by itself
    more = c.chat.completions.create(**kw, extra_body={"min_tokens": n + 8})
    assert more.usage.completion_tokens >= n + 8
    assert more.choices[0].message.content.startswith(plain.choices[0].message.content)
    # at or below what the model writes anyway, min_tokens changes nothing
    same = c.chat.completions.create(**kw, extra_body={"min_tokens": n})
    assert same.choices[0].message.content == plain.choices[0].message.content
    # completions too, streamed
    text = "".join(ch.choices[0].text for ch in c.completions.create(
        model="x", prompt="The end.", max_tokens=12, temperature=0, stream=True, extra_body={"min_tokens": 12}))
    full = c.completions.create(model="x", prompt="The end.", max_tokens=12, temperature=0,
                                extra_body={"min_tokens": 12})
    assert full.usage.completion_tokens == 12 and text == full.choices[0].text
    # ignore_eos: the whole max_tokens
    r = c.chat.completions.create(**{**kw, "max_tokens": n + 5}, extra_body={"ignore_eos": True})
    assert r.usage.completion_tokens == n + 5 and r.choices[0].finish_reason == "length"
    for body, param in [({"min_tokens": 61}, "min_tokens"), ({"min_tokens": -1}, "min_tokens"),
                        ({"min_tokens": "3"}, "min_tokens"), ({"cache_prompt": "yes"}, "cache_prompt"),
                        ({"n_probs": 21}, "n_probs"), ({"timings_per_token": 1}, "timings_per_token"),
                        ({"return_progress": "on"}, "return_progress")]:
        st, e = post(smol, "/v1/chat/completions", {"messages": SAY, "max_tokens": 60, **body})
        assert st == 400 and e["error"]["param"] == param, (body, e)


def test_n_probs_and_cache_prompt(smol):
    c = smol.client()
    kw = dict(model="x", messages=SAY, temperature=0, max_tokens=4)
    ref = c.chat.completions.create(**kw, logprobs=True, top_logprobs=3)
    got = c.chat.completions.create(**kw, extra_body={"n_probs": 3, "cache_prompt": True})
    assert got.choices[0].logprobs.content == ref.choices[0].logprobs.content
    assert all(len(t.top_logprobs) == 3 for t in got.choices[0].logprobs.content)
    # an explicit top_logprobs wins over n_probs
    both = c.chat.completions.create(**kw, logprobs=True, top_logprobs=1, extra_body={"n_probs": 3})
    assert all(len(t.top_logprobs) == 1 for t in both.choices[0].logprobs.content)
    kc = dict(model="x", prompt="Once upon a time", temperature=0, max_tokens=4)
    ref = c.completions.create(**kc, logprobs=2)
    got = c.completions.create(**kc, extra_body={"n_probs": 2, "cache_prompt": False})
    assert got.choices[0].logprobs == ref.choices[0].logprobs and len(got.choices[0].logprobs.top_logprobs[0]) == 2
    assert c.chat.completions.create(**kw).choices[0].logprobs is None


def check_timings(t, prompt_tokens, completion_tokens):
    assert t["cache_n"] + t["prompt_n"] == prompt_tokens and t["predicted_n"] == completion_tokens
    assert t["prompt_ms"] > 0 and t["prompt_per_second"] > 0
    if completion_tokens > 1:
        assert t["predicted_ms"] > 0
        assert abs(t["predicted_per_token_ms"] * completion_tokens - t["predicted_ms"]) < 1e-6 * t["predicted_ms"] + 1e-9


def test_timings(smol):
    c = smol.client()
    kw = dict(model="x", messages=SAY, temperature=0, max_tokens=5, extra_body={"ignore_eos": True})
    r = c.chat.completions.create(**kw)
    assert "timings" not in r.model_extra
    r = c.chat.completions.create(model="x", messages=SAY, temperature=0, max_tokens=5,
                                  extra_body={"ignore_eos": True, "timings_per_token": True})
    check_timings(r.model_extra["timings"], r.usage.prompt_tokens, 5)
    chunks = list(c.chat.completions.create(model="x", messages=SAY, temperature=0, max_tokens=5, stream=True,
                                            stream_options={"include_usage": True},
                                            extra_body={"ignore_eos": True, "timings_per_token": True}))
    usage = chunks[-1].usage
    timed = [ch.model_extra["timings"] for ch in chunks if ch.choices]
    assert len(timed) == len([ch for ch in chunks if ch.choices])
    assert [t["predicted_n"] for t in timed] == sorted(t["predicted_n"] for t in timed)
    check_timings(timed[-1], usage.prompt_tokens, 5)
    with contextlib.contextmanager(smol_server)("--timings") as s:
        c = s.client()
        r = c.completions.create(model="x", prompt="Once upon a time", max_tokens=3, temperature=0)
        check_timings(r.model_extra["timings"], r.usage.prompt_tokens, r.usage.completion_tokens)
        chunks = list(c.completions.create(model="x", prompt="Once upon a time", max_tokens=3, temperature=0,
                                           stream=True))
        assert "timings" in chunks[-1].model_extra and "timings" not in chunks[0].model_extra


def test_return_progress(smol):
    """A prompt of several prefill chunks (the engine prefills 512 tokens a step) reports its
    progress before the first token; the events count up to the prompt's size."""
    c = smol.client()
    long = " ".join(f"item{i}" for i in range(200))
    msgs = [{"role": "user", "content": f"Remember these: {long}. Say OK."}]
    chunks = list(c.chat.completions.create(model="x", messages=msgs, temperature=0, max_tokens=2, stream=True,
                                            stream_options={"include_usage": True},
                                            extra_body={"return_progress": True}))
    total, cached = chunks[-1].usage.prompt_tokens, chunks[-1].usage.prompt_tokens_details.cached_tokens
    assert total - cached > 512
    prog = [(i, ch.model_extra["prompt_progress"]) for i, ch in enumerate(chunks)
            if (ch.model_extra or {}).get("prompt_progress")]
    first_text = next(i for i, ch in enumerate(chunks) if ch.choices and ch.choices[0].delta.content)
    assert len(prog) == (total - cached + 511) // 512 and all(i < first_text for i, _ in prog)
    done = [p["processed"] for _, p in prog]
    assert done == sorted(done) and done[-1] == total and done[0] == cached + 512
    assert all(p["total"] == total and p["cache"] == cached and not c for (_, p), c in
               zip(prog, [chunks[i].choices for i, _ in prog]))
    # without the field, no progress chunks; the non-streamed answer accepts it
    plain = list(c.chat.completions.create(model="x", messages=msgs, temperature=0, max_tokens=2, stream=True))
    assert not any((ch.model_extra or {}).get("prompt_progress") for ch in plain)
    r = c.chat.completions.create(model="x", messages=msgs, temperature=0, max_tokens=2,
                                  extra_body={"return_progress": True})
    assert r.choices[0].message.content is not None


@pytest.mark.parametrize("field,value", [
    ("n_indent", 2), ("t_max_predict_ms", 100), ("min_keep", 1), ("post_sampling_probs", True),
    ("return_tokens", True), ("response_fields", ["content"]), ("reasoning_format", "none"),
    ("reasoning_control", True), ("thinking_token_budget", 10), ("include_reasoning", False),
    ("add_generation_prompt", False), ("spaces_between_special_tokens", False), ("return_token_ids", True),
    ("return_tokens_as_token_ids", True), ("return_prompt_text", True), ("logprob_token_ids", [1]),
    ("cache_salt", "s"), ("vllm_xargs", {"a": 1}), ("watermarking", True), ("chat_template", "{{ 1 }}"),
])
def test_peer_fields_hearth_does_not_honour_are_400(smol, field, value):
    """The peers' fields that would change the answer and that hearth does not honour are
    refused by name (docs/server.md's compatibility table), never dropped."""
    st, e = post(smol, "/v1/chat/completions", {"messages": SAY, "max_tokens": 2, field: value})
    assert st == 400 and e["error"]["param"] == field and e["error"]["code"] == "unsupported", e


def test_peer_fields_that_change_nothing_are_accepted(smol):
    extra = {"n_keep": -1, "id_slot": -1, "n_cache_reuse": 256, "cache_prompt": True, "reasoning_format": "auto",
             "add_generation_prompt": True, "priority": 0, "stream_interval": 2, "sse_ping_interval": 10,
             "request_id": "r1", "session_id": "s1", "spaces_between_special_tokens": True,
             "include_reasoning": True, "return_tokens": False}
    c = smol.client()
    a = c.chat.completions.create(model="x", messages=SAY, max_tokens=4, temperature=0, extra_body=extra)
    b = c.chat.completions.create(model="x", messages=SAY, max_tokens=4, temperature=0)
    assert a.choices[0].message.content == b.choices[0].message.content
