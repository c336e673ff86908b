"""``cupy.cuda`` of the stand-in: one in-order device, its streams, events and memory pools.

Everything the stand-in runs is done when the call returns, so the device behaves as one
in-order device with every stream already synchronised: :meth:`Stream.synchronize`,
:meth:`Event.synchronize` and :meth:`Device.synchronize` return at once, ``Event.query()`` is
``True``, and :func:`get_elapsed_time` measures host time between two recorded events (a
duration of the stand-in's work, not of any GPU's). ``Device(0)`` is the only device; its
compute capability is ``"90"`` (an H200, the GPU this project's CUDA results come from).
What a CPU cannot stand in for (textures, CUDA graphs, peer access, other devices) raises
``NotImplementedError`` naming it.
"""

from __future__ import annotations

import sys
import time
from types import ModuleType
from typing import Any

from cunumpy.testing.cupy_on_cpu._memory import (
    COMPUTE_CAPABILITY,
    CUDARuntimeError,
    Device,
    MemoryPointer,
    MemoryPool,
    OutOfMemoryError,
    PinnedMemoryPool,
    _not_emulated,
    get_default_memory_pool,
    get_default_pinned_memory_pool,
    track_allocation,
)

__all__ = ["COMPUTE_CAPABILITY", "CUDARuntimeError", "Device", "Event", "ExternalStream",
           "Graph", "MemoryPointer", "MemoryPool", "OutOfMemoryError", "PinnedMemoryPool",
           "Stream", "alloc", "get_current_stream", "get_default_memory_pool",
           "get_default_pinned_memory_pool", "get_device_id", "get_elapsed_time",
           "is_available", "register", "runtime", "texture", "track_allocation"]


class Stream:
    """``cupy.cuda.Stream``: work is done when each call returns, so a stream is always idle.

    ``with stream:`` makes it current (:func:`get_current_stream`); ``Stream.null`` is the
    default stream.
    """

    null: Stream
    ptds: Stream

    def __init__(self, null: bool = False, non_blocking: bool = False, ptds: bool = False,
                 priority: int | None = None) -> None:
        self._null = bool(null)
        self.ptr = 0 if null else id(self)
        self.device_id = 0
        self.priority = priority or 0

    def synchronize(self) -> None:
        """Wait for the stream's work (done already)."""

    def done(self) -> bool:
        """Whether its work is done (always)."""
        return True

    def record(self, event: Event | None = None) -> Event:
        """Record an event on this stream."""
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event: Event) -> None:
        """Make later work wait for ``event`` (it has happened already)."""

    def add_callback(self, callback: Any, arg: Any) -> None:
        """Call ``callback(stream, status, arg)`` now: the stream's work is done."""
        callback(self, 0, arg)

    def launch_host_func(self, callback: Any, arg: Any) -> None:
        """Call ``callback(arg)`` now."""
        callback(arg)

    def use(self) -> Stream:
        """Make it the current stream."""
        _current_stream[-1] = self
        return self

    def begin_capture(self, *args: Any, **kwargs: Any) -> None:
        """CUDA graph capture: raises ``NotImplementedError``."""
        raise _not_emulated("CUDA graph capture (Stream.begin_capture)")

    def end_capture(self) -> Any:
        """CUDA graph capture: raises ``NotImplementedError``."""
        raise _not_emulated("CUDA graph capture (Stream.end_capture)")

    def is_capturing(self) -> bool:
        """Never capturing."""
        return False

    def __enter__(self) -> Stream:
        _current_stream.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _current_stream.pop()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and other.ptr == self.ptr

    def __hash__(self) -> int:
        return hash(("cupy-stand-in-stream", self.ptr))

    def __repr__(self) -> str:
        return f"<Stream {self.ptr} (device 0)>"


Stream.null = Stream(null=True)
Stream.ptds = Stream.null
ExternalStream = Stream
_current_stream: list[Stream] = [Stream.null]


def get_current_stream(device_id: int = -1) -> Stream:
    """The current stream (``Stream.null`` unless a ``with stream:`` block is open)."""
    return _current_stream[-1]


class Event:
    """``cupy.cuda.Event``: :meth:`record` notes the host time; the work before it is done."""

    def __init__(self, block: bool = False, disable_timing: bool = False,
                 interprocess: bool = False) -> None:
        if interprocess:
            raise _not_emulated("interprocess events")
        self._time: float | None = None
        self._timing = not disable_timing
        self.ptr = id(self)

    def record(self, stream: Stream | None = None) -> None:
        """Record the event on ``stream`` (the current one by default)."""
        self._time = time.perf_counter()

    def synchronize(self) -> None:
        """Wait for the event (it has happened)."""

    def query(self) -> bool:
        """Whether the event has happened (always)."""
        return True

    @property
    def done(self) -> bool:
        """Whether the event has happened (always)."""
        return True


def get_elapsed_time(start_event: Event, end_event: Event) -> float:
    """Milliseconds of host time between two recorded events (the stand-in's time, not a GPU's).

    Raises ``CUDARuntimeError`` when an event was not recorded or has timing disabled, as CUDA
    does.
    """
    for event in (start_event, end_event):
        if not event._timing:
            raise CUDARuntimeError(6, "cudaErrorInvalidResourceHandle: an event was created "
                                      "with disable_timing=True")
        if event._time is None:
            raise CUDARuntimeError(600, "cudaErrorNotReady: an event was not recorded")
    return (end_event._time - start_event._time) * 1000.0


def is_available() -> bool:
    """``cupy.cuda.is_available()``: the stand-in's one device is always there."""
    return True


def alloc(size: int) -> MemoryPointer:
    """``cupy.cuda.alloc``: ``size`` bytes of stand-in device memory."""
    import numpy

    buffer = numpy.empty(int(size), dtype=numpy.uint8)
    return MemoryPointer(buffer)


def _runtime_module() -> ModuleType:
    runtime = ModuleType("cupy.cuda.runtime", "cupy.cuda.runtime of cunumpy's CuPy stand-in.")
    runtime.CUDARuntimeError = CUDARuntimeError
    runtime.getDeviceCount = lambda: 1
    runtime.getDevice = lambda: 0
    runtime.setDevice = lambda device: Device(device).use()
    runtime.deviceSynchronize = lambda: None
    runtime.runtimeGetVersion = lambda: 12080
    runtime.driverGetVersion = lambda: 12080
    runtime.is_hip = False

    def get_device_properties(device: int) -> dict[str, Any]:
        Device(device)
        return {"name": b"cunumpy CuPy stand-in (CPU)", "major": 9, "minor": 0,
                "totalGlobalMem": 141 * 10**9, "multiProcessorCount": 132,
                "maxThreadsPerBlock": 1024, "warpSize": 32, "sharedMemPerBlock": 49152}

    runtime.getDeviceProperties = get_device_properties

    def refuse(name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            raise _not_emulated(f"cupy.cuda.runtime.{name}")

        call.__name__ = name
        return call

    for name in ("deviceCanAccessPeer", "deviceEnablePeerAccess", "createTextureObject",
                 "createSurfaceObject", "graphLaunch", "mallocHost", "hostRegister", "ipcGetMemHandle"):
        setattr(runtime, name, refuse(name))
    return runtime


runtime = _runtime_module()


def _texture_module() -> ModuleType:
    texture = ModuleType("cupy.cuda.texture", "Textures: not emulated by the CuPy stand-in.")

    def refusing(name: str) -> type:
        def init(self: Any, *args: Any, **kwargs: Any) -> None:
            raise _not_emulated(f"cupy.cuda.texture.{name} (textures)")

        return type(name, (), {"__init__": init, "__doc__": "Not emulated: raises."})

    for name in ("ChannelFormatDescriptor", "CUDAarray", "ResourceDescriptor",
                 "TextureDescriptor", "TextureObject", "SurfaceObject"):
        setattr(texture, name, refusing(name))
    return texture


texture = _texture_module()


class Graph:
    """``cupy.cuda.Graph``: CUDA graphs are not emulated (raises ``NotImplementedError``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise _not_emulated("CUDA graphs (cupy.cuda.Graph)")


memory = ModuleType("cupy.cuda.memory", "cupy.cuda.memory of cunumpy's CuPy stand-in.")
for _name, _value in {"MemoryPool": MemoryPool, "MemoryPointer": MemoryPointer,
                      "OutOfMemoryError": OutOfMemoryError, "alloc": alloc}.items():
    setattr(memory, _name, _value)
stream = ModuleType("cupy.cuda.stream", "cupy.cuda.stream of cunumpy's CuPy stand-in.")
for _name, _value in {"Stream": Stream, "Event": Event, "ExternalStream": ExternalStream,
                      "get_current_stream": get_current_stream,
                      "get_elapsed_time": get_elapsed_time}.items():
    setattr(stream, _name, _value)
device = ModuleType("cupy.cuda.device", "cupy.cuda.device of cunumpy's CuPy stand-in.")
device.Device = Device
device.get_device_id = lambda: 0


def get_device_id() -> int:
    """The current device's id (0)."""
    return 0


SUBMODULES = {"runtime": runtime, "texture": texture, "memory": memory, "stream": stream,
              "device": device}
"""``cupy.cuda.<name>`` modules, registered in ``sys.modules`` when the stand-in is installed."""


def register(prefix: str = "cupy.cuda") -> None:
    """Put this module and its submodules in ``sys.modules`` under ``prefix``."""
    sys.modules[prefix] = sys.modules[__name__]
    for name, module in SUBMODULES.items():
        sys.modules[f"{prefix}.{name}"] = module
