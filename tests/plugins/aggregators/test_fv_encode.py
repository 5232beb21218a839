"""FV's batched statistics (``fisher_encode``: one stacked GEMM per padded batch) against the per-descriptor
formula, in float64, across chunk boundaries and with empty samples; with the occupancy sums in the GEMM, each
sample's row is its own, bit for bit, whatever samples share its padded batch."""

from __future__ import annotations

import numpy as np
import pytest

from lfabench.bags import Bags
from lfabench.gemm_rows import gemm_rows_are_own
from lfabench_plugins.aggregators.fv import FisherVector, fisher_encode


def _raw_fv_direct(x, w, mu, var):
    """One sample's raw FV [u; v] (VLFeat's formulas), descriptor by descriptor, component by component."""
    K, d = mu.shape
    u, v = np.zeros((K, d)), np.zeros((K, d))
    for xi in x:
        logp = np.log(w) - 0.5 * np.log(var).sum(axis=1) - 0.5 * (((xi - mu) ** 2) / var).sum(axis=1)
        q = np.exp(logp - logp.max())
        q /= q.sum()
        for k in range(K):
            z = (xi - mu[k]) / np.sqrt(var[k])
            u[k] += q[k] * z
            v[k] += q[k] * (z * z - 1)
    n = max(len(x), 1)
    return np.concatenate([(u / (n * np.sqrt(w)[:, None])).ravel(), (v / (n * np.sqrt(2 * w)[:, None])).ravel()])


@pytest.mark.parametrize("occupancy_sum", ["gemm", "pairwise"])
@pytest.mark.parametrize("chunk", [7, 50, 65_536])
def test_fisher_encode_matches_the_per_descriptor_formula(chunk, occupancy_sum):
    rng = np.random.default_rng(0)
    K, d = 5, 6
    counts = [4, 0, 11, 1, 23, 0, 9, 17]                     # empty samples, and samples longer than a chunk
    X = rng.normal(size=(sum(counts), d))
    w = rng.dirichlet(np.ones(K))
    mu = rng.normal(size=(K, d))
    var = rng.uniform(0.3, 2.0, size=(K, d))
    bags = Bags(X, np.concatenate(([0], np.cumsum(counts))))
    F = fisher_encode(bags, X, w, mu, var, chunk_descriptors=chunk, occupancy_sum=occupancy_sum)
    assert F.shape == (len(counts), 2 * K * d) and F.dtype == np.float64
    for i in range(len(counts)):
        np.testing.assert_allclose(F[i], _raw_fv_direct(bags[i], w, mu, var), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(F[[1, 5]], 0.0)


def _gmm(rng, K, d):
    return rng.dirichlet(np.ones(K)), rng.normal(size=(K, d)), rng.uniform(0.3, 2.0, size=(K, d))


def test_with_the_occupancy_sums_in_the_gemm_a_row_does_not_depend_on_its_company():
    """Each sample encoded alone and beside a wider one (padded to another width): the same bits with ``gemm``;
    numpy's pairwise sum over the padded axis (``pairwise``, what records made before ran) groups the sum by the
    padded width, so some rows' last bits move. On a BLAS whose products' rows depend on the others
    (``gemm_rows_are_own`` False) both are the same to rounding, and FV declares no independent rows there."""
    own = gemm_rows_are_own()
    assert FisherVector(occupancy_sum="gemm").independent_rows == own
    rng = np.random.default_rng(3)
    K, d = 64, 16
    w, mu, var = _gmm(rng, K, d)
    lengths = list(range(20, 140, 7))
    wide = rng.normal(size=(400, d))
    moved = 0
    for n in lengths:
        x = rng.normal(size=(n, d))
        alone = Bags(x, np.array([0, n]))
        together = Bags(np.concatenate([x, wide]), np.array([0, n, n + len(wide)]))
        for occupancy_sum in ("gemm", "pairwise"):
            a = fisher_encode(alone, alone.descriptors, w, mu, var, occupancy_sum=occupancy_sum)[0]
            b = fisher_encode(together, together.descriptors, w, mu, var, occupancy_sum=occupancy_sum)[0]
            if occupancy_sum == "gemm" and own:
                np.testing.assert_array_equal(a, b, err_msg=f"{n} descriptors: the row depends on its company")
            else:
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
                moved += not np.array_equal(a, b)
    assert moved > 0, "the pairwise sums never moved: this test no longer shows why the GEMM sums are needed"


def test_an_unknown_occupancy_sum_is_refused_by_name():
    rng = np.random.default_rng(0)
    w, mu, var = _gmm(rng, 2, 3)
    X = rng.normal(size=(4, 3))
    with pytest.raises(ValueError, match="occupancy_sum must be one of gemm, pairwise, got 'exact'"):
        fisher_encode(Bags(X, np.array([0, 4])), X, w, mu, var, occupancy_sum="exact")
