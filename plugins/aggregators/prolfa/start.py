"""Where a ProLFA fit starts: the selection ``C`` before the first outer iteration (``init``).

* ``"one_hot"`` (default; notes, pitfall 1): every prototype on one seeded random descriptor, distinct rows.
* ``"cancelling"`` (deprecated, removed in the next release: a lower J at a lower held-out accuracy): every
  prototype a convex combination of up to ``k`` *distinct* descriptors chosen so
  that they cancel in the metric of the labelled image means, from the same seeded anchor rows.

Why ``"cancelling"`` helps the solver: at the paper's scale (``scale = 1``) the fitted ``W`` is small, and
then ``J ~ ||Y||^2 + sum_j ||R p_j||^2 + lambda1 E(C)`` with ``R^T R = Mu^T Mu`` (:mod:`.problem`): each
prototype ``p_j = X^T c_j`` wants a small response ``||R p_j||`` on the image means, and the exclusivity
term ``E`` wants columns on disjoint rows. The one-hot start is far from that, and the solver's first-order
steps take ~200 outer iterations to approach it at d̄ = 4,096. This start builds it directly:

1. anchors: the one-hot start's seeded rows (one per column);
2. ``k - 1`` rounds: each column searches the ``N_CANDIDATES`` rows most opposed to its current residual
   ``r_j = R p_j`` (FAISS, exact inner products in the ``R`` metric), scores each candidate ``v`` by the
   exact minimum over ``t in [0, 1]`` of ``||(1 - t) r_j + t v||^2``, and takes the best row no other column
   holds (columns with the most to gain choose first), so ``E(C) = 0``;
3. the weights on each column's rows: the minimiser of ``||R X_S^T c||^2`` on the simplex (projected
   gradient on the ``k x k`` Gram matrix);
4. the one-hot start instead when that one has the lower J (:func:`start_selection`).

It is a start, not a model change: the solver then minimises the same J under the same stopping rule.
Measured in ``docs/prolfa-performance.md``, "What was tried, and why it is not the default": at paper scale a lower J in 9-15
iterations instead of 233-331, and a held-out 1-NN 2 points lower.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from lfabench.sdk import serial_blas

from .options import FitOptions
from .problem import Problem, objective
from .result import one_hot_start
from .simplex import project_columns
from .sparsecols import from_csc, make_keys, split_keys, to_csc
from .wstep import solve_w

__all__ = ["N_CANDIDATES", "Start", "cancelling_selection", "cancelling_start", "one_hot_selection",
           "check_start", "initial_selection", "selection_start", "start_selection"]

#: Rows searched per column and round by the cancelling start (hub rows are wanted by many columns; 64
#: left a quarter of the columns without a free partner at N = 100k, d̄ = 4,096).
N_CANDIDATES = 1024
#: Rows per block of the start's float64 product ``X R^T`` (bounds its temporaries to a few ``block x d``).
R_METRIC_BLOCK_ROWS = 1 << 15
#: Support of the cancelling start's columns when the model has no cap (``max_support=None``).
PLAIN_SIMPLEX_START_SUPPORT = 4


class Start(NamedTuple):
    """A starting ``C``: sorted keys (:func:`~.sparsecols.make_keys`), values, and which start it is."""

    keys: np.ndarray
    values: np.ndarray
    name: str


def start_selection(pb: Problem, opts: FitOptions) -> Start:
    """The starting ``C`` that ``opts.init`` names.

    ``"cancelling"`` falls back to the one-hot start when that one has the lower J (each at its optimal W):
    the cancelling start rests on W being small, and where it is not (the embedded digits: J at the
    cancelling start ~ ``||Y||^2``, above the one-hot start's) the solver would stop at once near that
    higher J. ``Start.name`` says which start was taken.
    """
    one_hot = one_hot_selection(pb, opts)
    if opts.init == "one_hot":
        return one_hot
    cancelling = cancelling_selection(pb, opts, one_hot)
    return min((cancelling, one_hot), key=lambda st: _objective_at_optimal_w(pb, st, opts.n_prototypes))


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
    """The solvers' start: ``given`` (checked against the fit's shape) or else the seeded start ``opts.init`` names."""
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


def cancelling_selection(pb: Problem, opts: FitOptions, one_hot: Start) -> Start:
    """The cancelling start grown from ``one_hot``'s rows (no fallback; :func:`start_selection` chooses)."""
    rows, cols = split_keys(one_hot.keys, pb.n_descriptors)
    anchors = np.empty(opts.n_prototypes, dtype=np.int64)
    anchors[cols] = rows
    return Start(*cancelling_start(pb, anchors, opts.max_support or PLAIN_SIMPLEX_START_SUPPORT), "cancelling")


def _objective_at_optimal_w(pb: Problem, st: Start, n_prototypes: int) -> float:
    """J at the start's C and the W that minimises J for it."""
    C = to_csc(st.keys, st.values, pb.n_descriptors, n_prototypes)
    P = pb.prototypes(C)
    return objective(pb, C, solve_w(pb, P), P)


def cancelling_start(pb: Problem, anchors: np.ndarray, support: int,
                     n_candidates: int = N_CANDIDATES) -> tuple[np.ndarray, np.ndarray]:
    """Columns on ``support`` distinct rows each (no row in two columns) that cancel in the ``R`` metric.

    ``anchors``: ``(d̄,)`` distinct rows, column ``j``'s first row. Returns sorted keys and values of a
    simplex-feasible ``C`` with at most ``support`` non-zeros per column and ``E(C) = 0``.
    See the module docstring for the steps.
    """
    import faiss

    N, dbar = pb.n_descriptors, anchors.size
    V32, sq_norms = _r_metric_rows(pb)
    m = int(min(n_candidates, N))
    taken = np.zeros(N, dtype=bool)
    taken[anchors] = True
    rows = np.empty((dbar, support), dtype=np.int64)
    rows[:, 0] = anchors
    weights = np.zeros((dbar, support))
    weights[:, 0] = 1.0
    resid = V32[anchors].astype(np.float64)                          # (d̄, d): R p_j
    for slot in range(1, support):
        with serial_blas():  # FAISS's GEMMs follow OpenMP's count: one thread, the same sums at any `threads`
            neg_ip, cand = faiss.knn(np.ascontiguousarray(-resid, dtype=np.float32), V32, m,
                                     metric=faiss.METRIC_INNER_PRODUCT)
        cand = cand.astype(np.int64)
        rv = -neg_ip.astype(np.float64)                              # r_j . v
        rr = np.einsum("bd,bd->b", resid, resid)[:, None]
        # ||(1 - t) r + t v||^2 = rr - 2t (rr - rv) + t^2 (rr - 2 rv + vv), minimised over t in [0, 1]
        curv = np.maximum(rr - 2.0 * rv + sq_norms[np.maximum(cand, 0)], 1e-300)
        t = np.clip((rr - rv) / curv, 0.0, 1.0)
        cost = np.where(cand >= 0, rr - 2.0 * t * (rr - rv) + t * t * curv, np.inf)
        pick = np.full(dbar, -1, dtype=np.int64)
        step = np.zeros(dbar)
        for j in np.argsort(cost.min(axis=1), kind="stable"):        # the most to gain chooses first
            for q in np.argsort(cost[j], kind="stable"):
                row = cand[j, q]
                if not cost[j, q] < rr[j, 0]:                        # nothing left that lowers ||R p_j||
                    break
                if not taken[row]:
                    pick[j], step[j] = row, t[j, q]
                    taken[row] = True
                    break
        grown = pick >= 0
        rows[:, slot] = np.where(grown, pick, anchors)               # no partner: the slot stays empty
        weights[grown] *= (1.0 - step[grown])[:, None]
        weights[grown, slot] = step[grown]
        resid[grown] = (1.0 - step[grown])[:, None] * resid[grown] + step[grown][:, None] * V32[pick[grown]]
    used = np.ones((dbar, support), dtype=bool)
    used[:, 1:] = rows[:, 1:] != anchors[:, None]
    weights = _cancelling_weights(V32[rows].astype(np.float64), used, weights)
    keep = used & (weights > 0)
    cols = np.repeat(np.arange(dbar), keep.sum(axis=1))
    vals = weights[keep]
    vals = vals / np.bincount(cols, weights=vals, minlength=dbar)[cols]
    keys = make_keys(rows[keep], cols, N)
    order = np.argsort(keys)
    return keys[order], vals[order]


def _r_metric_rows(pb: Problem, block: int = R_METRIC_BLOCK_ROWS) -> tuple[np.ndarray, np.ndarray]:
    """The descriptors in the ``R`` metric, ``V = X R^T`` ``(N, d)`` as float32, and their squared norms in float64.

    In row blocks: the float64 product of all rows at once (and the float64 copy of a float32 ``X`` it needs)
    would cost ``16 N d`` bytes at its peak, 5.2 GB for the RBF-lifted descriptors at paper scale.
    """
    N, d = pb.X.shape
    V32 = np.empty((N, d), dtype=np.float32)
    sq_norms = np.empty(N)
    for s in range(0, N, block):
        Vb = np.asarray(pb.X[s:s + block], dtype=np.float64) @ pb.R.T
        sq_norms[s:s + block] = np.einsum("nd,nd->n", Vb, Vb)
        V32[s:s + block] = Vb
    return V32, sq_norms


def _cancelling_weights(Vs: np.ndarray, used: np.ndarray, start: np.ndarray, n_iter: int = 300) -> np.ndarray:
    """``argmin ||Vs_j^T c||^2`` over the simplex on each column's used slots, by projected gradient from ``start``.

    ``Vs``: ``(d̄, k, d)`` the rows of each column in the ``R`` metric; ``used``: ``(d̄, k)``; returns ``(d̄, k)``.
    """
    G = np.einsum("bid,bjd->bij", Vs, Vs)
    G[~used] = 0.0                                   # an unused slot neither costs nor couples
    G.transpose(0, 2, 1)[~used] = 0.0
    step = 0.5 / np.maximum(np.linalg.eigvalsh(G)[:, -1], 1e-300)
    c = np.where(used, start, 0.0)
    for _ in range(n_iter):
        trial = np.where(used, c - step[:, None] * 2.0 * np.einsum("bij,bj->bi", G, c), -1e30)
        c = project_columns(trial.T).T                # a -1e30 entry always projects to 0
    return c
