"""Speculative decoding through the server (docs/server.md "Speculative decoding"): a server started
with --draft-kind ngram answers, at temperature 0, exactly what the same server answers with
"speculative": false and what a server without speculation answers - text, logprobs, stop strings,
max_tokens, JSON schemas, streams, eight requests at once - on /v1/chat/completions, /v1/completions,
/v1/messages and /v1/responses. usage.speculation, /stats and /metrics count the drafts; a prompt
that holds the file being edited gets drafts accepted. Bad values of the field are 400s, bad flags
exit 2. A tiny Gemma 4 with its tiny assistant drafter answers as the same model without one, on every
API, and an assistant that does not fit its model is refused at startup.

One pair of servers (speculating and plain) per starter model, reused by every test, both with
--batch-invariant on (docs/engine.md "Batch invariance"): every token's row is then computed as it
would be alone in its step, so a verify step's several tokens round as one-token decode steps do
and every comparison below is strict. (In the default numerics a verify step is a several-token
step like any batched one, and a near tie may resolve otherwise.)
"""
import concurrent.futures
import json
import os
import re
import time

import pytest

from test_server_openai import Server
from test_server_tools import TEMPLATES

CODE = '''def word_counts(path):
    counts = {}
    with open(path) as f:
        for line in f:
            for word in line.split():
                word = word.lower()
                counts[word] = counts.get(word, 0) + 1
    return counts
'''
EDIT = ("Here is a Python file:\n\n" + CODE + "\nRewrite it with one change: rename the function to "
        "count_words. Answer with the whole file only.")
SHORT = "Name three colours."
MAX = 32
MODELS = ["smollm2", "gemma3"]


def model_path(name):
    p = os.environ.get("HEARTH_SMOLLM2_GGUF" if name == "smollm2" else "HEARTH_GEMMA3_GGUF")
    if not p:
        pytest.skip(f"the {name} starter model is not set up (make setup)")
    return p


def chat_args(name):
    """Gemma 3's GGUF carries no chat template: the chat endpoints use the Gemma template file."""
    if name == "smollm2":
        return ()
    tmpl = TEMPLATES / "google-gemma-2-2b-it.jinja"
    return ("--chat-template-file", str(tmpl)) if tmpl.exists() else None


class Pair:
    """A speculating server and a plain one of the same model."""

    def __init__(self, name):
        path = model_path(name)
        extra = chat_args(name)
        self.chat = extra is not None
        extra = (extra or ()) + ("--batch-invariant", "on")
        self.name = name
        # fixed rounds: the step cost model would stop drafting on a compute-bound CPU
        self.spec = Server(path, "--draft-kind", "ngram", "--fixed-draft", "--batch", "8", *extra)
        self.plain = Server(path, "--batch", "8", *extra)
        self.memo = {}

    def stop(self):
        self.spec.stop()
        self.plain.stop()

    def reference(self, path, body):
        """The plain server's answer (computed once per body)."""
        key = (path, json.dumps(body, sort_keys=True))
        if key not in self.memo:
            self.memo[key] = post(self.plain, path, body)
        return self.memo[key]


@pytest.fixture(scope="module", params=MODELS)
def pair(request):
    p = Pair(request.param)
    yield p
    p.stop()


def post(s, path, body):
    st, _, raw = s.raw("POST", path, body, timeout=120)
    assert st == 200, raw[:400]
    return json.loads(raw)


def bodies(prompt, n=MAX, logprobs=True):
    """One request per endpoint, temperature 0 (logprobs where the endpoint has them)."""
    msgs = [{"role": "user", "content": prompt}]
    chat = {"messages": msgs, "temperature": 0, "max_tokens": n}
    if logprobs:
        chat.update(logprobs=True, top_logprobs=2)
    comp = {"prompt": prompt + "\n", "temperature": 0, "max_tokens": n}
    if logprobs:
        comp["logprobs"] = 2
    return {"/v1/chat/completions": chat, "/v1/completions": comp,
            "/v1/messages": {"model": "m", "messages": msgs, "temperature": 0, "max_tokens": n},
            "/v1/responses": {"input": prompt, "temperature": 0, "max_output_tokens": n}}


def answer(path, d):
    """(text, finish, logprobs) of a non-streamed answer, in any of the four shapes."""
    if path == "/v1/chat/completions":
        c = d["choices"][0]
        lp = [(t["token"], t["logprob"]) for t in (c.get("logprobs") or {}).get("content") or []]
        return c["message"]["content"], c["finish_reason"], lp
    if path == "/v1/completions":
        c = d["choices"][0]
        lp = c.get("logprobs") or {}
        return c["text"], c["finish_reason"], list(zip(lp.get("tokens") or [], lp.get("token_logprobs") or []))
    if path == "/v1/messages":
        return "".join(b.get("text", "") for b in d["content"]), d["stop_reason"], []
    text = "".join(p.get("text", "") for item in d["output"] if item["type"] == "message" for p in item["content"])
    return text, d["status"], []


def same(a, b):
    """Token for token: the same text and finish, the same logprob tokens, their values within
    float noise (the verify step computes a position in a wider forward)."""
    assert a[0] == b[0]
    assert a[1] == b[1]
    assert [t for t, _ in a[2]] == [t for t, _ in b[2]]
    for (_, x), (_, y) in zip(a[2], b[2]):
        assert x == pytest.approx(y, abs=1e-3)


def speculation(d):
    return d["usage"].get("speculation")


def skip_chat(pair, path):
    if path != "/v1/completions" and not pair.chat:
        pytest.skip("the Gemma chat template file is missing (make setup)")


@pytest.mark.parametrize("path", list(bodies(EDIT)))
def test_same_answers_with_and_without_speculation(pair, path):
    skip_chat(pair, path)
    for prompt in (EDIT, SHORT) if path == "/v1/completions" else (EDIT,):
        body = bodies(prompt)[path]
        ref = pair.reference(path, body)
        on = post(pair.spec, path, body)
        off = post(pair.spec, path, {**body, "speculative": False})
        same(answer(path, off), answer(path, ref))
        sp = speculation(on)
        assert sp is not None and 0 <= sp["accepted"] <= sp["drafted"]
        assert speculation(off) is None and speculation(ref) is None
        same(answer(path, on), answer(path, ref))


def test_code_edit_drafts_accepted(pair):
    before = pair.spec.stats()["speculative"]
    assert before["enabled"] and before["kind"] == "ngram" and before["num_draft_tokens"] == 10
    d = post(pair.spec, "/v1/completions", bodies(EDIT, 64, logprobs=False)["/v1/completions"])
    sp = speculation(d)
    assert sp["drafted"] > 0 and 0 < sp["accepted"] <= sp["drafted"]
    # the engine publishes its counters after the step that answered: wait for them (bounded)
    for _ in range(100):
        after = pair.spec.stats()["speculative"]
        if after["drafted"] - before["drafted"] == sp["drafted"]:
            break
        time.sleep(0.02)
    assert after["drafted"] - before["drafted"] == sp["drafted"]
    assert after["accepted"] - before["accepted"] == sp["accepted"]
    assert after["rounds"] > before["rounds"]
    assert after["acceptance_rate"] == pytest.approx(after["accepted"] / after["drafted"])
    assert after["mean_accepted_length"] == pytest.approx(after["accepted"] / after["rounds"])
    st, _, metrics = pair.spec.raw("GET", "/metrics")
    assert st == 200
    text = metrics.decode()
    for name, key in (("drafted_tokens", "drafted"), ("accepted_tokens", "accepted"), ("rounds", "rounds")):
        m = re.search(r'^hearth_spec_%s_total\{kind="ngram"\} (\d+)$' % name, text, re.M)
        assert m and int(m.group(1)) >= after[key]
    plain = pair.plain.stats()["speculative"]
    assert not plain["enabled"] and plain["kind"] is None and plain["drafted"] == 0
    _, _, pm = pair.plain.raw("GET", "/metrics")
    assert b"hearth_spec_" not in pm


def test_eight_at_once_half_without(pair):
    prompts = [f"{EDIT}\n(version {i})" if i % 2 else f"Count from {i} to {i + 12}, one number a line."
               for i in range(8)]
    reqs = [({**bodies(p, 24, logprobs=False)["/v1/completions"], **({"speculative": False} if i % 4 in (1, 2) else {})})
            for i, p in enumerate(prompts)]
    refs = [answer("/v1/completions", pair.reference("/v1/completions",
                                                      {k: v for k, v in r.items() if k != "speculative"}))
            for r in reqs]
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        got = list(ex.map(lambda r: post(pair.spec, "/v1/completions", r), reqs))
    for r, g, ref in zip(reqs, got, refs):
        assert (speculation(g) is None) == ("speculative" in r)
        same(answer("/v1/completions", g), ref)


def sse(s, path, body):
    """The data frames of a stream, parsed."""
    st, _, raw = s.raw("POST", path, {**body, "stream": True}, timeout=120)
    assert st == 200
    out = []
    for line in raw.decode().splitlines():
        if line.startswith("data: ") and line != "data: [DONE]":
            out.append(json.loads(line[6:]))
    return out


def test_streams_give_the_same_text(pair):
    path = "/v1/completions"
    body = {**bodies(EDIT, logprobs=False)[path], "stream_options": {"include_usage": True}}
    frames = sse(pair.spec, path, body)
    text = "".join(f["choices"][0]["text"] for f in frames if f.get("choices"))
    ref = answer(path, pair.reference(path, {k: v for k, v in body.items() if k != "stream_options"}))
    sp = frames[-1]["usage"]["speculation"]
    assert 0 <= sp["accepted"] <= sp["drafted"]
    assert text == ref[0]
    if pair.chat:
        frames = sse(pair.spec, "/v1/messages", bodies(EDIT)["/v1/messages"])
        text = "".join(f["delta"].get("text", "") for f in frames if f.get("type") == "content_block_delta")
        ref = answer("/v1/messages", pair.reference("/v1/messages", bodies(EDIT)["/v1/messages"]))
        final = [f for f in frames if f.get("type") == "message_delta"][-1]
        assert final["usage"]["speculation"]["accepted"] <= final["usage"]["speculation"]["drafted"]
        assert text == ref[0]


def test_stop_strings_and_max_tokens(pair):
    path = "/v1/completions"
    base = bodies(EDIT, logprobs=False)[path]
    for extra in ({"stop": ["counts", "return"]}, {"max_tokens": 5}, {"max_tokens": 1}):
        body = {**base, **extra}
        ref = answer(path, pair.reference(path, body))
        same(answer(path, post(pair.spec, path, {**body, "speculative": False})), ref)
        on = post(pair.spec, path, body)
        assert on["usage"]["completion_tokens"] <= body["max_tokens"]
        same(answer(path, on), ref)


def test_json_schema(pair):
    if not pair.chat:
        pytest.skip("the Gemma chat template file is missing (make setup)")
    path = "/v1/chat/completions"
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "lines": {"type": "integer"}},
              "required": ["name", "lines"]}
    body = {**bodies("Describe this file as JSON:\n\n" + CODE, 64, logprobs=False)[path],
            "response_format": {"type": "json_schema", "json_schema": {"name": "f", "schema": schema}}}
    ref = answer(path, pair.reference(path, body))
    json.loads(ref[0])  # the schema's shape, complete
    same(answer(path, post(pair.spec, path, {**body, "speculative": False})), ref)
    same(answer(path, post(pair.spec, path, body)), ref)


@pytest.mark.parametrize("value", ["no", 0, 1, {}, []])
def test_bad_speculative_values(pair, value):
    if pair.name != "smollm2":
        pytest.skip("the field is parsed the same whatever the model")
    for path, body in bodies("hi", 2, logprobs=False).items():
        st, _, raw = pair.spec.raw("POST", path, {**body, "speculative": value})
        assert st == 400, (path, raw[:200])
        assert b"speculative" in raw
    st, _, raw = pair.spec.raw("POST", "/v1/completions", {"prompt": "hi", "max_tokens": 2,
                                                             "speculative.n_max": "x"})
    assert st == 400 and b"speculative.n_max" in raw


def test_llama_server_n_max_zero_turns_it_off(pair):
    if pair.name != "smollm2":
        pytest.skip("the field is parsed the same whatever the model")
    d = post(pair.spec, "/v1/completions", {**bodies(SHORT, 8, logprobs=False)["/v1/completions"],
                                           "speculative.n_max": 0})
    assert speculation(d) is None


@pytest.mark.parametrize("args,msg", [
    (("--draft-kind", "ngram", "--ngram-min", "4", "--ngram-max", "2"), "--ngram-min (4) must not be larger"),
    (("--draft-kind", "dspark"), "--draft-kind dspark is not implemented in hearth; use assistant, ngram or two-model"),
    (("--draft-kind", "deepspec"), "not implemented in hearth"),
    (("--draft-kind", "medusa"), "--draft-kind expects two-model, assistant or ngram"),
    (("--num-draft-tokens", "0"), "--num-draft-tokens"),
    (("--draft-kind", "two-model"), "--draft-kind two-model needs --draft-model"),
    (("--draft-kind", "assistant"), "--draft-kind assistant needs --draft-model"),
])
def test_flag_errors(hearth, args, msg):
    for verb in ("serve", "generate", "benchmark"):
        r = hearth(verb, "some-model", *args, "--prompt", "x", timeout=30) if verb == "generate" else \
            hearth(verb, "some-model", *args, timeout=30)
        assert r.returncode == 2, (verb, r.stderr)
        assert msg in r.stderr, (verb, r.stderr)


def test_flags_that_do_nothing_warn(hearth):
    path = model_path("smollm2")
    for args, msg in ((("--draft-kind", "ngram", "--draft-model", path), "is not used"),
                      (("--ngram-max", "4"), "--ngram-max without --draft-kind or --draft-model is ignored"),
                      (("--num-draft-tokens", "4"), "is ignored")):
        r = hearth("generate", path, *args, "--max-tokens", "2", "--prompt", "hi", timeout=60)
        assert r.returncode == 0 and msg in r.stderr, (args, r.stderr)
    r = hearth("generate", path, "--draft-kind", "ngram", "--max-tokens", "4", "--prompt", "hi", timeout=60)
    assert r.returncode == 0 and re.search(r"speculative: \d+ drafted, \d+ accepted", r.stderr), r.stderr


def test_help_lists_the_flags(hearth):
    for verb in ("serve", "generate", "benchmark"):
        out = hearth("help", verb).stdout
        for flag in ("--draft-model", "--draft-kind", "--num-draft-tokens", "--ngram-min", "--ngram-max"):
            assert flag in out, (verb, flag)


# ---- two-model: a second model drafts ------------------------------------------------------------

def two_model_available(hearth, path):
    r = hearth("generate", path, "--draft-model", path, "--max-tokens", "2", "--prompt", "hi", timeout=120)
    if "draft source is not available" in r.stderr:
        pytest.skip("the engine has no two-model draft source yet")
    assert r.returncode == 0, r.stderr


@pytest.fixture(scope="module")
def self_drafted(hearth):
    """SmolLM2 drafting for itself (--draft-model: the same file) and a plain SmolLM2."""
    path = model_path("smollm2")
    two_model_available(hearth, path)
    s = Server(path, "--draft-model", path, "--fixed-draft", "--batch-invariant", "on")
    p = Server(path, "--batch-invariant", "on")
    yield s, p
    s.stop()
    p.stop()


def test_two_model_same_answers_and_accepts_itself(self_drafted):
    s, p = self_drafted
    st = s.stats()["speculative"]
    assert st["enabled"] and st["kind"] == "two-model" and st["num_draft_tokens"] == 3
    assert "speculative two-model" in s.stderr()
    for path, body in bodies(EDIT).items():
        on = post(s, path, body)
        same(answer(path, on), answer(path, post(p, path, body)))
        sp = speculation(on)
        assert sp["drafted"] > 0 and sp["accepted"] <= sp["drafted"]
    reqs = [{**bodies(f"Count from {i} to {i + 9}.", 16, logprobs=False)["/v1/completions"],
             **({"speculative": False} if i % 2 else {})} for i in range(8)]
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        got = list(ex.map(lambda r: post(s, "/v1/completions", r), reqs))
    for r, g in zip(reqs, got):
        ref = post(p, "/v1/completions", {k: v for k, v in r.items() if k != "speculative"})
        same(answer("/v1/completions", g), answer("/v1/completions", ref))
    st = s.stats()["speculative"]
    assert st["drafted"] > 0 and st["acceptance_rate"] > 0.9, st


def test_two_model_other_vocabulary_is_refused(hearth):
    smol, gemma = model_path("smollm2"), model_path("gemma3")
    two_model_available(hearth, smol)
    r = hearth("serve", smol, "--draft-model", gemma, "--port", "0", "--no-open", timeout=120)
    assert r.returncode != 0
    assert "vocabular" in r.stderr, r.stderr


# ---- assistant: the Gemma 4 assistant drafter ----------------------------------------------------

TINY_GEMMA4 = "tests/golden/hf/gemma4_text"
TINY_ASSISTANT = "tests/golden/hf/gemma4_assistant"


@pytest.fixture(scope="module")
def assisted():
    """The tiny Gemma 4 with its tiny assistant (detected from its config, no --draft-kind), and
    the tiny Gemma 4 alone."""
    s = Server(TINY_GEMMA4, "--draft-model", TINY_ASSISTANT, "--fixed-draft", "--batch", "8",
               "--batch-invariant", "on")
    p = Server(TINY_GEMMA4, "--batch", "8", "--batch-invariant", "on")
    yield s, p
    s.stop()
    p.stop()


def test_assistant_same_answers_on_every_api(assisted):
    s, p = assisted
    st = s.stats()["speculative"]
    assert st["enabled"] and st["kind"] == "assistant" and st["num_draft_tokens"] == 3, st
    assert "speculative assistant" in s.stderr()
    for path, body in bodies("Once upon a time there was", 24).items():
        on = post(s, path, body)
        same(answer(path, on), answer(path, post(p, path, body)))
        sp = speculation(on)
        assert sp["drafted"] > 0 and 0 <= sp["accepted"] <= sp["drafted"]
    reqs = [{**bodies(f"The quick brown fox {i}", 16, logprobs=False)["/v1/completions"],
             **({"speculative": False} if i % 2 else {})} for i in range(8)]
    with concurrent.futures.ThreadPoolExecutor(8) as ex:
        got = list(ex.map(lambda r: post(s, "/v1/completions", r), reqs))
    for r, g in zip(reqs, got):
        ref = post(p, "/v1/completions", {k: v for k, v in r.items() if k != "speculative"})
        same(answer("/v1/completions", g), answer("/v1/completions", ref))
        assert (speculation(g) is None) == ("speculative" in r)


def test_assistant_refusals(hearth):
    r = hearth("serve", TINY_GEMMA4, "--draft-kind", "two-model", "--draft-model", TINY_ASSISTANT, "--port", "0",
               "--no-open", timeout=60)
    assert r.returncode != 0 and "use --draft-kind assistant" in r.stderr, r.stderr
    r = hearth("serve", "tests/golden/hf/gemma4_moe", "--draft-model", TINY_ASSISTANT, "--port", "0", "--no-open",
               timeout=60)
    assert r.returncode != 0 and "reads 1 kv heads of 32 from the target's layer 1, which has 2 of 32" in r.stderr, \
        r.stderr
