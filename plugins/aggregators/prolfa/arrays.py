"""The array module of the deprecated GPU routes: NumPy, or CuPy on an NVIDIA GPU (with a clear error without one).

Shared by :mod:`.dense` (``backend="dense"``/``"cupy"``) and :mod:`.pairwise_fw` (``backend="pairwise_fw_cupy"``);
both GPU routes are deprecated (:data:`~.options.DEPRECATED`).
"""

from __future__ import annotations

import numpy as np

__all__ = ["array_namespace", "to_host"]


def array_namespace(backend: str, requested: str | None = None, cpu_backend: str = "auto"):
    """The array module of ``backend``: ``"dense"`` is NumPy, ``"cupy"`` CuPy on the current GPU.

    Without CuPy or a device the error names ``requested`` (the backend the user asked for, default ``backend``)
    and ``cpu_backend``, the CPU backend to use instead.
    """
    if backend == "dense":
        return np
    if backend == "cupy":
        asked = requested or backend
        try:
            import cupy
        except ImportError as exc:
            raise ImportError(f"ProLFA backend={asked!r} needs CuPy and an NVIDIA GPU: pip install 'lfabench[gpu]' "
                              f"(cupy-cuda12x; for CUDA 13 install cupy-cuda13x), or use backend={cpu_backend!r} "
                              f"(on the CPU) ({exc})") from None
        try:
            cupy.cuda.runtime.getDeviceCount()
        except Exception as exc:  # cupy raises its own CUDARuntimeError without a device
            raise RuntimeError(f"ProLFA backend={asked!r}: no usable CUDA device ({exc}); use "
                               f"backend={cpu_backend!r}") from None
        return cupy
    raise ValueError(f"unknown dense backend {backend!r}")


def to_host(a) -> np.ndarray:
    """A NumPy array of ``a`` (a CuPy array is copied off the device; a NumPy one is returned as is)."""
    return a.get() if hasattr(a, "get") else np.asarray(a)
