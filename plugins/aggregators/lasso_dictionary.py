"""Online dictionary learning (Mairal, Bach, Ponce & Sapiro, JMLR 2010) whose mini-batch codes come from
:func:`lfabench_plugins.aggregators.lasso.lasso_codes` instead of scikit-learn's coordinate descent.

:class:`HomotopyDictionaryLearning` is scikit-learn's ``MiniBatchDictionaryLearning`` with one step replaced:
the lasso codes of each mini-batch (``fit_algorithm="cd"``, the objective of ``sparse_encode(algorithm=
"lasso_cd")``, certified by the duality gap). The sufficient statistics, the block-coordinate dictionary
update, the early stopping and the random state are scikit-learn's own, in the same order, so the two learn
the same dictionary up to the codes' differences (the coordinate descent often stops at ``max_iter`` before
its tolerance on real descriptors; the homotopy's codes are exact, so its batch costs are never higher).
"""

from __future__ import annotations

import numpy as np
from sklearn.decomposition import MiniBatchDictionaryLearning
from sklearn.decomposition._dict_learning import _update_dict
from sklearn.utils._param_validation import StrOptions

from .lasso import HOMOTOPY_PATHS, lasso_codes

__all__ = ["HomotopyDictionaryLearning"]


class HomotopyDictionaryLearning(MiniBatchDictionaryLearning):
    """``MiniBatchDictionaryLearning`` (same parameters, plus ``homotopy_path``) coding each mini-batch with
    :func:`lasso_codes` when ``fit_algorithm="cd"`` (``"lars"`` is left to scikit-learn).

    ``homotopy_path`` is :func:`lasso_codes`'s ``path``: ``"compiled"`` (default) or ``"lockstep"``. It is a
    constructor parameter, so ``get_params``, ``set_params`` and ``clone`` carry it."""

    _parameter_constraints: dict = {**MiniBatchDictionaryLearning._parameter_constraints,
                                    "homotopy_path": [StrOptions(set(HOMOTOPY_PATHS))]}

    def __init__(self, n_components=None, *, alpha=1, max_iter=1000, fit_algorithm="lars", n_jobs=None,
                 batch_size=256, shuffle=True, dict_init=None, transform_algorithm="omp",
                 transform_n_nonzero_coefs=None, transform_alpha=None, verbose=False, split_sign=False,
                 random_state=None, positive_code=False, positive_dict=False, transform_max_iter=1000,
                 callback=None, tol=1e-3, max_no_improvement=10, homotopy_path="compiled"):
        super().__init__(n_components, alpha=alpha, max_iter=max_iter, fit_algorithm=fit_algorithm, n_jobs=n_jobs,
                         batch_size=batch_size, shuffle=shuffle, dict_init=dict_init,
                         transform_algorithm=transform_algorithm, transform_n_nonzero_coefs=transform_n_nonzero_coefs,
                         transform_alpha=transform_alpha, verbose=verbose, split_sign=split_sign,
                         random_state=random_state, positive_code=positive_code, positive_dict=positive_dict,
                         transform_max_iter=transform_max_iter, callback=callback, tol=tol,
                         max_no_improvement=max_no_improvement)
        self.homotopy_path = homotopy_path

    def _minibatch_step(self, X, dictionary, random_state, step):
        # the body of scikit-learn's MiniBatchDictionaryLearning._minibatch_step with its code step replaced
        if self._fit_algorithm != "lasso_cd":
            return super()._minibatch_step(X, dictionary, random_state, step)
        batch_size = X.shape[0]
        code = lasso_codes(X, dictionary, float(self.alpha), positive=bool(self.positive_code),
                           max_iter=self.transform_max_iter, path=self.homotopy_path).astype(X.dtype, copy=False)
        batch_cost = (0.5 * ((X - code @ dictionary) ** 2).sum() + self.alpha * np.sum(np.abs(code))) / batch_size
        self._update_inner_stats(X, code, batch_size, step)
        _update_dict(dictionary, X, code, self._A, self._B, verbose=self.verbose, random_state=random_state,
                     positive=self.positive_dict)
        return batch_cost
