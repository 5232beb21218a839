"""EO-BoW: conformance, entropy objective by hand, analytic gradient vs finite differences."""

import numpy as np
import pytest
from scipy.optimize import check_grad

from lfabench.testing import aggregator_checks, make_check_bags
from lfabench_plugins.aggregators.eobow import EOBoW, entropy_and_grad, eobow_objective
from lfabench_plugins.aggregators.softbow import SoftHistograms
from lfabench_plugins.aggregators.supervised import class_indicator

SMALL = EOBoW(n_clusters=6, max_iter=5, random_state=0)


@pytest.mark.parametrize("check", aggregator_checks(SMALL), ids=lambda c: c.__name__)
def test_eobow_conformance(check):
    check()


def test_entropy_matches_direct_definition():
    rng = np.random.default_rng(1)
    S = rng.dirichlet(np.ones(4), size=12)
    y = rng.integers(0, 3, size=12)
    Y = class_indicator(y, 12)
    centres = rng.dirichlet(np.ones(4), size=3)
    g = 0.3
    E, _ = entropy_and_grad(S, Y, centres, g)
    # direct: q_ik, p_jk = share of class j in centre k, r_k = mass of centre k
    d = np.linalg.norm(S[:, None] - centres[None], axis=2)
    q = np.exp(-d / g) / np.exp(-d / g).sum(1, keepdims=True)
    want = 0.0
    for k in range(3):
        r_k = q[:, k].sum() / 12
        p = np.array([q[y == j, k].sum() for j in range(3)]) / q[:, k].sum()
        want += r_k * -np.sum(p * np.log(p))
    assert E == pytest.approx(want, rel=1e-9)


def test_eobow_gradient_matches_finite_differences():
    bags, y = make_check_bags()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(bags.n_descriptors, bags.dim))
    hist = SoftHistograms(X, bags.offsets, dtype=np.float64)   # the exact path (float32 is compared in test_softbow)
    Y = class_indicator(y, bags.n_samples)
    centres = rng.dirichlet(np.ones(5), size=3)
    v = rng.normal(size=5 * bags.dim)
    f = lambda v: eobow_objective(v, hist, Y, centres, 2.0, 0.05)[0]   # noqa: E731
    g = lambda v: eobow_objective(v, hist, Y, centres, 2.0, 0.05)[1]   # noqa: E731
    assert check_grad(f, g, v) < 1e-3 * np.linalg.norm(g(v))


def test_eobow_training_lowers_the_entropy():
    bags, y = make_check_bags()
    e = EOBoW(n_clusters=6, max_iter=20, entropy_softness=1.0, random_state=0).fit(bags, y)   # 0.1: E is 0 here already
    curve = e.record_info()["training_curve"]
    assert len(curve) > 1 and curve[-1] < curve[0]
    np.testing.assert_allclose(e.transform(bags).sum(1), 1.0, rtol=1e-5)
