import numpy as np
import pytest

from lfabench import Bags, get_plugin
from lfabench.testing import make_check_bags
from lfabench_plugins.aggregators.codebooks import kmeans_codebook

BoW = get_plugin("aggregator", "bow")


def _direct_counts(bags, codebook):
    """Per-sample loop with brute-force nearest centre: the independent reference."""
    out = np.zeros((bags.n_samples, codebook.shape[0]))
    for i, X in enumerate(bags):
        for x in X:
            out[i, np.argmin(((codebook - x) ** 2).sum(1))] += 1
    return out


def test_histograms_match_direct_computation():
    bags, _ = make_check_bags()
    bow = BoW(n_clusters=8, normalize="none", random_state=0).fit(bags)
    counts = _direct_counts(bags, bow.codebook_)
    np.testing.assert_array_equal(bow.transform(bags), counts)
    l1 = BoW(n_clusters=8, normalize="l1", random_state=0).fit(bags).transform(bags)
    np.testing.assert_allclose(l1, counts / counts.sum(1, keepdims=True), rtol=1e-6)


def test_tfidf_weights_and_l2():
    bags, _ = make_check_bags()
    bow = BoW(n_clusters=8, normalize="tfidf", random_state=0).fit(bags)
    counts = _direct_counts(bags, bow.codebook_)
    idf = np.log(bags.n_samples / np.maximum((counts > 0).sum(0), 1))
    want = counts * idf
    want /= np.maximum(np.linalg.norm(want, axis=1, keepdims=True), 1e-12)
    np.testing.assert_allclose(bow.transform(bags), want, rtol=1e-5, atol=1e-7)


def test_kmeans_codebook_is_seeded_and_validates():
    X = np.random.default_rng(0).normal(size=(500, 4)).astype(np.float32)
    a = kmeans_codebook(X, 5, 10_000, 10, 3)
    np.testing.assert_array_equal(a, kmeans_codebook(X, 5, 10_000, 10, 3))
    assert not np.array_equal(a, kmeans_codebook(X, 5, 10_000, 10, 4))
    with pytest.raises(ValueError, match="at least n_clusters=600"):
        kmeans_codebook(X, 600, 10_000, 10, 0)
    with pytest.raises(ValueError, match="normalize must be"):
        BoW(n_clusters=2, normalize="l3").fit(Bags(X, [0, 250, 500]))
