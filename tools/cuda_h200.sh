#!/bin/bash
# cuda_h200.sh - the CUDA checks and measurements on a GPU host, in one go (docs/cuda.md):
#   op tests, the op tests under compute-sanitizer memcheck, the whole-model GPU-vs-CPU tests
#   (committed tiny checkpoints plus two generated ones), then tools/cuda_h200.py's benchmark.
#
#   tools/cuda_h200.sh [BIN_DIR [OUT_DIR]]     (defaults: build, build/cuda-h200)
#
# BIN_DIR holds test_cuda_ops, test_cuda_matmul, test_cuda_lora, test_cuda_models,
# test_cuda_lora_models, test_cuda_encoder, test_cuda_embed (all-MiniLM-L6-v2 when HEARTH_MINILM
# names its folder), test_draft_assistant (its cuda_ tests), hearth and bench_cuda built with
# CUDA (bench_cuda as bench/bench_cuda.c says). Run from the repository root. HEARTH_BENCH_ONLY=1b-bf16,...
# limits the benchmark to some checkpoints; HEARTH_BENCH_SKIP=1 skips it; HEARTH_BENCH_NCU and
# HEARTH_BENCH_VARIANTS (see tools/cuda_h200.py) add Nsight Compute profiles of chosen kernels and
# runs of hearth under other settings. For a short run: HEARTH_MEMCHECK_RUNS="test_cuda_matmul:abc
# test_cuda_ops:" runs memcheck on the named test binaries, on the tests whose names hold the part
# after the colon (all when empty; HEARTH_MEMCHECK_TIMEOUT seconds each, default 300;
# HEARTH_MEMCHECK_LAST=1: after the benchmark), and HEARTH_H200_QUICK=1 leaves out the generated
# mid-size checkpoints, generate and serve (the committed tiny checkpoints still run).
set -u
BIN=${1:-build}
OUT=${2:-build/cuda-h200}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
echo "== op tests"
"$BIN/test_cuda_ops" > "$OUT/ops.log" 2>&1; echo "test_cuda_ops rc $?"; tail -1 "$OUT/ops.log"
"$BIN/test_cuda_matmul" > "$OUT/matmul.log" 2>&1; echo "test_cuda_matmul rc $?"; tail -1 "$OUT/matmul.log"
"$BIN/test_cuda_lora" > "$OUT/lora.log" 2>&1; echo "test_cuda_lora rc $?"; tail -1 "$OUT/lora.log"
"$BIN/test_cuda_encoder" > "$OUT/encoder.log" 2>&1; echo "test_cuda_encoder rc $?"; tail -1 "$OUT/encoder.log"
memcheck() {
    echo "== op tests under compute-sanitizer memcheck"
    : > "$OUT/memcheck.log"
    for run in ${HEARTH_MEMCHECK_RUNS:-test_cuda_ops: test_cuda_matmul: test_cuda_lora: test_cuda_encoder:}; do
        args=()
        [ -n "${run#*:}" ] && args=(--filter "${run#*:}")
        timeout "${HEARTH_MEMCHECK_TIMEOUT:-300}" compute-sanitizer --tool memcheck --error-exitcode 9 \
            "$BIN/${run%%:*}" "${args[@]}" >> "$OUT/memcheck.log" 2>&1
        echo "memcheck $run rc $?"; grep -E "ERROR SUMMARY|passed" "$OUT/memcheck.log" | tail -2
    done
}
[ -z "${HEARTH_MEMCHECK_LAST:-}" ] && memcheck
echo "== whole models, GPU vs CPU"
"$BIN/test_cuda_lora_models" > "$OUT/lora_models.log" 2>&1
echo "test_cuda_lora_models rc $?"; grep -E "error|moves|FAIL|passed" "$OUT/lora_models.log"
"$BIN/test_cuda_embed" > "$OUT/embed.log" 2>&1
echo "test_cuda_embed rc $?"; grep -E "cosine|load|refused|FAIL|passed|skipped" "$OUT/embed.log"
"$BIN/test_draft_assistant" --filter cuda_ > "$OUT/draft_assistant.log" 2>&1
echo "test_draft_assistant (cuda_) rc $?"; grep -E "cuda|picked|draft|FAIL|passed" "$OUT/draft_assistant.log"
if [ -n "${HEARTH_H200_QUICK:-}" ]; then
    "$BIN/test_cuda_models" > "$OUT/models.log" 2>&1
    echo "test_cuda_models rc $?"; grep -E "error|identical|passed|FAIL" "$OUT/models.log"
else
    python3 "$(dirname "$0")/cuda_h200.py" mid "$OUT/models" 2>&1 | tail -3
    HEARTH_CUDA_MODELS="$OUT/models/mid-mixed.gguf:$OUT/models/mid-bf16.gguf" "$BIN/test_cuda_models" > "$OUT/models.log" 2>&1
    echo "test_cuda_models rc $?"; grep -E "error|identical|passed|FAIL" "$OUT/models.log"
    echo "== generate --device cuda"
    "$BIN/hearth" generate "$OUT/models/mid-mixed.gguf" --raw -p "The GPU" --max-tokens 16 --ids --device cuda
    echo "== serve --device cuda"
    "$BIN/hearth" serve "$OUT/models/mid-mixed.gguf" --device cuda --port 18080 --no-open > "$OUT/serve.log" 2>&1 &
    SERVE=$!
    python3 - <<'PY'
import json, time, urllib.request
base = "http://127.0.0.1:18080"
for _ in range(100):
    try:
        urllib.request.urlopen(base + "/health", timeout=1)
        break
    except Exception:
        time.sleep(0.2)
req = urllib.request.Request(base + "/v1/completions", method="POST", headers={"Content-Type": "application/json"},
                             data=json.dumps({"prompt": "The GPU", "max_tokens": 12, "temperature": 0}).encode())
print("completion:", json.load(urllib.request.urlopen(req, timeout=60))["choices"][0]["text"][:80].encode())
print("stats device:", json.load(urllib.request.urlopen(base + "/stats", timeout=10)).get("device"))
PY
    kill $SERVE; wait $SERVE 2>/dev/null
fi
if [ -z "${HEARTH_BENCH_SKIP:-}" ]; then
    echo "== benchmark"
    python3 "$(dirname "$0")/cuda_h200.py" bench "$OUT" "$BIN/bench_cuda"
fi
[ -n "${HEARTH_MEMCHECK_LAST:-}" ] && memcheck
exit 0
