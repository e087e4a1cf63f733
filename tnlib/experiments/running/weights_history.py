"""Run weights kept in git's history rather than its tree.

A results folder committed so that its runs resume in a new checkout (the paper-scale campaign's) grows by a
checkpoint pair (``best.pt``, ``best-nll.pt``) a run, more than the tracked tree has room for. The snapshot commits
the weights once, in a commit of their own, and then takes them out of the tree (``.gitignore`` keeps them out
after that): the machine that trains keeps its files, and any other checkout gets them back from history with
:func:`restore_weights` before it resumes, plans or calibrates. Reports never read the weights, so a fresh clone
renders without them.
"""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from tnlib.files import atomic_write_bytes
from tnlib.learning.run_files import RunDir

__all__ = ["WEIGHT_FILES", "WeightsRestored", "restore_weights"]

#: The checkpoints a run keeps for good (the resume checkpoint ``last.pt`` stays in the tree while a run trains).
WEIGHT_FILES = (RunDir.BEST, RunDir.BEST_NLL)


@dataclass
class WeightsRestored:
    """What :func:`restore_weights` did: files written from history, files already there, and files of runs that
    have a checkpoint nowhere in history (trained after the last snapshot on another machine); ``exported``: the
    run folders that hold exported records (``tnlib export-records``), which keep no weights by design."""

    written: list[Path] = field(default_factory=list)
    present: list[Path] = field(default_factory=list)
    not_in_history: list[Path] = field(default_factory=list)
    exported: list[Path] = field(default_factory=list)


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, check=False)


def _repository_root(folder: Path) -> Path:
    found = _git(folder, "rev-parse", "--show-toplevel")
    if found.returncode != 0:
        raise ValueError(f"{folder} is not inside a git checkout: its runs' weights live in git's history")
    return Path(os.fsdecode(found.stdout.strip()))


def _blob_from_history(repo: Path, path: str) -> bytes | None:
    """The newest committed content of ``path`` (repository-relative), also after a commit took it out of the
    tree: the last commit that touched it either holds it or removed it, and then its parent held it."""
    last = _git(repo, "log", "-1", "--format=%H", "--", path)
    commit = last.stdout.decode().strip()
    if last.returncode != 0 or not commit:
        return None
    for revision in (commit, f"{commit}^"):
        blob = _git(repo, "show", f"{revision}:{path}")
        if blob.returncode == 0:
            return blob.stdout
    return None


def restore_weights(results: str | os.PathLike, dry_run: bool = False) -> WeightsRestored:
    """Write back from git's history every weight file (:data:`WEIGHT_FILES`) missing from the run folders of
    ``results`` that have one in history; files on disk are left as they are. ``dry_run``: only say which."""
    results = Path(results).resolve()
    if not results.is_dir():
        raise FileNotFoundError(f"no results folder {results}")
    repo = _repository_root(results)
    restored = WeightsRestored()
    for folder in sorted(p for p in results.iterdir() if p.is_dir()):
        run = RunDir(folder)
        if not run.config_file.is_file():
            continue  # not a run folder (a plan set's sub-folder, a baseline's)
        if run.curves_file != run.training_curves_file:  # its curve only as exported records hold it
            restored.exported.append(folder)
            continue
        for name in WEIGHT_FILES:
            path = folder / name
            if path.is_file():
                restored.present.append(path)
                continue
            blob = _blob_from_history(repo, path.relative_to(repo).as_posix())
            if blob is None:
                if RunDir(folder).metrics_file("test").is_file():  # a run not tested may have no weights yet
                    restored.not_in_history.append(path)
                continue
            if not dry_run:
                atomic_write_bytes(path, blob)
            restored.written.append(path)
    return restored
