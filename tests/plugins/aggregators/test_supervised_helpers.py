"""Helpers of the supervised aggregators: per-image sampling, soft-BoW gradient, L-BFGS curve."""

import numpy as np
import pytest
from scipy.optimize import check_grad

from lfabench.testing import make_check_bags
from lfabench_plugins.aggregators.softbow import SoftHistograms, codebook_gradient
from lfabench_plugins.aggregators.supervised import descriptor_labels, lbfgs, per_image_sample


def test_per_image_sample_caps_each_image_and_is_seeded():
    bags, _ = make_check_bags(empty_sample=True)
    a = per_image_sample(bags, 12, 0)
    assert a.n_samples == bags.n_samples
    np.testing.assert_array_equal(a.counts, np.minimum(bags.counts, 12))
    np.testing.assert_array_equal(a.descriptors, per_image_sample(bags, 12, 0).descriptors)
    for i in range(bags.n_samples):          # rows come from their own image
        own = {r.tobytes() for r in bags[i]}
        assert all(r.tobytes() in own for r in a[i])
    with pytest.raises(ValueError, match="descriptors_per_image"):
        per_image_sample(bags, 0, 0)


def test_descriptor_labels_follow_images():
    bags, y = make_check_bags()
    lab = descriptor_labels(bags, y)
    assert lab.shape == (bags.n_descriptors,)
    assert all((lab[a:b] == y[i]).all() for i, (a, b) in enumerate(zip(bags.offsets[:-1], bags.offsets[1:])))


@pytest.mark.parametrize("distance", ["sqeuclidean", "euclidean"])
def test_soft_histogram_gradient(distance):
    bags, _ = make_check_bags()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(bags.n_descriptors, bags.dim))
    hist = SoftHistograms(X, bags.offsets, dtype=np.float64, block_rows=16)
    R = rng.normal(size=(bags.n_samples, 4))          # loss = sum(R * S), linear in the histograms

    def f(v):
        return float(np.sum(R * hist.forward(distance, (v.reshape(4, -1), 3.0))))

    def g(v):
        hist.forward(distance, (v.reshape(4, -1), 3.0))
        return codebook_gradient(v.reshape(4, -1), *hist.backward(R), 3.0, distance).ravel()

    v = rng.normal(size=4 * bags.dim)
    assert check_grad(f, g, v) < 1e-5 * np.linalg.norm(g(v))


def test_lbfgs_records_the_curve():
    x, curve, _ = lbfgs(lambda x: (float(np.sum((x - 3) ** 2)), 2 * (x - 3)), np.zeros(3), 20, "test")
    np.testing.assert_allclose(x, 3.0, atol=1e-6)
    assert curve[0] == pytest.approx(27.0) and curve[-1] < 1e-10


def test_lbfgs_evaluates_the_start_once():
    seen = []

    def fun(x):
        seen.append(x.copy())
        return float(np.sum((x - 3) ** 2)), 2 * (x - 3)

    lbfgs(fun, np.zeros(3), 20, "test")
    assert sum(np.array_equal(x, np.zeros(3)) for x in seen) == 1
