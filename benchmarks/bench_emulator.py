"""Benchmarks of the Metal CPU emulator (cunumpy.emulation.metal).

Figures (each measured in this run, on one core):

- cold compile of a typical kernel: a new kernel with the precompiled runtime header already
  built (the usual case), and the first kernel of an empty cache (compiled from the plain headers
  while the precompiled header is built in the background);
- load of a cached variant in a new process (time of the first launch, measured in the child);
- element-wise push over 4 M threads, checks off, against the same loop written as plain C++ and
  compiled with the same flags (ratio);
- thread-barrier crossings per second of a kernel with threadgroup_barrier in its loop.

Usage: ``python benchmarks/bench_emulator.py [--json PATH]``.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

PUSH = """
uint i = thread_position_in_grid.x;
float x = pos[i];
float v = vel[i];
for (int k = 0; k < NSTEPS; ++k) {
    v += -x * dt * 0.5f;
    x += v * dt;
}
pos_out[i] = x;
"""

ELEMENTWISE = "uint i = thread_position_in_grid.x; out[i] = x[i] + v[i] * dt;"

PLAIN_CPP = """
extern "C" __attribute__((visibility("default")))
void push(const float* x, const float* v, float* out, const float* dt, long n) {
    const float d = dt[0];
    for (long i = 0; i < n; ++i) out[i] = x[i] + v[i] * d;
}
"""

BARRIER = """
threadgroup float buf[256];
uint t = thread_index_in_threadgroup;
float acc = 0.0f;
for (int k = 0; k < ITERS; ++k) {
    buf[t] = acc + float(k);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    acc += buf[(t + 1) % 256];
    threadgroup_barrier(mem_flags::mem_threadgroup);
}
out[thread_position_in_grid.x] = acc;
"""

CHILD = textwrap.dedent(
    """
    import time, numpy as np
    from cunumpy._lang.metal_signature import ArgSpec, MetalSignature, build_params
    from cunumpy.emulation.metal import run_metal
    src = {src!r}
    pos = np.ones(1024, np.float32); vel = np.ones(1024, np.float32)
    dt = np.array(0.01, np.float32); out = np.empty(1024, np.float32)
    ins = [ArgSpec("pos", pos.dtype, pos.shape), ArgSpec("vel", vel.dtype, vel.shape),
           ArgSpec("dt", dt.dtype, dt.shape)]
    params = build_params(src, ins, [ArgSpec("pos_out", out.dtype, out.shape)], False)
    sig = MetalSignature("push", "custom_kernel_push", params, (("NSTEPS", 10),), src, "")
    t = time.perf_counter()
    run_metal(sig, [pos, vel, dt], [out], (1024, 1, 1), (256, 1, 1))
    print(time.perf_counter() - t)
    """
)


def _sig(name, src, inputs, outputs, template=()):
    from cunumpy._lang.metal_signature import ArgSpec, MetalSignature, build_params

    ins = [ArgSpec(n, a.dtype, a.shape) for n, a in inputs]
    outs = [ArgSpec(n, a.dtype, a.shape) for n, a in outputs]
    return MetalSignature(name, f"custom_kernel_{name}", build_params(src, ins, outs, False),
                          tuple(template), src, "")


def _best(fn, reps=15):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def bench_compile(results):
    from cunumpy.emulation import metal

    pos = np.ones(1024, np.float32)
    dt = np.array(0.01, np.float32)
    out = np.empty(1024, np.float32)
    saved = os.environ.get("CUNUMPY_CACHE_DIR")
    with tempfile.TemporaryDirectory() as root:
        os.environ["CUNUMPY_CACHE_DIR"] = root
        metal.forget_variants()
        t = time.perf_counter()
        sig = _sig("push", PUSH, [("pos", pos), ("vel", pos), ("dt", dt)], [("pos_out", out)],
                   (("NSTEPS", 3),))
        metal.run_metal(sig, [pos, pos, dt], [out], (1024, 1, 1), (256, 1, 1))
        results["cold_compile_empty_cache_s"] = time.perf_counter() - t
        from cunumpy.emulation._build import wait_for_pch

        wait_for_pch()  # the usual case: the precompiled runtime header exists
        t = time.perf_counter()
        sig = _sig("push", PUSH, [("pos", pos), ("vel", pos), ("dt", dt)], [("pos_out", out)],
                   (("NSTEPS", 10),))
        metal.run_metal(sig, [pos, pos, dt], [out], (1024, 1, 1), (256, 1, 1))
        results["cold_compile_s"] = time.perf_counter() - t
        done = subprocess.run([sys.executable, "-c", CHILD.format(src=PUSH)], env=dict(os.environ),
                              capture_output=True, text=True, check=True)
        results["cached_load_new_process_s"] = float(done.stdout.strip().splitlines()[-1])
    if saved is None:
        os.environ.pop("CUNUMPY_CACHE_DIR", None)
    else:
        os.environ["CUNUMPY_CACHE_DIR"] = saved
    metal.forget_variants()


def bench_elementwise(results, n=4 * 1024 * 1024):
    from cunumpy.emulation import _build
    from cunumpy.emulation._options import EmulatorOptions
    from cunumpy.emulation._toolchain import find_compiler
    from cunumpy.emulation.metal import run_metal

    rng = np.random.default_rng(0)
    x = rng.random(n, dtype=np.float32)
    v = rng.random(n, dtype=np.float32)
    dt = np.array(0.01, np.float32)
    out = np.empty(n, np.float32)
    sig = _sig("ew", ELEMENTWISE, [("x", x), ("v", v), ("dt", dt)], [("out", out)])
    fast = EmulatorOptions(checks=False)
    run_metal(sig, [x, v, dt], [out], (n, 1, 1), (256, 1, 1), options=fast)
    checked = _best(lambda: run_metal(sig, [x, v, dt], [out], (n, 1, 1), (256, 1, 1),
                                      init_value=0.0), reps=5)
    np.testing.assert_allclose(out, x + v * dt[()], rtol=1e-6)

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "plain.cpp"
        src.write_text(PLAIN_CPP)
        lib = Path(tmp) / "plain.so"
        cmd = [*find_compiler().command, *_build.compile_flags(), "-shared", "-o", str(lib),
               str(src)]
        subprocess.run(cmd, check=True)
        plain = ctypes.CDLL(str(lib))
        fn = plain.push
        fn.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_long]
        out2 = np.empty_like(out)
        args = (x.ctypes.data, v.ctypes.data, out2.ctypes.data, dt.ctypes.data, n)
        # Alternate the two, so both see the same machine load; keep the best of each.
        emu = ref = float("inf")
        for _ in range(15):
            emu = min(emu, _best(lambda: run_metal(sig, [x, v, dt], [out], (n, 1, 1),
                                                   (256, 1, 1), options=fast), reps=1))
            ref = min(ref, _best(lambda: fn(*args), reps=1))
    np.testing.assert_array_equal(out, out2)
    results["elementwise_4M_nochecks_s"] = emu
    results["elementwise_4M_checks_s"] = checked
    results["elementwise_4M_plain_cpp_s"] = ref
    results["elementwise_ratio_nochecks_vs_plain"] = emu / ref


def bench_barrier(results, iters=200, groups=16):
    from cunumpy.emulation._options import EmulatorOptions
    from cunumpy.emulation.metal import run_metal

    n = 256 * groups
    out = np.empty(n, np.float32)
    sig = _sig("bar", BARRIER, [], [("out", out)], (("ITERS", iters),))
    for label, opts in (("nochecks", EmulatorOptions(checks=False)),
                        ("checks", EmulatorOptions(checks=True))):
        run_metal(sig, [], [out], (n, 1, 1), (256, 1, 1), options=opts)
        t = _best(lambda opts=opts: run_metal(sig, [], [out], (n, 1, 1), (256, 1, 1),
                                              options=opts), reps=7)
        crossings = n * iters * 2
        results[f"barrier_crossings_per_s_{label}"] = crossings / t


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    args = parser.parse_args(argv)
    from cunumpy.emulation._build import which_compiler

    results: dict[str, object] = {"compiler": which_compiler(), "python": sys.version.split()[0]}
    bench_compile(results)
    bench_elementwise(results)
    bench_barrier(results)
    targets = {
        "cold_compile_s": ("<=", 1.5),
        "cached_load_new_process_s": ("<=", 0.05),
        "elementwise_ratio_nochecks_vs_plain": ("<=", 2.0),
        "barrier_crossings_per_s_nochecks": (">=", 20e6),
    }
    print(f"{'figure':44s} {'value':>14s}  target")
    for k, v in results.items():
        if isinstance(v, float):
            tgt = targets.get(k)
            ok = ""
            if tgt:
                good = v <= tgt[1] if tgt[0] == "<=" else v >= tgt[1]
                ok = f"{tgt[0]} {tgt[1]:g} {'ok' if good else 'MISSED'}"
            print(f"{k:44s} {v:14.4g}  {ok}")
        else:
            print(f"{k:44s} {v}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
