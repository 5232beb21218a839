"""A metric's direction, declared on its evaluator (``metric_directions``), is honoured by the board's ranks (per
table and across tasks), ``lfabench compare``, the conformance kit and ``lfabench verify``'s rebuild."""

from __future__ import annotations

import numpy as np
import pytest

from lfabench import PluginSpec, hookimpl
from lfabench.evaluate import Evaluator, Split, higher_is_better, stratified_split
from lfabench import recordset
from lfabench.leaderboard import directions
from lfabench.leaderboard import records_frame, find_records, summarize
from lfabench.leaderboard.ranks import rank_table
from lfabench.registry import get_registry, reset_registry
from lfabench.testing import evaluator_checks, run_cases

from record_helpers import record


class ErrorRate(Evaluator):
    """Nearest-class-mean error rate (%), lower is better (a protocol for these tests)."""

    task = "classification"
    primary_metric = "error"
    metric_directions = {"error": "lower"}

    def __init__(self, claim_higher: bool = False):
        self.claim_higher = claim_higher

    def split(self, dataset, seed):
        self.check_dataset(dataset)
        train, test = stratified_split(dataset.labels, 0.3, seed)
        return Split(fit_indices=train, fit_labels=dataset.labels[train], train_indices=train, test_indices=test,
                     seed=seed, info={"n_test": int(test.size)})

    def evaluate(self, features, dataset, split):
        y = dataset.labels
        classes = np.unique(y[split.train_indices])
        means = np.stack([features[split.train_indices][y[split.train_indices] == c].mean(0) for c in classes])
        dist = ((features[split.test_indices][:, None, :] - means[None]) ** 2).sum(-1)
        wrong = classes[dist.argmin(1)] != y[split.test_indices]
        return {"error": float(100.0 * wrong.mean())}


class ClaimsHigher(ErrorRate):
    metric_directions = {"error": "higher"}  # a wrong declaration: the kit must catch it


class Plugins:
    @hookimpl
    def lfabench_evaluators(self):
        return [PluginSpec("errorrate", ErrorRate, "Nearest-class-mean error rate (%) (tests)")]


@pytest.fixture
def errorrate_installed():
    reset_registry()
    directions.metric_higher_is_better.cache_clear()
    recordset.evaluator_declares.cache_clear()
    get_registry().register(Plugins(), name="tests:errorrate")
    yield
    reset_registry()
    directions.metric_higher_is_better.cache_clear()
    recordset.evaluator_declares.cache_clear()


def test_direction_defaults_to_higher_and_refuses_other_words():
    assert higher_is_better(ErrorRate, "error") is False and higher_is_better(ErrorRate(), "error") is False
    assert higher_is_better(ErrorRate, "accuracy") is True  # not listed: higher
    bad = type("Bad", (ErrorRate,), {"metric_directions": {"error": "smaller"}})
    with pytest.raises(ValueError, match=r"Bad: metric_directions\['error'\] must be one of"):
        higher_is_better(bad, "error")


def test_kit_expects_oracle_at_most_noise_for_a_lower_metric():
    ok = {r.name: r.status for r in run_cases(evaluator_checks(ErrorRate()))}
    assert ok["check_oracle_beats_random"] == "pass" and ok["check_metric_directions"] == "pass"
    wrong = {r.name: (r.status, r.message) for r in run_cases(evaluator_checks(ClaimsHigher()))}
    status, message = wrong["check_oracle_beats_random"]
    assert status == "fail" and "worse than random" in message


def test_kit_refuses_a_direction_of_a_metric_not_returned():
    stray = type("Stray", (ErrorRate,), {"metric_directions": {"error": "lower", "accuracy": "higher"}})
    result = {r.name: (r.status, r.message) for r in run_cases(evaluator_checks(stray()))}
    assert result["check_metric_directions"][0] == "fail" and "['accuracy']" in result["check_metric_directions"][1]


def _records(runs):
    for seed in range(3):
        record(runs / f"low{seed}", seed, 10.0 + seed, aggregator="bow", evaluator="errorrate", metric="error")
        record(runs / f"high{seed}", seed, 40.0 + seed, aggregator="vlad", evaluator="errorrate", metric="error")


def test_board_and_mean_rank_put_the_lowest_error_first(tmp_path, errorrate_installed):
    _records(tmp_path / "runs")
    summary = summarize(records_frame(find_records([tmp_path / "runs"]))[0])
    ranks = dict(zip(summary["aggregator"], summary["rank"]))
    assert ranks == {"bow": 1.0, "vlad": 2.0}
    assert list(summary["aggregator"]) == ["bow", "vlad"]  # best first
    overall = rank_table(summary)
    assert list(overall["method"]) == ["bow", "vlad"] and list(overall["mean_rank"]) == [1.0, 2.0]


def test_the_best_and_the_tests_against_it_follow_the_direction(tmp_path, errorrate_installed):
    _records(tmp_path / "runs")
    summary = summarize(records_frame(find_records([tmp_path / "runs"]))[0]).set_index("aggregator")
    assert bool(summary.at["bow", "best"]) and not bool(summary.at["vlad", "best"])  # the lowest error is the best
    assert summary.at["bow", "diff"] == 0.0 and summary.at["vlad", "diff"] == pytest.approx(30.0)  # row - best


def test_without_the_declaration_the_same_records_rank_the_other_way(tmp_path):
    # the control: the order above comes from metric_directions (an evaluator not installed counts as higher)
    directions.metric_higher_is_better.cache_clear()
    _records(tmp_path / "runs")
    summary = summarize(records_frame(find_records([tmp_path / "runs"]))[0])
    assert dict(zip(summary["aggregator"], summary["rank"])) == {"bow": 2.0, "vlad": 1.0}


def test_compare_ranks_by_direction(tmp_path, errorrate_installed, capsys):
    from lfabench.cli import main

    _records(tmp_path / "runs")
    assert main(["compare", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert out.index("bow") < out.index("vlad"), out
