"""A run's ``threads`` parallelises row-independent work (lfabench.threads.map_row_blocks) without changing a bit:
fixed row ranges on worker threads at one thread each, results in row order."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from lfabench.threads import fixed_threads, imap_in_order, map_row_blocks, row_blocks, run_threads


@pytest.mark.parametrize("n_rows, block, parts, min_rows, expected", [
    (10, 4, 1, 1, [(0, 10)]),
    (10, 4, 2, 1, [(0, 8), (8, 10)]),             # halves of 5 rows, rounded up to the block: 8
    (16, 4, 2, 1, [(0, 8), (8, 16)]),
    (9000, 4096, 3, 1, [(0, 4096), (4096, 8192), (8192, 9000)]),
    (260_000, 4096, 2, 128_000, [(0, 131_072), (131_072, 260_000)]),
    (200_000, 4096, 2, 128_000, [(0, 200_000)]),  # 131,072 then 68,928 < min_rows: one range
    (13, 4, 2, 6, [(0, 13)]),                     # 8 then 5 < 6: one range
    (20, 4, 2, 6, [(0, 12), (12, 20)]),           # at least 6 rows, rounded up to the block: 12
    (0, 4, 2, 1, []),
])
def test_row_blocks_are_about_equal_ranges_starting_at_multiples_of_the_block(n_rows, block, parts, min_rows,
                                                                                expected):
    assert row_blocks(n_rows, block, parts, min_rows) == expected


def test_outside_a_run_and_at_one_thread_it_is_one_call_in_this_thread():
    calls = []

    def fn(a, b):
        calls.append((a, b, threading.current_thread() is threading.main_thread()))
        return b - a

    assert run_threads() == 1 and map_row_blocks(fn, 10, 2) == [10]
    with fixed_threads(1):
        assert map_row_blocks(fn, 10, 2) == [10]
    assert calls == [(0, 10, True), (0, 10, True)]


def test_with_two_threads_the_ranges_run_on_two_worker_threads_at_one_openmp_thread_each():
    from threadpoolctl import threadpool_info

    seen = {}
    barrier = threading.Barrier(2, timeout=30)   # both ranges are in flight at once, or this times out

    def fn(a, b):
        barrier.wait()
        omp = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "openmp"]
        seen[(a, b)] = (threading.current_thread().name, omp)
        return np.arange(a, b)

    with fixed_threads(2):
        assert run_threads() == 2
        out = map_row_blocks(fn, 10, 4)
    assert np.array_equal(np.concatenate(out), np.arange(10)) and sorted(seen) == [(0, 8), (8, 10)]
    assert len({name for name, _ in seen.values()}) == 2
    assert all(set(omp) <= {1} for _, omp in seen.values())


def test_nearest_centres_with_two_threads_equal_one_search_bit_for_bit():
    """Enough rows that FAISS takes its BLAS route and the search splits (2 x 128,000 queries and more)."""
    import faiss

    from lfabench_plugins.aggregators.codebooks import assign_nearest

    rng = np.random.default_rng(0)
    n = 2 * faiss.cvar.distance_compute_blas_threshold + 4321
    X = (rng.random((n, 16), dtype=np.float32) * 8).round()      # integer-valued: many exact ties between centres
    centres = (rng.random((24, 16), dtype=np.float32) * 8).round()
    with fixed_threads(1):
        one = assign_nearest(centres, X)
        one3 = assign_nearest(centres, X, k=3)
    with fixed_threads(2):
        two = assign_nearest(centres, X)
        two3 = assign_nearest(centres, X, k=3)
    assert one.dtype == two.dtype == np.int64 and np.array_equal(one, two) and np.array_equal(one3, two3)
    # an independent reference: the first nearest centre by exact squared distance (integers: no rounding)
    d2 = ((X[:5000, None, :].astype(np.float64) - centres[None]) ** 2).sum(-1)
    assert np.array_equal(one[:5000], d2.argmin(1))


def test_an_error_in_one_piece_is_raised_and_the_pieces_not_started_are_dropped():
    started = []

    def fn(i):
        started.append(i)
        if i == 0:
            raise ValueError("piece 0")
        return i

    with fixed_threads(2), pytest.raises(ValueError, match="piece 0"):
        list(imap_in_order(fn, range(100)))
    assert len(started) < 100
