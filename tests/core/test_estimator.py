"""lfabench's parameter base (no scikit-learn import) keeps scikit-learn's ``BaseEstimator`` contract."""

from __future__ import annotations

import pytest
from sklearn.base import BaseEstimator, clone
from sklearn.exceptions import NotFittedError

from lfabench.estimator import Estimator, not_fitted
from lfabench.lazy import LazyModule


class Inner(Estimator):
    def __init__(self, a: int = 1, b=None):
        self.a = a
        self.b = b


class Outer(Estimator):
    def __init__(self, inner=None, c: float = 0.5):
        self.inner = inner
        self.c = c


class SkInner(BaseEstimator):  # the same classes on scikit-learn's base: the reference
    def __init__(self, a: int = 1, b=None):
        self.a = a
        self.b = b


class SkOuter(BaseEstimator):
    def __init__(self, inner=None, c: float = 0.5):
        self.inner = inner
        self.c = c


def test_get_params_equals_scikit_learns_shallow_and_deep():
    ours, ref = Outer(Inner(2, "x"), 0.1), SkOuter(SkInner(2, "x"), 0.1)
    assert ours.get_params(deep=False).keys() == ref.get_params(deep=False).keys()
    deep_ours = {k: v for k, v in ours.get_params(deep=True).items() if k != "inner"}
    deep_ref = {k: v for k, v in ref.get_params(deep=True).items() if k != "inner"}
    assert deep_ours == deep_ref == {"inner__a": 2, "inner__b": "x", "c": 0.1}


def test_set_params_reaches_nested_estimators_and_refuses_unknown_names():
    est = Outer(Inner())
    assert est.set_params(c=2.0, inner__a=7) is est
    assert (est.c, est.inner.a) == (2.0, 7)
    with pytest.raises(ValueError, match="Invalid parameter 'nope'"):
        est.set_params(nope=1)
    with pytest.raises(ValueError, match="Invalid parameter 'nope'"):
        SkOuter().set_params(nope=1)  # the reference refuses the same way


def test_sklearn_clone_gives_an_unfitted_copy_with_the_same_parameters():
    est = Outer(Inner(3), 0.25)
    est.fitted_ = True
    copy = clone(est)
    assert type(copy) is Outer and copy is not est and copy.inner is not est.inner
    assert (copy.c, copy.inner.a) == (0.25, 3)
    assert not hasattr(copy, "fitted_")


def test_repr_names_the_changed_parameters_as_scikit_learn_does():
    assert repr(Inner(a=5)) == "Inner(a=5)" and repr(SkInner(a=5)) == "SkInner(a=5)"
    assert repr(Inner()) == "Inner()"


def test_varargs_constructors_are_refused_as_scikit_learn_refuses_them():
    class Bad(Estimator):
        def __init__(self, *args):
            self.args = args

    with pytest.raises(RuntimeError, match="no \\*args"):
        Bad().get_params()


def test_not_fitted_raises_scikit_learns_error():
    with pytest.raises(NotFittedError):
        not_fitted(Inner(), "coef_")
    est = Inner()
    est.coef_ = 1
    not_fitted(est, "coef_")  # fitted: nothing raised


def test_lazy_module_imports_on_first_attribute():
    lazy = LazyModule("json")
    assert "not imported" in repr(lazy)
    assert lazy.dumps([1]) == "[1]" and "imported" in repr(lazy)
    with pytest.raises(ModuleNotFoundError):
        LazyModule("no_such_module_here").anything
