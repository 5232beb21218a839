"""Which samples a fit sees: the one rule for fully supervised aggregators on partially annotated protocols.

A protocol's :class:`~lfabench.evaluate.Split` offers ``fit_indices`` with ``fit_labels`` where ``-1`` marks an
unannotated sample (retrieval annotates ``labelled_fraction`` of each class of the database, the paper's search
rule; k-NN with ``labelled_fraction < 1`` likewise). Unsupervised aggregators ignore the labels and semi-supervised
ones read ``-1`` as unlabelled, so both are fitted on every offered sample. A **fully supervised** aggregator
(``supervised`` and not ``semi_supervised``, built-in or third-party alike) is fitted on the annotated samples
only, their bags and labels, and then transforms every image as any other method does (the paper's search
protocol: "we annotated a small subset of Oxford5K"; the supervised methods learn from it).

A protocol that annotates nothing leaves a supervised method nothing to learn from: :class:`NoAnnotationError`,
a :class:`~lfabench.params.ConfigError` raised before any descriptor is extracted, naming the alternatives.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .aggregate import unlabelled_mask
from .evaluate import Split
from .params import ConfigError

#: ``fit_rule`` of a run whose aggregator was fitted on every sample the protocol offered.
ALL_OFFERED = "all offered samples"
#: ``fit_rule`` of a fully supervised aggregator fitted on the annotated part of a partially annotated protocol.
ANNOTATED_ONLY = "annotated samples only"


class NoAnnotationError(ConfigError):
    """A fully supervised aggregator on a protocol that annotates no sample it could be fitted on."""


@dataclass(frozen=True)
class FitSamples:
    """The samples ``aggregator.fit`` is given: ``indices`` ``(n_fit,)`` into the dataset, ``labels``
    ``(n_fit,)`` (or None for protocols without labels), ``rule`` (:data:`ALL_OFFERED` or
    :data:`ANNOTATED_ONLY`) and ``n_offered``, the samples the protocol offered (``split.fit_indices``)."""

    indices: np.ndarray
    labels: np.ndarray | None
    rule: str
    n_offered: int

    def record(self) -> dict:
        """What the run record's ``split`` says of the fit: how many samples it saw (``n_fit``) and, when it saw
        fewer than the protocol offered, which rule drew them (``fit_rule``) out of how many (``n_fit_offered``);
        a fit on every offered sample records ``n_fit`` alone, as records always have."""
        if self.rule == ALL_OFFERED:
            return {"n_fit": int(self.indices.size)}
        return {"n_fit": int(self.indices.size), "fit_rule": self.rule, "n_fit_offered": self.n_offered}


def reads_labels(aggregator) -> bool:
    """Whether ``aggregator`` reads the labels it is fitted with: it declares ``supervised`` or
    ``semi_supervised`` (a plain scikit-learn style plugin without the flags ignores ``y``)."""
    return bool(getattr(aggregator, "supervised", False) or getattr(aggregator, "semi_supervised", False))


def fully_supervised(aggregator) -> bool:
    """Whether ``aggregator`` needs every sample it is fitted on labelled (``supervised`` and not
    ``semi_supervised``; a plain scikit-learn style plugin without the flags is unsupervised)."""
    return bool(getattr(aggregator, "supervised", False)) and not getattr(aggregator, "semi_supervised", False)


def fit_samples(aggregator, split: Split, aggregator_name: str = "", evaluator_name: str = "") -> FitSamples:
    """The samples ``aggregator`` is fitted on under ``split`` (module docstring: one rule for every plugin).

    Raises :class:`NoAnnotationError` when ``aggregator`` is fully supervised and the split annotates none of
    its samples (``fit_labels`` None or all ``-1``).
    """
    indices = np.asarray(split.fit_indices, dtype=np.int64)
    labels = None if split.fit_labels is None else np.asarray(split.fit_labels)
    offered = int(indices.size)
    if not fully_supervised(aggregator):
        return FitSamples(indices, labels, ALL_OFFERED, offered)
    annotated = np.zeros(offered, dtype=bool) if labels is None else ~unlabelled_mask(labels)
    if not annotated.any():
        method = f"aggregator {aggregator_name!r}" if aggregator_name else "this aggregator"
        protocol = f"evaluator {evaluator_name!r}" if evaluator_name else "the protocol"
        why = "gives no labels" if labels is None else f"annotates none of the {offered} samples it fits on"
        raise NoAnnotationError(
            f"{method} is fully supervised, but {protocol} {why} on this dataset: choose the semi-supervised "
            f"variant (aggregator=semi_prolfa), an unsupervised method (aggregator=bow, vlad, fv, temb...), or a "
            f"protocol that annotates samples (evaluator.params.labelled_fraction, on a dataset with classes)")
    if annotated.all():
        return FitSamples(indices, labels, ALL_OFFERED, offered)
    return FitSamples(indices[annotated], labels[annotated], ANNOTATED_ONLY, offered)


def check_fit_labels(aggregator, samples: FitSamples) -> None:
    """The aggregator's own check of the labels it will be fitted on (``Aggregator.check_fit_labels``: a
    criterion undefined for them raises :class:`~lfabench.aggregate.UndefinedCriterionError`), before any
    descriptor is extracted; plugins without the method are taken as defined for any labels."""
    check = getattr(aggregator, "check_fit_labels", None)
    if samples.labels is not None and callable(check) and reads_labels(aggregator):
        check(samples.labels)
