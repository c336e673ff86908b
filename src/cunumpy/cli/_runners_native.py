"""The ``native`` engine of ``cunumpy bench`` and ``cunumpy demo``: the workloads as plain C++
loops, compiled in the run with ``-O3 -march=native -fopenmp``.

This is the machine's limit the emulators are measured against (issue 26): every core
(OpenMP) and every vector lane (``#pragma omp ... simd``, ``-march=native``), and the same
float32 roundings as the kernels (``-ffp-contract=off``: no fused multiply-add; the push's
``NSTEPS`` a compile-time constant, as the kernels' template argument), so its results equal the
emulated ones bit for bit. Built once per process and ``NSTEPS`` with the C++ compiler the
emulators use, in a private temporary directory (never the kernel cache). OpenMP's own
settings apply (``OMP_NUM_THREADS``; ``OMP_WAIT_POLICY=PASSIVE`` keeps idle threads from
spinning while the next engine is timed).
"""

from __future__ import annotations

import ctypes
import functools
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FLAGS", "SOURCE", "library", "status"]

FLAGS = ("-O3", "-march=native", "-fopenmp", "-ffp-contract=off", "-fPIC", "-shared")
"""The compiler flags of the native loops."""

SOURCE = r"""
extern "C" void push(const float* __restrict__ pos, const float* __restrict__ vel, float dt,
                     float* __restrict__ out, long n) {
#pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; ++i) {
        float x = pos[i];
        const float v = vel[i];
        for (int k = 0; k < NSTEPS; ++k) { x += v * dt; }
        out[i] = x;
    }
}

extern "C" void axpy(long n, float a, const float* __restrict__ x, const float* __restrict__ y,
                     float* __restrict__ out) {
#pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; ++i) out[i] = a * x[i] + y[i];
}

extern "C" void interp(const float* __restrict__ pos, const float* __restrict__ field, int m,
                       float* __restrict__ out, long n) {
#pragma omp parallel for simd schedule(static)
    for (long i = 0; i < n; ++i) {
        float p = pos[i];
        int j = (int)p;
        j = j < 0 ? 0 : (j > m - 2 ? m - 2 : j);
        float w = p - (float)j;
        out[i] = (1.0f - w) * field[j] + w * field[j + 1];
    }
}

extern "C" void noop(float* x, long n) {
    for (long i = 0; i < n; ++i) x[i] += 1.0f;
}
"""

_P = ctypes.c_void_p
_SIGNATURES = {
    "push": [_P, _P, ctypes.c_float, _P, ctypes.c_long],
    "axpy": [ctypes.c_long, ctypes.c_float, _P, _P, _P],
    "interp": [_P, _P, ctypes.c_int, _P, ctypes.c_long],
    "noop": [_P, ctypes.c_long],
}


@functools.cache
def library(nsteps: int = 200) -> Any:
    """The compiled loops for ``nsteps`` push steps (a ``ctypes.CDLL``); raises RuntimeError
    naming the compiler and its output when the build fails."""
    from cunumpy.emulation import find_compiler

    cxx = find_compiler()
    tmp = Path(tempfile.mkdtemp(prefix="cunumpy-native-"))
    src = tmp / "native.cpp"
    src.write_text(f"#define NSTEPS {int(nsteps)}\n{SOURCE}")
    lib = tmp / "native.so"
    cmd = [*cxx.command, *FLAGS, "-o", str(lib), str(src)]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(
            f"the native engine could not build its loops with {' '.join(cmd)}: "
            f"{(done.stderr or done.stdout).strip()[-800:]}"
        )
    cdll = ctypes.CDLL(str(lib))
    for name, argtypes in _SIGNATURES.items():
        fn = getattr(cdll, name)
        fn.argtypes = argtypes
        fn.restype = None
    return cdll


@functools.cache
def status() -> tuple[bool, str]:
    """``(available, reason)``: whether the loops build here (a C++ compiler with OpenMP)."""
    try:
        library()
    except Exception as exc:  # no compiler, no OpenMP: said, never raised
        return False, f"{type(exc).__name__}: {exc}"
    return True, f"C++ {' '.join(FLAGS[:4])}, built in this run"


def _ptr(a: np.ndarray) -> int:
    return a.ctypes.data


def push(pos: np.ndarray, vel: np.ndarray, dt: float, nsteps: int) -> np.ndarray:
    """``nsteps`` steps of ``x += v * dt`` per coordinate (float32, C-contiguous inputs)."""
    pos, vel = np.ascontiguousarray(pos, np.float32), np.ascontiguousarray(vel, np.float32)
    out = np.empty_like(pos)
    library(nsteps).push(_ptr(pos), _ptr(vel), float(np.float32(dt)), _ptr(out), pos.size)
    return out


def axpy(a: float, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``a * x + y`` (float32)."""
    x, y = np.ascontiguousarray(x, np.float32), np.ascontiguousarray(y, np.float32)
    out = np.empty_like(x)
    library().axpy(x.size, float(np.float32(a)), _ptr(x), _ptr(y), _ptr(out))
    return out


def interp(pos: np.ndarray, field: np.ndarray, m: int) -> np.ndarray:
    """Linear interpolation of ``field`` (``m`` points) at ``pos`` (float32)."""
    pos, field = np.ascontiguousarray(pos, np.float32), np.ascontiguousarray(field, np.float32)
    out = np.empty_like(pos)
    library().interp(_ptr(pos), _ptr(field), int(m), _ptr(out), pos.size)
    return out


def noop(x: np.ndarray) -> None:
    """``x += 1`` on one core (the launch-overhead call)."""
    library().noop(_ptr(x), x.size)
