"""UniVCG: conformance, the decision stump vs brute force, firing rates by hand."""

import numpy as np
import pytest

from lfabench.testing import aggregator_checks, make_check_bags
from lfabench_plugins.aggregators.univcg import UniVCG, best_stump, stump_predict

SMALL = UniVCG(n_rounds=3, random_state=0)


@pytest.mark.parametrize("check", aggregator_checks(SMALL), ids=lambda c: c.__name__)
def test_univcg_conformance(check):
    check()


def test_best_stump_matches_brute_force():
    rng = np.random.default_rng(0)
    for _ in range(5):
        f = rng.random(25).round(1)
        z = np.where(rng.random(25) > 0.5, 1.0, -1.0)
        w = rng.random(25)
        w /= w.sum()
        theta, pol, err = best_stump(f, z, w)
        assert err == pytest.approx(np.sum(w * (stump_predict(f, theta, pol) != z)))
        u = np.unique(f)
        cuts = np.concatenate([[u[0] - 1], (u[1:] + u[:-1]) / 2, [u[-1] + 1]])
        brute = min(np.sum(w * (s * np.where(f > t, 1, -1) != z)) for t in cuts for s in (1, -1))
        assert err == pytest.approx(brute)


def test_firing_rates_by_hand_and_boosting_lowers_the_loss():
    bags, y = make_check_bags()
    e = UniVCG(n_rounds=3, random_state=0).fit(bags, y)
    assert e.transform(bags).shape == (bags.n_samples, 3 * 3)
    Xa = np.hstack([e.standardizer_.transform(bags.descriptors), np.ones((bags.n_descriptors, 1))])
    fires = (Xa @ e.bits_.T > 0)
    want = np.stack([fires[a:b].mean(0) for a, b in zip(bags.offsets[:-1], bags.offsets[1:])])
    np.testing.assert_allclose(e.transform(bags), want, atol=1e-6)
    curve = e.record_info()["training_curve"]
    assert len(curve) == 3 and curve[-1] < 1.0


def _three_class_bags():
    """15 images of 3 classes whose descriptors overlap (the bits do not separate them at once)."""
    from lfabench import Bags

    rng = np.random.default_rng(5)
    labels = np.repeat([0, 1, 2], 5)
    counts = rng.integers(4, 12, labels.size)
    desc = np.concatenate([rng.normal(0.6 * lab, 1.0, (n, 6)) for lab, n in zip(labels, counts)]).astype(np.float32)
    return Bags(desc, np.concatenate([[0], np.cumsum(counts)])), labels


def test_batched_rounds_learn_the_per_class_loops_bits():
    # each class's round reads only its own image weights: learning all classes at once changes the rounding only
    bags, y = _three_class_bags()
    loop = UniVCG(n_rounds=4, random_state=0, batched=False).fit(bags, y)
    batched = UniVCG(n_rounds=4, random_state=0).fit(bags, y)
    np.testing.assert_allclose(batched.bits_, loop.bits_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(batched.record_info()["training_curve"], loop.record_info()["training_curve"],
                               rtol=1e-9)
    np.testing.assert_array_equal(batched.transform(bags), loop.transform(bags))
    assert UniVCG.introduced_params == {"batched": False}     # records without the parameter ran the loop


def test_transform_in_small_image_blocks_gives_the_same_bits(monkeypatch):
    bags, y = _three_class_bags()
    e = UniVCG(n_rounds=3, random_state=0).fit(bags, y)
    whole, split = e.transform(bags), e._transform(bags, chunk=7)     # chunk=7: images span chunk boundaries
    monkeypatch.setattr(UniVCG, "TRANSFORM_CELLS", 1)          # one image per block
    np.testing.assert_array_equal(e.transform(bags), whole)
    np.testing.assert_array_equal(e._transform(bags, chunk=7), split)
    Xa = np.hstack([e.standardizer_.transform(bags.descriptors), np.ones((bags.n_descriptors, 1))])
    fires = Xa @ e.bits_.T > 0
    want = np.stack([fires[a:b].mean(0) for a, b in zip(bags.offsets[:-1], bags.offsets[1:])])
    np.testing.assert_allclose(whole, want, atol=1e-6)
