"""One cell of a sweep: train (or resume) a configuration -- until flat if asked --, evaluate it, plan with it.

:func:`run_cell` is what each worker of :func:`tnlib.experiments.running.sweep.run_sweep` runs, in a local process or on a
Dask worker; it takes the cell as its :class:`tnlib.learning.training.TrainConfig` (one of the sweep's
:meth:`~tnlib.experiments.sweep_settings.Sweep.train_configs`).
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import torch

from tnlib.errors import DamagedFile
from tnlib.files import damaged_message, locked, locked_if_free, read_json, read_jsonl
from tnlib.learning.checkpoints import read_checkpoint_file
from tnlib.learning.evaluation import evaluate_run
from tnlib.learning.heads import point_estimates
from tnlib.learning.split_planning import plan_split, planning_summary, recorded_plans
from tnlib.learning.run_files import RunDir
from tnlib.learning.training import TrainConfig, train, trained_steps
from tnlib.learning.until_flat import still_improving, until_flat_end
from tnlib.experiments.running.cell_settings import CellSettings


def train_until_flat(config: TrainConfig, max_steps: int, extend_steps: int) -> Path:
    """Train one configuration for its ``steps``, then on in chunks of ``extend_steps`` while its validation curve
    is still improving (:func:`still_improving`; a curve too short to tell goes on too),
    until it is flat or reaches ``max_steps``; returns the run folder, whose ``config.json`` then names the steps
    trained. Resumable: a folder trained further by an earlier, interrupted call finishes the chunk it was in and
    is checked there, so the steps a run ends at do not depend on interruptions. The caller holds the run's lock
    (:func:`run_cell`)."""
    run = RunDir(Path(config.out_dir) / config.name)
    done = max((int(row["step"]) for row in read_jsonl(run.curves_file)), default=0)
    steps = until_flat_end(done, config.steps, max_steps, extend_steps)
    while True:
        run_dir = train(replace(config, steps=steps), lock=False)
        curve = [row["val_mse"] for row in read_jsonl(run.curves_file)]
        if steps >= max_steps or still_improving(curve) is False:
            return run_dir
        steps = min(steps + extend_steps, max_steps)


def run_cell(config: TrainConfig, settings: CellSettings = CellSettings(), wait_if_busy: bool = True) -> dict:
    """Train (or resume) one configuration -- until flat with ``settings.max_steps`` (:func:`train_until_flat`) --,
    evaluate it on the test split and plan with it as ``settings`` say (:class:`CellSettings`).

    The cell holds a lock (``.RUN.lock`` beside the run folder) while it works: two sweeps writing one results
    folder (two terminals, a rerun beside a running one) never train the same folder at once. When another process
    holds the run, the cell waits for it (then finds the work done and only reads it), or with ``wait_if_busy``
    False returns ``{"run": RUN, "busy": True}`` at once, so that a sweep can do the runs nobody is working on
    first (:func:`tnlib.experiments.running.sweep.run_sweep`). The lock is advisory (``flock``): on a cluster it holds
    where the shared filesystem supports it."""
    name = config.name
    lock = RunDir(Path(config.out_dir) / name).lock_file
    if not wait_if_busy:
        with locked_if_free(lock) as free:
            if free:
                return _run_cell(config, settings)
        print(f"{name}: another process is working on this run; coming back to it after the others", file=sys.stderr,
              flush=True)
        return {"run": name, "busy": True}
    with locked(lock, waiting=f"{name}: another process is working on this run; waiting for it to finish"):
        return _run_cell(config, settings)


def _recorded_metrics(path: Path) -> dict | None:
    """A metrics file's contents; None when it is missing or damaged, so that it is computed again."""
    if not path.is_file():
        return None
    try:
        return read_json(path, shape="a run's test metrics")
    except DamagedFile as err:
        print(damaged_message(err.path, err.reason, "computing it again"), file=sys.stderr)
        return None


def _train_and_test(config: TrainConfig, settings: CellSettings) -> tuple[Path, dict]:
    """The run trained as far as the cell trains it and tested at both best checkpoints: its folder and test
    metrics."""
    run_dir = train(config, lock=False) if settings.max_steps is None else \
        train_until_flat(config, settings.max_steps, settings.extend_steps)
    metrics_path = RunDir(run_dir).metrics_file("test")
    best_step = read_checkpoint_file(RunDir(run_dir).best, written_here=True)["step"]
    metrics = _recorded_metrics(metrics_path)
    if metrics is None or metrics.get("checkpoint_step") != best_step:
        metrics = evaluate_run(run_dir, "test")
    # the appendix's NLL rows: test NLL at the best-validation-NLL checkpoint
    nll_path = RunDir(run_dir).metrics_file("test", RunDir.BEST_NLL)
    nll_step = read_checkpoint_file(RunDir(run_dir).best_nll, written_here=True)["step"]
    if (_recorded_metrics(nll_path) or {}).get("checkpoint_step") != nll_step:
        evaluate_run(run_dir, "test", checkpoint=RunDir.BEST_NLL)
    return run_dir, metrics


def _tested(config: TrainConfig) -> tuple[Path, dict]:
    """A run trained and tested already, as its folder holds it: its folder and test metrics (a ValueError where
    it has none to read: a cell that only plans never trains or tests)."""
    run_dir = RunDir(Path(config.out_dir) / config.name).path
    metrics = _recorded_metrics(RunDir(run_dir).metrics_file("test"))
    if metrics is None:
        raise ValueError(f"{run_dir}: no test metrics to read; a cell that only plans plans tested runs only")
    return run_dir, metrics


def _run_cell(config: TrainConfig, settings: CellSettings) -> dict:
    torch.set_num_threads(1)  # cells run side by side; one thread each keeps the machine's cores busy, no more
    config = replace(config, progress=settings.progress)
    run_dir, metrics = _train_and_test(config, settings) if settings.train else _tested(config)
    summary = {"run": run_dir.name, "mse": metrics["mse"], "nll": metrics["nll"]}
    if settings.plan:
        for estimate in point_estimates(config.head.distribution):
            records = plan_split(run_dir, estimate, split=settings.plan_on, settings=settings.search,
                                 instances=settings.plan_instances, per_cell=settings.plan_per_cell,
                                 progress=settings.progress)
            summary[f"coverage_{estimate}"] = planning_summary(records, settings.search.max_evaluations)["coverage"]
    return summary


def _recorded_training(config: TrainConfig, settings: CellSettings, run: RunDir) -> dict | None:
    """The run's test metrics where its records say it is trained as far as the cell would train it and tested at
    both best checkpoints; None otherwise."""
    step = trained_steps(config)
    if step is None or step < config.steps:
        return None
    if settings.max_steps is not None:
        curve = [row["val_mse"] for row in read_jsonl(run.curves_file)]
        flat = step >= settings.max_steps or still_improving(curve) is False
        if not flat or until_flat_end(step, config.steps, settings.max_steps, settings.extend_steps) != step:
            return None
    try:
        tested = [(read_json(run.metrics_file("test", checkpoint), shape="a run's test metrics"),
                   read_checkpoint_file(run.path / checkpoint, written_here=True)["step"])
                  for checkpoint in (RunDir.BEST, RunDir.BEST_NLL)]
    except (DamagedFile, ValueError, KeyError, OSError):
        return None
    if any(metrics.get("checkpoint_step") != best_step for metrics, best_step in tested):
        return None
    return tested[0][0]


def recorded_cell_summary(config: TrainConfig, settings: CellSettings = CellSettings(),
                          tables: dict | None = None) -> dict | None:
    """The summary :func:`run_cell` would return for a run with nothing left to do, read from its records: trained
    as far as the cell would train it (:func:`tnlib.learning.training.trained_steps`; until flat, the end of a flat
    chunk or ``max_steps``), tested at both best checkpoints and, where the cell plans, planned on every instance
    with every point estimate. None where anything may be left or the records cannot tell: the cell works that
    out. A second of a worker's set-up per finished run, spent to find nothing to do, is what this saves.
    ``tables``: the plan instances by domain (:func:`tnlib.learning.split_planning.planning_instances`), where read
    already."""
    run = RunDir(Path(config.out_dir) / config.name)
    if settings.train:
        tested = _recorded_training(config, settings, run)
    else:  # a cell that only plans reads the test metrics as they are
        tested = _recorded_metrics(run.metrics_file("test")) if run.best.is_file() else None
    if tested is None:
        return None
    summary = {"run": config.name, "mse": tested["mse"], "nll": tested["nll"]}
    if settings.plan:
        for estimate in point_estimates(config.head.distribution):
            records = recorded_plans(run.path, estimate, split=settings.plan_on, settings=settings.search,
                                     instances=settings.plan_instances, per_cell=settings.plan_per_cell,
                                     table=(tables or {}).get(config.domain))
            if records is None:
                return None
            summary[f"coverage_{estimate}"] = planning_summary(records, settings.search.max_evaluations)["coverage"]
    return summary
