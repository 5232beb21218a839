"""The growth cases' fit sets (``benchmarks/suite/growth.py``) and the growth table's exponent
(``benchmarks/growth_table.py``), without the shared data."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from growth_table import exponent, table
from suite.growth import FRACTIONS, PaperGrowth, training_fraction


def test_fit_sets_are_nested_and_keep_the_ceiling_of_every_class():
    labels = np.repeat(np.arange(5), [1, 3, 8, 13, 40])
    sets = {f: training_fraction(labels, f) for f in FRACTIONS}
    for f, keep in sets.items():
        assert np.all(np.diff(keep) > 0)
        counts = np.bincount(labels[keep], minlength=5)
        assert counts.tolist() == [math.ceil(f * n) for n in (1, 3, 8, 13, 40)]
    assert set(sets[0.25]) <= set(sets[0.5]) <= set(sets[1.0]) == set(range(labels.size))
    # another seed draws other images of the same counts
    other = training_fraction(labels, 0.5, seed=1)
    assert np.bincount(labels[other]).tolist() == np.bincount(labels[sets[0.5]]).tolist()
    assert not np.array_equal(other, sets[0.5])


def test_a_fraction_outside_zero_to_one_is_refused():
    with pytest.raises(ValueError, match="fraction must be in"):
        training_fraction(np.zeros(4), 0.0)


def test_the_exponent_is_the_power_of_a_power_law_and_the_table_shows_it():
    sizes = [900, 1800, 3600]
    assert exponent(sizes, [2.0 * n ** 1.5 for n in sizes]) == pytest.approx(1.5, abs=1e-12)
    rows = [{"method": "m", "fraction": f, "images": n, "fit_s": 0.01 * n, "transform_s": 0.5}
            for f, n in zip(FRACTIONS, sizes)]
    line = table(rows).split("\n")[-1]
    assert line == "| m | 9 s | 18 s | 36 s | 1.00 | 0.5 s | 0.5 s | 0.5 s | 0.00 |  |"
    for r, n in zip(rows, (40, 31, 35)):
        r.update(n_iter=n, searches=n // 8)
    assert table(rows).split("\n")[-1].endswith("| n_iter 40 / 31 / 35; searches 5 / 3 / 4 |")


def test_every_paper_method_has_a_case_at_every_fraction():
    methods, fractions = PaperGrowth.params
    assert "prolfa_d4096" in methods and fractions == [0.25, 0.5, 1.0]
