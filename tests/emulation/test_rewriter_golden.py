"""Golden tests for both rewriters: the C++ translation unit each emulator generates for a few
representative kernels (``_golden_cases.py``), with and without checks, compared with the text
checked in under ``golden/cuda`` and ``golden/metal``.

A change to a rewriter or to the generated launcher shows up here as a diff of the generated
C++. When the change is intended, regenerate the files with ``CUNUMPY_REGEN_GOLDEN=1 pytest
tests/emulation/test_rewriter_golden.py`` and review the diff in version control.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import numpy as np
import pytest
from _golden_cases import CUDA, METAL

from cunumpy._lang.metal_signature import ArgSpec, MetalSignature, build_params
from cunumpy.emulation import cuda as emu_cuda
from cunumpy.emulation import metal as emu_metal
from cunumpy.kernels import CudaKernel

GOLDEN = Path(__file__).resolve().parent / "golden"
REGEN = os.environ.get("CUNUMPY_REGEN_GOLDEN") == "1"
VARIANTS = {"checked": True, "plain": False}


def _compare(path: Path, text: str) -> None:
    if REGEN:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return
    if not path.exists():
        pytest.fail(f"{path.name} is missing; create it with CUNUMPY_REGEN_GOLDEN=1")
    expected = path.read_text()
    if text != expected:
        diff = "".join(difflib.unified_diff(
            expected.splitlines(True), text.splitlines(True), f"golden/{path.name}", "generated"))
        pytest.fail(f"generated C++ differs from {path.name} (regenerate with "
                    f"CUNUMPY_REGEN_GOLDEN=1 if intended):\n{diff}")


def _cuda_source(case: dict, checks: bool) -> str:
    kwargs = {k: v for k, v in case.items() if k in ("template_args",)}
    kernel = CudaKernel(case["source"], case["name"], engine="emulator", **kwargs)
    return emu_cuda.generate_source(emu_cuda.program_for(kernel), checks=checks).source


def _metal_signature(name: str, case: dict) -> MetalSignature:
    ins = [ArgSpec(n, np.dtype(d), s) for n, d, s in case["inputs"]]
    outs = [ArgSpec(n, np.dtype(d), s) for n, d, s in case["outputs"]]
    params = build_params(case["source"], ins, outs, False)
    template = tuple((k, np.dtype(v) if isinstance(v, str) else v)
                     for k, v in case.get("template", ()))
    return MetalSignature(name, f"custom_kernel_{name}", params, template, case["source"],
                          case.get("header", ""))


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", CUDA)
def test_cuda_rewriter_golden(name: str, variant: str) -> None:
    text = _cuda_source(CUDA[name], VARIANTS[variant])
    _compare(GOLDEN / "cuda" / f"{name}.{variant}.cpp", text)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", METAL)
def test_metal_rewriter_golden(name: str, variant: str) -> None:
    generated = emu_metal.generate_source(_metal_signature(name, METAL[name]),
                                          checks=VARIANTS[variant])
    _compare(GOLDEN / "metal" / f"{name}.{variant}.cpp", generated.source)


def test_golden_files_have_a_case() -> None:
    """Every checked-in golden file belongs to a case (a renamed case leaves none behind)."""
    expected = {f"cuda/{n}.{v}.cpp" for n in CUDA for v in VARIANTS}
    expected |= {f"metal/{n}.{v}.cpp" for n in METAL for v in VARIANTS}
    found = {str(p.relative_to(GOLDEN)) for p in GOLDEN.rglob("*.cpp")}
    assert found <= expected, f"golden files without a case: {sorted(found - expected)}"


def test_generated_sources_compile_and_run() -> None:
    """The golden kernels are real: one of each dialect runs on the emulator and is right."""
    kernel = CudaKernel(CUDA["block_sum"]["source"], "block_sum", engine="emulator")
    x = np.arange(300, dtype=np.float32)
    partial = np.zeros(3, dtype=np.float32)
    kernel(np.int32(300), x, partial, grid=3, block=128)
    np.testing.assert_allclose(partial.sum(), x.sum())
    sig = _metal_signature("threadgroup_reduce", METAL["threadgroup_reduce"])
    xm = np.arange(256, dtype=np.float32)
    out = np.zeros(4, dtype=np.float32)
    emu_metal.run_metal(sig, [xm], [out], (256, 1, 1), (64, 1, 1))
    np.testing.assert_allclose(out, xm.reshape(4, 64).sum(1))
