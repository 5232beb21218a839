"""Record ProLFA's fitted ``selection_`` and J history on fixed problems, to check that a change keeps the floats.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/prolfa_reference.py OUT.npz

The problems (:data:`CASES`): the authors' demo data ``moon.mat`` with the demo's settings, seeds 0-2, for both
models (the paper's plain simplex, ``max_support=None``; the capped model, ``max_support=4``), and the embedded
default ``lfabench run`` (digits, 3x3 patches, the ``prolfa`` defaults, the ``knn`` evaluator's seed-0 80/20
split). Per case the file holds ``selection_`` in CSC form (``data``, ``indices``, ``indptr``, ``shape``),
``objective_history_`` and ``projection_``, as float64 bit patterns.

``tests/plugins/aggregators/prolfa/data/prolfa_reference.npz`` was written by this script from the code of the
commit that added that file (its parent's solvers), before the solver surface was reduced to two paths;
``tests/plugins/aggregators/prolfa/test_prolfa_reference.py`` fits the same cases with the current code and
asserts equality, bit for bit.
"""

from __future__ import annotations

import sys
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from prolfa_tiny import DEMO, digits_split, moon  # noqa: E402

from lfabench_plugins.aggregators.prolfa.plugin import ProLFA  # noqa: E402


def _deprecated(**option) -> dict:
    """The demo's settings with a deprecated solver option (the routes kept, with a warning, for one release)."""
    return dict(DEMO, solver=replace(DEMO["solver"], **option))


#: case name -> (problem, constructor keywords). The digits case is the default run's aggregator (seed 0).
CASES = {
    **{f"moon_plain_s{s}": ("moon", dict(DEMO, random_state=s)) for s in (0, 1, 2)},
    **{f"moon_capped_s{s}": ("moon", dict(DEMO, max_support=4, random_state=s)) for s in (0, 1, 2)},
    "digits_default_s0": ("digits", dict(random_state=0)),
    # deprecated routes, which still run (with a FutureWarning) for one release: their floats are kept too
    "moon_plain_cbcd_s0": ("moon", dict(_deprecated(backend="sparse"), random_state=0)),
    "moon_capped_no_face_step_s0": ("moon", dict(_deprecated(face_step=False), max_support=4, random_state=0)),
    "moon_capped_cancelling_s0": ("moon", dict(_deprecated(init="cancelling"), max_support=4, random_state=0)),
    "moon_capped_dense_s0": ("moon", dict(_deprecated(backend="dense"), max_support=4, random_state=0)),
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
