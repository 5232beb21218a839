"""Give the C heap's free memory back to the operating system between a run's stages and between runs.

Extracting descriptors allocates and frees many medium-sized arrays. glibc's allocator keeps the freed heap
pages resident, and the large arrays of later stages (memory-mapped, above its mmap threshold) never reuse
them. On the copies board's DAISY descriptors (3.0 M x 200) the run that extracted them kept about 4 GB
resident from then on, and so did every later run of the same ``lfabench run -m`` process: each of their
stages peaked 4 GB higher than in a run that read the descriptors from the cache. ``malloc_trim(0)`` returns
those pages (it releases free pages inside the heap, not only at its top).
"""

from __future__ import annotations

import ctypes
import functools

__all__ = ["release_free_heap"]


@functools.lru_cache(maxsize=1)
def _malloc_trim():
    """glibc's ``malloc_trim``, or None where the C library has none (macOS, musl, Windows)."""
    try:
        trim = getattr(ctypes.CDLL(None), "malloc_trim", None)   # the symbols this process has loaded
    except (OSError, TypeError):                                  # Windows: no such handle
        return None
    if trim is not None:
        trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def release_free_heap() -> bool:
    """Return the C heap's free pages to the operating system; True where the C library can (glibc).

    Only free memory is released: no live object moves, so nothing computed depends on it. It costs a walk
    over the heap's free chunks (milliseconds).
    """
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
