"""The aggregator estimator API (scikit-learn conventions) shared by every aggregator plugin.

An aggregator maps a :class:`~lfabench.bags.Bags` of ``m`` samples to an ``(m, D)``
array of global vectors:

* hyper-parameters are ``__init__`` keyword arguments, stored unchanged under the
  same names (so ``get_params``/``set_params``/``sklearn.base.clone`` work);
* ``fit(bags, y=None) -> self`` learns state whose attribute names end in ``_``;
  unsupervised aggregators ignore ``y``; semi-supervised ones read ``-1`` as
  "unlabelled" (scikit-learn's convention);
* ``transform(bags) -> ndarray (m, D)`` works on any bags of the fitted dimension;
* ``fit_transform(bags, y=None) -> ndarray (m, D)`` is ``fit`` then ``transform`` of the same bags, bit for
  bit; a method that computes the training vectors while fitting returns them instead of aggregating the
  samples again;
* ``independent_rows = True`` says that ``transform`` computes each sample's row from that sample alone,
  bit for bit whatever samples it is given with: a run then aggregates every image once
  (``fit_transform`` on the fit samples, ``transform`` on the others; :mod:`lfabench.run`);
* ``random_state`` (int, ``RandomState`` or ``None``) makes ``fit`` reproducible;
* an aggregator whose output dimensions are made of training descriptors (prototypes) may say
  which, with ``prototype_support() -> PrototypeSupport``: the run keeps it (``prototypes.npz``)
  and ``lfabench explain`` shows the image patches behind each dimension.

A :class:`Searcher` is the other kind of aggregator plugin: a method that is not one vector per image (a
match kernel such as ASMK) fits the same way, then indexes a database (``index(bags)``) and scores queries
against it itself (``search(bags) -> (t, n_db)`` similarities); a protocol that can score it does so with
the same metric code as vectors (``Evaluator.evaluate_search``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .bags import Bags, as_bags
from .estimator import Estimator, not_fitted

if TYPE_CHECKING:  # scipy.sparse costs a third of a second at start-up; only annotations name it here
    import scipy.sparse as sp

__all__ = ["Aggregator", "FitDataError", "PrototypeSupport", "Searcher", "SearcherError", "UndefinedCriterionError",
           "annotated_class_sizes", "check_labels", "describe_class_sizes", "is_searcher", "unlabelled_mask"]


class FitDataError(ValueError):
    """The bags given to ``fit`` cannot train the aggregator as configured (e.g. fewer descriptors than
    clusters): a setting the user can change, stated in one message."""


class UndefinedCriterionError(ValueError):
    """A supervised method's criterion is undefined for the labels it is given (e.g. a within-class scatter
    when every class has one annotated sample); the message names the criterion and the class counts.
    Raised by :meth:`Aggregator.check_fit_labels`, before any descriptor is extracted when a run checks it."""


@dataclass(frozen=True)
class PrototypeSupport:
    """Which fit descriptors make each output dimension, as an aggregator states it.

    ``selection``: ``(N_fit, P)`` sparse, column ``p`` the weights of the fit descriptors (rows in the
    order of the bags given to ``fit``) in output dimension (prototype) ``p``; ``weight``: ``(P,)`` the
    importance of each prototype; ``weight_definition``: what ``weight`` is, in words (it reaches the
    run record and ``lfabench explain``'s figure).
    """

    selection: sp.spmatrix
    weight: np.ndarray
    weight_definition: str


class Aggregator(Estimator):
    """Base class for aggregators. Subclasses implement ``_fit(bags, y)`` and ``_transform(bags)``.

    Class attributes
    ----------------
    supervised : bool
        ``fit`` needs ``y`` (the runner passes the protocol's training labels).
    semi_supervised : bool
        ``fit`` accepts ``y`` with ``-1`` for unlabelled samples.
    """

    supervised: bool = False
    semi_supervised: bool = False
    #: Parameters each of which needs at least as many training descriptors as its value (``n_clusters``: a
    #: k-means codebook): ``fit`` refuses fewer with a :class:`FitDataError` before any work.
    fit_size_params: tuple[str, ...] = ()
    #: ``transform`` gives each sample the same row, bit for bit, whatever other samples (and order) it is given
    #: with, and ``fit_transform`` gives the fit samples those rows: a run then takes the fit samples' vectors from
    #: ``fit_transform`` and transforms only the others. False (the default) for a method whose samples share
    #: arithmetic in a batch (zero-padded batches, a sum split at a block boundary), whose last bits depend on
    #: the company: a run then transforms every scored sample in one call after ``fit``. A property where a
    #: parameter decides it (FV's ``occupancy_sum``) or the BLAS does (rows that are their own only through matrix
    #: products: :func:`lfabench.gemm_rows.gemm_rows_are_own`); a run reads it from the configured instance.
    independent_rows: bool = False

    def fit(self, bags, y=None):
        """Learn the aggregator from ``bags`` (``m`` samples) and optional labels ``y`` (``(m,)`` or ``(m, c)``)."""
        self.validate_params()  # set_params may have changed them since construction
        bags = as_bags(bags)
        if bags.n_descriptors == 0:
            raise ValueError(f"{type(self).__name__}.fit: the bags hold no descriptors at all")
        self._check_fit_size(bags)
        if y is not None:
            y = np.asarray(y)
            if y.shape[0] != bags.n_samples:
                raise ValueError(f"{type(self).__name__}.fit: y has {y.shape[0]} rows for {bags.n_samples} samples")
        elif self.supervised and not self.semi_supervised:
            raise ValueError(f"{type(self).__name__} is supervised: fit(bags, y) needs labels y")
        if y is not None and (self.supervised or self.semi_supervised):
            self.check_fit_labels(y)
        self.n_features_in_ = bags.dim
        self._fit(bags, y)
        return self

    def transform(self, bags) -> np.ndarray:
        """Aggregate each sample of ``bags`` into one vector: returns ``(m, D)``."""
        not_fitted(self, "n_features_in_")
        bags = as_bags(bags)
        if bags.dim != self.n_features_in_:
            raise ValueError(f"{type(self).__name__}.transform: descriptors have dimension {bags.dim}, "
                             f"the aggregator was fitted on dimension {self.n_features_in_}")
        out = self._transform(bags)
        if out.shape[0] != bags.n_samples:  # a contract check on the subclass, cheap
            raise RuntimeError(f"{type(self).__name__}._transform returned {out.shape[0]} rows for "
                               f"{bags.n_samples} samples")
        return out

    def _check_fit_size(self, bags: Bags) -> None:
        """:class:`FitDataError` when a parameter of ``fit_size_params`` exceeds the descriptors ``fit`` gets."""
        for name in self.fit_size_params:
            need = getattr(self, name, None)
            if isinstance(need, (int, np.integer)) and not isinstance(need, bool) and need > bags.n_descriptors:
                raise FitDataError(f"{type(self).__name__}: {name}={need} needs at least {need} training descriptors, "
                                   f"but the {bags.n_samples} samples it is fitted on hold {bags.n_descriptors}; "
                                   f"lower {name} (aggregator.params.{name}=...) or fit on more samples")

    def fit_transform(self, bags, y=None) -> np.ndarray:
        """``fit(bags, y)`` and the ``(m, D)`` vectors of the same ``bags``: exactly what ``transform(bags)``
        returns after the fit, bit for bit (the default computes just that). A method that aggregates the
        training samples while fitting overrides it to return those vectors rather than aggregate them again."""
        return self.fit(bags, y).transform(bags)

    def check_fit_labels(self, y) -> None:
        """Raise :class:`UndefinedCriterionError` when this method's criterion is undefined for labels ``y``
        (``(m,)``, ``-1`` = unlabelled), naming the criterion and the class counts; the default accepts any.

        Needs labels only, never descriptors: ``fit`` calls it first, and a run calls it with the labels the
        fit will see before any descriptor is extracted (:mod:`lfabench.annotation`)."""

    def record_info(self) -> dict:
        """Facts about the last fit for the run record (``fit_info`` in ``result.json``); JSON-able values.

        Default: the ``fit_info_`` attribute when the subclass sets one. Iterative methods put their
        training curve there as ``training_curve`` (the loss after each iteration or epoch), so a reader
        of the record can see that the fit converged.
        """
        return dict(getattr(self, "fit_info_", None) or {})

    def prototype_support(self) -> PrototypeSupport | None:
        """Which training descriptors make each output dimension (see :class:`PrototypeSupport`); None
        (the default) for aggregators whose dimensions are not made of descriptors."""
        return None

    # Subclasses override these two.
    def _fit(self, bags: Bags, y):  # pragma: no cover - abstract
        raise NotImplementedError

    def _transform(self, bags: Bags) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


class SearcherError(TypeError):
    """A :class:`Searcher` asked for what only a vector aggregator gives (``transform``): it has no vector per
    image; the message says what to call instead."""


class Searcher(Aggregator):
    """Base class for methods that index a database and search it themselves (no vector per image).

    A match kernel compares two images through their sets of local descriptors (ASMK: Tolias, Avrithis and
    Jégou, ICCV 2013), so it cannot hand the protocol one vector per image to rank by a distance. It follows
    the aggregator contract for everything but the vectors:

    * ``fit(bags, y=None) -> self``: as :meth:`Aggregator.fit` (a codebook, ...), on the protocol's fit samples;
    * ``index(bags) -> self``: the database, ``n_db`` samples of the fitted dimension (a sample without
      descriptors is indexed as matching nothing); a second call replaces the index;
    * ``search(bags) -> ndarray (t, n_db)`` float32: the similarity of each query sample to each indexed
      sample, in index order, **higher is more similar**; finite; a query without descriptors scores 0
      against every database sample (:meth:`search` never hands it to ``_search``);
    * ``transform`` raises :class:`SearcherError`.

    Subclasses implement ``_fit(bags, y)``, ``_index(bags)`` and ``_search(bags) -> (t, n_db)``. The protocol
    ranks each query's database by its row (ties to the lower database index), so a searcher whose scores are
    ``-||q - x||^2`` of some vectors scores exactly as those vectors do under the Euclidean ranking.
    ``record_info()`` is read after the database is indexed, so index statistics may go in ``fit_info_``.
    """

    #: This aggregator is a searcher (:func:`is_searcher`): a run indexes the database with it instead of
    #: transforming samples, and only an evaluator that scores searchers takes it.
    searches: bool = True
    independent_rows = False

    def fit(self, bags, y=None):
        """As :meth:`Aggregator.fit`; a database indexed before is dropped (index again after a fit)."""
        self.__dict__.pop("n_indexed_", None)
        return super().fit(bags, y)

    def index(self, bags) -> "Searcher":
        """Index the database ``bags`` (``n_db`` samples): the columns of every later :meth:`search`."""
        not_fitted(self, "n_features_in_")
        bags = self._check_dim(as_bags(bags), "index")
        self._index(bags)
        self.n_indexed_ = bags.n_samples
        return self

    def search(self, bags) -> np.ndarray:
        """``(t, n_db)`` float32 similarities of the ``t`` query samples of ``bags`` to the indexed database
        (higher: more similar); rows of queries without descriptors are zeros."""
        not_fitted(self, "n_features_in_")
        if not hasattr(self, "n_indexed_"):
            from sklearn.exceptions import NotFittedError

            raise NotFittedError(f"This {type(self).__name__} instance has no database indexed yet. Call 'index' "
                                 f"with the database's bags before 'search'.")
        bags = self._check_dim(as_bags(bags), "search")
        out = np.zeros((bags.n_samples, self.n_indexed_), dtype=np.float32)
        filled = np.flatnonzero(bags.counts > 0)
        if filled.size:
            part = bags if filled.size == bags.n_samples else bags.subset(filled)
            scores = np.asarray(self._search(part))
            if scores.shape != (filled.size, self.n_indexed_):
                raise RuntimeError(f"{type(self).__name__}._search returned shape {scores.shape} for "
                                   f"{filled.size} queries against {self.n_indexed_} indexed samples")
            if not np.issubdtype(scores.dtype, np.number) or not np.isfinite(scores).all():
                raise RuntimeError(f"{type(self).__name__}._search returned a non-finite or non-numeric score")
            out[filled] = scores
        if not np.isfinite(out).all():  # a finite float64 beyond float32's range
            raise RuntimeError(f"{type(self).__name__}._search returned a score beyond float32's range")
        return out

    def transform(self, bags) -> np.ndarray:
        raise SearcherError(f"{type(self).__name__} is a searcher: it gives no vector per image; index the database "
                            f"with index(bags), then score queries with search(bags)")

    def fit_transform(self, bags, y=None) -> np.ndarray:
        raise SearcherError(f"{type(self).__name__} is a searcher: it gives no vector per image; fit(bags, y), "
                            f"then index(bags) and search(bags)")

    def _check_dim(self, bags: Bags, step: str) -> Bags:
        if bags.dim != self.n_features_in_:
            raise ValueError(f"{type(self).__name__}.{step}: descriptors have dimension {bags.dim}, the searcher was "
                             f"fitted on dimension {self.n_features_in_}")
        return bags

    def _transform(self, bags: Bags) -> np.ndarray:  # pragma: no cover - transform never calls it
        raise SearcherError(f"{type(self).__name__} is a searcher: it gives no vector per image")

    # Subclasses override these two (and _fit).
    def _index(self, bags: Bags) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def _search(self, bags: Bags) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError


def is_searcher(aggregator) -> bool:
    """Whether ``aggregator`` indexes a database and searches it itself (:class:`Searcher`'s ``searches``)
    rather than giving one vector per image."""
    return getattr(aggregator, "searches", False) is True


def unlabelled_mask(y) -> np.ndarray:
    """``(m,)`` True where ``y`` marks a sample unlabelled: ``-1`` in ``(m,)`` labels (numbers or text), a row
    holding NaN in an ``(m, c)`` response matrix (scikit-learn's convention, the protocols' "unannotated")."""
    y = np.asarray(y)
    if y.ndim == 2:
        return np.isnan(y.astype(np.float64)).any(axis=1)
    return (y == -1) if y.dtype.kind in "iuf" else (y.astype(str) == "-1")


def check_labels(y, n_samples: int, allow_unlabelled: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Turn ``y`` into a float ``(m, c)`` response matrix.

    ``y`` is either an ``(m,)`` label vector (one-hot encoded, classes sorted;
    ``-1`` = unlabelled when ``allow_unlabelled``) or an ``(m, c)`` float
    response matrix (rows of NaN = unlabelled). Returns ``(Y, labelled_mask)``
    with unlabelled rows of ``Y`` set to zero.
    """
    y = np.asarray(y)
    if y.shape[0] != n_samples:
        raise ValueError(f"y has {y.shape[0]} rows for {n_samples} samples")
    if y.ndim == 2:
        Y = y.astype(np.float64)
        labelled = ~unlabelled_mask(Y)
        if not allow_unlabelled and not labelled.all():
            raise ValueError(f"y has NaN responses for {int((~labelled).sum())} samples (e.g. sample "
                             f"{int(np.flatnonzero(~labelled)[0])}); use the semi-supervised variant")
        Y[~labelled] = 0.0
        return Y, labelled
    if y.ndim != 1:
        raise ValueError(f"y must be (m,) labels or an (m, c) response matrix, got shape {y.shape}")
    labelled = ~unlabelled_mask(y)
    if not allow_unlabelled and not labelled.all():
        raise ValueError(f"y marks {int((~labelled).sum())} samples as unlabelled (-1), e.g. sample "
                         f"{int(np.flatnonzero(~labelled)[0])}; use the semi-supervised variant")
    if not labelled.any():
        raise ValueError("y has no labelled sample")
    classes, codes = np.unique(y[labelled], return_inverse=True)
    Y = np.zeros((n_samples, classes.size))
    Y[np.flatnonzero(labelled), codes] = 1.0
    return Y, labelled


def annotated_class_sizes(y) -> tuple[np.ndarray, np.ndarray]:
    """``(classes, sizes)``: the classes of the annotated samples of ``y`` (``(m,)`` labels, ``-1`` =
    unlabelled; an ``(m, c)`` response matrix counts one class per column, rows of NaN unlabelled), sorted, and
    how many annotated samples each has."""
    y = np.asarray(y)
    labelled = ~unlabelled_mask(y)
    if y.ndim == 2:
        return np.arange(y.shape[1]), (y[labelled] != 0).sum(axis=0).astype(np.int64)
    classes, sizes = np.unique(y[labelled], return_counts=True)
    return classes, sizes.astype(np.int64)


def describe_class_sizes(sizes) -> str:
    """The class counts in words for an error message: ``"4485 classes: 4485 with 1 annotated sample"`` or
    ``"15 classes: 3 with 1 annotated sample, 12 with 2-9"`` (sizes grouped as 1, 2-9, 10-99, 100+)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    groups = [("1 annotated sample", sizes == 1), ("2-9", (sizes >= 2) & (sizes <= 9)),
              ("10-99", (sizes >= 10) & (sizes <= 99)), ("100 or more", sizes >= 100)]
    parts = [f"{int(mask.sum())} with {name}" for name, mask in groups if mask.any()]
    return f"{sizes.size} classes" + (": " + ", ".join(parts) if parts else "")
