"""The solver surface: ``SolverOptions`` (one validated object, the ``solver`` parameter), ``FitOptions`` (what a
solver reads), keyword-only model parameters, and the deprecated names that still work for one release."""

from __future__ import annotations

import inspect
import re
import warnings
from dataclasses import fields

import numpy as np
import pytest
from sklearn.base import clone

from lfabench_plugins.aggregators.prolfa import FitOptions, SolverOptions, solver_options
from lfabench_plugins.aggregators.prolfa.options import DEPRECATED
from lfabench_plugins.aggregators.prolfa.plugin import ProLFA, SemiProLFA


def test_the_model_parameters_are_keyword_only_and_the_rest_is_one_solver_object():
    sig = inspect.signature(ProLFA)
    named = [p for p in sig.parameters.values() if p.kind != p.VAR_KEYWORD]
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
                                 dict(search_every=0), dict(extrapolate=0.5), dict(step="newton"),
                                 dict(n_candidates=1.5), dict(gap_tol=0), dict(max_iter=True)])
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


def test_every_default_option_is_silent_and_each_deprecated_one_warns_naming_its_replacement():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SolverOptions().warn_deprecated()
        FitOptions(backend="auto", init="one_hot", face_step=True, extrapolate=8.0).warn_deprecated()
    for name, value in (("backend", "dense"), ("init", "cancelling"), ("face_step", False), ("extrapolate", 2.0)):
        with pytest.warns(FutureWarning, match=re.escape(f"{name}={value!r} is deprecated") + ".*" + re.escape(DEPRECATED[name])):
            SolverOptions(**{name: value}).warn_deprecated()


@pytest.mark.parametrize("cls", [ProLFA, SemiProLFA])
def test_the_solver_options_of_earlier_releases_still_work_as_keywords_with_a_future_warning(cls):
    """Records of earlier releases hold the solver options as flat parameters (``mu``, ``face_step``...): they
    still build the same estimator, with one :class:`FutureWarning` naming them and ``solver``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = cls(n_prototypes=5, mu=3.0, search_every=2)
    assert [str(w.message) for w in caught if issubclass(w.category, FutureWarning)] == [
        f"{cls.__name__}(mu=3.0, search_every=2): solver options as keywords are deprecated and will be removed in "
        "the next release; pass solver=SolverOptions(mu=3.0, search_every=2) (command line: "
        "aggregator.params.solver.<option>)"]
    assert solver_options(est.solver) == SolverOptions(mu=3.0, search_every=2)
    assert est._check_params() == FitOptions(n_prototypes=5, mu=3.0, search_every=2)
    twin = clone(est)                                               # the flat options survive a clone
    assert solver_options(twin.solver) == SolverOptions(mu=3.0, search_every=2)
    with pytest.raises(TypeError, match="'lamda1'"):
        cls(lamda1=0.5)


def test_the_option_fields_are_the_documented_ones():
    """Every field of the options is documented in the class docstring (the config shows each of them)."""
    doc = SolverOptions.__doc__
    for f in fields(SolverOptions):
        assert f"    {f.name} :" in doc or f"{f.name}," in doc or f", {f.name} :" in doc, f.name


def test_rng_is_reproducible_from_a_seed_or_a_legacy_random_state():
    assert FitOptions(random_state=3).rng().integers(1 << 30) == FitOptions(random_state=3).rng().integers(1 << 30)
    FitOptions(random_state=np.random.RandomState(0)).rng()


def test_prototypes_of_float32_descriptors_equal_the_float64_product():
    import scipy.sparse as sp

    from lfabench_plugins.aggregators.prolfa import Problem

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 7)).astype(np.float32)
    C = sp.random(300, 9, density=0.05, random_state=0, format="csc")
    pb = Problem.build(X, rng.normal(size=(4, 7)), np.eye(4), 0.1, 1.0)
    np.testing.assert_allclose(pb.prototypes(C), X.astype(np.float64).T @ C.toarray(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["prolfa", "semi_prolfa"])
def test_the_generated_config_lists_every_parameter_and_every_solver_option(name):
    """What ``lfabench run --cfg job aggregator=prolfa`` prints: every constructor parameter, and under ``solver``
    every option with its default (nothing kept out of the config)."""
    from lfabench.cli.run import plugin_config
    from lfabench.registry import get_registry

    spec = get_registry().get_spec("aggregator", name)
    params = plugin_config(spec)["params"]
    named = [p for p, v in inspect.signature(spec.factory).parameters.items() if v.kind != v.VAR_KEYWORD]
    assert list(params) == named
    assert params["solver"] == {f.name: getattr(SolverOptions(), f.name) for f in fields(SolverOptions)}
    assert params["random_state"] == "${seed}"
    # the config builds the default estimator: the same options, read from the mapping
    est = spec.factory(**{**params, "random_state": 0})
    assert solver_options(est.solver) == SolverOptions()
