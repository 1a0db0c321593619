"""Guided decoding and the fields hearth refuses rather than drop, through the OpenAI SDK's
extra_body against `hearth serve` with SmolLM2-135M-Instruct: guided_choice, guided_regex,
guided_grammar / grammar (GBNF), guided_json, vLLM's structured_outputs, XTC sampling.

Every constraint is checked twice: its output is in the constraint's language (Python's `re`
and a regex equivalent of each grammar, independent of hearth's compilers), and the same
request without the constraint is NOT (so each test can fail). Greedy, or a fixed seed.
The compilers themselves are tested in tests/unit/test_constrain_text.c.
"""
import json
import re

import jsonschema
import openai
import pytest

from conftest import smol_server

CHOICES = ["zebra-7", "octopus-3", "walrus-9"]
ASK_ANIMAL = [{"role": "user", "content": "Name your favourite animal."}]
REGEX = r"[0-9]{3}-[A-Z]{2}-(alpha|beta)"
ASK_CODE = [{"role": "user", "content": "Give me a product code."}]
# a list of three bracketed words; its regex equivalent checks the output
GBNF = '''# three bracketed words
root ::= item ("," item){2}
item ::= "[" word "]"
word ::= [a-z]{1,8}
'''
GBNF_RE = r"\[[a-z]{1,8}\](,\[[a-z]{1,8}\]){2}"
ASK_LIST = [{"role": "user", "content": "List three fruits."}]
SCHEMA = {"type": "object", "properties": {"animal": {"type": "string", "maxLength": 12},
                                           "legs": {"type": "integer", "minimum": 0, "maximum": 100}},
          "required": ["animal", "legs"], "additionalProperties": False}
SAMPLING = [dict(temperature=0), dict(temperature=1, seed=4)]


@pytest.fixture(scope="module")
def smol():
    yield from smol_server()


def chat(smol, messages, extra=None, stream=False, max_tokens=60, **kw):
    c = smol.client()
    if not stream:
        r = c.chat.completions.create(model="smol", messages=messages, max_tokens=max_tokens, extra_body=extra, **kw)
        return r.choices[0].message.content or "", r.choices[0].finish_reason
    text, finish = "", None
    for ch in c.chat.completions.create(model="smol", messages=messages, max_tokens=max_tokens, extra_body=extra,
                                        stream=True, **kw):
        if ch.choices:
            text += ch.choices[0].delta.content or ""
            finish = ch.choices[0].finish_reason or finish
    return text, finish


def complete(smol, prompt, extra=None, stream=False, max_tokens=60, **kw):
    c = smol.client()
    if not stream:
        r = c.completions.create(model="smol", prompt=prompt, max_tokens=max_tokens, extra_body=extra, **kw)
        return r.choices[0].text, r.choices[0].finish_reason
    text, finish = "", None
    for ch in c.completions.create(model="smol", prompt=prompt, max_tokens=max_tokens, extra_body=extra, stream=True,
                                   **kw):
        if ch.choices:
            text += ch.choices[0].text or ""
            finish = ch.choices[0].finish_reason or finish
    return text, finish


@pytest.mark.parametrize("kw", SAMPLING)
@pytest.mark.parametrize("stream", [False, True])
def test_guided_choice(smol, kw, stream):
    text, finish = chat(smol, ASK_ANIMAL, {"guided_choice": CHOICES}, stream, **kw)
    assert text in CHOICES and finish == "stop"
    text, _ = chat(smol, ASK_ANIMAL, {"structured_outputs": {"choice": CHOICES}}, stream, **kw)
    assert text in CHOICES
    text, _ = complete(smol, "My favourite animal is the", {"guided_choice": CHOICES}, stream, **kw)
    assert text in CHOICES
    free, _ = chat(smol, ASK_ANIMAL, None, stream, **kw)
    assert free not in CHOICES


@pytest.mark.parametrize("kw", SAMPLING)
@pytest.mark.parametrize("stream", [False, True])
def test_guided_regex(smol, kw, stream):
    text, finish = chat(smol, ASK_CODE, {"guided_regex": REGEX}, stream, **kw)
    assert re.fullmatch(REGEX, text) and finish == "stop"
    text, _ = chat(smol, ASK_CODE, {"structured_outputs": {"regex": REGEX}}, stream, **kw)
    assert re.fullmatch(REGEX, text)
    text, _ = complete(smol, "Product code:", {"guided_regex": REGEX}, stream, **kw)
    assert re.fullmatch(REGEX, text)
    free, _ = chat(smol, ASK_CODE, None, stream, **kw)
    assert not re.fullmatch(REGEX, free)


@pytest.mark.parametrize("kw", SAMPLING)
@pytest.mark.parametrize("field", ["grammar", "guided_grammar", "structured_outputs"])
def test_gbnf_grammar(smol, kw, field):
    extra = {"structured_outputs": {"grammar": GBNF}} if field == "structured_outputs" else {field: GBNF}
    text, finish = chat(smol, ASK_LIST, extra, max_tokens=80, **kw)
    assert re.fullmatch(GBNF_RE, text), text
    text, _ = complete(smol, "Three fruits:", extra, stream=True, max_tokens=80, **kw)
    assert re.fullmatch(GBNF_RE, text), text
    free, _ = chat(smol, ASK_LIST, None, max_tokens=80, **kw)
    assert not re.fullmatch(GBNF_RE, free)


@pytest.mark.parametrize("extra", [{"guided_json": SCHEMA}, {"guided_json": json.dumps(SCHEMA)},
                                   {"json_schema": SCHEMA}, {"structured_outputs": {"json": SCHEMA}}])
def test_guided_json(smol, extra):
    text, finish = chat(smol, ASK_ANIMAL, extra, max_tokens=80, temperature=0)
    assert finish == "stop"
    jsonschema.validate(json.loads(text), SCHEMA)
    free, _ = chat(smol, ASK_ANIMAL, None, max_tokens=80, temperature=0)
    with pytest.raises(Exception):
        jsonschema.validate(json.loads(free), SCHEMA)


@pytest.mark.parametrize("extra,param,fragment", [
    ({"guided_regex": r"(a)\1"}, "guided_regex", "backreferences"),
    ({"guided_regex": r"a(?=b)"}, "guided_regex", "lookahead"),
    ({"guided_regex": r"(ab"}, "guided_regex", "position 0"),
    ({"guided_regex": 3}, "guided_regex", "string"),
    ({"guided_grammar": "root ::= (\"a\""}, "guided_grammar", "line 1, column 10"),
    ({"grammar": "rot ::= \"a\""}, "grammar", "root"),
    ({"grammar": "root ::= \"(\" root \")\" | \"x\""}, "grammar", "recursive"),
    ({"guided_grammar": "not a grammar"}, "guided_grammar", "line 1"),
    ({"guided_choice": []}, "guided_choice", "non-empty list"),
    ({"guided_choice": ["a", 1]}, "guided_choice", "strings"),
    ({"guided_json": "{not json"}, "guided_json", "JSON Schema"),
    ({"structured_outputs": {"regex": "a", "choice": ["a"]}}, "structured_outputs", "only one"),
    ({"structured_outputs": {"structural_tag": "x"}}, "structured_outputs", "structural_tag"),
    ({"structured_outputs": {"regex": "(?i)a"}}, "structured_outputs.regex", "inline flags"),
    ({"guided_choice": ["a"], "guided_regex": "a"}, "guided_regex", "only one"),
    ({"response_format": {"type": "json_object"}, "grammar": "root ::= \"a\""}, "grammar", "only one"),
    ({"guided_whitespace_pattern": " "}, "guided_whitespace_pattern", "not supported"),
    ({"adapter": "my-lora"}, "adapter", "no adapter 'my-lora' is mounted"),
    ({"lora": [{"id": 0, "scale": 1.0}]}, "lora", "LoRA"),
    ({"hlg": True}, "hlg", "hlg"),
    ({"typical_p": 0.5}, "typical_p", "typical"),
    ({"mirostat": 2}, "mirostat", "mirostat"),
    ({"min_tokens": -1}, "min_tokens", "between 0"),
    ({"n_predict": 5}, "n_predict", "max_tokens"),
    ({"include_stop_str_in_output": True}, "include_stop_str_in_output", "not supported"),
    ({"xtc_probability": 2}, "xtc_probability", "between 0 and 1"),
    ({"xtc_threshold": "x"}, "xtc_threshold", "number"),
])
@pytest.mark.parametrize("endpoint", ["chat", "completions"])
def test_bad_or_unhonoured_fields_are_400(smol, extra, param, fragment, endpoint):
    with pytest.raises(openai.BadRequestError) as ex:
        if endpoint == "chat":
            chat(smol, ASK_ANIMAL, extra, max_tokens=4)
        else:
            complete(smol, "x", extra, max_tokens=4)
    assert ex.value.body["param"] == param, ex.value.body
    assert fragment in ex.value.body["message"], ex.value.body


def test_neutral_values_and_harmless_fields_are_accepted(smol):
    extra = {"typical_p": 1, "mirostat": 0, "min_tokens": 0, "stop_token_ids": [], "use_beam_search": False,
             "skip_special_tokens": True, "include_stop_str_in_output": False,
             "user": "u", "cache_prompt": True, "response_format": {"type": "text"}}
    text, _ = chat(smol, ASK_ANIMAL, extra, max_tokens=4, temperature=0)
    assert text == chat(smol, ASK_ANIMAL, None, max_tokens=4, temperature=0)[0]


def test_unknown_adapter_is_refused_by_every_dialect(smol):
    import anthropic
    a = anthropic.Anthropic(base_url=smol.base, api_key="none", max_retries=0, timeout=60)
    with pytest.raises(anthropic.BadRequestError) as ex:
        a.messages.create(model="smol", max_tokens=4, messages=ASK_ANIMAL, extra_body={"adapter": "x"})
    assert "no adapter 'x'" in ex.value.body["error"]["message"]
    with pytest.raises(openai.BadRequestError) as ex:
        smol.client().responses.create(model="smol", input="hi", max_output_tokens=4, extra_body={"adapter": "x"})
    assert ex.value.body["param"] == "adapter"


def test_xtc_sampling(smol):
    """XTC changes a seeded draw and is itself deterministic; a threshold over 0.5 changes
    nothing."""
    base = dict(temperature=1, seed=7, max_tokens=40)
    plain = chat(smol, ASK_ANIMAL, None, **base)[0]
    x1 = chat(smol, ASK_ANIMAL, {"xtc_probability": 1, "xtc_threshold": 0.05}, **base)[0]
    x2 = chat(smol, ASK_ANIMAL, {"xtc_probability": 1, "xtc_threshold": 0.05}, **base)[0]
    assert x1 == x2 and x1 != plain
    high = chat(smol, ASK_ANIMAL, {"xtc_probability": 1, "xtc_threshold": 0.6}, **base)[0]
    assert high == plain
    # greedy does not use it
    g = chat(smol, ASK_ANIMAL, None, max_tokens=20, temperature=0)[0]
    assert chat(smol, ASK_ANIMAL, {"xtc_probability": 1, "xtc_threshold": 0.05}, max_tokens=20, temperature=0)[0] == g
