"""Through the CLI: a bad image file is one message naming it (exit 2), or a skipped sample when asked."""

from __future__ import annotations

import json

import cv2
import pytest

from conftest import run_cli
from data_helpers import textured_image

pytestmark = pytest.mark.slow  # end-to-end runs in subprocesses

CLASSES = ("CALsuburb", "MITcoast", "MITforest", "MIThighway", "MITinsidecity", "MITmountain", "MITopencountry",
           "MITstreet", "MITtallbuilding", "PARoffice", "bedroom", "industrial", "kitchen", "livingroom", "store")


@pytest.fixture
def scene(tmp_path):
    """A three-image-per-class Fifteen Scene folder (strict=false) whose MITcoast/b.png is empty."""
    root = tmp_path / "scene"
    for c, cls in enumerate(CLASSES):
        (root / cls).mkdir(parents=True)
        for j, name in enumerate("abc"):
            cv2.imwrite(str(root / cls / f"{name}.png"), textured_image(3 * c + j, (40, 48)))
    (root / "MITcoast" / "b.png").write_bytes(b"")
    return root


def _run(scene, cwd, *overrides):
    return run_cli(["run", "dataset=scene15", f"dataset.params.root={scene}", "dataset.params.strict=false",
                    "aggregator=bow", "aggregator.params.n_clusters=4", "cache=false", "hydra.run.dir=r", *overrides],
                   cwd=cwd, env={"LFABENCH_N_JOBS": "1"}, check=False)


def test_an_empty_image_is_one_message_naming_it(scene, tmp_path):
    proc = _run(scene, tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "MITcoast/b.png" in proc.stderr and "an empty file (0 bytes)" in proc.stderr
    assert "Traceback" not in proc.stderr and "HYDRA_FULL_ERROR" not in proc.stderr


def test_skip_corrupt_images_skips_it_and_the_run_succeeds(scene, tmp_path):
    proc = _run(scene, tmp_path, "skip_corrupt_images=true")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rec = json.loads((tmp_path / "r" / "result.json").read_text())
    assert rec["status"] == "ok"
    assert rec["descriptors"]["extraction"]["corrupt_image_ids"] == ["MITcoast/b.png"]


def test_an_image_over_the_pixel_cap_is_one_message_naming_it(scene, tmp_path):
    (scene / "MITcoast" / "b.png").unlink()
    proc = _run(scene, tmp_path, "max_image_pixels=1000")  # every 48 x 40 image is 1,920 pixels
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "48 x 40 = 1,920 pixels, more than max_image_pixels=1,000" in proc.stderr
    assert "Traceback" not in proc.stderr
