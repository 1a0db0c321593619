#!/usr/bin/env bash
# fuzz-pack.sh - copy built libFuzzer targets and the shared libraries they load into one
# directory, to run them (scripts/fuzz-all.sh, scripts/fuzz.sh) on a host that cannot build.
#
#   scripts/fuzz-pack.sh [BUILD_DIR [OUT_DIR [TARGET ...]]]
#       default: build-fuzz build-fuzz/pack http chat completions messages responses
#
# OUT_DIR gets fuzz_<what> for each TARGET, its debug information stripped (the symbol table
# stays, so sanitizer reports still name the functions; line numbers need the unstripped
# binaries of BUILD_DIR), and OUT_DIR/lib/ every shared library ldd resolves for them except
# the C library's own (libc, libm, libpthread, libdl, librt, libresolv, the dynamic loader),
# which the host must provide in a version at least as new. fuzz.sh puts OUT_DIR/lib first on
# the library path when it exists. Prints the directory's size.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

dir=${1:-build-fuzz}
out=${2:-$dir/pack}
shift $(( $# < 2 ? $# : 2 ))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(http chat completions messages responses)

rm -rf "$out"
mkdir -p "$out/lib"
for what in "${targets[@]}"; do
    bin=$dir/fuzz_$what
    [ -x "$bin" ] || { echo "fuzz-pack: $bin is not built" >&2; exit 1; }
    cp "$bin" "$out/"
    strip --strip-debug "$out/fuzz_$what"
    ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | while read -r lib; do
        case $(basename "$lib") in
        libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.* | ld-linux*) ;;
        *) cp -L -n "$lib" "$out/lib/" ;;
        esac
    done
done
du -sh "$out"
