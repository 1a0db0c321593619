"""`hearth serve` as an Anthropic Messages API, driven by the official `anthropic` SDK (and raw
HTTP for the exact SSE grammar and the bad inputs an SDK will not send).

The server runs SmolLM2 (HEARTH_SMOLLM2_GGUF), started on loopback by the fixture. Reference
points come from elsewhere: the prompt size of one question (37 tokens: llama.cpp's
tokenization of the jinja2 rendering, as test_server_openai.py checks) and the OpenAI chat
path of the same server, which the Messages mapping must reproduce token for token.
"""
import http.client
import json
import os
import uuid

import anthropic
import pytest

from conftest import smol_server
from test_server_openai import Server

QUESTION = "What is the capital of France?"


@pytest.fixture(scope="module")
def smol():
    yield from smol_server()


def client(s, api_key="none"):
    return anthropic.Anthropic(base_url=s.base, api_key=api_key, max_retries=0, timeout=60)


def create(s, **kw):
    kw.setdefault("model", "smol")
    kw.setdefault("max_tokens", 24)
    kw.setdefault("messages", [{"role": "user", "content": QUESTION}])
    extra = kw.pop("extra_body", {})
    extra.setdefault("temperature", 0)  # this SDK no longer sends sampling fields itself
    return client(s).messages.create(extra_body=extra, **kw)


def sse_events(s, body, path="/v1/messages", headers=None):
    """[(event name, data dict)] of one raw streaming request, checking the framing."""
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
    try:
        h = {"Content-Type": "application/json"}
        h.update(headers or {})
        c.request("POST", path, body=json.dumps(body).encode(), headers=h)
        r = c.getresponse()
        assert r.status == 200, r.read()
        assert r.getheader("Content-Type").startswith("text/event-stream")
        raw = r.read().decode()
    finally:
        c.close()
    assert raw.endswith("\n\n")
    out = []
    for frame in raw[:-2].split("\n\n"):
        lines = frame.split("\n")
        assert len(lines) == 2 and lines[0].startswith("event: ") and lines[1].startswith("data: "), frame
        name, data = lines[0][7:], json.loads(lines[1][6:])
        assert data["type"] == name
        out.append((name, data))
    return out


def check_grammar(events):
    """Anthropic's stream grammar: message_start, ping, blocks (start, deltas, stop), message_delta,
    message_stop; returns (text, message_start message, message_delta)."""
    names = [n for n, _ in events]
    assert names[0] == "message_start" and names[-1] == "message_stop" and names[-2] == "message_delta"
    assert names.count("message_start") == 1 and names.count("message_delta") == 1
    start = events[0][1]["message"]
    assert start["content"] == [] and start["stop_reason"] is None and start["role"] == "assistant"
    assert start["id"].startswith("msg_") and start["type"] == "message"
    text, open_block, n_blocks = [], None, 0
    for name, d in events[1:-2]:
        if name == "ping":
            continue
        if name == "content_block_start":
            assert open_block is None and d["index"] == n_blocks
            open_block, n_blocks = d["index"], n_blocks + 1
            assert d["content_block"] == {"type": "text", "text": ""}
        elif name == "content_block_delta":
            assert d["index"] == open_block and d["delta"]["type"] == "text_delta" and d["delta"]["text"]
            text.append(d["delta"]["text"])
        elif name == "content_block_stop":
            assert d["index"] == open_block
            open_block = None
        else:
            pytest.fail(f"unexpected event {name}")
    assert open_block is None
    return "".join(text), start, events[-2][1]


def test_messages_basic_and_system(smol):
    m = create(smol, system="You are terse.")
    assert m.type == "message" and m.role == "assistant" and m.id.startswith("msg_")
    assert m.stop_reason in ("end_turn", "max_tokens") and m.stop_sequence is None
    assert len(m.content) == 1 and m.content[0].type == "text" and m.content[0].text
    u = m.usage
    assert u.output_tokens <= 24 and u.cache_creation_input_tokens == 0
    # the mapping renders what the OpenAI chat path renders for the same turns
    oa = smol.client().chat.completions.create(
        model="smol", max_tokens=24, temperature=0,
        messages=[{"role": "system", "content": "You are terse."}, {"role": "user", "content": QUESTION}])
    assert u.input_tokens + u.cache_read_input_tokens == oa.usage.prompt_tokens
    assert m.content[0].text == oa.choices[0].message.content
    assert u.output_tokens == oa.usage.completion_tokens
    # system as a list of text blocks is the same prompt
    m2 = create(smol, system=[{"type": "text", "text": "You are terse."}])
    assert m2.usage.input_tokens + m2.usage.cache_read_input_tokens == oa.usage.prompt_tokens
    # content as text blocks, joined by newlines, equals the joined string
    a = create(smol, messages=[{"role": "user", "content": [{"type": "text", "text": "Name a color."},
                                                             {"type": "text", "text": "Only one."}]}])
    b = create(smol, messages=[{"role": "user", "content": "Name a color.\nOnly one."}])
    assert a.content[0].text == b.content[0].text
    assert a.usage.input_tokens + a.usage.cache_read_input_tokens == \
        b.usage.input_tokens + b.usage.cache_read_input_tokens


def test_count_tokens(smol):
    c = client(smol)
    n = c.messages.count_tokens(model="smol", messages=[{"role": "user", "content": QUESTION}]).input_tokens
    assert n == 37
    n_sys = c.messages.count_tokens(model="smol", system="Be brief.",
                                    messages=[{"role": "user", "content": QUESTION}]).input_tokens
    m = create(smol, system="Be brief.", max_tokens=2)
    assert n_sys == m.usage.input_tokens + m.usage.cache_read_input_tokens
    assert n_sys != n


def test_stream_grammar_and_equivalence(smol):
    body = {"model": "smol", "max_tokens": 24, "temperature": 0, "stream": True,
            "messages": [{"role": "user", "content": QUESTION}]}
    events = sse_events(smol, body, headers={"anthropic-version": "2023-06-01"})
    text, start, delta = check_grammar(events)
    assert ("ping", {"type": "ping"}) in events
    whole = create(smol)
    assert text == whole.content[0].text
    assert delta["delta"]["stop_reason"] == whole.stop_reason
    assert delta["usage"]["output_tokens"] == whole.usage.output_tokens
    assert start["usage"]["input_tokens"] + start["usage"]["cache_read_input_tokens"] == \
        whole.usage.input_tokens + whole.usage.cache_read_input_tokens
    # the SDK's stream helper assembles the same message
    with client(smol).messages.stream(model="smol", max_tokens=24, messages=[{"role": "user", "content": QUESTION}],
                                      extra_body={"temperature": 0}) as st:
        pieces = list(st.text_stream)
        final = st.get_final_message()
    assert "".join(pieces) == whole.content[0].text == final.content[0].text
    assert final.stop_reason == whole.stop_reason and final.usage.output_tokens == whole.usage.output_tokens


def test_stop_sequences_and_max_tokens(smol):
    msgs = [{"role": "user", "content": "Count from one to ten."}]
    full = create(smol, messages=msgs, max_tokens=30).content[0].text
    words = full.split()
    assert len(words) >= 3, full
    stop = words[2]
    m = create(smol, messages=msgs, max_tokens=30, stop_sequences=["never-appears", stop])
    assert m.stop_reason == "stop_sequence" and m.stop_sequence == stop
    assert m.content[0].text == full[: full.index(stop)]
    events = sse_events(smol, {"max_tokens": 30, "temperature": 0, "stream": True, "messages": msgs,
                               "stop_sequences": [stop]})
    text, _, delta = check_grammar(events)
    assert text == full[: full.index(stop)]
    assert delta["delta"] == {"stop_reason": "stop_sequence", "stop_sequence": stop}
    m = create(smol, messages=msgs, max_tokens=2)
    assert m.stop_reason == "max_tokens" and m.usage.output_tokens == 2


def test_cache_read_on_repeated_prefix(smol):
    system = "You are a careful assistant. Session " + uuid.uuid4().hex + ". " + "Answer plainly. " * 20
    n = client(smol).messages.count_tokens(model="smol", system=system,
                                           messages=[{"role": "user", "content": QUESTION}]).input_tokens
    first = create(smol, system=system, max_tokens=4)
    assert first.usage.cache_read_input_tokens == 0 and first.usage.input_tokens == n
    second = create(smol, system=system, max_tokens=4, messages=[{"role": "user", "content": "And of Spain?"}])
    u = second.usage
    # the shared system turn (over 100 tokens) comes from the prefix cache in whole 16-token blocks
    assert u.cache_read_input_tokens >= 96 and u.cache_read_input_tokens % 16 == 0
    assert u.input_tokens > 0
    n2 = client(smol).messages.count_tokens(model="smol", system=system,
                                            messages=[{"role": "user", "content": "And of Spain?"}]).input_tokens
    assert u.input_tokens + u.cache_read_input_tokens == n2


def assert_anthropic_error(status, body, want_status, want_type):
    assert status == want_status, body
    d = json.loads(body)
    assert d["type"] == "error" and set(d["error"]) == {"type", "message"}, d
    assert d["error"]["type"] == want_type and d["error"]["message"], d
    return d["error"]["message"]


def test_bad_input(smol):
    p = "/v1/messages"
    ok = {"max_tokens": 2, "messages": [{"role": "user", "content": "hi"}]}
    for body in [b"{", b'{"max_tokens": 2,}', b"[1,2]", b"", b"null", b'{"max_tokens": 2} trailing']:
        st, _, out = smol.raw("POST", p, body)
        assert_anthropic_error(st, out, 400, "invalid_request_error")
    st, _, out = smol.raw("POST", p, b'{"max_tokens": 2, "messages": [{"role": "user", "content": "caf\xe9"}]}')
    assert "UTF-8" in assert_anthropic_error(st, out, 400, "invalid_request_error")
    st, _, out = smol.raw("POST", p, b'{"max_tokens": 2, "messages": ' + b"[" * 5000 + b"]" * 5000 + b"}")
    assert "nests" in assert_anthropic_error(st, out, 400, "invalid_request_error")
    bad = [
        ({"messages": ok["messages"]}, "max_tokens"),                       # missing max_tokens
        ({**ok, "max_tokens": "2"}, "max_tokens"),                           # wrong type
        ({**ok, "max_tokens": 0}, "max_tokens"),
        ({"max_tokens": 2}, "messages"),                                     # missing messages
        ({**ok, "messages": []}, "messages"),                                # empty messages
        ({**ok, "messages": "hi"}, "messages"),
        ({**ok, "messages": [{"role": "system", "content": "x"}]}, "role"),  # not a Messages role
        ({**ok, "messages": [{"role": "user", "content": 5}]}, "content"),
        ({**ok, "messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]}, "image"),
        ({**ok, "temperature": 1.5}, "temperature"),                         # Anthropic's range is [0, 1]
        ({**ok, "top_p": "x"}, "top_p"),
        ({**ok, "stop_sequences": "x"}, "stop_sequences"),
        ({**ok, "stop_sequences": ["x"] * 17}, "stop"),
        ({**ok, "stream": "yes"}, "stream"),
        ({**ok, "system": 3}, "system"),
        ({**ok, "tools": [{"description": "no name", "input_schema": {}}]}, "name"),
        ({**ok, "messages": [{"role": "user", "content": "word " * 5000}]}, "context"),  # over the context
    ]
    for body, word in bad:
        st, _, out = smol.raw("POST", p, body)
        msg = assert_anthropic_error(st, out, 400, "invalid_request_error")
        assert word in msg, (body, msg)
    st, _, out = smol.raw("POST", p, b'{"x": "' + b"x" * (9 << 20) + b'"}')
    assert_anthropic_error(st, out, 413, "request_too_large")
    st, _, out = smol.raw("GET", p)
    assert_anthropic_error(st, out, 405, "invalid_request_error")
    st, _, out = smol.raw("POST", "/v1/messages/nothing")
    assert_anthropic_error(st, out, 404, "not_found_error")
    # count_tokens validates the same way (but needs no max_tokens)
    st, _, out = smol.raw("POST", p + "/count_tokens", {"messages": []})
    assert_anthropic_error(st, out, 400, "invalid_request_error")
    # the SDK maps these to its exception types
    with pytest.raises(anthropic.BadRequestError) as ei:
        client(smol).messages.create(model="smol", max_tokens=2, messages=[])
    assert ei.value.body["error"]["type"] == "invalid_request_error"
    # unknown fields are ignored, and the server still serves after all of the above
    m = create(smol, max_tokens=2, metadata={"user_id": "u"}, extra_body={"frobnicate": [1, {"a": 2}]})
    assert m.usage.output_tokens <= 2
    st, _, _ = smol.raw("GET", "/health")
    assert st == 200


def test_auth(smol):
    s = Server(os.environ["HEARTH_SMOLLM2_GGUF"], "--api-key", "sekrit")
    try:
        m = client(s, api_key="sekrit").messages.create(model="x", max_tokens=2, messages=[{"role": "user", "content": "hi"}])
        assert m.usage.output_tokens <= 2  # the SDK sends x-api-key and anthropic-version
        with pytest.raises(anthropic.AuthenticationError) as ei:
            client(s, api_key="wrong").messages.create(model="x", max_tokens=2,
                                                       messages=[{"role": "user", "content": "hi"}])
        assert ei.value.body["error"]["type"] == "authentication_error"
        st, _, out = s.raw("POST", "/v1/messages/count_tokens", {"messages": [{"role": "user", "content": "hi"}]})
        assert_anthropic_error(st, out, 401, "authentication_error")
        st, _, out = s.raw("POST", "/v1/messages/count_tokens", {"messages": [{"role": "user", "content": "hi"}]},
                           headers={"Authorization": "Bearer sekrit"})
        assert st == 200 and json.loads(out)["input_tokens"] > 0
    finally:
        s.stop()


# ---- tools (the echo few-shot of test_server_tools.py makes the small model write the markup) ----

CALL = '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}</tool_call>'
TOOL = {"name": "get_weather", "description": "Weather for a city",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}}}}
OA_TOOL = {"type": "function", "function": {"name": TOOL["name"], "description": TOOL["description"],
                                            "parameters": TOOL["input_schema"]}}


def echo(final):
    shots = ["hello world", '<b>{"a": 1}</b>', '<x>{"name": "f", "arguments": {"k": "v"}}</x>']
    msgs = []
    for s in shots:
        msgs += [{"role": "user", "content": s}, {"role": "assistant", "content": s}]
    return msgs + [{"role": "user", "content": final}]


SYSTEM = "Repeat the user's message exactly."


def test_tool_use_round_trip(smol):
    kw = dict(system=SYSTEM, messages=echo(CALL), max_tokens=60)
    assert create(smol, **kw).content[0].text == CALL  # the model writes the markup itself
    m = create(smol, tools=[TOOL], **kw)
    assert m.stop_reason == "tool_use"
    uses = [b for b in m.content if b.type == "tool_use"]
    assert len(uses) == 1 and uses[0].name == "get_weather" and uses[0].input == {"city": "Paris", "days": 2}
    assert uses[0].id and not [b for b in m.content if b.type == "text" and b.text.strip()]
    # streamed: a tool_use block whose input arrives as input_json_delta
    events = sse_events(smol, {"max_tokens": 60, "temperature": 0, "stream": True, "system": SYSTEM,
                               "messages": echo(CALL), "tools": [TOOL]})
    starts = [d for n, d in events if n == "content_block_start"]
    assert starts[-1]["content_block"]["type"] == "tool_use" and starts[-1]["content_block"]["name"] == "get_weather"
    assert starts[-1]["content_block"]["input"] == {}
    deltas = [d["delta"] for n, d in events if n == "content_block_delta" and d["index"] == starts[-1]["index"]]
    # the input arrives in pieces as the model writes it (one per token here)
    assert len(deltas) >= 5 and {d["type"] for d in deltas} == {"input_json_delta"}
    assert json.loads("".join(d["partial_json"] for d in deltas)) == {"city": "Paris", "days": 2}
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    with client(smol).messages.stream(model="smol", tools=[TOOL], extra_body={"temperature": 0}, **kw) as st:
        pieces = [e.partial_json for e in st if e.type == "input_json"]
        final = st.get_final_message()
    assert len(pieces) >= 5 and json.loads("".join(pieces)) == {"city": "Paris", "days": 2}
    assert [b.input for b in final.content if b.type == "tool_use"] == [{"city": "Paris", "days": 2}]
    # tool_choice none: no tools reach the template, the markup stays text
    m = create(smol, tools=[TOOL], tool_choice={"type": "none"}, **kw)
    assert m.stop_reason != "tool_use" and m.content[0].text == CALL
    # the result goes back as a tool message: the same prompt as the chat path's
    follow = echo(CALL)[:-1] + [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": uses[0].id, "name": "get_weather",
                                           "input": {"city": "Paris", "days": 2}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": uses[0].id, "content": "sunny, 21 C"}]}]
    n = client(smol).messages.count_tokens(model="smol", system=SYSTEM, messages=follow, tools=[TOOL]).input_tokens
    chat = [{"role": "system", "content": SYSTEM}] + echo(CALL)[:-1] + [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": uses[0].id, "type": "function", "function": {
            "name": "get_weather", "arguments": "{\"city\": \"Paris\", \"days\": 2}"}}]},
        {"role": "tool", "tool_call_id": uses[0].id, "content": "sunny, 21 C"}]
    ref = smol.client().chat.completions.create(model="smol", messages=chat, tools=[OA_TOOL], max_tokens=1)
    assert n == ref.usage.prompt_tokens
    m = create(smol, system=SYSTEM, messages=follow, tools=[TOOL], max_tokens=8)
    assert m.usage.input_tokens + m.usage.cache_read_input_tokens == n
