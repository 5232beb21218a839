"""Batch orthogonal matching pursuit and approximate K-SVD (for LC-KSVD2), on compiled kernels.

``batch_omp`` computes, for every signal, the same greedy codes as scikit-learn's
``orthogonal_mp(D.T, Y.T, n_nonzero_coefs=T)`` (checked in the tests): T steps, each adding the
atom most correlated with the residual and refitting the coefficients on the support by least
squares. It is the Gram form (Rubinstein, Zibulevsky & Elad 2008, "Batch-OMP"): ``alpha0 = Y D^T``
is one GEMM per block of signals, ``G = D D^T`` is shared, and each signal's steps run in
:func:`.omp_kernels.gram_omp` with a progressive Cholesky factor of ``G[S, S]`` (O(T^2 K) per signal;
no per-step solve, no [signals, T, K] gathers through memory).

``ksvd`` is K-SVD (Aharon, Elad & Bruckstein 2006) with the atom update of approximate K-SVD
(Rubinstein et al. 2008): one power-iteration step of the rank-1 fit of the restricted error
instead of a full SVD (a full SVD per atom is O(|omega| p^2) and dominates at LC-KSVD's stacked
dimension p = d + K + C), and the reference K-SVD box's replacement of dead and near-duplicate atoms.
Codes stay sparse (support + coefficients) and the error matrix is never formed
(:func:`.omp_kernels.update_atoms`). Signals may carry a class part, ``[Y[i], P[labels[i]]]``: LC-KSVD2's
stacked signals, whose correlations with the atoms' label rows are then C x K products instead of an
n x (K + C) x K GEMM.

Where the time goes and the floor: ``docs/performance.md`` (LC-KSVD2).
"""

from __future__ import annotations

import numpy as np

from .omp_kernels import replace_dead, gram_omp, residual_norms, update_atoms

#: Signals per block: one GEMM ``alpha0 = Y D^T`` [block, K] at a time (bounds memory; BLAS may round a
#: block of another height differently in the last bits, so the block is fixed, never set by the thread count).
BLOCK = 4096


def _class_part(n: int, class_rows, labels):
    """``(P [C, q], labels [n])`` as the kernels take them; no class part is ``q = 0``."""
    if class_rows is None:
        return np.zeros((1, 0)), np.zeros(n, dtype=np.int64)
    return (np.ascontiguousarray(class_rows, dtype=np.float64),
            np.ascontiguousarray(labels, dtype=np.int64))


def sparse_omp(Y: np.ndarray, D: np.ndarray, n_nonzero: int, class_rows=None, labels=None,
               chunk: int = BLOCK) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sparse OMP codes ``(support [n, T], coef [n, T], count [n])`` of signals ``[Y, class_rows[labels]]``.

    ``D`` [K, d + q] unit-norm atoms (rows); ``T = min(n_nonzero, K, d + q)``. Slot ``s < count[i]`` of
    signal i holds atom ``support[i, s]`` with coefficient ``coef[i, s]`` (slots in selection order).
    """
    Y = np.ascontiguousarray(Y, dtype=np.float64)
    D = np.ascontiguousarray(D, dtype=np.float64)
    n, d = Y.shape
    K = D.shape[0]
    P, lab = _class_part(n, class_rows, labels)
    T = int(min(n_nonzero, K, D.shape[1]))
    G = D @ D.T
    Dy = np.ascontiguousarray(D[:, :d].T)
    label_corr = P @ D[:, d:].T if P.shape[1] else None            # [C, K]
    eps = float(np.finfo(np.float64).eps)
    support = np.zeros((n, T), dtype=np.int64)
    coef = np.zeros((n, T))
    count = np.zeros(n, dtype=np.int64)
    for start in range(0, n, max(int(chunk), 1)):
        stop = min(start + max(int(chunk), 1), n)
        alpha0 = Y[start:stop] @ Dy
        if label_corr is not None:
            alpha0 += label_corr[lab[start:stop]]
        support[start:stop], coef[start:stop], count[start:stop] = gram_omp(alpha0, G, T, eps)
    return support, coef, count


def dense_codes(support: np.ndarray, coef: np.ndarray, count: np.ndarray, n_atoms: int) -> np.ndarray:
    """[n, K] codes from the sparse form of :func:`sparse_omp`."""
    n, T = support.shape
    out = np.zeros((n, n_atoms))
    used = np.arange(T)[None, :] < count[:, None]
    rows = np.broadcast_to(np.arange(n)[:, None], (n, T))
    out[rows[used], support[used]] = coef[used]
    return out


def batch_omp(Y: np.ndarray, D: np.ndarray, n_nonzero: int, chunk: int = BLOCK) -> np.ndarray:
    """Codes [n, K] of signals ``Y`` [n, p] on atoms ``D`` [K, p] (rows, unit norm), at most ``n_nonzero`` each.

    ``n_nonzero`` is capped at min(K, p). Atoms already in the support are excluded from the
    selection (for exact least squares their correlation is zero anyway). A signal stops early, with the
    codes of its last step, where scikit-learn's ``orthogonal_mp`` stops: when the best remaining
    correlation is negligible (``alpha^2 < eps``: the signal is already represented) or when the chosen
    atom is linearly dependent on the support (``G[k, k] - ||L^-1 G[S, k]||^2 <= eps``). Going on there
    would solve a singular system, whose huge coefficients overflow K-SVD's atom updates (seen on 3x3
    digits patches: 45 atoms per class in 9 dimensions). ``chunk``: signals per GEMM block (memory only).
    """
    support, coef, count = sparse_omp(Y, D, n_nonzero, chunk=chunk)
    return dense_codes(support, coef, count, np.shape(D)[0])


def normalize_atoms(D: np.ndarray) -> np.ndarray:
    """Rows of ``D`` scaled to unit L2 norm (zero rows left as they are)."""
    norms = np.linalg.norm(D, axis=1, keepdims=True)
    return D / np.where(norms > 0, norms, 1.0)


def ksvd(Y: np.ndarray, D0: np.ndarray, n_nonzero: int, n_iter: int, desc: str = "K-SVD",
         progress: bool = True, muthresh: float = 0.99, use_thresh: int = 4, class_rows=None,
         labels=None) -> tuple[np.ndarray, list[float]]:
    """K-SVD on signals ``Y`` [n, p] from atoms ``D0`` [K, p]: returns ``(D, curve)``.

    Each iteration: codes by Batch-OMP (:func:`sparse_omp`), then every atom k in turn is refitted with its
    coefficients on the signals omega_k that use it, to the error without it
    ``E_k = R[omega_k] + x_k d_k`` (R the current residual): ``d_k = E_k^T x_k / ||E_k^T x_k||``,
    ``x_k = E_k d_k``. ``curve`` holds ``||Y - X D||_F^2 / n`` after each iteration's atom updates.

    With ``class_rows`` [C, q] and ``labels`` [n], signal i is ``[Y[i], class_rows[labels[i]]]`` and
    ``D0`` is [K, d + q] (LC-KSVD2's stacked problem, without an [n, d + q] matrix).

    Dead and redundant atoms are handled as in the reference K-SVD box (Rubinstein, ``ksvd.m``, the
    implementation LC-KSVD's authors used): an atom no signal uses is replaced by the worst-represented
    signal (normalised); after the updates, an atom not replaced this iteration whose squared
    correlation with another atom exceeds ``muthresh**2`` or that fewer than ``use_thresh`` signals
    use is replaced the same way ("cleardict"). A signal replaces at most one atom per iteration,
    so two atoms never become copies of the same signal. (The reference draws the dead-atom candidate
    among a random subset of at most 5,000 signals; here all remaining signals are candidates.)
    ``muthresh >= 1`` and ``use_thresh = 0`` disable the clean-up.
    """
    from tqdm.auto import tqdm  # at first use: tqdm.auto imports asyncio, a tenth of lfabench run's start-up

    Y = np.ascontiguousarray(Y, dtype=np.float64)
    n = Y.shape[0]
    P, lab = _class_part(n, class_rows, labels)
    D = np.ascontiguousarray(normalize_atoms(np.asarray(D0, dtype=np.float64).copy()))
    K = D.shape[0]
    # a zero signal cannot become an atom
    usable = np.einsum("ij,ij->i", Y, Y) + np.einsum("ij,ij->i", P, P)[lab] > 1e-12
    curve = []
    for _ in tqdm(range(int(n_iter)), desc=desc, unit="it", leave=False, disable=None if progress else True):
        support, coef, count = sparse_omp(Y, D, n_nonzero, P if P.shape[1] else None, lab)
        free = usable.copy()                             # signals not yet used as a replacement atom
        replaced = update_atoms(Y, P, lab, D, support, coef, count, free)
        err = residual_norms(Y, P, lab, D, support, coef, count)
        curve.append(float(err.sum() / n))
        used = (np.arange(support.shape[1])[None, :] < count[:, None]) & (np.abs(coef) > 1e-7)
        usecount = np.bincount(support[used], minlength=K)
        for k in range(K):
            if replaced[k]:
                continue
            g = D @ D[k]
            g[k] = 0.0
            if np.max(g * g, initial=0.0) > muthresh ** 2 or usecount[k] < use_thresh:
                replace_dead(Y, P, lab, D, k, err, free)
    return D, curve
