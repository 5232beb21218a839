"""Which way a metric is better on a board: what its evaluator plugin declares (``Evaluator.metric_directions``).

A board ranks from records; the direction comes from the evaluator plugin installed here, as its primary metric
does. An evaluator not installed here (records of a plugin this environment lacks) counts as higher-is-better,
what every built-in metric is.
"""

from __future__ import annotations

import functools

from ..evaluate import higher_is_better
from ..registry import get_plugin


@functools.lru_cache(maxsize=None)
def metric_higher_is_better(evaluator: str, metric: str) -> bool:
    """Whether a higher ``metric`` is better for the evaluator plugin named ``evaluator`` (True when not installed)."""
    try:
        factory = get_plugin("evaluator", str(evaluator))
    except LookupError:
        return True
    return higher_is_better(factory, str(metric))


def metric_sign(evaluator: str, metric: str) -> int:
    """``1`` for a higher-is-better metric, ``-1`` for a lower-is-better one: times a score, higher is better."""
    return 1 if metric_higher_is_better(evaluator, metric) else -1
