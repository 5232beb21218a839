"""The fixed ProLFA problems whose fitted floats ``data/prolfa_reference.npz`` records, and how they are fitted.

The problems (:data:`CASES`): the authors' demo data ``moon.mat`` with the demo's settings, seeds 0-2, for both
models (the paper's plain simplex, ``max_support=None``; the capped model, ``max_support=4``), the embedded
default ``lfabench run`` (digits, 3x3 patches, the ``prolfa`` defaults, the ``knn`` evaluator's seed-0 80/20
split). Per case the file holds ``selection_`` in CSC form
(``data``, ``indices``, ``indptr``, ``shape``), ``objective_history_`` and ``projection_``, as float64 bit
patterns. The file was written by :func:`main` from the code before the solver surface was reduced to two
paths; ``test_prolfa_reference.py`` fits the same cases with the current code and asserts equality, bit for bit.

    OMP_NUM_THREADS=1 .venv/bin/python tests/plugins/aggregators/prolfa/reference_cases.py OUT.npz
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

from lfabench import Bags
from lfabench.registry import get_plugin
from lfabench_plugins.aggregators.prolfa import SolverOptions
from lfabench_plugins.aggregators.prolfa.plugin import ProLFA

#: The authors' demo settings (d̄ = 2, lambda1 = 2, lambda2 = 0.5, no normalisation, mu = 0.1, 20 ADMM iterations).
DEMO = dict(n_prototypes=2, lambda1=2.0, lambda2=0.5, normalize="none", max_support=None,
            solver=SolverOptions(mu=0.1, max_iter_admm=20, spectral_norm="svd"))


def shared_data() -> Path | None:
    """``$LFABENCH_SHARED_DATA``, else ``../shared/data`` beside the repository, or None."""
    import os

    repo = Path(__file__).resolve().parents[4]
    for cand in (os.environ.get("LFABENCH_SHARED_DATA"), repo.parent / "shared" / "data"):
        if cand and Path(cand).is_dir():
            return Path(cand)
    return None


def moon():
    """``(bags, labels)`` of the demo: 10 samples of 20 two-dimensional descriptors, two classes."""
    import scipy.io

    X = scipy.io.loadmat(shared_data() / "prolfa_demo" / "moon.mat")["X"].T     # (200, 2)
    return Bags(X, np.arange(0, 201, 20)), np.repeat([0, 1], 5)


def digits_split(seed: int = 0):
    """``(train bags, train labels, test bags, test labels)`` exactly as the default ``lfabench run`` builds them."""
    dataset = get_plugin("dataset", "digits")()
    bags = get_plugin("descriptor", "patches")().describe(dataset, cache=False)
    split = get_plugin("evaluator", "knn")().split(dataset, seed)
    return (bags.subset(split.fit_indices), split.fit_labels, bags.subset(split.test_indices),
            np.asarray(dataset.labels)[split.test_indices])


#: case name -> (problem, constructor keywords). The digits case is the default run's aggregator (seed 0).
#: The capped cases run ADMM on every outer iteration (``admm_patience=None``), as every fit did when the file was
#: recorded: the floats of Algorithm 2 as written; every case takes sigma_max(W) from W's own SVD
#: (``spectral_norm="svd"``), as every fit did then. The default's skipping rule and norm are tested on their own
#: (``test_prolfa_solver.py``).
EVERY_ITERATION = SolverOptions(admm_patience=None, spectral_norm="svd")
CASES = {
    **{f"moon_plain_s{s}": ("moon", dict(DEMO, random_state=s)) for s in (0, 1, 2)},
    **{f"moon_capped_s{s}": ("moon", dict(DEMO, max_support=4, random_state=s,
                                          solver=SolverOptions(mu=0.1, max_iter_admm=20, admm_patience=None,
                                                                spectral_norm="svd")))
       for s in (0, 1, 2)},
    "digits_default_s0": ("digits", dict(random_state=0, solver=EVERY_ITERATION)),
}


def problems() -> dict:
    train, ytr, _, _ = digits_split(0)
    return {"moon": moon(), "digits": (train, ytr)}


def fit_case(name: str, data: dict) -> ProLFA:
    problem, params = CASES[name]
    bags, y = data[problem]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ProLFA(**params).fit(bags, y)


def arrays(est: ProLFA) -> dict:
    C = est.selection_.tocsc()
    C.sort_indices()
    return {"data": C.data, "indices": C.indices.astype(np.int64), "indptr": C.indptr.astype(np.int64),
            "shape": np.asarray(C.shape, dtype=np.int64), "history": np.asarray(est.objective_history_),
            "projection": np.asarray(est.projection_)}


def main(out: str) -> None:
    data = problems()
    record = {}
    for name in CASES:
        for key, value in arrays(fit_case(name, data)).items():
            record[f"{name}/{key}"] = value
        print(name, f"J={record[name + '/history'][-1]!r}", f"iterations={record[name + '/history'].size - 1}")
    np.savez_compressed(out, **record)


if __name__ == "__main__":
    main(sys.argv[1])
