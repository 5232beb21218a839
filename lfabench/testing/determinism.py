"""Bit-for-bit reproducibility across thread counts: a run's stage digests, computed in a fresh process.

Thread pools (OpenBLAS, FAISS's OpenMP, OpenCV) size themselves when their library loads, so a run
under another thread count needs another process. :func:`digests_with_threads` starts one with every
thread count of :data:`THREAD_ENV` set to ``threads`` (descriptor extraction workers included) and
returns :func:`stage_digests` of one run there: sha256 of what each stage hands to the next
(descriptors and keypoints, the split, the fitted aggregator's output, the predictions, the metrics).
Two thread counts reproduce each other when every digest agrees; the first stage that differs is
where the numbers diverged.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from typing import Any

import numpy as np

#: Environment variables that set thread-pool sizes (and lfabench's descriptor workers) at process start.
THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
              "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "OPENCV_FOR_THREADS_NUM", "LFABENCH_N_JOBS")

#: Functions an evaluator module may call on its final vectors; their outputs are the run's predictions.
PREDICTORS = ("knn_predict", "rank_database")


def _digest(*arrays: Any) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape};".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _json_digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=repr).encode()).hexdigest()


def stage_digests(config: dict[str, Any], cache_descriptors: bool = False,
                  _bags_memo: dict[str, Any] | None = None) -> dict[str, str]:
    """sha256 of each stage's output for one run of ``config`` (resolved, as ``run_benchmark`` takes it).

    Stages, in order: ``descriptors`` (descriptors, keypoints, offsets; extracted without the cache,
    by :func:`lfabench.describe.default_n_jobs` workers), ``split``, ``features`` (the aggregator's
    ``transform`` of every sample), ``predictions`` (what the evaluator's module got back from
    :data:`PREDICTORS`: k-NN labels, retrieval rankings) and ``metrics``; ``metric_values`` holds the
    metrics themselves. Like the conductor, it computes under :func:`lfabench.threads.fixed_threads`
    of the config's ``threads`` (default 1).
    """
    from ..threads import fixed_threads

    with fixed_threads(config.get("threads", 1)):
        return _stage_digests(config, cache_descriptors, {} if _bags_memo is None else _bags_memo)


def many_stage_digests(configs: list[dict[str, Any]], cache_descriptors: bool = False) -> list[dict[str, str]]:
    """:func:`stage_digests` of each config; configs with the same dataset and descriptor extract once."""
    memo: dict[str, Any] = {}
    return [stage_digests(c, cache_descriptors, memo) for c in configs]


def _stage_digests(config: dict[str, Any], cache_descriptors: bool, memo: dict[str, Any]) -> dict[str, str]:
    from ..registry import get_registry

    registry = get_registry()
    seed = int(config.get("seed", 0))

    def build(kind: str):
        section = config[kind]
        return registry.get_spec(kind, section["name"]).factory(**dict(section.get("params") or {}))

    dataset, descriptor, aggregator, evaluator = (build(k) for k in ("dataset", "descriptor", "aggregator",
                                                                     "evaluator"))
    out: dict[str, str] = {}
    source = json.dumps([config["dataset"], config["descriptor"]], sort_keys=True, default=repr)
    if source not in memo:
        memo[source] = descriptor.describe(dataset, progress=False, cache=cache_descriptors)
    bags = memo[source]
    keypoints = bags.keypoints if bags.keypoints is not None else np.empty(0)
    out["descriptors"] = _digest(bags.descriptors, keypoints, bags.offsets)
    split = evaluator.split(dataset, seed)
    out["split"] = _digest(split.fit_indices, split.fit_labels, split.train_indices, split.test_indices)
    aggregator.fit(bags.subset(split.fit_indices), split.fit_labels)
    scored = evaluator.prepare_bags(bags, dataset, split)
    features = np.asarray(aggregator.transform(scored))
    split.empty_rows = scored.counts == 0
    out["features"] = _digest(features)
    module = sys.modules[type(evaluator).__module__]
    predictions: list[np.ndarray] = []
    originals = {name: getattr(module, name) for name in PREDICTORS if hasattr(module, name)}

    def capture(fn):
        def wrapped(*args, **kwargs):
            result = fn(*args, **kwargs)
            predictions.append(np.asarray(result))
            return result
        return wrapped

    try:
        for name, fn in originals.items():
            setattr(module, name, capture(fn))
        metrics = evaluator.evaluate(features, dataset, split)
    finally:
        for name, fn in originals.items():
            setattr(module, name, fn)
    out["predictions"] = _digest(*predictions)
    out["metrics"] = _json_digest({k: float(v) for k, v in metrics.items()})
    out["metric_values"] = json.dumps({k: float(v) for k, v in metrics.items()}, sort_keys=True)
    return out


def thread_env(threads: int) -> dict[str, str]:
    """The environment that sizes every thread pool (and the descriptor workers) to ``threads``."""
    return {name: str(int(threads)) for name in THREAD_ENV}


def digests_with_threads(configs: list[dict[str, Any]], threads: int, env: dict[str, str] | None = None,
                         timeout: float = 1800, cache_descriptors: bool = False) -> list[dict[str, str]]:
    """:func:`many_stage_digests` of ``configs`` in a fresh Python process whose pools start with ``threads``."""
    code = ("import json, sys\nfrom lfabench.testing.determinism import many_stage_digests\n"
            f"print(json.dumps(many_stage_digests(json.loads(sys.stdin.read()), {bool(cache_descriptors)})))\n")
    full_env = dict(os.environ, **(env or {}), **thread_env(threads))
    proc = subprocess.run([sys.executable, "-c", code], input=json.dumps(configs), capture_output=True, text=True,
                          env=full_env, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"the runs with {threads} thread(s) failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def first_difference(a: dict[str, str], b: dict[str, str]) -> str | None:
    """The first stage whose digests differ between two :func:`stage_digests` (None: bit-identical)."""
    for stage in ("descriptors", "split", "features", "predictions", "metrics"):
        if a.get(stage) != b.get(stage):
            return stage
    return None
