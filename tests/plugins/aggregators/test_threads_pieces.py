"""Under ``threads=2`` the GMM's EM passes, the triangulation embedding's batches, UniVCG's class and image blocks
and the nearest-centre search run on two worker threads and give the bits of ``threads=1`` (fixed pieces, summed in
their order)."""

from __future__ import annotations

import threading

import numpy as np

from lfabench.bags import Bags
from lfabench.threads import fixed_threads
from lfabench_plugins.aggregators import codebooks, gmm, temb, univcg
from lfabench_plugins.aggregators.gmm import BLOCK_ROWS, fit_diag_gmm_em
from lfabench_plugins.aggregators.softbow import image_blocks
from lfabench_plugins.aggregators.temb import TriangulationEmbedding


class Meeting:
    """Records the name of each thread that calls it; under ``threads=2`` its first two calls wait for each other
    (so two pieces are in flight at once: a pool whose one worker is quick enough would otherwise take them all)."""

    def __init__(self, pair: bool):
        self.seen: set[str] = set()
        self.calls = 0
        self.lock = threading.Lock()
        self.barrier = threading.Barrier(2, timeout=60) if pair else None

    def __call__(self) -> None:
        with self.lock:
            self.calls += 1
            wait = self.barrier is not None and self.calls <= 2
            self.seen.add(threading.current_thread().name)
        if wait:
            self.barrier.wait()

    def workers(self) -> set[str]:
        return {name for name in self.seen if name.startswith("lfabench-rows")}


def spy(monkeypatch, module, name, pair: bool) -> Meeting:
    """Replace ``module.name`` by a wrapper that calls a :class:`Meeting` first."""
    meeting = Meeting(pair)
    original = getattr(module, name)

    def wrapped(*args, **kwargs):
        meeting()
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapped)
    return meeting


def test_gmm_em_with_two_threads_is_bit_identical_and_runs_on_two_threads(monkeypatch):
    rng = np.random.default_rng(0)
    K, d = 5, 6
    X = rng.normal(size=(3 * BLOCK_ROWS + 123, d)) * rng.uniform(0.5, 3.0, d) + 20.0   # four blocks of rows
    means = X[rng.choice(X.shape[0], K, replace=False)]
    weights, precisions = np.full(K, 1.0 / K), np.ones((K, d))
    with fixed_threads(1):
        one = fit_diag_gmm_em(X, weights, means, precisions, max_iter=5, tol=0.0)
    meeting = Meeting(pair=True)

    class Numpy:                                               # gmm's numpy, whose matmul (once a block) meets
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def matmul(*args, **kwargs):
            meeting()
            return np.matmul(*args, **kwargs)

    monkeypatch.setattr(gmm, "np", Numpy())
    with fixed_threads(2):
        two = fit_diag_gmm_em(X, weights, means, precisions, max_iter=5, tol=0.0)
    assert len(meeting.workers()) == 2, meeting.seen
    assert one.lower_bounds == two.lower_bounds and one.n_iter == two.n_iter == 5
    for a, b in ((one.weights, two.weights), (one.means, two.means), (one.variances, two.variances)):
        assert a.tobytes() == b.tobytes()


def test_triangulation_embedding_with_two_threads_is_bit_identical_and_runs_on_two_threads(monkeypatch):
    rng = np.random.default_rng(1)
    counts = rng.integers(20, 60, size=240)
    bags = Bags(rng.random((int(counts.sum()), 8), dtype=np.float32), np.concatenate([[0], np.cumsum(counts)]))
    features = {}
    for threads in (1, 2):
        meeting = spy(monkeypatch, temb, "democratic_weights", pair=threads == 2)
        with fixed_threads(threads):
            agg = TriangulationEmbedding(n_anchors=4, kmeans_iter=5, random_state=0).fit(bags)
            features[threads] = np.asarray(agg.transform(bags))
        monkeypatch.undo()
        assert len(meeting.workers()) == (0 if threads == 1 else 2), meeting.seen
    assert features[1].tobytes() == features[2].tobytes()


def test_univcg_fit_and_transform_with_two_threads_are_bit_identical_and_run_on_two_threads(monkeypatch):
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 40, size=90)                      # empty images among them
    bags = Bags(rng.normal(size=(int(counts.sum()), 6)).astype(np.float32),
                np.concatenate([[0], np.cumsum(counts)]))
    y, width = np.arange(90) % 3, 3 * 4
    assert len(image_blocks(bags.offsets, 50)) > 10
    fitted, features = {}, {}
    for threads in (1, 2):
        monkeypatch.setattr(univcg.UniVCG, "C_BLOCK", 1)                    # a round's three classes: three blocks
        monkeypatch.setattr(univcg.UniVCG, "TRANSFORM_CELLS", 50 * width)   # image blocks of at most 50 rows
        solving = spy(monkeypatch, np.linalg, "solve", pair=threads == 2)   # once a class block, in the fit only
        with fixed_threads(threads):
            fitted[threads] = univcg.UniVCG(n_rounds=4, random_state=0).fit(bags, y)
        augmenting = spy(monkeypatch, univcg.UniVCG, "_augment", pair=threads == 2)   # once a transform chunk
        with fixed_threads(threads):
            features[threads] = fitted[threads]._transform(bags, chunk=37)  # chunks that cut images and blocks
        monkeypatch.undo()
        assert len(solving.workers()) == len(augmenting.workers()) == (0 if threads == 1 else 2), \
            (solving.seen, augmenting.seen)
    assert fitted[1].bits_.tobytes() == fitted[2].bits_.tobytes()
    assert fitted[1].fit_info_["training_curve"] == fitted[2].fit_info_["training_curve"]
    assert features[1].tobytes() == features[2].tobytes()
    agg = fitted[2]
    Xa = np.hstack([agg.standardizer_.transform(bags.descriptors), np.ones((bags.n_descriptors, 1))])
    fires = Xa @ agg.bits_.T > 0
    want = np.stack([fires[a:b].mean(0) if b > a else np.zeros(width)
                     for a, b in zip(bags.offsets[:-1], bags.offsets[1:])])
    np.testing.assert_allclose(features[2], want, atol=1e-6)


def test_nearest_centres_with_two_threads_search_two_row_ranges(monkeypatch):
    import faiss

    ranges: list[tuple[int, int]] = []
    original = codebooks.map_row_blocks

    def recording(fn, n_rows, block, min_rows=1):
        return original(lambda a, b: ranges.append((a, b)) or fn(a, b), n_rows, block, min_rows)

    monkeypatch.setattr(codebooks, "map_row_blocks", recording)
    rng = np.random.default_rng(2)
    n = 2 * (faiss.cvar.distance_compute_blas_threshold + faiss.cvar.distance_compute_blas_query_bs) + 10
    X, centres = rng.random((n, 4), dtype=np.float32), rng.random((7, 4), dtype=np.float32)
    with fixed_threads(1):
        one = codebooks.assign_nearest(centres, X)
    with fixed_threads(2):
        two = codebooks.assign_nearest(centres, X)
    bs = faiss.cvar.distance_compute_blas_query_bs
    half = -(-(-(-n // 2)) // bs) * bs
    # the two worker threads record their ranges in whichever order they start; the results come back in row order
    assert ranges[0] == (0, n) and sorted(ranges[1:]) == [(0, half), (half, n)]
    assert np.array_equal(one, two)
