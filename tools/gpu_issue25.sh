#!/usr/bin/env bash
# Issue 25 on a lent NVIDIA GPU: the CUDA conformance suite on the cupy engine (textures,
# cooperative grid sync, inline PTX, fp16/bf16, NVRTC's host overloads, version macros, macro
# kernels included; no CUDA test may skip), then the real-world harness on the cupy engine.
#
#   bash tools/gpu_issue25.sh [CASES.json.gz] [WHEELS_DIR]
#
# CASES.json.gz: sliced public kernels written by `tools/realworld_cuda.py --save-cases` on a
# machine that has the corpora (never committed). WHEELS_DIR: wheels to install first (ml_dtypes
# for the bfloat16 cases). Results go to $OUT (or ./gpu-results).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-results}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export CUNUMPY_CACHE_DIR="${CUNUMPY_CACHE_DIR:-/tmp/cunumpy-gpu-cache}"
if [[ -n "${2:-}" && -d "$2" ]]; then
    python3 -m pip install -q --no-index --no-deps --target /tmp/site "$2"/*.whl
    export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi
nvidia-smi -L | tee "$OUT/device.txt"
xdist=()
python3 -c "import xdist" 2>/dev/null && xdist=(-n 12)
CUNUMPY_BACKEND=cupy CUNUMPY_REQUIRE_CUDA=1 timeout 170 python3 -m pytest -q -p no:cacheprovider \
    -p cunumpy.testing.plugin "${xdist[@]}" -rfEs -k "cupy or fits_outputs" \
    tests/cuda_conformance tests/kernels/test_texture.py >"$OUT/conformance_cupy.txt" 2>&1
echo "conformance on cupy: $(tail -1 "$OUT/conformance_cupy.txt")"
grep -E "^(FAILED|ERROR)" "$OUT/conformance_cupy.txt" | head -30
if [[ -n "${1:-}" && -f "$1" ]]; then
    timeout 100 python3 tools/realworld_cuda.py --cases "$1" --engine cupy --jobs 12 \
        --json "$OUT/realworld_cupy.json" >"$OUT/realworld_cupy.txt" 2>&1
    tail -45 "$OUT/realworld_cupy.txt"
fi
