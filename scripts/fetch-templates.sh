#!/usr/bin/env bash
# fetch-templates.sh - real chat templates for the template conformance suite (`make setup` runs it).
#
# The suite (tests/e2e/test_templates.py) renders real chat templates with Python jinja2 and
# with `hearth template` and wants identical output. The templates belong to other projects,
# so they are not committed: the pinned llama-cpp-python sdists carry llama.cpp's source, whose
# models/templates/*.jinja, tests/test-chat-template.cpp, models/ggml-vocab-*.gguf and
# llama_cpp/llama_chat_format.py hold several dozen of them. This script downloads each sdist
# once (pip download, checked against its sha256), and tools/extract_templates.py copies the
# templates out, with a manifest.json naming the package, version and member of each, into
#
#   ${XDG_CACHE_HOME:-~/.cache}/hearth/templates/llama-cpp-python-<version>/
#
# Two versions are pinned: 0.3.16, the corpus the suite started with (the server's e2e tests
# use some of its files too), and 0.3.36, whose llama.cpp adds newer templates (DeepSeek V3.2,
# V4 and V4-Flash among them, which use `from_json` in a branch ordinary conversations do not
# take) and revised versions of older ones.
#
# Idempotent: a stamp per version holds the sdist's sha256 and the extractor's; when both match,
# nothing runs (a few milliseconds). A first run downloads about 50 + 75 MB (pip prepares each
# sdist's metadata, which can take a minute).
#
# Usage: scripts/fetch-templates.sh        Env: XDG_CACHE_HOME, PYTHON (default .venv's python)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$hearth_root"

python=${PYTHON:-.venv/bin/python}
[ -x "$python" ] || python=python3

die() { printf 'fetch-templates: error: %s\n' "$*" >&2; exit 1; }

# fetch VERSION SHA256: the sdist of llama-cpp-python==VERSION, and its templates.
fetch() {
    local version=$1 sha=$2
    local spec=llama-cpp-python==$version
    local sdist_dir tarball out want got
    sdist_dir="$(hearth_cache_dir)/sdist"
    tarball="$sdist_dir/llama_cpp_python-$version.tar.gz"
    out="$(hearth_cache_dir)/templates/llama-cpp-python-$version"
    want="$sha $(sha256sum tools/extract_templates.py | cut -d' ' -f1)"
    [ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$want" ] && return 0

    mkdir -p "$sdist_dir" "$(dirname "$out")"
    exec 9> "$(dirname "$out")/.lock"
    flock 9
    if [ ! -f "$tarball" ] || [ "$(sha256sum "$tarball" | cut -d' ' -f1)" != "$sha" ]; then
        rm -f "$tarball"
        printf 'fetch-templates: downloading the %s sdist (llama.cpp source with chat templates)\n' "$spec"
        "$python" -m pip download -q --no-deps --no-binary :all: -d "$sdist_dir" "$spec" \
            || die "pip could not download $spec"
        got=$(sha256sum "$tarball" | cut -d' ' -f1)
        if [ "$got" != "$sha" ]; then
            rm -f "$tarball"
            die "$tarball has sha256 $got, expected $sha"
        fi
    fi
    rm -rf "$out.tmp"
    "$python" tools/extract_templates.py "$tarball" "$out.tmp" "$spec"
    rm -rf "$out"
    mv "$out.tmp" "$out"
    printf '%s\n' "$want" > "$out/.stamp"
    exec 9>&-
}

fetch 0.3.16 34ed0f9bd9431af045bb63d9324ae620ad0536653740e9bb163a2e1fcb973be6
fetch 0.3.36 832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
