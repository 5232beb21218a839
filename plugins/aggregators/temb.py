"""Triangulation embedding with democratic aggregation and rotation + normalisation: phi_Delta + psi_d + RN.

Jégou & Zisserman, "Triangulation embedding and democratic aggregation for image
search", CVPR 2014.

* **phi_Delta** (Sec. 3). Anchors ``c_1..c_A`` are k-means centres (faiss) of a
  seeded sample of the fitted descriptors. A descriptor is embedded as its
  normalised residuals ``R(x) = [(x - c_j) / ||x - c_j||]_{j=1..A}`` (``A*d``-D),
  then centred and whitened, ``phi(x) = diag(lambda)^{-1/2} U^T (R(x) - R_0)``,
  with ``R_0`` the mean and ``(lambda, U)`` the eigen-decomposition of the
  covariance of ``R`` over a seeded sample of training descriptors. Following
  the paper, the first ``d`` components (largest eigenvalues) are dropped, so
  phi has ``(A - 1) * d`` dimensions (1920 for A = 16 with SIFT).
* **psi_d** (Sec. 4). Democratic aggregation: ``psi(X) = sum_i a_i phi(x_i)``
  with weights solving ``a_i sum_j k(x_i, x_j) a_j = 1`` for
  ``k(x, y) = max(phi(x)^T phi(y), 0)`` (negative similarities clipped, as the
  Sinkhorn solver needs a non-negative kernel), by :mod:`lfabench_plugins.aggregators.democratic`
  (10 iterations, symmetric step).
* **RN** (Sec. 5). The aggregated vectors are rotated onto the principal axes
  of the aggregated training vectors (a pure rotation, learned at fit time),
  then power-law normalised (``alpha = 0.5``) and L2-normalised.

Output dimension: ``(A - 1) * d`` for ``A = n_anchors`` (``n_components``
when given, at most that). An empty sample aggregates to the zero vector.

Images are aggregated in batches (batched BLAS over ``n x n`` kernels). With ``batches="by_count"`` (the
default) a batch holds images of one descriptor count, unpadded, so every image's row is computed with the
same shapes whatever images it comes with (``independent_rows``): ``fit_transform`` returns the sums RN's
rotation was learned from, and a run transforms only the other images. With ``batches="padded"`` (what
records made before ran) a batch zero-pads images of similar counts, whose rows' last bits depend on the
batch; the first ``transform`` of the bags ``fit`` saw (same descriptors and offsets, as a retrieval run's
database) reuses the fit's sums, and any other first ``transform`` takes phi of the samples ``fit``
embedded (looked up by sample id) from the fit instead of embedding them again (:class:`FitEmbeddings`:
the same rows of the same products, so the same bits), up to :attr:`TriangulationEmbedding.REUSE_BYTES`.
Both rest on a BLAS that computes a product's row from that row alone (:func:`~lfabench.sdk.gemm_rows_are_own`);
where it does not, ``by_count`` declares no independent rows and ``padded`` keeps no phi. With ``by_count`` the
first ``transform`` after ``fit`` takes the fit's sums for the samples the fit aggregated (the same id and
descriptors) and aggregates only the others, so a run that transforms every image embeds each descriptor once.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from lfabench.sdk import (Aggregator, Bags, PluginSpec, array_fingerprint, cacheable_seed, cached_fit,
                          gemm_rows_are_own, hookimpl, imap_in_order)

from .codebooks import cached_kmeans, training_sample
from .democratic import democratic_weights
from .normalization import l2_normalize, signed_power
from .padding import padded_batches


class FitEmbeddings:
    """phi of the fit samples' descriptors (``(rows, D)`` float32), kept for the next ``transform``.

    A sample is reused when ``transform`` meets its id with the same descriptors, bit for bit; only samples
    embedded in a product of at least two rows are kept (one row takes another BLAS path, whose last bits
    differ), and at most ``max_rows`` rows in all.
    """

    def __init__(self, bags: Bags, dim: int, max_rows: int):
        self.descriptors, self.offsets = bags.descriptors, bags.offsets
        self.phi = np.empty((min(bags.n_descriptors, max(int(max_rows), 0)), dim), dtype=np.float32)
        self.where: dict[str, tuple[int, int]] = {}                     # id -> (row in phi, sample in bags)
        self.used = 0

    def keep(self, ids: np.ndarray, idx: np.ndarray, counts: np.ndarray, Phi: np.ndarray) -> None:
        """Keep ``Phi[b, :counts[b]]`` of the batch's samples ``idx`` (positions in the fit bags)."""
        for b, (i, c) in enumerate(zip(idx.tolist(), counts.tolist())):
            if c and self.used + c <= self.phi.shape[0]:
                self.phi[self.used:self.used + c] = Phi[b, :c]
                self.where[ids[i]] = (self.used, i)
                self.used += c

    def lookup(self, bags: Bags, ids: np.ndarray, i: int) -> np.ndarray | None:
        """phi of sample ``i`` of ``bags`` when fit embedded the same descriptors under its id, else None."""
        hit = self.where.get(ids[i])
        if hit is None:
            return None
        row, j = hit
        if not _same_sample(bags, i, self.descriptors, self.offsets, j):
            return None
        return self.phi[row:row + (bags.offsets[i + 1] - bags.offsets[i])]


def _same_sample(bags: Bags, i: int, descriptors: np.ndarray, offsets: np.ndarray, j: int) -> bool:
    """Whether sample ``i`` of ``bags`` holds the descriptors of sample ``j`` of ``(descriptors, offsets)``, bit for
    bit (values; the caller compares dtypes where they matter)."""
    lo, hi, flo, fhi = bags.offsets[i], bags.offsets[i + 1], offsets[j], offsets[j + 1]
    return hi - lo == fhi - flo and np.array_equal(bags.descriptors[lo:hi], descriptors[flo:fhi])


def triangulation_residuals(X: np.ndarray, anchors: np.ndarray) -> np.ndarray:
    """``(N, A*d)`` normalised residuals ``[(x - c_j)/||x - c_j||]_j`` (a zero residual stays zero)."""
    X = np.asarray(X, dtype=np.float32)
    R = X[:, None, :] - anchors[None, :, :].astype(np.float32)              # (N, A, d)
    R /= np.maximum(np.linalg.norm(R, axis=2, keepdims=True), 1e-12)
    return R.reshape(X.shape[0], anchors.shape[0] * anchors.shape[1])


class TriangulationEmbedding(Aggregator):
    """phi_Delta + psi_d + RN (Jégou & Zisserman 2014).

    Parameters
    ----------
    n_anchors : int
        Number of anchors A (k-means centres); output dimension ``(A - 1) * d``.
    n_components : int or None
        Keep at most this many whitened components after dropping the first ``d``.
    democratic : bool
        psi_d (True) or plain sum aggregation psi_s (False).
    sinkhorn_iter : int
        Iterations of the democratic solver.
    power : float
        Power-law exponent of RN (0.5); 1 disables it.
    rotate : bool
        Apply the RN rotation before the power law.
    max_training_descriptors : int
        Anchors are trained on at most this many descriptors (seeded draw).
    max_whitening_descriptors : int
        The centring/whitening statistics use at most this many descriptors (seeded draw).
    kmeans_iter : int
    batches : {"by_count", "padded"}
        How images are batched for the embedding and democratic weights: ``"by_count"``, one descriptor count
        per batch, unpadded (every image's row its own where the BLAS keeps a product's rows their own:
        ``independent_rows``); ``"padded"``, zero-padded
        batches of similar counts (what records made before ran: the same vectors up to rounding, other last
        bits for the images padded in their batch).
    cache : bool or str
        Cache anchors and the whitening projection (False/True/folder).
    random_state : int or None
    """

    #: Parameters added after records were written, with the value that reproduces a record that does not name
    #: them (``lfabench reproduce``): records made before the unpadded batches ran zero-padded ones.
    introduced_params = {"batches": "padded"}
    fit_size_params = ("n_anchors",)  # more anchors than training descriptors: refused before fitting
    #: At most this many bytes of the fit samples' phi are kept for the next transform (:class:`FitEmbeddings`).
    REUSE_BYTES = 3 << 30
    #: Unpadded batches embed descriptors and rotate sums in products of this many rows (the last block
    #: zero-padded): BLAS picks its kernel by a product's shape (a small product or a single row takes another
    #: one, with other last bits), so every row goes through a product of one shape whatever its company.
    BLOCK_ROWS = 256

    def __init__(self, n_anchors: int = 16, n_components: int | None = None, democratic: bool = True,
                 sinkhorn_iter: int = 10, power: float = 0.5, rotate: bool = True,
                 max_training_descriptors: int = 100_000, max_whitening_descriptors: int = 50_000,
                 kmeans_iter: int = 20, batches: Literal["by_count", "padded"] = "by_count",
                 cache: bool | str = False, random_state=None):
        self.n_anchors = n_anchors
        self.n_components = n_components
        self.democratic = democratic
        self.sinkhorn_iter = sinkhorn_iter
        self.power = power
        self.rotate = rotate
        self.max_training_descriptors = max_training_descriptors
        self.max_whitening_descriptors = max_whitening_descriptors
        self.kmeans_iter = kmeans_iter
        self.batches = batches
        self.cache = cache
        self.random_state = random_state

    # ------------------------------------------------------------------ fit
    @property
    def independent_rows(self) -> bool:
        """Each image's row is its own in unpadded batches of one descriptor count, where the BLAS computes a
        product's rows each on its own (:func:`~lfabench.sdk.gemm_rows_are_own`)."""
        return self.batches == "by_count" and gemm_rows_are_own()

    @property
    def _by_count(self) -> bool:
        return self.batches == "by_count"

    def _fit(self, bags: Bags, y):
        d = bags.dim
        A = int(self.n_anchors)
        if A < 2:
            raise ValueError(f"TriangulationEmbedding: n_anchors must be >= 2 (the first d components are "
                             f"dropped), got {A}")
        self.anchors_ = cached_kmeans(bags.descriptors, A, self.max_training_descriptors, self.kmeans_iter,
                                      self.random_state, self.cache)
        sample = training_sample(bags.descriptors, self.max_whitening_descriptors, self.random_state)
        n_out = (A - 1) * d if self.n_components is None else min(int(self.n_components), (A - 1) * d)

        def fit():
            R = triangulation_residuals(sample, self.anchors_).astype(np.float64)
            mean = R.mean(axis=0)
            R -= mean
            eigval, eigvec = np.linalg.eigh(R.T @ R / max(R.shape[0] - 1, 1))
            order = np.argsort(eigval)[::-1][d:d + n_out]                 # drop the first d components
            floor = 1e-9 * max(float(eigval.max()), 1e-30)
            P = eigvec[:, order] / np.sqrt(np.maximum(eigval[order], floor))
            return {"mean": mean.astype(np.float32), "projection": P.astype(np.float32)}

        params = {"anchors_sha256": array_fingerprint(self.anchors_), "n_out": n_out,
                  "seed": cacheable_seed(self.random_state)}
        state = cached_fit("temb-whitening", f"A={A}_D={n_out}", sample, params, fit,
                           self.cache if params["seed"] is not None else False)
        self.mean_ = state["mean"]
        self.projection_ = state["projection"]                             # (A*d, D)
        self.rotation_ = None
        self._fit_aggregate = self._fit_embeddings = None
        if self.rotate:
            D = self.projection_.shape[1]
            # unpadded batches need no phi kept (a run transforms only the images fit did not see); padded ones
            # reuse it only where a product's row does not depend on the others (the same bits as embedding again)
            reuse = not self._by_count and gemm_rows_are_own()
            kept = FitEmbeddings(bags, D, self.REUSE_BYTES // (4 * D)) if reuse else None
            Psi = self._aggregate(bags, keep=kept)
            self._fit_embeddings = kept
            # the embedding is the cost of a run (a (A*d, D) product per descriptor): a transform of the
            # same bags, as a retrieval run's database is its training set, takes these sums instead of
            # embedding every descriptor again (same arithmetic, so the same bits); the bags are compared only
            # then (fit_transform, a run's path, takes the sums without comparing)
            self._fit_aggregate = (bags.descriptors, bags.offsets, Psi, bags.ids)
            Psi = Psi.astype(np.float64)
            Psi -= Psi.mean(axis=0)
            _, _, Vt = np.linalg.svd(Psi, full_matrices=True)              # principal axes of the training set
            self.rotation_ = Vt.T.astype(np.float32)                       # (D, D) orthogonal

    # ------------------------------------------------------------ transform
    def embed(self, X: np.ndarray) -> np.ndarray:
        """phi: ``(..., D)`` centred, whitened triangulation embedding of descriptors ``X`` (``(..., d)``): one
        product for ``(N, d)``, one per image for a batch ``(B, n, d)``."""
        X = np.asarray(X)
        R = triangulation_residuals(X.reshape(-1, X.shape[-1]), self.anchors_)
        R = R.reshape(*X.shape[:-1], R.shape[-1])
        return np.matmul(R - self.mean_, self.projection_)

    def _aggregate(self, bags: Bags, keep: FitEmbeddings | None = None,
                   known: FitEmbeddings | None = None) -> np.ndarray:
        """psi_d (or psi_s): ``(m, D)`` weighted sums of embedded descriptors, batched over padded bags; phi of
        the samples ``known`` holds is taken from it, and ``keep`` receives phi of every sample.

        The batches are fixed by the bags alone and each is computed on its own, so a run's ``threads`` computes
        them side by side (:func:`lfabench.threads.imap_in_order`) with the same bits as one thread; ``keep``
        takes each batch's phi here, in batch order.
        """
        D = self.projection_.shape[1]
        out = np.zeros((bags.n_samples, D), dtype=np.float32)
        ids = bags.ids if keep is not None or known is not None else None

        def batch(item):
            return self._aggregate_batch(item, bags, ids, known)

        batches = padded_batches(bags, max_cells=4096, same_count=self._by_count)
        for idx, psi, Phi, mask in imap_in_order(batch, batches):
            out[idx] = psi
            if keep is not None and Phi.shape[0] * Phi.shape[1] > 1:
                keep.keep(ids, idx, mask.sum(axis=1), Phi)    # masking left the valid rows' bits as they were
        return out

    def _aggregate_batch(self, batch, bags: Bags, ids, known: FitEmbeddings | None):
        """One padded batch ``(idx, Xp (B, n, d), mask (B, n))``: ``idx``, its ``(B, D)`` aggregated rows, its
        ``(B, n, D)`` phi (padding rows zeroed) and ``mask``."""
        idx, Xp, mask = batch
        Phi = self._embed_padded(bags, ids, idx, Xp, mask, known)
        Phi *= mask[:, :, None]
        if self.democratic:
            K = np.maximum(np.matmul(Phi, Phi.transpose(0, 2, 1)), 0.0).astype(np.float64)
            w = democratic_weights(K, gamma=0.0, n_iter=self.sinkhorn_iter, mask=mask).astype(np.float32)
        else:
            w = mask.astype(np.float32)
        return idx, np.matmul(w[:, None, :], Phi)[:, 0], Phi, mask

    def _embed_padded(self, bags: Bags, ids, idx: np.ndarray, Xp: np.ndarray, mask: np.ndarray,
                      known: FitEmbeddings | None) -> np.ndarray:
        """``(B, n, D)`` phi of a batch: unpadded batches in :data:`BLOCK_ROWS`-row products; padded ones as one
        product of their ``B * n`` rows computes it, the rows of samples ``known`` holds copied from it, the
        others embedded (``known`` is kept only where a product's row does not depend on the other rows once
        there are two or more: :func:`~lfabench.sdk.gemm_rows_are_own`; a padding row is phi of the zero vector)."""
        B, n, d = Xp.shape
        if self._by_count:
            return self._in_blocks(self.embed, Xp.reshape(B * n, d)).reshape(B, n, -1)
        if known is None or B * n < 2:
            return self.embed(Xp.reshape(B * n, d)).reshape(B, n, -1)
        found = [known.lookup(bags, ids, i) for i in idx.tolist()]
        if not any(f is not None for f in found):
            return self.embed(Xp.reshape(B * n, d)).reshape(B, n, -1)
        counts = mask.sum(axis=1)
        todo = [b for b, f in enumerate(found) if f is None and counts[b]]
        rows = np.concatenate([Xp[b, :counts[b]] for b in todo] + [np.zeros((2, d), dtype=Xp.dtype)])
        new = self.embed(rows)                                         # at least two rows: the last two pad
        Phi = np.empty((B, n, new.shape[1]), dtype=new.dtype)
        Phi[:] = new[-1]
        at = 0
        for b, f in enumerate(found):
            if f is not None:
                Phi[b, :counts[b]] = f
            elif counts[b]:
                Phi[b, :counts[b]] = new[at:at + counts[b]]
                at += counts[b]
        return Phi

    def fit_transform(self, bags, y=None) -> np.ndarray:
        """``fit``, then the fit samples' vectors from the sums RN's rotation was learned from (what
        ``transform`` of the same bags returns, bit for bit) instead of aggregating them again. With ``by_count``
        batches the sums stay for the next ``transform``, which takes them for these samples (as after ``fit``)."""
        self.fit(bags, y)
        reuse = getattr(self, "_fit_aggregate", None)
        if not self._by_count:
            self._fit_aggregate = None
        if reuse is None:  # no rotation: fit aggregated nothing
            return self.transform(bags)
        self._fit_embeddings = None
        return self._normalized(reuse[2])

    def _transform(self, bags: Bags) -> np.ndarray:
        reuse, self._fit_aggregate = getattr(self, "_fit_aggregate", None), None   # once: frees (m, D)
        known, self._fit_embeddings = getattr(self, "_fit_embeddings", None), None  # once: frees (N_fit, D)
        if reuse is not None and _same_content(reuse[0], reuse[1], bags):
            Psi = reuse[2]
        elif reuse is not None and self._by_count:
            Psi = self._with_fit_sums(bags, reuse)
        else:
            Psi = self._aggregate(bags, known=known)
        return self._normalized(Psi)

    def _with_fit_sums(self, bags: Bags, reuse: tuple) -> np.ndarray:
        """``(m, D)`` sums of ``bags``: the fit's for each sample ``fit`` aggregated (the same id and the same
        descriptors, bit for bit), the others aggregated now. A run that fits, then transforms every image (where
        the BLAS keeps no product's rows their own, so ``independent_rows`` is False) thus aggregates each image
        once, and a training image's vector is the one the rotation was learned from."""
        descriptors, offsets, fit_psi, fit_ids = reuse
        at = {sample: j for j, sample in enumerate(fit_ids.tolist())}
        found = np.full(bags.n_samples, -1, dtype=np.int64)
        same_dtype = bags.descriptors.dtype == descriptors.dtype
        for i, sample in enumerate(bags.ids.tolist()):
            j = at.get(sample)
            if j is not None and same_dtype and _same_sample(bags, i, descriptors, offsets, j):
                found[i] = j
        hit = found >= 0
        if not hit.any():
            return self._aggregate(bags)
        out = np.empty((bags.n_samples, fit_psi.shape[1]), dtype=fit_psi.dtype)
        out[hit] = fit_psi[found[hit]]
        if not hit.all():
            out[~hit] = self._aggregate(bags.subset(np.flatnonzero(~hit)))
        return out

    def _normalized(self, Psi: np.ndarray) -> np.ndarray:
        """RN: ``(m, D)`` sums rotated (when fitted with ``rotate``), power-law and L2 normalised, float32."""
        if self.rotation_ is not None:
            Psi = self._rotated(Psi)
        return l2_normalize(signed_power(Psi, self.power)).astype(np.float32)

    def _in_blocks(self, fn, X: np.ndarray) -> np.ndarray:
        """``fn`` (a row-wise map ending in one product) of the ``(m, k)`` rows ``X``, as :data:`BLOCK_ROWS`-row
        blocks of one ``(blocks, BLOCK_ROWS, k)`` array (``np.matmul`` multiplies each block alone)."""
        m, step = X.shape[0], self.BLOCK_ROWS
        padded = np.zeros((-(-m // step) * step, X.shape[1]), dtype=X.dtype)
        padded[:m] = X
        out = fn(padded.reshape(-1, step, X.shape[1]))
        return out.reshape(-1, out.shape[-1])[:m]

    def _rotated(self, Psi: np.ndarray) -> np.ndarray:
        if not self._by_count:
            return Psi @ self.rotation_
        return self._in_blocks(lambda blocks: np.matmul(blocks, self.rotation_), Psi)


def _same_content(descriptors: np.ndarray, offsets: np.ndarray, bags: Bags) -> bool:
    """Whether ``bags`` holds these descriptors (dtype, shape, values) and offsets."""
    return (descriptors.dtype == bags.descriptors.dtype and np.array_equal(offsets, bags.offsets)
            and np.array_equal(descriptors, bags.descriptors))


@hookimpl
def lfabench_aggregators():
    return [PluginSpec("temb", TriangulationEmbedding, "Triangulation embedding + democratic aggregation + "
                                                      "rotation/power-law (Jegou & Zisserman 2014)")]
