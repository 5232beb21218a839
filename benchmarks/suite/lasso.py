"""SC's lasso: the batched homotopy (``lasso_codes``, the default) against scikit-learn's coordinate descent
(``sparse_encode(algorithm="lasso_cd")``, ``lasso="cd"``), on the same descriptors and dictionary.

The dictionary is the ``sc`` plugin at its defaults (K = 256, alpha = 0.15, 10 passes, seed 0) learned on every
sixth training image of the seed-0 split of Fifteen Scene (about 600 images; kept in the fitted-array cache, so
only the first setup learns it). The codes are those of 4,000 seeded descriptors of those images, L2-normalised
as the plugin codes them. ``SparseCodes`` times each solver; ``SparseCodesAgreement`` compares them per
descriptor on the objective ``P(u) = 1/2 ||x - D^T u||^2 + alpha ||u||_1``: the largest ``P_homotopy - P_cd``
(the homotopy certifies a duality gap of at most ``1e-8 ||x||^2``, so this is at most about 1e-8), the largest
duality gap of each, and the share of descriptors where the coordinate descent stopped at ``max_iter`` above
its own tolerance.
"""

from __future__ import annotations

import warnings
from functools import cache

import numpy as np

from .cases import split_bags

N_CODES = 4000


@cache
def problem(descriptor: str):
    """``(X (4000, d) normalised descriptors, dictionary (256, d), alpha)``."""
    from lfabench_plugins.aggregators.sc import SparseCoding

    train = split_bags("scene15", descriptor)[0]
    bags = train.subset(np.arange(0, train.n_samples, 6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sc = SparseCoding(cache=True, random_state=0).fit(bags)
    pick = np.sort(np.random.default_rng(1).choice(bags.n_descriptors, N_CODES, replace=False))
    return sc._prepare(bags.descriptors[pick]), sc.dictionary_, float(sc.alpha)


def codes(solver: str, X, D, alpha):
    from sklearn.decomposition import sparse_encode

    from lfabench_plugins.aggregators.lasso import lasso_codes

    if solver == "homotopy":
        return lasso_codes(X, D, alpha)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sparse_encode(X, D, algorithm="lasso_cd", alpha=alpha, max_iter=1000)


class SparseCodes:
    """Lasso codes of 4,000 descriptors by each solver."""

    params = [["homotopy", "cd"], ["sift", "daisy"]]
    param_names = ["solver", "descriptor"]
    timeout = 1800
    number, repeat, rounds = 1, 1, 1

    def setup(self, solver, descriptor):
        self.X, self.D, self.alpha = problem(descriptor)

    def time_codes(self, solver, descriptor):
        codes(solver, self.X, self.D, self.alpha)


class SparseCodesAgreement:
    """The two solvers' codes compared per descriptor on the lasso objective and its duality gap."""

    params = [["sift", "daisy"]]
    param_names = ["descriptor"]
    timeout = 1800

    def setup(self, descriptor):
        from lfabench_plugins.aggregators.lasso import lasso_duality_gap, lasso_objective

        X, D, alpha = problem(descriptor)
        new, old = codes("homotopy", X, D, alpha), codes("cd", X, D, alpha)
        self.excess = lasso_objective(X, D, new, alpha) - lasso_objective(X, D, old, alpha)
        self.gap_new, self.gap_old = lasso_duality_gap(X, D, new, alpha), lasso_duality_gap(X, D, old, alpha)

    def track_max_objective_excess(self, descriptor):
        return float(self.excess.max())

    def track_max_gap_homotopy(self, descriptor):
        return float(self.gap_new.max())

    def track_max_gap_cd(self, descriptor):
        return float(self.gap_old.max())

    def track_cd_unconverged_percent(self, descriptor):
        return 100.0 * float(np.mean(self.gap_old > 1e-8))

    track_cd_unconverged_percent.unit = "%"
