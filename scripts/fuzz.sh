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
# FUZZ_FORK=N runs each target as N independent processes (one per core) that share its corpus
# directory (libFuzzer rereads it every second, so what one finds the others build on); their
# logs are BUILD_DIR/fuzz-<what>.<i>.log and the count printed is the sum of their executions.
# (Not libFuzzer's -fork: its parent counts only the jobs that finished, so the ones cut at the
# end are lost, and every job starts the server and reruns its seeds again.) FUZZ_RSS_MB is the
# memory cap of each process (default 2048). The HTTP targets (http, chat, completions,
# messages, responses) start an in-process server from the repository root's tiny model. When
# BUILD_DIR/lib exists (scripts/fuzz-pack.sh puts the binaries' shared libraries there), the
# binaries load their libraries from it. scripts/fuzz-all.sh runs several targets at once.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

dir=${1:-build-fuzz}
secs=${2:-20}
shift $(( $# < 2 ? $# : 2 ))
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(gguf safetensors template tokenizer grammar http chat completions messages responses)
[ -d "$dir/lib" ] && export LD_LIBRARY_PATH="$(cd "$dir/lib" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
workers=${FUZZ_FORK:-1}
[[ "$workers" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz: FUZZ_FORK must be a positive number" >&2; exit 2; }

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
    rm -f "$dir"/crash-"$what"-* "$dir/fuzz-$what.log" "$dir"/fuzz-"$what".[0-9]*.log
    args=(-max_total_time="$secs" -max_len="${max_len[$what]:-4096}" -timeout=25 -rss_limit_mb="${FUZZ_RSS_MB:-2048}"
          -print_final_stats=1 -artifact_prefix="$dir/crash-$what-")
    [ -f "fuzz/$what.dict" ] && args+=(-dict="fuzz/$what.dict")
    logs=()
    pids=()
    for ((i = 1; i <= workers; i++)); do
        log=$dir/fuzz-$what.log
        [ "$workers" -gt 1 ] && log=$dir/fuzz-$what.$i.log
        logs+=("$log")
        # libFuzzer stops itself after SECONDS; the outer limit (30 s more, so that a 560 s run
        # ends within 10 minutes) only catches a process that hangs
        timeout -k 5 $((secs + 30)) "$bin" "${args[@]}" "$dir/corpus-$what" "fuzz/corpus/$what" > "$log" 2>&1 &
        pids+=($!)
    done
    rc=0
    for pid in "${pids[@]}"; do
        wait "$pid"
        st=$?
        [ "$st" -ne 0 ] && rc=$st
    done
    runs=0
    for log in "${logs[@]}"; do
        n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
        if [ -z "$n" ]; then # stopped before the final stats: the last status line's count
            n=$(sed -n 's/^#\([0-9][0-9]*\).*/\1/p' "$log" | tail -n 1)
        fi
        runs=$((runs + ${n:-0}))
    done
    corpus=$(find "$dir/corpus-$what" -type f | wc -l)
    crashes=$(find "$dir" -maxdepth 1 -name "crash-$what-*" | wc -l)
    procs=""
    [ "$workers" -gt 1 ] && procs=" ($workers processes)"
    if [ "$rc" -ne 0 ] || [ "$crashes" -gt 0 ]; then
        failed=1
        bad=$(grep -l -E "^==[0-9]+==ERROR|broken promise|deadly signal|^SUMMARY" "${logs[@]}" 2>/dev/null | head -n 1)
        printf 'fuzz_%-12s %10s runs in %ss%s: CRASH (exit %d), input: %s; see %s\n' "$what" "$runs" "$secs" "$procs" \
            "$rc" "$(find "$dir" -maxdepth 1 -name "crash-$what-*" | head -n 1)" "${bad:-${logs[0]}}"
    else
        printf 'fuzz_%-12s %10s runs in %ss%s: no crash (%d inputs in %s)\n' "$what" "$runs" "$secs" "$procs" \
            "$corpus" "$dir/corpus-$what"
    fi
done
exit $failed
