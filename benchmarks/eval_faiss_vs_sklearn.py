"""FAISS-backed k-NN accuracy and retrieval mAP against scikit-learn brute force, measured in one run.

Data: 5,000 seeded synthetic vectors of 8,192 dimensions (float32; 50 Gaussian
classes), the scale of an aggregated benchmark (e.g. VLAD K=64 x SIFT 128-D).

* k-NN: the protocol's stratified 80/20 split (4,000 train / 1,000 test);
  :func:`lfabench.evaluation.knn_accuracy` vs
  ``KNeighborsClassifier(algorithm="brute").fit(...).score(...)``.
* mAP: 500 queries (10 per class) rank all 5,000 vectors (query removed, as
  Holidays), positives = the query's class; ranking by
  :func:`lfabench.evaluation.rank_database` (FAISS) vs
  ``NearestNeighbors(algorithm="brute").kneighbors(n_neighbors=5000)``; both
  rankings scored by the same :func:`average_precision`.

Each timing is the median of ``--repeats`` runs; the ratio is sklearn / FAISS
from the same process. Run it alone (it uses every core):

    flock /tmp/lfabench-bench.lock .venv/bin/python benchmarks/eval_faiss_vs_sklearn.py
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from lfabench.evaluation import average_precision, knn_accuracy, rank_database
from lfabench_plugins.evaluators.splits import stratified_split

OUT = Path(__file__).resolve().parent / "out"


def make_data(n: int, dim: int, n_classes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    # centre spread 0.14 against unit noise: 1-NN accuracy well below 1 at 8,192-D, so rankings are not trivial
    centres = rng.normal(scale=0.14, size=(n_classes, dim)).astype(np.float32)
    y = np.repeat(np.arange(n_classes), n // n_classes)
    X = centres[y] + rng.normal(size=(y.size, dim)).astype(np.float32)
    return np.ascontiguousarray(X, dtype=np.float32), y


def timed(fn, repeats: int):
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times)), out


def mean_ap(order: np.ndarray, queries: np.ndarray, y: np.ndarray) -> float:
    aps = []
    for q, row in zip(queries, order):
        ranked = row[row != q]
        positives = np.flatnonzero(y == y[q])
        aps.append(average_precision(ranked, positives[positives != q]))
    return float(np.mean(aps))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--dim", type=int, default=8192)
    ap.add_argument("--classes", type=int, default=50)
    ap.add_argument("--queries-per-class", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--metrics", nargs="+", default=["euclidean", "cosine"])
    args = ap.parse_args()

    import faiss
    import sklearn
    from sklearn.neighbors import KNeighborsClassifier, NearestNeighbors

    X, y = make_data(args.n, args.dim, args.classes)
    train, test = stratified_split(y, 0.2, seed=0)
    queries = np.concatenate([np.flatnonzero(y == c)[: args.queries_per_class] for c in range(args.classes)])
    rows = []
    for metric in args.metrics:
        t_f, acc_f = timed(lambda: knn_accuracy(X[train], y[train], X[test], y[test], k=1, metric=metric),
                           args.repeats)
        t_s, acc_s = timed(lambda: KNeighborsClassifier(1, algorithm="brute", metric=metric)
                           .fit(X[train], y[train]).score(X[test], y[test]), args.repeats)
        rows.append({"task": "k-NN (k=1)", "metric": metric, "shape": f"{train.size} train x {test.size} test",
                     "faiss_s": t_f, "sklearn_s": t_s, "ratio": t_s / t_f, "faiss_value": acc_f,
                     "sklearn_value": acc_s})
        print(rows[-1], flush=True)

        def faiss_rank():
            return rank_database(X, X[queries], metric)

        def sklearn_rank():
            nn = NearestNeighbors(n_neighbors=X.shape[0], algorithm="brute", metric=metric).fit(X)
            return nn.kneighbors(X[queries], return_distance=False)

        t_f, order_f = timed(faiss_rank, args.repeats)
        t_s, order_s = timed(sklearn_rank, args.repeats)
        t_ap, map_f = timed(lambda: mean_ap(order_f, queries, y), 1)
        map_s = mean_ap(order_s, queries, y)
        rows.append({"task": "mAP (full ranking + AP)", "metric": metric,
                     "shape": f"{queries.size} queries x {X.shape[0]} database", "faiss_s": t_f + t_ap,
                     "sklearn_s": t_s + t_ap, "ratio": (t_s + t_ap) / (t_f + t_ap), "faiss_value": map_f,
                     "sklearn_value": map_s, "ranking_faiss_s": t_f, "ranking_sklearn_s": t_s,
                     "ranking_ratio": t_s / t_f, "ap_s": t_ap,
                     "identical_rankings": float(np.mean(np.all(order_f == order_s, axis=1)))})
        print(rows[-1], flush=True)

    print(f"\n{args.n} x {args.dim}-D float32, {args.classes} classes; median of {args.repeats}; "
          f"faiss {faiss.__version__}, scikit-learn {sklearn.__version__}, {faiss.omp_get_max_threads()} threads\n")
    print("| task | metric | shape | FAISS (s) | sklearn brute (s) | sklearn / FAISS | value FAISS | value sklearn |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['task']} | {r['metric']} | {r['shape']} | {r['faiss_s']:.2f} | {r['sklearn_s']:.2f} | "
              f"{r['ratio']:.1f}x | {r['faiss_value']:.4f} | {r['sklearn_value']:.4f} |")
    for r in rows:
        if "ranking_ratio" in r:
            print(f"ranking only ({r['metric']}): FAISS {r['ranking_faiss_s']:.2f} s, sklearn {r['ranking_sklearn_s']:.2f} s "
                  f"({r['ranking_ratio']:.1f}x); AP of {queries.size} queries {r['ap_s']:.2f} s; identical full rankings "
                  f"for {100 * r['identical_rankings']:.1f}% of queries")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "eval_faiss_vs_sklearn.json").write_text(json.dumps(
        {"args": vars(args), "rows": rows, "faiss": faiss.__version__, "sklearn": sklearn.__version__,
         "threads": faiss.omp_get_max_threads(), "platform": platform.platform()}, indent=2))


if __name__ == "__main__":
    main()
