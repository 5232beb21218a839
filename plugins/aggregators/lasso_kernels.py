"""The lasso path (homotopy / LARS-lasso) of each row, compiled (numba, one thread, fixed loop order).

:func:`homotopy_supports` follows each row's path as :mod:`lfabench_plugins.aggregators.lasso` describes it and
returns what the caller needs from it, the support and signs at ``alpha`` (the caller solves the codes again on
that support, so the path's own rounding never reaches them), and which rows rounding could have steered (their
``close`` mask: the caller decides those in NumPy). One row at a time, its state in [K] arrays that stay in
cache: the NumPy form of the same steps, all rows of a block in lock-step, makes a dozen passes over ``(B, K)``
arrays per step and takes five to seven times as long. Without numba the same function runs as Python
(correct, orders of magnitude slower), with the warning of :mod:`omp_kernels`.
"""

from __future__ import annotations

import math

import numpy as np

from .omp_kernels import njit


@njit(cache=True, nogil=True, error_model="numpy")
def _cholesky_solve(G, idx, m, L, rhs, out):
    """``out[:m] = G[idx, idx]^{-1} rhs[:m]`` by a Cholesky factorisation in ``L`` [>= m, >= m]. Returns the
    smallest pivot relative to its diagonal entry (``l_ii^2 / G_ii``, in (0, 1]: near 0, ``G[idx, idx]`` is
    near singular), or -1.0 (``out`` untouched) when a pivot is not positive: singular to rounding."""
    smallest = 1.0
    for i in range(m):
        gi = idx[i]
        for j in range(i + 1):
            acc = G[gi, idx[j]]
            for k in range(j):
                acc -= L[i, k] * L[j, k]
            if i == j:
                if not acc > 0.0:
                    return -1.0
                smallest = min(smallest, acc / G[gi, gi])
                L[i, i] = math.sqrt(acc)
            else:
                L[i, j] = acc / L[j, j]
    for i in range(m):                          # L y = rhs
        acc = rhs[i]
        for k in range(i):
            acc -= L[i, k] * out[k]
        out[i] = acc / L[i, i]
    for i in range(m - 1, -1, -1):              # L^T x = y
        acc = out[i]
        for k in range(i + 1, m):
            acc -= L[k, i] * out[k]
        out[i] = acc / L[i, i]
    return smallest


@njit(cache=True, nogil=True, inline="always")
def _count_at_most(keys, key, K):
    """How many ``keys`` are <= ``key`` (int64 bits of non-negative float64 values or +inf)."""
    count = 0
    for j in range(K):
        count += keys[j] <= key
    return count


@njit(cache=True, nogil=True, inline="always")
def _first_min(keys, K):
    """The first ``j`` of smallest key (``keys`` [K] int64: the bits of positive float64 values or +inf)."""
    best = keys[0]
    for j in range(1, K):
        key = keys[j]
        best = key if key < best else best
    for j in range(K):
        if keys[j] == best:
            return j
    return 0


@njit(cache=True, nogil=True, error_model="numpy")  # x / 0 is +-inf or NaN, as in NumPy
def homotopy_supports(C, G, alpha, positive, max_steps, tiny, near, near_pivot):
    """Supports and signs at ``alpha`` of each row's lasso path (``C`` [n, K] = X D^T, ``G`` [K, K] = D D^T).

    ``P(u) = 1/2 ||x - D^T u||^2 + alpha ||u||_1`` (``u >= 0`` when ``positive``). From
    ``lambda = max_j |c_j|`` (``max_j c_j`` when ``positive``) with that atom's sign, each step solves
    ``w_S = G_SS^{-1} s_S``, takes ``v = G w`` and moves ``lambda`` down by ``gamma``, the nearest of: an
    atom off the support whose correlation ``a_j - gamma v_j`` reaches ``+-(lambda - gamma)`` (it joins with
    the sign of its new correlation; the first atom on ties), a code ``u_j + gamma w_j`` reaching 0 (it
    leaves; the lowest atom on ties), and ``lambda = alpha`` (the row is done). Events no further than
    ``tiny`` are the one just taken. Returns ``(S, sign, failed, close)``: [n, K] bool, [n, K] float64 (+-1 on
    the support, else 0), [n] bool, [n] bool. A row fails when ``G_SS`` is singular to rounding (its Cholesky
    pivot is not positive), when ``gamma`` is not finite, or after ``max_steps`` steps (its support is then its
    first atom); its support and signs are where it stopped. A row whose ``lambda_max <= alpha`` has the
    empty support (its code is 0).

    ``close`` marks the rows where rounding could have decided the path: a step whose two nearest events
    (of the atoms joining, the codes leaving and the end) are within a relative ``near`` of each other, an
    event within a factor 10 of ``tiny``, a ``G_SS`` whose smallest relative Cholesky pivot is under
    ``near_pivot`` or not positive. Elsewhere another computation of the path takes the same decisions while the
    two differ by much less than ``near``; on an ill-conditioned path the difference can grow past it unmarked
    (one path of the Fifteen Scene board's twelve SC runs ended on another support than the lock-step form's).
    """
    n, K = C.shape
    S = np.zeros((n, K), dtype=np.bool_)
    sign = np.zeros((n, K))
    failed = np.zeros(n, dtype=np.bool_)
    close = np.zeros(n, dtype=np.bool_)
    a = np.empty(K)                              # correlations of the residual, c - G u
    u = np.zeros(K)                              # the path's code
    v = np.empty(K)
    idx = np.empty(K, dtype=np.int64)            # the support, ascending
    s_sup = np.empty(K)
    w = np.empty(K)
    L = np.empty((K, K))
    event = np.empty(K)
    keys = event.view(np.int64)                  # the events' bits, for _first_min
    ratio = np.empty(K)
    bound = np.empty(1)
    bound_key = bound.view(np.int64)
    inf = np.inf
    for i in range(n):
        Si = S[i]
        sgn = sign[i]
        j0 = 0
        lam = C[i, 0] if positive else abs(C[i, 0])
        for j in range(1, K):
            score = C[i, j] if positive else abs(C[i, j])
            if score > lam:
                lam, j0 = score, j
        if not lam > alpha:
            continue
        for j in range(K):
            a[j] = C[i, j]
            u[j] = 0.0
        Si[j0] = True
        sgn[j0] = 1.0 if positive else np.sign(C[i, j0])
        done = False
        for _ in range(max_steps):
            m = 0
            for j in range(K):
                if Si[j]:
                    idx[m] = j
                    s_sup[m] = sgn[j]
                    m += 1
            pivot = _cholesky_solve(G, idx, m, L, s_sup, w) if m else -1.0
            bad = not pivot > 0.0
            if m and pivot < near_pivot:
                close[i] = True
            if bad:
                for t in range(m):
                    w[t] = 0.0
                for j in range(K):
                    v[j] = 0.0
            else:
                # v = sum over the support, ascending, of w_t G[idx_t]: four rows per pass over v
                for j in range(K):
                    v[j] = 0.0
                t = 0
                while t + 4 <= m:
                    w0, w1, w2, w3 = w[t], w[t + 1], w[t + 2], w[t + 3]
                    G0, G1, G2, G3 = G[idx[t]], G[idx[t + 1]], G[idx[t + 2]], G[idx[t + 3]]
                    for j in range(K):
                        v[j] += (w0 * G0[j] + w1 * G1[j]) + (w2 * G2[j] + w3 * G3[j])
                    t += 4
                while t < m:
                    wt = w[t]
                    Gt = G[idx[t]]
                    for j in range(K):
                        v[j] += wt * Gt[j]
                    t += 1
            # each atom's event, +inf for none (the support's atoms, events not beyond tiny), then the
            # first of the smallest: positive events order as their bits, whose integer minimum vectorises
            lo, hi = tiny * 0.1, tiny * 10.0         # an event this near tiny may fall on its other side
            in_band = False
            if positive:
                for j in range(K):
                    e = (lam - a[j]) / (1.0 - v[j])
                    in_band |= (e > lo) & (e < hi) & (not Si[j])
                    e = e if e > tiny else inf
                    event[j] = inf if Si[j] else e
            else:
                for j in range(K):
                    e = (lam - a[j]) / (1.0 - v[j])
                    f = (lam + a[j]) / (1.0 + v[j])
                    in_band |= ((e > lo) & (e < hi) | (f > lo) & (f < hi)) & (not Si[j])
                    e = e if e > tiny else inf
                    f = f if f > tiny else inf
                    e = f if f < e else e
                    event[j] = inf if Si[j] else e
            j_join = _first_min(keys, K)
            g_join = event[j_join]
            g_drop = inf
            j_drop = 0
            for t in range(m):
                r = -u[idx[t]] / w[t]
                in_band |= (r > lo) & (r < hi)
                if not r > tiny:
                    r = inf
                ratio[t] = r
                if r < g_drop:
                    g_drop, j_drop = r, idx[t]
            g_end = lam - alpha
            gamma = min(min(g_join, g_drop), g_end)
            # the step's decision is clear when no other event (an atom joining, a code leaving, the end) is
            # within a relative near of the one taken
            bound[0] = gamma * (1.0 + near)
            n_near = _count_at_most(keys, bound_key[0], K) + (g_end <= bound[0])
            for t in range(m):
                n_near += ratio[t] <= bound[0]
            if in_band or (n_near > 1 and math.isfinite(gamma)):
                close[i] = True
            for t in range(m):
                u[idx[t]] += gamma * w[t]
            for j in range(K):
                a[j] -= v[j] * gamma
            lam = lam - gamma
            if g_drop <= g_join and g_drop < g_end:
                Si[j_drop] = False
                sgn[j_drop] = 0.0
                u[j_drop] = 0.0
            if g_join < g_drop and g_join < g_end:
                Si[j_join] = True
                sgn[j_join] = np.sign(a[j_join])
            finite = math.isfinite(gamma)
            if gamma >= g_end or bad or not finite:
                failed[i] = bad or not finite
                done = True
                break
        if not done:
            failed[i] = True
            for j in range(K):
                Si[j] = False
                sgn[j] = 0.0
            Si[j0] = True
            sgn[j0] = 1.0 if positive else np.sign(C[i, j0])
    return S, sign, failed, close
