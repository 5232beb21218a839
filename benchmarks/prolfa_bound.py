"""ProLFA's representational bound: 1-NN on the best linear map (LDA) of each image's mean (lifted) descriptor.

With the paper's linear kernel, ProLFA's vector for image i is ``mu_i^T P``, a
linear map of its mean descriptor; with a feature map phi it is a linear map of
its mean *lifted* descriptor. So 1-NN on the mean itself (raw) and after LDA (a
strong supervised linear map) tells what ProLFA can reach at best, per kernel.
This is a bound on a model, not a result of ProLFA (docs/prolfa-bound.md).

    flock /tmp/lfabench-bench.lock .venv/bin/python benchmarks/prolfa_bound.py --split validation
    flock /tmp/lfabench-bench.lock .venv/bin/python benchmarks/prolfa_bound.py --split test

``validation``: the training part of seed 0's 80/20 split, split again 80/20
(seed 1), as ``prolfa_tune.py`` (tuning happens here). ``test``: seed 0's split
itself (reported, never tuned on). Maps: ``--maps linear nystroem_rbf:G:D ...``
(G = gamma, D = components) and ``additive_chi2`` (on rootsift); base
normalisation l2, centred.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from common import one_nn_accuracy, scene15_sift  # noqa: E402

from lfabench_plugins.aggregators.prolfa.featuremap import apply_feature_map, fit_feature_map  # noqa: E402
from lfabench_plugins.aggregators.prolfa.normalize import normalize_descriptors  # noqa: E402
from lfabench_plugins.evaluators.splits import stratified_split  # noqa: E402


def splits(labels, which):
    train_idx, test_idx = stratified_split(labels, 0.2, 0)
    if which == "test":
        return train_idx, test_idx
    fit_pos, val_pos = stratified_split(labels[train_idx], 0.2, 1)
    return train_idx[fit_pos], train_idx[val_pos]


def _unit(M: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero)."""
    return M / np.maximum(np.linalg.norm(M, axis=1, keepdims=True), 1e-300)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", choices=["validation", "test"], default="validation")
    ap.add_argument("--maps", nargs="+", default=["linear", "nystroem_rbf:2:256", "nystroem_rbf:2:512",
                                                  "nystroem_rbf:2:1024", "nystroem_rbf:1:1024",
                                                  "nystroem_rbf:4:1024", "additive_chi2"])
    args = ap.parse_args()
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis

    bags, labels = scene15_sift(90)
    tr, te = splits(labels, args.split)
    train, test = bags.subset(tr), bags.subset(te)
    print(f"split={args.split}: {tr.size} / {te.size} images, N_train={train.n_descriptors}")
    print("| map | base | D | 1-NN on mean (%) | on the L2-normalised mean (%) | 1-NN after LDA (%) | seconds |\n"
          "|---|---|---|---|---|---|---|")
    for spec in args.maps:
        t0 = time.perf_counter()
        name, *rest = spec.split(":")
        gamma = float(rest[0]) if rest else 2.0
        comps = int(rest[1]) if len(rest) > 1 else 1024
        base = "rootsift" if name == "additive_chi2" else "l2"
        Xtr = normalize_descriptors(train.descriptors, base)
        fmap = fit_feature_map(Xtr, name, comps, gamma, 20000, np.random.default_rng(0))
        Ftr = apply_feature_map(fmap, Xtr)
        mean = Ftr.mean(axis=0, dtype=np.float64)
        M_tr = np.asarray(train.with_descriptors(Ftr).means(), dtype=np.float64) - mean
        Fte = apply_feature_map(fmap, normalize_descriptors(test.descriptors, base))
        M_te = np.asarray(test.with_descriptors(Fte).means(), dtype=np.float64) - mean
        raw = one_nn_accuracy(M_tr, labels[tr], M_te, labels[te])
        # the centred means L2-normalised (the normalisation VLAD and FV end with): no supervision, no fit
        unit = one_nn_accuracy(_unit(M_tr), labels[tr], _unit(M_te), labels[te])
        lda = LinearDiscriminantAnalysis(solver="eigen", shrinkage="auto").fit(M_tr, labels[tr])
        acc = one_nn_accuracy(lda.transform(M_tr), labels[tr], lda.transform(M_te), labels[te])
        print(f"| {name} (gamma {gamma:g}) | {base} | {M_tr.shape[1]} | {raw:.2f} | {unit:.2f} | {acc:.2f} | "
              f"{time.perf_counter() - t0:.1f} |", flush=True)


if __name__ == "__main__":
    main()
