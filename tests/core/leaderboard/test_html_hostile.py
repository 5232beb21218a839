"""A board built from hostile records: every value a record or a plugin controls shows as text and runs nothing.

Each field gets its own payload that, if it ever ran, would mark the page's body with the field's name;
the page is rendered in headless Chromium (with its Content-Security-Policy, and once without it, so that
escaping alone is checked too) and the DOM read back.
"""

import json
import re

import pytest

from lfabench.leaderboard import build_leaderboard
from lfabench.leaderboard.html import link, safe_href
from lfabench.record import RunRecorder

from test_html import CHROMIUM, _chromium, with_script


def payload(field: str) -> str:
    """Markup that breaks out of text, of a '...' or "..." attribute, and sets data-pwned-<field> if it runs."""
    return (f"'\"><img src=x onerror=\"document.body.setAttribute('data-pwned-{field}','1')\">"
            f"<script>document.body.setAttribute('data-pwned-{field}s','1')</script>")


# A record's lfabench_version is validated (not a PEP 440 version: the record is refused, tested in
# test_invalid_records.py), as is a record that is not JSON: neither reaches a page.
FIELDS = ("metric", "aggregator", "descriptor", "dataset", "evaluator", "agg_param", "desc_param", "plugin_version",
          "git", "finished", "error", "status_type")


def hostile_record(path, seed, value, *, ok=True):
    cfg = {"dataset": {"name": payload("dataset"), "params": {}},
           "descriptor": {"name": payload("descriptor"), "params": {"note": payload("desc_param")}},
           "aggregator": {"name": payload("aggregator"), "params": {"n_clusters": payload("agg_param"),
                                                                    "random_state": seed}},
           "evaluator": {"name": payload("evaluator"), "params": {}}, "seed": seed}
    rec = RunRecorder(path, cfg, seed)
    rec.data["setting"] = {k: v for k, v in cfg.items() if k != "seed"}
    rec.data["plugins"] = {"aggregator": {"name": payload("aggregator"), "version": payload("plugin_version")}}
    rec.data["timings_s"].update(fit=1.0, transform=0.5)
    rec.data["output_dim"] = 8
    rec.data["provenance"]["git_revision"] = payload("git")
    if ok:
        rec.finish_ok({payload("metric"): value})
        data = json.loads(rec.path.read_text())
        data["finished_at"] = payload("finished")
        rec.path.write_text(json.dumps(data))
    else:
        rec.finish_failed(RuntimeError(payload("error")))
        data = json.loads(rec.path.read_text())
        data["error"]["type"] = payload("status_type")
        rec.path.write_text(json.dumps(data))


@pytest.fixture
def hostile_board(tmp_path):
    # the board is built inside the sweep folder, so a run folder's name starts its relative link
    sweep = tmp_path / "sweep"
    for seed in (0, 1):
        hostile_record(sweep / f"javascript:document.body.setAttribute('data-pwned-folder{seed}','1')", seed,
                       50.0 + seed)
    hostile_record(sweep / "failed" / "run", 0, 0.0, ok=False)
    return build_leaderboard([sweep], sweep)


PROBE = ("document.body.setAttribute('data-protocols', Array.from(new Set(Array.from(document.links)"
         ".map(function (a) { return a.protocol; }))).sort().join(' '));"
         "document.body.setAttribute('data-elements', Array.from(document.querySelectorAll('img:not([src^=\"data:\"]),"
         "script,iframe,object,embed,[onerror],[onload],[onclick]')).length);")


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (Debian: apt-get install chromium)")
@pytest.mark.parametrize("policy", ["with the page's CSP", "escaping alone"])
def test_no_injected_handler_runs_in_chromium(hostile_board, tmp_path, policy):
    text = hostile_board["html"].read_text()
    if policy == "escaping alone":
        text = re.sub(r"<meta http-equiv='Content-Security-Policy'[^>]*>", "", text)
        assert "Content-Security-Policy" not in text
    probe = tmp_path / "sweep" / "probe.html"
    probe.write_text(with_script(text, PROBE))
    dom = _chromium(tmp_path / "profile", "--dump-dom", probe.as_uri()).stdout
    body = dom[dom.index("<body"):].split(">", 1)[0]
    assert "data-pwned" not in body, body  # no payload ran (each would mark <body>)
    # every link navigates to a file of the board (no javascript:, data: or other scheme to click)
    assert re.search(r'data-protocols="([^"]*)"', body).group(1) == "file:"
    # no element made from a record: images are the inline plots, scripts the page's own two
    assert 'data-elements="2"' in body  # the sort script and the probe
    for field in FIELDS:  # and each is on the page, as text
        assert f"data-pwned-{field}'" in dom, field


def test_every_hostile_field_is_text_in_the_page(hostile_board):
    text = hostile_board["html"].read_text()
    assert "<img src=x" not in text and "onerror=\"" not in text
    assert text.count("<script>") == 1
    for field in FIELDS:
        assert f"data-pwned-{field}&#39;" in text, f"{field} is not shown (escaped) on the page"
    assert not re.search(r"href='(?!https?://)[A-Za-z][A-Za-z0-9+.-]*:", text) and "href='javascript%3Adocument" in text


def test_markdown_board_holds_no_markup(hostile_board):
    md = hostile_board["markdown"].read_text()
    assert "<img" not in md and "<script" not in md
    assert "&lt;img src=x onerror=" in md  # shown, as text, in the table


@pytest.mark.parametrize("target, href", [
    ("runs/a/result.json", "runs/a/result.json"),
    ("../sweep/x y/result.json", "../sweep/x%20y/result.json"),
    ("javascript:alert(1)/result.json", "javascript%3Aalert%281%29/result.json"),
    ("JaVaScRiPt:alert(1)", "JaVaScRiPt%3Aalert%281%29"),
    ("data:text/html,<script>", "data%3Atext/html%2C%3Cscript%3E"),
    ("#runs-0-1", "#runs-0-1"),
    ("https://example.org/a?b=c", "https://example.org/a?b=c"),
    ("/etc/passwd", None), ("//evil.example/x", None), ("C:\\Users\\x", None),
])
def test_links_only_navigate(target, href):
    assert safe_href(target) == href
    shown = str(link(target, "<b>"))
    assert "<b>" not in shown and ("href" in shown) == (href is not None)


def test_dollar_signs_in_record_names_are_drawn_as_text_not_mathtext(tmp_path):
    """matplotlib parses ``$...$`` as mathtext: ``$\\frac{a$`` in a dataset name used to fail the whole board."""
    from record_helpers import record

    for seed in (0, 1):
        record(tmp_path / f"runs/r{seed}", seed, 70.0 + seed, metric=r"$\undefinedcmd{x}$ acc", dataset=r"d$\frac{a$",
               aggregator="bow")
    out = build_leaderboard([tmp_path / "runs"], tmp_path / "lb")
    assert len(out["plots"]) >= 2 and all(p.stat().st_size > 1000 for p in out["plots"])
    assert r"$\undefinedcmd{x}$ acc" in out["html"].read_text()
