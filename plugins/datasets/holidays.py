"""``holidays``: INRIA Holidays (Jegou, Douze & Schmid, ECCV 2008), 1,491 images in 500 groups.

Layout under ``root``: ``jpg/<NNNNNN>.jpg`` (the official ``jpg1.tar.gz`` + ``jpg2.tar.gz``
extract there), optionally ``holidays_images.dat`` (the official image list, one name per line),
which then defines the samples; otherwise the folder is listed (sorted).

Ground truth (the official rule, as ``holidays_map.py``): group = ``int(stem) // 100``; the query
of a group is the image with ``stem % 100 == 0``; positives = the other images of its group; no
junk; the query is removed from its own ranked list (``exclude_query_from_ranking``). Labels are
the group index (``class_names`` = the group numbers as strings).

Some images of the official copy are stored rotated by 90 degrees. ``rotation_corrected=True``
reads ``jpg_rotated/`` instead (a copy with the same names whose images were turned upright, as
used by many later papers; lfabench does not create it), unless ``images_dir`` names another folder.
The variant is recorded in ``info``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from lfabench.sdk import (Dataset, DatasetProtocol, PluginSpec, Resource, RetrievalGroundTruth, dataset_root, hookimpl,
                          missing_error)

N_IMAGES, N_GROUPS = 1491, 500
LIST_FILE = "holidays_images.dat"


def holidays_ground_truth(names: list[str]) -> tuple[RetrievalGroundTruth, np.ndarray, list[str]]:
    """``(ground truth, group label per image, group names)`` from image names ``NNNNNN.jpg``."""
    try:
        stems = np.array([int(Path(n).stem) for n in names], dtype=np.int64)
    except ValueError as exc:
        raise ValueError(f"holidays: image names must be numbers like 100000.jpg ({exc})") from exc
    groups = stems // 100
    group_ids, labels = np.unique(groups, return_inverse=True)
    queries, positives = [], []
    for g in range(group_ids.size):
        members = np.flatnonzero(labels == g)
        q = members[stems[members] % 100 == 0]
        if q.size != 1:
            raise ValueError(f"holidays: group {group_ids[g]} has {q.size} query images (names ending in 00); "
                             f"expected 1")
        queries.append(int(q[0]))
        positives.append(members[members != q[0]])
    gt = RetrievalGroundTruth(queries=np.asarray(queries), positives=positives,
                              junk=[np.empty(0, np.int64)] * len(queries), exclude_query_from_ranking=True)
    return gt, labels.astype(np.int64), [str(g) for g in group_ids]


def load_holidays(root: str | None = None, rotation_corrected: bool = False, images_dir: str | None = None,
                  strict: bool = True, require_images: bool = True) -> Dataset:
    """INRIA Holidays from ``root`` (default: the registered copy or ``<data root>/holidays``)."""
    base = dataset_root("holidays", root)
    folder = base / (images_dir or ("jpg_rotated" if rotation_corrected else "jpg"))
    list_file = base / LIST_FILE
    if list_file.is_file():
        names = [ln.strip() for ln in list_file.read_text().splitlines() if ln.strip()]
    elif folder.is_dir():
        names = sorted(p.name for p in folder.glob("*.jpg"))
    else:
        raise missing_error("holidays", folder, "the image folder is missing")
    if strict and len(names) != N_IMAGES:
        raise missing_error("holidays", folder, f"partial copy: {len(names)} images, expected {N_IMAGES}")
    if require_images:
        if not folder.is_dir():
            raise missing_error("holidays", folder, "the image folder is missing")
        absent = [n for n in names if not (folder / n).is_file()]
        if absent:
            raise missing_error("holidays", folder, f"{len(absent)} of {len(names)} images missing "
                                f"(first: {', '.join(absent[:3])})")
    gt, labels, group_names = holidays_ground_truth(names)
    return Dataset(
        name="holidays", task="retrieval", sample_ids=names, labels=labels, class_names=group_names,
        images=[str(folder / n) for n in names] if require_images else None, ground_truth=gt, root=base,
        info={"source": "Jegou et al. 2008, INRIA Holidays", "images_dir": folder.name,
              "rotation_corrected": bool(rotation_corrected),
              "n_groups": len(group_names), "query_rule": "stem % 100 == 0, removed from its own ranking"},
    )


#: What ``lfabench data fetch holidays`` downloads (see :mod:`lfabench.download`).
SOURCES = [
    Resource("ftp://ftp.inrialpes.fr/pub/lear/douze/data/jpg1.tar.gz", "jpg1.tar.gz", None, "."),
    Resource("ftp://ftp.inrialpes.fr/pub/lear/douze/data/jpg2.tar.gz", "jpg2.tar.gz", None, "."),
]


#: The protocol a run composes by default: SIFT 90 / DAISY 300 per image and mAP (the paper's search setting).
PROTOCOL = DatasetProtocol("retrieval",
                           descriptor="sift", evaluator="retrieval", max_keypoints={"sift": 90, "daisy": 300})


@hookimpl
def lfabench_datasets():
    return [PluginSpec("holidays", load_holidays,
                       "INRIA Holidays (Jegou 2008): 1,491 images, 500 query groups, retrieval",
                       sources=SOURCES, protocol=PROTOCOL)]
