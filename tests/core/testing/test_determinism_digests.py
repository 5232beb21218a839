"""lfabench.testing.determinism: the stage digests are those of the conductor's own run."""

from __future__ import annotations

import json

from lfabench.run import run_benchmark
from lfabench.testing.determinism import STAGES, first_difference, stage_digests


def config(seed: int = 1, **aggregator) -> dict:
    return {"dataset": {"name": "digits", "params": {"n_samples": 120}}, "descriptor": {"name": "patches", "params": {}},
            "aggregator": {"name": "bow", "params": {"n_clusters": 6, "random_state": 0, **aggregator}},
            "evaluator": {"name": "knn", "params": {}}, "seed": seed}


def test_the_digests_are_the_fingerprints_and_metrics_of_the_runs_record(tmp_path):
    digests = stage_digests(config())
    record = run_benchmark(config(), tmp_path / "run")
    assert set(STAGES) <= set(digests)
    for stage in ("fitted", "features", "predictions"):
        assert digests[stage] == record["fingerprints"][stage] is not None
    assert json.loads(digests["metric_values"]) == record["metrics"]


def test_the_first_stage_that_differs_is_named():
    base = stage_digests(config())
    assert first_difference(base, stage_digests(config())) is None
    assert first_difference(base, stage_digests(config(seed=2))) == "split"            # same descriptors
    assert first_difference(base, stage_digests(config(n_clusters=7))) == "fitted"     # same split
