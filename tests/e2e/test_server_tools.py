"""Tool calls, reasoning and exact template numbers of /v1/chat/completions, through the
official OpenAI SDK against `hearth serve` with SmolLM2-135M-Instruct.

The model is far too small to decide to call a tool, so the tests make it emit the markup
deterministically: a greedy few-shot "echo" conversation (three user messages each repeated
verbatim by the assistant) ends with a user message holding the exact text we want back. The
same request without `tools` returns that markup as plain content, which shows that the model
really wrote it and that the server's parser (not the prompt) turned it into `tool_calls`.
What these tests prove is the wiring: tools reach the template, the reply is parsed into
OpenAI's message and stream shapes, tool results round-trip into the next prompt. The parser
itself (every family's format, every byte split) is tested in tests/unit/test_server_toolcall.c.

Reasoning and number spelling need a template that uses them: the server is started with
--chat-template-file pointing at Qwen3's and Qwen2.5's templates from the pinned
llama-cpp-python sdist (scripts/fetch-templates.sh, as test_templates.py uses them); those
tests skip when the templates are not there.
"""
import contextlib
import json
import os
import pathlib

import pytest

from conftest import smol_server

TEMPLATES = pathlib.Path(os.environ.get("HEARTH_TEMPLATES_DIR") or
                         pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache")
                         / "hearth" / "templates" / "llama-cpp-python-0.3.16")
CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}</tool_call>'
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}}]


def echo(final):
    shots = ["hello world", '<b>{"a": 1}</b>', '<x>{"name": "f", "arguments": {"k": "v"}}</x>']
    msgs = [{"role": "system", "content": "Repeat the user's message exactly."}]
    for s in shots:
        msgs += [{"role": "user", "content": s}, {"role": "assistant", "content": s}]
    return msgs + [{"role": "user", "content": final}]


@pytest.fixture(scope="module")
def smol():
    yield from smol_server()


@contextlib.contextmanager
def template_server(name):
    t = TEMPLATES / name
    if not t.exists():
        pytest.skip(f"{t} is missing (make setup runs scripts/fetch-templates.sh)")
    yield from smol_server("--chat-template-file", str(t))


def test_tool_call_non_stream(smol):
    c = smol.client()
    kw = dict(model="x", messages=echo(CALL), temperature=0, max_tokens=60)
    plain = c.chat.completions.create(**kw)
    assert plain.choices[0].message.content == CALL  # the model writes the markup itself
    assert plain.choices[0].message.tool_calls is None
    r = c.chat.completions.create(tools=TOOLS, **kw)
    ch = r.choices[0]
    assert ch.finish_reason == "tool_calls"
    assert ch.message.content is None
    assert len(ch.message.tool_calls) == 1
    tc = ch.message.tool_calls[0]
    assert tc.type == "function" and tc.function.name == "get_weather"
    assert json.loads(tc.function.arguments) == {"city": "Paris", "days": 2}
    assert tc.id.startswith("call_") and len(tc.id) == 29
    # tool_choice "none": tools are not offered and replies are not parsed
    r = c.chat.completions.create(tools=TOOLS, tool_choice="none", **kw)
    assert r.choices[0].message.content == CALL and r.choices[0].finish_reason == "stop"
    # a named function is accepted; a name that is not in tools is a 400 (test_server_openai)
    r = c.chat.completions.create(tools=TOOLS, tool_choice={"type": "function", "function": {"name": "get_weather"}},
                                  **kw)
    assert r.choices[0].message.tool_calls[0].function.name == "get_weather"


def test_tool_call_stream(smol):
    c = smol.client()
    stream = c.chat.completions.create(model="x", messages=echo(CALL), temperature=0, max_tokens=60, tools=TOOLS,
                                       stream=True, stream_options={"include_usage": True})
    content, calls, finish, usage, tool_deltas = "", {}, None, None, []
    for chunk in stream:
        if chunk.usage:
            usage = chunk.usage
        for ch in chunk.choices:
            d = ch.delta
            content += d.content or ""
            for t in d.tool_calls or []:  # accumulate as OpenAI clients do
                tool_deltas.append(t)
                cur = calls.setdefault(t.index, {"id": None, "name": "", "arguments": ""})
                cur["id"] = t.id or cur["id"]
                cur["name"] += t.function.name or ""
                cur["arguments"] += t.function.arguments or ""
            finish = ch.finish_reason or finish
    assert finish == "tool_calls" and content == ""
    assert list(calls) == [0]
    assert calls[0]["name"] == "get_weather" and json.loads(calls[0]["arguments"]) == {"city": "Paris", "days": 2}
    assert calls[0]["id"].startswith("call_")
    assert usage.completion_tokens > 10
    # OpenAI's shape: a first delta with index, id, type and name and empty arguments, then the
    # arguments in pieces as the model writes them (one per token here), without id or name
    first, rest = tool_deltas[0], tool_deltas[1:]
    assert first.id == calls[0]["id"] and first.type == "function" and first.function.name == "get_weather"
    assert first.function.arguments == ""
    assert len(rest) >= 5 and all(t.id is None and t.function.name is None and t.index == 0 for t in rest)
    assert all(t.function.arguments for t in rest)


def test_tool_result_round_trip(smol):
    """The assistant's tool_calls and the tool's result go back into the next prompt."""
    c = smol.client()
    first = c.chat.completions.create(model="x", messages=echo(CALL), temperature=0, max_tokens=60, tools=TOOLS)
    msg = first.choices[0].message
    history = echo(CALL) + [msg.model_dump(exclude_none=True)]

    def follow_up(result):
        r = c.chat.completions.create(model="x", temperature=0, max_tokens=8, tools=TOOLS, messages=history + [
            {"role": "tool", "tool_call_id": msg.tool_calls[0].id, "content": result}])
        assert r.choices[0].finish_reason in ("stop", "length", "tool_calls")
        return r.usage.prompt_tokens

    short, long = follow_up("21"), follow_up("21 degrees and sunny, light wind from the west")
    assert long > short  # the tool message's content reached the prompt
    # arguments given as an object (not a string) are accepted too
    h2 = [dict(m) for m in history]
    h2[-1]["tool_calls"] = [dict(h2[-1]["tool_calls"][0], function={"name": "get_weather", "arguments": {"city": "P"}})]
    r = c.chat.completions.create(model="x", messages=h2 + [{"role": "tool", "tool_call_id": "x", "content": "1"}],
                                  max_tokens=2, temperature=0)
    assert r.usage.prompt_tokens > 0


def test_reasoning_split_and_effort():
    with template_server("Qwen-Qwen3-0.6B.jinja") as s:
        c = s.client()
        text = "<think>\nThe sum is easy.\n</think>\n\nFour."
        kw = dict(model="x", messages=echo(text), temperature=0, max_tokens=40)
        r = c.chat.completions.create(**kw)
        m = r.choices[0].message
        reasoning = m.model_extra.get("reasoning_content")
        assert reasoning == "The sum is easy."
        assert "<think>" not in (m.content or "") and "</think>" not in (m.content or "")
        streamed, content = "", ""
        for chunk in c.chat.completions.create(stream=True, **kw):
            for ch in chunk.choices:
                streamed += (ch.delta.model_extra or {}).get("reasoning_content") or ""
                content += ch.delta.content or ""
        assert streamed == reasoning and content == (m.content or "")
        # reasoning_effort "none" turns the template's thinking off (Qwen3 then writes an empty
        # think block into the prompt); chat_template_kwargs wins over it
        base = c.chat.completions.create(**{**kw, "max_tokens": 1}).usage.prompt_tokens
        off = c.chat.completions.create(reasoning_effort="none", **{**kw, "max_tokens": 1}).usage.prompt_tokens
        on = c.chat.completions.create(reasoning_effort="none", extra_body={"chat_template_kwargs": {
            "enable_thinking": True}}, **{**kw, "max_tokens": 1}).usage.prompt_tokens
        assert off > base and on == base


def test_tool_schema_numbers_keep_their_spelling():
    """Qwen2.5's template prints the tools with tojson: 1.0 must stay 1.0 (Python keeps 1 and
    1.0 apart), so the prompts differ by the extra characters."""
    with template_server("Qwen-Qwen2.5-7B-Instruct.jinja") as s:
        def n_prompt(minimum):
            body = ('{"model": "x", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}], "tools": '
                    '[{"type": "function", "function": {"name": "f", "parameters": {"type": "object", '
                    '"properties": {"n": {"type": "number", "minimum": %s}}}}}]}' % minimum)
            st, _, b = s.raw("POST", "/v1/chat/completions", body.encode())
            assert st == 200, b
            return json.loads(b)["usage"]["prompt_tokens"]

        assert n_prompt("1.0") > n_prompt("1")
        assert n_prompt("1.0") == n_prompt("2.0")


def test_anthropic_and_responses_schemas_keep_their_spelling():
    """The Messages and Responses paths build their chat body from the request: a schema's
    1.0 (and a past call's 2.0) must still reach Qwen2.5's tojson as written, so each prompt
    is exactly the chat path's prompt for the same JSON text."""
    import anthropic
    with template_server("Qwen-Qwen2.5-7B-Instruct.jinja") as s:
        def schema(minimum):
            return {"type": "object", "properties": {"n": {"type": "number", "minimum": minimum}}}

        def chat_tokens(minimum, history=None):
            msgs = [{"role": "user", "content": "hi"}]
            if history:
                msgs += [{"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
                          "function": {"name": "f", "arguments": '{"n": %s}' % history}}]},
                         {"role": "tool", "tool_call_id": "c1", "content": "ok"}]
            r = s.client().chat.completions.create(model="x", max_tokens=1, messages=msgs, tools=[
                {"type": "function", "function": {"name": "f", "parameters": schema(minimum)}}])
            return r.usage.prompt_tokens

        ac = anthropic.Anthropic(base_url=s.base, api_key="none", max_retries=0, timeout=60)

        def messages_tokens(minimum, history=False):
            msgs = [{"role": "user", "content": "hi"}]
            if history:
                msgs += [{"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "f",
                                                            "input": {"n": 2.0}}]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "ok"}]}]
            return ac.messages.count_tokens(model="x", messages=msgs,
                                            tools=[{"name": "f", "input_schema": schema(minimum)}]).input_tokens

        def responses_tokens(minimum, history=False):
            inp = [{"role": "user", "content": "hi"}]
            if history:
                inp += [{"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"n": 2.0}'},
                        {"type": "function_call_output", "call_id": "c1", "output": "ok"}]
            r = s.client().responses.create(model="x", max_output_tokens=1, input=inp, tools=[
                {"type": "function", "name": "f", "parameters": schema(minimum)}])
            return r.usage.input_tokens

        assert chat_tokens(1.0) > chat_tokens(1)  # the chat path keeps the spelling (tested above)
        for minimum in (1, 1.0):
            assert messages_tokens(minimum) == chat_tokens(minimum)
            assert responses_tokens(minimum) == chat_tokens(minimum)
        # arguments of past calls: Anthropic's input object, Responses' arguments string
        assert chat_tokens(1.0, "2.0") > chat_tokens(1.0, "2")
        assert messages_tokens(1.0, True) == chat_tokens(1.0, "2.0") == responses_tokens(1.0, True)


def test_responses_reasoning_items():
    """/v1/responses returns the model's reasoning as a reasoning item before the message (the
    same split as chat's reasoning_content), streams it with the reasoning_text events, and a
    reasoning item given back in `input` reaches the template as the assistant's
    reasoning_content (the chat prompt of the same conversation)."""
    with template_server("Qwen-Qwen3-0.6B.jinja") as s:
        c = s.client()
        text = "<think>\nThe sum is easy.\n</think>\n\nFour."
        msgs = echo(text)
        ref = c.chat.completions.create(model="x", messages=msgs, temperature=0, max_tokens=40).choices[0].message
        assert ref.model_extra.get("reasoning_content") == "The sum is easy."
        # usage counts the tokens up to the end of the reasoning's closing marker
        lp = c.chat.completions.create(model="x", messages=msgs, temperature=0, max_tokens=40, logprobs=True)
        toks = [t.token for t in lp.choices[0].logprobs.content]
        want = next(k for k in range(1, len(toks) + 1) if "</think>" in "".join(toks[:k]))
        assert lp.usage.completion_tokens_details.reasoning_tokens == want <= lp.usage.completion_tokens
        plain = c.chat.completions.create(model="x", messages=echo("Four."), temperature=0, max_tokens=40)
        assert plain.choices[0].message.content and not plain.choices[0].message.model_extra.get("reasoning_content")
        assert plain.usage.completion_tokens_details.reasoning_tokens == 0 < plain.usage.completion_tokens
        kw = dict(model="x", input=msgs, temperature=0, max_output_tokens=40)
        r = c.responses.create(**kw)
        assert r.usage.output_tokens_details.reasoning_tokens == want
        assert [o.type for o in r.output] == ["reasoning", "message"]
        rs = r.output[0]
        assert rs.id.startswith("rs_") and rs.summary == [] and rs.status == "completed"
        assert [(p.type, p.text) for p in rs.content] == [("reasoning_text", "The sum is easy.")]
        assert r.output_text == (ref.content or "")
        with c.responses.stream(**kw) as st:
            events = list(st)
            final = st.get_final_response()
        types = [e.type for e in events]
        deltas = [e.delta for e in events if e.type == "response.reasoning_text.delta"]
        assert "".join(deltas) == "The sum is easy." and len(deltas) >= 2
        added = [(i, e.item.type) for i, e in enumerate(events) if e.type == "response.output_item.added"]
        assert [t for _, t in added] == ["reasoning", "message"]
        assert types.index("response.reasoning_text.done") < added[1][0]  # done before the answer began
        assert final.output[0].content[0].text == "The sum is easy." and final.output_text == r.output_text
        assert final.usage.output_tokens_details.reasoning_tokens == want
        # round trip: the reasoning item goes back in input as the assistant turn's reasoning
        turn = [{"type": "reasoning", "id": rs.id, "summary": [],
                 "content": [{"type": "reasoning_text", "text": "The sum is easy."}]},
                {"role": "assistant", "content": "Four."}]
        back = c.responses.create(model="x", max_output_tokens=1, input=msgs + turn).usage.input_tokens
        plain = c.responses.create(model="x", max_output_tokens=1, input=msgs + turn[1:]).usage.input_tokens
        chat = c.chat.completions.create(model="x", max_tokens=1, extra_body={"continue_final_message": False},
                                         messages=msgs + [{"role": "assistant", "content": "Four.",
                                                           "reasoning_content": "The sum is easy."}])
        assert back == chat.usage.prompt_tokens and back > plain
        # and so does a stored response continued with previous_response_id
        nxt = c.responses.create(model="x", max_output_tokens=1, previous_response_id=r.id,
                                 input="And five?").usage.input_tokens
        chat = c.chat.completions.create(model="x", max_tokens=1, messages=msgs + [
            {"role": "assistant", "content": ref.content or "", "reasoning_content": "The sum is easy."},
            {"role": "user", "content": "And five?"}])
        assert nxt == chat.usage.prompt_tokens
