"""MkDocs hook: the committed boards as pages of the documentation site, from their generated files.

Each board under ``leaderboards/`` (a folder holding ``<name>/<name>.md``) and the landing page
``leaderboards/index.md`` join the site under ``leaderboards/``, with the files their pages link to (plots and CSV
tables). The run records stay out (they are the board's data, not pages). Nothing is copied into ``docs/``: the site
always shows the boards as committed.
"""

from __future__ import annotations

from pathlib import Path

#: Board files a page shows or links to (the static HTML page too); records, manifests, scripts stay out.
SHOWN = (".md", ".html", ".png", ".csv")


def board_files(leaderboards: Path) -> list[Path]:
    """The landing page and, per board folder, its pages (Markdown and HTML), plots and tables."""
    found = [leaderboards / "index.md"] if (leaderboards / "index.md").is_file() else []
    for board in sorted(p for p in leaderboards.iterdir() if p.is_dir()):
        if (board / f"{board.name}.md").is_file():
            found += sorted(f for f in board.iterdir() if f.is_file() and f.suffix in SHOWN)
    return found


def on_files(files, config):
    from mkdocs.structure.files import File  # here: board_files is usable (and tested) without MkDocs installed

    repo = Path(config["config_file_path"]).resolve().parent
    for path in board_files(repo / "leaderboards"):
        files.append(File(str(path.relative_to(repo)), src_dir=str(repo), dest_dir=config["site_dir"],
                          use_directory_urls=config["use_directory_urls"]))
    return files
