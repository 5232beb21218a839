"""The conductor's path for searchers (aggregators that index the database and search it themselves): a run
records them as it records vector methods (same metrics, predictions and fingerprints), and a protocol that
scores vectors only refuses one at the config stage."""

from __future__ import annotations

import json

import numpy as np
import pytest

from lfabench import PluginSpec, hookimpl
from lfabench.aggregate import SearcherError, is_searcher
from lfabench.params import ConfigError
from lfabench.registry import get_registry, reset_registry
from lfabench.run import run_benchmark
from lfabench.testing.data import make_check_retrieval_dataset

from conftest import run_cli
from searcher_helpers import MeanPool, NegativeDistances


class Plugins:
    @hookimpl
    def lfabench_datasets(self):
        return [PluginSpec("check_retrieval", lambda: make_check_retrieval_dataset(groups=4, per_group=5),
                           "retrieval bags (tests)")]

    @hookimpl
    def lfabench_aggregators(self):
        return [PluginSpec("meanpool", MeanPool, "means (tests)"),
                PluginSpec("negdist", NegativeDistances, "a searcher of negative distances (tests)")]


@pytest.fixture
def plugins():
    reset_registry()
    get_registry().register(Plugins(), name="tests:searcher")
    yield
    reset_registry()


def _cfg(aggregator: str, evaluator: str = "retrieval", dataset: str = "check_retrieval", **evaluator_params):
    return {"dataset": {"name": dataset, "params": {}}, "descriptor": {"name": "native", "params": {}},
            "aggregator": {"name": aggregator, "params": {"random_state": 0}},
            "evaluator": {"name": evaluator, "params": evaluator_params}, "seed": 0, "cache": False}


def test_a_searcher_is_recorded_as_its_vector_twin(tmp_path, plugins):
    vec = run_benchmark(_cfg("meanpool"), tmp_path / "vec")
    srch = run_benchmark(_cfg("negdist"), tmp_path / "srch")
    assert srch["status"] == "ok" and srch["metrics"] == vec["metrics"]
    assert srch["fingerprints"]["predictions"] == vec["fingerprints"]["predictions"]
    a, b = (np.load(tmp_path / d / "predictions.npz") for d in ("vec", "srch"))
    assert sorted(a.files) == sorted(b.files) and all(np.array_equal(a[k], b[k]) for k in a.files)
    assert list(srch["timings_s"]) == list(vec["timings_s"])  # the same stages: transform is the indexing
    assert "output_dim" not in srch and vec["output_dim"] == 8  # no vectors, no dimension
    assert srch["fingerprints"]["features"] is not None     # its index (fitted arrays after indexing)
    assert srch["split"]["ranked_by"] == "searcher"
    assert json.loads((tmp_path / "srch" / "result.json").read_text())["metrics"] == vec["metrics"]


@pytest.mark.parametrize("evaluator,params,says", [
    ("knn", {}, "it scores one vector per image only"),
    ("retrieval", {"search": "exact"}, "search='exact' shortlists vectors"),
])
def test_a_protocol_that_cannot_score_a_searcher_refuses_it_before_any_work(tmp_path, plugins, evaluator, params,
                                                                            says):
    dataset = "synthetic" if evaluator == "knn" else "check_retrieval"
    with pytest.raises(ConfigError) as info:
        run_benchmark(_cfg("negdist", evaluator, dataset, **params), tmp_path / "run")
    message = str(info.value)
    assert "aggregator 'negdist' is a searcher" in message and says in message
    assert "evaluator=retrieval" in message and "meanpool" in message  # the alternatives
    record = json.loads((tmp_path / "run" / "result.json").read_text())
    assert record["status"] == "failed" and record["error"]["stage"] == "config"


def test_the_command_line_refuses_a_searcher_with_knn_in_one_message(tmp_path):
    """Exit 2, no traceback: with the asmk extra, the knn refusal; without it, the missing extra."""
    proc = run_cli(["run", "dataset=synthetic", "descriptor=native", "aggregator=asmk", "evaluator=knn",
                    f"hydra.run.dir={tmp_path / 'run'}"], cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert ("is a searcher" in proc.stderr and "evaluator=retrieval" in proc.stderr) or \
        'pip install "lfabench[asmk]"' in proc.stderr, proc.stderr


def test_a_searcher_gives_no_vectors():
    from lfabench.testing.data import make_check_bags

    bags, _ = make_check_bags()
    est = NegativeDistances().fit(bags)
    assert is_searcher(est) and is_searcher(NegativeDistances) and not is_searcher(MeanPool())
    with pytest.raises(SearcherError, match="index the database"):
        est.transform(bags)
    est.index(bags)
    assert est.search(bags[:3]).shape == (3, bags.n_samples)
    est.fit(bags)  # a refit drops the index
    with pytest.raises(Exception, match="no database indexed"):
        est.search(bags)


def test_a_searcher_returning_non_finite_scores_fails_loudly():
    from lfabench.testing.data import make_check_bags

    class Broken(NegativeDistances):
        def _search(self, bags):
            out = super()._search(bags)
            out[0, 0] = np.nan
            return out

    bags, _ = make_check_bags()
    est = Broken().fit(bags).index(bags)
    with pytest.raises(RuntimeError, match="non-finite"):
        est.search(bags)
