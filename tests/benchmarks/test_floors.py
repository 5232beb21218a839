"""The floor arithmetic of the benchmark suite (``benchmarks/suite/floors.py``) against hand-computed counts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from suite.floors import METHODS, Op, Scale, floor_seconds, ops

from lfabench.registry import get_plugin

SCALE = Scale(n_fit=200_000, n_test=50_000, m_fit=2_000, m_test=500, n_max=100, d=128, c=10)
#: 1 GFLOP/s in both dtypes and 1 GB/s: a floor in seconds is then the count in units of 1e9.
UNIT = {"gemm_float32": 1.0, "gemm_float64": 1.0, "copy": 1.0}


def test_an_op_takes_the_larger_of_its_arithmetic_and_its_memory_time():
    rates = {"gemm_float32": 4.0, "gemm_float64": 2.0, "copy": 10.0}
    assert Op("a", flops=8e9, bytes=10e9, dtype="float64").seconds(rates) == pytest.approx(4.0)
    assert Op("b", flops=8e9, bytes=100e9, dtype="float32").seconds(rates) == pytest.approx(10.0)
    assert floor_seconds([Op("a", flops=8e9, dtype="float32"), Op("b", bytes=5e9)], rates) == pytest.approx(2.5)


def test_bow_counts_k_means_on_its_sample_and_one_assignment_gemm():
    p = get_plugin("aggregator", "bow")().get_params()          # K = 256, 20 iterations, 100,000 descriptors
    assert floor_seconds(ops("bow", p, SCALE, "fit"), UNIT) == pytest.approx(20 * 2 * 100_000 * 256 * 128 / 1e9)
    assert floor_seconds(ops("bow", p, SCALE, "transform"), UNIT) == pytest.approx(2 * 50_000 * 256 * 128 / 1e9)


def test_fv_transform_counts_the_projection_posteriors_and_statistics():
    p = get_plugin("aggregator", "fv")().get_params()           # K = 64 Gaussians, PCA to q = 64
    expected = 2 * 50_000 * 128 * 64 + 8 * 50_000 * 64 * 64
    assert floor_seconds(ops("fv", p, SCALE, "transform"), UNIT) == pytest.approx(expected / 1e9)


@pytest.mark.parametrize("batched, reads", [(True, 20 * 1), (False, 20 * 10)])
def test_univcg_fit_reads_the_moments_once_per_round_and_class_block_or_once_per_bit(batched, reads):
    p = get_plugin("aggregator", "univcg")(batched=batched).get_params()     # 20 rounds; 10 classes: one block
    q, bits = 129, 20 * 10
    weighted = next(op for op in ops("univcg", p, SCALE, "fit") if "moments:" in op.what)
    assert weighted.bytes == reads * 8 * 2_000 * q * q
    assert weighted.flops == bits * 2 * 2_000 * q * q


def test_univcg_fit_reads_the_moments_once_per_block_of_c_block_classes():
    p = get_plugin("aggregator", "univcg")().get_params()
    scale = Scale(n_fit=200_000, n_test=50_000, m_fit=2_000, m_test=500, n_max=100, d=128, c=4_485)
    weighted = next(op for op in ops("univcg", p, scale, "fit") if "moments:" in op.what)
    assert weighted.bytes == 20 * 5 * 8 * 2_000 * 129 * 129       # 4,485 classes: 5 blocks of at most 1,024


def test_temb_embedding_dominates_its_transform():
    p = get_plugin("aggregator", "temb")().get_params()         # 16 anchors: D = 15 d
    embedding = next(op for op in ops("temb", p, SCALE, "transform") if op.what.startswith("embedding"))
    assert embedding.flops == 2 * 50_000 * (16 * 128) * (15 * 128)


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_method_has_a_positive_transform_floor(method):
    p = get_plugin("aggregator", method)().get_params()
    assert floor_seconds(ops(method, p, SCALE, "transform"), UNIT) > 0


def test_prolfa_fit_counts_its_searches_and_the_passes_over_its_working_set_between_them():
    p = get_plugin("aggregator", "prolfa")().get_params()       # d̄ = 128
    searches = 3 * 2 * 200_000 * 128 * 128
    assert floor_seconds(ops("prolfa", p, SCALE, "fit", searches=3), UNIT) == pytest.approx(searches / 1e9)
    # 40 iterations over 20,000 working-set entries on average, 150 C-step trials: (2 x 150 + 40) passes of
    # 20,000 rows x 128 float64
    between = (2 * 150 + 40) * 20_000 * 128 * 8
    got = ops("prolfa", p, SCALE, "fit", searches=3, c_trials=150, working_set_entries=40 * 20_000, n_iter=40)
    assert floor_seconds(got, UNIT) == pytest.approx((searches + between) / 1e9)
