"""The fitted-array fingerprint: the digest of the named arrays, a sparse matrix as its canonical CSR arrays or as its
dense array, in bounded memory."""

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


def _dense_arrays(model):
    return {"prototypes_": model.prototypes_, "history_[0]": model.history_[0],
            "history_[1][b]": model.history_[1]["b"]}


@pytest.mark.parametrize("block_bytes", [8, 88, 200, 1 << 20])  # 1 row, 1 row, 2 rows with a partial last, all
def test_the_dense_scheme_is_the_digest_of_the_dense_arrays_for_any_block_size(monkeypatch, block_bytes):
    monkeypatch.setattr(fingerprint._SparseAsDense, "BLOCK_BYTES", block_bytes)
    model = _model(np.random.default_rng(0))
    # the definition: every fitted (name_) array by path, the sparse one dense; fit_info_ and params left out
    dense = dict(_dense_arrays(model), selection_=model.selection_.toarray())
    assert fitted_fingerprint(model, sparse="dense") == predictions_fingerprint(dense)


def test_the_csr_scheme_is_the_digest_of_the_nonzero_entries_read_from_the_dense_array():
    model = _model(np.random.default_rng(0))
    A = model.selection_.toarray()
    rows, cols = np.nonzero(A)                       # C order: row by row, columns ascending
    by_hand = {"selection_#csr.shape": np.array(A.shape, dtype=np.int64),
               "selection_#csr.indptr": np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=A.shape[0]))]),
               "selection_#csr.indices": cols.astype(np.int64), "selection_#csr.data": A[rows, cols]}
    assert fitted_fingerprint(model) == predictions_fingerprint(dict(_dense_arrays(model), **by_hand))
    assert fitted_fingerprint(model, sparse="csr") != fitted_fingerprint(model, sparse="dense")


def test_the_csr_scheme_depends_on_the_dense_bits_only():
    """Another format, unsorted indices, a duplicate split in two exact halves, a stored +0.0: the same digest.
    A stored -0.0 (other bits than the dense array's +0.0) or one changed last bit: another."""
    rng = np.random.default_rng(4)
    model = _model(rng)
    base = fitted_fingerprint(model)
    coo = model.selection_.tocoo()
    for other in (model.selection_.tocsr(), coo.tocsc(), sp.csc_array(model.selection_)):
        assert fitted_fingerprint(_Fitted(**dict(model.__dict__, selection_=other))) == base
    shuffled = rng.permutation(coo.nnz)
    split = sp.coo_matrix((np.concatenate([coo.data[shuffled] / 2, coo.data[shuffled] / 2, [0.0]]),
                           (np.concatenate([coo.row[shuffled], coo.row[shuffled], [0]]),
                            np.concatenate([coo.col[shuffled], coo.col[shuffled], [0]]))), shape=coo.shape)
    assert not model.selection_.toarray()[0, 0]       # the stored +0.0 lies where the dense array is zero
    assert fitted_fingerprint(_Fitted(**dict(model.__dict__, selection_=split))) == base
    zero = np.asarray(model.selection_.toarray() == 0).nonzero()
    negative_zero = sp.coo_matrix((np.concatenate([coo.data, [-0.0]]), (np.concatenate([coo.row, zero[0][:1]]),
                                   np.concatenate([coo.col, zero[1][:1]]))), shape=coo.shape)
    assert fitted_fingerprint(_Fitted(**dict(model.__dict__, selection_=negative_zero))) != base
    last_bit = model.selection_.copy()
    last_bit.data[0] = np.nextafter(last_bit.data[0], np.inf)
    assert fitted_fingerprint(_Fitted(**dict(model.__dict__, selection_=last_bit))) != base


@pytest.mark.parametrize("sparse", ["csr", "dense"])
def test_one_changed_entry_of_a_sparse_matrix_changes_it(sparse):
    model = _model(np.random.default_rng(1))
    before = fitted_fingerprint(model, sparse)
    model.selection_ = model.selection_.copy()
    model.selection_.data[-1] += 1e-12
    assert fitted_fingerprint(model, sparse) != before


def test_an_unknown_scheme_is_refused_by_name():
    with pytest.raises(ValueError, match="sparse='coo' must be one of csr, dense"):
        fitted_fingerprint(_model(np.random.default_rng(0)), sparse="coo")


@pytest.mark.parametrize("sparse", ["csr", "dense"])
def test_a_large_sparse_matrix_is_not_made_dense(sparse):
    rows, cols = 50_000, 1_024                  # 410 MB as a dense float64 array
    selection = sp.random(rows, cols, density=1e-4, format="csc", random_state=np.random.default_rng(2))
    tracemalloc.start()
    try:
        fitted_fingerprint(_Fitted(selection_=selection), sparse)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 128 << 20, f"peak {peak / 2**20:.0f} MiB while fingerprinting a sparse (50,000 x 1,024) matrix"
