#!/usr/bin/env bash
# Second lease of round 5: the fixes found in the first (texture filtering, MRG32k3a, the
# host-stream normals) on the cupy engine, then Ctrl-C on the 16-core host (tools/gpu_ctrlc.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-results}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
CUNUMPY_CACHE_DIR=/tmp/cache-b CUNUMPY_BACKEND=cupy CUNUMPY_REQUIRE_CUDA=1 timeout 250 \
    python3 -m pytest -q -p no:cacheprovider -p cunumpy.testing.plugin -rfEs -n 8 tests/random \
    tests/cuda_conformance -k "texture or curand or random or Philox or cupy" tests/kernels/test_texture.py \
    tests/kernels/test_texture_h200.py tests/emulation/test_thread_param.py > "$OUT/verify_cupy.txt" 2>&1
echo "verify on cupy: $(tail -1 "$OUT/verify_cupy.txt")"
grep -E "^(FAILED|ERROR)" "$OUT/verify_cupy.txt" | head
timeout 330 bash tools/gpu_ctrlc.sh
