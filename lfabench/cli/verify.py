"""``lfabench verify BOARD...``: recompute every metric and cell of published boards and check their digests.

With ``--all``, each argument is a folder of boards (e.g. ``leaderboards``): every board folder under it
that has a record manifest is verified, and each one without (published before the current record format)
is named as not verifiable, which fails nothing.

Exits 0 when every board verifies, 1 naming each discrepancy (file and field), 2 for a path that is no folder
(or, with ``--all``, a folder holding no board)."""

from __future__ import annotations

import sys


def _verify_one(board, args) -> bool:
    """Verify one board folder, print its findings and verdict; True when it has a discrepancy."""
    from ..verify import verify_board

    report = verify_board(board, allow_old_format=args.allow_old_format, rebuild=not args.no_rebuild,
                          allow_unclean=args.allow_unclean_records, check_data=args.check_data)
    for finding in report.findings:
        print(finding, file=sys.stderr if not finding.note else sys.stdout)
    verdict = "FAILED" if report.failures else "ok"
    print(f"lfabench verify {board}: {verdict}: {report.n_records} record(s), {report.n_recomputed} recomputed "
          f"from their predictions, board(s) {', '.join(report.boards) or '-'}; "
          f"{len(report.failures)} discrepancy(ies), {len(report.findings) - len(report.failures)} note(s)")
    return bool(report.failures)


def _cmd_verify(args) -> int:
    from pathlib import Path

    from ..verify import board_names, discover_boards

    missing = [b for b in args.boards if not Path(b).is_dir()]
    if missing:
        print(f"lfabench verify: no board folder at {', '.join(missing)}", file=sys.stderr)
        return 2
    if not args.all:
        return 1 if any([_verify_one(board, args) for board in args.boards]) else 0
    failed, n_verified, n_legacy = False, 0, 0
    for root in args.boards:
        found = discover_boards(root)
        if not found.verifiable and not found.legacy:
            print(f"lfabench verify: no board (no <name>-outputs.txt) under {root}", file=sys.stderr)
            return 2
        for legacy in found.legacy:
            names = board_names(legacy)
            print(f"not verifiable: {legacy}: board(s) {', '.join(names)} published before the current record "
                  f"format (no {names[0]}-records.json); republish to make it verifiable")
        for board in found.verifiable:
            failed |= _verify_one(board, args)
        n_verified, n_legacy = n_verified + len(found.verifiable), n_legacy + len(found.legacy)
    print(f"lfabench verify --all: {n_verified} board folder(s) verified{' (FAILED)' if failed else ''}, "
          f"{n_legacy} not verifiable (older format)")
    return 1 if failed else 0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("verify", help="check a board: digests, metrics from predictions, cells, rebuild")
    p.add_argument("boards", nargs="+", metavar="BOARD_DIR", help="a board folder (holding records/ and the "
                                                                  "files lfabench leaderboard wrote); with --all, "
                                                                  "a folder of boards")
    p.add_argument("--all", action="store_true",
                   help="verify every board folder under each BOARD_DIR that has a record manifest, and name "
                        "those without one (older format) as not verifiable")
    p.add_argument("--allow-old-format", action="store_true",
                   help="report records and boards of the older format as notes instead of discrepancies")
    p.add_argument("--allow-unclean-records", action="store_true",
                   help="report records of a dirty tree or with provenance missing as notes instead of discrepancies")
    p.add_argument("--no-rebuild", action="store_true", help="skip the rebuild comparison (records only)")
    p.add_argument("--check-data", action="store_true",
                   help="also compare the stored splits, labels and ground truth with the datasets on disk (the "
                        "embedded datasets are always compared)")
    p.set_defaults(func=_cmd_verify)
