#!/usr/bin/env python3
"""extract_templates.py - pull real chat templates out of the llama-cpp-python sdist.

The template conformance suite (tests/e2e/test_templates.py) renders real chat templates with
Python jinja2 (configured as transformers configures it) and with `hearth template`, and wants
byte-identical output. The templates are other projects' files, so they are not committed: the
pinned llama-cpp-python sdist carries dozens of them, and scripts/fetch-templates.sh (run by
`make setup`) calls this script to copy them into a cache directory:

  vendor/llama.cpp/models/templates/*.jinja       the files llama.cpp tests its chat code with
  vendor/llama.cpp/tests/test-chat-template.cpp   inline templates (C++ string literals) with
                                                  the bos/eos tokens the test uses
  vendor/llama.cpp/models/ggml-vocab-*.gguf       tokenizer.chat_template[.NAME] metadata
  llama_cpp/llama_chat_format.py                  *_CHAT_TEMPLATE constants

Output: OUTDIR/<name>.jinja for each template (the exact text, UTF-8) and OUTDIR/manifest.json,
a list of {"file", "name", "source", "bos_token", "eos_token"} where source names the package,
its version and the member the text came from. Templates whose text is identical to an earlier
one are listed once.

Usage: extract_templates.py SDIST.tar.gz OUTDIR PACKAGE_SPEC
"""
import ast
import hashlib
import io
import json
import os
import re
import struct
import sys
import tarfile


def safe_name(s):
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s).strip("_")[:100]


def c_unescape(body):
    """Decode the body of a C++ string literal (the escapes test-chat-template.cpp uses)."""
    out = bytearray()
    raw = body.encode("utf-8")
    i = 0
    simple = {ord("n"): b"\n", ord("t"): b"\t", ord("r"): b"\r", ord("\\"): b"\\", ord('"'): b'"',
              ord("'"): b"'", ord("0"): b"\0", ord("?"): b"?"}
    while i < len(raw):
        c = raw[i]
        if c != ord("\\"):
            out.append(c)
            i += 1
            continue
        e = raw[i + 1]
        if e in simple:
            out += simple[e]
            i += 2
        elif e == ord("x"):
            m = re.match(rb"[0-9a-fA-F]{1,2}", raw[i + 2:])
            out.append(int(m.group(0), 16))
            i += 2 + len(m.group(0))
        else:
            raise ValueError(f"unsupported escape \\{chr(e)} in a C++ literal")
    return out.decode("utf-8")


LIT = r'(?:U8C\()?(?:u8)?"((?:[^"\\]|\\.)*)"'


def from_test_cpp(text):
    """(name, template, bos, eos) of each test case of test-chat-template.cpp."""
    cases = []
    for block in re.split(r"\n\s*\{\s*\n", text):
        name = re.search(r"/\*\s*\.name=?\s*\*/\s*" + LIT, block)
        tmpl = re.search(r"/\*\s*\.template_str=?\s*\*/\s*" + LIT, block)
        if not name or not tmpl:
            continue
        bos = re.search(r"/\*\s*\.bos_token=?\s*\*/\s*" + LIT, block)
        eos = re.search(r"/\*\s*\.eos_token=?\s*\*/\s*" + LIT, block)
        cases.append((c_unescape(name.group(1)), c_unescape(tmpl.group(1)),
                      c_unescape(bos.group(1)) if bos else "", c_unescape(eos.group(1)) if eos else ""))
    return cases


def from_chat_format_py(text):
    """(name, template, bos, eos) of the *_CHAT_TEMPLATE constants of llama_chat_format.py."""
    consts = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            consts[node.targets[0].id] = node.value.value
    out = []
    for k, v in consts.items():
        if k.endswith("_CHAT_TEMPLATE"):
            stem = k[: -len("_CHAT_TEMPLATE")]
            out.append((stem.lower(), v, consts.get(stem + "_BOS_TOKEN", "<s>"), consts.get(stem + "_EOS_TOKEN", "</s>")))
    return out


def gguf_templates(data):
    """(key, template, bos, eos) for every tokenizer.chat_template* string of a GGUF (v2/v3).

    A small reader of the key/value section only (gguf-py parses every tensor and token too,
    which takes a minute for these files); the bos/eos texts come from tokenizer.ggml.tokens."""
    pos = 0

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        nonlocal pos
        n = take("Q")
        s = data[pos:pos + n]
        pos += n
        return s.decode("utf-8", "replace")

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        return take(scalar[t])

    if data[:4] != b"GGUF" or struct.unpack_from("<I", data, 4)[0] < 2:
        return []
    pos = 8
    take("Q")  # tensor count
    n_kv = take("Q")
    kv = {}
    for _ in range(n_kv):
        key = string()
        kv[key] = value(take("I"))
    toks = kv.get("tokenizer.ggml.tokens", [])

    def tok(key):
        i = kv.get(key)
        return toks[i] if isinstance(i, int) and 0 <= i < len(toks) else ""

    bos, eos = tok("tokenizer.ggml.bos_token_id"), tok("tokenizer.ggml.eos_token_id")
    return [(k, v, bos, eos) for k, v in kv.items()
            if (k == "tokenizer.chat_template" or k.startswith("tokenizer.chat_template.")) and isinstance(v, str)]


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sdist, outdir, spec = sys.argv[1:]
    os.makedirs(outdir, exist_ok=True)
    manifest, seen = [], {}

    def add(name, text, bos, eos, member):
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        if digest in seen:
            return
        fname = safe_name(name) + ".jinja"
        n = 2
        while any(m["file"] == fname for m in manifest):
            fname = f"{safe_name(name)}-{n}.jinja"
            n += 1
        seen[digest] = fname
        with open(os.path.join(outdir, fname), "w", encoding="utf-8", newline="") as f:
            f.write(text)
        manifest.append({"file": fname, "name": name, "source": f"{spec} sdist: {member}",
                         "bos_token": bos, "eos_token": eos, "sha256": digest})

    with tarfile.open(sdist) as tar:
        members = {m.name.split("/", 1)[1]: m for m in tar.getmembers() if "/" in m.name and m.isfile()}

        def read(member):
            return tar.extractfile(members[member]).read()

        for member in sorted(members):
            if member.startswith("vendor/llama.cpp/models/templates/") and member.endswith(".jinja"):
                stem = member.rsplit("/", 1)[1][: -len(".jinja")]
                # Most files there are Hub tokenizer_config templates; bos/eos follow the family.
                add(stem, read(member).decode("utf-8"), None, None, member)
        member = "vendor/llama.cpp/tests/test-chat-template.cpp"
        for name, text, bos, eos in from_test_cpp(read(member).decode("utf-8")):
            add("test-chat-template_" + name, text, bos, eos, member + f" ({name})")
        member = "llama_cpp/llama_chat_format.py"
        for name, text, bos, eos in from_chat_format_py(read(member).decode("utf-8")):
            add("llama_chat_format_" + name, text, bos, eos, member + f" ({name.upper()}_CHAT_TEMPLATE)")
        for member in sorted(members):
            if re.fullmatch(r"vendor/llama\.cpp/models/ggml-vocab-[a-z0-9-]+\.gguf", member):
                stem = member.rsplit("/", 1)[1][: -len(".gguf")]
                for key, text, bos, eos in gguf_templates(read(member)):
                    add(stem + key[len("tokenizer.chat_template"):], text, bos, eos, member + f" ({key})")

    with open(os.path.join(outdir, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(f"extract_templates: {len(manifest)} templates from {spec} into {outdir}")


if __name__ == "__main__":
    main()
