"""Improved Fisher Vector (Perronnin, Sánchez & Mensink, ECCV 2010; Sánchez et al., IJCV 2013).

A diagonal-covariance GMM ``(w_k, mu_k, sigma_k^2)``, ``k = 1..K``, is fitted by EM
(scikit-learn's ``GaussianMixture(covariance_type="diag")`` algorithm, in float32 GEMMs:
:mod:`.gmm`; ``em="sklearn"`` runs scikit-learn's own), initialised from a
seeded faiss k-means, on a seeded sample of the fitted descriptors, optionally
after PCA (Perronnin et al. reduce SIFT to 64 dimensions first). For a sample
with ``N`` descriptors and posteriors ``q_ik``, following VLFeat (``vl/fisher.c``,
``vl_fisher_encode``):

    u_k = 1 / (N sqrt(w_k))    * sum_i q_ik (x_i - mu_k) / sigma_k
    v_k = 1 / (N sqrt(2 w_k))  * sum_i q_ik [((x_i - mu_k) / sigma_k)^2 - 1]

    FV = [u_1; ...; u_K; v_1; ...; v_K]        (VLFeat's layout: all mean blocks, then all variance blocks)

then the "improved" normalisation: signed square root (``power=0.5``) and L2.

Output dimension: ``2 * K * d'`` where ``d' = pca_components`` (or ``d`` without PCA).
An empty sample aggregates to the zero vector.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from lfabench.sdk import Aggregator, Bags, PluginSpec, cacheable_seed, cached_fit, gemm_rows_are_own, hookimpl

from .codebooks import assign_nearest, kmeans_codebook, seed_of, training_sample
from .gmm import fit_diag_gmm_em
from .normalization import l2_normalize, signed_power
from .padding import padded_batches


#: The EM implementations of :func:`fit_diag_gmm`: ``float32`` (:func:`.gmm.fit_diag_gmm_em`, the default) and
#: ``sklearn`` (scikit-learn's ``GaussianMixture``, float64: what FV records made before the float32 EM ran).
EM_SOLVERS = ("float32", "sklearn")


def fit_diag_gmm(sample: np.ndarray, n_components: int, max_iter: int, kmeans_iter: int, seed: int,
                 reg_covar: float = 1e-6, em: str = "float32") -> dict[str, np.ndarray]:
    """``{"weights" (K,), "means" (K, d), "variances" (K, d), "n_iter" (), "lower_bound" ()}`` of a diagonal GMM
    fitted by EM on ``sample`` ``(N, d)``.

    EM starts from a faiss k-means (weights = cluster shares, per-cluster
    variances; a cluster left empty gets the global variance) and runs scikit-learn's algorithm and stopping
    rule (``tol=1e-3`` on the mean log-likelihood, at most ``max_iter`` iterations): in float32 GEMMs
    (``em="float32"``) or as scikit-learn's ``GaussianMixture`` (``em="sklearn"``). ``n_iter``: the EM
    iterations run; ``lower_bound``: the mean log-likelihood of the last E-step.
    """
    if em not in EM_SOLVERS:
        raise ValueError(f"fit_diag_gmm: em must be one of {', '.join(EM_SOLVERS)}, got {em!r}")
    X = np.asarray(sample, dtype=np.float64)
    K = int(n_components)
    centres = kmeans_codebook(X.astype(np.float32), K, X.shape[0], kmeans_iter, seed).astype(np.float64)
    words = assign_nearest(centres, X)
    counts = np.bincount(words, minlength=K).astype(np.float64)
    sums = np.zeros((K, X.shape[1]))
    sq = np.zeros((K, X.shape[1]))
    np.add.at(sums, words, X)
    np.add.at(sq, words, X * X)
    global_var = X.var(axis=0) + reg_covar
    safe = np.maximum(counts, 1)[:, None]
    var = np.where(counts[:, None] > 1, sq / safe - (sums / safe) ** 2, global_var) + reg_covar
    weights = np.maximum(counts, 1e-3)
    if em == "float32":
        gm = fit_diag_gmm_em(X, weights / weights.sum(), centres, 1.0 / var, max_iter=int(max_iter),
                             reg_covar=reg_covar)
        return {"weights": gm.weights, "means": gm.means, "variances": gm.variances,
                "n_iter": np.asarray(gm.n_iter), "lower_bound": np.asarray(gm.lower_bound)}
    from sklearn.mixture import GaussianMixture

    gm = GaussianMixture(n_components=K, covariance_type="diag", max_iter=int(max_iter), reg_covar=reg_covar,
                         weights_init=weights / weights.sum(), means_init=centres, precisions_init=1.0 / var,
                         random_state=seed)
    gm.fit(X)
    return {"weights": gm.weights_, "means": gm.means_, "variances": gm.covariances_,
            "n_iter": np.asarray(gm.n_iter_), "lower_bound": np.asarray(gm.lower_bound_)}


def gmm_posteriors(X: np.ndarray, weights: np.ndarray, means: np.ndarray, variances: np.ndarray) -> np.ndarray:
    """``(N, K)`` posteriors ``q_ik`` of a diagonal GMM (log-domain, as VLFeat: the ``2 pi`` terms cancel).

    ``-1/2 (x - mu)^T diag(prec) (x - mu)`` expanded into one GEMM, ``[x^2, x] [-prec/2, mu prec]^T`` plus a
    per-component constant; then a max-shifted softmax per row.
    """
    X = np.asarray(X, dtype=np.float64)
    prec = 1.0 / variances
    const = np.log(weights) - 0.5 * np.sum(np.log(variances), axis=1) - 0.5 * np.sum(means * means * prec, axis=1)
    log_p = np.concatenate([X * X, X], axis=1) @ np.concatenate([-0.5 * prec, means * prec], axis=1).T
    log_p += const
    log_p -= log_p.max(axis=1, keepdims=True)
    np.exp(log_p, out=log_p)
    log_p /= log_p.sum(axis=1, keepdims=True)
    return log_p


#: How :func:`fisher_encode` sums the zeroth-order statistics ``S0_k = sum_i q_ik``: ``gemm`` (in the statistics'
#: GEMM, a column of ones beside ``[X, X^2]``: each sample's sum is its own, whatever samples share its padded
#: batch) or ``pairwise`` (numpy's pairwise sum over the zero-padded batch axis, what FV records made before ran;
#: its grouping, so its last bits, depends on the batch's widest sample).
OCCUPANCY_SUMS = ("gemm", "pairwise")


def fisher_encode(bags: Bags, X: np.ndarray, weights: np.ndarray, means: np.ndarray, variances: np.ndarray,
                  chunk_descriptors: int = 65_536, occupancy_sum: str = "gemm") -> np.ndarray:
    """Raw (un-normalised) FV ``(m, 2*K*d)`` float64 of every sample; ``X`` is the (projected) ``(N, d)`` descriptors.

    With posteriors ``q_ik``, ``n`` descriptors in the sample and the zeroth, first and second order statistics
    ``S0_k = sum_i q_ik``, ``S1_k = sum_i q_ik x_i``, ``S2_k = sum_i q_ik x_i^2`` (Perronnin, Sánchez & Mensink
    2010, eqs. 7-8; Sánchez et al., IJCV 2013, with VLFeat's normalisation)::

        U_k = (S1_k - S0_k mu_k) / (sigma_k n sqrt(w_k))
        V_k = ((S2_k - 2 mu_k S1_k + S0_k mu_k^2) / sigma_k^2 - S0_k) / (n sqrt(2 w_k))

    ``S1`` and ``S2`` (and ``S0``, :data:`OCCUPANCY_SUMS`) of all samples of a padded batch are one stacked GEMM,
    ``Q_s^T [X_s, X_s^2, 1]`` (``(K, n) x (n, 2d + 1)`` per sample; padding rows are zero, and adding their zero
    products leaves every sum's bits as they are): ``4 N K d`` operations in all, no loop over samples or
    components. Descriptors are taken ``chunk_descriptors`` at a time (whole samples).
    """
    if occupancy_sum not in OCCUPANCY_SUMS:
        raise ValueError(f"fisher_encode: occupancy_sum must be one of {', '.join(OCCUPANCY_SUMS)}, "
                         f"got {occupancy_sum!r}")
    X = np.asarray(X, dtype=np.float64)
    K, d = means.shape
    m = bags.n_samples
    S0 = np.zeros((m, K))
    S12 = np.zeros((m, K, 2 * d))
    off = bags.offsets
    start = 0
    while start < m:
        stop = max(start + 1, int(np.searchsorted(off, off[start] + chunk_descriptors, side="right")) - 1)
        stop = min(stop, m)
        lo, hi = off[start], off[stop]
        if hi > lo:
            Xc = X[lo:hi]
            Q = gmm_posteriors(Xc, weights, means, variances)
            part = Bags(Xc, off[start:stop + 1] - lo, validate=False, copy=False)
            ones = [np.ones((Xc.shape[0], 1))] if occupancy_sum == "gemm" else []
            values = np.concatenate([Q, Xc, Xc * Xc, *ones], axis=1)
            for idx, Vp, _ in padded_batches(part, max_cells=4096, values=values):
                # contiguous operands, so that the stacked matmul is one BLAS GEMM per sample
                Qt = np.ascontiguousarray(Vp[:, :, :K].transpose(0, 2, 1))          # (B, K, n)
                S = np.matmul(Qt, np.ascontiguousarray(Vp[:, :, K:]))
                S12[start + idx] = S[:, :, :2 * d]
                S0[start + idx] = S[:, :, 2 * d] if occupancy_sum == "gemm" else Qt.sum(axis=2)
        start = stop
    S1, S2 = S12[:, :, :d], S12[:, :, d:]
    n = np.maximum(bags.counts, 1).astype(np.float64)[:, None, None]
    s0 = S0[:, :, None]
    U = (S1 - s0 * means) / np.sqrt(variances) / (n * np.sqrt(weights)[:, None])
    V = ((S2 - 2.0 * means * S1 + s0 * means ** 2) / variances - s0) / (n * np.sqrt(2.0 * weights)[:, None])
    return np.concatenate([U.reshape(m, K * d), V.reshape(m, K * d)], axis=1)


class FisherVector(Aggregator):
    """Improved Fisher Vector on a diagonal GMM, with optional PCA of the descriptors.

    Parameters
    ----------
    n_components : int
        GMM size K; output dimension ``2 * K * d'``.
    pca_components : int or None
        Project descriptors onto at most this many principal components (fitted on the
        training sample, no whitening) before the GMM; None keeps all ``d`` unrotated. A value
        above the descriptor dimension ``d`` is capped at ``d`` (the default 64 then works on
        9-D digit patches and 2-D synthetic points too); the size used is recorded in
        ``fit_info`` (``pca_components_used``).
    power : float
        Signed power-law exponent (0.5 = the improved FV's signed square root; 1 = none).
    l2 : bool
        Final L2 normalisation.
    max_training_descriptors : int
        PCA and GMM are fitted on at most this many descriptors drawn uniformly
        (seeded by ``random_state``) from the fitted bags.
    gmm_iter, kmeans_iter : int
        At most this many EM iterations, and the k-means iterations of the initialisation (faiss).
    em : {"float32", "sklearn"}
        The EM of the GMM: scikit-learn's algorithm and stopping rule in float32 GEMMs (:mod:`.gmm`, about 4x
        faster; the log-likelihood agrees with scikit-learn's to 1e-5 relative), or scikit-learn's own
        ``GaussianMixture`` in float64 (what FV records made before the float32 EM existed ran; the fitted
        GMMs differ in their last digits, so the features do). ``fit_info`` records the iterations run
        (``gmm_n_iter``) and the final mean log-likelihood (``gmm_lower_bound``).
    occupancy_sum : {"gemm", "pairwise"}
        How each image's zeroth-order statistics are summed (:data:`OCCUPANCY_SUMS`): ``"gemm"`` gives every
        image the same row whatever images it is transformed with (``independent_rows``, so a run aggregates
        each image once); ``"pairwise"`` is what FV records made before ran (the same vectors up to rounding,
        other last bits, which depend on the images batched together).
    cache : bool or str
        Cache PCA + GMM keyed on the training sample and parameters (False/True/folder).
    random_state : int or None
    """

    #: Parameters added after records were written, with the value that reproduces a record that does not name
    #: them (``lfabench reproduce``): records made before the float32 EM ran scikit-learn's.
    #: Records made before the occupancy sums moved into the GEMM summed them pairwise.
    introduced_params = {"em": "sklearn", "occupancy_sum": "pairwise"}

    fit_size_params = ("n_components",)  # more components than training descriptors: refused before fitting

    def __init__(self, n_components: int = 64, pca_components: int | None = 64, power: float = 0.5,
                 l2: bool = True, max_training_descriptors: int = 100_000, gmm_iter: int = 100,
                 kmeans_iter: int = 20, em: Literal["float32", "sklearn"] = "float32",
                 occupancy_sum: Literal["gemm", "pairwise"] = "gemm", cache: bool | str = False,
                 random_state=None):
        self.n_components = n_components
        self.pca_components = pca_components
        self.power = power
        self.l2 = l2
        self.max_training_descriptors = max_training_descriptors
        self.gmm_iter = gmm_iter
        self.kmeans_iter = kmeans_iter
        self.em = em
        self.occupancy_sum = occupancy_sum
        self.cache = cache
        self.random_state = random_state

    def _fit(self, bags: Bags, y):
        d = bags.dim
        p = self.pca_components
        if p is not None and int(p) < 1:
            raise ValueError(f"FisherVector: pca_components must be >= 1 or None, got {p}")
        p = None if p is None else min(int(p), d)  # at most d components exist
        self.fit_info_ = {"pca_components_used": p, "descriptor_dim": int(d),
                          "pca_capped_at_dim": bool(self.pca_components is not None and int(self.pca_components) > d)}
        sample = training_sample(bags.descriptors, self.max_training_descriptors, self.random_state)
        seed = seed_of(self.random_state)
        if sample.shape[0] < self.n_components:
            raise ValueError(f"FisherVector: {sample.shape[0]} training descriptors for n_components="
                             f"{self.n_components}")

        def fit():
            X = sample.astype(np.float64)
            mean = X.mean(axis=0) if p is not None else np.zeros(d)
            if p is not None:
                from sklearn.decomposition import PCA

                components = PCA(n_components=int(p), svd_solver="full").fit(X).components_
            else:
                components = np.eye(d)
            gmm = fit_diag_gmm((X - mean) @ components.T, self.n_components, self.gmm_iter, self.kmeans_iter, seed,
                               em=self.em)
            return {"pca_mean": mean, "pca_components": components, **gmm}

        params = {"n_components": int(self.n_components), "pca_components": p, "gmm_iter": int(self.gmm_iter),
                  "kmeans_iter": int(self.kmeans_iter), "seed": cacheable_seed(self.random_state)}
        if self.em != "sklearn":  # the cache entries of scikit-learn's EM keep their keys
            params["em"] = self.em
        state = cached_fit("fv-gmm", f"K={self.n_components}_pca={p}", sample, params, fit,
                           self.cache if params["seed"] is not None else False)
        self.pca_mean_ = state["pca_mean"]
        self.pca_components_ = state["pca_components"]
        self.weights_ = state["weights"]
        self.means_ = state["means"]
        self.variances_ = state["variances"]
        if "n_iter" in state:  # absent from cache entries written before the iterations were kept
            self.fit_info_.update(gmm_n_iter=int(state["n_iter"]), gmm_lower_bound=float(state["lower_bound"]))

    def project(self, X: np.ndarray) -> np.ndarray:
        """``(N, d')`` descriptors in the PCA space the GMM lives in."""
        return (np.asarray(X, dtype=np.float64) - self.pca_mean_) @ self.pca_components_.T

    @property
    def independent_rows(self) -> bool:
        """Each image's row is its own with the occupancy sums in the GEMM (:data:`OCCUPANCY_SUMS`), where the BLAS
        leaves a product's rows their own and a sum as it is when zero rows pad it
        (:func:`~lfabench.sdk.gemm_rows_are_own`)."""
        return self.occupancy_sum == "gemm" and gemm_rows_are_own()

    def _transform(self, bags: Bags) -> np.ndarray:
        F = fisher_encode(bags, self.project(bags.descriptors), self.weights_, self.means_, self.variances_,
                          occupancy_sum=self.occupancy_sum)
        F = signed_power(F, self.power)
        if self.l2:
            F = l2_normalize(F)
        return F.astype(np.float32)


@hookimpl
def lfabench_aggregators():
    return [PluginSpec("fv", FisherVector, "Improved Fisher Vector: diagonal GMM, PCA, signed sqrt + L2 "
                                           "(Perronnin 2010)")]
