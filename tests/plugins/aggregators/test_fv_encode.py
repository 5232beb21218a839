"""FV's batched statistics (``fisher_encode``: one stacked GEMM per padded batch) against the per-descriptor
formula, in float64, across chunk boundaries and with empty samples."""

from __future__ import annotations

import numpy as np
import pytest

from lfabench.bags import Bags
from lfabench_plugins.aggregators.fv import fisher_encode


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


@pytest.mark.parametrize("chunk", [7, 50, 65_536])
def test_fisher_encode_matches_the_per_descriptor_formula(chunk):
    rng = np.random.default_rng(0)
    K, d = 5, 6
    counts = [4, 0, 11, 1, 23, 0, 9, 17]                     # empty samples, and samples longer than a chunk
    X = rng.normal(size=(sum(counts), d))
    w = rng.dirichlet(np.ones(K))
    mu = rng.normal(size=(K, d))
    var = rng.uniform(0.3, 2.0, size=(K, d))
    bags = Bags(X, np.concatenate(([0], np.cumsum(counts))))
    F = fisher_encode(bags, X, w, mu, var, chunk_descriptors=chunk)
    assert F.shape == (len(counts), 2 * K * d) and F.dtype == np.float64
    for i in range(len(counts)):
        np.testing.assert_allclose(F[i], _raw_fv_direct(bags[i], w, mu, var), rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(F[[1, 5]], 0.0)
