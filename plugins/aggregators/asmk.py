"""ASMK: aggregated selective match kernel (Tolias, Avrithis & Jégou, "To aggregate or not to aggregate:
selective match kernels for image search", ICCV 2013), through its authors' implementation, the ``asmk``
package (optional extra ``lfabench[asmk]``).

A match kernel, not one vector per image: a :class:`lfabench.sdk.Searcher`. With a k-means codebook
``c_1..c_K`` and an image's descriptors ``X`` quantised to their nearest word(s), each word ``c`` the image
uses gets one aggregated residual ``V(X_c) = sum_{x in X_c} (x - c)``, binarised to ``b(X_c) = sign(V(X_c))``
(``binary=True``, ASMK*: ``d`` bits per word; ``binary=False``: ``V(X_c)`` L2-normalised). Two images compare
word by word (the paper's eq. 11, ASMK)::

    K(X, Y) = gamma(X) gamma(Y) sum_{c in X and Y} sigma_alpha(u(X_c, Y_c)),
    sigma_alpha(u) = u^alpha if u > tau, else 0,

with ``u`` the similarity of the two words' aggregated residuals (binarised: ``1 - 2 h / d``, ``h`` the
Hamming distance; otherwise the inner product) and ``gamma`` the normalisation of each image by the square
root of its number of words (the package's ``norm_factor``; idf weights with ``use_idf=True``). Only the
words both images use cost anything: an inverted file over the words holds the database.

The settings of the authors' package (its ``_eccv20_how.yml``): binarised residuals, ``alpha = 3``,
``tau = 0``, no idf, one word per database descriptor and ``query_multiple_assignment = 5`` words per query
descriptor (each query descriptor joins the aggregated residual of each of its 5 nearest words). Their
codebook has 65,536 words and is trained by FAISS k-means, 10 iterations; here the codebook is lfabench's
seeded FAISS k-means of the fit samples (:func:`lfabench_plugins.aggregators.codebooks.cached_kmeans`, seeded
by ``random_state``, cached like the other codebooks of a board), ``kmeans_iter=10`` like theirs, on at most
``max_training_descriptors`` descriptors. ``n_clusters=16384`` is sized to the copies board's 1.45 M SIFT
descriptors (about 90 per word; a million-descriptor training sample, 61 per word): on SIFT, seed 0, mAP
95.89 / 96.40 / 96.64 at 1,024 / 4,096 / 16,384 words (docs/retrieval.md). Indexing and search are the
package's own code (``ASMKMethod.create_ivf_builder``, ``IvfBuilder.add``, ``ASMKMethod.query_ivf``) on that
codebook, FAISS at one thread (the same scores at any ``threads``).

Descriptors: ``root=True`` (default) maps each descriptor to ``sign(x) sqrt(|x| / ||x||_1)``, RootSIFT
(Arandjelović & Zisserman, CVPR 2012) for SIFT's non-negative histograms (the board's SIFT is plain
OpenCV SIFT, ``root_sift=False``, so the map is applied here); ``root=False`` L2-normalises them. Either way every descriptor has unit L2 norm, as the package
expects (its descriptors are L2-normalised); a zero descriptor stays zero.

Scores: ``search(bags)`` gives ``(t, n_db)`` float32 ``K(X_q, Y_i)`` (higher: more similar); a database image
that shares no word with the query scores 0. Memory: the inverted file holds ``d / 8`` bytes (binarised) or
``4 d`` bytes per (image, word) pair.
"""

from __future__ import annotations

from numbers import Real

import numpy as np

from lfabench.sdk import COUNT, Bags, ConfigError, Interval, PluginSpec, Searcher, hookimpl, serial_blas

from .codebooks import cached_kmeans, training_sample

#: Images added to the inverted file per call (without idf): bounds the memory of a chunk's mapped descriptors.
INDEX_CHUNK = 2048
INSTALL = 'pip install "lfabench[asmk]"'


def asmk_package():
    """The ``asmk`` package's modules ``(asmk_method, codebook, index)``; an ImportError saying how to install it."""
    try:
        from asmk import asmk_method, codebook, index
    except ImportError as exc:
        raise ImportError(f"aggregator 'asmk' needs the asmk package (the ASMK authors' implementation, with its "
                          f"compiled asmk.hamming): {INSTALL}") from exc
    return asmk_method, codebook, index


def descriptor_map(X: np.ndarray, root: bool) -> np.ndarray:
    """``(N, d)`` float32 unit-norm rows: ``sign(x) sqrt(|x| / ||x||_1)`` (``root``: RootSIFT) or ``x / ||x||_2``;
    zero rows stay zero."""
    X = np.asarray(X, dtype=np.float32)
    if root:
        l1 = np.abs(X).sum(axis=1, keepdims=True)
        return (np.sign(X) * np.sqrt(np.abs(X) / np.maximum(l1, np.float32(1e-12)))).astype(np.float32)
    l2 = np.linalg.norm(X, axis=1, keepdims=True)
    return (X / np.maximum(l2, np.float32(1e-12))).astype(np.float32)


class ASMK(Searcher):
    """ASMK (binarised by default: ASMK*) over a k-means codebook, by the authors' ``asmk`` package.

    Parameters
    ----------
    n_clusters : int
        Codebook size K (visual words).
    binary : bool
        Binarise each word's aggregated residual (ASMK*; ``d`` bits per word) rather than keep it L2-normalised.
    alpha : float
        The selectivity exponent of ``sigma_alpha`` (eq. 11).
    similarity_threshold : float
        ``tau``: word pairs whose similarity is below it count 0.
    query_multiple_assignment : int
        Words each query descriptor is assigned to (its nearest ones; at most ``n_clusters``).
    database_multiple_assignment : int
        Words each database descriptor is assigned to (at most ``n_clusters``).
    use_idf : bool
        Weigh each word by its squared idf in the inverted file.
    root : bool
        RootSIFT-style descriptor map (``sign(x) sqrt(|x| / ||x||_1)``) before anything; else L2 normalisation.
    max_training_descriptors : int
        The codebook is trained on at most this many (mapped) descriptors of the fit samples, drawn uniformly
        (seeded by ``random_state``).
    kmeans_iter : int
        FAISS k-means iterations.
    cache : bool or str
        Cache the codebook (keyed on the training sample, K, iterations and seed): False = off, True = the
        default cache root, str = a folder.
    random_state : int or None
        Seeds the codebook's training sample and k-means.
    """

    fit_size_params = ("n_clusters",)
    _parameter_constraints = {"alpha": [Interval(Real, 0, None, closed="neither")],
                              "similarity_threshold": [Interval(Real, -1, 1, closed="both")],
                              "query_multiple_assignment": [COUNT], "database_multiple_assignment": [COUNT]}
    #: the common battery's small settings: one word per query descriptor on 8-word codebooks is enough there
    conformance = {"params": {"query_multiple_assignment": 2}}

    def __init__(self, n_clusters: int = 16384, binary: bool = True, alpha: float = 3.0,
                 similarity_threshold: float = 0.0, query_multiple_assignment: int = 5,
                 database_multiple_assignment: int = 1, use_idf: bool = False, root: bool = True,
                 max_training_descriptors: int = 1_000_000, kmeans_iter: int = 10, cache: bool | str = False,
                 random_state=None):
        asmk_package()  # a missing extra is said when the plugin is built, before any work
        self.n_clusters = n_clusters
        self.binary = binary
        self.alpha = alpha
        self.similarity_threshold = similarity_threshold
        self.query_multiple_assignment = query_multiple_assignment
        self.database_multiple_assignment = database_multiple_assignment
        self.use_idf = use_idf
        self.root = root
        self.max_training_descriptors = max_training_descriptors
        self.kmeans_iter = kmeans_iter
        self.cache = cache
        self.random_state = random_state

    def asmk_params(self) -> dict:
        """The ``asmk`` package's parameter dict (its YAML files' layout) for these settings."""
        return {"index": {"gpu_id": None},
                "train_codebook": {"codebook": {"size": int(self.n_clusters)}},
                "build_ivf": {"kernel": {"binary": bool(self.binary)}, "ivf": {"use_idf": bool(self.use_idf)},
                              "quantize": {"multiple_assignment": int(self.database_multiple_assignment)},
                              "aggregate": {}},
                "query_ivf": {"quantize": {"multiple_assignment": int(self.query_multiple_assignment)},
                              "aggregate": {}, "search": {"topk": None},
                              "similarity": {"similarity_threshold": float(self.similarity_threshold),
                                             "alpha": float(self.alpha)}}}

    def _fit(self, bags: Bags, y):
        for name in ("query_multiple_assignment", "database_multiple_assignment"):
            if int(getattr(self, name)) > int(self.n_clusters):
                raise ConfigError(f"ASMK: {name}={getattr(self, name)} exceeds n_clusters={self.n_clusters}: a "
                                  f"descriptor cannot take more words than the codebook has")
        asmk_method, codebook, index = asmk_package()
        # the seeded sample first, then the map: never a mapped copy of every descriptor
        sample = descriptor_map(training_sample(bags.descriptors, self.max_training_descriptors, self.random_state),
                                self.root)
        self.centres_ = cached_kmeans(sample, self.n_clusters, self.max_training_descriptors, self.kmeans_iter,
                                      self.random_state, self.cache)
        cdb = codebook.Codebook(index.initialize_index(None), size=int(self.n_clusters))
        cdb.index(np.ascontiguousarray(self.centres_, dtype=np.float32))
        self._method = asmk_method.ASMKMethod.initialize_untrained(self.asmk_params())
        self._method.codebook = cdb
        self._trained = self._method  # the codebook alone: every index() starts from it
        self.fit_info_ = {"n_clusters": int(self.n_clusters),
                          "training_descriptors": int(sample.shape[0]),
                          "descriptor_map": "rootsift" if self.root else "l2"}

    def _index(self, bags: Bags) -> None:
        builder = self._trained.create_ivf_builder()
        # the package's idf weights depend on how the images were cut into calls: with idf, one call
        chunk = max(bags.n_samples, 1) if self.use_idf else INDEX_CHUNK
        for start in range(0, bags.n_samples, chunk):
            stop = min(start + chunk, bags.n_samples)
            lo, hi = int(bags.offsets[start]), int(bags.offsets[stop])
            if hi == lo:
                continue
            X = descriptor_map(bags.descriptors[lo:hi], self.root)
            ids = np.repeat(np.arange(start, stop, dtype=np.int64), np.diff(bags.offsets[start:stop + 1]))
            with serial_blas():  # FAISS's assignment at one thread: the same words at any `threads`
                builder.add(X, ids)
        self._method = self._trained.add_ivf_builder(builder)
        ivf = self._method.inverted_file
        self.index_ = {"norm_factor": np.asarray(ivf.norm_factor, dtype=np.float64),
                       "counts": np.asarray(ivf.counts), "idf": np.asarray(ivf.idf),
                       "vectors": [None if v is None else v[:n] for v, n in zip(ivf.ivf_vecs, ivf.counts)],
                       "images": [None if v is None else v[:n] for v, n in zip(ivf.ivf_image_ids, ivf.counts)]}
        stats = ivf.stats
        self.fit_info_ = dict(self.fit_info_, index={
            "images": int(bags.n_samples), "entries": int(np.asarray(ivf.counts).sum()),
            "empty_words": int(stats["empty_vw"]), "imbalance_factor": float(stats["imbalance_factor_of_vw"])})

    def _search(self, bags: Bags) -> np.ndarray:
        X = descriptor_map(bags.descriptors, self.root)
        ids = bags.sample_index()
        with serial_blas():
            _, images, ranks, scores = self._method.query_ivf(X, ids)
        out = np.zeros((bags.n_samples, self.n_indexed_), dtype=np.float32)
        rows = np.asarray(images, dtype=np.int64)
        out[rows[:, None], np.asarray(ranks, dtype=np.int64)] = scores
        return out


@hookimpl
def lfabench_aggregators():
    return [PluginSpec("asmk", ASMK,
                       "ASMK* (Tolias, Avrithis & Jégou, ICCV 2013): aggregated selective match kernel over a k-means "
                       "codebook, binarised residuals, alpha=3, tau=0, by the authors' asmk package; a searcher that "
                       "indexes the database and scores queries itself (optional extra lfabench[asmk])")]
