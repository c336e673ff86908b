"""On-disk cache of compiled emulation libraries.

Root: an explicit argument, else ``CUNUMPY_CACHE_DIR``, else the user cache directory of
:mod:`platformdirs`. Layout: ``<root>/emu-<cunumpy version>-f<format>/<engine>/<key[:2]>/<key>/``
holding the artifact and ``meta.json`` (the inputs of the key and the artifact's SHA-256).

- The key is the full SHA-256 of a canonical JSON of its inputs (see :func:`make_key`).
- An entry is built in a private ``mkdtemp`` directory beside its final place, fsynced, then
  renamed into place; a process that loses the race drops its copy and uses the winner's.
- A hit is verified: the meta must match the key and the artifact its recorded digest. A corrupt
  entry is a miss with a :class:`CacheCorruptWarning`, and is replaced.
- Directories are created ``0o700``; an entry is only used when every directory from the root down
  to it belongs to the current user and is not writable by group or others
  (:class:`~cunumpy.emulation.errors.UnsafeCacheError` otherwise), since its libraries are loaded
  into the process.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import stat
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cunumpy import config
from cunumpy._version import __version__
from cunumpy.emulation.errors import UnsafeCacheError

__all__ = [
    "CACHE_FORMAT",
    "CacheCorruptWarning",
    "cache_root",
    "clear_cache",
    "entry_dir",
    "get_or_build",
    "make_key",
]

CACHE_FORMAT = 1
"""Bumped whenever the layout, the meta or the launch ABI changes."""

_PREFIX = "emu-"


class CacheCorruptWarning(UserWarning):
    """A cache entry failed verification; it is rebuilt."""


def cache_root(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The cache root (created ``0o700`` if missing). See the module docstring for the order."""
    if explicit is not None:
        root = Path(explicit)
    else:
        override = config.cache_dir_override()
        if override:
            root = Path(override)
        else:
            import platformdirs

            root = Path(platformdirs.user_cache_dir("cunumpy", appauthor=False))
    root = root.expanduser()
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    return root.resolve()


def _version_dir(root: Path) -> Path:
    return root / f"{_PREFIX}{__version__}-f{CACHE_FORMAT}"


def make_key(inputs: dict[str, Any]) -> str:
    """Full SHA-256 hex digest of the canonical JSON of ``inputs``."""
    text = json.dumps(inputs, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def entry_dir(root: Path, engine: str, key: str) -> Path:
    """Where the entry of ``key`` lives."""
    return _version_dir(root) / engine / key[:2] / key


def check_private(path: Path, root: Path) -> None:
    """Raise UnsafeCacheError unless ``path`` and every directory between it and ``root`` belong
    to the current user and are not writable by group or others."""
    uid = os.getuid()
    current = path
    while True:
        st = os.lstat(current)
        if stat.S_ISLNK(st.st_mode):
            raise UnsafeCacheError(
                f"emulation cache path {current} is a symbolic link; compiled kernels are only "
                "loaded from a private cache directory. Point CUNUMPY_CACHE_DIR at a real "
                "directory"
            )
        if st.st_uid != uid:
            raise UnsafeCacheError(
                f"emulation cache directory {current} is owned by uid {st.st_uid}, not by you "
                f"(uid {uid}); compiled kernels are only loaded from a private cache. Set "
                "CUNUMPY_CACHE_DIR to a directory of your own"
            )
        if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise UnsafeCacheError(
                f"emulation cache directory {current} is writable by group or others (mode "
                f"{stat.S_IMODE(st.st_mode):o}); compiled kernels are only loaded from a "
                f"private cache. Run chmod go-w {current}, or set CUNUMPY_CACHE_DIR elsewhere"
            )
        if current == root or current.parent == current:
            return
        current = current.parent


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _verify(entry: Path, key: str, artifact: str) -> bool:
    try:
        meta = json.loads((entry / "meta.json").read_text())
        if meta.get("key") != key or meta.get("artifact") != artifact:
            return False
        return _sha256_file(entry / artifact) == meta.get("artifact_sha256")
    except (OSError, ValueError):
        return False


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _discard(entry: Path) -> None:
    """Move a bad entry out of the way (rename first, so readers never see half of it)."""
    trash = Path(tempfile.mkdtemp(prefix=".trash-", dir=entry.parent))
    try:
        os.rename(entry, trash / "old")
    except FileNotFoundError:
        pass
    shutil.rmtree(trash, ignore_errors=True)


def get_or_build(
    root: Path,
    engine: str,
    key: str,
    inputs: dict[str, Any],
    artifact: str,
    build: Callable[[Path], None],
) -> Path:
    """Path of the verified artifact of ``key``, building and publishing it if needed.

    ``build(directory)`` must write ``directory / artifact``. Returns the artifact's path inside
    the published entry.
    """
    entry = entry_dir(root, engine, key)
    if entry.is_dir():
        check_private(entry, root)
        if _verify(entry, key, artifact):
            return entry / artifact
        warnings.warn(
            f"emulation cache entry {entry} is corrupt (meta or {artifact} does not match its "
            "digest); rebuilding it",
            CacheCorruptWarning,
            stacklevel=3,
        )
        _discard(entry)
    entry.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    check_private(entry.parent, root)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=entry.parent))
    try:
        build(tmp)
        target = tmp / artifact
        os.chmod(target, 0o700 if os.access(target, os.X_OK) else 0o600)
        meta = {
            "key": key,
            "artifact": artifact,
            "artifact_sha256": _sha256_file(target),
            "inputs": inputs,
        }
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
        os.chmod(tmp / "meta.json", 0o600)
        _fsync(target)
        _fsync(tmp / "meta.json")
        try:
            os.rename(tmp, entry)
        except OSError as exc:
            if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                raise
            # Another process published the same key first: use theirs.
            shutil.rmtree(tmp, ignore_errors=True)
            check_private(entry, root)
            if not _verify(entry, key, artifact):
                raise OSError(
                    f"emulation cache entry {entry} published by another process does not "
                    "verify"
                ) from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return entry / artifact


def clear_cache(root: str | os.PathLike[str] | None = None) -> int:
    """Delete every emulation cache entry under the root (all cunumpy versions).

    Only the directories this module creates (``emu-*``) are removed; anything else in the root
    is left alone. Returns the number of version directories removed.
    """
    base = cache_root(root)
    removed = 0
    for child in base.iterdir():
        if child.name.startswith(_PREFIX) and child.is_dir() and not child.is_symlink():
            shutil.rmtree(child)
            removed += 1
    return removed
