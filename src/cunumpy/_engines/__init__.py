"""The seam between the kernel front ends and the engines that run kernels.

:mod:`._base` defines what crosses the seam (a frozen :class:`~._base.Program`, a
:class:`~._base.Launch`, an :class:`~._base.EngineStatus`) and the :class:`~._base.Engine`
protocol; :mod:`._table` is the one table of engines (``cupy``, ``emu-cuda``, ``mlx``,
``emu-metal``) that ``cunumpy info``, the pytest plugin, the demo, ``assert_kernels_agree`` and
dispatch ask. See ``docs/architecture.md``.
"""
