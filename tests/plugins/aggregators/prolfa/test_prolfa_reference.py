"""The solvers keep their floats: ``selection_``, J's history and ``W`` equal, bit for bit, those recorded in
``data/prolfa_reference.npz`` (written by ``reference_cases.py`` from the code before the solver surface was
reduced to two paths; see that module for the problems), on the BLAS kernel the file was recorded with.

The floats are a property of the code and of the BLAS kernel that ran it (OpenBLAS picks its kernels by CPU, or
by ``OPENBLAS_CORETYPE`` where a machine sets it). On another kernel the GEMMs round differently in their last
bits and the non-convex solvers carry that drift: there the support (which descriptors each prototype selects)
must still be the recorded one exactly, and the floats must agree to ``RTOL`` (measured on an AVX-512 kernel:
at most 3.5e-4 relative in ``selection_`` and ``projection_``, 5.7e-3 in J's history)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from reference_cases import CASES, arrays, fit_case  # noqa: E402

from conftest import shared_data_dir  # noqa: E402

REFERENCE = Path(__file__).parent / "data" / "prolfa_reference.npz"
#: The OpenBLAS kernel (threadpoolctl's ``architecture``) the reference was recorded with.
RECORDED_KERNEL = "Haswell"
#: Relative agreement required on another kernel: the selected weights and projections, J's history.
RTOL = {"data": 1e-3, "projection": 1e-3, "history": 1e-2}


def blas_kernel() -> str | None:
    """The architecture of the OpenBLAS that NumPy calls (None when NumPy uses another BLAS)."""
    import numpy  # noqa: F401 - its BLAS must be loaded to be listed
    from threadpoolctl import threadpool_info

    for pool in threadpool_info():
        if pool.get("internal_api") == "openblas" and "scipy_openblas" in str(pool.get("prefix", "")) + str(
                pool.get("filepath", "")):
            return pool.get("architecture")
    return None


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
    same_kernel = blas_kernel() == RECORDED_KERNEL
    for key, value in got.items():
        expected = reference[f"{name}/{key}"]
        assert value.dtype == expected.dtype and value.shape == expected.shape, f"{name}: {key} differs in shape"
        if same_kernel or key not in RTOL:
            # bit for bit: no tolerance (NaN-free arrays, so array_equal is exact equality of every float); the
            # support (indices, indptr, shape) on every kernel
            assert np.array_equal(value, expected), f"{name}: {key} differs from the recorded floats"
        else:
            np.testing.assert_allclose(value, expected, rtol=RTOL[key], atol=0,
                                       err_msg=f"{name}: {key} on the {blas_kernel()} kernel")
