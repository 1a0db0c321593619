"""Structured outputs through the official SDKs against `hearth serve` with SmolLM2-135M-Instruct:
tool_choice "required" / a named function (OpenAI chat, Anthropic any / tool, Responses) and
response_format / text.format JSON schemas.

SmolLM2 never calls a tool on its own and writes prose when asked for JSON, so every parseable
call and every valid JSON document here comes from the constraint. Each output is checked with
the `jsonschema` package (an implementation independent of hearth's compiler), greedy and at
temperature 1 with seeds. Schemas keep strings short (maxLength) so every document ends well
within max_tokens. Gemma 3 (a 262K-token SentencePiece vocabulary, Python-call tool syntax) runs
the same checks with Gemma 2's chat template (the GGUF has none). The automaton itself (every schema feature, hostile schemas, random walks)
is tested in tests/unit/test_constrain.c.
"""
import json
import os

import anthropic
import jsonschema
import openai
import pytest

from conftest import smol_server
from test_server_openai import Server
from test_server_tools import CALL, TEMPLATES, echo

WEATHER = {"type": "object",
           "properties": {"city": {"type": "string", "maxLength": 20},
                          "days": {"type": "integer", "minimum": 1},
                          "unit": {"enum": ["celsius", "fahrenheit"]}},
           "required": ["city", "days"], "additionalProperties": False}
ADD = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
       "required": ["a", "b"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
                                           "parameters": WEATHER}},
         {"type": "function", "function": {"name": "add", "description": "Add two numbers", "parameters": ADD}}]
PARAMS = {"get_weather": WEATHER, "add": ADD}
ASK = [{"role": "user", "content": "What is the weather in Paris for the next 3 days?"}]
CAT = {"type": "object",
       "properties": {"name": {"type": "string", "maxLength": 16},
                      "age": {"type": "integer", "minimum": 0},
                      "colors": {"type": "array", "items": {"type": "string", "maxLength": 12}, "maxItems": 3},
                      "indoor": {"type": "boolean"},
                      "owner": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/person"}]}},
       "required": ["name", "age", "colors", "indoor", "owner"], "additionalProperties": False,
       "$defs": {"person": {"type": "object", "properties": {"first": {"type": "string", "maxLength": 12}},
                            "required": ["first"], "additionalProperties": False}}}
SAMPLING = [dict(temperature=0), dict(temperature=1, seed=1)]


@pytest.fixture(scope="module")
def smol():
    yield from smol_server()


def check_call(name, arguments, allowed=("get_weather", "add")):
    assert name in allowed
    jsonschema.validate(json.loads(arguments) if isinstance(arguments, str) else arguments, PARAMS[name])


@pytest.mark.parametrize("kw", SAMPLING)
def test_required_and_named_tool_calls(smol, kw):
    c = smol.client()
    r = c.chat.completions.create(model="smol", messages=ASK, tools=TOOLS, tool_choice="required",
                                  max_tokens=300, **kw)
    ch = r.choices[0]
    assert ch.finish_reason == "tool_calls" and len(ch.message.tool_calls) == 1
    check_call(ch.message.tool_calls[0].function.name, ch.message.tool_calls[0].function.arguments)
    assert not (ch.message.content or "").strip()
    r = c.chat.completions.create(model="smol", messages=ASK, tools=TOOLS, max_tokens=300,
                                  tool_choice={"type": "function", "function": {"name": "add"}}, **kw)
    calls = r.choices[0].message.tool_calls
    assert len(calls) == 1 and calls[0].function.name == "add"
    check_call("add", calls[0].function.arguments)


def test_parallel_calls_when_asked(smol):
    r = smol.client().chat.completions.create(model="smol", messages=ASK, tools=TOOLS, tool_choice="required",
                                              parallel_tool_calls=True, max_tokens=120, temperature=0)
    calls = r.choices[0].message.tool_calls
    assert calls  # every call the budget completed is a valid one
    for tc in calls:
        check_call(tc.function.name, tc.function.arguments)


def test_streamed_forced_call(smol):
    s = smol.client().chat.completions.create(model="smol", messages=ASK, tools=TOOLS, max_tokens=300,
                                              temperature=1, seed=5, stream=True,
                                              tool_choice={"type": "function", "function": {"name": "get_weather"}})
    calls, finish = {}, None
    for chunk in s:
        for ch in chunk.choices:
            for d in ch.delta.tool_calls or []:
                c = calls.setdefault(d.index, {"name": "", "arguments": ""})
                c["name"] += d.function.name or ""
                c["arguments"] += d.function.arguments or ""
            finish = ch.finish_reason or finish
    assert finish == "tool_calls" and list(calls) == [0]
    assert calls[0]["name"] == "get_weather"
    check_call("get_weather", calls[0]["arguments"])


def test_tool_choice_none_keeps_calls_out(smol):
    """With "none" the tools leave the prompt and the reply is not parsed: markup the model writes
    (here by the echo prompt of test_server_tools) stays plain content."""
    r = smol.client().chat.completions.create(model="smol", messages=echo(CALL), tools=TOOLS, tool_choice="none",
                                              max_tokens=60, temperature=0)
    m = r.choices[0].message
    assert not m.tool_calls and r.choices[0].finish_reason == "stop"
    assert "<tool_call>" in m.content


@pytest.mark.parametrize("kw", SAMPLING)
def test_response_format_json_schema(smol, kw):
    r = smol.client().chat.completions.create(
        model="smol", messages=[{"role": "user", "content": "Describe a cat."}], max_tokens=300,
        response_format={"type": "json_schema", "json_schema": {"name": "cat", "schema": CAT, "strict": True}}, **kw)
    assert r.choices[0].finish_reason == "stop"
    jsonschema.validate(json.loads(r.choices[0].message.content), CAT)


def test_response_format_streamed_and_json_object(smol):
    c = smol.client()
    s = c.chat.completions.create(model="smol", messages=[{"role": "user", "content": "Describe a cat."}],
                                  max_tokens=300, temperature=1, seed=3, stream=True,
                                  response_format={"type": "json_schema", "json_schema": {"name": "cat", "schema": CAT}})
    text = "".join(ch.delta.content or "" for chunk in s for ch in chunk.choices)
    jsonschema.validate(json.loads(text), CAT)
    r = c.chat.completions.create(model="smol", messages=[{"role": "user", "content": "Hello"}], max_tokens=200,
                                  temperature=0, response_format={"type": "json_object"})
    if r.choices[0].finish_reason == "stop":
        assert isinstance(json.loads(r.choices[0].message.content), dict)
    else:  # the budget ran out: still a JSON object's beginning
        assert r.choices[0].message.content.lstrip().startswith("{")


@pytest.mark.parametrize("stream", [False, True])
def test_completions_response_format(smol, stream):
    """/v1/completions: the text after the raw prompt follows the schema (llama-server's and
    vLLM's completions take it too); a bad format is a 400 there as well."""
    c = smol.client()
    kw = dict(model="smol", prompt="A cat, described as JSON:\n", max_tokens=300, temperature=1, seed=5,
              extra_body={"response_format": {"type": "json_schema", "json_schema": {"name": "cat", "schema": CAT}}})
    if stream:
        text = "".join(ch.text for chunk in c.completions.create(stream=True, **kw) for ch in chunk.choices)
    else:
        r = c.completions.create(**kw)
        assert r.choices[0].finish_reason == "stop"
        text = r.choices[0].text
    jsonschema.validate(json.loads(text), CAT)
    plain = c.completions.create(model="smol", prompt="A cat, described as JSON:\n", max_tokens=24, temperature=1,
                                 seed=5)
    with pytest.raises((ValueError, jsonschema.ValidationError)):  # unconstrained: prose here
        jsonschema.validate(json.loads(plain.choices[0].text), CAT)
    with pytest.raises(openai.BadRequestError) as ex:
        c.completions.create(model="smol", prompt="x", max_tokens=4, extra_body={"response_format": {"type": "xml"}})
    assert ex.value.body["param"] == "response_format"


def test_response_format_continues_a_prefill(smol):
    """A final assistant message that starts the JSON (an assistant prefill) is continued within
    the schema: the constraint takes the prefill in first, the reply is the rest. A prefill that
    cannot start such a reply is a 400, and so is a forced tool call after one."""
    c = smol.client()
    fmt = {"type": "json_schema", "json_schema": {"name": "cat", "schema": CAT}}
    ask = {"role": "user", "content": "Describe a cat."}
    pre = '{"name": "'
    for seed in (2, 3):
        r = c.chat.completions.create(model="smol", messages=[ask, {"role": "assistant", "content": pre}],
                                      max_tokens=300, temperature=1, seed=seed, response_format=fmt)
        assert r.choices[0].finish_reason == "stop"
        jsonschema.validate(json.loads(pre + r.choices[0].message.content), CAT)
    with pytest.raises(openai.BadRequestError) as ex:
        c.chat.completions.create(model="smol", messages=[ask, {"role": "assistant", "content": "Sure! "}],
                                  max_tokens=8, response_format=fmt)
    assert ex.value.body["param"] == "messages" and "response_format" in ex.value.body["message"]
    with pytest.raises(openai.BadRequestError) as ex:
        c.chat.completions.create(model="smol", messages=[ask, {"role": "assistant", "content": pre}],
                                  tools=TOOLS, tool_choice="required", max_tokens=8)
    assert ex.value.body["param"] == "tool_choice"


@pytest.mark.parametrize("fmt,fragment", [
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "strin"}}}, "unknown type"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"$ref": "#/$defs/n",
      "$defs": {"n": {"type": "object", "properties": {"c": {"$ref": "#/$defs/n"}}}}}}}, "recursive"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"enum": list(range(2000))}}}, "at most"),
    ({"type": "json_schema", "json_schema": {"name": "x"}}, "schema"),
    ({"type": "xml"}, "json_object"),
])
def test_bad_response_format_is_400(smol, fmt, fragment):
    with pytest.raises(openai.BadRequestError) as ex:
        smol.client().chat.completions.create(model="smol", messages=ASK, response_format=fmt, max_tokens=8)
    assert ex.value.body["param"] == "response_format" and fragment in ex.value.body["message"]


def test_bad_tool_schema_is_400(smol):
    bad = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
            "properties": {"a": {"allOf": [{"type": "string"}, {"maxLength": 2}]}}}}}]
    with pytest.raises(openai.BadRequestError) as ex:
        smol.client().chat.completions.create(model="smol", messages=ASK, tools=bad, tool_choice="required")
    assert ex.value.body["param"] == "tools" and "allOf" in ex.value.body["message"]
    # the same tools without a forced call are not compiled: the request runs
    r = smol.client().chat.completions.create(model="smol", messages=ASK, tools=bad, max_tokens=4)
    assert r.choices[0].finish_reason in ("stop", "length", "tool_calls")


def ant_tools():
    return [{"name": t["function"]["name"], "description": t["function"]["description"],
             "input_schema": t["function"]["parameters"]} for t in TOOLS]


@pytest.mark.parametrize("kw", SAMPLING[:2])
def test_anthropic_tool_choice_any_and_tool(smol, kw):
    a = anthropic.Anthropic(base_url=smol.base, api_key="none", max_retries=0, timeout=60)
    for choice, allowed in (({"type": "any"}, ("get_weather", "add")), ({"type": "tool", "name": "add"}, ("add",))):
        m = a.messages.create(model="smol", max_tokens=300, messages=ASK, tools=ant_tools(), tool_choice=choice,
                              extra_body={"temperature": kw["temperature"]})
        uses = [b for b in m.content if b.type == "tool_use"]
        assert m.stop_reason == "tool_use" and len(uses) == 1
        check_call(uses[0].name, uses[0].input, allowed)


def test_anthropic_bad_schema_is_400_in_its_shape(smol):
    a = anthropic.Anthropic(base_url=smol.base, api_key="none", max_retries=0, timeout=60)
    with pytest.raises(anthropic.BadRequestError) as ex:
        a.messages.create(model="smol", max_tokens=8, messages=ASK, tool_choice={"type": "any"},
                          tools=[{"name": "f", "input_schema": {"type": "object", "properties": {"a": {"type": "nope"}}}}])
    assert ex.value.body["type"] == "error" and ex.value.body["error"]["type"] == "invalid_request_error"
    assert "unknown type" in ex.value.body["error"]["message"]


def test_responses_tool_choice_and_text_format(smol):
    c = smol.client()
    rtools = [{"type": "function", "name": t["function"]["name"], "description": t["function"]["description"],
               "parameters": t["function"]["parameters"]} for t in TOOLS]
    for choice, allowed in (("required", ("get_weather", "add")), ({"type": "function", "name": "get_weather"},
                                                                   ("get_weather",))):
        r = c.responses.create(model="smol", input=ASK[0]["content"], tools=rtools, tool_choice=choice,
                               max_output_tokens=300, temperature=0)
        calls = [o for o in r.output if o.type == "function_call"]
        assert len(calls) == 1
        check_call(calls[0].name, calls[0].arguments, allowed)
    r = c.responses.create(model="smol", input="Describe a cat.", max_output_tokens=300, temperature=1,
                           text={"format": {"type": "json_schema", "name": "cat", "schema": CAT, "strict": True}})
    assert r.status == "completed"
    jsonschema.validate(json.loads(r.output_text), CAT)
    with pytest.raises(openai.BadRequestError) as ex:
        c.responses.create(model="smol", input="x", max_output_tokens=8,
                           text={"format": {"type": "json_schema", "name": "x", "schema": {"type": 3}}})
    assert ex.value.body["param"] == "text.format"


@pytest.fixture(scope="module")
def gemma():
    model, tmpl = os.environ.get("HEARTH_GEMMA3_GGUF"), TEMPLATES / "google-gemma-2-2b-it.jinja"
    if not model or not tmpl.exists():
        pytest.skip("HEARTH_GEMMA3_GGUF or the Gemma chat template is missing (make setup)")
    s = Server(model, "--chat-template-file", str(tmpl))
    yield s
    s.stop()


@pytest.mark.parametrize("kw", SAMPLING)
def test_gemma_python_call_syntax_and_json(gemma, kw):
    c = gemma.client()
    r = c.chat.completions.create(model="gemma", messages=ASK, tools=TOOLS, tool_choice="required", max_tokens=300, **kw)
    calls = r.choices[0].message.tool_calls
    assert r.choices[0].finish_reason == "tool_calls" and len(calls) == 1
    check_call(calls[0].function.name, calls[0].function.arguments)
    r = c.chat.completions.create(model="gemma", messages=[{"role": "user", "content": "Describe a cat."}],
                                  max_tokens=300, response_format={"type": "json_schema",
                                                                   "json_schema": {"name": "cat", "schema": CAT}}, **kw)
    assert r.choices[0].finish_reason == "stop"
    jsonschema.validate(json.loads(r.choices[0].message.content), CAT)


@pytest.fixture(scope="module")
def qwq():
    tmpl = TEMPLATES / "Qwen-QwQ-32B.jinja"  # its generation prompt ends inside <think>
    if not tmpl.exists():
        pytest.skip(f"{tmpl} is missing (make setup runs scripts/fetch-templates.sh)")
    yield from smol_server("--chat-template-file", str(tmpl))


def test_forced_shapes_close_an_open_reasoning_block(qwq):
    """The prompt leaves <think> open: the forced call and JSON start by closing it, so they come
    back as a call and as content, not as reasoning."""
    c = qwq.client()
    r = c.chat.completions.create(model="smol", messages=ASK, tools=TOOLS, tool_choice="required", max_tokens=300,
                                  temperature=0)
    m = r.choices[0].message
    assert len(m.tool_calls) == 1 and not (m.content or "").strip()
    assert not (getattr(m, "reasoning_content", None) or "").strip()
    check_call(m.tool_calls[0].function.name, m.tool_calls[0].function.arguments)
    r = c.chat.completions.create(model="smol", messages=[{"role": "user", "content": "Describe a cat."}],
                                  max_tokens=300, temperature=0,
                                  response_format={"type": "json_schema", "json_schema": {"name": "cat", "schema": CAT}})
    jsonschema.validate(json.loads(r.choices[0].message.content), CAT)
