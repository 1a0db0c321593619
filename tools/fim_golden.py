#!/usr/bin/env python3
"""fim_golden.py - two tiny models with fill-in-the-middle tokens, and the /infill prompts that
llama-server builds for them, as goldens for tests/unit/test_server_infill.c and
tests/e2e/test_server_infill.py.

Neither starter model has FIM tokens (SmolLM2's vocabulary has <reponame> and <file_sep> but
no prefix/suffix/middle; Gemma 3's none), so this script makes two:

  fim-sc.gguf    StarCoder-style names <fim_prefix> <fim_middle> <fim_suffix> <fim_pad>, their
                 ids given by the tokenizer.ggml.fim_*_token_id keys; <reponame> stays and is
                 the repo token by name; no file separator (extra files use the snippet text)
  fim-qwen.gguf  Qwen-style <|fim_prefix|> <|fim_middle|> <|fim_suffix|> <|fim_pad|>
                 <|repo_name|> <|file_sep|> without the keys (found by name); BOS added

Each is the tiny qwen2 model of tests/golden/tiny (random weights; the text it writes means
nothing) with its vocabulary cut to the first N_VOCAB tokens of SmolLM2's (merges kept when
both sides and the result are kept) and control tokens 4 and 7-12 renamed.

The expected prompts come from llama-server's construction (format_prompt_infill in
tools/server/server-common.cpp of the llama.cpp that llama-cpp-python 0.3.36 bundles),
re-expressed in Python in `infill_prompt` below, with the pieces tokenized by Hugging Face
tokenizers (requirements/tokjson.txt) from a tokenizer.json equal to the GGUF vocabulary
(byte-level BPE, smollm pre-tokenizer: single digits, then GPT-2's regex). The FIM ids are
llama.cpp's rule: the tokenizer.ggml.fim_* keys, else the first token with one of the known
names. llama-cpp-python itself is not used: the prompt construction lives in llama-server,
which its Python package does not expose, and building it here took too long.

Usage:
  python3 -m venv /tmp/tokenv && /tmp/tokenv/bin/pip install -r requirements/tokjson.txt gguf numpy
  /tmp/tokenv/bin/python tools/fim_golden.py --vocab-from <SmolLM2 GGUF> --out tests/golden/fim

Where llama-cpp-python is installed (requirements/oracle.txt), --check-llamacpp recomputes the
committed prompts with llama.cpp's own tokenizer, FIM ids and add_bos (llama_vocab_fim_* of a
vocabulary-only load) in place of tokenizers and the name rule above, and checks that the
starter models given have no FIM prefix/suffix/middle:
  PY tools/fim_golden.py --check-llamacpp "$HEARTH_SMOLLM2_GGUF" "$HEARTH_GEMMA3_GGUF"
"""
import argparse, datetime, json, os, sys

try:  # writing the models needs gguf and numpy; --check-llamacpp only llama_cpp
    import numpy as np
    import gguf
    from gguf import GGUFWriter, GGUFValueType as VT
except ImportError:
    gguf = None
try:
    import tokenizers
    from tokenizers import Tokenizer, models, pre_tokenizers, decoders
except ImportError:  # --check-llamacpp needs only llama_cpp
    tokenizers = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N_VOCAB = 2048
BASE = os.path.join(ROOT, "tests", "golden", "tiny", "tiny-qwen2.gguf")

VARIANTS = {
    "fim-sc": dict(rename={7: "<fim_prefix>", 8: "<fim_middle>", 9: "<fim_suffix>", 10: "<fim_pad>"},
                   keys={"fim_pre_token_id": 7, "fim_suf_token_id": 9, "fim_mid_token_id": 8,
                         "fim_pad_token_id": 10},
                   add_bos=False, special="<fim_middle>"),
    "fim-qwen": dict(rename={4: "<|extra_4|>", 7: "<|fim_prefix|>", 8: "<|fim_middle|>", 9: "<|fim_suffix|>",
                             10: "<|fim_pad|>", 11: "<|repo_name|>", 12: "<|file_sep|>"},
                     keys={}, add_bos=True, special="<|fim_middle|>"),
}

# llama.cpp's names (llama-vocab.cpp, "auto-detect special tokens by text"), in our order
FIM_NAMES = {
    "pre": ["<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\uff5cfim\u2581begin\uff5c>", "<PRE>", "\u2581<PRE>",
            "<|code_prefix|>", "<|prefix|>"],
    "suf": ["<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\uff5cfim\u2581hole\uff5c>", "<SUF>", "\u2581<SUF>",
            "<|code_suffix|>", "<|suffix|>"],
    "mid": ["<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\uff5cfim\u2581end\uff5c>", "<MID>", "\u2581<MID>",
            "<|code_middle|>", "<|middle|>"],
    "pad": ["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"],
    "rep": ["<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"],
    "sep": ["<|file_sep|>"],
}


def read_vocab(path):
    r = gguf.GGUFReader(path)
    tokens = [str(t) for t in r.fields["tokenizer.ggml.tokens"].contents()]
    types = [int(t) for t in r.fields["tokenizer.ggml.token_type"].contents()]
    merges = [str(m) for m in r.fields["tokenizer.ggml.merges"].contents()]
    return tokens, types, merges


def cut_vocab(tokens, types, merges, rename):
    toks = list(tokens[:N_VOCAB])
    for i, name in rename.items():
        assert types[i] == 3, (i, toks[i])
        toks[i] = name
    keep = set(toks)
    kept = []
    for m in merges:
        a, b = m.split(" ")
        if a in keep and b in keep and a + b in keep:
            kept.append(m)
    return toks, list(types[:N_VOCAB]), kept


def write_model(path, toks, types, merges, v):
    r = gguf.GGUFReader(BASE)
    w = GGUFWriter(path, "qwen2")
    for k, f in r.fields.items():
        if k.startswith("GGUF.") or k == "general.architecture" or k.startswith("tokenizer."):
            continue
        if k == "general.name":
            w.add_string(k, "hearth tiny qwen2 with FIM tokens")
            continue
        t = f.types[0]
        if t == VT.UINT32:
            w.add_uint32(k, int(f.contents()))
        elif t == VT.FLOAT32:
            w.add_float32(k, float(f.contents()))
        elif t == VT.STRING:
            w.add_string(k, str(f.contents()))
        else:
            raise SystemExit("unexpected key type " + k)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(toks)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_pad_token_id(2)
    w.add_add_bos_token(v["add_bos"])
    for k, i in v["keys"].items():
        w.add_uint32("tokenizer.ggml." + k, i)
    for t in r.tensors:
        data = np.array(t.data)
        if t.name == "token_embd.weight":
            data = data[:N_VOCAB]
        w.add_tensor(t.name, data, raw_dtype=t.tensor_type)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def fim_ids(toks, keys):
    ids = {}
    index = {t: i for i, t in enumerate(toks)}
    for kind, names in FIM_NAMES.items():
        key = "fim_%s_token_id" % kind
        if key in keys:
            ids[kind] = keys[key]
            continue
        ids[kind] = next((index[n] for n in names if n in index), -1)
    return ids


def hf_tokenizer(toks, types, merges):
    vocab = {t: i for i, t in enumerate(toks)}
    bpe = models.BPE(vocab=vocab, merges=[tuple(m.split(" ")) for m in merges])
    tk = Tokenizer(bpe)
    tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tk.decoder = decoders.ByteLevel()
    tk.add_special_tokens([tokenizers.AddedToken(t, special=True, normalized=False)
                           for i, t in enumerate(toks) if types[i] == 3])
    return tk


class HF:
    """Pieces tokenized by Hugging Face tokenizers (no BOS; special-token text kept plain unless
    parse_special)."""

    def __init__(self, tk):
        self.tk = tk

    def encode(self, text, parse_special):
        self.tk.encode_special_tokens = not parse_special
        return self.tk.encode(text, add_special_tokens=False).ids


class LlamaCpp:
    """The same through llama.cpp itself (llama-cpp-python's low-level API, vocabulary only):
    its tokenizer, its FIM ids and its add_bos, for --check-llamacpp."""

    def __init__(self, path):
        import llama_cpp as L
        self.L = L
        L.llama_backend_init()
        mp = L.llama_model_default_params()
        mp.vocab_only = True
        self.model = L.llama_model_load_from_file(path.encode(), mp)
        if not self.model:
            raise SystemExit("llama.cpp could not load " + path)
        self.vocab = L.llama_model_get_vocab(self.model)
        self.fim = {k: int(getattr(L, "llama_vocab_fim_" + k)(self.vocab)) for k in FIM_NAMES}
        self.add_bos = bool(L.llama_vocab_get_add_bos(self.vocab))
        self.bos = int(L.llama_vocab_bos(self.vocab))

    def encode(self, text, parse_special):
        b = text.encode()
        cap = len(b) + 16
        buf = (self.L.llama_token * cap)()
        n = self.L.llama_tokenize(self.vocab, b, len(b), buf, cap, False, parse_special)
        if n < 0:
            raise SystemExit("llama_tokenize failed")
        return list(buf[:n])


def encode(tk, text, parse_special):
    return tk.encode(text, parse_special)


def mixed(tk, v):
    """llama-server's tokenize_mixed: a string, or a list of strings and token ids."""
    if isinstance(v, str):
        return encode(tk, v, False)
    out = []
    for p in v:
        out += [p] if isinstance(p, int) else encode(tk, p, False)
    return out


def infill_prompt(tk, fim, add_bos, c, bos=1):
    """format_prompt_infill: [extra tail] [BOS] PRE prefix-tail prompt SUF suffix-head MID."""
    extra = []
    if fim["rep"] >= 0:
        extra += [fim["rep"]] + encode(tk, "myproject\n", False)
    for chunk in c.get("input_extra", []):
        if fim["sep"] >= 0:
            extra += [fim["sep"]] + encode(tk, chunk.get("filename", "tmp") + "\n", False)
        else:
            extra += encode(tk, "\n\n--- snippet ---\n\n", False)
        extra += encode(tk, chunk["text"], False)
    if fim["sep"] >= 0:
        extra += [fim["sep"]] + encode(tk, "filename\n", False)
    prefix, suffix = mixed(tk, c["input_prefix"]), mixed(tk, c["input_suffix"])
    prompt = encode(tk, c.get("prompt", ""), True)
    n_batch, n_ctx, n_predict = c["n_batch"], c["n_ctx"], c["n_predict"]
    take_pre = min(len(prefix), 3 * (n_batch // 4))
    take_suf = min(len(suffix), max(0, n_batch // 4 - (2 + len(prompt))))
    take_extra = min(max(0, n_ctx - n_batch - 2 * n_predict), len(extra))
    pre = [fim["pre"]] + prefix[len(prefix) - take_pre:] + prompt
    suf = [fim["suf"]] + suffix[:take_suf]
    first, second = (suf, pre) if c.get("spm") else (pre, suf)
    out = ([bos] if add_bos else []) + first
    out = extra[len(extra) - take_extra:] + out
    return out + second + [fim["mid"]]


def cases(special):
    long_prefix = "".join("x%d = %d * %d\n" % (i, i, i + 1) for i in range(60))
    long_suffix = "".join("print(x%d)\n" % i for i in range(40))
    files = [{"filename": "utils.py", "text": "def sub(a, b):\n    return a - b\n"},
             {"text": "import os\nimport sys\n"}]
    big = [{"filename": "f%d.py" % i, "text": "def f%d():\n    return %d\n" % (i, i * 7)} for i in range(12)]
    d = dict(n_batch=2048, n_ctx=8192, n_predict=-1)
    return [
        dict(name="plain", input_prefix="def add(a, b):\n    ", input_suffix="\n\nprint(add(1, 2))\n", **d),
        dict(name="cursor_and_files", input_prefix="def add(a, b):\n", input_suffix="\n", prompt="    return a",
             input_extra=files, **d),
        dict(name="budget", input_prefix=long_prefix, input_suffix=long_suffix, prompt="y = ",
             input_extra=big, n_batch=64, n_ctx=200, n_predict=20),
        dict(name="budget_no_room", input_prefix=long_prefix, input_suffix=long_suffix, prompt="z" * 40,
             input_extra=big, n_batch=32, n_ctx=100, n_predict=-1),
        dict(name="special_text", input_prefix="s = '%s'\n" % special, input_suffix="# %s\n" % special,
             prompt="t = '%s'" % special, **d),
        dict(name="mixed_lists", input_prefix=["def f():", 42, " pass"], input_suffix=[300, "\n"], **d),
        dict(name="spm_order", input_prefix="a = 1\n", input_suffix="c = 3\n", prompt="b =", spm=True, **d),
        dict(name="empty", input_prefix="", input_suffix="", **d),
        dict(name="server_defaults", input_prefix="def add(a, b):\n", input_suffix="\n", prompt="    return a",
             input_extra=files, n_batch=2048, n_ctx=2048, n_predict=-1),
        dict(name="completion_suffix", input_prefix="def add(a, b):\n", input_suffix="\n\nprint(add(2, 3))\n",
             n_batch=2048, n_ctx=2048, n_predict=-1),
    ]


def check_llamacpp(out, starters):
    """Recompute every golden with llama.cpp's tokenizer and FIM ids; the starter models must
    have no prefix/suffix/middle (SmolLM2: <reponame> as the repo token). Exit 1 on a difference."""
    golden = json.load(open(os.path.join(out, "infill.json")))
    bad = 0
    for name, m in golden["models"].items():
        ll = LlamaCpp(os.path.join(out, name + ".gguf"))
        if ll.fim != m["fim"] or ll.add_bos != m["add_bos"]:
            print("%s: llama.cpp has fim %s add_bos %s, the golden %s %s" % (name, ll.fim, ll.add_bos, m["fim"],
                                                                          m["add_bos"]))
            bad += 1
        for c in m["cases"]:
            ids = infill_prompt(ll, ll.fim, ll.add_bos, c, ll.bos)
            if ids != c["ids"]:
                print("%s/%s: llama.cpp gives %s\n  golden %s" % (name, c["name"], ids, c["ids"]))
                bad += 1
    for path in starters:
        ll = LlamaCpp(path)
        print(os.path.basename(path), ll.fim)
        if min(ll.fim["pre"], ll.fim["suf"], ll.fim["mid"]) >= 0:
            print("  has FIM tokens: test_server_infill's starter_models_have_no_fim is wrong")
            bad += 1
    print("llama.cpp agrees" if not bad else "%d differences" % bad)
    sys.exit(1 if bad else 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab-from")
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "golden", "fim"))
    ap.add_argument("--check-llamacpp", nargs="*", metavar="STARTER_GGUF",
                    help="recompute the committed goldens with llama-cpp-python instead of writing them")
    a = ap.parse_args()
    if a.check_llamacpp is not None:
        check_llamacpp(a.out, a.check_llamacpp)
    if not a.vocab_from:
        ap.error("--vocab-from is required")
    os.makedirs(a.out, exist_ok=True)
    tokens, types, merges = read_vocab(a.vocab_from)
    golden = {"provenance": {
        "made_by": "tools/fim_golden.py", "date": datetime.date.today().isoformat(),
        "reference": "format_prompt_infill of llama-server (llama.cpp bundled by llama-cpp-python 0.3.36), "
                     "tokens from tokenizers %s" % tokenizers.__version__,
        "vocab_from": os.path.basename(a.vocab_from), "n_vocab": N_VOCAB}, "models": {}}
    for name, v in VARIANTS.items():
        toks, typs, mrg = cut_vocab(tokens, types, merges, v["rename"])
        path = os.path.join(a.out, name + ".gguf")
        write_model(path, toks, typs, mrg, v)
        tk = HF(hf_tokenizer(toks, typs, mrg))
        fim = fim_ids(toks, v["keys"])
        cs = cases(v["special"])
        for c in cs:
            c["ids"] = infill_prompt(tk, fim, v["add_bos"], c)
        golden["models"][name] = {"fim": fim, "add_bos": v["add_bos"], "cases": cs}
        print(name, fim, [len(c["ids"]) for c in cs], os.path.getsize(path), file=sys.stderr)
    with open(os.path.join(a.out, "infill.json"), "w") as f:
        json.dump(golden, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
