"""``oxford5k``: Oxford Buildings (Philbin et al., CVPR 2007), 5,062 images, 55 queries over 11 landmarks.

Layout under ``root``::

    oxbuild_images/<name>.jpg
    gt_files_170407/<landmark>_<n>_{query,good,ok,junk}.txt     # official ground truth, and/or
    gnd_oxford5k.pkl                                              # the widely used gnd_* layout

``ground_truth``: ``"txt"`` (official files), ``"pkl"`` (``gnd_oxford5k.pkl``: ``imlist``,
``qimlist``, ``gnd[q] = {bbx, ok, junk}`` where ``ok`` already merges good and ok), or
``"auto"`` (txt when the folder exists, else pkl). With txt the samples are the images of
``oxbuild_images`` in sorted order; with pkl they are ``imlist`` in its order.

Ground truth (:class:`~lfabench.dataset.RetrievalGroundTruth`): the 55 queries (ordered by
landmark, then query number), positives = good + ok, junk = junk, ``bboxes[q] = (x1, y1, x2, y2)``
in pixels of the query image. The whole database is ranked (the query is not removed; it is
among its own positives, as in the official ``compute_ap``).

Labels: the landmark index (``class_names`` = the 11 landmarks) for every query image and every
image that is a positive of exactly one landmark's queries; ``-1`` (unlabelled) for the others,
including the images that are positives of two landmarks (counted in
``info["n_ambiguous_positives"]``). These are what semi-supervised protocols may annotate.

``query_region``: ``"bbox"`` (classic protocol: a query is described only by its local features
inside its box) or ``"full"``; recorded in ``info`` for the retrieval evaluator, which crops with
the descriptors' ``x, y`` keypoints.

The pkl file is read with a restricted unpickler that accepts only plain containers and numbers
(no class or function can be loaded from it).
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path

import numpy as np

from lfabench.sdk import (Dataset, DatasetProtocol, PluginSpec, Resource, RetrievalGroundTruth, dataset_root, hookimpl,
                          missing_error)

from .gtcheck import disjoint, image_name, index_list, query_box

LANDMARKS = ("all_souls", "ashmolean", "balliol", "bodleian", "christ_church", "cornmarket", "hertford", "keble",
             "magdalen", "pitt_rivers", "radcliffe_camera")
GT_DIR = "gt_files_170407"
PKL = "gnd_oxford5k.pkl"
IMAGES_DIR = "oxbuild_images"


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module, name):  # no globals: lists, dicts, str, int, float only
        raise pickle.UnpicklingError(f"{PKL}: refusing to load {module}.{name} (only plain data is expected)")


def read_gnd_pkl(path: Path) -> dict:
    """``gnd_oxford5k.pkl`` as ``{imlist, qimlist, queries, positives, junk, bboxes}`` (indices into imlist)."""
    try:
        gnd = _PlainUnpickler(io.BytesIO(Path(path).read_bytes()), encoding="latin1").load()
    except OSError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever a crafted pickle makes the loader raise (deep nesting too)
        raise ValueError(f"{path}: not a gnd_oxford5k.pkl ground truth ({type(exc).__name__}: {exc})") from None
    if not isinstance(gnd, dict) or not all(isinstance(gnd.get(k), (list, tuple)) for k in ("imlist", "qimlist", "gnd")):
        raise ValueError(f"{path}: not a gnd_oxford5k.pkl ground truth (a dict of the lists imlist, qimlist, gnd)")
    imlist = [image_name(s, f"{path}, imlist[{i}]") for i, s in enumerate(gnd["imlist"])]
    qimlist = [image_name(s, f"{path}, qimlist[{i}]") for i, s in enumerate(gnd["qimlist"])]
    entries = gnd["gnd"]
    index = {name: i for i, name in enumerate(imlist)}
    missing = [q for q in qimlist if q not in index]
    if missing or len(entries) != len(qimlist):
        raise ValueError(f"{path}: {len(qimlist)} queries, {len(entries)} gnd entries, queries not in imlist: "
                         f"{missing[:5]}")
    positives, junk, boxes = [], [], []
    for q, e in enumerate(entries):
        where = f"{path}, query {q} ({qimlist[q]})"
        if not isinstance(e, dict):
            raise ValueError(f"{where}: a gnd entry is a dict, got {type(e).__name__}")
        positives.append(np.asarray(index_list(e.get("ok"), len(imlist), where, "ok"), dtype=np.int64))
        junk.append(np.asarray(index_list(e.get("junk"), len(imlist), where, "junk"), dtype=np.int64))
        disjoint(where, ok=positives[-1].tolist(), junk=junk[-1].tolist())
        boxes.append(query_box(e.get("bbx"), where))
        if boxes[-1] is None:
            raise ValueError(f"{where}: a classic Oxford query needs its box (bbx)")
    return {"imlist": imlist, "qimlist": qimlist, "queries": [index[q] for q in qimlist],
            "positives": positives, "junk": junk, "bboxes": boxes,
            "landmarks": [LANDMARKS[q // 5] if len(qimlist) == 55 else None for q in range(len(qimlist))]}


def read_gt_files(gt_dir: Path, imlist: list[str]) -> dict:
    """The official ``gt_files_170407`` lists, as indices into ``imlist`` (names without ``.jpg``)."""
    index = {name: i for i, name in enumerate(imlist)}
    queries = []
    for f in gt_dir.glob("*_query.txt"):
        stem = f.name[: -len("_query.txt")]
        landmark, _, number = stem.rpartition("_")
        if landmark not in LANDMARKS or not number.isdigit():
            raise ValueError(f"{f}: unexpected ground-truth file name (want <landmark>_<n>_query.txt)")
        queries.append((LANDMARKS.index(landmark), int(number), stem, f))
    queries.sort()
    out = {"queries": [], "positives": [], "junk": [], "bboxes": [], "landmarks": [], "qimlist": []}

    def names(stem: str, kind: str) -> list[str]:
        path = gt_dir / f"{stem}_{kind}.txt"
        if not path.exists():
            raise FileNotFoundError(path)
        return [ln.strip() for ln in path.read_text().splitlines() if ln.strip()]

    for landmark_i, _, stem, qfile in queries:
        fields = qfile.read_text().split()
        if len(fields) != 5:
            raise ValueError(f"{qfile}: expected '<image> x1 y1 x2 y2', got {' '.join(fields)!r}")
        qname = fields[0][len("oxc1_"):] if fields[0].startswith("oxc1_") else fields[0]
        listed = {kind: names(stem, kind) for kind in ("good", "ok", "junk")}
        unknown = [n for n in [qname] + sum(listed.values(), []) if n not in index]
        if unknown:
            raise KeyError(f"{stem}: images not in {IMAGES_DIR}: {', '.join(unknown[:5])}"
                           + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""))
        out["queries"].append(index[qname])
        out["qimlist"].append(qname)
        out["positives"].append(np.asarray(sorted(index[n] for n in listed["good"] + listed["ok"]), np.int64))
        out["junk"].append(np.asarray(sorted(index[n] for n in listed["junk"]), np.int64))
        out["bboxes"].append(tuple(float(v) for v in fields[1:]))
        out["landmarks"].append(LANDMARKS[landmark_i])
    return out


def landmark_labels(n: int, gt: dict) -> tuple[np.ndarray, int]:
    """Landmark index per image, and how many images were left ambiguous.

    A query image gets its query's landmark. Any other image gets the landmark whose
    queries list it as a positive, when that landmark is unique; an image that is a
    positive of several landmarks (two buildings in view) or of none gets ``-1``.
    """
    member = np.zeros((n, len(LANDMARKS)), dtype=bool)
    for pos, landmark in zip(gt["positives"], gt["landmarks"]):
        if landmark is not None:
            member[pos, LANDMARKS.index(landmark)] = True
    n_hits = member.sum(axis=1)
    labels = np.where(n_hits == 1, member.argmax(axis=1), -1).astype(np.int64)
    for q, landmark in zip(gt["queries"], gt["landmarks"]):
        if landmark is not None:
            labels[q] = LANDMARKS.index(landmark)
    return labels, int(np.sum((n_hits > 1) & (labels < 0)))


def load_oxford5k(root: str | None = None, ground_truth: str = "auto", query_region: str = "bbox",
                  require_images: bool = True) -> Dataset:
    """Oxford5k from ``root`` (default: the registered copy or ``<data root>/oxford5k``)."""
    if ground_truth not in ("auto", "txt", "pkl"):
        raise ValueError(f"oxford5k: ground_truth must be 'auto', 'txt' or 'pkl', got {ground_truth!r}")
    if query_region not in ("bbox", "full"):
        raise ValueError(f"oxford5k: query_region must be 'bbox' or 'full', got {query_region!r}")
    base = dataset_root("oxford5k", root)
    images = base / IMAGES_DIR
    if ground_truth == "auto":
        ground_truth = "txt" if (base / GT_DIR).is_dir() else "pkl"
    if ground_truth == "txt":
        if not (base / GT_DIR).is_dir():
            raise missing_error("oxford5k", base / GT_DIR, "the official ground-truth folder is missing")
        if not images.is_dir():
            raise missing_error("oxford5k", images, "the image folder is missing (the txt ground truth needs it to "
                                "list the database)")
        imlist = sorted(p.stem for p in images.glob("*.jpg"))
        try:
            gt = read_gt_files(base / GT_DIR, imlist)
        except (FileNotFoundError, KeyError) as exc:
            raise missing_error("oxford5k", base, f"partial copy: {exc}") from exc
    else:
        if not (base / PKL).is_file():
            raise missing_error("oxford5k", base / PKL, f"no ground truth ({GT_DIR}/ or {PKL})")
        gt = read_gnd_pkl(base / PKL)
        imlist = gt["imlist"]
    if not gt["queries"]:
        raise missing_error("oxford5k", base / GT_DIR, "no query files found")
    paths = [images / f"{name}.jpg" for name in imlist]
    if require_images:
        if not images.is_dir():
            raise missing_error("oxford5k", images, "the image folder is missing")
        absent = [p.name for p in paths if not p.exists()]
        if absent:
            raise missing_error("oxford5k", images, f"{len(absent)} of {len(paths)} images missing "
                                f"(first: {', '.join(absent[:3])})")
    labels, n_ambiguous = landmark_labels(len(imlist), gt)
    truth = RetrievalGroundTruth(queries=gt["queries"], positives=gt["positives"], junk=gt["junk"],
                                 bboxes=gt["bboxes"], exclude_query_from_ranking=False)
    return Dataset(
        name="oxford5k", task="retrieval", sample_ids=imlist, labels=labels,
        class_names=list(LANDMARKS), images=[str(p) for p in paths] if require_images else None,
        ground_truth=truth, root=base,
        info={"source": "Philbin et al. 2007, Oxford Buildings", "ground_truth": ground_truth,
              "query_region": query_region, "query_names": gt["qimlist"], "query_landmarks": gt["landmarks"],
              "positives": "good + ok", "labels": "landmark of each query and of each image positive for exactly one landmark; -1 elsewhere",
              "n_ambiguous_positives": n_ambiguous},
    )


#: What ``lfabench data fetch oxford5k`` downloads (see :mod:`lfabench.download`).
SOURCES = [
    Resource("https://www.robots.ox.ac.uk/~vgg/data/oxbuildings/oxbuild_images-v1.tgz", "oxbuild_images-v1.tgz",
             None, "oxbuild_images"),
    Resource("https://www.robots.ox.ac.uk/~vgg/data/oxbuildings/gt_files_170407.tgz", "gt_files_170407.tgz",
             None, "gt_files_170407"),
    Resource("http://cmp.felk.cvut.cz/cnnimageretrieval/data/test/oxford5k/gnd_oxford5k.pkl", "gnd_oxford5k.pkl",
             "md5:5b20f4b818702cfba1dd73da1b713634", None, "md5 of the real copy in shared/data (README)"),
]


#: The protocol a run composes by default: SIFT 90 / DAISY 300 per image and mAP (the paper's search setting).
PROTOCOL = DatasetProtocol("retrieval",
                           descriptor="sift", evaluator="retrieval", max_keypoints={"sift": 90, "daisy": 300})


@hookimpl
def lfabench_datasets():
    return [PluginSpec("oxford5k", load_oxford5k,
                       "Oxford Buildings (Philbin 2007): 5,062 images, 55 queries with boxes, retrieval",
                       sources=SOURCES, protocol=PROTOCOL)]
