#!/usr/bin/env bash
# One batch for a lent NVIDIA GPU (issue 24, corpus classes): the shared Metal runtime header
# (cn_metal_types.h: constexpr vector constructors, _numeric_limits_impl, vec_elements, the
# half/_Float16 switch, which NVRTC keeps as the 16-bit class) must still compile and run on the
# metal-cuda engine. Runs the Metal suites on metal-cuda with the GPU required. About 2 minutes.
#
#   bash tools/gpu_mlcorpus.sh          # results in $OUT (or ./gpu-results)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-results}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export CUNUMPY_CACHE_DIR="${CUNUMPY_CACHE_DIR:-/tmp/cunumpy-gpu-cache}"
CUNUMPY_BACKEND=cupy CUNUMPY_REQUIRE_CUDA=1 CUNUMPY_METAL_ENGINE=cuda timeout 170 python3 -m pytest \
    -q -p no:cacheprovider -p cunumpy.testing.plugin -n 8 -rfEs \
    tests/kernels/test_metal_cuda_engine.py tests/metal_conformance tests/kernels/test_metal_kernel.py \
    tests/kernels/test_metal_library.py tests/kernels/test_metal_library_classes.py \
    >"$OUT/mlcorpus_metal_on_cuda.txt" 2>&1
echo "metal suites on metal-cuda: $(tail -1 "$OUT/mlcorpus_metal_on_cuda.txt")"
grep -E "^(FAILED|ERROR)" "$OUT/mlcorpus_metal_on_cuda.txt" | head -20
