#!/usr/bin/env bash
# cunumpy.mpi on one H200 shared by 2 ranks: the multi-rank tests on the CuPy backend (staged
# path; direct path too where the MPI library is CUDA-aware) and bench_mpi at 512^3, width 2.
# The H200 image has mpi4py but no MPI library: the MPICH wheel travels in .whl/ (and an mpi4py
# wheel, used only if the image's mpi4py cannot load MPICH). Writes everything under $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu_mpi_out}
mkdir -p "$OUT"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 CUNUMPY_CACHE_DIR=/tmp/cncache-mpi
python3 -m pip install -q --ignore-installed --no-index --no-deps --prefix /tmp/mpi .whl/mpich-*.whl 2>&1 | grep -v WARNING
export PATH=/tmp/mpi/bin:$PATH LD_LIBRARY_PATH=/tmp/mpi/lib:${LD_LIBRARY_PATH:-}
export MPI4PY_LIBMPI=/tmp/mpi/lib/libmpi.so.12 CUNUMPY_MPIEXEC=/tmp/mpi/bin/mpiexec
if ! python3 -c "from mpi4py import MPI" 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/mpi4py-*.whl 2>&1 | grep -v WARNING
    export PYTHONPATH=/tmp/site:$PYTHONPATH
fi
{
    echo "== $(date -u) $(hostname)"
    nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
    python3 -c "import mpi4py, cupy; from mpi4py import MPI; print('mpi4py', mpi4py.__version__, '|', MPI.Get_library_version().splitlines()[0], '| cupy', cupy.__version__)"
    python3 -c "
from cunumpy.mpi._device import library_cuda_support, probe_in_child
print('library query (MPIX_Query_cuda_support / MPIX_GPU_query_support):', library_cuda_support())
print('probe in a child process:', probe_in_child(0))"
    which mpiexec
} > "$OUT/gpu_mpi_diag.txt" 2>&1
cat "$OUT/gpu_mpi_diag.txt"
CUNUMPY_BACKEND=cupy CUNUMPY_REQUIRE_CUDA=1 timeout 170 python3 -m pytest -q -rs \
    -p no:cacheprovider -p cunumpy.testing.plugin --durations=8 \
    tests/mpi tests/testing/test_run_ranks.py > "$OUT/gpu_mpi_tests.txt" 2>&1
echo "pytest exit $?" >> "$OUT/gpu_mpi_tests.txt"
tail -25 "$OUT/gpu_mpi_tests.txt"
timeout 170 mpiexec -n 2 python3 benchmarks/bench_mpi.py --backend numpy,cupy \
    --out "$OUT/bench_mpi_h200_n2.json" > "$OUT/bench_mpi_h200_n2.log" 2>&1
echo "bench exit $?" >> "$OUT/bench_mpi_h200_n2.log"
cat "$OUT/bench_mpi_h200_n2.log"
