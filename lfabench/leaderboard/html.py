"""The leaderboard as one self-contained static HTML page: no server, no network, nothing to fetch.

* every table sorts by any column (a click on its header; a few lines of inline JavaScript that
  sort on each cell's ``data-sort`` value, numbers as numbers);
* the plots are inline (base64 PNG);
* the header states when and by which lfabench the page was generated, and which lfabench
  versions and git revisions produced the records;
* every score links to its runs: the ``result.json`` files (relative links) and, inline, each run's
  seed, score, versions, git revision and resolved config.

Safe to publish whatever the records hold: every fragment is written by :func:`html` (a literal template,
every value escaped by markupsafe) and every link by :func:`link` (only anchors, http(s) URLs and
percent-encoded relative paths), and a Content-Security-Policy lets only the page's own script and style
run, so a hostile metric name, label, path or note shows as text and can run nothing.
"""

from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import json
import os
import re
from pathlib import Path
from urllib.parse import quote

import pandas as pd
from markupsafe import Markup, escape

from ..provenance import recorded_revision, recorded_version, source_version
from ..recordset import RecordSet
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
         # a task table's cells on one line (a row is one line tall; a wide table scrolls in its div.scroll)
         "th,td{padding:4px 10px;border-bottom:1px solid #ddd;text-align:left}td.num,div.task td{white-space:nowrap}"
         "div.scroll{overflow-x:auto}td.num,th.num{text-align:right}"
         "th{cursor:pointer;background:#f4f4f4;user-select:none}th[aria-sort=ascending]::after{content:' ▲'}"
         "th[aria-sort=descending]::after{content:' ▼'}img{max-width:100%;border:1px solid #eee;margin:.5em 0}"
         "code{background:#f4f4f4;padding:0 3px}.meta{color:#555}pre{background:#f8f8f8;padding:6px;"
         "overflow:auto;max-height:20em}details{margin:2px 0}"
         "div.plots{display:flex;flex-wrap:wrap;align-items:flex-start;gap:8px}div.plots img{max-height:340px;max-width:calc(50% - 8px);"
         "width:auto}table.legend td{border-bottom:1px solid #eee}summary{cursor:pointer}")


def _csp_hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode()).digest()).decode("ascii") + "'"


#: What the page may do: run its own sort script and style (by their hashes) and show its inline PNGs; nothing
#: else. An injected inline handler (``onerror=``), ``<script>`` or ``javascript:`` link does not run even if some
#: value ever reached the page unescaped, and nothing is fetched from anywhere.
CONTENT_SECURITY_POLICY = (f"default-src 'none'; script-src {_csp_hash(SORT_JS)}; style-src {_csp_hash(STYLE)}; "
                           "img-src data:; base-uri 'none'; form-action 'none'")


# ------------------------------------------------------------------ the one way HTML is written
# Every fragment of the page is made by `html(template, *values)`: the template is a literal of this module,
# every value is escaped (text and attribute alike: & < > ' " all become entities) unless it is a fragment
# made here. Links are made by `link` only. A value a record or a plugin controls (metric and plugin names,
# labels, parameter values, paths, notes) therefore never becomes markup, whatever field it comes from.

def html(template: str, *values) -> Markup:
    """``template`` (a literal of this module, ``{}`` placeholders) with every value escaped (markupsafe)."""
    return Markup(template).format(*values)


def join(fragments) -> Markup:
    """Fragments made by :func:`html` (plain strings among them are escaped), concatenated."""
    return Markup("").join(fragments)


def page(title: str, body: Markup) -> str:
    """A whole self-contained page: ``title`` (escaped) and ``body`` under the Content-Security-Policy, with
    the one stylesheet and sorting script it allows. Every static page lfabench writes goes through here."""
    return str(html("<!DOCTYPE html><html><head><meta charset='utf-8'>"
                    "<meta http-equiv='Content-Security-Policy' content='{}'><title>{}</title>"
                    "<style>{}</style></head><body>{}<script>{}</script></body></html>\n",
                    CONTENT_SECURITY_POLICY, title, Markup(STYLE), body, Markup(SORT_JS)))


def safe_href(target: str) -> str | None:
    """``target`` as a link that can only navigate: an ``#anchor``, an http(s) URL, or a relative path.

    Anything else is taken as a relative path and percent-encoded (``urllib.parse.quote``): no scheme
    survives, so a run folder named ``javascript:...`` becomes the relative link ``javascript%3A...`` (the
    folder, not a script), and ``data:``/``file:`` likewise. An absolute path (``/...``, ``//host``, ``C:\\``)
    gives None: no link (a page must not point into its builder's machine).
    """
    target = str(target)
    if target.startswith("#"):
        return "#" + quote(target[1:], safe="-_.")
    if re.fullmatch(r"https?://[^\s<>'\"`]+", target, flags=re.IGNORECASE):
        return target
    if target.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:[\\/]", target):
        return None
    return quote(target.replace(os.sep, "/"), safe="/-_.~")


def link(target: str, text, title: str | None = None) -> Markup:
    """``<a href=...>text</a>`` when :func:`safe_href` accepts ``target``, else ``text`` alone (escaped)."""
    href = safe_href(target)
    if href is None:
        return escape(text)
    if title is not None:
        return html("<a href='{}' title='{}'>{}</a>", href, title, text)
    return html("<a href='{}'>{}</a>", href, text)


def inline_markdown(text: str) -> Markup:
    """Escape ``text`` and turn Markdown's ``code`` spans into ``<code>`` (no literal backticks on the page)."""
    return Markup(re.sub(r"`([^`]+)`", r"<code>\1</code>", str(escape(text))))


def _sort_key(value) -> str:
    missing = value is None or (not isinstance(value, (str, list, tuple, dict)) and pd.isna(value))
    return "" if missing else str(value)


def _shown(value) -> str:
    """A cell of an extra table: floats to 2 decimals (the sort key keeps the full value), missing as ``—``."""
    if isinstance(value, float):
        return "—" if pd.isna(value) else f"{value:.2f}"
    return _sort_key(value) or "—"


def _table_html(tab: pd.DataFrame, metric: str, anchors: list[str], short: dict[str, str] | None = None) -> Markup:
    """One sortable table; the score cell links to the runs section of its setting; with ``short`` (full label ->
    short label) the method cell shows the short label, its full settings as the hover title."""
    full = tab["aggregator"].astype(str).tolist()
    shown = display_table(tab.assign(aggregator=[(short or {}).get(a, a) for a in full]), metric)
    raw = {metric: tab["mean"].tolist(), "seeds": tab["n_seeds"].tolist(), "runs": tab["n_runs"].tolist(),
           "fit time (s)": tab["fit_s_mean"].tolist(), "transform time (s)": tab["transform_s_mean"].tolist(),
           "peak memory (MiB)": tab["peak_rss_mb_max"].tolist(), "output dim": tab["output_dim"].tolist(),
           "p vs best (pairs)": [0.0 if b else p for b, p in zip(tab["best"], tab["p_vs_best"])],
           "diff vs best [95 % CI]": [0.0 if b else d for b, d in zip(tab["best"], tab["diff"])]}
    numeric = set(NUMERIC_COLUMNS) | {metric}
    head = join(html("<th class='{}'>{}</th>", "num" if c in numeric else "", c) for c in shown.columns)
    rows = []
    for i in range(len(shown)):
        cells = []
        for col in shown.columns:
            text = str(shown[col].iloc[i])
            if col == metric:
                content = link(f"#{anchors[i]}", text, title="the runs of this cell")
            elif col == "aggregator" and short:
                content = html("<span title='{}'>{}</span>", full[i], text)
            else:
                content = escape(text)
            sort = _sort_key(raw[col][i]) if col in raw else _sort_key(shown[col].iloc[i])
            cells.append(html("<td{}{}>{}</td>", Markup(" class='num'") if col in numeric else "",
                              html(" data-sort='{}'", sort), content))
        rows.append(html("<tr>{}</tr>", join(cells)))
    return html("<div class='scroll task'><table class='sortable'><thead><tr>{}</tr></thead><tbody>{}</tbody>"
                "</table></div>", head, join(rows))


def _metrics_text(metrics) -> str:
    """``name=value, ...``; a value that is not a number is shown as it is (the record says what it holds)."""
    def one(value):
        return f"{value:.4g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else repr(value)
    return ", ".join(f"{k}={one(v)}" for k, v in (metrics.items() if isinstance(metrics, dict) else ()))


def _runs_html(anchor: str, title: str, paths: list[str], out_dir: Path, records: RecordSet | None) -> Markup:
    """One setting's runs: a relative link to each record and its provenance (versions, git revision, config),
    read from ``records`` (None: the links alone)."""
    items = []
    for path in paths:
        target = os.path.relpath(path, out_dir)
        if records is None:
            items.append(html("<li>{}</li>", link(target, target)))
            continue
        rec = records.record(path)
        plugins = ", ".join(f"{k} {v.get('name')} {v.get('version')}" for k, v in (rec.get("plugins") or {}).items()
                            if isinstance(v, dict))
        items.append(html(
            "<li>{} — seed {}, {}<br><span class='meta'>lfabench {}, git {}, finished {}; {}</span>"
            "<details><summary>config</summary><pre>{}</pre></details></li>",
            link(target, target), rec.get("seed"), _metrics_text(rec.get("metrics")), recorded_version(rec),
            recorded_revision(rec), rec.get("finished_at"), plugins,
            json.dumps(rec.get("config"), indent=1, sort_keys=True, default=str)))
    return html("<div id='{}'><h4>{}</h4><ul>{}</ul></div>", anchor, title, join(items))


def _image(path: Path) -> Markup:
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    # the one data: URL of the page: written here from the PNG's bytes, never taken from a record
    return html("<img alt='{}' src='{}'>", Path(path).stem, Markup(f"data:image/png;base64,{data}"))


def to_html(summary: pd.DataFrame, failed: list[dict], out_dir: Path | str = ".", intro: str = "",
            command: str | None = None, plots: dict[str, list[Path]] | None = None,
            extra_sections: list[tuple[str, pd.DataFrame]] = (), title: str | None = None,
            settings: dict[str, str] | None = None, records: RecordSet | None = None) -> str:
    """The page, in the order a reader needs it: the title (``title``; default: the board's datasets, protocols and
    seeds, :func:`lfabench.leaderboard.titles.board_title`), each dataset's plugin description, the protocol
    ``settings``, then per table (one task and metric) its heading, its sortable table (methods by short labels, the
    full settings on hover: :mod:`lfabench.leaderboard.labels`) and its plots (``plots``: PNG files per table title,
    inline; ``""``: page-wide plots), then ``extra_sections`` (further ``(title, table)`` pairs, e.g. the overall
    ranks, sortable too), the legend of the labels, the records not counted, and folded away (``<details>``) how to
    read the cells (``intro``) and every setting's runs with their provenance (each score links there), taken
    from ``records``, the set the summary was built from (none: the runs are listed without it)."""
    from .labels import legend, short_labels
    from .not_applicable import INTRO as NOT_APPLICABLE_INTRO
    from .not_applicable import for_task, not_applicable_frame
    from .titles import board_title, dataset_descriptions, evaluator_descriptions, task_heading

    out_dir = Path(out_dir).resolve()
    not_applicable = not_applicable_frame(failed)
    failed = [f for f in failed if "reason" not in f]  # the not-applicable ones are under their tables
    plots = plots or {}
    title = title or board_title(summary)
    datasets = dataset_descriptions(summary["dataset"]) if not summary.empty else {}
    protocols = evaluator_descriptions(summary["evaluator"]) if not summary.empty else {}
    short = short_labels(summary["aggregator"]) if not summary.empty else {}
    versions = sorted({v for cell in summary.get("lfabench_versions", []) for v in str(cell).split(",") if v})
    revisions = sorted({v for cell in summary.get("git_revisions", []) for v in str(cell).split(",") if v})
    generated = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    body = [html("<h1>{}</h1>", title)]
    if datasets:
        body.append(html("<p>Data: {}.</p>", join(
            html("<code>{}</code>{}{}{}", name, ": " if text else "", text, "; " if i < len(datasets) - 1 else "")
            for i, (name, text) in enumerate(datasets.items()))))
    if protocols:
        body.append(html("<p>Protocol: {}.</p>", join(
            html("<code>{}</code>{}{}{}", name, ": " if text else "", text, "; " if i < len(protocols) - 1 else "")
            for i, (name, text) in enumerate(protocols.items()))))
    if settings:
        body.append(html("<p>Protocol settings: {}.</p>", join(
            html("<code>{}</code>: <code>{}</code>{}", e, v, "; " if i < len(settings) - 1 else "")
            for i, (e, v) in enumerate(settings.items()))))
    body.append(Markup("<p class='meta'>Methods are shown by short labels: hover one for its full settings, or "
                       "see the <a href='#labels'>legend</a>. Click a column header to sort; click a score for "
                       "its runs (provenance, at the end).</p>"))
    if summary.empty:
        body.append(Markup("<p><em>No successful run records found.</em></p>"))
    runs = []
    for t, (table_title, metric, tab) in enumerate(table_groups(summary)):
        heading = task_heading(tab, metric, with_dataset=summary["dataset"].nunique() > 1)
        anchors = [f"runs-{t}-{i}" for i in range(len(tab))]
        body += [html("<h2>{}</h2>", heading), _table_html(tab, metric, anchors, short)]
        na = for_task(not_applicable, *tab.iloc[0][["dataset", "descriptor", "evaluator"]])
        if not na.empty:
            body.append(html("<p>{}</p><ul>{}</ul>", NOT_APPLICABLE_INTRO, join(
                html("<li><code>{}</code> (seeds {}): {}</li>", r["aggregator"], r["seeds"], r["reason"])
                for _, r in na.iterrows())))
        if plots.get(table_title):
            body.append(html("<div class='plots'>{}</div>", join(_image(p) for p in plots[table_title])))
        for anchor, (_, row) in zip(anchors, tab.iterrows()):
            runs.append(_runs_html(anchor, f"{heading}: {row['aggregator']}",
                                   [p for p in str(row["paths"]).split(";") if p], out_dir, records))
    for section_title, table in extra_sections:
        head = join(html("<th>{}</th>", c) for c in table.columns)
        rows = join(html("<tr>{}</tr>", join(html("<td data-sort='{}'>{}</td>", _sort_key(v), _shown(v))
                                             for v in row))
                    for row in table.itertuples(index=False))
        body += [html("<h2>{}</h2>", section_title),
                 html("<div class='scroll'><table class='sortable'><thead><tr>{}</tr></thead><tbody>{}</tbody>"
                      "</table></div>", head, rows)]
    if plots.get(""):
        body += [Markup("<h2>Plots across tasks</h2>")] + [_image(p) for p in plots[""]]
    if short:
        body += [Markup("<h2 id='labels'>Labels</h2><p>Each short label and the settings it stands for: the "
                        "parameters the setting changed from the plugin's default.</p>"),
                 _legend_html(legend(short))]
    if failed:
        items = join(html("<li><code>{}</code>: {} — {}</li>", f.get("path"), f.get("status"), f.get("error"))
                     for f in failed)
        body.append(html("<p>{} run record(s) not counted (failed or unreadable):</p><ul>{}</ul>", len(failed), items))
    body.append(html("<details><summary>How to read these tables</summary><p>{}</p></details>",
                     inline_markdown(intro)))
    body.append(html("<details id='provenance'><summary>Provenance: commands, records, revisions, environments"
                     "</summary><p class='meta'>Generated {} by lfabench {}{}. Records from lfabench {}; "
                     "git revision(s) {}.</p>{}</details>", generated, source_version(),
                     html(" with <code>{}</code>", command) if command else "",
                     ", ".join(versions) or "—", ", ".join(revisions) or "unknown", join(runs)))
    return page(title, join(body))


def _legend_html(table: pd.DataFrame) -> Markup:
    """The legend: one row per short label with the full settings it stands for."""
    rows = join(html("<tr><td>{}</td><td><code>{}</code></td></tr>", label, settings)
                for label, settings in zip(table["label"], table["settings"]))
    return html("<table class='legend'><thead><tr><th>label</th><th>settings</th></tr></thead><tbody>{}</tbody>"
                "</table>", rows)
