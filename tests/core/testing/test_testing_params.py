"""``check_param_validation``: the kit's parameter check fails a plugin whose parameters escape the validator."""

from __future__ import annotations

import pytest

from lfabench.aggregate import Aggregator
from lfabench.evaluate import Evaluator
from lfabench.testing import check_param_validation, make_check_bags


class MeanPool(Aggregator):
    """Declared: an annotated count and a typed default."""

    def __init__(self, scale: float = 1.0, clip: bool = False):
        self.scale = scale
        self.clip = clip

    def _fit(self, bags, y):
        return self

    def _transform(self, bags):
        import numpy as np

        return np.stack([bags[i].mean(axis=0) for i in range(bags.n_samples)]) * self.scale


class Undeclared(Evaluator):
    def __init__(self, weights=None):  # no annotation, a None default: nothing to check a value against
        self.weights = weights


class PlainFactory:
    """Not an Estimator: its constructor does not run the validator."""

    def __init__(self, k: int = 1):
        self.k = k


def test_a_declared_aggregator_passes_on_every_route():
    bags, y = make_check_bags()
    check_param_validation("aggregator", "mean_pool", MeanPool, {}, bags, y)


def test_an_undeclared_parameter_fails_naming_it():
    with pytest.raises(AssertionError, match=r"evaluator 'undeclared': parameter\(s\) weights declare nothing"):
        check_param_validation("evaluator", "undeclared", Undeclared, {})


def test_a_constructor_that_skips_the_validator_fails():
    with pytest.raises(AssertionError, match=r"the constructor accepts k=InvalidValue\(\)"):
        check_param_validation("evaluator", "plain", PlainFactory, {})


def test_a_default_its_declaration_refuses_fails():
    def factory(n: int = 0.5):
        return n

    with pytest.raises(AssertionError, match="a default is refused by its own declaration"):
        check_param_validation("dataset", "bad_default", factory, {})


def test_it_runs_on_every_registered_plugin_through_plugin_checks():
    from lfabench.testing import plugin_checks

    names = [case.name for case in plugin_checks("aggregator", "bow")]
    assert names[-1] == "check_param_validation"
    assert [c.name for c in plugin_checks("aggregator", "bow", select=["check_param_validation"])] == [
        "check_param_validation"]
