"""DBoWs: conformance, the LDA criterion vs scikit-learn's LinearDiscriminantAnalysis, gradient check."""

import numpy as np
import pytest
from scipy.optimize import check_grad
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

from lfabench.testing import aggregator_checks, make_check_bags
from lfabench_plugins.aggregators.dbows import DBoWs, dbows_objective, lda_trace_ratio
from lfabench_plugins.aggregators.softbow import SoftHistograms
from lfabench_plugins.aggregators.supervised import class_indicator

SMALL = DBoWs(n_clusters=6, max_iter=5, random_state=0)


@pytest.mark.parametrize("check", aggregator_checks(SMALL), ids=lambda c: c.__name__)
def test_dbows_conformance(check):
    check()


def test_lda_traces_match_sklearn():
    rng = np.random.default_rng(0)
    S = rng.normal(size=(40, 5))
    y = rng.integers(0, 4, size=40)
    J, _, tw, tb = lda_trace_ratio(S, class_indicator(y, 40))
    lda = LinearDiscriminantAnalysis(solver="lsqr", store_covariance=True).fit(S, y)
    # sklearn: covariance_ = sum_c prior_c Cov_c (biased) = S_w / m; between = sum_c prior_c (mu_c - mu)(..)^T
    assert tw / 40 == pytest.approx(np.trace(lda.covariance_), rel=1e-10)
    mu = lda.priors_ @ lda.means_
    assert tb / 40 == pytest.approx(np.sum(lda.priors_[:, None] * (lda.means_ - mu) ** 2), rel=1e-10)
    assert J == pytest.approx(tw / tb)


def test_dbows_gradient_matches_finite_differences():
    bags, y = make_check_bags()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(bags.n_descriptors, bags.dim))
    hist = SoftHistograms(X, bags.offsets, dtype=np.float64)   # the exact path (float32 is compared in test_softbow)
    Y = class_indicator(y, bags.n_samples)
    v = rng.normal(size=5 * bags.dim)
    f = lambda v: dbows_objective(v, hist, Y, 5.0)[0]   # noqa: E731
    g = lambda v: dbows_objective(v, hist, Y, 5.0)[1]   # noqa: E731
    assert check_grad(f, g, v) < 1e-5 * np.linalg.norm(g(v))


def test_dbows_training_lowers_the_criterion_and_needs_two_classes():
    bags, y = make_check_bags()
    e = DBoWs(n_clusters=6, max_iter=20, random_state=0).fit(bags, y)
    curve = e.record_info()["training_curve"]
    assert curve[-1] < curve[0]
    with pytest.raises(ValueError, match="at least 2 classes"):
        DBoWs(n_clusters=4).fit(bags, np.zeros(bags.n_samples, int))
