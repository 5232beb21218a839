"""The solvers keep their floats: ``selection_``, J's history and ``W`` equal, bit for bit, those recorded in
``data/prolfa_reference.npz`` (written by ``reference_cases.py`` from the code before the solver surface was
reduced to two paths; see that module for the problems), on the CPU kind the file was recorded on.

The floats are a property of the code and of the kernels that ran it (OpenBLAS picks its kernels by CPU, or by
``OPENBLAS_CORETYPE`` where a machine sets it; FAISS loads its AVX2 or AVX-512 build). On another kind the GEMMs
round differently in their last bits and the non-convex solvers carry that drift: there the support (which
descriptors each prototype selects) must still be the recorded one exactly, and the floats must agree to ``RTOL``
(measured: on SkylakeX kernels at most 3.5e-4 relative in ``selection_`` and ``projection_``, 5.7e-3 in J's
history; on an AVX2 EPYC, NumPy's kernel Haswell and FAISS's Zen, 7.9e-4, 1.1e-4 and 2.4e-3)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from reference_cases import CASES, arrays, fit_case  # noqa: E402

from conftest import shared_data_dir  # noqa: E402

REFERENCE = Path(__file__).parent / "data" / "prolfa_reference.npz"
#: The CPU kind the reference was recorded on, as records state it (``lfabench.reproduce.cpu_kind``): its SIMD
#: flags and the kernel of every loaded OpenBLAS (NumPy's and SciPy's, FAISS's own): an AVX-512 AMD EPYC on which
#: all of them ran Haswell kernels. The FAISS build (AVX2 or AVX-512) and FAISS's OpenBLAS change the candidate
#: search's float32 scores, so NumPy's kernel alone does not fix the floats (an AVX2 EPYC, NumPy's kernel Haswell
#: and FAISS's Zen, gives other last bits).
RECORDED_KIND = (("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512bw", "avx512vl"), ("Haswell",))
#: Relative agreement required on another kernel: the selected weights and projections, J's history.
RTOL = {"data": 1e-3, "projection": 1e-3, "history": 1e-2}


def cpu_kind() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """This process's CPU kind as :data:`RECORDED_KIND` states it: the SIMD flags of
    :data:`lfabench.provenance.SIMD_FLAGS` the CPU has, and the distinct kernels of the loaded OpenBLAS libraries
    (FAISS imported first, so that its own is loaded)."""
    import faiss  # noqa: F401 - its OpenBLAS must be loaded to be listed

    from lfabench.provenance import environment
    from lfabench.reproduce import cpu_kind as recorded_kind

    simd, kernels = recorded_kind({"provenance": {"environment": environment()}})
    return simd, tuple(sorted(set(kernels) - {"None"}))


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
    same_kernel = cpu_kind() == RECORDED_KIND
    for key, value in got.items():
        expected = reference[f"{name}/{key}"]
        assert value.dtype == expected.dtype and value.shape == expected.shape, f"{name}: {key} differs in shape"
        if same_kernel or key not in RTOL:
            # bit for bit: no tolerance (NaN-free arrays, so array_equal is exact equality of every float); the
            # support (indices, indptr, shape) on every kernel
            assert np.array_equal(value, expected), f"{name}: {key} differs from the recorded floats"
        else:
            np.testing.assert_allclose(value, expected, rtol=RTOL[key], atol=0,
                                       err_msg=f"{name}: {key} on the CPU kind {cpu_kind()}")
