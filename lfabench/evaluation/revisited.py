"""The Revisited Oxford and Paris protocol (Radenović, Iscen, Tolias, Avrithis & Chum, CVPR 2018).

Each query of ``roxford5k`` / ``rparis6k`` lists its ``easy``, ``hard`` and ``junk`` database
images (the ``gnd_*.pkl`` of revisitop). The paper scores three setups, each turning those lists
into positives and ignored images (ignored = skipped wherever they rank, as Oxford's junk):

========  ===================  ======================
setup     positives            ignored
========  ===================  ======================
easy      easy                 junk + hard
medium    easy + hard          junk
hard      hard                 junk + easy
========  ===================  ======================

Per setup: mAP, with each query's AP by the trapezoid rule over the ranks of its positives in the
list without ignored images (:func:`lfabench.evaluation.average_precision`; positives never ranked
cost AP), and mP@k for each k. A query whose positive list is empty in a setup (e.g. no hard image)
is left out of that setup's means, so each mean is over the queries that have positives there.

**mP@k as the authors compute it.** With ``r_1 < r_2 < ...`` the 1-based ranks of the positives in
the list without ignored images and ``r_max`` the last of them, ``k' = min(k, r_max)`` and
``P@k = #{r_i <= k'} / k'``: when every positive is found before rank ``k`` the precision is counted
up to the last positive only (a query with two positives, at ranks 1 and 2, has P@10 = 1). This is
not the textbook precision@k (:func:`lfabench.evaluation.precision_at_k`, denominator ``k``).
A query with positives none of which is ranked has P@k = 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .ranking import average_precision

__all__ = ["SETUPS", "revisited_setup", "revisited_precision_at_k", "revisited_scores", "revisited_metrics"]

SETUPS = ("easy", "medium", "hard")


def revisited_setup(easy: Sequence, hard: Sequence, junk: Sequence, setup: str) -> tuple[np.ndarray, np.ndarray]:
    """``(positives, ignored)`` of one query in ``setup`` (see the module's table)."""
    easy, hard, junk = (np.asarray(v, dtype=np.int64).ravel() for v in (easy, hard, junk))
    if setup == "easy":
        return easy, np.concatenate([junk, hard])
    if setup == "medium":
        return np.concatenate([easy, hard]), junk
    if setup == "hard":
        return hard, np.concatenate([junk, easy])
    raise ValueError(f"revisited setup must be one of {SETUPS}, got {setup!r}")


def revisited_precision_at_k(ranked_ids: Sequence, positive_ids: Sequence, k: int,
                             ignored_ids: Sequence = ()) -> float:
    """The authors' P@k of one ranked list (module doc): ``#{r_i <= min(k, r_max)} / min(k, r_max)``."""
    k = int(k)
    if k < 1:
        raise ValueError(f"precision@k needs k >= 1, got {k}")
    ranked = np.asarray(ranked_ids)
    ignored = np.asarray(ignored_ids)
    kept = ranked[~np.isin(ranked, ignored)] if ignored.size else ranked
    ranks = np.flatnonzero(np.isin(kept, np.asarray(positive_ids))) + 1
    if ranks.size == 0:
        return 0.0
    top = min(k, int(ranks[-1]))
    return float(np.count_nonzero(ranks <= top) / top)


def revisited_scores(rankings: Sequence[Sequence], easy: Sequence[Sequence], hard: Sequence[Sequence],
                     junk: Sequence[Sequence], ks: Sequence[int] = (1, 5, 10)) -> dict:
    """The three setups' scores of ``rankings`` (one ranked list of database ids per query, best first).

    ``easy[q]``, ``hard[q]``, ``junk[q]``: the ids of query ``q``'s lists. Returns, per setup,
    ``{"mAP": float, "mP@k": {k: float}, "ap": (t,) array, "p@k": {k: (t,) array}, "n_queries": int}``
    with fractions in [0, 1]; per-query values are NaN where the query has no positive in the setup
    and the means are over the others (NaN when no query has one).
    """
    t = len(rankings)
    if not len(easy) == len(hard) == len(junk) == t:
        raise ValueError(f"{t} rankings but {len(easy)} easy, {len(hard)} hard and {len(junk)} junk lists")
    out = {}
    for setup in SETUPS:
        ap = np.full(t, np.nan)
        pk = {int(k): np.full(t, np.nan) for k in ks}
        for q in range(t):
            positives, ignored = revisited_setup(easy[q], hard[q], junk[q], setup)
            if positives.size == 0:
                continue
            ap[q] = average_precision(rankings[q], positives, ignored)
            for k in pk:
                pk[k][q] = revisited_precision_at_k(rankings[q], positives, k, ignored)
        scored = ~np.isnan(ap)
        mean = (lambda v: float(np.mean(v[scored]))) if scored.any() else (lambda v: float("nan"))
        out[setup] = {"mAP": mean(ap), "mP@k": {k: mean(v) for k, v in pk.items()}, "ap": ap, "p@k": pk,
                      "n_queries": int(scored.sum())}
    return out


def revisited_metrics(scores: dict) -> dict[str, float]:
    """The retrieval evaluator's names and units for :func:`revisited_scores`: ``mAP_<setup>`` and
    ``mP@<k>_<setup>`` in percent, for each setup in which some query has a positive (a setup without any,
    e.g. no hard image at all, has no score: left out rather than NaN, which no record may hold); the one
    naming the evaluator and ``lfabench verify`` share."""
    out = {}
    for setup, s in scores.items():
        if s["n_queries"] == 0:
            continue
        out[f"mAP_{setup}"] = 100.0 * s["mAP"]
        out.update({f"mP@{k}_{setup}": 100.0 * v for k, v in s["mP@k"].items()})
    return out
