"""Which code made a record: the commit of tnlib's source, as run folders and reports name it.

A checkout answers with git. A source tree exported by ``git archive`` (the paper-scale campaign trains from one,
pinned to a commit while the checkout moves on) has no git: ``.gitattributes`` marks this file ``export-subst``, so
the archive carries its commit in :data:`ARCHIVED_COMMIT` below, in place of the placeholder a checkout keeps.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

ARCHIVED_COMMIT = "$Format:%h$"


def code_commit(package: str | os.PathLike | None = None) -> str:
    """The short commit of tnlib's source: an archive's own commit, or the checkout's followed by "with uncommitted
    changes to tnlib/" where the package's files differ from it (a record made by edited code does not claim a
    commit that would not make it); "unknown" outside both. ``package``: the package folder (default: this
    tnlib's)."""
    if package is None and not ARCHIVED_COMMIT.startswith("$Format"):
        return ARCHIVED_COMMIT
    package = Path(package) if package is not None else Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True,
                                cwd=package).stdout.strip()
        changed = subprocess.run(["git", "status", "--porcelain", "--", "."], capture_output=True, text=True,
                                 check=True, cwd=package).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{commit} with uncommitted changes to {package.name}/" if changed else commit


def same_commit(recorded: object, code: str) -> bool:
    """Whether ``recorded`` (a :func:`code_commit` as a record keeps it) is the commit ``code``, either abbreviated
    (as far as both go, at least 7 digits): not a code "with uncommitted changes", nor "unknown"."""
    hexadecimal = set("0123456789abcdef")
    if not isinstance(recorded, str) or min(len(recorded), len(code)) < 7 or not set(recorded) <= hexadecimal:
        return False
    return recorded.startswith(code) or code.startswith(recorded)
