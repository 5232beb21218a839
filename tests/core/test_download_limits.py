"""Archive bombs: extraction is limited in total size and ratio, checked before writing and while writing."""

from __future__ import annotations

import io
import struct
import tarfile
import zipfile

import pytest

import lfabench.download as download
from lfabench.download import ArchiveTooLargeError, UnsafeArchiveError, safe_extract


def _zip(path, members, compression=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(path, "w", compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_a_zip_bomb_is_refused_before_anything_is_written(tmp_path):
    bomb = _zip(tmp_path / "bomb.zip", {"ok.txt": b"fine", "big/zeros.bin": bytes(200 << 20)})
    assert bomb.stat().st_size < 300_000  # ~200 KB expanding to 200 MB: the case
    with pytest.raises(ArchiveTooLargeError, match=rf"{bomb}: expands \d+x .*past the limit of 100x"):
        safe_extract(bomb, tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []


def test_total_size_limit_names_the_member_that_crosses_it(tmp_path):
    archive = _zip(tmp_path / "a.zip", {"a.bin": b"x" * 600, "b.bin": b"y" * 600}, zipfile.ZIP_STORED)
    with pytest.raises(ArchiveTooLargeError, match=r"a.zip: expands to more than 1000 bytes .* at member 'b.bin'"):
        safe_extract(archive, tmp_path / "out", max_bytes=1000)
    assert list((tmp_path / "out").iterdir()) == []
    assert safe_extract(archive, tmp_path / "out", max_bytes=1200) == ["a.bin", "b.bin"]
    assert (tmp_path / "out" / "b.bin").read_bytes() == b"y" * 600


@pytest.mark.parametrize("kind", ["zip", "tar.gz"])
def test_headers_that_pass_the_check_are_counted_while_writing_and_partial_files_removed(tmp_path, monkeypatch,
                                                                                         kind):
    # the declared sizes are taken as lying (the check before writing let them through): the count
    # made while writing stops the extraction and removes what it wrote
    monkeypatch.setattr(download, "_limits", lambda *a, **k: None)
    payload = {"keep/first.bin": b"a" * 3000, "keep/deeper/second.bin": b"b" * 3000}
    archive = tmp_path / f"a.{kind}"
    if kind == "zip":
        _zip(archive, payload)
    else:
        with tarfile.open(archive, "w:gz") as tf:
            for name, data in payload.items():
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine.txt").write_text("the user's")
    with pytest.raises(ArchiveTooLargeError, match=r"member 'keep/deeper/second.bin' takes the archive past"):
        safe_extract(archive, tmp_path / "out", max_bytes=4000)
    assert sorted(p.name for p in (tmp_path / "out").rglob("*")) == ["mine.txt"]


def test_a_zip_member_larger_than_its_header_says_is_refused_and_removed(tmp_path):
    archive = _zip(tmp_path / "liar.zip", {"data.bin": b"z" * 5000}, zipfile.ZIP_STORED)
    raw = bytearray(archive.read_bytes())
    # declare 100 bytes in both the local header (offset 22) and the central directory (offset 24)
    local = raw.index(b"PK\x03\x04")
    raw[local + 22:local + 26] = struct.pack("<I", 100)
    central = raw.index(b"PK\x01\x02")
    raw[central + 24:central + 28] = struct.pack("<I", 100)
    archive.write_bytes(bytes(raw))
    with pytest.raises(UnsafeArchiveError, match=r"liar.zip: member 'data.bin' is corrupt"):
        safe_extract(archive, tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []
