"""What a sweep costs and where it stands: the compute its grid needs (the paper's GPU-hours, tnlib's measured
CPU and GPU step times, the planning on a plan set), which of its runs are trained and tested, which are training
(at which step of which target, still improving or not) and which have not started; with planning, how many of
each run's instances are planned; the training time left by tnlib's measured step times, and the planning time
left by the seconds the runs' planning records hold for the same instances.

Read from the sweep's settings and its run folders alone -- nothing is written -- so it can be asked while the
sweep runs, or of a folder a sweep left behind hours of work ago: ``tnlib sweep`` prints it in its banner
(:mod:`tnlib.experiments.running.sweep_banner`; what a resumed sweep will skip; ``--dry-run`` stops there), and so does
the experiments notebook under its settings.

Every function here takes a :class:`tnlib.experiments.sweep_settings.Sweep` (its grid, its folders, its settings).
"""
from __future__ import annotations

import statistics
from pathlib import Path
from typing import Sequence

from tnlib.data.manifest import dataset_root
from tnlib.errors import DamagedFile, DatasetError
from tnlib.files import read_jsonl, shown_path
from tnlib.learning.training_cost import (
    MEASURED_BATCH_SIZE,
    MEASURED_PLAN_SET_EVALUATIONS_PER_SECOND,
    MEASURED_RUN_OVERHEAD_SECONDS,
    MEASURED_STEP_SECONDS,
    measured_gpu_step_seconds,
    run_hours,
)
from tnlib.learning.until_flat import still_improving

# How many runs a line names before it says "and N more".
RUNS_NAMED_IN_A_LINE = 3


def count_phrase(items: Sequence, noun: str, plural: str | None = None) -> str:
    """``3 runs``, ``1 run``; ``plural`` for a noun whose plural is not noun + s (``processes``)."""
    return f"{len(items)} {noun if len(items) == 1 else plural or noun + 's'}"


def hours_phrase(hours: float) -> str:
    """``2.5 hours``, ``40 minutes``, ``1 minute``, ``under a minute``."""
    if hours * 60 < 0.5:
        return "under a minute"
    if hours >= 1:
        return f"{hours:.1f} hours"
    minutes = f"{hours * 60:.0f}"
    return "1 minute" if minutes == "1" else f"{minutes} minutes"


def estimated_hours(sweep) -> tuple[float, float]:
    """(GPU-hours, CPU-hours) of the sweep's training: the paper's V100 hours per run
    (:data:`tnlib.paper.GPU_HOURS_PER_RUN`) and tnlib's CPU seconds per step
    (:data:`tnlib.learning.training_cost.CPU_SECONDS_PER_STEP`), both scaled by steps x batch size. The CPU-hours
    leave out models without a measured step time (linear regression, minutes per run)."""
    per_cell = len(sweep.configs) * len(sweep.distributions) * len(sweep.seeds)
    gpu, cpu = 0.0, 0.0
    for domain in sweep.domains:
        for model in sweep.models:
            run_gpu, run_cpu = run_hours(model, domain, sweep.train.steps, sweep.train.batch_size)
            gpu += run_gpu * per_cell
            cpu += (run_cpu or 0.0) * per_cell
    return gpu, cpu


def measured_hours(sweep, steps: int | None = None) -> float | None:
    """Wall-clock hours of the whole sweep from tnlib's measurements at batch 64 on the shipped profiles
    (:mod:`tnlib.learning.training_cost`: ``MEASURED_STEP_SECONDS``, ``MEASURED_RUN_OVERHEAD_SECONDS``), shared
    among ``workers`` processes, every run training ``steps`` (None: the sweep's ``steps``); None for settings not
    measured (another dataset or batch size, a model without measurements). Planning on a plan set at the paper's
    sizes is not in it."""
    steps = sweep.train.steps if steps is None else steps
    measured = MEASURED_STEP_SECONDS.get(sweep.data_profile, {})
    if (sweep.data_root is not None or sweep.train.batch_size != MEASURED_BATCH_SIZE
            or any(m not in measured for m in sweep.models)):
        return None
    overhead = MEASURED_RUN_OVERHEAD_SECONDS[sweep.data_profile]
    per_cell = len(sweep.configs) * len(sweep.distributions) * len(sweep.seeds)
    seconds = sum(per_cell * (steps * measured[model][domain] + overhead[model])
                  for model in sweep.models for domain in sweep.domains)
    return seconds / 3600 / sweep.workers


def plan_set_hours(sweep) -> tuple[float, list[str]] | None:
    """(hours, models not counted): at most how long the sweep's planning on a plan set takes with its
    processes -- every search to its evaluation limit at the rates measured at each domain's largest plan-set
    instance (:data:`tnlib.learning.training_cost.MEASURED_PLAN_SET_EVALUATIONS_PER_SECOND`), a model without a
    measured rate left out and named. None when the sweep plans on no plan set, has no evaluation limit, or its
    plan set is not there (the data check names the command that makes it)."""
    if not sweep.plan or sweep.plan_on == "plan" or sweep.max_evaluations is None:
        return None
    from tnlib.learning.heads import point_estimates
    from tnlib.learning.split_planning import chosen_instances, planning_instances

    try:
        root = dataset_root(sweep.data_root_or_default(), sweep.data_profile)
        tables = {domain: planning_instances(root, domain, sweep.plan_on) for domain in sweep.domains}
    except (OSError, DatasetError):
        return None
    searches = len(sweep.configs) * len(sweep.seeds) * sum(len(point_estimates(d)) for d in sweep.distributions)
    seconds = 0.0
    for domain, table in tables.items():
        instances = len(chosen_instances(table, sweep.plan_instances, sweep.plan_per_cell))
        for model in sweep.models:
            rate = MEASURED_PLAN_SET_EVALUATIONS_PER_SECOND.get(model, {}).get(domain)
            if rate is not None:
                seconds += searches * instances * sweep.max_evaluations / rate
    unmeasured = [m for m in sweep.models if m not in MEASURED_PLAN_SET_EVALUATIONS_PER_SECOND]
    return seconds / 3600 / sweep.workers, unmeasured


def measured_gpu_hours(sweep, steps: int | None = None) -> float | None:
    """Hours of the sweep's training, one run after another on the GPU of
    :func:`tnlib.learning.training_cost.measured_gpu_step_seconds` (validation, evaluation and planning left out),
    every run training ``steps`` (None: the sweep's); None for settings not measured there (another dataset or
    batch size)."""
    steps = sweep.train.steps if steps is None else steps
    seconds = [measured_gpu_step_seconds(sweep.data_profile, sweep.train.batch_size, model, domain)
               for model in sweep.models for domain in sweep.domains]
    if sweep.data_root is not None or None in seconds:
        return None
    per_cell = len(sweep.configs) * len(sweep.distributions) * len(sweep.seeds)
    return per_cell * steps * sum(seconds) / 3600


def _named(items: list[str]) -> str:
    shown = "; ".join(items[:RUNS_NAMED_IN_A_LINE])
    return shown + (f"; and {len(items) - RUNS_NAMED_IN_A_LINE} more" if len(items) > RUNS_NAMED_IN_A_LINE else "")


def _planning_records(sweep, tested: list) -> tuple[dict, dict] | None:
    """(``{domain: the problem files the sweep plans it on}``, ``{run: {estimate: (seconds, other_seconds)}}``)
    of the ``tested`` (config, run folder) pairs -- per point estimate, the recorded search seconds by problem
    under the current setting and under another one (:func:`tnlib.learning.split_planning.recorded_seconds`);
    None where the sweep does not plan or its plan instances cannot be read (the banner's data lines say what is
    missing)."""
    from tnlib.learning.heads import point_estimates
    from tnlib.learning.split_planning import chosen_instances, planning_instances, recorded_seconds

    if not sweep.plan:
        return None
    chosen = {}
    try:
        for domain in sorted({config.domain for config, _ in tested}):
            table = planning_instances(sweep.dataset_path(), domain, sweep.plan_on)
            chosen[domain] = {table.problem_path(instance).name for instance in
                              chosen_instances(table, sweep.plan_instances, sweep.plan_per_cell)}
    except DatasetError:
        return None
    records = {run.path.name: {estimate: recorded_seconds(run.path, estimate, sweep.plan_on, sweep.search_settings)
                               for estimate in point_estimates(config.head.distribution)}
               for config, run in tested}
    return chosen, records


def _instances_planned(sweep, tested: list, found: tuple[dict, dict] | None = None
                       ) -> dict[str, dict[str, tuple[int, int]]] | None:
    """``{run: {estimate: (planned, wanted)}}`` of each of the ``tested`` (config, run folder) pairs: how many of
    the instances the sweep plans it on are planned, per point estimate (a config is a
    :class:`tnlib.learning.training.TrainConfig`; a line of another shape or setting plans nothing: the planning
    pass plans its instance again); None as :func:`_planning_records` (``found``: its value, where read)."""
    found = _planning_records(sweep, tested) if found is None else found
    if found is None:
        return None
    chosen, records = found
    return {run.path.name: {estimate: (len(chosen[config.domain] & set(seconds)), len(chosen[config.domain]))
                            for estimate, (seconds, _) in records[run.path.name].items()}
            for config, run in tested}


def planning_seconds_left(tested: list, found: tuple[dict, dict]) -> tuple[float, int]:
    """(seconds, searches with nothing to go by): the searches left to the ``tested`` runs, each timed by what is
    recorded of the same instance -- the run's own search of it under another setting (an earlier l: the same
    model, so about as many evaluations), else the median over the runs of the same domain, configuration and
    estimate that planned it under the current one. Recorded seconds carry the load of the machine then."""
    chosen, records = found

    def peer_key(config, estimate: str, problem: str) -> tuple:  # the runs whose searches time this one
        return (config.domain, config.model, config.head.sigma, config.head.residual, config.head.distribution,
                estimate, problem)

    done: dict[tuple, list[float]] = {}
    for config, run in tested:
        for estimate, (seconds, _) in records[run.path.name].items():
            for problem, value in seconds.items():
                done.setdefault(peer_key(config, estimate, problem), []).append(value)
    total, unknown = 0.0, 0
    for config, run in tested:
        for estimate, (seconds, other) in records[run.path.name].items():
            for problem in chosen[config.domain] - set(seconds):
                peers = done.get(peer_key(config, estimate, problem))
                if problem in other:
                    total += other[problem]
                elif peers:
                    total += statistics.median(peers)
                else:
                    unknown += 1
    return total, unknown


def finished_runs(sweep) -> set[str]:
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


def sweep_standing(sweep) -> list[str]:
    """Banner lines (two-space indent, as :func:`tnlib.experiments.running.sweep_banner.describe_sweep`) on the
    sweep's runs in its results folder."""
    from tnlib.learning.training import read_run_config

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
    timed = measured_hours(sweep) is not None  # measured step times for this profile, batch size and models
    seconds_left = 0.0
    step_seconds = MEASURED_STEP_SECONDS.get(sweep.data_profile, {})
    overheads = MEASURED_RUN_OVERHEAD_SECONDS.get(sweep.data_profile, {})
    for config, run, curve in training:
        last = curve[-1]["step"]
        try:
            target = read_run_config(run.path).steps
        except (OSError, DamagedFile, ValueError):  # a damaged config: the sweep rewrites it when it resumes the run
            target = sweep.train.steps
        improving = still_improving([row["val_mse"] for row in curve])
        # the until-flat rule read now (a sweep applies it at the end of each chunk)
        state = ", curve still improving" if improving else (", curve flat so far" if improving is False else "")
        described.append(f"{run.path.name} at step {last:,} of {target:,}{state}")
        if timed:
            seconds_left += (max(0, target - last) * step_seconds[config.model][config.domain]
                             + overheads[config.model])
    if timed:
        seconds_left += sum(sweep.train.steps * step_seconds[c.model][c.domain] + overheads[c.model]
                            for c in waiting)
    lines = [f"  so far    {len(tested)} of {count_phrase(range(total), 'run')} trained and tested, {len(training)} "
             f"training, {len(waiting)} not started (in {shown_path(out)})"]
    if described:
        lines.append(f"            training: {_named(described)}")
    found = _planning_records(sweep, tested) if tested else None
    planned = _instances_planned(sweep, tested, found) if found else None
    if planned:
        complete, partial, unplanned, wanted_per_domain = 0, [], 0, {}
        for config, run in tested:
            done = planned[run.path.name]
            wanted_per_domain[config.domain] = next(iter(done.values()))[1]
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
        seconds, unknown = planning_seconds_left(tested, found)
        if seconds or unknown:
            workers = max(1, sweep.workers)
            lines.append(f"            planning left: {hours_phrase(seconds / 3600 / workers)} with "
                         f"{count_phrase(range(workers), 'process', 'processes')} by the seconds recorded for the "
                         "same instances (the run's own earlier search, else its configuration's other runs)"
                         + (f"; {count_phrase(range(unknown), 'search', 'searches')} with none recorded not "
                            "counted" if unknown else ""))
    if timed and (training or waiting):
        workers = max(1, sweep.workers)
        lines.append(f"  left      training at least about {hours_phrase(seconds_left / 3600 / workers)} with "
                     f"{count_phrase(range(workers), 'process', 'processes')} by the measured step times: each run "
                     "to the end of its current chunk"
                     + (" (a run still improving there trains on, up to max_steps)" if sweep.max_steps else ""))
    return lines
