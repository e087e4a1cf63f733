"""Pruning finished runs: their resume checkpoints removed, the rest kept.

A run folder keeps ``last.pt`` (weights, optimizer and sampler state: about 60% of an NLM run's bytes) so that an
interrupted run resumes; once a run has trained to its steps and been tested, only training it further would read
it. Committed results folders carry dozens of runs, and the tree a lent GPU machine receives is capped, so
:func:`prune_finished_runs` removes ``last.pt`` (and ``last-previous.pt``) from such runs and leaves
``pruned.json``, the step they finished at, in their place. Everything a report, a rerun check, an evaluation or a
planner reads stays (the best checkpoints, curves, metrics, planning records); a sweep run again over the folder
finds those runs finished (:func:`tnlib.learning.training.train` returns them untouched), and one that asks a
pruned run for more steps stops with an error saying to start it afresh.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from tnlib.files import atomic_write_json, locked
from tnlib.learning.checkpoints import read_checkpoint_file
from tnlib.learning.run_files import RunDir
from tnlib.learning.training import read_run_config


@dataclass(frozen=True)
class PrunedRun:
    """One run :func:`prune_finished_runs` pruned (or would, in a dry run): its folder, the step it finished at
    and the bytes its removed checkpoints held."""

    run: Path
    step: int
    freed_bytes: int


def _tested_with_last(run: RunDir) -> bool:
    """Whether ``run`` holds ``last.pt``, its configuration and its test metrics: a run still training has no test
    metrics yet (the files alone, nothing read)."""
    return run.last.is_file() and run.config_file.is_file() and run.metrics_file("test").is_file()


def finished_step(run: RunDir) -> int | None:
    """The step a run finished at when it can be pruned -- it holds ``last.pt`` at the steps its ``config.json``
    asked for and its test metrics -- else None (still training, interrupted, untested, already pruned)."""
    if not _tested_with_last(run):
        return None
    step = read_checkpoint_file(run.last, written_here=True)["step"]
    return step if step == read_run_config(run).steps else None


def prune_finished_runs(results: str | os.PathLike, dry_run: bool = False) -> list[PrunedRun]:
    """Remove the resume checkpoints of every finished run in a results folder (see the module docstring), each
    under its run's lock (a sweep working on it finishes first); ``dry_run``: only say which."""
    results = Path(results)
    if not results.is_dir():
        raise FileNotFoundError(f"no results folder {results}")
    pruned = []
    for folder in sorted(p for p in results.iterdir() if p.is_dir()):
        run = RunDir(folder)
        if not _tested_with_last(run):  # a run still training holds its lock for hours: not waited for
            continue
        with locked(run.lock_file, waiting=f"{run.name}: a sweep is working on it; waiting"):
            step = finished_step(run)
            if step is None:
                continue
            removed = [path for path in (run.last, run.last_previous, run.last_previous_link) if path.is_file()]
            pruned.append(PrunedRun(folder, step, sum(path.stat().st_size for path in removed)))
            if dry_run:
                continue
            # the record first: a prune cut short leaves last.pt beside it, which training reads as usual
            atomic_write_json(run.pruned_file, {"step": step})
            for path in removed:
                path.unlink()
    return pruned
