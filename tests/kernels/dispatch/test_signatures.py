"""Port signatures against the host kernel's parameter names, and host kernel introspection."""

from __future__ import annotations

import numpy as np
import pytest

from _dispatch_ports import FakeCuda, FakeMetal, Param
from cunumpy.kernels import CudaKernel, Kernel, MetalKernel, SignatureMismatchError

SAXPY_CU = r"""
extern "C" __global__ void saxpy(const float* x, float a, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}
"""


def saxpy(x, a, y, n):
    y[:n] += a * x[:n]


def test_real_ports_match():
    cuda = CudaKernel(SAXPY_CU, "saxpy")
    metal = MetalKernel("uint i = thread_position_in_grid.x; y_out[i] = a[0] * x[i] + y[i];",
                        inputs=["x", "a", "y"], outputs=["y_out"], name="saxpy")
    k = Kernel(saxpy, cuda, metal)
    k.check_signatures()
    assert k.param_names == ("x", "a", "y", "n")
    assert k.outputs == ("y",)  # CUDA: the non-const pointer; Metal: y_out stands for y


def test_cuda_names_in_another_order_are_listed():
    def swapped(y, a, x, n):
        pass

    with pytest.raises(SignatureMismatchError) as info:
        Kernel(swapped, CudaKernel(SAXPY_CU, "saxpy"))
    text = str(info.value)
    assert text.startswith("[kernel 'swapped'] ports do not match the host kernel "
                           "swapped(y, a, x, n):")
    assert "cuda parameter 0 is 'x', host parameter 0 is 'y'" in text
    assert "cuda parameter 2 is 'y', host parameter 2 is 'x'" in text
    assert "parameter 1" not in text


def test_cuda_parameter_count():
    def short(x, a, y):
        pass

    with pytest.raises(SignatureMismatchError,
                       match=r"cuda port has 4 parameters \(x, a, y, n\), the host kernel 3 "
                             r"\(x, a, y\)"):
        Kernel(short, CudaKernel(SAXPY_CU, "saxpy"))


def test_check_false_skips_cuda_names_but_check_signatures_still_reports():
    def renamed(xs, a, y, n):
        pass

    k = Kernel(renamed, CudaKernel(SAXPY_CU, "saxpy"), check=False)
    with pytest.raises(SignatureMismatchError, match="cuda parameter 0 is 'x', host parameter 0 "
                                                     "is 'xs'"):
        k.check_signatures()


def test_unparsed_cuda_signature_is_not_checked():
    """A CUDA port without parsed parameters (empty ``params``) cannot be checked by name."""
    k = Kernel(lambda anything, goes: None, FakeCuda(), name="f")
    k.check_signatures()
    assert k.outputs == ()


def test_param_names_attribute_is_read():
    class Port:
        param_names = ("x", "a", "z")

        def __call__(self, *args):
            pass

    with pytest.raises(SignatureMismatchError, match="cuda parameter 2 is 'z', host parameter 2 "
                                                     "is 'y'"):
        Kernel(lambda x, a, y: None, Port(), name="p")


def test_metal_names_must_be_host_parameters_and_every_problem_is_listed():
    def push(pos, vel, dt):
        pass

    metal = FakeMetal(["pos", "velocity", "dt_in"], ["pos_out", "energy"])
    cuda = FakeCuda(Param("pos"), Param("v"), Param("dt", pointer=False))
    with pytest.raises(SignatureMismatchError) as info:
        Kernel(push, cuda, metal)
    lines = str(info.value).splitlines()
    assert lines[0] == "[kernel 'push'] ports do not match the host kernel push(pos, vel, dt):"
    assert lines[1:] == [
        "  - cuda parameter 1 is 'v', host parameter 1 is 'vel'",
        "  - metal input 'velocity' matches no host parameter (host parameters: pos, vel, dt); "
        "rename it to a host parameter",
        "  - metal output 'energy' matches no host parameter (host parameters: pos, vel, dt); "
        "rename it to a host parameter",
    ]


def test_metal_two_names_for_one_parameter():
    def f(x, y):
        pass

    with pytest.raises(SignatureMismatchError,
                       match="metal inputs 'y' and 'y_in' both stand for host parameter 'y'"):
        Kernel(f, metal=FakeMetal(["x", "y", "y_in"], ["y_out"]))


def test_metal_suffix_names_a_missing_stem():
    def f(x, y):
        pass

    with pytest.raises(SignatureMismatchError,
                       match=r"metal output 'z_out' matches no host parameter .* or 'z'"):
        Kernel(f, metal=FakeMetal(["x"], ["z_out"]))


def test_real_metal_kernel_mapping():
    def scale(x, a, y):
        pass

    metal = MetalKernel("uint i = thread_position_in_grid.x; y[i] = a[0] * x[i];",
                        inputs=["x", "a"], outputs=["y"], name="scale")
    assert Kernel(scale, metal=metal).metal_mapping == {
        "x": ("input", "x"), "a": ("input", "a"), "y": ("output", "y"),
    }


# ---------------------------------------------------------------------- host kernels
def test_host_with_star_args_is_refused():
    with pytest.raises(TypeError, match=r"\[kernel 'f'\] host kernel takes \*args; .*name every "
                                        "parameter"):
        Kernel(lambda *args: None, name="f")


def test_host_with_required_keyword_only_is_refused():
    def f(x, *, y):
        pass

    with pytest.raises(TypeError, match="keyword-only parameter 'y' without a default"):
        Kernel(f)


def test_host_keyword_only_with_default_is_fine():
    def f(x, y, *, debug=False):
        y[:] = x

    k = Kernel(f)
    assert k.param_names == ("x", "y")
    y = np.zeros(2)
    k(np.ones(2), y)
    assert y.tolist() == [1.0, 1.0]


def test_host_must_be_callable():
    with pytest.raises(TypeError, match="host kernel must be callable, got int"):
        Kernel(3, name="three")


def test_ports_must_look_like_ports():
    with pytest.raises(TypeError, match="metal port must be a MetalKernel"):
        Kernel(lambda x: None, metal=lambda x: None)
    with pytest.raises(TypeError, match="cuda port must be a callable CudaKernel"):
        Kernel(lambda x: None, cuda="saxpy.cu")


def test_name_defaults_to_the_host_name():
    def deposit(x, rho):
        pass

    assert Kernel(deposit).name == "deposit"
    assert Kernel(deposit, name="dep").name == "dep"
    with pytest.raises(TypeError, match="non-empty str"):
        Kernel(deposit, name="")


def test_cunumpy_import_does_not_import_numba_or_testing():
    import json
    import os
    import subprocess
    import sys

    code = ("import cunumpy, cunumpy.kernels, sys, json\n"
            "k = cunumpy.kernels.Kernel(lambda x: None, name='f')\n"
            "print(json.dumps([m for m in ('numba', 'pytest', 'cunumpy.testing') "
            "if m in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env={**os.environ, "CUNUMPY_BACKEND": "numpy"})
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []


def test_cunumpy_testing_import_does_not_import_pytest():
    import json
    import os
    import subprocess
    import sys

    code = ("import cunumpy.testing, sys, json\n"
            "print(json.dumps([m for m in ('pytest',) if m in sys.modules]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env={**os.environ, "CUNUMPY_BACKEND": "numpy"})
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
