"""``retrieval_folder``: a folder of images plus a ground-truth file, as a retrieval dataset.

Ground truth (the first found, in this order, unless ``ground_truth`` names the file): a revisitop
``gnd_*.pkl`` (revisited easy/hard/junk or classic ok/junk entries; images ``jpg/<name>.jpg`` or
``<name>.jpg`` beside it), ``groundtruth.json`` or ``groundtruth.csv`` (formats:
:mod:`lfabench_plugins.datasets.groundtruth`). With JSON/CSV the database is every image under
``root`` (recursively, sorted by relative path; the ground-truth file itself is not an image) unless
the JSON lists ``database``; names are paths relative to ``root``.

A query that is a database image is removed from its own ranking (the Holidays rule); queries that
are not database images (revisitop's layout) are extra samples, never ranked. Revisited
annotation is scored in its three setups by the retrieval evaluator. ``distractors`` adds a list of
distractor images to the database (one path per line, relative to the list's folder).
"""

from __future__ import annotations

from pathlib import Path

from lfabench.sdk import Dataset, DatasetProtocol, PluginSpec, dataset_root, hookimpl, missing_error

from .groundtruth import read_csv, read_distractors, read_gnd, read_json, retrieval_dataset
from .imagefolder import image_files

NAME = "retrieval_folder"


def _find_ground_truth(base: Path, ground_truth: str | None, name: str = NAME) -> Path:
    if ground_truth:
        path = Path(ground_truth).expanduser()
        path = path if path.is_absolute() else base / path
        if not path.is_file():
            raise missing_error(name, path, "the ground-truth file does not exist", fetchable=False)
        return path
    found = sorted(base.glob("gnd_*.pkl")) + [base / f for f in ("groundtruth.json", "groundtruth.csv")
                                               if (base / f).is_file()]
    if not found:
        raise missing_error(name, base, "no ground truth (gnd_*.pkl, groundtruth.json or groundtruth.csv)",
                            fetchable=False)
    return found[0]


def load_retrieval_folder(root: str | None = None, ground_truth: str | None = None, distractors: str | None = None,
                          name: str = NAME, require_images: bool = True) -> Dataset:
    """The retrieval dataset of ``root`` (default: the copy registered as ``name``; a folder registered with
    ``lfabench data add NAME PATH --as retrieval_folder`` is the dataset ``NAME``)."""
    base = dataset_root(name, root)
    if not base.is_dir():
        raise missing_error(name, base, "the folder does not exist", fetchable=False)
    gt_file = _find_ground_truth(base, ground_truth, name)
    extra = read_distractors(distractors) if distractors else []
    info = {"ground_truth": gt_file.name, "distractors": str(distractors) if distractors else None}
    if gt_file.suffix == ".pkl":
        imlist, qimlist, queries = read_gnd(gt_file)
        folder = base / "jpg" if (base / "jpg").is_dir() else base
        path = {n: folder / f"{n}.jpg" for n in [*imlist, *qimlist]}
        return retrieval_dataset(name, base, imlist, [path[n] for n in imlist], queries, path, extra, info,
                                 require_images, source=gt_file)
    if gt_file.suffix == ".json":
        database, queries = read_json(gt_file)
    elif gt_file.suffix == ".csv":
        database, queries = None, read_csv(gt_file)
    else:
        raise ValueError(f"{gt_file}: a ground truth is a gnd_*.pkl, a .json or a .csv file")
    files = {p.relative_to(base).as_posix(): p for p in image_files(base)}
    if database is None:
        database = list(files)
    unknown = [n for n in database if n not in files]
    if unknown and require_images:
        raise missing_error(name, base, f"{len(unknown)} database images missing (first: {unknown[0]})",
                            fetchable=False)
    return retrieval_dataset(name, base, database, [base / n for n in database], queries,
                             {q.query: base / q.query for q in queries}, extra, info, require_images, source=gt_file)


#: The protocol a run composes by default: SIFT 90 / DAISY 300 per image (as Oxford5k, Holidays) and mAP.
PROTOCOL = DatasetProtocol("retrieval", descriptor="sift", evaluator="retrieval",
                           max_keypoints={"sift": 90, "daisy": 300})


@hookimpl
def lfabench_datasets():
    return [PluginSpec(NAME, load_retrieval_folder,
                       "Any folder of images with ground truth (revisitop gnd pkl, JSON or CSV), retrieval",
                       manual="point it at your folder: `lfabench data add retrieval_folder PATH` or "
                              "dataset.params.root=PATH", protocol=PROTOCOL)]
