"""What every ProLFA solver shares: the seeded one-hot start (notes, pitfall 1) and the result it returns."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from lfabench.sdk import LazyModule

from .sparsecols import make_keys

sp = LazyModule("scipy.sparse")  # imported at first use: a third of a second at start-up

__all__ = ["ProLFAResult", "one_hot_start"]


@dataclass
class ProLFAResult:
    selection: sp.csc_matrix          # (N, d̄) C, columns on the simplex
    projection: np.ndarray            # (d̄, c) W
    prototypes: np.ndarray            # (d, d̄) X^T C
    objective_history: list[float]    # J at the start, then after every outer iteration
    n_iter: int
    converged: bool
    info: dict = field(default_factory=dict)


def one_hot_start(n_rows: int, n_cols: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Seeded one-hot columns on distinct rows (notes, pitfall 1): keys and unit values."""
    if n_cols > n_rows:
        raise ValueError(f"n_prototypes={n_cols} exceeds the number of descriptors N={n_rows}: the prototypes "
                         f"cannot start on distinct descriptors; lower n_prototypes")
    rows = rng.choice(n_rows, size=n_cols, replace=False)
    keys = make_keys(rows, np.arange(n_cols), n_rows)
    order = np.argsort(keys)
    return keys[order], np.ones(n_cols)
