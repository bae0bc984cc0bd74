"""The on-disk cache from the command line.

    python -m inductor_cpp.cache info     # where it is, how many entries, bytes and the cap
    python -m inductor_cpp.cache verify   # every entry and leftover checked; nothing changed
    python -m inductor_cpp.cache clear    # remove every entry (and nothing else in the root)
    python -m inductor_cpp.cache export FILE   # every sound entry into one tar file
    python -m inductor_cpp.cache import FILE   # its entries into this cache, checked first

`verify` prints one line per entry: `ok`, or the problem — `corrupt` (meta.json, a missing
file, a size or SHA-256 that does not match, a symlink, a plan.json that fails validation),
`unsafe` (a directory of another user or writable by others: such an entry is never loaded)
or `stale` (a build directory in tmp/ left by a process that died). It exits with 1 when it
found a problem. A lookup removes a corrupt entry and rebuilds it; `clear` removes them all and
names the entries it could not remove (another user's). export / import carry entries to
another cache (cache_transfer.py, which also puts them in torch.compiler.save_cache_artifacts()).

The root is $INDUCTOR_CPP_CACHE_DIR, else ~/.cache/inductor_cpp (docs/cache.md).
"""

from __future__ import annotations

import argparse

from . import _C, cache_transfer


def info() -> dict:
    entries, size, cap = _C.cache_summary()
    return {"root": _C.cache_root(), "entries": entries, "bytes": size, "max_bytes": cap}


def verify() -> list[dict]:
    """One dict per entry or leftover: key ("" for a leftover), path, kind (forward, backward,
    inference; "" when unknown) and problem ("" when good)."""
    return list(_C.cache_verify())


def clear() -> int:
    """Removes every entry; returns how many (clear_report() also names the refused ones)."""
    return clear_report()[0]


def clear_report() -> tuple[int, list[str]]:
    removed, refused = _C.cache_clear()
    return removed, list(refused)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m inductor_cpp.cache", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["info", "verify", "clear", "export", "import"])
    parser.add_argument("file", nargs="?", help="export / import: the tar file")
    args = parser.parse_args(argv)
    if args.command in ("export", "import"):
        if not args.file:
            parser.error(f"{args.command} needs a FILE")
        if args.command == "export":
            print(f"exported {cache_transfer.export(args.file)} entries to {args.file}")
        else:
            try:
                installed, present = cache_transfer.import_(args.file)
            except (ValueError, OSError) as e:
                print(f"import failed: {e}")
                return 1
            print(f"imported {installed} entries into {_C.cache_root()} ({present} already there)")
        return 0
    if args.command == "info":
        i = info()
        print(f"root: {i['root']}\nentries: {i['entries']}\nbytes: {i['bytes']} (cap {i['max_bytes']})")
        return 0
    if args.command == "verify":
        findings = verify()
        bad = [f for f in findings if f["problem"]]
        for f in findings:
            what = f["key"] or f["path"]
            print(f"{f['problem'] or 'ok'}: {what}" + (f" ({f['kind']})" if f["kind"] else ""))
        entries = sum(1 for f in findings if f["key"])
        print(f"{entries} entries in {_C.cache_root()}, {len(bad)} problem(s)")
        return 1 if bad else 0
    removed, refused = clear_report()
    print(f"removed {removed} entries from {_C.cache_root()}")
    for r in refused:
        print(f"refused: {r}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
