"""ProLFA core: kernel-free quantities vs explicit kernels, gradient, projection, W-step, Z-step."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp

from lfabench import Bags
from lfabench_plugins.aggregators.prolfa import (
    Problem,
    FitOptions,
    exclusivity,
    fit_loss,
    fit_prolfa,
    gradient_factor,
    lipschitz_bound,
    objective,
)
from lfabench_plugins.aggregators.prolfa.cbcd_cstep import c_step, working_set
from lfabench_plugins.aggregators.prolfa.search import top_candidates
from lfabench_plugins.aggregators.prolfa.problem import frank_wolfe_gap, gradient_entries, quadratic_term
from lfabench_plugins.aggregators.prolfa.simplex import (
    project_columns,
    project_columns_sparse,
    project_columns_top,
    project_segments,
    project_segments_sparse,
    simplex_threshold_sorted,
)
from lfabench_plugins.aggregators.prolfa.cbcd import one_hot_start
from lfabench_plugins.aggregators.prolfa.sparsecols import combine, from_csc, split_keys, to_csc
from lfabench_plugins.aggregators.prolfa.wstep import solve_w, sylvester_residual, uses_basis_norm
from lfabench_plugins.aggregators.prolfa.cbcd_zstep import reweighted_z_step


def small_problem(seed=0, N_per=(5, 7, 4, 6, 3, 5), d=4, c=3, lambda1=0.7, lambda2=0.3):
    rng = np.random.default_rng(seed)
    bags = Bags.from_list([rng.normal(size=(n, d)) for n in N_per])
    y = np.arange(len(N_per)) % c
    Y = np.eye(c)[y]
    pb = Problem.build(bags.descriptors, bags.means(), Y, lambda1, lambda2)
    return bags, Y, pb


def one_hot_state(pb, k, seed):
    """The solver's start on ``pb``: seeded one-hot keys, dense ``C`` (N, k), its optimal ``W`` and gradient factor ``H``."""
    N = pb.n_descriptors
    keys, c = one_hot_start(N, k, np.random.default_rng(seed))
    C = to_csc(keys, c, N, k).toarray()
    P = pb.prototypes(sp.csc_matrix(C))
    W = solve_w(pb, P)
    return keys, C, W, gradient_factor(pb, P, W)


def random_simplex_columns(rng, N, k, density=0.4):
    C = rng.random((N, k)) * (rng.random((N, k)) < density)
    C[rng.integers(N, size=k), np.arange(k)] += 0.5
    return C / C.sum(axis=0)


def explicit_terms(bags, Y, C, W, lambda1, lambda2):
    """The paper's formulas with the explicit N x N kernel and the m x N matrix G X^T X."""
    X = bags.descriptors.T                                    # (d, N), the paper's layout
    G = bags.pooling_matrix().toarray()                       # (m, N)
    A = G @ X.T @ X                                           # (m, N)
    Xbar = A @ C
    fit = np.sum((Xbar @ W - Y) ** 2) + np.sum((Xbar - Y @ W.T) ** 2)
    excl = np.sum(np.abs(C).sum(axis=1) ** 2) - np.sum(C ** 2)
    grad = 2 * A.T @ (Xbar @ W - Y) @ W.T + 2 * A.T @ (Xbar - Y @ W.T)
    return fit, excl, fit + lambda1 * excl + lambda2 * np.sum(W * W), grad, Xbar


def test_kernel_free_quantities_equal_explicit_kernel():
    bags, Y, pb = small_problem()
    rng = np.random.default_rng(1)
    C = random_simplex_columns(rng, bags.n_descriptors, 5)
    W = rng.normal(size=(5, Y.shape[1]))
    fit, excl, J, grad, Xbar = explicit_terms(bags, Y, C, W, pb.lambda1, pb.lambda2)
    P = pb.prototypes(sp.csc_matrix(C))
    np.testing.assert_allclose(bags.means() @ P, Xbar, rtol=1e-10)
    assert fit_loss(pb, P, W) == pytest.approx(fit, rel=1e-10)
    assert exclusivity(sp.csc_matrix(C)) == pytest.approx(excl, rel=1e-10)
    assert objective(pb, sp.csc_matrix(C), W) == pytest.approx(J, rel=1e-10)
    H = gradient_factor(pb, P, W)
    np.testing.assert_allclose(2 * bags.descriptors @ H, grad, rtol=1e-9, atol=1e-9)
    rows, cols = np.nonzero(np.ones_like(C))
    np.testing.assert_allclose(gradient_entries(pb, H, rows, cols), grad[rows, cols], rtol=1e-9, atol=1e-9)


def test_exclusivity_is_the_pairwise_overlap():
    rng = np.random.default_rng(2)
    C = random_simplex_columns(rng, 12, 4)
    pairs = sum(np.sum(C[:, i] * C[:, j]) for i in range(4) for j in range(4) if i != j)
    assert exclusivity(sp.csc_matrix(C)) == pytest.approx(pairs, rel=1e-12)   # paper Definition 1


def test_exclusivity_is_bitwise_scipys_formula():
    """The NumPy form gives the float of scipy's ``r = abs(C).sum(axis=1); r @ r - C.multiply(C).sum()`` (its
    former body) on random matrices with explicit zeros, empty rows, values whose squares underflow, unsorted
    row indices and non-CSC inputs."""
    def scipy_formula(C):
        C = sp.csr_matrix(C)
        r = np.asarray(abs(C).sum(axis=1)).ravel()
        return float(r @ r - C.multiply(C).sum())

    rng = np.random.default_rng(5)
    for trial in range(300):
        C = sp.random(int(rng.integers(1, 300)), int(rng.integers(1, 30)), density=float(rng.uniform(0.01, 0.9)),
                      format="csc", random_state=trial)
        C.data = rng.standard_normal(C.data.size) * 10.0 ** rng.integers(-200, 3, C.data.size)
        C.data[rng.random(C.data.size) < 0.1] = 0.0
        if trial % 3 == 1:                               # the same matrix with each column's rows reversed
            for j in range(C.shape[1]):
                lo, hi = C.indptr[j], C.indptr[j + 1]
                C.indices[lo:hi], C.data[lo:hi] = C.indices[lo:hi][::-1].copy(), C.data[lo:hi][::-1].copy()
            C.has_sorted_indices = False
        for form in (C, C.tocoo()) if trial % 5 == 0 else (C,):
            assert exclusivity(form) == scipy_formula(form)
    assert exclusivity(sp.csc_matrix((4, 3))) == 0.0


def test_gradient_matches_finite_differences():
    bags, Y, pb = small_problem(seed=3)
    rng = np.random.default_rng(4)
    C = random_simplex_columns(rng, bags.n_descriptors, 3)
    W = rng.normal(size=(3, Y.shape[1]))
    G = 2 * bags.descriptors @ gradient_factor(pb, pb.prototypes(sp.csc_matrix(C)), W)
    h = 1e-6
    for i, j in [(0, 0), (5, 1), (17, 2), (29, 0)]:
        E = np.zeros_like(C)
        E[i, j] = h
        up = fit_loss(pb, pb.prototypes(sp.csc_matrix(C + E)), W)
        dn = fit_loss(pb, pb.prototypes(sp.csc_matrix(C - E)), W)
        assert (up - dn) / (2 * h) == pytest.approx(G[i, j], rel=1e-5, abs=1e-6)


def test_quadratic_term_is_exact_second_order():
    bags, Y, pb = small_problem(seed=5)
    rng = np.random.default_rng(6)
    C, C2 = random_simplex_columns(rng, bags.n_descriptors, 3), random_simplex_columns(rng, bags.n_descriptors, 3)
    W = rng.normal(size=(3, Y.shape[1]))
    D = C2 - C
    P = pb.prototypes(sp.csc_matrix(C))
    H = gradient_factor(pb, P, W)
    lhs = fit_loss(pb, pb.prototypes(sp.csc_matrix(C2)), W)
    rhs = fit_loss(pb, P, W) + np.sum(2 * bags.descriptors @ H * D) + quadratic_term(pb, bags.descriptors.T @ D, W)
    assert lhs == pytest.approx(rhs, rel=1e-10)


def test_spectral_bound_satisfies_descent_lemma_on_feasible_moves():
    bags, Y, pb = small_problem(seed=7)
    rng = np.random.default_rng(8)
    W = rng.normal(size=(3, Y.shape[1]))
    L = lipschitz_bound(pb, W)
    # the explicit Lipschitz constant of the gradient restricted to zero-column-sum moves
    X = bags.descriptors.T
    A = bags.pooling_matrix().toarray() @ X.T @ X
    N = A.shape[1]
    Pc = np.eye(N) - np.ones((N, N)) / N
    exact = 2 * np.linalg.eigvalsh(Pc @ A.T @ A @ Pc)[-1] * (np.linalg.norm(W, 2) ** 2 + 1)
    assert L >= exact * (1 - 1e-9)
    assert L == pytest.approx(exact, rel=1e-8)            # the bound is tight for this operator
    for _ in range(20):
        C1, C2 = random_simplex_columns(rng, N, 3), random_simplex_columns(rng, N, 3)
        P1 = pb.prototypes(sp.csc_matrix(C1))
        G = 2 * bags.descriptors @ gradient_factor(pb, P1, W)
        f2 = fit_loss(pb, pb.prototypes(sp.csc_matrix(C2)), W)
        assert f2 <= fit_loss(pb, P1, W) + np.sum(G * (C2 - C1)) + L / 2 * np.sum((C2 - C1) ** 2) + 1e-9


def sort_projection_reference(v):
    """Duchi et al. Fig. 1, one vector, float64, written out plainly."""
    u = sorted(map(float, v), reverse=True)
    css, rho = 0.0, 0
    for j, uj in enumerate(u, start=1):
        css += uj
        if uj - (css - 1.0) / j > 0:
            rho, theta = j, (css - 1.0) / j
    return np.maximum(np.asarray(v, dtype=np.float64) - theta, 0.0)


def test_projection_agrees_with_sort_reference_and_is_feasible():
    rng = np.random.default_rng(9)
    V = rng.normal(scale=3.0, size=(50, 7))
    V[:, 3] = 0.2                                          # ties
    P = project_columns(V)
    for j in range(V.shape[1]):
        np.testing.assert_allclose(P[:, j], sort_projection_reference(V[:, j]), atol=1e-12)
    assert (P >= 0).all()
    np.testing.assert_allclose(P.sum(axis=0), 1.0, atol=1e-12)
    cols = np.repeat(np.arange(7), 50)
    proj, tau = project_segments(cols, V.T.ravel(), 7)
    np.testing.assert_allclose(proj.reshape(7, 50).T, P, atol=1e-12)
    assert simplex_threshold_sorted(np.sort(V[:, 0])[::-1]) == pytest.approx(tau[0])


def test_projection_float64_sums_on_a_long_float32_column():
    rng = np.random.default_rng(10)
    v = (rng.random(400_000) * 1e-3).astype(np.float32)
    p = project_columns(v)
    assert p.min() >= 0 and abs(p.sum() - 1.0) < 1e-9


def test_candidate_search_is_exact_top_k():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(300, 6)).astype(np.float32)
    H = rng.normal(size=(6, 5))
    vals, rows = top_candidates(X, H, 7)
    full = -(X.astype(np.float64) @ H)
    for j in range(5):
        np.testing.assert_array_equal(np.sort(rows[j]), np.sort(np.argsort(-full[:, j])[:7]))


def test_faiss_candidate_search_is_exact_and_keeps_faiss_own_threshold(monkeypatch):
    """The FAISS route of the search (past the dense limit, on FAISS's BLAS route) returns the exact top-k of a
    float64 reference, and FAISS's process-wide threshold is the same afterwards (the evaluators keep FAISS's
    choice), also when the search raises."""
    import faiss

    from lfabench_plugins.aggregators.prolfa import search

    monkeypatch.setattr(search, "DENSE_SEARCH_LIMIT", 0)
    rng = np.random.default_rng(12)
    X = rng.normal(size=(2_000, 9)).astype(np.float32)
    H = rng.normal(size=(9, 40))
    monkeypatch.setattr(faiss.cvar, "distance_compute_blas_threshold", 128_000)   # FAISS 1.15's own, any FAISS
    before = faiss.cvar.distance_compute_blas_threshold
    vals, rows = top_candidates(X, H, 16)
    full = -(X.astype(np.float64) @ H)
    for j in range(40):
        np.testing.assert_array_equal(np.sort(rows[j]), np.sort(np.argsort(-full[:, j])[:16]))
        np.testing.assert_allclose(vals[j], np.sort(full[:, j])[::-1][:16], rtol=1e-5, atol=1e-5)
    assert faiss.cvar.distance_compute_blas_threshold == before
    with pytest.raises(RuntimeError):
        with search.blas_route(faiss):
            assert faiss.cvar.distance_compute_blas_threshold == search.BLAS_MIN_QUERIES
            raise RuntimeError("inside")
    assert faiss.cvar.distance_compute_blas_threshold == before


def test_small_faiss_searches_run_on_one_thread(monkeypatch):
    """A search below ``SMALL_SEARCH_MACS`` multiply-adds runs with every thread pool (FAISS's OpenMP and BLAS) at
    one thread, a larger one with the pools as they were, and the pools are as they were afterwards."""
    import faiss
    from threadpoolctl import threadpool_info, threadpool_limits

    from lfabench_plugins.aggregators.prolfa import search

    def pools():
        return {(p["filepath"], p["user_api"]): p["num_threads"] for p in threadpool_info()}

    seen = []
    knn = faiss.knn

    def spy(*args, **kwargs):
        seen.append(pools())
        return knn(*args, **kwargs)

    monkeypatch.setattr(search, "DENSE_SEARCH_LIMIT", 0)
    monkeypatch.setattr(faiss, "knn", spy)
    rng = np.random.default_rng(13)
    X = rng.normal(size=(500, 9)).astype(np.float32)
    H = rng.normal(size=(9, 30))
    top_candidates(X, H, 4)                                   # builds the controller (FAISS is loaded by then)
    with threadpool_limits(limits=2):                         # two threads where a pool allows it, on any machine
        before = pools()
        # a pool built for one thread stays at 1 (pyhesaff's OpenBLAS, once the hesaff tests have loaded it)
        assert [key for key, n in before.items() if "faiss" in key[0] and n == 2], before
        top_candidates(X, H, 4)                               # 500 x 9 x 30 multiply-adds: small
        assert set(seen[-1].values()) == {1}, seen[-1]
        monkeypatch.setattr(search, "SMALL_SEARCH_MACS", 0)    # the same search counted as large
        top_candidates(X, H, 4)
        assert seen[-1] == before
        assert pools() == before


def test_the_thread_controller_is_rebuilt_once_faiss_is_loaded(monkeypatch):
    """A controller built before FAISS's import cannot see FAISS's thread pools: the next limit after the import
    builds a new one (and only then)."""
    import sys

    from lfabench_plugins.aggregators.prolfa import threads

    faiss_module = sys.modules["faiss"] if "faiss" in sys.modules else __import__("faiss")
    monkeypatch.setattr(threads, "_CONTROLLER", None)
    monkeypatch.setattr(threads, "_SEES_FAISS", False)
    monkeypatch.delitem(sys.modules, "faiss")
    with threads.one_thread("blas"):
        pass
    before = threads._CONTROLLER
    with threads.one_thread("blas"):
        pass
    assert threads._CONTROLLER is before                      # no FAISS yet: kept
    monkeypatch.setitem(sys.modules, "faiss", faiss_module)
    with threads.one_thread():
        pass
    assert threads._CONTROLLER is not before and threads._SEES_FAISS
    rebuilt = threads._CONTROLLER
    with threads.one_thread():
        pass
    assert threads._CONTROLLER is rebuilt


def test_restricted_c_step_equals_dense_projected_gradient():
    """On a working set covering everything, a C-step is Proj(C - t grad) of the dense formula."""
    bags, Y, pb = small_problem(seed=12)
    N, k, mu = bags.n_descriptors, 4, 0.5
    rng = np.random.default_rng(13)
    C = random_simplex_columns(rng, N, k)
    Z = C + 0.01 * rng.normal(size=C.shape) * (C > 0)
    Lam = 0.1 * rng.normal(size=C.shape) * (C > 0)
    W = rng.normal(size=(k, Y.shape[1]))
    H = gradient_factor(pb, pb.prototypes(sp.csc_matrix(C)), W)
    ws = working_set(pb.X.astype(np.float32), H, np.empty(0, np.int64), k, N)   # k = N: every entry
    rows, cols = ws.rows, ws.cols
    t = 1.0 / (lipschitz_bound(pb, W) + mu)
    res = c_step(pb, W, H, ws, C[rows, cols], mu * (C - Z)[rows, cols] - Lam[rows, cols], mu / 2, k, t, t)
    dense = project_columns(C - t * (2 * bags.descriptors @ H + mu * (C - Z) - Lam))
    np.testing.assert_allclose(res.values, dense[rows, cols], atol=1e-12)


def test_c_step_with_few_candidates_is_still_exact():
    """k smaller than the support: the bound check sends those columns to the dense path."""
    bags, Y, pb = small_problem(seed=14, N_per=(40, 30, 50, 35, 45, 30))
    N, k = bags.n_descriptors, 3
    keys, C, W, H = one_hot_state(pb, k, 15)
    ws = working_set(pb.X.astype(np.float32), H, keys, k, 2)
    base = C[ws.rows, ws.cols]
    for t in (1e-4, 1e-2, 1.0):
        res = c_step(pb, W, H, ws, base, np.zeros_like(base), 0.0, k, t, t)
        out = np.zeros((N, k))
        out[ws.rows, ws.cols] = res.values
        er, ec = split_keys(res.extra_keys, N)
        out[er, ec] = res.extra_values
        np.testing.assert_allclose(out, project_columns(C - t * 2 * bags.descriptors @ H), atol=1e-10)


def test_backtracking_step_satisfies_descent_lemma():
    bags, Y, pb = small_problem(seed=16, N_per=(20, 25, 30, 15, 20, 25))
    N, k = bags.n_descriptors, 3
    keys, C, W, H = one_hot_state(pb, k, 17)
    P = pb.prototypes(sp.csc_matrix(C))
    ws = working_set(pb.X.astype(np.float32), H, keys, k, N)
    base = C[ws.rows, ws.cols]
    res = c_step(pb, W, H, ws, base, np.zeros_like(base), 0.0, k, 10.0, 1.0 / lipschitz_bound(pb, W))
    Cn = np.zeros((N, k))
    Cn[ws.rows, ws.cols] = res.values
    D = Cn - C
    G = 2 * bags.descriptors @ H
    assert res.n_trials > 1 and np.sum(D * D) > 0
    assert fit_loss(pb, pb.prototypes(sp.csc_matrix(Cn)), W) <= \
        fit_loss(pb, P, W) + np.sum(G * D) + np.sum(D * D) / (2 * res.step) + 1e-10
    assert fit_loss(pb, pb.prototypes(sp.csc_matrix(Cn)), W) < fit_loss(pb, P, W)


def test_w_step_solves_sylvester_and_matches_scipy():
    bags, Y, pb = small_problem(seed=18)
    rng = np.random.default_rng(19)
    C = random_simplex_columns(rng, bags.n_descriptors, 6)
    P = pb.prototypes(sp.csc_matrix(C))
    Xbar = pb.Mu @ P
    A = Xbar.T @ Xbar + pb.lambda2 * np.eye(6)
    B, Q = Y.T @ Y, 2 * Xbar.T @ Y
    W = solve_w(pb, P)
    assert sylvester_residual(A, B, Q, W) < 1e-8
    np.testing.assert_allclose(W, scipy.linalg.solve_sylvester(A, B, Q), rtol=1e-7, atol=1e-10)
    wide = solve_w(pb, P, tall_svd=False)                     # w_svd="wide": the SVD of R P itself
    assert sylvester_residual(A, B, Q, wide) < 1e-8
    np.testing.assert_allclose(wide, W, rtol=1e-10, atol=1e-13)
    # a general (non-diagonal) response matrix
    Yr = rng.normal(size=Y.shape)
    pb2 = Problem.build(bags.descriptors, bags.means(), Yr, 0.5, 0.2)
    W2 = solve_w(pb2, P)
    A2 = Xbar.T @ Xbar + 0.2 * np.eye(6)
    assert sylvester_residual(A2, Yr.T @ Yr, 2 * Xbar.T @ Yr, W2) < 1e-8


def _w_step_by_products(pb: Problem, P: np.ndarray, tall: bool = True) -> np.ndarray:
    """The W-step with ``Y^T Y``'s eigenvectors applied as matrix products (what the shortcut replaces), the SVD
    of ``R P`` taken as that of its transpose (``tall``, ``w_svd="tall"``) or of ``R P`` itself (``"wide"``, as
    every fit before that option)."""
    beta, VB = np.linalg.eigh(pb.YtY)
    beta = np.clip(beta, 0.0, None)
    Qr = (2.0 * (P.T @ pb.MY)) @ VB
    if tall:
        U, s, _ = np.linalg.svd((pb.R @ P).T, full_matrices=False)
        keep = s > s[0] * 1e-12
        s, Vt = s[keep], U[:, keep].T
    else:
        _, s, Vt = np.linalg.svd(pb.R @ P, full_matrices=False)
        keep = s > s[0] * 1e-12
        s, Vt = s[keep], Vt[keep]
    coef = Vt @ Qr
    rest = Qr - Vt.T @ coef
    shift = pb.lambda2 + beta
    Wr = Vt.T @ (coef / (s[:, None] ** 2 + shift[None, :]))
    Wr[:, shift > 0] += rest[:, shift > 0] / shift[shift > 0]
    return Wr @ VB.T


@pytest.mark.parametrize("n_classes", [5, 37, 300])
def test_one_hot_w_step_and_loss_equal_the_general_products_bit_for_bit(n_classes):
    # unequal class sizes, so eigh orders the classes differently from the labels (a non-identity permutation)
    rng = np.random.default_rng(n_classes)
    labels = np.concatenate([np.arange(n_classes), rng.integers(0, n_classes, 3 * n_classes)])
    X = rng.standard_normal((2000, 16)).astype(np.float32)
    pb = Problem.build(X, rng.standard_normal((labels.size, 16)), np.eye(n_classes)[labels], 0.5, 0.2)
    rows, signs = pb.YtY_permutation
    assert not np.array_equal(rows, np.arange(n_classes)) and set(np.abs(signs)) == {1.0}
    np.testing.assert_array_equal(pb.YtY_diagonal, np.bincount(labels))
    P = rng.standard_normal((16, 48))
    W = solve_w(pb, P)
    assert W.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(W, _w_step_by_products(pb, P))
    np.testing.assert_array_equal(solve_w(pb, P, tall_svd=False), _w_step_by_products(pb, P, tall=False))
    np.testing.assert_array_equal(pb.times_YtY(W), W @ pb.YtY)
    assert pb.spectral_norm(W) == np.linalg.norm(W, 2)
    assert pb.spectral_norm(W.copy() * 2) == np.linalg.norm(2 * W, 2)    # a new W is measured, not remembered


def test_general_responses_take_the_product_path():
    rng = np.random.default_rng(3)
    pb = Problem.build(rng.standard_normal((300, 8)).astype(np.float32), rng.standard_normal((40, 8)),
                       rng.standard_normal((40, 3)), 0.5, 0.2)
    assert pb.YtY_permutation is None and pb.YtY_diagonal is None
    P = rng.standard_normal((8, 12))
    np.testing.assert_array_equal(solve_w(pb, P), _w_step_by_products(pb, P))


def test_w_step_never_increases_J_and_is_the_minimiser():
    bags, Y, pb = small_problem(seed=20)
    rng = np.random.default_rng(21)
    C = sp.csc_matrix(random_simplex_columns(rng, bags.n_descriptors, 4))
    W = solve_w(pb, pb.prototypes(C))
    J = objective(pb, C, W)
    for _ in range(20):
        assert objective(pb, C, W + 1e-3 * rng.normal(size=W.shape)) >= J
        assert objective(pb, C, rng.normal(size=W.shape)) >= J


def test_w_step_lambda2_zero():
    bags, Y, pb = small_problem(seed=22, lambda2=0.0)
    C = random_simplex_columns(np.random.default_rng(23), bags.n_descriptors, 8)   # d̄ = 8 > rank 4
    P = pb.prototypes(sp.csc_matrix(C))
    W = solve_w(pb, P)
    Xbar = pb.Mu @ P
    assert np.isfinite(W).all()
    assert sylvester_residual(Xbar.T @ Xbar, Y.T @ Y, 2 * Xbar.T @ Y, W) < 1e-8
    # singular operator (a response column that is always zero): minimum-norm solution
    Y0 = np.c_[Y, np.zeros(len(Y))]
    pb0 = Problem.build(bags.descriptors, bags.means(), Y0, 0.5, 0.0)
    W0 = solve_w(pb0, P)
    np.testing.assert_allclose(W0[:, -1], 0.0, atol=1e-12)
    assert sylvester_residual(Xbar.T @ Xbar, Y0.T @ Y0, 2 * Xbar.T @ Y0, W0) < 1e-8


def test_z_step_matches_paper_update_and_guards_denominator():
    rows = np.array([0, 0, 1, 2, 2, 2])
    c = np.array([0.6, 0.3, 1.0, 0.2, 0.2, 0.1])
    lam = np.array([0.01, -0.02, 0.0, 0.05, 0.0, 0.0])
    mu, l1, eps = 0.1, 2.0, 0.1
    z = reweighted_z_step(rows, c, c.copy(), lam, 3, mu, l1, eps, max_iter=1, tol=0.0)
    r = np.bincount(rows, weights=np.abs(c))[rows]
    q = np.maximum(r / (np.abs(c) + eps) - 1, 0)
    np.testing.assert_allclose(z, (mu * c - lam) / (mu + 2 * l1 * q))
    # row 1 holds one entry: the raw q is negative and mu < 2 lambda1 would make the denominator
    # negative (-0.26); the clamp keeps it at mu, so z = c - lam / mu
    assert z[2] == pytest.approx(1.0)
    # rows with shared mass are shrunk: the exclusivity pressure
    assert abs(z[0]) < c[0] and abs(z[1]) < c[1]


def test_sparse_keys_roundtrip():
    rng = np.random.default_rng(26)
    M = sp.random(30, 5, density=0.2, random_state=1, format="csc")
    keys, vals = from_csc(M)
    np.testing.assert_allclose(to_csc(keys, vals, 30, 5).toarray(), M.toarray())
    assert np.all(np.diff(keys) > 0)


def test_combine_equals_sparse_product_across_chunks():
    rng = np.random.default_rng(27)
    X = rng.normal(size=(50, 4)).astype(np.float32)
    M = sp.random(50, 7, density=0.3, random_state=2, format="csc")
    M[:, 3] = 0.0                                           # an empty column stays zero
    keys, vals = from_csc(M)
    rows, cols = split_keys(keys, 50)
    ref = (M.T @ X.astype(np.float64)).T
    for chunk in (1, 3, 1 << 15):                           # columns cut by chunk boundaries
        np.testing.assert_allclose(combine(X, rows, cols, vals, 7, chunk=chunk), ref, atol=1e-12)


def test_blocked_gathers_give_the_same_floats(monkeypatch):
    """Large inputs gather rows in blocks (never a whole float64 copy at once): the blocks never split a column
    inside a chunk, so the result is bitwise the one product over the gathered rows, and equals X^T D."""
    import lfabench_plugins.aggregators.prolfa.sparsecols as sc

    rng = np.random.default_rng(31)
    X = rng.normal(size=(3000, 6)).astype(np.float32)
    M = sp.random(3000, 40, density=0.05, random_state=4, format="csc")   # ~6,000 entries: the CSR path
    keys, vals = from_csc(M)
    rows, cols = split_keys(keys, 3000)
    ref = (M.T @ X.astype(np.float64)).T
    once = combine(X, rows, cols, vals, 40, Xw=np.asarray(X[rows], dtype=np.float64), chunk=2500)
    monkeypatch.setattr(sc, "BLOCK_BYTES", 8 * 6 * 97)                  # 97-row blocks, many per chunk
    assert sc.block_rows(6) == 97
    blocked = combine(X, rows, cols, vals, 40, chunk=2500)
    np.testing.assert_array_equal(blocked, once)
    np.testing.assert_allclose(blocked, ref, atol=1e-10)
    np.testing.assert_array_equal(sc.gather_float64(X, rows), np.asarray(X[rows], dtype=np.float64))
    blocks = list(sc._column_blocks(cols, 100, 2500, 97))
    assert blocks[0][0] == 100 and blocks[-1][1] == 2500
    assert all(b == a2 for (_, b), (a2, _) in zip(blocks, blocks[1:]))                 # contiguous cover
    assert all(b == 2500 or cols[b - 1] != cols[b] for _, b in blocks)                 # no column split
    H = rng.normal(size=(6, 40))
    from lfabench_plugins.aggregators.prolfa.problem import gradient_entries

    pb = type("P", (), {"X": X})()
    np.testing.assert_array_equal(gradient_entries(pb, H, rows, cols, chunk=7),
                                  gradient_entries(pb, H, rows, cols, chunk=1 << 16))
    np.testing.assert_allclose(gradient_entries(pb, H, rows, cols),
                               2.0 * np.einsum("nd,nd->n", X[rows].astype(np.float64), H.T[cols]), rtol=1e-12)


@pytest.mark.parametrize("m", [1, 3, 50, 500])
def test_project_columns_top_equals_full_projection(m):
    rng = np.random.default_rng(31)
    V = rng.normal(size=(300, 9)) * np.array([0.01, 0.1, 1, 10, 0.001, 1, 1, 1, 1])
    V[:, 5] = 0.0                                            # all tied
    V[:40, 6] = 5.0                                          # a tied top block
    r, c, v = project_columns_top(V, m)
    P = np.zeros_like(V)
    P[r, c] = v
    np.testing.assert_allclose(P, project_columns(V), atol=1e-12)
    assert np.all(v > 0)


def brute_force_sparse_projection(v, k):
    """Projection of ``v`` onto the k-sparse simplex by trying every support of size <= k (float64)."""
    from itertools import combinations

    best, best_d = None, np.inf
    for size in range(1, k + 1):
        for S in combinations(range(v.size), size):
            p = np.zeros(v.size)
            p[list(S)] = project_columns(v[list(S)])
            dist = float(np.sum((p - v) ** 2))
            if dist < best_d - 1e-12:
                best, best_d = p, dist
    return best, best_d


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_sparse_projection_equals_brute_force(k):
    """Kyrillidis et al. 2013: top-k then simplex projection is the exact k-sparse simplex projection."""
    rng = np.random.default_rng(20 + k)
    n, b = 7, 12
    V = rng.normal(scale=0.6, size=(n, b))
    V[:, :3] *= 0.05                        # near-uniform columns: plain projections with > k non-zeros
    dense = project_columns_sparse(V, k)
    cols = np.repeat(np.arange(b), n)
    seg, tau, kth = project_segments_sparse(cols, V.T.ravel(), b, k)
    np.testing.assert_allclose(seg.reshape(b, n).T, dense, atol=1e-12)
    wider = 0
    for j in range(b):
        ref, ref_d = brute_force_sparse_projection(V[:, j], k)
        np.testing.assert_allclose(np.sum((dense[:, j] - V[:, j]) ** 2), ref_d, atol=1e-12)
        np.testing.assert_allclose(dense[:, j], ref, atol=1e-10)
        assert np.count_nonzero(dense[:, j]) <= k
        assert dense[:, j].min() >= 0 and abs(dense[:, j].sum() - 1) < 1e-12
        np.testing.assert_allclose(kth[j], np.sort(V[:, j])[::-1][k - 1])
        wider += np.count_nonzero(project_columns(V[:, j])) > k
    assert wider >= 3                       # the cap was active on several columns
    # k >= the plain support: identical to the plain projection
    np.testing.assert_allclose(project_columns_sparse(V, n), project_columns(V), atol=1e-12)
    # the entries form, from a column-major V (as the solver passes it): exactly the dense result's non-zeros
    from lfabench_plugins.aggregators.prolfa.simplex import project_columns_sparse_entries

    r, c, v = project_columns_sparse_entries(np.ascontiguousarray(V.T).T, k)
    assert (v > 0).all() and np.unique(r * b + c).size == r.size
    np.testing.assert_array_equal(dense[r, c], v)
    assert np.count_nonzero(dense) == v.size


def test_sparse_c_step_with_few_candidates_is_exact():
    """Capped C-step on a short candidate list equals the dense k-sparse projected-gradient step."""
    bags, Y, pb = small_problem(seed=14, N_per=(40, 30, 50, 35, 45, 30))
    N, k, ksup = bags.n_descriptors, 3, 4
    keys, C, W, H = one_hot_state(pb, k, 16)
    ws = working_set(pb.X.astype(np.float32), H, keys, k, 2)
    base = C[ws.rows, ws.cols]
    for t in (1e-4, 1e-2, 1.0):
        res = c_step(pb, W, H, ws, base, np.zeros_like(base), 0.0, k, t, t, max_support=ksup)
        out = np.zeros((N, k))
        out[ws.rows, ws.cols] = res.values
        er, ec = split_keys(res.extra_keys, N)
        out[er, ec] = res.extra_values
        np.testing.assert_allclose(out, project_columns_sparse(C - t * 2 * bags.descriptors @ H, ksup), atol=1e-10)
        assert (np.count_nonzero(out, axis=0) <= ksup).all()


@pytest.mark.parametrize("n, n_cols, long_column", [(40, 5, 0), (3000, 128, 0), (3000, 128, 2000)])
def test_column_segment_order_is_lexsort_with_ties(n, n_cols, long_column):
    """The projections' per-column order (by column, then descending value, ties by position) equals
    ``np.lexsort((-v, cols))`` exactly, on values rounded to make many ties, with infinite values, by the lexsort
    (small), the padded per-column sort (even columns) and the global sorts (one column of ``long_column``
    entries: padding would cost more)."""
    from lfabench_plugins.aggregators.prolfa import simplex

    rng = np.random.default_rng(n)
    cols = np.sort(np.concatenate([np.arange(n_cols), rng.integers(0, n_cols, n - n_cols - long_column),
                                   np.full(long_column, 7)]))
    v = np.round(rng.standard_normal(n), 1)
    v[::17], v[::23] = -np.inf, np.inf
    counts = np.bincount(cols)
    padded = n > simplex.SMALL_LEXSORT and n_cols * counts.max() <= simplex.MAX_PAD_RATIO * n
    assert padded == (n == 3000 and not long_column)
    order = simplex._column_segments(v, simplex.ColumnLayout(cols, n_cols), "test")[1]
    np.testing.assert_array_equal(order, np.lexsort((-v, cols)))


@pytest.mark.parametrize("n, n_cols", [(40, 2), (3000, 128)])
def test_a_reused_column_layout_gives_the_same_floats(n, n_cols):
    """Products and projections on one entry set through its cached :class:`ColumnLayout` equal those computed
    from scratch, bitwise, call after call with new values (the cached CSR matrix only swaps its data): the
    reduceat path (40 entries), the CSR path (3,000), the simplex and the k-sparse simplex projections."""
    from lfabench_plugins.aggregators.prolfa.simplex import project_segments_sparse
    from lfabench_plugins.aggregators.prolfa.sparsecols import ColumnLayout

    rng = np.random.default_rng(n)
    cols = np.sort(np.concatenate([np.arange(n_cols), rng.integers(0, n_cols, n - n_cols)]))
    rows = rng.integers(0, 500, n)
    X = rng.normal(size=(500, 9)).astype(np.float32)
    Xw = np.asarray(X[rows], dtype=np.float64)
    layout = ColumnLayout(cols, n_cols)
    for _ in range(3):
        v = np.round(rng.standard_normal(n), 2)                  # ties
        for a, b in zip(project_segments(cols, v, n_cols), project_segments(cols, v, n_cols, layout=layout)):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(project_segments_sparse(cols, v, n_cols, 3),
                        project_segments_sparse(cols, v, n_cols, 3, layout=layout)):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(combine(X, rows, cols, v, n_cols, Xw=Xw),
                                      combine(X, rows, cols, v, n_cols, Xw=Xw, layout=layout))
    gap = ColumnLayout(cols[cols != 1], n_cols)                  # column 1 has no candidate
    with pytest.raises(ValueError, match="every column needs at least one candidate"):
        project_segments(cols[cols != 1], v[cols != 1], n_cols, layout=gap)


def test_union_keys_equals_union1d():
    """Sorted distinct values of several integer arrays, sorted or not, with repeats and empties."""
    from lfabench_plugins.aggregators.prolfa.sparsecols import union_keys

    rng = np.random.default_rng(0)
    a = np.unique(rng.integers(0, 10**9, 5000))
    b = rng.integers(0, 10**9, 3000)
    b[:1000] = a[:1000]
    np.testing.assert_array_equal(union_keys(a, b), np.union1d(a, b))
    np.testing.assert_array_equal(union_keys(b), np.unique(b))
    assert union_keys(a, b).dtype == np.int64
    np.testing.assert_array_equal(union_keys(np.array([], np.int64), a[:3]), a[:3])
    assert union_keys(np.array([], np.int64)).size == 0


def test_frank_wolfe_gap_equals_a_finite_difference_gradient_and_falls_to_zero_as_the_exact_model_converges():
    """The gap from the gradient formula against central differences of ``objective`` (W fixed; every entry
    of C positive, where J is smooth), then along a fit of the exact model."""
    from prolfa_problems import clustered_problem

    rng = np.random.default_rng(0)
    N, d, dbar, n, c = 9, 3, 4, 5, 2
    pb = Problem.build(rng.normal(size=(N, d)), rng.normal(size=(n, d)), np.eye(c)[rng.integers(0, c, n)], 0.3, 0.5)
    C = rng.random((N, dbar)) + 0.05
    C /= C.sum(axis=0)
    W = rng.normal(size=(dbar, c))
    G = np.empty((N, dbar))
    h = 1e-6
    for i in range(N):
        for j in range(dbar):
            E = np.zeros((N, dbar))
            E[i, j] = h
            G[i, j] = (objective(pb, sp.csc_matrix(C + E), W) - objective(pb, sp.csc_matrix(C - E), W)) / (2 * h)
    expected = (G * C).sum(axis=0) - G.min(axis=0)
    np.testing.assert_allclose(frank_wolfe_gap(pb, sp.csc_matrix(C), W, block=3), expected, rtol=1e-6, atol=1e-8)

    pb = clustered_problem(seed=1)
    res = fit_prolfa(pb, FitOptions(n_prototypes=8, random_state=0, max_support=None, tol=1e-10, max_iter=3000))
    start = FitOptions(n_prototypes=8, random_state=0)
    C0 = to_csc(*one_hot_start(pb.n_descriptors, 8, start.rng()), pb.n_descriptors, 8)
    gap0 = frank_wolfe_gap(pb, C0, res.projection)
    gap = frank_wolfe_gap(pb, res.selection, res.projection)
    assert gap.min() >= -1e-9
    assert gap.sum() < 1e-4 * gap0.sum()



@pytest.fixture(scope="module")
def digits_training():
    """The embedded default run's training bags and labels (digits, 3x3 patches, seed-0 split): at d̄ = 128 the
    safeguard rejects ADMM's point on most iterations past the first ten."""
    from reference_cases import digits_split

    return digits_split(0)[:2]


def _skips_by_the_rule(info: dict, n_iter: int, patience: int) -> list[int]:
    """The iterations ``admm_patience`` skips, replayed from a fit's trace: not searched, after ``patience``
    consecutive iterations whose ADMM point the safeguard rejected (``line_search_s`` 0 where ADMM ran)."""
    searched, skipped, rejected = set(info["searched_iterations"]), [], 0
    for it, s in zip(range(1, n_iter + 1), info["line_search_s"]):
        if rejected >= patience and it not in searched:
            skipped.append(it)
            continue
        rejected = 0 if s > 0 else rejected + 1
    return skipped


def _fit_digits(data, patience):
    import warnings

    from lfabench_plugins.aggregators.prolfa import SolverOptions
    from lfabench_plugins.aggregators.prolfa.plugin import ProLFA

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ProLFA(random_state=0, solver=SolverOptions(admm_patience=patience)).fit(*data)


@pytest.mark.parametrize("patience", [1, 2])
def test_admm_patience_skips_admm_only_after_rejections_and_off_searches(patience, digits_training):
    est = _fit_digits(digits_training, patience)
    info, h = est.fit_info_, est.objective_history_
    expected = _skips_by_the_rule(info, est.n_iter_, patience)
    assert len(expected) >= 5, "the problem must reject ADMM often enough for the rule to skip it"
    assert info["admm_skipped"] == len(expected)
    assert len(info["admm_iters"]) == est.n_iter_ - len(expected)      # ADMM ran on every other iteration
    assert np.all(np.diff(h) <= 1e-10 * np.abs(h[:-1]))               # J never rises


def test_admm_runs_on_every_iteration_without_patience(digits_training):
    est = _fit_digits(digits_training, None)
    assert est.fit_info_["admm_skipped"] == 0 and len(est.fit_info_["admm_iters"]) == est.n_iter_
    assert 0.0 in est.fit_info_["line_search_s"]      # rejections happen: the rule would have had work


@pytest.mark.parametrize("n_prototypes", [3, 48])     # fewer and more prototypes than the 16 descriptor dimensions
def test_w_step_norm_from_the_prototypes_basis_is_the_svd_norm(n_prototypes):
    rng = np.random.default_rng(n_prototypes)
    labels = np.concatenate([np.arange(7), rng.integers(0, 7, 30)])
    pb = Problem.build(rng.standard_normal((500, 16)).astype(np.float32), rng.standard_normal((labels.size, 16)),
                       np.eye(7)[labels], 0.5, 0.2)
    P = rng.standard_normal((16, n_prototypes))
    W = solve_w(pb, P, norm_from_basis=True)
    np.testing.assert_array_equal(W, solve_w(pb, P))                   # the same W either way
    assert pb.spectral_norm(W) == pytest.approx(np.linalg.norm(W, 2), rel=1e-12)
    assert lipschitz_bound(pb, W) == pytest.approx(2 * pb.scatter_curvature * (np.linalg.norm(W, 2) ** 2 + 1),
                                                   rel=1e-12)


@pytest.mark.parametrize("n_classes, d, expected", [(5, 16, False), (16, 16, False), (17, 16, True), (300, 16, True)])
def test_auto_norm_takes_the_basis_only_with_more_classes_than_dimensions(n_classes, d, expected):
    from lfabench_plugins.aggregators.prolfa import SolverOptions

    assert SolverOptions().spectral_norm == "auto"
    rng = np.random.default_rng(n_classes)
    labels = np.concatenate([np.arange(n_classes), rng.integers(0, n_classes, 20)])
    pb = Problem.build(rng.standard_normal((400, d)).astype(np.float32), rng.standard_normal((labels.size, d)),
                       np.eye(n_classes)[labels], 0.5, 0.2)
    assert uses_basis_norm(pb, "auto") is expected
    assert uses_basis_norm(pb, "basis") is True and uses_basis_norm(pb, "svd") is False


def test_the_basis_norm_fits_as_the_svd_norm_does(digits_training):
    from lfabench_plugins.aggregators.prolfa import SolverOptions
    from lfabench_plugins.aggregators.prolfa.plugin import ProLFA

    fits = {norm: ProLFA(random_state=0, solver=SolverOptions(spectral_norm=norm, max_iter=12)).fit(*digits_training)
            for norm in ("basis", "svd")}
    np.testing.assert_allclose(fits["basis"].objective_history_, fits["svd"].objective_history_, rtol=1e-9)
    assert ProLFA.introduced_params["solver"]["spectral_norm"] == "svd"     # what earlier records ran
