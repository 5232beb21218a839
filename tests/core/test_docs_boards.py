"""The documentation site shows the committed boards (docs/hooks/boards.py): every board's pages, plots and tables
and the landing page, never its records; the nav lists every committed board."""

from __future__ import annotations

import importlib.util

import yaml

from conftest import REPO


def _hook():
    spec = importlib.util.spec_from_file_location("boards_hook", REPO / "docs" / "hooks" / "boards.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _boards() -> list[str]:
    root = REPO / "leaderboards"
    return sorted(p.name for p in root.iterdir() if (p / f"{p.name}.md").is_file())


def test_the_site_takes_each_boards_pages_plots_and_tables_but_not_its_records(tmp_path):
    board = tmp_path / "leaderboards" / "b"
    (board / "records" / "run").mkdir(parents=True)
    for name in ("b.md", "b.html", "b.csv", "b-scores.png", "regenerate.sh", "b-records.json", "records/run/x.md"):
        (board / name).write_text("x")
    (tmp_path / "leaderboards" / "index.md").write_text("# boards")
    (tmp_path / "leaderboards" / "no-board").mkdir()  # a folder without <name>.md is not a board
    (tmp_path / "leaderboards" / "no-board" / "notes.md").write_text("x")
    root = tmp_path / "leaderboards"
    found = [p.relative_to(root).as_posix() for p in _hook().board_files(root)]
    assert found == ["index.md", "b/b-scores.png", "b/b.csv", "b/b.html", "b/b.md"]


def test_the_nav_lists_every_committed_board():
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_multi_constructor("", lambda loader, suffix, node: None)  # mkdocs.yml's !!python tags, if any
    nav = yaml.load((REPO / "mkdocs.yml").read_text(), Loader=Loader)["nav"]
    boards = next(section["Leaderboards"] for section in nav if isinstance(section, dict) and "Leaderboards" in section)
    pages = {page for entry in boards for page in entry.values()}
    assert pages == {"leaderboards/index.md"} | {f"leaderboards/{b}/{b}.md" for b in _boards()}
