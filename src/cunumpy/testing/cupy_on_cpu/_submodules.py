"""``cupy.fft``, ``cupy.linalg``, ``cupy.random``, ``cupy.testing``, ``cupy.polynomial`` and
``cupy.lib`` of the stand-in: modules whose names forward to NumPy's submodule of the same name.

The names are CuPy's (from each submodule's ``__init__.py`` in CuPy's repository). ``cupy.random``
draws with NumPy's generators, so values differ from real CuPy's streams (as they do between
any two generators); ``RandomState`` / ``Generator`` objects are proxies whose methods return
stand-in arrays. ``cupy.testing``'s assertions take stand-in arrays (copied to the host, as
CuPy's do).
"""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any

import numpy
import numpy.testing

from cunumpy.testing.cupy_on_cpu._array import ndarray
from cunumpy.testing.cupy_on_cpu._namespace import forward, unwrap_arg, wrap_result

__all__ = ["submodule"]

FFT = ("fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn",
       "ifftshift", "ihfft", "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn")
LINALG = ("matrix_power", "cross", "matmul", "matrix_transpose", "cholesky", "qr", "svd", "eigh",
          "eig", "eigvalsh", "eigvals", "norm", "cond", "det", "matrix_rank", "slogdet", "solve",
          "tensorsolve", "lstsq", "inv", "pinv", "tensorinv")
RANDOM = ("bytes", "beta", "binomial", "chisquare", "dirichlet", "exponential", "f", "gamma",
          "geometric", "gumbel", "hypergeometric", "laplace", "logistic", "lognormal",
          "logseries", "multivariate_normal", "negative_binomial", "noncentral_chisquare",
          "noncentral_f", "normal", "pareto", "poisson", "power", "rayleigh", "standard_cauchy",
          "standard_exponential", "standard_gamma", "standard_normal", "standard_t",
          "triangular", "uniform", "vonmises", "wald", "weibull", "zipf", "seed", "permutation",
          "shuffle", "choice", "multinomial", "rand", "randint", "randn", "random_integers",
          "random_sample", "random", "ranf", "sample")
TESTING = ("assert_allclose", "assert_array_almost_equal", "assert_array_almost_equal_nulp",
           "assert_array_equal", "assert_array_less", "assert_array_max_ulp", "assert_warns")
NOT_EMULATED = {
    "random": ("XORWOW", "MRG32k3a", "Philox4x3210", "BitGenerator"),
    "testing": ("numpy_cupy_allclose", "numpy_cupy_array_equal", "numpy_cupy_array_almost_equal",
                "numpy_cupy_raises", "for_all_dtypes", "for_dtypes", "shaped_arange",
                "shaped_random", "multi_gpu", "slow", "with_requires"),
}


class _Proxy:
    """A NumPy object (``RandomState``, ``Generator``) whose methods give stand-in arrays."""

    def __init__(self, target: Any, name: str) -> None:
        self._target = target
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._target, attr)
        if callable(value):
            return forward(f"{self._name}.{attr}", value)
        return wrap_result(value)

    def __repr__(self) -> str:
        return f"<cupy stand-in {self._name} over {self._target!r}>"


def _host(value: Any) -> Any:
    if isinstance(value, ndarray):
        return value.get()
    if isinstance(value, (list, tuple)):
        return type(value)(_host(v) for v in value) if isinstance(value, list) else \
            tuple(_host(v) for v in value)
    return value


def _assertion(name: str) -> Any:
    check = getattr(numpy.testing, name)

    def assertion(*args: Any, **kwargs: Any) -> Any:
        return check(*(_host(a) for a in args), **{k: _host(v) for k, v in kwargs.items()})

    assertion.__name__ = name
    assertion.__doc__ = f"``cupy.testing.{name}``: ``numpy.testing.{name}`` on host copies."
    return assertion


def _not_emulated(module: str, name: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(
            f"cupy.{module}.{name} is not provided by cunumpy's CuPy stand-in"
        )

    refuse.__name__ = name
    return refuse


def _build(name: str) -> ModuleType:
    module = ModuleType(f"cupy.{name}", f"cupy.{name} of cunumpy's CuPy stand-in.")
    if name == "fft":
        for n in FFT:
            setattr(module, n, forward(f"fft.{n}", getattr(numpy.fft, n)))
        module.config = ModuleType("cupy.fft.config")
    elif name == "linalg":
        for n in LINALG:
            setattr(module, n, forward(f"linalg.{n}", getattr(numpy.linalg, n)))
        module.LinAlgError = numpy.linalg.LinAlgError
    elif name == "random":
        for n in RANDOM:
            setattr(module, n, forward(f"random.{n}", getattr(numpy.random, n)))
        module.RandomState = lambda seed=None: _Proxy(numpy.random.RandomState(seed),
                                                      "RandomState")
        module.default_rng = lambda seed=None: _Proxy(numpy.random.default_rng(unwrap_arg(seed)),
                                                      "Generator")
        module.get_random_state = lambda: _Proxy(numpy.random.mtrand._rand, "RandomState")
        module.reset_states = lambda: None
    elif name == "testing":
        for n in TESTING:
            setattr(module, n, _assertion(n))
    elif name == "polynomial":
        module.polynomial = ModuleType("cupy.polynomial.polynomial")
        for n in ("polyval", "polyvander", "polycompanion"):
            setattr(module.polynomial, n, forward(f"polynomial.{n}",
                                                  getattr(numpy.polynomial.polynomial, n)))
    elif name == "lib":
        module.stride_tricks = ModuleType("cupy.lib.stride_tricks")
        for n in ("as_strided", "sliding_window_view"):
            setattr(module.stride_tricks, n, forward(n, getattr(numpy.lib.stride_tricks, n)))
    for n in NOT_EMULATED.get(name, ()):
        setattr(module, n, _not_emulated(name, n))
    return module


_modules: dict[str, ModuleType] = {}


def submodule(name: str) -> ModuleType:
    """The stand-in's ``cupy.<name>`` (built once; registered in ``sys.modules`` when installed)."""
    if name not in _modules:
        _modules[name] = _build(name)
        if sys.modules.get("cupy") is sys.modules.get("cunumpy.testing.cupy_on_cpu"):
            sys.modules[f"cupy.{name}"] = _modules[name]
    return _modules[name]
