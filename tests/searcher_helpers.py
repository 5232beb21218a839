"""A vector method and a searcher that score alike, bit for bit: the two paths of the retrieval protocol.

``MeanPool`` gives each sample its mean descriptor; ``NegativeDistances`` indexes the same means and scores a
query by ``-||q - x||^2``, computed by the function that ranks vectors
(:func:`lfabench.evaluation.ranking_key_blocks`), so that both paths see the same keys.
"""

from __future__ import annotations

import numpy as np

from lfabench.evaluation import ranking_key_blocks
from lfabench.sdk import Aggregator, Searcher


class MeanPool(Aggregator):
    """Per-sample means (zeros for an empty sample), float32."""

    independent_rows = True

    def __init__(self, random_state=None):
        self.random_state = random_state

    def _fit(self, bags, y):
        self.dim_ = bags.dim

    def _transform(self, bags):
        return bags.means().astype(np.float32)


class NegativeDistances(Searcher):
    """``(t, n_db)`` scores ``-||q - x||^2`` between the queries' and the indexed samples' means."""

    def __init__(self, random_state=None):
        self.random_state = random_state

    def _fit(self, bags, y):
        self.dim_ = bags.dim

    def _index(self, bags):
        self.database_ = bags.means().astype(np.float32)

    def _search(self, bags):
        queries = bags.means().astype(np.float32)
        return -np.vstack(list(ranking_key_blocks(self.database_, queries, "euclidean")))
