"""A board is data, never a capability: what a hostile board makes `lfabench verify`, `explain` and `reproduce` do.

Each case is a board a contributor could publish: paths that leave the board, array headers that declare more
than the file or the record holds, links out, a manifest whose sources are the whole filesystem. Each ends as a
finding naming the file, never a traceback, and the rest of the board is still checked.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import struct
import subprocess
import sys
import zipfile
import zlib

import numpy as np
import pytest

from lfabench.boardfiles import BoardFileError, inside, load_npz
from lfabench.leaderboard import build_leaderboard
from lfabench.record import content_digest, file_sha256
from lfabench.run import run_benchmark
from lfabench.verify import verify_board

COMMAND = "lfabench leaderboard boards/demo/records --out boards/demo --name demo"


def _cfg(seed, n_clusters):
    return {"dataset": {"name": "digits", "params": {"n_samples": 150}},
            "descriptor": {"name": "patches", "params": {}},
            "aggregator": {"name": "bow", "params": {"n_clusters": n_clusters, "random_state": seed}},
            "evaluator": {"name": "knn", "params": {"k": 1}}, "seed": seed, "cache": False}


def rebuild(root):
    """Rebuild the board under ``root`` as its manifest's command does (what a forger does after a change)."""
    with contextlib.chdir(root):
        build_leaderboard(["boards/demo/records"], "boards/demo", "demo", command=COMMAND)


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """Four real runs on the embedded digits (two settings, two seeds), published as a board."""
    root = tmp_path_factory.mktemp("hostile")
    for seed in (0, 1):
        for k in (4, 8):
            cfg = _cfg(seed, k)
            setting = dict(cfg, aggregator={"name": "bow", "params": {"n_clusters": k, "random_state": "${seed}"}})
            setting.pop("seed")
            run_benchmark(cfg, root / "boards" / "demo" / "records" / f"k{k}" / f"s{seed}", setting=setting)
    rebuild(root)
    return root / "boards" / "demo"


def _copy(board, tmp_path):
    dest = tmp_path / "boards" / "demo"
    shutil.copytree(board, dest, symlinks=True)
    return dest


def _fails(board, **kw):
    return [str(f) for f in verify_board(board, allow_unclean=True, **kw).failures]


def _records(board):
    return sorted(board.glob("records/**/result.json"))


def _rewrite(path, rec):
    """Write ``rec`` with its digest recomputed, and the board's manifest entry with it (a consistent forgery)."""
    rec["digest"] = content_digest(rec)
    path.write_text(json.dumps(rec, indent=2))
    board = path.parents[3]
    mpath = board / "demo-records.json"
    manifest = json.loads(mpath.read_text())
    rel = path.relative_to(board).as_posix()
    for entry in manifest["records"]:
        if entry["path"] == rel:
            entry["digest"] = rec["digest"]
            entry["predictions_sha256"] = (rec.get("predictions") or {}).get("sha256")
    mpath.write_text(json.dumps(manifest, indent=1) + "\n")


def _npy_header(shape, dtype="<i8") -> bytes:
    header = f"{{'descr': '{dtype}', 'fortran_order': False, 'shape': {shape!r}, }}"
    header += " " * (63 - (len(header) + 10) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode()


def _write_member(path, name, payload: bytes):
    """Replace one member of an .npz by ``payload`` (other members kept)."""
    with zipfile.ZipFile(path) as zf:
        others = {i.filename: zf.read(i) for i in zf.infolist() if i.filename != name}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for n, data in others.items():
            zf.writestr(n, data)
        zf.writestr(name, payload)


def test_inside_refuses_absolute_parent_and_linked_paths(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "secret").write_text("x")
    (tmp_path / "b" / "out").symlink_to(tmp_path / "secret")
    assert inside(tmp_path / "b", "predictions.npz") == tmp_path / "b" / "predictions.npz"
    for name in ("/etc/passwd", "../secret", "a/../../secret", "out", "", None, 3):
        with pytest.raises(BoardFileError):
            inside(tmp_path / "b", name)


@pytest.mark.parametrize("target", ["/etc/passwd", "../../k8/s0/predictions.npz", "link"])
def test_a_predictions_file_outside_the_record_is_refused_unread(board, tmp_path, target):
    copy = _copy(board, tmp_path)
    path = _records(copy)[0]
    rec = json.loads(path.read_text())
    outside = tmp_path / "elsewhere.npz"
    shutil.copyfile(path.parent / "predictions.npz", outside)
    if target == "link":   # a link to a file outside the board whose digests are consistent
        (path.parent / "predictions.npz").unlink()
        (path.parent / "predictions.npz").symlink_to(outside)
        target = "predictions.npz"
    rec["predictions"]["file"] = target
    rec["predictions"]["sha256"] = file_sha256(outside) if target == "predictions.npz" else rec["predictions"]["sha256"]
    _rewrite(path, rec)
    fails = _fails(copy, rebuild=False)
    assert any(str(path) in f and "predictions.file" in f and "leaves the board's folder" in f for f in fails), fails


def test_a_header_declaring_a_trillion_elements_is_a_finding_and_the_rest_is_checked(board, tmp_path):
    copy = _copy(board, tmp_path)
    path = _records(copy)[0]
    ppath = path.parent / "predictions.npz"
    _write_member(ppath, "predicted.npy", _npy_header((10**12,)))   # a 1 KB header, no data
    rec = json.loads(path.read_text())
    rec["predictions"]["sha256"] = file_sha256(ppath)
    _rewrite(path, rec)
    report = verify_board(copy, allow_unclean=True, rebuild=False)
    fails = [str(f) for f in report.failures]
    assert fails == [f"FAIL: {ppath}: predictions: member 'predicted.npy' declares a <i8 array of shape "
                     f"(1000000000000,) (8,000,000,000,000 bytes) in a member of 0 bytes"], fails
    assert report.n_records == 4 and report.n_recomputed == 3


def test_a_header_that_disagrees_with_the_record_counts_is_refused_before_decompressing(board, tmp_path):
    copy = _copy(board, tmp_path)
    path = _records(copy)[0]
    ppath = path.parent / "predictions.npz"
    with np.load(ppath) as z:
        n_test = z["predicted"].size
    _write_member(ppath, "predicted.npy", _npy_header((n_test + 1,)) + bytes(8 * (n_test + 1)))
    rec = json.loads(path.read_text())
    rec["predictions"]["sha256"] = file_sha256(ppath)
    _rewrite(path, rec)
    fails = _fails(copy, rebuild=False)
    assert any(str(ppath) in f and f"array 'predicted' declares {n_test + 1} elements, the record's counts" in f
               and "refused before decompressing" in f for f in fails), fails


def _bomb(path, n_test: int, size: int = 16 << 20):
    """A ``size``-byte predictions file whose ``predicted`` member is a deflate stream of zeros declaring
    ~3.9 GB (stored without zip64: under 4 GiB), padded to ``size`` by a stored random member."""
    n = (0xF0000000 - 128) // 8
    header = _npy_header((n,))
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = 1 << 24
    body = [comp.compress(header)]
    first = comp.compress(bytes(chunk)) + comp.flush(zlib.Z_FULL_FLUSH)
    again = comp.compress(bytes(chunk)) + comp.flush(zlib.Z_FULL_FLUSH)  # after a full flush: the same bytes
    total = len(header) + n * 8
    body += [first] + [again] * ((total - len(header)) // chunk - 1)
    rest = (total - len(header)) % chunk
    body.append(comp.compress(bytes(rest)) + comp.flush())
    data = b"".join(body)
    crc = zlib.crc32(header)  # wrong for the whole member: a reader finds out only at its end

    def member(name, raw, method, usize, crc_):
        return name.encode(), raw, method, usize, crc_

    pad_len = max(0, size - len(data))
    pad = np.random.default_rng(0).integers(0, 255, pad_len, dtype=np.uint8).tobytes()
    members = [member("predicted.npy", data, 8, total, crc),
               member("true.npy", _npy_header((n_test,)) + bytes(8 * n_test), 0, 0, 0)]
    members[1] = member("true.npy", members[1][1], 0, len(members[1][1]), zlib.crc32(members[1][1]))
    members.append(member("counted_wrong.npy", _npy_header((len(pad),), "|u1") + pad, 0, 0, 0))
    raw = members[2][1]
    members[2] = member("counted_wrong.npy", raw, 0, len(raw), zlib.crc32(raw))
    out, central = bytearray(), bytearray()
    for name, raw, method, usize, crc_ in members:
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0x21, crc_, len(raw), usize, len(name), 0)
        out += name + raw
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 0x21, crc_, len(raw), usize,
                               len(name), 0, 0, 0, 0, 0, offset)
        central += name
    start = len(out)
    out += central + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), start, 0)
    path.write_bytes(bytes(out))


def test_verify_of_a_16_mb_crafted_predictions_file_stays_under_1_gb(board, tmp_path):
    copy = _copy(board, tmp_path)
    path = _records(copy)[0]
    ppath = path.parent / "predictions.npz"
    rec = json.loads(path.read_text())
    _bomb(ppath, rec["split"]["n_test"])
    assert os.path.getsize(ppath) >= 16 << 20
    with zipfile.ZipFile(ppath) as zf:
        assert zf.getinfo("predicted.npy").file_size > 3_900_000_000   # what an unchecked reader would inflate
    rec["predictions"]["sha256"] = file_sha256(ppath)
    _rewrite(path, rec)
    script = ("import resource, sys; from lfabench.cli import main\n"
              "code = main(['verify', '--no-rebuild', '--allow-unclean-records', sys.argv[1]])\n"
              "print('maxrss_kb', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss); sys.exit(code)")
    proc = subprocess.run([sys.executable, "-c", script, str(copy)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert f"FAIL: {ppath}: predictions:" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    maxrss_kb = int(proc.stdout.split("maxrss_kb")[-1])
    assert maxrss_kb < 1 << 20, f"verify used {maxrss_kb / 1024:.0f} MiB"
    # a forged record that also claims a count as large is held to the file's size
    rec["split"]["n_test"] = (0xF0000000 - 128) // 8
    _rewrite(path, rec)
    fails = _fails(copy, rebuild=False)
    assert any(str(ppath) in f and "refused before decompressing" in f for f in fails), fails


def test_a_file_whose_sha256_failed_is_not_read(board, tmp_path, monkeypatch):
    copy = _copy(board, tmp_path)
    ppath = _records(copy)[0].parent / "predictions.npz"
    _write_member(ppath, "predicted.npy", _npy_header((10**12,)))
    read = []
    monkeypatch.setattr("lfabench.verify.load_npz", lambda *a, **k: read.append(a) or load_npz(*a, **k))
    fails = _fails(copy, rebuild=False)
    assert any(str(ppath) in f and "predictions.sha256" in f and "not read further" in f for f in fails)
    assert all(a[0] != ppath for a in read) and len(read) == 3


def test_a_pickled_or_malformed_member_is_a_finding(board, tmp_path):
    copy = _copy(board, tmp_path)
    paths = _records(copy)
    for path, payload in ((paths[0], _npy_header((3,), "|O") + b"x" * 24), (paths[1], b"not an npy file")):
        ppath = path.parent / "predictions.npz"
        _write_member(ppath, "true.npy", payload)
        rec = json.loads(path.read_text())
        rec["predictions"]["sha256"] = file_sha256(ppath)
        _rewrite(path, rec)
    (paths[2].parent / "predictions.npz").write_bytes(b"PK\x03\x04 truncated")
    rec = json.loads(paths[2].read_text())
    rec["predictions"]["sha256"] = file_sha256(paths[2].parent / "predictions.npz")
    _rewrite(paths[2], rec)
    report = verify_board(copy, allow_unclean=True, rebuild=False)
    fails = [str(f) for f in report.failures]
    assert any(str(paths[0].parent) in f and "Python objects (a pickle)" in f for f in fails), fails
    assert any(str(paths[1].parent) in f and "true.npy" in f for f in fails), fails
    assert any(str(paths[2].parent) in f and "not a readable .npz" in f for f in fails), fails
    assert report.n_recomputed == 1


def test_a_manifest_whose_sources_leave_the_board_is_not_rebuilt(board, tmp_path, monkeypatch):
    copy = _copy(board, tmp_path)
    mpath = copy / "demo-records.json"
    manifest = json.loads(mpath.read_text())
    built = []
    monkeypatch.setattr("lfabench.verify.build_leaderboard", lambda *a, **k: built.append(a))
    for sources in (["/"], ["boards/demo/records", "../../.."], ["boards/other/records"], "boards", [3]):
        mpath.write_text(json.dumps(dict(manifest, sources=sources)))
        fails = _fails(copy)
        assert any(str(mpath) in f and "sources: not rebuilt" in f for f in fails), (sources, fails)
    assert built == []


def test_links_and_listed_outputs_that_leave_the_board_are_findings(board, tmp_path):
    copy = _copy(board, tmp_path)
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(_records(copy)[0].parent, elsewhere)
    (copy / "records" / "k4" / "s9").symlink_to(elsewhere)                  # a record folder linked from outside
    (copy / "records" / "k8" / "s0" / "result.json").unlink()
    (copy / "records" / "k8" / "s0" / "result.json").symlink_to(elsewhere / "result.json")
    with open(copy / "demo-outputs.txt", "a") as fh:
        fh.write("../../../etc/passwd\n")
    fails = _fails(copy)
    assert any(str(copy / "records" / "k4" / "s9") in f and "symbolic link out of the board" in f for f in fails)
    assert any(str(copy / "records" / "k8" / "s0" / "result.json") in f and "symbolic link" in f for f in fails)
    assert any("demo-outputs.txt" in f and "'../../../etc/passwd'" in f and "leaves the board" in f for f in fails)


def test_explain_refuses_a_prototypes_file_outside_the_run(tmp_path):
    from lfabench.explain import ExplainError, load_explained_run

    cfg = {"dataset": {"name": "digits", "params": {"n_samples": 100}}, "descriptor": {"name": "patches"},
           "aggregator": {"name": "prolfa", "params": {"n_prototypes": 8}},
           "evaluator": {"name": "knn", "params": {"k": 1}}, "seed": 0, "cache": False}
    run_benchmark(cfg, tmp_path / "run")
    path = tmp_path / "run" / "result.json"
    assert load_explained_run(tmp_path / "run")[1]["prototype"].size
    rec = json.loads(path.read_text())
    for target in ("/etc/passwd", "../run/prototypes.npz"):
        rec["prototypes"]["file"] = target
        path.write_text(json.dumps(rec))
        with pytest.raises(ExplainError, match="prototypes.file .* leaves the board's folder"):
            load_explained_run(tmp_path / "run")


def test_publishing_never_copies_a_linked_file_from_outside_the_run(board, tmp_path):
    from lfabench.recordset.publish import publish_records

    run = tmp_path / "sweep" / "g" / "s0"
    shutil.copytree(_records(board)[0].parent, run)
    (tmp_path / "secret").write_text("a private key")
    (run / "predictions.npz").unlink()
    (run / "predictions.npz").symlink_to(tmp_path / "secret")
    with pytest.raises(BoardFileError, match="predictions.npz of .* leaves the board's folder"):
        publish_records([tmp_path / "sweep"], tmp_path / "out", allow_unclean=True)
    assert not list((tmp_path / "out").glob("records/**/predictions.npz"))


def test_board_files_and_a_records_folder_linked_from_outside_are_findings(board, tmp_path):
    copy = _copy(board, tmp_path)
    (tmp_path / "passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (copy / "demo-outputs.txt").unlink()
    (copy / "demo-outputs.txt").symlink_to(tmp_path / "passwd")
    fails = _fails(copy)
    assert any("demo-outputs.txt" in f and "leaves the board's folder" in f for f in fails), fails
    assert not any("root:x" in f for f in fails)
    other = _copy(board, tmp_path / "second")
    shutil.move(other / "records", tmp_path / "records-elsewhere")
    (other / "records").symlink_to(tmp_path / "records-elsewhere")
    report = verify_board(other, allow_unclean=True)
    assert [f.field for f in report.failures] == ["records"] and report.n_records == 0, report.failures
