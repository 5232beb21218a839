"""The landing page of a folder of boards: ``index.md`` and ``index.html``, one row per board.

Read from the boards' own files only, never from their records: a board is a ``<name>.csv`` (its cells,
written by :func:`lfabench.leaderboard.build.build_leaderboard`) with its ``<name>-outputs.txt`` or
``<name>.md`` beside it, anywhere under the folder except inside a board's ``records/``. Each row states the
board's name, datasets and protocols (in words: :mod:`lfabench.leaderboard.titles`), its tasks (dataset x
descriptor x evaluator), methods and seeds, the best method of each task by the evaluator's primary metric
(:func:`lfabench.leaderboard.ranks.primary_metric`; equal means all named), its record format, and links to
its pages. The record format comes from the board's manifest ``<name>-records.json``
(:mod:`lfabench.leaderboard.manifest`): how many records, of which schema versions, and whether each carries
the digest ``lfabench verify`` checks. A board without a manifest (published before the current record
format) is listed as such, never left out.

The output is deterministic (no clock, boards sorted by path), so rebuilding an unchanged folder rewrites the
same bytes.
"""

from __future__ import annotations

import csv
import dataclasses
import os
from pathlib import Path

from markupsafe import Markup

from ..storage import write_text_atomic
from .manifest import manifest_path, read_manifest
from .markdown import md_text
from .ranks import primary_metric
from .titles import dataset_title, protocol_title

INDEX_NAMES = ("index.md", "index.html")


@dataclasses.dataclass
class BoardEntry:
    """One board of the landing page (every field is text or numbers read from the board's files)."""

    name: str
    folder: str  # relative to the indexed folder, ``/``-separated
    datasets: list[str]
    protocols: list[str]
    tasks: list[str]
    n_methods: int
    seeds: str
    best: list[tuple[str, str]]  # (task, best method(s))
    records: str  # record format and verifiability, in words
    verifiable: bool
    pages: dict[str, str]  # {"html"|"md": path relative to the indexed folder}


def find_boards(root: Path) -> list[tuple[Path, str]]:
    """``(folder, name)`` of every board under ``root`` (module docstring), sorted by path."""
    root = Path(root)
    found = set()
    for csv_path in root.rglob("*.csv"):
        rel = csv_path.relative_to(root)
        if "records" in rel.parts[:-1]:
            continue
        name = csv_path.stem
        if (csv_path.with_name(f"{name}-outputs.txt").is_file() or csv_path.with_name(f"{name}.md").is_file()):
            found.add((csv_path.parent, name))
    return sorted(found, key=lambda fn: (fn[0].relative_to(root).as_posix(), fn[1]))


def _seeds(cells) -> str:
    seeds = sorted({int(s) for cell in cells for s in str(cell).split(",") if s.strip().lstrip("-").isdigit()})
    if not seeds:
        return "—"
    shown = f"{seeds[0]}-{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2 \
        else ",".join(map(str, seeds))
    return f"{len(seeds)} ({shown})"


def _record_format(folder: Path, name: str) -> tuple[str, bool]:
    """The board's record format in words and whether ``lfabench verify`` can check every record's digest."""
    path = manifest_path(folder, name)
    if not path.is_file():
        return ("no record manifest: published before the current record format, so lfabench verify cannot "
                "check its records' digests"), False
    try:
        data = read_manifest(path)
    except ValueError as exc:
        return f"unreadable record manifest ({exc})", False
    records = [r for r in data["records"] if isinstance(r, dict)]
    schemas = sorted({str(r.get("schema_version")) for r in records})
    missing = sum(1 for r in records if not r.get("digest"))
    text = f"{len(records)} records, schema {', '.join(schemas) or '—'}; "
    if records and not missing:
        return text + "every record has a digest (checked by lfabench verify)", True
    return text + f"{missing} without a digest (not verifiable)", False


def read_board(root: Path, folder: Path, name: str) -> BoardEntry:
    """The landing-page row of the board ``name`` in ``folder`` (a ValueError naming its CSV when unreadable)."""
    csv_path = folder / f"{name}.csv"
    try:
        with open(csv_path, newline="") as fh:
            rows = list(csv.DictReader(fh))
    except (OSError, csv.Error, UnicodeDecodeError) as exc:
        raise ValueError(f"{csv_path}: unreadable board table ({exc})") from exc
    need = {"dataset", "descriptor", "aggregator", "evaluator", "metric", "mean"}
    if rows and not need <= set(rows[0]):
        raise ValueError(f"{csv_path}: not a board table (columns {sorted(need - set(rows[0]))} missing)")
    tasks: dict[tuple[str, str, str], list[dict]] = {}
    for row in rows:
        tasks.setdefault((row["dataset"], row["descriptor"], row["evaluator"]), []).append(row)
    best = []
    for (dataset, descriptor, evaluator), task_rows in sorted(tasks.items()):
        metric = primary_metric(evaluator, [r["metric"] for r in task_rows])
        scored = [r for r in task_rows if r["metric"] == metric and _number(r["mean"]) is not None]
        label = f"{dataset} / {descriptor} / {evaluator}"
        if not scored:
            best.append((label, "— (no primary metric)"))
            continue
        top = max(_number(r["mean"]) for r in scored)
        winners = sorted({r["aggregator"] for r in scored if _number(r["mean"]) == top})
        best.append((f"{label} ({metric})", f"{', '.join(winners)}: {top:.2f}"))
    records, verifiable = _record_format(folder, name)
    rel = folder.relative_to(root)
    pages = {kind: (rel / f"{name}.{kind}").as_posix() for kind in ("html", "md")
             if (folder / f"{name}.{kind}").is_file()}
    return BoardEntry(
        name=name, folder=rel.as_posix(),
        datasets=[f"{dataset_title(d)} ({d})" for d in sorted({r["dataset"] for r in rows})],
        protocols=sorted({protocol_title(r["evaluator"]) for r in rows}),
        tasks=[f"{d} / {s} / {e}" for d, s, e in sorted(tasks)],
        n_methods=len({r["aggregator"] for r in rows}),
        seeds=_seeds(r.get("seeds", "") for r in rows), best=best, records=records, verifiable=verifiable,
        pages=pages)


def _number(text) -> float | None:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if value == value else None


def index_markdown(entries: list[BoardEntry]) -> str:
    """The landing page as Markdown: one section per board (values through :func:`md_text`)."""
    parts = ["# lfabench boards", "",
             f"{len(entries)} board(s), each generated by `lfabench leaderboard` from run records; this page by "
             "`lfabench leaderboard --index`.", ""]
    if not entries:
        parts += ["_No boards found._", ""]
    for e in entries:
        page = e.pages.get("md") or e.pages.get("html")
        head = f"[{md_text(e.name)}]({_md_href(page)})" if page else md_text(e.name)
        parts += [f"## {head}", "",
                  f"- dataset: {md_text('; '.join(e.datasets))}",
                  f"- protocol: {md_text('; '.join(e.protocols))}",
                  f"- tasks ({len(e.tasks)}): {md_text('; '.join(e.tasks))}",
                  f"- methods: {e.n_methods}; seeds: {md_text(e.seeds)}",
                  "- best per task: " + "; ".join(f"{md_text(t)}: {md_text(b)}" for t, b in e.best),
                  f"- records: {md_text(e.records)}",
                  "- pages: " + (", ".join(f"[{k}]({_md_href(v)})" for k, v in sorted(e.pages.items())) or "none"),
                  ""]
    return "\n".join(parts)


def _md_href(target: str) -> str:
    from .html import safe_href

    return safe_href(target) or ""


def index_html(entries: list[BoardEntry]) -> str:
    """The landing page as one self-contained HTML page: a sortable table of the boards, written only through
    :func:`lfabench.leaderboard.html.html` and :func:`~lfabench.leaderboard.html.link`, under the board pages'
    Content-Security-Policy."""
    from .html import html, join, link, page

    def cell(values) -> Markup:
        return join(html("{}<br>", v) for v in values)

    rows = []
    for e in entries:
        target = e.pages.get("html") or e.pages.get("md")
        rows.append(html(
            "<tr><td data-sort='{}'>{}<br><span class='meta'>{}</span></td><td>{}</td><td>{}</td>"
            "<td class='num' data-sort='{}'>{}</td><td class='num' data-sort='{}'>{}</td><td>{}</td><td>{}</td>"
            "<td>{}</td></tr>",
            e.name, link(target, e.name) if target else e.name, e.folder or ".", cell(e.datasets), cell(e.protocols),
            len(e.tasks), html("<span title='{}'>{}</span>", "; ".join(e.tasks), len(e.tasks)),
            e.n_methods, e.n_methods, e.seeds,
            join(html("<span class='meta'>{}</span><br>{}<br>", t, b) for t, b in e.best),
            html("{}{}", Markup("&#10003; ") if e.verifiable else "", e.records)))
    head = join(html("<th class='{}'>{}</th>", "num" if c in ("tasks", "methods") else "", c) for c in
                ("board", "dataset", "protocol", "tasks", "methods", "seeds", "best per task", "records"))
    table = html("<div class='scroll'><table class='sortable'><thead><tr>{}</tr></thead><tbody>{}</tbody></table>"
                 "</div>", head, join(rows)) if entries else Markup("<p><em>No boards found.</em></p>")
    body = join([Markup("<h1>lfabench boards</h1>"),
                 html("<p class='meta'>{} board(s), each generated by <code>lfabench leaderboard</code> from run "
                      "records; this page by <code>lfabench leaderboard --index</code>. Click a board for its "
                      "page, a column header to sort.</p>", len(entries)), table])
    return page("lfabench boards", body)


def build_index(root: Path | str) -> dict[str, Path]:
    """Write ``index.md`` and ``index.html`` into ``root`` listing every board under it; returns their paths.

    Raises FileNotFoundError when ``root`` is not a folder, ValueError naming a board table that cannot be read.
    """
    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"no folder of boards at {root}")
    entries = [read_board(root, folder, name) for folder, name in find_boards(root)]
    paths = {"markdown": root / INDEX_NAMES[0], "html": root / INDEX_NAMES[1]}
    write_text_atomic(paths["markdown"], index_markdown(entries))
    write_text_atomic(paths["html"], index_html(entries))
    return paths


__all__ = ["BoardEntry", "build_index", "find_boards", "index_html", "index_markdown", "read_board"]
