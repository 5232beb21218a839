"""UniVCG: visual codebook generated jointly with a boosted classifier (Yang, Jin, Sukthankar & Jurie,
"Unifying discriminative visual codebook generation with classifier training for object category
recognition", CVPR 2008).

The codebook is a set of "visual bits": linear classifiers on local descriptors, learned one at a
time inside a boosting loop, so that each new bit targets the images the classifier built so far
gets wrong. For class c (one-vs-rest, ``z_i = +1`` if image i is of class c, else ``-1``) and round t:

1. Descriptor weights from the current image weights: descriptor j of image i gets
   ``omega_j = w_i / N_i`` and target ``z_i`` (labels reach descriptors from their image).
2. Visual bit: ``(a, b) = argmin sum_j omega_j (a . x_j + b - z_j)^2 + lambda ||a||^2`` (weighted ridge,
   closed form); the bit fires on a descriptor when ``a . x + b > 0``.
3. Image feature: the bit's firing rate ``f_i = (1/N_i) sum_j [a . x_j + b > 0]`` (mean pooling).
4. Weak classifier: the decision stump ``h(f) = s * sign(f - theta)`` of least weighted error eps;
   discrete AdaBoost: ``alpha_t = 1/2 log((1 - eps)/eps)``, ``w_i <- w_i exp(-alpha_t z_i h(f_i))``,
   normalised.

The representation is every bit's firing rate: the histogram over the learned visual codebook.

Choices the paper leaves open (or that could not be confirmed from it): one-vs-rest with discrete
AdaBoost per class and ``n_rounds`` bits per class; weighted ridge regression as the bit learner
(closed form through per-image second moments, so a round costs O(m d^2) not O(N d^2));
initial weights half on the positives and half on the negatives; descriptors standardised by one
mean and scalar scale; ``descriptors_per_image`` descriptors per training image (seeded).

Output: [C * n_rounds] firing rates in [0, 1], class-major (class c's bits in rounds order); an
empty image gives the zero vector. ``fit_info_["training_curve"]``: after each round, the mean over
classes of the boosted classifiers' training exponential loss ``(1/m) sum_i exp(-z_i F_c(i))``.
"""

from __future__ import annotations

import threading

import numpy as np

from lfabench.sdk import COUNT, NON_NEGATIVE, Aggregator, Bags, PluginSpec, hookimpl, imap_in_order

from .softbow import image_blocks
from .supervised import Standardizer, class_indicator, per_image_sample


def best_stump(f: np.ndarray, z: np.ndarray, w: np.ndarray) -> tuple[float, float, float]:
    """``(theta, polarity, weighted error)`` of the stump ``polarity * sign(f - theta)`` minimising the error.

    ``f`` [m] feature, ``z`` [m] in {-1, +1}, ``w`` [m] non-negative weights summing to 1. Thresholds
    are midpoints between consecutive distinct values (and below the minimum).
    """
    order = np.argsort(f, kind="stable")
    fs, zs, ws = f[order], z[order], w[order]
    # error of polarity +1 with theta just above fs[k]: positives at or below fs[k] + negatives above
    pos_below = np.concatenate([[0.0], np.cumsum(ws * (zs > 0))])
    neg_below = np.concatenate([[0.0], np.cumsum(ws * (zs < 0))])
    err_plus = pos_below + (neg_below[-1] - neg_below)            # [m + 1]: k = number of samples below
    valid = np.concatenate([[True], fs[1:] > fs[:-1], [True]])    # cut only between distinct values
    err_plus = np.where(valid, err_plus, np.inf)
    err_minus = np.where(valid, 1.0 - err_plus, np.inf)
    k_plus, k_minus = int(np.argmin(err_plus)), int(np.argmin(err_minus))
    if err_plus[k_plus] <= err_minus[k_minus]:
        k, polarity, err = k_plus, 1.0, err_plus[k_plus]
    else:
        k, polarity, err = k_minus, -1.0, err_minus[k_minus]
    if k == 0:
        theta = fs[0] - 1.0
    elif k == fs.size:
        theta = fs[-1] + 1.0
    else:
        theta = 0.5 * (fs[k - 1] + fs[k])
    return float(theta), polarity, float(err)


def stump_predict(f: np.ndarray, theta: float, polarity: float) -> np.ndarray:
    return polarity * np.where(f > theta, 1.0, -1.0)


class UniVCG(Aggregator):
    """Visual bits learned by one-vs-rest boosting; firing-rate histogram.

    Parameters
    ----------
    n_rounds : int
        Boosting rounds = visual bits per class (output dimension ``n_classes * n_rounds``).
    ridge : float
        lambda of the weighted ridge regression learning each bit (on standardised descriptors).
    descriptors_per_image : int or None
        Training descriptors per image (seeded draw); None = all.
    random_state : int or None
    batched : bool
        True (default): a round learns every class's bit at once, its normal equations one GEMM over the classes
        (``(C, m) x (m, p^2)``) and its firing rates one product. False: one class at a time (what records made
        before this parameter ran; the same model and the same result up to the GEMM's rounding). Each class's
        round reads only its own image weights, so both orders learn the same bits; batching matters with
        thousands of classes (a retrieval protocol with one annotated image per group), where reading the
        ``m`` per-image second moments once per class made a round take minutes.
    """

    supervised = True
    _parameter_constraints = {"n_rounds": [COUNT], "ridge": [NON_NEGATIVE]}
    #: Parameters added after records were written, with the value that reproduces a record that does not name
    #: them (``lfabench reproduce``).
    introduced_params = {"batched": False}
    #: Classes whose normal equations are formed at once when batched: ``C_BLOCK p^2`` float64 (128 MiB at p = 129;
    #: one block per worker thread under a run's ``threads``).
    C_BLOCK = 1024
    #: Cells of the descriptor-by-bit product held at once in ``transform``: ``rows x (C n_rounds)`` float64 plus
    #: its boolean firing mask (about 288 MiB per worker thread), and the block's rates.
    TRANSFORM_CELLS = 2 ** 25

    def __init__(self, n_rounds: int = 20, ridge: float = 1e-3, descriptors_per_image: int | None = 30,
                 random_state=None, batched: bool = True):
        self.n_rounds = n_rounds
        self.ridge = ridge
        self.descriptors_per_image = descriptors_per_image
        self.random_state = random_state
        self.batched = batched

    def _fit(self, bags: Bags, y):
        from tqdm.auto import tqdm  # at first use: tqdm.auto imports asyncio, a tenth of lfabench run's start-up

        Y = class_indicator(y, bags.n_samples)
        train = per_image_sample(bags, self.descriptors_per_image, self.random_state)
        self.standardizer_ = Standardizer().fit(train.descriptors)
        Xa = self._augment(train.descriptors)                      # [n, d + 1]
        m, C, p = Y.shape[0], Y.shape[1], Xa.shape[1]
        P = train.pooling_matrix(mean=True, dtype=np.float64)      # [m, n]
        # per-image mean second moments M_i = (1/N_i) sum_j xa_j xa_j^T and means, so that the weighted
        # normal equations of every round are sums over images
        moments = np.zeros((m, p, p))
        for i, (lo, hi) in enumerate(zip(train.offsets[:-1], train.offsets[1:])):   # m small Gram matrices
            if hi > lo:
                moments[i] = Xa[lo:hi].T @ Xa[lo:hi] / (hi - lo)
        means = np.asarray(P @ Xa)                                 # [m, p]
        nonempty = (train.counts > 0).astype(np.float64)
        reg = self.ridge * np.eye(p)
        reg[-1, -1] = 0.0                                          # the offset b is not penalised
        Z = np.where(Y > 0, 1.0, -1.0)                             # [m, C]
        W = np.where(Z > 0, 0.5 / np.maximum(Y.sum(0), 1), 0.5 / np.maximum(m - Y.sum(0), 1)) * nonempty[:, None]
        W /= W.sum(axis=0, keepdims=True)
        F = np.zeros((m, C))
        bits = np.zeros((C, int(self.n_rounds), p))
        curve = []
        for t in tqdm(range(int(self.n_rounds)), desc="UniVCG boosting", unit="round", leave=False, disable=None):
            if self.batched:
                bits[:, t], rates = self._round_bits(W, Z, moments, means, reg, Xa, P)
            for c in range(C):
                w = W[:, c]
                if self.batched:
                    f = rates[:, c]
                else:
                    A = np.einsum("i,ijk->jk", w, moments) + reg
                    a = np.linalg.solve(A + 1e-10 * np.eye(p), means.T @ (w * Z[:, c]))
                    bits[c, t] = a
                    f = np.asarray(P @ (Xa @ a > 0).astype(np.float64))
                theta, polarity, err = best_stump(f, Z[:, c], w)
                err = float(np.clip(err, 1e-10, 1 - 1e-10))
                alpha = 0.5 * np.log((1 - err) / err)
                h = stump_predict(f, theta, polarity)
                F[:, c] += alpha * h
                w = w * np.exp(-alpha * Z[:, c] * h)
                W[:, c] = w / w.sum()
            curve.append(float(np.mean(np.exp(-Z * F))))
        self.bits_ = bits.reshape(C * int(self.n_rounds), p)
        self.fit_info_ = {"training_curve": curve, "n_training_descriptors": int(Xa.shape[0]),
                          "n_classes": int(C)}

    def _round_bits(self, W, Z, moments, means, reg, Xa, P) -> tuple[np.ndarray, np.ndarray]:
        """One round's bits of every class and their firing rates on the training images.

        ``W`` [m, C] image weights, ``Z`` [m, C] targets, ``moments`` [m, p, p], ``means`` [m, p], ``Xa`` [n, p]
        training descriptors, ``P`` [m, n] mean pooling. Returns ``(bits [C, p], rates [m, C])``: class c's bit
        solves ``(sum_i W_ic M_i + reg) a = means^T (W_c * Z_c)``, as the per-class loop does.
        """
        m, C = W.shape
        p = moments.shape[1]
        bits = np.empty((C, p))
        rates = np.empty((m, C))
        flat = moments.reshape(m, p * p)
        ridge = reg + 1e-10 * np.eye(p)
        # the mean pooling P @ fires read from repeated-sum tables by counts, as in transform (the same floats)
        starts, ends = P.indptr[:-1], P.indptr[1:]
        sums, table_start = repeated_sums(ends - starts)

        def block(cols: slice) -> tuple[np.ndarray, np.ndarray]:
            A = (W[:, cols].T @ flat).reshape(-1, p, p) + ridge
            rhs = means.T @ (W[:, cols] * Z[:, cols])                                    # [p, block]
            a = np.linalg.solve(A, rhs.T[:, :, None])[:, :, 0]
            f = np.zeros((m, a.shape[0]))
            add_firing_rates(f, Xa @ a.T > 0, starts, ends, sums, table_start)
            return a, f

        # the class blocks are fixed (C_BLOCK), so a run's threads compute them side by side with the bits of one
        blocks = [slice(lo, min(lo + self.C_BLOCK, C)) for lo in range(0, C, self.C_BLOCK)]
        for cols, (a, f) in zip(blocks, imap_in_order(block, blocks)):
            bits[cols], rates[:, cols] = a, f
        return bits, rates

    def _augment(self, X: np.ndarray) -> np.ndarray:
        Xs = self.standardizer_.transform(X)
        return np.hstack([Xs, np.ones((Xs.shape[0], 1))])

    def _transform(self, bags: Bags, chunk: int = 50_000) -> np.ndarray:
        """[m, C n_rounds] float32 firing rates, in blocks of images whose firing rows fit
        ``TRANSFORM_CELLS`` (one image at least), so memory stays bounded at any output width.

        Each image's rate sums ``1/N_i`` once per firing descriptor, in descriptor order, within each ``chunk`` of
        the descriptor array, and then adds the chunks' sums in order: the floats of the mean-pooling product
        ``P @ fires`` (a CSR product adds its terms in that order, and a term that does not fire adds 0), whatever
        the blocks are. Those sums depend only on ``N_i`` and the count of firing descriptors, so they are read
        from :func:`repeated_sums` tables by integer counts instead of multiplied out in float64. The blocks are
        fixed by the data, so under a run's ``threads`` they are computed side by side
        (:func:`lfabench.threads.imap_in_order`) with the bits of one thread; each worker thread reuses its own
        product and firing buffers.
        """
        offsets, counts = np.asarray(bags.offsets, dtype=np.int64), bags.counts
        sums, table_start = repeated_sums(counts)
        width = self.bits_.shape[0]
        out = np.zeros((bags.n_samples, width), dtype=np.float32)
        blocks = image_blocks(offsets, max(1, self.TRANSFORM_CELLS // max(width, 1)))
        buffers: dict[int, tuple[np.ndarray, np.ndarray]] = {}     # per worker thread: product and firing rows

        def rows_buffers(rows: int) -> tuple[np.ndarray, np.ndarray]:
            """This thread's product and firing buffers, ``[rows, width]`` at least (grown, never shrunk)."""
            have = buffers.get(threading.get_ident())
            if have is None or have[0].shape[0] < rows:
                have = buffers[threading.get_ident()] = np.empty((rows, width)), np.empty((rows, width), bool)
            return have

        def rates(images: tuple[int, int]) -> np.ndarray:
            first, last = images
            lo, hi = int(offsets[first]), int(offsets[last])
            product, fires = rows_buffers(min(hi - lo, chunk))
            block = np.zeros((last - first, width))
            for start in range(lo - lo % chunk, hi, chunk):
                a, b = max(start, lo), min(start + chunk, hi)
                if b <= a:
                    continue
                np.matmul(self._augment(bags.descriptors[a:b]), self.bits_.T, out=product[:b - a])
                np.greater(product[:b - a], 0, out=fires[:b - a])
                # each image's rows within this chunk [a, b), relative to the chunk's first row
                bounds = np.clip(offsets[first:last + 1], a, b) - a
                add_firing_rates(block, fires[:b - a], bounds[:-1], bounds[1:], sums, table_start[first:last])
            return block

        for (first, last), block in zip(blocks, imap_in_order(rates, blocks)):
            out[first:last] = block
        return out


def add_firing_rates(out: np.ndarray, fires: np.ndarray, starts: np.ndarray, ends: np.ndarray, sums: np.ndarray,
                     table_start: np.ndarray) -> None:
    """Add image i's firing rates to ``out[i]``: ``out`` [k, width] float64, ``fires`` [rows, width] bool, image i's
    rows ``fires[starts[i]:ends[i]]``, its rate table at ``sums[table_start[i]:]`` (:func:`repeated_sums`).

    Each image's firing rows are counted by a sum over its rows (np.add.reduceat over the rows is ~20x slower: it
    walks each column down the rows), in uint16 where no image holds 2^16 rows.
    """
    widest = int((ends - starts).max(initial=0))
    count_dtype = np.uint16 if widest < 2 ** 16 else np.int64
    for i in np.flatnonzero(ends > starts):
        fired = fires[starts[i]:ends[i]].view(np.uint8).sum(axis=0, dtype=count_dtype)   # [width]
        out[i] += sums[table_start[i] + fired.astype(np.int64)]


def repeated_sums(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Tables of ``1/n`` added to itself ``k`` times, for each descriptor count ``n`` among ``counts`` ([m]).

    Returns ``(sums, start)``: ``sums[start[i] + k]`` is ``((0 + 1/n) + 1/n) + ...`` (``k`` terms, float64, added
    in order, ``0 <= k <= n``) for ``n = counts[i]``; one table per distinct count, so ``sums`` has at most
    ``m + sum(counts)`` entries. An image with no descriptors gets the table ``[0]``.
    """
    counts = np.asarray(counts, dtype=np.int64)
    distinct, which = np.unique(counts, return_inverse=True)
    tables = [np.concatenate([[0.0], np.cumsum(np.full(n, 1.0 / max(n, 1)))]) for n in distinct]
    table_start = np.concatenate([[0], np.cumsum([t.size for t in tables])[:-1]]).astype(np.int64)
    return np.concatenate(tables), table_start[which.ravel()]


@hookimpl
def lfabench_aggregators():
    return [PluginSpec("univcg", UniVCG, "UniVCG: visual bits (linear descriptor classifiers) learned inside "
                                         "one-vs-rest boosting; firing-rate histogram (Yang et al. 2008)")]
