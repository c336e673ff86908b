#!/usr/bin/env bash
# One batch for a lent NVIDIA GPU: the test suite on the CuPy backend (no CUDA test may skip),
# then the CUDA and transfer benchmarks. Results go to $OUT (or ./gpu-results).
#
#   bash tools/gpu_check.sh [quick]
#
# Runs from a source checkout that is not pip-installed: src/ goes on PYTHONPATH and the
# cunumpy pytest plugin is loaded explicitly (-p), since its entry point is not registered.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-results}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export CUNUMPY_CACHE_DIR="${CUNUMPY_CACHE_DIR:-/tmp/cunumpy-gpu-cache}"
nvidia-smi -L | tee "$OUT/device.txt"
python3 -c "import cupy, numpy; print('cupy', cupy.__version__, 'numpy', numpy.__version__)" \
    | tee -a "$OUT/device.txt"
xdist=()
python3 -c "import xdist" 2>/dev/null && xdist=(-n 8)
CUNUMPY_BACKEND=cupy CUNUMPY_REQUIRE_CUDA=1 python3 -m pytest -q -p no:cacheprovider \
    -p cunumpy.testing.plugin "${xdist[@]}" -rfEs >"$OUT/tests_cupy_backend.txt" 2>&1
echo "tests: $(tail -1 "$OUT/tests_cupy_backend.txt")"
grep -E "^(FAILED|ERROR)" "$OUT/tests_cupy_backend.txt" | head -40
# Metal kernels on the NVIDIA GPU: the Metal suites with the Metal-on-CUDA engine selected.
CUNUMPY_BACKEND=cupy CUNUMPY_REQUIRE_CUDA=1 CUNUMPY_METAL_ENGINE=cuda python3 -m pytest -q \
    -p no:cacheprovider -p cunumpy.testing.plugin "${xdist[@]}" -rfEs tests/metal_conformance tests/examples \
    tests/kernels/test_metal_kernel.py tests/kernels/test_metal_kernel_defaults.py tests/docs >"$OUT/tests_metal_on_cuda.txt" 2>&1
echo "metal-on-cuda tests: $(tail -1 "$OUT/tests_metal_on_cuda.txt")"
grep -E "^(FAILED|ERROR)" "$OUT/tests_metal_on_cuda.txt" | head -20
if [[ "${1:-}" == quick ]]; then exit 0; fi
python3 benchmarks/bench_metal_cuda.py >"$OUT/bench_metal_cuda.txt" 2>&1
cat "$OUT/bench_metal_cuda.txt" | tail -12
python3 benchmarks/bench_cuda.py --json "$OUT/bench_cuda.json" >"$OUT/bench_cuda.txt" 2>&1
tail -25 "$OUT/bench_cuda.txt"
python3 benchmarks/bench_transfers.py --json "$OUT/bench_transfers.json" \
    --plot "$OUT/bench_transfers.png" >"$OUT/bench_transfers.txt" 2>&1
grep -A40 "GB/s, median" "$OUT/bench_transfers.txt"
# The CPU emulators through the public calls, on this host's cores (parallel threadgroups).
python3 benchmarks/bench_emulator_calls.py --json "$OUT/bench_emulator_calls.json" \
    >"$OUT/bench_emulator_calls.txt" 2>&1
cat "$OUT/bench_emulator_calls.txt"
