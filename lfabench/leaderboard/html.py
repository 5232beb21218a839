"""The leaderboard as one self-contained static HTML page: no server, no network, nothing to fetch.

* every table sorts by any column (a click on its header; a few lines of inline JavaScript that
  sort on each cell's ``data-sort`` value, numbers as numbers);
* the plots are inline (base64 PNG);
* the header states when and by which lfabench the page was generated, and which lfabench
  versions and git revisions produced the records;
* every score links to its runs: the ``result.json`` files (relative links) and, inline, each run's
  seed, score, versions, git revision and resolved config.
"""

from __future__ import annotations

import base64
import datetime as _dt
import html
import json
import os
import re
from pathlib import Path

import pandas as pd

from .._version import __version__
from ..record import read_record
from .tables import NUMERIC_COLUMNS, display_table, table_groups

SORT_JS = """
document.querySelectorAll('table.sortable').forEach(function (table) {
  table.querySelectorAll('th').forEach(function (th, col) {
    th.addEventListener('click', function () {
      var body = table.tBodies[0], rows = Array.from(body.rows);
      var asc = th.getAttribute('aria-sort') !== 'ascending';
      table.querySelectorAll('th').forEach(function (h) { h.removeAttribute('aria-sort'); });
      th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
      function key(row) {
        var c = row.cells[col], v = c.getAttribute('data-sort'); v = v === null ? c.textContent : v;
        var n = parseFloat(v); return isNaN(n) || !/^\\s*-?[0-9.]/.test(v) ? [1, v.toLowerCase()] : [0, n];
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b), r = x[0] - y[0] || (x[1] < y[1] ? -1 : x[1] > y[1] ? 1 : 0);
        return asc ? r : -r;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"""

STYLE = ("body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin-bottom:.5em}"
         "th,td{padding:4px 10px;border-bottom:1px solid #ddd;text-align:left}td.num{white-space:nowrap}div.scroll{overflow-x:auto}td.num,th.num{text-align:right}"
         "th{cursor:pointer;background:#f4f4f4;user-select:none}th[aria-sort=ascending]::after{content:' ▲'}"
         "th[aria-sort=descending]::after{content:' ▼'}img{max-width:100%;border:1px solid #eee;margin:.5em 0}"
         "code{background:#f4f4f4;padding:0 3px}.meta{color:#555}pre{background:#f8f8f8;padding:6px;"
         "overflow:auto;max-height:20em}details{margin:2px 0}")


def inline_markdown(text: str) -> str:
    """Escape ``text`` and turn Markdown's ``code`` spans into ``<code>`` (no literal backticks on the page)."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def _sort_key(value) -> str:
    missing = value is None or (not isinstance(value, (str, list, tuple, dict)) and pd.isna(value))
    return "" if missing else str(value)


def _shown(value) -> str:
    """A cell of an extra table: floats to 2 decimals (the sort key keeps the full value), missing as ``—``."""
    if isinstance(value, float):
        return "—" if pd.isna(value) else f"{value:.2f}"
    return _sort_key(value) or "—"


def _table_html(tab: pd.DataFrame, metric: str, anchors: list[str]) -> str:
    """One sortable table; the score cell links to the runs section of its setting."""
    shown = display_table(tab, metric)
    raw = {metric: tab["mean"].tolist(), "seeds": tab["n_seeds"].tolist(), "runs": tab["n_runs"].tolist(),
           "fit time (s)": tab["fit_s_mean"].tolist(), "transform time (s)": tab["transform_s_mean"].tolist(),
           "peak memory (MiB)": tab["peak_rss_mb_max"].tolist(), "output dim": tab["output_dim"].tolist(),
           "p vs best (pairs)": [0.0 if b else p for b, p in zip(tab["best"], tab["p_vs_best"])]}
    numeric = set(NUMERIC_COLUMNS) | {metric}
    head = "".join(f"<th class='{'num' if c in numeric else ''}'>{html.escape(c)}</th>" for c in shown.columns)
    rows = []
    for i in range(len(shown)):
        cells = []
        for col in shown.columns:
            text = html.escape(str(shown[col].iloc[i]))
            if col == metric:
                text = f"<a href='#{anchors[i]}' title='the runs of this cell'>{text}</a>"
            sort = _sort_key(raw[col][i]) if col in raw else _sort_key(shown[col].iloc[i])
            cls = " class='num'" if col in numeric else ""
            cells.append(f"<td{cls} data-sort='{html.escape(sort, quote=True)}'>{text}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return (f"<div class='scroll'><table class='sortable'><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def _runs_html(anchor: str, title: str, paths: list[str], out_dir: Path) -> str:
    """One setting's runs: a relative link to each record and its provenance (versions, git revision, config)."""
    items = []
    for path in paths:
        try:
            rec = read_record(Path(path))
        except (OSError, ValueError) as exc:
            items.append(f"<li>{html.escape(path)}: unreadable ({html.escape(str(exc))})</li>")
            continue
        link = os.path.relpath(path, out_dir)
        plugins = ", ".join(f"{k} {v.get('name')} {v.get('version')}" for k, v in (rec.get("plugins") or {}).items())
        metrics = ", ".join(f"{k}={v:.4g}" for k, v in rec["metrics"].items())
        items.append(
            f"<li><a href='{html.escape(link, quote=True)}'>{html.escape(link)}</a> — seed {rec['seed']}, {metrics}"
            f"<br><span class='meta'>lfabench {html.escape(str(rec.get('lfabench_version')))}, git "
            f"{html.escape(str(rec.get('git_revision')))}, finished {html.escape(str(rec.get('finished_at')))}; "
            f"{html.escape(plugins)}</span><details><summary>config</summary>"
            f"<pre>{html.escape(json.dumps(rec['config'], indent=1, sort_keys=True))}</pre></details></li>")
    return f"<div id='{anchor}'><h4>{html.escape(title)}</h4><ul>{''.join(items)}</ul></div>"


def _image(path: Path) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f"<img alt='{html.escape(Path(path).stem)}' src='data:image/png;base64,{data}'>"


def to_html(summary: pd.DataFrame, failed: list[dict], out_dir: Path | str = ".", intro: str = "",
            command: str | None = None, plots: dict[str, list[Path]] | None = None,
            extra_sections: list[tuple[str, pd.DataFrame]] = ()) -> str:
    """The page. ``plots``: PNG files per table title (and ``""`` for page-wide plots), embedded inline;
    ``extra_sections``: further ``(title, table)`` pairs (e.g. the overall ranks), sortable too."""
    out_dir = Path(out_dir).resolve()
    plots = plots or {}
    versions = sorted({v for cell in summary.get("lfabench_versions", []) for v in str(cell).split(",") if v})
    revisions = sorted({v for cell in summary.get("git_revisions", []) for v in str(cell).split(",") if v})
    generated = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    body = ["<h1>lfabench leaderboard</h1>",
            f"<p class='meta' id='provenance'>Generated {html.escape(generated)} by lfabench "
            f"{html.escape(__version__)}{' with <code>' + html.escape(command) + '</code>' if command else ''}. "
            f"Records from lfabench {html.escape(', '.join(versions) or '—')}; git revision(s) "
            f"{html.escape(', '.join(revisions) or 'unknown')}.</p>",
            f"<p>{inline_markdown(intro)}</p><p class='meta'>Click a column header to sort; click a score for "
            "its runs.</p>"]
    if summary.empty:
        body.append("<p><em>No successful run records found.</em></p>")
    runs = []
    for t, (title, metric, tab) in enumerate(table_groups(summary)):
        anchors = [f"runs-{t}-{i}" for i in range(len(tab))]
        body += [f"<h2>{html.escape(title)}</h2>", _table_html(tab, metric, anchors)]
        body += [_image(p) for p in plots.get(title, [])]
        for anchor, (_, row) in zip(anchors, tab.iterrows()):
            runs.append(_runs_html(anchor, f"{title}: {row['descriptor']} {row['aggregator']}",
                                   [p for p in str(row["paths"]).split(";") if p], out_dir))
    for title, table in extra_sections:
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in table.columns)
        rows = "".join("<tr>" + "".join(f"<td data-sort='{html.escape(_sort_key(v), quote=True)}'>"
                                        f"{html.escape(_shown(v))}</td>" for v in row) + "</tr>"
                       for row in table.itertuples(index=False))
        body += [f"<h2>{html.escape(title)}</h2>",
                 f"<table class='sortable'><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"]
    if plots.get(""):
        body += ["<h2>Plots</h2>"] + [_image(p) for p in plots[""]]
    if runs:
        body += ["<h2>Runs</h2>"] + runs
    if failed:
        items = "".join(f"<li><code>{html.escape(f['path'])}</code>: {html.escape(str(f['status']))} — "
                        f"{html.escape(f['error'])}</li>" for f in failed)
        body.append(f"<p>{len(failed)} run record(s) not counted (failed or unreadable):</p><ul>{items}</ul>")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>lfabench leaderboard</title>"
            f"<style>{STYLE}</style></head><body>{''.join(body)}<script>{SORT_JS}</script></body></html>\n")
