"""The disk cache: hits across processes, verification, permissions, concurrent publishing."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from cunumpy.emulation import _cache, metal
from cunumpy.emulation._cache import CacheCorruptWarning, cache_root, clear_cache
from cunumpy.emulation.errors import UnsafeCacheError
from cunumpy.emulation.metal import run_metal

SRC = "uint i = thread_position_in_grid.x; y[i] = x[i] * {k}.0f;"

CHILD = textwrap.dedent(
    """
    import sys
    import numpy as np
    from cunumpy._lang.metal_signature import ArgSpec, MetalSignature, build_params
    from cunumpy.emulation import _build
    from cunumpy.emulation.metal import run_metal

    if sys.argv[2] == "no-compile":
        def refuse(*args, **kwargs):
            raise AssertionError("the compiler ran although the kernel is cached")
        _build._run = refuse
    src = "uint i = thread_position_in_grid.x; y[i] = x[i] * {k}.0f;".replace("{k}", sys.argv[1])
    x = np.arange(64, dtype=np.float32)
    y = np.empty_like(x)
    params = build_params(src, [ArgSpec("x", x.dtype, x.shape)], [ArgSpec("y", y.dtype, y.shape)],
                          False)
    sig = MetalSignature("scale", "custom_kernel_scale", params, (), src, "")
    run_metal(sig, [x], [y], (64, 1, 1), (32, 1, 1))
    assert np.array_equal(y, x * float(sys.argv[1]))
    print("ok")
    """
)


def _sig(metal_sig, k: int):
    x = np.arange(64, dtype=np.float32)
    y = np.empty_like(x)
    return metal_sig("scale", SRC.replace("{k}", str(k)), [("x", x)], [("y", y)]), x, y


def _run(metal_sig, k: int) -> None:
    sig, x, y = _sig(metal_sig, k)
    run_metal(sig, [x], [y], (64, 1, 1), (32, 1, 1))
    np.testing.assert_array_equal(y, x * k)


def _entries(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.glob("emu-*/emu-metal/*/*/kernel.so"))


def _child(root: Path, k: int, mode: str = "compile") -> subprocess.Popen:
    env = {**os.environ, "CUNUMPY_CACHE_DIR": str(root)}
    return subprocess.Popen([sys.executable, "-c", CHILD, str(k), mode], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_second_process_hits_the_cache(metal_sig, private_cache):
    _run(metal_sig, 3)
    entries = _entries(private_cache)
    assert len(entries) == 1
    meta = (entries[0] / "meta.json").read_text()
    for field in ("artifact_sha256", "compiler_version", "flags", "isa", "checks", "headers"):
        assert field in meta
    child = _child(private_cache, 3, "no-compile")
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert out.strip() == "ok"
    assert _entries(private_cache) == entries


def test_same_process_reuses_loaded_library(metal_sig, private_cache, monkeypatch):
    _run(metal_sig, 4)
    from cunumpy.emulation import _build

    def refuse(*args, **kwargs):
        raise AssertionError("disk touched")

    monkeypatch.setattr(_cache, "get_or_build", refuse)
    monkeypatch.setattr(_build, "_run", refuse)
    _run(metal_sig, 4)


def test_checks_flag_and_source_are_in_the_key(metal_sig, private_cache):
    from cunumpy.emulation._options import EmulatorOptions

    sig, x, y = _sig(metal_sig, 5)
    run_metal(sig, [x], [y], (64, 1, 1), (32, 1, 1))
    run_metal(sig, [x], [y], (64, 1, 1), (32, 1, 1), options=EmulatorOptions(checks=False))
    _run(metal_sig, 6)
    assert len(_entries(private_cache)) == 3


def test_corrupt_entry_is_a_miss_with_a_warning(metal_sig, private_cache):
    _run(metal_sig, 7)
    (entry,) = _entries(private_cache)
    lib = entry / "kernel.so"
    data = bytearray(lib.read_bytes())
    data[len(data) // 2] ^= 0xFF
    lib.unlink()  # a new file: the loaded copy stays mapped
    lib.write_bytes(bytes(data))
    metal.forget_variants()
    with pytest.warns(CacheCorruptWarning, match="corrupt"):
        _run(metal_sig, 7)
    (entry2,) = _entries(private_cache)
    assert entry2 == entry
    assert _cache._verify(entry2, entry2.name, "kernel.so")
    (entry / "meta.json").write_text("{not json")
    metal.forget_variants()
    with pytest.warns(CacheCorruptWarning):
        _run(metal_sig, 7)


def test_group_writable_cache_is_refused(metal_sig, private_cache):
    _run(metal_sig, 8)
    (entry,) = _entries(private_cache)
    os.chmod(entry, 0o777)
    metal.forget_variants()
    with pytest.raises(UnsafeCacheError, match="writable by group or others"):
        _run(metal_sig, 8)
    os.chmod(entry, 0o700)
    os.chmod(private_cache, 0o775)
    metal.forget_variants()
    with pytest.raises(UnsafeCacheError, match=r"chmod go-w"):
        _run(metal_sig, 8)
    os.chmod(private_cache, 0o700)


def test_root_is_private(tmp_path, monkeypatch):
    root = tmp_path / "new" / "root"
    assert cache_root(root) == root.resolve()
    assert (root.stat().st_mode & 0o777) == 0o700
    monkeypatch.setenv("CUNUMPY_CACHE_DIR", str(tmp_path / "env"))
    assert cache_root() == (tmp_path / "env").resolve()


def test_concurrent_builds_of_one_kernel(private_cache):
    children = [_child(private_cache, 11) for _ in range(3)]
    for c in children:
        out, err = c.communicate(timeout=300)
        assert c.returncode == 0, err
        assert out.strip() == "ok"
    assert len(_entries(private_cache)) == 1
    leftovers = [p for p in private_cache.rglob(".build-*")]
    assert leftovers == []


def test_clear_cache_removes_only_its_own_directories(metal_sig, private_cache):
    _run(metal_sig, 12)
    other = private_cache / "someone-else"
    other.mkdir()
    assert clear_cache() == 1
    assert other.exists()
    assert _entries(private_cache) == []
