"""No silent numbers: features a search cannot score honestly, and metrics outside their range, fail the run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lfabench import PluginSpec, hookimpl
from lfabench.aggregate import Aggregator
from lfabench.checks import OutputError, check_features, check_metrics
from lfabench.evaluate import Evaluator
from lfabench.registry import get_registry, reset_registry
from lfabench.run import run_benchmark
from lfabench.testing.data import make_check_bags_dataset, make_check_retrieval_dataset

#: What a hostile or broken aggregator returns, and a word the error names.
BAD_FEATURES = {
    "nan": (lambda m: np.where(np.arange(m)[:, None] == 1, np.nan, np.ones((m, 4))), "non-finite"),
    "inf": (lambda m: np.full((m, 4), np.inf), "non-finite"),
    "beyond_float32": (lambda m: np.arange(m * 4, dtype=np.float64).reshape(m, 4) * 1e38 + 1e39, "float32"),
    "zero_width": (lambda m: np.zeros((m, 0)), "zero width"),
    "complex": (lambda m: np.ones((m, 4)) * (1 + 1j), "complex"),
    "objects": (lambda m: np.array([[object()] * 4] * m), "not numbers"),
    "one_dimensional": (lambda m: np.ones(m), "shape"),
}


class Hostile(Aggregator):
    """Returns the features named by ``kind`` (one of BAD_FEATURES)."""

    def __init__(self, kind: str = "nan", random_state=None):
        self.kind = kind
        self.random_state = random_state

    def _fit(self, bags, y):
        pass

    def _transform(self, bags):
        return bags.means() if self.kind == "mean" else BAD_FEATURES[self.kind][0](bags.n_samples)


class Boastful(Evaluator):
    """k-NN's split, and whatever metric value ``value`` says."""

    def __init__(self, value: float = 150.0, name: str = "accuracy"):
        self.value, self.name = value, name

    def split(self, dataset, seed):
        from lfabench_plugins.evaluators.knn import KNN

        return KNN().split(dataset, seed)

    def evaluate(self, features, dataset, split):
        return {self.name: self.value}


class Bounded(Boastful):
    metric_ranges = {"loss": (0.0, 1.0)}
    default_metric_range = None


class Plugins:
    @hookimpl
    def lfabench_datasets(self):
        return [PluginSpec("check_bags", make_check_bags_dataset, "classification bags (tests)"),
                PluginSpec("check_retrieval", make_check_retrieval_dataset, "retrieval bags (tests)")]

    @hookimpl
    def lfabench_aggregators(self):
        return [PluginSpec("hostile", Hostile, "returns broken features (tests)")]

    @hookimpl
    def lfabench_evaluators(self):
        return [PluginSpec("boastful", Boastful, "returns any metric (tests)")]


@pytest.fixture
def plugins():
    reset_registry()
    get_registry().register(Plugins(), name="tests:checks")
    yield
    reset_registry()


def _run(tmp_path, dataset, aggregator, evaluator):
    cfg = {"dataset": {"name": dataset, "params": {}}, "descriptor": {"name": "native", "params": {}},
           "aggregator": aggregator, "evaluator": evaluator, "seed": 0, "cache": False}
    with pytest.raises(OutputError) as info:
        run_benchmark(cfg, tmp_path / "run")
    record = json.loads((tmp_path / "run" / "result.json").read_text())
    return info.value, record


@pytest.mark.parametrize("kind", sorted(BAD_FEATURES))
def test_knn_refuses_features_it_cannot_score(tmp_path, plugins, kind):
    error, record = _run(tmp_path, "check_bags", {"name": "hostile", "params": {"kind": kind}},
                         {"name": "knn", "params": {}})
    assert "aggregator 'hostile'" in str(error) and BAD_FEATURES[kind][1] in str(error)
    assert record["status"] == "failed" and record["error"]["stage"] == "transform"
    assert record["metrics"] in ({}, None)


@pytest.mark.parametrize("search", ["full", "exact", "auto"])
@pytest.mark.parametrize("kind", ["nan", "beyond_float32", "zero_width"])
def test_retrieval_refuses_them_in_every_search_mode(tmp_path, plugins, kind, search):
    """NaN vectors scored mAP 33.3 with search=exact; float32 overflow gave mAP 100 or 0 by search mode."""
    params = {} if search == "full" else {"search": search}
    error, record = _run(tmp_path, "check_retrieval", {"name": "hostile", "params": {"kind": kind}},
                         {"name": "retrieval", "params": params})
    assert "aggregator 'hostile'" in str(error) and record["status"] == "failed"


def test_the_first_bad_value_is_located():
    X = np.ones((5, 3), np.float32)
    X[3, 2] = np.nan
    with pytest.raises(OutputError, match=r"1 non-finite .* row 3 \(sample 'd'\), column 2"):
        check_features(X, "vlad", ids=list("abcde"))


def test_good_features_pass_unchanged():
    X = np.random.default_rng(0).normal(size=(10, 4)).astype(np.float32)
    assert check_features(X, "vlad") is X
    assert check_features(np.full((2, 2), 3e38), "vlad").shape == (2, 2)  # within float32's range
    assert check_features(np.ones((2, 2), np.int64), "bow").dtype == np.int64


@pytest.mark.parametrize("value", [150.0, -0.5, float("nan"), float("inf")])
def test_a_metric_outside_its_range_fails_the_run(tmp_path, plugins, value):
    """An evaluator's accuracy=150 was recorded with status ok."""
    error, record = _run(tmp_path, "check_bags", {"name": "hostile", "params": {"kind": "mean"}},
                         {"name": "boastful", "params": {"value": value}})
    assert "evaluator 'boastful'" in str(error) and "'accuracy'" in str(error)
    assert record["status"] == "failed" and record["error"]["stage"] == "evaluate"


def test_declared_ranges():
    check_metrics({"accuracy": 100.0, "mAP": 0}, Boastful(), "boastful")  # bounds included
    check_metrics({"loss": 0.5, "seconds": 1e6}, Bounded(), "bounded")    # no default range
    with pytest.raises(OutputError, match=r"'loss' = 2.0, outside its declared range \[0, 1\]"):
        check_metrics({"loss": 2.0}, Bounded(), "bounded")
    with pytest.raises(OutputError, match="not finite"):
        check_metrics({"seconds": float("inf")}, Bounded(), "bounded")
    for value in ("90", True, None, 1 + 0j):
        with pytest.raises(OutputError, match="not a real number"):
            check_metrics({"accuracy": value}, Boastful(), "boastful")
