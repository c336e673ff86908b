"""``Kernel``: one host kernel and its CUDA and Metal ports, called as one function.

A scientist writes the host version of a kernel (a Python/NumPy function or a Numba ``@njit``
function that writes its results into its array arguments), ports it to CUDA
(:class:`~cunumpy.kernels.CudaKernel`) and to Metal (:class:`~cunumpy.kernels.MetalKernel`), and
wraps the three in a :class:`Kernel`. Each call then picks the version that fits the arguments:

1. A port forced with :func:`use_port` / :func:`force_port` / ``CUNUMPY_KERNEL_PORT``, if any.
2. The CuPy backend is active, or an argument is a device array (it has
   ``__cuda_array_interface__``, as CuPy arrays do): the CUDA port.
3. A Metal port exists and Metal dispatch is on (:func:`metal_dispatch_enabled`): the Metal port,
   given the arguments its ``inputs`` and ``outputs`` name.
4. Otherwise: the host kernel.

Settings (each is a function, a context manager and an environment variable; the function or
context manager wins over the variable; all are process-wide, like the backend):

``set_metal_dispatch(True | False | None)``, ``use_metal(...)``, ``CUNUMPY_USE_METAL=1|0|auto``
    Whether NumPy-array calls go to the Metal port. ``None`` / ``auto`` (the default) means: on
    when :func:`~cunumpy.kernels.metal_available` (an Apple GPU with MLX), and also when
    ``CUNUMPY_METAL_ENGINE=emulator`` (so a machine without a Mac GPU exercises the Metal path on
    the CPU emulator). A kernel without a Metal port runs its host kernel either way.
``force_port("host" | "cuda" | "metal" | None)``, ``use_port(...)``, ``CUNUMPY_KERNEL_PORT``
    Send every call to one port whatever the arguments. This is how the CUDA port runs on NumPy
    arrays: with ``CUNUMPY_CUDA_ENGINE=emulator`` a :class:`~cunumpy.kernels.CudaKernel` takes
    NumPy arrays and runs on the CPU emulator, so ``use_port("cuda")`` (or
    ``CUNUMPY_KERNEL_PORT=cuda``) runs a whole NumPy program through the CUDA ports.

The per-call cost is a few attribute reads and dictionary lookups (see
``benchmarks/bench_dispatch.py``); the mapping from host parameters to Metal inputs and outputs
is built once, at construction.
"""

from __future__ import annotations

import contextlib
import inspect
import operator
import os
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from cunumpy import config, profiling
from cunumpy._backend import _state as _backend_state

__all__ = [
    "PORTS",
    "Kernel",
    "MissingPortError",
    "PortFallbackWarning",
    "SignatureMismatchError",
    "force_port",
    "forced_port",
    "metal_dispatch_enabled",
    "set_metal_dispatch",
    "use_metal",
    "use_port",
]

PORTS = ("host", "cuda", "metal")
"""The versions a :class:`Kernel` holds, by name."""

_MISSING_POLICIES = ("raise", "fallback")
_CUDA_KEYS = frozenset(("n_threads", "grid", "block", "shared_mem", "stream", "check_finite"))
"""Launch keywords the CUDA port takes."""
_METAL_KEYS = frozenset(("n_threads", "template"))
"""Launch keywords the Metal port takes."""
_LAUNCH_KEYS = _CUDA_KEYS | _METAL_KEYS
_HOST_TYPES = frozenset((
    np.ndarray, int, float, bool, complex, np.float16, np.float32, np.float64, np.complex64,
    np.complex128, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
    np.uint64, np.bool_,
))
"""Argument classes that are certainly not device arrays (checked first, for speed)."""


class MissingPortError(RuntimeError):
    """A call needs a port (CUDA or Metal) that the :class:`Kernel` was not given."""


class PortFallbackWarning(RuntimeWarning):
    """A :class:`Kernel` with ``missing="fallback"`` ran its host kernel in place of a port."""


class SignatureMismatchError(TypeError):
    """A port's parameter names do not match the host kernel's."""


# ------------------------------------------------------------------------------------ settings
# Environment variables are read at every call through the environment's own dictionary (about
# 30 ns each, against about 500 ns for os.environ.get), and decoded again only when the raw
# values change.
_USE_METAL = "CUNUMPY_USE_METAL"
_METAL_ENGINE = "CUNUMPY_METAL_ENGINE"
_KERNEL_PORT = "CUNUMPY_KERNEL_PORT"
_env_data: Any = getattr(os.environ, "_data", None)
try:
    _keys = tuple(os.environ.encodekey(v) for v in (_USE_METAL, _METAL_ENGINE, _KERNEL_PORT))  # type: ignore[attr-defined]
except AttributeError:  # pragma: no cover - not CPython
    _env_data = None
if not isinstance(_env_data, dict):  # pragma: no cover
    _env_data = None
    _keys = (_USE_METAL, _METAL_ENGINE, _KERNEL_PORT)
_K_USE_METAL, _K_METAL_ENGINE, _K_KERNEL_PORT = _keys
_env_get: Callable[[Any], Any] = _env_data.get if _env_data is not None else os.environ.get

_metal_setting: list[bool | None] = [None]
"""The value given to :func:`set_metal_dispatch` / :func:`use_metal`; None: automatic."""
_port_setting: list[str | None] = [None]
"""The port given to :func:`force_port` / :func:`use_port`; None: no forcing by function."""
_env_cache: list[Any] = [object(), object(), None, None]
"""Raw (CUNUMPY_USE_METAL, CUNUMPY_METAL_ENGINE) last seen and the decision they gave."""
_port_env_cache: list[Any] = [object(), None]
"""Raw CUNUMPY_KERNEL_PORT last seen and the port it named."""


def _raw(key: Any, var: str) -> Any:
    data = _env_data
    return data.get(key) if data is not None else os.environ.get(var)


def _decode(raw: Any) -> str:
    if raw is None:
        return ""
    if isinstance(raw, bytes):
        raw = os.fsdecode(raw)
    return raw.strip().lower()


def _metal_from_environment() -> bool:
    """Metal dispatch as the environment and the hardware decide (no explicit setting)."""
    raw_use = _raw(_K_USE_METAL, _USE_METAL)
    raw_engine = _raw(_K_METAL_ENGINE, _METAL_ENGINE)
    cache = _env_cache
    if raw_use is cache[0] and raw_engine is cache[1]:
        return cache[2]
    use = _decode(raw_use)
    if use in ("1", "true", "yes", "on"):
        decision = True
    elif use in ("0", "false", "no", "off"):
        decision = False
    elif use in ("", "auto"):
        if _decode(raw_engine) == "emulator":
            decision = True
        else:
            from cunumpy.kernels._availability import metal_available

            decision = metal_available()
    else:
        raise ValueError(
            f"environment variable {_USE_METAL}={os.environ.get(_USE_METAL)!r} is not one of "
            "1, 0 or auto; unset it or pick one of those"
        )
    cache[0], cache[1], cache[2] = raw_use, raw_engine, decision
    return decision


def metal_dispatch_enabled() -> bool:
    """Whether :class:`Kernel` calls on NumPy arrays go to the Metal port now.

    In order: the value given to :func:`set_metal_dispatch` / :func:`use_metal` if not None;
    then ``CUNUMPY_USE_METAL`` (``1``/``true``/``yes``/``on`` or ``0``/``false``/``no``/``off``);
    then automatic (unset or ``auto``): True when ``CUNUMPY_METAL_ENGINE=emulator`` or when
    :func:`~cunumpy.kernels.metal_available` (an Apple GPU with MLX).
    """
    explicit = _metal_setting[0]
    return _metal_from_environment() if explicit is None else explicit


def set_metal_dispatch(enabled: bool | None) -> bool | None:
    """Turn Metal dispatch on (True), off (False) or back to automatic (None) for the process.

    Returns the previous setting, so it can be restored. See :func:`metal_dispatch_enabled`.
    """
    if enabled is not None and not isinstance(enabled, (bool, np.bool_)):
        raise TypeError(f"set_metal_dispatch takes True, False or None, got {enabled!r}")
    previous = _metal_setting[0]
    _metal_setting[0] = None if enabled is None else bool(enabled)
    return previous


@contextlib.contextmanager
def use_metal(enabled: bool | None = True) -> Iterator[None]:
    """Inside the block, Metal dispatch is ``enabled`` (True, False or None = automatic).

    The previous setting comes back on exit, also when the block raises.

    Examples
    --------
    >>> import cunumpy as xp
    >>> with xp.kernels.use_metal(False):
    ...     xp.kernels.metal_dispatch_enabled()
    False
    """
    previous = set_metal_dispatch(enabled)
    try:
        yield
    finally:
        _metal_setting[0] = previous


def _check_port(port: Any, what: str) -> str | None:
    if port is None:
        return None
    if not isinstance(port, str) or port.lower() not in PORTS:
        raise ValueError(f"{what} {port!r} is not a port; valid ports are {', '.join(PORTS)}")
    return port.lower()


def _port_from_environment() -> str | None:
    raw = _raw(_K_KERNEL_PORT, _KERNEL_PORT)
    cache = _port_env_cache
    if raw is cache[0]:
        return cache[1]
    value = _decode(raw)
    port = None
    if value not in ("", "auto"):
        port = _check_port(value, f"environment variable {_KERNEL_PORT}")
    cache[0], cache[1] = raw, port
    return port


def forced_port() -> str | None:
    """The port every :class:`Kernel` call is sent to now, or None (dispatch by arguments).

    The value given to :func:`force_port` / :func:`use_port` if not None, else
    ``CUNUMPY_KERNEL_PORT`` (``host``, ``cuda``, ``metal``; unset or ``auto``: None).
    """
    port = _port_setting[0]
    return _port_from_environment() if port is None else port


def force_port(port: str | None) -> str | None:
    """Send every :class:`Kernel` call to ``port`` (``"host"``, ``"cuda"``, ``"metal"``).

    ``None`` goes back to dispatch by arguments (or ``CUNUMPY_KERNEL_PORT``). Returns the
    previous setting. A forced port that a kernel lacks follows that kernel's ``missing``
    policy. Forcing ``"cuda"`` on NumPy arrays needs the CUDA emulator
    (``CUNUMPY_CUDA_ENGINE=emulator``).
    """
    checked = _check_port(port, "force_port got")
    previous = _port_setting[0]
    _port_setting[0] = checked
    return previous


@contextlib.contextmanager
def use_port(port: str | None) -> Iterator[None]:
    """Inside the block, every :class:`Kernel` call goes to ``port`` (see :func:`force_port`).

    Examples
    --------
    >>> import numpy as np
    >>> import cunumpy as xp
    >>> def double(x, y):
    ...     y[:] = 2 * x
    >>> k = xp.kernels.Kernel(double)
    >>> with xp.kernels.use_port("host"):
    ...     k.which(np.ones(2), np.empty(2))
    'host'
    """
    previous = force_port(port)
    try:
        yield
    finally:
        _port_setting[0] = previous


# ------------------------------------------------------------------------------- introspection
def _python_function(host: Any) -> Callable[..., Any]:
    """The Python function behind ``host``: itself, or a Numba dispatcher's ``py_func``."""
    py_func = getattr(host, "py_func", None)
    if py_func is not None and type(host).__module__.split(".")[0] == "numba":
        return py_func
    return host


def _host_params(host: Any, tag: str) -> tuple[str, ...]:
    if not callable(host):
        raise TypeError(f"{tag} host kernel must be callable, got {type(host).__name__}")
    func = _python_function(host)
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"{tag} cannot read the host kernel's parameter names ({exc}); pass a Python "
            "function or a Numba @njit function"
        ) from exc
    names = []
    for p in signature.parameters.values():
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            names.append(p.name)
        elif p.kind is p.VAR_POSITIONAL:
            raise TypeError(
                f"{tag} host kernel takes *{p.name}; a Kernel matches ports to the host's "
                "parameters by name, so name every parameter"
            )
        elif p.default is p.empty and p.kind is p.KEYWORD_ONLY:
            raise TypeError(
                f"{tag} host kernel has a keyword-only parameter {p.name!r} without a default; "
                "a Kernel passes arguments by position only"
            )
    return tuple(names)


def _cuda_params(port: Any) -> tuple[Any, ...] | None:
    """The CUDA port's parameters (objects with ``.name``), or None when not known."""
    params = getattr(port, "params", None)
    if params:
        return tuple(params)
    names = getattr(port, "param_names", None)
    if names:
        return tuple(_Named(n) for n in names)
    return None


class _Named:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


def _resolve_metal_name(name: str, role: str, host: tuple[str, ...]) -> str | None:
    """The host parameter a Metal input/output name stands for (see :class:`Kernel`)."""
    if name in host:
        return name
    suffix = "_in" if role == "input" else "_out"
    if name.endswith(suffix) and name[: -len(suffix)] in host:
        return name[: -len(suffix)]
    return None


def _getter(indices: tuple[int, ...], as_tuple: bool) -> Callable[[tuple], Any]:
    """A fast function picking ``indices`` from the argument tuple."""
    if not indices:
        return lambda args: ()
    if len(indices) == 1:
        (i,) = indices
        if as_tuple:
            return lambda args: (args[i],)
        return operator.itemgetter(i)
    return operator.itemgetter(*indices)


def _has_device(args: tuple) -> bool:
    """True when an argument is device memory (has ``__cuda_array_interface__``)."""
    for a in args:
        cls = a.__class__
        if cls in _HOST_TYPES:
            continue
        if hasattr(cls, "__cuda_array_interface__") or hasattr(a, "__cuda_array_interface__"):
            return True
    return False


def _given(n_threads: Any, template: Any, grid: Any, block: Any, shared_mem: Any, stream: Any,
           check_finite: Any) -> dict[str, Any]:
    """The launch keywords of a call that differ from their defaults, as a dict."""
    launch: dict[str, Any] = {}
    if n_threads is not None:
        launch["n_threads"] = n_threads
    if template is not None:
        launch["template"] = template
    if grid is not None:
        launch["grid"] = grid
    if block is not None:
        launch["block"] = block
    if not (isinstance(shared_mem, int) and shared_mem == 0):
        launch["shared_mem"] = shared_mem
    if stream is not None:
        launch["stream"] = stream
    if check_finite is not False:
        launch["check_finite"] = check_finite
    return launch


def _only(launch: dict[str, Any], keys: frozenset[str]) -> dict[str, Any]:
    """The launch keywords a port takes."""
    return {k: v for k, v in launch.items() if k in keys}


def _rebuild(host: Any, cuda: Any, metal: Any, name: str, missing: str, check: bool) -> Kernel:
    return Kernel(host, cuda, metal, name=name, missing=missing, check=check)


# ---------------------------------------------------------------------------------- the kernel
class Kernel:
    """A host kernel with optional CUDA and Metal ports, dispatched at every call.

    Parameters
    ----------
    host : callable
        The reference implementation: a Python/NumPy function or a Numba ``@njit`` function that
        writes its results into its array arguments, e.g. ``saxpy(x, a, y)`` updating ``y``.
        Its parameter names are the kernel's parameter names.
    cuda : CudaKernel, optional
        The CUDA port. Its parameters must have the host's names in the host's order; it gets
        the call's arguments by position.
    metal : MetalKernel, optional
        The Metal port. Each name in its ``inputs`` and ``outputs`` is matched to the host
        parameter of the same name; ``host(x, a, y)`` pairs with
        ``MetalKernel(..., inputs=["x", "a"], outputs=["y"])`` and is called as
        ``metal(x, a, out=y)``. A parameter the kernel reads and updates (``y`` in
        ``y += a * x``) appears twice: as an input ``y`` and an output ``y_out`` (or an input
        ``y_in`` and an output ``y``); the same array is passed to both (the Metal port copies its
        inputs before it runs). Host parameters the Metal port does not name (a length ``n``, say)
        are not passed to it.
    name : str, optional
        The name used in messages. Default: the host function's ``__name__``.
    missing : {"raise", "fallback"}, default "raise"
        What a call that needs an absent port does (a CuPy call without a CUDA port, or a port
        forced with :func:`use_port`). ``"raise"``: :class:`MissingPortError` naming the kernel.
        ``"fallback"``: run the host kernel on the same arguments, with a
        :class:`PortFallbackWarning` the first time (per kernel and port) and a ``fallback``
        event in :func:`cunumpy.profiling.count_transfers` every time. The host kernel then gets
        the arrays as they are (CuPy arrays for a CuPy call): a host written with array
        operations runs on them, a Numba one cannot.
    check : bool, default True
        Check the CUDA port's parameter names against the host's at construction
        (:meth:`check_signatures`). The Metal port's names are always checked (dispatch needs
        them).

    Notes
    -----
    **Dispatch**, per call: a port forced with :func:`use_port` (or ``CUNUMPY_KERNEL_PORT``);
    else the CUDA port when the CuPy backend is active or an argument is a device array; else the
    Metal port when there is one and :func:`metal_dispatch_enabled`; else the host kernel. A
    kernel without a Metal port runs its host kernel on NumPy arrays (that is not a fallback).

    **Calling**: ``kernel(*args, **launch)`` with one positional argument per host parameter.
    Launch keywords go to the port that takes them: ``n_threads`` to both ports; ``grid``,
    ``block``, ``shared_mem``, ``stream`` and ``check_finite`` to the CUDA port only;
    ``template`` to the Metal port only; the host kernel gets none. Unknown keywords raise
    TypeError. Results are written into the arguments; the call returns None.

    **Inspecting**: :meth:`which` names the version a call would run, :meth:`run_port` runs one
    version whatever the settings, :meth:`check_signatures` repeats the construction checks,
    :attr:`metal_mapping` and :attr:`outputs` show how arguments are matched. Each kernel writes
    its own call function at construction (:meth:`call_source`) and holds it in a one-off
    subclass, so ``isinstance(k, Kernel)`` holds but ``type(k) is Kernel`` does not.

    Examples
    --------
    >>> import numpy as np
    >>> import cunumpy as xp
    >>> def scale(x, a, y):
    ...     y[:] = a * x
    >>> metal = xp.kernels.MetalKernel(
    ...     "uint i = thread_position_in_grid.x; y[i] = a[0] * x[i];",
    ...     inputs=["x", "a"], outputs=["y"], name="scale")
    >>> k = xp.kernels.Kernel(scale, metal=metal)
    >>> x = np.arange(4, dtype=np.float32)
    >>> y = np.empty_like(x)
    >>> with xp.kernels.use_metal(False):
    ...     k(x, 2.0, y)
    >>> y.tolist()
    [0.0, 2.0, 4.0, 6.0]
    """

    __slots__ = (
        "__weakref__",
        "_check",
        "_cuda",
        "_host",
        "_metal",
        "_metal_in",
        "_metal_inputs",
        "_metal_out",
        "_metal_outputs",
        "_missing",
        "_name",
        "_nparams",
        "_params",
        "_source",
        "_warned",
    )

    def __init__(
        self,
        host: Callable[..., Any],
        cuda: Any = None,
        metal: Any = None,
        *,
        name: str | None = None,
        missing: str = "raise",
        check: bool = True,
    ) -> None:
        if name is None:
            name = getattr(_python_function(host), "__name__", None) or "kernel"
        elif not isinstance(name, str) or not name:
            raise TypeError(f"Kernel name must be a non-empty str, got {name!r}")
        self._name = name
        tag = self._tag()
        if missing not in _MISSING_POLICIES:
            raise ValueError(
                f"{tag} missing={missing!r} is not one of {', '.join(map(repr, _MISSING_POLICIES))}"
            )
        self._missing = missing
        self._host = host
        self._params = _host_params(host, tag)
        self._nparams = len(self._params)
        if cuda is not None and not callable(cuda):
            raise TypeError(f"{tag} cuda port must be a callable CudaKernel, got {cuda!r}")
        if metal is not None and not (
            callable(metal) and hasattr(metal, "input_names") and hasattr(metal, "output_names")
        ):
            raise TypeError(
                f"{tag} metal port must be a MetalKernel (with input_names and output_names), "
                f"got {metal!r}"
            )
        self._cuda = cuda
        self._metal = metal
        self._check = bool(check)
        self._warned: set[str] = set()
        self._metal_inputs: tuple[int, ...] = ()
        self._metal_outputs: tuple[int, ...] = ()
        self.check_signatures(cuda=self._check)
        if metal is not None:
            index = {n: i for i, n in enumerate(self._params)}
            self._metal_inputs = tuple(
                index[_resolve_metal_name(n, "input", self._params)]  # type: ignore[index]
                for n in metal.input_names
            )
            self._metal_outputs = tuple(
                index[_resolve_metal_name(n, "output", self._params)]  # type: ignore[index]
                for n in metal.output_names
            )
        self._metal_in = _getter(self._metal_inputs, as_tuple=True)
        self._metal_out = _getter(self._metal_outputs, as_tuple=False)
        # Python finds __call__ on the type, so each kernel gets a one-off subclass holding its
        # generated call function (same slots: the object is unchanged otherwise).
        call = self._generate()
        cls = type(self)
        self.__class__ = type(cls.__name__, (cls,), {
            "__slots__": (), "__call__": call, "__module__": cls.__module__,
            "__qualname__": cls.__qualname__, "__doc__": cls.__doc__,
        })

    # ------------------------------------------------------------------------------ properties
    @property
    def name(self) -> str:
        """The kernel's name in messages."""
        return self._name

    @property
    def host(self) -> Callable[..., Any]:
        """The host kernel as given (a function or a Numba dispatcher)."""
        return self._host

    @property
    def cuda(self) -> Any:
        """The CUDA port, or None."""
        return self._cuda

    @property
    def metal(self) -> Any:
        """The Metal port, or None."""
        return self._metal

    @property
    def missing(self) -> str:
        """The missing-port policy, ``"raise"`` or ``"fallback"``."""
        return self._missing

    @property
    def param_names(self) -> tuple[str, ...]:
        """The host kernel's positional parameter names."""
        return self._params

    @property
    def metal_mapping(self) -> dict[str, tuple[str, str]]:
        """Metal name -> (role, host parameter), e.g. ``{"y_out": ("output", "y")}``."""
        if self._metal is None:
            return {}
        mapping = {}
        for n, i in zip(self._metal.input_names, self._metal_inputs):
            mapping[n] = ("input", self._params[i])
        for n, i in zip(self._metal.output_names, self._metal_outputs):
            mapping[n] = ("output", self._params[i])
        return mapping

    @property
    def outputs(self) -> tuple[str, ...]:
        """Host parameters some port declares as written, in host order.

        The Metal port's outputs and the CUDA port's non-const pointer parameters. Empty when
        neither port says (a host-only kernel, or a CUDA port whose signature was not parsed).
        """
        written = {self._params[i] for i in self._metal_outputs}
        params = _cuda_params(self._cuda) if self._cuda is not None else None
        if params is not None and len(params) == self._nparams:
            for name, p in zip(self._params, params):
                if getattr(p, "pointer", False) and not getattr(p, "const", True):
                    written.add(name)
        return tuple(n for n in self._params if n in written)

    def port(self, name: str) -> Any:
        """The port called ``name`` (``"host"``, ``"cuda"`` or ``"metal"``), or None."""
        checked = _check_port(name, f"{self._tag()} port")
        return {"host": self._host, "cuda": self._cuda, "metal": self._metal}[checked]

    def __repr__(self) -> str:
        ports = [p for p in ("cuda", "metal") if self.port(p) is not None]
        return (
            f"Kernel({self._name}({', '.join(self._params)}), ports: "
            f"{', '.join(['host', *ports])}, missing={self._missing!r})"
        )

    def _tag(self) -> str:
        return f"[kernel {self._name!r}]"

    # ------------------------------------------------------------------------------ signatures
    def check_signatures(self, *, cuda: bool = True) -> None:
        """Check the ports' parameter names against the host kernel's.

        The CUDA port must have exactly the host's parameters, same names, same order (it gets
        the arguments by position); skipped when its signature was not parsed
        (``check_signature=False``) or ``cuda=False``. Every Metal input and output must name a
        host parameter (directly, or as ``<name>_in`` / ``<name>_out``), no host parameter may be
        named by two inputs or by two outputs.

        Raises
        ------
        SignatureMismatchError
            Listing every mismatch, for both ports.
        """
        host = self._params
        problems: list[str] = []
        if cuda and self._cuda is not None:
            params = _cuda_params(self._cuda)
            if params is not None:
                names = tuple(p.name for p in params)
                if len(names) != len(host):
                    problems.append(
                        f"cuda port has {len(names)} parameters ({', '.join(names)}), the host "
                        f"kernel {len(host)} ({', '.join(host)})"
                    )
                for i, (h, c) in enumerate(zip(host, names)):
                    if h != c:
                        problems.append(
                            f"cuda parameter {i} is {c!r}, host parameter {i} is {h!r}"
                        )
        if self._metal is not None:
            for role, names in (
                ("input", tuple(self._metal.input_names)),
                ("output", tuple(self._metal.output_names)),
            ):
                seen: dict[str, str] = {}
                for n in names:
                    target = _resolve_metal_name(n, role, host)
                    if target is None:
                        also = f" or {n.removesuffix('_in' if role == 'input' else '_out')!r}"
                        problems.append(
                            f"metal {role} {n!r} matches no host parameter (host parameters: "
                            f"{', '.join(host) or 'none'}); rename it to a host parameter"
                            + (also if n.endswith(("_in", "_out")) else "")
                        )
                    elif target in seen:
                        problems.append(
                            f"metal {role}s {seen[target]!r} and {n!r} both stand for host "
                            f"parameter {target!r}"
                        )
                    else:
                        seen[target] = n
        if problems:
            raise SignatureMismatchError(
                f"{self._tag()} ports do not match the host kernel "
                f"{self._name}({', '.join(host)}):\n  - " + "\n  - ".join(problems)
            )

    # ------------------------------------------------------------------------------ dispatch
    def which(self, *args: Any) -> str:
        """The port a call with these arguments would run now: ``host``, ``cuda`` or ``metal``.

        A call that needs an absent port answers ``"host"`` with ``missing="fallback"`` and
        raises :class:`MissingPortError` with ``missing="raise"``, as the call would.
        """
        port = self._choose(args)
        if port == "cuda" and self._cuda is None and self._metal and config.metal_on_cuda():
            return "metal"  # the Metal port on the cuda engine (CUNUMPY_METAL_ON_CUDA)
        if self.port(port) is None:
            if self._missing == "raise":
                raise MissingPortError(self._missing_message(port, args))
            return "host"
        return port

    def _choose(self, args: tuple) -> str:
        """The port for ``args`` now (the generated fast path makes the same decision)."""
        forced = _port_setting[0]
        if forced is None:
            forced = _port_from_environment()
        if forced is not None:
            if forced == "cuda" and self._cuda is not None:
                self._check_forced_cuda(args)
            return forced
        if _backend_state["name"] == "cupy" or _has_device(args):
            return "cuda"
        if self._metal is not None:
            enabled = _metal_setting[0]
            if enabled is None:
                enabled = _metal_from_environment()
            if enabled:
                return "metal"
        return "host"

    def __call__(self, *args: Any, **launch: Any) -> None:
        """Run the port :meth:`which` picks; see the class notes for the launch keywords.

        This generic version is replaced, per kernel, by a generated one that makes the same
        decision with the argument mapping written out (:meth:`call_source`).
        """
        if len(args) != self._nparams:
            self._bad_arity(args)
        if launch and not launch.keys() <= _LAUNCH_KEYS:
            self._bad_keywords(launch)
        self._run(self._choose(args), args, launch)

    def _keywords(self, launch: dict[str, Any], keys: frozenset[str]) -> dict[str, Any]:
        """Check the launch keywords, and keep those in ``keys`` (the port's)."""
        if not launch.keys() <= _LAUNCH_KEYS:
            self._bad_keywords(launch)
        return {k: v for k, v in launch.items() if k in keys}

    def _run(self, port: str, args: tuple, launch: dict[str, Any]) -> None:
        """Run ``port`` (as chosen by dispatch): a missing port follows the missing policy."""
        if launch and not launch.keys() <= _LAUNCH_KEYS:
            self._bad_keywords(launch)
        impl = self._host if port == "host" else self._cuda if port == "cuda" else self._metal
        if impl is None and port == "cuda" and self._metal and config.metal_on_cuda():
            self._metal(*self._metal_in(args), out=self._metal_out(args), engine="cuda",
                        **_only(launch, _METAL_KEYS))
        elif impl is None:
            self._need(port, args)
            self._host(*args)
        elif port == "host":
            self._host(*args)
        elif port == "metal":
            if launch:
                impl(*self._metal_in(args), out=self._metal_out(args),
                     **_only(launch, _METAL_KEYS))
            else:
                impl(*self._metal_in(args), out=self._metal_out(args))
        elif launch:
            impl(*args, **_only(launch, _CUDA_KEYS))
        else:
            impl(*args)

    def call_source(self) -> str:
        """The text of this kernel's generated call function (for reading, and for tests)."""
        return self._source

    def _generate(self) -> Callable[..., None]:
        """Write the per-kernel call function: the decision of :meth:`_choose`, unrolled.

        The arguments are unpacked into locals, the host-type test is one ``and`` chain, the
        Metal port's inputs and outputs are written out by position, and the ports are bound as
        globals of the function, so a call costs a few dictionary lookups and comparisons.
        """
        n = self._nparams
        names = [f"a{i}" for i in range(n)]
        lines = [
            "def __call__(self, *args, n_threads=None, template=None, grid=None, block=None,",
            "             shared_mem=0, stream=None, check_finite=False, **other):",
            f"    if len(args) != {n}:",
            "        self._bad_arity(args)",
            "    if other:",
            "        self._bad_keywords(other)",
        ]
        if n:
            lines.append(f"    {', '.join(names)}{',' if n == 1 else ''} = args")
        lines += [
            "    forced = _port_setting[0]",
            "    if forced is None and _env_get(_K_KERNEL_PORT) is not None:",
            "        forced = _port_from_environment()",
            "    if forced is not None:",
            "        if forced == 'cuda' and _cuda is not None:",
            "            self._check_forced_cuda(args)",
            "        self._run(forced, args, _given(n_threads, template, grid, block, shared_mem,",
            "                                       stream, check_finite))",
            "        return",
        ]
        host_only = " and ".join(f"{v}.__class__ in _H" for v in names) or "True"
        lines.append(
            f"    if _backend_state['name'] == 'cupy' or not ({host_only}) and _has_device(args):"
        )
        if self._cuda is not None:
            lines += [
                "        if (grid is None and block is None and shared_mem == 0 and stream is None",
                "                and check_finite is False):",
                "            if n_threads is None:",
                "                _cuda(*args)",
                "            else:",
                "                _cuda(*args, n_threads=n_threads)",
                "        else:",
                "            _cuda(*args, **_given(n_threads, None, grid, block, shared_mem, stream,",
                "                                  check_finite))",
                "        return",
            ]
        else:
            lines += [
                "        self._run('cuda', args, _given(n_threads, template, grid, block, "
                "shared_mem, stream, check_finite))",
                "        return",
            ]
        if self._metal is not None:
            ins = ", ".join(names[i] for i in self._metal_inputs)
            outs = [names[i] for i in self._metal_outputs]
            out = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
            call = f"_metal({ins + ', ' if ins else ''}out={out}"
            lines += [
                "    m = _metal_setting[0]",
                "    if m is None:",
                "        c = _env_cache",
                "        if _env_get(_K_USE_METAL) is c[0] and _env_get(_K_METAL_ENGINE) is c[1]:",
                "            m = c[2]",
                "        else:",
                "            m = _metal_from_environment()",
                "    if m:",
                "        if template is None:",
                "            if n_threads is None:",
                f"                {call})",
                "            else:",
                f"                {call}, n_threads=n_threads)",
                "        else:",
                f"            {call}, n_threads=n_threads, template=template)",
                "        return",
            ]
        lines.append(f"    _host({', '.join(names)})")
        text = "\n".join(lines) + "\n"
        namespace: dict[str, Any] = {
            "_H": _HOST_TYPES,
            "_LAUNCH_KEYS": _LAUNCH_KEYS,
            "_CUDA_KEYS": _CUDA_KEYS,
            "_METAL_KEYS": _METAL_KEYS,
            "_port_setting": _port_setting,
            "_metal_setting": _metal_setting,
            "_env_cache": _env_cache,
            "_env_get": _env_get,
            "_K_KERNEL_PORT": _K_KERNEL_PORT,
            "_K_USE_METAL": _K_USE_METAL,
            "_K_METAL_ENGINE": _K_METAL_ENGINE,
            "_port_from_environment": _port_from_environment,
            "_metal_from_environment": _metal_from_environment,
            "_backend_state": _backend_state,
            "_has_device": _has_device,
            "_given": _given,
            "_host": self._host,
            "_cuda": self._cuda,
            "_metal": self._metal,
        }
        exec(profiling._compile_generated(text, f"Kernel {self._name} call"), namespace)
        self._source = text
        return namespace["__call__"]

    def _bad_arity(self, args: tuple) -> None:
        raise TypeError(
            f"{self._tag()} takes {self._nparams} arguments "
            f"({', '.join(self._params)}), got {len(args)}"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild,
            (self._host, self._cuda, self._metal, self._name, self._missing, self._check),
        )

    def run_port(self, port: str, *args: Any, **launch: Any) -> None:
        """Run one version now, whatever the settings: ``"host"``, ``"cuda"`` or ``"metal"``.

        Arguments are those of a call (host order); the Metal port gets them by name, as in a
        dispatched call. An absent port raises :class:`MissingPortError` (no fallback).
        """
        checked = _check_port(port, f"{self._tag()} run_port got")
        if len(args) != self._nparams:
            raise TypeError(
                f"{self._tag()} takes {self._nparams} arguments "
                f"({', '.join(self._params)}), got {len(args)}"
            )
        if launch and not launch.keys() <= _LAUNCH_KEYS:
            self._bad_keywords(launch)
        if checked == "host":
            self._host(*args)
            return
        impl = self.port(checked)
        if impl is None:
            raise MissingPortError(
                f"{self._tag()} has no {checked.upper() if checked == 'cuda' else 'Metal'} "
                f"port; give Kernel(..., {checked}=...)"
            )
        if checked == "metal":
            impl(*self._metal_in(args), out=self._metal_out(args),
                 **{k: v for k, v in launch.items() if k in _METAL_KEYS})
        else:
            impl(*args, **{k: v for k, v in launch.items() if k in _CUDA_KEYS})

    def _bad_keywords(self, launch: dict[str, Any]) -> None:
        unknown = sorted(set(launch) - _LAUNCH_KEYS)
        raise TypeError(
            f"{self._tag()} got unknown launch keyword(s) {', '.join(map(repr, unknown))}; "
            f"kernel arguments are positional ({', '.join(self._params)}) and the launch "
            f"keywords are {', '.join(sorted(_LAUNCH_KEYS))}"
        )

    def _why(self, port: str, args: tuple) -> str:
        forced = forced_port()
        if forced is not None:
            how = (
                "use_port/force_port" if _port_setting[0] is not None
                else f"{_KERNEL_PORT}={os.environ.get(_KERNEL_PORT)}"
            )
            return f"the {forced} port is forced ({how})"
        if port == "cuda":
            if _backend_state["name"] == "cupy":
                return "the cupy backend is active"
            for name, a in zip(self._params, args):
                if hasattr(a, "__cuda_array_interface__"):
                    return f"argument {name!r} is a device array ({type(a).__module__}.{type(a).__name__})"
        return "Metal dispatch is on"

    def _check_forced_cuda(self, args: tuple) -> None:
        """A forced CUDA port on host arrays needs an engine that takes host arrays."""
        engine = getattr(self._cuda, "engine", None)
        if engine is None:
            from cunumpy.kernels._cuda_engines import default_cuda_engine

            engine = default_cuda_engine()
        if getattr(engine, "array_space", "host") != "device" or _has_device(args):
            return
        if any(isinstance(a, np.ndarray) for a in args):
            raise TypeError(
                f"{self._tag()} {self._why('cuda', args)} but the arguments are NumPy arrays, "
                f"which the {getattr(engine, 'name', 'cupy')} engine cannot take; set "
                "CUNUMPY_CUDA_ENGINE=emulator to run the CUDA port on the CPU emulator, or move "
                "the arrays to the GPU with cunumpy.to_cupy"
            )

    def _missing_message(self, port: str, args: tuple) -> str:
        label = "CUDA" if port == "cuda" else "Metal"
        return (
            f"{self._tag()} has no {label} port, and this call needs one "
            f"({self._why(port, args)}); give Kernel(..., {port}=...) or missing='fallback' to "
            "run the host kernel instead"
        )

    def _need(self, port: str, args: tuple) -> None:
        """A call needs an absent ``port``: raise, or warn once and record a fallback."""
        if self._missing == "raise":
            raise MissingPortError(self._missing_message(port, args))
        label = "CUDA" if port == "cuda" else "Metal"
        why = self._why(port, args)
        if port not in self._warned:
            self._warned.add(port)
            warnings.warn(
                f"{self._tag()} has no {label} port ({why}); running the host kernel instead "
                "(warned once per kernel; count_transfers() counts every fallback)",
                PortFallbackWarning,
                stacklevel=4,
            )
        if profiling._active:
            profiling._record(
                "fallback", 0, f"kernel {self._name!r}: host kernel ran for the missing {label} port"
            )
