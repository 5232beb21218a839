"""Helpers shared by the supervised aggregators: image labels on descriptors, per-image training
samples, descriptor standardisation, and an L-BFGS loop that records its training curve.

How labels reach local descriptors (LC-KSVD2, DBoWs, UniVCG, T1, EO-BoW): every descriptor
inherits the label of the image it was extracted from (:func:`descriptor_labels`); no method
here assumes a descriptor-level ground truth.
"""

from __future__ import annotations

import numpy as np

from lfabench.sdk import Bags, check_labels

from .codebooks import check_random_state, kmeans_codebook


def class_indicator(y, n_samples: int) -> np.ndarray:
    """[m, C] one-hot float matrix of the image labels (classes sorted; see ``check_labels``)."""
    Y, _ = check_labels(y, n_samples)
    return Y


def descriptor_labels(bags: Bags, codes: np.ndarray) -> np.ndarray:
    """[N] the class code of each descriptor: the code of the image holding it (``codes`` [m])."""
    return np.asarray(codes)[bags.sample_index()]


def per_image_sample(bags: Bags, per_image: int | None, random_state) -> Bags:
    """At most ``per_image`` descriptors of every image, drawn uniformly without replacement (seeded).

    Keeps every image (empty ones stay empty) so image-level losses see all training images.
    ``None`` keeps everything. Vectorised: one random key per descriptor, ranked within its image.
    """
    if per_image is None or bags.n_descriptors == 0 or bags.counts.max() <= per_image:
        return bags
    if int(per_image) < 1:
        raise ValueError(f"descriptors_per_image must be >= 1 or None, got {per_image}")
    rng = check_random_state(random_state)
    owner = bags.sample_index()
    order = np.lexsort((rng.random_sample(bags.n_descriptors), owner))   # by image, random within image
    rank = np.arange(bags.n_descriptors) - bags.offsets[owner[order]]
    keep = np.sort(order[rank < per_image])
    counts = np.minimum(bags.counts, per_image)
    return Bags(bags.descriptors[keep], np.concatenate([[0], np.cumsum(counts)]), validate=False)


class Standardizer:
    """``x -> (x - mean) / scale`` with ``scale`` one scalar (root mean squared centred norm).

    A scalar keeps Euclidean geometry (codebooks, nearest words) intact while putting parameters
    at unit scale, which L-BFGS needs (raw SIFT entries reach hundreds).
    """

    def fit(self, X: np.ndarray) -> "Standardizer":
        X = np.asarray(X, dtype=np.float64)
        self.mean_ = X.mean(axis=0)
        self.scale_ = float(np.sqrt(max(np.mean(np.sum((X - self.mean_) ** 2, axis=1)), 1e-24)))
        return self

    def transform(self, X: np.ndarray) -> np.ndarray:
        return (np.asarray(X, dtype=np.float64) - self.mean_) / self.scale_


def lbfgs(fun, x0: np.ndarray, max_iter: int, desc: str, tol: float = 1e-6) -> tuple[np.ndarray, list[float], str]:
    """Minimise ``fun(x) -> (loss, grad)`` by scipy's L-BFGS-B with a tqdm bar.

    Returns ``(x, curve, message)``: ``curve[0]`` is the loss at ``x0``, then one loss per iteration.
    ``fun`` is evaluated once per distinct point: scipy's first call, at ``x0``, reuses the curve's.
    """
    from scipy.optimize import minimize
    from tqdm.auto import tqdm  # at first use: tqdm.auto imports asyncio, a tenth of lfabench run's start-up

    last = {}

    def once(x):
        if "x" not in last or not np.array_equal(last["x"], x):
            last["x"], last["value"] = np.array(x, copy=True), fun(x)
        loss, grad = last["value"]
        return loss, np.array(grad, copy=True)      # the optimiser may write into what it is given

    curve = [float(once(x0)[0])]
    if max_iter <= 0:
        return x0, curve, "max_iter=0: no optimisation"
    with tqdm(total=int(max_iter), desc=desc, unit="it", leave=False, disable=None) as bar:
        def callback(intermediate_result):
            curve.append(float(intermediate_result.fun))
            bar.update(1)
            bar.set_postfix(loss=f"{curve[-1]:.4g}")

        res = minimize(once, x0, jac=True, method="L-BFGS-B", callback=callback,
                       options={"maxiter": int(max_iter), "ftol": tol, "gtol": 1e-8})
    return res.x, curve, str(res.message)


def codebook_start(est, bags: Bags):
    """The common start of T1, EO-BoW and DBoWs, from the estimator's own hyper-parameters.

    A seeded draw of ``est.descriptors_per_image`` descriptors per image (:func:`per_image_sample`),
    a :class:`Standardizer` fitted on it, the standardised sample ``X`` ``[N, d]`` and the initial
    seeded k-means codebook ``V0`` ``[K, d]`` (float64) of ``X``. Returns ``(train, standardizer, X, V0)``.
    """
    train = per_image_sample(bags, est.descriptors_per_image, est.random_state)
    standardizer = Standardizer().fit(train.descriptors)
    X = standardizer.transform(train.descriptors)
    V0 = kmeans_codebook(X.astype(np.float32), est.n_clusters, est.max_training_descriptors,
                         est.kmeans_iter, est.random_state).astype(np.float64)
    return train, standardizer, X, V0
