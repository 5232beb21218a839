"""ProLFA's W-step at paper scale, timed against another revision's: the solve and ``sigma_max(W)``, as a fit
calls them after every outer iteration.

    OMP_NUM_THREADS=1 python benchmarks/wstep.py --against REV [--descriptor sift] [--dbar 4096] [--repeats 10]

On the ``knn`` evaluator's seed-0 split of Fifteen Scene (``suite/cases.py``; 20 % of each class labelled, as
the board's Semi-ProLFA, or all of it with ``--labelled 1``), Semi-ProLFA's problem as its fit builds it, and
prototypes ``P = X^T C`` for a seeded one-hot ``C`` (``(d, d̄)``), times in one process, alternately: REV's
``solve_w`` with the norm as REV's default computed it ("basis"), and this checkout's with its defaults; prints
CPU seconds (best of ``--repeats``), their ratio, and how far apart the two ``W`` and norms are (they agree to
rounding, not bit for bit).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from revisions import cpu, module_at  # noqa: E402
from suite.cases import split_bags  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--against", required=True, help="the revision to time beside this checkout")
    parser.add_argument("--descriptor", default="sift", choices=["sift", "daisy"])
    parser.add_argument("--dbar", type=int, default=4096)
    parser.add_argument("--labelled", type=float, default=0.2)
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args(argv)
    import scipy.sparse as sp
    from lfabench_plugins.aggregators.prolfa import SolverOptions
    from lfabench_plugins.aggregators.prolfa import wstep as new
    from lfabench_plugins.aggregators.prolfa.plugin import SemiProLFA

    old = module_at(args.against, "plugins/aggregators/prolfa/wstep.py", "lfabench_plugins.aggregators.prolfa")
    bags, fit_labels, *_ = split_bags("scene15", args.descriptor, args.labelled)
    # the fit's own Problem: descriptors normalised, centred, scaled and merged as the plugin does
    est = SemiProLFA(n_prototypes=args.dbar, random_state=0)
    Y, labelled = est._responses(bags, fit_labels)
    pb, _, _ = est._problem(bags, Y, labelled, est._check_params())
    N = pb.n_descriptors
    rows = np.random.default_rng(0).choice(N, args.dbar, replace=False)
    P = pb.prototypes(sp.csc_matrix((np.ones(args.dbar), (rows, np.arange(args.dbar))), shape=(N, args.dbar)))
    choice = SolverOptions().spectral_norm
    print(f"{args.descriptor}: N = {N:,} distinct descriptors, d = {pb.X.shape[1]}, d̄ = {args.dbar:,}, "
          f"c = {Y.shape[1]}, {int(labelled.sum())} labelled samples; this checkout's spectral_norm = {choice!r} "
          f"(basis: {new.uses_basis_norm(pb, choice)}), {args.against}'s = 'basis'")

    def step(module, basis):
        W = module.solve_w(pb, P, basis)
        return W, pb.spectral_norm(W)

    best = {"old": np.inf, "new": np.inf}
    with threadpool_limits(1):
        for _ in range(args.repeats):
            t_old, (W_old, n_old) = cpu(lambda: step(old, True))
            t_new, (W_new, n_new) = cpu(lambda: step(new, new.uses_basis_norm(pb, choice)))
            best["old"], best["new"] = min(best["old"], t_old), min(best["new"], t_new)
    rel_w = float(np.abs(W_new - W_old).max() / np.abs(W_old).max())
    print(f"W-step + sigma_max(W), CPU s (best of {args.repeats}): {args.against} {best['old']:.4f}, "
          f"this checkout {best['new']:.4f}, {best['old'] / best['new']:.2f}x")
    print(f"max |W_new - W_old| / max |W_old| = {rel_w:.2e}; sigma_max {n_old!r} against {n_new!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
