"""A pytest plugin that sends every emulated launch of two or more groups to the workers.

For running the conformance suites with parallel groups on small launches too::

    CUNUMPY_EMULATOR_THREADS=3 PYTHONPATH=src:tests/emulation \\
        python -m pytest -p force_parallel_plugin tests/cuda_conformance tests/metal_conformance
"""

from __future__ import annotations

from cunumpy.emulation import _workers

_workers.MIN_THREADS = 1
_workers.MIN_THREADS_SYNC = 1
