"""Images to a Gemma 3 vision model through the three APIs (src/server/vision_prompt.h).

The model is the tiny random Gemma3ForConditionalGeneration of tests/golden/hf/gemma3-vision,
with transformers' reference outputs in gemma3-vision.json / .logits.bin
(tools/make_gemma3_vision_tiny.py). The server runs the reference kernels (HEARTH_KERNELS=ref:
f32 everywhere, as the goldens), so a request that carries the golden prompt's images as data:
URL PNGs must give the golden 16 greedy tokens, and the log-probability of its first token must
be transformers' (from the logits after the prompt) within 1e-3. Each image is sent as the
dialect spells it: OpenAI image_url, Anthropic image (base64 source), Responses input_image.
Also: a repeated request takes its prefix, images included, from the cache; the same text with
another image does not; two requests at once in one batch give what each gives alone; a PNG
that does not decode is a 400 naming the part.
"""
import base64
import concurrent.futures
import json
import math
import pathlib
import struct

import anthropic
import pytest

from test_server_openai import Server

ROOT = pathlib.Path(__file__).resolve().parents[2]
GOLD = ROOT / "tests" / "golden" / "hf"
MODEL = GOLD / "gemma3-vision"
META = json.loads((GOLD / "gemma3-vision.json").read_text())
VOCAB = 280


def data_url(i):
    return "data:image/png;base64," + base64.b64encode((MODEL / f"image{i}.png").read_bytes()).decode()


def b64(i):
    return base64.b64encode((MODEL / f"image{i}.png").read_bytes()).decode()


def golden_first_logprob(ip):
    """log-softmax of the golden logits after prompt ip, at its first greedy token."""
    raw = (GOLD / "gemma3-vision.logits.bin").read_bytes()
    row = sum(len(p["ids"]) for p in META["prompts"][:ip]) + len(META["prompts"][ip]["ids"]) - 1
    lg = struct.unpack_from(f"<{VOCAB}f", raw, row * VOCAB * 4)
    m = max(lg)
    lse = m + math.log(sum(math.exp(x - m) for x in lg))
    return lg[META["prompts"][ip]["greedy16"][0]] - lse


@pytest.fixture(scope="module")
def srv():
    s = Server(str(MODEL), "--batch", "2", env={"HEARTH_KERNELS": "ref"})
    try:
        yield s
    finally:
        s.stop()


def post(s, path, body):
    st, _, out = s.raw("POST", path, body, timeout=120)
    return st, json.loads(out)


def golden_text(s, ip):
    st, out = post(s, "/detokenize", {"tokens": META["prompts"][ip]["greedy16"]})
    assert st == 200, out
    return out["content"]


# prompt 0: "What is in <image 0> this picture?"; prompt 1: "Compare<image 1>with<image 0>now."
PIECES = [["What is in ", 0, " this picture?"], ["Compare", 1, "with", 0, "now."]]


def openai_body(ip, images=None):
    parts = []
    for p in PIECES[ip]:
        if isinstance(p, int):
            i = images.pop(0) if images else p
            parts.append({"type": "image_url", "image_url": {"url": data_url(i)}})
        else:
            parts.append({"type": "text", "text": p})
    return {"messages": [{"role": "user", "content": parts}], "temperature": 0, "max_tokens": 16,
            "logprobs": True, "ignore_eos": True}


def run_openai(s, body):
    st, out = post(s, "/v1/chat/completions", body)
    assert st == 200, out
    c = out["choices"][0]
    return c["message"]["content"], c["logprobs"]["content"][0]["logprob"], out["usage"]


@pytest.mark.parametrize("ip", [0, 1], ids=["one-image", "two-images"])
def test_openai_matches_transformers(srv, ip):
    text, lp, usage = run_openai(srv, openai_body(ip))
    assert usage["prompt_tokens"] == len(META["prompts"][ip]["ids"])
    assert text == golden_text(srv, ip)
    assert abs(lp - golden_first_logprob(ip)) <= 1e-3


def test_anthropic_image_block(srv):
    blocks = [{"type": "text", "text": "What is in "},
              {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": b64(0)}},
              {"type": "text", "text": " this picture?"}]
    c = anthropic.Anthropic(base_url=srv.base, api_key="none", max_retries=0, timeout=120)
    r = c.messages.create(model="m", max_tokens=16, messages=[{"role": "user", "content": blocks}],
                          extra_body={"temperature": 0})
    assert r.usage.input_tokens + r.usage.cache_read_input_tokens == len(META["prompts"][0]["ids"])
    # the golden continuation never ends the turn, so 16 tokens come back
    assert "".join(b.text for b in r.content if b.type == "text") == golden_text(srv, 0)


def test_responses_input_image(srv):
    body = {"input": [{"role": "user", "content": [
        {"type": "input_text", "text": "Compare"}, {"type": "input_image", "image_url": data_url(1)},
        {"type": "input_text", "text": "with"}, {"type": "input_image", "image_url": data_url(0)},
        {"type": "input_text", "text": "now."}]}],
        "temperature": 0, "max_output_tokens": 16}
    st, out = post(srv, "/v1/responses", body)
    assert st == 200, out
    assert out["usage"]["input_tokens"] == len(META["prompts"][1]["ids"])
    text = "".join(c["text"] for o in out["output"] if o["type"] == "message" for c in o["content"])
    assert text == golden_text(srv, 1)


def test_cache_keys_images_by_pixels(srv):
    run_openai(srv, openai_body(0))
    _, _, usage = run_openai(srv, openai_body(0))
    cached = usage["prompt_tokens_details"]["cached_tokens"]
    first_image = META["prompts"][0]["token_type_ids"].index(1)
    assert cached > first_image + 16  # past the image's 16 soft tokens
    # the same text and token ids with the other image: nothing past the image's start
    _, lp, usage = run_openai(srv, openai_body(0, images=[1]))
    assert usage["prompt_tokens_details"]["cached_tokens"] <= first_image
    assert abs(lp - golden_first_logprob(0)) > 1e-3  # another image, another answer


def test_batched_equals_alone(srv):
    alone = [run_openai(srv, openai_body(ip))[:2] for ip in (0, 1)]
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        together = list(ex.map(lambda ip: run_openai(srv, openai_body(ip))[:2], (0, 1)))
    for a, t in zip(alone, together):
        assert a[0] == t[0]
        assert abs(a[1] - t[1]) <= 1e-4


def test_undecodable_image_is_400(srv):
    body = openai_body(0)
    body["messages"][0]["content"][1]["image_url"]["url"] = ("data:image/png;base64," +
                                                             base64.b64encode(b"\x89PNG\r\n\x1a\nnot a png").decode())
    st, out = post(srv, "/v1/chat/completions", body)
    assert st == 400, out
    assert out["error"]["param"] == "messages[0].content[1]"
    st, out = post(srv, "/v1/chat/completions", openai_body(0))  # the server goes on
    assert st == 200
