#!/usr/bin/env bash
# One batch for a lent NVIDIA GPU (issue 25): record cuRAND's outputs, then run tests/random
# against them on both CUDA engines and with Metal-on-CUDA. About 2 minutes on the H200.
#
#   bash tools/gpu_curand.sh            # results in $OUT (or ./gpu-results)
#
# Copy $OUT/curand_h200.npz to tests/random/ and commit it: test_equal_to_the_recorded_gpu then
# runs in CI on the emulator. record_report.json says whether nvcc-free NVRTC, cunumpy's cupy
# engine and the recording agreed; sfu_samples.npz holds __sincosf/rsqrt/ex2/lg2/rcp samples.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-results}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export CUNUMPY_CACHE_DIR="${CUNUMPY_CACHE_DIR:-/tmp/cunumpy-gpu-cache}"
timeout 200 python3 tools/record_curand.py "$OUT" 2>&1 | tee "$OUT/record.txt"
cp "$OUT/curand_h200.npz" tests/random/ 2>/dev/null
CUNUMPY_BACKEND=cupy CUNUMPY_REQUIRE_CUDA=1 timeout 300 python3 -m pytest -q -p no:cacheprovider \
    -p cunumpy.testing.plugin -rfEs tests/random >"$OUT/tests_random.txt" 2>&1
echo "tests/random: $(tail -1 "$OUT/tests_random.txt")"
grep -E "^(FAILED|ERROR)" "$OUT/tests_random.txt" | head -20
CUNUMPY_BACKEND=cupy CUNUMPY_REQUIRE_CUDA=1 CUNUMPY_METAL_ENGINE=cuda timeout 200 python3 -m pytest \
    -q -p no:cacheprovider -p cunumpy.testing.plugin -rfEs tests/random/test_ports.py \
    "tests/docs/test_doc_examples.py::test_doc_example" -k "metal or random" \
    >"$OUT/tests_random_metal_on_cuda.txt" 2>&1
echo "metal-on-cuda: $(tail -1 "$OUT/tests_random_metal_on_cuda.txt")"
