"""`python -m inductor_cpp.knobs`: the INDUCTOR_CPP_* knobs set in this environment, or with
--markdown the whole registry as docs/knobs.md."""

from __future__ import annotations

import argparse
import sys

from . import KNOBS, markdown, raw


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m inductor_cpp.knobs",
                                     description="The INDUCTOR_CPP_* knobs: those set here, or "
                                     "the whole table as markdown.")
    parser.add_argument("--markdown", action="store_true", help="print docs/knobs.md")
    args = parser.parse_args(argv)
    if args.markdown:
        sys.stdout.write(markdown())
        return 0
    for name in KNOBS:
        value = raw(name)
        if value is not None:
            print(f"{name}={value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
