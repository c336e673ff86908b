"""Kernels of whole Metal libraries (:class:`~cunumpy.kernels.MetalLibrary`) on the ``metal-cuda`` engine.

One CUDA translation unit per kernel, function-constant values and threadgroup size
(:func:`cunumpy.emulation._msl_cuda_library.translate_library`), compiled by NVRTC through
``cupy.RawModule`` (:meth:`CudaMetalEngine.nvrtc`). Before the first launch the compiled
module's ``cn_sizes`` (the ``sizeof`` of every parameter's element or value, as NVRTC computed
it) is read back, and every launch checks the buffers against it
(:func:`cunumpy._engines._library.check_buffer_sizes`), as ``emu-metal`` does.

Buffers: a CuPy array is passed in place (the kernel writes it directly); a NumPy array is copied
to the device and, if the kernel may write it (a non-const ``device`` pointer or reference),
copied back into it after the launch. NumPy arrays that share memory (two views of one buffer,
the same array bound twice) get one device copy of their union, so the kernel sees them alias as
Metal would. The bytes of ``constant T&``, by-value and ``device const T&`` parameters travel in
the launch's arguments. ``[[threadgroup(i)]]`` memory is the launch's dynamic shared memory,
each allocation at its offset. Geometry is Metal's ``dispatchThreads``: one CUDA block per
threadgroup, edge threadgroups smaller (``cn::thread_of`` in ``cn_metal_cuda.h``).
"""

from __future__ import annotations

import ctypes
import math
import threading
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from cunumpy._engines._base import Program
from cunumpy._engines._library import (
    LibraryLaunch,
    check_buffer_sizes,
    memory_groups,
    parsed,
)
from cunumpy._lang.metal_library import LibraryKernel
from cunumpy.emulation._msl_cuda import ENGINE
from cunumpy.emulation._msl_cuda_library import LibraryUnit, translate_library

__all__ = ["prepare_library"]


def _flat_bytes(a: np.ndarray) -> np.ndarray:
    """A C-contiguous array's memory as a flat uint8 view (no copy)."""
    return a.reshape(-1).view(np.uint8)


def _read_sizes(cupy: Any, module: Any, count: int) -> np.ndarray:
    """The compiled unit's ``cn_sizes`` (two int64 per parameter)."""
    host = np.zeros(max(2 * count, 1), dtype=np.int64)
    ptr = module.get_global("cn_sizes")
    runtime = cupy.cuda.runtime
    runtime.memcpy(host.ctypes.data, ptr.ptr, host.nbytes, runtime.memcpyDeviceToHost)
    return host


def _host_bytes(engine: Any, a: Any) -> np.ndarray:
    """The bytes of a value parameter (what the front end bound: NumPy bytes, or an array)."""
    host = engine.host_view(a) if engine.is_device_array(a) else np.asarray(a)
    return np.ascontiguousarray(host).reshape(-1).view(np.uint8)


def _device_buffers(cupy: Any, engine: Any, kernel: LibraryKernel, buffers: Mapping[int, Any],
                    unit: LibraryUnit) -> tuple[dict[int, Any], list[tuple[np.ndarray, Any]]]:
    """Device memory for every pointer buffer: CuPy arrays as they are, NumPy arrays copied
    (one copy per group of arrays that share memory). Returns the device argument per buffer
    index and the (host array, device memory) pairs to copy back after the launch."""
    params = {p.index: p for p in kernel.params if p.kind == "buffer"}
    device: dict[int, Any] = {}
    hosts: dict[int, np.ndarray] = {}
    for a in unit.args:
        if a.kind != "buffer":
            continue
        value = buffers[a.index]
        if engine.is_device_array(value):
            device[a.index] = value
        else:
            hosts[a.index] = np.asarray(value)
    writes: list[tuple[np.ndarray, Any]] = []
    for lo, hi, members in memory_groups(hosts):
        if len(members) == 1:
            data = _flat_bytes(hosts[members[0][0]])
        else:  # views of one memory: one device copy of their union
            data = np.ctypeslib.as_array((ctypes.c_ubyte * (hi - lo)).from_address(lo))
        dev = cupy.asarray(data.copy() if len(members) > 1 else data)
        for index, offset in members:
            host = hosts[index]
            mem = dev if len(members) == 1 else dev[offset: offset + host.nbytes]
            device[index] = mem
            if params[index].writable:
                writes.append((_flat_bytes(host), mem))
    return device, writes


def _offsets(sizes: Mapping[int, int]) -> tuple[dict[int, int], int]:
    """Offsets of the ``[[threadgroup(i)]]`` allocations in the dynamic shared memory (by index;
    Metal sizes them in multiples of 16 bytes, so each stays 16-byte aligned) and the total."""
    offsets, total = {}, 0
    for index in sorted(sizes):
        offsets[index] = total
        total += int(sizes[index])
    return offsets, total


def prepare_library(engine: Any, program: Program) -> Callable[[LibraryLaunch], None]:
    """The launch callable of one library kernel on ``engine`` (a ``CudaMetalEngine``)."""
    lib = parsed(program.source)
    kernel: LibraryKernel = program.signature
    constants = dict(program.template)
    files = dict(program.setting("files"))
    math_mode = program.setting("math_mode")
    tag = f"[{ENGINE} kernel {kernel.host_name!r}]"
    compiled: dict[tuple[int, int], tuple[Any, LibraryUnit, dict[str, tuple[int, int]]]] = {}
    lock = threading.Lock()

    def build(threads: int) -> tuple[Any, LibraryUnit, dict[str, tuple[int, int]]]:
        unit = translate_library(lib, kernel, constants, files, threads_per_group=threads)
        module, function = engine.nvrtc(unit.source, unit.name, math_mode, tag, unit.user_text)
        raw = _read_sizes(engine._module(), module, unit.params)
        sizes = {p.name: (int(raw[2 * i]), int(raw[2 * i + 1]))
                 for i, p in enumerate(kernel.params)}
        return function, unit, sizes

    def go(launch: LibraryLaunch) -> None:
        cupy = engine._module()
        from cupy.cuda.function import CPointer

        grid, threadgroup = launch.grid, launch.threadgroup
        threads = math.prod(threadgroup)
        key = (threads, cupy.cuda.runtime.getDevice())
        hit = compiled.get(key)
        if hit is None:
            with lock:
                hit = compiled.get(key)
                if hit is None:
                    hit = compiled[key] = build(threads)
        function, unit, sizes = hit
        buffers = dict(launch.buffers)
        check_buffer_sizes(tag, kernel, sizes, {i: int(a.nbytes) for i, a in buffers.items()})
        if 0 in grid:
            return
        device, writes = _device_buffers(cupy, engine, kernel, buffers, unit)
        offsets, shared = _offsets(dict(launch.threadgroup_memory))
        keep: list[np.ndarray] = []
        args: list[Any] = [engine._launch_args(grid, threadgroup)]
        for a in unit.args:
            if a.kind == "value":
                host = _host_bytes(engine, buffers[a.index])
                keep.append(host)
                args.append(CPointer(host.ctypes.data))
            elif a.kind == "buffer":
                args.append(device[a.index])
            else:
                args.append(np.uint32(offsets[a.index]))
        groups = tuple(-(-g // t) for g, t in zip(grid, threadgroup))
        function(groups, (threads, 1, 1), tuple(args), shared, launch.stream)
        for host, dev in writes:
            host[...] = cupy.asnumpy(dev)
        del keep

    return go
