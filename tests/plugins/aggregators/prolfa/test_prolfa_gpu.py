"""The deprecated GPU routes (``backend="cupy"``, ``backend="pairwise_fw_cupy"``; removed in the next release) against
their NumPy twins.

These run only where CuPy and an NVIDIA GPU are present (the project's CI has neither: they skip there with
the reason); the CPU paths they are compared with are tested everywhere. The refusal without CuPy runs
everywhere.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning
from test_prolfa_dense import clustered_problem
from test_prolfa_pairwise import float32_problem, random_columns

from lfabench_plugins.aggregators.prolfa import FitOptions, fit_prolfa, objective
from lfabench_plugins.aggregators.prolfa.search import top_candidates
from lfabench_plugins.aggregators.prolfa.problem import frank_wolfe_gap


def _gpu():
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except (ImportError, RuntimeError):       # CuPy's CUDARuntimeError is a RuntimeError
        return None


cupy = _gpu()
needs_gpu = pytest.mark.skipif(cupy is None, reason="needs CuPy and an NVIDIA GPU (pip install 'lfabench[gpu]')")


def test_pairwise_fw_cupy_without_cupy_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(ImportError, match=r"backend='pairwise_fw_cupy' needs CuPy.*lfabench\[gpu\].*'auto'"):
        fit_prolfa(float32_problem(), FitOptions(n_prototypes=8, max_support=None, backend="pairwise_fw_cupy"))


@needs_gpu
@pytest.mark.parametrize("m", [1, 5, 16])
def test_device_search_equals_the_flat_search(m):
    """Rows of largest ``-x.h`` per column, best first: the device's arg-max passes against FAISS/NumPy."""
    from lfabench_plugins.aggregators.prolfa import pairwise_fw_cuda as pairwise_cuda

    rng = np.random.default_rng(m)
    X = rng.normal(size=(5000, 9)).astype(np.float32)
    H = rng.normal(size=(9, 300))
    vals, _ = top_candidates(X, H, m)
    got = cupy.asnumpy(pairwise_cuda.device_top_candidates(cupy.asarray(X), H, m))
    assert got.shape == (300, m)
    # same scores (ties may order rows differently): the device's rows score what the reference's do
    np.testing.assert_allclose(-np.einsum("jmd,dj->jm", X[got].astype(np.float64), H), vals, rtol=1e-5, atol=1e-5)
    # and every returned row is distinct within its column
    assert all(len(set(r)) == m for r in got)


@needs_gpu
def test_device_search_in_blocks_equals_one_block(monkeypatch):
    from lfabench_plugins.aggregators.prolfa import pairwise_fw_cuda as pairwise_cuda

    rng = np.random.default_rng(0)
    X = cupy.asarray(rng.normal(size=(2000, 6)).astype(np.float32))
    H = rng.normal(size=(6, 50))
    whole = cupy.asnumpy(pairwise_cuda.device_top_candidates(X, H, 4))
    monkeypatch.setattr(pairwise_cuda, "SEARCH_BLOCK_BYTES", 4 * 2000 * 7)      # 7 columns per block
    np.testing.assert_array_equal(cupy.asnumpy(pairwise_cuda.device_top_candidates(X, H, 4)), whole)


@needs_gpu
@pytest.mark.parametrize("seed", [0, 1])
def test_pairwise_fw_on_the_gpu_follows_the_cpu_fit(seed):
    """Same start, steps and stopping rule. The trajectories are not identical: the bound's gradient that picks each
    pairwise step is summed in another order on the device (measured: J within 1e-4 of the CPU's after a few
    searches), so the GPU's result is checked on its own, by the CPU's independent gap formula and objective."""
    pb = float32_problem(seed=seed)
    opts = {"n_prototypes": 8, "random_state": 0, "max_support": None, "gap_tol": 1e-2, "max_iter": 300}
    cpu = fit_prolfa(pb, FitOptions(backend="pairwise_fw", **opts))
    gpu = fit_prolfa(pb, FitOptions(backend="pairwise_fw_cupy", **opts))
    assert gpu.converged and cpu.converged
    h = np.asarray(gpu.objective_history)
    assert h[0] == pytest.approx(cpu.objective_history[0], rel=1e-9)            # the same start
    assert np.all(np.diff(h) <= 1e-9 * np.abs(h[:-1]))                           # J never rises
    J = objective(pb, gpu.selection, gpu.projection)
    assert J == pytest.approx(h[-1], rel=1e-9)
    assert float(frank_wolfe_gap(pb, gpu.selection, gpu.projection).sum()) <= 1e-2 * J * (1 + 1e-6)
    assert J == pytest.approx(cpu.objective_history[-1], rel=2e-2)
    np.testing.assert_allclose(np.asarray(gpu.selection.sum(axis=0)).ravel(), 1.0, atol=1e-9)
    assert gpu.info["solver"] == "pairwise_fw_cupy"


@needs_gpu
def test_dense_cupy_backend_follows_the_numpy_dense_backend():
    pb = clustered_problem()
    opts = {"n_prototypes": 8, "random_state": 0, "tol": 1e-4, "max_iter": 60}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        cpu = fit_prolfa(pb, FitOptions(backend="dense", **opts))
        gpu = fit_prolfa(pb, FitOptions(backend="cupy", **opts))
    n = min(len(cpu.objective_history), len(gpu.objective_history), 50)
    np.testing.assert_allclose(gpu.objective_history[:n], cpu.objective_history[:n], rtol=1e-6)
    assert objective(pb, gpu.selection, gpu.projection) == pytest.approx(gpu.objective_history[-1], rel=1e-9)


@needs_gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_fused_kernel_takes_the_steps_of_the_array_loop(dtype, monkeypatch):
    """One CUDA thread per column (``FUSED_INNER``) against the vectorised loop it replaces, on the same working set:
    same arithmetic in the same order, so the same weights and the same joint move."""
    from lfabench_plugins.aggregators.prolfa import pairwise_fw as pw
    from lfabench_plugins.aggregators.prolfa.problem import gradient_factor
    from lfabench_plugins.aggregators.prolfa.wstep import solve_w

    pb = clustered_problem(seed=3)
    pb.X = np.ascontiguousarray(pb.X, dtype=dtype)
    for seed in range(3):
        host, _ = random_columns(pb, 8, 5, seed=seed)
        wc = pw.WorkingColumns(cupy.asarray(pb.X), cupy.asarray(host.rows), cupy.asarray(host.vals), cupy)
        P = wc.prototypes()
        W = solve_w(pb, P)
        H = gradient_factor(pb, P, W)
        r = wc.row_sums()
        wc = wc.extended(pw.search_gap(pb, wc.X, wc, H, r, 6)[0])
        B = pw.column_grams(pb, wc)
        got = {}
        for fused in (False, True):
            monkeypatch.setattr(pw, "FUSED_INNER", fused)
            step = pw.WorkingColumns(wc.X, wc.rows.copy(), wc.vals.copy(), cupy)
            P2, r2, tau = pw.column_step(pb, step, B, P, W, H, r, pw.INNER_STEPS)
            got[fused] = (cupy.asnumpy(step.vals), P2, cupy.asnumpy(r2), tau)
        assert got[True][3] == pytest.approx(got[False][3], rel=1e-12)
        for a, b in zip(got[True][:3], got[False][:3]):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)
