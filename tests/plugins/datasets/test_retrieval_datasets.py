"""oxford5k and holidays: real ground truth from ../shared/data, and fixtures in the official layouts."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from lfabench import get_plugin
from lfabench.dataset import DatasetNotFoundError

from data_helpers import need_shared

LANDMARKS = ("all_souls", "ashmolean", "balliol", "bodleian", "christ_church", "cornmarket", "hertford", "keble",
             "magdalen", "pitt_rivers", "radcliffe_camera")


def _real_gnd():
    path = need_shared("oxford5k") / "gnd_oxford5k.pkl"
    with open(path, "rb") as fh:
        return pickle.load(fh)  # the trusted shared copy; the plugin itself uses a restricted unpickler


@pytest.mark.shared_data
def test_oxford_pkl_gives_55_queries_with_boxes():
    root = need_shared("oxford5k")
    ds = get_plugin("dataset", "oxford5k")(root=str(root), require_images=False)
    gt, raw = ds.ground_truth, _real_gnd()
    assert ds.task == "retrieval" and gt.queries.size == 55 and ds.n_samples == 5063
    assert [ds.sample_ids[q] for q in gt.queries] == list(raw["qimlist"])
    for q in range(55):
        np.testing.assert_array_equal(gt.positives[q], raw["gnd"][q]["ok"])
        np.testing.assert_array_equal(gt.junk[q], raw["gnd"][q]["junk"])
        x1, y1, x2, y2 = gt.bboxes[q]
        assert x1 < x2 and y1 < y2 and gt.bboxes[q] == tuple(raw["gnd"][q]["bbx"])
    assert sum(p.size for p in gt.positives) == sum(len(g["ok"]) for g in raw["gnd"])
    # labels: each query carries its landmark (5 queries per landmark, in the official order)
    assert [ds.class_names[ds.labels[q]] for q in gt.queries] == [lm for lm in LANDMARKS for _ in range(5)]
    assert ds.info["query_region"] == "bbox"
    with pytest.raises(DatasetNotFoundError, match="oxbuild_images"):
        get_plugin("dataset", "oxford5k")(root=str(root))  # the shared copy has no images


def _write_gt_files(tmp_path, raw):
    """The official txt layout, written from the real pkl ground truth (good = ok list, ok and junk as given)."""
    gt_dir = tmp_path / "gt_files_170407"
    gt_dir.mkdir(parents=True)
    img_dir = tmp_path / "oxbuild_images"
    img_dir.mkdir()
    for name in raw["imlist"]:
        (img_dir / f"{name}.jpg").write_bytes(b"")
    im = raw["imlist"]
    for q, qname in enumerate(raw["qimlist"]):
        stem = f"{LANDMARKS[q // 5]}_{q % 5 + 1}"
        box = " ".join(str(v) for v in raw["gnd"][q]["bbx"])
        (gt_dir / f"{stem}_query.txt").write_text(f"oxc1_{qname} {box}\n")
        ok = list(raw["gnd"][q]["ok"])
        half = len(ok) // 2
        (gt_dir / f"{stem}_good.txt").write_text("".join(im[i] + "\n" for i in ok[:half]))
        (gt_dir / f"{stem}_ok.txt").write_text("".join(im[i] + "\n" for i in ok[half:]))
        (gt_dir / f"{stem}_junk.txt").write_text("".join(im[i] + "\n" for i in raw["gnd"][q]["junk"]))
    return tmp_path


@pytest.mark.shared_data
def test_oxford_txt_layout_agrees_with_pkl(tmp_path):
    raw = _real_gnd()
    root = _write_gt_files(tmp_path / "ox", raw)
    ds = get_plugin("dataset", "oxford5k")(root=str(root), ground_truth="txt")
    assert ds.info["ground_truth"] == "txt" and ds.images is not None
    assert list(ds.sample_ids) == sorted(raw["imlist"])
    gt = ds.ground_truth
    assert gt.queries.size == 55
    for q in range(55):
        assert ds.sample_ids[gt.queries[q]] == raw["qimlist"][q]
        assert sorted(ds.sample_ids[gt.positives[q]]) == sorted(raw["imlist"][i] for i in raw["gnd"][q]["ok"])
        assert sorted(ds.sample_ids[gt.junk[q]]) == sorted(raw["imlist"][i] for i in raw["gnd"][q]["junk"])
        assert gt.bboxes[q] == pytest.approx(tuple(raw["gnd"][q]["bbx"]))
    # auto picks txt when the folder is there; a missing image is a partial copy with the fix
    assert get_plugin("dataset", "oxford5k")(root=str(root)).info["ground_truth"] == "txt"
    victim = raw["imlist"][raw["gnd"][0]["ok"][0]]
    (root / "oxbuild_images" / f"{victim}.jpg").unlink()
    with pytest.raises(DatasetNotFoundError, match=f"partial copy.*{victim}") as err:
        get_plugin("dataset", "oxford5k")(root=str(root))
    assert "lfabench data add oxford5k" in str(err.value)


def test_oxford_pkl_with_code_is_refused(tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    (tmp_path / "gnd_oxford5k.pkl").write_bytes(pickle.dumps({"imlist": [], "qimlist": [], "gnd": [Evil()]}))
    with pytest.raises(ValueError, match="refusing to load builtins.print"):
        get_plugin("dataset", "oxford5k")(root=str(tmp_path), require_images=False)


@pytest.mark.shared_data
def test_holidays_real_list_gives_500_groups_and_991_positives():
    root = need_shared("holidays")
    ds = get_plugin("dataset", "holidays")(root=str(root), require_images=False)
    gt = ds.ground_truth
    assert ds.n_samples == 1491 and gt.queries.size == 500 and len(ds.class_names) == 500
    assert sum(p.size for p in gt.positives) == 991
    assert gt.exclude_query_from_ranking
    stems = np.array([int(s[:-4]) for s in ds.sample_ids])
    assert np.all(stems[gt.queries] % 100 == 0)
    for q, pos in zip(gt.queries, gt.positives):
        assert q not in pos and np.all(stems[pos] // 100 == stems[q] // 100)
    assert np.array_equal(ds.labels, np.unique(stems // 100, return_inverse=True)[1])
    with pytest.raises(DatasetNotFoundError, match="jpg"):
        get_plugin("dataset", "holidays")(root=str(root))


def test_holidays_fixture_folder_and_rotated_variant(tmp_path):
    names = ["100000.jpg", "100001.jpg", "100002.jpg", "100100.jpg", "100101.jpg", "100200.jpg"]
    for folder in ("jpg", "jpg_rotated"):
        (tmp_path / folder).mkdir()
        for n in names:
            (tmp_path / folder / n).write_bytes(b"x")
    ds = get_plugin("dataset", "holidays")(root=str(tmp_path), strict=False)
    gt = ds.ground_truth
    assert list(gt.queries) == [0, 3, 5]
    assert [list(p) for p in gt.positives] == [[1, 2], [4], []]
    assert ds.images[0].endswith("jpg/100000.jpg")
    rot = get_plugin("dataset", "holidays")(root=str(tmp_path), strict=False, rotation_corrected=True)
    assert rot.images[0].endswith("jpg_rotated/100000.jpg") and rot.info["rotation_corrected"]
    with pytest.raises(DatasetNotFoundError, match="6 images, expected 1491"):
        get_plugin("dataset", "holidays")(root=str(tmp_path))
    (tmp_path / "jpg" / "100101.jpg").unlink()
    (tmp_path / "holidays_images.dat").write_text("\n".join(names))
    with pytest.raises(DatasetNotFoundError, match="1 of 6 images missing.*100101"):
        get_plugin("dataset", "holidays")(root=str(tmp_path), strict=False)
