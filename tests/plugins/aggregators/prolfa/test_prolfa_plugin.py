"""The prolfa / semi_prolfa aggregators: reference parity on moon.mat, invariants, degenerate inputs."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from lfabench import Bags, get_plugin
from lfabench.testing import aggregator_checks
from lfabench_plugins.aggregators.prolfa import SolverOptions, normalize_descriptors
from lfabench_plugins.aggregators.prolfa.plugin import ProLFA, SemiProLFA

from conftest import shared_data_dir


def moon():
    root = shared_data_dir()
    path = None if root is None else root / "prolfa_demo" / "moon.mat"
    if path is None or not path.exists():
        pytest.skip("needs ../shared/data/prolfa_demo/moon.mat (the authors' demo data); not present here")
    import scipy.io

    X = scipy.io.loadmat(path)["X"].T                       # (200, 2): 10 samples x 20 consecutive points
    return Bags(X, np.arange(0, 201, 20)), np.repeat([0, 1], 5)


def demo_objective(bags, y, C, W, lambda1, lambda2):
    """The objective as the authors' demo reports it (prolfa_demo/README.md), explicit kernel, float64."""
    X = bags.descriptors.T
    A = bags.pooling_matrix().toarray() @ X.T @ X
    Y = np.eye(2)[y]
    return (np.sum((A @ C @ W - Y) ** 2) + np.sum((A @ C - Y @ W.T) ** 2)
            + lambda1 * np.sum(np.abs(C).sum(axis=1) ** 2) + lambda2 * np.sum(W ** 2))


# the demo solves the paper's plain simplex model: no support cap; 20 ADMM iterations per outer one (the
# plain-simplex solver relies on ADMM moves; with 5, seed 2 needs more than max_iter = 100 outer iterations)
DEMO = dict(n_prototypes=2, lambda1=2.0, lambda2=0.5, normalize="none", max_support=None,
            solver=SolverOptions(mu=0.1, max_iter_admm=20))


@pytest.mark.shared_data
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_moon_reference_parity(seed):
    bags, y = moon()
    t0 = time.perf_counter()
    est = ProLFA(random_state=seed, **DEMO).fit(bags, y)
    elapsed = time.perf_counter() - t0
    C = est.selection_.toarray()
    obj = demo_objective(bags, y, C, est.projection_, 2.0, 0.5)
    print(f"moon seed {seed}: demo objective {obj:.4f} (demo: 64.23), {est.n_iter_} iterations, {elapsed:.3f} s")
    assert obj <= 64.23
    assert not np.allclose(est.prototypes_[:, 0], est.prototypes_[:, 1], atol=1e-6)
    assert (C >= 0).all()
    np.testing.assert_allclose(C.sum(axis=0), 1.0, atol=1e-6)
    assert est.converged_
    assert np.all(np.diff(est.objective_history_) <= 1e-9 * np.abs(est.objective_history_[:-1]))


def labelled_bags(seed=0, m_per=6, classes=3, d=5):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=2.0, size=(classes, d))
    arrays, labels = [], []
    for c in range(classes):
        for _ in range(m_per):
            n = int(rng.integers(8, 15))
            arrays.append(np.vstack([centres[c] + rng.normal(size=(n // 2, d)),
                                     rng.normal(scale=2.0, size=(n - n // 2, d))]))
            labels.append(c)
    return Bags.from_list(arrays), np.asarray(labels)


@pytest.mark.parametrize("seed", range(4))
def test_objective_history_is_non_increasing_and_stops_on_relative_change(seed):
    bags, y = labelled_bags(seed)
    est = ProLFA(n_prototypes=6, lambda1=0.5, lambda2=0.5, random_state=seed, solver=SolverOptions(mu=1.0, tol=1e-4)).fit(bags, y)
    h = est.objective_history_
    assert h.size == est.n_iter_ + 1
    assert np.all(np.diff(h) <= 1e-10 * np.abs(h[:-1]))
    assert h[-1] < h[0]
    if est.converged_:
        assert abs(h[-2] - h[-1]) / abs(h[-2]) < 1e-4


def test_selection_is_column_stochastic_and_attributes_consistent():
    bags, y = labelled_bags(1)
    est = ProLFA(n_prototypes=5, lambda1=0.5, normalize="l2", random_state=0).fit(bags, y)
    C = est.selection_
    assert sp.issparse(C) and C.shape == (bags.n_descriptors, 5)
    Cd = C.toarray()
    assert Cd.min() >= 0
    np.testing.assert_allclose(Cd.sum(axis=0), 1.0, atol=1e-6)
    Xn = bags.descriptors / np.linalg.norm(bags.descriptors, axis=1, keepdims=True)
    np.testing.assert_allclose(est.prototypes_, Xn.T @ Cd, rtol=1e-5, atol=1e-6)
    assert est.projection_.shape == (5, 3)
    # prototype_indices_: (sample, descriptor) of each prototype's largest weight
    for j, (s, i) in enumerate(est.prototype_indices_):
        assert bags.offsets[s] + i == np.argmax(Cd[:, j])
        assert 0 <= i < bags.counts[s]


def test_transform_reproduces_training_aggregates():
    bags, y = labelled_bags(2)
    bags = bags.astype(np.float64)
    est = ProLFA(n_prototypes=4, normalize="l2", random_state=0).fit(bags, y)
    Xn = bags.descriptors / np.linalg.norm(bags.descriptors, axis=1, keepdims=True)
    # the paper's training representation xbar_i = G_i X^T X C (explicit kernel)
    A = bags.pooling_matrix().toarray() @ Xn @ Xn.T
    np.testing.assert_allclose(est.transform(bags), A @ est.selection_.toarray(), rtol=1e-9, atol=1e-12)


def test_normalize_none_uses_descriptors_exactly():
    bags, y = labelled_bags(3)
    bags = bags.astype(np.float64).with_descriptors(bags.descriptors.astype(np.float64) * 7.0)
    est = ProLFA(n_prototypes=3, normalize="none", random_state=0).fit(bags, y)
    np.testing.assert_allclose(est.prototypes_, bags.descriptors.T @ est.selection_.toarray(), rtol=1e-12)
    np.testing.assert_allclose(est.transform(bags), bags.means() @ est.prototypes_, rtol=1e-12)


@pytest.mark.parametrize("base", ["l2", "rootsift"])
def test_centered_normalization_uses_the_training_mean_at_fit_and_transform(base):
    """``*_centered``: prototypes are convex combinations of the normalised descriptors minus the
    *training* mean, and new bags are centred with that same stored mean (direct formulas)."""
    bags, y = labelled_bags(4)
    bags = bags.astype(np.float64).with_descriptors(np.abs(bags.descriptors.astype(np.float64)) + 0.1)
    est = ProLFA(n_prototypes=3, normalize=f"{base}_centered", random_state=0).fit(bags, y)
    Xn = normalize_descriptors(bags.descriptors, base)
    np.testing.assert_allclose(est.descriptor_mean_, Xn.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(est.prototypes_, (Xn - Xn.mean(axis=0)).T @ est.selection_.toarray(), atol=1e-12)
    rng = np.random.default_rng(3)
    new = Bags.from_list([rng.random((5, bags.dim)) + 0.1, rng.random((2, bags.dim)) + 0.1])
    Xnew = normalize_descriptors(new.descriptors, base) - Xn.mean(axis=0)
    expected = np.stack([Xnew[:5].mean(axis=0), Xnew[5:].mean(axis=0)]) @ est.prototypes_
    np.testing.assert_allclose(est.transform(new), expected, atol=1e-12)
    assert ProLFA(n_prototypes=3, normalize=base, random_state=0).fit(bags, y).descriptor_mean_ is None


def test_exclusivity_separates_supports():
    """Two classes, each with one highly discriminative descriptor: with lambda1 = 0 prototypes
    settle on the same descriptors; the overlap shrinks as lambda1 grows and large lambda1 separates
    the supports (moderate lambda1 trades some sharing for fit, as the model intends)."""
    rng = np.random.default_rng(5)
    d = 3
    arrays, labels = [], []
    for c in range(2):
        for _ in range(6):
            noise = rng.normal(scale=0.05, size=(6, d)) + np.array([0.0, 0.0, 1.0])
            # distinct copies (identical ones would be one candidate: lfabench_plugins.aggregators.prolfa.dedup)
            special = np.eye(d)[c] * 3.0 + rng.normal(scale=0.01, size=d)
            arrays.append(np.vstack([special, noise]))
            labels.append(c)
    bags, y = Bags.from_list(arrays).astype(np.float64), np.asarray(labels)
    overlap = {}
    for l1 in (0.0, 0.5, 50.0):
        est = ProLFA(n_prototypes=4, lambda1=l1, lambda2=0.1, normalize="none", random_state=0,
                     solver=SolverOptions(mu=10.0, max_iter=200)).fit(bags, y)
        C = est.selection_.toarray()
        overlap[l1] = float(sum(np.sum(C[:, i] * C[:, j]) for i in range(4) for j in range(4) if i != j))
    assert overlap[0.0] > 0.5          # prototypes coincide (share descriptors) without the penalty
    assert overlap[0.5] < overlap[0.0]
    assert overlap[50.0] < 0.1 * overlap[0.0]


def test_semi_prolfa_uses_unlabelled_descriptors_as_candidates():
    bags, y = labelled_bags(4)
    y_semi = y.copy()
    y_semi[::2] = -1
    est = SemiProLFA(n_prototypes=5, normalize="l2", random_state=0).fit(bags, y_semi)
    assert est.selection_.shape[0] == bags.n_descriptors
    # only the labelled samples enter the loss: same fit as supervised on labelled means + all candidates
    from lfabench_plugins.aggregators.prolfa import Problem, normalize_descriptors, objective

    Xn = normalize_descriptors(bags.descriptors, "l2")
    Mu = bags.with_descriptors(Xn).means()[y_semi != -1]
    pb = Problem.build(Xn, Mu, np.eye(3)[y[y_semi != -1]], est.lambda1, est.lambda2)
    assert objective(pb, est.selection_, est.projection_) == pytest.approx(est.objective_history_[-1], rel=1e-6)
    with pytest.raises(ValueError, match="unlabelled"):
        ProLFA(n_prototypes=5).fit(bags, y_semi)


def test_response_matrix_targets():
    bags, y = labelled_bags(6)
    Y = np.random.default_rng(0).normal(size=(bags.n_samples, 2))
    est = ProLFA(n_prototypes=4, random_state=0).fit(bags, Y)
    assert est.projection_.shape == (4, 2)


def test_degenerate_inputs():
    bags, y = labelled_bags(7)
    with pytest.raises(ValueError, match="n_prototypes"):
        ProLFA(n_prototypes=bags.n_descriptors + 1).fit(bags, y)
    with pytest.raises(ValueError, match="normalize"):
        ProLFA(normalize="l3").fit(bags, y)
    with pytest.raises(ValueError, match="mu"):
        ProLFA(n_prototypes=3, solver={"mu": 0}).fit(bags, y)
    with pytest.raises(ValueError, match="needs labels"):
        ProLFA(n_prototypes=3).fit(bags)
    # d̄ == N: every descriptor its own prototype at the start; still a valid fit
    small = bags.subset([0, 7])
    est = ProLFA(n_prototypes=small.n_descriptors, random_state=0).fit(small, y[[0, 7]])
    np.testing.assert_allclose(est.selection_.toarray().sum(axis=0), 1.0, atol=1e-6)
    # lambda2 = 0: the W-step stays well defined
    est = ProLFA(n_prototypes=6, lambda2=0.0, random_state=0).fit(bags, y)
    assert np.isfinite(est.projection_).all() and np.isfinite(est.objective_history_).all()
    # all-identical descriptors are one candidate: one prototype is all there is to select ...
    same = Bags(np.ones((40, 3)), np.arange(0, 41, 5))
    est = ProLFA(n_prototypes=1, normalize="l2", random_state=0).fit(same, np.arange(8) % 2)
    np.testing.assert_allclose(est.prototypes_, np.full((3, 1), 1 / np.sqrt(3)), atol=1e-12)
    # (centred, that one descriptor is the mean itself: the prototype is the zero vector)
    centred = ProLFA(n_prototypes=1, normalize="l2_centered", random_state=0).fit(same, np.arange(8) % 2)
    np.testing.assert_allclose(centred.prototypes_, 0.0, atol=1e-12)
    assert est.n_iter_ == 1 and est.converged_
    assert est.selection_.nnz == 1 and est.selection_[0, 0] == 1.0       # on the first occurrence
    # ... and asking for more is a clear error
    with pytest.raises(ValueError, match="distinct descriptors"):
        ProLFA(n_prototypes=3, random_state=0).fit(same, np.arange(8) % 2)
    # an empty sample: zero mean, aggregates to a zero vector
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        holed = Bags.from_list([np.ones((3, 3)), np.empty((0, 3)), np.eye(3)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = ProLFA(n_prototypes=2, random_state=0).fit(holed, [0, 1, 1])
    np.testing.assert_allclose(est.transform(holed)[1], 0.0)
    with pytest.raises(ValueError, match="rootsift"):
        ProLFA(n_prototypes=2, normalize="rootsift").fit(Bags(-np.ones((4, 2)), [0, 2, 4]), [0, 1])


def test_same_seed_same_fit_other_seed_other_start():
    bags, y = labelled_bags(8)
    a = ProLFA(n_prototypes=4, random_state=3).fit(bags, y)
    b = ProLFA(n_prototypes=4, random_state=3).fit(bags, y)
    np.testing.assert_array_equal(a.selection_.toarray(), b.selection_.toarray())


def test_registered_plugins():
    assert get_plugin("aggregator", "prolfa") is ProLFA
    assert get_plugin("aggregator", "semi_prolfa") is SemiProLFA
    assert SemiProLFA.semi_supervised and not ProLFA.semi_supervised


@pytest.mark.parametrize("check", aggregator_checks(ProLFA(n_prototypes=8, random_state=0)),
                         ids=lambda c: c.__name__)
def test_prolfa_conformance(check):
    check()


def _semi_checks():
    from lfabench.testing import make_check_bags

    bags, y = make_check_bags()
    y = y.copy()
    y[1::3] = -1
    return aggregator_checks(SemiProLFA(n_prototypes=8, random_state=0), bags, y)


@pytest.mark.parametrize("check", _semi_checks(), ids=lambda c: c.__name__)
def test_semi_prolfa_conformance(check):
    check()


def test_duplicate_descriptors_are_one_candidate():
    """Many exact copies (as flat patches give): the selection stays on distinct values, its support
    stays small, and the fit equals the fit on the data with the copies' values made unique."""
    rng = np.random.default_rng(11)
    d = 4
    base = rng.normal(size=(30, d))
    arrays, labels = [], []
    for c in range(3):
        for _ in range(8):
            own = base[rng.choice(30, size=5, replace=False)] + (c - 1)
            flat = np.tile(np.ones(d), (15, 1))              # 15 copies of one flat descriptor per sample
            arrays.append(np.vstack([own, flat, np.zeros((5, d))]))
            labels.append(c)
    bags, y = Bags.from_list(arrays), np.asarray(labels)
    est = ProLFA(n_prototypes=12, lambda1=0.5, lambda2=0.5, normalize="l2", random_state=0).fit(bags, y)
    S = est.selection_.tocsc()
    np.testing.assert_allclose(np.asarray(S.sum(axis=0)).ravel(), 1.0, atol=1e-6)
    X = bags.descriptors / np.maximum(np.linalg.norm(bags.descriptors, axis=1, keepdims=True), 1e-300)
    rows = np.unique(S.nonzero()[0])
    # every selected row is the first occurrence of its value
    for r in rows:
        assert np.flatnonzero((X == X[r]).all(axis=1))[0] == r
    assert est.fit_info_["n_distinct_descriptors"] == np.unique(X, axis=0).shape[0]
    assert S.nnz <= est.fit_info_["n_distinct_descriptors"] * 12
    # prototypes are convex combinations of the given descriptors: X^T C
    np.testing.assert_allclose(est.prototypes_, X.T @ S.toarray(), atol=1e-10)
    # the transform of the training bags reproduces mean-pooled descriptors times prototypes
    np.testing.assert_allclose(est.transform(bags), bags.with_descriptors(X).means() @ est.prototypes_,
                               atol=1e-10)


def test_distinct_rows_maps():
    from lfabench_plugins.aggregators.prolfa.dedup import distinct_rows, expand_rows

    X = np.array([[1, 2], [0, 0], [1, 2], [-0.0, 0], [3, 4], [0, 0]], dtype=np.float32)
    reps, inv = distinct_rows(X)
    np.testing.assert_array_equal(reps, [0, 1, 4])
    np.testing.assert_array_equal(inv, [0, 1, 0, 1, 2, 1])
    np.testing.assert_array_equal(X[reps[inv]], X)
    C = sp.csc_matrix(np.array([[0.5, 0.0], [0.5, 0.2], [0.0, 0.8]]))
    E = expand_rows(C, reps, 6).toarray()
    np.testing.assert_allclose(E[[0, 1, 4]], C.toarray())
    np.testing.assert_allclose(X.T @ E, X[reps].T @ C.toarray())


def _distinct_rows_by_sort(X):
    """The reference: one ``np.unique`` over whole rows as byte keys (``-0.0`` read as ``0.0``)."""
    rows = (np.ascontiguousarray(X) + 0).view(np.dtype((np.void, X.dtype.itemsize * X.shape[1]))).ravel()
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    order = np.argsort(first)
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return first[order], rank[inverse.ravel()]


@pytest.mark.parametrize("dtype, d", [(np.float32, 128), (np.float64, 9), (np.float32, 9), (np.float16, 3)])
def test_distinct_rows_by_hash_equal_the_sort_in_blocks_and_on_a_collision(monkeypatch, dtype, d):
    """Hashed row groups (checked byte-wise) give the sort's answer across row blocks; a forced collision
    (every hash equal) falls back to the sort; rows of odd byte length (float16 x 3) take the sort."""
    from lfabench_plugins.aggregators.prolfa import dedup

    rng = np.random.default_rng(d)
    X = rng.normal(size=(2000, d)).astype(dtype)
    X[500:600] = X[:100]
    X[1500:1510] = X[7]
    X[1800], X[1801] = 0.0, -0.0
    monkeypatch.setattr(dedup, "HASH_BLOCK_ROWS", 300)
    expected = _distinct_rows_by_sort(X)
    got = dedup.distinct_rows(X)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])
    assert expected[0].size == 2000 - 100 - 10 - 1
    monkeypatch.setattr(dedup, "_row_hashes", lambda X: np.zeros(X.shape[0], dtype=np.uint64))
    got = dedup.distinct_rows(X)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])


def test_centring_float32_descriptors_in_blocks_equals_the_whole_float64_difference(monkeypatch):
    from lfabench_plugins.aggregators.prolfa import normalize, sparsecols

    rng = np.random.default_rng(3)
    X = rng.normal(size=(1001, 7)).astype(np.float32)
    mean = X.mean(axis=0, dtype=np.float64)
    monkeypatch.setattr(sparsecols, "BLOCK_BYTES", 8 * 7 * 100)         # 100-row blocks
    assert sparsecols.block_rows(7) == 100
    out = normalize.center_descriptors(X, mean)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, (X - mean).astype(np.float32))


MAX_SUPPORT_PARAMS = dict(n_prototypes=6, lambda1=0.1, lambda2=0.01, normalize="none", random_state=0)


@pytest.fixture(scope="module")
def uncapped_fit():
    """The max_support tests' problem fitted on the plain simplex, once for both caps. 50 outer iterations already
    spread prototypes over more than 50 descriptors; the default 500 would only approach the exact optimum."""
    bags, y = labelled_bags(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # not converged at 50 iterations: not what these tests check
        return ProLFA(max_support=None, solver=SolverOptions(max_iter=50), **MAX_SUPPORT_PARAMS).fit(bags, y)


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 4])
def test_max_support_caps_every_prototype_and_keeps_J_monotone(k, uncapped_fit):
    """The k-sparse simplex option: <= k descriptors per prototype, columns on the simplex, J non-increasing,
    and the cap is active (without it the same problem's fit uses many more descriptors per prototype)."""
    bags, y = labelled_bags(4)
    est = ProLFA(max_support=k, **MAX_SUPPORT_PARAMS).fit(bags, y)
    C = est.selection_.toarray()
    assert (np.count_nonzero(C, axis=0) <= k).all()
    assert (C >= 0).all()
    np.testing.assert_allclose(C.sum(axis=0), 1.0, atol=1e-6)
    h = est.objective_history_
    assert np.all(np.diff(h) <= 1e-9 * np.abs(h[:-1]))
    assert h[-1] < 0.5 * h[0]
    assert est.converged_
    assert np.count_nonzero(uncapped_fit.selection_.toarray(), axis=0).max() > 4 * k


def test_max_support_rejects_bad_values():
    bags, y = labelled_bags(0)
    with pytest.raises(ValueError, match="max_support"):
        ProLFA(n_prototypes=3, max_support=0).fit(bags, y)


def test_search_every_reuses_rows_between_searches_and_stops_only_after_a_search():
    """``search_every = 3``: exact searches on iteration 1 and then at most 3 iterations apart (more
    often when a small change on reused rows must be confirmed); J stays non-increasing, columns stay on
    the simplex, and convergence is only declared on a searched iteration (cBCD's rule: the capped model)."""
    bags, y = labelled_bags(0, m_per=8, d=6)       # N = 268: each search keeps 4 of 268 rows per column
    params = dict(n_prototypes=6, lambda1=0.1, lambda2=0.01, normalize="none", random_state=0,
                  max_support=3)
    est = ProLFA(solver=SolverOptions(search_every=3, n_candidates=4), **params).fit(bags, y)
    searched = est.fit_info_["searched_iterations"]
    assert searched[0] == 1 and np.all(np.diff(searched) <= 3)
    assert len(searched) < est.n_iter_
    assert est.converged_ and searched[-1] == est.n_iter_
    h = est.objective_history_
    assert np.all(np.diff(h) <= 1e-9 * np.abs(h[:-1]))
    C = est.selection_.toarray()
    assert (C >= 0).all()
    np.testing.assert_allclose(C.sum(axis=0), 1.0, atol=1e-6)
    every = ProLFA(solver={"search_every": 1, "n_candidates": 4}, **params).fit(bags, y)
    assert every.fit_info_["searched_iterations"] == list(range(1, every.n_iter_ + 1))
    with pytest.raises(ValueError, match="search_every"):
        ProLFA(solver={"search_every": 0}, **params).fit(bags, y)


def test_feature_map_lifts_descriptors_and_transform_matches_explicit_formula():
    """With phi, prototypes are phi(X)^T C (C on the simplex, real descriptors) and the transform is
    mean_phi(new bag)^T P, with the same fitted phi and training mean."""
    bags, y = labelled_bags(0)
    est = ProLFA(n_prototypes=5, feature_map="nystroem_rbf", n_components=16, gamma=0.5, normalize="l2_centered",
                 random_state=0).fit(bags, y)
    Phi = est.feature_map_.transform(normalize_descriptors(bags.descriptors, "l2").astype(np.float64))
    np.testing.assert_allclose(est.descriptor_mean_, Phi.mean(axis=0), rtol=1e-6, atol=1e-8)
    C = est.selection_.toarray()
    assert (C >= 0).all()
    np.testing.assert_allclose(C.sum(axis=0), 1.0, atol=1e-6)
    np.testing.assert_allclose(est.prototypes_, (Phi - est.descriptor_mean_).T @ C, rtol=1e-5, atol=1e-8)
    Phi_c = Phi - est.descriptor_mean_
    means = np.stack([Phi_c[a:b].mean(axis=0) for a, b in zip(bags.offsets[:-1], bags.offsets[1:])])
    np.testing.assert_allclose(est.transform(bags), means @ est.prototypes_, rtol=1e-5, atol=1e-8)
    h = est.objective_history_
    assert np.all(np.diff(h) <= 1e-9 * np.abs(h[:-1]))


def test_linear_feature_map_is_the_paper_model_unchanged():
    bags, y = labelled_bags(1)
    a = ProLFA(n_prototypes=4, random_state=0).fit(bags, y)
    b = ProLFA(n_prototypes=4, feature_map="linear", n_components=3, random_state=0).fit(bags, y)
    assert a.feature_map_ is None
    np.testing.assert_array_equal(a.objective_history_, b.objective_history_)
    with pytest.raises(ValueError, match="feature_map"):
        ProLFA(feature_map="poly").fit(bags, y)
    with pytest.raises(ValueError, match="non-negative"):
        ProLFA(n_prototypes=3, feature_map="additive_chi2", normalize="none").fit(bags, y)


def test_semi_prolfa_warns_when_every_sample_is_labelled_and_then_equals_prolfa(caplog):
    bags, y = labelled_bags(2)
    with caplog.at_level("WARNING", logger="lfabench_plugins.aggregators.prolfa"):
        semi = SemiProLFA(n_prototypes=4, random_state=0).fit(bags, y)
    assert "equals ProLFA" in caplog.text and "labelled_fraction" in caplog.text
    plain = ProLFA(n_prototypes=4, random_state=0).fit(bags, y)
    np.testing.assert_array_equal(semi.objective_history_, plain.objective_history_)
    caplog.clear()
    with caplog.at_level("WARNING", logger="lfabench_plugins.aggregators.prolfa"):
        SemiProLFA(n_prototypes=4, random_state=0).fit(bags, np.where(np.arange(y.size) % 3 == 0, -1, y))
    assert "equals ProLFA" not in caplog.text


def test_scale_multiplies_descriptors_at_fit_and_transform():
    """scale = s: prototypes are s X^T C and the transform is (s mu)^T P, so the training transform is
    the fit's xbar; "auto" sets s = 1 / sqrt(r_mu r_x); s = 1 is the default model."""
    bags, y = labelled_bags(3)
    est = ProLFA(n_prototypes=5, normalize="l2_centered", scale="auto", random_state=0).fit(bags, y)
    X = normalize_descriptors(bags.descriptors, "l2").astype(np.float64) - est.descriptor_mean_
    Mu = np.stack([X[a:b].mean(axis=0) for a, b in zip(bags.offsets[:-1], bags.offsets[1:])])
    r_mu, r_x = np.sqrt(np.mean(np.sum(Mu * Mu, axis=1))), np.sqrt(np.mean(np.sum(X * X, axis=1)))
    np.testing.assert_allclose(est.scale_, 1.0 / np.sqrt(r_mu * r_x), rtol=1e-5)
    s = est.scale_
    np.testing.assert_allclose(est.prototypes_, s * X.T @ est.selection_.toarray(), rtol=1e-5, atol=1e-8)
    np.testing.assert_allclose(est.transform(bags), (s * Mu) @ est.prototypes_, rtol=1e-5, atol=1e-8)
    one = ProLFA(n_prototypes=5, scale=1.0, random_state=0).fit(bags, y)
    np.testing.assert_array_equal(one.objective_history_, ProLFA(n_prototypes=5, random_state=0).fit(bags, y).objective_history_)
    with pytest.raises(ValueError, match="scale"):
        ProLFA(scale="big").fit(bags, y)


@pytest.mark.parametrize("seed", [0, 1, 4])
def test_demo_lambda1_keeps_largest_weight_descriptors_distinct_on_unit_scale_data(seed):
    """The paper's diversity claim with the demo's lambda1 = 2 on a 750-descriptor problem of unit-scale
    (l2) descriptors, k = 4: no two prototypes share their largest-weight descriptor. (On raw-scale
    descriptors the fit terms dwarf lambda1 E and the minimiser of J does share: docs/prolfa-performance.md,
    "Diversity".) These fits run 57-264 outer iterations, so the claim is checked after real moves."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=2, size=(3, 8))
    bags = Bags.from_list([centres[i % 3] + rng.normal(size=(15, 8)) for i in range(50)]).astype(np.float64)
    y = np.arange(50) % 3
    est = ProLFA(n_prototypes=16, lambda1=2.0, lambda2=0.5, normalize="l2", max_support=4,
                 solver=SolverOptions(mu=0.1, max_iter_admm=20), random_state=seed).fit(bags, y)
    top = np.asarray(est.selection_.argmax(axis=0)).ravel()
    assert np.unique(top).size == 16


def test_the_run_record_gets_the_objective_per_iteration_as_training_curve():
    from lfabench import get_plugin
    from lfabench.testing import make_check_bags

    bags, y = make_check_bags()
    est = get_plugin("aggregator", "prolfa")(n_prototypes=4, random_state=0).fit(bags, y)
    info = est.record_info()
    assert info["training_curve"] == pytest.approx(list(est.objective_history_))
    assert len(info["training_curve"]) == est.n_iter_ + 1 and info["n_iter"] == est.n_iter_
    assert all(b <= a * (1 + 1e-9) for a, b in zip(info["training_curve"], info["training_curve"][1:]))
