"""FV's fit with the float32 EM against scikit-learn's EM, on real Fifteen Scene SIFT-90 and DAISY-150.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 python benchmarks/gmm_fit.py [--stride 3] [--repeats 2]
        [--descriptors sift daisy] [--seeds 0 1 2]

Descriptors of every ``stride``-th image of the shared Fifteen Scene copy (``../shared/data/scene15`` or
``$LFABENCH_SHARED_DATA``; the array cache keeps them) at the board's caps. For each descriptor:

* **fit**: ``FisherVector(random_state=0)`` (its defaults: 100,000 training descriptors, PCA-64, K = 64,
  at most 100 EM iterations) fitted with ``em="sklearn"`` and ``em="float32"`` alternately in this process,
  ``repeats`` times each, CPU seconds of the process on one BLAS thread; the GMM's own EM timed the same way
  from the same start. The ratio of the two is measured under the same load.
* **agreement**: the EM iterations each ran, their final mean log-likelihoods, the largest relative
  difference of the GMMs' variances and of the FV features of all the images.
* **FV+NN fit** (``--fvnn``): ``FVNN(random_state=0)`` (its defaults: the FV layer above, PCA-whitening to
  512, four bagged MLPs) fitted with either EM, alternately, CPU seconds: the whole fit, whose other stages
  did not change.
* **paired 1-NN** (``--seeds``): for each seed, a stratified 80/20 split of the images, FV fitted with either
  EM (``random_state=seed``), 1-NN accuracy on the test images, and how many test predictions differ.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from lfabench.bags import Bags
from lfabench.dataset import Dataset
from lfabench.registry import get_plugin
from lfabench_plugins.aggregators.codebooks import assign_nearest, kmeans_codebook, training_sample
from lfabench_plugins.aggregators.fv import FisherVector
from revisions import cpu  # benchmarks/ is on sys.path when this script runs

CAPS = {"sift": 90, "daisy": 150}


def shared_data() -> Path:
    root = os.environ.get("LFABENCH_SHARED_DATA") or str(Path(__file__).resolve().parents[2] / "shared" / "data")
    if not Path(root, "scene15").is_dir():
        sys.exit(f"no Fifteen Scene under {root} (set LFABENCH_SHARED_DATA)")
    return Path(root)


def subset(dataset: Dataset, stride: int) -> Dataset:
    keep = np.arange(0, dataset.n_samples, stride)
    return Dataset(name=f"{dataset.name}_every{stride}", task=dataset.task,
                   sample_ids=[dataset.sample_ids[i] for i in keep], labels=np.asarray(dataset.labels)[keep],
                   class_names=dataset.class_names, images=[dataset.images[i] for i in keep], root=dataset.root)


def em_start(sample: np.ndarray, seed: int):
    """The start of FV's EM on its PCA-64 sample (``fit_diag_gmm``'s k-means initialisation)."""
    from sklearn.decomposition import PCA

    X = sample.astype(np.float64)
    X = X - X.mean(axis=0)
    X = X @ PCA(n_components=64, svd_solver="full").fit(X).components_.T
    K = 64
    centres = kmeans_codebook(X.astype(np.float32), K, X.shape[0], 20, seed).astype(np.float64)
    words = assign_nearest(centres, X)
    counts = np.bincount(words, minlength=K).astype(np.float64)
    sums, sq = np.zeros((K, 64)), np.zeros((K, 64))
    np.add.at(sums, words, X)
    np.add.at(sq, words, X * X)
    safe = np.maximum(counts, 1)[:, None]
    var = np.where(counts[:, None] > 1, sq / safe - (sums / safe) ** 2, X.var(axis=0) + 1e-6) + 1e-6
    w = np.maximum(counts, 1e-3)
    return X, w / w.sum(), centres, 1.0 / var


def time_em(X, w, mu, prec, repeats: int) -> None:
    import warnings

    from sklearn.exceptions import ConvergenceWarning
    from sklearn.mixture import GaussianMixture

    from lfabench_plugins.aggregators.gmm import fit_diag_gmm_em

    def sk():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return GaussianMixture(64, covariance_type="diag", reg_covar=1e-6, weights_init=w, means_init=mu,
                                   precisions_init=prec, random_state=0).fit(X)

    times = {"sklearn": [], "float32": []}
    for _ in range(repeats):
        t_old, ref = cpu(sk)
        t_new, ours = cpu(lambda: fit_diag_gmm_em(X, w, mu, prec))
        times["sklearn"].append(t_old)
        times["float32"].append(t_new)
    rel_var = float(np.max(np.abs(ours.variances - ref.covariances_) / ref.covariances_))
    print(f"  EM alone: sklearn {min(times['sklearn']):.2f} s ({ref.n_iter_} it), float32 "
          f"{min(times['float32']):.2f} s ({ours.n_iter} it), ratio {min(times['sklearn']) / min(times['float32']):.2f}x; "
          f"per iteration {min(times['sklearn']) / ref.n_iter_:.3f} s vs {min(times['float32']) / ours.n_iter:.3f} s; "
          f"lower bound {ref.lower_bound_:.6f} vs {ours.lower_bound:.6f} "
          f"(rel {abs(ours.lower_bound - ref.lower_bound_) / abs(ref.lower_bound_):.1e}); max rel variance diff "
          f"{rel_var:.1e}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stride", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--descriptors", nargs="+", default=["sift", "daisy"])
    parser.add_argument("--seeds", nargs="*", type=int, default=[])
    parser.add_argument("--skip-fit", action="store_true", help="only the EM alone and the paired 1-NN")
    parser.add_argument("--skip-em", action="store_true", help="no EM-alone timing")
    parser.add_argument("--fvnn", action="store_true", help="time FV+NN's whole fit with either EM")
    args = parser.parse_args(argv)
    full = get_plugin("dataset", "scene15")(root=str(shared_data() / "scene15"))
    data = subset(full, args.stride)
    for name in args.descriptors:
        bags: Bags = get_plugin("descriptor", name)(max_keypoints=CAPS[name]).describe(data, progress=False, n_jobs=1)
        print(f"{name}: {data.n_samples} images, {bags.n_descriptors} descriptors of {bags.dim}-D", flush=True)
        with threadpool_limits(1):
            sample = training_sample(bags.descriptors, 100_000, 0)
            if not args.skip_em:
                time_em(*em_start(sample, 0), repeats=args.repeats)
            if args.fvnn:
                from lfabench_plugins.aggregators.fv_nn import FVNN

                labels = np.asarray(data.labels)
                times = {"sklearn": [], "float32": []}
                for _ in range(args.repeats):
                    for em in ("sklearn", "float32"):
                        times[em].append(cpu(lambda em=em: FVNN(em=em, random_state=0).fit(bags, labels))[0])
                print(f"  FV+NN fit: sklearn {min(times['sklearn']):.2f} s, float32 {min(times['float32']):.2f} s, "
                      f"ratio {min(times['sklearn']) / min(times['float32']):.2f}x (best of {args.repeats})",
                      flush=True)
            if not args.skip_fit:
                times = {"sklearn": [], "float32": []}
                fitted = {}
                for _ in range(args.repeats):
                    for em in ("sklearn", "float32"):
                        t, est = cpu(lambda em=em: FisherVector(em=em, random_state=0).fit(bags))
                        times[em].append(t)
                        fitted[em] = est
                old, new = fitted["sklearn"], fitted["float32"]
                F_old, F_new = old.transform(bags), new.transform(bags)
                print(f"  FV fit: sklearn {min(times['sklearn']):.2f} s, float32 {min(times['float32']):.2f} s, "
                      f"ratio {min(times['sklearn']) / min(times['float32']):.2f}x (best of {args.repeats}; all: "
                      f"{[round(t, 2) for t in times['sklearn']]} / {[round(t, 2) for t in times['float32']]}); EM "
                      f"iterations {old.fit_info_['gmm_n_iter']} / {new.fit_info_['gmm_n_iter']}; lower bound "
                      f"{old.fit_info_['gmm_lower_bound']:.6f} / {new.fit_info_['gmm_lower_bound']:.6f}; FV features "
                      f"max |diff| {float(np.max(np.abs(F_old - F_new))):.1e} (entries up to "
                      f"{float(np.max(np.abs(F_old))):.2f})", flush=True)
            labels = np.asarray(data.labels)
            for seed in args.seeds:
                from sklearn.model_selection import train_test_split

                train, test = train_test_split(np.arange(data.n_samples), test_size=0.2, stratify=labels,
                                               random_state=seed)
                preds = {}
                for em in ("sklearn", "float32"):
                    est = FisherVector(em=em, random_state=seed).fit(bags.subset(train))
                    Ftr, Fte = est.transform(bags.subset(train)), est.transform(bags.subset(test))
                    d2 = (Fte * Fte).sum(1)[:, None] - 2 * Fte @ Ftr.T + (Ftr * Ftr).sum(1)[None, :]
                    preds[em] = labels[train][np.argmin(d2, axis=1)]
                acc = {em: 100.0 * float(np.mean(p == labels[test])) for em, p in preds.items()}
                print(f"  seed {seed}: 1-NN sklearn {acc['sklearn']:.2f} %, float32 {acc['float32']:.2f} %, "
                      f"{int(np.sum(preds['sklearn'] != preds['float32']))} of {len(test)} predictions differ",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
