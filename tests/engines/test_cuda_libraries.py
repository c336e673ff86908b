"""The cupy engine finds cuRAND's headers for NVRTC (with a stand-in for CuPy's toolkit path)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from cunumpy._engines import _cuda_libraries as libs

_SOURCE = "#include <curand_kernel.h>\nextern \"C\" __global__ void k() {}\n"


def _cupy(path: Path | None) -> SimpleNamespace:
    return SimpleNamespace(cuda=SimpleNamespace(get_cuda_path=lambda: str(path) if path else None))


@pytest.fixture(autouse=True)
def _fresh_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(libs, "_FOUND", {})


def test_the_toolkit_directory_is_added_when_a_kernel_includes_curand(tmp_path: Path) -> None:
    inc = tmp_path / "include"
    (inc / "cccl" / "nv").mkdir(parents=True)
    (inc / "curand_kernel.h").write_text("")
    (inc / "cccl" / "nv" / "target").write_text("")
    assert libs.library_include_options(_SOURCE, _cupy(tmp_path), "k") == (
        f"-I{inc}", f"-I{inc / 'cccl'}")
    assert libs.library_include_options("int x;", _cupy(tmp_path), "k") == ()


def test_no_headers_says_what_to_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(libs, "_candidates", lambda cupy: [tmp_path])
    with pytest.raises(FileNotFoundError, match=r"\[cupy kernel 'k'\].*pip install nvidia-curand"):
        libs.library_include_options(_SOURCE, _cupy(None), "k")
