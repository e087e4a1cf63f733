"""The records of a results folder that lost lines, and what each loss costs a report built from them.

Every JSON-lines record tnlib writes (a run's ``curves.jsonl`` and ``machines.jsonl``, its planning records, the
h_FF baseline records) is read line by line, and a line that is not JSON is skipped: the rest still stands. A
report built without it must not pass for one built from the whole record, so :func:`damaged_records` names each
such file, what the report lost with it and what restores it; the reports list these lines in their header and
``tnlib report`` prints them.

How an interrupted record is told from a damaged one:

- *A run's curve.* Each validation record is on disk before the checkpoints of its step (training fsyncs it
  first), so a run holds the record of every validation step up to its last checkpoint. A line cut past that
  checkpoint is what training stopped mid-write leaves, and resuming writes it again: no loss. A step at or before
  the last checkpoint without its record -- a line unreadable, or the file cut or rewritten without it -- is
  damage: the weights it measured are gone, and only training the run again restores it. (A gap between records
  that read, with no line unreadable, is one a resumed training dropped and said so when it did.)
- *Planning and baseline records.* A planner stopped mid-write leaves its last line cut short; so does a copy cut
  short, and the bytes cannot tell the two apart. Either way the instance on that line (and any after it) is not
  planned, and the one remedy holds for both: the command that planned the file plans what is missing. A line
  unreadable with whole lines after it is damage (a resumed planner rewrites the file without a cut line).
"""
from __future__ import annotations

import os
from pathlib import Path

from tnlib.errors import DamagedFile
from tnlib.experiments.results_dir import ResultsDir
from tnlib.files import JsonLines, read_json_lines, shown_path
from tnlib.learning.run_files import RunDir
from tnlib.learning.training import TrainConfig, read_run_config

# Where a committed results folder's records come back from at once: git, before hours of training or planning.
FROM_GIT = "where the folder is committed, `git checkout` of the file restores it"
# What restores a run's lost validation records otherwise: its weights at those steps are gone.
RETRAIN_REMEDY = (f"{FROM_GIT}; else delete the run folder and run its sweep again to restore them (the same settings "
                  "and seed train the same weights)")
# What restores a planning or baseline record's lost lines otherwise.
REPLAN_REMEDY = (f"{FROM_GIT}; else run the command that planned it again (the sweep that made the folder): it plans "
                 "what is missing")


def _checkpoint_step(run: RunDir) -> int:
    """The step of a run's resume checkpoint (0 when it has none that reads): every validation record up to it was
    written before it."""
    from tnlib.learning.checkpoints import read_checkpoint_file

    for path in (run.last, run.last_previous):
        if path.is_file():
            try:
                return int(read_checkpoint_file(path, written_here=True)["step"])
            except (DamagedFile, OSError, ValueError, KeyError):
                continue
    return 0


def run_curve(run: RunDir, config: TrainConfig) -> tuple[list[dict], int, JsonLines, list[int]]:
    """A run's validation records, the step it trained to, its curves file as read and the validation steps up to
    its last checkpoint whose records are missing (lost: see the module docstring). The checkpoint is read only
    where the curve stops short of the configured steps or lost a line, so a finished run's report reads no
    weights."""
    found = read_json_lines(run.curves_file)
    curve = [row for row in found.records if "val_mse" in row]
    steps = {int(row["step"]) for row in curve}
    trained = max(steps, default=0)
    if trained < config.steps or found.unreadable:
        trained = max(trained, _checkpoint_step(run))
    # Lost: the validation steps after the last record that reads, up to the checkpoint. A gap between records
    # that read is not counted: training rewrites the curve without a lost record when it resumes, and says so
    # then; the end of a curve is what a report's steps trained and still-improving counts read.
    every, last_read = config.eval_every, max(steps, default=0)
    expected = set(range(every, trained + 1, every))
    if trained == config.steps and trained:
        expected.add(trained)  # the last step is always validated
    lost = sorted(step for step in expected - steps if step > last_read)
    if found.unreadable and not found.cut_end:  # a line unreadable among whole ones: its step is within the curve
        lost = sorted(set(lost) | {step for step in expected - steps if step <= last_read})
    return curve, trained, found, lost


def _curve_line(run: RunDir, config: TrainConfig) -> str | None:
    if not run.curves_file.is_file() and run.metrics_file("test").is_file():
        # A tested run validated at least once: its curve cannot be empty, only gone.
        return (f"missing from a tested run, so the training-curve figures and this header's steps trained and "
                f"still-improving counts read without it -- {RETRAIN_REMEDY}")
    _, _, found, lost = run_curve(run, config)
    if lost:
        shown = ", ".join(map(str, lost[:8])) + (f" and {len(lost) - 8} more" if len(lost) > 8 else "")
        what = (found.damage() + "; " if found.unreadable else "")
        return (f"{what}the validation records of steps {shown} are missing, so the training-curve figures "
                f"and this header's steps trained and still-improving counts read without them -- {RETRAIN_REMEDY}")
    if found.unreadable and not found.cut_end:
        return f"{found.damage()} (records past the last checkpoint: training the run on writes them again)"
    if found.unreadable:
        return (f"{found.damage()}, as training stopped mid-write leaves it; that record is written again "
                f"when the run trains on (run its sweep again), and a run that has finished trains no more: {FROM_GIT}")
    return None


def _planning_line(path: Path, baseline: bool) -> str | None:
    found = read_json_lines(path)
    if not found.unreadable:
        return None
    how = (", as a planner stopped mid-write leaves it (or a copy cut short)" if found.cut_end
           and len(found.unreadable) == 1 else "")
    cost = ("the h_FF column and this header's h_FF solves count" if baseline else "its run's planning counts")
    count = len(found.records)
    return (f"{found.damage()}{how}; {cost} the {count} instance{'' if count == 1 else 's'} still readable -- "
            f"{REPLAN_REMEDY}")


def damaged_records(results_dir: str | os.PathLike, runs: list[tuple[RunDir, TrainConfig]] | None = None) -> list[
        tuple[Path, str]]:
    """(file, what) for each record of ``results_dir`` that lost lines (see the module docstring): what is lost,
    what it costs the report and what restores it. ``runs``: the (run folder, configuration) pairs the report
    reads (default: every run folder whose configuration reads)."""
    results = ResultsDir(results_dir)
    if runs is None:
        runs = []
        for run in results.runs():
            try:
                runs.append((run, read_run_config(run)))
            except (DamagedFile, OSError, ValueError):
                continue  # (the report names a damaged configuration itself, and stops)
    found: list[tuple[Path, str | None]] = [(run.curves_file, _curve_line(run, config)) for run, config in runs]
    for run, _ in runs:
        damage = read_json_lines(run.machines_file).damage()
        found.append((run.machines_file, damage and f"{damage}; the header's hardware line reads without the start "
                                                    "of training it held"))
    planned_on = results.planned_on()
    found += [(path, _planning_line(path, False)) for path in results.planning_files(planned_on)]
    found += [(path, _planning_line(path, True)) for path in results.baseline_files("ff", planned_on).values()]
    return [(path, what) for path, what in found if what is not None]


def damaged_records_items(results_dir: str | os.PathLike, runs: list[tuple[RunDir, TrainConfig]] | None = None) -> list[
        str]:
    """:func:`damaged_records` as the report header lists them: each file named within the results folder."""
    return [f"`{Path(path).relative_to(results_dir).as_posix()}`: {what}"
            for path, what in damaged_records(results_dir, runs)]


def damaged_records_notice(results_dir: str | os.PathLike) -> list[str]:
    """:func:`damaged_records` as a command prints them: one line each, the file named by its path."""
    return [f"{shown_path(path)} is damaged: {what}" for path, what in damaged_records(results_dir)]
