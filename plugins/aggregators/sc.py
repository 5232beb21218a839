"""SC: sparse coding with max pooling (the SC baseline of Ge, Ke & Sun, "Sparse-coded features for image
retrieval", BMVC 2013; coding and pooling as in Yang, Yu, Gong & Huang, ScSPM, CVPR 2009).

1. Dictionary: ``K`` atoms learned by scikit-learn's ``MiniBatchDictionaryLearning``
   (online dictionary learning, Mairal et al. 2009) on a seeded sample of the
   fitted descriptors, each L2-normalised first (``normalize_descriptors``).
2. Codes: lasso, ``u_i = argmin_u 1/2 ||x_i - D^T u||^2 + lambda ||u||_1``
   (the objective of scikit-learn's ``sparse_encode(algorithm="lasso_cd")``; ``alpha`` is its ``alpha``).
3. Max pooling of code magnitudes per sample, ``z_k = max_i |u_ik|``, then L2.

Both steps solve their lasso problems with ``lasso`` (the same objective either way):

* ``"homotopy"`` (default): :func:`lfabench_plugins.aggregators.lasso.lasso_codes`, the lasso path of all
  descriptors at once, each code within ``1e-8 ||x||^2`` of the optimum by its duality gap (the tolerance
  scikit-learn asks of its coordinate descent); dictionary learning through
  :class:`~lfabench_plugins.aggregators.lasso_dictionary.HomotopyDictionaryLearning`.
* ``"cd"``: scikit-learn's coordinate descent (``sparse_encode``, ``MiniBatchDictionaryLearning``), the
  reference, several times slower; on DAISY it often stops at ``max_iter=1000`` above its tolerance.

Output dimension: ``K`` (``n_atoms``). An empty sample aggregates to the zero vector.
"""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np

from lfabench.sdk import Aggregator, Bags, PluginSpec, cacheable_seed, cached_fit, hookimpl

from .codebooks import seed_of, training_sample
from .lasso import LassoStats, lasso_codes
from .normalization import l2_normalize


#: The ``lasso`` parameter's values.
LASSO_SOLVERS = ("homotopy", "cd")


class SparseCoding(Aggregator):
    """Lasso sparse codes on a learned dictionary, max pooled.

    Parameters
    ----------
    n_atoms : int
        Dictionary size K (output dimension).
    alpha : float
        Sparsity penalty lambda (scikit-learn's ``alpha``), used for learning and coding.
    normalize_descriptors : bool
        L2-normalise descriptors before learning and coding.
    positive : bool
        Non-negative codes.
    max_training_descriptors : int
        The dictionary is learned on at most this many descriptors (seeded draw).
    dict_iter : int
        Passes (``max_iter``) of the mini-batch dictionary learning over the sample.
    batch_size : int
        Mini-batch size of the dictionary learning.
    chunk_descriptors : int
        Descriptors coded per call of the lasso solver (bounds memory: ``chunk x K`` floats, a few times).
    lasso : {"homotopy", "cd"}
        Lasso solver of both steps: the batched homotopy (default) or scikit-learn's coordinate descent
        (the reference); the objective is the same.
    homotopy_path : {"compiled", "lockstep"}
        Where the homotopy runs each descriptor's lasso path (:func:`~lfabench_plugins.aggregators.lasso.
        lasso_codes`'s ``path``): the compiled kernel (default, 3-4x faster) or the lock-step NumPy form, which
        SC's records made before the kernel ran (``lfabench reproduce`` reruns such a record with it). Where
        rounding decides a path unmarked, the two give other codes, and the dictionary learning carries that on.
    cache : bool or str
        Cache the dictionary keyed on the training sample and parameters.
    random_state : int or None
    """

    def __init__(self, n_atoms: int = 256, alpha: float = 0.15, normalize_descriptors: bool = True,
                 positive: bool = False, max_training_descriptors: int = 50_000, dict_iter: int = 10,
                 batch_size: int = 256, chunk_descriptors: int = 20_000, lasso: str = "homotopy",
                 homotopy_path: Literal["compiled", "lockstep"] = "compiled", cache: bool | str = False,
                 random_state=None):
        self.n_atoms = n_atoms
        self.alpha = alpha
        self.normalize_descriptors = normalize_descriptors
        self.positive = positive
        self.max_training_descriptors = max_training_descriptors
        self.dict_iter = dict_iter
        self.batch_size = batch_size
        self.chunk_descriptors = chunk_descriptors
        self.lasso = lasso
        self.homotopy_path = homotopy_path
        self.cache = cache
        self.random_state = random_state

    def _prepare(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        return l2_normalize(X) if self.normalize_descriptors else X

    def _check_lasso(self):
        if self.lasso not in LASSO_SOLVERS:
            raise ValueError(f"SparseCoding: lasso must be one of {LASSO_SOLVERS}, got {self.lasso!r}")

    independent_rows = True  # each descriptor's lasso code is its own; max-pooled per image

    #: Records without ``homotopy_path`` ran every path in lock-step (the compiled kernel came later).
    introduced_params = {"homotopy_path": "lockstep"}

    def _fit(self, bags: Bags, y):
        from sklearn.decomposition import MiniBatchDictionaryLearning

        from .lasso_dictionary import HomotopyDictionaryLearning

        self._check_lasso()
        if self.alpha <= 0:
            raise ValueError(f"SparseCoding: alpha must be > 0, got {self.alpha}")
        sample = training_sample(bags.descriptors, self.max_training_descriptors, self.random_state)
        seed = seed_of(self.random_state)
        if sample.shape[0] < self.n_atoms:
            raise ValueError(f"SparseCoding: {sample.shape[0]} training descriptors for n_atoms={self.n_atoms}")

        def fit():
            common = {"n_components": int(self.n_atoms), "alpha": float(self.alpha), "max_iter": int(self.dict_iter),
                      "batch_size": int(self.batch_size), "fit_algorithm": "cd", "positive_code": bool(self.positive),
                      "random_state": seed}
            dl = (HomotopyDictionaryLearning(**common, homotopy_path=self.homotopy_path) if self.lasso == "homotopy"
                  else MiniBatchDictionaryLearning(**common))
            return {"dictionary": dl.fit(self._prepare(sample)).components_}

        params = {"n_atoms": int(self.n_atoms), "alpha": float(self.alpha), "dict_iter": int(self.dict_iter),
                  "batch_size": int(self.batch_size), "positive": bool(self.positive),
                  "normalize_descriptors": bool(self.normalize_descriptors), "lasso": str(self.lasso),
                  "seed": cacheable_seed(self.random_state)}
        if self.lasso == "homotopy":  # coordinate descent never runs the path: its dictionary does not depend on it
            params["homotopy_path"] = str(self.homotopy_path)
        self.dictionary_ = cached_fit("sc-dictionary", f"K={self.n_atoms}", sample, params, fit,
                                      self.cache if params["seed"] is not None else False)["dictionary"]

    def codes(self, X: np.ndarray) -> np.ndarray:
        """``(N, K)`` lasso codes of descriptors ``X`` (``(N, d)``), by the ``lasso`` solver.

        scikit-learn warns once per lasso that stops at ``max_iter`` (thousands of lines on a dataset);
        those warnings are counted in ``convergence_warnings_`` and reported once per transform.
        """
        from sklearn.decomposition import sparse_encode
        from sklearn.exceptions import ConvergenceWarning

        self._check_lasso()
        if self.lasso == "homotopy":
            stats = LassoStats()
            U = lasso_codes(self._prepare(X), self.dictionary_, float(self.alpha), positive=bool(self.positive),
                            max_iter=1000, stats=stats, path=self.homotopy_path)
            self.convergence_warnings_ = getattr(self, "convergence_warnings_", 0) + len(stats.convergence_warnings)
            return U
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ConvergenceWarning)
            U = sparse_encode(self._prepare(X), self.dictionary_, algorithm="lasso_cd", alpha=float(self.alpha),
                              positive=bool(self.positive), max_iter=1000)
        for w in caught:
            if issubclass(w.category, ConvergenceWarning):
                self.convergence_warnings_ = getattr(self, "convergence_warnings_", 0) + 1
            else:  # anything else is passed on unchanged
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        return U

    def _transform(self, bags: Bags) -> np.ndarray:
        from sklearn.exceptions import ConvergenceWarning
        from tqdm.auto import tqdm

        m, K = bags.n_samples, self.dictionary_.shape[0]
        out = np.zeros((m, K))
        off = bags.offsets
        counts = bags.counts
        start = 0
        self.convergence_warnings_ = 0
        # lasso coding is the slow part (minutes on a full dataset): show progress on a terminal
        bar = tqdm(total=m, desc="sc: lasso codes", unit="sample", leave=False,
                   disable=None if bags.n_descriptors > 2 * self.chunk_descriptors else True)
        while start < m:
            # a chunk of whole samples holding about chunk_descriptors descriptors (at least one sample)
            stop = max(start + 1, int(np.searchsorted(off, off[start] + self.chunk_descriptors, side="right")) - 1)
            stop = min(stop, m)
            lo, hi = off[start], off[stop]
            if hi > lo:
                U = np.abs(self.codes(bags.descriptors[lo:hi]))
                full = np.flatnonzero(counts[start:stop] > 0)
                out[start + full] = np.maximum.reduceat(U, off[start:stop][full] - lo, axis=0)
            bar.update(stop - start)
            start = stop
        bar.close()
        if self.convergence_warnings_:
            warnings.warn(f"SparseCoding: the lasso stopped at max_iter=1000 without converging "
                          f"{self.convergence_warnings_} time(s) while coding {m} samples (reported once)",
                          ConvergenceWarning, stacklevel=3)
        return l2_normalize(out).astype(np.float32)


@hookimpl
def lfabench_aggregators():
    return [PluginSpec("sc", SparseCoding, "Sparse coding: learned dictionary, lasso codes, max pooling, L2 "
                                           "(Ge, Ke & Sun 2013)")]
