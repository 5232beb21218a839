"""The package's own tests: lfabench's conformance battery, then what is particular to GeM."""

import numpy as np
import pytest

from lfabench import Bags
from lfabench.testing import aggregator_checks, parametrize, plugin_checks
from lfabench_gempool import GeMPool


@parametrize(aggregator_checks(GeMPool(p=3.0, random_state=0)))
def test_conformance(check):
    check()


@parametrize(plugin_checks("aggregator", "gempool"))  # the installed plugin, found by its entry point
def test_registered_plugin_conformance(check):
    check()


def test_p_one_is_mean_of_absolute_values_and_large_p_tends_to_max():
    bags = Bags.from_list([np.array([[1.0, -2.0], [3.0, 4.0]])])
    np.testing.assert_allclose(GeMPool(p=1, l2=False).fit(bags).transform(bags), [[2.0, 3.0]])
    np.testing.assert_allclose(GeMPool(p=200, l2=False).fit(bags).transform(bags), [[3.0, 4.0]], rtol=0.01)


def test_p_below_one_is_refused():
    bags = Bags.from_list([np.ones((2, 2))])
    with pytest.raises(ValueError, match=r"GeMPool: parameter p=0.5 must be a float in the range \[1.0, inf\)"):
        GeMPool(p=0.5).fit(bags)
