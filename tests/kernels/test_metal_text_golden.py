"""Golden tests: ``MetalSignature.text()`` against the Metal text MLX itself generates.

Every case is launched through the mlx engine (``launch_mlx``) inside ``mx.export_function``
with ``verbose=True``; MLX prints the generated kernel to descriptor 1, which ``_mlx_capture``
captures (see its docstring). So these tests check three things at once: our text and host name
equal MLX's byte for byte, the engine hands MLX the right body (after the bug workaround), names,
flags and template, and the workaround gives MLX a well-formed parameter list.

Needs ``mlx`` (``pip install 'mlx[cpu]'`` on Linux x86_64, or MLX on a Mac); skipped otherwise.
Set ``CUNUMPY_REGEN_GOLDEN=1`` to rewrite ``golden/*.metal`` from MLX's output.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

try:
    import mlx.core as mx
except ImportError:  # pragma: no cover - depends on the machine
    pytest.skip(
        "MLX is not installed: the golden tests compare with MLX's own generated text "
        "(pip install 'mlx[cpu]' on Linux x86_64); the file-based goldens still run",
        allow_module_level=True,
    )

from _metal_text_cases import (
    BUG_CASES,
    CASES,
    GOLDEN_CASES,
    GOLDEN_DIR,
    RAW_BUG_GOLDEN,
    Case,
    case_by_id,
)
from _mlx_capture import Captured, capture_mlx

from cunumpy._engines import mlx as _metal_mlx
from cunumpy._engines.mlx import launch_mlx, mx_dtype, numpy_dtype
from cunumpy._lang.metal_signature import ATTRIBUTES, MetalSignature

REGEN = os.environ.get("CUNUMPY_REGEN_GOLDEN") == "1"


def _arrays(case: Case) -> list:
    return [mx.zeros(shape, dtype=mx_dtype(dtype)) for _, dtype, shape in case.inputs]


def _launch(case: Case, sig: MetalSignature, *, template=None, init_value=None):
    names_in = [n for n, _, _ in case.inputs]
    names_out = [n for n, _, _ in case.outputs]

    def fn(*arrays):
        return launch_mlx(
            sig,
            sig.source,
            names_in,
            names_out,
            case.header,
            list(arrays),
            [shape for _, _, shape in case.outputs],
            [np.dtype(d) for _, d, _ in case.outputs],
            (32, 1, 1),
            (32, 1, 1),
            template=case.template if template is None else template,
            init_value=init_value,
            atomic_outputs=case.atomic_outputs,
            ensure_row_contiguous=True,
            verbose=True,
        )

    return fn


def mlx_capture(case: Case, *, mlx_bug_workaround: bool = True) -> tuple[MetalSignature, Captured]:
    sig = case.signature(mlx_bug_workaround=mlx_bug_workaround)
    return sig, capture_mlx(_launch(case, sig), _arrays(case))


def param_lines(text: str) -> list[str]:
    """The lines after ``[[kernel]] void name(`` that declare parameters."""
    lines = text[text.index("[[kernel]] void ") :].split("\n")[1:]
    out = []
    for line in lines:
        if not (line.startswith("  ") and "[[" in line):
            break
        out.append(line)
    return out


def is_well_formed(text: str) -> bool:
    """Every parameter line but the last ends with ``,``; the last ends with ``) {``."""
    lines = param_lines(text)
    return bool(lines) and all(line.endswith(",") for line in lines[:-1]) and lines[
        -1
    ].endswith(") {")


def host_name_in(text: str) -> str:
    match = re.search(r"\[\[kernel\]\] void (\w+)\(", text)
    assert match, text
    return match.group(1)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_text_matches_mlx(case: Case) -> None:
    sig, cap = mlx_capture(case)
    assert cap.printed[0][0] == case.name
    assert cap.text == sig.text()
    assert host_name_in(cap.text) == sig.kernel_name
    if cap.stored:  # the exported file stores the host name MLX compiles under, and the text
        assert cap.stored == [(sig.kernel_name, sig.text())]
    assert is_well_formed(cap.text), cap.text
    assert len(param_lines(cap.text)) == len(sig.params)


@pytest.mark.parametrize("case", BUG_CASES, ids=lambda c: c.id)
def test_mlx_bug_reproduced_and_worked_around(case: Case) -> None:
    raw_sig, raw = mlx_capture(case, mlx_bug_workaround=False)
    # MLX's own text for the user's body is broken: ") {" closes the list more than once ...
    assert not raw_sig.workaround_applied
    assert not is_well_formed(raw.text)
    assert raw.text.count(") {\n") >= 2
    # ... and our model of MLX reproduces that text exactly, bug included.
    assert raw.text == raw_sig.text()
    assert raw_sig.mlx_would_close_early()

    sig, fixed = mlx_capture(case)
    assert sig.workaround_applied
    assert sig.source.startswith(case.source) and sig.user_source == case.source
    assert is_well_formed(fixed.text), fixed.text
    assert fixed.text.count(") {\n") == 1
    assert fixed.text == sig.text()
    assert param_lines(fixed.text)[-1] == (
        "  uint3 thread_position_in_grid [[thread_position_in_grid]]) {"
    )
    # The workaround adds that one attribute and nothing else.
    assert [p.name for p in sig.params] == [p.name for p in raw_sig.params] + [
        "thread_position_in_grid"
    ]


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=lambda c: c.id)
def test_golden_files_are_mlx_text(case: Case) -> None:
    _, cap = mlx_capture(case)
    if REGEN:
        case.golden_path.write_text(cap.text, encoding="utf-8", newline="")
    assert case.golden_path.read_bytes().decode("utf-8") == cap.text


def test_raw_bug_golden_is_mlx_text() -> None:
    _, cap = mlx_capture(case_by_id("bug_shape_two_outputs"), mlx_bug_workaround=False)
    path = GOLDEN_DIR / f"{RAW_BUG_GOLDEN}.metal"
    if REGEN:
        path.write_text(cap.text, encoding="utf-8", newline="")
    assert path.read_bytes().decode("utf-8") == cap.text


def test_capture_routes_agree() -> None:
    """The verbose print and the exported file hold the same host name and text."""
    case = case_by_id("template_mixed")
    sig, cap = mlx_capture(case)
    if not cap.stored:
        pytest.skip(f"MLX {mx.__version__} stores kernels in an .mlxfn layout this helper "
                    "does not parse; the verbose capture was still checked")
    assert cap.stored == [(sig.kernel_name, cap.text)]


def test_several_kernels_in_one_capture() -> None:
    a, b = case_by_id("scale"), case_by_id("zero_d")
    sa, sb = a.signature(), b.signature()

    def fn(*arrays):
        return _launch(a, sa)(*arrays[:2]) + _launch(b, sb)(*arrays[2:])

    cap = capture_mlx(fn, _arrays(a) + _arrays(b))
    assert cap.printed == [(a.name, sa.text()), (b.name, sb.text())]


# --- the engine itself -------------------------------------------------------------------------


def test_engine_caches_kernel_objects() -> None:
    _metal_mlx.clear_kernel_cache()
    case = case_by_id("scale")
    sig = case.signature()
    capture_mlx(_launch(case, sig), _arrays(case))
    capture_mlx(_launch(case, sig), _arrays(case))
    assert len(_metal_mlx._KERNELS) == 1
    # Another body is another kernel object.
    other = case_by_id("one_element")
    capture_mlx(_launch(other, other.signature()), _arrays(other))
    assert len(_metal_mlx._KERNELS) == 2


def test_engine_converts_numpy_template_values() -> None:
    """MLX refuses numpy scalars and dtypes as template values; the engine converts them."""
    case = case_by_id("template_mixed")
    sig = case.signature()
    template = [("T", np.dtype(np.float32)), ("N", np.int64(4)), ("B", np.True_),
                ("U", np.int32)]
    cap = capture_mlx(_launch(case, sig, template=template), _arrays(case))
    assert cap.text == sig.text()


def test_engine_passes_init_value() -> None:
    case = case_by_id("scale")
    sig = case.signature()
    cap = capture_mlx(_launch(case, sig, init_value=0.0), _arrays(case))
    assert cap.text == sig.text()


def test_mx_dtype_round_trip() -> None:
    for name in ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
                 "int64", "float16", "float32", "float64", "complex64"]:
        assert mx.zeros((1,), dtype=mx_dtype(np.dtype(name))).dtype == mx_dtype(name)
        assert np.asarray(mx.zeros((1,), dtype=mx_dtype(name))).dtype == np.dtype(name)
    with pytest.raises(TypeError, match="complex128"):
        mx_dtype(np.complex128)


@pytest.mark.skipif(
    bool(getattr(mx, "metal", None) and mx.metal.is_available()),
    reason="a Metal GPU is present, so the launch would run",
)
def test_engine_error_without_metal_names_kernel() -> None:
    case = case_by_id("scale")
    sig = case.signature()
    with pytest.raises(RuntimeError, match=r"\[mlx kernel 'scale'\] MLX could not launch "
                       r"custom_kernel_scale_float_floatc_float: .*Metal"):
        _launch(case, sig)(*_arrays(case))


def test_numpy_dtype_inverse_of_mx_dtype() -> None:
    for name in ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
                 "int64", "float16", "float32", "float64", "complex64"]:
        assert numpy_dtype(mx_dtype(name)) == np.dtype(name)
    assert numpy_dtype(mx.zeros((2,), dtype=mx.int16).dtype) == np.dtype(np.int16)
    with pytest.raises(TypeError, match="not an MLX dtype"):
        numpy_dtype("float32")


def test_numpy_dtype_bfloat16_without_ml_dtypes() -> None:
    try:
        expected = np.dtype("bfloat16")
    except TypeError:
        with pytest.raises(TypeError, match="ml_dtypes"):
            numpy_dtype(mx.bfloat16)
    else:  # ml_dtypes registered bfloat16 with NumPy
        assert numpy_dtype(mx.bfloat16) == expected


def _random_case(rng: np.random.Generator, k: int) -> Case:
    """A random kernel: arrays of random rank, size and dtype; a body naming random items."""
    dtypes = ["float32", "int32", "uint8", "float16", "int64", "bool", "complex64"]
    shapes = [(), (1,), (3,), (7,), (8,), (64,), (2, 3), (4, 4), (2, 2, 2), (0,)]
    names_in = [f"in{j}" for j in range(rng.integers(0, 4))]
    names_out = [f"out{j}" for j in range(rng.integers(1, 4))]
    words = [f"{n}_{s}" for n in names_in for s in ("shape", "strides", "ndim")]
    words += [name for name, _ in ATTRIBUTES]
    body_words = rng.choice(words, size=rng.integers(0, 5), replace=False) if words else []
    body = "".join(f"(void){w};\n" for w in body_words) + f"// random kernel {k}"
    template = []
    for j in range(rng.integers(0, 4)):
        kind = rng.integers(3)
        if kind == 0:
            template.append((f"T{j}", np.dtype(rng.choice(dtypes))))
        elif kind == 1:
            template.append((f"N{j}", int(rng.integers(-1000, 1000))))
        else:
            template.append((f"B{j}", bool(rng.integers(2))))

    def array(name):
        return (name, str(rng.choice(dtypes)), shapes[rng.integers(len(shapes))])

    return Case(
        f"random{k}",
        body,
        tuple(array(n) for n in names_in),
        tuple((n, str(rng.choice(dtypes)), (4,)) for n in names_out),
        header=["", "// header\n", "#define R 1"][rng.integers(3)],
        template=tuple(template),
        atomic_outputs=bool(rng.integers(2)),
    )


@pytest.mark.parametrize("seed", range(4))
def test_random_kernels_match_mlx(seed: int) -> None:
    """Seeded random kernels, raw (MLX's bug included) and with the workaround."""
    rng = np.random.default_rng(seed)
    for k in range(50):
        case = _random_case(rng, k)
        for workaround in (False, True):
            sig, cap = mlx_capture(case, mlx_bug_workaround=workaround)
            assert cap.text == sig.text(), (case, workaround)
            if cap.stored:
                assert cap.stored == [(sig.kernel_name, sig.text())]
            assert is_well_formed(cap.text) == (not sig.mlx_would_close_early())
            if workaround:
                assert is_well_formed(cap.text), case
