"""Image, audio and file content parts in all three APIs (src/server/media.h).

A well-formed media part to a text-only model is a 400 that names the part (in the dialect's own
spelling) and the model; to a model with a vision tower (a projector beside the GGUF:
src/store/modality.h) it is marked in /v1/models and /props, and an image is a 400 naming the
tower until the engine runs it; a malformed part is a 400 naming the field that is wrong; none
breaks the server. The payloads are real: a PNG made by Python's
zlib/struct and a WAV by the `wave` module, base64-encoded by the standard library.
"""
import base64
import io
import json
import os
import struct
import wave
import zlib

import anthropic
import openai
import pytest

from conftest import smol_server


def png_bytes(w=2, h=2):
    raw = b"".join(b"\x00" + b"".join(bytes([x * 40, y * 40, 200]) for x in range(w)) for y in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
            chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def wav_bytes():
    b = io.BytesIO()
    with wave.open(b, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(struct.pack("<4h", 0, 1000, -1000, 0))
    return b.getvalue()


PNG = base64.b64encode(png_bytes()).decode()
WAV = base64.b64encode(wav_bytes()).decode()
DATA_URL = "data:image/png;base64," + PNG


@pytest.fixture(scope="module")
def smol():
    yield from smol_server()


def model_id(s):
    return s.client().models.list().data[0].id


def post(s, path, body):
    st, _, out = s.raw("POST", path, body)
    return st, json.loads(out)


def openai_err(out):
    return out["error"]["param"], out["error"]["message"]


# --- the capability check: a good part, a text-only model --------------------------------------

OPENAI_PARTS = [
    {"type": "image_url", "image_url": {"url": DATA_URL, "detail": "low"}},
    {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
    {"type": "image_url", "image_url": "https://example.com/cat.png"},
    {"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}},
    {"type": "audio_url", "audio_url": {"url": "data:audio/wav;base64," + WAV}},
]


@pytest.mark.parametrize("part", OPENAI_PARTS, ids=lambda p: p["type"])
def test_openai_part_refused_for_text_model(smol, part):
    msgs = [{"role": "system", "content": "be brief"},
            {"role": "user", "content": [{"type": "text", "text": "what is this?"}, part]}]
    with pytest.raises(openai.BadRequestError) as ei:
        smol.client().chat.completions.create(model="m", messages=msgs, max_tokens=2)
    assert ei.value.param == "messages[1].content[1]", ei.value.body
    assert model_id(smol) in ei.value.message and "text only" in ei.value.message


def test_anthropic_image_refused_for_text_model(smol):
    c = anthropic.Anthropic(base_url=smol.base, api_key="none", max_retries=0, timeout=60)
    for source in [{"type": "base64", "media_type": "image/png", "data": PNG},
                   {"type": "url", "url": "https://example.com/cat.png"}]:
        msgs = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                {"role": "user", "content": [{"type": "text", "text": "and this?"},
                                             {"type": "image", "source": source}]}]
        with pytest.raises(anthropic.BadRequestError) as ei:
            c.messages.create(model="m", max_tokens=2, messages=msgs)
        msg = ei.value.body["error"]["message"]
        assert "'messages.2.content.1'" in msg and model_id(smol) in msg, msg


@pytest.mark.parametrize("part", [
    {"type": "input_image", "image_url": DATA_URL, "detail": "high"},
    {"type": "input_image", "image_url": "https://example.com/cat.png"},
    {"type": "input_file", "file_data": "data:application/pdf;base64,JVBERi0xLjQK", "filename": "a.pdf"},
    {"type": "input_file", "file_url": "https://example.com/a.pdf"},
], ids=lambda p: p["type"] + ("_url" if "url" in json.dumps(p) and "https" in json.dumps(p) else ""))
def test_responses_part_refused_for_text_model(smol, part):
    body = {"input": [{"role": "user", "content": "hi"},
                      {"role": "user", "content": [{"type": "input_text", "text": "look"}, part]}]}
    st, out = post(smol, "/v1/responses", body)
    param, msg = openai_err(out)
    assert st == 400 and param == "input[1].content[1]", out
    assert model_id(smol) in msg, msg


# --- malformed parts: a 400 naming the field ---------------------------------------------------

BAD_OPENAI = [
    ({"type": "image_url"}, "messages[0].content[0].image_url", "object"),
    ({"type": "image_url", "image_url": {}}, "messages[0].content[0].image_url.url", "required"),
    ({"type": "image_url", "image_url": {"url": 5}}, "messages[0].content[0].image_url.url", "string"),
    ({"type": "image_url", "image_url": {"url": "ftp://x/a.png"}}, "messages[0].content[0].image_url.url", "http"),
    ({"type": "image_url", "image_url": {"url": "file:///etc/passwd"}}, "messages[0].content[0].image_url.url",
     "http"),
    ({"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@@"}},
     "messages[0].content[0].image_url.url", "base64"),
    ({"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJD="}},
     "messages[0].content[0].image_url.url", "base64"),
    ({"type": "image_url", "image_url": {"url": "data:image/png," + PNG}},
     "messages[0].content[0].image_url.url", "base64"),
    ({"type": "image_url", "image_url": {"url": "data:image/png;base64"}},
     "messages[0].content[0].image_url.url", "','"),
    ({"type": "image_url", "image_url": {"url": DATA_URL, "detail": "ultra"}},
     "messages[0].content[0].image_url.detail", "auto, low or high"),
    ({"type": "input_audio", "input_audio": {"format": "wav"}}, "messages[0].content[0].input_audio.data", "base64"),
    ({"type": "input_audio", "input_audio": {"data": WAV}}, "messages[0].content[0].input_audio.format", "format"),
    ({"type": "input_audio", "input_audio": {"data": "A", "format": "wav"}},
     "messages[0].content[0].input_audio.data", "base64"),
    ({"type": "audio_url", "audio_url": {"url": ""}}, "messages[0].content[0].audio_url.url", "http"),
]


@pytest.mark.parametrize("part,param,word", BAD_OPENAI)
def test_openai_malformed_part(smol, part, param, word):
    st, out = post(smol, "/v1/chat/completions",
                   {"model": "m", "messages": [{"role": "user", "content": [part]}], "max_tokens": 2})
    got_param, msg = openai_err(out)
    assert st == 400 and got_param == param and word in msg, out
    assert f"a part of type '{part['type']}'" in msg


BAD_ANTHROPIC = [
    ({"type": "image"}, "messages.0.content.0.source"),
    ({"type": "image", "source": {}}, "messages.0.content.0.source.type"),
    ({"type": "image", "source": {"type": "file", "file_id": "f"}}, "messages.0.content.0.source.type"),
    ({"type": "image", "source": {"type": "base64", "data": PNG}}, "messages.0.content.0.source.media_type"),
    ({"type": "image", "source": {"type": "base64", "media_type": "image/png"}}, "messages.0.content.0.source.data"),
    ({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "no pe"}},
     "messages.0.content.0.source.data"),
    ({"type": "image", "source": {"type": "url", "url": "gopher://x"}}, "messages.0.content.0.source.url"),
]


@pytest.mark.parametrize("block,field", BAD_ANTHROPIC)
def test_anthropic_malformed_image(smol, block, field):
    st, out = post(smol, "/v1/messages", {"max_tokens": 2, "messages": [{"role": "user", "content": [block]}]})
    assert st == 400 and out["type"] == "error", out
    msg = out["error"]["message"]
    assert f"'{field}'" in msg and "a part of type 'image'" in msg, msg


BAD_RESPONSES = [
    ({"type": "input_image"}, "input[0].content[0].image_url"),
    ({"type": "input_image", "image_url": "x"}, "input[0].content[0].image_url"),
    ({"type": "input_image", "image_url": DATA_URL, "detail": 1}, "input[0].content[0].detail"),
    ({"type": "input_image", "file_id": "file-1"}, "input[0].content[0].file_id"),
    ({"type": "input_file"}, "input[0].content[0].file_data"),
    ({"type": "input_file", "file_data": "%%%"}, "input[0].content[0].file_data"),
]


@pytest.mark.parametrize("part,param", BAD_RESPONSES)
def test_responses_malformed_part(smol, part, param):
    st, out = post(smol, "/v1/responses", {"input": [{"role": "user", "content": [part]}]})
    got_param, msg = openai_err(out)
    assert st == 400 and got_param == param, out


def test_inline_payload_over_the_cap(smol):
    """--media-max-bytes caps inline payloads as it caps fetched ones, before decoding."""
    from test_server_openai import Server
    s = Server(os.environ["HEARTH_SMOLLM2_GGUF"], "--media-max-bytes", "16")
    try:
        st, out = post(s, "/v1/chat/completions",
                       {"model": "m", "messages": [{"role": "user", "content": [
                           {"type": "image_url", "image_url": {"url": DATA_URL}}]}]})
        param, msg = openai_err(out)
        assert st == 400 and param == "messages[0].content[0].image_url.url" and "16 bytes" in msg, out
    finally:
        s.stop()


def test_models_mark_capabilities(smol):
    st, _, out = smol.raw("GET", "/v1/models")
    m = json.loads(out)["data"][0]
    assert st == 200 and m["capabilities"] == ["text"], m  # a text-only model: no vision, no audio
    st, _, out = smol.raw("GET", "/v1/models/" + m["id"])
    assert json.loads(out)["capabilities"] == ["text"]


# --- a model with a vision tower (store/modality.h): marked, and its images admitted ----------

@pytest.fixture(scope="module")
def seer(tmp_path_factory):
    """SmolLM2 with a llama.cpp-style projector GGUF beside it: the store calls it vision-capable."""
    from test_server_openai import Server
    from vision_fixture import seeing_gguf
    p = os.environ.get("HEARTH_SMOLLM2_GGUF")
    if not p:
        pytest.skip("HEARTH_SMOLLM2_GGUF is not set")
    s = Server(str(seeing_gguf(tmp_path_factory.mktemp("seer"), p)))
    try:
        yield s
    finally:
        s.stop()


def test_vision_model_marked(seer, smol):
    st, _, out = seer.raw("GET", "/v1/models")
    m = json.loads(out)["data"][0]
    assert st == 200 and m["capabilities"] == ["text", "vision"], m
    st, _, out = seer.raw("GET", "/v1/models/" + m["id"])
    assert json.loads(out)["capabilities"] == ["text", "vision"]
    st, _, out = seer.raw("GET", "/props")
    assert st == 200 and json.loads(out)["modalities"] == {"vision": True, "audio": False}
    st, _, out = smol.raw("GET", "/props")
    assert st == 200 and json.loads(out)["modalities"] == {"vision": False, "audio": False}


def test_image_to_vision_model_names_the_tower(seer):
    """The image passes the capability check (the model has a tower); until the engine runs the
    tower it is a 400 that says so, naming the part, the model and the projector, in all three
    APIs. An audio part is still refused as a kind the model cannot use."""
    msgs = [{"role": "user", "content": [{"type": "text", "text": "what is this?"},
                                         {"type": "image_url", "image_url": {"url": DATA_URL}}]}]
    with pytest.raises(openai.BadRequestError) as ei:
        seer.client().chat.completions.create(model="m", messages=msgs, max_tokens=2)
    assert ei.value.param == "messages[0].content[1]", ei.value.body
    msg = ei.value.message
    assert model_id(seer) in msg and "vision tower" in msg and "mmproj-model-f16.gguf" in msg, msg
    assert "text only" not in msg
    msgs[0]["content"][1] = {"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}}
    with pytest.raises(openai.BadRequestError) as ei:
        seer.client().chat.completions.create(model="m", messages=msgs, max_tokens=2)
    assert "audio part" in ei.value.message and "not this kind" in ei.value.message, ei.value.message
    c = anthropic.Anthropic(base_url=seer.base, api_key="none", max_retries=0, timeout=60)
    with pytest.raises(anthropic.BadRequestError) as ea:
        c.messages.create(model="m", max_tokens=2, messages=[{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]}])
    assert "vision tower" in ea.value.body["error"]["message"], ea.value.body
    st, out = post(seer, "/v1/responses", {"input": [{"role": "user", "content": [
        {"type": "input_image", "image_url": DATA_URL}]}]})
    param, msg = openai_err(out)
    assert st == 400 and param == "input[0].content[0]" and "vision tower" in msg, out
    r = seer.client().chat.completions.create(model="m", max_tokens=2, temperature=0,
                                              messages=[{"role": "user", "content": "Hi"}])
    assert r.choices[0].message.content is not None  # text is served as before


def test_text_parts_still_served(smol):
    r = smol.client().chat.completions.create(
        model="m", max_tokens=2, temperature=0,
        messages=[{"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": "there"}]}])
    assert r.choices[0].message.content is not None
    st, _, _ = smol.raw("GET", "/health")
    assert st == 200
