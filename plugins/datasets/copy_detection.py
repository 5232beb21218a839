"""``copy_detection``: an instance-retrieval task made from any photo collection by INRIA Copydays' attacks.

A **stand-in built from real photographs**, not Oxford, Holidays nor Copydays: it measures how well an
aggregation finds transformed copies of a photograph among other photographs, with the attack families of
Copydays (Douze, Jégou, Sandhawalia, Amsaleg & Schmid, CIVR 2009) applied to the images of ``root``
(any folder; recursively, sorted by relative path):

* ``crop``: a rectangle of the image's aspect ratio is kept, removing a fraction of the area drawn
  from 10, 20, ..., 80 % (Copydays' levels), at a position drawn uniformly;
* ``jpeg``: re-encoded with OpenCV at a quality drawn from 75, 50, 30, 20, 15, 10, 8, 5, 3;
* ``strong``: one of rotation (10-45 degrees either way, about the centre, borders black), scaling
  (the image resized by 0.25-0.6 per side), Gaussian blur (sigma 1.5-4 px), contrast and brightness
  (``a * x + b``, a in 0.4-1.6, b in -60..60), additive Gaussian noise (sigma 10-30 grey levels).

``copies_per_family`` copies of each family per original, each attack and level drawn from
``seed`` and the original's position only (the same copies on every machine and run). Sample ids
name the attack: ``copy/<original>#crop40``, ``#jpeg3``, ``#rotation-25``, ``#rotation+12``...

Ground truth (the Holidays protocol): each original with its copies is one group (label = the
original's number); the original is the group's query, its copies are the positives, there is no
junk, the whole collection is ranked and the query is removed from its own ranking.

The copies are made when a sample is read (never written to disk). The fingerprint hashes the
originals' bytes, the sample ids and ground truth, the attack parameters, the source of this module
and OpenCV's version, instead of every generated copy's pixels (which would make each copy twice per run).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from lfabench.sdk import (Dataset, DatasetProtocol, PluginSpec, RetrievalGroundTruth, dataset_root, file_digest,
                          hookimpl, missing_error)

from .imagefolder import image_files

FAMILIES = ("crop", "jpeg", "strong")
CROP_LEVELS = (10, 20, 30, 40, 50, 60, 70, 80)            # percent of the area removed
JPEG_QUALITIES = (75, 50, 30, 20, 15, 10, 8, 5, 3)
STRONG_ATTACKS = ("rotation", "scaling", "blur", "contrast", "noise")
#: ``root`` value naming the two photographs bundled with scikit-learn (china.jpg, flower.jpg).
SKLEARN_SAMPLES = "sklearn:sample_images"


def draw_attacks(n_originals: int, families: Sequence[str], copies_per_family: int, seed: int) -> list[list[str]]:
    """For each original, its copies' attack names (``crop40``, ``jpeg3``, ``rotation-25``, ``blur2.5``...).

    A rotation is named by its signed angle in degrees (``rotation+25``: counter-clockwise, as OpenCV's
    ``getRotationMatrix2D``; ``rotation-25``: clockwise), which is what :func:`attack` applies.
    """
    out = []
    for i in range(n_originals):
        rng = np.random.default_rng([seed, i])
        names = []
        for family in families:
            for _ in range(copies_per_family):
                if family == "crop":
                    names.append(f"crop{rng.choice(CROP_LEVELS)}")
                elif family == "jpeg":
                    names.append(f"jpeg{rng.choice(JPEG_QUALITIES)}")
                else:
                    kind = STRONG_ATTACKS[rng.integers(len(STRONG_ATTACKS))]
                    level = {"rotation": lambda: f"{int(rng.choice([-1, 1]) * rng.integers(10, 46)):+d}",
                             "scaling": lambda: f"{rng.uniform(0.25, 0.6):.2f}",
                             "blur": lambda: f"{rng.uniform(1.5, 4.0):.2f}",
                             "contrast": lambda: f"{rng.uniform(0.4, 1.6):.2f}_{int(rng.integers(-60, 61))}",
                             "noise": lambda: f"{rng.uniform(10, 30):.1f}"}[kind]()
                    names.append(f"{kind}{level}")
        out.append(names)
    return out


def attack(image: np.ndarray, name: str, rng_seed: Sequence[int]) -> np.ndarray:
    """``image`` (uint8, ``(H, W)`` or ``(H, W, 3)``) under the attack ``name`` (see :func:`draw_attacks`).

    ``rng_seed`` seeds what the name does not fix (crop position, noise). Returns uint8 of the same channels.
    """
    import cv2

    rng = np.random.default_rng(list(rng_seed))
    h, w = image.shape[:2]
    if name.startswith("crop"):
        keep = np.sqrt(1.0 - int(name[4:]) / 100.0)
        ch, cw = max(1, int(round(h * keep))), max(1, int(round(w * keep)))
        y, x = int(rng.integers(0, h - ch + 1)), int(rng.integers(0, w - cw + 1))
        return np.ascontiguousarray(image[y:y + ch, x:x + cw])
    if name.startswith("jpeg"):
        ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, int(name[4:])])
        if not ok:
            raise RuntimeError(f"OpenCV could not encode a JPEG for attack {name!r}")
        return cv2.imdecode(data, cv2.IMREAD_UNCHANGED)
    if name.startswith("rotation"):
        matrix = cv2.getRotationMatrix2D(((w - 1) / 2.0, (h - 1) / 2.0), float(name[len("rotation"):]), 1.0)
        return cv2.warpAffine(image, matrix, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
    if name.startswith("scaling"):
        f = float(name[len("scaling"):])
        return cv2.resize(image, (max(1, round(w * f)), max(1, round(h * f))), interpolation=cv2.INTER_AREA)
    if name.startswith("blur"):
        return cv2.GaussianBlur(image, (0, 0), sigmaX=float(name[4:]))
    if name.startswith("contrast"):
        a, b = name[len("contrast"):].split("_")
        return np.clip(float(a) * image.astype(np.float64) + float(b), 0, 255).astype(np.uint8)
    if name.startswith("noise"):
        noisy = image.astype(np.float64) + rng.normal(0.0, float(name[5:]), image.shape)
        return np.clip(np.rint(noisy), 0, 255).astype(np.uint8)
    raise ValueError(f"copy_detection: unknown attack {name!r}")


class CopyImages(Sequence):
    """The dataset's images: the originals' paths, then each copy made when read (an array)."""

    def __init__(self, originals: list[str], copies: list[tuple[int, str]], seed: int):
        self.originals, self.copies, self.seed = originals, copies, seed

    def __len__(self) -> int:
        return len(self.originals) + len(self.copies)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        i = int(i) + (len(self) if int(i) < 0 else 0)
        if not 0 <= i < len(self):
            raise IndexError(i)
        if i < len(self.originals):
            return self.originals[i]
        source, name = self.copies[i - len(self.originals)]
        return attack(_read(self.originals[source]), name, (self.seed, source, i))


def _read(path: str) -> np.ndarray:
    import cv2

    image = cv2.imdecode(np.fromfile(path, np.uint8), cv2.IMREAD_UNCHANGED)
    if image is None:
        raise ValueError(f"copy_detection: image {path} cannot be decoded")
    if image.ndim == 3:
        image = cv2.cvtColor(image, cv2.COLOR_BGR2RGB if image.shape[2] == 3 else cv2.COLOR_BGRA2RGB)
    return image


def load_copy_detection(root: str | None = None, n_originals: int | None = None,
                        families: str | list[str] | tuple[str, ...] = FAMILIES,
                        copies_per_family: int = 1, seed: int = 0) -> Dataset:
    """Copies of the photographs under ``root`` (default: the copy registered as ``copy_detection``).

    ``n_originals`` keeps that many originals spread evenly over the sorted list (``None``: all).
    ``root="sklearn:sample_images"``: the two photographs bundled with scikit-learn (the smoke preset).
    """
    families = [families] if isinstance(families, str) else list(families)
    if not families or any(f not in FAMILIES for f in families) or len(set(families)) != len(families):
        raise ValueError(f"copy_detection: families must be distinct names among {FAMILIES}, got {families}")
    if int(copies_per_family) < 1:
        raise ValueError(f"copy_detection: copies_per_family must be >= 1, got {copies_per_family}")
    if root == SKLEARN_SAMPLES:  # two real photographs bundled with scikit-learn: the embedded smoke setting
        import sklearn.datasets

        base = Path(sklearn.datasets.__file__).parent / "images"
    else:
        base = dataset_root("copy_detection", root)
    if not base.is_dir():
        raise missing_error("copy_detection", base, "the photo folder does not exist", fetchable=False)
    files = image_files(base)
    if n_originals is not None:
        if not 1 <= int(n_originals) <= len(files):
            raise ValueError(f"copy_detection: n_originals must be in 1..{len(files)} (images under {base}), "
                             f"got {n_originals}")
        files = [files[i] for i in np.unique(np.round(np.linspace(0, len(files) - 1, int(n_originals))).astype(int))]
    if not files:
        raise missing_error("copy_detection", base, "no image under the folder", fetchable=False)
    names = [p.relative_to(base).as_posix() for p in files]
    attacks = draw_attacks(len(files), families, int(copies_per_family), int(seed))
    copies = [(i, a) for i, row in enumerate(attacks) for a in row]
    n = len(files)
    ids = names + [f"copy/{names[i]}#{a}" for i, a in copies]
    labels = np.concatenate([np.arange(n), [i for i, _ in copies]]).astype(np.int64)
    per = len(attacks[0])
    positives = [n + i * per + np.arange(per) for i in range(n)]
    truth = RetrievalGroundTruth(queries=np.arange(n), positives=positives, junk=[np.empty(0, np.int64)] * n,
                                 exclude_query_from_ranking=True)
    recipe = {"families": families, "copies_per_family": int(copies_per_family), "seed": int(seed),
              "crop_area_removed_percent": list(CROP_LEVELS), "jpeg_qualities": list(JPEG_QUALITIES),
              "strong": "rotation 10-45 deg, scaling 0.25-0.6, blur sigma 1.5-4, contrast 0.4-1.6 with "
                        "brightness -60..60, Gaussian noise sigma 10-30"}
    dataset = Dataset(name="copy_detection", task="retrieval", sample_ids=ids, labels=labels, class_names=names,
                      images=CopyImages([str(p) for p in files], copies, int(seed)), ground_truth=truth, root=base,
                      info={"stand_in": "copies made from real photographs (Copydays attack families); not Oxford, "
                                        "Holidays nor Copydays", "n_originals": n, "n_copies": len(copies),
                            "attacks": recipe})
    dataset._fingerprint = _fingerprint(dataset, files, recipe)
    return dataset


def _fingerprint(dataset: Dataset, files: list[Path], recipe: dict) -> str:
    import cv2

    h = hashlib.sha256()
    h.update(b"copy_detection\0" + "\0".join(dataset.sample_ids).encode())
    h.update(dataset.labels.tobytes() + repr(sorted(recipe.items())).encode() + cv2.__version__.encode())
    h.update(Path(__file__).read_bytes())                       # a change of the attacks' code is new data
    for p in files:
        h.update(file_digest(p) + b";")
    return h.hexdigest()


#: The protocol a run composes by default: SIFT 90 / DAISY 300 per image and mAP (as Holidays).
PROTOCOL = DatasetProtocol("retrieval", descriptor="sift", evaluator="retrieval",
                           max_keypoints={"sift": 90, "daisy": 300})


@hookimpl
def lfabench_datasets():
    return [PluginSpec("copy_detection", load_copy_detection,
                       "Copies (Copydays crop / JPEG / strong attacks) of any photo folder, Holidays-style mAP; "
                       "a stand-in built from real photographs",
                       manual="point it at a folder of photographs: `lfabench data add copy_detection PATH`",
                       protocol=PROTOCOL)]
