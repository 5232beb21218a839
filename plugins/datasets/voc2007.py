"""``voc2007``: PASCAL VOC 2007 (Everingham et al., IJCV 2010), single-label classification subset.

Layout: ``VOCdevkit/VOC2007/{JPEGImages,Annotations,ImageSets/Main}`` under ``root`` (``root`` may
also be the ``VOCdevkit`` or the ``VOC2007`` folder itself). Labels come from the official
image-set files ``ImageSets/Main/<class>_<set>.txt`` (``1`` the class is present, ``-1``
absent, ``0`` present only as "difficult" objects); note that one class is called ``train``,
so ``train_trainval.txt`` is the ``train`` class in the ``trainval`` set. The XML annotations
are not needed.

**Single-label rule** (the paper keeps "the single-label subset" without saying how): an image
of the chosen ``image_set`` is kept when exactly one of the 20 classes marks it ``1`` and, with
``difficult="exclude"`` (default), no class marks it ``0`` — its objects all belong to one class,
none of them ambiguous. ``difficult="ignore"`` treats ``0`` as absent. Counts on the real files:

=================  ========  ========
image_set          exclude   ignore
=================  ========  ========
trainval (5,011)   2,808     3,103
test (4,952)       2,841     3,192
trainval+test      5,649     6,295
=================  ========  ========

None of these is the paper's 2,989 (its rule is unstated; no combination of image set and
difficult handling we tried gives it). ``image_set`` accepts ``train``, ``val``, ``trainval``,
``test`` or several joined with ``+``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lfabench.sdk import Dataset, DatasetProtocol, PluginSpec, Resource, dataset_root, hookimpl, missing_error

CLASSES = ("aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow", "diningtable",
           "dog", "horse", "motorbike", "person", "pottedplant", "sheep", "sofa", "train", "tvmonitor")
SETS = ("train", "val", "trainval", "test")


def find_voc_dir(base: Path) -> Path | None:
    """The ``VOC2007`` folder under ``base`` (``base/VOCdevkit/VOC2007``, ``base/VOC2007`` or ``base``)."""
    for cand in (base / "VOCdevkit" / "VOC2007", base / "VOC2007", base):
        if (cand / "ImageSets" / "Main").is_dir():
            return cand
    return None


def read_image_set(main: Path, image_set: str) -> tuple[list[str], np.ndarray]:
    """Ids of ``<image_set>.txt`` and their ``(n, 20)`` int8 labels in {-1, 0, 1} from the class files."""
    ids = [ln.split()[0] for ln in (main / f"{image_set}.txt").read_text().splitlines() if ln.strip()]
    index = {s: i for i, s in enumerate(ids)}
    table = np.full((len(ids), len(CLASSES)), -2, dtype=np.int8)
    for c, cls in enumerate(CLASSES):
        path = main / f"{cls}_{image_set}.txt"
        for ln in path.read_text().splitlines():
            fields = ln.split()
            if not fields:
                continue
            if len(fields) != 2 or fields[0] not in index or fields[1] not in ("-1", "0", "1"):
                raise ValueError(f"{path}: unexpected line {ln!r}")
            table[index[fields[0]], c] = int(fields[1])
    unset = np.argwhere(table == -2)
    if unset.size:
        i, c = unset[0]
        raise ValueError(f"{main / f'{CLASSES[c]}_{image_set}.txt'}: no label for image {ids[i]}")
    return ids, table


def single_label(table: np.ndarray, difficult: str = "exclude") -> np.ndarray:
    """Boolean mask of the single-label images (see the module docstring for the rule)."""
    keep = (table == 1).sum(axis=1) == 1
    if difficult == "exclude":
        keep &= ~(table == 0).any(axis=1)
    return keep


def load_voc2007(root: str | None = None, image_set: str = "trainval", difficult: str = "exclude",
                 require_images: bool = True) -> Dataset:
    """The single-label subset of VOC 2007 from ``root`` (default: registered copy or ``<data root>/voc2007``)."""
    if difficult not in ("exclude", "ignore"):
        raise ValueError(f"voc2007: difficult must be 'exclude' or 'ignore', got {difficult!r}")
    sets = image_set.split("+")
    if not sets or any(s not in SETS for s in sets):
        raise ValueError(f"voc2007: image_set must be one of {SETS} or several joined by '+', got {image_set!r}")
    base = dataset_root("voc2007", root)
    voc = find_voc_dir(base)
    if voc is None:
        raise missing_error("voc2007", base / "VOCdevkit" / "VOC2007" / "ImageSets" / "Main", "no image sets found")
    main = voc / "ImageSets" / "Main"
    ids, labels, sources = [], [], []
    for s in sets:
        needed = [main / f"{s}.txt"] + [main / f"{c}_{s}.txt" for c in CLASSES]
        absent = [p.name for p in needed if not p.is_file()]
        if absent:
            raise missing_error("voc2007", main, f"image-set files missing: {', '.join(absent[:5])}")
        set_ids, table = read_image_set(main, s)
        keep = single_label(table, difficult)
        ids += [set_ids[i] for i in np.flatnonzero(keep)]
        labels.append((table[keep] == 1).argmax(axis=1))
        sources += [s] * int(keep.sum())
    if len(set(ids)) != len(ids):
        raise ValueError(f"voc2007: image_set {image_set!r} lists some images twice")
    paths = [voc / "JPEGImages" / f"{i}.jpg" for i in ids]
    if require_images:
        absent = [p.name for p in paths if not p.is_file()]
        if absent:
            raise missing_error("voc2007", voc / "JPEGImages", f"{len(absent)} of {len(paths)} images missing "
                                f"(first: {', '.join(absent[:3])})")
    y = np.concatenate(labels).astype(np.int64)
    return Dataset(
        name="voc2007", task="classification", sample_ids=ids, labels=y, class_names=list(CLASSES),
        images=[str(p) for p in paths] if require_images else None, root=voc,
        info={"source": "PASCAL VOC 2007", "image_set": image_set, "difficult": difficult,
              "rule": "exactly one class labelled 1" + (" and none labelled 0 (difficult)"
                                                        if difficult == "exclude" else ""),
              "n_per_set": {s: sources.count(s) for s in sets}},
    )


#: What ``lfabench data fetch voc2007`` downloads (see :mod:`lfabench.download`).
SOURCES = [
    Resource("http://host.robots.ox.ac.uk/pascal/VOC/voc2007/VOCtrainval_06-Nov-2007.tar",
             "VOCtrainval_06-Nov-2007.tar", "md5:c52e279531787c972589f7e41ab4ae64", ".",
             "torchvision.datasets.VOCDetection"),
    Resource("http://host.robots.ox.ac.uk/pascal/VOC/voc2007/VOCtest_06-Nov-2007.tar",
             "VOCtest_06-Nov-2007.tar", "md5:b6e924de25625d8de591ea690078ad9f", ".",
             "torchvision.datasets.VOCDetection"),
]


#: The protocol a run composes by default: SIFT 90 / DAISY 150 per image and 1-NN on 80/20 splits (the paper's).
PROTOCOL = DatasetProtocol("classification",
                           descriptor="sift", evaluator="knn", max_keypoints={"sift": 90, "daisy": 150})


@hookimpl
def lfabench_datasets():
    return [PluginSpec("voc2007", load_voc2007,
                       "PASCAL VOC 2007 single-label subset (rule documented), 20 classes, classification",
                       sources=SOURCES, protocol=PROTOCOL)]
