"""`hearth serve` as an OpenAI Responses API, driven by the official openai SDK's `responses`
client (and raw HTTP for the exact SSE grammar and bad inputs).

The server runs SmolLM2 (HEARTH_SMOLLM2_GGUF). The reference for every prompt is the same
server's chat completions path: a Responses request must render exactly the chat prompt of
its mapped messages, and a continued response (previous_response_id) exactly the chat
prompt of the whole conversation so far.
"""
import http.client
import json

import openai
import pytest

from conftest import smol_server

Q1, Q2 = "What is the capital of France?", "And of Spain?"


@pytest.fixture(scope="module")
def smol():
    yield from smol_server()


def create(s, **kw):
    kw.setdefault("model", "smol")
    kw.setdefault("max_output_tokens", 16)
    kw.setdefault("temperature", 0)
    return s.client().responses.create(**kw)


def chat(s, messages, max_tokens=16):
    return s.client().chat.completions.create(model="smol", messages=messages, max_tokens=max_tokens, temperature=0)


def sse_events(s, body):
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
    try:
        c.request("POST", "/v1/responses", body=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        r = c.getresponse()
        assert r.status == 200, r.read()
        raw = r.read().decode()
    finally:
        c.close()
    out = []
    for frame in raw[:-2].split("\n\n"):
        lines = frame.split("\n")
        assert len(lines) == 2 and lines[0].startswith("event: ") and lines[1].startswith("data: "), frame
        d = json.loads(lines[1][6:])
        assert d["type"] == lines[0][7:]
        out.append(d)
    return out


def check_grammar(events):
    """The Responses event chain with consecutive sequence numbers; returns (deltas text, final)."""
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    types = [e["type"] for e in events]
    head = ["response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"]
    tail = ["response.output_text.done", "response.content_part.done", "response.output_item.done"]
    assert types[:4] == head, types
    assert types[-4:-1] == tail, types
    assert types[-1] in ("response.completed", "response.incomplete")
    assert set(types[4:-4]) <= {"response.output_text.delta"}
    created = events[0]["response"]
    assert created["status"] == "in_progress" and created["output"] == [] and created["id"].startswith("resp_")
    item_id = events[2]["item"]["id"]
    assert events[2]["item"]["status"] == "in_progress" and events[2]["item"]["content"] == []
    deltas = events[4:-4]
    assert all(d["item_id"] == item_id and d["output_index"] == 0 and d["content_index"] == 0 for d in deltas)
    text = "".join(d["delta"] for d in deltas)
    assert events[-4]["text"] == text and events[-3]["part"]["text"] == text
    item = events[-2]["item"]
    assert item["id"] == item_id and item["content"][0]["text"] == text
    final = events[-1]["response"]
    assert final["id"] == created["id"] and final["output"][0] == item
    return text, final


def test_basic_and_instructions(smol):
    r = create(smol, input=Q1, instructions="Be terse.")
    assert r.object == "response" and r.id.startswith("resp_") and r.status in ("completed", "incomplete")
    assert r.instructions == "Be terse." and r.max_output_tokens == 16 and r.previous_response_id is None
    m = r.output[0]
    assert m.type == "message" and m.role == "assistant" and m.content[0].type == "output_text"
    ref = chat(smol, [{"role": "system", "content": "Be terse."}, {"role": "user", "content": Q1}])
    assert r.usage.input_tokens == ref.usage.prompt_tokens
    assert r.output_text == ref.choices[0].message.content
    assert r.usage.output_tokens == ref.usage.completion_tokens
    assert r.usage.total_tokens == r.usage.input_tokens + r.usage.output_tokens
    assert (r.status == "incomplete") == (ref.choices[0].finish_reason == "length")
    if r.status == "incomplete":
        assert r.incomplete_details.reason == "max_output_tokens"


def test_previous_response_id(smol):
    r1 = create(smol, input=Q1, instructions="Be terse.")
    r2 = create(smol, input=Q2, previous_response_id=r1.id)
    assert r2.previous_response_id == r1.id
    # the second turn sees the first (its answer included), and not the first's instructions
    conv = [{"role": "user", "content": Q1}, {"role": "assistant", "content": r1.output_text},
            {"role": "user", "content": Q2}]
    ref = chat(smol, conv)
    assert r2.usage.input_tokens == ref.usage.prompt_tokens
    assert r2.output_text == ref.choices[0].message.content
    alone = create(smol, input=Q2)
    assert r2.usage.input_tokens > alone.usage.input_tokens
    # a third turn chains on the second, with input items this time
    r3 = create(smol, previous_response_id=r2.id, instructions="Answer in French.",
                input=[{"role": "user", "content": [{"type": "input_text", "text": "Thanks."}]}])
    ref3 = chat(smol, [{"role": "system", "content": "Answer in French."}] + conv +
                [{"role": "assistant", "content": r2.output_text}, {"role": "user", "content": "Thanks."}])
    assert r3.usage.input_tokens == ref3.usage.prompt_tokens
    # a response can be continued twice; the second time the whole conversation but the last
    # partial KV block comes from the prefix cache
    again = create(smol, input=Q2, previous_response_id=r1.id)
    assert again.output_text == r2.output_text and again.usage.input_tokens == r2.usage.input_tokens
    n = again.usage.input_tokens
    assert again.usage.input_tokens_details.cached_tokens == (n - 1) // 16 * 16


def test_store_retrieve_delete(smol):
    c = smol.client()
    r = create(smol, input=Q1, metadata={"k": "v"})
    got = c.responses.retrieve(r.id)
    assert got.id == r.id and got.output_text == r.output_text and got.usage.input_tokens == r.usage.input_tokens
    assert got.metadata == {"k": "v"}
    c.responses.delete(r.id)
    with pytest.raises(openai.NotFoundError):
        c.responses.retrieve(r.id)
    with pytest.raises(openai.NotFoundError):
        c.responses.delete(r.id)
    unstored = create(smol, input=Q1, store=False)
    assert unstored.store is False
    with pytest.raises(openai.NotFoundError):
        c.responses.retrieve(unstored.id)
    with pytest.raises(openai.NotFoundError) as ei:
        create(smol, input=Q2, previous_response_id=unstored.id)
    err = ei.value.body
    assert err["code"] == "previous_response_not_found" and err["param"] == "previous_response_id"
    st, _, body = smol.raw("POST", "/v1/responses", {"input": "x", "previous_response_id": "resp_000"})
    e = json.loads(body)["error"]
    assert st == 404 and set(e) >= {"message", "type", "param", "code"} and e["type"] == "invalid_request_error"


def test_stream(smol):
    body = {"model": "smol", "input": Q1, "instructions": "Be terse.", "max_output_tokens": 16, "temperature": 0,
            "stream": True}
    text, final = check_grammar(sse_events(smol, body))
    whole = create(smol, input=Q1, instructions="Be terse.")
    assert text == whole.output_text
    assert final["usage"]["output_tokens"] == whole.usage.output_tokens
    assert final["usage"]["input_tokens"] == whole.usage.input_tokens
    assert final["status"] == whole.status
    # a streamed response is stored like any other
    assert smol.client().responses.retrieve(final["id"]).output_text == text
    # the SDK's stream helper on a response that completes (end of turn before the limit)
    with smol.client().responses.stream(model="smol", input="Say hello.", max_output_tokens=400,
                                        temperature=0) as st:
        deltas = [ev.delta for ev in st if ev.type == "response.output_text.delta"]
        final = st.get_final_response()
    assert final.status == "completed" and final.output_text == "".join(deltas)


def test_max_output_tokens_incomplete(smol):
    r = create(smol, input="Tell me a long story.", max_output_tokens=3)
    assert r.status == "incomplete" and r.incomplete_details.reason == "max_output_tokens"
    assert r.usage.output_tokens == 3 and r.output[0].status == "incomplete"
    events = sse_events(smol, {"input": "Tell me a long story.", "max_output_tokens": 3, "stream": True})
    _, final = check_grammar(events)
    assert events[-1]["type"] == "response.incomplete" and final["status"] == "incomplete"


def test_function_items_map_to_tool_messages(smol):
    items = [{"role": "user", "content": "What is the weather in Paris?"},
             {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\": \"Paris\"}"},
             {"type": "function_call_output", "call_id": "call_1", "output": "sunny, 21 C"}]
    r = create(smol, input=items)
    ref = chat(smol, [{"role": "user", "content": "What is the weather in Paris?"},
                      {"role": "assistant", "content": "", "tool_calls": [
                          {"id": "call_1", "type": "function",
                           "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
                      {"role": "tool", "tool_call_id": "call_1", "content": "sunny, 21 C"}])
    assert r.usage.input_tokens == ref.usage.prompt_tokens
    assert r.output_text == ref.choices[0].message.content


def assert_openai_error(status, body, want_status, word):
    assert status == want_status, body
    e = json.loads(body)["error"]
    assert set(e) >= {"message", "type", "param", "code"} and e["type"] == "invalid_request_error", e
    assert word in e["message"], e
    return e


def test_bad_input(smol):
    p = "/v1/responses"
    for body in [b"{", b"[]", b"", b'{"input": "x"} x']:
        st, _, out = smol.raw("POST", p, body)
        assert_openai_error(st, out, 400, "")
    st, _, out = smol.raw("POST", p, b'{"input": "\xff"}')
    assert_openai_error(st, out, 400, "UTF-8")
    bad = [
        ({}, "input"),
        ({"input": 5}, "input"),
        ({"input": []}, "input"),
        ({"input": [{"role": "robot", "content": "x"}]}, "role"),
        ({"input": [{"role": "user"}]}, "content"),
        ({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]}, "input_image"),
        ({"input": [{"type": "function_call", "name": "f"}]}, "call_id"),
        ({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "not json"}]}, "JSON"),
        ({"input": [{"type": "item_reference", "id": "x"}]}, "item_reference"),
        ({"input": "x", "max_output_tokens": 0}, "max_output_tokens"),
        ({"input": "x", "max_output_tokens": "9"}, "max_output_tokens"),
        ({"input": "x", "temperature": 3}, "temperature"),
        ({"input": "x", "store": "no"}, "store"),
        ({"input": "x", "instructions": 1}, "instructions"),
        ({"input": "x", "text": {"format": {"type": "json_schema"}}}, "schema"),
        ({"input": "x", "background": True}, "not supported"),
        ({"input": "x", "tools": [{"type": "function"}]}, "name"),
        ({"input": "word " * 5000}, "context"),
    ]
    for body, word in bad:
        st, _, out = smol.raw("POST", p, body)
        assert_openai_error(st, out, 400, word)
    with pytest.raises(openai.BadRequestError):
        create(smol, input=[])
    # unknown fields and built-in tools are ignored; the server still serves
    r = create(smol, input="hi", max_output_tokens=2, tools=[{"type": "web_search"}],
               extra_body={"frobnicate": 1, "truncation": "auto"})
    assert r.usage.output_tokens <= 2
    st, _, _ = smol.raw("GET", "/health")
    assert st == 200


def test_function_call_round_trip(smol):
    from test_server_anthropic import CALL, OA_TOOL, SYSTEM, echo
    tool = {"type": "function", "name": "get_weather", "description": OA_TOOL["function"]["description"],
            "parameters": OA_TOOL["function"]["parameters"]}
    kw = dict(instructions=SYSTEM, input=echo(CALL), max_output_tokens=60)
    assert create(smol, **kw).output_text == CALL  # the model writes the markup itself
    r = create(smol, tools=[tool], **kw)
    calls = [o for o in r.output if o.type == "function_call"]
    assert r.status == "completed" and len(calls) == 1 and calls[0].name == "get_weather"
    assert json.loads(calls[0].arguments) == {"city": "Paris", "days": 2} and calls[0].call_id
    assert all(o.type != "message" or not o.content[0].text.strip() for o in r.output)
    # streamed: a function_call item with its arguments events, then the same final response
    events = sse_events(smol, {"instructions": SYSTEM, "input": echo(CALL), "max_output_tokens": 60,
                               "temperature": 0, "stream": True, "tools": [tool]})
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    added = [e for e in events if e["type"] == "response.output_item.added" and e["item"]["type"] == "function_call"]
    assert len(added) == 1
    at = added[0]["output_index"]
    args = [e for e in events if e["type"] == "response.function_call_arguments.done"]
    assert args[0]["output_index"] == at and json.loads(args[0]["arguments"]) == {"city": "Paris", "days": 2}
    # the arguments arrive in pieces as the model writes them (one per token here)
    pieces = [e for e in events if e["type"] == "response.function_call_arguments.delta"]
    assert len(pieces) >= 5 and all(e["output_index"] == at and e["item_id"] == added[0]["item"]["id"] for e in pieces)
    assert "".join(e["delta"] for e in pieces) == args[0]["arguments"]
    assert added[0]["item"]["arguments"] == "" and added[0]["item"]["name"] == "get_weather"
    with smol.client().responses.stream(model="smol", tools=[tool], temperature=0, **kw) as st:
        sdk_pieces = [e.delta for e in st if e.type == "response.function_call_arguments.delta"]
        done = st.get_final_response()
    sdk_calls = [o for o in done.output if o.type == "function_call"]
    assert len(sdk_pieces) >= 5 and "".join(sdk_pieces) == sdk_calls[0].arguments
    final = events[-1]["response"]
    assert events[-1]["type"] == "response.completed" and final["output"][at]["type"] == "function_call"
    # tool_choice none keeps the markup as text
    assert create(smol, tools=[tool], tool_choice="none", **kw).output_text == CALL
    # the output goes back with previous_response_id: the chat prompt of the whole exchange
    r2 = create(smol, previous_response_id=r.id, tools=[tool], max_output_tokens=8,
                input=[{"type": "function_call_output", "call_id": calls[0].call_id, "output": "sunny, 21 C"}])
    chat = echo(CALL) + [
        {"role": "assistant", "content": "", "tool_calls": [{"id": calls[0].call_id, "type": "function", "function": {
            "name": "get_weather", "arguments": calls[0].arguments}}]},
        {"role": "tool", "tool_call_id": calls[0].call_id, "content": "sunny, 21 C"}]
    ref = smol.client().chat.completions.create(model="smol", messages=chat, tools=[OA_TOOL], max_tokens=1)
    assert r2.usage.input_tokens == ref.usage.prompt_tokens
