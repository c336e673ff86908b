"""The launched kernel's hidden thread parameter (emulation/_cuda_thread_param.py).

The conformance cases in ``tests/cuda_conformance/cases_builtins.py`` check the results for
each place a kernel reads the builtins; these check which kernels get the parameter (the fast
path) and which keep the plain signature, so that a change cannot turn it off unnoticed.
"""

from __future__ import annotations

import pytest

from cunumpy.emulation._cuda_rewrite import rewrite_cuda
from cunumpy.emulation._cuda_thread_param import THREAD_PARAM
from cunumpy.kernels import CudaKernel


def _rewrite(source: str, name: str = "k"):
    return rewrite_cuda(source, checks=False, kernel_name=name)


@pytest.mark.parametrize("body", [
    "int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = i;",
    "auto f = [&](int k) { return k + threadIdx.x; }; out[0] = f(n);",
    "auto f = [=, &out](int k) { return k + threadIdx.x; }; out[0] = f(n);",
    "int a[4] = {1, 2, 3, 4}; out[a[threadIdx.x % 4]] = n;",
    "[[maybe_unused]] int unused = 0; out[threadIdx.x] = n;",
], ids=["plain", "lambda-by-reference", "lambda-default-copy", "array-subscript", "attribute"])
def test_the_launched_kernel_gets_its_thread(body: str) -> None:
    rw = _rewrite('extern "C" __global__ void k(int* out, int n) {' + body + "}")
    assert rw.thread_param
    assert f"k({THREAD_PARAM}, int* out" in rw.text


@pytest.mark.parametrize("body", [
    "auto f = []() { return threadIdx.x; }; out[0] = f();",
    "auto f = [n]() { return n + threadIdx.x; }; out[0] = f();",
    "struct S { __device__ unsigned at() { return threadIdx.x; } }; out[0] = S{}.at();",
], ids=["lambda-no-captures", "lambda-named-captures", "local-struct"])
def test_kernels_that_could_not_see_the_parameter_keep_their_signature(body: str) -> None:
    rw = _rewrite('extern "C" __global__ void k(int* out, int n) {' + body + "}")
    assert not rw.thread_param
    assert "cn_this_thread" not in rw.text


def test_every_declaration_gets_it_and_others_do_not() -> None:
    rw = _rewrite(
        "__global__ void k(float* x);\n"
        "__global__ void other(float* x) { x[threadIdx.x] = 1; }\n"
        "__global__ void k(float* x) { x[threadIdx.x] = 2; }\n"
    )
    assert rw.thread_param
    assert rw.text.count(THREAD_PARAM) == 2
    assert "other(float* x)" in rw.text


def test_a_kernel_only_declared_in_the_text_keeps_its_signature() -> None:
    # Defined through a macro the rewrite does not expand: no body is found for `k`.
    rw = _rewrite("#define DEFINE(name) __global__ void name(float* x) { x[threadIdx.x] = 1; }\n"
                  "__global__ void k(float* x);\nDEFINE(k)\n")
    assert not rw.thread_param


def test_an_empty_or_void_parameter_list() -> None:
    for params in ("", "void", " void "):
        rw = _rewrite(f"__global__ void k({params}) {{ }}")
        assert f"k({THREAD_PARAM})" in rw.text


def test_a_kernel_without_parameters_runs(capfd) -> None:
    k = CudaKernel(r"""
extern "C" __global__ void hello(void) {
    if (threadIdx.x == 1) printf("block %d of %d\n", blockIdx.x, gridDim.x);
}
""", "hello", engine="emulator")
    k(grid=3, block=2)
    assert capfd.readouterr().out.splitlines() == ["block 0 of 3", "block 1 of 3", "block 2 of 3"]


def test_a_kernel_defined_through_a_macro_runs() -> None:
    import numpy as np

    k = CudaKernel(r"""
#define DEFINE(name) __global__ void name(float* x) { x[blockIdx.x * blockDim.x + threadIdx.x] = blockIdx.x; }
__global__ void fill(float* x);
DEFINE(fill)
""", "fill", engine="emulator")
    x = np.zeros(8, np.float32)
    k(x, grid=2, block=4)
    np.testing.assert_array_equal(x, [0, 0, 0, 0, 1, 1, 1, 1])


@pytest.mark.parametrize("name", ["t", "d", "a0", "rc"])
def test_short_kernel_names_do_not_clash_with_the_launcher(name: str) -> None:
    import numpy as np

    from cunumpy.kernels import CudaKernel

    src = f'extern "C" __global__ void {name}(float* x, int n) {{\n' \
          "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) x[i] = 2.0f * i;\n}\n"
    x = np.zeros(100, np.float32)
    CudaKernel(src, name, engine="emulator")(x, np.int32(100), grid=1, block=128)
    assert np.array_equal(x, 2.0 * np.arange(100, dtype=np.float32))
