"""Nothing lost, promises kept: a rerun keeps every file it replaces, a cache that cannot be written is a
warning, and settings the data cannot train are one message before the work."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from lfabench import Bags, get_plugin
from lfabench.aggregate import FitDataError
from lfabench.record import RUN_FILES
from lfabench.run import run_benchmark
from lfabench.storage import CacheWarning

from conftest import run_cli


def _cfg(seed=0, **extra):
    return {"dataset": {"name": "digits", "params": {"n_samples": 120}}, "descriptor": {"name": "patches", "params": {}},
            "aggregator": {"name": "bow", "params": {"n_clusters": 8, "random_state": seed}},
            "evaluator": {"name": "knn", "params": {}}, "seed": seed, "cache": False, **extra}


@pytest.fixture
def one_worker(monkeypatch):
    monkeypatch.setenv("LFABENCH_N_JOBS", "1")


def test_a_rerun_keeps_the_earlier_records_predictions(tmp_path, one_worker):
    """force=true (or any rerun into a run folder) kept result.json as result.previous-*.json but overwrote its
    predictions.npz."""
    run = tmp_path / "run"
    run_benchmark(_cfg(0), run)
    first = (run / "predictions.npz").read_bytes()
    run_benchmark(_cfg(1), run)
    (old_record,) = run.glob("result.previous-*.json")
    stamp = old_record.name.removeprefix("result.previous-").removesuffix(".json")
    kept = run / f"predictions.previous-{stamp}.npz"
    assert kept.read_bytes() == first
    assert json.loads(old_record.read_text())["predictions"]["sha256"] == hashlib.sha256(first).hexdigest()
    assert (run / "predictions.npz").read_bytes() != first


def test_a_users_file_in_a_run_folder_is_kept(tmp_path, one_worker):
    """A run folder given by hydra.run.dir that holds the user's own predictions.npz keeps it."""
    run = tmp_path / "mine"
    run.mkdir()
    (run / "predictions.npz").write_bytes(b"the user's own file")
    run_benchmark(_cfg(0), run)
    (kept,) = run.glob("predictions.previous-*.npz")
    assert kept.read_bytes() == b"the user's own file"
    assert not list(run.glob("result.previous-*"))


def test_every_run_file_is_covered():
    from lfabench.prototypes import PROTOTYPES_FILE

    assert PROTOTYPES_FILE in RUN_FILES and "predictions.npz" in RUN_FILES and "source.diff.gz" in RUN_FILES


@pytest.mark.parametrize("where", ["under_a_file", "a_file"])
def test_a_cache_that_cannot_be_written_is_a_warning(tmp_path, monkeypatch, one_worker, where):
    """A cache under a regular file (as a read-only mount) aborted the run with a traceback."""
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file")
    monkeypatch.setenv("LFABENCH_CACHE", str(blocker / "cache" if where == "under_a_file" else blocker))
    cfg = _cfg(0, cache=True)
    cfg["aggregator"]["params"]["cache"] = True
    with pytest.warns(CacheWarning) as caught:
        record = run_benchmark(cfg, tmp_path / "run")
    assert record["status"] == "ok" and record["metrics"]["accuracy"] > 0
    assert any(str(blocker) in str(w.message) for w in caught)
    assert blocker.read_text() == "a file"
    reference = run_benchmark(_cfg(0), tmp_path / "uncached")
    assert record["metrics"] == reference["metrics"]


def test_too_few_descriptors_for_the_clusters_is_one_message(tmp_path, one_worker):
    bags = Bags.from_list([np.random.default_rng(0).normal(size=(5, 3)) for _ in range(4)])
    for name in ("bow", "vlad", "fv", "temb", "t1"):
        cls = get_plugin("aggregator", name)
        param = cls.fit_size_params[0]
        with pytest.raises(FitDataError, match=f"{param}=64 needs at least 64 training descriptors, but the 4 "
                                               f"samples it is fitted on hold 20"):
            cls(**{param: 64}).fit(bags, np.arange(4) % 2)
    proc = run_cli(["run", "dataset.params.n_samples=20", "aggregator=bow", "aggregator.params.n_clusters=5000",
                    "hydra.run.dir=cli", "cache=false"], cwd=tmp_path, env={"LFABENCH_N_JOBS": "1"}, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "n_clusters=5000 needs at least 5000 training descriptors" in proc.stderr


def test_k_means_with_a_small_training_cap_is_one_message():
    bags = Bags.from_list([np.random.default_rng(0).normal(size=(50, 3)) for _ in range(4)])
    with pytest.raises(FitDataError, match="n_clusters=64 training descriptors, got 30 .*max_training_descriptors=30"):
        get_plugin("aggregator", "bow")(n_clusters=64, max_training_descriptors=30).fit(bags)


def test_ivfpq_on_a_small_database_is_refused_before_work(tmp_path):
    from lfabench.testing.data import make_check_retrieval_dataset

    ev = get_plugin("evaluator", "retrieval")(search="ivfpq")
    with pytest.raises(ValueError, match="search=ivfpq needs a database of at least 256 images .* has 12: use search=exact"):
        ev.check_setting(make_check_retrieval_dataset(), 0)
    from lfabench.evaluation.largescale import plan_search

    with pytest.raises(ValueError, match="IVF-PQ search needs a database of at least 256 vectors"):
        plan_search(100, 8, 1e9, method="ivfpq")
