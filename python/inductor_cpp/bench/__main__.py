"""Command line entry point: `python -m inductor_cpp.bench <subcommand> [flags]`.

Each subcommand is a module exposing `HELP` (one line), `add_arguments(parser)` and
`run(args) -> int` (the process exit code). To add one (e.g. `kernels`, `suite`), write the
module and add it to SUBCOMMANDS; nothing else here changes.

Results: a subcommand with a `--json PATH` flag writes its results there; without the flag they
go to bench/results/<subcommand>-<host>-<threads>t.json under the repository root (this
source tree's root when the package runs from it, else the current directory), so that every
run leaves its numbers in one known place.
"""

from __future__ import annotations

import argparse
import importlib
import os
import socket
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
    "gpu_raw": ".gpu_raw",
    "matrix": ".matrix",
    "dynamic": ".dynamic",
    "zoo": ".zoo",
    "ab": ".ab",
    "compile_scaling": ".compile_scaling",
    "movement": ".movement",
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


def repo_root() -> str:
    """The source tree this package runs from (python/inductor_cpp/bench/ under it), else the
    current directory (an installed package has no repository)."""
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    if os.path.exists(os.path.join(root, "pyproject.toml")) and \
            os.path.isdir(os.path.join(root, "python", "inductor_cpp")):
        return root
    return os.getcwd()


def default_json_path(label: str, threads: int | str | None) -> str:
    """bench/results/<label>-<host>-<threads>t.json under repo_root()."""
    if threads is None:
        import torch

        threads = torch.get_num_threads()
    name = f"{label}-{socket.gethostname()}-{threads}t.json"
    return os.path.join(repo_root(), "bench", "results", name)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    module = _load(args.subcommand)
    if getattr(args, "json", "") is None:  # the subcommand writes JSON, and no path was given
        label, threads = (module.result_name(args) if hasattr(module, "result_name")
                          else (args.subcommand, getattr(args, "threads", None)))
        args.json = default_json_path(label, threads)
    return module.run(args)


if __name__ == "__main__":
    sys.exit(main())
