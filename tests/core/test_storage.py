"""lfabench.storage: the fitted-array cache reuses entries of the same sample and params only."""

import numpy as np

from lfabench.storage import array_fingerprint, cached_fit


def test_cached_fit_reuses_and_separates_entries(tmp_path):
    calls = []
    sample = np.arange(12, dtype=np.float32).reshape(4, 3)

    def fit():
        calls.append(1)
        return {"w": sample.sum(axis=0) + len(calls)}

    a = cached_fit("toy", "t", sample, {"p": 1, "seed": 0}, fit, cache=str(tmp_path))
    b = cached_fit("toy", "t", sample, {"p": 1, "seed": 0}, fit, cache=str(tmp_path))
    assert len(calls) == 1
    np.testing.assert_array_equal(a["w"], b["w"])
    cached_fit("toy", "t", sample, {"p": 2, "seed": 0}, fit, cache=str(tmp_path))       # other params
    cached_fit("toy", "t", sample + 1, {"p": 1, "seed": 0}, fit, cache=str(tmp_path))   # other sample
    assert len(calls) == 3
    cached_fit("toy", "t", sample, {"p": 1, "seed": 0}, fit, cache=False)                # no cache: fits
    assert len(calls) == 4
    assert array_fingerprint(sample) != array_fingerprint(sample.astype(np.float64))
