#!/usr/bin/env bash
# Issue 26 item 2 on the H200 host (16 idle cores, AVX-512): the emulator's SIMD lanes.
# No GPU is used; the host is the point (an idle machine, and the x86-64-v4 ISA level).
#
#   bash tools/gpu_26simd.sh
#
# Proves: (1) the ISA level the emulator picks there and that GCC vectorises the push with it
# (tests/emulation/test_lanes.py, which also compares lanes on/off bit for bit); (2) the
# compute-bound row on an idle machine: benchmarks/bench_compute.py (the demo's push through
# CudaKernel/MetalKernel, checks on/off, against g++ -O3 -march=native -fopenmp in the same run);
# (3) the memory-bound rows with lanes on and off (benchmarks/bench_emulator_calls.py).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-results}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export CUNUMPY_CACHE_DIR="${CUNUMPY_CACHE_DIR:-/tmp/cunumpy-simd-cache}"
python3 -c "from cunumpy.emulation import _build, _lanes; print(_lanes.isa_level()); \
print(_build.compile_flags())" | tee "$OUT/simd_flags.txt"
python3 -m pytest -q -p no:cacheprovider tests/emulation/test_lanes.py 2>&1 | tail -5 \
    | tee "$OUT/simd_tests.txt"
python3 benchmarks/bench_compute.py --repeats 7 --json "$OUT/bench_compute.json" \
    | tee "$OUT/bench_compute.txt"
python3 benchmarks/bench_emulator_calls.py --json "$OUT/bench_calls_lanes.json" \
    | tee "$OUT/bench_calls_lanes.txt"
CUNUMPY_EMULATOR_LANES=0 python3 benchmarks/bench_emulator_calls.py \
    --json "$OUT/bench_calls_nolanes.json" | tee "$OUT/bench_calls_nolanes.txt"
