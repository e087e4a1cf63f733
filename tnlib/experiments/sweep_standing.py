"""Where a sweep stands in its results folder: which runs are trained and tested, which are training (at which
step of which target, still improving or not) and which have not started; with planning, how many of each run's
instances are planned; and the training time left by tnlib's measured step times.

Read from the run folders alone -- nothing is written -- so it can be asked while the sweep runs, or of a folder
a sweep left behind hours of work ago: ``tnlib sweep`` prints it under its banner (what a resumed sweep will skip;
``--dry-run`` stops there), and so does the experiments notebook under its settings.
"""
from __future__ import annotations

from pathlib import Path

from tnlib.errors import DamagedFile, DatasetError
from tnlib.experiments.sweep import Sweep, count_phrase, hours_phrase
from tnlib.files import has_shape, read_jsonl, shown_path
from tnlib.learning.training_cost import MEASURED_RUN_OVERHEAD_SECONDS, MEASURED_STEP_SECONDS
from tnlib.learning.until_flat import still_improving

# How many runs a line names before it says "and N more".
NAMED_RUNS = 3


def _named(items: list[str]) -> str:
    shown = "; ".join(items[:NAMED_RUNS])
    return shown + (f"; and {len(items) - NAMED_RUNS} more" if len(items) > NAMED_RUNS else "")


def _instances_planned(sweep: Sweep, tested: list) -> dict[str, dict[str, tuple[int, int]]] | None:
    """``{run: {estimate: (planned, wanted)}}`` of each of the ``tested`` (config, run folder) pairs: how many of
    the instances the sweep plans it on are planned, per point estimate; None where the sweep does not plan or its
    plan instances cannot be read (the banner's data lines say what is missing)."""
    from tnlib.learning.heads import point_estimates
    from tnlib.learning.split_planning import chosen_instances, planning_instances

    if not sweep.plan:
        return None
    chosen = {}
    try:
        for domain in sorted({config["domain"] for config, _ in tested}):
            table = planning_instances(sweep.dataset_path(), domain, sweep.plan_on)
            chosen[domain] = {table.problem_path(instance).name for instance in
                              chosen_instances(table, sweep.plan_instances, sweep.plan_per_cell)}
    except DatasetError:
        return None
    planned = {}
    for config, run in tested:
        wanted = chosen[config["domain"]]
        planned[run.path.name] = {
            # (a line of another shape plans nothing: the planning pass names it and plans its instance again)
            estimate: (len(wanted & {r["problem"] for r in read_jsonl(run.planning_file(estimate, sweep.plan_on))
                                     if has_shape(r, "a planning record")}),
                       len(wanted))
            for estimate in point_estimates(config["distribution"])}
    return planned


def finished_runs(sweep: Sweep) -> set[str]:
    """The names of the sweep's runs with nothing left to do: tested and, where the sweep plans, planned on every
    instance it plans them on with every point estimate."""
    tested = []
    for config in sweep.train_configs():
        run = sweep.run_folder(config)
        if run.metrics_file("test").is_file():
            tested.append((config, run))
    if not sweep.plan:
        return {run.path.name for _, run in tested}
    planned = _instances_planned(sweep, tested) or {}
    return {name for name, done in planned.items() if all(count == wanted for count, wanted in done.values())}


def sweep_standing(sweep: Sweep) -> list[str]:
    """Banner lines (two-space indent, as :meth:`Sweep.describe`) on the sweep's runs in its results folder."""
    out = Path(sweep.out_dir)
    tested, training, waiting = [], [], []
    for config in sweep.train_configs():
        run = sweep.run_folder(config)
        if run.metrics_file("test").is_file():
            tested.append((config, run))
            continue
        curve = read_jsonl(run.curves_file)
        if curve and run.config_file.is_file():
            training.append((config, run, curve))
        else:
            waiting.append(config)
    total = len(tested) + len(training) + len(waiting)
    if len(waiting) == total:
        return [f"  so far    nothing: none of the {count_phrase(range(total), 'run')} started in {shown_path(out)}"]

    described = []
    timed = sweep.measured_hours() is not None  # measured step times for this profile, batch size and models
    seconds_left = 0.0
    step_seconds = MEASURED_STEP_SECONDS.get(sweep.data_profile, {})
    overheads = MEASURED_RUN_OVERHEAD_SECONDS.get(sweep.data_profile, {})
    for config, run, curve in training:
        last = curve[-1]["step"]
        try:
            target = run.read_config()["steps"]
        except (OSError, DamagedFile, KeyError):  # a damaged config: the sweep rewrites it when it resumes the run
            target = sweep.steps
        improving = still_improving([row["val_mse"] for row in curve])
        # the until-flat rule read now (a sweep applies it at the end of each chunk)
        state = ", curve still improving" if improving else (", curve flat so far" if improving is False else "")
        described.append(f"{run.path.name} at step {last:,} of {target:,}{state}")
        if timed:
            seconds_left += (max(0, target - last) * step_seconds[config["model"]][config["domain"]]
                             + overheads[config["model"]])
    if timed:
        seconds_left += sum(sweep.steps * step_seconds[c["model"]][c["domain"]] + overheads[c["model"]]
                            for c in waiting)
    lines = [f"  so far    {len(tested)} of {count_phrase(range(total), 'run')} trained and tested, {len(training)} "
             f"training, {len(waiting)} not started (in {shown_path(out)})"]
    if described:
        lines.append(f"            training: {_named(described)}")
    planned = _instances_planned(sweep, tested) if tested else None
    if planned:
        complete, partial, unplanned, wanted_per_domain = 0, [], 0, {}
        for config, run in tested:
            done = planned[run.path.name]
            wanted_per_domain[config["domain"]] = next(iter(done.values()))[1]
            if all(count == wanted for count, wanted in done.values()):
                complete += 1
            elif any(count for count, _ in done.values()):
                counts = ", ".join(f"{estimate} {count} of {wanted}" for estimate, (count, wanted) in done.items())
                partial.append(f"{run.path.name}: {counts}")
            else:
                unplanned += 1
        sizes = ", ".join(f"{domain} {wanted}" for domain, wanted in sorted(wanted_per_domain.items()))
        lines.append(f"  planned   {complete} of the {len(tested)} tested runs on all their instances ({sizes} "
                     f"per run and estimate), {len(partial)} part-way"
                     + (f" ({_named(partial)})" if partial else "") + f", {unplanned} not yet")
    if timed and (training or waiting):
        workers = max(1, sweep.workers)
        lines.append(f"  left      training at least about {hours_phrase(seconds_left / 3600 / workers)} with "
                     f"{count_phrase(range(workers), 'process', 'processes')} by the measured step times: each run "
                     "to the end of its current chunk"
                     + (" (a run still improving there trains on, up to max_steps)" if sweep.max_steps else ""))
    return lines
