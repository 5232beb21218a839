"""benchmarks/copies_attacks.py: a copy's attack from its sample id, and each attack's share in the first k."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from copies_attacks import attack_of, main, share_in_first_k


def test_the_attack_is_the_name_after_the_hash_without_its_level():
    assert attack_of("copy/MITcoast/image_0001.jpg#jpeg5") == "jpeg"
    assert attack_of("copy/store/image_0315.jpg#noise30.0") == "noise"
    assert attack_of("copy/a#b/image.jpg#rotation-25") == "rotation"
    with pytest.raises(ValueError, match="MITcoast/image_0001.jpg"):
        attack_of("MITcoast/image_0001.jpg")     # an original, not a copy


def test_each_attacks_share_counts_its_copies_ranked_before_k():
    attacks = ["crop", "jpeg", "crop", "blur", "jpeg", "crop"]
    ranks = np.array([0, 2, 3, 7, 1, 2])
    # k = 3: crop 0 and 2 are in (2 of 3), jpeg 2 and 1 (2 of 2), blur 7 is not
    assert share_in_first_k(attacks, ranks, 3) == pytest.approx({"blur": 0.0, "crop": 200 / 3, "jpeg": 100.0})
    assert share_in_first_k(attacks, ranks, 1) == pytest.approx({"blur": 0.0, "crop": 100 / 3, "jpeg": 0.0})
    with pytest.raises(ValueError, match="5 attacks for 6 ranks"):
        share_in_first_k(attacks[:5], ranks, 3)


def test_a_folder_without_copies_records_is_one_message(tmp_path, capsys):
    with pytest.raises(SystemExit, match=f"no complete copy_detection record under {tmp_path}"):
        main([str(tmp_path)])


def _record(folder: Path, seed: int, ranks: list[int], fingerprint: str, positives=(2, 3, 4, 5, 6, 7)) -> Path:
    from lfabench.record import RunRecorder

    run = folder / "copy_detection_sift_bow_retrieval" / f"abc_s{seed}"
    params = {"root": "sklearn:sample_images", "n_originals": None, "families": ["crop", "jpeg", "strong"],
              "copies_per_family": 1, "seed": 0}
    rec = RunRecorder(run, {"dataset": {"name": "copy_detection", "params": params}, "descriptor": {"name": "sift"},
                            "aggregator": {"name": "bow"}, "evaluator": {"name": "retrieval"}}, seed)
    rec.data["dataset"] = {"fingerprint": fingerprint}
    rec.store_predictions({"kind": np.array("retrieval"), "query_indices": np.array([0, 1]),
                           "positives": np.array(positives), "positive_ranks": np.array(ranks),
                           "positive_offsets": np.array([0, 3, 6])})
    rec.finish_ok({"mAP": 50.0})
    return run / "result.json"


def test_a_boards_shares_are_read_from_each_records_ranks_and_the_rebuilt_copies(tmp_path, capsys):
    from copies_attacks import board_shares

    from lfabench_plugins.datasets.copy_detection import load_copy_detection

    dataset = load_copy_detection(root="sklearn:sample_images")
    attacks = [attack_of(dataset.sample_ids[p]) for p in (2, 3, 4, 5, 6, 7)]
    assert attacks == ["crop", "jpeg", "blur", "crop", "jpeg", "noise"]
    _record(tmp_path, 0, [0, 1, 5, 2, 4, 0], dataset.fingerprint())
    _record(tmp_path, 1, [3, 0, 1, 0, 1, 2], dataset.fingerprint())
    frame = board_shares(tmp_path, None).set_index("seed")    # k = 3 copies per original
    assert frame.loc[0, ["all", "crop", "jpeg", "blur", "noise"]].tolist() == pytest.approx([400 / 6, 100, 50, 0, 100])
    assert frame.loc[1, ["all", "crop", "jpeg", "blur", "noise"]].tolist() == pytest.approx([500 / 6, 50, 100, 100, 100])
    assert main([str(tmp_path)]) == 0
    assert "| sift" in capsys.readouterr().out


def test_records_of_other_copies_or_other_ground_truth_are_refused(tmp_path):
    from copies_attacks import board_shares

    _record(tmp_path / "a", 0, [0] * 6, "0" * 64)
    with pytest.raises(SystemExit, match="not the same copies"):
        board_shares(tmp_path / "a", None)
    from lfabench_plugins.datasets.copy_detection import load_copy_detection

    _record(tmp_path / "b", 0, [0] * 6, load_copy_detection(root="sklearn:sample_images").fingerprint(),
            positives=(2, 3, 4, 5, 6, 1))
    with pytest.raises(SystemExit, match="positives differ from the dataset's ground truth"):
        board_shares(tmp_path / "b", None)


def test_an_invalid_record_is_named_not_read(tmp_path):
    import json

    from copies_attacks import board_shares

    from lfabench_plugins.datasets.copy_detection import load_copy_detection

    path = _record(tmp_path, 0, [0] * 6, load_copy_detection(root="sklearn:sample_images").fingerprint())
    record = json.loads(path.read_text())
    record["metrics"]["mAP"] = "high"
    path.write_text(json.dumps(record))
    with pytest.raises(SystemExit, match=f"copies_attacks: {path}.*mAP"):
        board_shares(tmp_path, None)
