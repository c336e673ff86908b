"""The policy that pins repeatedly used ``to_numpy(out=...)`` destinations (cunumpy._pinning),
run against recording callables instead of the CUDA runtime."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from cunumpy._pinning import Pinned


class Runtime:
    def __init__(self, fail: bool = False) -> None:
        self.registered: dict[int, int] = {}
        self.calls: list[tuple[str, int]] = []
        self.fail = fail

    def register(self, address: int, nbytes: int) -> None:
        self.calls.append(("register", address))
        if self.fail:
            raise RuntimeError("cudaErrorHostMemoryAlreadyRegistered")
        assert address not in self.registered
        self.registered[address] = nbytes

    def unregister(self, address: int) -> None:
        self.calls.append(("unregister", address))
        del self.registered[address]


def _pinned(rt: Runtime, **kw) -> Pinned:
    return Pinned(rt.register, rt.unregister, min_bytes=1 << 16, **kw)


def test_an_array_is_pinned_the_second_time_it_is_a_destination() -> None:
    rt = Runtime()
    p = _pinned(rt)
    out = np.empty(1 << 16, np.float32)
    assert not p.prepare(out)
    assert rt.calls == []
    assert p.prepare(out)
    assert rt.registered == {out.ctypes.data: out.nbytes}
    assert p.prepare(out) and len(rt.calls) == 1  # pinned once
    assert p.pinned_bytes == out.nbytes


def test_an_array_is_unpinned_when_its_memory_is_freed() -> None:
    rt = Runtime()
    p = _pinned(rt)
    out = np.empty(1 << 16, np.float32)
    view = out[:]  # a view keeps the owner alive
    p.prepare(view)
    assert p.prepare(view)
    address = out.ctypes.data
    del out
    gc.collect()
    assert rt.registered  # still alive through the view
    del view
    gc.collect()
    assert rt.registered == {} and rt.calls[-1] == ("unregister", address)
    assert p.pinned_bytes == 0


def test_a_new_array_at_a_reused_address_starts_over() -> None:
    rt = Runtime()
    p = _pinned(rt)
    first = np.empty(1 << 16, np.float32)
    p.prepare(first)
    address = first.ctypes.data
    del first
    gc.collect()
    second = np.empty(1 << 16, np.float32)
    if second.ctypes.data == address:  # the allocator gave the memory back: not the same array
        assert not p.prepare(second)
    assert p.prepare(second)


@pytest.mark.parametrize("make", [
    lambda: np.empty(1 << 10, np.float32),                 # below min_bytes
    lambda: np.empty((1 << 10, 64), np.float32).T,         # not C-contiguous
    lambda: np.empty(1 << 16, np.float32)[::2],            # strided
], ids=["small", "transposed", "strided"])
def test_unsuitable_destinations_are_never_pinned(make) -> None:
    rt = Runtime()
    p = _pinned(rt)
    out = make()
    assert not p.prepare(out) and not p.prepare(out)
    assert rt.calls == []


def test_the_cap_and_a_refusal_are_respected() -> None:
    rt = Runtime()
    p = _pinned(rt, cap_bytes=1 << 18)
    a, b = np.empty(1 << 16, np.float32), np.empty(1 << 16, np.float32)  # 256 KiB each
    p.prepare(a), p.prepare(b)
    assert p.prepare(a)
    assert not p.prepare(b)  # over the cap
    failing = Runtime(fail=True)
    q = _pinned(failing)
    c = np.empty(1 << 16, np.float32)
    q.prepare(c)
    assert not q.prepare(c) and not q.prepare(c)
    assert failing.calls == [("register", c.ctypes.data)]  # never tried again
    p.release_all()
    assert rt.registered == {} and p.pinned_bytes == 0
