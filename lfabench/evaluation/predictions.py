"""A protocol's predictions as arrays (what ``predictions.npz`` beside a record holds), and every metric
recomputed from them.

An evaluator puts its predictions in ``Split.predictions`` (``lfabench.evaluate``): a dict of arrays whose
``kind`` (a 0-d string array) names the layout. Two layouts, one per kind of protocol:

``labels`` (:func:`label_predictions`)
    any classifier's predicted labels: ``train_indices (n,)`` (the samples it was trained on),
    ``test_indices (t,)`` (dataset sample indices: the split), ``predicted (t,)``, ``true (t,)`` (labels),
    ``counted_wrong (t,)`` bool (test samples scored as wrong whatever was predicted, e.g. those without
    descriptors). ``accuracy`` recomputes from it. The ``knn`` evaluator writes it, and so can any
    classification protocol (a logistic regression, an SVM). Records written before the layout had this
    name say ``knn``: the same arrays, read alike.
``retrieval`` (:func:`retrieval_predictions`)
    ``query_indices (q,)``; per query, flattened with ``(q + 1,)`` offsets: ``ranking`` /
    ``ranking_offsets`` (the head of the query's ranking that precision@k reads, database sample indices,
    best first: :func:`~lfabench.evaluation.ranking.ranking_prefix`), ``positives`` / ``positive_offsets``
    with ``positive_ranks`` (each positive's 0-based place in the whole ranking, -1 if not ranked:
    :func:`~lfabench.evaluation.ranking.ranks_of`), ``junk`` / ``junk_offsets`` with ``junk_ranks``;
    ``scored_zero (q,)`` bool; ``precision_at (m,)``. The places give the AP in a database of any size
    without storing whole rankings. For the Revisited Oxford/Paris ground truth (easy / hard lists) also
    ``positive_difficulty`` (aligned with ``positives``, uint8 bits: 1 easy, 2 hard), from which the
    Easy / Medium / Hard ``mAP_<setup>`` and ``mP@<k>_<setup>`` recompute
    (:mod:`lfabench.evaluation.revisited`; every id those setups read is a positive or a junk id, whose
    places are stored).

:func:`recompute_metrics` turns either back into the metrics the evaluator reported, with the functions
next to the metrics (:func:`~lfabench.evaluation.knn.accuracy_from_predictions`,
:func:`~lfabench.evaluation.ranking.retrieval_metrics_from_rankings`); :func:`predictions_fingerprint`
hashes them independently of how they were stored.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

import numpy as np

from .knn import accuracy_from_predictions
from .ranking import ranked_list_from_places, retrieval_metrics_from_rankings
from .revisited import revisited_metrics, revisited_scores

__all__ = ["KINDS", "label_predictions", "knn_predictions", "retrieval_predictions", "recompute_metrics",
           "predictions_fingerprint", "per_unit_scores"]

#: The layouts :func:`recompute_metrics` reads, with the arrays each must hold.
KINDS = {
    "labels": ("train_indices", "test_indices", "predicted", "true", "counted_wrong"),
    "knn": ("train_indices", "test_indices", "predicted", "true", "counted_wrong"),  # the labels layout's first name
    "retrieval": ("query_indices", "ranking", "ranking_offsets", "positives", "positive_offsets", "positive_ranks",
                  "junk", "junk_offsets", "junk_ranks", "scored_zero", "precision_at"),
}
#: Bits of ``positive_difficulty`` (the Revisited annotation of each positive).
EASY, HARD = 1, 2


def _labels(y) -> np.ndarray:
    y = np.asarray(y)
    return y.astype(str) if y.dtype == object else y  # stored without pickle


#: Layouts that kept another name in the fingerprint: ``labels`` was first written as ``knn``, and hashing it under
#: that name gives equal predictions one fingerprint whichever name their file carries (a rerun of an older record
#: compares equal; an older record's stored fingerprint stays valid).
FINGERPRINT_NAMES = {"labels": "knn"}


def label_predictions(train_indices, test_indices, predicted, true, counted_wrong=None) -> dict[str, np.ndarray]:
    """The ``labels`` layout (module docstring): any classifier's predicted labels of the test samples.

    ``counted_wrong`` (default: none) marks test samples scored as wrong whatever their prediction."""
    test_indices = np.asarray(test_indices, dtype=np.int64)
    if counted_wrong is None:
        counted_wrong = np.zeros(test_indices.shape[0], dtype=bool)
    lengths = {len(np.atleast_1d(a)) for a in (test_indices, predicted, true, counted_wrong)}
    if len(lengths) != 1:
        raise ValueError("label predictions: test_indices, predicted, true and counted_wrong must have one entry per "
                         f"test sample, got lengths {sorted(lengths)}")
    return {"kind": np.array("labels"), "train_indices": np.asarray(train_indices, dtype=np.int64),
            "test_indices": np.asarray(test_indices, dtype=np.int64), "predicted": _labels(predicted),
            "true": _labels(true), "counted_wrong": np.asarray(counted_wrong, dtype=bool)}


#: The ``labels`` layout under the name it had when k-NN was its only writer.
knn_predictions = label_predictions


def _flat(lists: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(v) for v in lists])
    flat = np.concatenate([np.asarray(v, dtype=np.int64) for v in lists]) if lists else np.empty(0, np.int64)
    return flat.astype(np.int64, copy=False), offsets


def _split(flat: np.ndarray, offsets: np.ndarray) -> list[np.ndarray]:
    return [flat[offsets[i]:offsets[i + 1]] for i in range(offsets.size - 1)]


def retrieval_predictions(query_indices, heads, positive_lists, positive_ranks, junk_lists, junk_ranks,
                          scored_zero, precision_at, difficulty=None) -> dict[str, np.ndarray]:
    """The ``retrieval`` layout (module docstring): per query the head of its ranking, the positive and junk ids
    and their places in the ranking; with ``difficulty`` (``{"easy": [...], "hard": [...]}``, one id list per
    query, each id among the query's positives) the easy/hard bits of each positive."""
    out = {"kind": np.array("retrieval"), "query_indices": np.asarray(query_indices, dtype=np.int64),
           "scored_zero": np.asarray(scored_zero, dtype=bool),
           "precision_at": np.asarray(list(precision_at), dtype=np.int64)}
    for name, lists in (("ranking", heads), ("positive", positive_lists), ("junk", junk_lists)):
        flat, offsets = _flat(lists)
        out["positives" if name == "positive" else name] = flat
        out[f"{name}_offsets"] = offsets
    out["positive_ranks"], _ = _flat(positive_ranks)
    out["junk_ranks"], _ = _flat(junk_ranks)
    if difficulty is not None:
        out["positive_difficulty"] = _difficulty_bits(positive_lists, difficulty["easy"], difficulty["hard"])
    return out


def _difficulty_bits(positive_lists, easy_lists, hard_lists) -> np.ndarray:
    """``(P,)`` uint8 aligned with the flattened positives: :data:`EASY` | :data:`HARD` bits."""
    bits = []
    for q, (pos, easy, hard) in enumerate(zip(positive_lists, easy_lists, hard_lists, strict=True)):
        pos, easy, hard = (np.asarray(v, dtype=np.int64) for v in (pos, easy, hard))
        stray = np.setdiff1d(np.concatenate([easy, hard]), pos)
        if stray.size:
            raise ValueError(f"query {q}: easy/hard id {int(stray[0])} is not among the query's positives")
        bits.append(np.isin(pos, easy) * EASY + np.isin(pos, hard) * HARD)
    return np.concatenate(bits).astype(np.uint8) if bits else np.empty(0, np.uint8)


def _kind(arrays: Mapping[str, np.ndarray]) -> str:
    if "kind" not in arrays:
        raise ValueError("predictions have no 'kind' array")
    kind = str(np.asarray(arrays["kind"]))
    if kind not in KINDS:
        raise ValueError(f"predictions of unknown kind {kind!r} (known: {', '.join(KINDS)})")
    missing = [a for a in KINDS[kind] if a not in arrays]
    if missing:
        raise ValueError(f"{kind} predictions lack the array(s) {', '.join(missing)}")
    return kind


def recompute_metrics(arrays: Mapping[str, np.ndarray]) -> dict[str, float]:
    """Every metric the evaluator reported, recomputed from its predictions (a ValueError for bad arrays)."""
    kind = _kind(arrays)
    if kind in ("labels", "knn"):
        return {"accuracy": accuracy_from_predictions(arrays["predicted"], arrays["true"], arrays["counted_wrong"])}
    for name, offsets in (("ranking", "ranking_offsets"), ("positives", "positive_offsets"), ("junk", "junk_offsets")):
        off = np.asarray(arrays[offsets])
        if (off.ndim != 1 or off.size != arrays["query_indices"].size + 1 or off[0] != 0
                or off[-1] != arrays[name].size or np.any(np.diff(off) < 0)):
            raise ValueError(f"retrieval predictions: {offsets} do not partition {name}")
    for ids, places in (("positives", "positive_ranks"), ("junk", "junk_ranks")):
        if arrays[places].shape != arrays[ids].shape:
            raise ValueError(f"retrieval predictions: {places} has shape {arrays[places].shape}, {ids} "
                             f"{arrays[ids].shape}")
    lists = {name: _split(arrays[name], arrays[offsets]) for name, offsets in
             (("ranking", "ranking_offsets"), ("positives", "positive_offsets"),
              ("positive_ranks", "positive_offsets"), ("junk", "junk_offsets"), ("junk_ranks", "junk_offsets"))}
    ks = [int(k) for k in arrays["precision_at"]]
    metrics = retrieval_metrics_from_rankings(lists["ranking"], lists["positives"], lists["positive_ranks"],
                                              lists["junk"], lists["junk_ranks"], arrays["scored_zero"], ks)
    if "positive_difficulty" in arrays:
        metrics.update(_revisited_from_places(arrays, lists, ks))
    return metrics


def _revisited_from_places(arrays: Mapping[str, np.ndarray], lists: dict, ks: list[int]) -> dict[str, float]:
    """Easy / Medium / Hard metrics of the Revisited protocol from the stored places: each query's ranked list is
    rebuilt (:func:`~lfabench.evaluation.ranking.ranked_list_from_places`; a query scored zero has none) and the
    easy / hard ids are its positives by their bits, scored by the evaluator's own
    :func:`~lfabench.evaluation.revisited.revisited_scores`."""
    bits = np.asarray(arrays["positive_difficulty"])
    if bits.shape != arrays["positives"].shape:
        raise ValueError(f"retrieval predictions: positive_difficulty has shape {bits.shape}, positives "
                         f"{arrays['positives'].shape}")
    bits = _split(bits, arrays["positive_offsets"])
    rankings, easy, hard = [], [], []
    for q, zero in enumerate(arrays["scored_zero"]):
        pos = lists["positives"][q]
        rankings.append(np.empty(0, np.int64) if zero else ranked_list_from_places(
            lists["ranking"][q], pos, lists["positive_ranks"][q], lists["junk"][q], lists["junk_ranks"][q]))
        easy.append(pos[(bits[q] & EASY) != 0])
        hard.append(pos[(bits[q] & HARD) != 0])
    return revisited_metrics(revisited_scores(rankings, easy, hard, lists["junk"], ks))


def predictions_fingerprint(arrays: Mapping[str, np.ndarray]) -> str:
    """sha256 over the arrays' names, dtypes, shapes and bytes, in name order (not the file's bytes:
    a compressed file also stores its write time). A value with ``dtype``, ``shape`` and ``blocks()``
    (its C-order array as consecutive row blocks) is hashed block by block, as the array it stands for."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = arrays[name]
        if name == "kind" and str(np.asarray(a)) in FINGERPRINT_NAMES:
            a = np.array(FINGERPRINT_NAMES[str(np.asarray(a))])
        if not hasattr(a, "blocks"):
            a = np.ascontiguousarray(a)
        h.update(f"{name}:{a.dtype.str}{a.shape}".encode())
        if hasattr(a, "blocks"):
            for block in a.blocks():  # C-contiguous numeric blocks, hashed in place: the bytes tobytes() gives
                h.update(block)
        else:
            h.update(a.tobytes())
    return h.hexdigest()


def per_unit_scores(arrays: Mapping[str, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """``(unit ids, {metric: per-unit score})``: what each test sample or query contributed to the metrics, in
    the metric's units, so that each metric is the mean of its per-unit scores.

    ``labels`` (``knn``): the test samples' dataset indices and ``accuracy`` 100 (right) or 0 (wrong, or counted wrong);
    ``retrieval``: the queries' indices, ``mAP`` 100 x the query's AP and ``precision@k`` 100 x its precision
    (:func:`~lfabench.evaluation.ranking.per_query_scores_from_places`). Revisited setups are not split per unit.
    """
    from .ranking import per_query_scores_from_places

    kind = _kind(arrays)
    if kind in ("labels", "knn"):
        right = (np.asarray(arrays["predicted"]) == np.asarray(arrays["true"])) & ~np.asarray(arrays["counted_wrong"])
        return np.asarray(arrays["test_indices"], dtype=np.int64), {"accuracy": 100.0 * right}
    ks = [int(k) for k in arrays["precision_at"]]
    ap, at_k = per_query_scores_from_places(arrays["positives"], arrays["positive_offsets"], arrays["positive_ranks"],
                                            arrays["junk"], arrays["junk_offsets"], arrays["junk_ranks"],
                                            arrays["scored_zero"], ks)
    scores = {"mAP": 100.0 * ap, **{f"precision@{k}": 100.0 * v for k, v in at_k.items()}}
    return np.asarray(arrays["query_indices"], dtype=np.int64), scores
