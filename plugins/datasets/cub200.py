"""``cub200``: Caltech-UCSD Birds-200-2011 (Wah et al., CNS-TR-2011-001), 11,788 images, 200 classes.

Layout (``root`` or ``root/CUB_200_2011``): ``images/<class folder>/<file>.jpg`` with the
official lists ``images.txt`` (``<id> <relative path>``), ``image_class_labels.txt``
(``<id> <class id 1..200>``), ``train_test_split.txt`` (``<id> <1 = train, 0 = test>``) and
``classes.txt`` (``<class id> <name>``). Samples follow the image ids; labels are
``class id - 1``; ``official_split`` is (train indices, test indices) of the official split
(5,994 / 5,794 images). Task: classification.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lfabench.sdk import Dataset, DatasetProtocol, PluginSpec, Resource, dataset_root, hookimpl, missing_error

N_IMAGES, N_CLASSES = 11788, 200
LISTS = ("images.txt", "image_class_labels.txt", "train_test_split.txt")


def _read_pairs(path: Path) -> dict[int, str]:
    out = {}
    for n, ln in enumerate(path.read_text().splitlines(), 1):
        if not ln.strip():
            continue
        key, _, value = ln.strip().partition(" ")
        if not key.isdigit() or not value:
            raise ValueError(f"{path}, line {n}: expected '<id> <value>', got {ln!r}")
        out[int(key)] = value.strip()
    return out


def load_cub200(root: str | None = None, strict: bool = True, require_images: bool = True) -> Dataset:
    """CUB-200-2011 from ``root`` (default: the registered copy or ``<data root>/cub200``)."""
    base = dataset_root("cub200", root)
    cub = base / "CUB_200_2011" if (base / "CUB_200_2011").is_dir() else base
    absent = [f for f in LISTS if not (cub / f).is_file()]
    if absent:
        raise missing_error("cub200", cub, f"list files missing: {', '.join(absent)}")
    images, labels, split = (_read_pairs(cub / f) for f in LISTS)
    ids = sorted(images)
    if set(labels) != set(ids) or set(split) != set(ids):
        raise ValueError(f"cub200: {', '.join(LISTS)} in {cub} do not list the same image ids")
    y = np.array([int(labels[i]) - 1 for i in ids], dtype=np.int64)
    is_train = np.array([split[i] == "1" for i in ids])
    if not set(split.values()) <= {"0", "1"}:
        raise ValueError(f"cub200: {cub / 'train_test_split.txt'} must hold 0/1 flags")
    names = {}
    if (cub / "classes.txt").is_file():
        names = {int(k) - 1: v for k, v in _read_pairs(cub / "classes.txt").items()}
    else:  # the class folder of each image names its class
        for i, lab in zip(ids, y):
            names.setdefault(int(lab), images[i].split("/")[0])
    n_classes = int(max(names) + 1) if names else int(y.max() + 1)
    if strict and (len(ids) != N_IMAGES or n_classes != N_CLASSES):
        raise missing_error("cub200", cub, f"partial copy: {len(ids)} images in {n_classes} classes, expected "
                            f"{N_IMAGES} in {N_CLASSES}")
    paths = [cub / "images" / images[i] for i in ids]
    if require_images:
        missing = [str(p.relative_to(cub)) for p in paths if not p.is_file()]
        if missing:
            raise missing_error("cub200", cub / "images", f"{len(missing)} of {len(paths)} images missing "
                                f"(first: {', '.join(missing[:3])})")
    return Dataset(
        name="cub200", task="classification", sample_ids=[images[i] for i in ids], labels=y,
        class_names=[names.get(c, str(c + 1)) for c in range(n_classes)],
        images=[str(p) for p in paths] if require_images else None,
        official_split=(np.flatnonzero(is_train), np.flatnonzero(~is_train)), root=cub,
        info={"source": "Wah et al. 2011, CUB-200-2011", "n_train": int(is_train.sum()),
              "n_test": int((~is_train).sum())},
    )


#: What ``lfabench data fetch cub200`` downloads (see :mod:`lfabench.download`).
SOURCES = [
    Resource("https://data.caltech.edu/records/65de6-vp158/files/CUB_200_2011.tgz", "CUB_200_2011.tgz",
             "md5:97eceeb196236b17998738112f37df78", ".", "published CUB-200-2011 loaders (tgz_md5)"),
]


#: The protocol a run composes by default:
#: VGG-16 conv features and 1-NN on the official split (the paper's scalability setting).
PROTOCOL = DatasetProtocol("classification", descriptor="cnn", evaluator="knn")


@hookimpl
def lfabench_datasets():
    return [PluginSpec("cub200", load_cub200,
                       "Caltech-UCSD Birds-200-2011: 11,788 images, 200 classes, official split, classification",
                       sources=SOURCES, protocol=PROTOCOL)]
