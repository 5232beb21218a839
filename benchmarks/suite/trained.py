"""The costliest steps of the trained aggregators at paper scale: one soft-BoW objective evaluation, FV+NN's
whitening and networks.

``PaperSoftBoWObjective.time_objective(<method>, <descriptor>)``: T1, DBoWs or EO-BoW at their defaults
on the Fifteen Scene seed-0 training split, one evaluation of the objective the fit's L-BFGS minimises,
at its start (the seeded k-means codebook). A fit makes about ``max_iter`` such evaluations (scipy's
line search rarely needs a second one per iteration), so this case moves with the fit's cost without
paying 100 iterations per sample; the fit itself is ``PaperFit.time_fit``. The floor of one evaluation
is its two GEMMs, ``4 N K d`` operations (docs/performance.md, "Soft-BoW codebooks").

``PaperFVNNStages.time_whitening`` / ``time_network(<descriptor>)``: FV+NN's PCA-whitening of the training
FVs to 512 dimensions, and one of its bagged networks trained on them (docs/performance.md, "FV+NN").
"""

from __future__ import annotations

import numpy as np

from lfabench.registry import get_plugin

from .cases import split_bags


def training_problem(method: str, train, labels):
    """``(fun, x0)``: the fit's objective and start for ``method`` at its defaults (seed 0), as its ``_fit`` builds them."""
    from lfabench_plugins.aggregators import dbows, eobow, t1
    from lfabench_plugins.aggregators.softbow import SoftHistograms, nearest_distance_scale
    from lfabench_plugins.aggregators.supervised import class_indicator, codebook_start

    est = get_plugin("aggregator", method)(random_state=0)
    Y = class_indicator(labels, train.n_samples)
    sample, _, X, V = codebook_start(est, train)
    hist = SoftHistograms(X, sample.offsets)
    if method == "t1":
        sigma = est.softness * nearest_distance_scale(X, V, "sqeuclidean")
        K, C = V.shape[0], Y.shape[1]
        x0 = np.concatenate([(2.0 * V / sigma).ravel(), -(V * V).sum(1) / sigma, np.zeros(K * C), np.zeros(C)])
        return (lambda x: t1.t1_loss_and_grad(x, hist, Y, K, est.reg)), x0
    if method == "dbows":
        sigma = est.softness * nearest_distance_scale(X, V, "sqeuclidean")
        return (lambda v: dbows.dbows_objective(v, hist, Y, sigma)), V.ravel()
    m_soft = est.softness * nearest_distance_scale(X, V, "euclidean")
    S0 = hist.forward("euclidean", (V, m_soft), keep=False)
    centres = (Y.T @ S0) / np.maximum(Y.sum(axis=0), 1)[:, None]
    g = est.entropy_softness * nearest_distance_scale(S0, centres, "euclidean")
    return (lambda v: eobow.eobow_objective(v, hist, Y, centres, m_soft, g)), V.ravel()


class PaperSoftBoWObjective:
    """One objective evaluation (loss + gradient) of T1, DBoWs and EO-BoW on Fifteen Scene SIFT-90 and DAISY-150."""

    params = [["t1", "dbows", "eobow"], ["sift", "daisy"]]
    param_names = ["method", "descriptor"]
    timeout = 1800
    number = 1
    repeat = 3

    def setup(self, method, descriptor):
        train, fit_labels, *_ = split_bags("scene15", descriptor)
        self.fun, self.x0 = training_problem(method, train, fit_labels)

    def time_objective(self, method, descriptor):
        self.fun(self.x0)


class PaperFVNNStages:
    """FV+NN's whitening and one network, at its defaults, on Fifteen Scene SIFT-90 and DAISY-150."""

    params = [["sift", "daisy"]]
    param_names = ["descriptor"]
    timeout = 3600
    number = 1
    repeat = 1

    def setup(self, descriptor):
        from lfabench_plugins.aggregators.fv import FisherVector
        from lfabench_plugins.aggregators.fv_nn import FVNN
        from lfabench_plugins.aggregators.whitening import PCAWhitening

        train, self.labels, *_ = split_bags("scene15", descriptor)
        est = FVNN(random_state=0)
        fisher = FisherVector(n_components=est.n_components, pca_components=est.pca_components, random_state=0)
        self.F = fisher.fit(train).transform(train).astype(np.float64)
        self.n_white = int(min(est.whiten_components, self.F.shape[0] - 1, self.F.shape[1]))
        self.Fw = PCAWhitening(self.n_white).fit(self.F).transform(self.F)
        self.est = est

    def time_whitening(self, descriptor):
        from lfabench_plugins.aggregators.whitening import PCAWhitening

        PCAWhitening(self.n_white).fit(self.F)

    def time_network(self, descriptor):
        import warnings

        from sklearn.exceptions import ConvergenceWarning
        from sklearn.neural_network import MLPClassifier

        from lfabench_plugins.aggregators.fv_nn import NETWORK_DTYPE

        net = MLPClassifier(hidden_layer_sizes=tuple(self.est.hidden_layer_sizes), alpha=float(self.est.alpha),
                            max_iter=int(self.est.max_iter), random_state=0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            net.fit(self.Fw.astype(NETWORK_DTYPE), self.labels)
