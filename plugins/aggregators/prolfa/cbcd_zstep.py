"""The ADMM Z-step (paper eqs. "OptimizeZi", "F", "Zi"): iteratively re-weighted, elementwise.

For each row ``z`` of ``Z`` (one descriptor, its weights in the d̄ prototypes)
the paper minimises ``lambda1 (||z||_1^2 - ||z||^2) + mu/2 ||z - c||^2 + <Lambda_row, z - c>``
by re-weighting (Kong et al. 2014): with ``q_j = ||z||_1 / (|z_j| + eps) - 1``,

    z_j <- (mu c_j - Lambda_j) / (mu + 2 lambda1 q_j).

All rows at once: ``||z||_1`` per row is one ``bincount`` over the stored
entries; entries outside the support of ``C`` and ``Lambda`` stay zero.

Guard (notes, pitfall 2): a row with a single dominant entry has ``q_j =
-eps / (|z_j| + eps) < 0``, and when ``mu < 2 lambda1`` (the demo's settings)
the denominator can vanish or turn negative. We clamp ``q_j >= 0``, so the
denominator is always at least ``mu > 0``; the clamp only touches entries whose
row holds (almost) nothing else, where the exclusivity penalty is zero anyway.
"""

from __future__ import annotations

import numpy as np

__all__ = ["reweighted_z_step"]


def reweighted_z_step(rows: np.ndarray, c: np.ndarray, z: np.ndarray, lam: np.ndarray, n_rows: int,
                      mu: float, lambda1: float, eps: float, max_iter: int, tol: float) -> np.ndarray:
    """One Z-step on the stored entries (``rows`` of each; values ``c``, ``z``, ``lam``): returns the new ``z``."""
    if mu <= 0:
        raise ValueError(f"mu must be > 0, got {mu}")
    target = mu * c - lam
    z = z.copy()
    for _ in range(max(int(max_iter), 1)):
        az = np.abs(z)
        row_l1 = np.bincount(rows, weights=az, minlength=n_rows)[rows]
        q = np.maximum(row_l1 / (az + eps) - 1.0, 0.0)
        z_new = target / (mu + 2.0 * lambda1 * q)
        change = float(np.abs(z_new - z).max()) if z.size else 0.0
        z = z_new
        if change <= tol:
            break
    return z
