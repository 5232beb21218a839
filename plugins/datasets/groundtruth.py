"""Reading retrieval ground truth files and building retrieval datasets from them.

Shared by ``roxford5k`` / ``rparis6k`` and ``retrieval_folder``. Formats (per query: its image, the
database images that are positives, the junk ones, an optional box ``x1 y1 x2 y2`` in pixels):

* **gnd pkl** (revisitop's ``gnd_<name>.pkl``, read by :func:`load_plain_pickle`, which loads plain
  containers and numbers only, never a class or a function): ``{"imlist": [...], "qimlist": [...],
  "gnd": [...]}`` with ``gnd[q]`` either revisited (``easy``, ``hard``, ``junk``, ``bbx``) or classic
  (``ok``, ``junk``, ``bbx``); indices point into ``imlist``; names carry no extension.
* **JSON**: ``{"queries": [{"query": "q.jpg", "positives": ["a.jpg"], "junk": [], "bbox": [x1, y1, x2,
  y2]}], "database": ["a.jpg", ...]}`` (``junk``, ``bbox`` and ``database`` optional; names are paths
  relative to the image folder).
* **CSV**: a header ``query,positives,junk,bbox`` (``junk``, ``bbox`` optional), one row per query;
  ``positives`` and ``junk`` hold names separated by spaces, ``bbox`` four numbers separated by spaces.
"""

from __future__ import annotations

import csv
import io
import json
import pickle
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from lfabench.dataset import Dataset, RetrievalGroundTruth

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".pgm", ".bmp", ".tif", ".tiff", ".webp")


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module, name):  # no globals: only lists, dicts, tuples, str, int, float
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} (only plain data is expected)")


def load_plain_pickle(path: Path):
    """The content of a pickle holding plain data only; a ``ValueError`` naming ``path`` otherwise."""
    try:
        return _PlainUnpickler(io.BytesIO(Path(path).read_bytes()), encoding="latin1").load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError) as exc:
        raise ValueError(f"{path}: not a plain-data pickle ({exc})") from exc


@dataclass
class QueryTruth:
    """One query: its image name, the database names of each list, its box (or None)."""

    query: str
    positives: list[str]
    junk: list[str] = field(default_factory=list)
    easy: list[str] | None = None     # revisited annotation only (positives = easy + hard)
    hard: list[str] | None = None
    bbox: tuple[float, float, float, float] | None = None


def _box(value, where: str):
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    parts = value.split() if isinstance(value, str) else list(value)
    try:
        box = tuple(float(v) for v in parts)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{where}: bbox must be four numbers x1 y1 x2 y2, got {value!r}") from exc
    if len(box) != 4 or not (box[0] <= box[2] and box[1] <= box[3]):
        raise ValueError(f"{where}: bbox must be four numbers x1 y1 x2 y2 with x1 <= x2, y1 <= y2, got {value!r}")
    return box


def read_gnd(path: Path) -> tuple[list[str], list[str], list[QueryTruth]]:
    """``(imlist, qimlist, queries)`` of a revisitop ``gnd_*.pkl`` (revisited or classic entries)."""
    data = load_plain_pickle(path)
    try:
        imlist = [str(s) for s in data["imlist"]]
        qimlist = [str(s) for s in data["qimlist"]]
        entries = list(data["gnd"])
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{path}: a gnd file holds imlist, qimlist and gnd ({exc!r} missing)") from exc
    if len(entries) != len(qimlist):
        raise ValueError(f"{path}: {len(qimlist)} queries in qimlist but {len(entries)} gnd entries")
    n = len(imlist)
    queries = []
    for q, entry in enumerate(entries):
        where = f"{path}, query {q} ({qimlist[q]})"

        def names(key):
            idx = [int(i) for i in (entry.get(key) or [])]
            bad = [i for i in idx if not 0 <= i < n]
            if bad:
                raise ValueError(f"{where}: {key} index {bad[0]} out of range for {n} database images")
            return [imlist[i] for i in idx]

        if not isinstance(entry, dict):
            raise ValueError(f"{where}: a gnd entry is a dict, got {type(entry).__name__}")
        box = _box(entry.get("bbx"), where)
        if "easy" in entry or "hard" in entry:
            easy, hard = names("easy"), names("hard")
            queries.append(QueryTruth(qimlist[q], easy + hard, names("junk"), easy, hard, box))
        elif "ok" in entry:
            queries.append(QueryTruth(qimlist[q], names("ok"), names("junk"), bbox=box))
        else:
            raise ValueError(f"{where}: an entry needs easy/hard (revisited) or ok (classic) lists")
    return imlist, qimlist, queries


def read_json(path: Path) -> tuple[list[str] | None, list[QueryTruth]]:
    """``(database names or None, queries)`` of a JSON ground truth (module doc)."""
    try:
        data = json.loads(Path(path).read_text())
        rows = data["queries"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: a JSON ground truth is {{\"queries\": [{{\"query\", \"positives\", ...}}]}} "
                         f"({exc})") from exc
    queries = []
    for q, row in enumerate(rows):
        where = f"{path}, query {q}"
        if not isinstance(row, dict) or "query" not in row or "positives" not in row:
            raise ValueError(f"{where}: each query needs 'query' and 'positives'")
        queries.append(QueryTruth(str(row["query"]), [str(v) for v in row["positives"]],
                                  [str(v) for v in row.get("junk") or []], bbox=_box(row.get("bbox"), where)))
    database = data.get("database")
    return ([str(v) for v in database] if database is not None else None), queries


def read_csv(path: Path) -> list[QueryTruth]:
    """The queries of a CSV ground truth (module doc)."""
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames or not {"query", "positives"} <= set(reader.fieldnames):
            raise ValueError(f"{path}: the CSV header must name query and positives (and optionally junk, bbox), "
                             f"got {reader.fieldnames}")
        return [QueryTruth(row["query"].strip(), (row["positives"] or "").split(), (row.get("junk") or "").split(),
                           bbox=_box(row.get("bbox"), f"{path}, line {n}"))
                for n, row in enumerate(reader, 2)]


def read_distractors(path: Path | str) -> list[Path]:
    """Image paths of a distractor list (one per line, relative to the list's folder or absolute)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise FileNotFoundError(f"distractor list {path} does not exist")
    lines = [ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    return [Path(ln) if Path(ln).is_absolute() else path.parent / ln for ln in lines]


def retrieval_dataset(name: str, base: Path, database: list[str], database_paths: list[Path],
                      queries: list[QueryTruth], query_paths: dict[str, Path], distractors: list[Path] = (),
                      info: dict | None = None, require_images: bool = True) -> Dataset:
    """A retrieval :class:`Dataset`: the database, then the distractors, then the queries not in the database.

    A query that is a database image is the same sample and is removed from its own ranking (the Holidays
    rule); a query outside the database (revisitop's layout) is an extra sample, never ranked. Labels: the
    query number for the query and each of its positives when that is unique, else ``-1`` (distractors,
    images shared by queries). Raises ``ValueError`` naming the query and the unknown image.
    """
    from lfabench.dataroot import missing_error

    index = {n: i for i, n in enumerate(database)}
    if len(index) != len(database):
        raise ValueError(f"{name}: the database lists an image twice")
    ids = list(database) + [f"distractor/{p}" for p in distractors]
    paths = list(database_paths) + list(distractors)
    n_ranked = len(ids)
    extra = [q.query for q in queries if q.query not in index]
    for qname in dict.fromkeys(extra):
        index[qname] = len(ids)
        ids.append(f"query/{qname}")
        if qname not in query_paths:
            raise ValueError(f"{name}: query image {qname!r} is neither in the database nor in the image folder")
        paths.append(query_paths[qname])
    in_db = [q.query for q in queries if index[q.query] < len(database)]
    if in_db and extra:
        raise ValueError(f"{name}: some queries are database images and some are not ({in_db[0]!r}, {extra[0]!r}); "
                         f"choose one layout")

    def idx(names, q, what):
        unknown = [n for n in names if n not in index or index[n] >= len(database)]
        if unknown:
            raise ValueError(f"{name}: query {q} ({queries[q].query!r}): {what} image {unknown[0]!r} is not a "
                             f"database image")
        return np.asarray(sorted(index[n] for n in names), dtype=np.int64)

    positives = [idx(q.positives, i, "positive") for i, q in enumerate(queries)]
    junk = [idx(q.junk, i, "junk") for i, q in enumerate(queries)]
    revisited = all(q.easy is not None for q in queries) and bool(queries)
    difficulty = ({"easy": [idx(q.easy, i, "easy") for i, q in enumerate(queries)],
                   "hard": [idx(q.hard, i, "hard") for i, q in enumerate(queries)]} if revisited else None)
    labels = np.full(len(ids), -1, dtype=np.int64)
    claimed = np.zeros(len(ids), dtype=np.int64)
    for q, pos in enumerate(positives):
        claimed[pos] += 1
        labels[pos] = q
    labels[claimed > 1] = -1
    qidx = np.asarray([index[q.query] for q in queries], dtype=np.int64)
    labels[qidx] = np.arange(len(queries))
    if require_images:
        absent = [str(p) for p in paths if not Path(p).is_file()]
        if absent:
            raise missing_error(name, base, f"{len(absent)} of {len(paths)} images missing (first: {absent[0]})")
    truth = RetrievalGroundTruth(queries=qidx, positives=positives, junk=junk,
                                 bboxes=[q.bbox for q in queries] if any(q.bbox for q in queries) else None,
                                 database=np.arange(n_ranked), exclude_query_from_ranking=not extra,
                                 difficulty=difficulty)
    return Dataset(name=name, task="retrieval", sample_ids=ids, labels=labels,
                   class_names=[q.query for q in queries], images=[str(p) for p in paths] if require_images else None,
                   ground_truth=truth, root=base,
                   info=dict(info or {}, n_database=len(database), n_distractors=len(distractors),
                             n_queries=len(queries), queries_in_database=not extra,
                             annotation="revisited (easy/hard/junk)" if revisited else "positives/junk"))
