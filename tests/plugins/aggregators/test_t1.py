"""T1: conformance, analytic gradient vs finite differences, the soft-BoW start, training curve."""

import numpy as np
import pytest
from scipy.optimize import check_grad

from lfabench.testing import aggregator_checks, make_check_bags
from lfabench_plugins.aggregators.softbow import SoftHistograms, softmax_rows
from lfabench_plugins.aggregators.supervised import class_indicator
from lfabench_plugins.aggregators.t1 import T1, t1_loss_and_grad

SMALL = T1(n_clusters=6, max_iter=5, random_state=0)


@pytest.mark.parametrize("check", aggregator_checks(SMALL), ids=lambda c: c.__name__)
def test_t1_conformance(check):
    check()


def test_t1_gradient_matches_finite_differences():
    bags, y = make_check_bags()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(bags.n_descriptors, bags.dim))
    hist = SoftHistograms(X, bags.offsets, dtype=np.float64)   # the exact path (float32 is compared in test_softbow)
    Y = class_indicator(y, bags.n_samples)
    K, C = 5, Y.shape[1]
    theta = rng.normal(size=K * bags.dim + K + K * C + C)
    f = lambda t: t1_loss_and_grad(t, hist, Y, K, 0.1)[0]      # noqa: E731
    g = lambda t: t1_loss_and_grad(t, hist, Y, K, 0.1)[1]      # noqa: E731
    assert check_grad(f, g, theta) < 1e-5 * np.linalg.norm(g(theta))


def test_t1_start_is_gaussian_soft_bow_and_training_lowers_the_loss():
    bags, y = make_check_bags()
    start = T1(n_clusters=6, max_iter=0, descriptors_per_image=None, random_state=0).fit(bags, y)
    # W = 2V/sigma, b = -|v|^2/sigma  <=>  softmax(-|x - v|^2 / sigma): recover V and compare
    V = start.weights_ * start.sigma_ / 2.0
    X = start.standardizer_.transform(bags.descriptors)
    U = softmax_rows(-((X[:, None, :] - V[None]) ** 2).sum(-1) / start.sigma_)
    want = np.stack([U[a:b].mean(0) for a, b in zip(bags.offsets[:-1], bags.offsets[1:])])
    np.testing.assert_allclose(start.transform(bags), want, rtol=1e-4, atol=1e-6)
    fitted = T1(n_clusters=6, max_iter=20, random_state=0).fit(bags, y)
    curve = fitted.record_info()["training_curve"]
    assert len(curve) > 1 and curve[-1] < curve[0]


def test_t1_rejects_bad_parameters():
    bags, y = make_check_bags()
    with pytest.raises(ValueError, match="softness"):
        T1(n_clusters=4, softness=0).fit(bags, y)
    with pytest.raises(ValueError, match="supervised"):
        T1(n_clusters=4).fit(bags)


@pytest.mark.parametrize("name,params", [("t1", {"n_clusters": 5}), ("eobow", {"n_clusters": 5}),
                                         ("dbows", {"n_clusters": 5}),
                                         ("lcksvd2", {"n_atoms": 6, "sparsity": 3, "init_iter": 2})])
def test_initial_transform_is_the_unoptimised_fit(name, params):
    """``initial_transform`` of a trained model equals the model fitted with zero training iterations."""
    from lfabench import get_plugin

    bags, y = make_check_bags()
    cls = get_plugin("aggregator", name)
    steps = "n_iter" if name == "lcksvd2" else "max_iter"
    trained = cls(random_state=0, **params, **{steps: 3}).fit(bags, y)
    start = cls(random_state=0, **params, **{steps: 0}).fit(bags, y)
    np.testing.assert_allclose(trained.initial_transform(bags), start.transform(bags), rtol=1e-5, atol=1e-6)
