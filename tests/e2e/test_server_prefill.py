"""Assistant prefill: a conversation whose last message is the assistant's is continued, not
answered as a new turn, on /v1/messages (Anthropic's prefill) and /v1/chat/completions
(llama-server's default; vLLM's `continue_final_message`), through the official SDKs against
SmolLM2.

The reference prompt is made outside hearth, as transformers' apply_chat_template(...,
continue_final_message=True) makes it: the GGUF's chat template rendered by jinja2 (configured as
transformers, tools/template_golden.py) without a generation prompt, cut after the last
occurrence of the final message's text. Sent to /v1/completions, that text must give the same
prompt size and, greedy, the same continuation as the prefilled chat requests.
"""
import mmap
import sys

import anthropic
import pytest

from conftest import ROOT, smol_server

sys.path.insert(0, str(ROOT / "tools"))
import extract_templates  # noqa: E402
import template_golden as tg  # noqa: E402

PREFIX = "The capital of France is"
MSGS = [{"role": "user", "content": "What is the capital of France? Answer in one sentence."},
        {"role": "assistant", "content": PREFIX}]
N = 12


@pytest.fixture(scope="module")
def smol():
    yield from smol_server()


@pytest.fixture(scope="module")
def reference(smol, smollm2):
    """(prompt tokens, greedy continuation) of the transformers-style continued prompt."""
    with open(smollm2, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        tmpl, bos, eos = next((t, b, e) for k, t, b, e in extract_templates.gguf_templates(m)
                              if k == "tokenizer.chat_template")
    ok, text = tg.render(tmpl, tg.context(MSGS, add_generation_prompt=False,
                                          special_tokens={"bos_token": bos, "eos_token": eos}))
    assert ok, text
    text = text[: text.rindex(PREFIX) + len(PREFIX)]
    assert text.endswith("<|im_start|>assistant\n" + PREFIX)  # inside the assistant's turn
    r = smol.client().completions.create(model="x", prompt=text, max_tokens=N, temperature=0)
    return r.usage.prompt_tokens, r.choices[0].text


def test_anthropic_prefill(smol, reference):
    n_prompt, want = reference
    c = anthropic.Anthropic(base_url=smol.base, api_key="none", max_retries=0, timeout=60)
    m = c.messages.create(model="x", max_tokens=N, messages=MSGS, extra_body={"temperature": 0})
    assert m.content[0].text == want and not want.startswith(PREFIX)  # only the continuation
    assert m.usage.input_tokens + m.usage.cache_read_input_tokens == n_prompt
    assert c.messages.count_tokens(model="x", messages=MSGS).input_tokens == n_prompt
    with c.messages.stream(model="x", max_tokens=N, messages=MSGS, extra_body={"temperature": 0}) as st:
        assert "".join(st.text_stream) == want


def test_chat_prefill_and_continue_final_message(smol, reference):
    n_prompt, want = reference
    c = smol.client()
    r = c.chat.completions.create(model="x", max_tokens=N, messages=MSGS, temperature=0)
    assert r.choices[0].message.content == want and r.usage.prompt_tokens == n_prompt
    chunks = c.chat.completions.create(model="x", max_tokens=N, messages=MSGS, temperature=0, stream=True)
    assert "".join(ch.choices[0].delta.content or "" for ch in chunks if ch.choices) == want
    # continue_final_message false: the assistant's turn is closed and a new one answered
    new = c.chat.completions.create(model="x", max_tokens=N, messages=MSGS, temperature=0,
                                    extra_body={"continue_final_message": False})
    assert new.usage.prompt_tokens > n_prompt
    # true needs a final assistant message with text
    with pytest.raises(Exception) as ei:
        c.chat.completions.create(model="x", max_tokens=N, messages=MSGS[:1], temperature=0,
                                  extra_body={"continue_final_message": True})
    assert getattr(ei.value, "status_code", None) == 400
