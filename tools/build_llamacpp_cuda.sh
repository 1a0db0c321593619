#!/usr/bin/env bash
# build_llamacpp_cuda.sh - llama.cpp's CUDA tools, built here and packed for a GPU host.
#
# hearth is measured against llama.cpp on the same GPU in the same run (tools/h200_peer.py).
# The GPU host has no network, so llama.cpp is compiled on a machine without a GPU and carried
# there. The source is the llama.cpp inside the llama-cpp-python sdist that `make setup` already
# caches (scripts/fetch-templates.sh downloads it; this script runs that when the file is missing
# and checks the sha256 it pins), so the CUDA build is the same llama.cpp version as the CPU oracle
# of tests/golden/llamacpp/.
#
# Build: Release, ggml static (BUILD_SHARED_LIBS=OFF), CUDA for sm_90 only, the CPU side generic
# (GGML_NATIVE=OFF with AVX2/FMA/F16C, so the GPU host's CPU does not matter), flash attention for
# the K/V type pairs llama.cpp compiles by default (f16, bf16, q8_0, q4_0 with the same type for K
# and V: GGML_CUDA_FA_ALL_QUANTS=OFF leaves out mixed pairs such as K q8_0 with V f16), no OpenSSL,
# no NCCL, no web UI download. Targets: the multi-tool `llama` (llama-app: bench, batched-bench,
# serve, cli, completion), llama-speculative, and the single tools llama-bench, llama-batched-bench,
# llama-speculative-simple, llama-cli, llama-completion, llama-server (those this version has).
# ccache is used when present. The compile is long (the CUDA template instances), so it runs at
# `nice` 10 with -j2 unless JOBS says otherwise.
#
# Everything is under ${XDG_CACHE_HOME:-~/.cache}/hearth/llamacpp-cuda/ (src, build), never
# in the repository. Idempotent: the source is unpacked again only when the sdist changes, cmake
# rebuilds only what changed, and packing always runs.
#
# Pack (tools/pack_device.sh): build-xfer/llamacpp-cuda.tar.xz holds llamacpp-cuda/bin/ (the
# stripped binaries and scripts, see below), llamacpp-cuda/BUILD-INFO (source, compiler, cache options) and
# llamacpp-cuda/lib/ (the libraries ldd names that are not the C library's, CUDA's or the
# driver's). The CUDA libraries (libcudart, libcublas, libcublasLt: several hundred MB, far over
# a 64 MiB transfer) are not packed: the GPU host has the CUDA 13 toolkit under /usr/local/cuda,
# and the binaries carry a run path to its lib64 (checked below).
#
# Usage: tools/build_llamacpp_cuda.sh [--pack-only]
# Env: JOBS (default 2), NICE (default 10), CUDA_HOME (default /usr/local/cuda), PACK_LIMIT_MIB
# (default 56).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
cd "$hearth_root"

version=0.3.36
sdist_sha=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e  # scripts/fetch-templates.sh
targets=(llama-app llama-speculative llama-bench llama-batched-bench llama-speculative-simple
         llama-cli llama-completion llama-server)
# the tools the multi-tool binary `llama` (target llama-app) runs as subcommands: name subcommand
app_tools=("llama-bench bench" "llama-batched-bench batched-bench" "llama-server serve" "llama-cli cli"
           "llama-completion completion")
jobs=${JOBS:-2}
nice_level=${NICE:-10}
cuda_home=${CUDA_HOME:-/usr/local/cuda}
pack_only=0

die() { printf 'build_llamacpp_cuda: error: %s\n' "$*" >&2; exit 1; }
say() { printf 'build_llamacpp_cuda: %s\n' "$*" >&2; }

for arg in "$@"; do
    case $arg in
        --pack-only) pack_only=1 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument '$arg' (usage: tools/build_llamacpp_cuda.sh [--pack-only])" ;;
    esac
done
case $jobs in ''|*[!0-9]*|0) die "JOBS must be a positive integer, not '$jobs'" ;; esac

top="$(hearth_cache_dir)/llamacpp-cuda"
sdist="$(hearth_cache_dir)/sdist/llama_cpp_python-$version.tar.gz"
src="$top/src"
build="$top/build"
mkdir -p "$top"
# one build or pack at a time in $top
exec 9>"$top/.lock"
flock -n 9 || die "another build_llamacpp_cuda.sh is running on $top"

if [ "$pack_only" -eq 0 ]; then
    [ -x "$cuda_home/bin/nvcc" ] || die "no nvcc at $cuda_home/bin/nvcc (set CUDA_HOME)"
    command -v cmake >/dev/null || die "cmake is not installed"
    if [ ! -f "$sdist" ]; then
        say "the llama-cpp-python $version sdist is not cached; scripts/fetch-templates.sh downloads it"
        scripts/fetch-templates.sh
    fi
    got=$(sha256sum "$sdist" | cut -d' ' -f1)
    [ "$got" = "$sdist_sha" ] || die "$sdist has sha256 $got, expected $sdist_sha"

    # Unpack vendor/llama.cpp once per sdist.
    if [ "$(cat "$src/.stamp" 2>/dev/null)" != "$sdist_sha" ]; then
        say "unpacking llama.cpp from $(basename "$sdist")"
        rm -rf "$src" "$src.tmp"
        mkdir -p "$src.tmp"
        tar -xzf "$sdist" -C "$src.tmp" --strip-components=3 "llama_cpp_python-$version/vendor/llama.cpp"
        printf '%s\n' "$sdist_sha" > "$src.tmp/.stamp"
        mv "$src.tmp" "$src"
    fi

    launcher=()
    if command -v ccache >/dev/null; then
        launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
                  -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
    fi
    say "configuring in $build"
    cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_CUDA_COMPILER="$cuda_home/bin/nvcc" "${launcher[@]}" \
        -DBUILD_SHARED_LIBS=OFF -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
        -DGGML_CUDA_FA_ALL_QUANTS=OFF -DGGML_CUDA_NCCL=OFF \
        -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
        -DGGML_AVX512=OFF -DGGML_BACKEND_DL=OFF -DGGML_CPU_ALL_VARIANTS=OFF \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
        -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
        -DCMAKE_BUILD_RPATH="$cuda_home/lib64" -DCMAKE_INSTALL_RPATH="$cuda_home/lib64" \
        > "$top/configure.log" 2>&1 || { tail -30 "$top/configure.log" >&2; die "cmake configure failed ($top/configure.log)"; }

    # Only the targets this llama.cpp version defines.
    known=$(cmake --build "$build" --target help | sed -n 's/^\.\.\. \([^ ]*\).*/\1/p')
    want=()
    for t in "${targets[@]}"; do
        if grep -qx "$t" <<<"$known"; then want+=("$t"); else say "this llama.cpp has no target $t (skipped)"; fi
    done
    [ "${#want[@]}" -gt 0 ] || die "none of the targets ${targets[*]} exists"
    say "building ${want[*]} with -j$jobs at nice $nice_level (log: $top/build.log)"
    start=$(date +%s)
    nice -n "$nice_level" cmake --build "$build" -j "$jobs" --target "${want[@]}" > "$top/build.log" 2>&1 \
        || { tail -40 "$top/build.log" >&2; die "the build failed ($top/build.log)"; }
    say "built in $(( $(date +%s) - start )) s"
fi

# Pack. Every static binary carries all of ggml's CUDA kernels (tens of MB that xz hardly
# shrinks, as nvcc already compressed them), so the tarball holds one binary with them all: the
# multi-tool `llama` (bench, batched-bench, serve, cli, completion as subcommands), with a
# two-line script per tool name (llama-bench runs `llama bench`), plus llama-speculative when the
# tarball stays within PACK_LIMIT_MIB (default 56, leaving room in a 64 MiB transfer for
# hearth's binaries); without it tools/h200_peer.py drafts through llama-server. tools/pack_device.sh
# adds the libraries they need that the GPU host may not have (all but the C library's, the CUDA
# toolkit's and the driver's).
bindir="$build/bin"
[ -x "$bindir/llama" ] || die "no $bindir/llama: build first"
limit_mib=${PACK_LIMIT_MIB:-56}
case $limit_mib in ''|*[!0-9]*) die "PACK_LIMIT_MIB must be a number of MiB, not '$limit_mib'" ;; esac
# The CUDA libraries must come from the toolkit's lib64 through the run path (the GPU host has
# the same toolkit there), not from a copy elsewhere.
ldd "$bindir/llama" | grep -E 'libcud|libcublas' | sed 's/^[[:space:]]*/build_llamacpp_cuda: ldd: /' >&2
runpath=$(readelf -d "$bindir/llama" | sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p')
case ":$runpath:" in *":$cuda_home/lib64:"*) ;; *) die "the binaries' run path is '$runpath', not $cuda_home/lib64" ;; esac
wrap="$top/wrappers"
rm -rf "$wrap"
mkdir -p "$wrap"
wrappers=()
for pair in "${app_tools[@]}"; do
    read -r name sub <<<"$pair"
    printf '#!/bin/sh\n# llama.cpp'"'"'s %s: the subcommand %s of the multi-tool binary llama beside it\nexec "$(dirname "$0")/llama" %s "$@"\n' \
        "$name" "$sub" "$sub" > "$wrap/$name"
    chmod +x "$wrap/$name"
    wrappers+=("$wrap/$name")
done
{
    printf 'llama.cpp of the llama-cpp-python %s sdist (sha256 %s)\n' "$version" "$sdist_sha"
    printf 'built %s on %s; nvcc %s; run path %s\n' "$(date -u +%FT%TZ)" "$(uname -m)" \
        "$("$cuda_home/bin/nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')" "$runpath"
    grep -E '^(CMAKE_BUILD_TYPE|BUILD_SHARED_LIBS|GGML_[A-Z0-9_]*|CMAKE_CUDA_ARCHITECTURES|LLAMA_OPENSSL):' \
        "$build/CMakeCache.txt" | sort
} > "$top/BUILD-INFO"
pack() { tools/pack_device.sh -o build-xfer/llamacpp-cuda.tar.xz -n llamacpp-cuda -f "$top/BUILD-INFO" "$@"; }
if [ -x "$bindir/llama-speculative" ]; then
    pack "$bindir/llama" "${wrappers[@]}" "$bindir/llama-speculative"
fi
if [ ! -x "$bindir/llama-speculative" ] || [ "$(stat -c %s build-xfer/llamacpp-cuda.tar.xz)" -gt $(( limit_mib << 20 )) ]; then
    say "without llama-speculative, to stay within $limit_mib MiB (tools/h200_peer.py then drafts through llama-server)"
    pack "$bindir/llama" "${wrappers[@]}"
fi
say "on the GPU host: tar -xJf build-xfer/llamacpp-cuda.tar.xz -C build-xfer  (then build-xfer/llamacpp-cuda/bin/)"
