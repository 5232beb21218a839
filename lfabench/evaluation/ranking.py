"""Retrieval metrics on ranked lists: average precision (Oxford ``compute_ap.cpp``), mAP, precision@k.

Pure functions of a ranking and its ground truth, free of I/O, small enough to
check by hand. Ids may be any hashable values of one kind (ints, strings).

The Oxford Buildings protocol (Philbin et al., CVPR 2007; the official
``compute_ap.cpp`` distributed with the dataset):

* positives are the ``good`` and ``ok`` images, junk the ``junk`` images;
* junk images are skipped: they are neither counted nor advance the rank;
* AP is the area under the precision-recall curve by the trapezoid rule, with
  the curve starting at (recall 0, precision 1)::

      ap = sum_j (recall_j - recall_{j-1}) * (precision_{j-1} + precision_j) / 2

  over the non-junk ranks ``j = 0, 1, ...``; ``recall_j`` = positives found in
  the first ``j + 1`` non-junk results / number of positives, ``precision_j`` =
  the same count / ``(j + 1)``. Only ranks holding a positive contribute.
  Positives never ranked keep recall below 1 (they cost AP, as in the C++).

The C++ accumulates in single precision; these functions use double precision
(differences are at the 1e-7 level).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["average_precision", "mean_average_precision", "precision_at_k", "ranking_prefix",
           "retrieval_metrics_from_rankings"]


def _kept_relevance(ranked_ids, positive_ids, junk_ids) -> tuple[np.ndarray, int]:
    """``(rel, n_pos)``: 0/1 relevance of the non-junk ranked items, in rank order, and the positive count."""
    ranked = np.asarray(ranked_ids)
    if ranked.ndim != 1:
        raise ValueError(f"ranked_ids must be a 1-D sequence of ids, got shape {ranked.shape}")
    positives = np.unique(np.asarray(positive_ids))
    if positives.size == 0:
        raise ValueError("average precision needs at least one positive id (the query has no positives)")
    junk = np.unique(np.asarray(junk_ids))
    if ranked.size and np.unique(ranked).size != ranked.size:
        values, counts = np.unique(ranked, return_counts=True)
        raise ValueError(f"ranked_ids holds duplicates (e.g. {values[counts > 1][0]!r}): a ranking lists each "
                         f"database item once")
    kept = ranked[~np.isin(ranked, junk)] if junk.size else ranked
    return np.isin(kept, positives), int(positives.size)


def average_precision(ranked_ids: Sequence, positive_ids: Sequence, junk_ids: Sequence = ()) -> float:
    """Average precision of one ranked list, exactly as Oxford's ``compute_ap.cpp`` (see module doc).

    Parameters
    ----------
    ranked_ids : (n,) sequence
        Database ids, best match first, each at most once.
    positive_ids : sequence
        The relevant ids (Oxford: good + ok). Duplicates count once.
    junk_ids : sequence, optional
        Ids skipped wherever they rank (neither counted nor advancing the rank).

    Returns
    -------
    float in [0, 1].

    Examples
    --------
    >>> average_precision([1, 2, 3], positive_ids=[1, 3])   # (1+1)/2 * 1/2 + (1/2+2/3)/2 * 1/2
    0.7916666666666666
    >>> average_precision(["a", "j", "b"], ["a", "b"], junk_ids=["j"])
    1.0
    """
    rel, n_pos = _kept_relevance(ranked_ids, positive_ids, junk_ids)
    if not rel.any():
        return 0.0
    hits = np.cumsum(rel)                                   # positives found in the first j+1 kept items
    ranks = np.arange(1, rel.size + 1, dtype=np.float64)    # j + 1
    at = np.flatnonzero(rel)                                # only ranks that raise recall contribute
    precision = hits[at] / ranks[at]
    precision_before = (hits[at] - 1) / np.where(at > 0, ranks[at] - 1, 1.0)
    precision_before[at == 0] = 1.0                         # the curve starts at precision 1
    return float(np.sum((precision_before + precision) / 2.0) / n_pos)


def mean_average_precision(ranked_lists: Sequence[Sequence], positive_lists: Sequence[Sequence],
                           junk_lists: Sequence[Sequence] | None = None) -> float:
    """Mean of :func:`average_precision` over queries (one ranked list, positive list, junk list per query)."""
    if len(ranked_lists) != len(positive_lists):
        raise ValueError(f"{len(ranked_lists)} ranked lists but {len(positive_lists)} positive lists")
    if junk_lists is None:
        junk_lists = [()] * len(ranked_lists)
    if len(junk_lists) != len(ranked_lists):
        raise ValueError(f"{len(ranked_lists)} ranked lists but {len(junk_lists)} junk lists")
    if not len(ranked_lists):
        raise ValueError("mean_average_precision needs at least one query")
    aps = []
    for q, (ranked, pos, junk) in enumerate(zip(ranked_lists, positive_lists, junk_lists)):
        try:
            aps.append(average_precision(ranked, pos, junk))
        except ValueError as exc:
            raise ValueError(f"query {q}: {exc}") from exc
    return float(np.mean(aps))


def precision_at_k(ranked_ids: Sequence, positive_ids: Sequence, k: int, junk_ids: Sequence = ()) -> float:
    """Fraction of positives among the first ``k`` non-junk results (junk skipped as in the AP).

    The denominator is always ``k`` (a list shorter than ``k`` after removing junk
    counts its missing places as misses).
    """
    k = int(k)
    if k < 1:
        raise ValueError(f"precision@k needs k >= 1, got {k}")
    rel, _ = _kept_relevance(ranked_ids, positive_ids, junk_ids)
    return float(np.count_nonzero(rel[:k]) / k)


def ranking_prefix(ranked_ids: Sequence, positive_ids: Sequence, junk_ids: Sequence = (), k_max: int = 0) -> np.ndarray:
    """The shortest head of ``ranked_ids`` from which every metric here gives the full list's value.

    It ends at the last positive (AP: later items change no precision at a positive) or at the
    ``k_max``-th non-junk item (precision@k for k <= ``k_max``), whichever comes later. A run stores
    this head for each query (``predictions.npz``) instead of the whole database order.
    """
    ranked = np.asarray(ranked_ids)
    if ranked.ndim != 1:
        raise ValueError(f"ranked_ids must be a 1-D sequence of ids, got shape {ranked.shape}")
    is_pos = np.isin(ranked, np.asarray(positive_ids))
    end = int(np.flatnonzero(is_pos)[-1]) + 1 if is_pos.any() else 0
    if k_max > 0:
        kept = np.flatnonzero(~np.isin(ranked, np.asarray(junk_ids))) if len(junk_ids) else np.arange(ranked.size)
        end = max(end, int(kept[k_max - 1]) + 1 if kept.size >= k_max else ranked.size)
    return ranked[:end]


def retrieval_metrics_from_rankings(rankings: Sequence[Sequence], positive_lists: Sequence[Sequence],
                                    junk_lists: Sequence[Sequence], scored_zero: Sequence[bool],
                                    precision_at: Sequence[int] = ()) -> dict[str, float]:
    """The ``retrieval`` evaluator's metrics (percent) recomputed from its stored rankings.

    One ranked list (:func:`ranking_prefix` of the database order, the query itself removed where the
    protocol removes it), positive list and junk list per query; ``scored_zero`` marks queries scored 0
    (no descriptors). Returns ``{"mAP": ..., "precision@k": ...}``, the evaluator's names and arithmetic
    (mean over queries of :func:`average_precision` / :func:`precision_at_k`, times 100).
    """
    n = len(rankings)
    if not n or len(positive_lists) != n or len(junk_lists) != n or len(scored_zero) != n:
        raise ValueError(f"one ranking, positive list, junk list and scored_zero flag per query: got {n}, "
                         f"{len(positive_lists)}, {len(junk_lists)}, {len(scored_zero)}")
    aps, precisions = [], {int(k): [] for k in precision_at}
    for ranked, pos, junk, zero in zip(rankings, positive_lists, junk_lists, scored_zero):
        aps.append(0.0 if zero else average_precision(ranked, pos, junk))
        for k in precisions:
            precisions[k].append(0.0 if zero else precision_at_k(ranked, pos, k, junk))
    metrics = {"mAP": float(100.0 * np.mean(aps))}
    metrics.update({f"precision@{k}": float(100.0 * np.mean(v)) for k, v in precisions.items()})
    return metrics
