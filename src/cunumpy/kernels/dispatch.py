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

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from cunumpy import config, profiling
from cunumpy._backend import _state as _backend_state
from cunumpy.kernels._dispatch_args import (
    _DEVICE_TYPES,
    _HOST_TYPES,
    _MISSING,
    _cuda_params,
    _getter,
    _given_args,
    _has_device,
    _host_params,
    _launch_dict,
    _only,
    _python_function,
    _resolve_metal_name,
)
from cunumpy.kernels._dispatch_settings import (
    _KERNEL_PORT,
    PORTS,
    _check_port,
    _env_cache,
    _metal_from_environment,
    _metal_setting,
    _port_from_environment,
    _port_setting,
    force_port,
    forced_port,
    metal_dispatch_enabled,
    set_metal_dispatch,
    use_metal,
    use_port,
)

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

_MISSING_POLICIES = ("raise", "fallback")
_CUDA_KEYS = frozenset(("n_threads", "grid", "block", "shared_mem", "stream", "check_finite"))
"""Launch keywords the CUDA port takes."""
_METAL_KEYS = frozenset(("n_threads", "template"))
"""Launch keywords the Metal port takes."""
_LAUNCH_KEYS = _CUDA_KEYS | _METAL_KEYS
class MissingPortError(RuntimeError):
    """A call needs a port (CUDA or Metal) that the :class:`Kernel` was not given."""


class PortFallbackWarning(RuntimeWarning):
    """A :class:`Kernel` with ``missing="fallback"`` ran its host kernel in place of a port."""


class SignatureMismatchError(TypeError):
    """A port's parameter names do not match the host kernel's."""


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
        # generated call function (same slots: the object is unchanged otherwise). The function
        # is written by _generate (its text: call_source()); it holds this kernel as a constant,
        # so it is a staticmethod and a call binds no method.
        call = self._generate()
        cls = type(self)
        self.__class__ = type(cls.__name__, (cls,), {
            "__slots__": (), "__call__": staticmethod(call), "__module__": cls.__module__,
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
        decision with the argument mapping written out: ``kernel(...)`` runs the function
        :meth:`_generate` writes at construction, whose text :meth:`call_source` returns.
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
            self._metal(*self._metal_in(args), out=self._metal_out(args), engine="metal-cuda",
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

        This is where ``kernel(...)`` goes: the text is :meth:`call_source`. The arguments are
        named parameters (a missing one is ``_M``); ``n_threads`` and ``template`` (the Metal
        port's keywords) are keyword parameters, the other launch keywords one dict, empty on
        the common path; the host-type test is one ``and`` chain, the Metal port's inputs and
        outputs are written out by position, the environment is read through
        :func:`cunumpy.config.raw_lookup`, and the kernel and its ports are constants of the
        function, so a call costs a few dictionary lookups and comparisons. It is installed as
        a ``staticmethod`` (no bound method per call).
        """
        n = self._nparams
        names = [f"a{i}" for i in range(n)]
        tup = "(" + ", ".join(names) + ("," if n == 1 else "") + ")"
        pos = "".join(v + ", " for v in names)
        lines = [
            f"def __call__({''.join(v + '=_M, ' for v in names)}*extra, n_threads=None, "
            "template=None, **launch):",
            f"    # Kernel {self._name!r}: generated by Kernel._generate (cunumpy/kernels/dispatch.py)",
        ]
        if n:
            lines += [f"    if {names[-1]} is _M or extra:",
                      f"        _self._bad_arity(_given_args({tup}, extra))"]
        else:
            lines += ["    if extra:", "        _self._bad_arity(extra)"]
        lines += [
            "    if launch and not launch.keys() <= _LAUNCH_KEYS:",
            "        _self._bad_keywords(launch)",
            "    forced = _port_setting[0]",
            "    if forced is None and _eget(_K_PORT) is not None:",
            "        forced = _port_from_environment()",
            "    if forced is not None:",
        ]
        if self._cuda is not None:
            lines += [
                "        if forced == 'cuda':",
                f"            _self._check_forced_cuda({tup})",
                "            if n_threads is None and not launch:",
                f"                _cuda({', '.join(names)})",
                "                return",
            ]
        lines += [
            f"        _self._run(forced, {tup}, _launch_dict(n_threads, template, launch))",
            "        return",
        ]
        host_only = " and ".join(f"{v}.__class__ in _H" for v in names) or "True"
        device = "".join(f"{v}.__class__ in _D or " for v in names)
        lines.append(
            f"    if _backend_state['name'] == 'cupy' or not ({host_only}) and ({device}"
            f"_has_device({tup})):"
        )
        if self._cuda is not None:
            lines += [
                "        if n_threads is None and not launch:",
                f"            _cuda({', '.join(names)})",
                "        else:",
                f"            _cuda({pos}**_only(_launch_dict(n_threads, None, launch), _CUDA_KEYS))",
                "        return",
            ]
        else:
            lines += [
                f"        _self._run('cuda', {tup}, _launch_dict(n_threads, template, launch))",
                "        return",
            ]
        if self._metal is not None:
            ins = "".join(names[i] + ", " for i in self._metal_inputs)
            outs = [names[i] for i in self._metal_outputs]
            out = outs[0] if len(outs) == 1 else "(" + ", ".join(outs) + ")"
            call = f"_metal({ins}out={out}"
            lines += [
                "    m = _metal_setting[0]",
                "    if m is None:",
                "        c = _env_cache",
                "        if _eget(_K_USE_METAL) is c[0] and _eget(_K_METAL_ENGINE) is c[1]:",
                "            m = c[2]",
                "        else:",
                "            m = _metal_from_environment()",
                "    if m:",
                "        if template is None:",
                "            if n_threads is None:",
                f"                {call})",
                "            else:",
                f"                {call}, n_threads=n_threads)",
                "        elif n_threads is None:",
                f"            {call}, template=template)",
                "        else:",
                f"            {call}, n_threads=n_threads, template=template)",
                "        return",
            ]
        lines.append(f"    _host({', '.join(names)})")
        text = "\n".join(lines) + "\n"
        eget, k_port = config.raw_lookup("CUNUMPY_KERNEL_PORT")
        namespace: dict[str, Any] = {
            "_self": self,
            "_M": _MISSING,
            "_H": _HOST_TYPES,
            "_D": _DEVICE_TYPES,
            "_LAUNCH_KEYS": _LAUNCH_KEYS,
            "_CUDA_KEYS": _CUDA_KEYS,
            "_METAL_KEYS": _METAL_KEYS,
            "_port_setting": _port_setting,
            "_metal_setting": _metal_setting,
            "_env_cache": _env_cache,
            "_eget": eget,
            "_K_PORT": k_port,
            "_K_USE_METAL": config.raw_lookup("CUNUMPY_USE_METAL")[1],
            "_K_METAL_ENGINE": config.raw_lookup("CUNUMPY_METAL_ENGINE")[1],
            "_port_from_environment": _port_from_environment,
            "_metal_from_environment": _metal_from_environment,
            "_backend_state": _backend_state,
            "_has_device": _has_device,
            "_given_args": _given_args,
            "_launch_dict": _launch_dict,
            "_only": _only,
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
                else f"{_KERNEL_PORT}={config.setting_text(_KERNEL_PORT)}"
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
            from cunumpy._engines._cuda_registry import default_cuda_engine

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
