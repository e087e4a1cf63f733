"""The `tnlib` command line.

Each pipeline stage that has a command exposes ``register(subparsers)`` in its own module; this file only
collects them, so adding a stage's command never touches another stage's code. A registered sub-parser sets
``func`` (called with the parsed arguments, returning an exit code).
"""
from __future__ import annotations

import argparse
import importlib
import sys

# Modules that contribute sub-commands, in the order `tnlib --help` lists them.
COMMAND_MODULES = [
    "tnlib.reproduce",
    "tnlib.generators",
    "tnlib.solve",
    "tnlib.search",
    "tnlib.heuristics",
    "tnlib.plans",
    "tnlib.datasets",
    "tnlib.experiments",
    "tnlib.training",
    "tnlib.accuracy",
]


class CommandError(Exception):
    """A user error worth one clear line on stderr and exit code 2, not a traceback."""


def build_parser() -> argparse.ArgumentParser:
    from tnlib import __version__

    parser = argparse.ArgumentParser(
        prog="tnlib",
        description="Learning planning heuristics with Truncated Gaussians.",
    )
    parser.add_argument("--version", action="version", version=f"tnlib {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except CommandError as err:
        print(f"tnlib {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"tnlib {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
