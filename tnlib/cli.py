"""The `tnlib` command line.

Each pipeline stage that has a command exposes ``register(subparsers)`` in its own module; this file only
collects them, so adding a stage's command never touches another stage's code. A registered sub-parser sets
``func`` (called with the parsed arguments, returning an exit code).

Modules are imported only for the command being run (``COMMANDS`` maps each command to its module and a
one-line help for ``tnlib --help``), so that e.g. ``tnlib plan`` starts without importing torch.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# command -> (module that registers it, help line), in the order `tnlib --help` lists them
COMMANDS: dict[str, tuple[str, str]] = {
    "reproduce": ("tnlib.experiments.reproduce", "regenerate reports/ on the small embedded default (the main job)"),
    "generate": ("tnlib.planning.generators", "generate a problem instance of a shipped domain"),
    "solve": ("tnlib.planning.fast_downward", "solve a problem optimally with Fast Downward (A* + LM-cut)"),
    "plan": ("tnlib.planning.search", "plan with GBFS and a symbolic heuristic"),
    "heuristics": ("tnlib.planning.heuristics", "heuristic values of the initial state and the states along a plan"),
    "validate": ("tnlib.planning.plans", "check a plan: whether and why it fails"),
    "data": ("tnlib.data.generation", "generate, verify and describe datasets"),
    "train": ("tnlib.learning.training", "train a heuristic model (NLM, STRIPS-HGN, linear) by its NLL"),
    "evaluate": ("tnlib.learning.evaluation", "test metrics of trained models and the Table 1 layout"),
    "sweep": ("tnlib.experiments.sweep", "train, evaluate and plan over a grid of configurations"),
}
COMMAND_MODULES = list(dict.fromkeys(module for module, _ in COMMANDS.values()))


from tnlib.errors import CommandError  # noqa: E402


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``command`` given, only that command's module is imported and registers it in full."""
    from tnlib import __version__

    parser = argparse.ArgumentParser(
        prog="tnlib",
        description="Learning planning heuristics with Truncated Gaussians.",
    )
    parser.add_argument("--version", action="version", version=f"tnlib {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    if command in COMMANDS:
        importlib.import_module(COMMANDS[command][0]).register(subparsers)
    else:
        for name, (_, help_line) in COMMANDS.items():
            subparsers.add_parser(name, help=help_line)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(command)
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
