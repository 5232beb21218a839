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


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path):
    import pytest

    from lfabench.storage import atomic_write, write_text_atomic

    target = tmp_path / "sub" / "board.md"
    write_text_atomic(target, "old")
    with pytest.raises(RuntimeError, match="disk full"):
        with atomic_write(target) as fh:
            fh.write("half of the new")
            raise RuntimeError("disk full")
    assert target.read_text() == "old"
    assert sorted(p.name for p in target.parent.iterdir()) == ["board.md"]  # no temporary left behind


def test_resolve_cache_is_one_convention(tmp_path):
    import pytest

    from lfabench.storage import ArrayCache, cache_root, resolve_cache

    assert resolve_cache(None) is None and resolve_cache(False) is None
    assert resolve_cache(True).root == cache_root()
    assert resolve_cache(str(tmp_path)).root == tmp_path and resolve_cache(tmp_path).root == tmp_path
    store = ArrayCache(tmp_path)
    assert resolve_cache(store) is store
    with pytest.raises(TypeError, match="cache must be"):
        resolve_cache(3)


def test_atomically_written_files_get_the_usual_mode_not_mkstemps_0600(tmp_path):
    import os

    from lfabench.storage import write_text_atomic

    mask = os.umask(0o022)
    try:
        write_text_atomic(tmp_path / "board.md", "x")
    finally:
        os.umask(mask)
    assert (tmp_path / "board.md").stat().st_mode & 0o777 == 0o644
