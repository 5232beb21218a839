"""``benchmarks/rehearse_datasets.py``: stand-in folders in each paper dataset's official layout, built from the real
ground truth and lists, load at full size with the real counts; the headline command runs end to end on Oxford5k's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from conftest import REPO, run_cli

sys.path.insert(0, str(REPO / "benchmarks"))
from rehearse_datasets import build, check_record, photographs  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.shared_data]


def test_oxford5k_standin_loads_with_the_real_ground_truth(shared_data, tmp_path):
    from lfabench_plugins.datasets.oxford5k import load_oxford5k

    root, counts = build("oxford5k", tmp_path, shared_data)
    ds = load_oxford5k(str(root))
    assert ds.n_samples == counts["n_samples"] == 5063 and ds.ground_truth.queries.size == 55
    assert len(ds.class_names) == 11 and all(box is not None for box in ds.ground_truth.bboxes)
    assert counts["n_junk"] == sum(len(j) for j in ds.ground_truth.junk) > 0
    # every query's box lies inside its (enlarged) stand-in photograph
    from PIL import Image

    for q, box in zip(ds.ground_truth.queries, ds.ground_truth.bboxes):
        with Image.open(ds.images[q]) as im:
            assert box[2] <= im.width and box[3] <= im.height


def test_holidays_and_voc2007_standins_load_at_full_size(shared_data, tmp_path):
    from lfabench_plugins.datasets.holidays import load_holidays
    from lfabench_plugins.datasets.voc2007 import load_voc2007

    root, counts = build("holidays", tmp_path, shared_data)
    holidays = load_holidays(str(root))
    assert holidays.n_samples == 1491 and holidays.ground_truth.queries.size == 500 == counts["n_queries"]
    root, counts = build("voc2007", tmp_path, shared_data)
    assert counts["n_image_files"] == 9963
    # the single-label rule on the real image-set files (voc2007's docstring: trainval 2,808, test 2,841)
    assert load_voc2007(str(root)).n_samples == 2808 and load_voc2007(str(root), image_set="test").n_samples == 2841
    assert len(photographs(shared_data / "scene15")) == 4485


def test_the_headline_command_runs_on_an_oxford5k_folder_in_the_official_layout(shared_data, tmp_path):
    root, counts = build("oxford5k", tmp_path, shared_data)
    proc = run_cli(["run", "aggregator=prolfa", "dataset=oxford5k", f"dataset.params.root={root}",
                    f"hydra.run.dir={tmp_path}/run"], cwd=tmp_path, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    rec = json.loads((tmp_path / "run" / "result.json").read_text())
    assert rec["status"] == "ok" and 0.0 <= rec["metrics"]["mAP"] <= 100.0
    assert check_record(rec, counts) == []  # images, queries, classes, boxes applied, junk: the real dataset's
    assert rec["split"]["fit_rule"] == "annotated samples only"
    assert rec["split"]["n_fit"] == rec["split"]["n_labelled"] < rec["split"]["n_fit_offered"] == 5063
