"""The conformance kit itself: each battery catches a plugin that breaks its contract, checks are named and
selectable, declared expected failures are honoured (and reported when they pass), and
``lfabench plugins check NAME`` prints the report."""

from __future__ import annotations

import numpy as np
import pytest

from lfabench import Aggregator, PluginSpec, hookimpl
from lfabench.dataset import Dataset, DatasetNotFoundError
from lfabench.describe import Descriptor
from lfabench.evaluate import Evaluator, Split
from lfabench.registry import get_registry, reset_registry
from lfabench.testing import (
    aggregator_checks,
    dataset_checks,
    descriptor_checks,
    evaluator_checks,
    make_check_bags_dataset,
    parametrize,
    plugin_checks,
    run_cases,
)
from lfabench_plugins.evaluators.knn import KNN


class BatchNormalised(Aggregator):
    """Mean pooling divided by the batch's largest norm: transform of a subset != subset of transform."""

    def __init__(self, random_state=None):
        self.random_state = random_state

    def _fit(self, bags, y):
        self.dim_ = bags.dim

    def _transform(self, bags):
        X = bags.means()
        return X / max(np.linalg.norm(X, axis=1).max(), 1e-12)


class MeanPool(BatchNormalised):
    def _transform(self, bags):
        return bags.means()


def _status(results):
    return {r.name: r.status for r in results}


def test_aggregator_battery_catches_a_batch_dependent_transform():
    results = _status(run_cases(aggregator_checks(BatchNormalised())))
    assert results["check_subset_consistency"] == "fail"
    assert results["check_fit_returns_self"] == "pass"


def test_declared_expected_failure_is_xfail_and_a_passing_one_is_xpass():
    xfail = {"check_subset_consistency": "normalises over the batch"}
    assert _status(run_cases(aggregator_checks(BatchNormalised(), expected_failures=xfail)))[
        "check_subset_consistency"] == "xfail"
    stale = [r for r in run_cases(aggregator_checks(MeanPool(), expected_failures=xfail))
             if r.name == "check_subset_consistency"]
    assert stale[0].status == "xpass" and not stale[0].ok


class MisstatedPrototypes(MeanPool):
    """States one prototype column per descriptor dimension but forgets the last fit descriptor."""

    def prototype_support(self):
        import scipy.sparse as sp

        from lfabench.aggregate import PrototypeSupport

        return PrototypeSupport(sp.csc_matrix((self.n_rows_ - 1, self.dim_)), np.ones(self.dim_), "unit")

    def _fit(self, bags, y):
        self.dim_, self.n_rows_ = bags.dim, bags.n_descriptors


def test_aggregator_battery_checks_a_stated_prototype_support():
    assert _status(run_cases(aggregator_checks(MisstatedPrototypes())))["check_prototype_support"] == "fail"
    assert _status(run_cases(aggregator_checks(MeanPool())))["check_prototype_support"] == "pass"  # states none


class RowsClaimedIndependent(BatchNormalised):
    """Normalised over the batch, yet says its rows are independent (a run would take them from another batch)."""

    independent_rows = True


class FitTransformOfItsOwn(MeanPool):
    """A fit_transform that returns something else than fit then transform."""

    def fit_transform(self, bags, y=None):
        return self.fit(bags, y).transform(bags) * 2.0


def test_aggregator_battery_holds_independent_rows_and_fit_transform_to_their_word():
    assert _status(run_cases(aggregator_checks(RowsClaimedIndependent())))["check_independent_rows"] == "fail"
    assert _status(run_cases(aggregator_checks(BatchNormalised())))["check_independent_rows"] == "pass"  # claims none
    assert _status(run_cases(aggregator_checks(FitTransformOfItsOwn())))["check_fit_transform"] == "fail"
    assert _status(run_cases(aggregator_checks(MeanPool())))["check_fit_transform"] == "pass"


def test_checks_are_selectable_by_name_and_unknown_names_are_refused():
    cases = aggregator_checks(MeanPool(), select=["check_finite_output"])
    assert [c.name for c in cases] == ["check_finite_output"]
    assert "check_finite_output" not in [c.name for c in aggregator_checks(MeanPool(), skip=["check_finite_output"])]
    with pytest.raises(ValueError, match="check_no_such_thing"):
        aggregator_checks(MeanPool(), select=["check_no_such_thing"])
    with pytest.raises(ValueError, match="needs a reason"):
        aggregator_checks(MeanPool(), expected_failures={"check_finite_output": ""})


class NoisyDescriptor(Descriptor):
    """Draws fresh random descriptors at every call: not reproducible."""

    def __init__(self, n: int = 5):
        self.n = n

    def extract(self, image):
        rng = np.random.default_rng()
        return rng.normal(size=(self.n, 4)).astype(np.float32), np.zeros((self.n, 2), np.float32)


def test_descriptor_battery_catches_a_non_deterministic_extractor():
    results = _status(run_cases(descriptor_checks(NoisyDescriptor())))
    assert results["check_deterministic"] == "fail"
    assert results["check_describe_returns_bags"] == "pass"


class UnseededKNN(KNN):
    """Ignores the seed: a new split at every call."""

    def split(self, dataset, seed):
        rng = np.random.default_rng()
        perm = rng.permutation(dataset.n_samples)
        train, test = np.sort(perm[:18]), np.sort(perm[18:])
        return Split(fit_indices=train, fit_labels=dataset.labels[train], train_indices=train, test_indices=test)


def test_evaluator_battery_catches_a_split_that_ignores_the_seed():
    results = _status(run_cases(evaluator_checks(UnseededKNN())))
    assert results["check_split_deterministic"] == "fail"
    assert results["check_metrics_are_finite_floats"] == "pass"


class ForgetfulEvaluator(Evaluator):
    """Scores every dataset (no task check) with a constant."""

    def split(self, dataset, seed):
        idx = np.arange(dataset.n_samples)
        return Split(fit_indices=idx, fit_labels=None, train_indices=idx, test_indices=idx)

    def evaluate(self, features, dataset, split):
        return {"score": 1}


def test_evaluator_battery_catches_int_metrics_and_a_missing_task_check():
    results = _status(run_cases(evaluator_checks(ForgetfulEvaluator())))
    assert results["check_metrics_are_finite_floats"] == "fail"
    assert results["check_rejects_other_task"] == "fail"


def _duplicated_ids():
    ds = make_check_bags_dataset()
    ids = list(ds.sample_ids)
    ids[1] = ids[0]
    return Dataset(name="dup", task="classification", sample_ids=ids, labels=ds.labels, bags=ds.bags)


def test_dataset_battery_catches_duplicate_ids_and_skips_absent_data():
    assert _status(run_cases(dataset_checks(_duplicated_ids)))["check_sample_ids_unique"] == "fail"

    def absent():
        raise DatasetNotFoundError("not downloaded")

    results = run_cases(dataset_checks(absent))
    assert {r.status for r in results} == {"skip"} and "not downloaded" in results[0].message


@parametrize(aggregator_checks(BatchNormalised(), expected_failures={"check_subset_consistency": "batch norm"}))
def test_parametrize_helper_marks_declared_failures(check):
    check()


class _BrokenPlugins:
    """A plugin module registered in-process: one conforming aggregator, one that is not."""

    @hookimpl
    def lfabench_aggregators(self):
        return [PluginSpec("kit_meanpool", MeanPool, "mean pooling"),
                PluginSpec("kit_batchnorm", BatchNormalised, "batch-normalised mean pooling")]


@pytest.fixture
def broken_plugins():
    reset_registry()
    get_registry().register(_BrokenPlugins(), name="kit-test")
    yield
    reset_registry()


def test_plugin_checks_find_a_registered_plugin_by_name(broken_plugins):
    assert _status(run_cases(plugin_checks("aggregator", "kit_batchnorm")))["check_subset_consistency"] == "fail"


def test_cli_plugins_check_reports_pass_and_fail(broken_plugins, capsys):
    from lfabench.cli import main

    assert main(["plugins", "check", "kit_meanpool"]) == 0
    out = capsys.readouterr().out
    assert "PASS   check_subset_consistency" in out and "0 failed" in out
    assert main(["plugins", "check", "kit_batchnorm", "--check", "check_subset_consistency"]) == 1
    out = capsys.readouterr().out
    assert "FAIL   check_subset_consistency" in out and "1 check(s)" in out
    assert main(["plugins", "check", "no_such_plugin"]) == 2
    assert "no plugin is called 'no_such_plugin'" in capsys.readouterr().err


class _PoolA:
    @hookimpl
    def lfabench_aggregators(self):
        return [PluginSpec("kit_pool", MeanPool, "mean pooling (distribution kit-a)")]


class _PoolB:
    @hookimpl
    def lfabench_aggregators(self):
        return [PluginSpec("kit_pool", BatchNormalised, "batch-normalised pooling (distribution kit-b)")]


def test_cli_plugins_check_takes_and_prints_qualified_names(capsys):
    """Two distributions claim one name: the plain name is refused naming both qualified names, each qualified
    name checks its own plugin, and a built-in is reported with its qualified name too."""
    from lfabench.cli import main

    reset_registry()
    try:
        get_registry().register(_PoolA(), name="kit-a:pool", distribution="kit-a", version="1.0")
        get_registry().register(_PoolB(), name="kit-b:pool", distribution="kit-b", version="1.0")
        assert main(["plugins", "check", "kit_pool"]) == 2
        err = capsys.readouterr().err
        assert "aggregator=kit-a:kit_pool or aggregator=kit-b:kit_pool" in err and "Traceback" not in err
        assert main(["plugins", "check", "kit-a:kit_pool", "--check", "check_subset_consistency"]) == 0
        out = capsys.readouterr().out
        assert out.startswith("aggregator kit-a:kit_pool: 1 check(s)\n") and "PASS   check_subset_consistency" in out
        assert main(["plugins", "check", "kit-b:kit_pool", "--check", "check_subset_consistency"]) == 1
        assert "aggregator kit-b:kit_pool: 0 passed/expected, 1 failed" in capsys.readouterr().out
        assert main(["plugins", "check", "bow", "--check", "check_fit_returns_self"]) == 0
        assert capsys.readouterr().out.startswith("aggregator bow (lfabench:bow): 1 check(s)\n")
        assert main(["plugins", "check", "lfabench:bow", "--check", "check_fit_returns_self"]) == 0
        assert capsys.readouterr().out.startswith("aggregator lfabench:bow: 1 check(s)\n")
        assert main(["plugins", "check", "kit-c:kit_pool"]) == 2
        err = capsys.readouterr().err
        assert "no plugin is called 'kit-c:kit_pool'" in err and "kit-a:kit_pool, kit-b:kit_pool" in err
    finally:
        reset_registry()
