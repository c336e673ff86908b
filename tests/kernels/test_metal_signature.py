"""MetalSignature without MLX: the committed goldens, host-name rules, parameters, errors.

The ``golden/*.metal`` files hold MLX's own generated text (written and re-checked by
``test_metal_text_golden.py`` where MLX is installed), so these tests pin ``text()`` to MLX's
format on every machine.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from _metal_text_cases import (
    CASES,
    GOLDEN_CASES,
    GOLDEN_DIR,
    RAW_BUG_GOLDEN,
    case_by_id,
)

from cunumpy._lang.metal_signature import (
    ATTRIBUTES,
    MLX_WORKAROUND_COMMENT,
    ArgSpec,
    build_signature,
    metal_type_name,
)

F32 = np.dtype(np.float32)


def spec(name: str, shape: tuple[int, ...] = (16,), dtype=F32) -> ArgSpec:
    return ArgSpec(name, np.dtype(dtype), shape)


# --- goldens -------------------------------------------------------------------------------------


def test_every_golden_file_belongs_to_a_case() -> None:
    names = {p.stem for p in GOLDEN_DIR.glob("*.metal")}
    assert names == {c.id for c in GOLDEN_CASES} | {RAW_BUG_GOLDEN}


@pytest.mark.parametrize("case", GOLDEN_CASES, ids=lambda c: c.id)
def test_text_matches_golden_file(case) -> None:
    assert case.signature().text() == case.golden_path.read_bytes().decode("utf-8")


def test_unworked_around_text_matches_mlx_broken_golden() -> None:
    sig = case_by_id("bug_shape_two_outputs").signature(mlx_bug_workaround=False)
    golden = (GOLDEN_DIR / f"{RAW_BUG_GOLDEN}.metal").read_bytes().decode("utf-8")
    assert sig.text() == golden
    assert golden.count(") {\n") == 2


@pytest.mark.parametrize("case", [c for c in CASES if c.expect], ids=lambda c: c.id)
def test_case_expectations(case) -> None:
    sig = case.signature()
    if "kernel_name" in case.expect:
        assert sig.kernel_name == case.expect["kernel_name"]
    if "params" in case.expect:
        assert [p.name for p in sig.params] == case.expect["params"]
    if "workaround" in case.expect:
        assert sig.workaround_applied is case.expect["workaround"]


# --- host names ----------------------------------------------------------------------------------


def test_host_name_suffixes() -> None:
    sig = build_signature(
        "k", "y[0] = 0;", "",
        [spec("a", (8,)), spec("b", (7,)), spec("c", ()), spec("d", (0,)), spec("e", (2, 4)),
         spec("f", (1,), np.int16)],
        [spec("y", (1,), np.uint8), spec("z", (), np.float16)],
    )
    assert sig.kernel_name == "custom_kernel_k_float_floatc_floats_floatc_float_int16_tc_uint8_t_float16_t"


@pytest.mark.parametrize(
    ("template", "suffix", "arguments", "declaration"),
    [
        ((("T", np.float32),), "__float", "<float>", "template <typename T>\n"),
        ((("N", 7),), "__7", "<7>", "template <int N>\n"),
        ((("N", -7),), "___7", "<-7>", "template <int N>\n"),
        ((("B", True), ("C", False)), "__1_0", "<1, 0>", "template <bool B, bool C>\n"),
        ((("T", np.uint64),), "__uint64_t", "<uint64_t>", "template <typename T>\n"),
        ((("A", np.complex64), ("N", 2**31 - 1), ("M", -(2**31)), ("B", True)),
         "__complex64_t_2147483647__2147483648_1", "<complex64_t, 2147483647, -2147483648, 1>",
         "template <typename A, int N, int M, bool B>\n"),
    ],
)
def test_template_rendering(template, suffix, arguments, declaration) -> None:
    sig = build_signature("t", "y[0] = 0;", "", [spec("x")], [spec("y")], template=template)
    assert sig.template_declaration() == declaration
    assert sig.kernel_name == f"custom_kernel_t{suffix}_float_float"
    assert sig.template_arguments() == arguments
    assert sig.text().startswith(declaration + f"[[kernel]] void {sig.kernel_name}(\n")
    assert sig.text().endswith(
        f'\ntemplate [[host_name("{sig.kernel_name}")]] [[kernel]] '
        f"decltype({sig.kernel_name}{arguments}) {sig.kernel_name}{arguments};\n"
    )


def test_template_values_are_normalised() -> None:
    sig = build_signature(
        "t", "", "", [spec("x")], [spec("y")],
        template=[("N", np.int64(3)), ("B", np.True_), ("T", np.float16), ("U", F32)],
    )
    assert sig.template == (("N", 3), ("B", True), ("T", np.dtype(np.float16)), ("U", F32))
    assert type(sig.template[0][1]) is int and type(sig.template[1][1]) is bool
    assert sig.template_arguments() == "<3, 1, float16_t, float>"


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        (1.5, TypeError, "not a NumPy dtype, an int or a bool"),
        ("float32", TypeError, "not a NumPy dtype"),
        (2**31, ValueError, "32-bit"),
        (-(2**31) - 1, ValueError, "32-bit"),
        (np.complex128, TypeError, "complex128 has no Metal type"),
        (None, TypeError, "NoneType"),
    ],
)
def test_template_value_errors(value, error, match) -> None:
    with pytest.raises(error, match=match) as info:
        build_signature("tk", "", "", [spec("x")], [spec("y")], template=[("N", value)])
    assert "[metal kernel 'tk']" in str(info.value)


def test_template_name_and_shape_errors() -> None:
    with pytest.raises(ValueError, match="not a valid identifier"):
        build_signature("tk", "", "", [], [spec("y")], template=[("2N", 1)])
    with pytest.raises(TypeError, match="pairs"):
        build_signature("tk", "", "", [], [spec("y")], template=[("N",)])


def test_no_outputs_is_refused() -> None:
    with pytest.raises(ValueError, match=r"\[metal kernel 'k'\] needs at least one output"):
        build_signature("k", "", "", [spec("x")], [])


# --- parameters ----------------------------------------------------------------------------------


def test_parameter_declarations_and_buffers() -> None:
    sig = build_signature(
        "p",
        "x_shape x_strides x_ndim s_shape thread_index_in_simdgroup grid_size",
        "",
        [spec("x", (3, 4)), spec("s", (), np.int32), spec("c", (2,))],
        [spec("y"), spec("z", (4,), np.int64)],
        atomic_outputs=True,
    )
    assert [p.declaration() for p in sig.params] == [
        "const device float* x [[buffer(0)]]",
        "const constant int* x_shape [[buffer(1)]]",
        "const constant int64_t* x_strides [[buffer(2)]]",
        "const constant int& x_ndim [[buffer(3)]]",
        "const constant int32_t& s [[buffer(4)]]",
        "const constant float* c [[buffer(5)]]",
        "device atomic<float>* y [[buffer(6)]]",
        "device atomic<int64_t>* z [[buffer(7)]]",
        "uint3 grid_size [[grid_size]]",
        "uint thread_index_in_simdgroup [[thread_index_in_simdgroup]]",
    ]
    assert [p.arg for p in sig.params] == [0, 0, 0, 0, 1, 2, 0, 1, None, None]
    assert [p.kind for p in sig.params] == [
        "input", "shape", "strides", "ndim", "input", "input", "output", "output",
        "attribute", "attribute",
    ]


@pytest.mark.parametrize(("name", "ctype"), ATTRIBUTES)
def test_each_attribute_alone(name, ctype) -> None:
    sig = build_signature("a", f"(void){name};", "", [spec("x")], [spec("y")])
    declared = {p.name: p.ctype for p in sig.params if p.kind == "attribute"}
    assert declared[name] == ctype
    # Plain substring search: a longer attribute name also declares the names inside it.
    assert set(declared) == {other for other, _ in ATTRIBUTES if other in name}


def test_attribute_order_is_mlx_order_not_body_order() -> None:
    body = "threads_per_threadgroup; grid_origin; thread_position_in_grid;"
    sig = build_signature("o", body, "", [spec("x")], [spec("y")])
    assert [p.name for p in sig.params][2:] == [
        "grid_origin", "thread_position_in_grid", "threads_per_threadgroup",
    ]


# --- the MLX bug workaround ----------------------------------------------------------------------


def test_workaround_condition() -> None:
    def sig(source, outs=2, shape=(16,), **kw):
        outputs = [spec(f"y{k}") for k in range(outs)]
        return build_signature("b", source, "", [spec("x", shape)], outputs, **kw)

    assert sig("x_shape[0];").workaround_applied
    assert sig("x_strides[0];", outs=3).workaround_applied
    assert sig("x_ndim;", atomic_outputs=True).workaround_applied
    assert not sig("x_shape[0];", outs=1).workaround_applied  # one output: MLX is right
    assert not sig("x_shape[0]; grid_size;").workaround_applied  # an attribute closes the list
    assert not sig("x[0];").workaround_applied  # no shape buffer
    assert not sig("x_shape[0];", shape=()).workaround_applied  # 0-d: no shape buffer


def test_workaround_text() -> None:
    body = "y0[0] = x_shape[0]; y1[0] = 0;"
    sig = build_signature("b", body, "", [spec("x")], [spec("y0"), spec("y1")])
    assert sig.source == body + MLX_WORKAROUND_COMMENT
    assert sig.user_source == body
    assert not sig.mlx_would_close_early()
    assert sig.text().count(") {\n") == 1
    assert sig.params[-1].name == "thread_position_in_grid"
    raw = build_signature("b", body, "", [spec("x")], [spec("y0"), spec("y1")],
                          mlx_bug_workaround=False)
    assert raw.source == raw.user_source == body
    assert raw.mlx_would_close_early()
    assert raw.text().count(") {\n") == 2


def test_workaround_comment_names_one_attribute_and_no_shape_suffix() -> None:
    comment = MLX_WORKAROUND_COMMENT
    assert comment.startswith("\n//") and "\n" not in comment[1:]
    assert [name for name, _ in ATTRIBUTES if name in comment] == ["thread_position_in_grid"]
    for suffix in ("_shape", "_strides", "_ndim"):
        assert suffix not in comment


# --- type names ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "name"),
    [
        (np.bool_, "bool"), (np.uint8, "uint8_t"), (np.uint16, "uint16_t"),
        (np.uint32, "uint32_t"), (np.uint64, "uint64_t"), (np.int8, "int8_t"),
        (np.int16, "int16_t"), (np.int32, "int32_t"), (np.int64, "int64_t"),
        (np.float16, "float16_t"), (np.float32, "float"), (np.float64, "double"),
        (np.complex64, "complex64_t"), ("float32", "float"),
    ],
)
def test_metal_type_name(dtype, name) -> None:
    assert metal_type_name(dtype) == name


@pytest.mark.parametrize("dtype", [np.complex128, np.str_, object, "datetime64[s]", np.void])
def test_metal_type_name_errors(dtype) -> None:
    with pytest.raises(TypeError, match="has no Metal type"):
        metal_type_name(dtype)


def test_metal_type_name_not_a_dtype() -> None:
    with pytest.raises(TypeError, match="not a NumPy dtype"):
        metal_type_name("no-such-dtype")


def test_input_dtype_error_propagates() -> None:
    with pytest.raises(TypeError, match="complex128"):
        build_signature("k", "", "", [spec("x", dtype=np.complex128)], [spec("y")])


# --- the mlx engine without MLX ------------------------------------------------------------------


def test_engine_imports_without_mlx() -> None:
    code = (
        "import sys\n"
        "import cunumpy._engines.mlx, cunumpy._lang.metal_signature\n"
        "assert 'mlx' not in sys.modules and 'mlx.core' not in sys.modules, sorted(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_engine_import_error_names_install_command(monkeypatch) -> None:
    from cunumpy._engines import mlx as _metal_mlx

    monkeypatch.setitem(sys.modules, "mlx", None)
    monkeypatch.setitem(sys.modules, "mlx.core", None)
    with pytest.raises(ImportError, match=r"pip install 'cunumpy\[metal\]'"):
        _metal_mlx.mx_dtype(np.float32)
    _metal_mlx.clear_kernel_cache()
    case = case_by_id("scale")
    sig = case.signature()
    with pytest.raises(ImportError, match=r"pip install 'cunumpy\[metal\]'"):
        _metal_mlx.launch_mlx(
            sig, sig.source, ["x", "a"], ["y"], "", [], [(1024,)], [F32], (1024, 1, 1),
            (256, 1, 1), template=(), init_value=None, atomic_outputs=False,
            ensure_row_contiguous=True,
        )


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"source_for_mlx": "y[0] = 0;"}, "source given to MLX differs"),
        ({"header": "// x\n"}, "header given to MLX differs"),
        ({"input_names": ["x"]}, "input names"),
        ({"output_names": ["out"]}, "output names"),
        ({"template": [("N", 1)]}, "template"),
        ({"atomic_outputs": True}, "atomic_outputs"),
    ],
)
def test_engine_refuses_arguments_that_disagree_with_signature(change, match) -> None:
    from cunumpy._engines import mlx as _metal_mlx

    sig = case_by_id("scale").signature()
    args = {
        "source_for_mlx": sig.source, "input_names": ["x", "a"], "output_names": ["y"],
        "header": "", "template": (), "atomic_outputs": False,
    }
    args.update(change)
    with pytest.raises(ValueError, match=match) as info:
        _metal_mlx.launch_mlx(
            sig, args["source_for_mlx"], args["input_names"], args["output_names"],
            args["header"], [], [(1024,)], [F32], (1024, 1, 1), (256, 1, 1),
            template=args["template"], init_value=None, atomic_outputs=args["atomic_outputs"],
            ensure_row_contiguous=True,
        )
    assert str(info.value).startswith("[mlx kernel 'scale']")


def test_engine_refusal_hints_at_workaround() -> None:
    from cunumpy._engines import mlx as _metal_mlx

    case = case_by_id("bug_shape_two_outputs")
    sig = case.signature()
    with pytest.raises(ValueError, match="pass signature.source"):
        _metal_mlx.launch_mlx(
            sig, case.source, ["x"], ["y", "z"], "", [], [(1,), (1,)], [F32, F32], (1, 1, 1),
            (1, 1, 1), template=(), init_value=None, atomic_outputs=False,
            ensure_row_contiguous=True,
        )
