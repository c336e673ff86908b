"""Record cuRAND's device-API outputs on a GPU as the expected values of tests/random.

Run on a machine with an NVIDIA GPU, CuPy and cuRAND's headers (the toolkit or the
``nvidia-curand`` wheel)::

    python tools/record_curand.py OUTDIR

It writes ``OUTDIR/curand_h200.npz`` (copy it to ``tests/random/``): every output of
``tests/random/curand_cases.cu`` for the inputs of ``tests/random/_curand_cases.py``, compiled
by NVRTC through CuPy. It also checks, and reports in ``OUTDIR/record_report.json``: the same
kernels compiled by nvcc give the same outputs; cunumpy's ``cupy`` engine (``CudaKernel``)
compiles and runs them unchanged; and it samples the SFU approximations that cuRAND's normals
and Poisson draws go through (``__sincosf``, ``rsqrt/ex2/lg2/rcp.approx``) against exact
values, into ``OUTDIR/sfu_samples.npz``, to measure what an emulator that computes them
exactly differs by.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "random"))
sys.path.insert(0, str(ROOT / "src"))

import _curand_cases as cases  # noqa: E402

_SFU_SOURCE = r"""
extern "C" __global__ void sfu(int n, const float* v, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float x = v[i], s, c, r;
  __sincosf(x, &s, &c);
  out[8 * i + 0] = s;
  out[8 * i + 1] = c;
  out[8 * i + 2] = logf(x);
  asm("rsqrt.approx.f32.ftz %0, %1;" : "=f"(r) : "f"(x)); out[8 * i + 3] = r;
  asm("ex2.approx.f32.ftz %0, %1;" : "=f"(r) : "f"(x)); out[8 * i + 4] = r;
  asm("lg2.approx.f32.ftz %0, %1;" : "=f"(r) : "f"(x)); out[8 * i + 5] = r;
  asm("rcp.approx.f32.ftz %0, %1;" : "=f"(r) : "f"(x)); out[8 * i + 6] = r;
  out[8 * i + 7] = expf(x);
}
"""


def _raw_run(cupy, module_for, gens=cases.GENERATORS) -> dict[str, np.ndarray]:
    """``run_all`` through plain CuPy: ``module_for(name)`` gives the compiled function."""
    c = {k: cupy.asarray(v) for k, v in cases.cases().items()}
    p = {k: cupy.asarray(v) for k, v in cases.poisson_cases().items()}
    n, m = cases.N_CASES, len(cases.poisson_cases()["lam"])
    out = {}
    for gen, g in enumerate(cases.GENERATORS):
        if g not in gens:
            continue
        u = cupy.zeros(n * cases.NU, dtype=cupy.uint32)
        f = cupy.zeros(n * cases.NF, dtype=cupy.float32)
        d = cupy.zeros(n * cases.ND, dtype=cupy.float64)
        blocks = (n + 63) // 64
        module_for("cases")((blocks,), (64,), (np.int32(gen), np.int32(n), c["seed"],
                            c["subsequence"], c["offset"], c["skip"], u, f, d))
        pois = cupy.zeros(m * cases.NP, dtype=cupy.uint32)
        args = (np.int32(m), p["seed"], p["subsequence"], p["offset"], p["lam"], pois)
        mb = (m + 63) // 64
        module_for("poisson")((mb,), (64,), (np.int32(gen), *args))
        if g == "philox":
            module_for("poisson")((mb,), (64,), (np.int32(3), *args))
        cupy.cuda.Device().synchronize()
        print(f"  ran {g}", flush=True)
        out[f"{g}_u"] = u.get().reshape(n, cases.NU)
        out[f"{g}_f"] = f.get().reshape(n, cases.NF)
        out[f"{g}_d"] = d.get().reshape(n, cases.ND)
        out[f"{g}_p"] = pois.get().reshape(m, cases.NP)
    return out


def _same(a: dict, b: dict) -> dict:
    return {k: bool(np.array_equal(a[k], b[k])) for k in a}


def _say(t0: float, what: str) -> None:
    print(f"[{time.time() - t0:6.1f} s] {what}", flush=True)


def main(outdir: str, budget: float = 140.0) -> int:
    """Record into ``outdir``; optional checks start only while ``budget`` seconds remain."""
    import faulthandler

    faulthandler.dump_traceback_later(budget + 15, exit=True)  # a hang says where it is
    t0 = time.time()
    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    report: dict = {}

    def save() -> None:
        report["seconds"] = time.time() - t0
        (out / "record_report.json").write_text(json.dumps(report, indent=1))

    import cupy

    from cunumpy._engines._cuda_libraries import find_header_dir, library_include_options

    report["cupy"] = cupy.__version__
    report["device"] = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    report["cuda_path"] = str(cupy.cuda.get_cuda_path())
    report["curand_dir"] = find_header_dir("curand_kernel.h", cupy)
    _say(t0, f"cupy {report['cupy']}, curand headers in {report['curand_dir']}")
    source = cases.SOURCE.read_text()
    opts = ("-std=c++17", *library_include_options(source, cupy, "cases"))
    report["nvrtc_options"] = list(opts)
    try:
        mod = cupy.RawModule(code=source, options=opts)
        mod.get_function("cases")
        _say(t0, "NVRTC compiled")
        expected = {}
        for g in cases.GENERATORS:  # saved after each, so that a hang keeps the rest
            expected.update(_raw_run(cupy, mod.get_function, (g,)))
            np.savez_compressed(out / "curand_h200.npz", **expected)
    except Exception:
        report["nvrtc_error"] = traceback.format_exc()[-6000:]
        print(report["nvrtc_error"], flush=True)
        save()
        return 1
    np.savez_compressed(out / "curand_h200.npz", **expected)
    _say(t0, "recorded curand_h200.npz")
    save()

    if time.time() - t0 < budget - 40:  # cunumpy's cupy engine, unchanged source
        try:
            report["cunumpy_cupy_equal"] = _same(expected, cases.run_all("cupy", cupy))
        except Exception:
            report["cunumpy_cupy_error"] = traceback.format_exc()[-4000:]
        _say(t0, f"cunumpy cupy engine: {report.get('cunumpy_cupy_equal', 'error')}")
        save()

    if time.time() - t0 < budget - 15:  # SFU samples
        try:
            rng = np.random.default_rng(1)
            v = np.concatenate([
                rng.uniform(0, 2 * np.pi, 1 << 18), rng.uniform(1e-7, 1.0, 1 << 16),
                rng.uniform(0.5, 8000.0, 1 << 16), rng.uniform(-30, 30, 1 << 16),
            ]).astype(np.float32)
            sfu = cupy.RawModule(code=_SFU_SOURCE)
            dv = cupy.asarray(v)
            res = cupy.zeros(8 * v.size, dtype=cupy.float32)
            sfu.get_function("sfu")(((v.size + 255) // 256,), (256,),
                                    (np.int32(v.size), dv, res))
            np.savez_compressed(out / "sfu_samples.npz", v=v, out=res.get().reshape(-1, 8))
        except Exception:
            report["sfu_error"] = traceback.format_exc()[-4000:]
        _say(t0, "SFU samples")
        save()

    if time.time() - t0 < budget - 60:  # nvcc: the same kernels, compiled to a cubin
        try:
            with tempfile.TemporaryDirectory() as tmp:
                cu = Path(tmp) / "cases.cu"
                cu.write_text(source)
                cubin = Path(tmp) / "cases.cubin"
                inc = [o for o in opts if o.startswith("-I")]
                nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
                cmd = [nvcc, "-cubin", "-arch=sm_90", "-std=c++17", *inc, "-o", str(cubin),
                       str(cu)]
                subprocess.run(cmd, check=True, capture_output=True, text=True,
                               timeout=max(10.0, budget - (time.time() - t0) - 10))
                nv = cupy.RawModule(path=str(cubin))
                report["nvcc_equal"] = _same(expected, _raw_run(cupy, nv.get_function))
        except Exception as exc:
            report["nvcc_error"] = f"{type(exc).__name__}: {exc}"[:4000]
        _say(t0, f"nvcc: {report.get('nvcc_equal', report.get('nvcc_error'))}")
        save()
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "."))
