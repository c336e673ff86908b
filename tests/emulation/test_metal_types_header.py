"""cn_metal_types.h as a header: kernels compile cleanly with it, bad code is refused, the
generated header is up to date, and it works without the compiler's bit-cast builtin."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from _metal_types_helpers import _bf16_reference, _compiler

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "src" / "cunumpy" / "emulation" / "runtime"
HEADER = RUNTIME / "cn_metal_types.h"



MSL_SNIPPET = r"""
#include <cmath>  // before the header: the header must not redefine <math.h> macros
#include "cn_metal_types.h"
#define device
#define constant
#define thread
#define threadgroup
#define kernel
template <typename T, int N>
void body(const device T* inp, const constant int* inp_shape, const constant int64_t* inp_strides,
          const constant int& inp_ndim, device T* out, uint3 thread_position_in_grid,
          uint3 threads_per_grid) {
  uint elem = thread_position_in_grid.x + thread_position_in_grid.y * threads_per_grid.x;
  auto loc = elem_to_loc(elem, inp_shape, inp_strides, inp_ndim);
  T v = inp[loc];
  float4 p = float4(float(v), 1.0f, 2.0f, 3.0f);
  p.xy = p.yx * 2.0f;
  p = clamp(p, 0.0f, 1.0f) + metal::precise::exp(p.wzyx);
  out[elem] = static_cast<T>(dot(p, float4(1.0f)) + N) + Limits<T>::finite_max * T(0);
}
template void body<float, 2>(const device float*, const constant int*, const constant int64_t*,
                             const constant int&, device float*, uint3, uint3);
template void body<half, 1>(const device half*, const constant int*, const constant int64_t*,
                            const constant int&, device half*, uint3, uint3);
"""


def test_kernel_snippet_compiles_cleanly_with_address_space_macros(tmp_path: Path) -> None:
    cxx = _compiler()
    src = tmp_path / "snippet.cpp"
    src.write_text(MSL_SNIPPET)
    done = subprocess.run(
        [
            *cxx,
            "-std=c++17",
            "-c",
            "-Wall",
            "-Wextra",
            "-Werror",
            f"-I{RUNTIME}",
            str(src),
            "-o",
            str(tmp_path / "snippet.o"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]


@pytest.mark.parametrize(
    "code",
    [
        "float4 v(1.0f); v.xx = float2(1.0f);",  # repeated component is read-only
        "as_type<uint>(1.0);",  # sizes differ
        "uint a = 1; int b = 2; (void)min(a, b);",  # Metal rejects mixed signedness too
    ],
    ids=["swizzle-repeat", "as_type-size", "min-mixed-sign"],
)
def test_invalid_code_is_rejected(tmp_path: Path, code: str) -> None:
    cxx = _compiler()
    src = tmp_path / "bad.cpp"
    src.write_text(f'#include "cn_metal_types.h"\nvoid f() {{ {code} }}\n')
    done = subprocess.run(
        [*cxx, "-std=c++17", "-c", f"-I{RUNTIME}", str(src), "-o", str(tmp_path / "bad.o")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "error" in done.stderr and "bad.cpp" in done.stderr, done.stderr[-2000:]


def test_header_is_up_to_date() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "gen_metal_types.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_swizzle_reference_counts() -> None:
    text = HEADER.read_text()
    # every read swizzle of length 2..4 over 4 components exists under both name sets
    for name in ("xy", "zyx", "xxxx", "wzyx", "bgra", "rrgg", "ar"):
        assert f" {name}," in text or f", {name};" in text, name
    assert text.count("swz<T,4,") == (16 + 64 + 256) + (9 + 27 + 81)  # vec4 + vec3 lines
    assert text.count("swz<T,2,") == 4 + 8 + 16


def test_header_without_bit_cast_builtin(tmp_path: Path) -> None:
    """GCC 10 has no __builtin_bit_cast: the memcpy path must compile and convert the same."""
    cxx = _compiler()
    src = tmp_path / "nobitcast.cpp"
    src.write_text(
        '#include "cn_metal_types.h"\n#include <cstdio>\n'
        "int main() {\n"
        "  const float xs[] = {0.1f, 65519.0f, 65520.0f, 5.96e-8f, 2.98e-8f, -1.0f / 3.0f};\n"
        '  for (float x : xs) std::printf("%04x %04x %a\\n", as_type<ushort>(half(x)),\n'
        "                                  as_type<ushort>(bfloat(x)), float(half(x)));\n"
        '  std::printf("%a\\n", float(Limits<half>::finite_max));\n'
        "}\n"
    )
    exe = tmp_path / "nobitcast"
    flags = ["-std=c++17", "-DCN_NO_BIT_CAST", "-Wall", "-Wextra", f"-I{RUNTIME}"]
    done = subprocess.run(
        [*cxx, *flags, str(src), "-o", str(exe)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr[-4000:]
    lines = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()
    xs = np.array([0.1, 65519.0, 65520.0, 5.96e-8, 2.98e-8, -1.0 / 3.0], dtype=np.float32)
    with np.errstate(over="ignore"):
        halves = xs.astype(np.float16)
    assert lines[0:18:3] == [f"{v:04x}" for v in halves.view(np.uint16)]
    assert lines[1:18:3] == [f"{v:04x}" for v in _bf16_reference(xs)]
    assert [float.fromhex(v) for v in lines[2:18:3]] == [float(v) for v in halves]
    assert float.fromhex(lines[18]) == 65504.0
