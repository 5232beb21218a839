"""Whether this process's BLAS gives a row of a matrix product the same bits whatever rows it is computed with.

An aggregator whose rows are its own only through matrix products (T-emb's unpadded batches, FV's occupancy sums
in the GEMM) relies on the BLAS to compute row ``i`` of ``A @ B`` from row ``i`` of ``A`` alone, in one order,
whatever the number of rows of ``A`` and the row's place among them, and to leave a sum as it is when zero rows are
added to its inner dimension (zero padding). That is a property of the kernel, not of the algorithm. OpenBLAS's
SkylakeX kernels (AVX-512) have it; its Haswell kernels on an AVX2 AMD EPYC (NumPy's OpenBLAS 0.3.31) do not: a
float32 row changes in its last bits with the number of rows and its place among them, a float64 row with an odd
number of rows (the edge tiles sum in another order). :func:`gemm_rows_are_own` asks the BLAS once per process,
on the products those aggregators compute; where it answers False they declare ``independent_rows`` False, so a
run transforms every sample after ``fit`` instead of taking the fit samples' rows from ``fit_transform``.
"""

from __future__ import annotations

import functools

import numpy as np

#: ``(inner, columns)`` of the probed products: a few descriptor widths against output widths with and without a
#: remainder of the kernels' tiles.
SHAPES = ((16, 33), (128, 64), (200, 48))
#: Row counts compared with the same rows of a 96-row product (one row alone is a matrix-vector product, another
#: routine, which the runner never relies on).
ROWS = (2, 3, 5, 8, 17, 33, 64, 95)


def _rows_are_own(dtype, inner: int, columns: int, rng: np.random.Generator) -> bool:
    B = rng.standard_normal((inner, columns)).astype(dtype)
    X = rng.standard_normal((96, inner)).astype(dtype)
    full = X @ B
    if any(not np.array_equal(X[:m] @ B, full[:m]) for m in ROWS):
        return False
    if not np.array_equal(np.roll(np.roll(X, 3, axis=0) @ B, -3, axis=0), full):
        return False
    padded = np.concatenate([X, np.zeros((96, 7), dtype=dtype)], axis=1) @ np.concatenate(
        [B, rng.standard_normal((7, columns)).astype(dtype)])
    stacked = np.matmul(np.stack([X[:48], X[48:]]), B).reshape(96, columns)
    return np.array_equal(padded, full) and np.array_equal(stacked, full)


@functools.lru_cache(maxsize=None)
def gemm_rows_are_own() -> bool:
    """True when NumPy's BLAS computes every row of the probed float32 and float64 products (:data:`SHAPES`) with
    the same bits at any of :data:`ROWS` rows, at another place among the rows, with zero-padded inner dimension and
    as one matrix of a stacked product. Asked once per process (the BLAS kernel is fixed at its load)."""
    rng = np.random.default_rng(0)
    return all(_rows_are_own(dtype, inner, columns, rng)
               for dtype in (np.float32, np.float64) for inner, columns in SHAPES)
