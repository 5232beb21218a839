"""``lfabench explain RUN``: a PNG grid of the image patches behind a fitted ProLFA run's top prototypes."""

from __future__ import annotations

import sys


def _cmd_explain(args) -> int:
    from ..explain import ExplainError, explain_run
    from ..registry import UnknownPluginError

    try:
        path, rows = explain_run(args.run, args.out, args.top, args.per_prototype, args.extent, args.context)
    except (ExplainError, UnknownPluginError) as exc:
        print(f"lfabench explain: {exc}", file=sys.stderr)
        return 2
    for row in rows:
        tiles = ", ".join(f"{t.sample_id} (class {t.class_name}, c={t.coefficient:.2f})" for t in row.tiles)
        print(f"#{row.rank} prototype {row.prototype}  weight {row.weight:.4g}  {row.n_support} descriptor(s): {tiles}")
    print(f"wrote {path}")
    return 0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("explain", help="draw the source image patches of a ProLFA run's top prototypes")
    p.add_argument("run", help="a run directory (holding result.json and prototypes.npz) or its result.json")
    p.add_argument("--out", default=None, help="PNG to write (default: RUN/explain.png)")
    p.add_argument("--top", type=int, default=8, help="prototypes to show, heaviest first (default 8)")
    p.add_argument("--per-prototype", type=int, default=4, dest="per_prototype",
                   help="descriptors per prototype, largest coefficient first (default 4)")
    p.add_argument("--extent", type=float, default=None,
                   help="crop side in units of the keypoint's scale (default: the descriptor plugin's "
                        "keypoint_extent: 1 for patches, 12 for sift)")
    p.add_argument("--context", action="store_true",
                   help="draw each descriptor's whole source image with its region outlined, not the crop")
    p.set_defaults(func=_cmd_explain)
