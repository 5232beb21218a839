"""Images as a photo viewer shows them: 16-bit and float files scaled (never clipped) to 8 bits for every
descriptor, and the EXIF orientation applied; Fifteen Scene reads exactly as before."""

from __future__ import annotations

import io

import cv2
import numpy as np
import pytest
from PIL import Image, ImageOps

from lfabench import get_plugin
from lfabench.dataset import Dataset
from lfabench.images import CorruptImageError, apply_orientation, read_image_file, to_uint8

from data_helpers import need_shared, textured_image


def _colour(seed=0, shape=(96, 128)) -> np.ndarray:
    """An 8-bit RGB image with texture in every channel."""
    return np.stack([textured_image(seed + c, shape) for c in range(3)], axis=2)


def _write(path, array) -> str:
    ok, buf = cv2.imencode(path.suffix, array[..., ::-1] if array.ndim == 3 else array)  # OpenCV writes BGR
    assert ok
    path.write_bytes(buf.tobytes())
    return str(path)


def test_16_bit_colour_and_grey_files_read_as_their_8_bit_images(tmp_path):
    """A 16-bit colour PNG became a white image (0..65535 clipped to 255): SIFT found nothing, a run scored 0."""
    rgb8 = _colour()
    rgb16 = rgb8.astype(np.uint16) * 257                          # the same picture, 16 bits per channel
    assert np.array_equal(read_image_file(_write(tmp_path / "c16.png", rgb16)), rgb8)
    grey8 = textured_image(3)
    assert np.array_equal(read_image_file(_write(tmp_path / "g16.png", grey8.astype(np.uint16) * 257)), grey8)
    assert read_image_file(_write(tmp_path / "c8.png", rgb8)).dtype == np.uint8


def test_float_files_are_scaled_not_clipped(tmp_path):
    grey = textured_image(5).astype(np.float32)
    unit = _write(tmp_path / "unit.tiff", grey / 255.0)          # [0, 1]: black to white
    assert np.abs(read_image_file(unit).astype(int) - grey.astype(int)).max() <= 1
    wide = _write(tmp_path / "wide.tiff", grey * 40.0)           # 0..10,200: scaled from its own range
    out = read_image_file(wide)
    assert out.max() == 255 and np.corrcoef(out.ravel(), grey.ravel())[0, 1] > 0.999
    bad = grey.copy()
    bad[0, 0] = np.nan
    with pytest.raises(CorruptImageError, match="NaN or infinite"):
        read_image_file(_write(tmp_path / "nan.tiff", bad))


def test_to_uint8_rules():
    assert to_uint8(np.array([[0, 257, 65535]], np.uint16)).tolist() == [[0, 1, 255]]
    assert to_uint8(np.array([[0.0, 0.5, 1.0]])).tolist() == [[0, 128, 255]]
    assert to_uint8(np.array([[0.0, 16.0, 200.0]])).tolist() == [[0, 16, 200]]      # 0..255 kept
    assert to_uint8(np.array([[-1.0, 0.0, 1.0]])).tolist() == [[0, 128, 255]]       # own range
    assert to_uint8(np.array([[0.0, 500.0, 1000.0]])).tolist() == [[0, 128, 255]]
    img = np.zeros((2, 2), np.uint8)
    assert to_uint8(img) is img


@pytest.mark.parametrize("name", ["sift", "daisy", "dense_sift", "patches"])
def test_every_descriptor_sees_the_16_bit_file_as_its_8_bit_twin(tmp_path, name):
    """16-bit and float images reached `patches` unscaled; SIFT and DAISY found 0 descriptors in 16-bit colour."""
    eight, sixteen = [], []
    for i in range(2):
        rgb8 = _colour(10 * i)
        eight.append(_write(tmp_path / f"a{i}.png", rgb8))
        sixteen.append(_write(tmp_path / f"b{i}.png", rgb8.astype(np.uint16) * 257))
    descriptor = get_plugin("descriptor", name)()

    def bags(paths):
        ds = Dataset(name="files", task="classification", sample_ids=[f"s{i}" for i in range(2)],
                     labels=np.arange(2), images=paths)
        return descriptor.describe(ds, cache=False, n_jobs=1, progress=False)

    a, b = bags(eight), bags(sixteen)
    assert a.n_descriptors > 0 and np.array_equal(a.descriptors, b.descriptors)
    assert np.array_equal(a.offsets, b.offsets)


def test_in_memory_16_bit_colour_becomes_grey_like_8_bit():
    from lfabench_plugins.descriptors.localfeatures import to_gray_uint8

    rgb8 = _colour(2)
    assert np.array_equal(to_gray_uint8(rgb8.astype(np.uint16) * 257), to_gray_uint8(rgb8))
    grey = textured_image(1).astype(np.float64)
    assert np.array_equal(to_gray_uint8(grey), grey.astype(np.uint8))                  # 0..255 floats kept
    assert to_gray_uint8(grey * 4).max() == 255 and to_gray_uint8(grey * 4).min() == 0  # scaled, not clipped


def _jpeg_with_orientation(array: np.ndarray, orientation: int) -> bytes:
    image = Image.fromarray(array)
    exif = image.getexif()
    exif[0x0112] = orientation
    buf = io.BytesIO()
    image.save(buf, format="PNG", exif=exif.tobytes())   # lossless, so the pixels compare exactly
    return buf.getvalue()


@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_is_applied_as_pillow_does(tmp_path, orientation):
    array = _colour(4, (30, 50))
    path = tmp_path / f"o{orientation}.png"
    path.write_bytes(_jpeg_with_orientation(array, orientation))
    expected = np.asarray(ImageOps.exif_transpose(Image.open(path)))
    got = read_image_file(path)
    assert got.shape == expected.shape and np.array_equal(got, expected)
    assert np.array_equal(apply_orientation(array, orientation), expected)


@pytest.mark.slow
@pytest.mark.shared_data
def test_fifteen_scene_reads_exactly_as_before():
    """Every Fifteen Scene image is an 8-bit JPEG without an orientation tag, so what it reads, hence its
    descriptors and every fingerprint after them, is what OpenCV decodes, as before."""
    root = need_shared("scene15")
    paths = sorted(root.glob("*/*.jpg"))
    assert len(paths) == 4485
    for path in paths:
        with Image.open(path) as im:
            assert im.mode in ("L", "RGB") and im.getexif().get(0x0112, 1) == 1, path
    for path in paths[::150]:
        raw = cv2.imdecode(np.frombuffer(path.read_bytes(), np.uint8), cv2.IMREAD_UNCHANGED)
        raw = cv2.cvtColor(raw, cv2.COLOR_BGR2RGB) if raw.ndim == 3 else raw
        assert np.array_equal(read_image_file(path), raw), path
