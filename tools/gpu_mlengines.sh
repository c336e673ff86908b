#!/usr/bin/env bash
# The GPU batch of issue 24's engines (helper "mlengines"): whole Metal libraries
# (cunumpy.kernels.MetalLibrary) on the metal-cuda engine, NVRTC and the GPU. Results go to $OUT
# (or ./gpu-results); about a minute on the H200's 16 cores.
#
#   bash tools/gpu_mlengines.sh
#
# 1. tests/kernels/test_metal_library.py on every Metal engine, the metal-cuda rows required
#    (CUNUMPY_REQUIRE_CUDA=1: a skip is a failure): the same bodies that run on emu-metal here,
#    and on the host stand-in of CUDA (tests/kernels/test_metal_library_host.py), now through
#    NVRTC, plus test_cupy_arrays_bind_in_place_on_metal_cuda; the mlx rows skip (no Mac);
# 2. benchmarks/bench_metal_library.py: the particle push as a library kernel and as a
#    MetalKernel body on metal-cuda (kernel time by CUDA events, host overhead per launch);
# 3. the generated CUDA unit of each test kernel, kept for reading (mlengines_units/).
# Runs from a source checkout that is not pip-installed: src/ goes on PYTHONPATH and the plugin
# is loaded with -p.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-results}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src:$PWD/tests/kernels${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export CUNUMPY_CACHE_DIR="${CUNUMPY_CACHE_DIR:-/tmp/cunumpy-gpu-cache}"
{ nvidia-smi -L 2>&1 || echo "no nvidia-smi: this machine has no NVIDIA GPU"; } \
    | tee "$OUT/mlengines_device.txt"
python3 -c "import cupy; print('cupy', cupy.__version__)" 2>&1 | tee -a "$OUT/mlengines_device.txt"
xdist=()
python3 -c "import xdist" 2>/dev/null && xdist=(-n 8)
plugin=(-p cunumpy.testing.plugin)
python3 -c "import importlib.metadata as m, sys; sys.exit(0 if any(e.value.startswith('cunumpy') \
for e in m.entry_points(group='pytest11')) else 1)" 2>/dev/null && plugin=()
CUNUMPY_REQUIRE_CUDA=1 python3 -m pytest -q -p no:cacheprovider "${plugin[@]}" "${xdist[@]}" -rfEs \
    tests/kernels/test_metal_library.py >"$OUT/mlengines_tests.txt" 2>&1
echo "MetalLibrary tests (metal-cuda required): $(tail -1 "$OUT/mlengines_tests.txt")"
grep -E "^(FAILED|ERROR)" "$OUT/mlengines_tests.txt" | head -20
python3 benchmarks/bench_metal_library.py --engine cuda --json "$OUT/bench_metal_library.json" \
    >"$OUT/bench_metal_library.txt" 2>&1
cat "$OUT/bench_metal_library.txt" | tail -8
python3 - "$OUT/mlengines_units" <<'PY'
import sys
from pathlib import Path

from test_metal_library import EDGE, SOURCE

from cunumpy.emulation._msl_cuda_library import translate_library
from cunumpy.kernels import MetalLibrary

out = Path(sys.argv[1])
out.mkdir(exist_ok=True)
for name, text in (("test", SOURCE), ("edge", EDGE)):
    lib = MetalLibrary(text, filename=f"{name}.metal")
    for k in lib.names:
        kernel = lib._parsed.kernels[k]
        unit = translate_library(lib._parsed, kernel, {}, lib._files, threads_per_group=256)
        (out / f"{name}_{k}.cu").write_text(unit.source)
print(f"units: {len(list(out.iterdir()))} written to {out}")
PY
