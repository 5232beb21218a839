"""The batched lasso of the SC aggregator (``lasso.py``, ``lasso_dictionary.py``) against scikit-learn's
coordinate descent (``sparse_encode(algorithm="lasso_cd")``), a hand-computed case and its invariants."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
from sklearn.decomposition import MiniBatchDictionaryLearning, sparse_encode
from sklearn.exceptions import ConvergenceWarning

from lfabench.bags import Bags
from lfabench_plugins.aggregators import lasso as lasso_mod
from lfabench_plugins.aggregators.lasso import LassoStats, lasso_codes, lasso_duality_gap, lasso_objective
from lfabench_plugins.aggregators.lasso_dictionary import HomotopyDictionaryLearning
from lfabench_plugins.aggregators.sc import SparseCoding

TOL = 1e-8  # the duality-gap bound of both solvers, relative to ||x||^2


def correlated_problem(n=600, d=40, K=64, seed=0):
    """Non-negative unit descriptors and unit atoms sharing a common direction (as DAISY's do): an
    ill-conditioned Gram matrix, the case where coordinate descent is slow."""
    rng = np.random.default_rng(seed)
    base = np.abs(rng.normal(size=d))
    D = np.abs(rng.normal(size=(K, d))) + 2 * base
    D /= np.linalg.norm(D, axis=1, keepdims=True)
    X = np.abs(rng.normal(size=(n, d))) + base
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X, D


def test_orthonormal_dictionary_codes_are_soft_thresholds():
    # with D D^T = I the lasso separates: u_k = sign(c_k) max(|c_k| - alpha, 0), c = D x (u_k = max(c_k - alpha,
    # 0) for non-negative codes)
    rng = np.random.default_rng(1)
    Q, _ = np.linalg.qr(rng.normal(size=(12, 12)))
    D = Q[:8]                                               # 8 orthonormal atoms in R^12
    X = rng.normal(size=(50, 12))
    C = X @ D.T
    alpha = 0.4
    np.testing.assert_allclose(lasso_codes(X, D, alpha), np.sign(C) * np.maximum(np.abs(C) - alpha, 0), atol=1e-12)
    np.testing.assert_allclose(lasso_codes(X, D, alpha, positive=True), np.maximum(C - alpha, 0), atol=1e-12)
    # a descriptor whose correlations all stay under alpha codes to exactly zero, as does the zero descriptor
    small = np.vstack([0.1 * D[0], np.zeros(12)])
    np.testing.assert_array_equal(lasso_codes(small, D, alpha), 0.0)


@pytest.mark.parametrize("positive", [False, True])
def test_codes_match_sparse_encode_on_a_correlated_dictionary(positive):
    X, D = correlated_problem()
    alpha = 0.05
    stats = LassoStats()
    U = lasso_codes(X, D, alpha, positive=positive, block=256, stats=stats)        # several blocks
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref = sparse_encode(X, D, algorithm="lasso_cd", alpha=alpha, positive=positive)
    assert stats.n_rows == len(X) and stats.n_exact == len(X) and stats.n_fallback == 0
    xx = np.einsum("ij,ij->i", X, X)
    assert (lasso_duality_gap(X, D, U, alpha, positive) <= TOL * xx).all()
    # never above the reference's objective (beyond the shared tolerance), and the same codes where it converged
    P, P_ref = lasso_objective(X, D, U, alpha), lasso_objective(X, D, ref, alpha)
    assert (P <= P_ref + TOL * xx).all()
    converged = lasso_duality_gap(X, D, ref, alpha, positive) <= TOL * xx
    assert converged.mean() > 0.5
    np.testing.assert_allclose(U[converged], ref[converged], atol=1e-5)
    if positive:
        assert (U >= 0).all()
    assert (U != 0).sum(axis=1).mean() > 2                  # a real sparse-coding regime, not all zeros


def test_the_gap_is_the_reference_gap():
    # lasso_duality_gap against scikit-learn's own gap: Lasso(alpha / d) reports dual_gap_ of P / d
    from sklearn.linear_model import Lasso

    X, D = correlated_problem(n=5)
    alpha, d = 0.05, X.shape[1]
    for x in X:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            fit = Lasso(alpha=alpha / d, fit_intercept=False, max_iter=7, tol=0.0).fit(D.T, x)  # stopped early
        gap = lasso_duality_gap(x[None], D, fit.coef_[None], alpha)[0]
        assert gap > 1e-6                                     # a point away from the optimum: a real check
        np.testing.assert_allclose(gap, fit.dual_gap_ * d, rtol=1e-6, atol=1e-12)


def test_rows_the_path_cannot_settle_go_to_sparse_encode(monkeypatch):
    X, D = correlated_problem(n=40)
    real_homotopy = lasso_mod._homotopy

    def failing(C, G, alpha, positive, max_steps):
        S, sign, failed = real_homotopy(C, G, alpha, positive, max_steps)
        failed[::2] = True
        return S, sign, failed

    monkeypatch.setattr(lasso_mod, "_homotopy", failing)
    stats = LassoStats()
    U = lasso_codes(X, D, 0.05, stats=stats)
    assert stats.n_fallback == 20 and stats.n_exact == 20
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref = sparse_encode(X, D, algorithm="lasso_cd", alpha=0.05)
    # the fallback is coordinate descent warm-started from the row's best code: a descent method, so
    # never above the reference started from zero; where the reference converged, the same codes
    assert (lasso_objective(X, D, U, 0.05) <= lasso_objective(X, D, ref, 0.05) + TOL).all()
    converged = lasso_duality_gap(X, D, ref, 0.05) <= TOL
    np.testing.assert_allclose(U[converged], ref[converged], atol=1e-5)


def test_lasso_codes_reject_bad_input():
    X, D = correlated_problem(n=3)
    with pytest.raises(ValueError, match="alpha"):
        lasso_codes(X, D, 0.0)
    with pytest.raises(ValueError, match="columns"):
        lasso_codes(X[:, :5], D, 0.1)
    with pytest.raises(ValueError, match="path must be one of"):
        lasso_codes(X, D, 0.1, path="numpy")


@pytest.mark.parametrize("path, used, unused", [("compiled", "_homotopy", "_lockstep_homotopy"),
                                                ("lockstep", "_lockstep_homotopy", "_homotopy")])
def test_the_path_parameter_chooses_where_every_row_runs(monkeypatch, path, used, unused):
    X, D = correlated_problem(n=300)
    reference = lasso_codes(X, D, 0.05, block=128)        # the same blocks: the same products X D^T
    calls = []
    real = getattr(lasso_mod, used)

    def counting(C, *args):
        calls.append(len(C))
        return real(C, *args)

    def refused(*args):
        raise AssertionError(f"path={path!r} ran {unused}")

    monkeypatch.setattr(lasso_mod, used, counting)
    if path == "lockstep":                  # the compiled path calls the lock-step form for its close rows
        monkeypatch.setattr(lasso_mod, unused, refused)
    U = lasso_codes(X, D, 0.05, block=128, path=path)
    assert calls == [128, 128, 44]           # every block, every row
    # away from near-ties the two find the same supports, and the codes are solved from them the same way
    assert np.array_equal(U, reference)


def recorded_paths(monkeypatch, *modules) -> list[str]:
    """The ``path`` of every :func:`lasso_codes` call made through ``modules`` (each one's ``lasso_codes`` wrapped)."""
    paths = []
    real = lasso_mod.lasso_codes

    def recording(*args, **kwargs):
        paths.append(kwargs["path"])
        return real(*args, **kwargs)

    for module in modules:
        monkeypatch.setattr(module, "lasso_codes", recording)
    return paths


def test_sc_runs_its_homotopy_path_in_both_steps_and_records_without_it_reproduce_in_lockstep(monkeypatch):
    from lfabench.reproduce import with_introduced_params

    import lfabench_plugins.aggregators.lasso_dictionary as ld
    import lfabench_plugins.aggregators.sc as sc_mod

    X, _ = correlated_problem(n=400, d=40, seed=5)
    bags = Bags(X, np.arange(0, 401, 20))
    paths = recorded_paths(monkeypatch, ld, sc_mod)
    features = {}
    for path in ("compiled", "lockstep"):
        paths.clear()
        est = SparseCoding(n_atoms=16, alpha=0.05, dict_iter=1, batch_size=100, homotopy_path=path, random_state=0)
        features[path] = est.fit(bags).transform(bags)
        assert paths and set(paths) == {path}          # the dictionary's mini-batches and the image codes
    assert features["compiled"].shape == features["lockstep"].shape == (20, 16)
    # a record written before the parameter reruns in lock-step; a record naming it keeps its value
    assert with_introduced_params({"aggregator": {"name": "sc", "params": {}}})["aggregator"]["params"] == \
        {"homotopy_path": "lockstep"}
    named = {"aggregator": {"name": "sc", "params": {"homotopy_path": "compiled"}}}
    assert with_introduced_params(named)["aggregator"]["params"] == {"homotopy_path": "compiled"}


def test_the_cached_dictionary_is_keyed_on_the_path_only_where_the_path_runs(tmp_path, monkeypatch):
    """Coordinate descent never runs the homotopy path: runs differing only in it share one cached dictionary."""
    X, _ = correlated_problem(n=400, d=40, seed=6)
    bags = Bags(X, np.arange(0, 401, 20))
    common = {"n_atoms": 16, "alpha": 0.05, "dict_iter": 1, "batch_size": 100, "random_state": 0}
    uncached = SparseCoding(lasso="cd", **common).fit(bags).dictionary_
    for lasso, files in (("cd", 1), ("homotopy", 3)):  # one file for cd, then one per path
        for path in ("compiled", "lockstep"):
            SparseCoding(lasso=lasso, homotopy_path=path, cache=str(tmp_path), **common).fit(bags)
        assert len(list(tmp_path.glob("sc-dictionary-*.npz"))) == files
    monkeypatch.setattr(MiniBatchDictionaryLearning, "fit", lambda *args: pytest.fail("the cd dictionary was refitted"))
    cached = SparseCoding(lasso="cd", homotopy_path="lockstep", cache=str(tmp_path), **common).fit(bags).dictionary_
    np.testing.assert_array_equal(cached, uncached)


DETERMINISM = """
import hashlib, sys
import numpy as np
sys.path.insert(0, {tests!r})
from test_sc_lasso import correlated_problem
from lfabench_plugins.aggregators.lasso import lasso_codes
X, D = correlated_problem(n=3000, d=64, K=96, seed=3)
print(hashlib.sha256(lasso_codes(X, D, 0.05, block=1024).tobytes()).hexdigest())
"""


@pytest.mark.slow  # fits at several thread counts
def test_codes_are_bit_identical_across_thread_counts():
    script = DETERMINISM.format(tests=os.path.dirname(__file__))
    digests = []
    for threads in ("1", "2"):
        env = dict(os.environ, OMP_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads, MKL_NUM_THREADS=threads)
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        digests.append(out.stdout.strip())
    assert digests[0] == digests[1]
    assert len(digests[0]) == len(hashlib.sha256().hexdigest())


def test_dictionary_learning_uses_the_homotopy_and_matches_scikit_learn(monkeypatch):
    X, _ = correlated_problem(n=512, d=40, seed=4)
    params = dict(n_components=24, alpha=0.05, batch_size=128, max_iter=2, fit_algorithm="cd", random_state=0)
    calls = []
    real = lasso_mod.lasso_codes

    def counting(*args, **kwargs):
        calls.append(len(args[0]))
        return real(*args, **kwargs)

    import lfabench_plugins.aggregators.lasso_dictionary as ld

    monkeypatch.setattr(ld, "lasso_codes", counting)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ours = HomotopyDictionaryLearning(**params).fit(X)
        ref = MiniBatchDictionaryLearning(**params).fit(X)
    assert calls and set(calls) == {128}                   # every mini-batch coded by the homotopy
    assert ours.n_steps_ == ref.n_steps_
    np.testing.assert_allclose(ours.components_, ref.components_, atol=1e-4)


def test_dictionary_learning_homotopy_path_is_a_parameter_that_clone_carries(monkeypatch):
    from sklearn.base import clone

    X, _ = correlated_problem(n=256, d=40, seed=6)
    learner = HomotopyDictionaryLearning(n_components=12, alpha=0.05, batch_size=128, max_iter=1, fit_algorithm="cd",
                                         random_state=0, homotopy_path="lockstep")
    assert learner.get_params()["homotopy_path"] == "lockstep"
    # every other parameter is scikit-learn's, with its defaults
    reference = MiniBatchDictionaryLearning().get_params()
    assert {k: v for k, v in HomotopyDictionaryLearning().get_params().items() if k in reference} == reference
    import lfabench_plugins.aggregators.lasso_dictionary as ld

    paths = recorded_paths(monkeypatch, ld)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        copy = clone(learner).fit(X)
    assert copy.homotopy_path == "lockstep" and paths and set(paths) == {"lockstep"}
    with pytest.raises(ValueError, match="homotopy_path"):
        HomotopyDictionaryLearning(n_components=4, fit_algorithm="cd", homotopy_path="numpy").fit(X)


# ------------------------------------------------------------------ real data: Fifteen Scene DAISY
@pytest.fixture(scope="module")
def scene15_daisy(shared_data):
    """DAISY (plugin defaults) of one image per Fifteen Scene class (about 2,000 descriptors)."""
    from lfabench.registry import get_plugin

    dataset = get_plugin("dataset", "scene15")(root=str(shared_data / "scene15"))
    labels = np.asarray(dataset.labels)
    picks = np.concatenate([np.flatnonzero(labels == c)[:1] for c in np.unique(labels)])
    daisy = get_plugin("descriptor", "daisy")()
    descs = [daisy.extract(dataset.load_image(int(i)))[0] for i in picks]
    bags = Bags(np.concatenate(descs), np.concatenate(([0], np.cumsum([len(x) for x in descs]))))
    return bags, labels[picks]


@pytest.mark.slow  # a real-data fit
def test_codes_match_sparse_encode_on_real_daisy(scene15_daisy):
    bags, _ = scene15_daisy
    # the plugin's defaults (K = 256 atoms, alpha = 0.15), fewer passes of the dictionary learning
    sc = SparseCoding(dict_iter=2, random_state=0).fit(bags)
    X = sc._prepare(bags.descriptors)[np.random.default_rng(0).choice(bags.n_descriptors, 300, replace=False)]
    D, alpha = sc.dictionary_, sc.alpha
    U = lasso_codes(X, D, alpha)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ref = sparse_encode(X, D, algorithm="lasso_cd", alpha=alpha, max_iter=1000)
    gap, gap_ref = lasso_duality_gap(X, D, U, alpha), lasso_duality_gap(X, D, ref, alpha)
    assert gap.max() <= TOL                                   # unit descriptors: ||x||^2 = 1
    P, P_ref = lasso_objective(X, D, U, alpha), lasso_objective(X, D, ref, alpha)
    assert (P <= P_ref + TOL).all()
    assert (P_ref <= P + gap_ref + 1e-12).all()               # the reference's certificate, read the other way
    converged = gap_ref <= TOL
    assert converged.mean() > 0.5
    np.testing.assert_allclose(U[converged], ref[converged], atol=1e-5)
    np.testing.assert_array_equal(U[converged] != 0, ref[converged] != 0)


@pytest.mark.slow  # a real-data fit
def test_sc_plugin_solvers_agree_on_real_daisy(scene15_daisy):
    bags, _ = scene15_daisy
    sc = SparseCoding(dict_iter=1, random_state=0).fit(bags)
    test = bags.subset(np.arange(4))
    fast = sc.transform(test)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        slow = sc.set_params(lasso="cd").transform(test)
    # max pooling of codes that agree to the reference's own convergence (~1e-3 where it stops at max_iter)
    np.testing.assert_allclose(fast, slow, atol=5e-3)
    with pytest.raises(ValueError, match="lasso"):
        sc.set_params(lasso="lars").transform(test)
