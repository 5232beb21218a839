"""Zero-padded batches of bags, for per-bag matrix work (``n_i x n_i`` kernels) done as batched BLAS calls.

``padded_batches(bags, max_cells)`` walks the samples sorted by descriptor count
(so each batch pads to a similar size), in groups whose padded size
``B * n_max`` stays under ``max_cells`` rows, and yields
``(sample_indices, X_padded (B, n_max, d), mask (B, n_max))``. Empty samples
come out with an all-False mask. One gather per batch, no per-sample loop.
With ``same_count=True`` a batch holds samples of one descriptor count only: nothing is padded, so a
sample's batched arithmetic has the same shapes whatever samples it comes with.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from lfabench.sdk import Bags

__all__ = ["padded_batches"]


def padded_batches(bags: Bags, max_cells: int = 65_536, values: np.ndarray | None = None, same_count: bool = False
                   ) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Yield ``(idx, Xp, mask)`` covering every sample once.

    Parameters
    ----------
    bags : Bags
    max_cells : int
        Upper bound on ``B * n_max`` per batch (a batch holds at least one sample).
    values : (N, k) array, optional
        Per-descriptor rows to pad instead of ``bags.descriptors`` (e.g. an embedding).
    same_count : bool
        Batch only samples of equal descriptor counts (``n_max`` is every sample's count; empty samples
        come out as ``n_max = 1`` with an all-False mask).
    """
    V = bags.descriptors if values is None else values
    if V.shape[0] != bags.n_descriptors:
        raise ValueError(f"values has {V.shape[0]} rows for {bags.n_descriptors} descriptors")
    counts = bags.counts
    order = np.argsort(counts, kind="stable")
    sorted_counts = counts[order]
    padded_len = np.maximum(sorted_counts, 1)        # ascending, so a batch pads to its last sample
    start, m = 0, bags.n_samples
    while start < m:
        # (batch length) * (largest count) is non-decreasing in the batch end: the valid ends are a prefix
        last = m if not same_count else start + int(np.searchsorted(sorted_counts[start:], sorted_counts[start],
                                                                    "right"))
        ends = np.arange(start + 1, last + 1)
        fits = (ends - start) * padded_len[ends - 1] <= max_cells
        stop = start + max(1, int(fits.sum()))
        idx = order[start:stop]
        c = counts[idx]
        n_max = max(int(c.max()), 1)
        mask = np.arange(n_max)[None, :] < c[:, None]
        b_of_row = np.repeat(np.arange(idx.size), c)
        pos = np.arange(c.sum()) - np.repeat(np.cumsum(c) - c, c)
        rows = np.repeat(bags.offsets[idx], c) + pos
        Xp = np.zeros((idx.size, n_max, V.shape[1]), dtype=V.dtype)
        Xp[b_of_row, pos] = V[rows]
        yield idx, Xp, mask
        start = stop
