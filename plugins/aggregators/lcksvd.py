"""LC-KSVD2: label-consistent K-SVD (Jiang, Lin & Davis, "Label consistent K-SVD: learning a discriminative
dictionary for recognition", TPAMI 35(11), 2013), used as a local-feature aggregator.

Dictionary learning on local descriptors y_j [d] (L2-normalised), each labelled with its image's class:

    min_{D, A, W, X}  ||Y - D X||_F^2 + alpha ||Q - A X||_F^2 + beta ||H - W X||_F^2
                      s.t. ||x_j||_0 <= T  for every j                                     (LC-KSVD2)

    Y [d, n] descriptors, D [d, K] atoms, X [K, n] codes, H [C, n] one-hot descriptor labels,
    Q [K, n] "discriminative sparse codes": q_kj = 1 iff atom k belongs to descriptor j's class,
    A [K, K] linear transform, W [C, K] linear classifier.

It is solved as one K-SVD on the stacked problem ``[Y; sqrt(alpha) Q; sqrt(beta) H] ~ [D; sqrt(alpha) A;
sqrt(beta) W] X`` with unit-norm stacked atoms (:func:`.omp.ksvd`: Batch-OMP codes, approximate
K-SVD atom updates, dead and near-duplicate atoms replaced as in the reference K-SVD box); the label rows
of a stacked signal depend only on its class, so they are passed as C class rows, never as an
[n, d + K + C] matrix.
Initialisation as the authors' code (``initialization4LCKSVD.m``): K/C atoms per class from a K-SVD on
that class's descriptors alone (``init_iter`` iterations, starting from random descriptors of the class),
stacked into D0; X0 = the codes of a K-SVD on all training descriptors started at D0 (``init_iter``
iterations); ``A0 = Q X0^T (X0 X0^T + I)^-1`` and ``W0 = H X0^T (X0 X0^T + I)^-1`` (ridge, lambda = 1);
the stacked K-SVD starts from [D0; sqrt(alpha) A0; sqrt(beta) W0]. After training, the paper's normalisation
``d_k <- d_k / ||d_k||`` (and a_k, w_k by the same norm).

Encoding and pooling (not given by the paper, whose features were already image-level): each
descriptor is coded by OMP with T atoms on the normalised D (``batch_omp``, equal to
scikit-learn's ``orthogonal_mp``), codes are max-pooled in magnitude per image (``z_k = max_j |x_kj|``,
as in ScSPM and the SC baseline) and the result L2-normalised.

Defaults: the authors' demo values T = 30, sqrt(alpha) = 4, sqrt(beta) = 2, 50 K-SVD iterations and
20 for the initialisation; K = 450 (30 atoms per class), the paper's Fifteen Scene dictionary size.
Left open, chosen here: K-SVD on a seeded sample of ``max_training_descriptors`` descriptors; atoms
split as evenly as possible over the classes present (earlier classes take the remainder);
approximate K-SVD atom updates (one power step) instead of a full SVD per atom.
``n_iter=0`` gives the initial (per-class K-SVD) dictionary: the plain sparse coding that LC-KSVD2 refines.

Caveat, measured (``docs/method-findings.md``, "LC-KSVD2": seed-0 split of Fifteen Scene SIFT-90, K = 150,
10 + 5 iterations, 15,000 training descriptors):
T = 30 was chosen by the authors for image-level features (one code per image). On 128-D unit SIFT,
30 of 150 atoms make OMP a near-complete (relative residual 0.075), ill-conditioned least-squares fit
(median condition number
of the chosen atoms' Gram matrix 3.5e3 on the initial dictionary, 6.2e5 on the LC-KSVD2 one; median
largest |coefficient| of a unit descriptor 1.41 and 12.8), each atom is active in 30/150 = 20 % of the
codes on average, and max-pooled vectors of two random images have mean cosine 0.93 (start) / 0.88
(LC-KSVD2): 1-NN accuracy 8.6 % / 8.1 %, chance being 6.7 %. Smaller T: 15.9 / 15.8 % at T = 10,
20.0 / 19.4 % at T = 5. At none of these T does the label-consistent dictionary beat its per-class
K-SVD start with this pooling (descriptors inherit image labels; the label part of a stacked signal has norm
sqrt(alpha) sqrt(K/C) = 4 sqrt(10) = 12.6 against 1 for the descriptor; and T = 30 exceeds the 10 atoms
of a class, so each class's initial K-SVD codes use all of them). The default stays the paper's T = 30;
``sparsity`` is the parameter to lower.

On descriptors of fewer than T dimensions (the embedded digits' 9-D patches, the synthetic 2-D points) T is
the dimension: encoding cannot produce more non-zeros, and the stacked K-SVD (whose signals have
d + K + C entries) used to learn on 30-atom codes that no descriptor's code matches, at ~10x the cost
(Batch-OMP is O(T^2 K) per signal: T = 30 against T = 9).

Cost at the paper's settings, stage by stage against its floor: ``docs/performance.md`` (LC-KSVD2) and
``benchmarks/suite/lcksvd.py``.

Output: [K] (an empty image gives the zero vector). ``fit_info_["training_curve"]``: the stacked
objective ``||Y_new - D_new X||_F^2 / n`` after each K-SVD iteration.
"""

from __future__ import annotations

import numpy as np

from lfabench.sdk import (COUNT, COUNT_OR_ZERO, NON_NEGATIVE, Aggregator, Bags, PluginSpec, UndefinedCriterionError,
                          annotated_class_sizes, describe_class_sizes, hookimpl)

from .codebooks import check_random_state
from .normalization import l2_normalize
from .supervised import class_indicator


def atoms_per_class(n_atoms: int, n_classes: int) -> np.ndarray:
    """[C] atom counts summing to ``n_atoms``, as even as possible (earlier classes take the remainder)."""
    base, extra = divmod(int(n_atoms), int(n_classes))
    return np.array([base + (c < extra) for c in range(n_classes)], dtype=np.int64)


def ridge_transform(X: np.ndarray, targets: np.ndarray, lam: float = 1.0) -> np.ndarray:
    """[K, t] ``M`` with ``targets ~ X M`` by ridge regression: ``(X^T X + lam I)^-1 X^T targets``.

    ``X`` [n, K] codes (rows = descriptors), ``targets`` [n, t]. This is the paper's
    ``A0 = Q X^T (X X^T + I)^-1`` written for row-major codes (``M = A0^T``).
    """
    K = X.shape[1]
    return np.linalg.solve(X.T @ X + lam * np.eye(K), X.T @ targets)


class LCKSVD2(Aggregator):
    """Label-consistent K-SVD dictionary (LC-KSVD2), OMP codes, max pooling.

    Parameters
    ----------
    n_atoms : int
        K, dictionary size (output dimension); split over the classes.
    sparsity : int
        T, non-zero coefficients per code; capped at the descriptor dimension d (``sparsity_``), in the
        stacked K-SVD too, since an OMP code of a d-dimensional descriptor never has more than d.
    sqrt_alpha, sqrt_beta : float
        Weights of the label-consistency and classification terms (square roots, as the authors' code).
    n_iter, init_iter : int
        K-SVD iterations on the stacked problem and for each class's initial dictionary.
    max_training_descriptors : int
        Descriptors the dictionary is learned on (seeded uniform draw from the fitted bags).
    chunk_descriptors : int
        Descriptors coded per block at transform time (bounds memory).
    random_state : int or None
    """

    supervised = True
    _parameter_constraints = {"sparsity": [COUNT], "sqrt_alpha": [NON_NEGATIVE], "sqrt_beta": [NON_NEGATIVE],
                              "n_iter": [COUNT_OR_ZERO], "init_iter": [COUNT_OR_ZERO]}

    def __init__(self, n_atoms: int = 450, sparsity: int = 30, sqrt_alpha: float = 4.0, sqrt_beta: float = 2.0,
                 n_iter: int = 50, init_iter: int = 20, max_training_descriptors: int = 30_000,
                 chunk_descriptors: int = 20_000, random_state=None):
        self.n_atoms = n_atoms
        self.sparsity = sparsity
        self.sqrt_alpha = sqrt_alpha
        self.sqrt_beta = sqrt_beta
        self.n_iter = n_iter
        self.init_iter = init_iter
        self.max_training_descriptors = max_training_descriptors
        self.chunk_descriptors = chunk_descriptors
        self.random_state = random_state

    def check_fit_labels(self, y) -> None:
        """The label-consistency term gives each class atoms of its own (``n_atoms`` split over the annotated
        classes): with more classes than atoms some class has none, and the term is undefined for it."""
        _, sizes = annotated_class_sizes(y)
        if isinstance(self.n_atoms, (int, np.integer)) and 0 < self.n_atoms < sizes.size:
            raise UndefinedCriterionError(
                f"{type(self).__name__}: the label-consistency term needs at least one atom per class, but "
                f"n_atoms={self.n_atoms} is split over {describe_class_sizes(sizes)}, leaving "
                f"{sizes.size - int(self.n_atoms)} classes without an atom; raise aggregator.params.n_atoms to "
                f"{sizes.size} or more, or annotate fewer classes")

    independent_rows = True  # each descriptor's OMP code is its own; max-pooled per image

    def _fit(self, bags: Bags, y):
        from .omp import batch_omp, ksvd, normalize_atoms  # numba: a second at start-up, paid by LC-KSVD2 only

        name = type(self).__name__
        rng = check_random_state(self.random_state)
        H_img = class_indicator(y, bags.n_samples)
        H_img = H_img[:, H_img.sum(axis=0) > 0]
        n_classes = H_img.shape[1]
        # every descriptor inherits its image's label; draw the training descriptors (seeded)
        labels = np.argmax(H_img, axis=1)[bags.sample_index()]
        rows = np.arange(bags.n_descriptors)
        if rows.size > self.max_training_descriptors:
            rows = np.sort(rng.choice(rows.size, size=int(self.max_training_descriptors), replace=False))
        Y = l2_normalize(bags.descriptors[rows].astype(np.float64))
        labels = labels[rows]
        counts = atoms_per_class(self.n_atoms, n_classes)
        atom_class = np.repeat(np.arange(n_classes), counts)
        for c in range(n_classes):
            if np.sum(labels == c) < counts[c]:
                raise ValueError(f"{name}: class {c} has {int(np.sum(labels == c))} training descriptors for "
                                 f"{counts[c]} atoms; lower n_atoms or raise max_training_descriptors")
        # a code of a d-dimensional descriptor has at most d non-zeros (OMP's residual is zero by then, and
        # batch_omp caps it so at encoding); the stacked K-SVD, whose signals are longer, is held to the same
        # T, so the dictionary is learned on codes of the sparsity it is used with (digits' 3x3 patches: T = 9)
        T = min(int(self.sparsity), Y.shape[1])
        # initialisation: a K-SVD dictionary per class
        parts = []
        for c in range(n_classes):
            Yc = Y[labels == c]
            start = Yc[np.sort(rng.choice(Yc.shape[0], size=int(counts[c]), replace=False))]
            parts.append(ksvd(Yc, start, T, self.init_iter, desc=f"LC-KSVD2 init class {c}", progress=False)[0])
        D0 = np.vstack(parts)                                       # [K, d]
        H = np.eye(n_classes)[labels]                              # [n, C]
        Q = (labels[:, None] == atom_class[None, :]).astype(np.float64)   # [n, K]
        curve: list[float] = []
        if self.n_iter > 0:
            # as the authors' initialization4LCKSVD: A0, W0 from the codes of a K-SVD on all training
            # descriptors started at D0 (init_iter iterations); the stacked K-SVD still starts at D0 itself
            D_all, _ = ksvd(Y, D0, T, self.init_iter, desc="LC-KSVD2 init (all classes)", progress=False)
            X0 = batch_omp(Y, D_all, T)
            a, b = float(self.sqrt_alpha), float(self.sqrt_beta)
            # the stacked signals [y, a q, b h]: the label rows depend only on the class, so K-SVD takes the
            # C rows [a Q_c, b H_c] and the labels instead of an [n, d + K + C] matrix
            class_rows = np.hstack([a * (atom_class[None, :] == np.arange(n_classes)[:, None]), b * np.eye(n_classes)])
            D_new0 = np.hstack([D0, a * ridge_transform(X0, Q), b * ridge_transform(X0, H)])
            D_new, curve = ksvd(Y, D_new0, T, self.n_iter, desc="LC-KSVD2", class_rows=class_rows, labels=labels)
            d = Y.shape[1]
            norms = np.linalg.norm(D_new[:, :d], axis=1)
            norms = np.where(norms > 0, norms, 1.0)
            D = D_new[:, :d] / norms[:, None]
            self.classifier_ = (D_new[:, d + D0.shape[0]:] / (b if b else 1.0) / norms[:, None]).T   # W-hat [C, K]
        else:
            D = normalize_atoms(D0)
        self.dictionary_ = D
        self.initial_dictionary_ = normalize_atoms(D0)
        self.atom_classes_ = atom_class
        self.sparsity_ = T
        self.fit_info_ = {"training_curve": curve, "n_training_descriptors": int(Y.shape[0]),
                          "atoms_per_class": counts.tolist(), "sparsity": T}

    def initial_transform(self, bags: Bags) -> np.ndarray:
        """[m, K] the starting point: the same coding and pooling on the initial per-class K-SVD dictionary."""
        return self._encode(bags, self.initial_dictionary_)

    def _transform(self, bags: Bags) -> np.ndarray:
        return self._encode(bags, self.dictionary_)

    def _encode(self, bags: Bags, dictionary: np.ndarray) -> np.ndarray:
        from .omp import batch_omp

        m, K = bags.n_samples, dictionary.shape[0]
        out = np.zeros((m, K))
        off, counts = bags.offsets, bags.counts
        start = 0
        while start < m:
            # a block of whole images holding about chunk_descriptors descriptors (at least one image)
            stop = max(start + 1, int(np.searchsorted(off, off[start] + self.chunk_descriptors, side="right")) - 1)
            stop = min(stop, m)
            lo, hi = off[start], off[stop]
            if hi > lo:
                codes = np.abs(batch_omp(l2_normalize(bags.descriptors[lo:hi].astype(np.float64)), dictionary,
                                         self.sparsity_))
                full = np.flatnonzero(counts[start:stop] > 0)
                out[start + full] = np.maximum.reduceat(codes, off[start:stop][full] - lo, axis=0)
            start = stop
        return l2_normalize(out).astype(np.float32)


@hookimpl
def lfabench_aggregators():
    return [PluginSpec("lcksvd2", LCKSVD2, "LC-KSVD2: label-consistent K-SVD dictionary on descriptors labelled "
                                           "by their image, OMP codes, max pooling (Jiang, Lin & Davis 2013)")]
