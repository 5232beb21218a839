"""daisy, dense_sift, hesaff, precomputed, cnn: shapes, caps, independent references, clear errors."""

from __future__ import annotations

import sys

import cv2
import numpy as np
import pytest

from lfabench import get_plugin
from lfabench.bags import KEYPOINT_FIELDS
from lfabench.dataset import Dataset

from data_helpers import textured_image


def test_daisy_dense_equals_scikit_image_on_the_grid():
    from skimage.feature import daisy

    img = textured_image(1, (90, 110))
    D, K = get_plugin("descriptor", "daisy")(keypoints="dense", step=6, radius=15, max_keypoints=None).extract(img)
    ref = daisy(img / 255.0, step=6, radius=15)
    assert D.shape == (ref.shape[0] * ref.shape[1], 200)
    np.testing.assert_allclose(D, ref.reshape(-1, 200), rtol=1e-5, atol=1e-6)
    # centre of grid cell (i, j) is (15 + 6 j, 15 + 6 i)
    assert tuple(K[ref.shape[1] + 2, :2]) == (15 + 12, 15 + 6)
    capped, Kc = get_plugin("descriptor", "daisy")(keypoints="dense", step=6, max_keypoints=10).extract(img)
    idx = np.rint(np.linspace(0, len(D) - 1, 10)).astype(int)
    np.testing.assert_array_equal(capped, D[idx])
    np.testing.assert_array_equal(Kc, K[idx])


def test_daisy_at_dog_keypoints_reads_the_dense_descriptor_at_each_position():
    from skimage.feature import daisy

    img = textured_image(2, (100, 120))
    d = get_plugin("descriptor", "daisy")(max_keypoints=25)
    D, K = d.extract(img)
    assert 0 < len(D) <= 25 and D.shape[1] == 200 and d.dim == 200
    full = daisy(img / 255.0, step=1, radius=15)
    x, y = K[:, 0].astype(int), K[:, 1].astype(int)
    assert np.all((x >= 15) & (x < 120 - 15) & (y >= 15) & (y < 100 - 15))
    assert len(set(zip(x, y))) == len(x)  # one descriptor per position
    np.testing.assert_allclose(D, full[y - 15, x - 15], rtol=1e-5, atol=1e-6)
    assert "strongest detector response" in d.selection_rule


def test_dense_sift_grid_and_cap():
    img = textured_image(4, (64, 80))
    d = get_plugin("descriptor", "dense_sift")(step=8, patch_size=16)
    D, K = d.extract(img)
    xs, ys = np.arange(8, 80 - 8, 8), np.arange(8, 64 - 8, 8)
    assert D.shape == (xs.size * ys.size, 128)
    np.testing.assert_array_equal(K[:, 0], np.tile(xs, ys.size))
    np.testing.assert_array_equal(K[:, 1], np.repeat(ys, xs.size))
    kps = [cv2.KeyPoint(float(x), float(y), 16 / 6, 0) for x, y in K[:, :2]]  # angle 0 = upright
    _, ref = cv2.SIFT_create().compute(img, kps)
    np.testing.assert_allclose(D, ref, atol=1e-4)
    Dc, Kc = get_plugin("descriptor", "dense_sift")(max_keypoints=7).extract(img)
    idx = np.rint(np.linspace(0, len(D) - 1, 7)).astype(int)
    np.testing.assert_array_equal(Dc, D[idx])


def test_hesaff_missing_extra_gives_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyhesaff", None)  # import pyhesaff -> ImportError
    with pytest.raises(ImportError, match=r"pip install 'lfabench\[hesaff\]'"):
        get_plugin("descriptor", "hesaff")()


def test_hesaff_regions_sift_and_daisy():
    hes = pytest.importorskip("pyhesaff")
    img = textured_image(6, (120, 150))
    kpts, vecs = hes.detect_feats_in_image(img)
    assert len(kpts) > 5
    D, K = get_plugin("descriptor", "hesaff")(max_keypoints=5).extract(img)
    assert D.shape == (5, 128) and K.shape == (5, 8)
    scale = np.sqrt(kpts[:, 2] * kpts[:, 4])
    assert np.all(K[:, 2] >= np.sort(scale)[::-1][4] - 1e-4)  # the 5 largest scales
    match = [int(np.argmin(np.abs(kpts[:, :2] - k[:2]).sum(axis=1))) for k in K]
    np.testing.assert_array_equal(D, vecs[match].astype(np.float32))
    np.testing.assert_allclose(K[:, 4], kpts[match, 2])
    Dd, Kd = get_plugin("descriptor", "hesaff")(max_keypoints=5, descriptor="daisy").extract(img)
    assert Dd.shape == (5, 200) and np.array_equal(Kd, K)
    from skimage.feature import daisy

    patch = np.asarray(hes.extract_patches(img, np.ascontiguousarray(kpts[match[:1]], np.float32)))[0]
    np.testing.assert_allclose(Dd[0], daisy(patch / 255.0, step=41, radius=20)[0, 0], rtol=1e-5, atol=1e-6)


def _write_fvecs(path, X):
    X = np.asarray(X, np.float32)
    with open(path, "wb") as fh:
        for row in X:
            fh.write(np.int32(X.shape[1]).tobytes() + row.tobytes())


def _write_siftgeo(path, geo, desc):
    with open(path, "wb") as fh:
        for g, d in zip(geo, desc):
            fh.write(np.asarray(g, np.float32).tobytes() + np.int32(128).tobytes() + np.asarray(d, np.uint8).tobytes())


def _ids_dataset(ids):
    return Dataset(name="files", task="classification", sample_ids=ids, labels=np.zeros(len(ids), int))


def test_precomputed_reads_every_format(tmp_path):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(4, 8)).astype(np.float32), rng.normal(size=(3, 8)).astype(np.float32)
    (tmp_path / "cls").mkdir()
    np.save(tmp_path / "cls" / "a.npy", a)
    np.savez(tmp_path / "cls" / "b.npz", descriptors=b, keypoints=np.arange(6, dtype=np.float32).reshape(3, 2))
    ds = _ids_dataset(["cls/a.jpg", "cls/b.jpg"])
    bags = get_plugin("descriptor", "precomputed")(path=str(tmp_path)).describe(ds, n_jobs=1)
    np.testing.assert_array_equal(bags.descriptors, np.vstack([a, b]))
    assert np.isnan(bags.keypoints[:4]).all() and np.array_equal(bags.keypoints[4:], [[0, 1], [2, 3], [4, 5]])
    _write_fvecs(tmp_path / "cls" / "c.fvecs", a)
    got = get_plugin("descriptor", "precomputed")(path=str(tmp_path), format="fvecs")
    np.testing.assert_array_equal(got.describe(_ids_dataset(["cls/c.png"]), n_jobs=1).descriptors, a)
    geo = rng.uniform(1, 50, size=(5, 9)).astype(np.float32)
    desc = rng.integers(0, 256, size=(5, 128))
    _write_siftgeo(tmp_path / "100000.siftgeo", geo, desc)
    sg = get_plugin("descriptor", "precomputed")(path=str(tmp_path), max_keypoints=4)
    bags = sg.describe(_ids_dataset(["100000.jpg"]), n_jobs=1)
    np.testing.assert_array_equal(bags.descriptors, desc[:4].astype(np.float32))
    np.testing.assert_array_equal(bags.keypoints, geo[:4, :8])
    assert bags.keypoint_fields == KEYPOINT_FIELDS
    with pytest.raises(FileNotFoundError, match="'cls/zzz.jpg'"):
        get_plugin("descriptor", "precomputed")(path=str(tmp_path)).describe(_ids_dataset(["cls/zzz.jpg"]), n_jobs=1)


def test_precomputed_hdf5(tmp_path):
    h5py = pytest.importorskip("h5py")
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(2, 5)), rng.normal(size=(3, 5))
    with h5py.File(tmp_path / "d.h5", "w") as f:
        f["q1.jpg"] = a
        g = f.create_group("q2.jpg")
        g["descriptors"] = b
        g["keypoints"] = np.ones((3, 2))
    bags = get_plugin("descriptor", "precomputed")(path=str(tmp_path / "d.h5")).describe(
        _ids_dataset(["q1.jpg", "q2.jpg"]), n_jobs=1)
    np.testing.assert_allclose(bags.descriptors, np.vstack([a, b]).astype(np.float32))
    np.testing.assert_array_equal(bags.offsets, [0, 2, 5])


def test_precomputed_bad_file_is_named(tmp_path):
    (tmp_path / "x.fvecs").write_bytes(np.int32(4).tobytes() + b"abc")
    with pytest.raises(ValueError, match="x.fvecs"):
        get_plugin("descriptor", "precomputed")(path=str(tmp_path)).describe(_ids_dataset(["x.jpg"]), n_jobs=1)


def test_cnn_needs_torch_or_weights(tmp_path):
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"lfabench\[cnn\]"):
            get_plugin("descriptor", "cnn")(weights=str(tmp_path / "vgg16.pth"))
        return
    with pytest.raises(FileNotFoundError, match="vgg16"):
        get_plugin("descriptor", "cnn")(weights=str(tmp_path / "missing.pth"))


def test_cnn_conv5_3_grid_with_torch(tmp_path):
    torch = pytest.importorskip("torch")
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = torchvision.models.vgg16(weights=None)
    torch.save(model.state_dict(), tmp_path / "vgg16.pth")
    d = get_plugin("descriptor", "cnn")(weights=str(tmp_path / "vgg16.pth"))
    img = np.repeat(textured_image(8, (120, 160))[..., None], 3, axis=2)
    D, K = d.extract(img)
    assert D.shape == (196, 512) and K.shape == (196, 3)
    x = (cv2.resize(img.astype(np.float32) / 255, (224, 224)) - [0.485, 0.456, 0.406]) / [0.229, 0.224, 0.225]
    with torch.no_grad():
        ref = model.features[:30](torch.from_numpy(x.transpose(2, 0, 1).astype(np.float32))[None])[0]
    np.testing.assert_allclose(D, ref.reshape(512, -1).T.numpy(), rtol=1e-4, atol=1e-4)
    assert K[0, 0] == pytest.approx(160 / 28) and K[0, 1] == pytest.approx(120 / 28)


@pytest.mark.parametrize("array,what", [(np.ones((3, 4)) + 1j, "complex"), (np.ones((3, 4), bool), "booleans")])
def test_precomputed_refuses_complex_and_bool_files_naming_them(tmp_path, array, what):
    np.save(tmp_path / "q.npy", array)
    with pytest.raises(TypeError, match=rf"q\.npy.*{what}"):
        get_plugin("descriptor", "precomputed")(path=str(tmp_path)).describe(_ids_dataset(["q.jpg"]), n_jobs=1,
                                                                             cache=False)
