"""LC-KSVD2: conformance, Batch-OMP vs scikit-learn's orthogonal_mp, K-SVD descent, the codes it pools."""

import numpy as np
import pytest
from sklearn.linear_model import orthogonal_mp

from lfabench.testing import aggregator_checks, make_check_bags
from lfabench_plugins.aggregators.lcksvd import LCKSVD2, atoms_per_class, ridge_transform
from lfabench_plugins.aggregators.omp import batch_omp, ksvd, normalize_atoms

SMALL = LCKSVD2(n_atoms=6, sparsity=3, n_iter=3, init_iter=2, random_state=0)


@pytest.mark.parametrize("check", aggregator_checks(SMALL), ids=lambda c: c.__name__)
def test_lcksvd2_conformance(check):
    check()


@pytest.mark.parametrize("T", [1, 4, 10, 16])
def test_batch_omp_matches_sklearn(T):
    rng = np.random.default_rng(T)
    D = normalize_atoms(rng.normal(size=(30, 16)))
    Y = rng.normal(size=(200, 16))
    want = orthogonal_mp(D.T, Y.T, n_nonzero_coefs=T).T
    np.testing.assert_allclose(batch_omp(Y, D, T, chunk=64), want, rtol=1e-6, atol=1e-8)


def test_batch_omp_stops_where_sklearn_stops_on_represented_signals_and_dependent_atoms():
    """Signals that are atoms or pairs of atoms, duplicate atoms: scikit-learn stops early (with a warning);
    so must Batch-OMP, with the same codes."""
    rng = np.random.default_rng(0)
    atoms = normalize_atoms(rng.normal(size=(12, 6)))
    D = np.vstack([atoms, atoms[:3]])                               # exact duplicates
    pairs = rng.integers(0, 12, size=(20, 2))
    Y = np.vstack([3.0 * atoms[:8], atoms[pairs[:, 0]] + 2.0 * atoms[pairs[:, 1]], rng.normal(size=(20, 6)),
                   np.zeros((2, 6))])
    with pytest.warns(RuntimeWarning, match="prematurely"):
        want = orthogonal_mp(D.T, Y.T, n_nonzero_coefs=6).T
    got = batch_omp(Y, D, 6, chunk=16)

    def merged(codes):  # a duplicate pair ties exactly; rounding may pick either copy, in both implementations
        return np.hstack([codes[:, :3] + codes[:, 12:], codes[:, 3:12]])

    np.testing.assert_allclose(merged(got), merged(want), rtol=1e-6, atol=1e-8)
    assert (np.count_nonzero(got[:8], axis=1) == 1).all()           # an atom's multiple stops after one step


def test_ksvd_on_low_dimensional_signals_stays_finite():
    """More atoms than dimensions (LC-KSVD2's per-class start on 3x3 digits patches overflowed before)."""
    rng = np.random.default_rng(1)
    Y = np.clip(rng.normal(size=(400, 9)).round(), 0, None) * 4.0     # sparse, integer-valued 3x3 patches
    Y = Y[np.einsum("ij,ij->i", Y, Y) > 0]
    with np.errstate(over="raise", invalid="raise"):
        D, curve = ksvd(Y, Y[:45], 9, 5, progress=False)
    assert np.isfinite(D).all() and np.isfinite(curve).all()
    # 9 atoms per signal in 9 dimensions represent every signal exactly: the error is rounding only
    assert max(curve) < 1e-12 * np.mean(np.einsum("ij,ij->i", Y, Y))


def test_ksvd_objective_decreases():
    rng = np.random.default_rng(0)
    Y = rng.normal(size=(300, 12))
    _, curve = ksvd(Y, Y[:20], 3, 6, progress=False)
    assert all(b <= a + 1e-9 for a, b in zip(curve, curve[1:]))


def test_ksvd_replaces_dead_atoms_by_distinct_signals():
    # signals span e1..e3 only: atoms e4..e6 are never selected, so all three are dead in iteration 1
    rng = np.random.default_rng(1)
    Y = np.zeros((40, 6))
    Y[:, :3] = rng.normal(size=(40, 3))
    D, _ = ksvd(Y, np.eye(6), 2, 1, progress=False, muthresh=1.0, use_thresh=0)
    Yn = Y / np.linalg.norm(Y, axis=1, keepdims=True)
    for k in (3, 4, 5):
        assert np.isclose(np.max(np.abs(Yn @ D[k])), 1.0)        # a normalised training signal...
    G = np.abs(D[3:] @ D[3:].T) - np.eye(3)
    assert G.max() < 1 - 1e-9                                     # ...a different one for each dead atom


def test_ksvd_clears_rarely_used_atoms():
    # T = 1; only the last signal (exactly e3) uses atom e3: fewer than use_thresh = 4 users
    rng = np.random.default_rng(2)
    Y = np.vstack([np.c_[rng.normal(size=(30, 2)), 0.01 * rng.normal(size=(30, 1))], [[0.0, 0.0, 1.0]]])
    kept, _ = ksvd(Y, np.eye(3), 1, 1, progress=False, muthresh=1.0, use_thresh=0)
    np.testing.assert_allclose(np.abs(kept[2]), [0.0, 0.0, 1.0], atol=1e-12)
    cleared, _ = ksvd(Y, np.eye(3), 1, 1, progress=False)
    assert not np.allclose(np.abs(cleared[2]), [0.0, 0.0, 1.0])
    Yn = Y / np.linalg.norm(Y, axis=1, keepdims=True)
    assert np.isclose(np.max(np.abs(Yn @ cleared[2])), 1.0)


def test_transform_is_max_pooled_omp_codes():
    bags, y = make_check_bags()
    e = LCKSVD2(n_atoms=6, sparsity=3, n_iter=2, init_iter=2, random_state=0).fit(bags, y)
    X = bags.descriptors / np.linalg.norm(bags.descriptors, axis=1, keepdims=True)
    codes = np.abs(orthogonal_mp(e.dictionary_.T, X.T.astype(np.float64), n_nonzero_coefs=3).T)
    pooled = np.stack([codes[a:b].max(0) for a, b in zip(bags.offsets[:-1], bags.offsets[1:])])
    pooled /= np.linalg.norm(pooled, axis=1, keepdims=True)
    np.testing.assert_allclose(e.transform(bags), pooled, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(e.dictionary_, axis=1), 1.0)
    assert len(e.record_info()["training_curve"]) == 2


def test_helpers_and_validation():
    assert atoms_per_class(7, 3).tolist() == [3, 2, 2]
    rng = np.random.default_rng(0)
    X, Q = rng.normal(size=(50, 4)), rng.normal(size=(50, 3))
    M = ridge_transform(X, Q)
    np.testing.assert_allclose((X.T @ X + np.eye(4)) @ M, X.T @ Q)
    bags, y = make_check_bags()
    with pytest.raises(ValueError, match="sparsity"):
        LCKSVD2(n_atoms=6, sparsity=0).fit(bags, y)


def test_sparsity_above_the_descriptor_dimension_acts_as_the_dimension():
    # 8-D descriptors: no code has more than 8 non-zeros, in the stacked K-SVD (17-D signals here) as at encoding
    bags, y = make_check_bags()
    big = LCKSVD2(n_atoms=6, sparsity=30, n_iter=2, init_iter=2, random_state=0).fit(bags, y)
    exact = LCKSVD2(n_atoms=6, sparsity=bags.dim, n_iter=2, init_iter=2, random_state=0).fit(bags, y)
    assert big.sparsity_ == exact.sparsity_ == bags.dim == big.record_info()["sparsity"]
    np.testing.assert_array_equal(big.dictionary_, exact.dictionary_)
    np.testing.assert_array_equal(big.transform(bags), exact.transform(bags))
