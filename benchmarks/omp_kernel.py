"""LC-KSVD2's Batch-OMP and atom-update kernels against another revision's, alternately in one process, on real data.

    OMP_NUM_THREADS=1 python benchmarks/omp_kernel.py [--against REV] [--descriptors sift daisy] [--repeats 3]
        [--fit [--fit-iters N_ITER INIT_ITER]]

The setting of ``benchmarks/suite/lcksvd.py`` (the ``knn`` evaluator's seed-0 split of the shared Fifteen Scene
copy, K = 450 atoms, T = 30): ``gram_omp`` of ``plugins/aggregators/omp_kernels.py`` at ``REV`` (read with
``git show``, default ``HEAD``) and of the working tree, alternately, on one BLAS thread, for the 30,000 training
descriptors on their initial atoms, the same signals stacked with their label rows on the stacked atoms, and
20,000 test descriptors on the initial atoms; then ``update_atoms`` (K-SVD's atom updates) on the stacked
signals' codes. Printed per case: CPU seconds of each (best of ``repeats``), their ratio, the OMP kernel's
multiply-adds per second (the Cholesky columns, ``n K T (T - 1) / 2``), and whether the outputs are the same
bits. ``--fit`` also fits ``LCKSVD2(random_state=0, n_iter=5, init_iter=2)`` (``--fit-iters 50 20``: the paper's
iterations) on the training bags with each revision's kernels (patched into ``omp.py``) and compares the
dictionaries and transforms bit for bit.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from revisions import cpu, module_at  # noqa: E402
from suite.lcksvd import LcksvdStages, T  # noqa: E402


def same_bits(a, b) -> bool:
    return all(np.array_equal(x, y) for x, y in zip(a, b))


def paper_stages(descriptors):
    """``(descriptor, LcksvdStages set up for it)`` for each descriptor whose data is here; the others are named
    as skipped."""
    for descriptor in descriptors:
        stages = LcksvdStages()
        try:
            stages.setup(descriptor)
        except NotImplementedError as exc:
            print(f"{descriptor}: skipped ({exc})")
            continue
        yield descriptor, stages


def kernel_cases(stages: LcksvdStages) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """``{case: (alpha0 [n, K], G [K, K])}`` of the three OMP problems of an LC-KSVD2 fit and transform."""
    from lfabench_plugins.aggregators.omp import normalize_atoms

    D = normalize_atoms(stages.D0)
    stacked = normalize_atoms(stages.D_new0)
    d = stages.Y.shape[1]
    stacked_alpha = stages.Y @ stacked[:, :d].T + (stages.class_rows @ stacked[:, d:].T)[stages.labels]
    return {"training descriptors": (stages.Y @ D.T, D @ D.T),
            "stacked signals": (stacked_alpha, stacked @ stacked.T),
            "test descriptors (20,000)": (stages.test[:20_000] @ D.T, D @ D.T)}


def compare_fits(bags, old, n_iter: int, init_iter: int) -> None:
    """An LC-KSVD2 fit and transform with ``old``'s kernels and with the working tree's, once each."""
    from lfabench_plugins.aggregators import omp
    from lfabench.registry import get_plugin

    train, labels, _, test, _ = bags
    current = omp.gram_omp, omp.update_atoms
    results = {}
    for name, (gram_omp, update_atoms) in (("before", (old.gram_omp, old.update_atoms)), ("after", current)):
        omp.gram_omp, omp.update_atoms = gram_omp, update_atoms
        try:
            est = get_plugin("aggregator", "lcksvd2")(random_state=0, n_iter=n_iter, init_iter=init_iter)
            fit_s, _ = cpu(lambda: est.fit(train, labels))
            transform_s, features = cpu(lambda: est.transform(test))
        finally:
            omp.gram_omp, omp.update_atoms = current
        results[name] = (fit_s, transform_s, est.dictionary_, features)
    (fb, tb, Db, Fb), (fa, ta, Da, Fa) = results["before"], results["after"]
    print(f"  LCKSVD2(n_iter={n_iter}, init_iter={init_iter}) fit {fb:8.2f} s -> {fa:8.2f} s ({fb / fa:.2f}x); "
          f"transform of the test images {tb:.2f} s -> {ta:.2f} s ({tb / ta:.2f}x); "
          f"dictionary same bits: {np.array_equal(Db, Da)}, features same bits: {np.array_equal(Fb, Fa)}")


def compare_atom_updates(stages: LcksvdStages, old, repeats: int) -> None:
    """``update_atoms`` of ``old`` and of the working tree on the stacked signals' first codes (one pass over the
    K atoms of a stacked K-SVD iteration), alternately, best of ``repeats``."""
    from lfabench_plugins.aggregators import omp_kernels
    from lfabench_plugins.aggregators.omp import normalize_atoms, sparse_omp

    Y, labels = stages.Y, stages.labels
    D = np.ascontiguousarray(normalize_atoms(stages.D_new0))
    support, coef, count = sparse_omp(Y, D, T, stages.class_rows, labels)
    P, lab = np.ascontiguousarray(stages.class_rows), np.ascontiguousarray(labels, dtype=np.int64)

    def run(kernel):
        D_out, coef_out, free = D.copy(), coef.copy(), np.ones(len(Y), dtype=bool)
        replaced = kernel(Y, P, lab, D_out, support, coef_out, count, free)
        return replaced, D_out, coef_out, free

    for kernel in (old.update_atoms, omp_kernels.update_atoms):                # compile outside the timing
        kernel(Y[:8], P, lab[:8], D.copy(), support[:8], coef[:8].copy(), count[:8], np.ones(8, dtype=bool))
    t_old = t_new = np.inf
    for _ in range(repeats):
        s, before = cpu(lambda: run(old.update_atoms))
        t_old = min(t_old, s)
        s, after = cpu(lambda: run(omp_kernels.update_atoms))
        t_new = min(t_new, s)
    print(f"  {'atom updates (stacked)':28s} {t_old:7.2f} s -> {t_new:7.2f} s ({t_old / t_new:.2f}x), "
          f"{int(after[0].sum())} atoms replaced, same bits: {same_bits(before, after)}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", default="HEAD", help="the revision whose kernel is timed and compared")
    parser.add_argument("--descriptors", nargs="+", default=["sift", "daisy"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--fit", action="store_true", help="also an LC-KSVD2 fit with each revision's kernels")
    parser.add_argument("--fit-iters", type=int, nargs=2, default=[5, 2], metavar=("N_ITER", "INIT_ITER"),
                        help="that fit's n_iter and init_iter (the paper's: 50 20)")
    args = parser.parse_args(argv)
    from lfabench_plugins.aggregators import omp_kernels

    old = module_at(args.against, "plugins/aggregators/omp_kernels.py", "lfabench_plugins.aggregators")
    eps = float(np.finfo(np.float64).eps)
    with threadpool_limits(1):
        for descriptor, stages in paper_stages(args.descriptors):
            print(f"{descriptor} (K = {stages.D0.shape[0]}, T = {T}; kernel {args.against} -> working tree)")
            for case, (alpha0, G) in kernel_cases(stages).items():
                old.gram_omp(alpha0[:8], G, T, eps)                 # compile outside the timing
                omp_kernels.gram_omp(alpha0[:8], G, T, eps)
                t_old = t_new = np.inf
                for _ in range(args.repeats):
                    s, before = cpu(lambda: old.gram_omp(alpha0, G, T, eps))
                    t_old = min(t_old, s)
                    s, after = cpu(lambda: omp_kernels.gram_omp(alpha0, G, T, eps))
                    t_new = min(t_new, s)
                n, K = alpha0.shape
                madds = n * K * T * (T - 1) / 2
                print(f"  {case:28s} {t_old:7.2f} s -> {t_new:7.2f} s ({t_old / t_new:.2f}x), "
                      f"{madds / t_old / 1e9:.1f} -> {madds / t_new / 1e9:.1f} G multiply-adds/s, "
                      f"same bits: {same_bits(before, after)}")
            compare_atom_updates(stages, old, args.repeats)
            if args.fit:
                from suite.cases import split_bags

                compare_fits(split_bags("scene15", descriptor), old, *args.fit_iters)
    return 0


if __name__ == "__main__":
    sys.exit(main())
