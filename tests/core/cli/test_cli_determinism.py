"""``lfabench run`` computes under a fixed thread count: the same record whatever OMP_NUM_THREADS says."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from lfabench.testing.determinism import thread_env

pytestmark = pytest.mark.slow  # the slow tier: the CLI under 1 and 2 threads, in-process and isolated

RUN = ["run", "aggregator=smoke/temb", "dataset.params.n_samples=200", "seed=1"]


@pytest.mark.parametrize("isolate", ["none", "process"])
def test_a_run_records_the_same_metrics_under_1_and_2_threads_and_what_it_fixed(tmp_path, isolate):
    records = []
    for threads in (1, 2):
        out = tmp_path / f"t{threads}"
        run_cli([*RUN, f"isolate={isolate}", f"hydra.run.dir={out}"], cwd=tmp_path,
                env={"LFABENCH_CACHE": str(tmp_path / "cache"), **thread_env(threads)})
        records.append(json.loads((out / "result.json").read_text()))
    one, two = records
    assert one["metrics"] == two["metrics"] and one["output_dim"] == two["output_dim"]
    for rec in records:
        assert rec["determinism"]["threads"] == 1
        apis = {(p["user_api"], p["internal_api"]) for p in rec["determinism"]["pinned"]}
        assert ("blas", "openblas") in apis and ("openmp", "openmp") in apis  # numpy's BLAS, FAISS's OpenMP


def test_a_bad_thread_count_is_one_clear_error(tmp_path):
    proc = run_cli([*RUN, "threads=0", f"hydra.run.dir={tmp_path / 'bad'}"], cwd=tmp_path,
                   env={"LFABENCH_CACHE": str(tmp_path / "cache")}, check=False)
    assert proc.returncode == 2
    assert "threads=0 must be a positive integer" in proc.stderr and "Traceback" not in proc.stderr
