"""The deprecated dense route (``backend="dense"``, NumPy; ``"cupy"`` runs the same code on a GPU), kept for one release."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from lfabench import Bags
from lfabench_plugins.aggregators.prolfa import Problem, FitOptions, fit_prolfa, objective
from lfabench_plugins.aggregators.prolfa import dense
from lfabench_plugins.aggregators.prolfa.dense import array_namespace, project_columns_newton, project_columns_topk
from lfabench_plugins.aggregators.prolfa.simplex import project_columns, project_columns_sparse


def clustered_problem(seed=0, n_images=40, per_image=12, d=6, c=4, lambda1=0.1, lambda2=1.0):
    """Descriptors around class centres (so the fit has something to find); one-hot responses."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(c, d))
    y = np.arange(n_images) % c
    bags = Bags.from_list([centres[k] + 0.8 * rng.normal(size=(per_image, d)) for k in y])
    # centred, as the plugin's default normalisation does (raw offsets make the model badly conditioned)
    bags = bags.with_descriptors(bags.descriptors - bags.descriptors.mean(axis=0))
    return Problem.build(bags.descriptors, bags.means(), np.eye(c)[y], lambda1, lambda2)


@pytest.mark.parametrize("shape", [(1, 3), (7, 5), (300, 40)])
def test_newton_projection_equals_the_sort_reference(shape):
    rng = np.random.default_rng(shape[0])
    V = rng.normal(scale=2.0, size=shape)
    V[0, 0] = V[-1, 0]                                  # a tie
    P, tau = project_columns_newton(V)
    np.testing.assert_allclose(P, project_columns(V), atol=1e-12)
    np.testing.assert_allclose(P.sum(axis=0), 1.0, atol=1e-12)
    # tau is the threshold: the positive entries are v - tau
    np.testing.assert_allclose(P[P > 0], (V - tau)[P > 0], atol=1e-12)


@pytest.mark.parametrize("k", [1, 2, 4, 9])
def test_topk_projection_equals_the_sparse_simplex_reference(k):
    rng = np.random.default_rng(k)
    V = rng.normal(size=(60, 12))
    np.testing.assert_allclose(project_columns_topk(V, k), project_columns_sparse(V, k), atol=1e-12)


@pytest.mark.parametrize("max_support", [None, 3])
def test_dense_fit_is_monotone_feasible_and_reports_its_J(max_support):
    pb = clustered_problem()
    opts = FitOptions(n_prototypes=16, max_support=max_support, random_state=0, backend="dense", max_iter=300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)   # the plain simplex converges slowly (module doc)
        res = fit_prolfa(pb, opts)
    h = np.asarray(res.objective_history)
    assert h[-1] < h[1] < h[0]
    assert np.all(np.diff(h) <= 1e-12 * abs(h[0])), "J rose"
    C = res.selection.toarray()
    assert C.min() >= 0 and np.allclose(C.sum(axis=0), 1.0, atol=1e-9)
    if max_support is not None:
        assert res.converged and (C > 0).sum(axis=0).max() <= max_support
    # the J it reports is the model's J at the C and W it returns (the sparse solver's objective function)
    assert objective(pb, res.selection, res.projection) == pytest.approx(h[-1], rel=1e-10)
    np.testing.assert_allclose(res.prototypes, pb.X.T @ C, atol=1e-10)


def test_dense_and_sparse_backends_share_the_start_and_the_model():
    """Same one-hot start (same J_0), and each ends at a point the other's objective agrees with."""
    pb = clustered_problem(seed=1)
    runs = {b: fit_prolfa(pb, FitOptions(n_prototypes=16, random_state=3, backend=b, tol=1e-4))
            for b in ("sparse", "dense")}
    assert runs["dense"].objective_history[0] == pytest.approx(runs["sparse"].objective_history[0], rel=1e-12)
    for res in runs.values():
        assert objective(pb, res.selection, res.projection) == pytest.approx(res.objective_history[-1], rel=1e-9)


@pytest.mark.slow  # two full solves to convergence (~20 s); the dense solver's steps are tested above
def test_dense_exact_model_reaches_the_sparse_solvers_minimum():
    """The paper's plain simplex, run long: two different algorithms end at the same J (to 0.5 %)."""
    pb = clustered_problem()
    runs = {b: fit_prolfa(pb, FitOptions(n_prototypes=16, max_support=None, random_state=0, backend=b, tol=1e-6,
                                            max_iter=6000)) for b in ("sparse", "dense")}
    assert all(r.converged for r in runs.values())
    J = {b: r.objective_history[-1] for b, r in runs.items()}
    assert J["dense"] == pytest.approx(J["sparse"], rel=5e-3)
    assert J["dense"] < 0.01 * runs["dense"].objective_history[0]


def test_cupy_backend_without_cupy_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)
    with pytest.raises(ImportError, match=r"lfabench\[gpu\]"):
        array_namespace("cupy")


def test_dense_backend_refuses_a_problem_too_large_for_memory(monkeypatch):
    monkeypatch.setattr(dense, "DENSE_BYTES_LIMIT", 1000)
    with pytest.raises(MemoryError, match="n_prototypes=16.*backend='auto'"):
        fit_prolfa(clustered_problem(), FitOptions(n_prototypes=16, random_state=0, backend="dense"))


def test_unknown_backend_is_rejected_by_name():
    with pytest.raises(ValueError, match="backend must be one of"):
        FitOptions(backend="tpu")
