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


def test_repeated_sums_add_one_over_n_in_order():
    from lfabench_plugins.aggregators.univcg import repeated_sums

    counts = np.array([7, 0, 300, 1, 7, 49])
    sums, start = repeated_sums(counts)
    for i, n in enumerate(counts):
        total = 0.0
        assert sums[start[i]] == 0.0
        for k in range(1, n + 1):
            total += 1.0 / n
            assert sums[start[i] + k] == total, (n, k)
    assert start[0] == start[4]                          # one table per distinct count
    # the table is needed: k * (1/n) rounds differently from k additions for some k
    assert any(sums[start[2] + k] != k * (1.0 / 300) for k in range(301))


def _csr_pooled_rates(e: UniVCG, bags, chunk: int) -> np.ndarray:
    """The reference: firing rows in float64 pooled by the CSR mean-pooling product ``P @ fires``, over the same
    image blocks and descriptor chunks as ``_transform``."""
    from lfabench_plugins.aggregators.softbow import image_blocks

    P = bags.pooling_matrix(mean=True, dtype=np.float64).tocsr()
    width = e.bits_.shape[0]
    out = np.zeros((bags.n_samples, width), dtype=np.float32)
    for first, last in image_blocks(bags.offsets, max(1, e.TRANSFORM_CELLS // width)):
        lo, hi = int(bags.offsets[first]), int(bags.offsets[last])
        block = np.zeros((last - first, width))
        for start in range(lo - lo % chunk, hi, chunk):
            a, b = max(start, lo), min(start + chunk, hi)
            if b > a:
                fires = (e._augment(bags.descriptors[a:b]) @ e.bits_.T > 0).astype(np.float64)
                block += np.asarray(P[first:last, a:b] @ fires)
        out[first:last] = block
    return out


@pytest.mark.parametrize("cells", [UniVCG.TRANSFORM_CELLS, 1, 30 * 9])
@pytest.mark.parametrize("chunk", [50_000, 7, 64])
def test_transform_pools_firing_rows_as_the_csr_mean_product_bit_for_bit(monkeypatch, cells, chunk):
    from lfabench import Bags

    train, y = _three_class_bags()
    e = UniVCG(n_rounds=3, random_state=0).fit(train, y)
    rng = np.random.default_rng(11)
    counts = np.array([3, 0, 211, 1, 49, 0, 97, 13, 300, 8])    # empty images, and images that span chunks
    bags = Bags(rng.normal(0.5, 1.2, (counts.sum(), 6)).astype(np.float32), np.concatenate([[0], np.cumsum(counts)]))
    monkeypatch.setattr(UniVCG, "TRANSFORM_CELLS", cells)
    got = e._transform(bags, chunk=chunk)
    np.testing.assert_array_equal(got, _csr_pooled_rates(e, bags, chunk))
    assert not got[counts == 0].any() and (got[counts > 0] > 0).any()


@pytest.mark.parametrize("c_block", [UniVCG.C_BLOCK, 2])
def test_round_rates_are_the_csr_mean_product_bit_for_bit(monkeypatch, c_block):
    # a fitting round's firing rates feed the stumps: counted, they must be the CSR product's floats exactly
    from lfabench import Bags

    rng = np.random.default_rng(3)
    counts = np.array([30, 0, 7, 1, 30, 13, 29, 2, 0, 30, 11, 30])        # empty images, one-descriptor images
    bags = Bags(rng.normal(0.2, 1.0, (counts.sum(), 5)), np.concatenate([[0], np.cumsum(counts)]))
    m, C, p = counts.size, 5, 6
    Xa = np.hstack([bags.descriptors, np.ones((bags.n_descriptors, 1))])
    P = bags.pooling_matrix(mean=True, dtype=np.float64)
    moments = np.stack([Xa[a:b].T @ Xa[a:b] / max(b - a, 1) for a, b in zip(bags.offsets[:-1], bags.offsets[1:])])
    W = rng.random((m, C))
    W /= W.sum(0)
    Z = np.where(rng.random((m, C)) > 0.6, 1.0, -1.0)
    reg = 1e-3 * np.eye(p)
    monkeypatch.setattr(UniVCG, "C_BLOCK", c_block)
    bits, rates = UniVCG()._round_bits(W, Z, moments, np.asarray(P @ Xa), reg, Xa, P)
    want = np.asarray(P @ (Xa @ bits.T > 0).astype(np.float64))
    np.testing.assert_array_equal(rates, want)
    assert 0 < rates.sum() and not rates[counts == 0].any()
    assert len({r for r in rates[counts == 30].ravel()}) > 3               # the rates are not all 0 or 1
