"""lfabench-logreg: logistic-regression accuracy as an lfabench evaluator plugin (an example package)."""

from .plugin import LogRegAccuracy

__all__ = ["LogRegAccuracy"]
