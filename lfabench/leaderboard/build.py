"""``build_leaderboard``: every output of ``lfabench leaderboard`` from the records under some folders.

Writes ``<name>.md`` and ``<name>.csv`` (the tables; ``<name>-runs.csv``: one row per setting, seed
and metric with its records' provenance, the compact per-seed form of the records; ``<name>-paper.csv`` beside the paper's numbers
where the records cover one of its tables), ``<name>.html`` (the self-contained page) and the
PNG plots (per table: scores with every seed, and the trade-offs against time and output dimension;
the paper's curves wherever the records support one: :mod:`lfabench.leaderboard.curves`; ``<name>-cd.png``, the
critical-difference diagram of the mean ranks across tasks: :mod:`lfabench.leaderboard.cd_diagram`),
``<name>-records.json``, the records it read with their digests (:mod:`lfabench.leaderboard.manifest`), and
``<name>-outputs.txt``, the list of these files: a rebuild deletes what the previous build wrote and this
one does not (:func:`replace_outputs`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from ..recordset import dedupe_runs, labelled, load_records, records_frame, shown_path
from ..storage import write_text_atomic
from .claims import claim_markdown, claim_table
from .csv_cells import write_csv
from .labels import short_labels
from .manifest import write_manifest
from .not_applicable import not_applicable_frame
from .packages import outside_plugins, packages_markdown
from .paper import paper_markdown, paper_table
from .ranks import cd_plot, rank_markdown, rank_table
from .statistics import summarize
from .tables import INTRO, to_markdown
from .titles import evaluator_settings


def build_leaderboard(run_paths: Iterable[Path | str], out_dir: Path | str = "leaderboards",
                      name: str = "leaderboard", command: str | None = None) -> dict:
    """Read records under ``run_paths``; write the Markdown, CSV, HTML and PNG outputs; returns their paths.

    ``command``: the command line that made it, stated under every table (default: the equivalent
    ``lfabench leaderboard`` call).
    """
    from .curves import plot_curves
    from .html import to_html
    from .plot import plot_tables
    from .tradeoff import plot_tradeoffs

    run_paths = [str(p) for p in run_paths]
    if command is None:
        command = " ".join(["lfabench leaderboard", *run_paths] + ([] if name == "leaderboard" else
                                                                    ["--name", name]))
    records = load_records(run_paths)  # every record read and validated once: the pages and plots take them
    df, failed = records_frame(records)
    summary = summarize(df)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out_dir / f"{name}.md", "csv": out_dir / f"{name}.csv", "html": out_dir / f"{name}.html"}
    plots: dict[str, list[Path]] = {}
    for part in (plot_tables(summary, out_dir, name, per_seed=labelled(df)), plot_tradeoffs(summary, out_dir, name)):
        for title, files in part.items():
            plots.setdefault(title, []).extend(files)
    plots[""] = plot_curves(df, records, out_dir, name)  # the paper's curves, page-wide
    cd_png = cd_plot(summary, out_dir / f"{name}-cd.png")
    plots[""] += [cd_png] if cd_png else []
    outside = outside_plugins(records)  # rows of plugins from other packages: which package, which version
    claims = claim_table(labelled(dedupe_runs(df)), summary)
    not_applicable = not_applicable_frame(failed)
    sections = [s for s in [rank_markdown(summary, cd_png.name if cd_png else None), claim_markdown(claims, short_labels(summary["aggregator"])),
                            paper_markdown(summary, not_applicable), packages_markdown(outside)] if s]
    settings = evaluator_settings(df)
    write_text_atomic(paths["markdown"], to_markdown(summary, failed, command=command, extra_sections=sections,
                                                     plots=plots, settings=settings))
    write_csv(paths["csv"], summary)  # every CSV: text cells neutralised for spreadsheets (csv_cells)
    paths["runs_csv"] = out_dir / f"{name}-runs.csv"
    write_csv(paths["runs_csv"], per_seed_table(df))
    ranks, versus = rank_table(summary), paper_table(summary, not_applicable=not_applicable)
    if not ranks.empty:  # shown by the page's short labels, as in its tables (labels.py)
        short = short_labels(summary["aggregator"])
        ranks = ranks.assign(method=[short.get(m, m) for m in ranks["method"]])
    extra = [("Overall: mean rank across tasks", ranks)] if not ranks.empty else []
    if not not_applicable.empty:
        paths["not_applicable_csv"] = out_dir / f"{name}-not-applicable.csv"
        write_csv(paths["not_applicable_csv"], not_applicable)
    if not claims.empty:
        paths["claim_csv"] = out_dir / f"{name}-claim.csv"
        write_csv(paths["claim_csv"], claims)
        extra.append(("The paper's search claim: Semi-ProLFA against the fully supervised methods", claims))
    if not versus.empty:
        paths["paper_csv"] = out_dir / f"{name}-paper.csv"
        write_csv(paths["paper_csv"], versus)
        extra.append(("Paper vs lfabench (ranks among the methods in both)", versus))
    if not outside.empty:
        extra.append(("Plugins from other packages", outside))
    write_text_atomic(paths["html"], to_html(summary, failed, out_dir, intro=INTRO, command=command, plots=plots,
                                             extra_sections=extra, settings=settings, records=records))
    paths["plots"] = [p for files in plots.values() for p in files]
    paths["records_manifest"] = write_manifest(records, out_dir, name, command, run_paths)  # digests: `lfabench verify`
    paths["manifest"], paths["removed"] = replace_outputs(out_dir, name, [
        p for key, p in paths.items() if key != "plots"] + paths["plots"])
    return paths


def replace_outputs(out_dir: Path, name: str, written: list[Path]) -> tuple[Path, list[Path]]:
    """Record this build's files in ``<name>-outputs.txt``; delete those of the previous build not written again.

    A board rebuilt after its labels changed (new records, another lfabench) names some plots differently;
    without this the old plots would stay beside the new ones, drawn from records the board no longer reads.
    Only files a previous build listed are deleted, so nothing else in ``out_dir`` is touched. Returns the
    manifest's path and the deleted files.
    """
    manifest = out_dir / f"{name}-outputs.txt"
    now = {Path(p).name for p in written} | {manifest.name}
    removed = []
    if manifest.is_file():
        for listed in manifest.read_text().split("\n"):
            stale = out_dir / listed
            if listed and listed not in now and Path(listed).name == listed and stale.is_file():
                stale.unlink()
                removed.append(stale)
    write_text_atomic(manifest, "".join(f"{n}\n" for n in sorted(now)))
    return manifest, removed


#: Columns of ``<name>-runs.csv``, in order (those the records have).
#: ``exact``: the value as an exact fraction (``37200/897``) where it is a percentage of a count, else empty.
RUN_COLUMNS = ["dataset", "descriptor", "aggregator", "evaluator", "metric", "setting", "seed", "value", "exact",
               "n_records", "conflict", "fit_s", "fit_cache_untimed", "transform_s", "peak_rss_mb", "output_dim",
               "lfabench_version", "git_revision", "finished_at", "path"]


def per_seed_table(df):
    """One row per (setting, seed, metric): the value, its costs and where it came from (never raw arrays)."""
    if df.empty:
        return df.reindex(columns=RUN_COLUMNS)
    runs = labelled(dedupe_runs(df))
    runs = runs.sort_values(["dataset", "descriptor", "evaluator", "metric", "aggregator", "seed"])
    runs["path"] = [";".join(shown_path(Path(p)) for p in str(v).split(";")) for v in runs["path"]]
    return runs[[c for c in RUN_COLUMNS if c in runs.columns]]
