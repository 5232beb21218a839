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

__all__ = ["average_precision", "mean_average_precision", "precision_at_k", "ranking_prefix", "ranks_of",
           "ranked_list_from_places", "scores_from_places", "retrieval_metrics_from_rankings",
           "per_query_scores_from_places"]


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


def ranking_prefix(ranked_ids: Sequence, junk_ids: Sequence = (), k_max: int = 0) -> np.ndarray:
    """The head of ``ranked_ids`` that precision@k reads for every k <= ``k_max``: up to its ``k_max``-th
    non-junk item (the whole list when it has fewer). Empty for ``k_max`` 0."""
    ranked = np.asarray(ranked_ids)
    if ranked.ndim != 1:
        raise ValueError(f"ranked_ids must be a 1-D sequence of ids, got shape {ranked.shape}")
    if k_max <= 0:
        return ranked[:0]
    kept = np.flatnonzero(~np.isin(ranked, np.asarray(junk_ids))) if len(junk_ids) else np.arange(ranked.size)
    return ranked[:int(kept[k_max - 1]) + 1] if kept.size >= k_max else ranked


def ranks_of(ranked_ids: Sequence, ids: Sequence) -> np.ndarray:
    """The 0-based place of each of ``ids`` in ``ranked_ids`` (-1 where it is not ranked), ``(len(ids),)`` int64.

    With :func:`ranking_prefix` this is what a run stores of a ranking: the places of the positives and of the
    junk give the AP wherever they lie in a database of any size, the head gives precision@k.
    """
    ranked, ids = np.asarray(ranked_ids), np.asarray(ids)
    if ids.size == 0 or ranked.size == 0:
        return np.full(ids.size, -1, dtype=np.int64)
    order = np.argsort(ranked, kind="stable")
    loc = np.minimum(np.searchsorted(ranked[order], ids), ranked.size - 1)
    return np.where(ranked[order][loc] == ids, order[loc], -1).astype(np.int64)


def _claimed_places(head: np.ndarray, positive_ids, positive_places, junk_ids, junk_places
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``(places, ids)`` of the ranked positive and junk ids (each place once), checked against each other and the
    head: a place that two ids claim is a ValueError (inconsistent predictions)."""
    ids = np.concatenate([np.asarray(positive_ids, dtype=np.int64), np.asarray(junk_ids, dtype=np.int64)])
    places = np.concatenate([np.asarray(positive_places, dtype=np.int64), np.asarray(junk_places, dtype=np.int64)])
    ids, places = ids[places >= 0], places[places >= 0]
    if places.size:  # an id listed twice (e.g. a duplicated positive) names its place twice: once is enough
        places, ids = np.unique(np.stack([places, ids]), axis=1)
    clash = [(int(p), int(i)) for p, i in zip(places, ids) if p < head.size and head[p] != i]
    if clash or np.unique(places).size != places.size:
        raise ValueError(f"inconsistent ranking: place {clash[0][0] if clash else places[0]} is claimed twice")
    return places, ids


def ranked_list_from_places(head: Sequence[int], positive_ids: Sequence[int], positive_places: Sequence[int],
                            junk_ids: Sequence[int], junk_places: Sequence[int]) -> np.ndarray:
    """A ranked list equal, for :func:`average_precision` and :func:`precision_at_k` (k within the head), to the
    one :func:`ranking_prefix` and :func:`ranks_of` were taken from: the head, then each positive and junk id at
    its place, every other place holding a distinct placeholder id (``-1, -2, ...``: neither positive nor junk).
    Ids are non-negative sample indices. A place that two ids claim is a ValueError (inconsistent predictions)."""
    head = np.asarray(head, dtype=np.int64)
    places, ids = _claimed_places(head, positive_ids, positive_places, junk_ids, junk_places)
    length = max(head.size, int(places.max()) + 1 if places.size else 0)
    out = -np.arange(1, length + 1, dtype=np.int64)
    out[:head.size] = head
    out[places] = ids
    return out


def scores_from_places(positive_ids: Sequence, positive_places: Sequence[int], junk_ids: Sequence = (),
                       junk_places: Sequence[int] = (), ks: Sequence[int] = ()) -> tuple[float, list[float]]:
    """``(AP, [precision@k for k in ks])`` of a ranking known only by the 0-based places of its positive and junk
    ids in it (-1: not ranked; :func:`ranks_of`): equal, bit for bit, to :func:`average_precision` and
    :func:`precision_at_k` on that ranking (the same float64 operations in the same order).

    Junk is skipped: a positive at place ``p`` has the kept (junk-free) rank ``p - #{junk places < p}``; an id
    that is both positive and junk is junk (never counted, as in the ranked-list functions); duplicated ids
    count once. ``O(P log P + J log J)``: the cost does not grow with the database, which is what lets the
    ``retrieval`` evaluator score a large database per query and ``lfabench verify`` recompute it from the
    stored places with this same function.
    """
    positive_ids, junk_ids = np.asarray(positive_ids), np.asarray(junk_ids)
    positive_places = np.asarray(positive_places, dtype=np.int64)
    junk_places = np.asarray(junk_places, dtype=np.int64)
    if positive_ids.shape != positive_places.shape or junk_ids.shape != junk_places.shape:
        raise ValueError(f"one place per id: {positive_ids.shape} positives with {positive_places.shape} places, "
                         f"{junk_ids.shape} junk with {junk_places.shape} places")
    n_pos = int(np.unique(positive_ids).size)
    if n_pos == 0:
        raise ValueError("average precision needs at least one positive id (the query has no positives)")
    ks = [int(k) for k in ks]
    if any(k < 1 for k in ks):
        raise ValueError(f"precision@k needs k >= 1, got {min(ks)}")
    junk_at = np.unique(junk_places[junk_places >= 0])              # sorted; a duplicated junk id: one place
    found = positive_places >= 0
    if junk_ids.size:
        found &= ~np.isin(positive_ids, junk_ids)
    at = np.unique(positive_places[found])                          # sorted places of the ranked positives
    at = at - np.searchsorted(junk_at, at)                          # their 0-based ranks with junk skipped
    precisions = [float(np.count_nonzero(at < k) / k) for k in ks]
    if not at.size:
        return 0.0, precisions
    # average_precision's arithmetic on these ranks: hits / ranks at each positive, the curve from precision 1
    hits = np.arange(1, at.size + 1, dtype=np.int64)
    ranks = at + 1.0
    precision = hits / ranks
    precision_before = (hits - 1) / np.where(at > 0, ranks - 1, 1.0)
    precision_before[at == 0] = 1.0
    return float(np.sum((precision_before + precision) / 2.0) / n_pos), precisions


def retrieval_metrics_from_rankings(heads: Sequence[Sequence], positive_lists: Sequence[Sequence],
                                    positive_places: Sequence[Sequence], junk_lists: Sequence[Sequence],
                                    junk_places: Sequence[Sequence], scored_zero: Sequence[bool],
                                    precision_at: Sequence[int] = ()) -> dict[str, float]:
    """The ``retrieval`` evaluator's metrics (percent) recomputed from what its records store of each ranking.

    Per query: the head of the ranking (:func:`ranking_prefix`), the positive and junk ids with their places
    in the ranking (:func:`ranks_of`); ``scored_zero`` marks queries scored 0 (no descriptors). Returns
    ``{"mAP": ..., "precision@k": ...}``, the evaluator's names and arithmetic (mean over queries of
    :func:`scores_from_places`, the function the evaluator scores each query with, times 100); places that
    cannot come from one ranking are a ValueError.
    """
    n = len(heads)
    if not n or any(len(v) != n for v in (positive_lists, positive_places, junk_lists, junk_places, scored_zero)):
        raise ValueError(f"one head, positive list, junk list (with places) and scored_zero flag per query: got "
                         f"{n}, {len(positive_lists)}, {len(junk_lists)}, {len(scored_zero)}")
    aps, precisions = [], {int(k): [] for k in precision_at}
    for q in range(n):
        if scored_zero[q]:
            aps.append(0.0)
            for k in precisions:
                precisions[k].append(0.0)
            continue
        _claimed_places(np.asarray(heads[q], dtype=np.int64), positive_lists[q], positive_places[q],
                        junk_lists[q], junk_places[q])              # the places must be those of one ranking
        ap, at_k = scores_from_places(positive_lists[q], positive_places[q], junk_lists[q], junk_places[q],
                                      list(precisions))
        aps.append(ap)
        for k, value in zip(precisions, at_k):
            precisions[k].append(value)
    metrics = {"mAP": float(100.0 * np.mean(aps))}
    metrics.update({f"precision@{k}": float(100.0 * np.mean(v)) for k, v in precisions.items()})
    return metrics


def per_query_scores_from_places(positives, positive_offsets, positive_places, junk, junk_offsets, junk_places,
                                 scored_zero, ks: Sequence[int] = ()) -> tuple[np.ndarray, dict[int, np.ndarray]]:
    """``(AP per query, {k: precision@k per query})`` in [0, 1] from the flattened places of the ``retrieval``
    predictions layout: :func:`scores_from_places` for every query at once (vectorised: equal to it up to the
    order of the floating-point sum), a query in ``scored_zero`` scoring 0. The mean of the APs is the mAP the
    evaluator reports (over 100)."""
    pos_off, junk_off = np.asarray(positive_offsets, np.int64), np.asarray(junk_offsets, np.int64)
    n_q = pos_off.size - 1
    q_pos = np.repeat(np.arange(n_q, dtype=np.int64), np.diff(pos_off))
    q_junk = np.repeat(np.arange(n_q, dtype=np.int64), np.diff(junk_off))
    ids, places = np.asarray(positives, np.int64), np.asarray(positive_places, np.int64)
    jids, jplaces = np.asarray(junk, np.int64), np.asarray(junk_places, np.int64)
    zero = np.asarray(scored_zero, dtype=bool)
    id_span = int(max(ids.max(initial=-1), jids.max(initial=-1))) + 2
    n_pos = np.bincount(q_pos[np.unique(q_pos * id_span + ids, return_index=True)[1]], minlength=n_q)
    if ((n_pos == 0) & ~zero).any():
        raise ValueError("average precision needs at least one positive id (a query has no positives)")
    place_span = int(max(places.max(initial=-1), jplaces.max(initial=-1))) + 2
    junk_keys = np.unique((q_junk * place_span + jplaces)[jplaces >= 0])
    found = places >= 0
    if jids.size:
        found &= ~np.isin(q_pos * id_span + ids, q_junk * id_span + jids)
    keys = np.unique(q_pos[found] * place_span + places[found])        # sorted by query, then place
    q, at = keys // place_span, keys % place_span
    at = at - (np.searchsorted(junk_keys, keys) - np.searchsorted(junk_keys, q * place_span))
    first = np.searchsorted(q, np.arange(n_q))
    hits = (np.arange(q.size) - first[q] + 1).astype(np.float64)
    ranks = at + 1.0
    precision = hits / ranks
    precision_before = np.where(at > 0, (hits - 1) / np.where(at > 0, ranks - 1, 1.0), 1.0)
    ap = np.bincount(q, weights=(precision_before + precision) / 2.0, minlength=n_q) / np.maximum(n_pos, 1)
    ap[zero] = 0.0
    at_k = {}
    for k in (int(k) for k in ks):
        if k < 1:
            raise ValueError(f"precision@k needs k >= 1, got {k}")
        at_k[k] = np.bincount(q[at < k], minlength=n_q) / k
        at_k[k][zero] = 0.0
    return ap, at_k
