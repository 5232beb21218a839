"""Where a ProLFA fit's time goes, by phase of Algorithm 2 (cProfile), at paper scale or below.

    flock /tmp/lfabench-bench.lock .venv/bin/python benchmarks/prolfa_profile.py [--dbar 4096] [--max-iter 24] \
        [--init cancelling] [--param feature_map=nystroem_rbf --param n_components=1024 --param gamma=2]

Fits ProLFA on the Scene-15 SIFT-90 training split (seed 0, 80/20) with the
given settings and prints, per phase (candidate search, ADMM, safeguard /
gradient step, face step, W-step, objective, gradient factor), the cumulative seconds and
their share of the fit, plus seconds per outer iteration.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import time
import warnings

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from common import parse_param, prolfa_params, scene15_sift  # noqa: E402

from lfabench_plugins.evaluators.splits import stratified_split  # noqa: E402
from lfabench_plugins.aggregators.prolfa.plugin import ProLFA  # noqa: E402

PHASES = {
    "start (init)": "start_selection",
    "candidate search (FAISS, working set)": "_candidate_rows",
    "ADMM: Z-step + C-step + dual": "_admm",
    "  of which Z-step": "reweighted_z_step",
    "safeguard (line search + gradient step)": "_descent_point",
    "face step (exact weights on each support)": "face_step",
    "W-step (Sylvester)": "solve_w",
    "objective J": "objective",
    "gradient factor H": "gradient_factor",
    "prototypes P = X^T C": "prototypes",
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dbar", type=int, default=4096)
    ap.add_argument("--max-iter", type=int, default=24)
    ap.add_argument("--max-support", type=int, default=4, help="0: the paper's plain simplex")
    ap.add_argument("--feature-map", default=None)
    ap.add_argument("--init", default="one_hot", help="the solver's start: one_hot (default) or cancelling")
    ap.add_argument("--dump", default=None, help="also write the raw cProfile stats to this file (pstats)")
    ap.add_argument("--param", action="append", default=[], help="another ProLFA parameter KEY=VALUE (repeatable)")
    args = ap.parse_args()
    bags, labels = scene15_sift(90)
    train_idx, _ = stratified_split(labels, 0.2, 0)
    train, y = bags.subset(train_idx), labels[train_idx]
    # the phases profiled are cBCD's: on the plain simplex (--max-support 0), by the deprecated backend="sparse"
    params = dict(n_prototypes=args.dbar, max_iter=args.max_iter, max_support=args.max_support or None,
                  random_state=0, init=args.init)
    if not args.max_support:
        params["backend"] = "sparse"
    if args.feature_map:
        params["feature_map"] = args.feature_map
    params.update(parse_param(text) for text in args.param)
    est = ProLFA(**prolfa_params(params))
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prof.enable()
        est.fit(train, y)
        prof.disable()
    total = time.perf_counter() - t0
    stats = pstats.Stats(prof)
    if args.dump:
        stats.dump_stats(args.dump)
    cum = {}
    for (file, _, name), (_, _, _, ct, _) in stats.stats.items():
        if "prolfa" in file:
            cum[name] = cum.get(name, 0.0) + ct
    fit_s = est.fit_info_["seconds"]
    print(f"N={train.n_descriptors} d̄={args.dbar} iterations={est.n_iter_} fit (solver) {fit_s:.1f} s, "
          f"whole fit() {total:.1f} s, {fit_s / est.n_iter_:.2f} s/iteration, load {os.getloadavg()[0]:.2f}")
    print("| phase | seconds | share of solver |\n|---|---|---|")
    for label, fn in PHASES.items():
        s = cum.get(fn, 0.0)
        print(f"| {label} | {s:.1f} | {100 * s / fit_s:.0f} % |")
    print("\nfunctions with the most own time (whole fit()):")
    stats.sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
