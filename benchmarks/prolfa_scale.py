"""ProLFA at paper scale and its scaling law: Fifteen Scene SIFT (90 per image), stratified 80/20 split.

Reports, for the full training set (d̄ = 4096), the outer iterations, the final
relative change of J, wall and CPU time, peak RSS and the 1-NN accuracy on the
held-out 20% (the paper's protocol); then fit time against N (d̄ = 256; N from
10k to 1M, synthetic beyond the real 316k: see :func:`synthetic_images`) and
against d̄ (256 to 8192 at ``--dbar-n`` descriptors), with the exponent of a
least-squares line on the log-log plot (CSV + PNG under benchmarks/out/).

Times are reported as wall seconds and as process CPU seconds (``time.process_time``:
all threads of the fit); on a shared machine the CPU seconds are the steadier measure.
Resumable: points already in the CSV are not refitted (``--fresh`` starts over).

    flock /tmp/lfabench-bench.lock .venv/bin/python benchmarks/prolfa_scale.py [--quick] [--skip-full]
    .venv/bin/python benchmarks/prolfa_scale.py --skip-full --param face_step=0 --out prolfa_scale   # the old solver

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
from common import OUT, images_holding, one_nn_accuracy, parse_param, prolfa_params, scene15_sift, write_rows

from lfabench_plugins.aggregators.prolfa import normalize_descriptors, parse_normalization
from lfabench_plugins.aggregators.prolfa.plugin import ProLFA
from lfabench_plugins.evaluators.splits import stratified_split


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def held_out_accuracy(est, train, y_train, test, y_test) -> float:
    """1-NN (Euclidean, the paper's classifier) accuracy in % of the held-out images, training images as the gallery."""
    return round(one_nn_accuracy(est.transform(train), y_train, est.transform(test), y_test), 2)


def synthetic_images(train, y_train, n_descriptors: int, seed: int = 0, noise: float = 0.1):
    """``(bags, labels)`` with at least ``n_descriptors`` descriptors: the training images, then jittered copies.

    Each copy is a training image drawn at random, every descriptor plus Gaussian noise of
    ``noise`` times that dimension's standard deviation (clipped at 0, like SIFT), with the
    source image's label: the same statistics, new (distinct) descriptors. Used only to time
    fits beyond the real N.
    """
    from lfabench.bags import Bags

    rng = np.random.default_rng(seed)
    std = train.descriptors.std(axis=0, dtype=np.float64)
    arrays, labels, total = list(train), list(y_train), train.n_descriptors
    while total < n_descriptors:
        i = int(rng.integers(train.n_samples))
        x = train[i]
        arrays.append(np.clip(x + noise * std * rng.standard_normal(x.shape), 0, None).astype(x.dtype))
        labels.append(y_train[i])
        total += x.shape[0]
    return Bags.from_list(arrays), np.asarray(labels)


def one_fit(train, y_train, n_prototypes, seed=0, **params):
    est = ProLFA(n_prototypes=n_prototypes, random_state=seed, **prolfa_params(params))
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(train, y_train)
    seconds = time.perf_counter() - t0
    cpu_seconds = time.process_time() - c0
    info = est.fit_info_
    return est, {"N": train.n_descriptors, "n_prototypes": n_prototypes, "max_support": est.max_support,
                 "normalize": est.normalize, "lambda1": est.lambda1, "lambda2": est.lambda2,
                 "seconds": round(seconds, 2), "seconds_per_iteration": round(seconds / max(est.n_iter_, 1), 2),
                 "cpu_seconds": round(cpu_seconds, 2),
                 "cpu_seconds_per_iteration": round(cpu_seconds / max(est.n_iter_, 1), 3),
                 "J": float(est.objective_history_[-1]),
                 "iterations": est.n_iter_, "converged": bool(est.converged_),
                 "final_relative_change": float(info["final_relative_change"]),
                 "searches": info["searches"], "fallback_steps": info["fallback_steps"],
                 "max_iter_admm": est.max_iter_admm, "search_every": est.search_every,
                 "widened": info.get("widened", 0), "nnz": int(est.selection_.nnz),
                 "warnings": [str(w.message) for w in caught], "peak_rss_mb": round(peak_rss_mb(), 1)}


CSV_KEYS = ["kind", "N_target", "N", "n_prototypes", "max_support", "normalize", "lambda1", "lambda2", "search_every", "seconds",
            "seconds_per_iteration", "cpu_seconds", "cpu_seconds_per_iteration", "J", "iterations", "converged", "final_relative_change", "searches", "widened", "nnz",
            "peak_rss_mb", "accuracy_1nn", "load_before", "load_after"]


def load_average() -> float:
    return round(__import__("os").getloadavg()[0], 2)


def save(rows, path):
    """Rewrite the CSV after every fit, so an interrupted run keeps what it measured."""
    write_rows(rows, path, CSV_KEYS)


def exponent(xs, ys) -> float:
    """Slope of the least-squares line through ``(log x, log y)``: ``y ~ x^slope``."""
    return float(np.polyfit(np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float)), 1)[0])


def series(rows, kind, key):
    pts = sorted((r for r in rows if r["kind"] == kind), key=lambda r: float(r[key]))
    return [float(r[key]) for r in pts], pts


def plot(rows, path):
    """Log-log fit time against N and against d̄, CPU and wall seconds, with the fitted exponents."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not importable: no plot")
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    summary = {}
    for ax, kind, key, label in ((axes[0], "vs_N", "N", "N (training descriptors), d̄ = 256"),
                                 (axes[1], "vs_dbar", "n_prototypes", "d̄ (prototypes)")):
        xs, pts = series(rows, kind, key)
        if len(xs) < 2:
            continue
        for col, style, name in (("cpu_seconds", "o-", "CPU s"), ("seconds", "s--", "wall s"),
                                 ("cpu_seconds_per_iteration", "^:", "CPU s / iteration")):
            ys = [float(r[col]) for r in pts]
            k = exponent(xs, ys)
            # the small points are dominated by fixed costs: also the slope over the largest three
            k3 = exponent(xs[-3:], ys[-3:]) if len(xs) > 3 else k
            summary[f"{kind} {col}"] = round(k, 2)
            summary[f"{kind} {col} (largest 3)"] = round(k3, 2)
            ax.plot(xs, ys, style, label=f"{name}: slope {k:.2f} (largest 3: {k3:.2f})")
        if kind == "vs_dbar":
            ax.set_title(f"vs d̄ (N = {pts[0]['N']})")
        else:
            ax.set_title("vs N (synthetic jittered copies beyond 316k)")
        ax.set(xscale="log", yscale="log", xlabel=label, ylabel="seconds")
        ax.set_xticks(xs, [f"{int(x):,}" for x in xs], rotation=30, fontsize=8)
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}; log-log slopes: {json.dumps(summary)}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="only N=10k and d̄=256 points")
    ap.add_argument("--skip-full", action="store_true", help="skip the d̄ = 4096 fit on all N")
    ap.add_argument("--only-full", action="store_true", help="only the full fit (d̄ = 4096, all N)")
    ap.add_argument("--dbar", type=int, nargs="*", default=[256, 512, 1024, 2048, 4096, 8192],
                    help="d̄ values of the vs-d̄ series, at --dbar-n descriptors")
    ap.add_argument("--dbar-n", type=int, default=100_000, help="N of the vs-d̄ series (0: all training descriptors)")
    ap.add_argument("--n", type=int, nargs="*", default=[10_000, 30_000, 100_000, 0, 1_000_000],
                    help="N values of the vs-N series at d̄ = 256 (0: all 316k; above it, synthetic_images)")
    ap.add_argument("--fresh", action="store_true", help="refit points already in the CSV")
    ap.add_argument("--out", default="prolfa_scale", help="basename of the CSV/PNG under benchmarks/out/")
    ap.add_argument("--max-support", type=int, default=None,
                    help="ProLFA max_support for every fit (default: the plugin's default); 0: no cap")
    ap.add_argument("--max-iter-admm", type=int, default=None, help="ProLFA max_iter_admm (default: the plugin's)")
    ap.add_argument("--search-every", type=int, default=None, help="ProLFA search_every (default: the plugin's)")
    ap.add_argument("--max-iter", type=int, default=None, help="ProLFA max_iter (default: the plugin's)")
    ap.add_argument("--normalize", default=None, help="ProLFA normalize (default: the plugin's)")
    ap.add_argument("--lambda1", type=float, default=None, help="ProLFA lambda1 (default: the plugin's)")
    ap.add_argument("--lambda2", type=float, default=None, help="ProLFA lambda2 (default: the plugin's)")
    ap.add_argument("--param", action="append", default=[],
                    help="any other ProLFA parameter KEY=VALUE (repeatable), e.g. face_step=0")
    ap.add_argument("--verbose", action="store_true", help="log every outer iteration")
    ap.add_argument("--merge", nargs="+", metavar="CSV",
                    help="no fits: concatenate these CSVs (parts run separately) into --out's CSV and plot")
    args = ap.parse_args()
    if args.merge:
        rows = []
        for path in args.merge:
            with open(path, newline="") as fh:
                for r in csv.DictReader(fh):
                    r.update(N=int(r["N"]), n_prototypes=int(r["n_prototypes"]))
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
    if csv_path.exists() and not args.fresh:
        with open(csv_path, newline="") as fh:
            rows = list(csv.DictReader(fh))
        print(f"resuming: {len(rows)} points already in {csv_path}", flush=True)
    done = {(r["kind"], str(r.get("N_target", "")), str(r["n_prototypes"])) for r in rows}
    params = {}
    base = parse_normalization(args.normalize or ProLFA().normalize)[0]
    means = [np.asarray(b.with_descriptors(normalize_descriptors(b.descriptors, base)).means()) for b in (train, test)]
    ref = one_nn_accuracy(means[0], y_train, means[1], y_test)
    print(f"reference: 1-NN on each image's mean {base} descriptor (what ProLFA maps linearly): {ref:.2f} %",
          flush=True)
    if args.max_support is not None:
        params["max_support"] = args.max_support or None
    # the scaling law measured is cBCD's: with --max-support 0 (the plain simplex) by the deprecated backend="sparse"
    if params.get("max_support", 4) is None:
        params["backend"] = "sparse"
    for name in ("max_iter_admm", "search_every", "max_iter", "normalize", "lambda1", "lambda2"):
        if getattr(args, name) is not None:
            params[name] = getattr(args, name)
    params.update(parse_param(p) for p in args.param)

    def record(rec, kind, load_before, target):
        rec.update(kind=kind, N_target=target, load_before=load_before, load_after=load_average())
        print(json.dumps(rec), flush=True)
        rows.append(rec)
        save(rows, csv_path)

    if not args.skip_full and not args.quick and ("full", "0", "4096") not in done:
        lb = load_average()
        est, rec = one_fit(train, y_train, 4096, **params)
        rec.update(accuracy_1nn=held_out_accuracy(est, train, y_train, test, y_test))
        record(rec, "full", lb, 0)
    if args.only_full:
        return
    # fit time vs N (images drawn at random from the training split, d̄ = 256) and vs d̄ (--dbar-n)

    def first_images(n):
        """Training images drawn at random until they hold ``n`` descriptors (0: all; more: synthetic)."""
        if n == 0 or n == train.n_descriptors:
            return train, y_train
        if n > train.n_descriptors:
            return synthetic_images(train, y_train, n)
        return images_holding(train, y_train, n)

    for n in ([10_000] if args.quick else args.n):
        if ("vs_N", str(n), "256") in done:
            continue
        lb = load_average()
        sub, y_sub = first_images(n)
        est, rec = one_fit(sub, y_sub, 256, **params)
        rec.update(accuracy_1nn=held_out_accuracy(est, sub, y_sub, test, y_test))
        record(rec, "vs_N", lb, n)
    sub, y_sub = first_images(args.dbar_n)
    for dbar in ([] if args.quick else args.dbar):
        if ("vs_dbar", str(args.dbar_n), str(dbar)) in done:
            continue
        lb = load_average()
        est, rec = one_fit(sub, y_sub, dbar, **params)
        rec.update(accuracy_1nn=held_out_accuracy(est, sub, y_sub, test, y_test))
        record(rec, "vs_dbar", lb, args.dbar_n)
    print(f"wrote {csv_path}")
    plot(rows, png_path)


if __name__ == "__main__":
    main()
