"""The data of one ProLFA fit and its kernel-free quantities (paper eq. "ModelRelax2").

Notation (rows are descriptors, the transpose of the paper's ``X``):

* ``X``: ``(N, d)`` all descriptors, labelled and unlabelled samples alike (the
  prototype candidates);
* ``Mu``: ``(n, d)`` mean descriptor of each *labelled* sample (``G_i X^T`` in the
  paper; an empty sample has a zero mean) and ``Y``: ``(n, c)`` their responses;
* ``C`` (the selection matrix): ``(N, d̄)``, columns on the probability simplex;
* ``P = X^T C``: ``(d, d̄)`` prototypes; the aggregated vectors are ``Xbar = Mu P``
  (``xbar_i = G_i X^T X C``), so neither the ``N x N`` kernel ``X X^T`` nor the
  ``n x N`` matrix ``G X X^T`` is ever formed;
* ``W``: ``(d̄, c)`` projection.

Everything here costs ``O(d^2 d̄ + d d̄ c)`` given ``P`` (``d x d`` matrices
``T = Mu^T Mu``, ``R`` with ``R^T R = T``, ``M_Y = Mu^T Y``), except the gradient
entries, which cost ``O(d)`` each.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from lfabench.sdk import LazyModule

from .sparsecols import block_rows, combine, run_starts

sp = LazyModule("scipy.sparse")  # imported at first use: a third of a second at start-up

__all__ = ["Problem", "fit_loss", "exclusivity", "objective", "energy", "gradient_factor", "gradient_entries",
           "quadratic_term", "lipschitz_bound", "first_trial_step", "frank_wolfe_gap"]


@dataclass
class Problem:
    """Fixed data of a fit. Build with :meth:`Problem.build`."""

    X: np.ndarray          # (N, d) descriptors, as given (float32 or float64)
    Mu: np.ndarray         # (n, d) float64 labelled-sample means
    Y: np.ndarray          # (n, c) float64 responses
    T: np.ndarray          # (d, d) Mu^T Mu
    R: np.ndarray          # (d, d) with R^T R = T
    MY: np.ndarray         # (d, c) Mu^T Y
    YtY: np.ndarray        # (c, c)
    Y_sq: float            # ||Y||_F^2
    Sc: np.ndarray         # (d, d) scatter of the descriptors about their mean
    lambda1: float
    lambda2: float

    @classmethod
    def build(cls, X: np.ndarray, Mu: np.ndarray, Y: np.ndarray, lambda1: float, lambda2: float) -> "Problem":
        Mu = np.asarray(Mu, dtype=np.float64)
        Y = np.asarray(Y, dtype=np.float64)
        T = Mu.T @ Mu
        evals, evecs = np.linalg.eigh(T)
        R = np.sqrt(np.clip(evals, 0.0, None))[:, None] * evecs.T
        # Scatter in float64 by blocks: float32 accumulation over 10^5 rows is too coarse for
        # the Lipschitz bound, and a float64 copy of X would double the memory.
        d = X.shape[1]
        S = np.zeros((d, d))
        s1 = np.zeros(d)
        buf = np.empty((min(X.shape[0], 65536), d))       # one block buffer, filled again (not reallocated)
        for start in range(0, X.shape[0], 65536):
            B = buf[:min(65536, X.shape[0] - start)]
            B[...] = X[start:start + 65536]
            S += B.T @ B
            s1 += B.sum(axis=0)
        x0 = s1 / max(X.shape[0], 1)
        Sc = S - X.shape[0] * np.outer(x0, x0)
        return cls(X=X, Mu=Mu, Y=Y, T=T, R=R, MY=Mu.T @ Y, YtY=Y.T @ Y, Y_sq=float(np.sum(Y * Y)),
                   Sc=(Sc + Sc.T) / 2, lambda1=float(lambda1), lambda2=float(lambda2))

    @cached_property
    def scatter_curvature(self) -> float:
        """``lambda_max(R Sc R^T)``: the data's part of :func:`lipschitz_bound`, fixed for the fit (one
        ``d x d`` eigenproblem, computed once; at d = 256 it cost ~60 ms per outer iteration when redone)."""
        M = self.R @ self.Sc @ self.R.T
        return max(float(np.linalg.eigvalsh((M + M.T) / 2)[-1]), 0.0)

    @cached_property
    def top_mean_curvature(self) -> float:
        """``lambda_max(T)`` (computed once)."""
        return float(np.linalg.eigvalsh(self.T)[-1])

    @cached_property
    def YtY_eigh(self) -> tuple[np.ndarray, np.ndarray]:
        """``eigh(Y^T Y)`` (eigenvalues clipped at 0, eigenvectors): fixed for the fit, computed once (a
        ``c x c`` eigenproblem: 12 s at the 4,485 classes of a retrieval protocol with one annotated image per
        group, where redoing it in every W-step was most of the fit)."""
        beta, VB = np.linalg.eigh(self.YtY)
        return np.clip(beta, 0.0, None), VB

    @cached_property
    def YtY_permutation(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(rows, signs)`` when the eigenvectors of ``Y^T Y`` are a signed permutation (a diagonal ``Y^T Y``:
        one-hot labels), so that ``A @ VB == signs * A[:, rows]`` exactly (each product has one non-zero
        term); else None. Lets the W-step skip two ``d̄ x c x c`` products, with the same floats."""
        _, VB = self.YtY_eigh
        nonzero = VB != 0
        if VB.size == 0 or not (nonzero.sum(axis=0) == 1).all():
            return None
        rows = nonzero.argmax(axis=0)
        signs = VB[rows, np.arange(VB.shape[1])]
        if not (np.abs(signs) == 1.0).all():
            return None
        return rows, signs

    @cached_property
    def YtY_diagonal(self) -> np.ndarray | None:
        """The diagonal of ``Y^T Y`` when it is diagonal (one-hot labels), else None: ``W @ YtY`` is then
        ``W * diag`` with the same floats (one non-zero term per product) at ``d̄ c`` instead of ``d̄ c^2``."""
        diag = np.diag(self.YtY).copy()
        if np.count_nonzero(self.YtY) != np.count_nonzero(diag):
            return None
        return diag

    def times_YtY(self, W: np.ndarray) -> np.ndarray:
        """``W @ Y^T Y`` (``(d̄, c)``)."""
        diag = self.YtY_diagonal
        return W @ self.YtY if diag is None else W * diag[None, :]

    def spectral_norm(self, W: np.ndarray) -> float:
        """``sigma_max(W)``, remembered for the last ``W`` asked about (the Lipschitz bound and the first trial
        step ask about the same ``W``; its SVD is seconds at thousands of classes). ``W`` is never changed in
        place during a fit."""
        last = self.__dict__.get("_last_norm")
        if last is not None and last[0] is W:
            return last[1]
        value = float(np.linalg.norm(W, 2)) if W.size else 0.0
        self.remember_spectral_norm(W, value)
        return value

    def remember_spectral_norm(self, W: np.ndarray, value: float) -> None:
        """What :meth:`spectral_norm` answers for this ``W`` (the W-step works it out more cheaply)."""
        self.__dict__["_last_norm"] = (W, value)

    @property
    def n_descriptors(self) -> int:
        return int(self.X.shape[0])

    def prototypes(self, C: sp.spmatrix) -> np.ndarray:
        """``P = X^T C``: ``(d, d̄)`` float64, from the sparse ``(N, d̄)`` selection."""
        # float32 X: only the rows in C's support are gathered (float64): ``C.T @ X`` made scipy upcast all of
        # X to float64 on every call (a whole float64 copy of X per product)
        C = sp.csc_matrix(C)
        if self.X.dtype == np.float64:
            return np.asarray((C.T @ self.X).T)          # no copy of X here
        cols = np.repeat(np.arange(C.shape[1], dtype=np.int64), np.diff(C.indptr))
        return combine(self.X, C.indices.astype(np.int64), cols, C.data, C.shape[1])


def fit_loss(pb: Problem, P: np.ndarray, W: np.ndarray) -> float:
    """``sum_i ||xbar_i W - y_i||^2 + ||xbar_i - y_i W^T||^2`` with ``xbar_i = mu_i^T P``."""
    RP = pb.R @ P
    RPW = RP @ W
    PW = P @ W
    forward = np.sum(RPW * RPW) - 2.0 * np.sum(PW * pb.MY) + pb.Y_sq
    reverse = np.sum(RP * RP) - 2.0 * np.sum(P * (pb.MY @ W.T)) + np.sum(pb.times_YtY(W) * W)
    return float(forward + reverse)


def exclusivity(C: sp.spmatrix) -> float:
    """``||C||_{1,2}^2 - ||C||_F^2 = sum_i (sum_j |c_ij|)^2 - sum_ij c_ij^2`` (paper Definition 1).

    Equals ``2 * sum_{j != k} ||c_j ⊙ c_k||_1``: zero exactly when no descriptor
    is shared by two prototypes.

    The same float as scipy's ``r = abs(C).sum(axis=1); r @ r - C.multiply(C).sum()`` on ``C`` in CSR (tested),
    without its ~0.3 ms of format checks per call (about 5 % of the moon.mat demo's fit): the entries in CSR order
    (by row, then column; explicit zeros kept), each stored row summed by ``np.add.reduceat`` into the full
    ``(N,)`` row sums, and the squares' sum without the zeros that scipy's element-wise product drops.
    """
    C = C if isinstance(C, sp.csc_matrix) else sp.csc_matrix(C)
    n_rows, n_cols = C.shape
    rows = C.indices.astype(np.int64)
    cols = np.arange(n_cols, dtype=np.int64).repeat(np.diff(C.indptr))
    order = np.argsort(rows * n_cols + cols, kind="stable")
    data, rows = C.data[order].astype(np.float64, copy=False), rows[order]
    r = np.zeros(n_rows)
    if data.size:
        first = run_starts(rows)
        r[rows[first]] = np.add.reduceat(np.abs(data), first)
    squares = data * data
    return float(r @ r - squares[squares != 0].sum())


def objective(pb: Problem, C: sp.spmatrix, W: np.ndarray, P: np.ndarray | None = None) -> float:
    """The paper's energy ``J(C, W)`` (eq. "ModelRelax2")."""
    P = pb.prototypes(C) if P is None else P
    return energy(pb, P, W, exclusivity(C))


def energy(pb: Problem, P: np.ndarray, W: np.ndarray, exclusivity_value: float) -> float:
    """J from its parts: ``fit(P, W) + lambda1 E + lambda2 ||W||^2``, for solvers that hold ``E`` in their own
    form (row sums, a dense ``C``) rather than as a sparse ``C``."""
    return fit_loss(pb, P, W) + pb.lambda1 * exclusivity_value + pb.lambda2 * float(np.sum(W * W))


def gradient_factor(pb: Problem, P: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``H = T P (W W^T + I) - 2 M_Y W^T`` (``(d, d̄)``): the fit gradient wrt C is ``2 X H``."""
    TP = pb.T @ P
    # (TP W) W^T, never the d̄ x d̄ matrix W W^T: 2e9 flops per call at d̄ = 4096, against 2e7
    return (TP @ W) @ W.T + TP - 2.0 * (pb.MY @ W.T)


def gradient_entries(pb: Problem, H: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                     chunk: int | None = None, Xw: np.ndarray | None = None) -> np.ndarray:
    """Entries ``(2 X H)[rows, cols]`` in float64, ``O(d)`` each, in chunks (never the dense ``N x d̄``).

    ``Xw`` (optional): ``X[rows]`` in float64, gathered once by the caller. ``chunk``: entries per block
    (default: :func:`~.sparsecols.block_rows`; each entry is its own dot product, so any size gives the
    same floats).
    """
    out = np.empty(rows.size, dtype=np.float64)
    Ht = np.ascontiguousarray(H.T)
    chunk = block_rows(H.shape[0]) if chunk is None else int(chunk)
    for s in range(0, rows.size, chunk):
        r, c = rows[s:s + chunk], cols[s:s + chunk]
        Xr = Xw[s:s + chunk] if Xw is not None else np.asarray(pb.X[r], dtype=np.float64)
        out[s:s + chunk] = 2.0 * np.einsum("nd,nd->n", Xr, Ht[c])
    return out


def frank_wolfe_gap(pb: Problem, C: sp.spmatrix, W: np.ndarray, block: int = 256) -> np.ndarray:
    """Each column's Frank-Wolfe gap ``<g_j, c_j> - min_i g_ij`` of ``J(., W)`` on the simplex: ``(d̄,)``, ``>= 0``.

    ``G = 2 X H + 2 lambda1 (r 1^T - C)`` is the gradient of J (eq. "ModelRelax2") in C at fixed W (``r`` the
    row sums of C). A column's gap is the most that J's linearisation can fall by moving that column within
    the simplex (the paper's exact model): zero for every column exactly at a first-order stationary point
    (KKT), so the sum measures how far a solver's stopping point is from one, whatever its stopping rule. J
    is not convex in C (the exclusivity term), so the gap is a stationarity measure, not a bound on J - J*.
    Costs one ``N x d x d̄`` product in column blocks of ``block`` (never the dense ``N x d̄``).
    """
    C = sp.csc_matrix(C)
    N, dbar = C.shape
    H = gradient_factor(pb, pb.prototypes(C), W)
    r = np.asarray(C.sum(axis=1)).ravel()
    X = np.asarray(pb.X, dtype=np.float64)
    # off the support G = base = 2 X H + 2 lambda1 r 1^T; on it G = base - 2 lambda1 c_ij (<= base)
    base_r = 2.0 * pb.lambda1 * r
    gap = np.empty(dbar)
    for s in range(0, dbar, block):
        blk = slice(s, min(s + block, dbar))
        base = 2.0 * (X @ H[:, blk]) + base_r[:, None]
        col_min = base.min(axis=0)
        for j in range(blk.start, blk.stop):
            lo, hi = C.indptr[j], C.indptr[j + 1]
            rows, c = C.indices[lo:hi], C.data[lo:hi]
            g_support = base[rows, j - s] - 2.0 * pb.lambda1 * c
            smallest = min(float(col_min[j - s]), float(g_support.min()) if c.size else np.inf)
            gap[j] = float(c @ g_support) - smallest
    return gap


def line_coefficients(pb: Problem, W: np.ndarray, H: np.ndarray, rows: np.ndarray, cols: np.ndarray,
                      c0: np.ndarray, dv: np.ndarray, n_cols: int, Xw: np.ndarray | None = None) -> tuple[float, float]:
    """``(a, b)`` with ``J(C0 + s D, W) = J(C0, W) + a s + b s^2``.

    ``c0``, ``dv``: the values of C0 and D on shared sorted keys (``rows``, ``cols``), which must hold every
    non-zero of C0 on those rows (the exclusivity term needs their full row sums).
    """
    U = combine(pb.X, rows, cols, dv, n_cols, Xw=Xw)
    # row sums only over the rows that occur (the others contribute 0 to both dot products)
    ur, inv = np.unique(rows, return_inverse=True)
    r0 = np.bincount(inv, weights=c0, minlength=ur.size)
    rho = np.bincount(inv, weights=dv, minlength=ur.size)
    a = 2.0 * float((H * U).sum()) + pb.lambda1 * 2.0 * (float(r0 @ rho) - float(c0 @ dv))
    b = quadratic_term(pb, U, W) + pb.lambda1 * (float(rho @ rho) - float(dv @ dv))
    return a, b


def quadratic_term(pb: Problem, U: np.ndarray, W: np.ndarray) -> float:
    """Second-order term of the fit loss along a direction D with ``U = X^T D`` (``(d, d̄)``).

    ``fit(C + D) = fit(C) + <2 X H, D> + quadratic_term`` exactly:
    ``||Mu U W||^2 + ||Mu U||^2``.
    """
    RU = pb.R @ U
    RUW = RU @ W
    return float((RUW * RUW).sum() + (RU * RU).sum())


def lipschitz_bound(pb: Problem, W: np.ndarray) -> float:
    """A spectral bound on the Lipschitz constant of the fit gradient over simplex-feasible moves.

    The fit's Hessian acts as ``D -> 2 A^T A D (W W^T + I)`` with ``A = Mu X^T``;
    for ``D`` with zero column sums (the difference of two simplex-feasible
    matrices) ``X^T D = Xc^T D`` with centred descriptors, so
    ``L = 2 lambda_max(R Sc R^T) (sigma_max(W)^2 + 1)`` — a ``d x d``
    eigenproblem (the notes' bound with the scatter ``Sc`` in place of ``S``;
    never larger, often far smaller).
    """
    lam = pb.scatter_curvature
    sigma = pb.spectral_norm(W)
    return 2.0 * max(lam, 0.0) * (sigma * sigma + 1.0)


def first_trial_step(pb: Problem, W: np.ndarray, mu: float = 0.0) -> float:
    """A C-step's first trial step: the inverse curvature of moving mass between two typical descriptors a, b
    (a sparse move), ``0.5 / (lambda_max(T) (sigma_max(W)^2 + 1) ||x_a - x_b||^2 + mu)`` with the mean squared
    distance ``2 tr(Sc) / N``; ``mu`` is the ADMM penalty of the C-Lagrangian (0 for a step on J itself).
    Backtracking or a line search corrects it either way."""
    sq_dist = 2.0 * float(np.trace(pb.Sc)) / max(pb.n_descriptors, 1)
    curvature = pb.top_mean_curvature * (pb.spectral_norm(W) ** 2 + 1.0) * sq_dist + mu
    return 0.5 / max(curvature, 1e-300)
