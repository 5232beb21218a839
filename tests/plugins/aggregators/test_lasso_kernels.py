"""The compiled lasso path (``lasso_kernels``) against scikit-learn's LARS-lasso path and a direct solve."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import lars_path_gram

from lfabench_plugins.aggregators import lasso, lasso_kernels
from lfabench_plugins.aggregators.lasso_kernels import homotopy_supports

from test_sc_lasso import correlated_problem

TINY, NEAR, NEAR_PIVOT = lasso.TINY, lasso.NEAR, lasso.NEAR_PIVOT


def lars_supports(C, G, alpha, positive):
    """Support and signs at ``alpha`` of each row by scikit-learn's LARS in its lasso mode (``n_samples=1``:
    its objective is then ``1/2 ||x - D^T u||^2 + alpha ||u||_1``, the kernel's). LARS may keep an atom that is
    leaving at a rounding-sized coefficient (1e-19 seen): a coefficient under 1e-10 counts as off the support."""
    S = np.zeros(C.shape, dtype=bool)
    sign = np.zeros(C.shape)
    for i, c in enumerate(C):
        _, _, coef = lars_path_gram(Xy=c, Gram=G, n_samples=1, alpha_min=alpha, method="lasso",
                                    positive=positive, return_path=False)
        S[i] = np.abs(coef) > 1e-10
        sign[i] = np.where(S[i], np.sign(coef), 0.0)
    return S, sign


@pytest.mark.parametrize("positive", [False, True])
def test_supports_are_those_of_scikit_learns_lars_lasso(positive):
    X, D = correlated_problem(n=200, d=30, K=48, seed=3)
    C, G = X @ D.T, D @ D.T
    alpha = 0.05
    S, sign, failed, _ = homotopy_supports(C, G, alpha, positive, 8 * len(D), TINY, NEAR, NEAR_PIVOT)
    S_ref, sign_ref = lars_supports(C, G, alpha, positive)
    assert not failed.any()
    np.testing.assert_array_equal(S, S_ref)
    np.testing.assert_array_equal(sign, sign_ref)
    assert S.sum(axis=1).mean() > 3                           # paths of several events, drops included
    if positive:
        assert (sign >= 0).all()


def test_a_row_under_alpha_has_the_empty_support_and_is_done():
    X, D = correlated_problem(n=4)
    C, G = X @ D.T, D @ D.T
    alpha = float(np.abs(C).max(axis=1)[0])                   # row 0: lambda_max = alpha exactly
    S, sign, failed, _ = homotopy_supports(C, G, alpha, False, 100, TINY, NEAR, NEAR_PIVOT)
    assert not S[0].any() and not sign[0].any() and not failed[0]


def test_a_row_out_of_steps_fails_on_its_first_atom():
    X, D = correlated_problem(n=6)
    C, G = X @ D.T, D @ D.T
    S, sign, failed, _ = homotopy_supports(C, G, 1e-4, False, 2, TINY, NEAR, NEAR_PIVOT)       # far more than 2 events to alpha
    assert failed.all()
    first = np.abs(C).argmax(axis=1)
    np.testing.assert_array_equal(S, np.eye(C.shape[1], dtype=bool)[first])
    np.testing.assert_array_equal(sign[np.arange(6), first], np.sign(C[np.arange(6), first]))


def test_a_singular_support_fails_the_row():
    # atom 1's Gram row is half atom 0's: it joins (its event comes first), and then G_SS is singular
    G = np.array([[1.0, 0.5, 0.0], [0.5, 0.25, 0.0], [0.0, 0.0, 1.0]])
    C = np.array([[1.0, 0.9, 0.0]])
    S, _, failed, _ = homotopy_supports(C, G, 0.01, False, 10, TINY, NEAR, NEAR_PIVOT)
    assert failed[0] and S[0].tolist() == [True, True, False]


def test_cholesky_solve_is_a_direct_solve_and_flags_singular_blocks():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(9, 6))
    G = A @ A.T                                               # rank 6
    idx = np.array([1, 4, 7, 2, 0], dtype=np.int64)
    rhs, out, L = rng.normal(size=5), np.empty(5), np.empty((9, 9))
    pivot = lasso_kernels._cholesky_solve(G, idx, 5, L, rhs, out)
    A_ss = G[np.ix_(idx, idx)]
    assert pivot == pytest.approx(min(np.diag(np.linalg.cholesky(A_ss)) ** 2 / np.diag(A_ss)), rel=1e-12)
    np.testing.assert_allclose(out, np.linalg.solve(A_ss, rhs), rtol=1e-10)
    D = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])           # atoms 0 and 1 equal: G[{0, 1}] is singular
    assert lasso_kernels._cholesky_solve(D @ D.T, np.array([0, 1], dtype=np.int64), 2, L, np.ones(2),
                                         np.empty(2)) == -1.0


def test_compiled_kernel_equals_its_python_form():
    """The fallback without numba runs the same function as Python: the same supports, signs and failures."""
    X, D = correlated_problem(n=60, d=20, K=32, seed=5)
    C, G = X @ D.T, D @ D.T
    for positive in (False, True):
        fast = homotopy_supports(C, G, 0.05, positive, 256, TINY, NEAR, NEAR_PIVOT)
        with np.errstate(divide="ignore", invalid="ignore"):
            slow = homotopy_supports.py_func(C, G, 0.05, positive, 256, TINY, NEAR, NEAR_PIVOT)
        for x, y in zip(fast, slow):
            np.testing.assert_array_equal(x, y)


def near_duplicate_problem(n=300, seed=0):
    """The correlated problem with a third of its atoms repeated at cosine about 0.99998 (as a dictionary has early
    in its learning): supports over a near-duplicate pair are near singular and events come in near-tied pairs."""
    X, D = correlated_problem(n=n, d=30, K=40, seed=seed)
    rng = np.random.default_rng(seed)
    twins = D[:14] + 1e-3 * rng.normal(size=(14, D.shape[1]))
    D = np.vstack([D, twins / np.linalg.norm(twins, axis=1, keepdims=True)])
    return X, D


def test_ties_and_near_singular_supports_are_marked_close():
    # an exact tie: atoms 1 and 2 equal, their events the same float
    D = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    _, _, _, close = homotopy_supports(np.array([[1.0, 0.5, 0.5, 0.1]]), D @ D.T, 0.05, False, 20, TINY, NEAR,
                                       NEAR_PIVOT)
    assert close[0]
    X, D = correlated_problem(n=100, d=30, K=48, seed=3)         # in general position: nothing is close
    assert not homotopy_supports(X @ D.T, D @ D.T, 0.05, False, 384, TINY, NEAR, NEAR_PIVOT)[3].any()
    X, D = near_duplicate_problem()
    C, G = X @ D.T, D @ D.T
    S, _, _, close = homotopy_supports(C, G, 0.05, False, 432, TINY, NEAR, NEAR_PIVOT)
    assert close.mean() > 0.05
    # there rounding decides: the kernel alone ends some paths elsewhere than the lock-step form, all marked close
    differ = (S != lasso._lockstep_homotopy(C, G, 0.05, False, 432)[0]).any(axis=1)
    assert differ.any() and close[differ].all()


@pytest.mark.parametrize("problem", [correlated_problem, near_duplicate_problem])
@pytest.mark.parametrize("positive", [False, True])
def test_the_path_decides_as_the_lockstep_form(problem, positive):
    """``_homotopy`` (the kernel, close rows replayed in lock-step) gives the lock-step form's supports, signs and
    failures on every row, near-duplicate atoms included, and so the same codes bit for bit."""
    X, D = problem(n=300)
    C, G = X @ D.T, D @ D.T
    steps = 8 * len(D)
    fast = lasso._homotopy(C, G, 0.05, positive, steps)
    slow = lasso._lockstep_homotopy(C, G, 0.05, positive, steps)
    for x, y in zip(fast, slow):
        np.testing.assert_array_equal(x, y)
