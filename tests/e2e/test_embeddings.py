"""/v1/embeddings and `hearth embed` end to end: the official OpenAI SDK against `hearth serve`
of an encoder checkpoint, and the CLI.

The committed tiny random BERT (tests/golden/embed/tiny-bert) is served in every run, and its
answers are compared with the sentence-transformers golden of tools/embed_golden.py (cosine
>= 0.99999 per vector); all-MiniLM-L6-v2 (HEARTH_MINILM, `scripts/model-path.sh minilm`) adds
the same checks on the real model when it is set up. Shapes: a string, a list of strings, a list
of token ids, a list of lists; float and base64 encodings; `dimensions`; usage. Errors: empty
and wrong-typed inputs, an input past the model's limit (400 naming the index and the limit)
and `truncate`, `dimensions` above the model's size, the generation routes of an embedding
server and /v1/embeddings of a chat model. The committed tiny RoBERTa, XLM-R, ModernBERT, Qwen3,
EmbeddingGemma and NomicBERT go through `hearth embed` against their goldens too, and GGUF files
(tests/golden/embed/gguf) through the API against llama.cpp's embeddings.
"""
import base64
import json
import os
import struct
import subprocess

import numpy as np
import openai
import pytest

from conftest import ROOT, TINY
from test_server_openai import EXE, Server

TINY_BERT = str(ROOT / "tests" / "golden" / "embed" / "tiny-bert")


def golden(name):
    with open(ROOT / "tests" / "golden" / "embed" / f"{name}.json", encoding="utf-8") as f:
        return json.load(f)


def cos(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


@pytest.fixture(scope="module")
def srv():
    s = Server(TINY_BERT)
    yield s
    s.stop()


@pytest.fixture(scope="module")
def gold():
    return golden("tiny-bert")


def model_of(s):
    return s.client().models.list().data[0].id


def test_ready_card_and_models(srv):
    assert "embeddings: bert, 2 layers, 32 dims" in srv.stderr()
    models = srv.client().models.list().data
    assert len(models) == 1 and models[0].id == "tiny-bert"


def test_string_input_matches_sentence_transformers(srv, gold):
    r = srv.client().embeddings.create(model="tiny-bert", input=gold["texts"][0], encoding_format="float")
    assert r.object == "list" and r.model == "tiny-bert"
    assert len(r.data) == 1 and r.data[0].object == "embedding" and r.data[0].index == 0
    assert len(r.data[0].embedding) == gold["dim"]
    assert cos(r.data[0].embedding, gold["embeddings"][0]) >= 0.99999
    assert r.usage.prompt_tokens == len(gold["ids"][0]) == r.usage.total_tokens


def test_list_of_strings_in_one_request(srv, gold):
    r = srv.client().embeddings.create(model="tiny-bert", input=gold["texts"], encoding_format="float")
    assert [d.index for d in r.data] == list(range(len(gold["texts"])))
    worst = min(cos(d.embedding, g) for d, g in zip(r.data, gold["embeddings"]))
    assert worst >= 0.99999
    assert r.usage.prompt_tokens == sum(len(i) for i in gold["ids"])


def test_token_ids_equal_the_text(srv, gold):
    c = srv.client()
    text = c.embeddings.create(model="tiny-bert", input=gold["texts"][:2], encoding_format="float")
    one = c.embeddings.create(model="tiny-bert", input=gold["ids"][0], encoding_format="float")
    many = c.embeddings.create(model="tiny-bert", input=gold["ids"][:2], encoding_format="float")
    assert one.data[0].embedding == text.data[0].embedding
    assert [d.embedding for d in many.data] == [d.embedding for d in text.data]


def test_base64_is_little_endian_f32_of_the_floats(srv, gold):
    c = srv.client()
    f = c.embeddings.create(model="tiny-bert", input=gold["texts"][3], encoding_format="float")
    b = c.embeddings.create(model="tiny-bert", input=gold["texts"][3], encoding_format="base64")
    raw = base64.b64decode(b.data[0].embedding)
    vals = struct.unpack("<%df" % gold["dim"], raw)
    assert len(raw) == 4 * gold["dim"]
    assert np.allclose(vals, f.data[0].embedding, rtol=0, atol=1e-9)
    # the SDK's default (it asks for base64 and decodes it) gives the same numbers
    d = c.embeddings.create(model="tiny-bert", input=gold["texts"][3])
    assert np.allclose(d.data[0].embedding, vals, rtol=0, atol=0)


def test_dimensions_truncates_and_renormalizes(srv, gold):
    c = srv.client()
    full = c.embeddings.create(model="tiny-bert", input=gold["texts"][5], encoding_format="float").data[0].embedding
    r = c.embeddings.create(model="tiny-bert", input=gold["texts"][5], encoding_format="float", dimensions=8)
    v = np.asarray(r.data[0].embedding)
    assert v.shape == (8,)
    assert abs(np.linalg.norm(v) - 1) < 1e-6
    want = np.asarray(full[:8]) / np.linalg.norm(full[:8])
    assert np.allclose(v, want, atol=1e-6)


def bad(c, **kw):
    with pytest.raises(openai.BadRequestError) as ei:
        c.embeddings.create(model="tiny-bert", encoding_format="float", **kw)
    return ei.value


def test_errors(srv, gold):
    c = srv.client()
    e = bad(c, input="")
    assert "empty" in e.message
    e = bad(c, input=[])
    assert e.param == "input"
    e = bad(c, input=["fine", ""])
    assert "input[1]" in e.message
    e = bad(c, input=[[5, 6], [5, 100000]])
    assert "input[1]" in e.message and "token id" in e.message
    e = bad(c, input=["a", 3])
    assert "input[1]" in e.message
    e = bad(c, input="x", dimensions=33)
    assert e.param == "dimensions" and "32" in e.message
    e = bad(c, input="x", extra_body={"encoding_format": "hex"})
    assert e.param == "encoding_format"
    long_text = " ".join(["the cat sat on the mat."] * 20)
    e = bad(c, input=["a dog", long_text])
    assert e.code == "context_length_exceeded" and "input[1]" in e.message and "64" in e.message
    r = c.embeddings.create(model="tiny-bert", input=["a dog", long_text], encoding_format="float",
                            extra_body={"truncate": True})
    assert len(r.data) == 2 and r.usage.prompt_tokens == 64 + 4


def test_generation_routes_refused(srv):
    st, _, body = srv.raw("POST", "/v1/chat/completions",
                          json.dumps({"model": "tiny-bert", "messages": [{"role": "user", "content": "hi"}]}),
                          {"Content-Type": "application/json"})
    assert st == 400
    assert "embedding model" in json.loads(body)["error"]["message"]
    st, _, _ = srv.raw("GET", "/health")
    assert st == 200


def test_chat_model_refuses_embeddings():
    s = Server(TINY)
    try:
        with pytest.raises(openai.BadRequestError) as ei:
            s.client().embeddings.create(model="x", input="hello", encoding_format="float")
        assert "embedding model" in ei.value.message
    finally:
        s.stop()


def cli(*args, stdin=None):
    return subprocess.run([str(EXE), "embed", *args], capture_output=True, text=True, input=stdin, timeout=120,
                          cwd=ROOT)


def test_cli_json_and_stdin(gold):
    r = cli(TINY_BERT, "--json", "--text", gold["texts"][0], "--text", gold["texts"][1])
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["dim"] == gold["dim"] and len(out["data"]) == 2
    for i in range(2):
        assert out["data"][i]["tokens"] == len(gold["ids"][i])
        assert cos(out["data"][i]["embedding"], gold["embeddings"][i]) >= 0.99999
    r = cli(TINY_BERT, stdin="\n".join(gold["texts"][:3]) + "\n")
    assert r.returncode == 0, r.stderr
    rows = [[float(x) for x in line.split()] for line in r.stdout.splitlines()]
    assert len(rows) == 3 and all(len(v) == gold["dim"] for v in rows)
    assert min(cos(v, g) for v, g in zip(rows, gold["embeddings"])) >= 0.99999
    r = cli(TINY_BERT, "--dimensions", "40", "--text", "x")
    assert r.returncode == 1 and "32" in r.stderr
    r = cli(TINY_BERT, "--text", " ".join(["the cat sat on the mat."] * 20))
    assert r.returncode == 1 and "input 0" in r.stderr and "64" in r.stderr


def test_cli_device(gold):
    """--device: cpu gives the golden; cuda gives it too on a GPU host (BERT runs there), and
    without a GPU fails saying so; a family the GPU does not run is refused naming it; a bad
    value is a usage error."""
    args = [TINY_BERT, "--json", "--text", gold["texts"][0], "--text", gold["texts"][1]]
    r = cli(*args, "--device", "cpu")
    assert r.returncode == 0, r.stderr
    assert min(cos(d["embedding"], e) for d, e in zip(json.loads(r.stdout)["data"], gold["embeddings"])) >= 0.99999
    r = cli(*args, "--device", "cuda")
    if r.returncode == 0:
        out = json.loads(r.stdout)["data"]
        assert min(cos(d["embedding"], e) for d, e in zip(out, gold["embeddings"])) >= 0.99999
    else:
        assert r.returncode == 1 and "--device cuda" in r.stderr and "CUDA" in r.stderr, r.stderr
    r = cli(str(ROOT / "tests" / "golden" / "embed" / "tiny-modernbert"), "--text", "x", "--device", "cuda")
    assert r.returncode == 1 and "--device cuda" in r.stderr, r.stderr
    r = cli(TINY_BERT, "--text", "x", "--device", "tpu")
    assert r.returncode == 2 and "--device expects auto, cpu or cuda" in r.stderr, r.stderr


def test_minilm_through_the_api():
    path = os.environ.get("HEARTH_MINILM")
    if not path:
        pytest.skip("HEARTH_MINILM is not set (scripts/model-path.sh minilm)")
    g = golden("minilm")
    s = Server(path)
    try:
        r = s.client().embeddings.create(model="x", input=g["texts"], encoding_format="float")
        assert min(cos(d.embedding, e) for d, e in zip(r.data, g["embeddings"])) >= 0.99999
        vecs = np.asarray([d.embedding for d in r.data])
        q, corpus = vecs[g["n_corpus"]:], vecs[:g["n_corpus"]]
        top = np.argmax(q @ corpus.T, axis=1)
        assert [int(t) for t in top] == [rk["top"][0] for rk in g["ranking"]]
    finally:
        s.stop()


@pytest.mark.parametrize("name", ["tiny-roberta", "tiny-xlmr", "tiny-modernbert", "tiny-qwen3", "tiny-gemma",
                                  "tiny-nomic"])
def test_cli_other_families(name):
    """RoBERTa (byte-level BPE), XLM-R (Unigram), ModernBERT (rotary, sliding windows), Qwen3
    (causal, last token), EmbeddingGemma (Dense modules) and NomicBERT through `hearth embed`,
    every golden sentence in one call."""
    g = golden(name)
    args = [str(ROOT / "tests" / "golden" / "embed" / name), "--json"]
    for t in g["texts"]:
        args += ["--text", t]
    r = cli(*args)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)["data"]
    assert [d["tokens"] for d in out] == [len(i) for i in g["ids"]]
    assert min(cos(d["embedding"], e) for d, e in zip(out, g["embeddings"])) >= 0.99999


@pytest.mark.parametrize("name,arch", [("tiny-bert-f32", "bert"), ("tiny-qwen3-f16", "qwen3"),
                                       ("tiny-nomic-f32", "nomic-bert")])
def test_gguf_through_the_api(name, arch):
    """A GGUF embedding model served as a file: the OpenAI SDK's embeddings against llama.cpp's
    (tools/embed_gguf.py's golden), the model card naming the architecture."""
    g = golden("gguf-" + name)
    s = Server(str(ROOT / "tests" / "golden" / "embed" / "gguf" / (name + ".gguf")))
    try:
        assert "embeddings: " + arch + "," in s.stderr()
        r = s.client().embeddings.create(model="x", input=g["texts"], encoding_format="float")
        assert [d.index for d in r.data] == list(range(len(g["texts"])))
        assert r.usage.prompt_tokens == sum(len(i) for i in g["ids"])
        assert min(cos(d.embedding, e) for d, e in zip(r.data, g["embeddings"])) >= 0.99999
    finally:
        s.stop()
