"""The static HTML page: self-contained, sortable, with plots, provenance and per-run links."""

import base64
import hashlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lfabench.provenance import source_version
from lfabench.leaderboard import build_leaderboard

from record_helpers import record


@pytest.fixture
def page(tmp_path):
    for seed in (0, 1):
        record(tmp_path / f"runs/bow{seed}", seed, 70.0 + seed, output_dim=64)
        record(tmp_path / f"runs/vlad{seed}", seed, 90.0 + 3 * seed, aggregator="vlad", output_dim=4096)
    out = build_leaderboard([tmp_path / "runs"], tmp_path / "lb")
    return out["html"]


def test_page_is_self_contained_with_provenance_and_costs(page):
    text = page.read_text()
    assert "`" not in text  # Markdown code spans became <code>
    assert not re.search(r"(src|href)=['\"]https?:", text)  # nothing fetched from the network
    assert "data:image/png;base64," in text and "<script>" in text and "class='sortable'" in text
    assert f"by lfabench {source_version()}" in text and "Generated 20" in text and "git revision" in text
    for col in ("transform time (s)", "peak memory (MiB)", "output dim"):
        assert col in text
    assert "<td class='num' data-sort='4096'>4096</td>" in text
    assert "Overall: mean rank across tasks" in text


def test_every_score_links_to_its_runs_and_their_records(page):
    text = page.read_text()
    anchors = re.findall(r"<a href='#(runs-[0-9-]+)'", text)
    assert len(anchors) == 2
    for anchor in anchors:
        section = text[text.index(f"id='{anchor}'"):].split("</div>", 1)[0]
        links = re.findall(r"<a href='([^'#]+result\.json)'", section)
        assert len(links) == 2 and all((page.parent / link).is_file() for link in links)
        assert "<summary>config</summary>" in section and "lfabench " in section


def with_script(page: str, js: str) -> str:
    """``page`` with the inline script ``js`` added and allowed by its Content-Security-Policy (by hash)."""
    digest = base64.b64encode(hashlib.sha256(js.encode()).digest()).decode()
    return page.replace("script-src ", f"script-src &#39;sha256-{digest}&#39; ", 1).replace("</body>", f"<script>{js}</script></body>")


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _chromium(profile: Path, *args, timeout=120):
    """Headless Chromium with a throw-away profile (never the user's)."""
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                           "--no-first-run", f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (Debian: apt-get install chromium)")
def test_page_renders_in_chromium_and_sorts(page, tmp_path):
    import numpy as np
    from PIL import Image

    shot = tmp_path / "shot.png"
    _chromium(tmp_path / "profile", f"--screenshot={shot}", "--window-size=1200,900", page.as_uri())
    pixels = np.asarray(Image.open(shot).convert("L"))
    assert pixels.std() > 5 and (pixels < 128).mean() > 0.001  # text and plots drawn, not a blank page

    # sort the first table by its score column, ascending (one click), then read the DOM back
    clicked = page.with_name("clicked.html")
    clicked.write_text(with_script(page.read_text(), "var th=document.querySelector('table.sortable')"
                                                     ".querySelectorAll('th')[3];th.click();"))
    dom = _chromium(tmp_path / "profile", "--dump-dom", clicked.as_uri()).stdout
    first_table = dom.split("<table class=\"sortable\">", 1)[1].split("</table>", 1)[0]
    order = re.findall(r">(bow|vlad)</span></td>", first_table)  # the short label, full settings on hover
    assert order == ["bow", "vlad"]  # unsorted the best (vlad) is first
    assert 'aria-sort="ascending"' in first_table
