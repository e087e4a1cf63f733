"""What a report of a results folder lacks, and the command that makes it: a model none of whose runs is tested
(a folder of runs from `tnlib train`, which trains only), or none planned (`tnlib train` does not plan; a sweep
run with ``--no-plan`` did not). The reports put these lines where the table would be, so that an empty table
says what to run rather than nothing."""
from __future__ import annotations

import os
import shlex
from pathlib import Path

from tnlib.experiments.results_dir import ResultsDir
from tnlib.files import shown_path
from tnlib.learning.training import read_run_config

__all__ = ["runs_argument", "untested_note", "untested_notes", "unplanned_note"]

# Run folders named one by one in a command; more are named by a pattern.
RUNS_NAMED_IN_A_COMMAND = 4


def runs_argument(results_dir: Path, runs: list[Path], model: str | None = None) -> str:
    """The run folders as a command's arguments: each by name, or a shell pattern matching the model's runs (run
    folder names are DOMAIN-MODEL-...; no model: every run folder)."""
    if len(runs) <= RUNS_NAMED_IN_A_COMMAND:
        return " ".join(shlex.quote(shown_path(run)) for run in runs)
    return f"{shlex.quote(shown_path(results_dir))}/*" + (f"-{model}-*" if model else "")


def untested_note(results_dir: str | os.PathLike, model: str) -> str | None:
    """Where no run of ``model`` in the folder has test metrics (its table would be empty): which command writes
    them; None where one has, or the folder holds no run of the model."""
    results_dir = Path(results_dir)
    runs = [run for run in ResultsDir(results_dir).runs() if read_run_config(run).model == model]
    if not runs or any(run.metrics_file("test").is_file() for run in runs):
        return None
    return (f"No run of {model} here is tested yet ({len(runs)} trained): `tnlib evaluate "
            f"{runs_argument(results_dir, [run.path for run in runs], model)}` tests each on the test split "
            "(metrics-test.json in its folder); render the report again after it.")


def unplanned_note(results_dir: str | os.PathLike, model: str) -> str:
    """Why no run of ``model`` was planned and what plans them: a sweep's folder (``sweep.json``) was swept with
    ``--no-plan``; a folder of runs from `tnlib train` is not planned by any command over it -- a sweep trains,
    tests and plans its own grid."""
    results = ResultsDir(results_dir)
    if results.sweep_file.is_file():
        return (f"No run of {model} was planned (the sweep ran with `--no-plan`); `tnlib sweep` with the same "
                "settings, `--plan --trained-only` and the folder as `--out` plans them.")
    runs = [run for run in results.runs() if read_run_config(run).model == model]
    example = ""
    if runs:
        example = (f"; one problem is planned with a run by `tnlib plan {read_run_config(runs[0]).domain} PROBLEM.pddl "
                   f"--model {shlex.quote(shown_path(runs[0].path))}`")
    return (f"No run of {model} was planned: these runs come from `tnlib train`, which trains only, and Table 2 "
            "is made by a sweep, which trains, tests and plans its grid of runs -- e.g. `tnlib sweep --preset small "
            "--out runs/small` (the main job's grid; `--dry-run` shows it and its cost first)" + example + ".")


def untested_notes(results_dir: str | os.PathLike) -> list[str]:
    """:func:`untested_note` of every model with runs in the folder, for a command's output."""
    models = dict.fromkeys(read_run_config(run).model for run in ResultsDir(results_dir).runs())
    return [note for note in (untested_note(results_dir, model) for model in models if model) if note]
