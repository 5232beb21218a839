import warnings

import numpy as np
import pytest

from lfabench import Bags
from lfabench.bags import EmptySampleWarning


def _arrays(seed=0, dims=5, sizes=(3, 0, 4, 1)):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(n, dims)) for n in sizes]


def test_dtype_rules():
    X = np.ones((4, 2))
    assert Bags(X, [0, 2, 4]).dtype == np.float64          # float64 stays float64
    assert Bags(X.astype(np.int32), [0, 2, 4]).dtype == np.float32
    assert Bags(X.astype(np.float16), [0, 4]).dtype == np.float32
    assert Bags(X, [0, 4], dtype=np.float32).dtype == np.float32


def test_offsets_validation_messages():
    X = np.ones((4, 2), np.float32)
    with pytest.raises(ValueError, match="non-decreasing.*sample 1"):
        Bags(X, [0, 3, 2, 4])
    with pytest.raises(ValueError, match="must equal the number of descriptors"):
        Bags(X, [0, 2, 3])
    with pytest.raises(ValueError, match="offsets\\[0\\] must be 0"):
        Bags(X, [1, 4])
    with pytest.raises(ValueError, match="2-D"):
        Bags(np.ones(4), [0, 4])


def test_non_finite_names_the_sample():
    X = np.ones((5, 2), np.float32)
    X[3, 1] = np.nan
    with pytest.raises(ValueError, match=r"row 3 \(sample 1, id 'b'\)"):
        Bags(X, [0, 2, 5], ids=["a", "b"])


def test_empty_sample_allowed_and_reported():
    with pytest.warns(EmptySampleWarning, match="1 of 4 samples have no descriptors: '1'"):
        b = Bags.from_list(_arrays())
    assert b.counts.tolist() == [3, 0, 4, 1]
    assert b.empty_samples().tolist() == [1]
    assert b[1].shape == (0, 5)


def test_from_list_roundtrip_and_shapes():
    arrays = _arrays(sizes=(2, 3, 1))
    b = Bags.from_list(arrays, ids=["x", "y", "z"])
    assert (b.n_samples, b.n_descriptors, b.dim) == (3, 6, 5)
    assert b.offsets.tolist() == [0, 2, 5, 6]
    assert b.descriptors.flags["C_CONTIGUOUS"]
    for got, want in zip(b, arrays):
        np.testing.assert_array_equal(got, want)
    assert list(b.ids) == ["x", "y", "z"]


def test_from_list_dimension_mismatch():
    with pytest.raises(ValueError, match="sample 1 has descriptor dimension 3"):
        Bags.from_list([np.ones((2, 4)), np.ones((2, 3))])


def test_means_and_sums_match_numpy():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptySampleWarning)
        arrays = _arrays(sizes=(3, 0, 4, 1))
        b = Bags.from_list(arrays)
    expected_mean = np.stack([a.mean(0) if len(a) else np.zeros(5) for a in arrays])
    np.testing.assert_allclose(b.means(), expected_mean, rtol=1e-12)
    np.testing.assert_allclose(b.sums(), np.stack([a.sum(0) for a in arrays]), rtol=1e-12)
    assert b.pooling_matrix().shape == (4, 8)
    assert b.sample_index().tolist() == [0, 0, 0, 2, 2, 2, 2, 3]


def test_subset_equals_list_selection():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptySampleWarning)
        arrays = _arrays(sizes=(3, 0, 4, 1, 2))
        kps = [np.arange(len(a) * 2, dtype=np.float32).reshape(-1, 2) + 100 * i for i, a in enumerate(arrays)]
        b = Bags.from_list(arrays, keypoints=kps, ids=list("abcde"))
        for idx in ([4, 0, 2], np.array([True, False, False, True, True]), slice(1, 4), [1]):
            sub = b.subset(idx)
            chosen = np.arange(5)[idx]
            assert list(sub.ids) == [list("abcde")[i] for i in chosen]
            for got, i in zip(sub, chosen):
                np.testing.assert_array_equal(got, arrays[i])
            np.testing.assert_array_equal(sub.keypoints, np.concatenate([kps[i] for i in chosen]))
    with pytest.raises(IndexError):
        b.subset([7])


def test_concatenate_keeps_order():
    a = Bags.from_list(_arrays(1, sizes=(2, 1)), ids=["a", "b"])
    c = Bags.from_list(_arrays(2, sizes=(3,)), ids=["c"])
    both = Bags.concatenate([a, c])
    assert both.offsets.tolist() == [0, 2, 3, 6]
    np.testing.assert_array_equal(both[2], c[0])
    assert list(both.ids) == ["a", "b", "c"]


def test_fingerprint_changes_with_content():
    b = Bags.from_list(_arrays(sizes=(2, 2)))
    other = b.with_descriptors(b.descriptors + 1)
    assert b.fingerprint() != other.fingerprint()
    assert b.fingerprint() == Bags(b.descriptors.copy(), b.offsets.copy()).fingerprint()


def test_fractional_offsets_are_refused_not_truncated():
    with pytest.raises(ValueError, match=r"offsets\[1\]=2.5 is not"):
        Bags(np.ones((4, 2)), [0, 2.5, 4])
    Bags(np.ones((4, 2)), np.array([0.0, 2.0, 4.0]))  # integral floats are fine
    with pytest.raises(TypeError, match="offsets must be a 1-D array of integers"):
        Bags(np.ones((4, 2)), np.array([False, True]))


def test_bool_descriptors_are_refused():
    with pytest.raises(TypeError, match="booleans"):
        Bags(np.ones((4, 2), bool), [0, 4])


def test_later_edits_of_the_callers_arrays_cannot_bypass_validation():
    X = np.ones((4, 2), np.float32)
    off = np.array([0, 2, 4])
    bags = Bags(X, off)
    X[0, 0] = np.nan
    off[1] = 7
    assert np.isfinite(bags.descriptors).all() and list(bags.offsets) == [0, 2, 4]
