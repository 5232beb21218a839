"""Where a ProLFA fit starts: the selection ``C`` before the first outer iteration.

The seeded one-hot start (notes, pitfall 1): every prototype on one seeded random descriptor, distinct rows.
A given selection (:func:`selection_start`, e.g. a capped fit's solution, to continue on the paper's model)
replaces it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .options import FitOptions
from .problem import Problem
from .result import one_hot_start
from .sparsecols import from_csc

__all__ = ["Start", "one_hot_selection", "check_start", "initial_selection", "selection_start", "start_selection"]


class Start(NamedTuple):
    """A starting ``C``: sorted keys (:func:`~.sparsecols.make_keys`), values, and which start it is."""

    keys: np.ndarray
    values: np.ndarray
    name: str


def start_selection(pb: Problem, opts: FitOptions) -> Start:
    """The seeded starting ``C``: the one-hot start (:func:`one_hot_selection`)."""
    return one_hot_selection(pb, opts)


def selection_start(C, pb: Problem, name: str = "given") -> Start:
    """A given ``(N, d̄)`` selection of ``pb``'s descriptors (any scipy sparse matrix, columns on the simplex)
    as a :class:`Start`.

    For continuation: the solution of one model (e.g. the capped ``max_support=4`` fit) as the start of another
    (the paper's ``max_support=None``), passed as ``start=`` to the solvers, which check its ``d̄``
    (:func:`check_start`).
    """
    if C.shape[0] != pb.n_descriptors:
        raise ValueError(f"start {name!r}: C has {C.shape[0]} rows, the problem {pb.n_descriptors} descriptors")
    keys, values = from_csc(C)
    sums = np.bincount(keys // C.shape[0], weights=values, minlength=C.shape[1])
    if values.size == 0 or values.min() < 0 or not np.allclose(sums, 1.0, atol=1e-8):
        bad = int(np.argmax(np.abs(sums - 1.0)))
        raise ValueError(f"start {name!r}: column {bad} of C is not on the simplex (sum {sums[bad]:.6g}, "
                         f"smallest entry {values.min() if values.size else 0.0:.3g})")
    return Start(keys, values, name)


def initial_selection(pb: Problem, opts: FitOptions, given: Start | None = None) -> Start:
    """The solvers' start: ``given`` (checked against the fit's shape) or else the seeded one-hot start."""
    if given is None:
        return start_selection(pb, opts)
    check_start(given, pb.n_descriptors, opts.n_prototypes)
    return given


def check_start(start: Start, n_rows: int, n_cols: int) -> None:
    """Raise unless ``start`` has entries in exactly the ``n_cols`` columns of an ``n_rows``-row ``C``."""
    used = np.unique(start.keys // n_rows)
    if used.size != n_cols or used[-1] != n_cols - 1:
        raise ValueError(f"start {start.name!r} fills {used.size} columns up to column {used[-1]}; the fit has "
                         f"n_prototypes={n_cols}")


def one_hot_selection(pb: Problem, opts: FitOptions) -> Start:
    """The seeded one-hot start (notes, pitfall 1) as a :class:`Start`."""
    return Start(*one_hot_start(pb.n_descriptors, opts.n_prototypes, opts.rng()), "one_hot")
