"""``lfabench verify BOARD...``: recompute every metric and cell of published boards and check their digests.

Exits 0 when every board verifies, 1 naming each discrepancy (file and field), 2 for a path that is no folder."""

from __future__ import annotations

import sys


def _cmd_verify(args) -> int:
    from ..verify import verify_board

    from pathlib import Path

    missing = [b for b in args.boards if not Path(b).is_dir()]
    if missing:
        print(f"lfabench verify: no board folder at {', '.join(missing)}", file=sys.stderr)
        return 2
    failed = False
    for board in args.boards:
        report = verify_board(board, allow_old_format=args.allow_old_format, rebuild=not args.no_rebuild,
                              allow_unclean=args.allow_unclean_records)
        for finding in report.findings:
            print(finding, file=sys.stderr if not finding.note else sys.stdout)
        verdict = "FAILED" if report.failures else "ok"
        print(f"lfabench verify {board}: {verdict}: {report.n_records} record(s), {report.n_recomputed} recomputed "
              f"from their predictions, board(s) {', '.join(report.boards) or '-'}; "
              f"{len(report.failures)} discrepancy(ies), {len(report.findings) - len(report.failures)} note(s)")
        failed |= bool(report.failures)
    return 1 if failed else 0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("verify", help="check a board: digests, metrics from predictions, cells, rebuild")
    p.add_argument("boards", nargs="+", metavar="BOARD_DIR", help="a board folder (holding records/ and the "
                                                                  "files lfabench leaderboard wrote)")
    p.add_argument("--allow-old-format", action="store_true",
                   help="report records and boards of the older format as notes instead of discrepancies")
    p.add_argument("--allow-unclean-records", action="store_true",
                   help="report records of a dirty tree or with provenance missing as notes instead of discrepancies")
    p.add_argument("--no-rebuild", action="store_true", help="skip the rebuild comparison (records only)")
    p.set_defaults(func=_cmd_verify)
