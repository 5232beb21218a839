"""T1: a soft bag-of-words aggregation learned by back-propagation (Katharopoulos, Paschalidou, Diou &
Delopoulos, "Learning local feature aggregation functions with backpropagation", EUSIPCO 2017,
arXiv 1706.08580).

The paper composes a parametric aggregation function with the classifier's cost and learns the
aggregation parameters by back-propagating that cost. T1 is its bag-of-words-type member: each
local feature is mapped to K memberships by a softmax of an affine map, averaged over the image,
and fed to a softmax (multinomial logistic) classifier:

    t(x)      = softmax(W x + b)                       W [K, d], b [K]            (per descriptor)
    s(X_i)    = (1/N_i) sum_{x in X_i} t(x)                                     [K] (mean pooling)
    p(c|X_i)  = softmax_c(K A^T s(X_i) + a)             A [K, C], a [C]
    L(W, b, A, a) = -(1/m) sum_i log p(y_i|X_i) + (lambda/2) ||A||_F^2

Gradients are derived by hand (:mod:`.softbow`, ``check_grad`` in the tests). With
``W = 2 V / sigma`` and ``b_k = -||v_k||^2 / sigma``, ``t(x)`` is exactly the Gaussian soft
assignment ``softmax(-||x - v_k||^2 / sigma)`` to a codebook V: that is the start (V = seeded
k-means codebook, sigma = ``softness`` x the mean squared distance of a training descriptor to
its nearest word, A = 0, a = 0), so ``max_iter=0`` gives the unsupervised soft BoW that T1 refines.

What the parametrisation was checked against: the paper's abstract (arXiv 1706.08580 /
ar5iv) -- a parametric local-feature aggregation function composed with the classifier's cost, its
parameters learned by back-propagating that cost's gradient -- which is what this implements; the code the
authors link from their publication list (github.com/paschalidoud/feature-aggregation), which holds BoW,
FV, VLAD and LLC but no T1; and the ProLFA paper (the benchmark's source), which describes T1 only as a
supervised, task-oriented codebook learner. The method section with T1's equations could not be read
from this environment (only the abstract and introduction of arXiv 1706.08580 are reachable), so the
exact form above -- softmax of an affine map, started at the Gaussian soft BoW whose parameters it
generalises, mean pooling, softmax classifier -- is a reconstruction consistent with those sources,
not a transcription of the paper's equations; other members of the paper's family are not implemented.

Choices the paper leaves open (or that could not be confirmed from its text):
L-BFGS (scipy) on the full training batch instead of SGD; ``descriptors_per_image`` descriptors per
training image (seeded) enter the loss; descriptors are standardised by one global mean and scalar
scale (:class:`.supervised.Standardizer`) so W and b are O(1); the classifier sees ``K s`` (a
uniform histogram has unit entries) so that A is O(1) too (a reparametrisation of A: without it
L-BFGS crawls); weight decay on A only.
Labels reach descriptors only through the image-level loss (multiple-instance style).

Output: ``s(X)`` [K] (non-negative, sums to 1; an empty image gives the zero vector).
``fit_info_["training_curve"]``: the loss at the start and after each L-BFGS iteration.
"""

from __future__ import annotations

import numpy as np

from lfabench.sdk import COUNT_OR_ZERO, NON_NEGATIVE, POSITIVE, Aggregator, Bags, PluginSpec, hookimpl

from .softbow import SoftHistograms, encode_histograms, nearest_distance_scale, softmax_rows
from .supervised import class_indicator, codebook_start, lbfgs


def t1_loss_and_grad(theta: np.ndarray, hist: SoftHistograms, Y: np.ndarray, K: int, reg: float):
    """Loss and gradient of T1 at ``theta = [W.ravel(), b, A.ravel(), a]``.

    ``hist`` holds the (standardised) training descriptors, one row of the one-hot ``Y`` [m, C] per image.
    """
    d = hist.X.shape[1]
    m, C = Y.shape
    W, b, A, a = unpack(theta, K, d, C)
    S = K * hist.forward("linear", (W, b))              # [m, K], scaled so that A is O(1)
    Pr = softmax_rows(S @ A + a)                        # [m, C]
    loss = -np.sum(Y * np.log(np.maximum(Pr, 1e-300))) / m + 0.5 * reg * np.sum(A * A)
    dL = (Pr - Y) / m                                   # d loss / d logits
    dA = S.T @ dL + reg * A
    da = dL.sum(axis=0)
    db, dW = hist.backward(K * (dL @ A.T))
    return loss, np.concatenate([dW.ravel(), db, dA.ravel(), da])


def unpack(theta: np.ndarray, K: int, d: int, C: int):
    """``(W [K, d], b [K], A [K, C], a [C])`` views of the flat parameter vector."""
    i = 0
    W = theta[i:i + K * d].reshape(K, d); i += K * d
    b = theta[i:i + K]; i += K
    A = theta[i:i + K * C].reshape(K, C); i += K * C
    return W, b, A, theta[i:i + C]


class T1(Aggregator):
    """Soft BoW whose affine word scores are learned end-to-end with a softmax classifier (T1).

    Parameters
    ----------
    n_clusters : int
        K, the number of words (output dimension).
    softness : float
        sigma of the initial soft assignment, in units of the mean squared distance of a training
        descriptor to its nearest k-means word.
    reg : float
        lambda, weight decay on the classifier weights A.
    max_iter : int
        L-BFGS iterations (0 = the unsupervised soft-BoW start).
    descriptors_per_image : int or None
        Descriptors per training image entering the loss (seeded draw); None = all.
    max_training_descriptors, kmeans_iter : int
        k-means initialisation: sample size and iterations.
    flush_subnormals : bool
        No subnormal float in the soft-assignment work (:class:`.softbow.SoftHistograms`: memberships below the
        rounding of their row's sum are 0, the backward runs on a power-of-two scaled gradient), so late iterations
        run as fast as early ones on CPUs that handle subnormal operands in microcode. False: the records made
        before the option.
    random_state : int or None
    """

    _parameter_constraints = {"softness": [POSITIVE], "reg": [NON_NEGATIVE], "max_iter": [COUNT_OR_ZERO]}

    supervised = True
    #: records made before ``flush_subnormals`` existed kept subnormal memberships
    introduced_params = {"flush_subnormals": False}

    fit_size_params = ("n_clusters",)  # more clusters than training descriptors: refused before fitting

    def __init__(self, n_clusters: int = 256, softness: float = 1.0, reg: float = 1e-3, max_iter: int = 100,
                 descriptors_per_image: int | None = 30, max_training_descriptors: int = 100_000,
                 kmeans_iter: int = 20, random_state=None,
                 flush_subnormals: bool = True):
        self.n_clusters = n_clusters
        self.softness = softness
        self.reg = reg
        self.max_iter = max_iter
        self.descriptors_per_image = descriptors_per_image
        self.max_training_descriptors = max_training_descriptors
        self.kmeans_iter = kmeans_iter
        self.random_state = random_state
        self.flush_subnormals = flush_subnormals

    def _fit(self, bags: Bags, y):
        Y = class_indicator(y, bags.n_samples)
        train, self.standardizer_, X, V = codebook_start(self, bags)
        sigma = self.softness * nearest_distance_scale(X, V, "sqeuclidean")
        K, d, C = V.shape[0], X.shape[1], Y.shape[1]
        theta0 = np.concatenate([(2.0 * V / sigma).ravel(), -(V * V).sum(1) / sigma, np.zeros(K * C), np.zeros(C)])
        hist = SoftHistograms(X, train.offsets, flush_subnormals=self.flush_subnormals)
        theta, curve, message = lbfgs(lambda t: t1_loss_and_grad(t, hist, Y, K, self.reg), theta0,
                                      self.max_iter, "T1 L-BFGS")
        W, b, A, a = unpack(theta, K, d, C)
        self.weights_, self.bias_ = W.copy(), b.copy()
        self.classifier_weights_, self.classifier_bias_ = A.copy(), a.copy()
        self.sigma_ = sigma
        self.initial_codebook_ = V
        self.fit_info_ = {"training_curve": curve, "optimizer": message, "n_training_descriptors": int(X.shape[0]),
                          "sigma": sigma}

    def initial_transform(self, bags: Bags) -> np.ndarray:
        """[m, K] the unsupervised starting point: Gaussian soft BoW on the initial k-means codebook."""
        V = self.initial_codebook_
        return self._encode(bags, 2.0 * V / self.sigma_, -(V * V).sum(1) / self.sigma_)

    def _transform(self, bags: Bags) -> np.ndarray:
        return self._encode(bags, self.weights_, self.bias_)

    def _encode(self, bags: Bags, W: np.ndarray, b: np.ndarray) -> np.ndarray:
        return encode_histograms(bags.descriptors, bags.offsets, self.standardizer_.transform, "linear", (W, b),
                                 flush_subnormals=self.flush_subnormals)


@hookimpl
def lfabench_aggregators():
    return [PluginSpec("t1", T1, "T1: soft BoW with affine word scores learned by back-propagating a softmax "
                                 "classifier's loss (Katharopoulos et al. 2017)")]
