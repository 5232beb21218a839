"""The solver surface: ``SolverOptions`` (one validated object, the ``solver`` parameter), ``FitOptions`` (what a
solver reads), keyword-only model parameters, and how a config naming a removed option is read."""

from __future__ import annotations

import inspect
import json
from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest
from sklearn.base import clone

from lfabench_plugins.aggregators.prolfa import FitOptions, SolverOptions, solver_options
from lfabench_plugins.aggregators.prolfa.options import REMOVED
from lfabench_plugins.aggregators.prolfa.plugin import ProLFA, SemiProLFA


def test_the_model_parameters_are_keyword_only_and_the_rest_is_one_solver_object():
    named = list(inspect.signature(ProLFA).parameters.values())
    assert all(p.kind == p.KEYWORD_ONLY for p in named)
    assert [p.name for p in named] == ["n_prototypes", "lambda1", "lambda2", "max_support", "normalize",
                                       "feature_map", "n_components", "gamma", "feature_map_fit_size", "scale",
                                       "random_state", "solver"]
    with pytest.raises(TypeError):
        ProLFA(16)                                                  # positional: refused
    assert ProLFA().get_params()["solver"] == SolverOptions()


def test_fit_options_join_the_solver_options_and_the_model_shape():
    opts = FitOptions.of(SolverOptions(mu=3.0, search_every=2), n_prototypes=7, max_support=None, random_state=5)
    assert (opts.n_prototypes, opts.mu, opts.max_support, opts.search_every, opts.random_state) == (7, 3.0, None, 2, 5)
    est = ProLFA(n_prototypes=7, max_support=None, random_state=5, solver=SolverOptions(mu=3.0, search_every=2))
    assert est._check_params() == opts
    assert not hasattr(opts, "lambda1")


@pytest.mark.parametrize("bad", [dict(mu=0), dict(eps=-1), dict(tol=0), dict(max_iter=0), dict(max_iter_admm=0),
                                 dict(search_every=0), dict(step="newton"),
                                 dict(n_candidates=1.5), dict(gap_tol=0), dict(max_iter=True),
                                 dict(admm_patience=0), dict(admm_patience=1.5), dict(admm_patience="1"),
                                 dict(spectral_norm="lanczos"), dict(w_svd="lq")])
def test_invalid_options_raise(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        SolverOptions(**bad)


@pytest.mark.parametrize("bad", [dict(n_prototypes=0), dict(max_support=0), dict(n_prototypes=2.5)])
def test_invalid_model_shape_raises(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        FitOptions(**bad)


def test_a_mapping_is_read_as_the_options_and_an_unknown_key_is_named():
    assert solver_options({"mu": 2.0, "max_iter": 7}) == SolverOptions(mu=2.0, max_iter=7)
    assert solver_options(None) == SolverOptions()
    with pytest.raises(ValueError, match="'mu_typo'"):
        solver_options({"mu_typo": 1.0})
    with pytest.raises(ValueError, match="ProLFA: solver has no option 'mu_typo'"):
        ProLFA(solver={"mu_typo": 1.0})._check_params()
    with pytest.raises(ValueError, match="SolverOptions or a mapping"):
        solver_options("fast")


def test_get_params_set_params_and_clone_keep_the_solver_object():
    est = ProLFA(n_prototypes=5, solver=SolverOptions(mu=2.0))
    twin = clone(est)
    assert twin.get_params() == est.get_params() and twin.solver == SolverOptions(mu=2.0)
    est.set_params(solver=SolverOptions(tol=1e-6), lambda1=0.3)
    assert est.get_params()["solver"].tol == 1e-6 and est.lambda1 == 0.3


def test_the_solver_has_the_two_solvers_options_only():
    """Fifteen options, each cBCD's or pairwise Frank-Wolfe's (or both); no route, start or backend name."""
    assert [f.name for f in fields(SolverOptions)] == [
        "max_iter", "n_candidates", "search_every", "gap_tol", "tol", "mu", "eps", "max_iter_admm", "admm_tol",
        "max_iter_reweight", "reweight_tol", "step", "admm_patience", "spectral_norm", "w_svd"]
    for name in REMOVED:
        with pytest.raises(TypeError, match=name):
            SolverOptions(**{name: REMOVED[name]})
    with pytest.raises(TypeError, match="'mu'"):
        ProLFA(mu=3.0)                                              # solver options are not keywords


def test_a_config_naming_a_removed_option_at_todays_behaviour_reads_as_the_options_and_any_other_value_is_refused():
    """A record's config of an earlier release names every option, the removed ones at the values whose behaviour
    every fit has now: it builds today's options; another value of a removed option is refused by name."""
    assert solver_options({"backend": "auto", "init": "one_hot", "face_step": True, "extrapolate": 8, "mu": 2.0}) \
        == SolverOptions(mu=2.0)
    for name, value in (("backend", "dense"), ("backend", "pairwise_fw_cupy"), ("init", "cancelling"),
                        ("face_step", False), ("face_step", 1), ("extrapolate", 2.0)):
        with pytest.raises(ValueError, match=f"solver option '{name}' was removed in lfabench 0.2.0"):
            solver_options({name: value})
    with pytest.raises(ValueError, match="ProLFA: solver option 'init' was removed"):
        ProLFA(solver={"init": "cancelling"})


@pytest.mark.parametrize("board", ["scene15", "copies"])
def test_every_committed_prolfa_record_builds_todays_estimator(board):
    """The committed boards' ProLFA records (their configs name the removed options) build an estimator whose
    options are the record's own: every option the record names at its recorded value."""
    root = Path(__file__).resolve().parents[4] / "leaderboards" / board / "records"
    seen = 0
    for path in sorted(root.glob("*prolfa*/*/result.json")):
        agg = json.loads(path.read_text())["config"]["aggregator"]
        est = {"prolfa": ProLFA, "semi_prolfa": SemiProLFA}[agg["name"]](**agg["params"])
        opts = est._check_params()
        recorded = agg["params"]["solver"]
        assert {k: getattr(opts, k) for k in recorded if k not in REMOVED} == \
            {k: v for k, v in recorded.items() if k not in REMOVED}, path
        seen += 1
    assert seen > 0, f"no ProLFA record under {root}"


def test_a_committed_record_naming_the_removed_options_keeps_its_board_label():
    """The board labels a row by the parameters its setting changed from the plugin's defaults: the removed
    options, at the behaviour every fit has now, are not among them (``ProLFA.removed_params``)."""
    from lfabench import recordset as tables

    path = (Path(__file__).resolve().parents[4] / "leaderboards" / "scene15" / "records" / "scene15_sift_prolfa_knn"
            / "c47cb05b6552_s0" / "result.json")
    assert set(REMOVED) <= set(json.loads(path.read_text())["config"]["aggregator"]["params"]["solver"])
    frame = tables.records_frame([path])[0]
    assert set(tables.labelled(frame)["aggregator"]) == {"prolfa[n_prototypes=4096]"}


@pytest.mark.parametrize("norm, shown", [("basis", ""), ("svd", " solver.spectral_norm=svd,")])
def test_a_record_naming_an_equivalent_former_default_keeps_its_board_label(tmp_path, norm, shown):
    """``spectral_norm="basis"``, the default when the copies board's ProLFA records ran, computes the same fit to
    rounding as ``"auto"`` on their problems (``ProLFA.equivalent_defaults``): it labels as the default, while a value
    that is not equivalent (``"svd"``) is shown."""
    from lfabench import recordset as tables

    source = next((Path(__file__).resolve().parents[4] / "leaderboards" / "copies" / "records").glob(
        "copy_detection_daisy_prolfa_retrieval/*/result.json"))
    record = json.loads(source.read_text())
    assert record["config"]["aggregator"]["params"]["solver"]["spectral_norm"] == "basis"
    for part in (record["config"], record.get("setting") or {}):
        solver = ((part.get("aggregator") or {}).get("params") or {}).get("solver")
        if isinstance(solver, dict) and "spectral_norm" in solver:
            solver["spectral_norm"] = norm
    path = tmp_path / "run" / "result.json"
    path.parent.mkdir()
    path.write_text(json.dumps(record))
    frame = tables.records_frame([path])[0]
    labels = set(tables.labelled(frame)["aggregator"])
    assert labels == {f"prolfa[n_prototypes=2048,{shown} evaluator.query_region=full]"}
