"""The PyTorch drop-in: ``torch.mps.compile_shader`` on CPU tensors, with PyTorch's rules."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="needs PyTorch's CPU wheel (torch==2.13.0+cpu)")

SOURCE = r"""
#include <c10/metal/utils.h>
kernel void full(device float* out, constant float& val, uint idx [[thread_position_in_grid]]) {
    out[idx] = val;
}
kernel void add(device float* out, device const float* a, device const float* b,
                constant uint& n, uint i [[thread_position_in_grid]]) {
    if (i < n) out[i] = a[i] + b[i];
}
kernel void take_list(device long* out, constant long* v, constant float* f,
                      uint i [[thread_position_in_grid]]) {
    out[i] = v[i] + long(f[i]);
}
kernel void as_half(device half* out, constant half& h, uint i [[thread_position_in_grid]]) {
    out[i] = h;
}
kernel void grid2(device uint* out, uint2 pos [[thread_position_in_grid]],
                  uint2 tptg [[threads_per_threadgroup]], uint2 tpg [[threads_per_grid]]) {
    out[pos.y * tpg.x + pos.x] = tptg.x * 100 + tptg.y;
}
kernel void tile(device float* out, uint t [[thread_position_in_threadgroup]]) {
    threadgroup float s[64];
    s[t] = float(t);
    out[t] = s[t];
}
"""


@pytest.fixture(scope="module")
def lib():
    from cunumpy.testing import torch_mps_on_cpu

    with torch_mps_on_cpu():
        yield torch.mps.compile_shader(SOURCE)


def test_plugin_fixture_installs_the_drop_in(torch_mps_on_cpu):
    lib = torch.mps.compile_shader(SOURCE)
    x = torch.zeros(16)
    lib.full(x, 3.5)
    torch.mps.synchronize()  # harmless
    assert x.tolist() == [3.5] * 16


def test_dir_properties_and_missing_kernels(lib):
    assert sorted(dir(lib)) == ["add", "as_half", "full", "grid2", "take_list", "tile"]
    assert lib.full.max_threads_per_threadgroup == 1024
    assert lib.full.thread_execution_width == 32
    assert lib.tile.static_thread_group_memory_length == 256
    with pytest.raises(RuntimeError, match="Failed to create function state object for: nope"):
        _ = lib.nope


def test_tensor_storage_offset_and_int64_scalars(lib):
    a = torch.arange(10.0)
    b = torch.ones(8)
    out = torch.zeros(8)
    lib.add(out, a[2:], b, 8)  # a view binds its storage at its offset; 8 is 8 bytes of int64
    assert out.tolist() == [v + 1 for v in range(2, 10)]
    assert a.tolist() == list(map(float, range(10)))  # inputs untouched


def test_threads_default_to_the_first_tensor(lib):
    out = torch.zeros(6)
    lib.full(out[:4], 2.0)  # numel 4: only 4 threads
    assert out.tolist() == [2, 2, 2, 2, 0, 0]


def test_lists_and_arg_casts(lib):
    out = torch.zeros(3, dtype=torch.int64)
    lib.take_list(out, [1, 2, 3], [0.5, 10.0, 20.0])
    assert out.tolist() == [1, 12, 23]
    h = torch.zeros(2, dtype=torch.float16)
    lib.as_half(h, 1.5, arg_casts="fp16")
    assert h.tolist() == [1.5, 1.5]
    lib.as_half(h, 2.5, arg_casts={1: "fp16"})
    assert h.tolist() == [2.5, 2.5]
    with pytest.raises(RuntimeError, match="Unsupported cast instruction"):
        lib.as_half(h, 2.5, arg_casts="fp64")


def test_group_size_rules(lib):
    out = torch.zeros(12, dtype=torch.int32)
    lib.grid2(out, threads=[4, 3])  # 2-D default group: (1024, 1, 1), clamped to the grid
    assert set(out.tolist()) == {401}
    lib.grid2(out, threads=[4, 3], group_size=[2, 3])
    assert set(out.tolist()) == {203}
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        lib.grid2(out, threads=[4, 3], group_size=2)
    with pytest.raises(ValueError, match="exceeds 1024"):
        lib.full(torch.zeros(4), 1.0, group_size=2048)
    with pytest.raises(RuntimeError, match="Number of threads is undefined"):
        lib.full()


def test_checks_of_the_emulator_apply(lib):
    from cunumpy.emulation.errors import OutOfBoundsError

    out = torch.zeros(4)
    with pytest.raises(OutOfBoundsError, match="argument 'out'"):
        lib.full(out, 1.0, threads=8)


def test_missing_torch_names_the_wheel(monkeypatch):
    import builtins

    from cunumpy.testing import _torch_mps

    real = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name == "torch":
            raise ImportError("No module named 'torch'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    with pytest.raises(ImportError, match=r"torch==2\.13\.0\+cpu"):
        with _torch_mps.torch_mps_on_cpu():
            pass
