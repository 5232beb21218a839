"""lfabench data fetch|add|verify and lfabench cache: offline failure, safe extraction, registry, cache listing."""

from __future__ import annotations

import io
import tarfile
import zipfile

import numpy as np
import pytest

from lfabench import download as fetch_mod
from lfabench import get_registry
from lfabench.cli import main
from lfabench.dataroot import registered

from data_helpers import need_shared


@pytest.fixture
def dataroot(tmp_path, monkeypatch):
    monkeypatch.setenv("LFABENCH_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("LFABENCH_CACHE", str(tmp_path / "cache"))
    return tmp_path / "data"


def test_fetch_offline_fails_at_once_with_url_and_manual_way(dataroot, monkeypatch, capsys):
    url = "http://127.0.0.1:9/CUB_200_2011.tgz"  # the discard port: connection refused, no network needed
    spec = get_registry().get_spec("dataset", "cub200")
    assert spec.sources and spec.sources[0].filename == "CUB_200_2011.tgz"  # the plugin declares its download
    monkeypatch.setattr(spec, "sources",
                        [fetch_mod.Resource(url, "CUB_200_2011.tgz", "md5:97eceeb196236b17998738112f37df78", ".")])
    assert main(["data", "fetch", "cub200", "--timeout", "2"]) == 2
    err = capsys.readouterr().err
    assert url in err and "lfabench data add cub200 PATH" in err and "Manual alternative" in err
    assert main(["data", "fetch", "scene15"]) == 2  # no source: the plugin's manual way instead
    assert "cannot be fetched" in capsys.readouterr().err
    scene15 = get_registry().get_spec("dataset", "scene15")
    with pytest.raises(fetch_mod.FetchError, match="cannot be fetched.*lfabench data add scene15"):
        fetch_mod.fetch("scene15", scene15.sources, scene15.manual)


def test_fetch_uses_a_file_already_downloaded_and_checks_its_hash(dataroot, tmp_path, monkeypatch):
    # an archive placed by hand in .downloads: pooch verifies the checksum instead of downloading
    src = tmp_path / "src" / "CUB_200_2011"
    (src / "images" / "001.A").mkdir(parents=True)
    (src / "images" / "001.A" / "a.jpg").write_bytes(b"x")
    for name, text in (("images.txt", "1 001.A/a.jpg\n"), ("image_class_labels.txt", "1 1\n"),
                       ("train_test_split.txt", "1 1\n")):
        (src / name).write_text(text)
    archive = dataroot / "cub200" / ".downloads" / "cub.tgz"
    archive.parent.mkdir(parents=True)
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(src, arcname="CUB_200_2011")
    md5 = fetch_mod.file_hash(archive, "md5")
    sources = [fetch_mod.Resource("http://127.0.0.1:9/cub.tgz", "cub.tgz", f"md5:{md5}", ".")]
    root = fetch_mod.fetch("cub200", sources, timeout=2, progress=False)
    assert (root / "CUB_200_2011" / "images" / "001.A" / "a.jpg").read_bytes() == b"x"
    assert fetch_mod.verify_checksums(sources, root) == [(str(archive), "md5 OK")]
    archive.write_bytes(b"corrupted")  # a bad file is re-downloaded -> offline failure, with the URL
    with pytest.raises(fetch_mod.FetchError, match="127.0.0.1:9/cub.tgz"):
        fetch_mod.fetch("cub200", sources, timeout=2, progress=False)


def _tar_with(path, members):
    with tarfile.open(path, "w") as tf:
        for info, data in members:
            tf.addfile(info, io.BytesIO(data) if data is not None else None)


def test_safe_extract_refuses_traversal_and_outside_links(tmp_path):
    ok = tarfile.TarInfo("dir/file.txt")
    ok.size = 2
    _tar_with(tmp_path / "good.tar", [(ok, b"hi")])
    assert fetch_mod.safe_extract(tmp_path / "good.tar", tmp_path / "out") == ["dir/file.txt"]
    assert (tmp_path / "out" / "dir" / "file.txt").read_bytes() == b"hi"
    evil = tarfile.TarInfo("../escape.txt")
    evil.size = 1
    _tar_with(tmp_path / "evil.tar", [(evil, b"x")])
    with pytest.raises(fetch_mod.UnsafeArchiveError, match="outside"):
        fetch_mod.safe_extract(tmp_path / "evil.tar", tmp_path / "out2")
    assert not (tmp_path / "escape.txt").exists()
    link = tarfile.TarInfo("innocent")
    link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
    _tar_with(tmp_path / "link.tar", [(link, None)])
    with pytest.raises(fetch_mod.UnsafeArchiveError, match="points outside"):
        fetch_mod.safe_extract(tmp_path / "link.tar", tmp_path / "out3")
    with zipfile.ZipFile(tmp_path / "evil.zip", "w") as zf:
        zf.writestr("../../zip-escape.txt", "x")
    with pytest.raises(fetch_mod.UnsafeArchiveError):
        fetch_mod.safe_extract(tmp_path / "evil.zip", tmp_path / "out4")


@pytest.mark.shared_data
def test_add_and_verify_the_shared_copies(dataroot, capsys):
    scene = need_shared("scene15")
    assert main(["data", "add", "scene15", str(scene)]) == 0
    assert registered()["scene15"] == str(scene.resolve())
    assert main(["data", "verify", "scene15"]) == 0
    out = capsys.readouterr().out
    assert "4485 images, 15 classes" in out and "status: complete" in out
    ox = need_shared("oxford5k")
    assert main(["data", "add", "oxford5k", str(ox)]) == 1  # no images: not registered without --force
    out = capsys.readouterr().out
    assert "55 queries" in out and "oxbuild_images" in out and "checksum gnd_oxford5k.pkl: md5 OK" in out
    assert "oxford5k" not in registered()
    assert main(["data", "add", "oxford5k", str(ox), "--force"]) == 0
    assert main(["data", "verify", "holidays", "--root", str(need_shared("holidays"))]) == 1
    assert "1491 images, 500 queries, 991 positives" in capsys.readouterr().out


def test_cache_list_and_clear(dataroot, tmp_path, capsys):
    from lfabench.storage import ArrayCache

    cache = ArrayCache()
    cache.save("descriptors-toy-sift-0123", {"a": np.zeros(3)}, meta={"dataset": "toy", "extractor": "SIFT"})
    cache.save("codebook-x-1", {"a": np.zeros(3)})
    (cache.root / "descriptors-toy-daisy-99.partial").mkdir()
    (cache.root / "descriptors-toy-daisy-99.partial" / "chunk-00000-of-00002.npz").write_bytes(b"0" * 10)
    assert main(["cache", "list"]) == 0
    out = capsys.readouterr().out
    assert "descriptors-toy-sift-0123" in out and "SIFT on toy" in out and "unfinished: 1 chunks" in out
    assert main(["cache", "clear", "--prefix", "descriptors-"]) == 0
    out = capsys.readouterr().out
    assert "removed descriptors-toy-sift-0123\n" in out and "removed descriptors-toy-daisy-99.partial" in out
    assert "removed 2 cache entries" in out
    assert [e.name for e in cache.entries()] == ["codebook-x-1"]
    assert main(["cache", "clear"]) == 0 and cache.entries() == []


@pytest.mark.parametrize("with_data_filter", [True, False])
def test_safe_extract_refuses_a_symlink_chain_before_writing_anything(tmp_path, monkeypatch, with_data_filter):
    """`a -> .`, `b -> a/..`, `b/evil.txt`: each link looks harmless on an empty target; together they escape."""
    if not with_data_filter:  # a Python without tarfile's data filter (< 3.11.4) must be just as safe
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    a = tarfile.TarInfo("a")
    a.type, a.linkname = tarfile.SYMTYPE, "."
    b = tarfile.TarInfo("b")
    b.type, b.linkname = tarfile.SYMTYPE, "a/.."
    evil = tarfile.TarInfo("b/evil.txt")
    evil.size = 4
    _tar_with(tmp_path / "chain.tar", [(a, None), (b, None), (evil, b"evil")])
    target = tmp_path / "deep" / "out"
    with pytest.raises(fetch_mod.UnsafeArchiveError, match="outside"):
        fetch_mod.safe_extract(tmp_path / "chain.tar", target)
    assert list(target.iterdir()) == [] and not (tmp_path / "deep" / "evil.txt").exists()


def test_safe_extract_keeps_harmless_internal_links(tmp_path):
    f = tarfile.TarInfo("data/x.txt")
    f.size = 1
    link = tarfile.TarInfo("latest")
    link.type, link.linkname = tarfile.SYMTYPE, "data"
    inner = tarfile.TarInfo("data/up")
    inner.type, inner.linkname = tarfile.SYMTYPE, "../data/x.txt"
    _tar_with(tmp_path / "ok.tar", [(f, b"1"), (link, None), (inner, None)])
    fetch_mod.safe_extract(tmp_path / "ok.tar", tmp_path / "out")
    assert (tmp_path / "out" / "latest" / "x.txt").read_bytes() == b"1"
