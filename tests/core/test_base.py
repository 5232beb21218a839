"""``lfabench.base`` is an alias of :mod:`lfabench.aggregate`: the same objects, not copies."""

from __future__ import annotations

import lfabench.aggregate
import lfabench.base


def test_the_alias_names_the_aggregate_modules_objects():
    assert lfabench.base.Aggregator is lfabench.aggregate.Aggregator
    assert lfabench.base.check_labels is lfabench.aggregate.check_labels
