"""The evaluator contract: a protocol that splits a dataset and scores aggregated features."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .dataset import Dataset
from .estimator import Estimator
from .splits import labelled_classes, labelled_subset, partial_labels, stratified_split

__all__ = ["Evaluator", "Split", "METRIC_DIRECTIONS", "higher_is_better", "labelled_classes", "labelled_subset",
           "partial_labels", "stratified_split"]


@dataclass
class Split:
    """What the aggregator is fitted on, and how the protocol scores the result.

    ``fit_indices`` are the samples passed to ``aggregator.fit``; ``fit_labels``
    their labels (``-1`` = unlabelled) or ``None`` for purely unsupervised
    protocols. ``train_indices``/``test_indices`` are the protocol's own
    partition (e.g. the 80/20 k-NN split); ``info`` is recorded in the run.

    ``empty_rows`` (set by the conductor before ``evaluate``) is a ``(n,)`` bool mask over the rows
    of the features being scored: True where the sample had no local descriptor at all. Such a row
    is the aggregators' zero vector, which carries no evidence; protocols must not let it act as a
    neighbour: after L2 normalisation every other vector is at distance ~sqrt(2) from the next and at
    distance 1 from zero, so a few empty samples become the nearest neighbour of nearly every query.

    ``predictions`` (set by ``Evaluator.evaluate``, optional): what the protocol predicted, as the arrays
    of one layout of :mod:`lfabench.evaluation.predictions` (``kind`` plus its arrays), from which
    :func:`lfabench.evaluation.recompute_metrics` gives back every metric ``evaluate`` returned. The
    conductor stores them beside the record (``predictions.npz``); an evaluator that leaves it None
    still works, and its records say that no predictions are stored.
    """

    fit_indices: np.ndarray
    fit_labels: np.ndarray | None
    train_indices: np.ndarray | None = None
    test_indices: np.ndarray | None = None
    seed: int = 0
    info: dict = field(default_factory=dict)
    empty_rows: np.ndarray | None = None
    predictions: dict | None = None

    def empty_mask(self, n_rows: int) -> np.ndarray:
        """``empty_rows`` as a ``(n_rows,)`` bool mask (all False when the conductor set none)."""
        if self.empty_rows is None:
            return np.zeros(n_rows, dtype=bool)
        mask = np.asarray(self.empty_rows, dtype=bool)
        if mask.shape != (n_rows,):
            raise ValueError(f"Split.empty_rows has shape {mask.shape}, the features have {n_rows} rows")
        return mask


#: The values of :attr:`Evaluator.metric_directions`.
METRIC_DIRECTIONS = ("higher", "lower")


def higher_is_better(evaluator, metric: str) -> bool:
    """Whether a higher value of ``metric`` is better for ``evaluator`` (a class or an instance): its
    :attr:`~Evaluator.metric_directions` entry, higher when it lists none. A value other than ``"higher"`` or
    ``"lower"`` is a ValueError naming the evaluator and the metric."""
    directions = getattr(evaluator, "metric_directions", None) or {}
    direction = directions.get(metric, "higher")
    if direction not in METRIC_DIRECTIONS:
        name = getattr(evaluator, "__name__", type(evaluator).__name__)
        raise ValueError(f"evaluator {name}: metric_directions[{metric!r}] must be one of {METRIC_DIRECTIONS}, "
                         f"got {direction!r}")
    return direction == "higher"


class Evaluator(Estimator):
    """Base class for evaluation protocols.

    Hyper-parameters are ``__init__`` arguments stored under the same names (scikit-learn's
    ``get_params``/``set_params``, the parameter convention of every plugin kind).
    """

    #: The dataset task this protocol scores.
    task: str = "classification"
    #: Parameters that only decide which labels the aggregator is given (e.g. ``labelled_fraction``):
    #: an aggregator that never reads labels ignores them, and the run record says so
    #: (``ignored_params``) so the leaderboard does not split one method's rows on them.
    label_params: tuple[str, ...] = ()
    #: The metric that ranks methods across tasks (the leaderboard's mean rank and Friedman test): one per
    #: protocol, so a protocol reporting several metrics counts once; the others are shown, not ranked.
    primary_metric: str | None = None
    #: Metrics that are a percentage of a count, ``{metric: field}``: the metric is ``100 * count / n`` with
    #: ``n`` the split info's ``field`` (the record's ``split``), so the leaderboard recovers the count and
    #: compares exact ratios (two methods with equal counts tie, whatever the float rounding of their means).
    count_metrics: dict[str, str] = {}
    #: Which way each metric is better, ``{metric: "higher" | "lower"}``; a metric not listed is higher-is-better
    #: (accuracy, mAP). A lower-is-better metric (an error rate, a mean rank) is ranked lowest-first on boards and
    #: in ``lfabench compare``, and the conformance kit expects oracle features to score at most what noise does.
    metric_directions: dict[str, str] = {}
    #: The range ``(low, high)`` (bounds included) of each metric that is not a percentage: a value outside it,
    #: or a non-finite one, fails the run (:func:`lfabench.checks.check_metrics`), never recorded as ok.
    metric_ranges: dict[str, tuple[float, float]] = {}
    #: The range of every metric not in ``metric_ranges``: percentages; None allows any finite value.
    default_metric_range: tuple[float, float] | None = (0.0, 100.0)

    def check_dataset(self, dataset: Dataset) -> None:
        if dataset.task != self.task:
            raise ValueError(f"evaluator {type(self).__name__} scores {self.task} datasets, but "
                             f"{dataset.name!r} is a {dataset.task} dataset")

    def split(self, dataset: Dataset, seed: int) -> Split:
        """The protocol's split for this seed (identical for every method)."""
        raise NotImplementedError

    def prepare_bags(self, bags, dataset: Dataset, split: Split):
        """The bags to aggregate for scoring (default: unchanged).

        A protocol that scores some samples on part of their descriptors (e.g.
        Oxford queries restricted to their bounding box) returns modified bags here;
        the runner calls it between ``fit`` and ``transform``.
        """
        return bags

    def evaluate(self, features: np.ndarray, dataset: Dataset, split: Split) -> dict[str, float]:
        """Score ``features`` (``(m, D)``, one row per dataset sample); returns ``{metric: value}``.

        An evaluator may also set ``split.predictions`` (see :class:`Split`) so that its metrics can be
        recomputed from the record alone."""
        raise NotImplementedError

    # ---------------------------------------------------------------- searchers
    #: The protocol can score a searcher (:class:`lfabench.aggregate.Searcher`: a method that indexes a
    #: database and searches it itself): it implements :meth:`database_rows` and :meth:`evaluate_search`.
    #: False (the default): it scores one vector per image only, and a run refuses a searcher at its config stage.
    scores_searchers: bool = False

    def searcher_problem(self) -> str | None:
        """Why this protocol, as configured, cannot score a searcher; None when it can. The default: a protocol
        that does not declare :attr:`scores_searchers` scores vectors only."""
        return None if self.scores_searchers else "it scores one vector per image only"

    def database_rows(self, dataset: Dataset, split: Split, n_rows: int) -> np.ndarray:
        """``(n_db,)`` int64: the rows of the scored bags (``prepare_bags``' output, ``n_rows`` samples) that a
        searcher indexes, in the order of the columns of its scores."""
        raise NotImplementedError

    def evaluate_search(self, searcher, bags, dataset: Dataset, split: Split) -> dict[str, float]:
        """Score ``searcher``, fitted and holding the database ``bags.subset(database_rows(...))`` indexed,
        querying it with the protocol's query rows of ``bags``; the same metrics and ``split.predictions`` as
        :meth:`evaluate` gives for vectors."""
        raise NotImplementedError
