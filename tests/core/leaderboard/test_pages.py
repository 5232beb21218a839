"""Board pages that read: a title from the plugins, one table per task, short labels with a legend, plots beside
their tables, provenance folded away, spreadsheet-safe CSVs and a landing page listing every board."""

import csv
import re
import shutil

import pandas as pd
import pytest

from lfabench.leaderboard import build_leaderboard
from lfabench.record import SCHEMA_VERSION

from record_helpers import record

DIGITS = "scikit-learn's bundled 8x8 handwritten digits"  # the digits plugin's description, first phrase
KNN = "k-NN classification accuracy on a seeded stratified 80/20 split"  # the knn plugin's, first clause


def sections(md: str) -> dict[str, str]:
    """``{## heading: its text}`` of a Markdown page."""
    parts = re.split(r"^## (.+)$", md, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def rows_of(section: str) -> list[list[str]]:
    """The body rows of the first table of a section, cells stripped."""
    lines = [ln for ln in section.splitlines() if ln.startswith("|")]
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in lines[2:]]


@pytest.fixture(scope="module")
def two_descriptors(tmp_path_factory):
    """Six seeds on two descriptors: on sift bow beats vlad on every seed; on daisy vlad beats bow on every seed,
    and bow appears with a second setting (n_clusters=8). Built once: the tests only read it."""
    tmp_path = tmp_path_factory.mktemp("two_descriptors")
    for seed in range(6):
        record(tmp_path / f"runs/sift-bow{seed}", seed, 90.0 + seed, descriptor="sift")
        record(tmp_path / f"runs/sift-vlad{seed}", seed, 80.0 + seed, aggregator="vlad", descriptor="sift")
        record(tmp_path / f"runs/daisy-bow{seed}", seed, 60.0 + seed, descriptor="daisy")
        record(tmp_path / f"runs/daisy-bow8{seed}", seed, 50.0 + seed, descriptor="daisy", n_clusters=8)
        record(tmp_path / f"runs/daisy-vlad{seed}", seed, 70.0 + seed, aggregator="vlad", descriptor="daisy")
    return build_leaderboard([tmp_path / "runs"], tmp_path / "lb")


def test_title_names_dataset_protocol_and_seeds_from_the_plugins(two_descriptors):
    md = two_descriptors["markdown"].read_text()
    assert md.splitlines()[0] == f"# {DIGITS}: {KNN}, 6 seeds"
    page = two_descriptors["html"].read_text()
    assert f"<title>{DIGITS}: {KNN}, 6 seeds</title>".replace("'", "&#39;") in page
    assert "lfabench leaderboard</h1>" not in page


def test_title_of_a_plugin_not_installed_is_its_name(tmp_path):
    record(tmp_path / "runs/a", 0, 50.0, dataset="not_installed_here", evaluator="elsewhere")
    out = build_leaderboard([tmp_path / "runs"], tmp_path / "lb")
    assert out["markdown"].read_text().splitlines()[0] == "# not_installed_here: elsewhere, 1 seed"


def test_the_page_states_what_each_dataset_is_from_its_plugin(two_descriptors):
    from lfabench.registry import get_registry

    whole = get_registry().get_spec("dataset", "digits").description
    assert whole.startswith(DIGITS) and len(whole) > len(DIGITS)  # more than the title says
    md = two_descriptors["markdown"].read_text()
    assert md.splitlines()[2] == f"Data: digits: {whole}."
    page = two_descriptors["html"].read_text()
    assert f"<p>Data: <code>digits</code>: {whole}.</p>".replace("'", "&#39;") in page


def test_the_page_states_what_each_protocol_measures_from_its_evaluator(two_descriptors, tmp_path):
    from lfabench.registry import get_registry

    whole = get_registry().get_spec("evaluator", "knn").description
    assert two_descriptors["markdown"].read_text().splitlines()[4] == f"Protocol: knn: {whole}."
    page = two_descriptors["html"].read_text()
    assert f"<p>Protocol: <code>knn</code>: {whole}.</p>".replace("'", "&#39;") in page
    # a retrieval board states its AP rule (the Oxford/Holidays trapezoid AP, not the mean of precisions)
    record(tmp_path / "runs/r", 0, 50.0, dataset="copy_detection", evaluator="retrieval", metric="mAP")
    md = build_leaderboard([tmp_path / "runs"], tmp_path / "lb-r")["markdown"].read_text()
    protocol = next(line for line in md.splitlines() if line.startswith("Protocol: "))
    assert "trapezoid rule of Oxford's compute_ap" in protocol


def test_a_datasets_own_descriptor_comes_first_then_the_others_by_name(tmp_path):
    for d in ("daisy", "sift", "dense_sift"):
        record(tmp_path / f"runs/{d}", 0, 50.0, dataset="scene15", descriptor=d)
    md = build_leaderboard([tmp_path / "runs"], tmp_path / "lb")["markdown"].read_text()
    tables = [h.split(" · ")[0] for h in sections(md) if " · " in h]
    assert tables == ["sift", "daisy", "dense_sift"]  # scene15's protocol composes SIFT; the rest by name


def test_a_dataset_plugin_not_installed_is_named_without_a_description(tmp_path):
    record(tmp_path / "runs/a", 0, 50.0, dataset="not_installed_here", evaluator="elsewhere")
    out = build_leaderboard([tmp_path / "runs"], tmp_path / "lb")
    assert out["markdown"].read_text().splitlines()[2] == "Data: not_installed_here."
    assert "<p>Data: <code>not_installed_here</code>.</p>" in out["html"].read_text()


def test_a_description_ending_in_a_full_stop_does_not_end_the_data_line_with_two(monkeypatch):
    from lfabench.leaderboard import titles

    monkeypatch.setattr(titles, "_description", lambda kind, name: {"a": "Set A, 3 images.", "b": ""}[name])
    assert titles.dataset_descriptions(["b", "a", "a"]) == {"a": "Set A, 3 images", "b": ""}


def test_one_table_per_descriptor_each_ranked_and_tested_against_its_own_best(two_descriptors):
    md = two_descriptors["markdown"].read_text()
    tables = {h: s for h, s in sections(md).items() if h.endswith("knn accuracy")}
    assert sorted(tables) == ["daisy · knn accuracy", "sift · knn accuracy"]  # the title names the one dataset
    sift = rows_of(tables["sift · knn accuracy"])
    daisy = rows_of(tables["daisy · knn accuracy"])
    # columns: rank, descriptor, aggregator, score, ..., p vs best (pairs), Holm p, vs best, groups
    # short labels are fixed per board: bow has two settings on it, so its default one reads alike in both tables
    assert [(r[0], r[1], r[2]) for r in sift] == [("1", "sift", "bow n_clusters=default"), ("2", "sift", "vlad")]
    assert [(r[0], r[2]) for r in daisy] == [("1", "vlad"), ("2", "bow n_clusters=default"),
                                             ("3", "bow n_clusters=8")]
    # exact two-sided Wilcoxon with 6 differences of one sign: p = 2 / 2**6 = 0.03125 (the smallest possible)
    assert sift[1][-4] == "0.03125 (6)" and sift[1][-3] == "0.03125"  # one test in the sift table: Holm = p
    # daisy holds two tests against vlad: Holm multiplies the smaller p by 2 (both 0.03125 -> 0.0625)
    assert [r[-4] for r in daisy] == ["best", "0.03125 (6)", "0.03125 (6)"]
    assert [r[-3] for r in daisy] == ["—", "0.0625", "0.0625"]
    table = pd.read_csv(two_descriptors["csv"])
    assert table.groupby("descriptor")["rank"].min().to_dict() == {"daisy": 1, "sift": 1}


def test_plots_are_embedded_beside_their_tables_under_short_names(two_descriptors):
    md = two_descriptors["markdown"].read_text()
    out_dir = two_descriptors["markdown"].parent
    for heading, section in sections(md).items():
        if not heading.endswith("knn accuracy"):
            continue
        descriptor = heading.split(" · ")[0]
        images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", section)
        assert images == [f"leaderboard-digits-{descriptor}-knn-accuracy-{kind}.png" for kind in
                          ("scores", "time", "dim")]
        assert all((out_dir / name).read_bytes()[:4] == b"\x89PNG" for name in images)
    assert all("n_clusters" not in p.name and len(p.name) <= 60 for p in two_descriptors["plots"])
    page = two_descriptors["html"].read_text()
    for block in page.split("<h2>")[1:3]:  # the two task tables: each followed by its own three plots
        assert block.count("<table") == 1 and block.count("data:image/png;base64,") == 3


def test_legend_maps_every_short_label_to_its_settings(two_descriptors):
    md = two_descriptors["markdown"].read_text()
    legend = dict((r[0], r[1]) for r in rows_of(sections(md)["Labels"]))
    assert legend == {"bow n_clusters=default": "bow", "bow n_clusters=8": "bow[n_clusters=8]",
                      "vlad": "vlad (the plugin's defaults)"}
    overall = rows_of(sections(md)["Overall: mean rank across tasks"])  # the same short labels as the tables
    assert sorted(r[0] for r in overall) == ["bow n_clusters=8", "bow n_clusters=default", "vlad"]
    page = two_descriptors["html"].read_text()
    assert "<span title='bow[n_clusters=8]'>bow n_clusters=8</span>" in page
    assert "<h2 id='labels'>Labels</h2>" in page and "<td><code>bow[n_clusters=8]</code></td>" in page


def test_short_labels_are_unique_and_fall_back_to_letters():
    from lfabench.leaderboard.labels import short_labels

    long = [f"prolfa[lambda1=0.1, solver.max_iter={i}, init=kmeans++, very_long_parameter_name=xyz{i}]"
            for i in (5, 10)]
    short = short_labels(long + ["vlad", "fv{abc}", "fv{def}"])
    assert short["vlad"] == "vlad" and {short["fv{abc}"], short["fv{def}"]} == {"fv (a)", "fv (b)"}
    assert {short[lab] for lab in long} == {"prolfa (a)", "prolfa (b)"}  # the tag would exceed 24 characters
    assert len(set(short.values())) == len(short)


def test_provenance_is_folded_away_at_the_end(two_descriptors):
    md = two_descriptors["markdown"].read_text()
    details = md.index("<details><summary>Provenance")
    assert "result.json" not in md[:details] and "Made by" in md[details:]
    assert md.rstrip().endswith("</details>")
    page = two_descriptors["html"].read_text()
    provenance = page.index("<details id='provenance'>")
    assert "result.json" not in page[:provenance] and page.count("result.json'>") == 30
    assert "<a href='#runs-0-0'" in page[:provenance] and "id='runs-0-0'" in page[provenance:]


def _number(cell: str) -> bool:
    """A cell a spreadsheet reads as a number (a negative difference from the best), not as a formula."""
    try:
        float(cell)
    except ValueError:
        return False
    return True


def test_csv_cells_that_start_like_a_formula_are_neutralised(tmp_path):
    hostile = ["=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)", "\tcmd", "\rcmd"]
    for i, name in enumerate(hostile):
        record(tmp_path / f"runs/h{i}", 0, 50.0 + i, aggregator=name)
    out = build_leaderboard([tmp_path / "runs"], tmp_path / "lb")
    for path in (out["csv"], out["runs_csv"]):
        with open(path, newline="") as fh:
            rows = list(csv.DictReader(fh))
        cells = [v for row in rows for v in row.values()]
        assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r") and not _number(c)], path
        assert sorted(row["aggregator"] for row in rows) == sorted("'" + h for h in hostile)
    table = pd.read_csv(out["csv"])
    assert sorted(table["mean"]) == [50.0 + i for i in range(len(hostile))]  # numbers untouched


def test_neutralise_leaves_numbers_alone():
    from lfabench.leaderboard.csv_cells import neutralise, safe_frame

    assert neutralise(-0.5) == -0.5 and neutralise("-0.5") == "'-0.5" and neutralise("bow") == "bow"
    frame = safe_frame(pd.DataFrame({"x": [-1.5, 2.0], "label": ["=1", "ok"]}))
    assert frame["x"].tolist() == [-1.5, 2.0] and frame["label"].tolist() == ["'=1", "ok"]


def test_landing_page_lists_every_board_including_legacy_ones(tmp_path, two_descriptors):
    from lfabench.leaderboard.index import build_index

    boards = tmp_path / "boards"
    shutil.copytree(two_descriptors["markdown"].parent, boards / "new")
    record(tmp_path / "other/a", 0, 40.0, aggregator="fv")
    build_leaderboard([tmp_path / "other"], boards / "legacy", name="legacy")
    (boards / "legacy" / "legacy-records.json").unlink()  # a board published before record manifests
    (boards / "legacy" / "records").mkdir()  # a board's records folder holds no board
    shutil.copy(boards / "new" / "leaderboard.csv", boards / "legacy" / "records" / "stray.csv")
    (boards / "legacy" / "records" / "stray.md").write_text("")
    paths = build_index(boards)
    md = paths["markdown"].read_text()
    assert re.findall(r"^## (.+)$", md, flags=re.MULTILINE) == ["[legacy](legacy/legacy.md)",
                                                               "[leaderboard](new/leaderboard.md)"]
    legacy, new = md.split("## [legacy]")[1].split("## [leaderboard]")
    assert "no record manifest: published before the current record format" in legacy
    assert f"30 records, schema {SCHEMA_VERSION}; every record has a digest" in new
    assert "digits / daisy / knn (accuracy): vlad: 72.50" in new and "digits / sift / knn (accuracy): bow: 92.50" in new
    assert f"- dataset: {DIGITS} (digits)" in new and f"- protocol: {KNN}" in new
    assert "- methods: 3; seeds: 6 (0-5)" in new and "- tasks (2): digits / daisy / knn; digits / sift / knn" in new
    page = paths["html"].read_text()
    assert "<a href='new/leaderboard.html'>leaderboard</a>" in page and "<a href='legacy/legacy.html'>legacy</a>" in page
    assert "Content-Security-Policy" in page
    first = (paths["markdown"].read_bytes(), paths["html"].read_bytes())
    build_index(boards)
    assert (paths["markdown"].read_bytes(), paths["html"].read_bytes()) == first  # deterministic


def test_landing_page_cli_exits_2_on_a_missing_folder(tmp_path, capsys):
    from lfabench.cli import main

    assert main(["leaderboard", "--index", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert "no folder of boards at" in err and "Traceback" not in err


def test_landing_page_shows_hostile_values_as_text(tmp_path):
    from lfabench.leaderboard.index import build_index

    hostile = "<img src=x onerror=alert(1)>"
    record(tmp_path / "runs/a", 0, 50.0, aggregator=hostile, dataset="d<script>x</script>")
    build_leaderboard([tmp_path / "runs"], tmp_path / "boards/b", name="javascript:alert(1)")
    paths = build_index(tmp_path / "boards")
    page, md = paths["html"].read_text(), paths["markdown"].read_text()
    assert "<img" not in page and "<script>x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "href='b/javascript%3Aalert%281%29.html'" in page  # a relative link to the file, never a script
    assert "<img" not in md and "<script" not in md and "&lt;img src=x onerror=alert(1)&gt;" in md
