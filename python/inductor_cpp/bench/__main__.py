"""Command line entry point: `python -m inductor_cpp.bench <subcommand> [flags]`.

Each subcommand is a module exposing `HELP` (one line), `add_arguments(parser)` and
`run(args) -> int` (the process exit code). To add one (e.g. `kernels`, `suite`), write the
module and add it to SUBCOMMANDS; nothing else here changes.
"""

from __future__ import annotations

import argparse
import importlib
import sys

# subcommand name -> module (relative to this package) implementing it
SUBCOMMANDS: dict[str, str] = {
    "main": ".main_job",
    "micro": ".micro",
    "machine": ".machine",
    "kernels": ".kernels",
    "suite": ".suite",
    "train": ".train",
    "gpu": ".gpu_micro",
    "matrix": ".matrix",
}


def _load(name: str):
    return importlib.import_module(SUBCOMMANDS[name], __package__)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m inductor_cpp.bench",
                                     description="inductor_cpp benchmarks")
    sub = parser.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")
    for name in SUBCOMMANDS:
        module = _load(name)
        module.add_arguments(sub.add_parser(
            name, help=module.HELP, description=module.HELP,
            formatter_class=argparse.ArgumentDefaultsHelpFormatter))
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return _load(args.subcommand).run(args)


if __name__ == "__main__":
    sys.exit(main())
