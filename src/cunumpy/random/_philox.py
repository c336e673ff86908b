"""Philox4x32-10 streams on NumPy or CuPy arrays: cuRAND's ``curandStatePhilox4_32_10_t``,
one stream per element, with the device functions as methods.

Each method does, for every stream at once, what the cuRAND device function of the same name
does to one state: the same numbers, the same advance of the state (including the normal that
``curand_normal`` keeps for its next call). The state is held exactly as cuRAND holds it
(counter, key, the current block of four outputs, the position in it), so the results equal
the GPU's for every sequence of calls, not only from a fresh start.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from cunumpy.random import _float as fl


def backend_namespace() -> Any:
    """``numpy`` or ``cupy``: the module of the active cunumpy backend."""
    from cunumpy._backend import _backend_module, get_backend

    return _backend_module(get_backend())

_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint32(0x9E3779B9), np.uint32(0xBB67AE85)
_LO = np.uint64(0xFFFFFFFF)
_U32 = np.uint32
_ONE = np.uint32(1)


def philox4x32_10(xp: Any, ctr: Any, key: Any) -> Any:
    """Ten Philox rounds: ``ctr`` uint32[4, ...], ``key`` uint32[2, ...] -> uint32[4, ...]."""
    c0, c1, c2, c3 = (ctr[i] for i in range(4))
    k0, k1 = key[0], key[1]
    for r in range(10):
        if r:
            k0 = k0 + _W0
            k1 = k1 + _W1
        p0 = c0.astype(np.uint64) * _M0
        p1 = c2.astype(np.uint64) * _M1
        hi0, lo0 = (p0 >> np.uint64(32)).astype(_U32), (p0 & _LO).astype(_U32)
        hi1, lo1 = (p1 >> np.uint64(32)).astype(_U32), (p1 & _LO).astype(_U32)
        c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return xp.stack([c0, c1, c2, c3])


def _u64(xp: Any, value: Any, name: str, shape: tuple[int, ...] | None = None) -> Any:
    """``value`` as uint64 (broadcast to ``shape``), refusing negative or fractional numbers."""
    host = np.asarray(value.get() if hasattr(value, "get") else value)
    if host.dtype.kind == "f" or host.dtype.kind == "c" or host.dtype == bool:
        raise TypeError(f"cunumpy.random: {name} must be an integer or integer array, "
                        f"not {host.dtype}")
    if host.dtype.kind == "O" or host.dtype.kind == "i":
        if (host < 0).any() or (host >= 2**64).any():
            raise ValueError(f"cunumpy.random: {name} must be in [0, 2**64), got "
                             f"{host.min()}..{host.max()}")
    out = xp.asarray(host.astype(np.uint64))
    return out if shape is None else xp.broadcast_to(out, shape).copy()


def _public(method: Any) -> Any:
    """A result for the caller: 0-d streams give 0-d results (calls inside the class see the
    one-element arrays the state is held in)."""
    @functools.wraps(method)
    def call(self: Philox4x32_10, *args: Any, **kwargs: Any) -> Any:
        if self._depth:
            return method(self, *args, **kwargs)
        self._depth += 1
        try:
            return self._out(method(self, *args, **kwargs))
        finally:
            self._depth -= 1
    return call


class Philox4x32_10:
    """Counter-based Philox4x32-10 streams whose numbers equal cuRAND's, on NumPy or CuPy.

    Parameters
    ----------
    seed, subsequence, offset : int or array of int
        As in ``curand_init(seed, subsequence, offset, &state)``: each combination is one
        stream (``seed`` selects the key, ``subsequence`` a block of 2**66 numbers, ``offset``
        the position inside it). Broadcast together; the result's shape is the streams' shape.
    xp : module, optional
        ``numpy`` or ``cupy`` (default: the active cunumpy backend).

    Examples
    --------
    One stream per thread, as a CUDA kernel calls ``curand_init(1234, i, 0, &s)``:

    >>> import numpy as np
    >>> from cunumpy.random import Philox4x32_10
    >>> s = Philox4x32_10(1234, subsequence=np.arange(4), xp=np)
    >>> s.uniform().dtype, s.uniform().shape
    (dtype('float32'), (4,))
    >>> int(Philox4x32_10(0, xp=np).curand())  # Random123's known answer for key 0, counter 0
    1713891541
    """

    def __init__(self, seed: Any, subsequence: Any = 0, offset: Any = 0, *,
                 xp: Any = None) -> None:
        self.xp = xp = backend_namespace() if xp is None else xp
        shape = np.broadcast_shapes(np.shape(seed), np.shape(subsequence), np.shape(offset))
        self.shape = tuple(shape)
        self._depth = 0
        self._scalar = self.shape == ()
        if self._scalar:  # held as one element (NumPy warns on wrapping 0-d arithmetic)
            self.shape = (1,)
        seed64 = _u64(xp, seed, "seed", self.shape)
        self.key = xp.stack([(seed64 & _LO).astype(_U32), (seed64 >> np.uint64(32)).astype(_U32)])
        self.ctr = xp.zeros((4, *self.shape), dtype=_U32)
        self.STATE = xp.zeros(self.shape, dtype=_U32)
        self.boxmuller_flag = xp.zeros(self.shape, dtype=np.int32)
        self.boxmuller_flag_double = xp.zeros(self.shape, dtype=np.int32)
        self.boxmuller_extra = xp.zeros(self.shape, dtype=np.float32)
        self.boxmuller_extra_double = xp.zeros(self.shape, dtype=np.float64)
        self.output = self.ctr.copy()
        self.skipahead_sequence(_u64(xp, subsequence, "subsequence", self.shape))
        self.skipahead(_u64(xp, offset, "offset", self.shape))

    # -- positioning ---------------------------------------------------------------------------
    def skipahead_sequence(self, n: Any) -> None:
        """Skip ``n`` subsequences (``n * 2**66`` numbers)."""
        xp, c = self.xp, self.ctr
        n64 = _u64(xp, n, "n", self.shape)
        nlo, nhi = (n64 & _LO).astype(_U32), (n64 >> np.uint64(32)).astype(_U32)
        c[2] = c[2] + nlo
        nhi = nhi + (c[2] < nlo).astype(_U32)
        c[3] = c[3] + nhi
        self.output = philox4x32_10(xp, c, self.key)

    def skipahead(self, n: Any) -> None:
        """Skip ``n`` numbers."""
        xp, c = self.xp, self.ctr
        n64 = _u64(xp, n, "n", self.shape)
        state = self.STATE + (n64 & np.uint64(3)).astype(_U32)
        blocks = n64 >> np.uint64(2)
        over = state > 3
        blocks = blocks + over.astype(np.uint64)
        self.STATE = xp.where(over, state - np.uint32(4), state)
        nlo, nhi = (blocks & _LO).astype(_U32), (blocks >> np.uint64(32)).astype(_U32)
        c[0] = c[0] + nlo
        nhi = nhi + (c[0] < nlo).astype(_U32)
        c[1] = c[1] + nhi
        carry = nhi > c[1]  # cuRAND carries into z and w only when y wrapped
        c[2] = c[2] + carry.astype(_U32)
        c[3] = c[3] + (carry & (c[2] == 0)).astype(_U32)
        self.output = philox4x32_10(xp, c, self.key)

    def _next_block(self, mask: Any) -> None:
        c, m = self.ctr, mask.astype(_U32)
        c[0] = c[0] + m
        m = m & (c[0] == 0).astype(_U32)
        c[1] = c[1] + m
        m = m & (c[1] == 0).astype(_U32)
        c[2] = c[2] + m
        m = m & (c[2] == 0).astype(_U32)
        c[3] = c[3] + m
        self.output = self.xp.where(mask, philox4x32_10(self.xp, c, self.key), self.output)

    def _out(self, value: Any) -> Any:
        return value[0] if self._scalar else value

    @property
    def streams_shape(self) -> tuple[int, ...]:
        """The shape of the streams (of every result, before a ``4``/``2`` form's last axis)."""
        return () if self._scalar else self.shape

    def _all(self) -> Any:
        return self.xp.ones(self.shape, dtype=bool)

    # -- bits ----------------------------------------------------------------------------------
    def _curand(self, mask: Any) -> Any:
        xp = self.xp
        k = self.STATE
        r = xp.take_along_axis(self.output, k[None].astype(np.intp), axis=0)[0]
        k = k + mask.astype(_U32)
        wrap = k == 4
        self.STATE = xp.where(wrap, np.uint32(0), k)
        if bool(wrap.any()):
            self._next_block(wrap)
        return r

    def _curand4(self, mask: Any) -> Any:
        xp = self.xp
        a = self.output
        self._next_block(mask)
        both = xp.concatenate([a, self.output])
        idx = self.STATE[None].astype(np.intp) + xp.arange(4).reshape((4,) + (1,) * len(self.shape))
        return xp.moveaxis(xp.take_along_axis(both, idx, axis=0), 0, -1)

    @_public
    def curand(self) -> Any:
        """``curand(&s)``: the next 32-bit number of each stream (uint32)."""
        return self._curand(self._all())

    @_public
    def curand4(self) -> Any:
        """``curand4(&s)``: the next four numbers (uint32, last axis 4)."""
        return self._curand4(self._all())

    # -- uniforms ------------------------------------------------------------------------------
    @_public
    def uniform(self) -> Any:
        """``curand_uniform``: float32 in (0, 1]."""
        return fl.uniform_bits(self.xp, self.curand())

    @_public
    def uniform4(self) -> Any:
        """``curand_uniform4``: four float32 (last axis 4)."""
        return fl.uniform_bits(self.xp, self.curand4())

    @_public
    def uniform_double(self) -> Any:
        """``curand_uniform_double``: float64 in (0, 1] from one 32-bit number."""
        return fl.uniform_double_bits(self.xp, self.curand())

    @_public
    def uniform2_double(self) -> Any:
        """``curand_uniform2_double``: two float64 of 53 bits each (last axis 2)."""
        b = self.curand4()
        return self.xp.stack([fl.uniform_double_hq(self.xp, b[..., 0], b[..., 1]),
                              fl.uniform_double_hq(self.xp, b[..., 2], b[..., 3])], axis=-1)

    @_public
    def uniform4_double(self) -> Any:
        """``curand_uniform4_double``: four float64 of 53 bits each (last axis 4)."""
        return self.xp.concatenate([self.uniform2_double(), self.uniform2_double()], axis=-1)

    # -- normals -------------------------------------------------------------------------------
    def _pair(self, mask: Any) -> tuple[Any, Any]:
        x = self._curand(mask)
        y = self._curand(mask)
        return fl.box_muller(self.xp, x, y)

    def _pair_double(self, mask: Any) -> tuple[Any, Any]:
        b = self._curand4(mask)
        return fl.box_muller_double(self.xp, b[..., 0], b[..., 1], b[..., 2], b[..., 3])

    def _kept(self, flag: int, make: Any, double: bool) -> Any:
        """A one-value form: a new pair where none is kept (the second kept), else the kept one."""
        xp = self.xp
        flags = self.boxmuller_flag_double if double else self.boxmuller_flag
        extra = self.boxmuller_extra_double if double else self.boxmuller_extra
        fresh = flags != flag
        a, b = make(fresh)
        out = xp.where(fresh, a, extra)
        extra = xp.where(fresh, b, extra)
        flags = xp.where(fresh, np.int32(flag), np.int32(0))
        if double:
            self.boxmuller_flag_double, self.boxmuller_extra_double = flags, extra
        else:
            self.boxmuller_flag, self.boxmuller_extra = flags, extra
        return out

    @_public
    def normal(self) -> Any:
        """``curand_normal``: float32 standard normal (pairs; the second kept for the next call)."""
        return self._kept(1, self._pair, False)

    @_public
    def normal2(self) -> Any:
        """``curand_normal2``: two float32 normals (last axis 2)."""
        return self.xp.stack(self._pair(self._all()), axis=-1)

    @_public
    def normal4(self) -> Any:
        """``curand_normal4``: four float32 normals from one block (last axis 4)."""
        b = self.curand4()
        a = fl.box_muller(self.xp, b[..., 0], b[..., 1])
        c = fl.box_muller(self.xp, b[..., 2], b[..., 3])
        return self.xp.stack([a[0], a[1], c[0], c[1]], axis=-1)

    @_public
    def normal_double(self) -> Any:
        """``curand_normal_double``: float64 standard normal (pairs, as ``normal``)."""
        return self._kept(1, self._pair_double, True)

    @_public
    def normal2_double(self) -> Any:
        """``curand_normal2_double``: two float64 normals (last axis 2)."""
        return self.xp.stack(self._pair_double(self._all()), axis=-1)

    @_public
    def normal4_double(self) -> Any:
        """``curand_normal4_double``: four float64 normals (last axis 4)."""
        return self.xp.concatenate([self.normal2_double(), self.normal2_double()], axis=-1)

    # -- log-normals ---------------------------------------------------------------------------
    def _lift(self, v: Any, mean: Any, stddev: Any) -> Any:
        return fl.exp32(self.xp, fl.fma32(self.xp, stddev, v, mean))

    @_public
    def log_normal(self, mean: float, stddev: float) -> Any:
        """``curand_log_normal(&s, mean, stddev)``: float32 ``exp(mean + stddev * normal)``."""
        def make(mask: Any) -> tuple[Any, Any]:
            a, b = self._pair(mask)
            return self._lift(a, mean, stddev), self._lift(b, mean, stddev)
        return self._kept(2, make, False)

    @_public
    def log_normal2(self, mean: float, stddev: float) -> Any:
        """``curand_log_normal2``: two float32 log-normals (last axis 2)."""
        return self._lift(self.normal2(), mean, stddev)

    @_public
    def log_normal4(self, mean: float, stddev: float) -> Any:
        """``curand_log_normal4``: four float32 log-normals (last axis 4)."""
        return self._lift(self.normal4(), mean, stddev)

    @_public
    def log_normal_double(self, mean: float, stddev: float) -> Any:
        """``curand_log_normal_double``: float64 log-normal."""
        xp = self.xp

        def make(mask: Any) -> tuple[Any, Any]:
            a, b = self._pair_double(mask)
            return (xp.exp(fl.fma64(xp, stddev, a, mean)),
                    xp.exp(fl.fma64(xp, stddev, b, mean)))
        return self._kept(2, make, True)

    @_public
    def log_normal2_double(self, mean: float, stddev: float) -> Any:
        """``curand_log_normal2_double``: two float64 log-normals (last axis 2)."""
        return self.xp.exp(fl.fma64(self.xp, stddev, self.normal2_double(), mean))

    @_public
    def log_normal4_double(self, mean: float, stddev: float) -> Any:
        """``curand_log_normal4_double``: four float64 log-normals (last axis 4)."""
        return self.xp.exp(fl.fma64(self.xp, stddev, self.normal4_double(), mean))
