"""Headers of the CUDA toolkit's device libraries (cuRAND) for kernels compiled by NVRTC.

NVRTC searches only the directories it is given. CuPy gives it its own headers and the CUDA
runtime's; a kernel that includes ``<curand_kernel.h>`` also needs the directory of cuRAND's
headers, which comes with a CUDA toolkit (``$CUDA_PATH/include``) or with the pip wheels
``nvidia-curand`` (CUDA 13) / ``nvidia-curand-cu12`` (CUDA 12). :func:`library_include_options`
finds it, once per process, when a kernel's text includes such a header.
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from typing import Any

from cunumpy._lang.includes import scan_includes

__all__ = ["CURAND_HEADERS", "find_header_dir", "library_include_options"]

CURAND_HEADERS = frozenset({
    "curand_kernel.h", "curand.h", "curand_philox4x32_x.h", "curand_uniform.h",
    "curand_normal.h", "curand_lognormal.h", "curand_poisson.h", "curand_mrg32k3a.h",
    "curand_globals.h", "curand_precalc.h", "curand_normal_static.h", "curand_discrete.h",
    "curand_discrete2.h", "curand_mtgp32_kernel.h", "curand_mtgp32.h",
})
"""cuRAND's device-side headers (their directory is added when a kernel includes one)."""

_INSTALL = (
    "install cuRAND's headers: `pip install nvidia-curand` (CUDA 13) or "
    "`pip install nvidia-curand-cu12` (CUDA 12), or point CUDA_PATH at a CUDA toolkit"
)


def _candidates(cupy: Any) -> list[Path]:
    dirs: list[Path] = []
    try:
        cuda_path = cupy.cuda.get_cuda_path()
    except Exception:
        cuda_path = None
    if cuda_path:
        dirs.append(Path(cuda_path) / "include")
    spec = importlib.util.find_spec("nvidia")
    for root in (spec.submodule_search_locations or []) if spec else []:
        dirs.extend(sorted(p.parent for p in Path(root).glob("*/include/curand_kernel.h")))
    nvcc = shutil.which("nvcc")
    if nvcc:
        dirs.append(Path(nvcc).resolve().parent.parent / "include")
    dirs += [Path("/usr/local/cuda/include"), Path("/usr/include")]
    return dirs


_FOUND: dict[str, str | None] = {}


def find_header_dir(header: str, cupy: Any) -> str | None:
    """The first directory holding ``header`` (looked up once per process): CuPy's CUDA path,
    the ``nvidia`` pip wheels, the toolkit of the ``nvcc`` on ``PATH``, ``/usr/local/cuda``;
    None when there is none."""
    if header not in _FOUND:
        _FOUND[header] = next(
            (str(d) for d in _candidates(cupy) if (d / header).is_file()), None)
    return _FOUND[header]


def library_include_options(code: str, cupy: Any, kernel: str) -> tuple[str, ...]:
    """``-I`` options for the library headers ``code`` includes (none when it includes none).

    Raises
    ------
    FileNotFoundError
        ``code`` includes a cuRAND header and no directory holds it (the message says what to
        install).
    """
    wanted = {m.group(2).strip() for m in scan_includes(code)} & CURAND_HEADERS
    if not wanted:
        return ()
    found = find_header_dir("curand_kernel.h", cupy)
    if found is None:
        raise FileNotFoundError(
            f"[cupy kernel {kernel!r}] includes <{sorted(wanted)[0]}> but no cuRAND headers "
            f"were found; {_INSTALL}"
        )
    options = [f"-I{found}"]
    cccl = Path(found) / "cccl"  # CUDA 13 keeps <nv/target> (used by cuRAND) there
    if (cccl / "nv" / "target").is_file():
        options.append(f"-I{cccl}")
    return tuple(options)
