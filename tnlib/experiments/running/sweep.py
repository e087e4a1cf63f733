"""Sweeps: train, evaluate and plan over domains x models x configurations x seeds, locally or on Dask.

A :class:`tnlib.experiments.sweep_settings.Sweep` names the grid; :func:`run_sweep` runs each cell -- ``train``
(resumes from ``last.pt``), ``evaluate_run`` on the test split (``metrics-test.json``), then GBFS over the plan split
(``planning-*.jsonl``, resumable) -- plus the h_FF planning baseline per domain. Every stage skips what an earlier,
interrupted run already finished, so rerunning the same sweep picks up where it stopped. Cells run one after the
other by default, on a local process pool with ``workers > 1``, or on a Dask cluster with ``scheduler`` (the
address of a running ``distributed`` scheduler); results land in ``out_dir`` either way (a shared filesystem on
a cluster). The results folder's ``sweep.json`` records the sweep (:func:`write_sweep_file`).
"""
from __future__ import annotations

import contextlib
import functools
import json
import sys
from dataclasses import replace
from pathlib import Path

from tnlib.data.schema import MANIFEST
from tnlib.errors import DamagedFile, DatasetError, MissingRuns
from tnlib.executors import run_jobs
from tnlib.experiments.results_dir import ResultsDir
from tnlib.experiments.running.cell_settings import CellSettings
from tnlib.experiments.running.cluster_workers import check_cluster_for_sweep
from tnlib.experiments.running.sweep_standing import count_phrase, finished_runs
from tnlib.experiments.sweep_settings import GRID_AXES, Sweep
from tnlib.files import atomic_write_text, locked, locked_if_free, shown_path
from tnlib.learning.run_files import baseline_file
from tnlib.paper import BASELINE_HEURISTIC, DISTRIBUTIONS, DOMAINS
from tnlib.progress import progress as progress_display, say_done


def cell_settings(sweep: Sweep) -> CellSettings:
    """What each cell of the sweep does besides training its configuration (passed with it to run_cell)."""
    return CellSettings(max_steps=sweep.max_steps, extend_steps=sweep.extend_steps, plan=sweep.plan,
                        plan_on=sweep.plan_on, plan_per_cell=sweep.plan_per_cell,
                        plan_instances=sweep.plan_instances, search=sweep.search_settings)


def check_results(sweep: Sweep) -> Path:
    """The sweep's results folder, after checking that it holds at least one of its runs with test metrics (what
    the tables read): a :class:`tnlib.errors.MissingRuns` saying how to make them when it holds none (runs/ is not
    in git, so a fresh clone has none)."""
    out = Path(sweep.out_dir)
    folders = [sweep.run_folder(config) for config in sweep.train_configs()]
    if any(run.metrics_file("test").is_file() for run in folders):
        return out
    how = "set run = True to train them (papermill: -p run True)"
    if sweep.matching_preset() == "small":
        how += ", or run `make reproduce` (it trains the small preset into runs/small)"
    raise MissingRuns(f"{out} holds none of this sweep's {count_phrase(folders, 'run')} (no run folder with test "
                      f"metrics; runs are not in git, a fresh clone has none): {how}")


def run_baselines(sweep: Sweep) -> None:
    """The h_FF baseline of every domain, each under a lock beside its file, as the runs are: sweeps side by side
    over one folder reach this together at their end, and without it each would plan every instance (each
    appending its own records). A domain another process holds is done after the others, then waited for and
    found planned."""
    from tnlib.learning.split_planning import plan_baseline

    out_dir = ResultsDir(sweep.out_dir).baseline_folder(sweep.plan_on)

    def plan(domain: str) -> None:
        plan_baseline(sweep.dataset_path(), domain, BASELINE_HEURISTIC, out_dir=out_dir, split=sweep.plan_on,
                      settings=sweep.search_settings, instances=sweep.plan_instances, per_cell=sweep.plan_per_cell)

    busy = []
    for domain in sweep.domains:
        with locked_if_free(baseline_lock(out_dir, domain)) as free:
            if free:
                plan(domain)
                continue
        print(f"h_FF baseline of {domain}: another process is planning it; coming back to it after the others",
              file=sys.stderr, flush=True)
        busy.append(domain)
    for domain in busy:
        with locked(baseline_lock(out_dir, domain),
                    waiting=f"h_FF baseline of {domain}: another process is planning it; waiting for it to finish"):
            plan(domain)


def baseline_lock(out_dir: Path, domain: str) -> Path:
    """The lock a sweep holds while it plans ``domain``'s h_FF baseline into ``out_dir``."""
    return out_dir / f".{baseline_file(out_dir, domain, BASELINE_HEURISTIC).name}.lock"


# Settings of one process, not of the results: parts of one sweep may differ in them (two training processes with
# --no-plan beside one planning the trained runs with --plan --trained-only).
PROCESS_SETTINGS = ("workers", "plan")


def write_sweep_file(sweep: Sweep) -> dict:
    """Write the results folder's ``sweep.json`` (:meth:`Sweep.to_record`) and return what it holds. A sweep may be
    split along its grid's axes (:data:`tnlib.experiments.sweep_settings.GRID_AXES`) into one results folder --
    across processes or sessions (``--domains ferry`` here, ``--domains gripper`` there, or training in one process
    and planning in another): where the folder already holds a sweep that differs from this one only along them
    (:data:`PROCESS_SETTINGS` aside), the file names the union of the two grids, the sweep described whole; any
    other difference (steps, data, bounds, the planning settings) replaces it."""
    results = ResultsDir(sweep.out_dir)
    path = results.sweep_file
    record = sweep.to_record()
    canonical = {"domains": list(DOMAINS), "distributions": list(DISTRIBUTIONS)}
    with locked(path.with_name(f".{path.name}.lock")):  # parts starting side by side read and write in turn
        try:
            previous = results.read_sweep()
        except DamagedFile:  # what it held is rebuilt below from this sweep's own settings
            previous = None
        previous = None if previous is None else previous.to_record()
        same_sweep = previous is not None and all(
            previous[k] == record[k] for k in record if k not in GRID_AXES and k not in PROCESS_SETTINGS)
        if same_sweep:  # some part of the folder's sweep planned: its planning settings describe the results
            record["plan"] = bool(previous["plan"] or record["plan"])
        for axis in GRID_AXES if same_sweep else ():
            union = previous[axis] + [v for v in record[axis] if v not in previous[axis]]
            if axis == "seeds":
                union.sort()
            elif axis in canonical and set(union) <= set(canonical[axis]):
                union.sort(key=canonical[axis].index)
            record[axis] = union
        atomic_write_text(path, json.dumps(record, indent=2) + "\n")
    return record


SWEEP_LINE_INTERVAL_S = 10.0


def recorded_summaries(sweep: Sweep, configs: list, settings: CellSettings) -> dict[str, dict]:
    """``{run: summary}`` of the ``configs`` whose records say there is nothing left to do
    (:func:`tnlib.experiments.running.cells.recorded_cell_summary`), each domain's plan instances read once."""
    from tnlib.experiments.running.cells import recorded_cell_summary
    from tnlib.learning.split_planning import planning_instances

    tables = {}
    if settings.plan:
        try:
            tables = {domain: planning_instances(sweep.dataset_path(), domain, sweep.plan_on)
                      for domain in sorted({config.domain for config in configs})}
        except DatasetError:
            return {}
    summaries = {config.name: recorded_cell_summary(config, settings, tables) for config in configs}
    return {name: summary for name, summary in summaries.items() if summary is not None}


def run_sweep(sweep: Sweep, workers: int | None = None, scheduler: str | None = None,
              progress: bool = True, accept_out_of_reach: bool = False, trained_only: bool = False,
              run_progress: bool = False) -> list[dict]:
    """Run every cell of the sweep (resuming finished work) and the h_FF baselines; returns the cells' summaries.

    ``workers`` local processes (None: ``sweep.workers``), or the Dask ``scheduler``'s workers. The dataset is
    checked first (:meth:`Sweep.check_data`), so a missing domain or split stops the sweep before any training, and
    so do cells out of reach unless ``accept_out_of_reach``. ``trained_only``: only the runs already trained and
    tested (``metrics-test.json``), none trained or started, and those only planned, never trained on or tested
    again -- a planning process beside sweeps still training the rest of the grid, possibly on newer code.
    ``progress`` shows the runs done (here, or tested by another sweep over the folder);
    ``run_progress`` also each run's training steps and planned instances, in one process only (side by side their
    displays would mix): what a terminal running one long sweep wants, not a notebook running many short runs.
    """
    # here, not at the top: a cell imports torch (about 1.1 s), which describing or checking a sweep does not need
    from tnlib.experiments.running.cells import run_cell

    sweep.check_data(accept_out_of_reach)
    workers = sweep.workers if workers is None else workers
    Path(sweep.out_dir).mkdir(parents=True, exist_ok=True)
    write_sweep_file(sweep)
    configs = sweep.train_configs()
    if trained_only:
        configs = [config for config in configs if sweep.run_folder(config).metrics_file("test").is_file()]
    settings = replace(cell_settings(sweep), progress=run_progress and workers <= 1 and scheduler is None,
                       train=not trained_only)
    # Runs whose records say they are done are read, not handed to a worker, which would load their data and build
    # their model to find nothing to do: a rerun over the small preset's 32 finished runs takes 10-11 s this way on
    # a busy 2-core machine, 53-59 s through the workers
    recorded = recorded_summaries(sweep, configs, settings)
    if configs and len(recorded) == len(configs):
        if progress:
            work = "trained, tested and planned" if sweep.plan else "trained and tested"
            say_done(len(configs), "sweep", unit="runs", detail=f"{work} in {shown_path(sweep.out_dir)}")
        if sweep.plan:
            run_baselines(sweep)
        return sorted(recorded.values(), key=lambda r: r["run"])
    configs = [config for config in configs if config.name not in recorded]
    if scheduler is not None and configs:
        # asked before anything is sent: a scheduler on another code fails every task at once with a pickling
        # error, and a worker on another filesystem would train runs into a folder this process never reads
        check_cluster_for_sweep(scheduler, sweep.out_dir, sweep.dataset_path() / MANIFEST)
    # Where the display is text (papermill, a log), a line per finished run, at most one per SWEEP_LINE_INTERVAL_S
    # (however small a share of the sweep the run is): runs that train take minutes each, runs resumed finished take
    # a fraction of a second (a line each would bury a notebook's output). Runs finished before the sweep began count
    # as done from the start, not as progress: counted as they return at once, they would make the time left look
    # like seconds.
    folders = {folder.path.name: folder for folder in map(sweep.run_folder, configs)}
    counted = (finished_runs(sweep) & set(folders)) | set(recorded)
    bar = progress_display(len(configs) + len(recorded), "sweep", unit="runs", initial=len(counted),
                           disable=not progress, interval_s=SWEEP_LINE_INTERVAL_S, fraction=0)
    # Runs another process is working on (a second sweep over the folder) are left for a second pass, so that two
    # sweeps over one grid share its runs instead of the second waiting behind the first run by run; in the second
    # pass each waits for its run, then finds it done. The display counts them as the other process tests them:
    # otherwise each of two sweeps side by side counts half the runs and projects the time left about twice too long.
    results, busy = list(recorded.values()), []

    def count(name: str) -> None:
        if name not in counted:
            counted.add(name)
            bar.update(1)

    def count_tested_elsewhere() -> None:
        for name in busy:
            if folders[name].metrics_file("test").is_file():
                count(name)

    # closing: a Ctrl-C that lands between two results, outside the generator, still closes its pool at once
    with contextlib.closing(run_jobs(functools.partial(run_cell, settings=settings, wait_if_busy=False), configs,
                                     workers, scheduler)) as summaries:
        for summary in summaries:
            if summary.get("busy"):
                busy.append(summary["run"])
            else:
                results.append(summary)
                count(summary["run"])
            count_tested_elsewhere()
    busy_configs = [config for config in configs if sweep.run_folder(config).path.name in busy]
    if busy_configs:  # (a runner starts its worker processes even for no jobs)
        with contextlib.closing(run_jobs(functools.partial(run_cell, settings=settings), busy_configs, workers,
                                         scheduler)) as summaries:
            for summary in summaries:
                results.append(summary)
                count(summary["run"])
                count_tested_elsewhere()
    bar.close()
    if sweep.plan:
        run_baselines(sweep)
    return sorted(results, key=lambda r: r["run"])
