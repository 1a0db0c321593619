#!/usr/bin/env bash
# run-tests.sh - run test suites and add up their results into one closing line.
#
#   scripts/run-tests.sh [BUILD_DIR ...] [--pytest DIR ...]
#
# For each BUILD_DIR it runs every test that CTest lists there (command and working directory
# as CMake registered them), one binary after the other, showing its output. Each binary of
# tests/test.h ends with "N passed, N failed[, N skipped]"; pytest suites end with their own
# summary. The driver adds them up and prints, as its very last line,
#
#   N passed, N failed            (", N skipped" appended when any test skipped)
#
# and exits non-zero when anything failed. A binary that exits non-zero counts as a failure
# even when it printed nothing or reported "0 failed" (a crash, a sanitizer report at exit, a
# timeout); one that exits 0 without a summary line counts as one passed test.
#
# Env: HEARTH_TEST_TIMEOUT (seconds per binary, default 600). Empty HEARTH_*_GGUF variables are
# unset, so tests see "not configured" (and skip) rather than an empty path. Tests of a build
# with HEARTH_SANITIZE set run with HEARTH_TEST_SANITIZED=1 (heavy tests may do less there).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

timeout_s=${HEARTH_TEST_TIMEOUT:-600}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
for v in HEARTH_SMOLLM2_GGUF HEARTH_GEMMA3_GGUF HEARTH_MINILM; do
    [ -n "${!v:-}" ] || unset "$v"
done

log=$(mktemp)
trap 'rm -f "$log"' EXIT
total_p=0 total_f=0 total_s=0
report=()   # one line per binary / suite, repeated at the end

# account NAME RC P F S NOTE: add one run to the totals and the report.
account() {
    local name=$1 rc=$2 p=$3 f=$4 s=$5 note=$6
    total_p=$((total_p + p)) total_f=$((total_f + f)) total_s=$((total_s + s))
    local status="ok  "
    [ "$f" -eq 0 ] || status="FAIL"
    report+=("$(printf '  %s %-40s %4d passed %4d failed %4d skipped%s' \
        "$status" "$name" "$p" "$f" "$s" "${note:+  ($note)}")")
}

why_rc() {
    case $1 in
        124) echo "timed out after ${timeout_s}s" ;;
        13[0-9]|14[0-9]|15[0-9]) echo "killed by signal $(( $1 - 128 ))" ;;
        *) echo "exit status $1" ;;
    esac
}

# Print "name<TAB>workdir<TAB>shell-quoted command" for every test CTest knows in $1.
list_ctest() {
    ctest --test-dir "$1" --show-only=json-v1 | python3 -c '
import json, shlex, sys
for t in json.load(sys.stdin).get("tests", []):
    wd = next((p["value"] for p in t.get("properties", []) if p["name"] == "WORKING_DIRECTORY"), ".")
    print(t["name"], wd, shlex.join(t["command"]), sep="\t")'
}

run_build_dir() {
    local dir=$1 name wd cmdline rc line p f s note t0 t1
    if [ ! -f "$dir/CTestTestfile.cmake" ]; then
        echo "run-tests: $dir is not a configured build directory" >&2
        account "$dir" 1 0 1 0 "not built"
        return
    fi
    # Sanitized builds run several times slower: tell the tests, so that heavy ones (real-model
    # forward passes) can trim their work to what finds memory errors.
    if grep -q '^HEARTH_SANITIZE:[A-Z]*=..*' "$dir/CMakeCache.txt" 2>/dev/null; then
        export HEARTH_TEST_SANITIZED=1
    else
        unset HEARTH_TEST_SANITIZED
    fi
    local tests
    if ! tests=$(list_ctest "$dir"); then
        account "$dir" 1 0 1 0 "ctest could not list the tests"
        return
    fi
    while IFS=$'\t' read -r name wd cmdline; do
        [ -n "$name" ] || continue
        local -a cmd
        eval "cmd=($cmdline)"
        printf '\n=== %s/%s\n' "$dir" "$name"
        t0=$(date +%s%N)
        (cd "$wd" && timeout -k 10 "$timeout_s" "${cmd[@]}") < /dev/null 2>&1 | tee "$log"
        rc=${PIPESTATUS[0]}
        t1=$(date +%s%N)
        note="$(( (t1 - t0) / 1000000 )) ms"
        line=$(grep -E '^[0-9]+ passed, [0-9]+ failed(, [0-9]+ skipped)?$' "$log" | tail -n 1)
        if [ -n "$line" ]; then
            read -r p f s < <(echo "$line" | sed -E 's/^([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$/\1 \2 \4/')
            s=${s:-0}
            if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
                f=1 note="$note, $(why_rc "$rc") after reporting no failure"
            fi
        elif [ "$rc" -eq 0 ]; then
            p=1 f=0 s=0 note="$note, no summary line"
        else
            p=0 f=1 s=0 note="$note, $(why_rc "$rc"), no summary line"
        fi
        account "$dir/$name" "$rc" "$p" "$f" "$s" "$note"
    done <<< "$tests"
}

run_pytest() {
    local dir=$1 py="$root/.venv/bin/python" rc p f s e line
    printf '\n=== pytest %s\n' "$dir"
    if [ ! -x "$py" ]; then
        account "pytest $dir" 1 0 1 0 "no .venv (run make setup)"
        return
    fi
    "$py" -m pytest -q "$dir" < /dev/null 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    line=$(grep -E '^(=+ )?[0-9]+ (passed|failed|skipped|errors?|deselected|xfailed|xpassed)|no tests ran' "$log" | tail -n 1)
    count() { echo "$line" | grep -oE "[0-9]+ $1" | head -n 1 | cut -d' ' -f1; }
    p=$(count passed) f=$(count failed) s=$(count skipped) e=$(count 'errors?')
    p=${p:-0} f=$(( ${f:-0} + ${e:-0} )) s=${s:-0}
    # 5 = no tests collected: an empty suite is not a failure.
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 5 ] && [ "$f" -eq 0 ]; then f=1; fi
    local note=""
    [ "$rc" -eq 0 ] || [ "$rc" -eq 5 ] || note=$(why_rc "$rc")
    account "pytest $dir" "$rc" "$p" "$f" "$s" "$note"
}

[ $# -gt 0 ] || set -- build
while [ $# -gt 0 ]; do
    case $1 in
        --pytest) run_pytest "$2"; shift 2 ;;
        *) run_build_dir "$1"; shift ;;
    esac
done

printf '\n=== summary\n'
printf '%s\n' "${report[@]}"
if [ "$total_s" -gt 0 ]; then
    printf '%d passed, %d failed, %d skipped\n' "$total_p" "$total_f" "$total_s"
else
    printf '%d passed, %d failed\n' "$total_p" "$total_f"
fi
[ "$total_f" -eq 0 ]
