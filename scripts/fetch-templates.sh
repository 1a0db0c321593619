#!/usr/bin/env bash
# fetch-templates.sh - real chat templates for the template conformance suite (`make setup` runs it).
#
# The suite (tests/e2e/test_templates.py) renders real chat templates with Python jinja2 and
# with `hearth template` and wants identical output. The templates belong to other projects,
# so they are not committed: the pinned llama-cpp-python sdist carries llama.cpp's source, whose
# models/templates/*.jinja, tests/test-chat-template.cpp, models/ggml-vocab-*.gguf and
# llama_cpp/llama_chat_format.py hold several dozen of them. This script downloads that sdist
# once (pip download, checked against its sha256), and tools/extract_templates.py copies the
# templates out, with a manifest.json naming the package, version and member of each, into
#
#   ${XDG_CACHE_HOME:-~/.cache}/hearth/templates/llama-cpp-python-0.3.16/
#
# Idempotent: a stamp holds the sdist's sha256 and the extractor's; when both match, nothing
# runs (a few milliseconds). The first run downloads 50 MB (pip prepares the sdist's metadata,
# which can take a minute).
#
# Usage: scripts/fetch-templates.sh        Env: XDG_CACHE_HOME, PYTHON (default .venv's python)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$hearth_root"

spec=llama-cpp-python==0.3.16
sha=34ed0f9bd9431af045bb63d9324ae620ad0536653740e9bb163a2e1fcb973be6
sdist_dir="$(hearth_cache_dir)/sdist"
tarball="$sdist_dir/llama_cpp_python-0.3.16.tar.gz"
out="$(hearth_cache_dir)/templates/llama-cpp-python-0.3.16"
python=${PYTHON:-.venv/bin/python}
[ -x "$python" ] || python=python3

die() { printf 'fetch-templates: error: %s\n' "$*" >&2; exit 1; }

want="$sha $(sha256sum tools/extract_templates.py | cut -d' ' -f1)"
[ -f "$out/.stamp" ] && [ "$(cat "$out/.stamp")" = "$want" ] && exit 0

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
