"""The solvers keep their floats: ``selection_``, J's history and ``W`` equal, bit for bit, those recorded in
``data/prolfa_reference.npz`` (written by ``reference_cases.py`` from the code before the solver surface was
reduced to two paths; see that module for the problems)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from reference_cases import CASES, arrays, fit_case  # noqa: E402

from conftest import shared_data_dir  # noqa: E402

REFERENCE = Path(__file__).parent / "data" / "prolfa_reference.npz"


@pytest.fixture(scope="module")
def reference():
    return np.load(REFERENCE)


@pytest.fixture(scope="module")
def data():
    root = shared_data_dir()
    if root is None or not (root / "prolfa_demo" / "moon.mat").exists():
        pytest.skip("needs ../shared/data/prolfa_demo/moon.mat (the authors' demo data); not present here")
    from reference_cases import problems

    return problems()


@pytest.mark.shared_data
@pytest.mark.parametrize("name", list(CASES))
def test_the_fit_reproduces_the_recorded_floats(name, data, reference):
    got = arrays(fit_case(name, data))
    for key, value in got.items():
        expected = reference[f"{name}/{key}"]
        assert value.dtype == expected.dtype and value.shape == expected.shape, f"{name}: {key} differs in shape"
        # bit for bit: no tolerance (NaN-free arrays, so array_equal is exact equality of every float)
        assert np.array_equal(value, expected), f"{name}: {key} differs from the recorded floats"
