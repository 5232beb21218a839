"""Compiled kernels of Batch-OMP and the K-SVD atom updates (numba, one thread, fixed loop order).

Codes are kept sparse: ``support`` [n, T] atom indices, ``coef`` [n, T] their coefficients, ``count`` [n]
how many of the T slots hold an atom (a signal that stops early leaves the rest unused). Signals may carry
a class part: signal i is ``[Y[i], P[labels[i]]]`` (LC-KSVD2's stacked signals, whose label rows
``[sqrt(alpha) q; sqrt(beta) h]`` depend only on the class), so the kernels read ``Y`` [n, d] and the
C class rows ``P`` [C, q] instead of an [n, d + q] matrix; plain signals pass ``q = 0``.

Every loop runs in one thread in a fixed order (no reassociation: numba's default, not fastmath), so a
result depends neither on the thread count nor on the chunking of the signals. Without numba the same
functions run as Python (correct, about two orders of magnitude slower), with a warning at import.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

try:
    from numba import njit
except ImportError:  # pragma: no cover - exercised only where numba is absent
    warnings.warn("numba is not installed: LC-KSVD2's OMP and K-SVD kernels run as Python (very slow); "
                  "pip install numba", RuntimeWarning, stacklevel=2)

    def njit(*args, **kwargs):
        if args and callable(args[0]):
            return args[0]
        return lambda f: f


@njit(cache=True, nogil=True, inline="always")
def _dot(a, b, n):
    """``sum_m a[m] b[m]`` over ``m < n``, in four interleaved partial sums (a fixed order that vectorises)."""
    s0 = s1 = s2 = s3 = 0.0
    m = 0
    while m + 4 <= n:
        s0 += a[m] * b[m]
        s1 += a[m + 1] * b[m + 1]
        s2 += a[m + 2] * b[m + 2]
        s3 += a[m + 3] * b[m + 3]
        m += 4
    while m < n:
        s0 += a[m] * b[m]
        m += 1
    return (s0 + s1) + (s2 + s3)


@njit(cache=True, nogil=True, inline="always")
def _score(a, excluded):
    """An atom's selection score ``|a| - excluded`` (``excluded``: 0, or inf once in the support); -1 for NaN.

    Scores are >= +0, or negative (-inf, -1) for what cannot be selected, so their float64 bits ordered as
    int64 order the selectable ones as the floats (:func:`_first_max`)."""
    score = abs(a) - excluded
    return score if score == score else -1.0


@njit(cache=True, nogil=True, inline="always")
def _update_scores(alpha, excluded, row, inv, zt, score, K):
    """``row *= inv``, ``alpha -= zt row`` and ``score[m] = _score(alpha[m], excluded[m])``, in one pass.

    The same operations on each entry as separate loops (so the same bits), over the [K] arrays once."""
    for m in range(K):
        r = row[m] * inv
        row[m] = r
        a = alpha[m] - zt * r
        alpha[m] = a
        score[m] = _score(a, excluded[m])


@njit(cache=True, nogil=True, inline="always")
def _first_max(keys, K):
    """The first ``m`` of largest score, -1 if no score is >= 0; ``keys`` [K] int64: the scores' float64 bits.

    As a running ``score > best`` search from ``best = -1`` finds it (the first of equal maxima; NaN, which
    that search never takes, scores -1), in two loops that need no chain of dependent compare-and-selects:
    an integer maximum (non-negative floats order as their bits; it vectorises) and the first equal key.
    """
    best = np.int64(-1)
    for m in range(K):
        key = keys[m]
        best = key if key > best else best
    if best < 0:
        return -1
    for m in range(K):
        if keys[m] == best:
            return m
    return -1


@njit(cache=True, nogil=True, inline="always")
def _subtract_rows(row, V, c, t, K):
    """``row -= sum_{j<t} c[j] V[j]`` over the first ``K`` entries: Batch-OMP's Cholesky column (``row`` [K],
    ``V`` [>= t, K], ``c`` [>= t]).

    Eight rows of V per pass over ``row`` (one load and store of it per eight products), then four, then one: a
    fixed grouping, so the rounding depends on t alone."""
    j = 0
    while j + 8 <= t:
        c0, c1, c2, c3 = c[j], c[j + 1], c[j + 2], c[j + 3]
        c4, c5, c6, c7 = c[j + 4], c[j + 5], c[j + 6], c[j + 7]
        V0, V1, V2, V3 = V[j], V[j + 1], V[j + 2], V[j + 3]
        V4, V5, V6, V7 = V[j + 4], V[j + 5], V[j + 6], V[j + 7]
        for m in range(K):
            row[m] -= (((c0 * V0[m] + c1 * V1[m]) + (c2 * V2[m] + c3 * V3[m]))
                       + ((c4 * V4[m] + c5 * V5[m]) + (c6 * V6[m] + c7 * V7[m])))
        j += 8
    while j + 4 <= t:
        c0, c1, c2, c3 = c[j], c[j + 1], c[j + 2], c[j + 3]
        V0, V1, V2, V3 = V[j], V[j + 1], V[j + 2], V[j + 3]
        for m in range(K):
            row[m] -= (c0 * V0[m] + c1 * V1[m]) + (c2 * V2[m] + c3 * V3[m])
        j += 4
    while j < t:
        cj = c[j]
        Vj = V[j]
        for m in range(K):
            row[m] -= cj * Vj[m]
        j += 1


@njit(cache=True, nogil=True)
def gram_omp(alpha0, G, n_nonzero, eps):
    """OMP codes from correlations ``alpha0`` [n, K] = Y D^T and the Gram matrix ``G`` [K, K] = D D^T.

    The progressive Cholesky form of Batch-OMP: with ``G[S, S] = L L^T`` over the support S and
    ``V = G[:, S] L^{-T}`` [K, t] (stored as rows), adding atom k appends the Cholesky row
    ``w = L^{-1} G[S, k] = V[k, :]`` (no triangular solve: it is already in V), the pivot
    ``l = sqrt(G[k, k] - ||w||^2)``, the column ``v = (G[:, k] - V w) / l`` and ``z_t = alpha[k] / l``;
    the correlations of the least-squares residual are then ``alpha <- alpha - z_t v`` (equal to
    ``alpha0 - G[:, S] x_S``), and the coefficients ``x_S = L^{-T} z`` are solved once at the end.
    O(t K) per step, as the per-step ``G[:, S] x_S`` of Rubinstein et al.'s Batch-OMP, with no
    per-step solve. Selection and stopping as scikit-learn's ``orthogonal_mp``: the atom of largest
    ``|alpha|`` not yet in the support; stop when ``alpha[k]^2 < eps`` or ``l^2 <= eps``.
    Returns ``(support, coef, count)``.
    """
    n, K = alpha0.shape
    T = n_nonzero
    support = np.zeros((n, T), dtype=np.int64)
    coef = np.zeros((n, T))
    count = np.zeros(n, dtype=np.int64)
    V = np.empty((T, K))
    L = np.zeros((T, T))
    z = np.empty(T)
    alpha = np.empty(K)
    excluded = np.zeros(K)                                # 0, or inf once the atom is in the support
    score = np.empty(K)
    keys = score.view(np.int64)                           # the scores' bits, for _first_max
    for i in range(n):
        for m in range(K):
            alpha[m] = alpha0[i, m]
            excluded[m] = 0.0
            score[m] = _score(alpha[m], 0.0)
        k = _first_max(keys, K)
        s = 0
        for t in range(T):
            if k < 0 or alpha[k] * alpha[k] < eps:       # nothing left to represent
                break
            w2 = 0.0
            for j in range(t):
                w = V[j, k]
                L[t, j] = w
                w2 += w * w
            pivot = G[k, k] - w2
            if pivot <= eps:                             # the atom is dependent on the support
                break
            lkk = math.sqrt(pivot)
            L[t, t] = lkk
            row = V[t]
            for m in range(K):
                row[m] = G[k, m]
            _subtract_rows(row, V, L[t], t, K)
            inv = 1.0 / lkk
            zt = alpha[k] * inv
            z[t] = zt
            support[i, t] = k
            excluded[k] = np.inf                           # an atom in the support scores -inf
            s = t + 1
            _update_scores(alpha, excluded, row, inv, zt, score, K)
            k = _first_max(keys, K)                       # the next step's atom
        for t in range(s - 1, -1, -1):                    # L^T x = z
            acc = z[t]
            for j in range(t + 1, s):
                acc -= L[j, t] * coef[i, j]
            coef[i, t] = acc / L[t, t]
        count[i] = s
    return support, coef, count


@njit(cache=True, nogil=True)
def _residual_norm(Y, P, labels, D, support, coef, count, i, r):
    """``||[Y[i], P[labels[i]]] - sum_s coef[i, s] D[support[i, s]]||^2`` (``r`` [p]: scratch)."""
    d = Y.shape[1]
    p = D.shape[1]
    for m in range(d):
        r[m] = Y[i, m]
    c = labels[i]
    for m in range(d, p):
        r[m] = P[c, m - d]
    for s in range(count[i]):
        x = coef[i, s]
        Dk = D[support[i, s]]
        for m in range(p):
            r[m] -= x * Dk[m]
    acc = 0.0
    for m in range(p):
        acc += r[m] * r[m]
    return acc


@njit(cache=True, nogil=True)
def residual_norms(Y, P, labels, D, support, coef, count):
    """[n] ``||[Y[i], P[labels[i]]] - sum_s coef[i, s] D[support[i, s]]||^2``."""
    n = Y.shape[0]
    out = np.empty(n)
    r = np.empty(D.shape[1])
    for i in range(n):
        out[i] = _residual_norm(Y, P, labels, D, support, coef, count, i, r)
    return out


@njit(cache=True, nogil=True)
def replace_dead(Y, P, labels, D, k, err, free):
    """Atom ``k`` <- the normalised free signal of largest ``err`` (first on ties); False if none is free."""
    n, d = Y.shape
    best = -1
    for i in range(n):
        if free[i] and (best < 0 or err[i] > err[best]):
            best = i
    if best < 0:
        return False
    c = labels[best]
    p = D.shape[1]
    nrm = 0.0
    for m in range(d):
        nrm += Y[best, m] * Y[best, m]
    for m in range(d, p):
        nrm += P[c, m - d] * P[c, m - d]
    nrm = math.sqrt(nrm)
    for m in range(d):
        D[k, m] = Y[best, m] / nrm
    for m in range(d, p):
        D[k, m] = P[c, m - d] / nrm
    free[best] = False
    return True


@njit(cache=True, nogil=True)
def update_atoms(Y, P, labels, D, support, coef, count, free):
    """K-SVD's sequential atom updates (approximate K-SVD: one power step), in place on ``D`` and ``coef``.

    For each atom k in turn, over the signals omega_k whose code uses it (non-zero coefficient), with the
    error without it ``E_k = Y[omega] - sum_{l != k} X[omega, l] d_l``: ``d_k = E_k^T x_k / ||E_k^T x_k||``
    then ``x_k = E_k d_k``. Computed without forming E_k (as the reference K-SVD box's ``optimize_atom``):
    ``E_k^T x_k = Y[omega]^T x_k - sum_l u_l d_l`` with ``u = X[omega]^T x_k``, and
    ``E_k d = Y[omega] d - X[omega] (D d)``, the label rows of Y summed per class. An unused atom is
    replaced by the free signal of largest current residual (:func:`replace_dead`). Returns [K] bool,
    the atoms replaced.
    """
    n, d = Y.shape
    K, p = D.shape
    q = p - d
    C = P.shape[0]
    # omega_k: (signal, slot) pairs, grouped by atom (the non-zero pattern of column k does not change
    # before atom k is updated, so one index serves the whole pass)
    users = np.zeros(K + 1, dtype=np.int64)
    for i in range(n):
        for s in range(count[i]):
            if coef[i, s] != 0.0:
                users[support[i, s] + 1] += 1
    for k in range(K):
        users[k + 1] += users[k]
    fill = users[:K].copy()
    who = np.empty(users[K], dtype=np.int64)
    slot = np.empty(users[K], dtype=np.int64)
    for i in range(n):
        for s in range(count[i]):
            if coef[i, s] != 0.0:
                k = support[i, s]
                who[fill[k]] = i
                slot[fill[k]] = s
                fill[k] += 1
    replaced = np.zeros(K, dtype=np.bool_)
    # residual norms for the dead-atom choice, computed at the first dead atom (a pass without one never reads
    # them), then kept current lazily: an update changes only omega_k's (a zero coefficient keeps a norm as it is)
    err = np.empty(0)
    dirty = np.zeros(n, dtype=np.bool_)
    n_dirty = 0
    r = np.empty(p)
    u = np.zeros(K)
    g = np.zeros(K)
    atom = np.empty(p)
    class_x = np.zeros(C)
    for k in range(K):
        a, b = users[k], users[k + 1]
        if a == b:
            if err.shape[0] == 0:
                err = residual_norms(Y, P, labels, D, support, coef, count)
                for i in range(n):
                    dirty[i] = False
                n_dirty = 0
            elif n_dirty:
                for i in range(n):
                    if dirty[i]:
                        err[i] = _residual_norm(Y, P, labels, D, support, coef, count, i, r)
                        dirty[i] = False
                n_dirty = 0
            replaced[k] = replace_dead(Y, P, labels, D, k, err, free)
            continue
        for m in range(p):
            atom[m] = 0.0
        for c in range(C):
            class_x[c] = 0.0
        for e in range(a, b):
            i, s0 = who[e], slot[e]
            x = coef[i, s0]
            for m in range(d):
                atom[m] += x * Y[i, m]
            class_x[labels[i]] += x
            for s in range(count[i]):
                if s != s0:
                    u[support[i, s]] += x * coef[i, s]
        if q:
            for c in range(C):
                for m in range(q):
                    atom[d + m] += class_x[c] * P[c, m]
        for l in range(K):
            ul = u[l]
            if ul != 0.0:
                Dl = D[l]
                for m in range(p):
                    atom[m] -= ul * Dl[m]
                u[l] = 0.0
        nrm = 0.0
        for m in range(p):
            nrm += atom[m] * atom[m]
        if nrm == 0.0:
            continue
        nrm = math.sqrt(nrm)
        for m in range(p):
            atom[m] /= nrm
        # g = D d over the other atoms, only where a signal of omega uses them
        for e in range(a, b):
            i, s0 = who[e], slot[e]
            for s in range(count[i]):
                if s != s0:
                    l = support[i, s]
                    if g[l] == 0.0:
                        acc = _dot(D[l], atom, p)
                        g[l] = acc                 # an exact zero is recomputed: same value
        for c in range(C):
            acc = 0.0
            for m in range(q):
                acc += P[c, m] * atom[d + m]
            class_x[c] = acc
        for e in range(a, b):
            i, s0 = who[e], slot[e]
            acc = _dot(Y[i], atom, d)
            if q:
                acc += class_x[labels[i]]
            for s in range(count[i]):
                if s != s0:
                    acc -= coef[i, s] * g[support[i, s]]
            coef[i, s0] = acc
            if not dirty[i]:
                dirty[i] = True
                n_dirty += 1
        for e in range(a, b):
            i, s0 = who[e], slot[e]
            for s in range(count[i]):
                g[support[i, s]] = 0.0
        for m in range(p):
            D[k, m] = atom[m]
    return replaced
