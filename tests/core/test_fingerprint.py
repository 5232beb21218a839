"""The fitted-array fingerprint: the digest of the named dense arrays, sparse matrices included, in bounded memory."""

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

from lfabench import fingerprint
from lfabench.evaluation.predictions import predictions_fingerprint
from lfabench.fingerprint import fitted_fingerprint


class _Fitted:
    def __init__(self, **attrs):
        self.__dict__.update(attrs)


def _model(rng, n_rows=37, n_cols=11):
    selection = sp.random(n_rows, n_cols, density=0.1, format="csc", random_state=rng, dtype=np.float64)
    return _Fitted(selection_=selection, prototypes_=rng.standard_normal((5, n_cols)).astype(np.float32),
                   history_=[np.arange(3), {"b": np.ones(2)}], fit_info_={"time": np.ones(1)}, param=np.ones(4))


@pytest.mark.parametrize("block_bytes", [8, 88, 200, 1 << 20])  # 1 row, 1 row, 2 rows with a partial last, all
def test_equals_the_digest_of_the_dense_arrays_for_any_block_size(monkeypatch, block_bytes):
    monkeypatch.setattr(fingerprint._SparseAsDense, "BLOCK_BYTES", block_bytes)
    model = _model(np.random.default_rng(0))
    # the definition: every fitted (name_) array by path, the sparse one dense; fit_info_ and params left out
    dense = {"selection_": model.selection_.toarray(), "prototypes_": model.prototypes_,
             "history_[0]": model.history_[0], "history_[1][b]": model.history_[1]["b"]}
    assert fitted_fingerprint(model) == predictions_fingerprint(dense)


def test_one_changed_entry_of_a_sparse_matrix_changes_it():
    model = _model(np.random.default_rng(1))
    before = fitted_fingerprint(model)
    model.selection_ = model.selection_.copy()
    model.selection_.data[-1] += 1e-12
    assert fitted_fingerprint(model) != before


def test_a_large_sparse_matrix_is_not_made_dense():
    rows, cols = 50_000, 1_024                  # 410 MB as a dense float64 array
    selection = sp.random(rows, cols, density=1e-4, format="csc", random_state=np.random.default_rng(2))
    tracemalloc.start()
    try:
        fitted_fingerprint(_Fitted(selection_=selection))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 128 << 20, f"peak {peak / 2**20:.0f} MiB while fingerprinting a sparse (50,000 x 1,024) matrix"
