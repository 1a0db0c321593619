#!/usr/bin/env bash
# pack_device.sh - hearth's binaries and the shared libraries they load, in one tarball for a GPU
# host that cannot build (tools/h200_peer.py, tools/cuda_h200.sh run them there).
#
#   tools/pack_device.sh [-o OUT.tar.xz] [-n NAME] [-f FILE]... BIN...
#       defaults: build-xfer/hearth.tar.xz, hearth-dev
#
# The tarball holds NAME/bin/ (each BIN, stripped of its symbols and debug information; a script
# as it is), NAME/ each
# FILE (notes such as a build's BUILD-INFO) and NAME/lib/ (every library ldd resolves for the
# binaries, as scripts/fuzz-pack.sh does, except):
#   - the C library's own (libc, libm, libpthread, libdl, librt, libresolv, the dynamic loader),
#     which the host provides in a version at least as new;
#   - the CUDA toolkit's (libcudart, libcublas, libcublasLt: hundreds of MB), which the GPU host
#     has under /usr/local/cuda: run with LD_LIBRARY_PATH=NAME/lib:/usr/local/cuda/lib64;
#   - the driver's libcuda.so.1.
# Unpack from the repository root with `tar -xJf build-xfer/hearth.tar.xz -C build-xfer`; the
# binaries are then in build-xfer/hearth-dev/bin. build-xfer/ is ignored by git. Prints the size.
# tools/build_llamacpp_cuda.sh packs llama.cpp's binaries with it (NAME llamacpp-cuda).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

die() { printf 'pack_device: error: %s\n' "$*" >&2; exit 1; }
out=build-xfer/hearth.tar.xz
top=hearth-dev
files=()
while [ $# -gt 0 ]; do
    case $1 in
    -o|-n|-f)
        [ $# -ge 2 ] || die "$1 needs a value"
        case $1 in -o) out=$2 ;; -n) top=$2 ;; -f) files+=("$2") ;; esac
        shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) die "unknown option '$1'" ;;
    *) break ;;
    esac
done
[ $# -gt 0 ] || die "no binaries given (usage: tools/pack_device.sh [-o OUT.tar.xz] [-n NAME] [-f FILE]... BIN...)"
case $out in *.tar.xz) ;; *) die "the output must end in .tar.xz, not '$out'" ;; esac
case $top in ''|*/*|.|..) die "NAME must be a plain directory name, not '$top'" ;; esac
for bin in "$@"; do
    if [ ! -f "$bin" ] || [ ! -x "$bin" ]; then die "'$bin' is not an executable file"; fi
done
for f in "${files[@]}"; do
    [ -f "$f" ] || die "'$f' is not a file"
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$top/bin" "$stage/$top/lib"
for f in "${files[@]}"; do
    cp "$f" "$stage/$top/"
done
for bin in "$@"; do
    name=$(basename "$bin")
    [ ! -e "$stage/$top/bin/$name" ] || die "two binaries are named $name"
    cp "$bin" "$stage/$top/bin/"
    if [ "$(head -c 4 "$bin" | od -An -c | tr -d ' ')" != '177ELF' ]; then
        continue  # a script: copied as it is
    fi
    strip --strip-unneeded "$stage/$top/bin/$name"
    ldd "$bin" | awk '/not found/ { print "missing", $1 } $2 == "=>" && $3 ~ /^\// { print $1, $3 }' |
        while read -r soname lib; do
            if [ "$soname" = missing ]; then
                case $lib in libcuda.so.*) continue ;; esac  # the driver's: the GPU host has it
                die "$bin needs $lib, which ldd cannot find"
            fi
            case $soname in
            libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.* | ld-linux* | libcuda.so.*) ;;
            *)
                case $(readlink -f "$lib") in
                /usr/local/cuda*/*) ;;  # the GPU host's toolkit
                *) cp -L -n "$lib" "$stage/$top/lib/$soname" ;;
                esac ;;
            esac
        done
done
mkdir -p "$(dirname "$out")"
tar -C "$stage" -cJf "$out.tmp" "$top"
mv "$out.tmp" "$out"
size=$(stat -c %s "$out")
printf 'pack_device: %s: %d bytes (%d MiB): %s; %d libraries\n' "$out" "$size" $(( (size + 1048575) / 1048576 )) \
    "$(cd "$stage/$top/bin" && echo *)" "$(find "$stage/$top/lib" -type f | wc -l)"
