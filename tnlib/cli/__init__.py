"""The `tnlib` command line.

Every command lives in this package, one module per pipeline stage (``planning``, ``data``, ``learning``,
``experiments``); the library modules hold no argument parsing. Each module's ``REGISTER`` maps its commands to
functions that add them to the sub-parsers; a registered sub-parser sets ``func`` (called with the parsed
arguments, returning an exit code). ``CommandError`` (and the library's own errors, which the commands turn into
it) prints one line on stderr and exits with 2, and so do a damaged file, a missing or inconsistent dataset (their
messages say what to do, whichever command meets them) and an ``OSError`` (an output path that is a folder or
cannot be written); output piped into a reader that stops early (``| head``) ends the command quietly.

Modules are imported only for the command being run (``COMMANDS`` maps each command to its module and a
one-line help for ``tnlib --help``), so that e.g. ``tnlib plan`` starts without importing torch.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib
import sys

from tnlib.errors import CommandError, DamagedFile, DatasetError

# command -> (module that registers it, help line), in the order `tnlib --help` lists them
COMMANDS: dict[str, tuple[str, str]] = {
    "reproduce": ("tnlib.cli.experiments", "the main job: rebuild its reports on the small embedded default"),
    "generate": ("tnlib.cli.planning", "generate a problem instance of a shipped domain"),
    "solve": ("tnlib.cli.planning", "solve a problem optimally with Fast Downward (A* + LM-cut)"),
    "plan": ("tnlib.cli.planning", "plan with GBFS and a symbolic heuristic or a trained model"),
    "heuristics": ("tnlib.cli.planning", "heuristic values of the initial state and the states along a plan"),
    "validate": ("tnlib.cli.planning", "check a plan: whether and why it fails"),
    "data": ("tnlib.cli.data", "generate, verify and describe datasets"),
    "train": ("tnlib.cli.learning", "train a heuristic model (NLM, STRIPS-HGN, linear, WL) by its NLL"),
    "evaluate": ("tnlib.cli.learning", "test metrics of trained models and the Table 1 layout"),
    "sweep": ("tnlib.cli.experiments", "train, evaluate and plan over a grid of configurations"),
    "report": ("tnlib.cli.experiments", "render a results folder's reports (Tables 1 and 2, curves, Figure 2)"),
    "intervals": ("tnlib.cli.experiments", "draw a rendered report's paired intervals from its per-seed CSVs"),
    "findings": ("tnlib.cli.experiments", "write a rendered report's findings from its per-seed CSVs"),
    "baselines": ("tnlib.cli.experiments", "GBFS with symbolic heuristics on a dataset's plan sets (Table 2's h_FF)"),
    "handout": ("tnlib.cli.experiments", "a student copy of a teaching notebook: solutions left out, no outputs"),
    "rerun-check": ("tnlib.cli.experiments", "rerun a subset of a committed report: does the code still make it?"),
    "prune": ("tnlib.cli.experiments", "remove the resume checkpoints of a results folder's finished runs"),
    "export-records": ("tnlib.cli.experiments", "copy a results folder's records without its weights, to commit"),
}
COMMAND_MODULES = list(dict.fromkeys(module for module, _ in COMMANDS.values()))

__all__ = ["COMMANDS", "CommandError", "build_parser", "main"]


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
        importlib.import_module(COMMANDS[command][0]).REGISTER[command](subparsers)
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
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside the try, not at the interpreter's exit
        return code
    except BrokenPipeError:
        return _reader_went_away()
    except (CommandError, DamagedFile, DatasetError) as err:
        print(f"tnlib {args.command}: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # an unwritable output path, a full disk, ...: the system's words, not a traceback
        print(f"tnlib {args.command}: error: {os_error_line(err)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"tnlib {args.command}: interrupted", file=sys.stderr)
        return 130


def os_error_line(err: OSError) -> str:
    """An OSError as one line: the path, the system's words and what to do where the cause is a path given (a
    file where a folder goes, a place nobody may write to) or a full disk."""
    import errno

    where = f"{err.filename}: " if err.filename else ""
    line = f"{where}{err.strerror or err}"
    if err.errno in (errno.EEXIST, errno.ENOTDIR) and err.filename:
        return line + "; a file stands where a folder goes: name another folder for the output, or move that file"
    if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS) and err.filename:
        return line + "; name an output folder under one you can write to"
    if err.errno == errno.ENOSPC:
        return line + "; the disk is full: free space and run the command again (it goes on where it stopped)"
    return line


def _reader_went_away() -> int:
    """Output piped into a reader that stopped reading (``tnlib ... | head``): stop quietly, as Unix tools do.
    stdout is pointed at /dev/null so that Python's own flush at exit does not report the closed pipe again; the
    exit status is a shell's for a command killed by SIGPIPE (128 + 13)."""
    import os

    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 141


if __name__ == "__main__":
    raise SystemExit(main())
