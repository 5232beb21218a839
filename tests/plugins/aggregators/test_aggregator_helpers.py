"""Private helpers of the aggregator plugins: normalisation, democratic weights, padding, fitted cache."""

import warnings

import numpy as np
import pytest

from lfabench.bags import Bags, EmptySampleWarning
from lfabench_plugins.aggregators.codebooks import cached_kmeans
from lfabench_plugins.aggregators.democratic import democratic_residual, democratic_weights
from lfabench_plugins.aggregators.normalization import intra_normalize, l2_normalize, power_l2, signed_power
from lfabench_plugins.aggregators.padding import padded_batches


# ------------------------------------------------------------ normalisation
def test_signed_power_hand_values():
    X = np.array([[4.0, -9.0, 0.0, 1.0]])
    np.testing.assert_allclose(signed_power(X, 0.5), [[2.0, -3.0, 0.0, 1.0]])
    np.testing.assert_allclose(signed_power(X, 1.0), X)
    np.testing.assert_allclose(signed_power(np.array([[-8.0]]), 1 / 3), [[-2.0]])
    with pytest.raises(ValueError, match="alpha"):
        signed_power(X, 0.0)


def test_l2_and_intra_normalize():
    X = np.array([[3.0, 4.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0], [1.0, 0.0, 0.0, 2.0]])
    L = l2_normalize(X)
    np.testing.assert_allclose(L[0], [0.6, 0.8, 0, 0])
    np.testing.assert_array_equal(L[1], 0.0)                     # zero row stays zero, finite
    I = intra_normalize(X, 2)
    np.testing.assert_allclose(I[2], [1.0, 0.0, 0.0, 1.0])
    np.testing.assert_allclose(I[0], [0.6, 0.8, 0.0, 0.0])
    np.testing.assert_allclose(power_l2(np.array([[4.0, 9.0]])), [[2 / np.sqrt(13), 3 / np.sqrt(13)]])
    with pytest.raises(ValueError, match="multiple"):
        intra_normalize(X, 3)


# -------------------------------------------------------------- democratic
def _random_psd_kernel(rng, n, dim=5):
    Phi = rng.normal(size=(n, dim))
    return np.maximum(Phi @ Phi.T, 0.0)


@pytest.mark.parametrize("gamma", [0.0, 0.3, 0.5])
def test_democratic_weights_solve_their_equation(gamma):
    """a_i * sum_j K_ij a_j = (sum_j K_ij)^gamma: each weighted descriptor's total similarity is the target."""
    rng = np.random.default_rng(1)
    K = _random_psd_kernel(rng, 12)
    a = democratic_weights(K, gamma=gamma, n_iter=500)
    assert np.all(a > 0)
    np.testing.assert_allclose(democratic_residual(K, a, gamma), 0.0, atol=1e-8)
    if gamma == 0.0:   # democratic: every weighted descriptor has the same total similarity (1) to the set
        total = a * (K @ a)
        np.testing.assert_allclose(total, total[0], rtol=1e-8)


def test_democratic_weights_hand_cases():
    # gamma = 1 is sum pooling: all weights one
    K = _random_psd_kernel(np.random.default_rng(2), 6)
    np.testing.assert_allclose(democratic_weights(K, gamma=1.0, n_iter=20), 1.0, rtol=1e-10)
    # n identical descriptors with similarity c: a = 1 / sqrt(n c)
    n, c = 4, 2.5
    np.testing.assert_allclose(democratic_weights(np.full((n, n), c), n_iter=50), 1 / np.sqrt(n * c), rtol=1e-10)
    # a descriptor repeated 3 times next to a lone one: democratic weights equalise their influence
    K = np.array([[1, 1, 1, 0], [1, 1, 1, 0], [1, 1, 1, 0], [0, 0, 0, 1.0]])
    a = democratic_weights(K, n_iter=50)
    np.testing.assert_allclose(a, [1 / np.sqrt(3)] * 3 + [1.0], rtol=1e-10)


def test_democratic_weights_batched_with_padding_matches_single():
    rng = np.random.default_rng(3)
    K1, K2 = _random_psd_kernel(rng, 5), _random_psd_kernel(rng, 3)
    Kb = np.zeros((2, 5, 5))
    Kb[0] = K1
    Kb[1, :3, :3] = K2
    Kb[1, 3:, :] = 7.0                                           # garbage in the padding must be ignored
    mask = np.array([[True] * 5, [True] * 3 + [False] * 2])
    a = democratic_weights(Kb, n_iter=30, mask=mask)
    np.testing.assert_allclose(a[0], democratic_weights(K1, n_iter=30))
    np.testing.assert_allclose(a[1, :3], democratic_weights(K2, n_iter=30))
    np.testing.assert_array_equal(a[1, 3:], 0.0)
    with pytest.raises(ValueError, match="non-negative"):
        democratic_weights(-np.ones((2, 2)))


# ----------------------------------------------------------------- padding
@pytest.mark.parametrize("same_count", [False, True])
def test_padded_batches_cover_every_sample_exactly(same_count):
    rng = np.random.default_rng(4)
    arrays = [rng.normal(size=(n, 3)).astype(np.float32) for n in (5, 0, 2, 9, 1, 5, 3, 5, 2, 0)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptySampleWarning)
        bags = Bags.from_list(arrays)
    seen, batches = [], list(padded_batches(bags, max_cells=12, same_count=same_count))
    for idx, Xp, mask in batches:
        assert Xp.shape[0] * Xp.shape[1] <= max(12, Xp.shape[1])
        if same_count:  # one count per batch, nothing padded (an empty sample: one zero row, masked)
            assert len({arrays[i].shape[0] for i in idx}) == 1 and Xp.shape[1] == max(arrays[idx[0]].shape[0], 1)
        for b, i in enumerate(idx):
            n = arrays[i].shape[0]
            assert mask[b].sum() == n
            np.testing.assert_array_equal(Xp[b, :n], arrays[i])
            np.testing.assert_array_equal(Xp[b, n:], 0.0)
        seen.extend(idx.tolist())
    assert sorted(seen) == list(range(len(arrays)))
    if same_count:  # counts 0, 1, 2, 3, 5 (three samples of 5 rows in 12 cells: two batches), 9
        assert [sorted(arrays[i].shape[0] for i in idx) for idx, _, _ in batches] == \
            [[0, 0], [1], [2, 2], [3], [5, 5], [5], [9]]


def test_cached_kmeans_equals_uncached_codebook(tmp_path):
    from lfabench_plugins.aggregators.codebooks import kmeans_codebook

    X = np.random.default_rng(5).normal(size=(500, 4)).astype(np.float32)
    ref = kmeans_codebook(X, 6, 300, 10, 3)
    first = cached_kmeans(X, 6, 300, 10, 3, cache=str(tmp_path))
    again = cached_kmeans(X, 6, 300, 10, 3, cache=str(tmp_path))
    np.testing.assert_array_equal(first, ref)
    np.testing.assert_array_equal(again, ref)
    assert len(list(tmp_path.glob("kmeans-*.npz"))) == 1


# ------------------------------------------------------------ seeded samples
def test_check_random_state_is_scikit_learns():
    """The same generators as scikit-learn's ``check_random_state`` (the samples every seeded fit draws)."""
    from sklearn.utils import check_random_state as reference

    from lfabench_plugins.aggregators.codebooks import check_random_state, seed_of, training_sample

    for seed in (0, 7, np.int64(2**32 - 1)):
        np.testing.assert_array_equal(check_random_state(seed).randint(0, 10**6, 50),
                                      reference(seed).randint(0, 10**6, 50))
    rs = np.random.RandomState(3)
    assert check_random_state(rs) is rs
    assert check_random_state(None) is reference(None) is check_random_state(np.random)
    with pytest.raises(ValueError, match="seed"):
        check_random_state("0")
    X = np.arange(200.0).reshape(100, 2)
    rows = np.sort(reference(5).choice(100, size=10, replace=False))
    np.testing.assert_array_equal(training_sample(X, 10, 5), X[rows])
    assert training_sample(X, 100, 5) is X
    assert seed_of(np.random.RandomState(9)) == reference(9).randint(0, 2**31 - 1)
