#!/usr/bin/env bash
# The prepared check for a lent CUDA machine (issue 52, item 4), about 8 minutes at most:
#   1. info        torch, CUDA and the device, as Python sees them;
#   2. exactness   the transformers backend's exactness self-check in both numerics and the
#                  exact mode's cost, benchmarks/device_check.py (JSON: device-check.json);
#   3. lossless    the lossless property tests on the device (EDGESPEC_TEST_DEVICE=cuda);
#   4. grid        benchmarks/verify_grid.py on cuda for one paper shape (GRID_SHAPE), exact and
#                  lossy numerics side by side at each point, its JSON
#                  written to $OUT when set (the device tool's folder), else benchmarks/results/
#                  (a dry run's: $OUT, else a temporary folder).
# Each step runs under `timeout`; a failed step is reported and the next one runs; the exit
# status is non-zero when any step failed. Needs only plain python3 with torch, transformers,
# grpcio, hypothesis and pytest (no make, no .venv): PYTHON picks the interpreter. GPU_WHEELS
# names a folder of wheels installed first (into a temporary folder put on PYTHONPATH): the
# pinned versions that tools/gpu_wheels.sh downloads, carried to a machine with no registry.
#
#   GPU_WHEELS=.whl tools/gpu_check.sh   # on the CUDA machine
#   tools/gpu_check.sh --dry-run   # everything on the CPU in tiny sizes (tests collected only)
set -u

# The lossless property tests (hypothesis) that run on the transformers backend; the
# llama.cpp one (tests/runtime/backends/test_llamacpp_lossless.py) runs on the CPU only.
LOSSLESS_TESTS="tests/runtime/server/test_lossless_batching.py
tests/runtime/server/test_cloud_only_serving.py
tests/runtime/server/test_fused_switching.py
tests/runtime/edge/test_drafting_server.py"

PY="${PYTHON:-python3}"
GRID_SHAPE="${GRID_SHAPE:-llama2-7b}"
GRID_BUDGET_S="${GRID_BUDGET_S:-100}"  # verify_grid.py starts no grid point after this
# Step limits, 500 s together: run the script with the device tool's timeout_s=600. On an
# H200 (benchmarks/results/gpu-check-h200.log, TIMEOUT_LOSSLESS_S=160) the steps took 7,
# 25, 127 and 107 s (the lossless tests 113 s).
TIMEOUT_INFO_S="${TIMEOUT_INFO_S:-30}"
TIMEOUT_EXACTNESS_S="${TIMEOUT_EXACTNESS_S:-90}"
TIMEOUT_LOSSLESS_S="${TIMEOUT_LOSSLESS_S:-240}"
TIMEOUT_GRID_S="${TIMEOUT_GRID_S:-140}"

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT" || exit 2
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"

DRY=0
case "${1:-}" in
  --dry-run) DRY=1 ;;
  "") ;;
  *) echo "usage: tools/gpu_check.sh [--dry-run]" >&2; exit 2 ;;
esac

if [ -n "${GPU_WHEELS:-}" ]; then
  SITE="$(mktemp -d)"
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" \
    "$GPU_WHEELS"/*.whl || { echo "gpu_check: installing $GPU_WHEELS/*.whl failed" >&2; exit 2; }
  export PYTHONPATH="$SITE:$PYTHONPATH"
fi

RESULTS="${OUT:-$ROOT/benchmarks/results}"
if [ "$DRY" -eq 1 ] && [ -z "${OUT:-}" ]; then
  RESULTS="$(mktemp -d)"  # a dry run's tiny grid is no result
fi
mkdir -p "$RESULTS"
FAILED=0
SUMMARY=()

# step NAME LIMIT_S COMMAND...: run COMMAND under `timeout LIMIT_S`, record its outcome.
step() {
  local name="$1" limit="$2"
  shift 2
  echo "=== gpu_check: $name (limit ${limit} s): $*"
  local start=$SECONDS
  timeout --kill-after=10 "$limit" "$@"
  local rc=$? took=$((SECONDS - start))
  if [ "$rc" -eq 0 ]; then
    SUMMARY+=("gpu_check: $name: ok (${took} s)")
  elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    SUMMARY+=("gpu_check: $name: FAILED (timed out after ${limit} s)")
    FAILED=$((FAILED + 1))
  else
    SUMMARY+=("gpu_check: $name: FAILED (exit ${rc}, ${took} s)")
    FAILED=$((FAILED + 1))
  fi
}

INFO='
import sys, torch, transformers
print("python", sys.version.split()[0], "| torch", torch.__version__, "| CUDA", torch.version.cuda,
      "| transformers", transformers.__version__)
print("cuda available:", torch.cuda.is_available(), "| devices:", torch.cuda.device_count())
for i in range(torch.cuda.device_count()):
    p = torch.cuda.get_device_properties(i)
    print(f"cuda:{i}", p.name, f"{p.total_memory / 2**30:.1f} GiB", f"capability {p.major}.{p.minor}")
if sys.argv[1] == "cuda" and not torch.cuda.is_available():
    sys.exit("no CUDA device visible to torch")
'

if [ "$DRY" -eq 1 ]; then
  DEVICE=cpu
  GRID_ARGS=(--dry-run --numerics exact,lossy --out "$RESULTS/verify-grid-dry.json")
  TEST_ARGS=(--co -q)
  CHECK_ARGS=(--dry-run)
else
  DEVICE=cuda
  GRID_ARGS=(--device cuda --shape "$GRID_SHAPE" --numerics exact,lossy --budget-s "$GRID_BUDGET_S"
    --out "$RESULTS/verify-grid-$GRID_SHAPE.json")
  TEST_ARGS=(-q)
  CHECK_ARGS=(--device cuda --row-multiples 8,16,64 --out "$RESULTS/device-check.json")
fi

step info "$TIMEOUT_INFO_S" "$PY" -c "$INFO" "$DEVICE"

step exactness "$TIMEOUT_EXACTNESS_S" "$PY" benchmarks/device_check.py "${CHECK_ARGS[@]}"

# shellcheck disable=SC2086  # LOSSLESS_TESTS is a whitespace-separated list of paths
step lossless "$TIMEOUT_LOSSLESS_S" env EDGESPEC_TEST_DEVICE="$DEVICE" EDGESPEC_LOSSLESS_EXAMPLES=100 \
  "$PY" -m pytest $LOSSLESS_TESTS "${TEST_ARGS[@]}" -p no:cacheprovider

step grid "$TIMEOUT_GRID_S" "$PY" benchmarks/verify_grid.py "${GRID_ARGS[@]}"

echo "=== gpu_check summary ($([ "$DRY" -eq 1 ] && echo dry run, CPU || echo CUDA))"
printf '%s\n' "${SUMMARY[@]}"
echo "gpu_check: $FAILED step(s) failed; grid JSON in $RESULTS"
[ "$FAILED" -eq 0 ]
