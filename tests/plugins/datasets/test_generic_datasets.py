"""``imagefolder``, ``retrieval_folder``, ``roxford5k``/``rparis6k`` and ``copy_detection`` on real or hand-made folders."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

from lfabench.dataset import DatasetNotFoundError
from lfabench.testing import dataset_checks, parametrize, run_cases
from lfabench_plugins.datasets.copy_detection import (
    CROP_LEVELS,
    JPEG_QUALITIES,
    attack,
    draw_attacks,
    load_copy_detection,
)
from lfabench_plugins.datasets.imagefolder import load_imagefolder
from lfabench_plugins.datasets.retrieval_folder import load_retrieval_folder
from lfabench_plugins.datasets.revisited import load_roxford5k
from lfabench_plugins.datasets.scene15 import load_scene15

from conftest import run_cli
from data_helpers import need_shared, scene15_subset, shared_data_dir, textured_image, write_jpeg

SCENE15 = shared_data_dir() / "scene15" if shared_data_dir() else None


# ----------------------------------------------------------------------------------------------- imagefolder
@pytest.mark.shared_data
def test_imagefolder_reads_scene15_exactly_as_its_own_loader():
    root = need_shared("scene15")
    ours, reference = load_imagefolder(root=str(root)), load_scene15(root=str(root))
    assert list(ours.sample_ids) == list(reference.sample_ids) and ours.n_samples == 4485
    assert ours.class_names == reference.class_names
    np.testing.assert_array_equal(ours.labels, reference.labels)


def _tiny_imagefolder(tmp_path):
    for c, cls in enumerate(("b_cls", "a_cls")):
        for i in range(3):
            write_jpeg(tmp_path / cls / ("sub" if i == 2 else "") / f"im{i}.jpg", textured_image(10 * c + i, (48, 64)))
    (tmp_path / "a_cls" / "notes.txt").write_text("not an image")
    (tmp_path / ".hidden").mkdir()
    return tmp_path


def test_imagefolder_layout_rules(tmp_path):
    ds = load_imagefolder(root=str(_tiny_imagefolder(tmp_path)))
    assert ds.class_names == ["a_cls", "b_cls"]          # sorted, as torchvision's find_classes
    assert list(ds.sample_ids) == ["a_cls/im0.jpg", "a_cls/im1.jpg", "a_cls/sub/im2.jpg",
                                   "b_cls/im0.jpg", "b_cls/im1.jpg", "b_cls/sub/im2.jpg"]
    assert ds.labels.tolist() == [0, 0, 0, 1, 1, 1]
    (tmp_path / "c_empty").mkdir()
    with pytest.raises(DatasetNotFoundError, match="c_empty"):
        load_imagefolder(root=str(tmp_path))


@parametrize(dataset_checks(load_imagefolder, {"root": str(SCENE15)}, name="imagefolder"))
def test_imagefolder_conformance_on_scene15(check):
    check()


@pytest.mark.slow
@pytest.mark.shared_data
def test_imagefolder_runs_end_to_end_on_scene15(tmp_path):
    """A folder of real photos, one sub-folder per class: the first 30 images of each Fifteen Scene class, linked
    (all 4,485 would only extract SIFT ten times longer)."""
    need_shared("scene15")
    root = scene15_subset(tmp_path / "photos", per_class=30)["params"]["root"]
    proc = run_cli(["run", "dataset=imagefolder", f"dataset.params.root={root}", "aggregator=bow",
                    "aggregator.params.n_clusters=64", "descriptor.params.max_keypoints=90", "hydra.run.dir=r"],
                   cwd=tmp_path, env={"LFABENCH_CACHE": str(tmp_path / "cache")})
    rec = json.loads((tmp_path / "r" / "result.json").read_text())
    assert rec["status"] == "ok" and rec["dataset"]["n_samples"] == 450 and rec["dataset"]["n_classes"] == 15
    assert rec["config"]["descriptor"]["name"] == "sift" and rec["config"]["evaluator"]["name"] == "knn"
    chance = 100.0 * 30 / 450                                     # every class has 30 images: the majority class
    assert rec["metrics"]["accuracy"] > chance, proc.stdout      # real features beat the majority class


# ------------------------------------------------------------------------------------------ retrieval folders
def _photos(tmp_path, n=8):
    """``n`` distinct real-looking images ``img<i>.jpg`` (textured blobs) in ``tmp_path/jpg``."""
    for i in range(n):
        write_jpeg(tmp_path / "jpg" / f"img{i}.jpg", textured_image(100 + i, (60, 80)))
    return [f"img{i}" for i in range(n)]


def _revisited_gnd(tmp_path, name="gnd_roxford5k.pkl"):
    names = _photos(tmp_path, 8)
    imlist, qimlist = names[:6], names[6:]
    gnd = [{"easy": [0, 1], "hard": [2], "junk": [3], "bbx": [1.0, 2.0, 40.0, 50.0]},
           {"easy": [4], "hard": [], "junk": [], "bbx": [0.0, 0.0, 79.0, 59.0]}]
    (tmp_path / name).write_bytes(pickle.dumps({"imlist": imlist, "qimlist": qimlist, "gnd": gnd}))
    return tmp_path


def test_revisited_layout_separates_queries_and_keeps_the_difficulty(tmp_path):
    ds = load_roxford5k(root=str(_revisited_gnd(tmp_path)), strict=False)
    gt = ds.ground_truth
    assert list(ds.sample_ids) == [f"img{i}" for i in range(6)] + ["query/img6", "query/img7"]
    assert gt.queries.tolist() == [6, 7] and gt.database.tolist() == list(range(6))
    assert [p.tolist() for p in gt.positives] == [[0, 1, 2], [4]] and [j.tolist() for j in gt.junk] == [[3], []]
    assert [e.tolist() for e in gt.difficulty["easy"]] == [[0, 1], [4]]
    assert [h.tolist() for h in gt.difficulty["hard"]] == [[2], []]
    assert gt.bboxes[0] == (1.0, 2.0, 40.0, 50.0) and not gt.exclude_query_from_ranking
    with pytest.raises(DatasetNotFoundError, match="expected 4993 and 70"):
        load_roxford5k(root=str(tmp_path))


def test_revisited_distractors_extend_the_database(tmp_path):
    _revisited_gnd(tmp_path)
    for i in range(3):
        write_jpeg(tmp_path / "r1m" / f"d{i}.jpg", textured_image(500 + i, (40, 40)))
    (tmp_path / "r1m" / "list.txt").write_text("d0.jpg\nd1.jpg\nd2.jpg\n")
    ds = load_roxford5k(root=str(tmp_path), strict=False, distractors=str(tmp_path / "r1m" / "list.txt"))
    assert ds.ground_truth.database.tolist() == list(range(9)) and ds.ground_truth.queries.tolist() == [9, 10]
    assert ds.labels[6:9].tolist() == [-1, -1, -1] and ds.info["n_distractors"] == 3
    assert ds.fingerprint() != load_roxford5k(root=str(tmp_path), strict=False).fingerprint()


def test_the_gnd_file_is_read_without_loading_code(tmp_path):
    _photos(tmp_path, 2)
    (tmp_path / "gnd_x.pkl").write_bytes(pickle.dumps({"imlist": ["img0"], "qimlist": ["img1"],
                                                       "gnd": [{"ok": [0], "junk": [], "bbx": np.ones(4)}]}))
    with pytest.raises(ValueError, match="refusing to load numpy"):
        load_retrieval_folder(root=str(tmp_path))


def test_json_and_csv_ground_truth_give_the_same_dataset(tmp_path):
    names = [f"jpg/{n}.jpg" for n in _photos(tmp_path, 6)]
    queries = [{"query": names[0], "positives": [names[1], names[2]], "junk": [names[3]], "bbox": [0, 0, 30, 30]},
               {"query": names[4], "positives": [names[5]]}]
    (tmp_path / "groundtruth.json").write_text(json.dumps({"queries": queries}))
    from_json = load_retrieval_folder(root=str(tmp_path))
    (tmp_path / "groundtruth.json").unlink()
    (tmp_path / "groundtruth.csv").write_text(
        f"query,positives,junk,bbox\n{names[0]},{names[1]} {names[2]},{names[3]},0 0 30 30\n{names[4]},{names[5]},,\n")
    from_csv = load_retrieval_folder(root=str(tmp_path))
    for ds in (from_json, from_csv):
        gt = ds.ground_truth
        assert list(ds.sample_ids) == names and gt.queries.tolist() == [0, 4] and gt.exclude_query_from_ranking
        assert [p.tolist() for p in gt.positives] == [[1, 2], [5]] and [j.tolist() for j in gt.junk] == [[3], []]
        assert gt.bboxes == [(0.0, 0.0, 30.0, 30.0), None]
    assert from_json.fingerprint() == from_csv.fingerprint()
    (tmp_path / "groundtruth.csv").write_text(f"query,positives\n{names[0]},jpg/absent.jpg\n")
    with pytest.raises(ValueError, match="jpg/absent.jpg"):
        load_retrieval_folder(root=str(tmp_path))


@pytest.fixture(scope="module")
def revisited_folder(tmp_path_factory):
    return _revisited_gnd(tmp_path_factory.mktemp("revisited"), "gnd_mine.pkl")


def test_retrieval_folder_conformance(revisited_folder):
    results = run_cases(dataset_checks(load_retrieval_folder, {"root": str(revisited_folder)}))
    assert all(r.status == "pass" for r in results), [(r.name, r.message) for r in results if r.status != "pass"]


def test_data_add_registers_and_verifies_a_retrieval_folder(revisited_folder, tmp_path, monkeypatch, capsys):
    from lfabench.cli import main

    monkeypatch.setenv("LFABENCH_DATA", str(tmp_path / "data"))
    assert main(["data", "add", "retrieval_folder", str(revisited_folder)]) == 0
    out = capsys.readouterr().out
    assert "8 images, 2 queries, 4 positives" in out and "status: complete" in out
    registry = json.loads((tmp_path / "data" / "registry.json").read_text())
    assert registry == {"retrieval_folder": str(revisited_folder.resolve())}
    (revisited_folder / "jpg" / "img5.jpg").rename(revisited_folder / "img5.moved")
    try:
        assert main(["data", "verify", "retrieval_folder"]) == 1
        assert "1 of 8 images missing" in capsys.readouterr().out
    finally:
        (revisited_folder / "img5.moved").rename(revisited_folder / "jpg" / "img5.jpg")


# --------------------------------------------------------------------------------------------- copy detection
def test_attacks_do_what_they_say():
    image = textured_image(3, (100, 120))
    crop = attack(image, "crop40", (0, 0, 0))
    assert abs(crop.size / image.size - 0.6) < 0.02     # 40% of the area removed
    top, left = next((y, x) for y in range(101 - crop.shape[0]) for x in range(121 - crop.shape[1])
                     if np.array_equal(image[y:y + crop.shape[0], x:x + crop.shape[1]], crop))
    assert top >= 0 and left >= 0                       # a window of the original, not resampled
    low = attack(image, "jpeg3", (0, 0, 0))
    assert low.shape == image.shape and 0 < np.abs(low.astype(int) - image).mean() < 40
    assert attack(image, "scaling0.50", (0, 0, 0)).shape == (50, 60)
    np.testing.assert_array_equal(attack(image, "contrast1.00_0", (0, 0, 0)), image)
    assert np.array_equal(attack(image, "noise20.0", (1, 2, 3)), attack(image, "noise20.0", (1, 2, 3)))
    with pytest.raises(ValueError, match="unknown attack"):
        attack(image, "paint", (0,))


def test_every_drawn_attack_applies_and_a_rotation_is_the_angle_its_name_states():
    import cv2

    image = textured_image(5, (60, 80))
    names = [n for copies in draw_attacks(400, ["crop", "jpeg", "strong"], 1, seed=0) for n in copies]
    rotations = [n for n in names if n.startswith("rotation")]
    # both directions are drawn (a negative angle once made the name unreadable: 'rotation--26')
    assert any(n.startswith("rotation-") for n in rotations) and any(n.startswith("rotation+") for n in rotations)
    for name in names:
        assert attack(image, name, (0, 1)).dtype == np.uint8
    for name in rotations[:6]:
        angle = int(name[len("rotation"):])
        assert 10 <= abs(angle) <= 45
        centre = ((image.shape[1] - 1) / 2.0, (image.shape[0] - 1) / 2.0)
        expected = cv2.warpAffine(image, cv2.getRotationMatrix2D(centre, angle, 1.0), image.shape[::-1],
                                  flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
        np.testing.assert_array_equal(attack(image, name, (0, 1)), expected)


@pytest.mark.shared_data
def test_copy_detection_on_a_subset_of_scene15():
    root = need_shared("scene15")
    ds = load_copy_detection(root=str(root), n_originals=12, seed=3)
    again = load_copy_detection(root=str(root), n_originals=12, seed=3)
    other = load_copy_detection(root=str(root), n_originals=12, seed=4)
    assert ds.n_samples == 12 * 4 and list(ds.sample_ids) == list(again.sample_ids)
    assert ds.fingerprint() == again.fingerprint() != other.fingerprint()
    gt = ds.ground_truth
    assert gt.exclude_query_from_ranking and gt.queries.tolist() == list(range(12))
    for q in range(12):   # the group: the original's copies, one per family
        ids = [ds.sample_ids[i] for i in gt.positives[q]]
        assert all(i.startswith(f"copy/{ds.sample_ids[q]}#") for i in ids)
        kinds = [i.rsplit("#", 1)[1] for i in ids]
        assert int(kinds[0][4:]) in CROP_LEVELS and int(kinds[1][4:]) in JPEG_QUALITIES
        assert not kinds[2].startswith(("crop", "jpeg"))
    first_copy = ds.load_image(12)
    np.testing.assert_array_equal(first_copy, again.load_image(12))      # deterministic from the seed
    results = run_cases(dataset_checks(load_copy_detection, {"root": str(root), "n_originals": 12}))
    assert all(r.status == "pass" for r in results), [(r.name, r.message) for r in results if r.status != "pass"]
