"""Engines and workloads shared by ``cunumpy demo`` and ``cunumpy bench``.

A *workload* is one computation written once per engine family: a NumPy host version, a Numba
host version, a CUDA C++ port (run by :class:`~cunumpy.kernels.CudaKernel`) and a Metal port
(run by :class:`~cunumpy.kernels.MetalKernel`), plus a float64 reference to check them against.

An *engine* here is one of :data:`ENGINES`. :func:`engine_status` says whether it can run on this
machine and, if not, why. :func:`run` executes a workload on an engine in three timed phases
(copies to the device, the kernel, copies back), under :func:`cunumpy.profiling.count_transfers`,
so the demo and the benchmark report exactly what the library recorded.
"""

from __future__ import annotations

import functools
import importlib.util
import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cunumpy._engines import _table
from cunumpy.profiling import count_transfers

__all__ = [
    "ENGINES",
    "FAMILY",
    "LABELS",
    "WORKLOADS",
    "Inputs",
    "RunResult",
    "Workload",
    "engine_status",
    "max_relative_error",
    "run",
]

_HOST_ENGINES = {"numpy": "host, NumPy", "numba": "host, Numba",
                 "native": "host, C++ -O3 -march=native -fopenmp"}

ENGINES = (*_HOST_ENGINES, *_table.ENGINES)
"""Every engine the demo and the benchmark know, in the order they are shown: the host
engines, then the kernel engines of the engine table."""

FAMILY = {**dict.fromkeys(_HOST_ENGINES, "host"),
          **{n: r.dialect for n, r in _table.ENGINES.items()}}
LABELS = {**_HOST_ENGINES, **{n: r.label for n, r in _table.ENGINES.items()}}
EMULATED = frozenset(n for n, r in _table.ENGINES.items() if not r.gpu)
REAL_GPU = frozenset(n for n, r in _table.ENGINES.items() if r.gpu)


# --------------------------------------------------------------------------- availability
def _status(name: str) -> tuple[bool, str]:
    if name == "numpy":
        return True, f"NumPy {np.__version__}"
    if name == "numba":
        if importlib.util.find_spec("numba") is None:
            return False, "Numba is not installed (pip install 'cunumpy[numba]')"
        try:
            import numba
        except Exception as exc:  # a broken install can raise anything
            return False, f"Numba failed to import: {type(exc).__name__}: {exc}"
        return True, f"Numba {numba.__version__}"
    if name == "native":
        from cunumpy.cli import _runners_native

        return _runners_native.status()
    if name in _table.ENGINES:
        return tuple(_table.engine_status(name))  # type: ignore[return-value]
    raise ValueError(f"unknown engine {name!r}; known engines: {', '.join(ENGINES)}")


@functools.cache
def engine_status(name: str) -> tuple[bool, str]:
    """``(available, reason)`` for one of :data:`ENGINES`; cached for the process."""
    return _status(name)


# --------------------------------------------------------------------------- workloads
@dataclass
class Inputs:
    """One problem instance: float32 arrays and scalars, in the workload's argument order."""

    arrays: dict[str, np.ndarray]
    scalars: dict[str, Any]
    shape: tuple[int, ...]
    """Shape of the result."""

    @property
    def size(self) -> int:
        return math.prod(self.shape)


@dataclass
class Workload:
    """One computation with a host version, a CUDA port and a Metal port."""

    name: str
    description: str
    cuda_source: str
    metal_source: str
    metal_inputs: tuple[str, ...]
    metal_outputs: tuple[str, ...]
    rtol: float
    """Largest relative error against the float64 reference that counts as agreement."""
    template: dict[str, int] = field(default_factory=dict)
    _metal_kernel: Any = None
    _cuda_kernels: dict[str, Any] = field(default_factory=dict)

    # Subclasses fill these in.
    def make_inputs(self, shape: tuple[int, ...], rng: np.random.Generator) -> Inputs:
        raise NotImplementedError

    def reference(self, inp: Inputs) -> np.ndarray:
        raise NotImplementedError

    def host_numpy(self, inp: Inputs) -> np.ndarray:
        raise NotImplementedError

    def host_numba(self, inp: Inputs) -> np.ndarray:
        raise NotImplementedError

    def host_native(self, inp: Inputs) -> np.ndarray:
        """The same loop in C++, ``-O3 -march=native -fopenmp`` (:mod:`._runners_native`)."""
        raise NotImplementedError

    def cuda_args(self, dev: dict[str, Any], out: Any, inp: Inputs) -> tuple:
        raise NotImplementedError

    def bytes_moved(self, inp: Inputs) -> int:
        """Bytes the kernel must read and write at least (for throughput)."""
        raise NotImplementedError

    # Shared machinery.
    def cuda_kernel(self, engine: str) -> Any:
        """The CudaKernel of this workload fixed to ``engine`` ("cupy" or "emulator")."""
        key = (engine, tuple(sorted(self.template.items())))
        kernel = self._cuda_kernels.get(key)
        if kernel is None:
            from cunumpy.kernels import CudaKernel

            kernel = CudaKernel(
                self.cuda_source,
                self.name,
                engine=engine,
                template_args=dict(self.template) if self.template else None,
            )
            self._cuda_kernels[key] = kernel
        return kernel

    def metal_kernel(self) -> Any:
        if self._metal_kernel is None:
            from cunumpy.kernels import MetalKernel

            self._metal_kernel = MetalKernel(
                self.metal_source,
                inputs=list(self.metal_inputs),
                outputs=list(self.metal_outputs),
                name=self.name,
            )
        return self._metal_kernel

    def metal_values(self, inp: Inputs) -> list[np.ndarray]:
        """The Metal kernel's inputs as arrays (scalars as one-element arrays)."""
        values = []
        for name in self.metal_inputs:
            if name in inp.arrays:
                values.append(inp.arrays[name])
            else:
                v = inp.scalars[name]
                dtype = np.int32 if isinstance(v, (int, np.integer)) else np.float32
                values.append(np.array([v], dtype=dtype))
        return values


_CHUNK = 1 << 15
"""Elements per block of the NumPy host versions: small enough to stay in the CPU cache."""


class Push(Workload):
    """The spec's particle push: every coordinate advances NSTEPS times by ``v * dt``."""

    def __init__(self, nsteps: int = 200, dt: float = 1e-3) -> None:
        super().__init__(
            name="push",
            description=f"x += v * dt, {nsteps} steps per coordinate",
            cuda_source=PUSH_CUDA,
            metal_source=PUSH_METAL,
            metal_inputs=("pos", "vel", "dt"),
            metal_outputs=("pos_out",),
            # float32 adds NSTEPS roundings of half an ulp at most; allow twice that.
            rtol=max(1e-6, 2 * nsteps * float(np.finfo(np.float32).eps)),
            template={"NSTEPS": int(nsteps)},
        )
        self.nsteps = int(nsteps)
        self.dt = float(np.float32(dt))

    def make_inputs(self, shape, rng):
        # Positions in [1, 2) and small velocities keep every result away from zero, so the
        # relative error is well defined element by element.
        pos = (1.0 + rng.random(shape, dtype=np.float32)).astype(np.float32)
        vel = (rng.random(shape, dtype=np.float32) - np.float32(0.5)).astype(np.float32)
        return Inputs({"pos": pos, "vel": vel}, {"dt": np.float32(self.dt)}, tuple(shape))

    def reference(self, inp):
        dt = float(inp.scalars["dt"])
        return inp.arrays["pos"].astype(np.float64) + self.nsteps * (
            inp.arrays["vel"].astype(np.float64) * dt
        )

    def host_numpy(self, inp):
        pos = inp.arrays["pos"].reshape(-1)
        vel = inp.arrays["vel"].reshape(-1)
        out = np.empty_like(pos)
        dt = np.float32(inp.scalars["dt"])
        step = np.empty(min(_CHUNK, pos.size), np.float32)
        for s in range(0, pos.size, _CHUNK):
            x = out[s : s + _CHUNK]
            x[...] = pos[s : s + _CHUNK]
            d = step[: x.size]
            np.multiply(vel[s : s + _CHUNK], dt, out=d)
            for _ in range(self.nsteps):
                x += d
        return out.reshape(inp.shape)

    def host_numba(self, inp):
        fn = _numba_functions().push
        out = np.empty(inp.size, np.float32)
        fn(inp.arrays["pos"].reshape(-1), inp.arrays["vel"].reshape(-1),
           np.float32(inp.scalars["dt"]), self.nsteps, out)
        return out.reshape(inp.shape)

    def host_native(self, inp):
        out = _native().push(inp.arrays["pos"].reshape(-1), inp.arrays["vel"].reshape(-1),
                             inp.scalars["dt"], self.nsteps)
        return out.reshape(inp.shape)

    def cuda_args(self, dev, out, inp):
        return (dev["pos"], dev["vel"], float(inp.scalars["dt"]), out, int(inp.size))

    def bytes_moved(self, inp):
        return 3 * 4 * inp.size


class Axpy(Workload):
    """``out = a * x + y``: one multiply-add per element, limited by memory bandwidth."""

    def __init__(self) -> None:
        super().__init__(
            name="axpy",
            description="out = a * x + y",
            cuda_source=AXPY_CUDA,
            metal_source=AXPY_METAL,
            metal_inputs=("a", "x", "y"),
            metal_outputs=("out",),
            rtol=1e-6,
        )

    def make_inputs(self, shape, rng):
        x = (1.0 + rng.random(shape, dtype=np.float32)).astype(np.float32)
        y = (1.0 + rng.random(shape, dtype=np.float32)).astype(np.float32)
        return Inputs({"x": x, "y": y}, {"a": np.float32(2.5)}, tuple(shape))

    def reference(self, inp):
        return float(inp.scalars["a"]) * inp.arrays["x"].astype(np.float64) + inp.arrays["y"]

    def host_numpy(self, inp):
        out = np.multiply(inp.arrays["x"], np.float32(inp.scalars["a"]))
        out += inp.arrays["y"]
        return out

    def host_numba(self, inp):
        out = np.empty(inp.size, np.float32)
        _numba_functions().axpy(np.float32(inp.scalars["a"]), inp.arrays["x"].reshape(-1),
                                   inp.arrays["y"].reshape(-1), out)
        return out.reshape(inp.shape)

    def host_native(self, inp):
        out = _native().axpy(inp.scalars["a"], inp.arrays["x"].reshape(-1),
                             inp.arrays["y"].reshape(-1))
        return out.reshape(inp.shape)

    def cuda_args(self, dev, out, inp):
        return (int(inp.size), float(inp.scalars["a"]), dev["x"], dev["y"], out)

    def bytes_moved(self, inp):
        return 3 * 4 * inp.size


class Interp(Workload):
    """Linear interpolation of a 1-D grid field at particle positions (a gather)."""

    def __init__(self) -> None:
        super().__init__(
            name="interp",
            description="gather: linear interpolation of a grid field at particle positions",
            cuda_source=INTERP_CUDA,
            metal_source=INTERP_METAL,
            metal_inputs=("pos", "field", "m"),
            metal_outputs=("out",),
            rtol=1e-5,
        )

    def make_inputs(self, shape, rng):
        n = math.prod(shape)
        m = max(64, n // 4)
        pos = (rng.random(shape, dtype=np.float32) * np.float32(m - 1)).astype(np.float32)
        # float32 rounding can land a position on m - 1 exactly: keep it inside the last cell.
        np.minimum(pos, np.nextafter(np.float32(m - 1), np.float32(0)), out=pos)
        k = np.arange(m, dtype=np.float64)
        fld = (1.5 + 0.5 * np.sin(6 * np.pi * k / m)).astype(np.float32)
        return Inputs({"pos": pos, "field": fld}, {"m": int(m)}, tuple(shape))

    def reference(self, inp):
        p = inp.arrays["pos"].astype(np.float64)
        f = inp.arrays["field"].astype(np.float64)
        j = np.clip(p.astype(np.int64), 0, inp.scalars["m"] - 2)
        w = p - j
        return (1.0 - w) * f[j] + w * f[j + 1]

    def host_numpy(self, inp):
        p = inp.arrays["pos"]
        f = inp.arrays["field"]
        j = np.clip(p.astype(np.int32), 0, inp.scalars["m"] - 2)
        w = p - j.astype(np.float32)
        return (np.float32(1) - w) * f[j] + w * f[j + 1]

    def host_numba(self, inp):
        out = np.empty(inp.size, np.float32)
        _numba_functions().interp(inp.arrays["pos"].reshape(-1), inp.arrays["field"],
                                     int(inp.scalars["m"]), out)
        return out.reshape(inp.shape)

    def host_native(self, inp):
        out = _native().interp(inp.arrays["pos"].reshape(-1), inp.arrays["field"],
                               int(inp.scalars["m"]))
        return out.reshape(inp.shape)

    def cuda_args(self, dev, out, inp):
        return (dev["pos"], dev["field"], int(inp.scalars["m"]), out, int(inp.size))

    def bytes_moved(self, inp):
        return 2 * 4 * inp.size + 4 * int(inp.scalars["m"])


PUSH_CUDA = r"""
template <int NSTEPS>
__global__ void push(const float* pos, const float* vel, float dt, float* pos_out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float x = pos[i];
    const float v = vel[i];
    for (int k = 0; k < NSTEPS; ++k) { x += v * dt; }
    pos_out[i] = x;
}
"""

PUSH_METAL = """
uint i = thread_position_in_grid.x;
float x = pos[i], v = vel[i];
for (int k = 0; k < NSTEPS; ++k) { x += v * dt[0]; }
pos_out[i] = x;
"""

AXPY_CUDA = r"""
extern "C" __global__ void axpy(int n, float a, const float* x, const float* y, float* out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"""

AXPY_METAL = """
uint i = thread_position_in_grid.x;
out[i] = a[0] * x[i] + y[i];
"""

INTERP_CUDA = r"""
extern "C" __global__ void interp(const float* pos, const float* field, int m, float* out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float p = pos[i];
    int j = min(max((int)p, 0), m - 2);
    float w = p - (float)j;
    out[i] = (1.0f - w) * field[j] + w * field[j + 1];
}
"""

INTERP_METAL = """
uint i = thread_position_in_grid.x;
float p = pos[i];
int j = min(max(int(p), 0), m[0] - 2);
float w = p - float(j);
out[i] = (1.0f - w) * field[j] + w * field[j + 1];
"""

NOOP_CUDA = r"""
extern "C" __global__ void noop(float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
"""

NOOP_METAL = """
uint i = thread_position_in_grid.x;
y[i] = x[i] + 1.0f;
"""


def _numba_functions() -> Any:
    from cunumpy.cli import _runners_numba

    return _runners_numba


def _native() -> Any:
    from cunumpy.cli import _runners_native

    return _runners_native


def _workloads() -> dict[str, type[Workload]]:
    return {"push": Push, "axpy": Axpy, "interp": Interp}


WORKLOADS = ("push", "axpy", "interp")
"""The workloads the benchmark times (plus the launch overhead, measured separately)."""


def make_workload(name: str, **kwargs: Any) -> Workload:
    """A new workload object by name (kernels are compiled at its first run)."""
    return _workloads()[name](**kwargs)


# --------------------------------------------------------------------------- running
@dataclass
class RunResult:
    """One run of a workload on an engine."""

    engine: str
    workload: str
    n: int
    """Number of elements computed."""
    to_device_s: float
    kernel_s: float
    to_host_s: float
    to_device: int
    to_host: int
    bytes_to_device: int
    bytes_to_host: int
    output: np.ndarray = field(repr=False)
    details: dict[str, Any] = field(default_factory=dict)
    """Engine-specific facts about the run (Numba: variant, threading layer, threads)."""

    @property
    def total_s(self) -> float:
        return self.to_device_s + self.kernel_s + self.to_host_s


def max_relative_error(result: np.ndarray, reference: np.ndarray) -> float:
    """Largest ``|result - reference| / |reference|`` over the elements (NaN counts as inf)."""
    r = np.asarray(result, dtype=np.float64).reshape(-1)
    ref = np.asarray(reference, dtype=np.float64).reshape(-1)
    if r.shape != ref.shape:
        raise ValueError(f"result has {r.size} elements, the reference {ref.size}")
    if r.size == 0:
        return 0.0
    denom = np.maximum(np.abs(ref), np.finfo(np.float64).tiny)
    err = np.abs(r - ref) / denom
    err[~np.isfinite(r)] = np.inf
    return float(err.max())


def _mlx_eval(*arrays: Any) -> None:
    import mlx.core as mx

    mx.eval(*arrays)


def run(workload: Workload, engine: str, inp: Inputs) -> RunResult:
    """Run ``workload`` on ``engine`` once, timing the three phases and counting transfers.

    The caller checks :func:`engine_status` first; errors of the kernel itself propagate.
    """
    import cunumpy as xp

    family = FAMILY[engine]
    clock = time.perf_counter
    with count_transfers() as c:
        if family == "host":
            t0 = clock()
            host = {"numpy": workload.host_numpy, "numba": workload.host_numba,
                    "native": workload.host_native}[engine](inp)
            t2 = clock()
            t1, t3 = t0, t2
        elif family == "cuda":
            kernel = workload.cuda_kernel("cupy" if engine == "cupy" else "emulator")
            sync = kernel.engine.synchronize
            t0 = clock()
            if engine == "cupy":
                import cupy

                dev = {k: xp.to_cupy(a) for k, a in inp.arrays.items()}
                out = cupy.empty(inp.shape, dtype=cupy.float32)
                sync(None)
            else:  # the emulator works on NumPy arrays: nothing to copy
                dev = dict(inp.arrays)
                out = np.empty(inp.shape, dtype=np.float32)
            t1 = clock()
            kernel(*workload.cuda_args(dev, out, inp), n_threads=inp.size)
            sync(None)
            t2 = clock()
            host = xp.to_numpy(out)
            t3 = clock()
        else:
            from cunumpy.kernels import metal_asarray

            eng = engine  # the engine table's name selects the Metal engine itself
            kernel = workload.metal_kernel()
            t0 = clock()
            dev = [metal_asarray(v, engine=eng) for v in workload.metal_values(inp)]
            if eng == "mlx":
                _mlx_eval(*dev)
            t1 = clock()
            out = kernel(*dev, output_shapes=[inp.shape], output_dtypes=[np.float32],
                         n_threads=inp.size, template=workload.template or None, engine=eng)
            if eng == "mlx":
                _mlx_eval(out)
            elif eng == "metal-cuda":
                import cupy

                cupy.cuda.get_current_stream().synchronize()
            t2 = clock()
            host = xp.to_numpy(out)
            t3 = clock()
    details = _numba_functions().describe(inp.size) if engine == "numba" else {}
    return RunResult(
        engine=engine,
        workload=workload.name,
        n=inp.size,
        to_device_s=t1 - t0,
        kernel_s=t2 - t1,
        to_host_s=t3 - t2,
        to_device=c.to_device,
        to_host=c.to_host,
        bytes_to_device=c.bytes_to_device,
        bytes_to_host=c.bytes_to_host,
        output=np.asarray(host).reshape(inp.shape),
        details=details,
    )
