"""voc2007 and cub200: the real VOC image sets, and fixtures in the official layouts."""

from __future__ import annotations

import numpy as np
import pytest

from lfabench import get_plugin
from lfabench.dataset import DatasetNotFoundError

from data_helpers import need_shared

CLASSES = ("aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow", "diningtable",
           "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa", "train", "tvmonitor")


def _labels_by_hand(main, split):
    """An independent reading of the class files: {id: {class: value}}."""
    out = {}
    for c in CLASSES:
        for ln in (main / f"{c}_{split}.txt").read_text().split("\n"):
            if ln.strip():
                i, v = ln.split()
                out.setdefault(i, {})[c] = int(v)
    return out


@pytest.mark.shared_data
@pytest.mark.parametrize("split", ["trainval", "test"])
def test_real_voc_image_sets_parse(split):
    root = need_shared("voc2007")
    main = root / "ImageSets" / "Main"
    table = _labels_by_hand(main, split)
    assert len(table) == (5011 if split == "trainval" else 4952)
    for difficult in ("exclude", "ignore"):
        ds = get_plugin("dataset", "voc2007")(root=str(root), image_set=split, difficult=difficult,
                                              require_images=False)
        expect = {i: [c for c, v in t.items() if v == 1][0] for i, t in table.items()
                  if sum(v == 1 for v in t.values()) == 1 and (difficult == "ignore" or 0 not in t.values())}
        assert dict(zip(ds.sample_ids, (ds.class_names[y] for y in ds.labels))) == expect
        assert ds.class_names == list(CLASSES) and set(ds.labels) == set(range(20))
    # the class called "train" is read from train_<split>.txt, not from the image list train.txt
    ds = get_plugin("dataset", "voc2007")(root=str(root), image_set=split, require_images=False)
    n_train_class = sum(1 for i, t in table.items() if t["train"] == 1 and sum(v == 1 for v in t.values()) == 1
                        and 0 not in t.values())
    assert int(np.sum(ds.labels == CLASSES.index("train"))) == n_train_class > 0


@pytest.mark.shared_data
def test_real_voc_counts_and_missing_images():
    root = need_shared("voc2007")
    counts = {(s, d): get_plugin("dataset", "voc2007")(root=str(root), image_set=s, difficult=d,
                                                       require_images=False).n_samples
              for s in ("trainval", "test") for d in ("exclude", "ignore")}
    assert counts == {("trainval", "exclude"): 2808, ("trainval", "ignore"): 3103,
                      ("test", "exclude"): 2841, ("test", "ignore"): 3192}
    both = get_plugin("dataset", "voc2007")(root=str(root), image_set="trainval+test", require_images=False)
    assert both.n_samples == 2808 + 2841
    with pytest.raises(DatasetNotFoundError, match="JPEGImages") as err:
        get_plugin("dataset", "voc2007")(root=str(root))
    assert "lfabench data fetch voc2007" in str(err.value)


def test_voc_fixture_in_the_vocdevkit_layout(tmp_path):
    voc = tmp_path / "VOCdevkit" / "VOC2007"
    main = voc / "ImageSets" / "Main"
    main.mkdir(parents=True)
    (voc / "JPEGImages").mkdir()
    ids = ["000001", "000002", "000003", "000004"]
    # 000001: only dog; 000002: dog + person; 000003: train, with a difficult bottle; 000004: only train
    truth = {"000001": {"dog": 1}, "000002": {"dog": 1, "person": 1}, "000003": {"train": 1, "bottle": 0},
             "000004": {"train": 1}}
    (main / "test.txt").write_text("\n".join(ids) + "\n")
    for c in CLASSES:
        (main / f"{c}_test.txt").write_text("".join(f"{i} {truth[i].get(c, -1):2d}\n" for i in ids))
    for i in ids:
        (voc / "JPEGImages" / f"{i}.jpg").write_bytes(b"x")
    ds = get_plugin("dataset", "voc2007")(root=str(tmp_path), image_set="test")
    assert list(ds.sample_ids) == ["000001", "000004"]
    assert [ds.class_names[y] for y in ds.labels] == ["dog", "train"]
    ds = get_plugin("dataset", "voc2007")(root=str(tmp_path), image_set="test", difficult="ignore")
    assert list(ds.sample_ids) == ["000001", "000003", "000004"]
    with pytest.raises(DatasetNotFoundError, match="trainval.txt"):
        get_plugin("dataset", "voc2007")(root=str(tmp_path), image_set="trainval")
    with pytest.raises(ValueError, match="image_set"):
        get_plugin("dataset", "voc2007")(root=str(tmp_path), image_set="everything")


def _cub_fixture(root, n_classes=3, per_class=4, train_every=2):
    cub = root / "CUB_200_2011"
    lines, labels, split, classes = [], [], [], []
    k = 0
    for c in range(n_classes):
        folder = f"{c + 1:03d}.Bird_{c}"
        classes.append(f"{c + 1} {folder}")
        for j in range(per_class):
            k += 1
            rel = f"{folder}/Bird_{c}_{j:04d}.jpg"
            (cub / "images" / folder).mkdir(parents=True, exist_ok=True)
            (cub / "images" / rel).write_bytes(b"x")
            lines.append(f"{k} {rel}")
            labels.append(f"{k} {c + 1}")
            split.append(f"{k} {int(j % train_every == 0)}")
    for name, rows in (("images.txt", lines), ("image_class_labels.txt", labels),
                       ("train_test_split.txt", split), ("classes.txt", classes)):
        (cub / name).write_text("\n".join(rows) + "\n")
    return cub


def test_cub_fixture_official_layout_and_split(tmp_path):
    cub = _cub_fixture(tmp_path)
    with pytest.raises(DatasetNotFoundError, match="12 images in 3 classes, expected 11788 in 200"):
        get_plugin("dataset", "cub200")(root=str(tmp_path))
    ds = get_plugin("dataset", "cub200")(root=str(tmp_path), strict=False)
    assert ds.n_samples == 12 and ds.class_names == ["001.Bird_0", "002.Bird_1", "003.Bird_2"]
    np.testing.assert_array_equal(ds.labels, np.repeat([0, 1, 2], 4))
    train, test = ds.official_split
    np.testing.assert_array_equal(train, [0, 2, 4, 6, 8, 10])
    np.testing.assert_array_equal(test, [1, 3, 5, 7, 9, 11])
    assert ds.sample_ids[5] == "002.Bird_1/Bird_1_0001.jpg"
    (cub / "images" / "002.Bird_1" / "Bird_1_0001.jpg").unlink()
    with pytest.raises(DatasetNotFoundError, match="1 of 12 images missing") as err:
        get_plugin("dataset", "cub200")(root=str(tmp_path), strict=False)
    assert "lfabench data fetch cub200" in str(err.value)
    (cub / "train_test_split.txt").unlink()
    with pytest.raises(DatasetNotFoundError, match="train_test_split.txt"):
        get_plugin("dataset", "cub200")(root=str(tmp_path), strict=False)
