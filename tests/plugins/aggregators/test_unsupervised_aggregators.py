"""The unsupervised baselines: conformance, agreement with VLFeat / direct formulas, output dimensions."""

import warnings

import numpy as np
import pytest

from lfabench.bags import Bags, EmptySampleWarning
from lfabench.gemm_rows import gemm_rows_are_own
from lfabench.registry import get_plugin
from lfabench.testing import aggregator_checks, make_check_bags
from lfabench_plugins.aggregators.bow import BoW
from lfabench_plugins.aggregators.democratic import democratic_residual, democratic_weights
from lfabench_plugins.aggregators.dm import DiffusionOnManifold
from lfabench_plugins.aggregators.fv import FisherVector, gmm_posteriors
from lfabench_plugins.aggregators.gamma_democratic import GammaDemocratic, tensor_sketch
from lfabench_plugins.aggregators.normalization import l2_normalize, signed_power
from lfabench_plugins.aggregators.sc import SparseCoding
from lfabench_plugins.aggregators.temb import TriangulationEmbedding
from lfabench_plugins.aggregators.vlad import VLAD

# small settings that fit make_check_bags (24 samples, ~450 descriptors of dimension 8)
SMALL = {
    "bow": BoW(n_clusters=8, random_state=0),
    "vlad": VLAD(n_clusters=6, random_state=0),
    "fv": FisherVector(n_components=4, pca_components=6, gmm_iter=20, random_state=0),
    "sc": SparseCoding(n_atoms=10, alpha=0.1, dict_iter=3, random_state=0),
    "temb": TriangulationEmbedding(n_anchors=4, random_state=0),
    "dm": DiffusionOnManifold(n_clusters=10, n_neighbors=3, random_state=0),
    "gamma_democratic": GammaDemocratic(random_state=0),
    "gamma_democratic_sketch": GammaDemocratic(sketch_dim=32, random_state=0),
}

# The registered plugins run the battery in tests/core/testing/test_common_conformance.py; here only the
# settings that their defaults do not reach.
CHECKS = [(name, check) for name in ("gamma_democratic_sketch",) for check in aggregator_checks(SMALL[name])]


@pytest.mark.parametrize("name,check", CHECKS, ids=[f"{n}-{c.__name__}" for n, c in CHECKS])
def test_conformance(name, check):
    check()


@pytest.fixture(scope="module")
def data():
    return make_check_bags()


def _bags_with_empty(bags):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptySampleWarning)
        return Bags.concatenate([bags[:3], Bags(np.empty((0, bags.dim), bags.dtype), [0, 0]), bags[3:6]])


def test_registered_with_documented_output_dimensions(data):
    bags, y = data
    d = bags.dim
    expected = {"vlad": ({"n_clusters": 6}, 6 * d), "fv": ({"n_components": 4, "pca_components": 6}, 2 * 4 * 6),
                "sc": ({"n_atoms": 10}, 10), "temb": ({"n_anchors": 4}, (4 - 1) * d),
                "dm": ({"n_clusters": 10, "n_neighbors": 3}, 10),
                "gamma_democratic": ({}, d * (d + 1) // 2)}
    for name, (params, dim) in expected.items():
        est = get_plugin("aggregator", name)(random_state=0, **params)
        assert est.fit(bags, y).transform(bags).shape == (bags.n_samples, dim), name
    assert FisherVector(n_components=3, pca_components=None, random_state=0).fit(bags).transform(bags).shape[1] \
        == 2 * 3 * d
    assert TriangulationEmbedding(n_anchors=4, n_components=10, random_state=0).fit(bags).transform(bags).shape[1] == 10
    assert GammaDemocratic(sketch_dim=50).fit(bags).transform(bags).shape[1] == 50


# -------------------------------------------------------------------- VLAD
def _vlad_direct(x, centres, power, intra, l2):
    """One sample's VLAD by the textbook loop over its descriptors."""
    K, d = centres.shape
    v = np.zeros((K, d))
    for xi in x.astype(np.float64):
        k = int(np.argmin(((centres - xi) ** 2).sum(axis=1)))
        v[k] += xi - centres[k]
    v = np.sign(v) * np.abs(v) ** power
    if intra:
        v /= np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
    v = v.ravel()
    return v / max(np.linalg.norm(v), 1e-12) if l2 else v


@pytest.mark.parametrize("power,intra,l2", [(1.0, False, False), (1.0, False, True), (0.5, True, True),
                                           (0.5, False, True)])
def test_vlad_matches_direct_formula(data, power, intra, l2):
    bags, _ = data
    est = VLAD(n_clusters=5, power=power, intra_norm=intra, l2=l2, random_state=1).fit(bags)
    test = _bags_with_empty(bags)
    V = est.transform(test)
    for i in range(test.n_samples):
        np.testing.assert_allclose(V[i], _vlad_direct(test[i], est.codebook_.astype(np.float64), power, intra, l2),
                                   rtol=1e-5, atol=1e-5)


def test_vlad_matches_vlfeat(data):
    cyvlfeat_vlad = pytest.importorskip("cyvlfeat.vlad", reason="cyvlfeat (VLFeat bindings) not installed: "
                                                               "pip install cyvlfeat after apt install libvlfeat-dev")
    bags, _ = data
    for power, intra in ((1.0, False), (0.5, True), (0.5, False)):
        est = VLAD(n_clusters=5, power=power, intra_norm=intra, random_state=2).fit(bags)
        V = est.transform(bags)
        C = est.codebook_
        for i in range(6):
            x = np.ascontiguousarray(bags[i], dtype=np.float32)
            nn = np.argmin(((x[:, None, :] - C[None]) ** 2).sum(axis=2), axis=1)
            A = np.zeros((x.shape[0], C.shape[0]), np.float32)
            A[np.arange(x.shape[0]), nn] = 1.0
            ref = cyvlfeat_vlad.vlad(x, C, A, square_root=power == 0.5, normalize_components=intra)
            np.testing.assert_allclose(V[i], np.ravel(ref), rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------- FV
def _fv_direct(x, w, mu, var):
    """One sample's improved FV from the VLFeat documentation formulas, descriptor by descriptor."""
    K, d = mu.shape
    u = np.zeros((K, d))
    v = np.zeros((K, d))
    for xi in x:
        logp = np.array([np.log(w[k]) - 0.5 * np.log(var[k]).sum() - 0.5 * (((xi - mu[k]) ** 2) / var[k]).sum()
                         for k in range(K)])
        q = np.exp(logp - logp.max())
        q /= q.sum()
        for k in range(K):
            z = (xi - mu[k]) / np.sqrt(var[k])
            u[k] += q[k] * z
            v[k] += q[k] * (z * z - 1)
    n = max(len(x), 1)
    u /= n * np.sqrt(w)[:, None]
    v /= n * np.sqrt(2 * w)[:, None]
    f = np.concatenate([u.ravel(), v.ravel()])
    f = np.sign(f) * np.sqrt(np.abs(f))
    return f / max(np.linalg.norm(f), 1e-12)


def test_fv_matches_direct_formula(data):
    bags, _ = data
    est = FisherVector(n_components=4, pca_components=5, gmm_iter=30, random_state=3).fit(bags)
    test = _bags_with_empty(bags)
    F = est.transform(test)
    for i in range(test.n_samples):
        ref = _fv_direct(est.project(test[i]), est.weights_, est.means_, est.variances_)
        np.testing.assert_allclose(F[i], ref, rtol=1e-5, atol=1e-5)


def test_fv_posteriors_match_scikit_learn(data):
    bags, _ = data
    est = FisherVector(n_components=4, pca_components=None, gmm_iter=30, random_state=4).fit(bags)
    from sklearn.mixture import GaussianMixture

    gm = GaussianMixture(4, covariance_type="diag")
    gm.weights_, gm.means_, gm.covariances_ = est.weights_, est.means_, est.variances_
    gm.precisions_cholesky_ = 1 / np.sqrt(est.variances_)
    X = est.project(bags.descriptors)
    np.testing.assert_allclose(gmm_posteriors(X, est.weights_, est.means_, est.variances_), gm.predict_proba(X),
                               atol=1e-10)


def test_fv_matches_vlfeat(data):
    cyvlfeat_fisher = pytest.importorskip("cyvlfeat.fisher", reason="cyvlfeat (VLFeat bindings) not installed: "
                                                                   "pip install cyvlfeat after apt install libvlfeat-dev")
    bags, _ = data
    f32 = lambda a: np.ascontiguousarray(a, dtype=np.float32)  # noqa: E731
    for power, l2, flags in ((1.0, False, {}), (1.0, True, {"normalized": True}), (0.5, True, {"improved": True})):
        est = FisherVector(n_components=4, pca_components=6, gmm_iter=30, power=power, l2=l2,
                           random_state=5).fit(bags)
        F = est.transform(bags)
        for i in range(6):
            ref = np.ravel(cyvlfeat_fisher.fisher(f32(est.project(bags[i])), f32(est.means_), f32(est.variances_),
                                                  f32(est.weights_), **flags))
            if power == 0.5:
                # VLFeat works in float32: near-zero entries carry ~1e-8 rounding that the square root
                # magnifies, so compare the improved FV through its (well-conditioned) signed square
                F_i, ref = np.sign(F[i]) * F[i] ** 2, np.sign(ref) * ref ** 2
            else:
                F_i = F[i]
            np.testing.assert_allclose(F_i, ref, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------- SC
def test_sc_is_max_pooled_lasso_codes(data):
    bags, _ = data
    est = SparseCoding(n_atoms=10, alpha=0.1, dict_iter=3, chunk_descriptors=50, random_state=6).fit(bags)
    assert est.dictionary_.shape == (10, bags.dim)
    test = _bags_with_empty(bags)
    Z = est.transform(test)
    from sklearn.linear_model import Lasso

    for i in (0, 3, 5):
        x = test[i].astype(np.float64)
        x = x / np.linalg.norm(x, axis=1, keepdims=True)
        # sparse_encode's lasso_cd is Lasso on the dictionary with alpha / d (scikit-learn's scaling)
        codes = np.array([Lasso(alpha=0.1 / bags.dim, fit_intercept=False, max_iter=1000, tol=1e-8)
                          .fit(est.dictionary_.T, xi).coef_ for xi in x])
        z = np.abs(codes).max(axis=0) if len(x) else np.zeros(10)
        np.testing.assert_allclose(Z[i], z / max(np.linalg.norm(z), 1e-12), atol=1e-3)
    np.testing.assert_array_equal(Z[3], 0.0)
    assert (Z[[0, 1, 2, 4, 5]] > 0).any(axis=1).all()


# -------------------------------------------------------------------- temb
def test_temb_whitening_and_democratic_aggregation(data):
    bags, _ = data
    est = TriangulationEmbedding(n_anchors=4, sinkhorn_iter=10, random_state=7).fit(bags)
    d = bags.dim
    assert est.projection_.shape == (4 * d, 3 * d)
    # whitened: the embedded training descriptors have (near) identity covariance on the kept components
    Phi = est.embed(bags.descriptors).astype(np.float64)
    np.testing.assert_allclose(np.cov(Phi.T), np.eye(3 * d), atol=0.05)
    # psi_d for one sample, directly: clipped kernel, democratic weights, weighted sum
    test = _bags_with_empty(bags)
    Psi = est._aggregate(test)
    for i in range(test.n_samples):
        phi = est.embed(test[i]).astype(np.float64)
        if len(phi) == 0:
            np.testing.assert_array_equal(Psi[i], 0.0)
            continue
        K = np.maximum(phi @ phi.T, 0)
        a = democratic_weights(K, n_iter=10)
        np.testing.assert_allclose(Psi[i], a @ phi, rtol=1e-4, atol=1e-5 * np.abs(a @ phi).max())
    # with enough iterations, the weights satisfy the democratic equation
    phi = est.embed(bags[0]).astype(np.float64)
    K = np.maximum(phi @ phi.T, 0)
    np.testing.assert_allclose(democratic_residual(K, democratic_weights(K, n_iter=300)), 0.0, atol=1e-6)
    # RN rotation is orthogonal (preserves the aggregated vectors' geometry before the power law)
    np.testing.assert_allclose(est.rotation_.T @ est.rotation_, np.eye(3 * d), atol=1e-4)


@pytest.mark.parametrize("batches", ["by_count", "padded"])
def test_temb_transform_of_its_training_bags_reuses_fits_sums_bit_for_bit(data, monkeypatch, batches):
    bags, _ = data
    est = TriangulationEmbedding(n_anchors=4, random_state=3, batches=batches).fit(bags)
    Psi = est._aggregate(bags)
    expected = est._normalized(Psi)   # RN as transform applies it (by_count rotates in fixed-shape blocks)
    np.testing.assert_allclose(expected, l2_normalize(signed_power(Psi @ est.rotation_, est.power)), atol=1e-6)
    calls = []
    aggregate = est._aggregate
    monkeypatch.setattr(est, "_aggregate", lambda b, **kw: calls.append(b.n_samples) or aggregate(b, **kw))
    # a copy with the same content (the runner passes another Bags object than fit's) takes fit's sums
    same = Bags(bags.descriptors.copy(), bags.offsets.copy())
    np.testing.assert_array_equal(est.transform(same), expected)
    assert calls == []
    # once only (the sums are dropped), and other bags are embedded
    np.testing.assert_array_equal(est.transform(bags), expected)
    assert calls == [bags.n_samples]
    fresh = TriangulationEmbedding(n_anchors=4, random_state=3, batches=batches).fit(bags)
    other = bags.subset(np.arange(5))
    if batches == "by_count":  # each row its own
        np.testing.assert_array_equal(fresh.transform(other), expected[:5])
    else:
        np.testing.assert_allclose(fresh.transform(other), expected[:5], rtol=1e-5, atol=1e-6)  # other padding
    assert fresh._fit_aggregate is None
    assert np.array_equal(TriangulationEmbedding(n_anchors=4, random_state=3, batches=batches).fit_transform(bags),
                          expected)


def test_temb_unpadded_batches_give_each_image_its_own_row_and_the_padded_ones_the_same_vectors_to_rounding(data):
    """``batches="by_count"``: an image's row is the same bits alone (a single descriptor included), in any company
    and order, where the BLAS keeps a product's rows their own (``gemm_rows_are_own``; the same to rounding
    elsewhere); ``"padded"`` (earlier records) gives the same vectors up to float32 rounding."""
    bags, _ = data
    one = Bags(np.concatenate([bags.descriptors[:1], bags.descriptors]),
               np.concatenate([[0], bags.offsets + 1]))          # a first image of one descriptor
    est = TriangulationEmbedding(n_anchors=4, random_state=3).fit(one)
    assert est.independent_rows == gemm_rows_are_own() and not TriangulationEmbedding(batches="padded").independent_rows
    full = est.transform(one)
    for idx in ([0], [0, 7], [7, 0, 3], list(range(one.n_samples))[::-1]):
        if est.independent_rows:
            np.testing.assert_array_equal(est.transform(one.subset(np.array(idx))), full[idx])
        else:  # a BLAS whose products' rows depend on the others: the same rows to float32 rounding (as padded)
            np.testing.assert_allclose(est.transform(one.subset(np.array(idx))), full[idx], rtol=1e-4, atol=1e-5)
    padded = TriangulationEmbedding(n_anchors=4, random_state=3, batches="padded").fit(one)
    np.testing.assert_allclose(padded.transform(one), full, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="batches='sorted' must be one of 'by_count', 'padded'"):
        TriangulationEmbedding(n_anchors=4, batches="sorted").fit(one)


# ---------------------------------------------------------------------- DM
def test_dm_diffusion_matches_iterative_manifold_ranking(data):
    bags, _ = data
    est = DiffusionOnManifold(n_clusters=10, n_neighbors=3, alpha=0.8, power=1.0, random_state=8).fit(bags)
    S = est.affinity_
    np.testing.assert_allclose(S, S.T)
    assert np.all(np.linalg.eigvalsh(S) <= 1 + 1e-9)
    H = est.histograms(bags)
    F = est.transform(bags)
    for i in range(5):
        f = H[i].copy()
        for _ in range(500):                            # f <- alpha S f + (1 - alpha) h, to its fixed point
            f = 0.8 * S @ f + 0.2 * H[i]
        np.testing.assert_allclose(F[i], f / np.linalg.norm(f), rtol=1e-5, atol=1e-6)
    # alpha = 0 is plain (L2-normalised) BoW
    bow = DiffusionOnManifold(n_clusters=10, n_neighbors=3, alpha=0.0, power=1.0, random_state=8).fit(bags)
    Hb = bow.histograms(bags)
    np.testing.assert_allclose(bow.transform(bags), Hb / np.linalg.norm(Hb, axis=1, keepdims=True), rtol=1e-5)


# -------------------------------------------------------- gamma-democratic
def test_gamma_democratic_matches_direct_formula(data):
    bags, _ = data
    est = GammaDemocratic(gamma=0.5).fit(bags)
    test = _bags_with_empty(bags)
    G = est.transform(test)
    d = bags.dim
    iu = np.triu_indices(d)
    for i in range(test.n_samples):
        x = test[i].astype(np.float64)
        if len(x) == 0:
            np.testing.assert_array_equal(G[i], 0.0)
            continue
        K = (x @ x.T) ** 2
        a = democratic_weights(K, gamma=0.5, n_iter=10, damping=0.5)
        A = sum(ai * np.outer(xi, xi) for ai, xi in zip(a, x))
        v = np.where(iu[0] == iu[1], 1.0, np.sqrt(2)) * A[iu]
        v = np.sign(v) * np.sqrt(np.abs(v))
        np.testing.assert_allclose(G[i], v / np.linalg.norm(v), rtol=1e-5, atol=1e-6)
    # converged weights satisfy the gamma-democratic equation
    x = bags[0].astype(np.float64)
    K = (x @ x.T) ** 2
    np.testing.assert_allclose(democratic_residual(K, democratic_weights(K, gamma=0.5, n_iter=300), 0.5), 0.0,
                               atol=1e-6)
    # the upper-triangle layout preserves the Frobenius inner product
    a, b = np.outer(x[0], x[0]), np.outer(x[1], x[1])
    s = np.where(iu[0] == iu[1], 1.0, np.sqrt(2))
    np.testing.assert_allclose((s * a[iu]) @ (s * b[iu]), np.sum(a * b))


def test_tensor_sketch_approximates_the_second_order_kernel():
    rng = np.random.default_rng(9)
    d, D = 8, 8192
    X = rng.normal(size=(5, d))
    est = GammaDemocratic(sketch_dim=D, random_state=0).fit(Bags(X.astype(np.float32), [0, 5]))
    T = tensor_sketch(X, D=D, **est.sketch_)
    exact = (X @ X.T) ** 2
    assert np.abs(T @ T.T - exact).max() < 0.1 * exact.max()


@pytest.mark.parametrize("dataset", [{"name": "digits", "params": {"n_samples": 200}},
                                     {"name": "synthetic", "params": {}}])
def test_fv_defaults_work_on_the_embedded_datasets(tmp_path, dataset):
    """`lfabench run aggregator=fv` used to fail on both (pca_components 64 > d); the cap is recorded."""
    from lfabench.run import run_benchmark

    descriptor = "patches" if dataset["name"] == "digits" else "native"
    cfg = {"dataset": dataset, "descriptor": {"name": descriptor, "params": {}},
           "aggregator": {"name": "fv", "params": {"random_state": 0}}, "evaluator": {"name": "knn", "params": {}},
           "seed": 0, "cache": False}
    rec = run_benchmark(cfg, tmp_path)
    d = rec["descriptors"]["dim"]
    assert rec["status"] == "ok"
    assert rec["fit_info"]["pca_components_used"] == d and rec["fit_info"]["pca_capped_at_dim"] is True


@pytest.mark.parametrize("lasso", ["cd", "homotopy"])
def test_sc_reports_lasso_convergence_warnings_once(monkeypatch, lasso):
    import sklearn.decomposition
    from sklearn.exceptions import ConvergenceWarning

    real = sklearn.decomposition.sparse_encode

    def noisy(*args, **kwargs):
        for _ in range(50):
            warnings.warn("Objective did not converge", ConvergenceWarning)
        return real(*args, **kwargs)

    bags, _ = make_check_bags()
    sc = SparseCoding(n_atoms=6, dict_iter=2, lasso=lasso, random_state=0).fit(bags)
    monkeypatch.setattr(sklearn.decomposition, "sparse_encode", noisy)
    if lasso == "homotopy":                               # its fallback is the only caller of sparse_encode
        from lfabench_plugins.aggregators import lasso as lasso_mod

        real_homotopy = lasso_mod._homotopy

        def failing(*args):
            S, sign, failed = real_homotopy(*args)
            return S, sign, np.ones_like(failed)

        monkeypatch.setattr(lasso_mod, "_homotopy", failing)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        sc.transform(bags)
    conv = [w for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(conv) == 1 and "reported once" in str(conv[0].message)
    assert sc.convergence_warnings_ == 50
