"""``imagefolder``: any folder with one subfolder of images per class (torchvision's ``ImageFolder`` layout).

Layout: ``root/<class>/<...>/<image>`` (images may sit deeper inside a class folder). Classes are the
subfolders of ``root`` in sorted order (labels index them, as torchvision's ``find_classes``); samples
are ordered by class, then by relative path; sample ids are ``<class>/<relative path>``. Files whose
suffix is not an image suffix (``IMAGE_SUFFIXES``, case-insensitive) and hidden files or folders
(``.name``) are skipped; an empty class folder is an error naming it (as torchvision's).
Task: classification (SIFT-90 / DAISY-150 and 1-NN by default, as Fifteen Scene).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lfabench.sdk import Dataset, DatasetProtocol, PluginSpec, dataset_root, hookimpl, missing_error

from .groundtruth import IMAGE_SUFFIXES


def image_files(folder: Path) -> list[Path]:
    """Image files under ``folder`` (recursively, hidden entries skipped), sorted by relative path."""
    out = []
    for path in folder.rglob("*"):
        rel = path.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if path.is_file() and path.suffix.lower() in IMAGE_SUFFIXES:
            out.append(path)
    return sorted(out, key=lambda p: p.relative_to(folder).as_posix())


def load_imagefolder(root: str | None = None, name: str = "imagefolder") -> Dataset:
    """The classification dataset of ``root`` (default: the copy registered as ``name``).

    ``name`` is the dataset's name in records and the registry entry read without ``root``: a folder registered
    with ``lfabench data add NAME PATH --as imagefolder`` is the dataset ``NAME``.
    """
    base = dataset_root(name, root)
    if not base.is_dir():
        raise missing_error(name, base, "the folder does not exist", fetchable=False)
    classes = sorted(p.name for p in base.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not classes:
        raise missing_error(name, base, "no class subfolders (the layout is root/<class>/<image>)",
                            fetchable=False)
    paths, labels, ids = [], [], []
    for label, cls in enumerate(classes):
        files = image_files(base / cls)
        if not files:
            raise missing_error(name, base / cls, f"class folder {cls!r} holds no image "
                                f"(suffixes {', '.join(IMAGE_SUFFIXES)})", fetchable=False)
        paths += files
        labels += [label] * len(files)
        ids += [f"{cls}/{p.relative_to(base / cls).as_posix()}" for p in files]
    counts = np.bincount(labels, minlength=len(classes))
    return Dataset(name=name, task="classification", sample_ids=ids, labels=np.asarray(labels, dtype=np.int64),
                   class_names=classes, images=[str(p) for p in paths], root=base,
                   info={"layout": "ImageFolder (root/<class>/<image>)",
                         "class_counts": {c: int(n) for c, n in zip(classes, counts)}})


#: The protocol a run composes by default: SIFT 90 / DAISY 150 per image and 1-NN (as Fifteen Scene).
PROTOCOL = DatasetProtocol("classification", descriptor="sift", evaluator="knn",
                           max_keypoints={"sift": 90, "daisy": 150})


@hookimpl
def lfabench_datasets():
    return [PluginSpec("imagefolder", load_imagefolder,
                       "Any folder with one subfolder of images per class (torchvision ImageFolder), classification",
                       manual="point it at your folder: `lfabench data add imagefolder PATH` or "
                              "dataset.params.root=PATH", protocol=PROTOCOL)]
