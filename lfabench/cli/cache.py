"""``lfabench cache``: ``list`` the array cache (descriptors, codebooks...) and ``clear`` it.

``clear`` removes only what lfabench wrote there (entries with their proof, unfinished extractions:
:meth:`lfabench.storage.ArrayCache.entries`), names each thing it removes, and never follows a
symbolic link. A cache folder that also holds other files (``LFABENCH_CACHE`` pointed at a project
by mistake) is refused, naming them, unless ``--keep-foreign`` says to remove lfabench's entries only.
"""

from __future__ import annotations

import sys

from ..storage import ArrayCache


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
    for p in cache.partials():
        if p.name.startswith(args.prefix):
            chunks = list(p.glob("chunk-*.npz"))
            size = sum(c.stat().st_size for c in chunks)
            total += size
            print(f"  {p.name}  {_size(size)}  unfinished: {len(chunks)} chunks (resumed by the next run)")
    print(f"{len(entries)} entries, {_size(total)}")
    foreign = cache.foreign()
    if foreign:
        print(f"{len(foreign)} other file(s) or folder(s) there are not lfabench's (left alone)")
    return 0


def _cmd_clear(args) -> int:
    cache = ArrayCache()
    foreign = cache.foreign()
    if foreign and not args.keep_foreign:
        shown = ", ".join(p.name + ("/" if p.is_dir() and not p.is_symlink() else "") for p in foreign[:10])
        more = f" and {len(foreign) - 10} more" if len(foreign) > 10 else ""
        print(f"lfabench cache clear: {cache.root} holds {len(foreign)} file(s) or folder(s) lfabench did not "
              f"write ({shown}{more}); refusing to clear it. Check LFABENCH_CACHE, or pass --keep-foreign to "
              f"remove lfabench's entries only.", file=sys.stderr)
        return 2
    removed = cache.clear(args.prefix, dry_run=args.dry_run)
    for name in removed:
        print(f"  {'would remove' if args.dry_run else 'removed'} {name}")
    verb = "would remove" if args.dry_run else "removed"
    kept = f"; left {len(foreign)} other file(s) or folder(s) alone" if foreign else ""
    print(f"{verb} {len(removed)} cache entr{'y' if len(removed) == 1 else 'ies'} from {cache.root}{kept}")
    return 0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("cache", help="list or clear cached arrays (descriptors, codebooks, ...)")
    sub = p.add_subparsers(dest="cache_command", required=True)
    ls = sub.add_parser("list", help="list cache entries with sizes")
    ls.add_argument("--prefix", default="", help="only entries whose name starts with this (e.g. descriptors-)")
    ls.set_defaults(func=_cmd_list)
    cl = sub.add_parser("clear", help="delete lfabench's cache entries (all, or those matching --prefix)")
    cl.add_argument("--prefix", default="", help="only entries whose name starts with this")
    cl.add_argument("--dry-run", action="store_true", help="list what would be removed, remove nothing")
    cl.add_argument("--keep-foreign", action="store_true",
                    help="the cache folder also holds files lfabench did not write: remove lfabench's entries only")
    cl.set_defaults(func=_cmd_clear)
