"""The ``retrieval`` evaluator's full ranking against its floor, at 100,000 database vectors.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/retrieval_places.py [--n 100000] [--queries 1000]
        [--dim 256] [--repeats 3] [--against REVISION]

A copies-like setting, clustered so that the metrics mean something: ``n`` database images in groups of 4
(a Gaussian group centre plus per-image noise of 1.5 times its scale, as ``benchmarks/suite/retrieval.py``'s
copies setting), one query per group for the first ``queries`` groups, its positives the other 3 images of its
group, the query removed from its own ranking (the Holidays rule), one image without descriptors. Timed in
CPU seconds of this process, alternately, ``repeats`` times each:

* **evaluate**: ``Retrieval().evaluate`` of this tree (places counted from the distance rows,
  :func:`lfabench.evaluation.query_places`);
* **evaluate at REVISION** (``--against``, e.g. ``HEAD~1``): the evaluator module of that revision (``git
  show``), the full stable sort of every distance row; its metrics and predictions must be identical;
* **distances**: the floor, ``faiss.pairwise_distances`` over the same blocks of 256 queries (the GEMM);
* **FAISS top-k**: a plain ``IndexFlatL2`` search for the top 100 of each query (no AP).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from lfabench.dataset import Dataset, RetrievalGroundTruth
from lfabench.evaluate import Split
from lfabench.registry import get_plugin
from revisions import cpu, module_at

REPO = Path(__file__).resolve().parents[1]


def setting(n: int, n_queries: int, dim: int, seed: int = 0):
    """``(dataset, split, features)``: groups of 4 images, queries the first image of the first groups."""
    rng = np.random.default_rng(seed)
    groups = np.arange(n) // 4
    centres = rng.standard_normal((int(groups.max()) + 1, dim), dtype=np.float32)
    features = centres[groups] + np.float32(1.5) * rng.standard_normal((n, dim), dtype=np.float32)
    empty = np.zeros(n, dtype=bool)
    empty[n - 1] = True                                      # one image without descriptors: ranked last
    features[empty] = 0.0
    queries = np.arange(n_queries) * 4
    positives = [np.arange(q + 1, q + 4) for q in queries]
    gt = RetrievalGroundTruth(queries=queries, positives=positives, junk=[np.empty(0, np.int64)] * n_queries,
                              exclude_query_from_ranking=True)
    dataset = Dataset(name="clustered", task="retrieval", sample_ids=[f"img{i}" for i in range(n)],
                      labels=groups, ground_truth=gt)
    split = Split(fit_indices=np.arange(n), fit_labels=None, train_indices=np.arange(n), test_indices=queries,
                  seed=0, info={})
    split.empty_rows = empty
    return dataset, split, features


def evaluator_at(revision: str):
    """The ``Retrieval`` class of ``plugins/evaluators/retrieval.py`` at ``revision``, loaded from ``git show``."""
    return module_at(revision, "plugins/evaluators/retrieval.py", "lfabench_plugins.evaluators").Retrieval


def distances(features, db, queries, chunk: int = 256) -> None:
    import faiss

    for start in range(0, queries.shape[0], chunk):
        faiss.pairwise_distances(queries[start:start + chunk], db, faiss.METRIC_L2)


def topk(features, db, queries, k: int = 100) -> None:
    import faiss

    index = faiss.IndexFlatL2(db.shape[1])
    index.add(db)
    index.search(queries, k)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--against", default=None, help="a revision whose evaluator is timed and compared")
    parser.add_argument("--copies", action="store_true",
                        help="the copies board's setting instead (4,485 queries x 17,940 images of the Fifteen Scene "
                             "copies, 256-D Gaussian group features: benchmarks/suite/retrieval.py's copies_setting)")
    args = parser.parse_args(argv)
    if args.copies:
        sys.path.insert(0, str(REPO / "benchmarks"))
        from suite.retrieval import copies_setting

        _, dataset, split, features = copies_setting()
        args.n, args.queries, args.dim = dataset.n_samples, dataset.ground_truth.queries.size, features.shape[1]
    else:
        dataset, split, features = setting(args.n, args.queries, args.dim)
    db = np.ascontiguousarray(features)
    queries = np.ascontiguousarray(features[dataset.ground_truth.queries])
    new = get_plugin("evaluator", "retrieval")()
    cases = {"evaluate": lambda: new.evaluate(features, dataset, split),
             "distances (floor)": lambda: distances(features, db, queries),
             "FAISS top-100": lambda: topk(features, db, queries)}
    old_split = None
    if args.against:
        old = evaluator_at(args.against)()
        old_split = Split(fit_indices=split.fit_indices, fit_labels=split.fit_labels,
                          train_indices=split.train_indices, test_indices=split.test_indices, seed=split.seed,
                          info=dict(split.info))
        old_split.empty_rows = split.empty_rows
        cases[f"evaluate at {args.against}"] = lambda: old.evaluate(features, dataset, old_split)
    times: dict[str, list[float]] = {name: [] for name in cases}
    results = {}
    with threadpool_limits(1):
        for _ in range(args.repeats):
            for name, fn in cases.items():
                t, out = cpu(fn)
                times[name].append(t)
                results[name] = out
    floor = min(times["distances (floor)"])
    print(f"{args.queries} queries x {args.n} database vectors of {args.dim}-D, one BLAS thread, CPU s "
          f"(best of {args.repeats}):")
    for name, t in times.items():
        print(f"  {name:>24}: {min(t):7.2f} s  ({min(t) / floor:.2f}x the distances)  all: "
              f"{[round(v, 2) for v in t]}")
    print(f"  metrics: {results['evaluate']}")
    if args.against:
        same_metrics = results["evaluate"] == results[f"evaluate at {args.against}"]
        same_predictions = (split.predictions.keys() == old_split.predictions.keys() and all(
            np.array_equal(split.predictions[k], old_split.predictions[k]) for k in split.predictions))
        print(f"  identical to {args.against}: metrics {same_metrics}, predictions {same_predictions}")
        if not (same_metrics and same_predictions):
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
