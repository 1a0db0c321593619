#!/usr/bin/env bash
# fuzz-all.sh - run several libFuzzer targets at once for a fixed time on a many-core host,
# the cores split between them, and print each target's total number of executions.
#
#   scripts/fuzz-all.sh [BUILD_DIR [SECONDS [TARGET[:PROCS] ...]]]
#       default: build-fuzz 560 http chat completions messages responses
#
# FUZZ_CORES (default: nproc) processes run in all. A TARGET:PROCS gets PROCS of them; the other
# targets share the rest evenly, the first ones listed taking one more each when it does not
# divide (so list first the targets that need the most executions). Each target runs as
# `FUZZ_FORK=PROCS scripts/fuzz.sh BUILD_DIR SECONDS TARGET` (independent processes sharing
# BUILD_DIR/corpus-<what>/, logs BUILD_DIR/fuzz-<what>.<i>.log, crash inputs
# BUILD_DIR/crash-<what>-*), all targets in parallel. Prints fuzz.sh's line per target - the
# sum of its processes' executions (libFuzzer's stat::number_of_executed_units) and whether it
# crashed - then the total; exits non-zero when any target crashed. BUILD_DIR may be a
# directory made by scripts/fuzz-pack.sh (stripped binaries plus lib/) on a host that cannot
# build; run from the repository root of a checkout (the seeds, dictionaries and tiny model).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

dir=${1:-build-fuzz}
secs=${2:-560}
shift $(( $# < 2 ? $# : 2 ))
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=(http chat completions messages responses)
cores=${FUZZ_CORES:-$(nproc)}

names=()
declare -A procs=()
left=$cores
free=()
for spec in "${specs[@]}"; do
    what=${spec%%:*}
    names+=("$what")
    if [ "$spec" != "$what" ]; then
        procs[$what]=${spec#*:}
        [[ "${procs[$what]}" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz-all: bad process count in $spec" >&2; exit 2; }
        left=$((left - procs[$what]))
    else
        free+=("$what")
    fi
done
if [ ${#free[@]} -gt 0 ]; then
    each=$(( left > 0 ? left / ${#free[@]} : 0 ))
    extra=$(( left > 0 ? left % ${#free[@]} : 0 ))
    for what in "${free[@]}"; do
        n=$each
        [ "$extra" -gt 0 ] && n=$((n + 1)) && extra=$((extra - 1))
        procs[$what]=$(( n > 0 ? n : 1 ))
    done
fi

plan=""
for what in "${names[@]}"; do plan+=" $what=${procs[$what]}"; done
echo "fuzz-all: $cores cores, ${secs}s, processes per target:$plan"

pids=()
for what in "${names[@]}"; do
    FUZZ_FORK=${procs[$what]} "$root/scripts/fuzz.sh" "$dir" "$secs" "$what" > "$dir/fuzz-all-$what.txt" 2>&1 &
    pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do
    wait "$pid" || failed=1
done
total=0
for what in "${names[@]}"; do
    cat "$dir/fuzz-all-$what.txt"
    n=$(sed -n "s/^fuzz_$what  *\([0-9][0-9]*\) runs.*/\1/p" "$dir/fuzz-all-$what.txt" | tail -n 1)
    total=$((total + ${n:-0}))
done
printf 'fuzz-all: %d runs in all in %ss: %s\n' "$total" "$secs" "$([ $failed -eq 0 ] && echo "no crash" || echo "CRASH (see above)")"
exit $failed
