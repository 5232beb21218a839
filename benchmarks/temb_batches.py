"""T-emb's two batchings, as a run uses each, paired over seeds: CPU seconds, 1-NN accuracy, how far the vectors move.

    OMP_NUM_THREADS=1 python benchmarks/temb_batches.py [--descriptor daisy] [--seeds 0 1 2 3 4 5] [--against REV]

For each seed, on the ``knn`` evaluator's split of Fifteen Scene (the board's setting, ``random_state`` = the seed),
in this process and one after the other: ``batches="padded"`` as a run used it (``fit`` on the training images,
then ``transform`` of all 4,485 in dataset order: the training images' sums again, their phi taken from the fit
up to ``REUSE_BYTES``), and ``batches="by_count"`` as a run uses it (``fit_transform`` of the training images,
``transform`` of the test images). Prints each path's CPU seconds and 1-NN accuracy (the ``knn`` evaluator's, k = 1, Euclidean, the image
without descriptors kept from matching as in a run), the largest difference of their vectors, and how many test rows are the same bits. ``--against REV``: on the first seed, the T-emb of
``REV`` (``git show``) is fitted and transforms the same way, and its vectors must equal the padded ones bit for bit
(records without ``batches`` rerun with ``"padded"``).
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
from suite.cases import DESCRIPTOR_CAPS, shared_data  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--descriptor", default="daisy", choices=["sift", "daisy"])
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(6)))
    parser.add_argument("--against", default=None, help="a revision whose T-emb must equal the padded batches")
    args = parser.parse_args(argv)
    from lfabench.registry import get_plugin
    from lfabench_plugins.aggregators.temb import TriangulationEmbedding

    root = shared_data()
    if root is None:
        print("needs ../shared/data (or $LFABENCH_SHARED_DATA)")
        return 2
    dataset = get_plugin("dataset", "scene15")(root=str(root / "scene15"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bags = get_plugin("descriptor", args.descriptor)(**DESCRIPTOR_CAPS[args.descriptor]).describe(dataset)
    evaluator = get_plugin("evaluator", "knn")(k=1, metric="euclidean")
    old_class = None if args.against is None else module_at(
        args.against, "plugins/aggregators/temb.py", "lfabench_plugins.aggregators").TriangulationEmbedding
    same_everywhere = True
    print(f"{args.descriptor}: {bags.n_samples} images, {bags.n_descriptors:,} descriptors", flush=True)
    for seed in args.seeds:
        split = evaluator.split(dataset, seed)
        split.empty_rows = bags.counts == 0
        tr, te = split.train_indices, split.test_indices
        train, test = bags.subset(tr), bags.subset(te)
        with threadpool_limits(1):
            padded = TriangulationEmbedding(random_state=seed, batches="padded")
            pad_s, F_pad = cpu(lambda: padded.fit(train, split.fit_labels).transform(bags))
            del padded
            by_count = TriangulationEmbedding(random_state=seed)
            new_s, (F_tr, F_te) = cpu(lambda: (by_count.fit_transform(train, split.fit_labels),
                                                  by_count.transform(test)))
            del by_count
            if old_class is not None and seed == args.seeds[0]:
                as_before = {"batches": "padded"} if "batches" in inspect.signature(old_class).parameters else {}
                F_old = old_class(random_state=seed, **as_before).fit(train, split.fit_labels).transform(bags)
                same = np.array_equal(F_old, F_pad)
                same_everywhere &= same
                print(f"  {args.against}'s T-emb and batches='padded': the same bits: {same}")
        F_new = np.empty_like(F_pad)
        F_new[tr], F_new[te] = F_tr, F_te
        acc_pad, acc_new = (evaluator.evaluate(F, dataset, split)["accuracy"] for F in (F_pad, F_new))
        diff = max(np.abs(F_pad[tr] - F_tr).max(), np.abs(F_pad[te] - F_te).max())
        same_rows = int(np.all(F_pad[te] == F_te, axis=1).sum())
        print(f"seed {seed}: padded {pad_s:6.1f} CPU s, 1-NN {acc_pad:.2f} %; by_count {new_s:6.1f} CPU s "
              f"({pad_s / new_s:.2f}x), 1-NN {acc_new:.2f} %; largest difference {diff:.2e}, test rows the same "
              f"bits {same_rows} of {te.size}", flush=True)
    return 0 if same_everywhere else 1


if __name__ == "__main__":
    raise SystemExit(main())
