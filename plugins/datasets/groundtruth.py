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

from lfabench.sdk import Dataset, RetrievalGroundTruth

from .gtcheck import disjoint, duplicated, image_name, index_list, not_its_own, query_box, shown

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".pgm", ".bmp", ".tif", ".tiff", ".webp")


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module, name):  # no globals: only lists, dicts, tuples, str, int, float
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} (only plain data is expected)")


def load_plain_pickle(path: Path):
    """The content of a pickle holding plain data only; a ``ValueError`` naming ``path`` otherwise (a class or a
    function refused, a truncated file, nesting too deep to load)."""
    try:
        return _PlainUnpickler(io.BytesIO(Path(path).read_bytes()), encoding="latin1").load()
    except OSError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever a crafted pickle makes the loader raise (deep nesting too)
        raise ValueError(f"{path}: not a plain-data pickle ({type(exc).__name__}: {exc})") from None


@dataclass
class QueryTruth:
    """One query: its image name, the database names of each list, its box (or None)."""

    query: str
    positives: list[str]
    junk: list[str] = field(default_factory=list)
    easy: list[str] | None = None     # revisited annotation only (positives = easy + hard)
    hard: list[str] | None = None
    bbox: tuple[float, float, float, float] | None = None


def read_gnd(path: Path) -> tuple[list[str], list[str], list[QueryTruth]]:
    """``(imlist, qimlist, queries)`` of a revisitop ``gnd_*.pkl`` (revisited or classic entries)."""
    data = load_plain_pickle(path)
    if not isinstance(data, dict) or not all(isinstance(data.get(k), (list, tuple)) for k in ("imlist", "qimlist", "gnd")):
        raise ValueError(f"{path}: a gnd file is a dict holding the lists imlist, qimlist and gnd")
    imlist = [image_name(s, f"{path}, imlist[{i}]") for i, s in enumerate(data["imlist"])]
    qimlist = [image_name(s, f"{path}, qimlist[{i}]") for i, s in enumerate(data["qimlist"])]
    entries = list(data["gnd"])
    if len(entries) != len(qimlist):
        raise ValueError(f"{path}: {len(qimlist)} queries in qimlist but {len(entries)} gnd entries")
    n = len(imlist)
    queries = []
    for q, entry in enumerate(entries):
        where = f"{path}, query {q} ({qimlist[q]})"
        if not isinstance(entry, dict):
            raise ValueError(f"{where}: a gnd entry is a dict, got {type(entry).__name__}")

        def names(key):
            return [imlist[i] for i in index_list(entry.get(key), n, where, key)]

        box = query_box(entry.get("bbx"), where)
        if "easy" in entry or "hard" in entry:
            easy, hard, junk = names("easy"), names("hard"), names("junk")
            disjoint(where, easy=easy, hard=hard, junk=junk)
            queries.append(QueryTruth(qimlist[q], easy + hard, junk, easy, hard, box))
        elif "ok" in entry:
            ok, junk = names("ok"), names("junk")
            disjoint(where, ok=ok, junk=junk)
            queries.append(QueryTruth(qimlist[q], ok, junk, bbox=box))
        else:
            raise ValueError(f"{where}: an entry needs easy/hard (revisited) or ok (classic) lists")
    return imlist, qimlist, queries


def read_json(path: Path) -> tuple[list[str] | None, list[QueryTruth]]:
    """``(database names or None, queries)`` of a JSON ground truth (module doc)."""
    try:
        data = json.loads(Path(path).read_text())
        rows = data["queries"]
    except (json.JSONDecodeError, KeyError, TypeError, RecursionError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: a JSON ground truth is {{\"queries\": [{{\"query\", \"positives\", ...}}]}} "
                         f"({exc})") from exc
    if not isinstance(rows, list):
        raise ValueError(f"{path}: \"queries\" must be a list")
    queries = []
    for q, row in enumerate(rows):
        where = f"{path}, query {q}"
        if not isinstance(row, dict) or "query" not in row or "positives" not in row:
            raise ValueError(f"{where}: each query needs 'query' and 'positives'")
        where = f"{path}, query {q} ({shown(row['query'])})"
        for key in ("positives", "junk"):
            if not isinstance(row.get(key) or [], list):
                raise ValueError(f"{where}: {key} must be a list of image names")
        queries.append(_query(where, row["query"], row["positives"], row.get("junk") or [], query_box(row.get("bbox"), where)))
    database = data.get("database")
    if database is not None and not isinstance(database, list):
        raise ValueError(f"{path}: \"database\" must be a list of image names")
    return ([image_name(v, f"{path}, database[{i}]") for i, v in enumerate(database)]
            if database is not None else None), queries


def _query(where: str, query, positives, junk, box) -> QueryTruth:
    """One query of a JSON or CSV ground truth, its names and lists checked (:mod:`.gtcheck`)."""
    query = image_name(query, where)
    positives = [image_name(v, where) for v in positives]
    junk = [image_name(v, where) for v in junk]
    duplicated(positives, where, "positives")
    duplicated(junk, where, "junk")
    disjoint(where, positive=positives, junk=junk)
    not_its_own(where, query, positives)
    return QueryTruth(query, positives, junk, bbox=box)


def read_csv(path: Path) -> list[QueryTruth]:
    """The queries of a CSV ground truth (module doc)."""
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames or not {"query", "positives"} <= set(reader.fieldnames):
            raise ValueError(f"{path}: the CSV header must name query and positives (and optionally junk, bbox), "
                             f"got {reader.fieldnames}")
        return [_query(f"{path}, line {n} (query {(row['query'] or '').strip()!r})", (row["query"] or "").strip(),
                       (row["positives"] or "").split(), (row.get("junk") or "").split(),
                       query_box(row.get("bbox"), f"{path}, line {n}"))
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
                      info: dict | None = None, require_images: bool = True, source: Path | str | None = None) -> Dataset:
    """A retrieval :class:`Dataset`: the database, then the distractors, then the queries not in the database.

    A query that is a database image is the same sample and is removed from its own ranking (the Holidays
    rule); a query outside the database (revisitop's layout) is an extra sample, never ranked. Labels: the
    query number for the query and each of its positives when that is unique, else ``-1`` (distractors,
    images shared by queries). Raises ``ValueError`` naming the query and the unknown image, or a query that is a
    database image among its own positives (it is removed from its ranking: never found); ``source`` (the ground
    truth file) is named in errors.
    """
    from lfabench.sdk import missing_error

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
    if not extra:  # queries are database images: each is removed from its own ranking
        for q, query in enumerate(queries):
            not_its_own(f"{source or name}, query {q} ({query.query!r})", qidx[q], positives[q].tolist())
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
