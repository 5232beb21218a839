"""``scene15``: Fifteen Scene Categories (Lazebnik, Schmid & Ponce, CVPR 2006), 4,485 images, 15 classes.

Official layout: one folder per class (``bedroom``, ``CALsuburb``, ..., ``store``) holding
``image_NNNN.jpg``. Samples are ordered by class name (case-sensitive sort, as the folders
list) then file name; labels index :data:`CLASS_COUNTS`'s sorted names; sample ids are
``<class>/<file>``. Task: classification (the paper's protocol: 1-NN on an 80/20 split
per class).

With ``strict=True`` (default) every class folder must hold exactly its official number
of images, so a partial copy fails at load time with the fix, not deep inside a run.
"""

from __future__ import annotations

import numpy as np

from lfabench.sdk import Dataset, DatasetProtocol, PluginSpec, dataset_root, hookimpl, missing_error

#: Official per-class image counts (Lazebnik et al. 2006; 4,485 in total).
CLASS_COUNTS = {
    "CALsuburb": 241, "MITcoast": 360, "MITforest": 328, "MIThighway": 260, "MITinsidecity": 308,
    "MITmountain": 374, "MITopencountry": 410, "MITstreet": 292, "MITtallbuilding": 356, "PARoffice": 215,
    "bedroom": 216, "industrial": 311, "kitchen": 210, "livingroom": 289, "store": 315,
}
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".pgm")


def load_scene15(root: str | None = None, strict: bool = True) -> Dataset:
    """Fifteen Scene from ``root`` (default: the registered copy or ``<data root>/scene15``)."""
    base = dataset_root("scene15", root)
    if not base.is_dir():
        raise missing_error("scene15", base, "the folder does not exist")
    classes = sorted(CLASS_COUNTS)
    missing = [c for c in classes if not (base / c).is_dir()]
    if missing:
        raise missing_error("scene15", base, f"class folder(s) missing: {', '.join(missing)}")
    paths, labels, ids = [], [], []
    wrong = []
    for label, cls in enumerate(classes):
        files = sorted(p for p in (base / cls).iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        if len(files) != CLASS_COUNTS[cls]:
            wrong.append(f"{cls} has {len(files)} images, expected {CLASS_COUNTS[cls]}")
        paths += files
        labels += [label] * len(files)
        ids += [f"{cls}/{p.name}" for p in files]
    if wrong and strict:
        raise missing_error("scene15", base, "partial copy: " + "; ".join(wrong))
    if not paths:
        raise missing_error("scene15", base, "no images found")
    return Dataset(
        name="scene15", task="classification", sample_ids=ids, labels=np.asarray(labels, dtype=np.int64),
        class_names=classes, images=[str(p) for p in paths], root=base,
        info={"source": "Lazebnik et al. 2006, Fifteen Scene Categories", "strict": bool(strict),
              "class_counts": {c: int(n) for c, n in zip(classes, np.bincount(labels, minlength=15))}},
    )


MANUAL = ("no official Fifteen Scene archive is online any more; get a copy (Lazebnik et al. 2006, "
          "15 class folders) and run `lfabench data add scene15 PATH`")


#: The protocol a run composes by default: SIFT 90 / DAISY 150 per image and 1-NN on 80/20 splits (the paper's).
PROTOCOL = DatasetProtocol("classification",
                           descriptor="sift", evaluator="knn", max_keypoints={"sift": 90, "daisy": 150})


@hookimpl
def lfabench_datasets():
    return [PluginSpec("scene15", load_scene15,
                       "Fifteen Scene Categories (Lazebnik 2006): 4,485 images, 15 classes, classification",
                       manual=MANUAL, protocol=PROTOCOL)]
