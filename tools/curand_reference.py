"""Expected values for tests/random from cuRAND's own headers, compiled for the host CPU.

cuRAND's device headers also compile as host C++ (their host branches); for the integer
outputs, the uniforms, skip-ahead and Poisson draws the host branch runs the same arithmetic as
the device, so it is an oracle for those (normals differ: the host branch calls sinf/cosf where
the device calls __sincosf, and sin(x*pi) where the device calls sincospi). This tool compiles
``tests/random/curand_cases.cu`` against the headers of an installed ``nvidia-curand`` wheel
with a few lines of stand-ins for the CUDA types, runs every case, and writes
``tests/random/curand_reference.npz``. The headers are used where they are installed and never
copied into this repository. GPU values come from ``tools/record_curand.py``.

Usage::

    python -m pip download --no-deps -d /tmp/w nvidia-curand-cu12 && unzip /tmp/w/*.whl -d /tmp/w
    python tools/curand_reference.py /tmp/w/nvidia/curand/include
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "random"))

import _curand_cases as cases  # noqa: E402

_STANDINS = r"""
#pragma once
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __constant__
#define CUDARTAPI
#define CURANDAPI
#define NV_IF_ELSE_TARGET(q, a, b) b
#define NV_IF_TARGET(q, ...)
typedef int libraryPropertyType;
typedef void* cudaStream_t;
struct uint2 { unsigned int x, y; } __attribute__((aligned(8)));
struct uint3 { unsigned int x, y, z; };
struct uint4 { unsigned int x, y, z, w; } __attribute__((aligned(16)));
struct int4 { int x, y, z, w; } __attribute__((aligned(16)));
struct float2 { float x, y; } __attribute__((aligned(8)));
struct float4 { float x, y, z, w; } __attribute__((aligned(16)));
struct double2 { double x, y; } __attribute__((aligned(16)));
struct double4 { double x, y, z, w; } __attribute__((aligned(16)));
struct dim3 { unsigned int x, y, z; };
inline uint4 make_uint4(unsigned a, unsigned b, unsigned c, unsigned d) { return uint4{a, b, c, d}; }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
inline double __ldg(const double* p) { return *p; }
inline unsigned __ldg(const unsigned* p) { return *p; }
"""

_MAIN = r"""
#include "standins.h"
#include <vector>
#include <curand_kernel.h>
static uint3 cn_bi, cn_bd, cn_ti;  // the kernels' built-in variables (cuRAND declares its own)
#define blockIdx cn_bi
#define blockDim cn_bd
#define threadIdx cn_ti
#include "cases.cu"
template <class T> std::vector<T> take(FILE* f, int n) { std::vector<T> v(n); fread(v.data(), sizeof(T), n, f); return v; }
int main(int argc, char** argv) {
  FILE* in = fopen(argv[1], "rb");
  int n, m;
  fread(&n, 4, 1, in);
  fread(&m, 4, 1, in);
  auto seed = take<unsigned long long>(in, n), sub = take<unsigned long long>(in, n),
       off = take<unsigned long long>(in, n), skip = take<unsigned long long>(in, n),
       ps = take<unsigned long long>(in, m), pu = take<unsigned long long>(in, m),
       po = take<unsigned long long>(in, m);
  auto lam = take<double>(in, m);
  FILE* out = fopen(argv[2], "wb");
  for (int gen = 0; gen < 3; ++gen) {
    std::vector<unsigned> u(n * NU), p(m * NP);
    std::vector<float> f(n * NF);
    std::vector<double> d(n * ND);
    blockIdx.x = 0;
    blockDim.x = 1u << 30;
    for (int i = 0; i < n; ++i) {
      threadIdx.x = i;
      cases(gen, n, seed.data(), sub.data(), off.data(), skip.data(), u.data(), f.data(), d.data());
    }
    for (int i = 0; i < m; ++i) {
      threadIdx.x = i;
      poisson(gen, m, ps.data(), pu.data(), po.data(), lam.data(), p.data());
      if (gen == 1) poisson(3, m, ps.data(), pu.data(), po.data(), lam.data(), p.data());
    }
    fwrite(u.data(), 4, u.size(), out);
    fwrite(f.data(), 4, f.size(), out);
    fwrite(d.data(), 8, d.size(), out);
    fwrite(p.data(), 4, p.size(), out);
  }
}
"""


def main(include: str) -> int:
    c, p = cases.cases(), cases.poisson_cases()
    n, m = cases.N_CASES, len(p["lam"])
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        (t / "standins.h").write_text(_STANDINS)
        (t / "cuda_runtime.h").write_text('#pragma once\n#include "standins.h"\n')
        (t / "nv").mkdir()
        (t / "nv" / "target").write_text("#pragma once\n")
        (t / "cases.cu").write_text(cases.SOURCE.read_text())
        (t / "main.cpp").write_text(_MAIN)
        subprocess.run(["g++", "-std=c++17", "-O1", "-w", f"-I{t}", f"-I{include}", "-o",
                        str(t / "ref"), str(t / "main.cpp")], check=True)
        with open(t / "in.bin", "wb") as f:
            f.write(np.array([n, m], np.int32).tobytes())
            for k in ("seed", "subsequence", "offset", "skip"):
                f.write(c[k].tobytes())
            for k in ("seed", "subsequence", "offset"):
                f.write(p[k].tobytes())
            f.write(p["lam"].tobytes())
        subprocess.run([str(t / "ref"), str(t / "in.bin"), str(t / "out.bin")], check=True,
                       timeout=300)
        raw = (t / "out.bin").read_bytes()
    out, pos = {}, 0
    for g in cases.GENERATORS:
        for key, dt, rows, cols in (("u", np.uint32, n, cases.NU), ("f", np.float32, n, cases.NF),
                                    ("d", np.float64, n, cases.ND), ("p", np.uint32, m, cases.NP)):
            a = np.frombuffer(raw, dtype=dt, count=rows * cols, offset=pos)
            pos += a.nbytes
            out[f"{g}_{key}"] = a.reshape(rows, cols)
    target = cases.HERE / "curand_reference.npz"
    np.savez_compressed(target, **out)
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
