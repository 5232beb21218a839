"""Ground truth is checked: distinct in-range integer indices, disjoint lists, the query not among its own
positives where the protocol removes it, image names inside the root, query boxes inside their image. Each
error names the file (or the dataset) and the query; `lfabench data add` prints it as one message."""

from __future__ import annotations

import json
import pickle
from collections import OrderedDict

import numpy as np
import pytest

from lfabench.cli import main
from lfabench.dataset import Dataset, RetrievalGroundTruth
from lfabench.params import ConfigError
from lfabench.registry import get_plugin
from lfabench.run import run_benchmark
from lfabench_plugins.datasets.groundtruth import read_csv, read_gnd, read_json
from lfabench_plugins.datasets.oxford5k import read_gnd_pkl

IMLIST = [f"im{i}" for i in range(6)]


def _gnd(tmp_path, entry=None, imlist=IMLIST, qimlist=("q0",), **data):
    gnd = {"imlist": list(imlist), "qimlist": list(qimlist),
           "gnd": [entry if entry is not None else {"easy": [0, 1], "hard": [2], "junk": [3], "bbx": [0, 0, 5, 5]}]}
    gnd.update(data)
    path = tmp_path / "gnd_test.pkl"
    path.write_bytes(pickle.dumps(gnd))
    return path


@pytest.mark.parametrize("entry, words", [
    ({"easy": [0, 0], "hard": [], "junk": []}, "easy lists image 0 twice"),
    ({"easy": [0, 1.0], "hard": [], "junk": []}, "easy holds 1.0 (float), not an integer"),
    ({"easy": [0, True], "hard": [], "junk": []}, "easy holds True (bool)"),
    ({"easy": [0], "hard": [], "junk": [9]}, "junk index 9 out of range"),
    ({"easy": [0, 1], "hard": [], "junk": [1]}, "image 'im1' is both easy and junk"),
    ({"easy": [0], "hard": [0], "junk": []}, "image 'im0' is both easy and hard"),
    ({"ok": [2, 4], "junk": [4]}, "image 'im4' is both ok and junk"),
    ({"easy": "01", "hard": [], "junk": []}, "easy must be a list"),
])
def test_gnd_lists_are_distinct_integers_and_disjoint(tmp_path, entry, words):
    path = _gnd(tmp_path, entry)
    with pytest.raises(ValueError) as info:
        read_gnd(path)
    assert words in str(info.value) and f"{path}, query 0 (q0)" in str(info.value)


@pytest.mark.parametrize("name", ["../outside", "/etc/passwd", "a/../../b", "", "C:\\x"])
def test_gnd_image_names_stay_inside_the_root(tmp_path, name):
    with pytest.raises(ValueError, match="imlist\\[2\\]: image name .* (leaves the dataset's folder|is not a file)"):
        read_gnd(_gnd(tmp_path, imlist=[*IMLIST[:2], name, *IMLIST[3:]]))
    with pytest.raises(ValueError, match="qimlist\\[0\\]"):
        read_gnd(_gnd(tmp_path, qimlist=[name]))


def test_malformed_pickles_are_one_message(tmp_path):
    """A self-referencing list, nesting deep enough to overflow a repr, and a pickled class: ValueErrors naming
    the file (a RecursionError or a traceback before)."""
    loop = []
    loop.append(loop)
    with pytest.raises(ValueError, match="easy holds a list"):
        read_gnd(_gnd(tmp_path, {"easy": loop, "hard": [], "junk": []}))
    depth = 200_000  # a list nested 200,000 deep, written opcode by opcode (pickle.dumps would recurse)
    deep = (b"\x80\x02}(X\x06\x00\x00\x00imlist]" + b"]" * depth + b"a" * depth
            + b"X\x07\x00\x00\x00qimlist]X\x03\x00\x00\x00gnd]u.")
    path = tmp_path / "gnd_deep.pkl"
    path.write_bytes(deep)
    with pytest.raises(ValueError, match=r"imlist\[0\]: image name a list is not a file name"):
        read_gnd(path)
    with pytest.raises(ValueError, match="not a gnd_oxford5k.pkl ground truth|imlist"):
        read_gnd_pkl(path)
    path.write_bytes(pickle.dumps(OrderedDict(imlist=IMLIST)))
    with pytest.raises(ValueError, match="not a plain-data pickle .*refusing to load collections.OrderedDict"):
        read_gnd(path)


def test_classic_oxford_gnd_is_checked_too(tmp_path):
    path = _gnd(tmp_path, {"ok": [0, 1, 1], "junk": [], "bbx": [0, 0, 1, 1]}, qimlist=["im0"])
    with pytest.raises(ValueError, match="ok lists image 1 twice"):
        read_gnd_pkl(path)
    path = _gnd(tmp_path, {"ok": [0, 1.5], "junk": [], "bbx": [0, 0, 1, 1]}, qimlist=["im0"])
    with pytest.raises(ValueError, match="query 0 \\(im0\\): ok holds 1.5"):
        read_gnd_pkl(path)


def test_json_and_csv_lists(tmp_path):
    def js(rows, database=None):
        path = tmp_path / "groundtruth.json"
        path.write_text(json.dumps({"queries": rows, **({"database": database} if database else {})}))
        return path

    with pytest.raises(ValueError, match="query 0 \\('a.jpg'\\): positives lists image 'b.jpg' twice"):
        read_json(js([{"query": "a.jpg", "positives": ["b.jpg", "b.jpg"]}]))
    with pytest.raises(ValueError, match="image 'b.jpg' is both positive and junk"):
        read_json(js([{"query": "a.jpg", "positives": ["b.jpg"], "junk": ["b.jpg"]}]))
    with pytest.raises(ValueError, match="the query is among its own positives"):
        read_json(js([{"query": "a.jpg", "positives": ["a.jpg", "b.jpg"]}]))
    with pytest.raises(ValueError, match="'../x.jpg' leaves the dataset's folder"):
        read_json(js([{"query": "a.jpg", "positives": ["../x.jpg"]}]))
    with pytest.raises(ValueError, match="database\\[1\\]: image name '/etc/x.jpg' leaves"):
        read_json(js([{"query": "a.jpg", "positives": ["b.jpg"]}], database=["b.jpg", "/etc/x.jpg"]))
    with pytest.raises(ValueError, match="query 0 \\('/abs/q.jpg'\\): image name '/abs/q.jpg' leaves"):
        read_json(js([{"query": "/abs/q.jpg", "positives": ["b.jpg"]}]))
    path = tmp_path / "groundtruth.csv"
    path.write_text("query,positives,junk\na.jpg,b.jpg c.jpg,c.jpg\n")
    with pytest.raises(ValueError, match="line 2 \\(query 'a.jpg'\\): image 'c.jpg' is both positive and junk"):
        read_csv(path)


def test_data_add_prints_one_message_for_a_malformed_ground_truth(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LFABENCH_DATA", str(tmp_path / "data"))
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "gnd_mine.pkl").write_bytes(pickle.dumps(OrderedDict(imlist=IMLIST)))
    code = main(["data", "add", "retrieval_folder", str(folder)])
    out = capsys.readouterr()
    assert code == 1 and "Traceback" not in out.out + out.err
    assert "malformed:" in out.out and "gnd_mine.pkl" in out.out and "refusing to load" in out.out


# ------------------------------------------------------------ the dataset level (any plugin), before work
def test_ground_truth_indices_are_integers():
    for bad in ([1.0, 2.0], [True], ["1"]):
        with pytest.raises(ValueError, match="query 0: positives must be integer sample indices"):
            RetrievalGroundTruth(queries=[0], positives=[bad], junk=[[]])
    with pytest.raises(ValueError, match="queries must be integer"):
        RetrievalGroundTruth(queries=[0.0], positives=[[1]], junk=[[]])
    RetrievalGroundTruth(queries=np.array([0], np.int32), positives=[np.array([1], np.uint8)], junk=[[]])


def _dataset(positives, junk=((),), holidays=False, boxes=None, size=(20, 30)):
    images = [np.zeros(size, np.uint8)] * 4
    gt = RetrievalGroundTruth(queries=[0], positives=[list(p) for p in positives], junk=[list(j) for j in junk],
                              exclude_query_from_ranking=holidays, bboxes=boxes)
    return Dataset(name="toy", task="retrieval", sample_ids=[f"s{i}" for i in range(4)], images=images,
                   ground_truth=gt)


@pytest.mark.parametrize("positives, junk, holidays, words", [
    ([[1, 1]], [[]], False, "positives list sample 's1' twice"),
    ([[1]], [[2, 2]], False, "junk list sample 's2' twice"),
    ([[1, 2]], [[2]], False, "sample 's2' is both a positive and junk"),
    ([[0, 1]], [[]], True, "is among its own positives"),
])
def test_the_evaluator_refuses_them_before_any_work(positives, junk, holidays, words):
    evaluator = get_plugin("evaluator", "retrieval")(query_region="full")
    with pytest.raises(ValueError) as info:
        evaluator.check_setting(_dataset(positives, junk, holidays), 0)
    assert words in str(info.value) and "dataset 'toy', query 0 ('s0')" in str(info.value)


def test_boxes_outside_their_image_are_refused_or_clipped_on_request():
    ev, clip = (get_plugin("evaluator", "retrieval")(clip_boxes=c) for c in (False, True))
    inside = _dataset([[1]], boxes=[(0, 0, 30, 20)])            # the whole 30 x 20 image: fine
    ev.check_setting(inside, 0)
    outside = _dataset([[1]], boxes=[(100, 100, 200, 200)])
    for e in (ev, clip):
        with pytest.raises(ValueError, match=r"query 0 \('s0'\): box \(100, 100, 200, 200\) lies outside its 30 x 20"):
            e.check_setting(outside, 0)
    across = _dataset([[1]], boxes=[(10, 5, 40, 15)])
    with pytest.raises(ValueError, match="reaches outside its 30 x 20 image .*clip_boxes=true"):
        ev.check_setting(across, 0)
    clip.check_setting(across, 0)
    assert clip.split(across, 0).info["query_boxes_clipped"] == 1
    assert "query_boxes_clipped" not in ev.split(inside, 0).info     # records of default runs unchanged


def test_the_conductor_reports_them_as_a_config_error(tmp_path):
    """Through a run: one ConfigError in the dataset stage, before any descriptor is extracted."""
    from lfabench import PluginSpec, hookimpl
    from lfabench.registry import get_registry, reset_registry

    class Plugins:
        @hookimpl
        def lfabench_datasets(self):
            return [PluginSpec("dup_truth", lambda: _dataset([[1, 1]]), "duplicated positives (tests)")]

    reset_registry()
    try:
        get_registry().register(Plugins(), name="tests:gt")
        cfg = {"dataset": {"name": "dup_truth", "params": {}}, "descriptor": {"name": "patches", "params": {}},
               "aggregator": {"name": "gamma_democratic", "params": {}},
               "evaluator": {"name": "retrieval", "params": {"query_region": "full"}}, "seed": 0, "cache": False}
        with pytest.raises(ConfigError, match="positives list sample 's1' twice"):
            run_benchmark(cfg, tmp_path / "run")
    finally:
        reset_registry()
    record = json.loads((tmp_path / "run" / "result.json").read_text())
    assert record["error"]["stage"] == "dataset" and "descriptors" not in record["timings_s"]
