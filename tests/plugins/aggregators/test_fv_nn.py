"""FV+NN: conformance, the hidden layer read out matches scikit-learn's own forward pass."""

import numpy as np
import pytest
from scipy.special import softmax

from lfabench.testing import aggregator_checks, make_check_bags
from lfabench_plugins.aggregators.fv_nn import FVNN

SMALL = FVNN(n_components=3, pca_components=4, whiten_components=16, hidden_layer_sizes=(8,), n_estimators=2,
             max_iter=20, random_state=0)


@pytest.mark.parametrize("check", aggregator_checks(SMALL), ids=lambda c: c.__name__)
def test_fv_nn_conformance(check):
    check()


def test_hidden_layer_is_the_networks_own():
    bags, y = make_check_bags()
    e = FVNN(n_components=3, pca_components=4, whiten_components=16, hidden_layer_sizes=(8,), n_estimators=2,
             max_iter=20, random_state=0).fit(bags, y)
    Z = e.transform(bags)
    assert Z.shape == (bags.n_samples, 16)
    Fw = e.whitener_.transform(e.fisher_.transform(bags).astype(np.float64))
    H = e._hidden(Fw)
    for k, (est, feats) in enumerate(zip(e.bagging_.estimators_, e.bagging_.estimators_features_)):
        h = H[:, 8 * k:8 * (k + 1)]
        probs = softmax(h @ est.coefs_[-1] + est.intercepts_[-1], axis=1)
        np.testing.assert_allclose(probs, est.predict_proba(Fw[:, feats]), rtol=1e-6, atol=1e-9)
    assert e.record_info()["training_curve"]


def test_zero_estimators_is_the_whitened_fv():
    bags, y = make_check_bags()
    e = FVNN(n_components=3, pca_components=4, whiten_components=10, n_estimators=0, random_state=0).fit(bags, y)
    Z = e.transform(bags)
    assert Z.shape == (bags.n_samples, 10)
    np.testing.assert_allclose(np.cov(Z.T, bias=False), np.eye(10), atol=1e-3)
