"""Choose ProLFA's lambda1, lambda2 and normalisation on a validation split of the Scene-15 training data.

The paper's protocol is a stratified 80/20 split per seed; tuning on the test
20% would be optimistic, so the 80% training part (seed 0, as in
``prolfa_scale.py``) is split again 80/20 (seed 1) into fit / validation. Each
grid point is fitted on the fit part and scored by 1-NN (Euclidean, the paper's
classifier) on the validation part, on the raw aggregated vectors and after L2
normalisation of each vector, and on the fitted class responses ``xbar W`` (1-NN, and their arg-max as a
classifier). References on the same split: 1-NN on each image's
mean descriptor (what every ProLFA vector is a linear map of), and on d̄ random
descriptors used as prototypes (where the fit starts).

    flock /tmp/lfabench-bench.lock .venv/bin/python benchmarks/prolfa_tune.py [--dbar 256] [--out prolfa_tune]
    # the kernel: --feature-map nystroem_rbf --n-components 256 1024 --gamma 1 2 4 --lambda1 0.1 --lambda2 1

Writes ``benchmarks/out/<out>.csv`` after every fit (an interrupted run keeps what it measured).
"""

from __future__ import annotations

import argparse
import csv
import itertools
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from common import OUT, one_nn_accuracy, parse_param, prolfa_params, scene15_sift  # noqa: E402

from lfabench_plugins.aggregators.prolfa import normalize_descriptors, parse_normalization  # noqa: E402
from lfabench_plugins.evaluators.splits import stratified_split  # noqa: E402
from lfabench_plugins.aggregators.prolfa.plugin import ProLFA  # noqa: E402

KEYS = ["feature_map", "n_components", "gamma", "scale", "normalize", "lambda1", "lambda2", "n_prototypes", "max_support", "seconds", "iterations", "converged",
        "nnz_per_column", "val_acc", "val_acc_l2", "val_acc_responses", "val_argmax_responses", "final_objective"]


def l2_rows(F: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(F, axis=1, keepdims=True)
    return F / np.where(n > 0, n, 1)


def accuracy(F_fit, y_fit, F_val, y_val) -> float:
    return round(one_nn_accuracy(F_fit, y_fit, F_val, y_val), 2)


def fit_val_split(labels, test_seed: int = 0, val_seed: int = 1):
    """The training 80% of the paper's split ``test_seed``, split again 80/20 by ``val_seed``."""
    train_idx, _ = stratified_split(labels, 0.2, test_seed)
    fit_rel, val_rel = stratified_split(labels[train_idx], 0.2, val_seed)
    return train_idx[fit_rel], train_idx[val_rel]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dbar", type=int, default=256)
    ap.add_argument("--lambda1", type=float, nargs="*", default=[0.1, 1.0, 10.0])
    ap.add_argument("--lambda2", type=float, nargs="*", default=[1e-3, 1.0])
    ap.add_argument("--normalize", nargs="*", default=["l2", "rootsift", "l2_centered", "rootsift_centered"])
    ap.add_argument("--max-support", type=int, default=-1, help="-1: the plugin's default; 0: no cap")
    ap.add_argument("--search-every", type=int, default=None, help="ProLFA search_every (default: the plugin's)")
    ap.add_argument("--feature-map", nargs="*", default=["linear"], help="ProLFA feature_map values (the kernel)")
    ap.add_argument("--n-components", type=int, nargs="*", default=[1024], help="feature-map dimensions D")
    ap.add_argument("--gamma", type=float, nargs="*", default=[2.0], help="RBF gamma values")
    ap.add_argument("--scale", nargs="*", default=["1.0"], help="ProLFA scale values (floats or auto)")
    ap.add_argument("--max-iter", type=int, default=None, help="ProLFA max_iter (default: the plugin's)")
    ap.add_argument("--param", action="append", default=[], help="any other ProLFA parameter KEY=VALUE (repeatable), "
                    "e.g. face_step=0")
    ap.add_argument("--no-references", action="store_true", help="skip the mean / random-prototype references")
    ap.add_argument("--out", default="prolfa_tune")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    bags, labels = scene15_sift(90)
    fit_idx, val_idx = fit_val_split(labels)
    fit, val = bags.subset(fit_idx), bags.subset(val_idx)
    y_fit, y_val = labels[fit_idx], labels[val_idx]
    print(f"fit: {fit.n_samples} images, N={fit.n_descriptors}; validation: {val.n_samples} images", flush=True)
    for norm in ([] if args.no_references else sorted({parse_normalization(n)[0] for n in args.normalize})):
        means = [np.asarray(b.with_descriptors(normalize_descriptors(b.descriptors, norm)).means()) for b in (fit, val)]
        print(f"reference, mean {norm} descriptor (centring does not change Euclidean 1-NN): 1-NN {accuracy(means[0], y_fit, means[1], y_val)} % "
              f"(L2-normalised means: {accuracy(l2_rows(means[0]), y_fit, l2_rows(means[1]), y_val)} %)", flush=True)
    for norm in ([] if args.no_references else args.normalize):
        # what the fit starts from: d̄ distinct random descriptors as prototypes (ProLFA's one-hot start)
        base, centered = parse_normalization(norm)
        Xf, Xv = (normalize_descriptors(b.descriptors, base) for b in (fit, val))
        mean = Xf.mean(axis=0) if centered else np.zeros(Xf.shape[1])
        start = np.random.default_rng(0).choice(Xf.shape[0], args.dbar, replace=False)
        P = (Xf[start] - mean).T.astype(np.float64)
        F = [np.asarray(b.with_descriptors(X - mean).means()) @ P for b, X in ((fit, Xf), (val, Xv))]
        print(f"reference, {args.dbar} random descriptors as prototypes ({norm}): 1-NN "
              f"{accuracy(F[0], y_fit, F[1], y_val)} %", flush=True)
    params = {} if args.max_support < 0 else {"max_support": args.max_support or None}
    if args.search_every is not None:
        params["search_every"] = args.search_every
    if args.max_iter is not None:
        params["max_iter"] = args.max_iter
    params.update(parse_param(p) for p in args.param)
    rows = []
    path = OUT / f"{args.out}.csv"
    kernels = [("linear", None, None)] if args.feature_map == ["linear"] else [
        (f, (n if f != "linear" else None), (g if f != "linear" else None))
        for f in args.feature_map for n in args.n_components for g in args.gamma]
    kernels = list(dict.fromkeys(kernels))
    scales = [v if v == "auto" else float(v) for v in args.scale]
    for (fmap, comps, gamma), scale, norm, l1, l2 in itertools.product(kernels, scales, args.normalize, args.lambda1,
                                                                       args.lambda2):
        kern = {} if fmap == "linear" else dict(feature_map=fmap, n_components=comps, gamma=gamma)
        kern["scale"] = scale
        est = ProLFA(n_prototypes=args.dbar, lambda1=l1, lambda2=l2, normalize=norm, random_state=0, **kern,
                     **prolfa_params(params))
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(fit, y_fit)
        seconds = time.perf_counter() - t0
        F_fit, F_val = est.transform(fit), est.transform(val)
        row = dict(feature_map=fmap, n_components=comps, gamma=gamma, scale=scale, normalize=norm, lambda1=l1, lambda2=l2, n_prototypes=args.dbar, max_support=est.max_support,
                   seconds=round(seconds, 1), iterations=est.n_iter_, converged=bool(est.converged_),
                   nnz_per_column=round(est.selection_.nnz / args.dbar, 1),
                   val_acc=accuracy(F_fit, y_fit, F_val, y_val),
                   val_acc_l2=accuracy(l2_rows(F_fit), y_fit, l2_rows(F_val), y_val),
                   # the fitted class responses xbar W (d̄ -> c): only the directions the regression shapes
                   val_acc_responses=accuracy(F_fit @ est.projection_, y_fit, F_val @ est.projection_, y_val),
                   val_argmax_responses=round(100 * float(np.mean(
                       np.unique(y_fit)[(F_val @ est.projection_).argmax(axis=1)] == y_val)), 2),
                   final_objective=float(est.objective_history_[-1]))
        print(row, flush=True)
        rows.append(row)
        with open(path, "w", newline="") as fh:
            w = csv.DictWriter(fh, fieldnames=KEYS)
            w.writeheader()
            w.writerows(rows)
    best = max(rows, key=lambda r: max(r["val_acc"], r["val_acc_l2"]))
    print(f"best on validation: {best}")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
