"""ProLFA at paper scale: Fifteen Scene SIFT (90 per image), stratified 80/20 split, d̄ up to 4096.

Reports, for the full training set, the outer iterations, the final relative
change of J, wall time, peak RSS and the 1-NN accuracy on the held-out 20%
(the paper's protocol), then fit time against N and against d̄ (CSV + PNG
under benchmarks/out/). Run it alone:

    flock /tmp/lfabench-bench.lock .venv/bin/python benchmarks/prolfa_scale.py [--quick]
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

from lfabench.splits import stratified_split  # noqa: E402
from lfabench_plugins.knn import knn_predict_l2  # noqa: E402
from lfabench_plugins.prolfa import ProLFA  # noqa: E402


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def one_fit(train, y_train, n_prototypes, seed=0, **params):
    est = ProLFA(n_prototypes=n_prototypes, random_state=seed, **params)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(train, y_train)
    seconds = time.perf_counter() - t0
    info = est.fit_info_
    return est, {"N": train.n_descriptors, "n_prototypes": n_prototypes, "seconds": round(seconds, 2),
                 "iterations": est.n_iter_, "converged": bool(est.converged_),
                 "final_relative_change": float(info["final_relative_change"]),
                 "searches": info["searches"], "nnz": int(est.selection_.nnz),
                 "warnings": [str(w.message) for w in caught], "peak_rss_mb": round(peak_rss_mb(), 1)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="only N=10k and d̄=256 points")
    ap.add_argument("--skip-full", action="store_true")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    bags, labels = scene15_sift(90)
    train_idx, test_idx = stratified_split(labels, 0.2, 0)
    train, test = bags.subset(train_idx), bags.subset(test_idx)
    print(f"train: {train.n_samples} images, N={train.n_descriptors}; test: {test.n_samples} images", flush=True)
    rows = []
    rng = np.random.default_rng(0)
    if not args.skip_full and not args.quick:
        est, rec = one_fit(train, labels[train_idx], 4096)
        F_tr, F_te = est.transform(train), est.transform(test)
        acc = 100.0 * np.mean(knn_predict_l2(F_tr, labels[train_idx], F_te, 1) == labels[test_idx])
        rec.update(kind="full", accuracy_1nn=round(float(acc), 2))
        print(json.dumps(rec), flush=True)
        rows.append(rec)
    # fit time vs N (images drawn at random from the training split, d̄ = 256) and vs d̄ (all N)
    n_targets = [10_000] if args.quick else [10_000, 50_000, 100_000, train.n_descriptors]
    for n in n_targets:
        order = rng.permutation(train.n_samples)
        keep = order[: np.searchsorted(np.cumsum(train.counts[order]), n) + 1]
        sub = train.subset(np.sort(keep))
        _, rec = one_fit(sub, labels[train_idx][np.sort(keep)], 256)
        rec.update(kind="vs_N")
        print(json.dumps(rec), flush=True)
        rows.append(rec)
    for dbar in ([256] if args.quick else [256, 512, 1024, 2048, 4096]):
        if dbar == 4096 and rows and rows[0].get("kind") == "full":
            continue
        _, rec = one_fit(train, labels[train_idx], dbar)
        rec.update(kind="vs_dbar")
        print(json.dumps(rec), flush=True)
        rows.append(rec)
    path = OUT / "prolfa_scale.csv"
    with open(path, "w", newline="") as fh:
        keys = ["kind", "N", "n_prototypes", "seconds", "iterations", "converged", "final_relative_change",
                "searches", "nnz", "peak_rss_mb", "accuracy_1nn"]
        w = csv.DictWriter(fh, fieldnames=keys, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {path}")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed (pip install -e '.[bench]'): no plot")
        return
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    vn = [r for r in rows if r["kind"] == "vs_N"]
    vd = [r for r in rows if r["kind"] in ("vs_dbar", "full")]
    axes[0].plot([r["N"] for r in vn], [r["seconds"] for r in vn], "o-")
    axes[0].set(xlabel="N (training descriptors), d̄ = 256", ylabel="fit time (s)")
    vd.sort(key=lambda r: r["n_prototypes"])
    axes[1].plot([r["n_prototypes"] for r in vd], [r["seconds"] for r in vd], "o-")
    axes[1].set(xlabel="d̄ (prototypes), full N", ylabel="fit time (s)", xscale="log", xticks=[256, 512, 1024, 2048, 4096])
    fig.tight_layout()
    fig.savefig(OUT / "prolfa_scale.png", dpi=120)
    print(f"wrote {OUT / 'prolfa_scale.png'}")


if __name__ == "__main__":
    main()
