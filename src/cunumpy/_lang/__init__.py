"""Kernel-language text: the bottom layer shared by the front ends and the emulators.

One tokenizer (:mod:`.tokens`), preprocessor evaluation (:mod:`.cuda_preprocess`), CUDA
signature parsing and C type names (:mod:`.cuda_signature`, :mod:`.cuda_types`) and the text of
MLX-style Metal kernels (:mod:`.metal_signature`). Nothing here imports from another cunumpy
layer except :mod:`cunumpy.config`; see ``docs/architecture.md``.
"""
