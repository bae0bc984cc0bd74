"""The on-disk cache from the command line.

    python -m inductor_cpp.cache info     # where it is, how many entries, bytes and the cap
    python -m inductor_cpp.cache clear    # remove every entry (and nothing else in the root)

The root is $INDUCTOR_CPP_CACHE_DIR, else ~/.cache/inductor_cpp (docs/cache.md).
"""

from __future__ import annotations

import argparse

from . import _C


def info() -> dict:
    entries, size, cap = _C.cache_summary()
    return {"root": _C.cache_root(), "entries": entries, "bytes": size, "max_bytes": cap}


def clear() -> int:
    return _C.cache_clear()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m inductor_cpp.cache", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["info", "clear"])
    args = parser.parse_args(argv)
    if args.command == "info":
        i = info()
        print(f"root: {i['root']}\nentries: {i['entries']}\nbytes: {i['bytes']} (cap {i['max_bytes']})")
    else:
        print(f"removed {clear()} entries from {_C.cache_root()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
