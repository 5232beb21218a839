"""ProLFA at paper scale: Fifteen Scene SIFT (90 per image), stratified 80/20 split, d̄ up to 4096.

Reports, for the full training set, the outer iterations, the final relative
change of J, wall time, peak RSS and the 1-NN accuracy on the held-out 20%
(the paper's protocol), then fit time and held-out 1-NN accuracy against N and
against d̄ (CSV + PNG under benchmarks/out/). Run it alone:

    flock /tmp/lfabench-bench.lock .venv/bin/python benchmarks/prolfa_scale.py [--quick]

Parts can run separately (``--skip-full``, ``--only-full``, ``--n ...``, ``--dbar ...``,
``--out NAME``) and be joined with ``--merge a.csv b.csv --out prolfa_scale``.
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from common import OUT, scene15_sift  # noqa: E402

from lfabench_plugins.evaluators.splits import stratified_split  # noqa: E402
from lfabench.evaluation import knn_predict  # noqa: E402
from lfabench_plugins.aggregators.prolfa import normalize_descriptors, parse_normalization  # noqa: E402
from lfabench_plugins.aggregators.prolfa.plugin import ProLFA  # noqa: E402


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def held_out_accuracy(est, train, y_train, test, y_test) -> float:
    """1-NN (Euclidean, the paper's classifier) accuracy in % of the held-out images, training images as the gallery."""
    pred = knn_predict(est.transform(train), y_train, est.transform(test), 1, metric="euclidean")
    return round(100.0 * float(np.mean(pred == y_test)), 2)


def one_fit(train, y_train, n_prototypes, seed=0, **params):
    est = ProLFA(n_prototypes=n_prototypes, random_state=seed, **params)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(train, y_train)
    seconds = time.perf_counter() - t0
    info = est.fit_info_
    return est, {"N": train.n_descriptors, "n_prototypes": n_prototypes, "max_support": est.max_support,
                 "normalize": est.normalize, "lambda1": est.lambda1, "lambda2": est.lambda2,
                 "seconds": round(seconds, 2), "seconds_per_iteration": round(seconds / max(est.n_iter_, 1), 2),
                 "iterations": est.n_iter_, "converged": bool(est.converged_),
                 "final_relative_change": float(info["final_relative_change"]),
                 "searches": info["searches"], "fallback_steps": info["fallback_steps"],
                 "max_iter_admm": est.max_iter_admm, "search_every": est.search_every,
                 "widened": info.get("widened", 0), "nnz": int(est.selection_.nnz),
                 "warnings": [str(w.message) for w in caught], "peak_rss_mb": round(peak_rss_mb(), 1)}


CSV_KEYS = ["kind", "N", "n_prototypes", "max_support", "normalize", "lambda1", "lambda2", "search_every", "seconds",
            "seconds_per_iteration", "iterations", "converged", "final_relative_change", "searches", "widened", "nnz",
            "peak_rss_mb", "accuracy_1nn", "load_before", "load_after"]


def load_average() -> float:
    return round(__import__("os").getloadavg()[0], 2)


def save(rows, path):
    """Rewrite the CSV after every fit, so an interrupted run keeps what it measured."""
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=CSV_KEYS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def plot(rows, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not importable: no plot")
        return
    fig, grid = plt.subplots(2, 2, figsize=(10, 7), sharex="col")
    axes = grid[0]
    vn = sorted((r for r in rows if r["kind"] == "vs_N" or (r["kind"] == "vs_dbar" and r["n_prototypes"] == 256)),
                key=lambda r: r["N"])
    vd = sorted((r for r in rows if r["kind"] in ("vs_dbar", "full")), key=lambda r: r["n_prototypes"])
    axes[0].plot([r["N"] for r in vn], [r["seconds"] for r in vn], "o-")
    axes[0].set(ylabel="fit time (s)", title="vs N (d̄ = 256)")
    axes[1].plot([r["n_prototypes"] for r in vd], [r["seconds"] for r in vd], "o-")
    axes[1].set(ylabel="fit time (s)", xscale="log", title="vs d̄ (all N)")
    for ax, series, key in ((grid[1][0], vn, "N"), (grid[1][1], vd, "n_prototypes")):
        pts = [(r[key], float(r["accuracy_1nn"])) for r in series if r.get("accuracy_1nn") not in (None, "")]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "s-", color="tab:green")
        ax.set(ylabel="held-out 1-NN accuracy (%)")
    grid[1][0].set(xlabel="N (training descriptors)")
    grid[1][1].set(xlabel="d̄ (prototypes)", xscale="log")
    grid[1][1].set_xticks([256, 512, 1024, 2048, 4096], ["256", "512", "1024", "2048", "4096"])
    grid[1][1].minorticks_off()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="only N=10k and d̄=256 points")
    ap.add_argument("--skip-full", action="store_true", help="skip the d̄ = 4096 fit on all N")
    ap.add_argument("--only-full", action="store_true", help="only the full fit (d̄ = 4096, all N)")
    ap.add_argument("--dbar", type=int, nargs="*", default=[256, 512, 1024, 2048],
                    help="d̄ values of the vs-d̄ series on all N (4096 is the full fit)")
    ap.add_argument("--n", type=int, nargs="*", default=[10_000, 50_000, 100_000],
                    help="N values of the vs-N series at d̄ = 256 (0: all; the all-N point is the d̄ = 256 one)")
    ap.add_argument("--out", default="prolfa_scale", help="basename of the CSV/PNG under benchmarks/out/")
    ap.add_argument("--max-support", type=int, default=None,
                    help="ProLFA max_support for every fit (default: the plugin's default); 0: no cap")
    ap.add_argument("--max-iter-admm", type=int, default=None, help="ProLFA max_iter_admm (default: the plugin's)")
    ap.add_argument("--search-every", type=int, default=None, help="ProLFA search_every (default: the plugin's)")
    ap.add_argument("--max-iter", type=int, default=None, help="ProLFA max_iter (default: the plugin's)")
    ap.add_argument("--normalize", default=None, help="ProLFA normalize (default: the plugin's)")
    ap.add_argument("--lambda1", type=float, default=None, help="ProLFA lambda1 (default: the plugin's)")
    ap.add_argument("--lambda2", type=float, default=None, help="ProLFA lambda2 (default: the plugin's)")
    ap.add_argument("--verbose", action="store_true", help="log every outer iteration")
    ap.add_argument("--merge", nargs="+", metavar="CSV",
                    help="no fits: concatenate these CSVs (parts run separately) into --out's CSV and plot")
    args = ap.parse_args()
    if args.merge:
        rows = []
        for path in args.merge:
            with open(path, newline="") as fh:
                for r in csv.DictReader(fh):
                    r.update(N=int(r["N"]), n_prototypes=int(r["n_prototypes"]), seconds=float(r["seconds"]))
                    rows.append(r)
        save(rows, OUT / f"{args.out}.csv")
        plot(rows, OUT / f"{args.out}.png")
        return
    if args.verbose:
        import logging

        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    OUT.mkdir(parents=True, exist_ok=True)
    csv_path, png_path = OUT / f"{args.out}.csv", OUT / f"{args.out}.png"
    bags, labels = scene15_sift(90)
    train_idx, test_idx = stratified_split(labels, 0.2, 0)
    train, test = bags.subset(train_idx), bags.subset(test_idx)
    y_train, y_test = labels[train_idx], labels[test_idx]
    print(f"train: {train.n_samples} images, N={train.n_descriptors}; test: {test.n_samples} images", flush=True)
    rows = []
    params = {}
    base = parse_normalization(args.normalize or ProLFA().normalize)[0]
    means = [np.asarray(b.with_descriptors(normalize_descriptors(b.descriptors, base)).means()) for b in (train, test)]
    ref = 100.0 * np.mean(knn_predict(means[0], y_train, means[1], 1, metric="euclidean") == y_test)
    print(f"reference: 1-NN on each image's mean {base} descriptor (what ProLFA maps linearly): {ref:.2f} %",
          flush=True)
    if args.max_support is not None:
        params["max_support"] = args.max_support or None
    for name in ("max_iter_admm", "search_every", "max_iter", "normalize", "lambda1", "lambda2"):
        if getattr(args, name) is not None:
            params[name] = getattr(args, name)

    def record(rec, kind, load_before):
        rec.update(kind=kind, load_before=load_before, load_after=load_average())
        print(json.dumps(rec), flush=True)
        rows.append(rec)
        save(rows, csv_path)

    if not args.skip_full and not args.quick:
        lb = load_average()
        est, rec = one_fit(train, y_train, 4096, **params)
        rec.update(accuracy_1nn=held_out_accuracy(est, train, y_train, test, y_test))
        record(rec, "full", lb)
    if args.only_full:
        return
    # fit time vs N (images drawn at random from the training split, d̄ = 256) and vs d̄ (all N)
    rng = np.random.default_rng(0)
    for n in ([10_000] if args.quick else args.n):
        n = n or train.n_descriptors
        order = rng.permutation(train.n_samples)
        keep = np.sort(order[: np.searchsorted(np.cumsum(train.counts[order]), n) + 1])
        lb = load_average()
        sub = train.subset(keep)
        est, rec = one_fit(sub, y_train[keep], 256, **params)
        rec.update(accuracy_1nn=held_out_accuracy(est, sub, y_train[keep], test, y_test))
        record(rec, "vs_N", lb)
    for dbar in ([] if args.quick else args.dbar):
        lb = load_average()
        est, rec = one_fit(train, y_train, dbar, **params)
        rec.update(accuracy_1nn=held_out_accuracy(est, train, y_train, test, y_test))
        record(rec, "vs_dbar", lb)
    print(f"wrote {csv_path}")
    plot(rows, png_path)


if __name__ == "__main__":
    main()
