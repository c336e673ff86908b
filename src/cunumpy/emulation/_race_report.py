"""The message of a :class:`~cunumpy.emulation.errors.DataRaceError` from a launch's report."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cunumpy.emulation._launch_types import BufferArg, Dialect
from cunumpy.emulation._rewrite import SharedDecl
from cunumpy.emulation._sites import source_lines
from cunumpy.emulation.errors import DataRaceError

if TYPE_CHECKING:  # pragma: no cover
    from cunumpy.emulation._build import Library

__all__ = ["race_error"]

_DEVICE_VAR_ID = 1 << 20  # cn::race::kDeviceVarId: Report.buffer of a __device__ variable
_ACCESS = {1: "read", 2: "write", 3: "atomic read", 4: "atomic write"}
_SIZES = {
    "bool": 1, "char": 1, "signed char": 1, "unsigned char": 1, "uchar": 1, "int8_t": 1,
    "uint8_t": 1, "short": 2, "unsigned short": 2, "ushort": 2, "int16_t": 2, "uint16_t": 2,
    "half": 2, "__half": 2, "float16_t": 2, "bfloat": 2, "bfloat16_t": 2, "int": 4,
    "unsigned int": 4, "unsigned": 4, "uint": 4, "int32_t": 4, "uint32_t": 4, "float": 4,
    "long": 8, "unsigned long": 8, "long long": 8, "unsigned long long": 8, "int64_t": 8,
    "uint64_t": 8, "double": 8, "atomic_int": 4, "atomic_uint": 4, "atomic_float": 4,
    "float2": 8, "float4": 16, "int2": 8, "int4": 16, "uint2": 8, "uint4": 16, "double2": 16,
}


def _xyz(v: Any) -> str:
    return f"({v[0]},{v[1]},{v[2]})"


def _elem_size(ctype: str) -> int | None:
    words = [w for w in ctype.replace("metal::", "").split() if w not in ("const", "volatile")]
    name = " ".join(words)
    if name.startswith("atomic<") and name.endswith(">"):
        name = name[7:-1].strip()
    return _SIZES.get(name)


def _index(offset: int, item: int) -> str:
    """The element a byte offset falls in (and the byte within it)."""
    return f"index {offset // item}" + (f" (byte {offset % item})" if offset % item else "")


def _memory(
    r: Any, dialect: Dialect, buffers: Sequence[BufferArg], shared: Sequence[SharedDecl]
) -> tuple[str, str, bool]:
    """(what the memory is called, the index text, whether it is shared memory)."""
    offset = int(r.index)
    name, _, elem = r.detail.decode(errors="replace").rpartition(":")
    declared = int(elem) if elem.isdigit() else 0  # element size of the declared type
    if r.buffer >= _DEVICE_VAR_ID:
        return f"__device__ variable '{name}'", _index(offset, declared or 1), False
    if r.buffer >= 0:
        b = buffers[r.buffer] if r.buffer < len(buffers) else None
        label = b.label if b is not None else f"buffer {r.buffer}"
        if callable(label):
            label = label()
        item = b.itemsize if b is not None and b.itemsize > 0 else 1
        return label, _index(offset, item), False
    k = -1 - r.buffer
    decl = next((d for d in shared if d.slot == k), None)
    label = f"{dialect.shared} '{decl.name}' ({decl.describe()})" if decl else f"{dialect.shared} {k}"
    size = (_elem_size(decl.ctype) if decl else None) or declared
    if size:
        index = _index(offset, size)
        if decl is not None and len(decl.dims) > 1:
            index += " (flat)"
    else:
        index = f"byte offset {offset}"
    return label, index, True


def _hint(dialect: Dialect, shared: bool, same_group: bool, same_warp: bool,
          atomics: bool = False) -> str:
    if not same_group and atomics:  # only block-scoped atomics race with atomics
        return (
            "block-scoped atomics (atomicAdd_block, atomicCAS_block, ...) order only the threads "
            "of one block: use the device-scoped forms (atomicAdd, atomicCAS, ...)"
        )
    if not same_group:
        return (
            f"threads of different {dialect.group}s are never ordered within one launch: use "
            "atomics for both accesses, or split the kernel into two launches"
        )
    if shared:
        fix = f"a {dialect.barrier} that both threads pass between the two accesses"
    else:
        fix = f"a {dialect.device_barrier} that both threads pass between the two accesses"
    if same_warp:
        fix += (
            f" (or {dialect.lane_sync}: lanes of one {dialect.lanes} are not ordered without it)"
        )
    return f"put {fix}, or make both accesses atomic"


def race_error(
    r: Any,
    dialect: Dialect,
    kernel: str,
    buffers: Sequence[BufferArg],
    shared: Sequence[SharedDecl],
    order: str,
    lib: Library | None,
) -> DataRaceError:
    """The error for a report whose first failure is a data race."""
    prefix = dialect.prefix(kernel)
    label, index, is_shared = _memory(r, dialect, buffers, shared)
    sites: list[str | None] = [None, None]
    if lib is not None:
        sites = source_lines(lib.path, [int(r.pc[0]), int(r.pc[1])])
    here = [f" at {s}" if s else " (line unknown)" for s in sites]
    kind = [_ACCESS.get(int(r.access[k]), "access") for k in (0, 1)]
    same_group = tuple(r.group) == tuple(r.group2)
    same_warp = same_group and bool(r.lane)
    atomics = all(int(r.access[k]) in (3, 4) for k in (0, 1))
    more = int(r.count) - 1
    further = f"; {more} further failure{'s' if more != 1 else ''}" if more else ""
    return DataRaceError(
        f"{prefix} data race on {label}, {index}: "
        f"{kind[0]} by thread {_xyz(r.thread)} {dialect.group} {_xyz(r.group)}{here[0]} and "
        f"{kind[1]} by thread {_xyz(r.thread2)} {dialect.group} {_xyz(r.group2)}{here[1]}, "
        f"not ordered by synchronisation; {_hint(dialect, is_shared, same_group, same_warp, atomics)}"
        f"{further}{order}"
    )
