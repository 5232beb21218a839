"""Own photos under names of their own: `lfabench data add NAME PATH --as imagefolder` (or retrieval_folder)
makes NAME a dataset plugin reading that folder; several folders, each its own dataset and fingerprint."""

from __future__ import annotations

import json

import pytest

from lfabench.cli import main
from lfabench.dataroot import registered, registered_as
from lfabench.registry import get_plugin, get_registry, reset_registry

from conftest import run_cli
from data_helpers import textured_image, write_jpeg


def _folder(root, seed, classes=("a", "b"), per_class=4):
    for c, cls in enumerate(classes):
        for i in range(per_class):
            write_jpeg(root / cls / ("deeper" if i == 0 else "") / f"im{i}.jpg", textured_image(seed + 10 * c + i,
                                                                                               (48, 64)))
    return root


@pytest.fixture
def data_root(tmp_path, monkeypatch):
    monkeypatch.setenv("LFABENCH_DATA", str(tmp_path / "data"))
    reset_registry()
    yield tmp_path / "data"
    reset_registry()


def test_two_folders_are_two_datasets_with_their_own_fingerprints(tmp_path, data_root, capsys):
    birds, cats = _folder(tmp_path / "birds", 0), _folder(tmp_path / "cats", 50, classes=("x", "y", "z"))
    assert main(["data", "add", "birds", str(birds), "--as", "imagefolder"]) == 0
    assert main(["data", "add", "cats", str(cats), "--as", "imagefolder"]) == 0
    out = capsys.readouterr().out
    assert "found: 8 images, 2 classes" in out and "found: 12 images, 3 classes" in out
    assert "lfabench run dataset=birds" in out
    assert registered_as() == {"birds": "imagefolder", "cats": "imagefolder"}
    assert registered() == {"birds": str(birds.resolve()), "cats": str(cats.resolve())}
    reset_registry()
    a, b = get_plugin("dataset", "birds")(), get_plugin("dataset", "cats")()
    assert (a.name, a.n_samples, a.class_names) == ("birds", 8, ["a", "b"])
    assert (b.name, b.n_samples, b.class_names) == ("cats", 12, ["x", "y", "z"])
    assert "a/deeper/im0.jpg" in a.sample_ids  # recursion inside a class folder, names relative to it
    assert a.fingerprint() != b.fingerprint()
    spec = get_registry().get_spec("dataset", "birds")
    assert spec.protocol.evaluator == "knn" and spec.protocol.descriptor == "sift"
    assert spec.description.startswith("birds: your own folder read as imagefolder")
    from lfabench.leaderboard.titles import dataset_descriptions, dataset_title

    assert dataset_title("birds") == "birds"  # the board's title and headings name the folder by its name
    assert dataset_descriptions(["birds"])["birds"].startswith("your own folder")  # "birds: birds: ..." never
    assert main(["data", "list"]) == 0
    assert "(as imagefolder)" in capsys.readouterr().out


def test_a_retrieval_folder_under_its_own_name(tmp_path, data_root):
    photos = tmp_path / "trips"
    for i in range(4):
        write_jpeg(photos / f"p{i}.jpg", textured_image(i, (48, 64)))
    (photos / "groundtruth.json").write_text(json.dumps({"queries": [{"query": "p0.jpg", "positives": ["p1.jpg"]}]}))
    assert main(["data", "add", "trips", str(photos), "--as", "retrieval_folder"]) == 0
    reset_registry()
    ds = get_plugin("dataset", "trips")()
    assert ds.name == "trips" and ds.task == "retrieval" and ds.n_samples == 4


def test_add_as_refuses_a_plugins_name_a_bad_name_and_a_plugin_that_reads_no_folder(tmp_path, data_root, capsys):
    birds = _folder(tmp_path / "birds", 0)
    assert main(["data", "add", "scene15", str(birds), "--as", "imagefolder"]) == 2
    assert "'scene15' is the name of a dataset plugin already" in capsys.readouterr().err
    assert main(["data", "add", "My Photos", str(birds), "--as", "imagefolder"]) == 2
    assert "cannot name a dataset" in capsys.readouterr().err
    assert main(["data", "add", "mine", str(birds), "--as", "digits"]) == 2
    assert "--as digits: that plugin reads no folder" in capsys.readouterr().err
    assert registered() == {}


def test_remove_forgets_the_name_and_keeps_the_files(tmp_path, data_root, capsys):
    birds = _folder(tmp_path / "birds", 0)
    assert main(["data", "add", "birds", str(birds), "--as", "imagefolder"]) == 0
    assert main(["data", "remove", "birds"]) == 0 and registered() == {} and (birds / "a" / "im1.jpg").is_file()
    reset_registry()
    assert "birds" not in get_registry().names("dataset")
    assert main(["data", "remove", "birds"]) == 2


def test_a_broken_registry_entry_names_the_file(data_root):
    data_root.mkdir()
    (data_root / "registry.json").write_text(json.dumps({"birds": {"path": 3}}))
    with pytest.raises(ValueError, match=r"registry.json: entry 'birds' must be a path or"):
        registered()


@pytest.mark.slow
def test_own_folder_runs_and_reaches_a_board_under_its_name(tmp_path, shared_data):
    """The own-photos guide's path end to end on real photographs (a few Scene-15 classes copied as a user's)."""
    import shutil

    mine = tmp_path / "my_scenes"
    for cls in ("bedroom", "MITcoast", "MITforest"):
        (mine / cls).mkdir(parents=True)
        for path in sorted((shared_data / "scene15" / cls).glob("*.jpg"))[:15]:
            shutil.copy(path, mine / cls / path.name)
    env = {"LFABENCH_DATA": str(tmp_path / "data")}
    run_cli(["data", "add", "myscenes", str(mine), "--as", "imagefolder"], cwd=tmp_path, env=env)
    run_cli(["run", "-m", "dataset=myscenes", "aggregator=bow,vlad", "seed=0,1",
             "hydra.sweep.dir=sweep"], cwd=tmp_path, env=env)
    records = [json.loads(p.read_text()) for p in (tmp_path / "sweep").rglob("result.json")]
    assert len(records) == 4 and {r["status"] for r in records} == {"ok"}
    assert {r["config"]["dataset"]["name"] for r in records} == {"myscenes"}
    run_cli(["leaderboard", "sweep", "--out", "board", "--name", "mine"], cwd=tmp_path, env=env)
    assert (tmp_path / "board" / "mine.md").read_text().startswith("# myscenes: k-NN classification accuracy")
