"""Deprecated alias of :mod:`lfabench.aggregate` (kept so ``from lfabench.base import Aggregator`` still works)."""

from .aggregate import Aggregator, check_labels

__all__ = ["Aggregator", "check_labels"]
