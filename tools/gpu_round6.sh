#!/usr/bin/env bash
# Round 6 on the H200 host (issue 26): the prebuilt runtime object on another CPU (its own ISA
# level, so its own cache entries), cold compiles beside NVRTC measured in the same run, the
# compute-bound push against the native loop, and the whole suite on 16 cores with CuPy and the
# GPU. Results go to $OUT (or ./gpu-results). Runs from a source checkout: src/ on PYTHONPATH.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-results}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 OMP_WAIT_POLICY=PASSIVE
{ nproc; python3 --version; g++ --version | head -1; which ld.gold; } > "$OUT/host.txt" 2>&1
CUNUMPY_CACHE_DIR=/tmp/cache-compile timeout 120 python3 benchmarks/bench_compile.py \
    --variants 5 --json "$OUT/bench_compile.json" > "$OUT/bench_compile.txt" 2>&1
tail -6 "$OUT/bench_compile.txt"
CUNUMPY_CACHE_DIR=/tmp/cache-compute timeout 150 python3 benchmarks/bench_compute.py \
    --repeats 5 --json "$OUT/bench_compute.json" > "$OUT/bench_compute.txt" 2>&1
tail -8 "$OUT/bench_compute.txt"
CUNUMPY_CACHE_DIR=/tmp/cache-bench timeout 240 python3 -m cunumpy bench --workloads push --plain \
    --json "$OUT/cunumpy_bench_push.json" > "$OUT/cunumpy_bench_push.txt" 2>&1
grep "compute-bound" "$OUT/cunumpy_bench_push.txt"
start=$(date +%s)
CUNUMPY_REQUIRE_CUDA=1 timeout 330 python3 -m pytest -q -n 16 -p no:cacheprovider \
    -p cunumpy.testing.plugin -rfE > "$OUT/suite.txt" 2>&1
echo "whole suite, -n 16, CUNUMPY_REQUIRE_CUDA=1: rc $? in $(( $(date +%s) - start )) s"
grep -E "^(FAILED|ERROR)" "$OUT/suite.txt" | head -20
tail -1 "$OUT/suite.txt"
