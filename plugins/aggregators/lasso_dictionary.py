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

from .lasso import lasso_codes

__all__ = ["HomotopyDictionaryLearning"]


class HomotopyDictionaryLearning(MiniBatchDictionaryLearning):
    """``MiniBatchDictionaryLearning`` (same parameters) coding each mini-batch with :func:`lasso_codes`
    when ``fit_algorithm="cd"`` (``"lars"`` is left to scikit-learn).

    ``homotopy_path`` (an attribute, not a constructor parameter, so scikit-learn's parameter handling is
    untouched) is :func:`lasso_codes`'s ``path``: ``"compiled"`` (default) or ``"lockstep"``."""

    homotopy_path = "compiled"

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
