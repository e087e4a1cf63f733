"""A run's checkpoint files: written whole or not at all, checked before torch reads them, and the resume
checkpoint kept with the one before it.

A checkpoint is a ``torch.save`` dict of format :data:`CHECKPOINT_FORMAT` (:mod:`tnlib.learning.training` says what
it holds and writes them): ``best.pt`` and ``best-nll.pt`` by :func:`save_checkpoint`, ``last.pt`` by
:func:`save_resume_checkpoint`, which keeps the previous one as ``last-previous.pt``. :func:`read_checkpoint_file`
checks a file's zip checksums before loading it (torch does not), and :func:`read_resume_checkpoint` picks the
newest readable resume checkpoint of a run.
"""
from __future__ import annotations

import io
import os
import sys
import zipfile
from pathlib import Path

import torch

from tnlib.errors import DamagedFile
from tnlib.files import atomic_write_bytes, damaged_message, shown_path
from tnlib.learning.run_files import RunDir

CHECKPOINT_FORMAT = "tnlib-checkpoint-1"


def _checkpoint_bytes(obj: dict) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def save_checkpoint(obj: dict, path: Path) -> None:
    """A checkpoint written atomically: a crash never leaves a half-written file."""
    atomic_write_bytes(path, _checkpoint_bytes(obj))


def save_resume_checkpoint(obj: dict, run: RunDir) -> None:
    """The resume checkpoint, the one before it kept as ``last-previous.pt``: a last.pt damaged after it was written
    (a full disk, a copy cut short) then costs the steps since the previous one, not the run.

    last.pt is never missing once written: last-previous.pt becomes a second name (a hard link) of the old last.pt
    while it stays in place, then the new one replaces it atomically, so a process killed at any moment leaves a
    last.pt, old or new (where the filesystem has no hard links the old one is moved, and a kill between the two
    renames leaves only last-previous.pt, which the resume reads too)."""
    data = _checkpoint_bytes(obj)  # before touching the files: the slow part is no window in which one is missing
    if run.last.is_file():
        try:
            run.last_previous_link.unlink(missing_ok=True)
            os.link(run.last, run.last_previous_link)
            os.replace(run.last_previous_link, run.last_previous)
            # rename() does nothing when both names are already the same file (a save stopped after this step)
            run.last_previous_link.unlink(missing_ok=True)
        except OSError:
            os.replace(run.last, run.last_previous)
    atomic_write_bytes(run.last, data)


def _load_checkpoint_file(path: Path) -> tuple[dict | None, str, bool]:
    """``(checkpoint, "", False)``, or ``(None, why not, damaged)``: ``damaged`` when the file is a zip archive whose
    contents changed, not a file that is no checkpoint at all (cut short, or of another kind)."""
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
    except zipfile.BadZipFile as err:
        return None, f"not a complete zip archive ({err}): cut short, or another kind of file", False
    except Exception as err:  # noqa: BLE001 - a zip directory with changed bytes fails in many ways
        return None, f"its zip directory is unreadable ({type(err).__name__}: {err})", True
    if bad is not None:
        return None, f"its part {bad} fails its checksum", True
    try:
        return torch.load(path, map_location="cpu", weights_only=False), "", False
    except Exception as err:  # noqa: BLE001 - unpickling a foreign file raises anything (UnpicklingError, EOFError, ...)
        text = str(err).strip()
        return None, f"torch cannot load it ({text.splitlines()[0] if text else type(err).__name__})", False


# What restores a run's damaged weights: git, where the run was committed (its tree or its history), before the
# hours of training it again.
DAMAGED_WEIGHTS_REMEDY = ("restore it from git if the run was committed (`git checkout -- {path}` where git tracks the "
                          "file; else delete it and run `tnlib restore-weights` on the results folder, which writes "
                          "back weights kept in git's history), otherwise delete the run folder and train it again "
                          "(the same settings and seed train the same weights)")


def read_checkpoint_file(path: Path, written_here: bool = False) -> dict:
    """``torch.load`` of a checkpoint file after checking it. A checkpoint is a zip archive whose parts carry CRC-32s,
    which torch does not check (bytes flipped in a tensor load silently as other weights), so they are checked
    first: a :class:`DamagedFile` for a checkpoint whose contents changed -- or, with ``written_here`` (a run
    folder's own checkpoint, not a path a user gave), for any that cannot be read -- else a ValueError for a file
    that is not one."""
    checkpoint, reason, damaged = _load_checkpoint_file(path)
    if damaged or (checkpoint is None and written_here):
        raise DamagedFile(damaged_message(path, reason, DAMAGED_WEIGHTS_REMEDY.format(path=path)), path, reason)
    if checkpoint is None:
        # a user's path: another kind of file, or a run's checkpoint cut short (a copy, a full disk)
        in_a_run = (path.parent / "config.json").is_file()
        remedy = ("it sits in a run folder, so it is that run's checkpoint cut short: "
                  + DAMAGED_WEIGHTS_REMEDY.format(path=path) if in_a_run else
                  "give a checkpoint a run folder holds (best.pt, best-nll.pt or last.pt)")
        raise ValueError(f"{shown_path(path)}: not a tnlib checkpoint ({reason}); {remedy}")
    return checkpoint



def read_resume_checkpoint(run: RunDir) -> dict | None:
    """The newest readable resume checkpoint of ``run`` (last.pt, else last-previous.pt), or None when
    the run has neither. A damaged last.pt with a readable previous one is said on stderr and skipped; with none,
    a DamagedFile says what to do."""
    damaged = []
    for path in (run.last, run.last_previous):
        if not path.is_file():
            continue
        checkpoint, reason, _ = _load_checkpoint_file(path)
        if checkpoint is None:
            damaged.append((path, reason))
            continue
        if not (isinstance(checkpoint, dict) and checkpoint.get("format") == CHECKPOINT_FORMAT
                and "optimizer" in checkpoint):
            damaged.append((path, "not a tnlib resume checkpoint"))
            continue
        if damaged:
            instead = f"resuming from {shown_path(path)} instead (the steps since it are trained again)"
            print(damaged_message(*damaged[0], instead), file=sys.stderr)
            os.replace(path, run.last)  # the good one becomes last.pt: the next checkpoint keeps it as the previous
        return checkpoint
    if damaged:
        path, reason = damaged[0]
        remedy = "delete it (and last-previous.pt) to train the run from step 0, or restore it from a copy"
        raise DamagedFile(damaged_message(path, reason, remedy), path, reason)
    return None
