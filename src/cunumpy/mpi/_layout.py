"""The geometry of a halo exchange: neighbours, the boxes each message carries, and the memory
offsets of a box (for packing through one gather and unpacking through one scatter).

A field has ``d`` decomposed axes (then any trailing axes); along each decomposed axis ``width``
ghost cells sit at each end around the interior. For each direction ``o`` in ``{-1, 0, 1}^d``
(faces, edges and corners: ``3**d - 1`` of them), a rank sends the interior cells next to that
side to the neighbour at ``coords + o`` and receives into the ghost cells of that side what the
neighbour sends its way. Nothing here calls MPI or a device.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Message", "box_offsets", "directions", "flat_view", "messages", "neighbours"]

SELF = -1
"""``Message.peer`` of a message to this rank itself (a periodic axis of one process)."""


def directions(d: int) -> list[tuple[int, ...]]:
    """Every direction of a ``d``-dimensional neighbourhood but the centre."""
    return [o for o in itertools.product((-1, 0, 1), repeat=d) if any(o)]


def tag(o: tuple[int, ...]) -> int:
    """The message tag of direction ``o`` (distinct per direction, small)."""
    return sum((c + 1) * 3**j for j, c in enumerate(o))


def send_box(shape: tuple[int, ...], width: int, o: tuple[int, ...]) -> tuple[slice, ...]:
    """The interior cells next to side ``o`` (what the neighbour there needs)."""
    w = width
    return tuple(slice(w, 2 * w) if c < 0 else slice(n - 2 * w, n - w) if c > 0 else
                 slice(w, n - w) for n, c in zip(shape, o))


def recv_box(shape: tuple[int, ...], width: int, o: tuple[int, ...]) -> tuple[slice, ...]:
    """The ghost cells on side ``o``."""
    w = width
    return tuple(slice(0, w) if c < 0 else slice(n - w, n) if c > 0 else slice(w, n - w)
                 for n, c in zip(shape, o))


def neighbours(dims: list[int], periods: list[bool], coords: list[int], rank_of: Any,
               me: int) -> dict[tuple[int, ...], int | None]:
    """The rank at ``coords + o`` for every direction ``o``: ``SELF`` for this rank, None past a
    non-periodic edge. ``rank_of(coords)`` is the communicator's ``Get_cart_rank``."""
    found: dict[tuple[int, ...], int | None] = {}
    for o in directions(len(dims)):
        target = []
        for c, step, n, periodic in zip(coords, o, dims, periods):
            k = c + step
            if not 0 <= k < n:
                if not periodic:
                    break
                k %= n
            target.append(k)
        else:
            rank = rank_of(target)
            found[o] = SELF if rank == me else rank
            continue
        found[o] = None
    return found


@dataclass(frozen=True)
class Message:
    """One side's exchange: what goes to the neighbour there and what comes back from it."""

    direction: tuple[int, ...]
    peer: int
    """The neighbour's rank, or ``SELF``."""
    send: tuple[slice, ...]
    recv: tuple[slice, ...]
    send_tag: int
    recv_tag: int
    cells: int
    """Cells (over the decomposed axes) in each of the two boxes."""


def messages(shape: tuple[int, ...], width: int,
             peers: dict[tuple[int, ...], int | None]) -> list[Message]:
    """The messages of one exchange (sides past a non-periodic edge have none).

    A message to ``SELF`` is a local copy: its ``send`` box is the one this rank sends towards
    ``-o``, which is what arrives in the ghost cells of side ``o``.
    """
    out = []
    for o, peer in peers.items():
        if peer is None:
            continue
        towards = tuple(-c for c in o) if peer == SELF else o
        send, recv = send_box(shape, width, towards), recv_box(shape, width, o)
        cells = int(np.prod([s.stop - s.start for s in recv]))
        out.append(Message(o, peer, send, recv, tag(o), tag(tuple(-c for c in o)), cells))
    return out


def flat_view(xp: Any, field: Any) -> tuple[Any, int]:
    """``(flat, low)``: a 1-d view of every element ``field`` spans, from its lowest address,
    and the item offset of ``field``'s first element in it (``-low`` is its offset).

    Item offsets of ``field[i]`` in ``flat`` are ``sum(i_j * strides_j) / itemsize - low``.
    Strides must be multiples of the item size (checked by the caller).
    """
    itemsize = field.itemsize
    flip = tuple(slice(None, None, -1) if s < 0 and n > 1 else slice(None)
                 for n, s in zip(field.shape, field.strides))
    base = field[flip]
    span = 1 + sum((n - 1) * abs(s) // itemsize for n, s in zip(field.shape, field.strides))
    low = sum((n - 1) * s // itemsize for n, s in zip(field.shape, field.strides) if s < 0)
    flat = xp.lib.stride_tricks.as_strided(base, shape=(span,), strides=(itemsize,))
    return flat, low


def box_offsets(xp: Any, box: tuple[slice, ...], trailing: tuple[int, ...],
                item_strides: tuple[int, ...], low: int) -> Any:
    """Item offsets in :func:`flat_view` of ``field[box]`` (every trailing element), C order."""
    ranges = [(s.start, s.stop) for s in box] + [(0, n) for n in trailing]
    total: Any = None
    for k, ((lo, hi), stride) in enumerate(zip(ranges, item_strides)):
        shape = [1] * len(ranges)
        shape[k] = hi - lo
        term = (xp.arange(lo, hi, dtype=xp.int64) * stride).reshape(shape)
        total = term if total is None else total + term
    return (total - low).reshape(-1)
