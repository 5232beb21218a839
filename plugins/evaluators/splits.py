"""The seeded splits, kept importable here: they are public in :mod:`lfabench.splits`, where new code imports them."""

from lfabench.sdk import LABELLED_UNITS, labelled_classes, labelled_subset, partial_labels, stratified_split

__all__ = ["LABELLED_UNITS", "labelled_classes", "labelled_subset", "partial_labels", "stratified_split"]
