"""The float32 EM of the diagonal GMM against scikit-learn's ``GaussianMixture`` (the reference it reimplements)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.mixture import GaussianMixture

from lfabench_plugins.aggregators import gmm
from lfabench_plugins.aggregators.fv import FisherVector, fit_diag_gmm
from lfabench_plugins.aggregators.gmm import BLOCK_ROWS, fit_diag_gmm_em, log_likelihood


def clustered(seed: int, n: int = 6000, K: int = 6, d: int = 8, offset: float = 40.0):
    """``(X, weights, means, precisions)``: anisotropic Gaussian clusters far from the origin (the expanded
    squares then cancel: the hard case for float32), and a perturbed start."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0.0, 4.0, (K, d)) + offset
    scales = rng.uniform(0.2, 3.0, (K, d))
    labels = rng.integers(0, K, n)
    X = centres[labels] + rng.normal(size=(n, d)) * scales[labels]
    means = centres + rng.normal(0.0, 1.0, (K, d))
    precisions = 1.0 / (scales * rng.uniform(0.5, 2.0, (K, d))) ** 2
    weights = np.full(K, 1.0 / K)
    return X, weights, means, precisions


def reference(X, weights, means, precisions, max_iter, tol=1e-3):
    gm = GaussianMixture(n_components=len(weights), covariance_type="diag", max_iter=max_iter, tol=tol,
                         reg_covar=1e-6, weights_init=weights, means_init=means, precisions_init=precisions,
                         random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return gm.fit(X)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_iterations_log_likelihood_and_the_stopping_iteration_equal_scikit_learns(seed):
    X, w, mu, prec = clustered(seed)
    ref = reference(X, w, mu, prec, max_iter=100)
    ours = fit_diag_gmm_em(X, w, mu, prec, max_iter=100)
    assert ours.n_iter == ref.n_iter_ and ours.converged == ref.converged_
    np.testing.assert_allclose(ours.lower_bounds, ref.lower_bounds_, rtol=1e-5)
    np.testing.assert_allclose(ours.lower_bound, ref.lower_bound_, rtol=1e-5)


@pytest.mark.parametrize("seed", [0, 3])
def test_the_parameters_after_a_fixed_number_of_iterations_equal_scikit_learns(seed):
    # tol=0 never stops early: both run 25 iterations, so the parameters are compared at one point
    X, w, mu, prec = clustered(seed)
    ref = reference(X, w, mu, prec, max_iter=25, tol=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ours = fit_diag_gmm_em(X, w, mu, prec, max_iter=25, tol=0.0)
    assert ours.n_iter == ref.n_iter_ == 25
    np.testing.assert_allclose(ours.weights, ref.weights_, rtol=1e-3, atol=1e-7)
    np.testing.assert_allclose(ours.means, ref.means_, rtol=1e-5)   # means ~40: about 1e-3 of a cluster's spread
    np.testing.assert_allclose(ours.variances, ref.covariances_, rtol=1e-3)


def test_blocks_of_rows_change_nothing_but_the_order_of_the_float64_sums():
    # more rows than one block: the statistics of several blocks add up to the one-pass reference's
    X, w, mu, prec = clustered(4, n=2 * BLOCK_ROWS + 123)
    ref = reference(X, w, mu, prec, max_iter=100)
    ours = fit_diag_gmm_em(X, w, mu, prec, max_iter=100)
    assert ours.n_iter == ref.n_iter_
    np.testing.assert_allclose(ours.lower_bound, ref.lower_bound_, rtol=1e-5)
    np.testing.assert_allclose(ours.variances, ref.covariances_, rtol=1e-3)


def test_exponentials_below_the_smallest_normal_float32_taken_as_zero_change_no_bit(monkeypatch):
    # spread-out clusters: half the log-responsibilities lie more than 87 below their row's largest (their
    # exponentials would be subnormal floats), a tenth between 80 and 20 below (normal floats, which do count)
    X, w, mu, prec = clustered(5, n=BLOCK_ROWS + 500, K=6, d=8, offset=0.0)
    X = X + np.repeat(np.arange(6) * 15.0, -(-len(X) // 6))[:len(X), None]
    mu = mu + np.arange(6)[:, None] * 15.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        log_r = GaussianMixture(6, covariance_type="diag", weights_init=w, means_init=mu, precisions_init=prec,
                                max_iter=1).fit(X)._estimate_log_prob_resp(X)[1]
    assert np.mean(log_r < gmm.LOG_SMALLEST_NORMAL32) > 0.5 and np.mean((log_r > -80) & (log_r < -20)) > 0.1
    assert np.all(np.exp(log_r).sum(axis=0) > 10)                   # every component alive
    cut = fit_diag_gmm_em(X, w, mu, prec, max_iter=20)
    monkeypatch.setattr(gmm, "LOG_SMALLEST_NORMAL32", np.float32(-np.inf))
    kept = fit_diag_gmm_em(X, w, mu, prec, max_iter=20)
    assert cut.n_iter == kept.n_iter and cut.lower_bounds == kept.lower_bounds
    for name in ("weights", "means", "variances"):
        np.testing.assert_array_equal(getattr(cut, name), getattr(kept, name))


def test_log_likelihood_equals_scikit_learns_score():
    X, w, mu, prec = clustered(5)
    ref = reference(X, w, mu, prec, max_iter=5)
    score = log_likelihood(X, ref.weights_, ref.means_, ref.covariances_)
    np.testing.assert_allclose(score, ref.score(X), rtol=1e-6)


def test_max_iter_zero_returns_the_start_and_not_converging_warns():
    X, w, mu, prec = clustered(6)
    start = fit_diag_gmm_em(X, w, mu, prec, max_iter=0)
    assert start.n_iter == 0 and not start.converged
    np.testing.assert_allclose(start.means, mu)
    np.testing.assert_allclose(start.variances, 1.0 / prec)
    with pytest.warns(ConvergenceWarning):
        fit_diag_gmm_em(X, w, mu, prec, max_iter=1)


def test_fit_diag_gmm_runs_either_em_from_the_same_start():
    X, *_ = clustered(7, K=5)
    a = fit_diag_gmm(X, 5, max_iter=100, kmeans_iter=10, seed=0, em="float32")
    b = fit_diag_gmm(X, 5, max_iter=100, kmeans_iter=10, seed=0, em="sklearn")
    assert int(a["n_iter"]) == int(b["n_iter"])
    np.testing.assert_allclose(a["lower_bound"], b["lower_bound"], rtol=1e-5)
    np.testing.assert_allclose(a["variances"], b["variances"], rtol=1e-3)
    with pytest.raises(ValueError, match="em must be one of"):
        fit_diag_gmm(X, 5, max_iter=10, kmeans_iter=10, seed=0, em="float16")


def test_fv_features_of_either_em_agree_and_fit_info_records_the_iterations():
    rng = np.random.default_rng(8)
    from lfabench import Bags

    bags = Bags.from_list([rng.normal(size=(int(rng.integers(20, 60)), 12)) + rng.normal(0, 2, 12)
                           for _ in range(40)])
    new = FisherVector(n_components=4, pca_components=6, random_state=0).fit(bags)
    old = FisherVector(n_components=4, pca_components=6, em="sklearn", random_state=0).fit(bags)
    assert new.fit_info_["gmm_n_iter"] == old.fit_info_["gmm_n_iter"] >= 1
    np.testing.assert_allclose(new.transform(bags), old.transform(bags), atol=1e-4)
    with pytest.raises(ValueError, match="FisherVector: parameter em='float16' must be one of 'float32', 'sklearn'"):
        FisherVector(n_components=4, em="float16", random_state=0).fit(bags)


def test_a_component_collapsed_onto_one_point_keeps_a_positive_variance_as_scikit_learns():
    # three identical far points held by their own component: elsewhere its float32 responsibilities underflow
    # to zero and E[x^2] - mu^2 rounds below zero; the weighted variance is zero, plus reg_covar, as in float64
    rng = np.random.default_rng(0)
    for trial in range(10):
        X = np.vstack([rng.normal(size=(400, 3)), np.full((3, 3), 7.3 + rng.random())])
        w, mu, prec = np.array([0.99, 0.01]), np.array([[0.0, 0, 0], X[-1]]), np.array([[1.0] * 3, [1e4] * 3])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = fit_diag_gmm_em(X, w, mu, prec, max_iter=50)
            ref = GaussianMixture(2, covariance_type="diag", weights_init=w, means_init=mu, precisions_init=prec,
                                  max_iter=50).fit(X)
        assert np.all(ours.variances >= 1e-6)
        np.testing.assert_allclose(ours.variances[1], ref.covariances_[1], atol=1e-5)
        np.testing.assert_allclose(ours.means[1], X[-1], rtol=1e-6)
