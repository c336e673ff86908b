"""Metal-specific data races on the emulator, each with its corrected twin.

The constructs Metal has and CUDA does not, or spells differently: barrier flags
(``mem_none`` orders nothing, ``mem_threadgroup`` orders only threadgroup memory, device memory
needs ``mem_device``), ``simdgroup_barrier`` (orders only the lanes of one SIMD-group, and only
with memory flags), threadgroup atomics against plain accesses, 2-D threadgroups, helpers taking
``threadgroup`` pointers. Every racy kernel must raise :class:`DataRaceError` whose message names
the memory, the element, both threads with their threadgroups, both kinds of access and two
``body:LINE`` (or ``header:LINE``) sites; every twin must run clean with the right result.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pytest

from cunumpy.emulation import DataRaceError, EmulatorOptions
from cunumpy.emulation.metal import run_metal

RACES = EmulatorOptions(races=True)


@dataclass(frozen=True)
class MetalPair:
    """A racy Metal body and its fix, as ``/*R*/racy/*F*/fixed/*E*/`` markers in one text."""

    id: str
    body: str
    threads: tuple[int, int] = (64, 1)  # threads in all (x, y)
    group: tuple[int, int] = (64, 1)    # threads per threadgroup (x, y)
    out: int = 64
    match: str = ""                     # regex the report must match
    expect: dict = field(default_factory=dict)  # index -> value of the fixed kernel's output
    header: str = ""


def _pick(text: str, racy: bool) -> str:
    return re.sub(r"/\*R\*/(.*?)/\*F\*/(.*?)/\*E\*/", lambda m: m.group(1 if racy else 2), text,
                  flags=re.S)


TG = "threadgroup_barrier(mem_flags::mem_threadgroup);"

PAIRS = [
    MetalPair(
        "barrier_mem_none_orders_nothing",
        """
threadgroup int s[64];
uint t = thread_position_in_threadgroup.x;
s[t] = int(t) * 2;
threadgroup_barrier(/*R*/mem_flags::mem_none/*F*/mem_flags::mem_threadgroup/*E*/);
y[t] = s[63 - t];
""",
        match=r"threadgroup array 's' \(int\[64\]\), index (63|0): (read|write) by thread "
              r"\((0|63),0,0\) threadgroup \(0,0,0\) at body:\d+ and (write|read) by thread "
              r"\((63|0),0,0\) threadgroup \(0,0,0\) at body:\d+",
        expect={0: 126, 63: 0},
    ),
    MetalPair(
        "device_memory_needs_mem_device",
        """
uint t = thread_position_in_threadgroup.x;
y[t] = int(t) + 1;
threadgroup_barrier(/*R*/mem_flags::mem_threadgroup/*F*/mem_flags::mem_device | mem_flags::mem_threadgroup/*E*/);
int v = y[(t + 1) % 64];
threadgroup_barrier(mem_flags::mem_device);
y[t] = v;
""",
        match=r"'y' .*index 1: read by thread \(0,0,0\) threadgroup \(0,0,0\) at body:5 and "
              r"write by thread \(1,0,0\) threadgroup \(0,0,0\) at body:3.*mem_device",
        expect={0: 2, 63: 1},
    ),
    MetalPair(
        "simdgroup_barrier_does_not_order_other_simdgroups",
        # Lane 0 of each SIMD-group writes its partial; thread 0 sums them.
        """
threadgroup int part[2];
uint t = thread_position_in_threadgroup.x;
uint lane = thread_index_in_simdgroup;
uint sg = simdgroup_index_in_threadgroup;
int v = simd_sum(int(t));
if (lane == 0) part[sg] = v;
/*R*/simdgroup_barrier(mem_flags::mem_threadgroup);/*F*/threadgroup_barrier(mem_flags::mem_threadgroup);/*E*/
if (t == 0) y[0] = part[0] + part[1];
""",
        out=1,
        match=r"threadgroup array 'part' \(int\[2\]\), index 1: (read|write) by thread "
              r"\((0|32),0,0\).* and (write|read) by thread \((32|0),0,0\)",
        expect={0: 2016},
    ),
    MetalPair(
        "simdgroup_barrier_mem_none_orders_no_memory",
        """
threadgroup int s[32];
uint t = thread_position_in_threadgroup.x;
s[t] = int(t) + 5;
simdgroup_barrier(/*R*/mem_flags::mem_none/*F*/mem_flags::mem_threadgroup/*E*/);
y[t] = s[t ^ 1];
""",
        threads=(32, 1), group=(32, 1), out=32,
        match=r"'s' \(int\[32\]\), index \d+: (read|write) by thread \(\d+,0,0\).*simdgroup_barrier",
        expect={0: 6, 1: 5},
    ),
    MetalPair(
        "two_threads_write_one_device_element",
        """
uint t = thread_position_in_threadgroup.x;
/*R*/y[0] = int(t);/*F*/if (t == 3) y[0] = int(t);/*E*/
""",
        out=1,
        match=r"'y' .*index 0: write by thread \(\d+,0,0\) threadgroup \(0,0,0\) at body:3 and "
              r"write by thread \(\d+,0,0\) threadgroup \(0,0,0\) at body:3",
        expect={0: 3},
    ),
    MetalPair(
        "two_threadgroups_write_one_device_element",
        """
uint t = thread_position_in_threadgroup.x;
uint g = threadgroup_position_in_grid.x;
y[/*R*/t/*F*/g * 32 + t/*E*/] = int(g);
""",
        threads=(128, 1), group=(32, 1), out=128,
        match=r"index \d+: write by thread \((\d+),0,0\) threadgroup \([1-3],0,0\) at body:4 and "
              r"write by thread \(\1,0,0\) threadgroup \([0-3],0,0\) at body:4.*different "
              r"threadgroups are never ordered",
        expect={0: 0, 127: 3},
    ),
    MetalPair(
        "reduction_reads_partner_before_barrier",
        """
threadgroup float s[64];
uint t = thread_position_in_threadgroup.x;
s[t] = float(t);
/*R*/float partner = s[t ^ 1];
threadgroup_barrier(mem_flags::mem_threadgroup);/*F*/threadgroup_barrier(mem_flags::mem_threadgroup);
float partner = s[t ^ 1];/*E*/
y[t] = int(s[t] + partner);
""",
        match=r"'s' \(float\[64\]\), index \d+: (read|write) by thread .* at body:(4|5) and "
              r"(write|read) by thread .* at body:(4|5)",
        expect={0: 1, 2: 5},
    ),
    MetalPair(
        "tree_reduction_missing_barrier_in_loop",
        """
threadgroup int s[64];
uint t = thread_position_in_threadgroup.x;
s[t] = 1;
threadgroup_barrier(mem_flags::mem_threadgroup);
for (uint k = 32; k > 0; k >>= 1) {
    if (t < k) s[t] += s[t + k];
    /*R*//*F*/threadgroup_barrier(mem_flags::mem_threadgroup);/*E*/
}
if (t == 0) y[threadgroup_position_in_grid.x] = s[0];
""",
        threads=(128, 1), out=2,
        match=r"'s' \(int\[64\]\), index \d+: (read|write) by thread .* at body:7 and "
              r"(write|read) by thread .* at body:7",
        expect={0: 64, 1: 64},
    ),
    MetalPair(
        "threadgroup_atomic_against_plain_read",
        """
threadgroup atomic_int count;
uint t = thread_position_in_threadgroup.x;
if (t == 0) atomic_store_explicit(&count, 0, memory_order_relaxed);
threadgroup_barrier(mem_flags::mem_threadgroup);
atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
/*R*//*F*/threadgroup_barrier(mem_flags::mem_threadgroup);/*E*/
if (t == 40) y[0] = *((threadgroup int*)&count);
""",
        out=1,
        match=r"'count' .*index 0: (atomic write|read) by thread \(\d+,0,0\).* and "
              r"(read|atomic write) by thread \(\d+,0,0\)",
        expect={0: 64},
    ),
    MetalPair(
        "device_atomic_against_plain_write",
        """
device atomic_int* c = (device atomic_int*)&y[0];
uint t = thread_position_in_grid.x;
/*R*/if (t == 7) y[0] = 100;
else atomic_fetch_add_explicit(c, 1, memory_order_relaxed);/*F*/atomic_fetch_add_explicit(c, t == 7 ? 100 : 1, memory_order_relaxed);/*E*/
""",
        threads=(64, 1), group=(32, 1), out=1,
        match=r"'y' .*index 0: (atomic write|write) by thread \(\d+,0,0\) threadgroup "
              r"\(\d,0,0\) at body:\d+ and (write|atomic write) by thread",
        expect={0: 163},
    ),
    MetalPair(
        "two_dimensional_threadgroup",
        """
threadgroup int tile[8][8];
uint2 p = uint2(thread_position_in_threadgroup.x, thread_position_in_threadgroup.y);
tile[p.y][p.x] = int(p.y * 8 + p.x);
/*R*//*F*/threadgroup_barrier(mem_flags::mem_threadgroup);/*E*/
y[p.y * 8 + p.x] = tile[p.x][p.y];
""",
        threads=(8, 8), group=(8, 8), out=64,
        match=r"'tile' \(int\[8\]\[8\]\), index \d+ \(flat\): (read|write) by thread "
              r"\(\d,\d,0\) threadgroup \(0,0,0\) at body:\d+ and (write|read) by thread "
              r"\(\d,\d,0\) threadgroup \(0,0,0\) at body:\d+",
        expect={1: 8, 8: 1, 63: 63},
    ),
    MetalPair(
        "helper_with_threadgroup_pointer",
        """
uint t = thread_position_in_threadgroup.x;
threadgroup float buf[64];
put(buf, t);
/*R*//*F*/threadgroup_barrier(mem_flags::mem_threadgroup);/*E*/
y[t] = int(buf[(t + 5) % 64]);
""",
        header="inline void put(threadgroup float* b, uint t) { b[t] = float(t); }\n",
        # The write is made in the helper, declared in the kernel's header.
        match=r"'buf' \(float\[64\]\), index 5: write by thread \(5,0,0\) threadgroup "
              r"\(0,0,0\) at header:1 and read by thread \(0,0,0\) threadgroup \(0,0,0\) at body:6",
        expect={0: 5, 63: 4},
    ),
]


def _run(pair: MetalPair, racy: bool, y: np.ndarray, make_signature) -> None:
    body = _pick(pair.body, racy)
    sig = make_signature(f"{pair.id}_{int(racy)}", body, [], [("y", y)], header=pair.header)
    run_metal(sig, [], [y], (*pair.threads, 1), (*pair.group, 1), init_value=0, options=RACES)


@pytest.mark.parametrize("pair", PAIRS, ids=[p.id for p in PAIRS])
def test_racy_metal_kernel_is_reported(pair: MetalPair, metal_sig) -> None:
    y = np.zeros(pair.out, np.int32)
    with pytest.raises(DataRaceError) as info:
        _run(pair, True, y, metal_sig)
    msg = str(info.value)
    assert msg.startswith("[emu-metal kernel '"), msg
    assert re.search(pair.match, msg), msg
    assert len(re.findall(r" at (body|header):\d+", msg)) == 2, msg
    assert re.search(r"(read|write) by thread \(\d+,\d+,\d+\) threadgroup \(\d+,\d+,\d+\)", msg)


@pytest.mark.parametrize("pair", PAIRS, ids=[p.id for p in PAIRS])
def test_corrected_metal_twin_runs_clean(pair: MetalPair, metal_sig) -> None:
    y = np.zeros(pair.out, np.int32)
    _run(pair, False, y, metal_sig)
    for i, v in pair.expect.items():
        assert y[i] == v, (i, y[:8])
