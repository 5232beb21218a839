"""SolverOptions: one validated object, built from the plugin's hyper-parameters."""

from __future__ import annotations

import numpy as np
import pytest

from lfabench_plugins.aggregators.prolfa import SolverOptions
from lfabench_plugins.aggregators.prolfa.plugin import ProLFA


def test_from_params_takes_the_solver_fields_and_ignores_model_ones():
    est = ProLFA(n_prototypes=7, mu=3.0, max_support=None, search_every=2, random_state=5)
    opts = SolverOptions.from_params(est.get_params())
    assert (opts.n_prototypes, opts.mu, opts.max_support, opts.search_every, opts.random_state) == (7, 3.0, None, 2, 5)
    assert not hasattr(opts, "lambda1")


@pytest.mark.parametrize("bad", [dict(n_prototypes=0), dict(mu=0), dict(eps=-1), dict(tol=0), dict(max_iter=0),
                                 dict(max_iter_admm=0), dict(search_every=0), dict(max_support=0),
                                 dict(extrapolate=0.5), dict(step="newton"), dict(n_candidates=1.5)])
def test_invalid_options_raise(bad):
    with pytest.raises(ValueError):
        SolverOptions(**bad)


def test_rng_is_reproducible_from_a_seed_or_a_legacy_random_state():
    assert SolverOptions(random_state=3).rng().integers(1 << 30) == SolverOptions(random_state=3).rng().integers(1 << 30)
    SolverOptions(random_state=np.random.RandomState(0)).rng()


def test_prototypes_of_float32_descriptors_equal_the_float64_product():
    import scipy.sparse as sp

    from lfabench_plugins.aggregators.prolfa import Problem

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 7)).astype(np.float32)
    C = sp.random(300, 9, density=0.05, random_state=0, format="csc")
    pb = Problem.build(X, rng.normal(size=(4, 7)), np.eye(4), 0.1, 1.0)
    np.testing.assert_allclose(pb.prototypes(C), X.astype(np.float64).T @ C.toarray(), rtol=1e-12, atol=1e-12)
