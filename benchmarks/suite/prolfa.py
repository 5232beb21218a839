"""ProLFA's two solvers on the problems ``docs/prolfa-performance.md`` states its findings on.

Models: ``capped`` (``max_support=4``, the default: cBCD with the face step) and ``plain`` (``max_support=None``,
the paper's plain simplex: pairwise Frank-Wolfe). Problems:

* ``moon``: the authors' demo (``prolfa_demo/moon.mat`` under the shared data; the demo's settings: d̄ = 2,
  lambda1 = 2, lambda2 = 0.5, no normalisation, mu = 0.1, 20 ADMM iterations), seed 0;
* ``digits``: the default ``lfabench run`` (embedded digits, 3x3 patches, the plugin's defaults, the ``knn``
  evaluator's seed-0 split);
* ``ProLFAPaper*``: Fifteen Scene SIFT-90, the seed-0 split, d̄ = 4,096 (the paper's classification setting).

Besides time, each case tracks the fit's final J, its outer iterations (searches for pairwise Frank-Wolfe),
the Frank-Wolfe gap of the returned point as a percentage of J (the plain simplex's stationarity certificate,
which its solver records; NaN for the capped model) and held-out 1-NN accuracy (digits and Fifteen Scene). The paper-scale classes fit once per class (``setup_cache``) and report the fit's
CPU seconds (``track_fit_cpu_seconds``) beside the other tracks: one fit is 2-10 minutes on one core.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from lfabench import Bags

from .cases import labelled_fraction, one_nn_accuracy, shared_data, split_bags

MODELS = {"capped": 4, "plain": None}


def _solver_options(**changes):
    from lfabench_plugins.aggregators.prolfa import SolverOptions

    return SolverOptions(**changes)


def moon():
    """``(bags, labels)`` of the authors' demo: 10 samples of 20 two-dimensional descriptors, two classes."""
    import scipy.io

    root = shared_data()
    if root is None or not (root / "prolfa_demo" / "moon.mat").is_file():
        raise NotImplementedError("needs prolfa_demo/moon.mat in the shared data")
    X = scipy.io.loadmat(root / "prolfa_demo" / "moon.mat")["X"].T                     # (200, 2)
    return Bags(X, np.arange(0, 201, 20)), np.repeat([0, 1], 5)


def build(problem: str, model: str, seed: int = 0):
    """The estimator of ``problem`` (``moon``, ``digits``, ``scene15``) and ``model``."""
    from lfabench_plugins.aggregators.prolfa.plugin import ProLFA

    if problem == "moon":
        return ProLFA(n_prototypes=2, lambda1=2.0, lambda2=0.5, normalize="none", max_support=MODELS[model],
                      solver=_solver_options(mu=0.1, max_iter_admm=20), random_state=seed)
    n_prototypes = 4096 if problem == "scene15" else ProLFA().n_prototypes
    return ProLFA(n_prototypes=n_prototypes, max_support=MODELS[model], random_state=seed)


def fit_summary(problem: str, model: str) -> dict:
    """Fit once: CPU seconds, J, iterations, FW gap (% of J) and 1-NN (% or NaN), as a dict."""
    if problem == "moon":
        train, fit_labels = moon()
        test = None
    else:
        train, fit_labels, y_train, test, y_test = split_bags(problem, "sift" if problem == "scene15" else "patches",
                                                              labelled_fraction("prolfa"))
    est = build(problem, model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.process_time()
        est.fit(train, fit_labels)
        cpu = time.process_time() - t0
    J = float(est.objective_history_[-1])
    gap = est.fit_info_.get("frank_wolfe_gap")
    accuracy = np.nan if test is None else one_nn_accuracy(est.transform(train), y_train, est.transform(test), y_test)
    return {"cpu": cpu, "J": J, "iterations": int(est.n_iter_), "accuracy": accuracy,
            "gap": np.nan if gap is None else 100.0 * float(gap) / J}


class _Tracks:
    def track_objective(self, summary, *case):
        return summary["J"]

    def track_iterations(self, summary, *case):
        return summary["iterations"]

    def track_gap_percent_of_j(self, summary, *case):
        return summary["gap"]

    track_gap_percent_of_j.unit = "%"

    def track_accuracy(self, summary, *case):
        return summary["accuracy"]

    track_accuracy.unit = "%"


class ProLFATiny:
    """The demo (moon.mat) and the embedded digits run, both models."""

    params = [["moon", "digits"], list(MODELS)]
    param_names = ["problem", "model"]
    timeout = 300

    def setup(self, problem, model):
        if problem == "moon":
            self.train, self.y = moon()
        else:
            self.train, self.y = split_bags("digits", "patches")[:2]
        self.summary = None

    def time_fit(self, problem, model):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            build(problem, model).fit(self.train, self.y)

    def _summary(self, problem, model):
        if self.summary is None:
            self.summary = fit_summary(problem, model)
        return self.summary

    def track_objective(self, problem, model):
        return self._summary(problem, model)["J"]

    def track_iterations(self, problem, model):
        return self._summary(problem, model)["iterations"]

    def track_gap_percent_of_j(self, problem, model):
        return self._summary(problem, model)["gap"]

    track_gap_percent_of_j.unit = "%"

    def track_accuracy(self, problem, model):
        return self._summary(problem, model)["accuracy"]

    track_accuracy.unit = "%"


class _Paper(_Tracks):
    model = "capped"
    timeout = 3600
    number, repeat, rounds = 1, 1, 1

    def setup_cache(self):
        return fit_summary("scene15", self.model)

    def track_fit_cpu_seconds(self, summary):
        return summary["cpu"]

    track_fit_cpu_seconds.unit = "s"


class ProLFAPaperCapped(_Paper):
    """The default model (cBCD with the face step) at paper scale: Fifteen Scene SIFT-90, seed 0, d̄ = 4,096."""

    model = "capped"


class ProLFAPaperPlain(_Paper):
    """The paper's plain simplex (pairwise Frank-Wolfe) at paper scale: Fifteen Scene SIFT-90, seed 0, d̄ = 4,096."""

    model = "plain"


class ProLFAScale:
    """The default (capped) fit against N and d̄: nested random subsets of the seed-0 training images of Fifteen
    Scene SIFT-90 holding about ``n_descriptors`` descriptors (``all``: 316,030), d̄ prototypes, one fit.

    ``time_fit`` over the grid gives the scaling law (log-log slope in N at fixed d̄ and in d̄ at fixed N);
    ``track_iterations`` the outer iterations of the same fit.
    """

    params = [["10000", "30000", "100000", "all"], ["256", "1024", "4096"]]
    param_names = ["n_descriptors", "dbar"]
    timeout = 3600
    number, repeat, rounds = 1, 1, 1

    def setup(self, n_descriptors, dbar):
        from lfabench_plugins.aggregators.prolfa.plugin import ProLFA

        train, fit_labels = split_bags("scene15", "sift")[:2]
        if n_descriptors != "all":
            order = np.random.default_rng(0).permutation(train.n_samples)
            keep = np.sort(order[: np.searchsorted(np.cumsum(train.counts[order]), int(n_descriptors)) + 1])
            train, fit_labels = train.subset(keep), np.asarray(fit_labels)[keep]
        self.train, self.y = train, fit_labels
        self.make = lambda: ProLFA(n_prototypes=int(dbar), random_state=0)

    def time_fit(self, n_descriptors, dbar):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.make().fit(self.train, self.y)

    def track_iterations(self, n_descriptors, dbar):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return int(self.make().fit(self.train, self.y).n_iter_)
