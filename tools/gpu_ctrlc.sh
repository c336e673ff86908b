#!/usr/bin/env bash
# Issue 26 item 4 on the H200 host (16 cores; no GPU needed): Ctrl-C stops an emulated launch on
# any number of workers. Results go to $OUT (or ./gpu-results); about a minute.
#
#   bash tools/gpu_ctrlc.sh          # the Ctrl-C tests (about a minute)
#   bash tools/gpu_ctrlc.sh bench    # then issue 26's benchmark rows on the idle host (minutes)
#
# 1. test_ctrl_c_stops_a_long_launch[1] and [2] alone (in-process: the [2] case hung on this host
#    before the fix, the main thread asleep in Future.result() while both workers ran on), then
#    the same two under xdist (-n 8, the way tools/gpu_check.sh runs the suite);
# 2. test_ctrl_c_stops_a_launch_on_many_workers: a child process with 16 and 64 workers, SIGINT
#    to the process and to one worker thread; each child must stop within 30 s of the signal
#    (120 s limit), part of its work done, the library usable after, Python's handler restored;
# 3. the rest of tests/emulation/test_parallel.py (parallel results equal serial ones) with the
#    default worker count, which is this host's 16 cores.
# 4. (bench) `cunumpy bench` on the push with the native engine (-O3 -march=native -fopenmp,
#    built in the run) beside NumPy, Numba and both emulators: the compute-bound row; then
#    benchmarks/bench_emulator_calls.py (element-wise CUDA with and without checks and Metal with
#    checks against -O2 and -O2 -fopenmp built in the run) and benchmarks/bench_races.py
#    (race-checked element-wise against a checked launch).
# Runs from a source checkout that is not pip-installed: src/ goes on PYTHONPATH.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-results}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
export CUNUMPY_CACHE_DIR="${CUNUMPY_CACHE_DIR:-/tmp/cunumpy-gpu-cache}"
unset CUNUMPY_EMULATOR_THREADS
{ nproc; python3 --version; uname -r; } 2>&1 | tee "$OUT/ctrlc_host.txt"
status=0
run() {  # name, timeout in s, pytest arguments...
    local name=$1 limit=$2
    shift 2
    timeout -k 10 "$limit" python3 -m pytest -q -p no:cacheprovider -rfEs "$@" \
        >"$OUT/ctrlc_$name.txt" 2>&1
    local rc=$?
    [[ $rc == 124 || $rc == 137 ]] && echo "TIMED OUT after ${limit} s" >>"$OUT/ctrlc_$name.txt"
    echo "$name (rc $rc): $(tail -1 "$OUT/ctrlc_$name.txt")"
    [[ $rc == 0 ]] || status=1
}
run alone 180 "tests/emulation/test_parallel.py::test_ctrl_c_stops_a_long_launch"
xdist=()
python3 -c "import xdist" 2>/dev/null && xdist=(-n 8)
if [[ ${#xdist[@]} -gt 0 ]]; then
    run xdist 180 "${xdist[@]}" "tests/emulation/test_parallel.py::test_ctrl_c_stops_a_long_launch"
fi
run many_workers 600 "tests/emulation/test_parallel.py::test_ctrl_c_stops_a_launch_on_many_workers"
run parallel 600 tests/emulation/test_parallel.py -k "not ctrl_c"
grep -hE "^(FAILED|ERROR)|TIMED OUT" "$OUT"/ctrlc_*.txt | head -20
if [[ "${1:-}" == bench ]]; then
    OMP_WAIT_POLICY=PASSIVE python3 -m cunumpy bench --plain --workloads push --engines numpy,numba,native,emu-cuda,emu-metal \
        --json "$OUT/bench26_push.json" >"$OUT/bench26_push.txt" 2>&1
    grep -E "compute-bound row|not available|FAILED" "$OUT/bench26_push.txt"
    python3 benchmarks/bench_emulator_calls.py --json "$OUT/bench26_emulator_calls.json" \
        >"$OUT/bench26_emulator_calls.txt" 2>&1
    grep -E "elementwise_.*vs_native|native_O2" "$OUT/bench26_emulator_calls.txt"
    python3 benchmarks/bench_races.py --json "$OUT/bench26_races.json" \
        >"$OUT/bench26_races.txt" 2>&1
    tail -12 "$OUT/bench26_races.txt"
fi
exit $status
