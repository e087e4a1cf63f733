"""The `tnlib` command line.

Every command lives in this package, one module per pipeline stage (``planning``, ``data``, ``learning``,
``experiments``); the library modules hold no argument parsing. Each module's ``REGISTER`` maps its commands to
functions that add them to the sub-parsers; a registered sub-parser sets ``func`` (called with the parsed
arguments, returning an exit code). ``CommandError`` (and the library's own errors, which the commands turn into
it) prints one line on stderr and exits with 2, and so do a damaged file, a missing or inconsistent dataset (their
messages say what to do, whichever command meets them) and an ``OSError`` (an output path that is a folder or
cannot be written); output piped into a reader that stops early (``| head``) ends the command quietly. A command
declares the paths it writes (:func:`declare_outputs`), and :func:`main` checks each can be made before any work
starts (:func:`check_output_path`): a file where a folder goes, a folder where a file goes, or a place nothing can
be created in (``/proc``, a read-only disk) is one line naming the flag and the path.

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
    "restore-weights": ("tnlib.cli.experiments", "write back from git's history the run weights a checkout lacks"),
    "adopt-runs": ("tnlib.cli.experiments", "take into a results folder the tested runs a lent machine sent back"),
    "cluster-check": ("tnlib.cli.experiments", "ask a Dask cluster's workers what a sweep sent there would train with"),
}

__all__ = ["COMMANDS", "CommandError", "build_parser", "check_output_path", "declare_outputs", "main"]

# The remedy for a path that runs through a file where a folder goes, said the same by the check before the command
# and by the handler of an OSError during it.
FILE_FOR_FOLDER = "a file stands where a folder goes: name another folder for the output, or move that file"


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
        for dest, kind in getattr(args, "output_paths", {}).items():
            if getattr(args, dest, None) is not None:
                check_output_path(getattr(args, dest), kind, _flag_of(parser, dest))
        code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside the try, not at the interpreter's exit
        return code
    except BrokenPipeError:
        return _reader_went_away()
    except (CommandError, DamagedFile, DatasetError) as err:
        print(f"tnlib {args.command}: error: {err}", file=sys.stderr)
        return 2
    except OSError as err:  # an unwritable output path, a full disk, ...: the system's words, not a traceback
        outputs = [getattr(args, dest) for dest in getattr(args, "output_paths", {}) if getattr(args, dest, None)]
        print(f"tnlib {args.command}: error: {os_error_line(err, outputs)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"tnlib {args.command}: interrupted", file=sys.stderr)
        return 130


def declare_outputs(parser: argparse.ArgumentParser, **outputs: str) -> None:
    """Mark arguments of ``parser`` (``dest="folder"`` or ``dest="file"``) as paths the command writes, which
    :func:`main` checks with :func:`check_output_path` before the command starts (an argument left at None, e.g. a
    default the command fills in, is not checked)."""
    parser.set_defaults(output_paths=outputs)


def check_output_path(path, kind: str, flag: str) -> None:
    """A CommandError naming ``flag`` and ``path`` where the ``kind`` ("folder" or "file") of output cannot be made
    there: the path, or a folder on the way to it, is a file where a folder goes; a file output names a folder; or
    the nearest existing folder takes no new file. The last is tried by making (and removing) an empty hidden file
    there, since a permission check does not tell: root may "write" to ``/proc``, where making anything fails with
    "No such file or directory". The output itself is not made, so a command that stops on another error leaves
    nothing behind."""
    import os
    import tempfile
    from pathlib import Path

    path = Path(path)
    if kind == "file" and path.is_dir():
        raise CommandError(f"{flag} {path}: is a folder; name a file to write")
    existing = path if kind == "folder" else path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        which = "" if existing == path else f"{existing} "
        raise CommandError(f"{flag} {path}: {which}is a file; {FILE_FOR_FOLDER}")
    try:
        handle, probe = tempfile.mkstemp(dir=existing, prefix=".tnlib-write-check-")
    except OSError as err:
        raise CommandError(f"{flag} {path}: nothing can be made in {existing} ({err.strerror}; a system folder such "
                           f"as /proc, a read-only disk or another user's folder): name an output {kind} under a "
                           "folder you can write to") from None
    os.close(handle)
    os.unlink(probe)


def _flag_of(parser: argparse.ArgumentParser, dest: str) -> str:
    """The option string the user typed for ``dest`` (``--out``, ``-o/--output``: the long one), found in the
    command's sub-parser or its own sub-commands' (``tnlib data generate``)."""
    stack = [parser]
    while stack:
        current = stack.pop()
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack.extend(action.choices.values())
            elif action.dest == dest and action.option_strings:
                return max(action.option_strings, key=len)
    return dest


def os_error_line(err: OSError, outputs=()) -> str:
    """An OSError as one line: the path, the system's words and what to do where the cause is a path given (a
    file where a folder goes, a place nobody may write to, a place where nothing can be made, e.g. under /proc,
    for a path inside one of the command's ``outputs``) or a full disk."""
    import errno
    from pathlib import Path

    where = f"{err.filename}: " if err.filename else ""
    line = f"{where}{err.strerror or err}"
    if err.errno in (errno.EEXIST, errno.ENOTDIR) and err.filename:
        return f"{line}; {FILE_FOR_FOLDER}"
    if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS) and err.filename:
        return line + "; name an output folder under one you can write to"
    if err.errno == errno.ENOENT and err.filename and any(
            Path(str(err.filename)).is_relative_to(Path(str(out))) for out in outputs):
        return line + " (it could not be made there); name an output folder under one you can write to"
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
