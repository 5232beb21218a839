"""Rehearse every paper dataset at full size: a stand-in folder in the dataset's official layout, then its preset.

The images of Oxford5k, INRIA Holidays and Pascal VOC 2007 are not on this machine; their ground truth and image
lists are (``../shared/data``). A stand-in folder lays out every file a loader reads under its official name,
built from the real ground truth and lists, with real photographs (the Fifteen Scene copy, cycled in sorted order)
standing in for the images. The dataset's preset then runs end to end on it (one seed: its cheap methods plus ProLFA
and Semi-ProLFA), and each record is checked for the real dataset's counts (images, queries, classes, query boxes
applied, junk). A loader or protocol that cannot handle the real layout at full size fails here.

The numbers mean nothing (the images are not the dataset's) and are never published: the script prints each
record's status, counts and wall time, nothing else.

    python benchmarks/rehearse_datasets.py OUT [--datasets oxford5k holidays voc2007 scene15] [--shared ../shared/data]

Oxford5k's query boxes are in pixels of its original photographs (up to 1,024 px); a 200x200 stand-in would put them
outside the image, so each query's stand-in is its photograph enlarged to cover its box (every other image is the
photograph as it is).
"""

from __future__ import annotations

import argparse
import json
import math
import pickle
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
#: Per dataset: the preset and the methods the rehearsal runs (cheap ones plus ProLFA and Semi-ProLFA), one seed.
PRESETS = {
    "oxford5k": ("search", "bow,vlad,prolfa_d2048,semi_prolfa_d2048"),
    "holidays": ("search", "bow,vlad,prolfa_d2048,semi_prolfa_d2048"),
    "voc2007": ("classification", "bow,vlad,prolfa_d4096,semi_prolfa_d4096"),
    "scene15": ("classification", "bow,vlad,prolfa_d4096,semi_prolfa_d4096"),
}


def photographs(scene15: Path) -> list[Path]:
    """The Fifteen Scene photographs, sorted by relative path (the stand-ins cycle through them in this order)."""
    found = sorted(scene15.glob("*/*.jpg"))
    if not found:
        raise SystemExit(f"no Fifteen Scene photographs under {scene15}")
    return found


def _place(src: Path, dest: Path) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dest)


def _enlarged(src: Path, dest: Path, width: int, height: int) -> None:
    """``src`` resized to at least ``width`` x ``height`` pixels (aspect kept, the larger factor), saved as JPEG."""
    from PIL import Image

    with Image.open(src) as im:
        factor = max(width / im.width, height / im.height, 1.0)
        big = im.resize((math.ceil(im.width * factor), math.ceil(im.height * factor)), Image.BICUBIC)
    dest.parent.mkdir(parents=True, exist_ok=True)
    big.save(dest, quality=90)


def oxford5k_standin(dest: Path, gnd_file: Path, photos: list[Path]) -> dict:
    """``dest/oxbuild_images/<name>.jpg`` for every name of the real ``gnd_oxford5k.pkl`` (copied beside them).

    Returns the real counts the rehearsal's records must carry."""
    from lfabench_plugins.datasets.oxford5k import read_gnd_pkl

    gnd = read_gnd_pkl(gnd_file)
    shutil.copyfile(gnd_file, dest / "gnd_oxford5k.pkl")
    boxes = {q: box for q, box in zip(gnd["queries"], gnd["bboxes"])}
    for i, name in enumerate(gnd["imlist"]):
        target = dest / "oxbuild_images" / f"{name}.jpg"
        if i in boxes:  # the box must lie inside the image: enlarge the photograph to cover it
            x1, y1, x2, y2 = boxes[i]
            _enlarged(photos[i % len(photos)], target, math.ceil(x2) + 1, math.ceil(y2) + 1)
        else:
            _place(photos[i % len(photos)], target)
    return {"n_samples": len(gnd["imlist"]), "n_queries": len(gnd["qimlist"]), "n_classes": 11,
            "boxed_queries": len(gnd["bboxes"]), "n_junk": sum(int(j.size) for j in gnd["junk"])}


def holidays_standin(dest: Path, list_file: Path, photos: list[Path]) -> dict:
    """``dest/jpg/<name>`` for every name of the real ``holidays_images.dat`` (copied to ``dest``)."""
    names = [ln.strip() for ln in list_file.read_text().splitlines() if ln.strip()]
    shutil.copyfile(list_file, dest / "holidays_images.dat")
    for i, name in enumerate(names):
        _place(photos[i % len(photos)], dest / "jpg" / name)
    groups = {int(Path(n).stem) // 100 for n in names}
    return {"n_samples": len(names), "n_queries": len(groups), "n_classes": len(groups)}


def voc2007_standin(dest: Path, image_sets: Path, photos: list[Path]) -> dict:
    """``dest/VOCdevkit/VOC2007/ImageSets/Main`` (the real image-set files) and ``JPEGImages/<id>.jpg`` for every id
    of ``trainval.txt`` and ``test.txt``."""
    voc = dest / "VOCdevkit" / "VOC2007"
    shutil.copytree(image_sets, voc / "ImageSets" / "Main", dirs_exist_ok=True)
    ids = []
    for split in ("trainval", "test"):
        ids += [ln.split()[0] for ln in (image_sets / f"{split}.txt").read_text().splitlines() if ln.strip()]
    for i, image_id in enumerate(ids):
        _place(photos[i % len(photos)], voc / "JPEGImages" / f"{image_id}.jpg")
    from lfabench_plugins.datasets.voc2007 import load_voc2007

    trainval = load_voc2007(str(dest))
    return {"n_samples": trainval.n_samples, "n_classes": 20, "n_image_files": len(ids)}


def build(name: str, out: Path, shared: Path) -> tuple[Path, dict]:
    """The stand-in root of dataset ``name`` under ``out`` (Fifteen Scene: the real copy) and its real counts."""
    scene15 = shared / "scene15"
    if name == "scene15":
        return scene15, {"n_samples": len(photographs(scene15)), "n_classes": 15}
    root = out / f"{name}-standin"
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    photos = photographs(scene15)
    if name == "oxford5k":
        return root, oxford5k_standin(root, shared / "oxford5k" / "gnd_oxford5k.pkl", photos)
    if name == "holidays":
        return root, holidays_standin(root, shared / "holidays" / "holidays_images.dat", photos)
    if name == "voc2007":
        return root, voc2007_standin(root, shared / "voc2007" / "ImageSets" / "Main", photos)
    raise SystemExit(f"unknown dataset {name!r}: choose from {', '.join(PRESETS)}")


def check_record(rec: dict, counts: dict) -> list[str]:
    """Where a record's dataset counts differ from the real dataset's (empty: they match)."""
    problems = []
    if rec.get("status") != "ok":
        return [f"status {rec.get('status')}: {(rec.get('error') or {}).get('message', '')[:300]}"]
    ds, split = rec["dataset"], rec["split"]
    for key in ("n_samples", "n_queries", "n_classes"):
        if key in counts and ds.get(key) != counts[key]:
            problems.append(f"{key} {ds.get(key)} != {counts[key]}")
    if "boxed_queries" in counts and split.get("n_boxed_queries") != counts["boxed_queries"]:
        problems.append(f"{split.get('n_boxed_queries')} query boxes applied, expected {counts['boxed_queries']}")
    if "n_junk" in counts and split.get("n_junk") != counts["n_junk"]:
        problems.append(f"{split.get('n_junk')} junk entries, expected {counts['n_junk']}")
    return problems


def rehearse(name: str, out: Path, shared: Path, seed: int = 0) -> dict:
    """Build the stand-in, run the dataset's preset (one seed) in a subprocess, check every record."""
    t0 = time.perf_counter()
    root, counts = build(name, out, shared)
    built_s = time.perf_counter() - t0
    preset, methods = PRESETS[name]
    sweep = out / f"{name}-sweep"
    cmd = [sys.executable, "-m", "lfabench.cli", "run", "-m", f"+experiment={preset}", f"dataset={name}",
           f"dataset.params.root={root}", "descriptor=sift", f"aggregator={methods}", f"seed={seed}",
           f"hydra.sweep.dir={sweep}", "continue_on_error=true"]
    t1 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=out, capture_output=True, text=True)
    run_s = time.perf_counter() - t1
    records = {}
    for path in sorted(sweep.glob("**/result.json")):
        rec = json.loads(path.read_text())
        method = rec["config"]["aggregator"]["name"]
        records[method] = {"status": rec["status"], "problems": check_record(rec, counts),
                           "metrics": rec.get("metrics"), "n_fit": rec.get("split", {}).get("n_fit"),
                           "fit_rule": rec.get("split", {}).get("fit_rule"),
                           "n_labelled": rec.get("split", {}).get("n_labelled"),
                           "boxes": rec.get("split", {}).get("query_descriptors_in_boxes"),
                           "n_junk": rec.get("split", {}).get("n_junk"),
                           "dataset": {k: rec.get("dataset", {}).get(k) for k in ("n_samples", "n_queries",
                                                                                  "n_classes")},
                           "timings_s": rec.get("timings_s")}
    return {"dataset": name, "root": str(root), "counts": counts, "build_s": round(built_s, 1),
            "sweep_s": round(run_s, 1), "returncode": proc.returncode, "records": records,
            "stderr_tail": proc.stderr[-2000:] if proc.returncode else ""}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="a scratch folder for the stand-ins and sweeps (not the project)")
    parser.add_argument("--datasets", nargs="+", default=list(PRESETS), choices=list(PRESETS))
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "data",
                        help="the real ground truth, lists and Fifteen Scene photographs (read only)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    ok = True
    for name in args.datasets:
        report = rehearse(name, args.out.resolve(), args.shared.resolve())
        print(json.dumps(report, indent=1, default=str), flush=True)
        ok &= report["returncode"] == 0 and len(report["records"]) == len(PRESETS[name][1].split(",")) and all(
            not r["problems"] for r in report["records"].values())
    print("rehearsal:", "every preset ran with the real counts" if ok else "FAILED", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
