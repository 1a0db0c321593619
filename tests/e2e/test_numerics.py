"""The numerics levers on the command line (docs/engine.md, "Two ways of rounding"): the tier and
the kill switches are in the help of serve, generate and benchmark, reach the engine (/stats and
the ready card show them), select paths of the same bits (greedy logprobs equal with every
switch off), and bad values are refused with exit code 2. --l2 and --kv-quant (the quantized KV
cache) need heads of whole 32-element blocks: the tiny model's 16 are refused, saying so, and
SmolLM2 serves with each scheme, /stats naming the cache's types; turbo (rotated keys and values)
needs heads of whole 64-element rotations and serves SmolLM2 too."""
import json

from conftest import TINY
from test_server_openai import Server

LEVERS = ("--l1", "--l2", "--compiled-decode", "--fused-sdpa", "--compiled-activations", "--force-wire", "--kv-quant")
PROMPT = "The capital of France is a city where"


def greedy_lp(s, n=12):
    r = s.client().completions.create(model="tiny", prompt=PROMPT, max_tokens=n, temperature=0, logprobs=3,
                                      extra_body={"ignore_eos": True})
    lp = r.choices[0].logprobs
    return r.choices[0].text, lp.token_logprobs, lp.top_logprobs


def test_levers_in_help(hearth):
    for verb in ("serve", "generate", "benchmark"):
        r = hearth("help", verb)
        assert r.returncode == 0
        for flag in LEVERS:
            assert flag in r.stdout, (verb, flag)


def test_bad_values_and_l2_are_refused(hearth):
    for verb in ("serve", "generate", "benchmark"):
        r = hearth(verb, TINY, "--l2", *(("--raw", "--prompt", "hi") if verb == "generate" else ()))
        assert r.returncode != 0 and "multiple of 32" in r.stderr, (verb, r.stderr)
        r = hearth(verb, TINY, "--kv-quant", "6")
        assert r.returncode == 2 and "expected off, 8, 4" in r.stderr, (verb, r.stderr)
        r = hearth(verb, TINY, "--kv-quant=turbo:k3v3")
        assert r.returncode == 2 and "key bits must be" in r.stderr, (verb, r.stderr)
        r = hearth(verb, TINY, "--kv-quant")
        assert r.returncode == 2 and "--kv-quant needs a value" in r.stderr, (verb, r.stderr)
        r = hearth(verb, TINY, "--compiled-decode", "sometimes")
        assert r.returncode == 2 and "--compiled-decode expects on or off" in r.stderr, (verb, r.stderr)
        r = hearth(verb, TINY, "--fused-sdpa")
        assert r.returncode == 2 and "--fused-sdpa needs a value" in r.stderr, (verb, r.stderr)
        r = hearth(verb, TINY, "--numerics", "l9")
        assert r.returncode == 2 and "--numerics expects" in r.stderr, (verb, r.stderr)


def test_stats_show_the_numerics_and_the_switches_keep_the_bits():
    s = Server(TINY, "--l1", "--threads", "2")
    try:
        nx = s.stats()["numerics"]
        assert nx == {"tier": "l1", "compiled_decode": True, "fused_sdpa": True, "compiled_activations": True,
                      "force_wire": False, "kv_type": "f16", "kv_type_v": "f16", "kv_quant": "off"}, nx
        assert "numerics l1, compiled-decode on, fused-sdpa on, compiled-activations on" in s.stderr()
        on = greedy_lp(s)
    finally:
        s.stop()
    s = Server(TINY, "--threads", "2", "--compiled-decode", "off", "--fused-sdpa=off", "--compiled-activations", "false")
    try:
        nx = s.stats()["numerics"]
        assert nx["tier"] == "l1" and not nx["compiled_decode"] and not nx["fused_sdpa"], nx
        assert not nx["compiled_activations"], nx
        assert "compiled-decode off, fused-sdpa off, compiled-activations off" in s.stderr()
        off = greedy_lp(s)
    finally:
        s.stop()
    assert on == off  # the same text and the same log-probabilities, to the last bit printed
    s = Server(TINY, "--numerics", "ref", "--threads", "2")
    try:
        nx = s.stats()["numerics"]
        assert nx["tier"] == "ref" and nx["kv_type"] == "f32", nx
    finally:
        s.stop()


def test_benchmark_shows_and_records_the_numerics(hearth, tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    r = hearth("benchmark", TINY, "--tokens", "2", "--runs", "1", "--prompt-tokens", "4", "--threads", "1",
               "--fused-sdpa", "off", "--json", env=env)
    assert r.returncode == 0, r.stderr
    j = json.loads(r.stdout)
    assert j["numerics"] == {"tier": "l1", "compiled_decode": True, "fused_sdpa": False,
                             "compiled_activations": True, "force_wire": False}, j["numerics"]
    assert "numerics=l1" in j["levers"] and "fused-sdpa=off" in j["levers"] and "kv=f16" in j["levers"]
    r = hearth("benchmark", TINY, "--tokens", "2", "--runs", "1", "--prompt-tokens", "4", "--threads", "1",
               "--no-record", env=env)
    assert r.returncode == 0, r.stderr
    assert "numerics  l1, compiled-decode on, fused-sdpa on, compiled-activations on, force-wire off" in r.stdout
    r = hearth("evals", "--raw", env=env)
    assert r.returncode == 0 and "fused-sdpa=off" in r.stdout.splitlines()[1]


def test_quantized_kv_schemes_serve_smollm2(smollm2):
    texts = {}
    for scheme, want in (("8", "q8_0"), ("4", "q4_0")):
        s = Server(smollm2, "--threads", "2", "--kv-quant", scheme)
        try:
            nx = s.stats()["numerics"]
            assert nx["kv_type"] == want and nx["kv_type_v"] == want and nx["kv_quant"] == scheme, nx
            texts[scheme] = greedy_lp(s, 8)[0]
        finally:
            s.stop()
    s = Server(smollm2, "--threads", "2", "--l2")
    try:
        nx = s.stats()["numerics"]
        assert nx["tier"] == "l2" and nx["kv_type"] == "q8_0" and nx["kv_quant"] == "8", nx
        # l2 is the 8-bit cache in the same arithmetic as --kv-quant 8 under l1
        assert greedy_lp(s, 8)[0] == texts["8"]
    finally:
        s.stop()


def test_turbo_kv_serves_smollm2(smollm2, hearth):
    # the tiny model's heads (16) are not whole 64-element rotations: refused, saying so
    r = hearth("generate", TINY, "--kv-quant", "turbo", "--raw", "--prompt", "hi")
    assert r.returncode != 0 and "multiple of 64" in r.stderr, r.stderr
    for scheme, name, k, v in (("turbo", "turbo:k8v3", "turbo8", "turbo3"),
                               ("turbo:k4v3", "turbo:k4v3", "turbo4", "turbo3")):
        s = Server(smollm2, "--threads", "2", "--kv-quant", scheme)
        try:
            nx = s.stats()["numerics"]
            assert nx["kv_type"] == k and nx["kv_type_v"] == v and nx["kv_quant"] == name, nx
            text, lps, _ = greedy_lp(s, 8)
            assert text.strip() and len(lps) == 8 and all(lp <= 0 for lp in lps), (text, lps)
        finally:
            s.stop()


def test_kv_config_serves_a_scheme_per_layer(tmp_path, hearth):
    # the tiny llama with 64-wide heads and a kv_config.json in mlx-optiq's list shape beside it:
    # /stats names the scheme and each layer's type; without the file `config` is off
    import os
    import shutil
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    model = tmp_path / "tiny64.gguf"
    shutil.copy(os.path.join(here, "tests", "golden", "tiny", "tiny-llama64.gguf"), model)
    s = Server(str(model), "--threads", "1", "--kv-quant", "config")
    try:
        nx = s.stats()["numerics"]
        assert nx["kv_quant"] == "off" and nx["kv_type"] == "f16" and "kv_layers" not in nx, nx
    finally:
        s.stop()
    (tmp_path / "kv_config.json").write_text(json.dumps(
        [{"layer_idx": 0, "bits": 8, "group_size": 64}, {"layer_idx": 1, "bits": 4, "group_size": 64}]))
    s = Server(str(model), "--threads", "1", "--kv-quant", "config")
    try:
        nx = s.stats()["numerics"]
        assert nx["kv_quant"] == "config" and nx["kv_layers"] == ["q8_0", "q4_0"] and nx["kv_type"] == "q8_0", nx
        text, lps, _ = greedy_lp(s, 6)
        assert len(lps) == 6 and all(lp <= 0 for lp in lps), (text, lps)
    finally:
        s.stop()
    (tmp_path / "kv_config.json").write_text('{"layers": {"1": 6}}')
    r = hearth("generate", str(model), "--kv-quant", "config", "--raw", "--prompt", "hi")
    assert r.returncode != 0 and "layer 1: bits 6 is not supported" in r.stderr, r.stderr
