"""Numerical checks of kernels of public Metal libraries, run on emu-metal against NumPy.

For a sample of kernels from candle's ``candle-metal-kernels``, llama.cpp/ggml's
``ggml-metal.metal``, MLX's ``backend/metal/kernels`` and PyTorch's
``aten/src/ATen/native/mps/kernels``, the kernel is launched the way its project's host code
launches it (arguments, argument structs, grid) and its output is compared with a NumPy
reference written here from what the kernel computes: exactly (bit for bit) where the operations
are exactly rounded, or to a stated number of float ulps / relative error where they call the
math library. The public code is read from the checkouts given; nothing of it is copied here.

Usage::

    python tools/metal_library_numerics.py --candle /tmp/candle --ggml /tmp/ggml \\
        --mlx /tmp/mlx --pytorch /tmp/pytorch [--only NAME] [--json out.json]

Prints one line per kernel (``ok``, ``MISMATCH`` with the largest error, or ``ERROR`` with the
exception) and the counts per project.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from metal_library_sweep import FOLDERS, include_dirs

Check = Callable[[Any, np.random.Generator], tuple[np.ndarray, np.ndarray, str]]
CASES: list[tuple[str, str, str, Check]] = []


def case(project: str, file: str, kernel: str) -> Callable[[Check], Check]:
    """Register a check: ``fn(lib, rng) -> (got, want, how)``; ``how`` is ``exact``,
    ``ulp:N`` (float ulps of the reference) or ``tol:X`` (``|got - want| <= X max(1, |want|)``,
    for results of reductions whose summation order differs)."""
    def wrap(fn: Check) -> Check:
        CASES.append((project, file, kernel, fn))
        return fn
    return wrap


def struct_value(lib: Any, name: str, **values: Any) -> np.ndarray:
    """A NumPy structured scalar laid out as struct ``name`` of the library's source."""
    from cunumpy._lang.msl_layout import dtype_of, fields, type_info

    parsed = lib._parsed
    members = fields(name, parsed.structs, parsed.aliases)
    info = type_info(name, parsed.structs, parsed.aliases)
    if members is None or info is None:
        raise ValueError(f"struct {name} has members of unknown layout")
    formats = []
    for f in members:
        dt = dtype_of(f.info, lambda: np.dtype(np.uint16))
        n = f.info.lanes * f.count
        formats.append((dt, (n,)) if n > 1 else dt)
    dtype = np.dtype({"names": [f.name for f in members], "formats": formats,
                      "offsets": [f.offset for f in members], "itemsize": info.size})
    out = np.zeros((), dtype)
    for key, value in values.items():
        out[key] = value
    return out[()]


def compare(got: np.ndarray, want: np.ndarray, how: str) -> tuple[bool, str]:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return False, f"shape {got.shape} != {want.shape}"
    if how == "exact":
        if got.dtype.kind == "f":
            same = (got.view(f"u{got.itemsize}") == want.astype(got.dtype).view(
                f"u{got.itemsize}")) | (np.isnan(got) & np.isnan(want))
        else:
            same = got == want
        bad = int((~same).sum())
        return bad == 0, f"{bad} of {got.size} elements differ" if bad else "bit for bit"
    kind, value = how.split(":")
    g, w = got.astype(np.float64), want.astype(np.float64)
    if kind == "ulp":
        spacing = np.spacing(np.abs(want.astype(got.dtype))).astype(np.float64)
        err = np.abs(g - w) / spacing
        worst = float(err.max()) if err.size else 0.0
        return worst <= float(value), f"max {worst:.2g} ulp (allowed {value})"
    err = np.abs(g - w) / np.maximum(np.abs(w), 1.0)
    worst = float(err.max()) if err.size else 0.0
    return worst <= float(value), f"max error {worst:.2g} of max(1, |value|) (allowed {value})"


# ---- candle ---------------------------------------------------------------------------------
CANDLE = "candle-metal-kernels/src/metal_src/"


@case("candle", CANDLE + "affine.metal", "affine_f32")
def _affine(lib, rng):
    n = 1000
    x = rng.standard_normal(n).astype(np.float32)
    y = np.zeros_like(x)
    lib.affine_f32(n, 1.5, -0.25, x, y, grid=(n + 1) // 2)  # two values per thread
    # fma(x, 1.5, -0.25) in float: one rounding of the exact value
    return y, (x.astype(np.float64) * 1.5 - 0.25).astype(np.float32), "ulp:0.5"


@case("candle", CANDLE + "unary.metal", "silu_f32")
def _silu(lib, rng):
    n = 777
    x = (rng.standard_normal(n) * 4).astype(np.float32)
    y = np.zeros_like(x)
    lib.silu_f32(n, x, y, grid=(n + 1) // 2)
    return y, x / (np.float32(1) + np.exp(-x)), "ulp:2"


@case("candle", CANDLE + "binary.metal", "bmul_f16")
def _mul(lib, rng):
    n = 1001
    a = rng.uniform(-30, 30, n).astype(np.float16)
    b = rng.uniform(-30, 30, n).astype(np.float16)
    c = np.zeros_like(a)
    lib.bmul_f16(n, a, b, c, grid=(n + 3) // 4)  # four halves per thread
    return c, a * b, "exact"


# ---- ggml -----------------------------------------------------------------------------------
GGML = "src/ggml-metal/ggml-metal.metal"


def _get_rows(lib, kernel: str, block_bytes: int, header: int, rng, with_min: bool):
    ne00, ne01, ne10 = 64, 5, 3
    nblocks = ne00 // 32
    d = rng.uniform(0.01, 0.2, (ne01, nblocks)).astype(np.float16)
    m = rng.uniform(-1, 1, (ne01, nblocks)).astype(np.float16)
    qs = rng.integers(0, 256, (ne01, nblocks, 16), dtype=np.uint8)
    src0 = np.zeros((ne01, nblocks, block_bytes), np.uint8)
    src0[:, :, 0:2] = d.view(np.uint8).reshape(ne01, nblocks, 2)
    if with_min:
        src0[:, :, 2:4] = m.view(np.uint8).reshape(ne01, nblocks, 2)
    src0[:, :, header:] = qs
    rows = np.array([4, 0, 2], np.int32)
    dst = np.zeros((ne10, ne00), np.float32)
    nb01 = nblocks * block_bytes
    args = struct_value(lib, "ggml_metal_kargs_get_rows", ne00t=ne00 // 16, ne00=ne00,
                        nb01=nb01, nb02=nb01 * ne01, nb03=nb01 * ne01, ne10=ne10, nb10=4,
                        nb11=4 * ne10, nb12=4 * ne10, nb1=4 * ne00, nb2=4 * ne00 * ne10,
                        nb3=4 * ne00 * ne10)
    getattr(lib, kernel)(args, src0, rows, dst, threadgroups=(ne10, 1, 1),
                         threadgroup=(ne00 // 16, 1, 1))
    lo = (qs & 0xF).astype(np.float32)
    hi = (qs >> 4).astype(np.float32)
    df = d.astype(np.float32)[..., None]
    if with_min:
        add = m.astype(np.float32)[..., None]
    else:
        add = (np.float16(-8) * d).astype(np.float32)[..., None]   # -8.h * d, in half
    want = np.concatenate([df * lo + add, df * hi + add], axis=-1).reshape(ne01, ne00)
    return dst, want[rows], "exact"


@case("ggml", GGML, "kernel_get_rows_q4_0")
def _rows_q4_0(lib, rng):
    return _get_rows(lib, "kernel_get_rows_q4_0", 18, 2, rng, with_min=False)


@case("ggml", GGML, "kernel_get_rows_q4_1")
def _rows_q4_1(lib, rng):
    # block_q4_1: `union { struct { half d; half m; }; half2 dm; }` then the quants
    return _get_rows(lib, "kernel_get_rows_q4_1", 20, 4, rng, with_min=True)


@case("ggml", GGML, "kernel_mul_mv_q4_0_f32")
def _mul_mv_q4_0(lib, rng):
    # y = W x with W in q4_0 blocks: SIMD-group sums, function constants, a threadgroup(0) buffer
    ne00, ne01, ne11, nsg, nr0 = 256, 16, 3, 2, 4
    nblocks = ne00 // 32
    d = rng.uniform(0.01, 0.1, (ne01, nblocks)).astype(np.float16)
    qs = rng.integers(0, 256, (ne01, nblocks, 16), dtype=np.uint8)
    src0 = np.zeros((ne01, nblocks, 18), np.uint8)
    src0[:, :, 0:2] = d.view(np.uint8).reshape(ne01, nblocks, 2)
    src0[:, :, 2:] = qs
    x = rng.standard_normal((ne11, ne00)).astype(np.float32)
    dst = np.zeros((ne11, ne01), np.float32)
    nb01 = nblocks * 18
    args = struct_value(lib, "ggml_metal_kargs_mul_mv", ne00=ne00, ne01=ne01, ne02=1, nb00=18,
                        nb01=nb01, nb02=nb01 * ne01, nb03=nb01 * ne01, ne10=ne00, ne11=ne11,
                        ne12=1, nb10=4, nb11=4 * ne00, nb12=4 * ne00 * ne11,
                        nb13=4 * ne00 * ne11, ne0=ne01, ne1=ne11, nr0=nr0, r2=1, r3=1)
    k = lib.kernel("kernel_mul_mv_q4_0_f32", constants={
        "FC_mul_mv_nsg": nsg, "FC_mul_mv_nxpsg": 8, "FC_mul_mv_ne12": 1, "FC_mul_mv_r2": 1,
        "FC_mul_mv_r3": 1})
    k(args, src0, x.view(np.uint8), dst.view(np.uint8),
      threadgroups=(-(-ne01 // (nr0 * nsg)), ne11, 1), threadgroup=(32, nsg, 1),
      threadgroup_memory={0: 4096})
    lo = ((qs & 0xF).astype(np.float64) - 8) * d.astype(np.float64)[..., None]
    hi = ((qs >> 4).astype(np.float64) - 8) * d.astype(np.float64)[..., None]
    w = np.concatenate([lo, hi], axis=-1).reshape(ne01, ne00)
    return dst, (x.astype(np.float64) @ w.T).astype(np.float32), "tol:2e-5"


@case("ggml", GGML, "kernel_silu_back_f32")
def _silu_back(lib, rng):
    n = 300
    dy = rng.standard_normal(n).astype(np.float32)
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    dx = np.zeros_like(x)
    lib.kernel_silu_back_f32(struct_value(lib, "ggml_metal_kargs_silu_back", ne=n), dy, x, dx,
                             grid=n)
    s = np.float32(1) / (np.float32(1) + np.exp(-x))
    # 1 + x (1 - s) cancels near x = -1.28: compare to max(1, |value|), not in ulps
    return dx, dy * s * (np.float32(1) + x * (np.float32(1) - s)), "tol:1e-6"


# ---- MLX ------------------------------------------------------------------------------------
MLX = "mlx/backend/metal/kernels/"


@case("mlx", MLX + "arange.metal", "arangefloat32")
def _arange(lib, rng):
    n = 500
    out = np.zeros(n, np.float32)
    lib.arangefloat32(0.5, 0.1, out, grid=n)
    return out, np.float32(0.5) + np.arange(n, dtype=np.float32) * np.float32(0.1), "exact"


@case("mlx", MLX + "unary.metal", "v_Expfloat32float32")
def _exp(lib, rng):
    n = 333
    x = rng.uniform(-20, 20, n).astype(np.float32)
    y = np.zeros_like(x)
    lib.v_Expfloat32float32(x, y, n, grid=n)
    return y, np.exp(x), "ulp:2"


@case("mlx", MLX + "binary.metal", "vv_Addfloat32")
def _add(lib, rng):
    n = 444
    a, b = rng.standard_normal((2, n)).astype(np.float32)
    c = np.zeros_like(a)
    lib.vv_Addfloat32(a, b, c, n, grid=n)
    return c, a + b, "exact"


@case("mlx", MLX + "rms_norm.metal", "rmsfloat32")
def _rms(lib, rng):
    rows, axis = 3, 200
    x = rng.standard_normal((rows, axis)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, axis).astype(np.float32)
    out = np.zeros_like(x)
    per_thread = -(-axis // 4)                  # four values per thread
    threads = -(-per_thread // 32) * 32        # whole SIMD-groups
    lib.rmsfloat32(x, w, out, 1e-5, axis, 1, threadgroups=rows, threadgroup=threads)
    x64 = x.astype(np.float64)
    want = w * (x64 / np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + 1e-5))
    return out, want.astype(np.float32), "tol:2e-6"


@case("mlx", MLX + "softmax.metal", "block_softmax_float32")
def _softmax(lib, rng):
    rows, axis = 4, 300
    x = (rng.standard_normal((rows, axis)) * 3).astype(np.float32)
    out = np.zeros_like(x)
    threads = 96  # ceil(300 / 4) = 75 threads, in whole SIMD-groups
    lib.block_softmax_float32(x, out, axis, threadgroups=rows, threadgroup=threads)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    return out, (e / e.sum(axis=1, keepdims=True)).astype(np.float32), "tol:1e-6"


# ---- PyTorch --------------------------------------------------------------------------------
TORCH = "aten/src/ATen/native/mps/kernels/"


@case("pytorch", TORCH + "RenormKernel.metal", "renorm_float")
def _renorm(lib, rng):
    norm = rng.uniform(0, 3, 100).astype(np.float32)
    factor = np.zeros_like(norm)
    lib.renorm_float(norm, factor, 1.5, grid=100)
    want = np.where(norm > 1.5, np.float32(1.5) / (norm + np.float32(1e-7)), np.float32(1))
    return factor, want.astype(np.float32), "exact"


@case("pytorch", TORCH + "TriangularOps.metal", "tril_indices_long")
def _tril(lib, rng):
    row, col, offset = 6, 4, -1           # PyTorch's host arithmetic for these arguments
    m_first = 1 if row + offset > 0 else 0
    m_last = max(0, min(col, row + offset))
    n_all = max(0, min(row, row + offset))
    n_trap = m_last - m_first + 1
    trapezoid = (m_first + m_last) * n_trap // 2
    size = trapezoid + (n_all - n_trap) * col
    out = np.zeros(2 * size, np.int64)
    lib.tril_indices_long(out, max(0, -offset), m_first, col, trapezoid, size, grid=size)
    return out, np.concatenate(np.tril_indices(row, offset, col)).astype(np.int64), "exact"


@case("pytorch", TORCH + "Bucketization.metal", "searchsorted_float_long")
def _searchsorted(lib, rng):
    bd = np.sort(rng.uniform(-5, 5, 37)).astype(np.float32)
    x = rng.uniform(-6, 6, 150).astype(np.float32)
    x[:5] = bd[:5]                        # ties
    got = []
    for right in (0, 1):
        out = np.zeros(x.size, np.int64)
        lib.searchsorted_float_long(x, bd, out, x.size, bd.size, x.size, right, 1,
                                    threadgroups=1, threadgroup=64)
        got.append(out)
    want = [np.searchsorted(bd, x, side=s) for s in ("left", "right")]
    return np.stack(got), np.stack(want).astype(np.int64), "exact"


@case("pytorch", TORCH + "CrossKernel.metal", "cross_dense_float")
def _cross(lib, rng):
    a, b = rng.standard_normal((2, 50, 3)).astype(np.float32)
    out = np.zeros_like(a)
    lib.cross_dense_float(out, a, b, 1, grid=50)
    return out, np.cross(a.astype(np.float64), b.astype(np.float64)).astype(np.float32), \
        "tol:1e-5"


@case("pytorch", TORCH + "Repeat.metal", "repeat_interleave_int64_t")
def _repeat(lib, rng):
    reps = rng.integers(0, 5, 20).astype(np.int64)
    out = np.zeros(int(reps.sum()), np.int64)
    lib.repeat_interleave_int64_t(reps, np.cumsum(reps), out, grid=reps.size)
    return out, np.repeat(np.arange(reps.size), reps).astype(np.int64), "exact"


@case("pytorch", TORCH + "Bincount.metal", "bincount_unweighted_int")
def _bincount(lib, rng):
    idx = rng.integers(0, 17, 500).astype(np.int32)
    counts = np.zeros(17, np.uint32)
    lib.bincount_unweighted_int(idx, counts, 1, grid=idx.size)
    return counts, np.bincount(idx, minlength=17).astype(np.uint32), "exact"


@case("pytorch", TORCH + "Eye.metal", "eye_float")
def _eye(lib, rng):
    out = np.full((5, 7), 9, np.float32)
    lib.eye_float(out, 7, 1, grid=(7, 5))
    return out, np.eye(5, 7, dtype=np.float32), "exact"


@case("pytorch", TORCH + "LayerNorm.metal", "layer_norm_single_row_float")
def _layer_norm(lib, rng):
    rows, axis = 2, 100
    x = rng.standard_normal((rows, axis)).astype(np.float32)
    w = rng.uniform(0.5, 1.5, axis).astype(np.float32)
    b = rng.standard_normal(axis).astype(np.float32)
    out = np.zeros_like(x)
    mean, rstd = np.zeros(rows, np.float32), np.zeros(rows, np.float32)
    lib.layer_norm_single_row_float(x, out, mean, rstd, axis, 1e-5, 1, 1, w, b,
                                    threadgroups=rows, threadgroup=-(-axis // 4))
    x64 = x.astype(np.float64)
    mu = x64.mean(axis=1, keepdims=True)
    var = (x64 ** 2).mean(axis=1, keepdims=True) - mu ** 2
    want = (x64 - mu) / np.sqrt(var + 1e-5) * w + b
    return np.concatenate([out.ravel(), mean]), \
        np.concatenate([want.ravel(), mu.ravel()]).astype(np.float32), "tol:2e-5"


def run(roots: dict[str, Path], only: str = "") -> dict[str, Any]:
    from cunumpy.kernels import MetalLibrary

    libs: dict[tuple[str, str], Any] = {}
    results: dict[str, Any] = {}
    rng = np.random.default_rng(2024)
    for project, file, kernel, fn in CASES:
        if project not in roots or (only and only not in kernel):
            continue
        root = roots[project]
        path = root / file
        row = {"project": project, "file": file, "kernel": kernel}
        t0 = time.perf_counter()
        try:
            lib = libs.get((project, file))
            if lib is None:
                lib = libs[(project, file)] = MetalLibrary(
                    path.read_text(), filename=path.name,
                    include_dirs=include_dirs(project, root, path.parent))
            got, want, how = fn(lib, rng)
            ok, detail = compare(got, want, how)
            row.update(status="ok" if ok else "MISMATCH", detail=detail)
        except Exception as exc:  # the tool reports every failure
            row.update(status="ERROR", detail=f"{type(exc).__name__}: {exc}"[:400],
                       trace=traceback.format_exc()[-1500:])
        row["seconds"] = round(time.perf_counter() - t0, 1)
        print(f"{project}: {kernel}: {row['status']} ({row['detail']}) [{row['seconds']} s]",
              flush=True)
        results.setdefault(project, []).append(row)
    for project, rows in results.items():
        good = sum(r["status"] == "ok" for r in rows)
        print(f"== {project}: {good}/{len(rows)} kernels agree with NumPy", flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for project in FOLDERS:
        ap.add_argument(f"--{project}", type=Path, help=f"{project} checkout")
    ap.add_argument("--only", default="", help="only kernels whose name contains this text")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    roots = {p: getattr(args, p) for p in FOLDERS if getattr(args, p) is not None}
    results = run(roots, args.only)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0 if all(r["status"] == "ok" for rows in results.values() for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
