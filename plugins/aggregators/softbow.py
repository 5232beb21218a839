"""Differentiable soft-assignment bag of words: forward pass and hand-derived gradient (T1, EO-BoW, DBoWs).

Notation (shapes in brackets). Descriptors ``X`` [N, d] of ``m`` samples; ``P`` [m, N] is the
mean-pooling matrix (``Bags.pooling_matrix(mean=True)``: row ``i`` holds ``1/N_i`` on sample
``i``'s descriptors, an empty sample is a zero row). Logits ``Z`` [N, K], memberships

    u_jk = exp(z_jk) / sum_l exp(z_jl)                    (softmax over the K words)
    s_ik = (1/N_i) sum_{j in sample i} u_jk,   S = P U    [m, K], each non-empty row sums to 1.

Two logit families:

* linear (T1): ``z_jk = w_k . x_j + b_k``;
* distance (EO-BoW, DBoWs): ``z_jk = -dist(x_j, v_k) / sigma`` with ``dist`` the squared
  Euclidean distance (a Gaussian kernel) or the Euclidean distance (EO-BoW's choice).

Backward: given ``dL/dS`` [m, K], ``dL/dU = P^T dL/dS`` and the softmax Jacobian gives
``dL/dz_jk = u_jk (g_jk - sum_l u_jl g_jl)`` with ``g = dL/dU``. The chain to the parameters:

* linear: ``dL/dW = (dL/dZ)^T X``, ``dL/db = sum_j dL/dZ_j``;
* distance: ``dL/dD = -dL/dZ / sigma`` and ``dD_jk/dv_k = 2 (v_k - x_j)`` (squared) or
  ``(v_k - x_j) / D_jk`` (Euclidean), so with ``A = dL/dD`` (squared) or ``dL/dD / D`` (Euclidean)
  ``dL/dV = c * (diag(sum_j A_jk) V - A^T X)``, ``c = 2`` or ``1``.

How it is computed (:class:`SoftHistograms`): block by block over whole images, one GEMM for the
forward logits and one for both parameter gradients, the softmax and its backward in place, in
float32 (``WORK_DTYPE``) with float64 sums over blocks; the float64 path is the same code.
"""

from __future__ import annotations

import numpy as np

DISTANCES = ("sqeuclidean", "euclidean")
_EPS = 1e-12


def check_distance(distance: str, owner: str) -> str:
    if distance not in DISTANCES:
        raise ValueError(f"{owner}: distance must be one of {DISTANCES}, got {distance!r}")
    return distance


def softmax_rows(Z: np.ndarray) -> np.ndarray:
    """Row-wise softmax of ``Z`` [n, K] (shifted by the row maximum for stability)."""
    E = np.exp(Z - Z.max(axis=1, keepdims=True))
    return E / E.sum(axis=1, keepdims=True)


def softmax_backward(U: np.ndarray, dU: np.ndarray) -> np.ndarray:
    """``dL/dZ`` [n, K] from ``U = softmax_rows(Z)`` and ``dL/dU``."""
    return U * (dU - np.sum(U * dU, axis=1, keepdims=True))


def distances(X: np.ndarray, V: np.ndarray, distance: str) -> np.ndarray:
    """[N, K] squared Euclidean or Euclidean distances between rows of ``X`` [N, d] and ``V`` [K, d]."""
    D2 = np.maximum((X * X).sum(1)[:, None] - 2.0 * X @ V.T + (V * V).sum(1)[None, :], 0.0)
    return D2 if distance == "sqeuclidean" else np.sqrt(D2 + _EPS)


def nearest_distance_scale(X: np.ndarray, V: np.ndarray, distance: str) -> float:
    """Mean over the rows of ``X`` of the distance to the nearest row of ``V`` (the softness unit)."""
    d = distances(X, V, distance).min(axis=1)
    return float(max(d.mean(), _EPS))


#: The dtype of the fits' and transforms' [N, K] work (GEMMs, softmax). float32 doubles the GEMM rate and
#: halves the memory traffic; the tests hold it to the float64 path within 1e-5 relative on the loss and
#: 1e-4 of the gradient's norm (tests/plugins/aggregators/test_softbow.py; 1e-8 and 1e-6 measured on
#: Fifteen Scene), and the 100-iteration L-BFGS fits end within 0.1% of the float64 fits' objective
#: (docs/performance.md, with their 1-NN accuracies).
WORK_DTYPE = np.float32
#: Descriptors per block (whole images, so a block's histograms are complete): small enough that a
#: block's [rows, K] arrays stay in cache, and fixed by the data alone, so the float64 sums over blocks
#: run in the same order whatever the thread count.
BLOCK_ROWS = 2048
KINDS = ("linear",) + DISTANCES
#: With ``flush_subnormals``, the backward scales ``dL/dS`` by a power of two that brings its largest entry near
#: ``2**BACKWARD_PEAK_EXPONENT``: products of memberships near the smallest normal (1.2e-38) and gradients down to
#: 2**-64 of the largest stay normal floats; ``dL/dZ`` reaches about 2**64 x 1/D (Euclidean, D >= 1e-6) and its
#: GEMM sums stay far below float32's largest (3.4e38).
BACKWARD_PEAK_EXPONENT = 64


def image_blocks(offsets: np.ndarray, block_rows: int = BLOCK_ROWS) -> list[tuple[int, int]]:
    """``[(first image, end image), ...]``: runs of consecutive whole images of at most ``block_rows``
    descriptors together (an image with more is a block of its own); they cover every image once."""
    offsets = np.asarray(offsets, dtype=np.int64)
    m, blocks, lo = len(offsets) - 1, [], 0
    while lo < m:
        hi = int(np.searchsorted(offsets, offsets[lo] + block_rows, side="right")) - 1
        hi = min(max(hi, lo + 1), m)
        blocks.append((lo, hi))
        lo = hi
    return blocks


class SoftHistograms:
    """Mean-pooled soft-assignment histograms ``S = P softmax(Z)`` of one fixed descriptor set, and their
    backward pass, computed block by block (see the module docstring for the notation).

    ``X`` [N, d] descriptors, ``offsets`` [m + 1] (image ``i`` is rows ``offsets[i]:offsets[i+1]``),
    ``dtype`` the dtype of the [N, K] work (float64: the exact path the tests compare with).
    ``flush_subnormals``: no subnormal float in the [N, K] work. A membership whose exponential is below K x the
    smallest normal of ``dtype`` (1.2e-38 in float32) is 0: it is below the rounding of its row's sum, which holds
    the row's largest (1). The backward runs on ``dL/dS`` scaled by a power of two (:data:`BACKWARD_PEAK_EXPONENT`),
    so that its products with small memberships stay normal, and scales its results back: both exact, so only the
    values that subnormals would have rounded differ. CPUs that handle subnormal operands in microcode (Intel's) run
    the softmax and the backward several times slower on blocks that hold them, which late L-BFGS iterates do
    (``docs/performance.md``).

    One GEMM per block gives the logits of every kind: ``X W^T + b`` (linear), ``(2 X V^T - ||v||^2)/sigma``
    (squared: the ``||x||^2`` term is constant along a row, and a softmax ignores it), or
    ``-sqrt(||x||^2 - 2 X V^T + ||v||^2)/sigma`` (Euclidean). :meth:`forward` keeps each block's
    memberships (and Euclidean distances) for :meth:`backward`, whose one GEMM per block gives both
    parameter gradients; nothing of size [N, K] is recomputed between the loss and its gradient.
    Pooling is a sparse CSR product per block, its transpose a gather of rows of ``dL/dS`` (the
    1/N_i weights folded into the rows of X); sums over blocks are float64, in block order.
    """

    def __init__(self, X: np.ndarray, offsets: np.ndarray, dtype=WORK_DTYPE, block_rows: int = BLOCK_ROWS,
                 flush_subnormals: bool = False):
        X = np.asarray(X)
        self.dtype = np.dtype(dtype)
        self.flush_subnormals = bool(flush_subnormals)
        self.smallest_normal = np.finfo(self.dtype).tiny
        self.X = np.ascontiguousarray(X, dtype=self.dtype)
        sq_norms = np.einsum("ij,ij->i", X, X, dtype=np.float64)
        self.sq_norms = sq_norms.astype(self.dtype)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        counts = np.diff(self.offsets)
        weights = np.repeat(1.0 / np.maximum(counts, 1), counts).astype(self.dtype)
        self.weights = weights
        self.blocks = []
        from scipy import sparse  # here: a third of a second at start-up

        for lo, hi in image_blocks(self.offsets, block_rows):
            r0, r1 = int(self.offsets[lo]), int(self.offsets[hi])
            pool = sparse.csr_matrix((weights[r0:r1], np.arange(r1 - r0), self.offsets[lo:hi + 1] - r0),
                                     shape=(hi - lo, r1 - r0))
            owner = np.repeat(np.arange(hi - lo), counts[lo:hi])        # each row's image, in the block
            self.blocks.append((lo, hi, r0, r1, pool, owner))
        # each block's largest descriptor norm: bounds the spread of its linear logits (logit_spreads)
        self.block_max_norms = np.sqrt([sq_norms[r0:r1].max(initial=0.0) for _, _, r0, r1, _, _ in self.blocks])
        self.n_samples = len(self.offsets) - 1
        self._saved = None
        self._weighted_X = None

    def _logits(self, Xb: np.ndarray, rows: slice, kind: str, params):
        """``(Z, D)``: the block's logits [rows, K] (in a fresh array) and its Euclidean distances (or None)."""
        if kind == "linear":
            W, b = params
            Z = Xb @ W.T
            Z += b
            return Z, None
        V, vv, sigma = params
        G = Xb @ V.T
        G *= -2.0
        G += self.sq_norms[rows, None]
        G += vv
        np.maximum(G, 0.0, out=G)
        G += _EPS
        D = np.sqrt(G, out=G)
        return D * (-1.0 / sigma), D

    def logit_spreads(self, kind: str, params) -> np.ndarray:
        """[blocks] an upper bound, per block, of ``max_k z_jk - min_k z_jk`` over its rows, for the prepared
        ``params`` of :meth:`_logits`: ``||x_j|| max_kl ||w_k - w_l|| + max_kl (b_k - b_l)`` (linear) or
        ``max_kl ||v_k - v_l|| / sigma`` (Euclidean, by the triangle inequality)."""
        rows = np.asarray(params[0], dtype=np.float64)
        sq = np.einsum("ij,ij->i", rows, rows)
        pair = np.sqrt(max(float(np.max(sq[:, None] + sq[None, :] - 2.0 * rows @ rows.T, initial=0.0)), 0.0))
        if kind == "linear":
            return self.block_max_norms * pair + float(np.ptp(np.asarray(params[1], dtype=np.float64)))
        return np.full(len(self.blocks), pair / params[2])

    def _params(self, kind: str, params):
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
        if kind == "linear":
            W, b = params
            return np.asarray(W, self.dtype), np.asarray(b, self.dtype)
        V, sigma = params
        V = np.asarray(V, dtype=np.float64)
        vv = np.einsum("ij,ij->i", V, V)
        if kind == "sqeuclidean":          # -(||x||^2 - 2 x.v + ||v||^2)/sigma, less its row constant: linear
            return (2.0 / sigma * V).astype(self.dtype), (-vv / sigma).astype(self.dtype)
        return V.astype(self.dtype), vv.astype(self.dtype), float(sigma)

    def forward(self, kind: str, params, keep: bool = True) -> np.ndarray:
        """[m, K] float64 histograms for ``params`` = ``(W, b)`` (linear) or ``(V, sigma)`` (distances).

        ``keep=False`` (a transform) keeps nothing for :meth:`backward`.
        """
        p = self._params(kind, params)
        K = p[0].shape[0]
        S = np.zeros((self.n_samples, K))
        saved = []
        logits = "linear" if kind == "sqeuclidean" else kind
        # exponentials below K x the smallest normal are 0: dividing the others by the row's sum (1 to K) leaves no
        # membership subnormal. A block whose logits provably span less than that (with a margin for float32's
        # rounding of them) is not searched for any.
        cut = float(np.log(self.smallest_normal * K))
        searched = (self.logit_spreads(logits, p) * (1 + 1e-3) + 1.0 >= -cut if self.flush_subnormals
                    else np.zeros(len(self.blocks), dtype=bool))
        for (lo, hi, r0, r1, pool, _), search in zip(self.blocks, searched):
            Z, D = self._logits(self.X[r0:r1], slice(r0, r1), logits, p)
            Z -= Z.max(axis=1, keepdims=True)
            if search and Z.min(initial=0.0) < cut:
                np.putmask(Z, Z < cut, -np.inf)
            U = np.exp(Z, out=Z)
            U /= U.sum(axis=1, keepdims=True)
            S[lo:hi] = pool @ U
            if keep:
                saved.append((U, D))
        self._saved = (kind, saved) if keep else None
        return S

    def backward(self, dS: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(sum_j M_j [K], M^T X [K, d])``, float64, for ``dL/dS`` [m, K] of the last :meth:`forward`.

        ``M = dL/dZ`` (linear and squared kinds) or ``dL/dZ / D`` (Euclidean): the linear gradients are
        ``dL/dW = M^T X``, ``dL/db = sum_j M_j``; the distance ones ``dL/dV = -(c/sigma)(diag(sum_j M_j) V
        - M^T X)`` with ``c = 2`` (squared) or ``1`` (Euclidean): :func:`codebook_gradient`.
        """
        if self._saved is None:
            raise RuntimeError("SoftHistograms.backward needs a forward(..., keep=True) first")
        _, saved = self._saved
        if self._weighted_X is None:
            self._weighted_X = self.X * self.weights[:, None]
        K = dS.shape[1]
        colsum = np.zeros(K)
        MtX = np.zeros((K, self.X.shape[1]))
        exponent = 0
        if self.flush_subnormals:
            dS = np.asarray(dS, dtype=np.float64)
            peak = float(np.max(np.abs(dS), initial=0.0))
            if 0.0 < peak < np.inf:
                # scaling by a power of two is exact in either direction, so the results are the unscaled path's
                # wherever that one had no subnormal intermediate
                exponent = BACKWARD_PEAK_EXPONENT - int(np.frexp(peak)[1])
                dS = np.ldexp(dS, exponent)
        dS = np.asarray(dS, dtype=self.dtype)
        for (lo, hi, r0, r1, _, owner), (U, D) in zip(self.blocks, saved):
            # dL/du_j = dS[image of j] / N_image (P^T dS): the 1/N_image is folded into the rows of X and
            # into the column sums (weighted_X, weights), so the block gathers rows of dS and nothing else
            G = dS[lo:hi].take(owner, axis=0)
            G -= np.einsum("ij,ij->i", U, G)[:, None]
            G *= U                                                  # dL/dZ * N_image (softmax Jacobian)
            if D is not None:
                G /= D
            colsum += self.weights[r0:r1] @ G
            MtX += G.T @ self._weighted_X[r0:r1]
        if exponent:
            colsum, MtX = np.ldexp(colsum, -exponent), np.ldexp(MtX, -exponent)
        return colsum, MtX


#: Descriptors prepared (standardised, cast to ``WORK_DTYPE``) at once by :func:`encode_histograms`: a transform
#: holds a few ``CHUNK_ROWS x d`` float64 arrays beside the bags (0.4 GB each at d = 200), not float64 copies of every
#: descriptor.
CHUNK_ROWS = 2 ** 18


def encode_histograms(descriptors: np.ndarray, offsets: np.ndarray, prepare, kind: str, params,
                      chunk_rows: int = CHUNK_ROWS, flush_subnormals: bool = False) -> np.ndarray:
    """[m, K] float32 histograms of :meth:`SoftHistograms.forward` (``keep=False``) on ``prepare(descriptors)``,
    preparing at most ``chunk_rows`` descriptors at a time (whole images; one image with more is a chunk of
    its own).

    ``descriptors`` [N, d], ``offsets`` [m + 1], ``prepare`` a row-wise map [n, d] -> [n, d] (a standardiser),
    ``flush_subnormals`` as :class:`SoftHistograms`.
    Each chunk is a run of whole :func:`image_blocks` blocks, so every block's GEMM and pooling see the same
    rows as on the whole set: the output is bit-identical to ``SoftHistograms(prepare(descriptors), offsets)``.
    """
    offsets = np.asarray(offsets, dtype=np.int64)
    blocks = image_blocks(offsets)
    out = None
    i = 0
    while i < len(blocks):
        lo, j = blocks[i][0], i + 1
        while j < len(blocks) and offsets[blocks[j][1]] - offsets[lo] <= chunk_rows:
            j += 1
        hi = blocks[j - 1][1]
        r0, r1 = int(offsets[lo]), int(offsets[hi])
        hist = SoftHistograms(prepare(descriptors[r0:r1]), offsets[lo:hi + 1] - r0, flush_subnormals=flush_subnormals)
        S = hist.forward(kind, params, keep=False)
        if out is None:
            out = np.zeros((len(offsets) - 1, S.shape[1]), dtype=np.float32)
        out[lo:hi] = S
        i = j
    if out is None:                                           # no images: the width is the parameters'
        out = np.zeros((0, np.asarray(params[0]).shape[0]), dtype=np.float32)
    return out


def codebook_gradient(V: np.ndarray, colsum: np.ndarray, MtX: np.ndarray, sigma: float, kind: str) -> np.ndarray:
    """``dL/dV`` [K, d] from :meth:`SoftHistograms.backward` of the distance logits ``-dist(x, v)/sigma``."""
    c = 2.0 if kind == "sqeuclidean" else 1.0
    return -(c / sigma) * (colsum[:, None] * V - MtX)


class LearnedSoftCodebook:
    """``transform`` and ``initial_transform`` of a soft BoW whose codebook a supervised criterion learned.

    Mixed into DBoWs and EO-BoW, whose fits set ``standardizer_``, ``initial_codebook_`` (the k-means
    start) and ``codebook_`` (the learned one). An image's vector is the mean of its descriptors'
    memberships (:class:`SoftHistograms`), ``[m, K]`` float32.
    """

    #: ``"sqeuclidean"`` or ``"euclidean"``: the distance inside the memberships.
    membership_distance = "sqeuclidean"

    def membership_scale(self) -> float:
        """The softness of the memberships learned at fit time."""
        raise NotImplementedError

    def initial_transform(self, bags) -> np.ndarray:
        """[m, K] the unsupervised starting point: the same soft BoW on the initial k-means codebook."""
        return self._encode(bags, self.initial_codebook_)

    def _transform(self, bags) -> np.ndarray:
        return self._encode(bags, self.codebook_)

    def _encode(self, bags, V: np.ndarray) -> np.ndarray:
        return encode_histograms(bags.descriptors, bags.offsets, self.standardizer_.transform,
                                 self.membership_distance, (V, self.membership_scale()),
                                 flush_subnormals=self.flush_subnormals)
