"""``assert_kernels_agree``: run a :class:`~cunumpy.kernels.Kernel`'s ports against its host kernel.

pytest is imported only when a port has to be skipped inside a running pytest test (through
:mod:`cunumpy.testing._markers`); outside pytest a port that cannot run raises
:class:`~cunumpy.testing.PortsNotRunError` (or warns, when another port was checked).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cunumpy import config
from cunumpy.emulation._options import checking_races

__all__ = [
    "DEFAULT_TOLERANCES",
    "assert_kernels_agree",
    "compare_arrays",
    "compare_to_reference",
    "tolerance_for",
]

DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float16": (1e-2, 1e-3),
    "float32": (1e-4, 1e-6),
    "complex64": (1e-4, 1e-6),
    "float64": (1e-9, 1e-12),
    "complex128": (1e-9, 1e-12),
}
"""``(rtol, atol)`` per floating-point dtype. Integer and bool outputs must match exactly.

A port that computes in float32 (a Metal port with ``float64="cast"``) is held to the float32
row even when its outputs are float64. The float32 row allows about 1000 units in the last place:
ports legitimately reorder sums, contract ``a * b + c`` into fused multiply-adds and use other
math libraries, so bit-equality with the host is not expected.
"""

_PORTS = ("cuda", "metal")


def tolerance_for(dtype: Any) -> tuple[float, float]:
    """The default ``(rtol, atol)`` for results computed in ``dtype`` (0, 0 for exact types)."""
    dt = np.dtype(dtype)
    if dt.kind in "fc":
        return DEFAULT_TOLERANCES.get(dt.name, DEFAULT_TOLERANCES["float64"])
    return (0.0, 0.0)


def _poison(dtype: np.dtype) -> Any:
    """The value an output holds before a port runs: NaN, or an unlikely integer."""
    if dtype.kind in "fc":
        return np.nan
    if dtype.kind == "i":
        return np.iinfo(dtype).min
    if dtype.kind == "u":
        return np.iinfo(dtype).max
    return None  # bool and others: not poisoned


def _to_numpy(a: Any) -> Any:
    if isinstance(a, np.ndarray) or not hasattr(a, "shape"):
        return a
    from cunumpy import to_numpy

    return to_numpy(a)


def _is_array(a: Any) -> bool:
    return hasattr(a, "shape") and hasattr(a, "dtype") and not isinstance(a, np.generic)


@dataclass
class _Where:
    """Where a port runs here: the backend its arguments are built on and the engine label."""

    backend: str
    engine: str


def _no_compiler(dialect: str) -> str | None:
    """Why the ``dialect`` emulator cannot build kernels here, or None when it can."""
    from cunumpy.emulation import CompilerNotFoundError, find_compiler

    try:
        find_compiler()
    except CompilerNotFoundError as exc:
        return f"the {dialect} emulator needs a C++ compiler: {exc}"
    return None


def _cuda_where(port: Any) -> _Where | str:
    """Where the CUDA port runs here, or the reason it cannot."""
    engine = getattr(port, "engine", None)
    if engine is None:
        try:
            name = config.cuda_engine()
        except ValueError as exc:
            return str(exc)
        if name == "auto":  # cupy where a CUDA device computes, else the emulator
            from cunumpy._engines._cuda_registry import resolve_cuda_engine

            name = resolve_cuda_engine(name)
        if name == "emulator":
            missing = _no_compiler("CUDA")
            if missing:
                return missing
            from cunumpy._engines._cuda_registry import get_cuda_engine

            try:
                engine = get_cuda_engine("emulator")
            except RuntimeError as exc:
                return str(exc)
            return _Where("numpy", engine.name)
    else:
        if getattr(engine, "array_space", "device") == "host":
            return _Where("numpy", getattr(engine, "name", "emu-cuda"))
    from cunumpy._engines._table import engine_status

    ok, reason = engine_status("cupy")
    if ok:
        return _Where("cupy", "cupy")
    return (
        f"{reason}; set CUNUMPY_CUDA_ENGINE=emulator to check the CUDA port on the CPU emulator"
    )


def _metal_where(port: Any) -> _Where | str:
    """Where the Metal port runs here (the engine table's choice), or the reason it cannot."""
    from cunumpy._engines._table import engine_status, select

    try:
        engine = select("metal", config.metal_engine())
    except ValueError as exc:
        return str(exc)
    if engine == "emu-metal":
        missing = _no_compiler("Metal")
        if missing:
            return missing
    ok, reason = engine_status(engine)
    if not ok:
        return reason
    # metal-cuda copies NumPy arguments itself: the port gets NumPy arrays on every engine.
    return _Where("numpy", engine)


def _metal_poison(kernel: Any, args: Sequence[Any]) -> Any:
    """The ``init_value`` that poisons a Metal port's outputs for one run, or None.

    A Metal port's outputs are fresh device buffers (whatever the host arrays held is not seen
    by the kernel), so they are poisoned through the port's ``init_value``: NaN when every output
    is floating point, the integer sentinel when all share one integer dtype. Not when the port
    sets its own ``init_value`` (it then relies on that start value).
    """
    metal = kernel.metal
    if getattr(metal, "init_value", None) is not None:
        return None
    index = {n: i for i, n in enumerate(kernel.param_names)}
    dtypes = {
        np.dtype(args[index[host]].dtype)
        for role, host in kernel.metal_mapping.values()
        if role == "output" and _is_array(args[index[host]])
    }
    if dtypes and all(d.kind in "fc" for d in dtypes):
        return float("nan")
    if len(dtypes) == 1:
        (dtype,) = dtypes
        if dtype.kind in "iu" and dtype.itemsize <= 4:
            return int(_poison(dtype))
    return None


def _cuda_declared(kernel: Any, names: Sequence[str], args: Sequence[Any]) -> list[tuple[str, int]]:
    """Host parameters the CUDA port declares write-only (``CudaKernel(outputs=...)``), by
    position, that can be poisoned."""
    cuda = kernel.cuda
    declared = set(getattr(cuda, "outputs", ()) or ())
    params = getattr(cuda, "params", ()) or ()
    out = []
    for i, p in enumerate(params):
        if p.name in declared and i < len(names) and _is_array(args[i]) and (
            _poison(np.dtype(args[i].dtype)) is not None
        ):
            out.append((names[i], i))
    return out


def _computes_in_float32(kernel: Any, port: str, args: Sequence[Any]) -> bool:
    """True when ``port`` computes float64 arguments in float32 (Metal ``float64="cast"``)."""
    if port != "metal" or getattr(kernel.metal, "float64", "error") != "cast":
        return False
    return any(_is_array(a) and np.dtype(a.dtype) == np.float64 for a in args) or any(
        isinstance(a, float) for a in args
    )


def _format_index(flat: int, shape: tuple[int, ...]) -> str:
    if len(shape) == 0:
        return "()"
    idx = np.unravel_index(flat, shape)
    return "(" + ", ".join(str(int(i)) for i in idx) + ("," if len(shape) == 1 else "") + ")"


def _compare(
    tag: str,
    label: str,
    name: str,
    got: np.ndarray,
    want: np.ndarray,
    rtol: float,
    atol: float,
    poisoned: bool,
) -> str | None:
    """None when a port's ``got`` agrees with the host's ``want``; else a message with the
    worst element (:func:`compare_arrays`)."""
    return compare_arrays(got, want, rtol, atol, what=f"{tag} {label} output {name!r}",
                          poisoned=poisoned)


def compare_arrays(
    got: np.ndarray,
    want: np.ndarray,
    rtol: float,
    atol: float,
    *,
    what: str,
    poisoned: bool = False,
    reference: tuple[str, str, str] = ("the host kernel", "port", "host"),
) -> str | None:
    """The one comparison of results: None when ``got`` agrees with ``want``, else a message.

    ``assert_kernels_agree`` compares each port's outputs with the host kernel's through it, and
    the conformance suites compare each engine's outputs with the NumPy reference through it.
    Floating-point and complex elements agree when ``|got - want| <= atol + rtol * |want|``
    (NaN agrees with NaN, an infinity with the same infinity); integer and bool elements must be
    equal when ``rtol == atol == 0``. The message starts with ``what``, gives the number of
    differing elements and the worst one (index, both values, absolute and relative error), and
    says when that element still holds the poison value (``poisoned``). ``reference`` names what
    ``want`` is and the words for the two values: ``("the NumPy reference", "got",
    "expected")`` for a conformance case.
    """
    against, got_word, want_word = reference
    desc = f"{np.dtype(want.dtype).name}{list(want.shape)}"
    if got.shape != want.shape:
        return f"{what}: shape {got.shape}, {want_word} {want.shape}"
    if got.size == 0:
        return None
    exact = got.dtype.kind not in "fc" and want.dtype.kind not in "fc" and rtol == atol == 0
    g = got.astype(np.complex128 if got.dtype.kind == "c" else np.float64).ravel()
    w = want.astype(np.complex128 if want.dtype.kind == "c" else np.float64).ravel()
    g_nan, w_nan = np.isnan(g), np.isnan(w)
    with np.errstate(invalid="ignore", over="ignore"):
        err = np.abs(g - w)
        same_inf = np.isinf(g) & np.isinf(w) & (g == w)
        err[same_inf] = 0.0
        bound = atol + rtol * np.abs(w)
        bad = ~(err <= bound)
    if exact:  # integers: compare the values themselves (float64 rounds above 2**53)
        bad = got.ravel() != want.ravel()
    bad &= ~(g_nan & w_nan)
    bad |= g_nan ^ w_nan
    count = int(bad.sum())
    if not count:
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        excess = np.where(bad, err - bound, -np.inf)
    excess[bad & ~np.isfinite(excess)] = np.inf
    worst = int(np.argmax(excess))
    gv, wv = got.ravel()[worst], want.ravel()[worst]
    e = float(err[worst]) if np.isfinite(err[worst]) else float("nan")
    rel = e / abs(complex(w[worst])) if w[worst] != 0 and np.isfinite(e) else float("inf")
    note = ""
    if poisoned and (
        (got.dtype.kind in "fc" and np.isnan(g[worst]) and not np.isnan(w[worst]))
        or (got.dtype.kind in "iu" and gv == _poison(got.dtype))
    ):
        note = " (still the poison value: the port never wrote this element)"
    tol = "exact match required" if rtol == 0 and atol == 0 else f"rtol={rtol:g}, atol={atol:g}"
    return (
        f"{what} ({desc}) differs from {against} in {count} of "
        f"{got.size} element(s) ({tol}); worst at index {_format_index(worst, want.shape)}: "
        f"{got_word} {gv}, {want_word} {wv}, abs err {e:.3g}, rel err {rel:.3g}{note}"
    )


NUMPY_REFERENCE = ("the NumPy reference", "got", "expected")
"""How :func:`compare_to_reference` names the reference and the two values."""


def compare_to_reference(
    got: Any, expected: Any, rtol: float, atol: float, *, what: str
) -> str | None:
    """:func:`compare_arrays` for a kernel's output against a NumPy reference (the conformance
    suites): ``expected`` may have another shape of the same size; integer and bool outputs
    must match exactly, whatever ``rtol`` and ``atol``."""
    got, expected = np.asarray(got), np.asarray(expected)
    if got.size != expected.size:
        return f"{what}: {got.size} elements, {expected.size} expected"
    expected = expected.reshape(got.shape)
    if got.dtype.kind in "biu":
        expected, rtol, atol = expected.astype(got.dtype), 0.0, 0.0
    return compare_arrays(got, expected, rtol, atol, what=what, reference=NUMPY_REFERENCE)


def _equal(a: Any, b: Any) -> bool:
    if not _is_array(a):
        return True
    return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))


def assert_kernels_agree(
    kernel: Any,
    make_args: Callable[[str, int], Sequence[Any]],
    *,
    ports: Iterable[str] = ("cuda", "metal"),
    n_threads: Any = None,
    rtol: float | None = None,
    atol: float | None = None,
    seed: int = 0,
) -> dict[str, str]:
    """Check that each port of ``kernel`` gives the host kernel's results.

    Parameters
    ----------
    kernel : cunumpy.kernels.Kernel
        The kernel whose ports are checked.
    make_args : callable
        ``make_args(backend, seed)`` returns the arguments of one call, in the host kernel's
        order, built on ``backend`` (``"numpy"``, or ``"cupy"`` for the CUDA port on a GPU). It is
        called once per run and must give the same values for the same seed on both backends
        (draw them with NumPy's generator and convert with :func:`cunumpy.to_cupy`).
    ports : iterable of {"cuda", "metal"}, default ("cuda", "metal")
        The ports to check. A port the kernel lacks is left out; at least one must exist.
    n_threads : int or tuple, optional
        Passed to every port as the ``n_threads`` launch keyword (the host kernel ignores it).
    rtol, atol : float, optional
        Tolerances for every floating-point output. Default: per output, from
        :data:`DEFAULT_TOLERANCES` for the precision the port computes in (float32 for a Metal
        port with ``float64="cast"``); integer and bool outputs must match exactly.
    seed : int, default 0
        Passed to ``make_args``.

    Returns
    -------
    dict
        Port -> engine that ran it (``"cupy"``, ``"emu-cuda"``, ``"mlx"``, ``"emu-metal"``).

    Raises
    ------
    AssertionError
        A port's output differs from the host's: the message names the kernel, the port and its
        engine, the output, and the worst element (index, both values, absolute and relative
        error), and says when that element still holds the poison value.
    PortsNotRunError
        Outside pytest only: no requested port could run here, or a port required with
        ``CUNUMPY_REQUIRE_CUDA`` / ``CUNUMPY_REQUIRE_METAL`` could not (see Notes).

    Notes
    -----
    The outputs compared are the host parameters a port declares as written (Metal outputs, CUDA
    non-const pointers); with no declaration, every array argument. Before each run, the outputs
    the host kernel only writes (found by running the host once with them poisoned: its results
    must not change) are filled with NaN (floats) or the most negative / largest integer, so an
    element a port forgets to write fails; so are, before the CUDA port runs, the parameters its
    ``CudaKernel(..., outputs=[...])`` declares write-only (on the CPU emulator, the port itself
    then raises :class:`~cunumpy.emulation.UnwrittenOutputError` naming the elements). A port
    that cannot run here (no GPU and no emulator selected through ``CUNUMPY_CUDA_ENGINE`` /
    ``CUNUMPY_METAL_ENGINE=emulator``) is dealt with after the other ports are checked. Inside a
    pytest test, the test is skipped with the reason; ``CUNUMPY_REQUIRE_CUDA=1`` /
    ``CUNUMPY_REQUIRE_METAL=1`` make that skip a failure. Outside pytest (a script, a notebook),
    :class:`~cunumpy.testing.PortsNotRunError` names each port that could not run and why, when
    no port ran or a required one did not; when other ports were checked, a
    :class:`~cunumpy.testing.PortsNotRunWarning` says which were not, and the result lists the
    ones that ran. Ports that run on a
    CPU emulator are checked for data races too (:class:`~cunumpy.emulation.DataRaceError`;
    ``CUNUMPY_EMULATOR_RACES=0`` turns that off).

    Examples
    --------
    >>> import numpy as np
    >>> import cunumpy as xp
    >>> from cunumpy.testing import assert_kernels_agree
    >>> def scale(x, a, y):
    ...     y[:] = a * x
    >>> k = xp.kernels.Kernel(scale, metal=xp.kernels.MetalKernel(
    ...     "uint i = thread_position_in_grid.x; y[i] = a[0] * x[i];",
    ...     inputs=["x", "a"], outputs=["y"], name="scale"))
    >>> def make_args(backend, seed):
    ...     x = np.random.default_rng(seed).random(100, dtype=np.float32)
    ...     return x, 2.0, np.empty_like(x)
    >>> assert_kernels_agree(k, make_args, ports=["metal"])  # doctest: +SKIP
    {'metal': 'emu-metal'}
    """
    from cunumpy.kernels.dispatch import Kernel

    if not isinstance(kernel, Kernel):
        raise TypeError(
            f"assert_kernels_agree takes a cunumpy.kernels.Kernel, got {type(kernel).__name__}; "
            "wrap the host kernel and its ports with Kernel(host, cuda=..., metal=...)"
        )
    tag = f"[kernel {kernel.name!r}]"
    if isinstance(ports, str):
        ports = (ports,)
    wanted = []
    for p in ports:
        if p not in _PORTS:
            raise ValueError(f"{tag} unknown port {p!r}; ports are {', '.join(_PORTS)}")
        if p not in wanted:
            wanted.append(p)
    present = [p for p in wanted if kernel.port(p) is not None]
    if not present:
        raise ValueError(
            f"{tag} has none of the ports {', '.join(wanted) or '(none)'}; nothing to compare "
            "with the host kernel"
        )
    launch = {} if n_threads is None else {"n_threads": n_threads}
    names = kernel.param_names

    def build(backend: str) -> list[Any]:
        args = list(make_args(backend, seed))
        if len(args) != len(names):
            raise TypeError(
                f"{tag} make_args({backend!r}, {seed}) returned {len(args)} arguments; the host "
                f"kernel takes {len(names)} ({', '.join(names)})"
            )
        return args

    # -- the reference run, and which outputs the host only writes ---------------------------
    first = build("numpy")
    declared = kernel.outputs
    outputs = [n for n in declared] if declared else [
        n for n, a in zip(names, first) if _is_array(a)
    ]
    out_index = [names.index(n) for n in outputs]
    for n, i in zip(outputs, out_index):
        if not _is_array(first[i]):
            raise TypeError(
                f"{tag} output {n!r} is {type(first[i]).__name__}, not an array; make_args must "
                "give an array for every output"
            )
    kernel.run_port("host", *first)
    reference = {n: np.array(first[i], copy=True) for n, i in zip(outputs, out_index)}
    poisonable = [
        (n, i) for n, i in zip(outputs, out_index) if _poison(np.dtype(first[i].dtype)) is not None
    ]

    def host_with(poison: list[tuple[str, int]]) -> bool:
        args = build("numpy")
        for _, i in poison:
            args[i][...] = _poison(np.dtype(args[i].dtype))
        kernel.run_port("host", *args)
        return all(_equal(args[i], reference[n]) for n, i in zip(outputs, out_index))

    write_only: list[tuple[str, int]] = []
    if poisonable:
        if host_with(poisonable):
            write_only = poisonable
        elif len(poisonable) > 1:
            write_only = [item for item in poisonable if host_with([item])]

    # -- each port --------------------------------------------------------------------------
    checked: dict[str, str] = {}
    failures: list[str] = []
    not_run: list[tuple[str, str]] = []
    for port in present:
        where = _cuda_where(kernel.cuda) if port == "cuda" else _metal_where(kernel.metal)
        if isinstance(where, str):
            not_run.append((port, where))
            continue
        label = f"port {port!r} ({where.engine})"
        use = contextlib.nullcontext()
        if where.backend == "cupy":
            import cunumpy

            use = cunumpy.use_backend("cupy", strict=True)
        with use:
            args = build(where.backend)
            if where.backend != "numpy":
                for n, a, h in zip(names, args, build("numpy")):
                    if _is_array(a) and n not in outputs and not _equal(_to_numpy(a), h):
                        raise AssertionError(
                            f"{tag} make_args('{where.backend}', {seed}) and "
                            f"make_args('numpy', {seed}) give different values for argument "
                            f"{n!r}; draw the values with NumPy's generator and convert them "
                            "with cunumpy.to_cupy"
                        )
            declared = _cuda_declared(kernel, names, args) if port == "cuda" else []
            for _, i in write_only + [d for d in declared if d not in write_only]:
                args[i][...] = _poison(np.dtype(args[i].dtype))
            init = _metal_poison(kernel, args) if port == "metal" else None
            try:
                if init is not None:
                    kernel.metal.init_value = init
                with checking_races():
                    kernel.run_port(port, *args, **launch)
            except Exception as exc:
                if hasattr(exc, "add_note"):
                    exc.add_note(f"{tag} raised while checking {label} against the host kernel")
                raise
            finally:
                if init is not None:
                    kernel.metal.init_value = None
            results = {n: _to_numpy(args[i]) for n, i in zip(outputs, out_index)}
        cast = _computes_in_float32(kernel, port, args)
        poisoned = {n for n, _ in write_only} | {n for n, _ in declared}
        if port == "metal" and init is not None:
            poisoned |= {host for role, host in kernel.metal_mapping.values() if role == "output"}
        for n in outputs:
            want = reference[n]
            if rtol is not None or atol is not None:
                d_rtol, d_atol = tolerance_for(want.dtype)
                r = d_rtol if rtol is None else rtol
                a = d_atol if atol is None else atol
            else:
                dtype = np.dtype(want.dtype)
                if cast and dtype.kind in "fc":
                    dtype = np.dtype(np.complex64 if dtype.kind == "c" else np.float32)
                r, a = tolerance_for(dtype)
            problem = _compare(tag, label, n, np.asarray(results[n]), want, r, a, n in poisoned)
            if problem:
                failures.append(problem)
        checked[port] = where.engine

    if failures:
        raise AssertionError("\n".join(failures))
    if not_run:
        from cunumpy.testing._markers import ports_not_run

        done = ", ".join(f"{p} ({e}) agrees" for p, e in checked.items())
        reasons = "; ".join(f"{p} port cannot run here: {why}" for p, why in not_run)
        required = [p for p, _ in not_run if (config.require_cuda() if p == "cuda"
                                               else config.require_metal())]
        variable = " and ".join(
            "CUNUMPY_REQUIRE_CUDA" if p == "cuda" else "CUNUMPY_REQUIRE_METAL" for p in required
        )
        message = f"{tag} {reasons}" + (f" (checked: {done})" if done else "")
        ports_not_run(message, bool(required), variable or "CUNUMPY_REQUIRE_*", dict(not_run),
                      checked)
    return checked
