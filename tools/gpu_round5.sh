#!/usr/bin/env bash
# One lease of the lent H200 (16 cores) for the checks of round 5 that need a GPU, run side by
# side so that they fit one device call: cuRAND recording and the random-stream tests
# (tools/gpu_curand.sh), cunumpy.mpi on two ranks sharing the GPU (tools/gpu_mpi.sh), the CUDA
# suites on the cupy engine, and the Metal suites (MetalKernel and MetalLibrary) on metal-cuda.
#
#   bash tools/gpu_round5.sh        # needs .whl/mpich-*.whl (see tools/gpu_mpi.sh)
#
# Each part writes its log under $OUT/<part>/; everything is packed into $OUT/round5.tgz.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-results}"
mkdir -p "$OUT"/{curand,mpi,cuda,metal}
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
common=(-q -p no:cacheprovider -p cunumpy.testing.plugin -rfEs)
nvidia-smi -L > "$OUT/device.txt" 2>&1
python3 -c "import cupy, numpy; print('cupy', cupy.__version__, 'numpy', numpy.__version__)" \
    >> "$OUT/device.txt" 2>&1
(OUT="$OUT/curand" CUNUMPY_CACHE_DIR=/tmp/cache-curand timeout 500 bash tools/gpu_curand.sh \
    > "$OUT/curand/log.txt" 2>&1) &
(OUT="$OUT/mpi" timeout 500 bash tools/gpu_mpi.sh > "$OUT/mpi/log.txt" 2>&1) &
(CUNUMPY_CACHE_DIR=/tmp/cache-cuda CUNUMPY_BACKEND=cupy CUNUMPY_REQUIRE_CUDA=1 timeout 520 \
    python3 -m pytest "${common[@]}" -n 5 tests/cuda_conformance tests/engines tests/kernels/test_cuda*.py \
    tests/kernels/test_texture.py tests/kernels/dispatch tests/kernels/test_zero_size_launch.py tests/foundation \
    > "$OUT/cuda/tests_cupy.txt" 2>&1; echo "exit $?" >> "$OUT/cuda/tests_cupy.txt") &
(CUNUMPY_CACHE_DIR=/tmp/cache-metal CUNUMPY_BACKEND=cupy CUNUMPY_REQUIRE_CUDA=1 CUNUMPY_METAL_ENGINE=cuda \
    timeout 520 python3 -m pytest "${common[@]}" -n 5 tests/metal_conformance \
    tests/kernels/test_metal_kernel.py tests/kernels/test_metal_kernel_defaults.py \
    tests/kernels/test_metal_cuda_engine.py tests/kernels/test_metal_library.py \
    tests/kernels/test_metal_library_classes.py tests/examples \
    > "$OUT/metal/tests_metal_on_cuda.txt" 2>&1; echo "exit $?" >> "$OUT/metal/tests_metal_on_cuda.txt") &
wait
for f in "$OUT"/*/*.txt; do echo "== $f: $(grep -E 'passed|failed|error' "$f" | tail -1)"; done
grep -hE "^(FAILED|ERROR)" "$OUT"/*/*.txt | head -40
tar -C "$OUT" -czf /tmp/round5.tgz curand mpi cuda metal device.txt && rm -rf "$OUT"/{curand,mpi,cuda,metal} \
    && mv /tmp/round5.tgz "$OUT/"
