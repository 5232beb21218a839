"""``gemm_rows_are_own``: the BLAS's answer, asked once, and what the aggregators that rely on it declare."""

from __future__ import annotations

import numpy as np

from lfabench import gemm_rows
from lfabench.gemm_rows import gemm_rows_are_own
from lfabench_plugins.aggregators.fv import FisherVector
from lfabench_plugins.aggregators.fv_nn import FVNN
from lfabench_plugins.aggregators.temb import TriangulationEmbedding


def _rows_differ(dtype, inner: int, columns: int, rows: int) -> bool:
    """Whether some row of a ``rows``-row product differs in its bits from the same row of every shorter prefix."""
    rng = np.random.default_rng(11)
    B = rng.standard_normal((inner, columns)).astype(dtype)
    X = rng.standard_normal((rows, inner)).astype(dtype)
    full = X @ B
    return any(not np.array_equal(X[:m] @ B, full[:m]) for m in range(2, rows))


def test_the_answer_holds_for_products_it_did_not_probe():
    """Where the BLAS keeps rows their own, it does so on other shapes too (T-emb's phi: 16 anchors x d columns
    into D); where it does not, products of those widths show it."""
    shapes = [(np.float32, 15 * 8, 40, 40), (np.float64, 72, 24, 40)]
    differ = [_rows_differ(*shape) for shape in shapes]
    if gemm_rows_are_own():
        assert not any(differ)
    else:
        assert any(_rows_differ(dtype, inner, columns, 96) for dtype in (np.float32, np.float64)
                   for inner, columns in gemm_rows.SHAPES)


def test_it_is_asked_once_per_process(monkeypatch):
    calls = []
    real = gemm_rows._rows_are_own
    monkeypatch.setattr(gemm_rows, "_rows_are_own", lambda *a: calls.append(a) or real(*a))
    gemm_rows_are_own.cache_clear()
    try:
        first = gemm_rows_are_own()
        n = len(calls)
        assert gemm_rows_are_own() == first and len(calls) == n > 0
    finally:
        gemm_rows_are_own.cache_clear()


def test_aggregators_whose_rows_are_products_declare_them_independent_only_where_the_blas_keeps_them():
    own = gemm_rows_are_own()
    assert TriangulationEmbedding(batches="by_count").independent_rows == own
    assert FisherVector(occupancy_sum="gemm").independent_rows == own
    assert FVNN(occupancy_sum="gemm").independent_rows == own
    # what does not rest on the BLAS is unchanged
    assert not TriangulationEmbedding(batches="padded").independent_rows
    assert not FisherVector(occupancy_sum="pairwise").independent_rows
