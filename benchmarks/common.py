"""Shared pieces of the benchmark scripts: Fifteen Scene SIFT bags from ../shared/data/scene15, the paper's
1-NN accuracy, a seeded subset of images by descriptor count, and the CSV writer.

``scene15_sift()`` runs the ``scene15`` dataset and ``sift`` descriptor plugins (the
90 keypoints of strongest response per image; extraction is cached by the
descriptor plugin, so only the first call extracts).
"""

from __future__ import annotations

import csv
import os
from pathlib import Path

import numpy as np

from lfabench.evaluation import knn_predict
from lfabench.registry import get_plugin

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out"


def shared_data() -> Path:
    """``../shared/data`` beside the repository (or ``$LFABENCH_SHARED_DATA``)."""
    for cand in (os.environ.get("LFABENCH_SHARED_DATA"), ROOT.parent / "shared" / "data"):
        if cand and Path(cand).is_dir():
            return Path(cand)
    raise SystemExit("benchmark needs ../shared/data (set LFABENCH_SHARED_DATA)")


def scene15_sift(max_keypoints: int = 90):
    """``(bags, labels)`` for all 4,485 Fifteen Scene images, SIFT capped at ``max_keypoints`` per image."""
    root = shared_data() / "scene15"
    dataset = get_plugin("dataset", "scene15")(root=str(root))
    bags = get_plugin("descriptor", "sift")(max_keypoints=max_keypoints).describe(dataset)
    return bags, np.asarray(dataset.labels)


def one_nn_accuracy(F_train, y_train, F_test, y_test) -> float:
    """1-NN (Euclidean, the paper's classifier) accuracy in % of the test rows, the training rows as the gallery."""
    return 100.0 * float(np.mean(knn_predict(F_train, y_train, F_test, 1, metric="euclidean") == np.asarray(y_test)))


def images_holding(bags, y, n_descriptors: int, seed: int = 0):
    """``(bags, y)`` of images drawn at random (seeded) until they hold ``n_descriptors`` descriptors; with
    nested ``n_descriptors`` and one seed, the subsets are nested."""
    order = np.random.default_rng(seed).permutation(bags.n_samples)
    keep = np.sort(order[: np.searchsorted(np.cumsum(bags.counts[order]), n_descriptors) + 1])
    return bags.subset(keep), np.asarray(y)[keep]


def scene15_split(n_descriptors: int = 0, seed: int = 0):
    """``(train bags, train labels, test bags, test labels)`` of the ``knn`` evaluator's seeded 80/20 split of
    Scene-15 SIFT-90; the training images are a nested random subset holding ``n_descriptors`` (0 = all)."""
    from lfabench_plugins.evaluators.splits import stratified_split

    bags, labels = scene15_sift(90)
    tr, te = stratified_split(labels, 0.2, seed)
    train, y = bags.subset(tr), labels[tr]
    if n_descriptors:
        train, y = images_holding(train, y, n_descriptors, seed)
    return train, y, bags.subset(te), labels[te]


def write_rows(rows: list[dict], path, fieldnames=None) -> None:
    """Rewrite the CSV ``path`` with ``rows`` (called after every row, so an interrupted run keeps what it
    measured); ``fieldnames`` defaults to the first row's keys, and other keys are then ignored."""
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=fieldnames or list(rows[0]), extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def parse_param(text: str):
    """``KEY=VALUE`` of a ``--param`` option: the value as an int, a float, None (``null``) or else a string."""
    key, value = text.split("=", 1)
    for cast in (int, float):
        try:
            return key, cast(value)
        except ValueError:
            pass
    return key, None if value in ("null", "None") else value


def prolfa_params(params: dict) -> dict:
    """ProLFA keyword arguments from flat ``--param`` pairs: the solver options (``mu``, ``max_iter``, ``tol``...)
    gathered into ``solver=SolverOptions(...)`` (over any ``solver`` already given), the model's parameters as they
    are."""
    from dataclasses import fields, replace

    from lfabench_plugins.aggregators.prolfa import SolverOptions

    names = {f.name for f in fields(SolverOptions)}
    options = {k: v for k, v in params.items() if k in names}
    out = {k: v for k, v in params.items() if k not in names}
    out["solver"] = replace(out.get("solver", SolverOptions()), **options)
    return out


def selection_on_problem_rows(est, bags, y, reps=None):
    """A fitted ProLFA's ``selection_`` on the rows of its fit problem (the distinct descriptors of ``bags``):
    the form :func:`save_selection` stores and :func:`fit_from_start` reads. ``reps`` (those rows, from
    :func:`fit_problem`) saves rebuilding the problem when the caller has it."""
    if reps is None:
        _, _, reps = fit_problem(est, bags, y)
    return est.selection_.tocsr()[reps].tocsc()


def save_selection(path, C, J: float) -> None:
    """A fitted ``C`` (rows = the fit problem's distinct descriptors) and its J, for ``fit_from_start``."""
    C = C.tocsc()
    np.savez_compressed(path, rows=C.indices, indptr=C.indptr, values=C.data, shape=C.shape, J=J)


def load_selection(path):
    """``(C, J)`` as written by :func:`save_selection`."""
    import scipy.sparse as sp

    z = np.load(path)
    return sp.csc_matrix((z["values"], z["rows"], z["indptr"]), shape=tuple(z["shape"])), float(z["J"])


def fit_problem(est, bags, y):
    """The ProLFA estimator's :class:`Problem` for ``(bags, y)``, the number of its descriptors and the distinct rows
    kept."""
    Y, labelled = est._responses(bags, y)
    return est._problem(bags, Y, labelled, est._check_params())


def fit_from_start(est, bags, y, start_path):
    """``est.fit(bags, y)`` (a ProLFA), but from the ``C`` saved at ``start_path`` instead of the seeded start:
    continuation, e.g. the paper's exact model from a capped fit's solution."""
    from lfabench_plugins.aggregators.prolfa.fit import fit_prolfa
    from lfabench_plugins.aggregators.prolfa.start import selection_start

    C, J = load_selection(start_path)
    pb, n_rows, reps = fit_problem(est, bags, y)
    start = selection_start(C, pb, f"{Path(start_path).name} (J {J:.4f})")
    est.n_features_in_ = bags.dim                   # what est.fit sets before its _fit
    return est._set_fitted(fit_prolfa(pb, est._check_params(), start), bags, n_rows, reps)
