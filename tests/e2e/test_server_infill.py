"""Fill-in-the-middle over HTTP: llama-server's /infill (raw HTTP, as llama.vim and Continue
send it) and OpenAI's `suffix` on /v1/completions (the official SDK), on the tiny models with
FIM vocabularies of tests/golden/fim; the starter model without FIM tokens answers 400.

The prompts are checked against tools/fim_golden.py's record of llama-server's construction:
the server's `prompt` (the FIM prompt with special tokens written out) must be the detokenized
golden ids of the case made with the server's defaults (a 2048-token context and batch).
Generation is greedy (temperature 0), so the text of one request repeats in another.
"""
import json
import pathlib

import gguf
import openai
import pytest

from conftest import ROOT, smol_server
from test_server_openai import Server

FIM = ROOT / "tests" / "golden" / "fim"
GOLDEN = json.loads((FIM / "infill.json").read_text())


def case(model, name):
    return next(c for c in GOLDEN["models"][model]["cases"] if c["name"] == name)


def byte_decoder():
    """GPT-2's byte-level alphabet, symbol -> byte."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def detokenize(model, ids):
    r = gguf.GGUFReader(str(FIM / f"{model}.gguf"))
    tokens = [str(t) for t in r.fields["tokenizer.ggml.tokens"].contents()]
    types = [int(t) for t in r.fields["tokenizer.ggml.token_type"].contents()]
    dec = byte_decoder()
    out = b""
    for i in ids:
        out += tokens[i].encode() if types[i] == 3 else bytes(dec[ch] for ch in tokens[i])
    return out.decode("utf-8", errors="replace")


@pytest.fixture(scope="module", params=["fim-qwen", "fim-sc"])
def fim(request):
    s = Server(str(FIM / f"{request.param}.gguf"))
    s.name = request.param
    yield s
    s.stop()


@pytest.fixture(scope="module")
def smol():
    yield from smol_server()


def infill(s, **body):
    body.setdefault("temperature", 0)
    st, h, raw = s.raw("POST", "/infill", body)
    return st, h, raw


def ok_infill(s, **body):
    st, _, raw = infill(s, **body)
    assert st == 200, raw
    return json.loads(raw)


def test_infill_prompt_is_llama_servers(fim):
    c = case(fim.name, "server_defaults")
    r = ok_infill(fim, input_prefix=c["input_prefix"], input_suffix=c["input_suffix"], prompt=c["prompt"],
                  input_extra=c["input_extra"], n_predict=6)
    assert r["tokens_evaluated"] == len(c["ids"])
    assert r["prompt"] == detokenize(fim.name, c["ids"])
    assert r["stop"] is True and r["stop_type"] in ("eos", "limit")
    assert r["tokens_predicted"] <= 6 and r["model"] == fim.name
    # greedy: the same request writes the same middle
    again = ok_infill(fim, input_prefix=c["input_prefix"], input_suffix=c["input_suffix"], prompt=c["prompt"],
                      input_extra=c["input_extra"], n_predict=6)
    assert again["content"] == r["content"]


def test_completions_suffix_is_the_same_prompt(fim):
    c = case(fim.name, "completion_suffix")
    comp = fim.client().completions.create(model="x", prompt=c["input_prefix"], suffix=c["input_suffix"],
                                           max_tokens=5, temperature=0)
    assert comp.usage.prompt_tokens == len(c["ids"])
    r = ok_infill(fim, input_prefix=c["input_prefix"], input_suffix=c["input_suffix"], n_predict=5)
    assert r["tokens_evaluated"] == len(c["ids"])
    assert r["prompt"] == detokenize(fim.name, c["ids"])
    assert comp.choices[0].text == r["content"]
    # token ids as the prompt, the same prefix
    ids = c["ids"]
    pre = ids[ids.index(GOLDEN["models"][fim.name]["fim"]["pre"]) + 1:ids.index(GOLDEN["models"][fim.name]["fim"]["suf"])]
    comp2 = fim.client().completions.create(model="x", prompt=pre, suffix=c["input_suffix"], max_tokens=5,
                                            temperature=0)
    assert comp2.usage.prompt_tokens == len(ids) and comp2.choices[0].text == comp.choices[0].text
    # an empty suffix is a plain completion
    plain = fim.client().completions.create(model="x", prompt=c["input_prefix"], suffix="", max_tokens=2,
                                            temperature=0)
    assert plain.usage.prompt_tokens < len(ids)


def test_infill_stream(fim):
    body = dict(input_prefix="def f(x):\n", input_suffix="\n", prompt="    return", n_predict=5)
    whole = ok_infill(fim, **body)
    st, h, raw = infill(fim, stream=True, **body)
    assert st == 200 and h["Content-Type"].startswith("text/event-stream")
    frames = [json.loads(line[len("data: "):]) for line in raw.decode().split("\n\n") if line.startswith("data: ")]
    assert frames and "[DONE]" not in raw.decode()
    assert all(f["stop"] is False for f in frames[:-1]) and frames[-1]["stop"] is True
    assert "".join(f["content"] for f in frames) == whole["content"]
    assert frames[-1]["tokens_predicted"] == whole["tokens_predicted"]


def test_infill_llama_vim_fields(fim):
    # what llama.vim sends: accepted (samplers, cache_prompt, timing limits, response_fields)
    r = ok_infill(fim, input_prefix="a = 1\n", input_suffix="c = 3\n", prompt="b =", n_predict=3, top_k=40,
                  top_p=0.9, samplers=["top_k", "top_p", "infill"], cache_prompt=True, n_indent=0,
                  t_max_prompt_ms=500, t_max_predict_ms=1000, response_fields=["content"], stop=["\n"])
    # response_fields: only those keys of the final object (a nested path names nothing here)
    assert set(r) == {"content"}
    r = ok_infill(fim, input_prefix="a = 1\n", input_suffix="c = 3\n", n_predict=2,
                  response_fields=["content", "tokens_cached", "timings/prompt_n", "stop_type"])
    assert set(r) == {"content", "tokens_cached", "stop_type"}
    assert r["tokens_cached"] >= 2
    st, _, raw = infill(fim, input_prefix="a", input_suffix="b", response_fields="content")
    assert st == 400 and json.loads(raw)["error"]["param"] == "response_fields"
    # n_predict 0: the prompt is checked, nothing is generated
    r = ok_infill(fim, input_prefix="a = 1\n", input_suffix="c = 3\n", n_predict=0)
    assert r["content"] == "" and r["tokens_predicted"] == 0 and r["tokens_evaluated"] > 0


def test_infill_stop_word(fim):
    body = dict(input_prefix="x = ", input_suffix="\n", n_predict=8)
    free = ok_infill(fim, **body)
    if len(free["content"]) < 2:
        pytest.skip("the tiny model wrote too little to cut")
    word = free["content"][1:2]
    r = ok_infill(fim, stop=[word], **body)
    assert r["stop_type"] == "word" and r["stopping_word"] == word
    assert r["content"] == free["content"][:free["content"].index(word)]


@pytest.mark.parametrize("body, param", [
    ({"input_suffix": "x"}, "input_prefix"),
    ({"input_prefix": "x"}, "input_suffix"),
    ({"input_prefix": 3, "input_suffix": "x"}, "input_prefix"),
    ({"input_prefix": ["a", 10 ** 7], "input_suffix": "x"}, "input_prefix"),
    ({"input_prefix": "a", "input_suffix": "x", "input_extra": {"text": "y"}}, "input_extra"),
    ({"input_prefix": "a", "input_suffix": "x", "input_extra": [{"filename": "a.py"}]}, "input_extra"),
    ({"input_prefix": "a", "input_suffix": "x", "prompt": 5}, "prompt"),
    ({"input_prefix": "a", "input_suffix": "x", "n_predict": -2}, "n_predict"),
    ({"input_prefix": "a", "input_suffix": "x", "mirostat": 2}, "mirostat"),
])
def test_infill_bad_requests(fim, body, param):
    st, _, raw = fim.raw("POST", "/infill", body)
    assert st == 400, raw
    assert json.loads(raw)["error"]["param"] == param


def test_model_without_fim_tokens(smol):
    st, _, raw = smol.raw("POST", "/infill", {"input_prefix": "def f():\n", "input_suffix": "\n"})
    assert st == 400
    msg = json.loads(raw)["error"]["message"]
    assert "not supported by this model" in msg and "prefix, suffix, middle" in msg
    with pytest.raises(openai.BadRequestError) as e:
        smol.client().completions.create(model="x", prompt="def f():\n", suffix="\n", max_tokens=2)
    assert "fill-in-the-middle" in str(e.value)
    # the suffix must be a string; an empty one is no insertion
    st, _, raw = smol.raw("POST", "/v1/completions", {"prompt": "a", "suffix": 3, "max_tokens": 1})
    assert st == 400 and json.loads(raw)["error"]["param"] == "suffix"
    ok = smol.client().completions.create(model="x", prompt="Hello", suffix="", max_tokens=1, temperature=0)
    assert ok.usage.completion_tokens == 1


def test_infill_random_bodies(fim):
    """Random field values of every type: a 200 or a 400, never a crash or a 5xx."""
    from hypothesis import HealthCheck, given, settings, strategies as st

    scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 70000), st.floats(allow_nan=False, width=32),
                        st.text(max_size=12))
    values = st.recursive(scalars, lambda c: st.one_of(st.lists(c, max_size=4),
                                                       st.dictionaries(st.sampled_from(["text", "filename", "x"]), c,
                                                                       max_size=3)), max_leaves=8)
    fields = ["input_prefix", "input_suffix", "prompt", "input_extra", "n_predict", "max_tokens", "temperature",
              "top_k", "top_p", "seed", "stop", "stream", "repeat_last_n", "samplers", "response_fields",
              "logit_bias", "n_probs", "n_indent"]

    @settings(max_examples=150, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(body=st.dictionaries(st.sampled_from(fields), values, max_size=7))
    def one(body):
        body.setdefault("input_prefix", "a")
        body.setdefault("input_suffix", "b")
        # short generations: n_predict (when a number) at most 3, else max_tokens 2
        np_ = body.get("n_predict")
        if isinstance(np_, (int, float)) and not isinstance(np_, bool):
            body["n_predict"] = 3 if np_ == -1 else min(np_, 3)
        if body.get("n_predict") is None:
            body["max_tokens"] = 2
        st_, _, raw = fim.raw("POST", "/infill", body)
        assert st_ in (200, 400), (st_, body, raw[:300])

    one()
    st_, _, _ = fim.raw("GET", "/health")
    assert st_ == 200
