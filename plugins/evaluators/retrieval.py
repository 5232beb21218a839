"""``retrieval``: mean average precision of database rankings (Oxford5k and Holidays protocols), on FAISS.

The aggregator is fitted on the database (every ranked sample; semi-supervised
aggregators see ``labelled_fraction`` of each class labelled, rounded up (the paper's search rule), drawn by
:func:`lfabench.splits.labelled_subset` from the seed, the rest ``-1``; with the opt-in
``labelled_unit="class"`` (``+evaluator.params.labelled_unit=class``) ``labelled_fraction`` of the classes
instead, every image of each labelled (:func:`lfabench.splits.labelled_classes`);
unsupervised aggregators ignore the labels). Each query's vector ranks the
whole database by exact FAISS distances
(:func:`lfabench.evaluation.ranking_key_blocks`, a block of queries at a time; ties go to the lower
sample index), known by counts rather than a sort: the place of each positive and junk image and the
first few images (:func:`lfabench.evaluation.query_places`, equal to the full stable sort's ranking);
the ranking is scored with the dataset's :class:`~lfabench.dataset.RetrievalGroundTruth`:

* **Oxford Buildings** (Philbin et al., CVPR 2007): positives = good + ok, junk
  skipped (neither counted nor advancing the rank), AP by the trapezoid rule of
  the official ``compute_ap.cpp`` (:func:`lfabench.evaluation.average_precision`).
  ``query_region="bbox"`` (default, the classic protocol) aggregates each query
  from the descriptors whose keypoint ``(x, y)`` lies in its bounding box
  ``x1 <= x <= x2, y1 <= y <= y2`` (keypoints and boxes in the same pixel frame),
  while the database keeps the full image; ``"full"`` uses the whole query
  image. The variant used is recorded (``split.query_region``).
* **INRIA Holidays** (Jegou et al., ECCV 2008): positives = the rest of the
  query's group; the query is removed from its own ranking
  (``exclude_query_from_ranking``).
* **Revisited Oxford and Paris** (Radenović et al., CVPR 2018), for ground truth
  with ``difficulty`` (easy / hard lists): besides ``mAP`` and ``precision@k`` of
  the Medium setup (positives easy + hard, junk skipped), ``mAP_<setup>`` and
  ``mP@<k>_<setup>`` for the Easy, Medium and Hard setups
  (:mod:`lfabench.evaluation.revisited`: the authors' mP@k).

Large databases (opt-in parameters, ``+evaluator.params.search=auto``): ``search="full"`` (default)
ranks the whole database as above; ``auto`` / ``exact`` / ``ivfpq`` score each query's top-``shortlist``
list from :func:`lfabench.evaluation.large_search`, exact (streamed flat indexes) when the database's
float32 vectors fit ``memory_budget_gb`` and IVF-PQ beyond, the choice and the approximate index's
recall@k against exact search recorded under ``split.search``; positives past the shortlist count as
never found.

Searchers (:class:`lfabench.sdk.Searcher`, e.g. ``asmk``: no vector per image): the run indexes the database
with the searcher; :meth:`Retrieval.evaluate_search` takes each query's row of ``searcher.search`` (``(n_db,)``
similarities, higher first), negated, as its ranking key, and scores it with the code above (places, ties to
the lower database index, junk, query removal, samples without descriptors, predictions); ``search="full"``
only (``split.ranked_by = "searcher"``).

Metrics (percent): ``mAP`` and ``precision@k`` (fraction of positives among the
first k non-junk results) for each k of ``precision_at``; the per-query AP is
recorded under ``split.per_query_ap`` (sample id -> AP in [0, 1]).
"""

from __future__ import annotations

import numpy as np

from lfabench.evaluation import (query_places, ranked_list_from_places, ranking_key_blocks, ranking_prefix,
                                 retrieval_predictions, revisited_metrics, revisited_scores, scores_from_places)
from lfabench.evaluation.largescale import IVFPQ_MIN_DATABASE, LARGE_METRICS, ChunkedDatabase, large_search
from lfabench.evaluation.search import METRICS

from lfabench.sdk import (Bags, Dataset, Evaluator, PluginSpec, RetrievalGroundTruth, Split, default_params, hookimpl,
                          labelled_classes, labelled_subset)

from .boxes import check_query_boxes

QUERY_REGIONS = ("bbox", "full")
#: ``full``: every database image ranked (exact, all distances); the others: top-``shortlist`` lists from
#: :func:`lfabench.evaluation.large_search` (``auto``: exact within ``memory_budget_gb``, IVF-PQ beyond).
SEARCHES = ("full", "auto", "exact", "ivfpq")
LARGE_PARAMS = ("search", "shortlist", "memory_budget_gb")
LABELLED_UNITS = ("sample", "class")
#: Parameters a run sets only by ``+evaluator.params.NAME=...``: not in the defaults, so earlier runs keep
#: their setting keys.
OPT_IN_PARAMS = LARGE_PARAMS + ("labelled_unit", "clip_boxes")


class Retrieval(Evaluator):
    """Retrieval mAP and precision@k (percent) of whole-database rankings."""

    task = "retrieval"
    label_params = ("labelled_fraction", "labelled_unit")  # unsupervised aggregators never see the labels
    primary_metric = "mAP"  # precision@k are shown beside it, not ranked

    def __init__(self, metric: str = "euclidean", p: float | None = None, covariance: str = "auto",
                 query_region: str = "bbox", precision_at: int | list[int] | tuple[int, ...] = (1, 5, 10),
                 labelled_fraction: float = 0.2,
                 search: str = "full", shortlist: int = 1000, memory_budget_gb: float = 4.0,
                 labelled_unit: str = "sample", clip_boxes: bool = False):
        if metric not in METRICS:
            raise ValueError(f"retrieval: metric must be one of {METRICS}, got {metric!r}")
        if query_region not in QUERY_REGIONS:
            raise ValueError(f"retrieval: query_region must be one of {QUERY_REGIONS}, got {query_region!r}")
        ks = [precision_at] if isinstance(precision_at, (int, np.integer)) else list(precision_at or [])
        if any(int(k) < 1 for k in ks):
            raise ValueError(f"retrieval: precision_at must hold integers >= 1, got {precision_at}")
        if not 0.0 < float(labelled_fraction) <= 1.0:
            raise ValueError(f"retrieval: labelled_fraction must be in (0, 1], got {labelled_fraction}")
        self.metric = metric
        self.p = None if p is None else float(p)
        self.covariance = covariance
        self.query_region = query_region
        self.precision_at = precision_at  # as given: scikit-learn's clone needs the parameter unchanged
        self.labelled_fraction = float(labelled_fraction)
        if labelled_unit not in LABELLED_UNITS:
            raise ValueError(f"retrieval: labelled_unit must be one of {LABELLED_UNITS}, got {labelled_unit!r}")
        self.labelled_unit = labelled_unit
        if search not in SEARCHES:
            raise ValueError(f"retrieval: search must be one of {SEARCHES}, got {search!r}")
        if search != "full" and metric not in LARGE_METRICS:
            raise ValueError(f"retrieval: search={search!r} supports metrics {LARGE_METRICS}, got {metric!r}")
        if int(shortlist) < 1 or not float(memory_budget_gb) > 0:
            raise ValueError(f"retrieval: shortlist must be >= 1 and memory_budget_gb > 0, got {shortlist}, "
                             f"{memory_budget_gb}")
        self.search, self.shortlist, self.memory_budget_gb = search, int(shortlist), float(memory_budget_gb)
        self.clip_boxes = clip_boxes

    @property
    def _ks(self) -> list[int]:
        """The ranks of ``precision_at`` as a list of ints (it may be given as one int)."""
        k = self.precision_at
        return [int(k)] if isinstance(k, (int, np.integer)) else [int(v) for v in (k or [])]

    def check_setting(self, dataset: Dataset, seed: int) -> None:
        """Refuse, before any descriptor is extracted, ground truth that cannot be scored and ``search=ivfpq`` on a
        database smaller than an IVF-PQ index trains on."""
        self.check_dataset(dataset)
        self._check_ground_truth(dataset)
        if self._cropped_queries(dataset).size:
            check_query_boxes(dataset, clip=bool(self.clip_boxes))
        n_db = self._database(dataset).size
        if self.search == "ivfpq" and n_db < IVFPQ_MIN_DATABASE:
            raise ValueError(f"search=ivfpq needs a database of at least {IVFPQ_MIN_DATABASE} images to train its "
                             f"index, {dataset.name!r} has {n_db}: use search=exact (`+evaluator.params.search=exact`)")

    # ------------------------------------------------------------------ split
    @staticmethod
    def _database(dataset: Dataset) -> np.ndarray:
        gt = dataset.ground_truth
        db = np.arange(dataset.n_samples) if gt.database is None else np.asarray(gt.database, dtype=np.int64)
        return db

    def _check_ground_truth(self, dataset: Dataset) -> RetrievalGroundTruth:
        gt = dataset.ground_truth
        m = dataset.n_samples
        for q, (query, pos, junk) in enumerate(zip(gt.queries, gt.positives, gt.junk)):
            bad = [int(i) for i in np.concatenate([[query], pos, junk]) if not 0 <= i < m]
            if bad:
                raise ValueError(f"retrieval: dataset {dataset.name!r}, query {q}: sample index {bad[0]} out of "
                                 f"range for {m} samples")
            where = f"retrieval: dataset {dataset.name!r}, query {q} ({dataset.sample_ids[query]!r})"
            if pos.size == 0:
                raise ValueError(f"{where} has no positives")
            for what, items in (("positives", pos), ("junk", junk)):
                values, counts = np.unique(items, return_counts=True)
                if (counts > 1).any():
                    raise ValueError(f"{where}: {what} list sample {dataset.sample_ids[int(values[counts > 1][0])]!r} "
                                     f"twice")
            both = np.intersect1d(pos, junk)
            if both.size:
                raise ValueError(f"{where}: sample {dataset.sample_ids[int(both[0])]!r} is both a positive and junk")
            if gt.exclude_query_from_ranking and query in pos:
                raise ValueError(f"{where} is among its own positives, but the protocol removes the query from its "
                                 f"ranking: it could never be found")
        if gt.bboxes is not None and len(gt.bboxes) != gt.queries.size:
            raise ValueError(f"retrieval: dataset {dataset.name!r} has {len(gt.bboxes)} query boxes for "
                             f"{gt.queries.size} queries")
        return gt

    def _cropped_queries(self, dataset: Dataset) -> np.ndarray:
        """Query numbers whose vector comes from the descriptors inside their box (``bbox`` variant)."""
        gt = dataset.ground_truth
        if self.query_region != "bbox" or gt.bboxes is None:
            return np.empty(0, dtype=np.int64)
        return np.asarray([q for q, box in enumerate(gt.bboxes) if box is not None], dtype=np.int64)

    def split(self, dataset: Dataset, seed: int) -> Split:
        self.check_dataset(dataset)
        gt = self._check_ground_truth(dataset)
        db = self._database(dataset)
        cropped = self._cropped_queries(dataset)
        region = ("bbox" if cropped.size == gt.queries.size else f"bbox for {cropped.size} of {gt.queries.size} "
                  f"queries, full image for the rest") if cropped.size else "full"
        info = {"n_database": int(db.size), "n_queries": int(gt.queries.size), "metric": self.metric,
                "query_region": region, "query_removed_from_ranking": bool(gt.exclude_query_from_ranking),
                "precision_at": self._ks, "n_boxed_queries": int(cropped.size),
                "n_junk": int(sum(len(j) for j in gt.junk))}
        if self.metric == "minkowski":
            info["p"] = self.p
        if self.clip_boxes and cropped.size:  # opt-in: only such runs record the count
            info["query_boxes_clipped"] = check_query_boxes(dataset, clip=True)
        fit_labels = None
        if dataset.labels is not None:
            labels = np.asarray(dataset.labels)[db]
            classed = np.flatnonzero(labels >= 0)              # negative labels: no class (e.g. distractors)
            fit_labels = np.full(db.size, -1, dtype=np.int64)
            if classed.size:
                draw = labelled_classes if self.labelled_unit == "class" else labelled_subset
                keep = draw(labels[classed], self.labelled_fraction, seed)
                fit_labels[classed[keep]] = labels[classed[keep]]
            info.update(labelled_fraction=self.labelled_fraction, n_labelled=int((fit_labels >= 0).sum()))
            if self.labelled_unit != "sample":  # the default's records keep their split info unchanged
                info["labelled_unit"] = self.labelled_unit
        return Split(fit_indices=db, fit_labels=fit_labels, train_indices=db, test_indices=gt.queries.copy(),
                     seed=seed, info=info)

    # ------------------------------------------------------------ query region
    def prepare_bags(self, bags: Bags, dataset: Dataset, split: Split) -> Bags:
        """The dataset's bags followed by one cropped bag per boxed query (``bbox`` variant), else unchanged."""
        cropped = self._cropped_queries(dataset)
        if not cropped.size:
            return bags
        fields = list(bags.keypoint_fields or ())
        if bags.keypoints is None or "x" not in fields or "y" not in fields:
            raise ValueError(f"retrieval: query_region=bbox needs keypoints with x and y, but the descriptors of "
                             f"{dataset.name!r} carry {fields or 'no keypoints'}; use "
                             f"evaluator.params.query_region=full")
        gt = dataset.ground_truth
        xy = bags.keypoints[:, [fields.index("x"), fields.index("y")]]
        parts, kept, total = [], 0, 0
        for q in cropped:
            i = int(gt.queries[q])
            lo, hi = bags.offsets[i], bags.offsets[i + 1]
            x1, y1, x2, y2 = (float(v) for v in gt.bboxes[q])
            inside = ((xy[lo:hi, 0] >= x1) & (xy[lo:hi, 0] <= x2) & (xy[lo:hi, 1] >= y1) & (xy[lo:hi, 1] <= y2))
            rows = np.arange(lo, hi)[inside]
            parts.append((bags.descriptors[rows], bags.keypoints[rows]))
            kept, total = kept + rows.size, total + (hi - lo)
        crops = Bags.from_list([d for d, _ in parts], keypoints=[k for _, k in parts],
                               ids=[f"{bags.ids[int(gt.queries[q])]}#bbox" for q in cropped], dtype=bags.dtype)
        crops = Bags(crops.descriptors, crops.offsets, keypoints=crops.keypoints, ids=crops.ids,
                     keypoint_fields=bags.keypoint_fields, validate=False)
        split.info["query_descriptors_in_boxes"] = {"kept": int(kept), "of": int(total)}
        return Bags.concatenate([bags, crops])

    def _query_rows(self, dataset: Dataset, n_rows: int) -> np.ndarray:
        gt = dataset.ground_truth
        cropped = self._cropped_queries(dataset)
        expected = dataset.n_samples + cropped.size
        if n_rows != expected:
            raise ValueError(f"retrieval: expected {expected} feature rows ({dataset.n_samples} samples + "
                             f"{cropped.size} query crops from prepare_bags), got {n_rows}")
        rows = gt.queries.copy()
        rows[cropped] = dataset.n_samples + np.arange(cropped.size)
        return rows

    # ------------------------------------------------------- large databases
    def _shortlists(self, features: np.ndarray, db: np.ndarray, rows: np.ndarray, empty: np.ndarray,
                    split: Split, seed: int) -> np.ndarray:
        """``(t, k)`` database rows of each query's top-``shortlist`` (``-1`` pads), by :func:`large_search`.

        Exact (streamed flat indexes) when the database's float32 vectors fit ``memory_budget_gb``, IVF-PQ
        beyond (``search=auto``; ``exact``/``ivfpq`` force one); the choice, its reason and, for IVF-PQ, the
        recall@k against exact search go to ``split.info["search"]``. Database rows without descriptors are
        left out of the search and appended after each list (last, as in the full ranking); positives past
        the shortlist are never found (they cost AP).
        """
        keep = np.flatnonzero(~empty[db])
        k = int(min(self.shortlist + 1, keep.size))          # one more: the query may be removed from its list
        chunk = 65536
        database = ChunkedDatabase(int(keep.size), int(features.shape[1]), chunk,
                                   lambda i: features[db[keep[i * chunk:(i + 1) * chunk]]])
        _, I, info = large_search(database, features[rows], k, self.metric,
                                  method="auto" if self.search == "auto" else self.search,
                                  memory_budget_bytes=self.memory_budget_gb * 2**30, seed=seed)
        split.info["search"] = dict(info, shortlist=self.shortlist)
        lists = np.where(I >= 0, keep[np.maximum(I, 0)], -1)
        # as in the full ranking, samples without descriptors come last (in index order), never in the search
        last = np.broadcast_to(np.flatnonzero(empty[db]), (lists.shape[0], int(empty[db].sum())))
        return np.hstack([lists, last])

    # --------------------------------------------------------------- evaluate
    def evaluate(self, features: np.ndarray, dataset: Dataset, split: Split) -> dict[str, float]:
        db = self._database(dataset)
        rows = self._query_rows(dataset, features.shape[0])
        empty = split.empty_mask(features.shape[0])
        full = self.search == "full"
        if full:  # one block of distance rows at a time: never the whole (queries, database) matrix
            blocks = ranking_key_blocks(_rows(features, db), features[rows], self.metric, self.p, self.covariance)
        else:
            blocks = [self._shortlists(features, db, rows, empty, split, seed=split.seed)]
        return self._score(blocks, full, dataset, split, db, rows, empty)

    # ---------------------------------------------------------------- searchers
    scores_searchers = True

    def searcher_problem(self) -> str | None:
        """None for ``search="full"``: a searcher's score rows rank the whole database as distance rows do;
        the large-database searches shortlist vectors with FAISS, which a searcher does not give."""
        if self.search != "full":
            return (f"search={self.search!r} shortlists vectors with FAISS, and a searcher ranks the whole database "
                    f"itself: drop +evaluator.params.search (search=full)")
        return None

    def database_rows(self, dataset: Dataset, split: Split, n_rows: int) -> np.ndarray:
        """The database's samples, in database order: the columns of a searcher's scores (``n_rows``: the
        dataset's samples followed by the query crops of :meth:`prepare_bags`)."""
        self._query_rows(dataset, n_rows)  # checks n_rows
        return self._database(dataset)

    def evaluate_search(self, searcher, bags: Bags, dataset: Dataset, split: Split) -> dict[str, float]:
        """:meth:`evaluate` for a searcher holding the database indexed (:meth:`database_rows` of ``bags``): each
        query's row of ``searcher.search`` (higher: more similar), negated, is its ranking key; the same places,
        tie rule, junk, query removal, empty-sample rules, metrics and predictions as for vectors."""
        problem = self.searcher_problem()
        if problem is not None:
            raise ValueError(f"retrieval: cannot score a searcher: {problem}")
        db = self._database(dataset)
        rows = self._query_rows(dataset, bags.n_samples)
        empty = split.empty_mask(bags.n_samples)
        indexed = getattr(searcher, "n_indexed_", None)
        if indexed != db.size:
            raise ValueError(f"retrieval: the searcher has {indexed} database samples indexed, the database of "
                             f"{dataset.name!r} has {db.size}")
        split.info["ranked_by"] = "searcher"
        return self._score(_search_key_blocks(searcher, bags, rows), True, dataset, split, db, rows, empty)

    # ------------------------------------------------------------------ scoring
    def _score(self, blocks, full: bool, dataset: Dataset, split: Split, db: np.ndarray, rows: np.ndarray,
               empty: np.ndarray) -> dict[str, float]:
        """The metrics of each query's ranking; ``blocks`` yield one row per query, in query order: its
        ``(n_db,)`` float32 keys (``full``: smaller first, ties to the lower database row) or its shortlist of
        database rows. Sets ``split.predictions`` and the per-query results of ``split.info``."""
        gt = dataset.ground_truth
        row_of = _database_rows(db, dataset)
        last = np.flatnonzero(empty[db]) if full else None  # database rows without descriptors: ranked last
        ks, k_max = self._ks, max(self._ks, default=0)
        aps, precisions = [], {k: [] for k in ks}
        heads, pos_places, junk_places = [], [], []  # what the record's predictions keep of each ranking
        for q, row in enumerate(row for block in blocks for row in block):
            if empty[rows[q]]:  # a query without descriptors has nothing to search with: scored 0
                aps.append(0.0)
                heads.append(np.empty(0, dtype=np.int64))
                pos_places.append(np.full(len(gt.positives[q]), -1))
                junk_places.append(np.full(len(gt.junk[q]), -1))
                for k in ks:
                    precisions[k].append(0.0)
                continue
            query_row = int(row_of[gt.queries[q]]) if gt.exclude_query_from_ranking else -1
            # the k_max-th non-junk item lies within the first k_max + len(junk) places
            n_head = k_max + len(gt.junk[q])
            if full:  # row: the query's distances to the database; places counted, not sorted
                wanted = row_of[np.concatenate([np.asarray(gt.positives[q], dtype=np.int64),
                                                np.asarray(gt.junk[q], dtype=np.int64)])]
                at = np.full(wanted.size, -1, dtype=np.int64)
                at[wanted >= 0], head_rows = query_places(row, wanted[wanted >= 0], n_head, query_row, last)
                pos_places.append(at[:len(gt.positives[q])])
                junk_places.append(at[len(gt.positives[q]):])
            else:  # row: the query's shortlist of database rows
                ranked = _ranked_rows(row, query_row)
                # the place of every database row in this ranking (the inverse permutation; -1: not ranked)
                place = np.full(db.size, -1, dtype=np.int64)
                place[ranked] = np.arange(ranked.size)
                pos_places.append(_places(place, row_of, gt.positives[q]))
                junk_places.append(_places(place, row_of, gt.junk[q]))
                head_rows = ranked[:n_head]
            heads.append(ranking_prefix(db[head_rows], gt.junk[q], k_max))
            ap, at_k = scores_from_places(gt.positives[q], pos_places[q], gt.junk[q], junk_places[q], ks)
            aps.append(ap)
            for k, value in zip(ks, at_k):
                precisions[k].append(value)
        split.predictions = retrieval_predictions(gt.queries, heads, gt.positives, pos_places, gt.junk, junk_places,
                                                  empty[rows], ks, difficulty=gt.difficulty)
        split.info["per_query_ap"] = {str(dataset.sample_ids[i]): float(ap) for i, ap in zip(gt.queries, aps)}
        split.info["empty_samples"] = {"database_ranked_last": int(empty[db].sum()),
                                       "queries_scored_zero": int(empty[rows].sum())}
        metrics = {"mAP": float(100.0 * np.mean(aps))}
        metrics.update({f"precision@{k}": float(100.0 * np.mean(v)) for k, v in precisions.items()})
        if gt.difficulty is not None:
            rankings = [np.empty(0, np.int64) if empty[rows[q]] else
                        ranked_list_from_places(heads[q], gt.positives[q], pos_places[q], gt.junk[q], junk_places[q])
                        for q in range(gt.queries.size)]
            metrics.update(_revisited_metrics(rankings, gt, ks, split))
        return metrics


def _search_key_blocks(searcher, bags: Bags, rows: np.ndarray, chunk: int = 256):
    """The ranking keys of a searcher's scores: ``(<= chunk, n_db)`` float32 blocks in query order, each row the
    negated similarities of the query of ``rows`` (its row of ``bags``) to the indexed database."""
    for start in range(0, rows.size, chunk):
        scores = np.asarray(searcher.search(bags.subset(rows[start:start + chunk])), dtype=np.float32)
        yield -scores


def _database_rows(db: np.ndarray, dataset: Dataset) -> np.ndarray:
    """``(n_samples,)``: each sample's row in the database ``db`` (-1 for samples outside it).

    A ranking lists each database image once, so a database naming a sample twice is refused here, once,
    instead of checking every ranking for duplicates."""
    row_of = np.full(dataset.n_samples, -1, dtype=np.int64)
    row_of[db] = np.arange(db.size)
    if np.count_nonzero(row_of >= 0) != db.size:
        values, counts = np.unique(db, return_counts=True)
        raise ValueError(f"retrieval: dataset {dataset.name!r} lists database sample "
                         f"{dataset.sample_ids[int(values[counts > 1][0])]!r} more than once")
    return row_of


def _rows(features: np.ndarray, db: np.ndarray) -> np.ndarray:
    """``features[db]``, as a view (no copy of the database) where ``db`` is a run of consecutive rows."""
    if db.size and int(db[-1]) - int(db[0]) == db.size - 1 and np.all(np.diff(db) == 1):
        return features[int(db[0]):int(db[-1]) + 1]
    return features[db]


def _ranked_rows(order: np.ndarray, query_row: int) -> np.ndarray:
    """One query's ranking as database rows, best first, from its shortlist ``order`` (``-1``: padding; images
    without descriptors are last in it already). ``query_row`` >= 0: the query's own row, removed (Holidays
    protocol)."""
    keep = order >= 0
    if query_row >= 0:
        keep &= order != query_row
    return order[keep]


def _places(place: np.ndarray, row_of: np.ndarray, ids) -> np.ndarray:
    """The places (``place`` of their database rows) of sample ``ids``; -1 where not ranked or not in the database."""
    r = row_of[np.asarray(ids, dtype=np.int64)]
    return np.where(r >= 0, place[np.maximum(r, 0)], -1).astype(np.int64)


def _revisited_metrics(rankings, gt: RetrievalGroundTruth, ks, split: Split) -> dict[str, float]:
    """Easy / Medium / Hard ``mAP_<setup>`` and ``mP@<k>_<setup>`` (percent) of the Revisited protocol.

    ``rankings``: each query's ranking as rebuilt from its stored places
    (:func:`lfabench.evaluation.ranked_list_from_places`, as ``lfabench verify`` does; every id a setup reads
    is a positive or a junk id, so the scores equal those of the whole ranking). A query without descriptors
    has an empty ranking (AP and P@k 0); a query without positives in a setup is left out of that setup's
    means (:func:`lfabench.evaluation.revisited_scores`).
    """
    scores = revisited_scores(rankings, gt.difficulty["easy"], gt.difficulty["hard"], gt.junk, ks)
    split.info["revisited_queries_scored"] = {setup: s["n_queries"] for setup, s in scores.items()}
    return revisited_metrics(scores)


@hookimpl
def lfabench_evaluators():
    # the large-database and labelled-unit parameters are opt-in (+evaluator.params.search=auto): every earlier
    # retrieval run keeps its setting key
    return [PluginSpec("retrieval", Retrieval, defaults=default_params(Retrieval, opt_in=OPT_IN_PARAMS),
                       description=
                       "Retrieval mAP / precision@k of whole-database FAISS rankings (Oxford5k junk + query "
                       "boxes, Holidays query removal, Revisited Easy/Medium/Hard), exact or IVF-PQ at a million; "
                       "a query's AP is the area under its precision-recall curve by the trapezoid rule of "
                       "Oxford's compute_ap, as Oxford5k and Holidays score it (not the mean of the precisions at "
                       "its positives)")]
