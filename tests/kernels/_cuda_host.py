"""The metal-cuda engine on the host: its generated CUDA translation units compiled by g++ and run.

``install(monkeypatch)`` puts the recording CuPy stand-in of ``tests/engines/_fake_cupy.py`` in
``sys.modules``, with ``RawModule`` replaced: the CUDA text the engine generates is compiled with
g++ against ``cuda_host/cn_cuda_host.h`` (CUDA's qualifiers, threads, barriers, warp functions
and atomics on the host; the runtime headers are the ones NVRTC compiles) and launched with the
engine's own arguments, as ``cuLaunchKernel`` takes them (one pointer per parameter, to its
value). So the whole ``metal-cuda`` path of a ``MetalLibrary`` call runs here: the front end,
the engine's binding and copies, the translation, and the kernel itself. What it cannot show is
NVRTC's own view of the text (its dialect, its ``-default-device`` rules, the GPU's warps): the
``metal-cuda`` cases of the ``metal_engine`` fixture do, on a GPU (``tools/gpu_mlengines.sh``).

Compiled libraries are kept under the system's temporary folder, by a digest of the text and of
the stand-in header, so a second run compiles nothing.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
STANDIN = HERE / "cuda_host" / "cn_cuda_host.h"
RUNTIME = HERE.parents[1] / "src" / "cunumpy" / "emulation" / "runtime"
sys.path.insert(0, str(HERE.parent / "engines"))

import _fake_cupy  # noqa: E402  (the recording stand-in this module extends)

LAUNCHER = """
extern "C" void cn_host_run(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                            unsigned bz, unsigned long shared, void** params) {
  cn_host::launch(&cn_user::cn_metal_kernel, {gx, gy, gz}, {bx, by, bz}, shared, params);
}
"""


def _cache_dir() -> Path:
    path = Path(tempfile.gettempdir()) / f"cn-cuda-host-{os.getuid()}"
    path.mkdir(exist_ok=True)
    return path


def compile_host(code: str) -> ctypes.CDLL:
    """``code`` (a metal-cuda translation unit) compiled for the host and loaded."""
    digest = hashlib.sha256((code + STANDIN.read_text()).encode()).hexdigest()[:24]
    out = _cache_dir() / f"{digest}.so"
    if not out.exists():
        src = _cache_dir() / f"{digest}.cu"
        src.write_text(code + LAUNCHER)
        cxx = os.environ.get("CXX") or shutil.which("g++") or "c++"
        tmp = out.with_suffix(f".{os.getpid()}.tmp")
        cmd = [cxx, "-std=c++17", "-O1", "-shared", "-fPIC", "-pthread", "-w", "-x", "c++",
               "-include", str(STANDIN), f"-I{RUNTIME}", str(src), "-o", str(tmp)]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            raise _fake_cupy.CompileException(done.stderr)
        os.replace(tmp, out)
    return ctypes.CDLL(str(out))


class _Global:
    def __init__(self, ptr: int) -> None:
        self.ptr = ptr


class _HostFunction:
    """A ``cupy.cuda.function.Function`` that runs the unit on the host."""

    def __init__(self, cupy, lib: ctypes.CDLL, code: str) -> None:
        self._cupy, self._lib, self.code = cupy, lib, code

    def __call__(self, grid, block, args, shared_mem=0, stream=None):
        self._cupy.launches.append((self.code, grid, block, args))
        params = (ctypes.c_void_p * max(len(args), 1))()
        keep = []
        for i, a in enumerate(args):
            if isinstance(a, _fake_cupy.CPointer):
                params[i] = a.ptr
                continue
            if isinstance(a, _fake_cupy.ndarray):
                value = np.array([a.data.ptr], dtype=np.uintp)
            elif isinstance(a, np.generic):
                value = np.array([a])
            else:
                raise TypeError(f"the host stand-in cannot pass {type(a).__name__}")
            keep.append(value)
            params[i] = value.ctypes.data
        g = tuple(grid) + (1,) * (3 - len(grid))
        b = tuple(block) + (1,) * (3 - len(block))
        self._lib.cn_host_run(*(ctypes.c_uint(int(v)) for v in (*g, *b)),
                              ctypes.c_ulong(int(shared_mem)), params)


def install(monkeypatch):
    """The CuPy stand-in whose ``RawModule`` runs the generated units on the host."""
    cupy = _fake_cupy.install(monkeypatch)

    class RawModule:
        def __init__(self, code, options=(), name_expressions=()):
            self.code, self.options = code, options
            self._lib = None

        def _load(self) -> ctypes.CDLL:
            if self._lib is None:
                self._lib = compile_host(self.code)
            return self._lib

        def get_function(self, name):
            raw = _fake_cupy._Raw(cupy, self.code)
            raw.kernel = _HostFunction(cupy, self._load(), self.code)
            return raw

        def get_global(self, name):
            return _Global(ctypes.addressof(ctypes.c_longlong.in_dll(self._load(), name)))

    cupy.RawModule = RawModule
    cupy.cuda.runtime.memcpyDeviceToHost = 2
    cupy.cuda.runtime.memcpy = lambda dst, src, size, kind: ctypes.memmove(dst, src, size)
    return cupy
