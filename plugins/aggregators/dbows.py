"""DBoWs: discriminant bag of words, a codebook learned with the LDA criterion (Iosifidis, Tefas & Pitas,
"Discriminant Bag of Words based representation for human action recognition", Pattern Recognition
Letters 49, 2014).

Soft BoW (Gaussian memberships on squared distances):

    u_jk = exp(-||x_j - v_k||^2 / sigma) / sum_l exp(-||x_j - v_l||^2 / sigma),   V [K, d]
    s_i  = (1/N_i) sum_{j in image i} u_j                                             [K]

and the codebook V minimises the LDA (Fisher) trace-ratio criterion of the training histograms:

    S_w = sum_i (s_i - mu_{y_i})(s_i - mu_{y_i})^T,   S_b = sum_c m_c (mu_c - mu)(mu_c - mu)^T
    J(V) = tr(S_w) / tr(S_b)

with class means mu_c, their sizes m_c and the overall mean mu. Because the residuals of a class
sum to zero, ``d tr(S_w)/d s_i = 2 (s_i - mu_{y_i})`` and ``d tr(S_b)/d s_i = 2 (mu_{y_i} - mu)``, so
``dJ/ds_i = 2 [(s_i - mu_{y_i}) tr(S_b) - tr(S_w) (mu_{y_i} - mu)] / tr(S_b)^2``; the chain to V is
:mod:`.softbow`. ``tr(S_w)/m`` and ``tr(S_b)/m`` are the traces of scikit-learn's
``LinearDiscriminantAnalysis`` within-class covariance and of its prior-weighted between-class
scatter (checked in the tests), and the gradient against finite differences.

Choices the paper leaves open or that differ from it: the membership function (the paper's is a
distance-based soft assignment; a Gaussian kernel is used here so that J is differentiable
everywhere), sigma = ``softness`` x the mean squared distance of a training descriptor to its
nearest initial word; the trace-ratio form of the LDA criterion; L-BFGS (scipy) instead of the
paper's gradient steps; V starts from a seeded k-means codebook (``max_iter=0`` = that unsupervised
soft BoW); ``descriptors_per_image`` per training image; descriptors standardised by one mean and
scalar scale. Labels reach descriptors only through their image's histogram.

On Fifteen Scene SIFT-90 the criterion falls on held-out images as on training ones, yet 1-NN peaks
after ~10 L-BFGS iterations and then drops below the k-means start (``docs/method-findings.md``,
"DBoWs"): choose ``max_iter`` on a validation split.

Output: ``s(X)`` [K] (non-negative, sums to 1; an empty image gives the zero vector).
``fit_info_["training_curve"]``: J at the start and after each L-BFGS iteration.
"""

from __future__ import annotations

import numpy as np

from lfabench.sdk import (COUNT_OR_ZERO, POSITIVE, Aggregator, Bags, PluginSpec, UndefinedCriterionError,
                          annotated_class_sizes, describe_class_sizes, hookimpl)

from .softbow import LearnedSoftCodebook, SoftHistograms, codebook_gradient, nearest_distance_scale
from .supervised import class_indicator, codebook_start, lbfgs


def lda_trace_ratio(S: np.ndarray, Y: np.ndarray) -> tuple[float, np.ndarray, float, float]:
    """``(J, dJ/dS, tr S_w, tr S_b)`` for histograms ``S`` [m, K] and one-hot labels ``Y`` [m, C]."""
    sizes = Y.sum(axis=0)
    present = sizes > 0
    Yp, sizes = Y[:, present], sizes[present]
    mu_c = (Yp.T @ S) / sizes[:, None]                  # [C, K]
    mu = S.mean(axis=0)
    own = Yp @ mu_c                                     # [m, K] each sample's class mean
    tw = float(np.sum((S - own) ** 2))
    tb = float(np.sum(sizes[:, None] * (mu_c - mu) ** 2))
    tb_safe = max(tb, 1e-300)
    dS = 2.0 * ((S - own) * tb_safe - tw * (own - mu)) / tb_safe ** 2
    return tw / tb_safe, dS, tw, tb


def dbows_objective(v: np.ndarray, hist: SoftHistograms, Y: np.ndarray, sigma: float) -> tuple[float, np.ndarray]:
    """J(V) and dJ/dV (flattened) for the codebook ``v`` = V.ravel() [K*d]; ``hist`` holds the training
    descriptors (one row of ``Y`` [m, C] per image of ``hist``)."""
    V = v.reshape(-1, hist.X.shape[1])
    J, dS, _, _ = lda_trace_ratio(hist.forward("sqeuclidean", (V, sigma)), Y)
    return J, codebook_gradient(V, *hist.backward(dS), sigma, "sqeuclidean").ravel()


class DBoWs(LearnedSoftCodebook, Aggregator):
    """Soft BoW whose codebook minimises the LDA trace ratio tr(S_w)/tr(S_b) of the histograms.

    Parameters
    ----------
    n_clusters : int
        K, codebook size (output dimension).
    softness : float
        sigma, in units of the mean squared distance of a training descriptor to its nearest initial word.
    max_iter : int
        L-BFGS iterations (0 = the unsupervised soft BoW on the k-means codebook).
    descriptors_per_image : int or None
        Descriptors per training image entering the criterion (seeded draw); None = all.
    max_training_descriptors, kmeans_iter : int
        k-means initialisation: sample size and iterations.
    flush_subnormals : bool
        No subnormal float in the soft-assignment work (:class:`.softbow.SoftHistograms`: memberships below the
        rounding of their row's sum are 0, the backward runs on a power-of-two scaled gradient), so late iterations
        run as fast as early ones on CPUs that handle subnormal operands in microcode. False: the records made
        before the option.
    random_state : int or None
    """

    _parameter_constraints = {"softness": [POSITIVE], "max_iter": [COUNT_OR_ZERO]}

    supervised = True
    #: records made before ``flush_subnormals`` existed kept subnormal memberships
    introduced_params = {"flush_subnormals": False}
    membership_distance = "sqeuclidean"

    fit_size_params = ("n_clusters",)  # more clusters than training descriptors: refused before fitting

    def __init__(self, n_clusters: int = 256, softness: float = 1.0, max_iter: int = 100,
                 descriptors_per_image: int | None = 30, max_training_descriptors: int = 100_000,
                 kmeans_iter: int = 20, random_state=None,
                 flush_subnormals: bool = True):
        self.n_clusters = n_clusters
        self.softness = softness
        self.max_iter = max_iter
        self.descriptors_per_image = descriptors_per_image
        self.max_training_descriptors = max_training_descriptors
        self.kmeans_iter = kmeans_iter
        self.random_state = random_state
        self.flush_subnormals = flush_subnormals

    def _fit(self, bags: Bags, y):
        Y = class_indicator(y, bags.n_samples)
        train, self.standardizer_, X, V0 = codebook_start(self, bags)
        sigma = self.softness * nearest_distance_scale(X, V0, "sqeuclidean")
        keep = train.counts > 0            # an empty image has no histogram to discriminate (and no rows)
        hist = SoftHistograms(X, np.concatenate([[0], np.cumsum(train.counts[keep])]),
                              flush_subnormals=self.flush_subnormals)
        v, curve, message = lbfgs(lambda v: dbows_objective(v, hist, Y[keep], sigma), V0.ravel(), self.max_iter,
                                  "DBoWs L-BFGS")
        self.codebook_ = v.reshape(V0.shape).copy()
        self.initial_codebook_ = V0
        self.sigma_ = sigma
        self.fit_info_ = {"training_curve": curve, "optimizer": message, "n_training_descriptors": int(X.shape[0]),
                          "sigma": sigma}

    def check_fit_labels(self, y) -> None:
        """The trace ratio tr(S_w)/tr(S_b) needs two annotated classes (S_b is zero with one) and a class with two
        annotated images: with one image per class every residual s_i - mu_{y_i} is zero, so S_w and J are zero
        for every codebook (the paper's search rule, 20 % of each 2-4 image Holidays-style group, gives that)."""
        _, sizes = annotated_class_sizes(y)
        if sizes.size < 2:
            raise UndefinedCriterionError(
                f"{type(self).__name__}: the LDA trace ratio tr(S_w)/tr(S_b) needs at least 2 classes "
                f"(S_b is zero with fewer); the labels have {describe_class_sizes(sizes)}")
        if sizes.max() < 2:
            raise UndefinedCriterionError(
                f"{type(self).__name__}: the LDA trace ratio tr(S_w)/tr(S_b) is undefined for these labels: every "
                f"class has a single annotated image, so the within-class scatter S_w is zero for any codebook "
                f"({describe_class_sizes(sizes)}); annotate whole groups (+evaluator.params.labelled_unit=class) "
                f"or several images per class")

    def membership_scale(self) -> float:
        return self.sigma_


@hookimpl
def lfabench_aggregators():
    return [PluginSpec("dbows", DBoWs, "DBoWs: soft BoW whose codebook minimises the LDA trace ratio of the "
                                       "histograms (Iosifidis, Tefas & Pitas 2014)")]
