"""cunumpy.mpi in one process (``comm=None``, no MPI): halo exchange against ``numpy.pad``'s
periodic wrap, migration, ``buffer``, the bad inputs, and the pieces under them (the geometry,
the pinned pool, the settings). On the NumPy backend, and on the CuPy one where a GPU works
(``backend`` fixture)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import cunumpy as xp
from cunumpy import config
from cunumpy.mpi import _layout, buffer, cuda_aware, halo_exchange, migrate
from cunumpy.mpi._buffers import PinnedPool
from cunumpy.profiling import assert_no_transfers


def _interior(a, width, d):
    return a[tuple(slice(width, -width) for _ in range(d))]


@pytest.mark.parametrize(("shape", "width"), [((7,), 1), ((6, 5), 1), ((6, 7), 2),
                                              ((5, 6, 7), 1), ((6, 7, 8), 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.complex128])
def test_one_process_fills_ghosts_periodically(backend, shape, width, dtype):
    d = len(shape)
    inner = (np.arange(int(np.prod(shape))).reshape(shape) + 1).astype(dtype)
    expected = np.pad(inner, width, mode="wrap")
    field = np.full(expected.shape, -1, dtype=dtype)
    _interior(field, width, d)[...] = inner
    field = xp.asarray(field)
    with assert_no_transfers():
        halo_exchange(field, width)
    np.testing.assert_array_equal(xp.to_numpy(field), expected)


@pytest.mark.parametrize("view", ["every_other_row", "reversed", "transposed"])
def test_one_process_strided_fields(backend, view):
    inner = np.arange(30, dtype=np.float64).reshape(5, 6) * 1.5
    expected = np.pad(inner, 2, mode="wrap")
    base = xp.full((9, 20), -1.0)
    if view == "every_other_row":
        field = base[:, ::2]
    elif view == "reversed":
        field = base[::-1, 3:13][:, ::-1]
    else:
        field = xp.full((10, 9), -1.0).T
    assert not field.flags.c_contiguous
    field[2:-2, 2:-2] = xp.asarray(inner)
    halo_exchange(field, 2)
    np.testing.assert_array_equal(xp.to_numpy(field), expected)
    if view == "every_other_row":  # the columns in between are untouched
        assert (xp.to_numpy(base)[:, 1::2] == -1).all()


@pytest.mark.parametrize(("field", "width", "pattern"), [
    (np.zeros((2, 6)), 1, r"axis 0 has 2 cells, fewer than 2\*width\+1 = 3"),
    (np.zeros((6, 5)), 2, r"axis 1 has 5 cells, fewer than 2\*width\+1 = 5|axis 1 has 1 interior"),
    (np.zeros((7, 9)), 3, r"axis 0 has 1 interior cells, fewer than the width 3"),
    (np.zeros((6, 6)), 0, r"argument 'width' must be a whole number of ghost cells, at least 1"),
    (np.zeros((6, 6)), 1.0, r"argument 'width'"),
    (np.broadcast_to(np.zeros(6), (6, 6)), 1, r"read-only|zero stride"),
])
def test_one_process_bad_fields(field, width, pattern):
    with pytest.raises(ValueError, match=pattern) as info:
        halo_exchange(field, width)
    assert "halo_exchange" in str(info.value)


def test_one_process_bad_field_type():
    with pytest.raises(TypeError, match=r"argument 'field' must be a NumPy or CuPy array, got list"):
        halo_exchange([[0.0] * 6] * 6, 1)
    with pytest.raises(TypeError, match=r"argument 'field' has dtype object"):
        halo_exchange(np.zeros((6, 6), dtype=object), 1)


def test_one_process_migrate_keeps_every_row(backend):
    ids = xp.arange(5)
    pos = xp.asarray(np.arange(15, dtype=np.float32).reshape(5, 3))
    out_ids, out_pos = migrate(xp.zeros(5, dtype=xp.int32), ids, pos)
    np.testing.assert_array_equal(xp.to_numpy(out_pos), xp.to_numpy(pos))
    assert out_ids is not ids and out_pos is not pos  # new arrays, the inputs untouched
    out_pos[0, 0] = 99
    assert float(pos[0, 0]) == 0
    assert migrate(xp.zeros(0, dtype=xp.int64)) == ()


@pytest.mark.parametrize(("dest", "arrays", "kind", "pattern"), [
    (np.array([0, 0, 2, 0]), (np.zeros(4),), ValueError,
     r"row 2 goes to rank 2, but there is one process \(comm=None\)"),
    (np.zeros(4, int), (np.zeros(4), np.zeros((3, 2))), ValueError,
     r"argument 'arrays\[1\]' float64\[3, 2\] has 3 rows but 'dest' has 4"),
    (np.zeros(4), (np.zeros(4),), ValueError, r"'dest' float64\[4\] must be a 1-d array of integer"),
    ([0, 0], (np.zeros(2),), TypeError, r"argument 'dest' must be a NumPy or CuPy array"),
    (np.zeros(2, int), ([1, 2],), TypeError, r"argument 'arrays\[0\]' must be a NumPy or CuPy"),
])
def test_one_process_migrate_bad_input(dest, arrays, kind, pattern):
    with pytest.raises(kind, match=pattern):
        migrate(dest, *arrays)


def test_buffer_host_arrays():
    a = np.arange(6.0)
    with assert_no_transfers(), buffer(a) as b:
        assert b is a
    strided = np.zeros((6, 2))[:, 0]
    with buffer(strided, send=False, recv=True) as b:
        assert b.flags.c_contiguous and b.shape == (6,)
        b[...] = 7
    assert (strided == 7).all()
    with pytest.raises(RuntimeError), buffer(strided, recv=True) as b:  # nothing copied back
        b[...] = 1
        raise RuntimeError("the exchange failed")
    assert (strided == 7).all()
    frozen = np.arange(3.0)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match=r"read-only but recv=True"), buffer(frozen, recv=True):
        pass
    with pytest.raises(ValueError, match=r"at least one of send=True or recv=True"), \
            buffer(a, send=False):
        pass
    with pytest.raises(TypeError, match=r"argument 'array' must be a NumPy or CuPy array"), \
            buffer([1, 2]):
        pass


def test_numpy_backend_has_no_device(monkeypatch):
    from cunumpy.mpi import bind_device

    with xp.use_backend("numpy"):
        assert bind_device() is None
        assert cuda_aware() is False
        monkeypatch.setenv("CUNUMPY_MPI_CUDA_AWARE", "1")
        assert cuda_aware() is False  # no device buffers on the NumPy backend


@pytest.mark.parametrize(("value", "expected"), [("1", True), ("on", True), ("0", False),
                                                  ("", None), ("auto", None)])
def test_cuda_aware_setting(monkeypatch, value, expected):
    monkeypatch.setenv("CUNUMPY_MPI_CUDA_AWARE", value)
    assert config.mpi_cuda_aware() is expected


def test_cuda_aware_setting_rejects_other_values(monkeypatch):
    monkeypatch.setenv("CUNUMPY_MPI_CUDA_AWARE", "maybe")
    with pytest.raises(ValueError, match=r"CUNUMPY_MPI_CUDA_AWARE='maybe' is not one of"):
        config.mpi_cuda_aware()


def test_launcher_variables(monkeypatch):
    for var in ("PMI_RANK", "PMI_SIZE", "PMIX_RANK", "OMPI_COMM_WORLD_SIZE",
                "MV2_COMM_WORLD_SIZE", "MPI_LOCALNRANKS"):
        monkeypatch.delenv(var, raising=False)
    assert not config.mpi_launched()
    monkeypatch.setenv("PMI_RANK", "3")
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "3")
    assert config.mpi_launched()
    env = config.mpi_environment({"EXTRA": "1"}, python_path="/somewhere")
    assert "PMI_RANK" not in env and "OMPI_COMM_WORLD_RANK" not in env and env["EXTRA"] == "1"
    assert env["PYTHONPATH"].split(os.pathsep)[0] == "/somewhere"
    monkeypatch.setenv("CUNUMPY_MPIEXEC", "srun --mpi=pmix")
    assert config.mpiexec_command() == ["srun", "--mpi=pmix"]


def test_directions_and_tags():
    for d in (1, 2, 3):
        ds = _layout.directions(d)
        assert len(ds) == 3**d - 1
        assert len({_layout.tag(o) for o in ds}) == len(ds)


def test_neighbours_past_open_edges():
    dims = [2, 3]

    def rank_of(c):
        return int(np.ravel_multi_index(c, dims))

    corner = _layout.neighbours(dims, [False, True], [0, 0], rank_of, me=0)
    assert corner[(-1, 0)] is None and corner[(-1, 1)] is None  # past the open edge of axis 0
    assert corner[(0, -1)] == rank_of([0, 2])  # wrapped along the periodic axis
    assert corner[(1, -1)] == rank_of([1, 2])
    alone = _layout.neighbours([1, 1], [True, True], [0, 0], lambda c: 0, me=0)
    assert set(alone.values()) == {_layout.SELF}


def test_box_offsets_match_the_array():
    a = np.arange(7 * 8 * 3).reshape(7, 8, 3)[::-1, 1::2]
    flat, low = _layout.flat_view(np, a)
    box = (slice(1, 4), slice(0, 2))
    items = _layout.box_offsets(np, box, (3,), tuple(s // a.itemsize for s in a.strides), low)
    np.testing.assert_array_equal(flat[items], a[box].ravel())


def test_pinned_pool_reuses_blocks():
    made = []

    def allocate(n):
        made.append(n)
        return np.zeros(n, dtype=np.uint8)

    pool = PinnedPool(allocate, keep_bytes=1 << 20)
    with pool.lease(1000) as a:
        assert a.nbytes == 1000
    with pool.lease(70_000) as b, pool.lease(900) as c:
        assert b.nbytes == 70_000 and c.nbytes == 900
    assert made == [64 << 10, 128 << 10]  # the first 64 KiB block served the 900 bytes
    with pool.lease(1000), pool.lease(1000):  # two at once: one kept block, one new
        pass
    assert pool.allocations == 3
    with pool.lease(1000), pool.lease(1000), pool.lease(100_000):
        pass
    assert pool.allocations == 3  # warm: nothing new
    big = pool.take(2 << 20)
    pool.give(big)  # beyond keep_bytes: dropped, not kept
    assert pool.kept_bytes <= 1 << 20


def test_import_cunumpy_never_imports_mpi():
    code = ("import sys, json, cunumpy, cunumpy.kernels\n"
            "a = sorted(m for m in ('cunumpy.mpi', 'mpi4py') if m in sys.modules)\n"
            "import cunumpy.mpi\n"
            "b = sorted(m for m in ('mpi4py',) if m in sys.modules)\n"
            "print(json.dumps([a, b]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, env={**os.environ, "CUNUMPY_BACKEND": "numpy"})
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [[], []]


def test_missing_mpi4py_says_what_to_install(monkeypatch):
    from cunumpy.mpi import _comm

    monkeypatch.setattr(_comm, "_mpi", None)
    monkeypatch.setitem(sys.modules, "mpi4py", None)
    with pytest.raises(ImportError, match=r"pip install 'cunumpy\[mpi\]'"):
        _comm.load_mpi()


def test_the_layout_covers_every_ghost_cell():
    """The receive boxes of all directions tile the ghost region exactly once."""
    for d, w in itertools.product((1, 2, 3), (1, 2)):
        shape = (3 * w + 1,) * d
        seen = np.zeros(shape, int)
        for o in _layout.directions(d):
            seen[_layout.recv_box(shape, w, o)] += 1
            assert (np.zeros(shape, bool)[_layout.send_box(shape, w, o)].shape ==
                    np.zeros(shape, bool)[_layout.recv_box(shape, w, o)].shape)
        inner = tuple(slice(w, -w) for _ in range(d))
        assert (seen[inner] == 0).all()
        seen[inner] = 1
        assert (seen == 1).all()
