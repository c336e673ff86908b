#!/usr/bin/env bash
# Third lease of round 5: the CuPy stand-in beside a real CuPy (tools/gpu_23core.sh), the
# texture case on the cupy engine; with `bench`, issue 26's CPU benchmarks on the 16-core host.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-results}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
timeout 120 bash tools/gpu_23core.sh > "$OUT/stand_in_beside_cupy.txt" 2>&1
echo "stand-in beside real CuPy: rc $? $(tail -1 "$OUT/stand_in_beside_cupy.txt")"
CUNUMPY_CACHE_DIR=/tmp/cache-c CUNUMPY_BACKEND=cupy CUNUMPY_REQUIRE_CUDA=1 timeout 120 \
    python3 -m pytest -q -p no:cacheprovider -p cunumpy.testing.plugin -rfEs \
    tests/cuda_conformance -k "texture" > "$OUT/texture_cupy.txt" 2>&1
echo "texture on cupy: $(tail -1 "$OUT/texture_cupy.txt")"
[[ "${1:-}" == bench ]] || exit 0
export CUNUMPY_CACHE_DIR=/tmp/cache-bench OMP_WAIT_POLICY=PASSIVE
timeout 150 python3 benchmarks/bench_compute.py --repeats 5 --json "$OUT/bench_compute.json" \
    > "$OUT/bench_compute.txt" 2>&1; tail -12 "$OUT/bench_compute.txt"
timeout 120 python3 benchmarks/bench_compile.py --variants 3 --json "$OUT/bench_compile.json" \
    > "$OUT/bench_compile.txt" 2>&1; tail -10 "$OUT/bench_compile.txt"
timeout 150 python3 benchmarks/bench_emulator_calls.py --json "$OUT/bench_emulator_calls.json" \
    > "$OUT/bench_emulator_calls.txt" 2>&1; tail -25 "$OUT/bench_emulator_calls.txt"
