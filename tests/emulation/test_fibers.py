"""The fiber runtime on its own, driven from C++: the hand-written x86-64 context switch and the
portable ucontext fallback (the path non-x86-64 machines take) give the same results."""

from __future__ import annotations

import platform
import subprocess

import pytest

from cunumpy.emulation._build import RUNTIME_DIR
from cunumpy.emulation._toolchain import find_compiler

DRIVER = r"""
#include "cn_metal.h"
#include <cstdio>
int main() {
  static float buf[96];
  float out[96];
  cn::Report rep{};
  cn::LaunchDesc d{};
  d.abi = CN_ABI_VERSION;
  d.grid[0] = 96; d.grid[1] = d.grid[2] = 1;
  d.group[0] = 64; d.group[1] = d.group[2] = 1;  // a full group and a partial one
  d.simd_width = 32;
  d.random_order = RANDOM;
  d.seed = 12345;
  d.report = &rep;
  auto fn = [&](const cn::ThreadInfo& t) {
    uint i = t.lin;
    buf[t.pos[0]] = float(i);
    for (int k = 0; k < 3; ++k) threadgroup_barrier(mem_flags::mem_threadgroup);
    uint base = t.gid[0] * 64 + (i / 32) * 32;
    out[t.pos[0]] = simd_sum(buf[base + (i + 1) % 32]);
  };
  int rc = cn::run_grid<true, true>(&d, 0, fn);
  for (int k = 0; k < 96; ++k) {
    float want = k < 32 ? 496.0f : k < 64 ? 1520.0f : 496.0f;
    if (out[k] != want) { std::printf("thread %d: %f != %f\n", k, out[k], want); return 1; }
  }
  std::printf("ok %d %lld\n", rc, (long long)rep.count);
  return rc;
}
"""


@pytest.mark.parametrize(
    ("switch", "random"),
    [("asm", 1), ("ucontext", 0), ("ucontext", 1)],
    ids=["asm-random", "ucontext-ordered", "ucontext-random"],
)
def test_fiber_switch_implementations(tmp_path, switch, random):
    if switch == "asm" and platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the hand-written context switch is x86-64 only")
    src = tmp_path / "driver.cpp"
    src.write_text(DRIVER)
    exe = tmp_path / "driver"
    defines = [f"-DRANDOM={random}"] + (["-DCN_FIBER_UCONTEXT"] if switch == "ucontext" else [])
    cmd = [*find_compiler().command, "-std=c++17", "-O1", *defines, "-I", str(RUNTIME_DIR),
           "-o", str(exe), str(src)]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    done = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "ok 0 0"
