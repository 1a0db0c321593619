#!/usr/bin/env bash
# fuzz.sh - run each libFuzzer target of a build-fuzz directory for a bounded time (`make fuzz`).
#
#   scripts/fuzz.sh [BUILD_DIR [SECONDS [TARGET ...]]]     default: build-fuzz 20, every target
#
# Each fuzz_<what> (fuzz/fuzz.cmake, built with HEARTH_LIBFUZZER=ON) starts from the committed
# seeds in fuzz/corpus/<what>/ plus what earlier runs found in BUILD_DIR/corpus-<what>/ (new
# inputs are written there; it is scratch, not committed), with fuzz/<what>.dict when there is
# one. A crash, a sanitizer report or a broken promise stops the target and leaves the input in
# BUILD_DIR/crash-<what>-*; the full libFuzzer output is in BUILD_DIR/fuzz-<what>.log. One line
# per target says how many inputs ran and whether it crashed; the exit status is non-zero when
# any target crashed. A fixed crasher is copied into fuzz/corpus/<what>/ as crash_<what>.*, so
# that the corpus replay of `make test` keeps it fixed (docs/testing.md, "Fuzzing").
#
# FUZZ_FORK=N runs each target as N parallel processes (libFuzzer's -fork=N, one per core),
# FUZZ_RSS_MB the memory cap of each (default 2048). The HTTP targets (http, chat, completions,
# messages, responses) start an in-process server from the repository root's tiny model.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

dir=${1:-build-fuzz}
secs=${2:-20}
shift $(( $# < 2 ? $# : 2 ))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(gguf safetensors template tokenizer grammar http chat completions messages responses)

declare -A max_len=([gguf]=8192 [safetensors]=4096 [template]=4096 [tokenizer]=4096 [http]=12288 [chat]=12288
                    [completions]=12288 [messages]=12288 [responses]=12288)
failed=0
for what in "${targets[@]}"; do
    bin=$dir/fuzz_$what
    if [ ! -x "$bin" ]; then
        echo "fuzz: $bin is not built (make fuzz builds it)" >&2
        failed=1
        continue
    fi
    mkdir -p "$dir/corpus-$what"
    rm -f "$dir"/crash-"$what"-*
    args=(-max_total_time="$secs" -max_len="${max_len[$what]:-4096}" -timeout=25 -rss_limit_mb="${FUZZ_RSS_MB:-2048}"
          -print_final_stats=1 -artifact_prefix="$dir/crash-$what-")
    [ "${FUZZ_FORK:-1}" -gt 1 ] && args+=(-fork="$FUZZ_FORK")
    [ -f "fuzz/$what.dict" ] && args+=(-dict="fuzz/$what.dict")
    "$bin" "${args[@]}" "$dir/corpus-$what" "fuzz/corpus/$what" > "$dir/fuzz-$what.log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/fuzz-$what.log" | tail -n 1)
    if [ -z "$runs" ]; then # stopped before the final stats: the last status line's count
        runs=$(sed -n 's/^#\([0-9][0-9]*\).*/\1/p' "$dir/fuzz-$what.log" | tail -n 1)
    fi
    corpus=$(find "$dir/corpus-$what" -type f | wc -l)
    crashes=$(find "$dir" -maxdepth 1 -name "crash-$what-*" | wc -l)
    if [ "$rc" -ne 0 ] || [ "$crashes" -gt 0 ]; then
        failed=1
        printf 'fuzz_%-12s %10s runs in %ss: CRASH (exit %d), input: %s; see %s\n' "$what" "${runs:-?}" "$secs" \
            "$rc" "$(find "$dir" -maxdepth 1 -name "crash-$what-*" | head -n 1)" "$dir/fuzz-$what.log"
    else
        printf 'fuzz_%-12s %10s runs in %ss: no crash (%d inputs in %s)\n' "$what" "${runs:-?}" "$secs" \
            "$corpus" "$dir/corpus-$what"
    fi
done
exit $failed
