"""``cupy.ElementwiseKernel`` of the stand-in: CuPy's elementwise semantics, run on emu-cuda.

A call binds the type placeholders and allocates the outputs exactly as CuPy 14 does
(``cupy/_core/_kernel.pyx``): single-letter types are placeholders, bound by the output arrays
first, then by the input arrays (0-d ones included), never by scalars; two dtypes for one
placeholder raise ``TypeError``. Non-``raw`` arrays broadcast together (outputs included, whose
shape must be the broadcast shape); ``raw`` arrays are indexed flat in C order (also when not
contiguous); ``size=`` sets the loop size when every array is ``raw``. The shape is reduced
(``reduce_dims``) by CuPy's rule, which decides what ``_ind.get()`` holds.

The generated CUDA (:meth:`ElementwiseKernel.source`) is the emulator's equivalent of CuPy's: the
same ``typedef``s, preamble, ``loop_prep``, grid-stride loop ``for (ptrdiff_t i = ...; i <
_ind.size(); i += blockDim.x * gridDim.x)`` with a mutable ``i``, ``_ind.set(i)``, references
``const T& x`` / ``T& y`` to the elements of non-raw arrays, and ``after_loop``. In place of
CuPy's ``CArray`` parameters the arrays are pointer parameters of the kernel (bounds-checked by
the emulator) whose strides come in a geometry array; a ``raw`` array's ``x.size()``,
``x.shape()``, ``x.strides()`` and ``x.data()`` read that geometry. The launch has blocks of
``min(block_size, n)`` threads (``block_size`` 128 by default) and ``ceil(n / block_size)``
blocks, as ``linear_launch``. Outputs the call allocates are checked for elements the kernel
left unwritten (uninitialised memory on a GPU).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cunumpy._lang.tokens import tokenize
from cunumpy.testing.cupy_on_cpu._array import ndarray, unwrap, wrap

__all__ = ["ElementwiseKernel", "Param", "c_type_name", "parse_params"]

_TYPE_NAMES = {
    "b": "bool", "i1": "signed char", "u1": "unsigned char", "i2": "short",
    "u2": "unsigned short", "i4": "int", "u4": "unsigned int", "i8": "long long",
    "u8": "unsigned long long", "f2": "float16", "f4": "float", "f8": "double",
    "c8": "complex<float>", "c16": "complex<double>",
}


def c_type_name(dtype: Any) -> str:
    """CuPy's C name of a dtype (``float32`` -> ``float``, ``complex64`` ->
    ``complex<float>``)."""
    dt = np.dtype(dtype)
    key = "b" if dt.kind == "b" else f"{dt.kind}{dt.itemsize}"
    name = _TYPE_NAMES.get(key)
    if name is None:
        raise TypeError(f"dtype {dt} has no C type in CuPy's kernels")
    return name


@dataclass(frozen=True)
class Param:
    """One parameter of ``in_params``/``out_params`` (CuPy's ``ParameterInfo``)."""

    name: str
    ctype: str
    """A placeholder (one letter) or the C name of a fixed dtype."""
    dtype: np.dtype | None
    raw: bool
    is_const: bool


def parse_params(text: str, is_const: bool, kernel: str) -> tuple[Param, ...]:
    """CuPy's parameter list syntax: ``"T x, raw float32 y, _non_const T z"``."""
    if not isinstance(text, str):
        raise TypeError(f"[cupy kernel {kernel!r}] parameter lists are str, got {text!r}")
    if not text.strip():
        return ()
    out = []
    for item in text.strip().split(","):
        s = item.split()
        if len(s) < 2:
            raise Exception(f"Syntax error: {item}")  # CuPy raises a bare Exception
        t, name = s[-2:]
        raw, const = False, is_const
        for word in s[:-2]:
            if word == "raw":
                raw = True
            elif word == "_non_const":
                const = False
            else:
                raise Exception(f'Unknown keyword "{word}"')
        if len(t) == 1:
            out.append(Param(name, t, None, raw, const))
        else:
            try:
                dt = np.dtype(t)
            except TypeError as exc:
                raise TypeError(
                    f"[cupy kernel {kernel!r}] parameter {name!r}: unknown type {t!r} (use a "
                    "NumPy dtype name such as float32, or a one-letter placeholder)"
                ) from exc
            out.append(Param(name, c_type_name(dt), dt, raw, const))
    return tuple(out)


def decide_types(kernel: str, in_params: Sequence[Param], out_params: Sequence[Param],
                 in_dtypes: Sequence[Any], out_dtypes: Sequence[Any]) -> tuple:
    """CuPy's ``_decide_params_type_core``: outputs bind placeholders first, then input
    arrays; ``None`` (a scalar) binds nothing."""
    types: dict[str, np.dtype] = {}
    groups = ((out_params, out_dtypes), (in_params, in_dtypes)) if out_dtypes else (
        ((in_params, in_dtypes),))
    for group in groups:
        for p, a in zip(*group, strict=True):
            if a is None:
                continue
            a = np.dtype(a)
            if p.dtype is not None:
                if a != p.dtype:
                    raise TypeError(f"Type is mismatched. {p.name} {a} {p.dtype}")
            elif p.ctype in types:
                if types[p.ctype] != a:
                    raise TypeError(
                        f"Type is mismatched. {p.name} {a} {types[p.ctype]} {p.ctype}"
                    )
            else:
                types[p.ctype] = a

    def resolve(p: Param) -> np.dtype:
        if p.dtype is not None:
            return p.dtype
        if p.ctype not in types:
            raise TypeError(
                f"[cupy kernel {kernel!r}] the type {p.ctype} of parameter {p.name!r} is bound "
                "by no array argument (scalars do not bind placeholders); pass an array of "
                f"that type, or declare {p.name!r} with a fixed type"
            )
        return types[p.ctype]

    return (tuple(resolve(p) for p in in_params), tuple(resolve(p) for p in out_params),
            tuple(sorted(types.items())))


def broadcast_shape(shapes: list[tuple[int, ...]]) -> tuple[int, ...]:
    """The broadcast shape, with CuPy's message when there is none."""
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        text = " ".join(str(tuple(s)) for s in shapes)
        raise ValueError(f"operands could not be broadcast together with shapes {text}") from None


def reduced_shape(shape: tuple[int, ...], arrays: list[np.ndarray]) -> tuple[tuple, list]:
    """CuPy's ``_reduced_view_core``: the loop shape and each array's strides after merging
    axes that every array walks contiguously."""
    ndim = len(shape)
    if ndim <= 1 or not arrays:
        return shape, [a.strides for a in arrays]
    strided = [a for a in arrays if not a.flags.c_contiguous]
    if not strided:
        return (int(np.prod(shape)),), [(a.itemsize,) for a in arrays]
    if ndim == 2:
        return shape, [a.strides for a in arrays]
    vec = list(shape)
    axes: list[int] = []
    last = -1
    for ax in range(ndim):
        if vec[ax] == 1:
            continue
        if last < 0:
            last = ax
            continue
        if any(a.strides[ax] * vec[ax] != a.strides[last] for a in strided):
            axes.append(last)
        else:
            vec[ax] *= vec[last]
        last = ax
    if last >= 0:
        axes.append(last)
    if len(axes) == ndim:
        return shape, [a.strides for a in arrays]
    return tuple(vec[ax] for ax in axes), [tuple(a.strides[ax] for ax in axes) for a in arrays]


def span(data: np.ndarray, strides: Sequence[int]) -> tuple[np.ndarray, int, list[int]] | None:
    """The 1-D buffer over the memory ``data`` covers, the element offset of its first element in
    it and its strides in elements (None when a stride is not a multiple of the item size)."""
    item = data.itemsize
    if any(s % item for s in strides):
        return None
    if data.size == 0:
        return np.empty(0, dtype=data.dtype), 0, [0] * len(strides)
    lo = sum((n - 1) * s for n, s in zip(data.shape, data.strides, strict=True) if s < 0)
    hi = sum((n - 1) * s for n, s in zip(data.shape, data.strides, strict=True) if s > 0)
    start = data[tuple(slice(n - 1, n) if s < 0 else slice(0, 1)
                       for n, s in zip(data.shape, data.strides, strict=True))] if data.ndim \
        else data.reshape(1)  # a view (indexing a 0-d array with () would copy)
    buf = np.lib.stride_tricks.as_strided(
        start, shape=((hi - lo) // item + 1,), strides=(item,),
        writeable=data.flags.writeable,
    )
    return buf, -lo // item, [s // item for s in strides]


_MEMBERS = {"size": "_cn_size_{n}", "shape": "_cn_shape_{n}", "strides": "_cn_strides_{n}",
            "data": "(&{n}[0])"}


def _matching(sig: list, k: int) -> int:
    """Index of the token closing the bracket opened at ``sig[k]``."""
    depth = 0
    for j in range(k, len(sig)):
        if sig[j].text in ("[", "(", "{"):
            depth += 1
        elif sig[j].text in ("]", ")", "}"):
            depth -= 1
            if depth == 0:
                return j
    return -1


def rewrite_raw_members(text: str, raw_names: set[str]) -> str:
    """A raw array ``x`` (a ``CArray`` in CuPy, a pointer parameter here) as CuPy's code uses
    it: ``x.size()``, ``x.shape()``, ``x.strides()``, ``x.data()`` and ``x.ndim`` read locals
    that hold them, and a subscript ``x[E]`` becomes ``x[_cn_index(_cn_g_x, E)]``, which is
    ``E`` for an integer and the C-order offset of an index array (``int idx[] = {b, i};
    x[idx]``) otherwise; the subscript stays on the pointer, so the emulator checks it and
    names its line."""
    if not raw_names or not any(n in text for n in raw_names):
        return text
    toks = tokenize(text)
    sig = [t for t in toks if t.kind not in ("ws", "comment")]
    edits: list[tuple[int, int, str]] = []
    k = 0
    while k < len(sig) - 1:
        t = sig[k]
        if t.kind != "ident" or t.text not in raw_names or (
                k and sig[k - 1].text in (".", "->", "::")):
            k += 1
            continue
        nxt = sig[k + 1].text
        if nxt == "[":
            close = _matching(sig, k + 1)
            if close < 0:
                break
            inner_start = sig[k + 1].start + 1
            inner = rewrite_raw_members(text[inner_start:sig[close].start], raw_names)
            edits.append((sig[k + 1].start, sig[close].start + 1,
                          f"[_cn_index(_cn_g_{t.text}, ({inner}))]"))
            k = close + 1
            continue
        if nxt == "." and k + 2 < len(sig):
            member = sig[k + 2].text
            if member == "ndim":
                edits.append((t.start, sig[k + 2].start + 4, f"_cn_ndim_{t.text}"))
            elif member in _MEMBERS and k + 4 < len(sig) and sig[k + 3].text == "(" \
                    and sig[k + 4].text == ")":
                edits.append((t.start, sig[k + 4].start + 1,
                              _MEMBERS[member].format(n=t.text)))
        k += 1
    for start, stop, new in reversed(edits):
        text = text[:start] + new + text[stop:]
    return text


def raw_locals(name: str, pos: int) -> list[str]:
    """The kernel's locals describing raw array ``name`` (its geometry at ``_cn_geom + pos``:
    size, ndim, 64 extents, 64 byte strides, 64 element strides)."""
    return [f"  const ptrdiff_t _cn_size_{name} = _cn_geom[{pos}];",
            f"  const int _cn_ndim_{name} = int(_cn_geom[{pos + 1}]);",
            f"  const ptrdiff_t* _cn_shape_{name} = (const ptrdiff_t*)(_cn_geom + {pos + 2});",
            f"  const ptrdiff_t* _cn_strides_{name} = "
            f"(const ptrdiff_t*)(_cn_geom + {pos + 2 + 64});",
            f"  const long long* _cn_g_{name} = _cn_geom + {pos};"]


RAW_SLOTS = 2 + 3 * 64


def raw_geometry(buf: np.ndarray) -> list[int]:
    """The geometry words of a C-contiguous raw array (see :func:`raw_locals`)."""
    pad = [0] * (64 - buf.ndim)
    elems = [s // buf.itemsize for s in buf.strides]
    return [buf.size, buf.ndim, *buf.shape, *pad, *buf.strides, *pad, *elems, *pad]


def raw_argument(value: ndarray, writable: bool,
                 writeback: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, list[int]]:
    """A ``raw`` array's C-contiguous buffer and geometry words. A copy made for a writable
    parameter is noted in ``writeback`` (``(array, copy)``) to be written back after the launch."""
    data = unwrap(value)
    buf = np.ascontiguousarray(data)
    if buf is not data and writable:
        writeback.append((data, buf))
    return buf, raw_geometry(buf)


class _Lines:
    """Generated text with ``#line`` directives: the user's fragments report their own lines."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.out: list[str] = []

    def own(self, *lines: str) -> None:
        self.out.append(f'#line {len(self.out) + 2} "{self.label}"')
        self.out.extend(lines)

    def user(self, what: str, text: str) -> None:
        if text.strip():
            self.out.append(f'#line 1 "{what}"')
            self.out.extend(text.split("\n"))

    def text(self) -> str:
        return "\n".join(self.out) + "\n"


INDEXER = r"""
template <class I, std::enable_if_t<std::is_integral<I>::value || std::is_enum<I>::value, int> = 0>
__device__ inline ptrdiff_t _cn_index(const long long*, I i) { return ptrdiff_t(i); }
template <class I>
__device__ inline ptrdiff_t _cn_index(const long long* g, const I* idx) {
  ptrdiff_t o = 0;
  for (int k = 0; k < int(g[1]); ++k) o += ptrdiff_t(idx[k]) * g[2 + 128 + k];
  return o;
}
template <int NDIM>
struct _CnIndexer {
  ptrdiff_t n;
  const long long* shape;
  ptrdiff_t idx[NDIM > 0 ? NDIM : 1];
  __device__ ptrdiff_t size() const { return n; }
  __device__ void set(ptrdiff_t i) {
    for (int k = NDIM - 1; k >= 0; --k) { idx[k] = i % shape[k]; i /= shape[k]; }
  }
  __device__ const ptrdiff_t* get() const { return idx; }
  __device__ ptrdiff_t offset(const long long* g) const {
    ptrdiff_t o = g[0];
    for (int k = 0; k < NDIM; ++k) o += idx[k] * g[1 + k];
    return o;
  }
};
"""


def typedefs(type_map: Sequence[tuple[str, np.dtype]]) -> list[str]:
    return [f"typedef {c_type_name(dt)} {name};" for name, dt in type_map]


class ElementwiseKernel:
    """A user-defined elementwise kernel, as ``cupy.ElementwiseKernel``, run on emu-cuda.

    Parameters
    ----------
    in_params, out_params : str
        Parameter lists (``"T x, raw float32 y"``); ``raw`` arrays are indexed by the body,
        others are the current element. ``i`` may not be a parameter name.
    operation : str
        The loop body (CUDA C++); ``i`` is the loop index, ``_ind.size()`` the loop size.
    name : str, default 'kernel'
    reduce_dims : bool, default True
        Merge axes before the launch (CuPy's rule); decides what ``_ind.get()`` indexes.
    preamble, loop_prep, after_loop : str
        Code before the kernel, before the loop and after it.
    no_return, return_tuple : bool
        What a call returns: None, or a tuple even for one output.
    options : tuple of str
        Compiler options (``-D``/``-U``/``-I`` honoured).

    Notes
    -----
    ``kernel(*args, size=-1, block_size=128, stream=None)``; ``args`` are the inputs, optionally
    followed by every output. ``emulator_options`` (None: from the environment) sets the
    emulator's checks for the launches.
    """

    def __init__(self, in_params: str, out_params: str, operation: str, name: str = "kernel",
                 reduce_dims: bool = True, preamble: str = "", no_return: bool = False,
                 return_tuple: bool = False, loop_prep: str = "", after_loop: str = "",
                 options: tuple = ()) -> None:
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise ValueError(f'Invalid kernel name: "{name}"')
        self.in_params = parse_params(in_params, True, name)
        self.out_params = parse_params(out_params, False, name)
        self.nin = len(self.in_params)
        self.nout = len(self.out_params)
        self.nargs = self.nin + self.nout
        self.params = self.in_params + self.out_params
        if "i" in [p.name for p in self.params]:
            raise ValueError("Can not use 'i' as a parameter name")
        self.operation = operation
        self.name = self.__name__ = name
        self.reduce_dims = bool(reduce_dims)
        self.preamble = preamble
        self.no_return = bool(no_return)
        self.return_tuple = bool(return_tuple)
        self.loop_prep = loop_prep
        self.after_loop = after_loop
        self.options = tuple(options)
        self.emulator_options: Any = None
        self._kernels: dict[tuple, Any] = {}
        self._sources: dict[tuple, str] = {}

    # -- the generated CUDA --------------------------------------------------------------------
    def _source(self, kinds: tuple, dtypes: tuple, type_map: tuple, ndim: int) -> str:
        """The kernel's CUDA text for one binding (``kinds``: 'a' array, 's' scalar)."""
        raw_names = {p.name for p, k in zip(self.params, kinds, strict=True)
                     if k == "a" and p.raw}
        lines = _Lines(f"{self.name}.cu")
        lines.own("#include <cupy/carray.cuh>", *typedefs(type_map))
        lines.user("preamble", rewrite_raw_members(self.preamble, raw_names))
        lines.own(*INDEXER.strip("\n").split("\n"))
        plist = []
        for p, k, dt in zip(self.params, kinds, dtypes, strict=True):
            const = "const " if p.is_const else ""
            ct = p.ctype if p.dtype is None else c_type_name(dt)
            if k == "s":
                plist.append(f"{ct} {p.name}")
            else:
                plist.append(f"{const}{ct}* {p.name if p.raw else '_raw_' + p.name}")
        plist.append("const long long* _cn_geom")
        head = [f'extern "C" __global__ void {self.name}({", ".join(plist)}) {{',
                f"  _CnIndexer<{ndim}> _ind;", "  _ind.n = _cn_geom[0];",
                "  _ind.shape = _cn_geom + 1;"]
        pos = 1 + ndim
        offsets = {}
        for p, k in zip(self.params, kinds, strict=True):
            if k != "a":
                continue
            if p.raw:
                head += raw_locals(p.name, pos)
                pos += RAW_SLOTS
            else:
                offsets[p.name] = pos
                pos += 1 + ndim
        lines.own(*head)
        lines.user("loop_prep", rewrite_raw_members(self.loop_prep, raw_names))
        lines.own("  ;", "  #pragma unroll 1",
                  "  for (ptrdiff_t i = static_cast<ptrdiff_t>(blockIdx.x) * blockDim.x + "
                  "threadIdx.x; i < _ind.size(); i += static_cast<ptrdiff_t>(blockDim.x) * "
                  "gridDim.x) {", "    _ind.set(i);")
        refs = []
        for p, k in zip(self.params, kinds, strict=True):
            if k == "a" and not p.raw:
                const = "const " if p.is_const else ""
                refs.append(f"    {const}{p.ctype} &{p.name} = "
                            f"_raw_{p.name}[_ind.offset(_cn_geom + {offsets[p.name]})];")
        if refs:
            lines.own(*refs)
        lines.user("operation", rewrite_raw_members(self.operation, raw_names))
        lines.own("    ;", "  }")
        lines.user("after_loop", rewrite_raw_members(self.after_loop, raw_names))
        lines.own("  ;", "}")
        return lines.text()

    @property
    def cached_codes(self) -> dict[tuple, str]:
        """The generated sources by binding, for debugging (as CuPy's)."""
        return dict(self._sources)

    # -- calling -------------------------------------------------------------------------------
    def __call__(self, *args: Any, size: int = -1, block_size: int = 128, stream: Any = None,
                 **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(f"Wrong arguments {kwargs}")
        if block_size <= 0:
            raise ValueError("block_size must be greater than zero")
        if len(args) not in (self.nin, self.nargs):
            raise TypeError(
                f"Wrong number of arguments for {self.name!r}. It must be either {self.nin} or "
                f"{self.nargs} (with outputs), but given {len(args)}."
            )
        for k, a in enumerate(args):
            if isinstance(a, np.ndarray):
                raise TypeError(
                    f"Unsupported type {type(a)} (argument {k} of kernel {self.name!r}: a NumPy "
                    "array; move it with cupy.asarray first)"
                )
        params = self.params
        in_args = list(args[: self.nin])
        out_args = list(args[self.nin:])
        nonraw = [unwrap(a) for a, p in zip(args, params, strict=False)
                  if isinstance(a, ndarray) and not p.raw]
        if size != -1:
            if nonraw:
                raise ValueError("Specified 'size' can be used only if all of the ndarray are "
                                 "'raw'.")
            shape: tuple[int, ...] = (int(size),)
        else:
            if not nonraw:
                raise ValueError("Loop size is undecided.")
            shape = broadcast_shape([a.shape for a in nonraw])
        in_dtypes = [unwrap(a).dtype if isinstance(a, ndarray) else None for a in in_args]
        for a in out_args:
            if not isinstance(a, ndarray):
                raise TypeError("Output arguments type must be cupy.ndarray")
        in_types, out_types, type_map = decide_types(
            self.name, self.in_params, self.out_params, in_dtypes,
            [unwrap(a).dtype for a in out_args])
        fresh = not out_args
        if fresh:
            for p in self.out_params:
                if p.raw and size == -1:
                    raise ValueError("Output array size is Undecided")
            out_args = [wrap(np.empty(shape, dtype=t)) for t in out_types]
        else:
            for p, a in zip(self.out_params, out_args, strict=True):
                if not p.raw and unwrap(a).shape != shape:
                    raise ValueError("Out shape is mismatched")
        ret = None if self.no_return else (
            out_args[0] if not self.return_tuple and self.nout == 1 else tuple(out_args))
        if 0 in shape:
            return ret
        self._launch(in_args + out_args, in_types + out_types, type_map, shape, fresh,
                     int(block_size))
        return ret

    def _launch(self, values: list, dtypes: tuple, type_map: tuple, shape: tuple, fresh: bool,
                block_size: int) -> None:
        from cunumpy.emulation.cuda import program_for, run_cuda

        params = self.params
        kinds = tuple("a" if isinstance(v, ndarray) else "s" for v in values)
        views = []
        writeback: list[tuple[np.ndarray, np.ndarray]] = []
        for p, v in zip(params, values, strict=True):
            if isinstance(v, ndarray) and not p.raw:
                data = unwrap(v)
                view = np.broadcast_to(data, shape) if data.shape != shape else data
                if any(s % view.itemsize for s in view.strides) or (
                        not p.is_const and not view.flags.writeable):
                    copy = np.ascontiguousarray(view)
                    if not p.is_const:
                        writeback.append((view, copy))
                    view = copy
                views.append(view)
        if self.reduce_dims:
            loop, strides = reduced_shape(tuple(shape), views)
        else:
            loop, strides = tuple(shape), [v.strides for v in views]
        n = int(np.prod(loop)) if loop else 1
        geom = [n, *loop]
        args: list[Any] = []
        k = 0
        for p, v, dt in zip(params, values, dtypes, strict=True):
            if not isinstance(v, ndarray):
                args.append(_scalar(v, dt))
                continue
            if p.raw:
                buf, words = raw_argument(v, not p.is_const, writeback)
                geom += words
                args.append(buf)
                continue
            sp = span(views[k], strides[k])
            k += 1
            assert sp is not None
            buf, base, est = sp
            geom += [base, *est]
            args.append(buf)
        geom_arr = np.array(geom, dtype=np.int64)
        args.append(geom_arr)
        key = (kinds, tuple(np.dtype(d).str for d in dtypes), type_map, len(loop), fresh)
        kern = self._kernels.get(key)
        if kern is None:
            from cunumpy.kernels.cuda import CudaKernel

            src = self._source(kinds, dtypes, type_map, len(loop))
            outs = [(p.name if p.raw else "_raw_" + p.name) for p in self.out_params] \
                if fresh else []
            kern = CudaKernel(src, self.name, options=self.options, check_signature=False,
                              engine="emu-cuda", outputs=outs or None)
            self._kernels[key] = kern
            self._sources[key] = src
        threads = min(block_size, n)
        blocks = min(0x7FFFFFFF, -(-n // block_size))
        run_cuda(program_for(kern.program), args, (blocks, 1, 1), (threads, 1, 1), 0,
                 options=self.emulator_options)
        for dst, src in writeback:
            dst[...] = src

    def __repr__(self) -> str:
        return f"<ElementwiseKernel {self.name!r} (cupy stand-in, emu-cuda)>"


def _scalar(value: Any, dtype: np.dtype) -> Any:
    """A scalar argument converted to its parameter's type (CuPy's ``CScalar.apply_dtype``)."""
    dt = np.dtype(dtype)
    with np.errstate(all="ignore"):
        arr = np.array(value).astype(dt)
    if dt.kind == "c" or (dt.itemsize == 2 and dt.kind == "f"):
        return np.frombuffer(arr.tobytes(), dtype=np.uint8).copy()
    return arr[()]
