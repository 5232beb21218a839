"""What a run spends on its ``fitted`` fingerprint when the model holds a large sparse matrix (ProLFA's selection).

    OMP_NUM_THREADS=1 python benchmarks/fitted_fingerprint.py [--descriptor daisy] [--against REV] [--repeats 3]

Fits ProLFA at the paper's d̄ = 4,096 on the ``knn`` evaluator's seed-0 split of Fifteen Scene (``suite/cases.py``;
``--max-iter 2`` by default: the selection has its full ``(N, d̄)`` shape and about ``d̄ x 4`` entries, as at
convergence, without the full fit's minutes), then times, alternately in this process, the digest of its fitted
arrays: ``fitted_fingerprint`` at ``REV`` (``git show``: its dense digest, the only one before the CSR scheme), this
checkout's dense scheme and its CSR scheme (:data:`lfabench.fingerprint.SPARSE_SCHEMES`). Prints CPU seconds (best of ``--repeats``), the
ratios, and whether the two dense digests are the same bytes (they must be: records without ``fitted_sparse``
are rerun in the dense scheme).
"""

from __future__ import annotations

import argparse
import inspect
import sys
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from revisions import cpu, module_at  # noqa: E402
from suite.cases import split_bags  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--descriptor", default="daisy", choices=["sift", "daisy"])
    parser.add_argument("--dbar", type=int, default=4096)
    parser.add_argument("--max-iter", type=int, default=2)
    parser.add_argument("--against", default="HEAD", help="the revision whose dense digest is timed beside")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    from lfabench.fingerprint import fitted_fingerprint
    from lfabench_plugins.aggregators.prolfa import SolverOptions
    from lfabench_plugins.aggregators.prolfa.plugin import ProLFA

    old = module_at(args.against, "lfabench/fingerprint.py", "lfabench")
    old.predictions_fingerprint = module_at(args.against, "lfabench/evaluation/predictions.py",
                                            "lfabench.evaluation").predictions_fingerprint
    train, fit_labels, *_ = split_bags("scene15", args.descriptor)
    est = ProLFA(n_prototypes=args.dbar, random_state=0, solver=SolverOptions(max_iter=args.max_iter))
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(train, fit_labels)
        C = est.selection_
        print(f"{args.descriptor}: selection {C.shape[0]:,} x {C.shape[1]:,}, {C.nnz:,} entries "
              f"({C.shape[0] * C.shape[1] * C.dtype.itemsize / 1e9:.1f} GB dense)", flush=True)
        old_dense = ((lambda: old.fitted_fingerprint(est, "dense"))
                     if "sparse" in inspect.signature(old.fitted_fingerprint).parameters
                     else (lambda: old.fitted_fingerprint(est)))
        cases = {f"{args.against}, dense": old_dense,
                 "dense": lambda: fitted_fingerprint(est, "dense"), "csr": lambda: fitted_fingerprint(est, "csr")}
        best, digests = {name: np.inf for name in cases}, {}
        for _ in range(args.repeats):
            for name, fn in cases.items():
                seconds, digests[name] = cpu(fn)
                best[name] = min(best[name], seconds)
    base = best[f"{args.against}, dense"]
    for name in cases:
        print(f"{name:>16}: {best[name]:7.3f} CPU s ({base / best[name]:.1f}x)  {digests[name][:16]}")
    same = digests[f"{args.against}, dense"] == digests["dense"]
    print(f"dense digests the same bytes: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
