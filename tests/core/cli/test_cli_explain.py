"""`lfabench explain` end to end on the embedded digits: run ProLFA, explain it, check the PNG and the tiles."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from sklearn.datasets import load_digits

from lfabench.explain import crop_box, explain_run, load_explained_run
from lfabench.registry import get_registry

from conftest import run_cli

pytestmark = pytest.mark.slow  # the slow tier: end to end in subprocesses, one on Fifteen Scene SIFT

N = 400  # the first 400 digits: seconds, and still 10 classes


@pytest.fixture(scope="module")
def prolfa_run(tmp_path_factory):
    """One default ProLFA run (seed 0) on the first N digits, through the real CLI."""
    cwd = tmp_path_factory.mktemp("explain")
    run_cli(["run", "hydra.run.dir=run0", f"dataset.params.n_samples={N}"], cwd=cwd)
    return cwd / "run0"


def test_explain_writes_a_grid_whose_tiles_are_the_selected_patches(prolfa_run, tmp_path):
    out = tmp_path / "grid.png"
    proc = run_cli(["explain", str(prolfa_run), "--out", str(out), "--top", "3"], cwd=tmp_path)
    assert f"wrote {out}" in proc.stdout and out.is_file()
    import matplotlib.image as mpimg

    png = mpimg.imread(out)
    assert png.shape[0] > 300 and png.shape[1] > 300
    grey = png[..., :3].mean(axis=2)
    assert grey.std() > 0.1 and (grey < 0.2).mean() > 0.05  # not blank: dark digit pixels fill the tiles

    _, rows = explain_run(prolfa_run, tmp_path / "again.png", top=3, per_prototype=4)
    record, arrays = load_explained_run(prolfa_run)
    assert record["prototypes"]["n_prototypes"] == 128 and len(rows) == 3

    # an independent fit of the same estimator on the same split: the heaviest prototype (largest row norm
    # of W) and its largest-weight descriptor, mapped to the dataset by hand
    reg = get_registry()
    dataset = reg.get_spec("dataset", "digits").factory(n_samples=N)
    bags = reg.get_spec("descriptor", "patches").factory().describe(dataset, cache=False, n_jobs=1)
    split = reg.get_spec("evaluator", "knn").factory().split(dataset, 0)
    est = reg.get_spec("aggregator", "prolfa").factory(random_state=0).fit(bags.subset(split.fit_indices),
                                                                           split.fit_labels)
    norms = np.linalg.norm(est.projection_, axis=1)
    assert [r.prototype for r in rows] == list(np.argsort(-norms, kind="stable")[:3])
    assert [r.weight for r in rows] == pytest.approx(np.sort(norms)[::-1][:3])
    fit_sample, within = est.prototype_indices_[rows[0].prototype]
    sample = int(split.fit_indices[fit_sample])
    top = rows[0].tiles[0]
    assert top.sample_id == f"digit_{sample:04d}"
    assert top.class_name == str(load_digits().target[sample])
    first = np.flatnonzero(arrays["prototype"] == rows[0].prototype)[0]
    assert (arrays["sample"][first], arrays["descriptor"][first]) == (sample, within)

    # the tile is the 3x3 patch the descriptor is made of: patch j of the 6x6 grid, rows first
    images = load_digits().images / 16.0
    for row in rows:
        col = est.selection_[:, row.prototype].toarray().ravel()
        assert len(row.tiles) == min(4, np.count_nonzero(col)) == min(4, row.n_support)
        assert [t.coefficient for t in row.tiles] == pytest.approx(np.sort(col[col > 0])[::-1][:4])
        for t in row.tiles:
            s = int(t.sample_id.split("_")[1])
            k = int(arrays["descriptor"][(arrays["prototype"] == row.prototype)
                                         & (arrays["sample"] == s)][0])
            r, c = divmod(k, 6)
            np.testing.assert_allclose(t.image, images[s, r:r + 3, c:c + 3], rtol=0, atol=1e-6)
            np.testing.assert_allclose(t.image.ravel(), bags[s][k], rtol=0, atol=1e-6)


def test_explain_refuses_a_failed_run_a_non_prolfa_run_and_an_old_run(prolfa_run, tmp_path):
    failed = tmp_path / "failed"
    shutil.copytree(prolfa_run, failed)
    rec = json.loads((failed / "result.json").read_text())
    rec.update(status="failed", error={"type": "ValueError", "message": "boom", "stage": "fit", "traceback": ""})
    (failed / "result.json").write_text(json.dumps(rec))
    proc = run_cli(["explain", str(failed)], cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "did not finish" in proc.stderr and "boom" in proc.stderr

    old = tmp_path / "old"
    shutil.copytree(prolfa_run, old)
    rec = json.loads((old / "result.json").read_text())
    del rec["prototypes"]
    (old / "result.json").write_text(json.dumps(rec))
    proc = run_cli(["explain", str(old)], cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "kept no prototypes.npz" in proc.stderr and "force=true" in proc.stderr

    (prolfa_run / "prototypes.npz").rename(tmp_path / "moved.npz")
    try:
        proc = run_cli(["explain", str(prolfa_run)], cwd=tmp_path, check=False)
        assert proc.returncode == 2 and "file is missing" in proc.stderr
    finally:
        (tmp_path / "moved.npz").rename(prolfa_run / "prototypes.npz")

    run_cli(["run", "hydra.run.dir=bow0", "aggregator=bow", f"dataset.params.n_samples={N}",
             "aggregator.params.n_clusters=16"], cwd=tmp_path)
    assert not (tmp_path / "bow0" / "prototypes.npz").exists()  # only prototype aggregators keep one
    proc = run_cli(["explain", "bow0"], cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "'bow' selects no prototypes" in proc.stderr

    proc = run_cli(["explain", "nowhere"], cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "no run record here" in proc.stderr


def test_explain_refuses_a_run_without_images(tmp_path):
    run_cli(["run", "hydra.run.dir=syn0", "dataset=synthetic", "aggregator=prolfa",
             "aggregator.params.n_prototypes=4"], cwd=tmp_path)
    proc = run_cli(["explain", "syn0"], cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "ships local descriptors, not images" in proc.stderr


@pytest.mark.shared_data
def test_explain_on_fifteen_scene_sift(shared_data, tmp_path):
    """A short ProLFA fit on the real Fifteen Scene SIFT; every tile is centred on the SIFT keypoint that the
    descriptor plugin finds again in that image, and is 12 scales wide."""
    root = shared_data / "scene15"
    if not root.is_dir():
        pytest.skip(f"needs Fifteen Scene in {root} (absent here)")
    run_cli(["run", "hydra.run.dir=scene0", "dataset=scene15", f"dataset.params.root={root}", "descriptor=sift",
             "aggregator.params.n_prototypes=16", "aggregator.params.solver.max_iter=3"], cwd=tmp_path)
    out = tmp_path / "scene.png"
    run_cli(["explain", "scene0", "--top", "2", "--per-prototype", "2", "--out", str(out)], cwd=tmp_path)
    import cv2
    import matplotlib.image as mpimg

    assert mpimg.imread(out)[..., :3].std() > 0.05
    _, rows = explain_run(tmp_path / "scene0", tmp_path / "again.png", top=2, per_prototype=2)
    _, arrays = load_explained_run(tmp_path / "scene0")
    sift = get_registry().get_spec("descriptor", "sift").factory()
    for row in rows:
        for t in row.tiles:
            image = cv2.imread(str(root / t.sample_id), cv2.IMREAD_COLOR)[..., ::-1]  # RGB, as the dataset reads it
            assert t.class_name == t.sample_id.split("/")[0]
            _, K = sift.extract(image)
            entry = np.flatnonzero((arrays["prototype"] == row.prototype)
                                   & np.isclose(arrays["coefficient"], t.coefficient))[0]
            np.testing.assert_allclose(K[arrays["descriptor"][entry]], arrays["keypoints"][entry], atol=1e-4)
            x, y = t.keypoint["x"], t.keypoint["y"]
            x0, y0, w = crop_box(x, y, 12 * t.keypoint["scale"])
            assert w == max(1, round(12 * t.keypoint["scale"])) and t.image.shape == (w, w, 3)
            assert abs(x0 + (w - 1) / 2 - x) <= 0.5 and abs(y0 + (w - 1) / 2 - y) <= 0.5  # centred on it
            inside = image[max(y0, 0):y0 + w, max(x0, 0):x0 + w, 0] / 255.0
            tile = t.image[max(-y0, 0):max(-y0, 0) + inside.shape[0], max(-x0, 0):max(-x0, 0) + inside.shape[1], 0]
            np.testing.assert_allclose(tile, inside, atol=1e-9)  # the file's own pixels (grey in every channel)
