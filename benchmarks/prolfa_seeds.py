"""ProLFA on Fifteen Scene over the evaluator's 6 seeded splits, paired with baselines (exact Wilcoxon).

For seed s the split is ``stratified_split(labels, 0.2, s)`` (the same as
``baselines_scene15.py``); ProLFA is fitted on the training images with
``random_state = s`` and scored by 1-NN (Euclidean) on the held-out images.
With ``--baselines CSV`` (``baselines_scene15.py``'s per-seed file), each
baseline method is paired seed by seed and the two-sided exact Wilcoxon
signed-rank p is printed (with 6 seeds the smallest possible p is 1/32 = 0.031).

    flock /tmp/lfabench-bench.lock .venv/bin/python benchmarks/prolfa_seeds.py --dbar 1024 \\
        --param feature_map=nystroem_rbf --param n_components=1024 --param gamma=2 \\
        --baselines benchmarks/out/baselines_scene15_runs.csv --out prolfa_seeds_rbf
    .venv/bin/python benchmarks/prolfa_seeds.py --param init=cancelling \
        --baselines leaderboards/scene15/scene15-runs.csv --out prolfa_seeds_cancelling

Writes ``benchmarks/out/<out>.csv`` after every seed.
"""

from __future__ import annotations

import argparse
import csv
import os
import resource
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from common import OUT, one_nn_accuracy, parse_param, prolfa_params, scene15_sift  # noqa: E402

from lfabench_plugins.aggregators.prolfa.plugin import ProLFA  # noqa: E402
from lfabench_plugins.evaluators.splits import stratified_split  # noqa: E402


def paired(ours: dict, baselines_csv: str) -> None:
    from scipy.stats import wilcoxon

    by_method: dict[str, dict[int, float]] = {}
    with open(baselines_csv, newline="") as fh:
        for r in csv.DictReader(fh):
            if "aggregator" in r:     # a board's per-seed CSV (one setting per method, as on the scene15 board)
                if r["descriptor"] != "sift" or r["metric"] != "accuracy":
                    continue
                by_method.setdefault(r["aggregator"], {})[int(r["seed"])] = float(r["value"])
            else:
                by_method.setdefault(r["method"], {})[int(r["seed"])] = float(r["accuracy"])
    print("| method | seeds | baseline mean | ProLFA mean | mean difference | exact Wilcoxon p (two-sided) |")
    print("|---|---|---|---|---|---|")
    for method, accs in sorted(by_method.items()):
        seeds = sorted(set(accs) & set(ours))
        if len(seeds) < 2:
            continue
        a, b = np.array([ours[s] for s in seeds]), np.array([accs[s] for s in seeds])
        diff = a - b
        p = float(wilcoxon(a, b, method="exact").pvalue) if np.any(diff != 0) else 1.0
        print(f"| {method} | {len(seeds)} | {b.mean():.2f} | {a.mean():.2f} | {diff.mean():+.2f} | {p:.4f} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2, 3, 4, 5])
    ap.add_argument("--dbar", type=int, default=4096)
    ap.add_argument("--param", action="append", default=[], help="ProLFA parameter KEY=VALUE (repeatable)")
    ap.add_argument("--baselines", default=None, help="per-seed baseline CSV (method,seed,accuracy,...), or a "
                    "board's per-seed CSV such as leaderboards/scene15/scene15-runs.csv (its SIFT rows)")
    ap.add_argument("--out", default="prolfa_seeds")
    args = ap.parse_args()
    params = dict(parse_param(p) for p in args.param)
    OUT.mkdir(parents=True, exist_ok=True)
    bags, labels = scene15_sift(90)
    rows, ours = [], {}
    path = OUT / f"{args.out}.csv"
    for seed in args.seeds:
        tr, te = stratified_split(labels, 0.2, seed)
        train, test = bags.subset(tr), bags.subset(te)
        est = ProLFA(n_prototypes=args.dbar, random_state=seed, **prolfa_params(params))
        load = os.getloadavg()[0]
        t0, cpu0 = time.perf_counter(), time.process_time()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            est.fit(train, labels[tr])
        seconds, cpu_seconds = time.perf_counter() - t0, time.process_time() - cpu0
        acc = one_nn_accuracy(est.transform(train), labels[tr], est.transform(test), labels[te])
        ours[seed] = acc
        row = dict(seed=seed, accuracy=round(acc, 2), seconds=round(seconds, 1), cpu_seconds=round(cpu_seconds, 1), iterations=est.n_iter_,
                   converged=bool(est.converged_), objective=float(est.objective_history_[-1]),
                   peak_rss_mb=round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
                   load_before=round(load, 2), load_after=round(os.getloadavg()[0], 2),
                   warnings=len(caught), **{k: params[k] for k in sorted(params)}, n_prototypes=args.dbar)
        print(row, flush=True)
        rows.append(row)
        with open(path, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    accs = np.array(list(ours.values()))
    print(f"ProLFA {params} d̄={args.dbar}: {accs.mean():.2f} ± {accs.std(ddof=1) if accs.size > 1 else 0:.2f} "
          f"over seeds {list(ours)}")
    if args.baselines:
        paired(ours, args.baselines)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
