"""FV+NN: Fisher vectors followed by supervised fully connected layers (Perronnin & Larlus, "Fisher vectors
meet neural networks: a hybrid classification architecture", CVPR 2015).

The paper's hybrid architecture, as an aggregator:

1. Unsupervised layers: improved FV (the ``fv`` plugin: PCA-reduced descriptors, diagonal GMM,
   signed square root + L2), then PCA-whitening of the FVs to ``whiten_components`` dimensions,
   ``f = diag(lambda)^{-1/2} U^T (FV - mean)`` (fitted on the training images; :mod:`.whitening`: the
   axes of scikit-learn's ``PCA(whiten=True)``, from the Gram matrix of the few thousand training FVs).
2. Supervised layers: an MLP with ReLU hidden layers (``hidden_layer_sizes``) and a softmax output,
   trained by cross-entropy on the training images' labels (scikit-learn ``MLPClassifier``, Adam, L2
   weight decay ``alpha``); ``n_estimators`` such networks are bagged (scikit-learn
   ``BaggingClassifier``, bootstrap samples of images), as the paper bags several networks.

Labels enter at the image level only. The aggregated vector is each network's last hidden layer
(ReLU activations), concatenated over the bagged networks and L2-normalised.

Choices the paper leaves open here, or that differ from its ImageNet-scale setting: the
representation taken for retrieval/1-NN (last hidden layer, not the class posteriors); sizes scaled
to the few thousand training images of the benchmark datasets (whitening to 512 dimensions instead
of 4,096; one hidden layer of 512 units, i.e. two fully connected layers); weight decay instead of dropout (``MLPClassifier`` has
no dropout); FV settings are the ``fv`` plugin's defaults (K = 64 on PCA-64). ``n_estimators=0``
keeps only the unsupervised layers: the whitened FV that FV+NN refines.

Output: ``n_estimators * hidden_layer_sizes[-1]`` (``whiten_components`` when ``n_estimators=0``).
``fit_info_["training_curve"]``: the mean over the bagged networks of the training loss per epoch
(``training_curves`` holds each network's ``loss_curve_``).
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np

from lfabench.sdk import COUNT, COUNT_OR_ZERO, Aggregator, Bags, PluginSpec, gemm_rows_are_own, hookimpl

from .codebooks import seed_of
from .fv import FisherVector
from .normalization import l2_normalize
from .whitening import PCAWhitening

#: The dtype the networks train in: ``MLPClassifier`` keeps float32 input in float32 (weights, Adam),
#: about 3x faster than float64 here, to the same training loss (docs/performance.md, "FV+NN").
NETWORK_DTYPE = np.float32


class FVNN(Aggregator):
    """Improved FV, PCA-whitening, bagged MLPs; the last hidden layers as the image vector.

    Parameters
    ----------
    n_components, pca_components : int
        GMM size and descriptor PCA dimension of the FV layer (see the ``fv`` plugin); ``pca_components``
        is capped at the descriptor dimension.
    whiten_components : int
        PCA-whitening output dimension (capped by the number of training images and the FV size).
    hidden_layer_sizes : tuple of int
        ReLU hidden layers of each network.
    alpha : float
        L2 weight decay of the networks.
    n_estimators : int
        Bagged networks (0 = no supervised layer).
    max_iter : int
        Training epochs of each network (Adam).
    em : {"float32", "sklearn"}
        The EM of the FV layer's GMM (see the ``fv`` plugin).
    occupancy_sum : {"gemm", "pairwise"}
        How the FV layer sums its zeroth-order statistics (see the ``fv`` plugin): ``"gemm"`` gives every image
        the same row whatever images it is transformed with, so the fit's training vectors are the run's
        (``fit_transform``) and each image is aggregated once; ``"pairwise"`` is what records made before ran.
    random_state : int or None
    """

    #: Parameters added after records were written, with the value that reproduces a record that does not name
    #: them (``lfabench reproduce``): records made before the float32 EM ran scikit-learn's.
    #: Records made before the FV layer's occupancy sums moved into its GEMM summed them pairwise.
    introduced_params = {"em": "sklearn", "occupancy_sum": "pairwise"}

    _parameter_constraints = {"whiten_components": [COUNT], "n_estimators": [COUNT_OR_ZERO]}

    supervised = True

    fit_size_params = ("n_components",)  # more components than training descriptors: refused before fitting

    def __init__(self, n_components: int = 64, pca_components: int | None = 64, whiten_components: int = 512,
                 hidden_layer_sizes: tuple = (512,), alpha: float = 1e-4, n_estimators: int = 4,
                 max_iter: int = 100, em: Literal["float32", "sklearn"] = "float32",
                 occupancy_sum: Literal["gemm", "pairwise"] = "gemm", random_state=None):
        self.n_components = n_components
        self.pca_components = pca_components
        self.whiten_components = whiten_components
        self.hidden_layer_sizes = hidden_layer_sizes
        self.alpha = alpha
        self.n_estimators = n_estimators
        self.max_iter = max_iter
        self.em = em
        self.occupancy_sum = occupancy_sum
        self.random_state = random_state

    def _fit(self, bags: Bags, y):
        from sklearn.ensemble import BaggingClassifier
        from sklearn.neural_network import MLPClassifier

        name = type(self).__name__
        hidden = tuple(int(h) for h in self.hidden_layer_sizes)
        if not hidden or min(hidden) < 1:
            raise ValueError(f"{name}: hidden_layer_sizes must be a non-empty tuple of positive ints, got "
                             f"{self.hidden_layer_sizes!r}")
        seed = seed_of(self.random_state)
        # descriptors smaller than pca_components (e.g. 3x3 patches) are kept whole rather than refused
        pca = None if self.pca_components is None else min(int(self.pca_components), bags.dim)
        self.fisher_ = FisherVector(n_components=self.n_components, pca_components=pca, em=self.em,
                                    occupancy_sum=self.occupancy_sum, random_state=seed).fit(bags)
        F = self.fisher_.transform(bags).astype(np.float64)
        n_white = int(min(self.whiten_components, F.shape[0] - 1, F.shape[1]))
        self.whitener_ = PCAWhitening(n_white).fit(F)      # scikit-learn's PCA(whiten=True), from the Gram matrix
        Fw = self.whitener_.transform(F)
        self._fit_whitened = Fw                # fit_transform's vectors before the networks; transform never reads it
        labels = np.asarray(y)
        self.bagging_ = None
        curves = []
        if self.n_estimators > 0:
            from tqdm.auto import tqdm  # at first use: tqdm.auto imports asyncio, a tenth of lfabench run's start-up

            net = MLPClassifier(hidden_layer_sizes=hidden, activation="relu", alpha=float(self.alpha),
                                max_iter=int(self.max_iter))
            bag = BaggingClassifier(net, n_estimators=0, warm_start=True, random_state=seed)
            # grow the ensemble one network at a time (warm start) to show progress
            for k in tqdm(range(1, int(self.n_estimators) + 1), desc="FV+NN networks", unit="net", leave=False,
                          disable=None):
                bag.set_params(n_estimators=k)
                with warnings.catch_warnings():
                    from sklearn.exceptions import ConvergenceWarning

                    warnings.simplefilter("ignore", ConvergenceWarning)
                    bag.fit(Fw.astype(NETWORK_DTYPE), labels)
            self.bagging_ = bag
            curves = [[float(v) for v in est.loss_curve_] for est in bag.estimators_]
        shortest = min((len(c) for c in curves), default=0)
        mean_curve = [float(np.mean([c[e] for c in curves])) for e in range(shortest)]
        self.fit_info_ = {"training_curve": mean_curve, "training_curves": curves, "whiten_components": n_white,
                          **{key: value for key, value in self.fisher_.fit_info_.items() if key.startswith("gmm_")}}

    def _hidden(self, Fw: np.ndarray) -> np.ndarray:
        """[m, n_estimators * h] last-hidden-layer activations of every bagged network."""
        outs = []
        for est, feats in zip(self.bagging_.estimators_, self.bagging_.estimators_features_):
            a = Fw[:, feats]
            for W, b in zip(est.coefs_[:-1], est.intercepts_[:-1]):
                a = np.maximum(a @ W + b, 0.0)
            outs.append(a)
        return np.hstack(outs)

    def initial_transform(self, bags: Bags) -> np.ndarray:
        """[m, whiten_components] the unsupervised layers alone: the PCA-whitened improved FV."""
        return self._whitened(bags).astype(np.float32)

    def _whitened(self, bags: Bags) -> np.ndarray:
        """``(m, whiten_components)`` float64: the PCA-whitened improved FV of every sample."""
        return self.whitener_.transform(self.fisher_.transform(bags).astype(np.float64))

    @property
    def independent_rows(self) -> bool:
        """Each image's row is its own where its Fisher vector is (the FV layer's ``occupancy_sum``); whitening
        and the networks are products row by row (where the BLAS keeps a product's rows their own:
        :func:`~lfabench.sdk.gemm_rows_are_own`)."""
        return self.occupancy_sum == "gemm" and gemm_rows_are_own()

    def fit_transform(self, bags, y=None) -> np.ndarray:
        """``fit`` then the vectors of ``bags``: with ``occupancy_sum="gemm"`` from the whitened Fisher vectors the
        networks learned from (the same arithmetic as :meth:`transform`), not encoded again."""
        self._fit_whitened = None
        self.fit(bags, y)
        Fw, self._fit_whitened = self._fit_whitened, None
        return self._output(Fw) if self.independent_rows else self.transform(bags)

    def _transform(self, bags: Bags) -> np.ndarray:
        self._fit_whitened = None              # a plain fit's vectors: not needed once transforming
        return self._output(self._whitened(bags))

    def _output(self, Fw: np.ndarray) -> np.ndarray:
        """``(m, D)`` float32 vectors from the whitened Fisher vectors ``Fw``: the last hidden layers, L2-normalised
        (``Fw`` itself without networks)."""
        if self.bagging_ is None:
            return Fw.astype(np.float32)
        return l2_normalize(self._hidden(Fw)).astype(np.float32)


@hookimpl
def lfabench_aggregators():
    return [PluginSpec("fv_nn", FVNN, "FV+NN: improved FV, PCA-whitening, bagged ReLU MLPs; last hidden layers "
                                      "(Perronnin & Larlus 2015)")]
