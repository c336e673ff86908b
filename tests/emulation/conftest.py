"""Fixtures of the emulator tests.

Most tests share the session's cache (set in tests/conftest.py), so a kernel compiled by one test
is loaded, not recompiled, by the next. Tests of the cache itself take ``private_cache``: a fresh
root for that test only, with the in-process memory of loaded libraries cleared around it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from cunumpy._lang.metal_signature import ArgSpec, MetalSignature, build_params
from cunumpy.emulation import CompilerNotFoundError, find_compiler


def _have_compiler() -> bool:
    try:
        find_compiler()
    except CompilerNotFoundError:
        return False
    return True


if not _have_compiler():  # pragma: no cover - depends on the machine
    pytest.skip("no C++ compiler for the emulators", allow_module_level=True)


def make_signature(
    name: str,
    source: str,
    inputs: Sequence[tuple[str, Any]],
    outputs: Sequence[tuple[str, Any]],
    *,
    header: str = "",
    template: Sequence[tuple[str, Any]] = (),
    atomic_outputs: bool = False,
) -> MetalSignature:
    """A MetalSignature as MLX would declare it for these (name, array) pairs."""
    ins = [ArgSpec(n, np.asarray(a).dtype, np.asarray(a).shape) for n, a in inputs]
    outs = [ArgSpec(n, a.dtype, a.shape) for n, a in outputs]
    params = build_params(source, ins, outs, atomic_outputs)
    return MetalSignature(name, f"custom_kernel_{name}", params, tuple(template), source, header)


@pytest.fixture
def metal_sig():
    """The :func:`make_signature` helper."""
    return make_signature


@pytest.fixture(scope="session")
def _session_pch():
    """The session cache, with its precompiled runtime header and runtime object built."""
    from cunumpy.emulation import _build, _cache

    root = _cache.cache_root()
    for header in ("cn_metal.h", "cn_cuda.h"):
        _build._prebuilt(root, find_compiler(), _build.compile_flags(), header)
    _build.wait_for_pch()
    return root


@pytest.fixture
def private_cache(tmp_path, monkeypatch, _session_pch):
    """A fresh cache root for this test (CUNUMPY_CACHE_DIR), with in-process memos cleared.

    The precompiled runtime header and the runtime object are copied from the session cache
    (they are keyed like any entry), so that each test does not spend seconds rebuilding them.
    """
    import shutil

    from cunumpy.emulation import metal

    root = tmp_path / "cache"
    for entry in (*_session_pch.glob("emu-*/pch"), *_session_pch.glob("emu-*/runtime")):
        # Not the temporary directory of a build another test worker has under way.
        shutil.copytree(entry, root / entry.parent.name / entry.name,
                        ignore=shutil.ignore_patterns(".build-*"))
    monkeypatch.setenv("CUNUMPY_CACHE_DIR", str(root))
    metal.forget_variants()
    yield root
    from cunumpy.emulation._build import wait_for_pch

    wait_for_pch()  # a background build must not outlive the test's directory
    metal.forget_variants()
