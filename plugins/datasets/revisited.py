"""``roxford5k`` / ``rparis6k``: Revisited Oxford and Paris (Radenović, Iscen, Tolias, Avrithis & Chum, CVPR 2018).

Layout under ``root`` (as revisitop's ``data/datasets/<name>/``)::

    gnd_roxford5k.pkl        # or gnd_rparis6k.pkl: imlist, qimlist, gnd[q] = {easy, hard, junk, bbx}
    jpg/<name>.jpg           # database and query images

ROxford5k: 4,993 database images and 70 queries; RParis6k: 6,322 and 70. The queries are not database
images (revisitop separates the two lists): each is an extra sample that is never ranked. Query boxes
``bbx = (x1, y1, x2, y2)`` in pixels; the retrieval evaluator keeps a query's descriptors inside its
box (``evaluator.params.query_region=bbox``, default) or the whole image (``full``).

Ground truth: positives = easy + hard, junk = junk (the Medium setup, scored as ``mAP``), and the
easy / hard lists themselves (``RetrievalGroundTruth.difficulty``), from which the retrieval evaluator
reports the three setups of :mod:`lfabench.evaluation.revisited` (Easy, Medium, Hard: mAP and mP@k).

``distractors``: a list of distractor images (one path per line, relative to the list's folder), added
to the database after its own images, as the R1M set (1,001,001 images) extends it; they are negatives
of every query (label ``-1``). The gnd file is read with a restricted unpickler (plain data only).
"""

from __future__ import annotations

from lfabench.sdk import Dataset, DatasetProtocol, PluginSpec, Resource, dataset_root, hookimpl, missing_error

from .groundtruth import read_distractors, read_gnd, retrieval_dataset

COUNTS = {"roxford5k": (4993, 70), "rparis6k": (6322, 70)}
GND_URL = "http://cmp.felk.cvut.cz/revisitop/data/datasets/{name}/gnd_{name}.pkl"


def load_revisited(name: str, root: str | None = None, distractors: str | None = None, strict: bool = True,
                   require_images: bool = True) -> Dataset:
    """``name`` (``roxford5k`` or ``rparis6k``) from ``root`` (default: the registered copy or the data root)."""
    base = dataset_root(name, root)
    gnd_file = base / f"gnd_{name}.pkl"
    if not gnd_file.is_file():
        raise missing_error(name, gnd_file, "the revisited ground truth is missing")
    imlist, qimlist, queries = read_gnd(gnd_file)
    if any(q.easy is None for q in queries):
        raise ValueError(f"{gnd_file}: not a revisited ground truth (entries without easy/hard lists)")
    n_db, n_q = COUNTS[name]
    if strict and (len(imlist), len(qimlist)) != (n_db, n_q):
        raise missing_error(name, gnd_file, f"{len(imlist)} database images and {len(qimlist)} queries, expected "
                            f"{n_db} and {n_q} (strict=false accepts another list)")
    images = base / "jpg"
    extra = read_distractors(distractors) if distractors else []
    return retrieval_dataset(
        name, base, imlist, [images / f"{n}.jpg" for n in imlist], queries,
        {n: images / f"{n}.jpg" for n in qimlist}, extra, require_images=require_images, source=gnd_file,
        info={"source": "Radenović et al. 2018, Revisiting Oxford and Paris (revisitop)",
              "distractors": str(distractors) if distractors else None,
              "setups": "easy: easy vs junk+hard ignored; medium: easy+hard vs junk; hard: hard vs junk+easy"})


def load_roxford5k(root: str | None = None, distractors: str | None = None, strict: bool = True,
                   require_images: bool = True) -> Dataset:
    """Revisited Oxford (4,993 images, 70 queries): :func:`load_revisited`."""
    return load_revisited("roxford5k", root, distractors, strict, require_images)


def load_rparis6k(root: str | None = None, distractors: str | None = None, strict: bool = True,
                  require_images: bool = True) -> Dataset:
    """Revisited Paris (6,322 images, 70 queries): :func:`load_revisited`."""
    return load_revisited("rparis6k", root, distractors, strict, require_images)


#: The protocol a run composes by default: SIFT 90 / DAISY 300 per image (as Oxford5k) and the retrieval evaluator.
PROTOCOL = DatasetProtocol("retrieval", descriptor="sift", evaluator="retrieval",
                           max_keypoints={"sift": 90, "daisy": 300})
MANUAL = ("images: revisitop's download.py (the Oxford and Paris image archives into jpg/); ground truth: "
          "gnd_<name>.pkl from revisitop; then `lfabench data add <name> PATH`")


@hookimpl
def lfabench_datasets():
    return [PluginSpec(name, factory, f"Revisited {city} (Radenović 2018): {COUNTS[name][0]:,} images, 70 queries, "
                       f"Easy/Medium/Hard mAP and mP@k, optional R1M-style distractors",
                       sources=[Resource(GND_URL.format(name=name), f"gnd_{name}.pkl", None, None)],
                       manual=MANUAL, protocol=PROTOCOL)
            for name, factory, city in (("roxford5k", load_roxford5k, "Oxford"), ("rparis6k", load_rparis6k, "Paris"))]
