#!/usr/bin/env bash
# Issue 23 (CuPy stand-in), on a machine with a GPU and CuPy 14: the stand-in must refuse to
# hide a working CuPy, both when called and under pytest. Proves: install_cupy_on_cpu() raises
# CupyOnCpuRefused naming the real CuPy and its device count; CUNUMPY_CUPY_ON_CPU=1 pytest stops
# with that reason; without the variable the real CuPy is used and the stand-in tests pass.
set -euo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
python - <<'PY'
import cunumpy.testing
try:
    cunumpy.testing.install_cupy_on_cpu()
except cunumpy.testing.CupyOnCpuRefused as exc:
    print("refused as expected:", exc)
else:
    raise SystemExit("FAIL: the stand-in was installed over a working CuPy")
import cupy
assert "cupy_on_cpu" not in cupy.__name__ and cupy.__file__, cupy
print("real CuPy still imports:", cupy.__version__)
PY
if CUNUMPY_CUPY_ON_CPU=1 python -m pytest -q -p no:cacheprovider -p cunumpy.testing.plugin tests/testing/test_cupy_on_cpu_array.py > /tmp/gpu_23core.txt 2>&1; then
    cat /tmp/gpu_23core.txt; echo "FAIL: pytest ran with the stand-in over a working CuPy"; exit 1
fi
grep -q "a real CuPy works here" /tmp/gpu_23core.txt && echo "pytest refused as expected"
python -m pytest -q -p no:cacheprovider tests/testing/test_cupy_on_cpu_array.py tests/testing/test_cupy_on_cpu_install.py
