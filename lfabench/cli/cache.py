"""``lfabench cache``: ``list`` the array cache (descriptors, codebooks...) and ``clear`` it."""

from __future__ import annotations

import shutil
import sys

from ..storage import ArrayCache


def _partials(cache: ArrayCache):
    if not cache.root.exists():
        return []
    return sorted(p for p in cache.root.glob("*.partial") if p.is_dir())


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"  # pragma: no cover


def _cmd_list(args) -> int:
    cache = ArrayCache()
    entries = [e for e in cache.entries() if e.name.startswith(args.prefix)]
    print(f"cache: {cache.root}")
    total = 0
    for e in entries:
        total += e.size_bytes
        what = e.meta.get("dataset", "")
        extra = f"  {e.meta.get('extractor', '')} on {what}" if what else ""
        print(f"  {e.name}  {_size(e.size_bytes)}  {e.meta.get('created', '')}{extra}")
    for p in _partials(cache):
        if p.name.startswith(args.prefix):
            chunks = list(p.glob("chunk-*.npz"))
            size = sum(c.stat().st_size for c in chunks)
            total += size
            print(f"  {p.name}  {_size(size)}  unfinished: {len(chunks)} chunks (resumed by the next run)")
    print(f"{len(entries)} entries, {_size(total)}")
    return 0


def _cmd_clear(args) -> int:
    cache = ArrayCache()
    n = cache.clear(args.prefix)
    k = 0
    for p in _partials(cache):
        if p.name.startswith(args.prefix):
            shutil.rmtree(p, ignore_errors=True)
            k += 1
    print(f"removed {n} entries and {k} unfinished extractions from {cache.root}", file=sys.stdout)
    return 0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("cache", help="list or clear cached arrays (descriptors, codebooks, ...)")
    sub = p.add_subparsers(dest="cache_command", required=True)
    ls = sub.add_parser("list", help="list cache entries with sizes")
    ls.add_argument("--prefix", default="", help="only entries whose name starts with this (e.g. descriptors-)")
    ls.set_defaults(func=_cmd_list)
    cl = sub.add_parser("clear", help="delete cache entries (all, or those matching --prefix)")
    cl.add_argument("--prefix", default="", help="only entries whose name starts with this")
    cl.set_defaults(func=_cmd_clear)
