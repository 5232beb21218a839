"""What a plugin hands back is checked before anything is scored or recorded: no silent numbers.

* :func:`check_features`: an aggregator's ``(m, D)`` output is refused, naming the plugin, when it is not a
  2-D array of real numbers, has zero width, holds a NaN or an infinity, or a value beyond float32's range
  (every search converts to float32, where such a value becomes an infinity). The check does not depend on
  how the features are searched afterwards.
* :func:`check_metrics`: every metric an evaluator returns must be a finite real number inside the range
  the evaluator declares for it (:attr:`lfabench.evaluate.Evaluator.metric_ranges`, else its
  ``default_metric_range``: percentages, 0 to 100).

Both raise :class:`OutputError` (a ``ValueError``): the conductor records the run as failed, never ok.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = ["OutputError", "check_features", "check_metrics", "metric_range"]

#: The largest magnitude a feature may hold: float32's largest finite value.
FLOAT32_MAX = float(np.finfo(np.float32).max)
#: Values checked at a time (bounds the temporary masks on large feature matrices to a few MB).
_BLOCK_VALUES = 1 << 22


class OutputError(ValueError):
    """A plugin returned features or metrics that cannot be scored or recorded honestly."""


def _where(features: np.ndarray, bad_rows: np.ndarray, start: int, ids) -> str:
    row = int(start + bad_rows[0][0])
    col = int(bad_rows[1][0])
    sample = f" (sample {ids[row]!r})" if ids is not None and row < len(ids) else ""
    return f"row {row}{sample}, column {col}: {features[row, col]!r}"


def check_features(features, aggregator: str, ids=None) -> np.ndarray:
    """``features`` as an array, or :class:`OutputError` naming the ``aggregator`` (its plugin name).

    Refused: anything but a 2-D array of real numbers (bool, integers, floats; not complex, not objects),
    zero columns, a NaN or infinite value, a value whose magnitude exceeds float32's largest (it becomes an
    infinity in every float32 search). ``ids`` (optional, one per row) name the first offending sample.
    """
    plugin = f"aggregator {aggregator!r}"
    try:
        X = np.asarray(features)
    except (TypeError, ValueError) as exc:
        raise OutputError(f"{plugin} returned features that are not an array ({type(features).__name__}: "
                          f"{exc})") from None
    if X.ndim != 2:
        raise OutputError(f"{plugin} returned features of shape {X.shape}: expected (samples, dimensions)")
    if X.dtype.kind not in "biuf":
        what = "complex numbers" if X.dtype.kind == "c" else "not numbers"
        raise OutputError(f"{plugin} returned features of dtype {X.dtype} ({what}): expected real numbers")
    if X.shape[1] == 0:
        raise OutputError(f"{plugin} returned features of zero width {X.shape}: every sample would be the same "
                          f"empty vector")
    if X.dtype.kind != "f":  # bool and 64-bit integers are finite and far inside float32's range
        return X
    rows = max(1, _BLOCK_VALUES // X.shape[1])
    for start in range(0, X.shape[0], rows):
        block = X[start:start + rows]
        finite = np.isfinite(block)
        if not finite.all():
            bad = np.nonzero(~finite)
            raise OutputError(f"{plugin} returned {int(bad[0].size)} non-finite feature value(s) in rows "
                              f"{start}-{start + block.shape[0] - 1}, first at {_where(X, bad, start, ids)}")
        if X.dtype.itemsize > 4:
            over = np.abs(block) > FLOAT32_MAX
            if over.any():
                bad = np.nonzero(over)
                raise OutputError(f"{plugin} returned {int(bad[0].size)} feature value(s) beyond float32's range "
                                  f"(|x| > {FLOAT32_MAX:.4g}: infinite in any float32 search), first at "
                                  f"{_where(X, bad, start, ids)}")
    return X


def metric_range(evaluator, name: str) -> tuple[float, float] | None:
    """The ``(low, high)`` range ``evaluator`` declares for metric ``name``; None: any finite value."""
    ranges = getattr(evaluator, "metric_ranges", None) or {}
    if name in ranges:
        return ranges[name]
    return getattr(evaluator, "default_metric_range", (0.0, 100.0))


def check_metrics(metrics, evaluator, name: str) -> dict:
    """``metrics`` unchanged, or :class:`OutputError` naming the evaluator (``name``, its plugin name) and the metric.

    Each value must be a real number (not a bool), finite, and inside :func:`metric_range` (bounds included).
    """
    plugin = f"evaluator {name!r}"
    if not isinstance(metrics, dict):
        raise OutputError(f"{plugin} returned {type(metrics).__name__} metrics: expected a dict of "
                          f"{{name: number}}")
    for name, value in metrics.items():
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise OutputError(f"{plugin} returned metric {name!r} = {value!r}: not a real number")
        if not math.isfinite(float(value)):
            raise OutputError(f"{plugin} returned metric {name!r} = {value!r}: not finite")
        bounds = metric_range(evaluator, name)
        if bounds is not None and not bounds[0] <= float(value) <= bounds[1]:
            raise OutputError(f"{plugin} returned metric {name!r} = {value!r}, outside its declared range "
                              f"[{bounds[0]:g}, {bounds[1]:g}] (Evaluator.metric_ranges)")
    return metrics
