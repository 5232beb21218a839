"""The aggregator battery (scikit-learn's ``estimator_checks`` idea): checks ``check_<what>(est, bags, y)``.

Each check builds on small synthetic bags (:func:`~lfabench.testing.data.make_check_bags`:
3 classes x 8 samples, 8-D descriptors), so codebooks of up to 16 entries fit. Pass
``bags``/``y`` for aggregators that need other data.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from ..bags import Bags, EmptySampleWarning
from .core import Case, assert_json, bind
from .data import make_check_bags


def _fit(est, bags, y):
    return clone(est).fit(bags, y)


def check_fit_returns_self(est, bags, y):
    e = clone(est)
    assert e.fit(bags, y) is e, "fit must return self"


def check_output_shape_and_dtype(est, bags, y):
    X = _fit(est, bags, y).transform(bags)
    assert isinstance(X, np.ndarray), f"transform must return an ndarray, got {type(X).__name__}"
    assert X.ndim == 2 and X.shape[0] == bags.n_samples, f"transform returned shape {X.shape}"
    assert np.issubdtype(X.dtype, np.floating), f"transform must return floats, got {X.dtype}"


def check_finite_output(est, bags, y):
    X = _fit(est, bags, y).transform(bags)
    assert np.isfinite(X).all(), "transform returned NaN or inf"


def check_deterministic_with_random_state(est, bags, y):
    if "random_state" not in est.get_params():
        return
    a = clone(est).set_params(random_state=0).fit(bags, y).transform(bags)
    b = clone(est).set_params(random_state=0).fit(bags, y).transform(bags)
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg="same random_state gave different output")


def _empty_inserted(bags: Bags) -> Bags:
    """Samples 0-1 of ``bags``, a sample without descriptors, then samples 2-3 (five samples)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptySampleWarning)
        empty = Bags(np.empty((0, bags.dim), bags.dtype), [0, 0])
        return Bags.concatenate([bags[:2], empty, bags[2:4]])


def _second_emptied(bags: Bags) -> Bags:
    """``bags`` with sample 1's descriptors removed (an empty sample among the fit samples)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptySampleWarning)
        arrays = list(bags)
        arrays[1] = np.empty((0, bags.dim), bags.dtype)
        return Bags.from_list(arrays)


def check_empty_sample_transform(est, bags, y):
    e = _fit(est, bags, y)
    mixed = _empty_inserted(bags)
    X = e.transform(mixed)
    assert X.shape[0] == 5 and np.isfinite(X).all(), "an empty sample must aggregate to a finite row"
    np.testing.assert_allclose(X[[0, 1, 3, 4]], e.transform(bags[:4]), rtol=1e-4, atol=1e-5,
                               err_msg="adding an empty sample changed the other samples' vectors")


def check_fit_with_empty_sample(est, bags, y):
    holed = _second_emptied(bags)
    X = _fit(est, holed, y).transform(holed)
    assert np.isfinite(X).all(), "fitting with an empty sample gave non-finite output"


def check_transform_before_fit_raises(est, bags, y):
    try:
        clone(est).transform(bags)
    except NotFittedError:
        return
    raise AssertionError("transform before fit must raise sklearn's NotFittedError")


def check_dimension_mismatch_raises(est, bags, y):
    e = _fit(est, bags, y)
    other = Bags(np.ones((4, bags.dim + 1), bags.dtype), [0, 2, 4])
    try:
        e.transform(other)
    except ValueError:
        return
    raise AssertionError("transform on descriptors of another dimension must raise ValueError")


def check_params_roundtrip(est, bags, y):
    params = est.get_params()
    e2 = clone(est)
    assert e2.get_params() == params, "clone changed the hyper-parameters"
    e = _fit(est, bags, y)
    assert e.get_params() == params, "fit must not change the hyper-parameters"
    learned = [k for k in vars(e) if k.endswith("_") and not k.startswith("_")]
    assert learned, "fit must set learned attributes ending in '_'"


def check_subset_consistency(est, bags, y):
    """Aggregation is per sample: transforming a subset equals the subset of the transform."""
    e = _fit(est, bags, y)
    full = e.transform(bags)
    idx = np.array([5, 0, 3])
    np.testing.assert_allclose(e.transform(bags.subset(idx)), full[idx], rtol=1e-4, atol=1e-5)


def check_fit_transform(est, bags, y):
    """``fit_transform(bags, y)`` is ``fit(bags, y)`` then ``transform(bags)``, bit for bit (a run takes the fit
    samples' vectors from it when the rows are independent)."""
    if not callable(getattr(est, "fit_transform", None)):
        return
    once = np.asarray(clone(est).fit_transform(bags, y))
    reference = _fit(est, bags, y).transform(bags)
    assert once.dtype == reference.dtype and once.shape == reference.shape, (
        f"fit_transform gave {once.dtype} {once.shape}, fit then transform {reference.dtype} {reference.shape}")
    assert np.array_equal(once, reference, equal_nan=True), "fit_transform differs from fit then transform"


def check_independent_rows(est, bags, y):
    """An aggregator declaring ``independent_rows`` gives each sample the same row, bit for bit, whatever other
    samples it is transformed with and in whatever order."""
    if getattr(est, "independent_rows", False) is not True:
        return
    e = _fit(est, bags, y)
    full = e.transform(bags)
    for idx in (np.array([5, 0, 3]), np.arange(bags.n_samples)[::-1], np.array([1, 2])):
        part = e.transform(bags.subset(idx))
        assert np.array_equal(part, full[idx]), (
            f"independent_rows: transform of samples {idx.tolist()[:5]} differs in its bits from the same rows of "
            f"the transform of all samples; declare independent_rows = False")


def check_record_info_json(est, bags, y):
    """What the run record stores about the fit (``record_info``) is JSON."""
    e = _fit(est, bags, y)
    info = e.record_info() if callable(getattr(e, "record_info", None)) else {}
    assert_json(info, "record_info()")


def check_prototype_support(est, bags, y):
    """``prototype_support()``, when an aggregator states one: one row per fit descriptor, one column and one
    finite weight per output dimension, and a definition of the weight (what ``lfabench explain`` shows)."""
    e = _fit(est, bags, y)
    support = e.prototype_support() if callable(getattr(e, "prototype_support", None)) else None
    if support is None:
        return
    dim = e.transform(bags).shape[1]
    assert support.selection.shape == (bags.n_descriptors, dim), (
        f"prototype_support().selection has shape {support.selection.shape}, expected "
        f"({bags.n_descriptors} fit descriptors, {dim} output dimensions)")
    weight = np.asarray(support.weight)
    assert weight.shape == (dim,) and np.isfinite(weight).all(), f"prototype weights: shape {weight.shape}, finite"
    assert isinstance(support.weight_definition, str) and support.weight_definition, "weight_definition is empty"


ALL_CHECKS = (check_fit_returns_self, check_output_shape_and_dtype, check_finite_output,
              check_deterministic_with_random_state, check_empty_sample_transform, check_fit_with_empty_sample,
              check_transform_before_fit_raises, check_dimension_mismatch_raises, check_params_roundtrip,
              check_subset_consistency, check_fit_transform, check_independent_rows, check_record_info_json,
              check_prototype_support)


# ------------------------------------------------------------------ searchers
def _indexed(est, bags, y):
    """A clone fitted on ``bags`` and holding them indexed."""
    return _fit(est, bags, y).index(bags)


def check_search_shape_and_dtype(est, bags, y):
    """``search`` gives ``(t, n_db)`` float32, one column per indexed sample."""
    S = _indexed(est, bags, y).search(bags[:5])
    assert isinstance(S, np.ndarray) and S.dtype == np.float32, f"search must return float32, got {type(S)}"
    assert S.shape == (5, bags.n_samples), f"search of 5 queries over {bags.n_samples} indexed gave {S.shape}"


def check_search_finite(est, bags, y):
    assert np.isfinite(_indexed(est, bags, y).search(bags)).all(), "search returned NaN or inf"


def check_search_deterministic_with_random_state(est, bags, y):
    if "random_state" not in est.get_params():
        return
    a = _indexed(clone(est).set_params(random_state=0), bags, y).search(bags)
    b = _indexed(clone(est).set_params(random_state=0), bags, y).search(bags)
    assert np.array_equal(a, b), "same random_state gave different scores"


def check_search_query_rows_independent(est, bags, y):
    """A query's scores do not depend on the other queries it is searched with (the protocol searches in blocks)."""
    e = _indexed(est, bags, y)
    full = e.search(bags)
    idx = np.array([5, 0, 3])
    assert np.array_equal(e.search(bags.subset(idx)), full[idx]), "a query's scores changed with its company"


def check_search_empty_samples(est, bags, y):
    """A query without descriptors scores 0 everywhere; a database sample without descriptors is indexed (a
    column) and the others' scores stay finite."""
    e = _indexed(est, bags, y)
    mixed = _empty_inserted(bags)
    S = e.search(mixed)
    assert S.shape == (5, bags.n_samples) and not S[2].any(), "an empty query must score 0 against every sample"
    assert np.array_equal(S[[0, 1, 3, 4]], e.search(bags[:4])), "an empty query changed the other queries' scores"
    e.index(mixed)
    S = e.search(bags[:3])
    assert S.shape == (3, 5) and np.isfinite(S).all(), "a database with an empty sample gave non-finite scores"


def check_search_fit_with_empty_sample(est, bags, y):
    holed = _second_emptied(bags)
    S = _indexed(est, holed, y).search(holed)
    assert np.isfinite(S).all(), "fitting and indexing with an empty sample gave non-finite scores"


def check_search_before_index_raises(est, bags, y):
    for e in (clone(est), _fit(est, bags, y)):
        try:
            e.search(bags)
        except NotFittedError:
            continue
        raise AssertionError("search before fit and index must raise sklearn's NotFittedError")


def check_searcher_gives_no_vectors(est, bags, y):
    """``transform`` of a searcher says what to call instead (a run never calls it)."""
    from ..aggregate import SearcherError

    try:
        _fit(est, bags, y).transform(bags)
    except SearcherError:
        return
    raise AssertionError("a searcher's transform must raise SearcherError")


def check_search_dimension_mismatch_raises(est, bags, y):
    e = _indexed(est, bags, y)
    other = Bags(np.ones((4, bags.dim + 1), bags.dtype), [0, 2, 4])
    for step in (e.search, e.index):
        try:
            step(other)
        except ValueError:
            continue
        raise AssertionError(f"{step.__name__} on descriptors of another dimension must raise ValueError")


def check_search_record_info_json(est, bags, y):
    """What the run record stores (``record_info``, read after indexing) is JSON."""
    e = _indexed(est, bags, y)
    assert_json(e.record_info() if callable(getattr(e, "record_info", None)) else {}, "record_info()")


SEARCHER_CHECKS = (check_fit_returns_self, check_search_shape_and_dtype, check_search_finite,
                   check_search_deterministic_with_random_state, check_search_query_rows_independent,
                   check_search_empty_samples, check_search_fit_with_empty_sample, check_search_before_index_raises,
                   check_searcher_gives_no_vectors, check_search_dimension_mismatch_raises, check_params_roundtrip,
                   check_search_record_info_json)


def aggregator_checks(estimator, bags: Bags | None = None, y=None, skip=(), select=None,
                      expected_failures=None) -> list[Case]:
    """The checks bound to ``estimator`` and data, as zero-argument callables named after the check; a searcher
    (:class:`lfabench.aggregate.Searcher`) gets the searcher battery (fit, index, search) instead of the vector one.

    ``select``/``skip``: check names to keep/drop; ``expected_failures``: ``{check name: reason}``.
    """
    from ..aggregate import is_searcher

    if bags is None:
        bags, y_default = make_check_bags()
        y = y_default if y is None else y
    checks = SEARCHER_CHECKS if is_searcher(estimator) else ALL_CHECKS
    return bind("aggregator", checks, (estimator, bags, y), select, skip, expected_failures)


def check_aggregator(estimator, bags: Bags | None = None, y=None, skip=()) -> None:
    """Run every check; raises AssertionError naming the first failing one."""
    for check in aggregator_checks(estimator, bags, y, skip):
        try:
            check()
        except AssertionError as exc:
            raise AssertionError(f"{type(estimator).__name__} fails {check.__name__}: {exc}") from exc
