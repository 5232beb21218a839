"""Supervised baselines on Fifteen Scene (SIFT, 90 per image): 1-NN accuracy over seeds, training time,
each method beside its own unsupervised starting point, the seven unsupervised baselines and ProLFA.

Protocol: exactly ``baselines_scene15.py``'s (docs/protocols.md, "Classification"): for seed s the
stratified 80/20 split ``stratified_split(labels, 0.2, s)`` (the same for every method, so results
are paired); each aggregator is fitted on the training images and their labels only
(``random_state = s``), then aggregates all 4,485 images; test images are classified by their
nearest training vector (squared L2, FAISS). ``fit_s`` = training on the training split,
``transform_s`` = aggregating all images (wall-clock, this machine).

Starting points ("<method>_start" rows): T1, EO-BoW, DBoWs, LC-KSVD2 and FV+NN expose
``initial_transform``: the same fitted model's encoding before its supervised refinement (soft BoW
on the initial k-means codebook; OMP + max pooling on the initial per-class K-SVD dictionary; the
PCA-whitened FV), so a start shares its method's seed, sample and codebook. UniVCG has no initial
codebook: its start is a k-means BoW of the same dimension (n_classes x n_rounds = 300 words).

Settings (SUPERVISED below): the plugins' defaults except where this 2-core machine could not
afford them for several seeds; each deviation is listed in the note and in the summary CSV.
Unsupervised rows use ``baselines_scene15.SETTINGS`` through its ``run_one``; ``--import-baselines``
copies rows already measured by ``baselines_scene15.py`` (same protocol, same splits) instead of
rerunning them.

Usage (resumable: finished (method, seed) rows are kept and skipped)::

    flock /tmp/lfabench-bench.lock .venv/bin/python benchmarks/supervised_scene15.py \
        [--seeds 0 1 2 3 4 5] [--methods univcg t1 ...] [--import-baselines] [--out benchmarks/out]

Writes ``benchmarks/out/supervised_scene15_runs.csv`` (one row per method and seed, appended as
each finishes) and ``benchmarks/out/supervised_scene15.csv`` (mean ± std per method).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
import baselines_scene15 as unsup  # noqa: E402
from common import OUT, one_nn_accuracy, scene15_sift  # noqa: E402

from lfabench.registry import get_plugin  # noqa: E402
from lfabench_plugins.evaluators.splits import stratified_split  # noqa: E402

SUPERVISED = {
    "univcg": {},
    "t1": {"max_iter": 50},
    "eobow": {"max_iter": 50},
    "dbows": {"max_iter": 50},
    "fv_nn": {},
    "lcksvd2": {"n_atoms": 150, "n_iter": 10, "init_iter": 5, "max_training_descriptors": 15_000},
}
PROLFA = {"prolfa": {}}
#: The ProLFA paper's Scene-15 SIFT 1-NN accuracies (its images were larger; see protocols.md).
PAPER = {**unsup.PAPER, "t1": 73.74, "univcg": 72.94, "lcksvd2": 78.35, "dbows": 73.49, "eobow": 78.43,
         "prolfa": 80.88}
COLUMNS = ["method", "kind", "seed", "accuracy", "dim", "fit_s", "transform_s", "n_train", "n_test", "settings",
           "source"]


def accuracy(Z, labels, train, test) -> float:
    return one_nn_accuracy(Z[train], labels[train], Z[test], labels[test])


def row(method, kind, seed, acc, dim, fit_s, transform_s, train, test, settings, source="supervised_scene15.py"):
    return {"method": method, "kind": kind, "seed": seed, "accuracy": acc, "dim": dim, "fit_s": fit_s,
            "transform_s": transform_s, "n_train": train.size, "n_test": test.size,
            "settings": " ".join(f"{k}={v}" for k, v in settings.items()), "source": source}


def run_supervised(method: str, bags, labels, seed: int) -> list[dict]:
    """The method's row and its starting point's row."""
    train, test = stratified_split(labels, 0.2, seed)
    settings = SUPERVISED[method]
    est = get_plugin("aggregator", method)(random_state=seed, **settings)
    t0 = time.perf_counter()
    est.fit(bags.subset(train), labels[train])
    t1 = time.perf_counter()
    Z = est.transform(bags)
    t2 = time.perf_counter()
    out = [row(method, "supervised", seed, accuracy(Z, labels, train, test), Z.shape[1], t1 - t0, t2 - t1, train,
               test, settings)]
    curve = est.record_info().get("training_curve", [])
    print(f"  {method} training curve: {len(curve)} points, first {curve[:1]}, last {curve[-1:]}", flush=True)
    if hasattr(est, "initial_transform"):
        Z0 = est.initial_transform(bags)
        t3 = time.perf_counter()
        out.append(row(f"{method}_start", "start", seed, accuracy(Z0, labels, train, test), Z0.shape[1],
                       float("nan"), t3 - t2, train, test, settings))
    else:  # UniVCG: a k-means BoW of the same dimension
        k = int(Z.shape[1])
        bow = {"n_clusters": k, "normalize": "l1"}
        r = unsup_row("bow", bags, labels, seed, bow)
        out.append({**r, "method": f"{method}_start", "kind": "start"})
    return out


def unsup_row(method, bags, labels, seed, settings) -> dict:
    train, test = stratified_split(labels, 0.2, seed)
    est = get_plugin("aggregator", method)(random_state=seed, **settings)
    t0 = time.perf_counter()
    est.fit(bags.subset(train), labels[train])
    t1 = time.perf_counter()
    Z = est.transform(bags)
    t2 = time.perf_counter()
    kind = "prolfa" if method == "prolfa" else "unsupervised"
    return row(method, kind, seed, accuracy(Z, labels, train, test), Z.shape[1], t1 - t0, t2 - t1, train, test,
               settings)


def import_baselines(rows: list[dict], out: Path = OUT) -> list[dict]:
    path = out / "baselines_scene15_runs.csv"
    if not path.exists():
        return rows
    done = {(r["method"], int(r["seed"])) for r in rows}
    for r in pd.read_csv(path).to_dict("records"):
        if (r["method"], int(r["seed"])) not in done:
            rows.append({"method": r["method"], "kind": "unsupervised", "seed": int(r["seed"]),
                         "accuracy": r["accuracy"], "dim": r["dim"], "fit_s": r["fit_s"],
                         "transform_s": r["transform_s"], "n_train": r["n_train"], "n_test": r["n_test"],
                         "settings": " ".join(f"{k}={v}" for k, v in unsup.SETTINGS[r["method"]].items()),
                         "source": "baselines_scene15.py"})
    return rows


def summarise(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=COLUMNS)
    summary = df.groupby(["method", "kind"], sort=False).agg(
        accuracy_mean=("accuracy", "mean"),
        accuracy_std=("accuracy", lambda a: float(np.std(a, ddof=1)) if len(a) > 1 else float("nan")),
        n_seeds=("seed", "count"), seeds=("seed", lambda s: " ".join(str(int(v)) for v in sorted(s))),
        dim=("dim", "first"), fit_s_mean=("fit_s", "mean"), transform_s_mean=("transform_s", "mean"),
        settings=("settings", "first")).reset_index()
    summary["paper_accuracy"] = summary["method"].map(PAPER)
    # paired difference to the starting point, on the seeds both have
    diffs = []
    for m in summary["method"]:
        a = df[df["method"] == m].set_index("seed")["accuracy"]
        b = df[df["method"] == f"{m}_start"].set_index("seed")["accuracy"]
        common = a.index.intersection(b.index)
        diffs.append(float((a[common] - b[common]).mean()) if len(common) else float("nan"))
    summary["minus_start_mean"] = diffs
    return summary


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=list(range(6)))
    ap.add_argument("--methods", nargs="+", default=list(SUPERVISED) + list(PROLFA) + list(unsup.SETTINGS))
    ap.add_argument("--import-baselines", action="store_true",
                    help="copy rows already in baselines_scene15_runs.csv instead of rerunning them")
    ap.add_argument("--out", type=Path, default=OUT,
                    help="folder of the runs CSV (another folder lets a second run go on beside the first)")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore", category=UserWarning)
    out = args.out
    runs_path = out / "supervised_scene15_runs.csv"
    out.mkdir(parents=True, exist_ok=True)
    rows = pd.read_csv(runs_path).to_dict("records") if runs_path.exists() else []
    if args.import_baselines:
        rows = import_baselines(rows, out)
        pd.DataFrame(rows, columns=COLUMNS).to_csv(runs_path, index=False)
    done = {(r["method"], int(r["seed"])) for r in rows}
    bags, labels = scene15_sift()
    print(f"Scene-15 SIFT: {bags}, {np.unique(labels).size} classes", flush=True)
    for seed in args.seeds:                       # seed-major: an interrupted run has every method's first seeds
        for method in args.methods:
            if (method, seed) in done:
                continue
            if method in SUPERVISED:
                new = run_supervised(method, bags, labels, seed)
            elif method in PROLFA:
                new = [unsup_row(method, bags, labels, seed, PROLFA[method])]
            else:
                new = [unsup_row(method, bags, labels, seed, unsup.SETTINGS[method])]
            for r in new:
                print(f"{r['method']:18s} seed {seed}: acc {r['accuracy']:.2f}  dim {r['dim']}  "
                      f"fit {r['fit_s']:.1f}s  transform {r['transform_s']:.1f}s", flush=True)
            rows.extend(new)
            done.add((method, seed))
            pd.DataFrame(rows, columns=COLUMNS).to_csv(runs_path, index=False)   # append-as-you-go
    summary = summarise(rows)
    summary.to_csv(out / "supervised_scene15.csv", index=False, float_format="%.3f")
    print(summary.drop(columns=["settings"]).to_string(index=False, float_format=lambda v: f"{v:.2f}"))


if __name__ == "__main__":
    main()
