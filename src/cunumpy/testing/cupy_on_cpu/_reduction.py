"""``cupy.ReductionKernel`` of the stand-in: CuPy's reduction semantics, run on emu-cuda.

As in CuPy 14 (``cupy/_core/_reduction.pyx``): placeholders are bound as for
:class:`~._elementwise.ElementwiseKernel`; ``reduce_type`` defaults to the first output's type;
the inputs broadcast together; the reduced axes (``axis``, default all) are moved first, so the
element ``_j`` combined into output element ``_i`` is ``_j = _J * out_size + _i`` over the
permuted shape (``_J`` counts the reduced elements); the map expression reads ``const T x``
copies of the input elements in their own type and is then cast to ``_type_reduce``;
``post_map_expr`` sees the result as ``a`` and the output elements as references; the start
value is ``_type_reduce(identity)`` (value-initialised when ``identity`` is None), and a
zero-size reduction without identity raises ``ValueError``. An output may alias an input: no
copy is made.

Order of combination: one thread per output element folds its elements in increasing ``_J``
(``_s = REDUCE(_s, map(_J))``, starting from the identity). CuPy splits the ``_J`` range over the
threads of a block and combines their partial results in a shared-memory tree, so results of a
non-associative reduction (floating-point sums) may differ from a GPU's in the last bits; exact
reductions (integers, min, max, argmax through ``_J``) agree.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

from cunumpy.testing.cupy_on_cpu._array import ndarray, unwrap, wrap
from cunumpy.testing.cupy_on_cpu._elementwise import (
    INDEXER,
    RAW_SLOTS,
    _Lines,
    _scalar,
    broadcast_shape,
    c_type_name,
    decide_types,
    parse_params,
    raw_argument,
    raw_locals,
    reduced_shape,
    rewrite_raw_members,
    span,
    typedefs,
)

__all__ = ["ReductionKernel"]


def normalize_axis(axis: Any, ndim: int, name: str) -> tuple[int, ...]:
    """``axis`` (None, an int or a tuple of ints) as sorted non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    items = axis if isinstance(axis, tuple) else (axis,)
    out = []
    for a in items:
        a = operator.index(a)
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
        out.append(a % ndim if ndim else 0)
    if len(set(out)) != len(out):
        raise ValueError(f"[cupy kernel {name!r}] duplicate value in 'axis': {axis!r}")
    return tuple(sorted(out))


class ReductionKernel:
    """A user-defined reduction, as ``cupy.ReductionKernel``, run on emu-cuda.

    Parameters
    ----------
    in_params, out_params : str
        Parameter lists, as for :class:`~._elementwise.ElementwiseKernel`.
    map_expr : str
        The value of one input element (reads the input names).
    reduce_expr : str
        Combines ``a`` and ``b``.
    post_map_expr : str
        Writes the outputs from the result ``a``.
    identity : str or None
        The start value (C++ text).
    name : str, default 'reduce_kernel'
    reduce_type : str, optional
        The C type of ``a``/``b`` (default: the first output's type).
    reduce_dims : bool, default True
    preamble : str
    options : tuple of str

    Notes
    -----
    ``kernel(*args, out=None, axis=None, keepdims=False, stream=None)``. See the module
    documentation for the order in which elements are combined.
    """

    def __init__(self, in_params: str, out_params: str, map_expr: str, reduce_expr: str,
                 post_map_expr: str, identity: Any, name: str = "reduce_kernel",
                 reduce_type: str | None = None, reduce_dims: bool = True, preamble: str = "",
                 options: tuple = ()) -> None:
        import re

        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise ValueError(f'Invalid kernel name: "{name}"')
        self.name = self.__name__ = name
        self.identity = "" if identity is None else str(identity)
        self.in_params = parse_params(in_params, True, name)
        self.out_params = parse_params(out_params, False, name)
        if not self.out_params:
            raise ValueError(f"[cupy kernel {name!r}] a ReductionKernel needs an output")
        self.nin, self.nout = len(self.in_params), len(self.out_params)
        self.nargs = self.nin + self.nout
        self.params = self.in_params + self.out_params
        self.map_expr = map_expr
        self.reduce_expr = reduce_expr
        self.post_map_expr = post_map_expr
        self.reduce_type = self.out_params[0].ctype if reduce_type is None else reduce_type
        self.reduce_dims = bool(reduce_dims)
        self.preamble = preamble
        self.options = tuple(options)
        self.emulator_options: Any = None
        self._kernels: dict[tuple, Any] = {}
        self._sources: dict[tuple, str] = {}

    @property
    def cached_codes(self) -> dict[tuple, str]:
        """The generated sources by binding, for debugging."""
        return dict(self._sources)

    def _source(self, kinds: tuple, dtypes: tuple, type_map: tuple, in_nd: int,
                out_nd: int, index_t: str) -> str:
        raw = {p.name for p, k in zip(self.params, kinds, strict=True) if k == "a" and p.raw}
        lines = _Lines(f"{self.name}.cu")
        lines.own("#include <cupy/carray.cuh>", *typedefs(type_map), f"typedef {index_t} IndexT;")
        lines.user("preamble", rewrite_raw_members(self.preamble, raw))
        lines.own(f"#define REDUCE(a, b) ({rewrite_raw_members(self.reduce_expr, raw)})",
                  f"#define POST_MAP(a) ({rewrite_raw_members(self.post_map_expr, raw)})",
                  f"typedef {self.reduce_type} _type_reduce;",
                  *INDEXER.strip("\n").split("\n"))
        plist = []
        for p, k, dt in zip(self.params, kinds, dtypes, strict=True):
            ct = p.ctype if p.dtype is None else c_type_name(dt)
            if k == "s":
                plist.append(f"{ct} {p.name}")
            else:
                const = "const " if p.is_const else ""
                plist.append(f"{const}{ct}* {p.name if p.raw else '_raw_' + p.name}")
        plist.append("const long long* _cn_geom")
        body = [f'extern "C" __global__ void {self.name}({", ".join(plist)}) {{',
                f"  _CnIndexer<{in_nd}> _in_ind;", "  _in_ind.n = _cn_geom[0];",
                "  _in_ind.shape = _cn_geom + 2;",
                f"  _CnIndexer<{out_nd}> _out_ind;", "  _out_ind.n = _cn_geom[1];",
                f"  _out_ind.shape = _cn_geom + {2 + in_nd};"]
        pos = 2 + in_nd + out_nd
        ins, outs = [], []
        for j, (p, k) in enumerate(zip(self.params, kinds, strict=True)):
            if k != "a":
                continue
            if p.raw:
                body += raw_locals(p.name, pos)
                pos += RAW_SLOTS
            elif j < self.nin:
                ins.append(f"      {'const ' if p.is_const else ''}{p.ctype}"
                           f"{'' if p.is_const else '&'} {p.name} = "
                           f"_raw_{p.name}[_in_ind.offset(_cn_geom + {pos})];")
                pos += 1 + in_nd
            else:
                outs.append(f"    {p.ctype} &{p.name} = "
                            f"_raw_{p.name}[_out_ind.offset(_cn_geom + {pos})];")
                pos += 1 + out_nd
        body += [
            "  const ptrdiff_t _out_size = _out_ind.size();",
            "  for (ptrdiff_t _i = static_cast<ptrdiff_t>(blockIdx.x) * blockDim.x + "
            "threadIdx.x; _i < _out_size; _i += static_cast<ptrdiff_t>(blockDim.x) * "
            "gridDim.x) {",
            f"    _type_reduce _s = _type_reduce({self.identity});",
            "    IndexT _J = 0;",
            "    for (ptrdiff_t _j = _i; _j < _in_ind.size(); _j += _out_size, ++_J) {",
            "      _in_ind.set(_j);", *ins,
        ]
        lines.own(*body)
        lines.user("map_expr", "      _type_reduce _a = static_cast<_type_reduce>("
                   + rewrite_raw_members(self.map_expr, raw) + ");")
        lines.own("      _s = REDUCE(_s, _a);", "    }", "    _out_ind.set(_i);", *outs,
                  "    POST_MAP(_s);", "  }", "}")
        return lines.text()

    def __call__(self, *args: Any, out: Any = None, axis: Any = None, keepdims: bool = False,
                 stream: Any = None, **kwargs: Any) -> Any:
        if kwargs:
            raise TypeError(f"Wrong arguments {kwargs}")
        if len(args) not in (self.nin, self.nargs):
            raise TypeError(f"Wrong number of arguments for {self.name}")
        for k, a in enumerate(args):
            if isinstance(a, np.ndarray):
                raise TypeError(f"Unsupported type {type(a)} (argument {k} of kernel "
                                f"{self.name!r}: a NumPy array; move it with cupy.asarray)")
        in_args = list(args[: self.nin])
        out_args = list(args[self.nin:])
        if out is not None:
            if self.nout != 1:
                raise NotImplementedError("")
            if out_args:
                raise ValueError("cannot specify 'out' as both a positional and keyword "
                                 "argument")
            out_args = [out]
        arrays = [unwrap(a) for a, p in zip(in_args, self.in_params, strict=True)
                  if isinstance(a, ndarray) and not p.raw]
        if not arrays:
            raise ValueError("Loop size is undecided.")
        shape = broadcast_shape([a.shape for a in arrays])
        for a in out_args:
            if not isinstance(a, ndarray):
                raise TypeError("Output arguments type must be cupy.ndarray")
        in_types, out_types, type_map = decide_types(
            self.name, self.in_params, self.out_params,
            [unwrap(a).dtype if isinstance(a, ndarray) else None for a in in_args],
            [unwrap(a).dtype for a in out_args])
        red = normalize_axis(axis, len(shape), self.name)
        keep = tuple(ax for ax in range(len(shape)) if ax not in red)
        out_shape = tuple(1 if ax in red else n for ax, n in enumerate(shape)) if keepdims \
            else tuple(shape[ax] for ax in keep)
        if not out_args:
            out_args = [wrap(np.empty(out_shape, dtype=t)) for t in out_types]
            fresh = True
        else:
            fresh = False
            for p, a in zip(self.out_params, out_args, strict=True):
                if not p.raw and unwrap(a).shape != out_shape:
                    raise ValueError("Out shape is mismatched")
        ret = out_args[0] if self.nout == 1 else tuple(out_args)
        if int(np.prod(out_shape)) == 0:
            return ret
        if self.identity == "" and 0 in shape:
            raise ValueError(f"zero-size array to reduction operation {self.name} which has "
                             "no identity")
        self._launch(in_args, out_args, in_types + out_types, type_map, shape, red + keep,
                     out_shape, fresh)
        return ret

    def _launch(self, in_args: list, out_args: list, dtypes: tuple, type_map: tuple,
                shape: tuple, perm: tuple, out_shape: tuple, fresh: bool) -> None:
        from cunumpy.emulation.cuda import program_for, run_cuda

        values = in_args + out_args
        kinds = tuple("a" if isinstance(v, ndarray) else "s" for v in values)
        in_views, out_views = [], []
        for j, (p, v) in enumerate(zip(self.params, values, strict=True)):
            if not isinstance(v, ndarray) or p.raw:
                continue
            data = unwrap(v)
            if j < self.nin:
                view = np.broadcast_to(data, shape) if data.shape != shape else data
                in_views.append(view.transpose(perm))
            else:
                out_views.append(data)
        in_shape = tuple(shape[ax] for ax in perm)
        if self.reduce_dims:
            in_loop, in_strides = reduced_shape(in_shape, in_views)
            out_loop, out_strides = reduced_shape(out_shape, out_views)
        else:
            in_loop, in_strides = in_shape, [v.strides for v in in_views]
            out_loop, out_strides = out_shape, [v.strides for v in out_views]
        n_in, n_out = int(np.prod(in_shape)), int(np.prod(out_shape))
        geom = [n_in, n_out, *in_loop, *out_loop]
        args: list[Any] = []
        writeback = []
        ki = ko = 0
        for j, (p, v, dt) in enumerate(zip(self.params, values, dtypes, strict=True)):
            if not isinstance(v, ndarray):
                args.append(_scalar(v, dt))
                continue
            if p.raw:
                buf, words = raw_argument(v, not p.is_const, writeback)
                geom += words
                args.append(buf)
                continue
            if j < self.nin:
                view, st = in_views[ki], in_strides[ki]
                ki += 1
            else:
                view, st = out_views[ko], out_strides[ko]
                ko += 1
            sp = span(view, st)
            if sp is None:
                raise NotImplementedError(
                    f"[cupy stand-in kernel {self.name!r}] argument {p.name!r}: strides that "
                    "are not a multiple of the item size do not run on the CUDA emulator; pass "
                    "a contiguous copy"
                )
            buf, base, est = sp
            if not p.is_const and not buf.flags.writeable:
                raise ValueError(f"output {p.name!r} of kernel {self.name!r} is read-only")
            geom += [base, *est]
            args.append(buf)
        args.append(np.array(geom, dtype=np.int64))
        index_t = "long long" if n_in // max(n_out, 1) > 0x7FFFFFFF else "int"
        key = (kinds, tuple(np.dtype(d).str for d in dtypes), type_map, len(in_loop),
               len(out_loop), index_t, fresh)
        kern = self._kernels.get(key)
        if kern is None:
            from cunumpy.kernels.cuda import CudaKernel

            src = self._source(kinds, dtypes, type_map, len(in_loop), len(out_loop), index_t)
            outs = [(p.name if p.raw else "_raw_" + p.name) for p in self.out_params] \
                if fresh else []
            kern = CudaKernel(src, self.name, options=self.options, check_signature=False,
                              engine="emu-cuda", outputs=outs or None)
            self._kernels[key] = kern
            self._sources[key] = src
        threads = min(128, n_out)
        blocks = -(-n_out // 128)
        run_cuda(program_for(kern.program), args, (blocks, 1, 1), (threads, 1, 1), 0,
                 options=self.emulator_options)
        for dst, src in writeback:
            dst[...] = src

    def __repr__(self) -> str:
        return f"<ReductionKernel {self.name!r} (cupy stand-in, emu-cuda)>"
