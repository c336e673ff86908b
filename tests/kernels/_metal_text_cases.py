"""Kernels whose MLX-generated Metal text the golden tests compare with ``MetalSignature.text()``.

Shared by ``test_metal_text_golden.py`` (compares with MLX itself) and
``test_metal_signature.py`` (compares with the committed ``golden/*.metal`` files, without MLX).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from cunumpy._lang.metal_signature import ATTRIBUTES, ArgSpec, MetalSignature, build_signature

GOLDEN_DIR = Path(__file__).parent / "golden"

Array = tuple[str, str, tuple[int, ...]]
"""(name, dtype name, shape)."""


@dataclass(frozen=True)
class Case:
    """One kernel definition plus the arrays of one call."""

    id: str
    source: str
    inputs: tuple[Array, ...]
    outputs: tuple[Array, ...]
    header: str = ""
    template: tuple[tuple[str, Any], ...] = ()
    atomic_outputs: bool = False
    golden: bool = False
    """Committed as ``golden/<id>.metal`` (MLX's exact text), checked on every machine."""
    expect: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    """Facts to assert on the signature without MLX: ``kernel_name``, ``params`` (names),
    ``workaround``."""

    @property
    def name(self) -> str:
        return self.id

    def arg_specs(self) -> tuple[list[ArgSpec], list[ArgSpec]]:
        ins = [ArgSpec(n, np.dtype(d), tuple(s)) for n, d, s in self.inputs]
        outs = [ArgSpec(n, np.dtype(d), tuple(s)) for n, d, s in self.outputs]
        return ins, outs

    def signature(self, *, mlx_bug_workaround: bool = True) -> MetalSignature:
        ins, outs = self.arg_specs()
        return build_signature(
            self.name,
            self.source,
            self.header,
            ins,
            outs,
            template=self.template,
            atomic_outputs=self.atomic_outputs,
            mlx_bug_workaround=mlx_bug_workaround,
        )

    @property
    def golden_path(self) -> Path:
        return GOLDEN_DIR / f"{self.id}.metal"


F32 = "float32"
GID = "uint i = thread_position_in_grid.x;\n"

CASES: list[Case] = [
    Case(
        "scale",
        "uint i = thread_position_in_grid.x; y[i] = a[0] * x[i];",
        (("x", F32, (1024,)), ("a", F32, (1,))),
        (("y", F32, (1024,)),),
        golden=True,
        expect={
            "kernel_name": "custom_kernel_scale_float_floatc_float",
            "params": ["x", "a", "y", "thread_position_in_grid"],
        },
    ),
    Case("one_element", GID + "y[i] = x[i];", (("x", F32, (1,)),), (("y", F32, (1,)),),
         expect={"kernel_name": "custom_kernel_one_element_floatc_float"}),
    Case(
        "small_inputs",
        GID + "y[i] = x7[0] + x8[0] + k[2] + e[0];",
        (("x7", F32, (7,)), ("x8", F32, (8,)), ("k", "int32", (3,)), ("e", F32, (0,))),
        (("y", F32, (16,)),),
        expect={"kernel_name": "custom_kernel_small_inputs_floatc_float_int32_tc_floatc_float"},
    ),
    Case(
        "zero_d",
        GID + "y[i] = s * x[i] + float(n);",
        (("x", F32, (64,)), ("s", F32, ()), ("n", "int32", ())),
        (("y", F32, (64,)),),
        golden=True,
        expect={"kernel_name": "custom_kernel_zero_d_float_floats_int32_ts_float"},
    ),
    Case(
        "zero_d_no_shape_params",
        GID + "y[i] = s + s_shape[0] + s_strides[0] + s_ndim;",
        (("s", F32, ()),),
        (("y", F32, (4,)), ("z", F32, (4,))),
        expect={"params": ["s", "y", "z", "thread_position_in_grid"]},
    ),
    Case("shape_only", GID + "y[i] = x[i] * x_shape[0];", (("x", F32, (4, 8)),),
         (("y", F32, (32,)),), expect={"params": ["x", "x_shape", "y", "thread_position_in_grid"]}),
    Case("strides_only", GID + "y[i] = x[i * x_strides[0]];", (("x", F32, (4, 8)),),
         (("y", F32, (4,)),),
         expect={"params": ["x", "x_strides", "y", "thread_position_in_grid"]}),
    Case("ndim_only", GID + "y[i] = x[i] + x_ndim;", (("x", F32, (4, 8)),), (("y", F32, (32,)),),
         expect={"params": ["x", "x_ndim", "y", "thread_position_in_grid"]}),
    Case(
        "shape_strides_ndim",
        GID
        + "uint loc = elem_to_loc(i, x_shape, x_strides, x_ndim);\n"
        + "y[i] = x[loc] + w[i % w_shape[1]];",
        (("x", F32, (4, 8)), ("w", F32, (2, 3))),
        (("y", F32, (32,)),),
        golden=True,
        expect={"params": ["x", "x_shape", "x_strides", "x_ndim", "w", "w_shape", "y",
                           "thread_position_in_grid"]},
    ),
    Case(
        "name_substring",
        GID + "// xx_shape is only a comment, but MLX searches plain text\ny[i] = xx[i];",
        (("x", F32, (16,)), ("xx", F32, (16,))),
        (("y", F32, (16,)),),
        expect={"params": ["x", "x_shape", "xx", "xx_shape", "y", "thread_position_in_grid"]},
    ),
    Case(
        "header_not_searched",
        "y[0] = x[0];",
        (("x", F32, (16,)),),
        (("y", F32, (16,)),),
        header="// thread_position_in_grid x_shape x_ndim\n",
        expect={"params": ["x", "y"]},
    ),
    Case(
        "several_outputs",
        GID + "a[i] = x[i]; b[i] = int(x[i]); c[i] = half(x[i]);",
        (("x", F32, (32,)),),
        (("a", F32, (32,)), ("b", "int32", (32,)), ("c", "float16", (32,))),
        expect={"kernel_name": "custom_kernel_several_outputs_float_float_int32_t_float16_t"},
    ),
    Case(
        "several_outputs_plain",
        "a[0] = x[0]; b[0] = x[1];",
        (("x", F32, (32,)),),
        (("a", F32, (1,)), ("b", F32, (1,))),
        expect={"params": ["x", "a", "b"], "workaround": False},
    ),
    Case(
        "atomic_outputs",
        GID + "atomic_fetch_add_explicit(&h[0], x[i], memory_order_relaxed);\n"
        "atomic_fetch_add_explicit(&n[0], 1, memory_order_relaxed);",
        (("x", F32, (256,)),),
        (("h", F32, (1,)), ("n", "int32", (1,))),
        atomic_outputs=True,
        golden=True,
    ),
    Case(
        "all_dtypes",
        "o0[0] = 0;",
        tuple(
            (f"a{k}", d, (8,))
            for k, d in enumerate(
                ["bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32",
                 "int64", "float16", F32, "complex64"]
            )
        ),
        (("o0", "uint8", (1,)), ("o1", "int64", (1,)), ("o2", "complex64", (1,))),
    ),
    Case(
        "template_dtype",
        GID + "y[i] = T(x[i]);",
        (("x", F32, (16,)),),
        (("y", F32, (16,)),),
        template=(("T", np.float16),),
        expect={"kernel_name": "custom_kernel_template_dtype__float16_t_float_float"},
    ),
    Case(
        "template_int",
        GID + "float v = x[i]; for (int k = 0; k < N; ++k) { v *= 0.5f; } y[i] = v;",
        (("x", F32, (16,)),),
        (("y", F32, (16,)),),
        template=(("N", 200),),
        expect={"kernel_name": "custom_kernel_template_int__200_float_float"},
    ),
    Case(
        "template_negative_int",
        GID + "y[i] = x[i] + N;",
        (("x", F32, (16,)),),
        (("y", F32, (16,)),),
        template=(("N", -12),),
        expect={"kernel_name": "custom_kernel_template_negative_int___12_float_float"},
    ),
    Case(
        "template_bools",
        GID + "y[i] = (A && !B) ? x[i] : 0.0f;",
        (("x", F32, (16,)),),
        (("y", F32, (16,)),),
        template=(("A", True), ("B", False)),
        expect={"kernel_name": "custom_kernel_template_bools__1_0_float_float"},
    ),
    Case(
        "template_mixed",
        GID + "T v = T(x[i]); if (B) { v = v * N; } y[i] = U(v);",
        (("x", F32, (16,)), ("s", F32, ())),
        (("y", F32, (16,)),),
        header="#define SCALE 2.0f\n",
        template=(("T", np.float32), ("N", 4), ("B", True), ("U", np.int32)),
        golden=True,
        expect={"kernel_name": "custom_kernel_template_mixed__float_4_1_int32_t_float_floats_float"},
    ),
    Case(
        "header",
        GID + "y[i] = twice(x[i]);",
        (("x", F32, (16,)),),
        (("y", F32, (16,)),),
        header="#include <metal_stdlib>\n\ninline float twice(float v) { return 2.0f * v; }\n",
        golden=True,
    ),
    Case(
        "header_without_newline",
        GID + "y[i] = x[i] * SCALE;",
        (("x", F32, (16,)),),
        (("y", F32, (16,)),),
        header="#define SCALE 3.0f",
        template=(("N", 1),),
        golden=True,
    ),
    Case(
        "body_whitespace",
        "\n    uint i = thread_position_in_grid.x;\n    y[i] = x[i];\n\n",
        (("x", F32, (16,)),),
        (("y", F32, (16,)),),
    ),
    Case(
        "all_attributes",
        "\n".join(f"(void){name};" for name, _ in ATTRIBUTES) + "\ny[0] = x[0];",
        (("x", F32, (16,)),),
        (("y", F32, (16,)),),
        golden=True,
        expect={"params": ["x", "y", *(name for name, _ in ATTRIBUTES)]},
    ),
    *[
        Case(f"attribute_{name}", f"(void){name};\ny[0] = x[0];", (("x", F32, (16,)),),
             (("y", F32, (16,)),))
        for name, _ in ATTRIBUTES
    ],
    # MLX's early ") {" bug: no thread attribute, two or more outputs, a shape buffer.
    Case(
        "bug_shape_two_outputs",
        "y[0] = x[0] * x_shape[0];\nz[0] = 1.0f;",
        (("x", F32, (16,)),),
        (("y", F32, (1,)), ("z", F32, (1,))),
        golden=True,
        expect={"workaround": True},
    ),
    Case(
        "bug_ndim_three_outputs_atomic",
        "atomic_store_explicit(&a[0], x_ndim, memory_order_relaxed);\n"
        "atomic_store_explicit(&b[0], w_strides[0], memory_order_relaxed);\n"
        "atomic_store_explicit(&c[0], 2, memory_order_relaxed);",
        (("x", F32, (2, 8)), ("w", "int32", (3,))),
        (("a", "int32", (1,)), ("b", "int32", (1,)), ("c", "int32", (1,))),
        atomic_outputs=True,
        expect={"workaround": True},
    ),
    Case(
        "bug_template_header",
        "for (int k = 0; k < N; ++k) { y[k] = x[k] + x_shape[0]; z[k] = T(k); }",
        (("x", F32, (16,)),),
        (("y", F32, (16,)), ("z", "int32", (16,))),
        header="// helpers\n",
        template=(("N", 16), ("T", np.int32)),
        expect={"workaround": True},
    ),
    Case(
        "bug_body_ends_in_comment",
        "y[0] = x_shape[0]; z[0] = 0; // last line is a comment",
        (("x", F32, (16,)),),
        (("y", F32, (1,)), ("z", F32, (1,))),
        expect={"workaround": True},
    ),
]

BUG_CASES = [c for c in CASES if c.expect.get("workaround")]
GOLDEN_CASES = [c for c in CASES if c.golden]
RAW_BUG_GOLDEN = "bug_shape_two_outputs_raw_mlx"
"""Golden file holding MLX's own (broken) text for the unworked-around ``bug_shape_two_outputs``."""


def case_by_id(case_id: str) -> Case:
    for case in CASES:
        if case.id == case_id:
            return case
    raise KeyError(case_id)
