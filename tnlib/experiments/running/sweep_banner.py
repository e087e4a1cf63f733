"""The banner ``tnlib sweep`` and the experiments notebook print before a sweep starts: what it will do (its
settings against the paper's, its grid, the compute it needs) and what of its data is missing, out of reach or
still being generated. Where its runs stand is :func:`tnlib.experiments.running.sweep_standing.sweep_standing`.

Every function here takes a :class:`tnlib.experiments.sweep_settings.Sweep`.
"""
from __future__ import annotations

import contextlib
import json

from tnlib.data.schema import unfinished_plan_sets, unfinished_splits
from tnlib.errors import DatasetError
from tnlib.experiments.scope_page import percent
from tnlib.experiments.running.sweep_standing import (
    count_phrase,
    estimated_hours,
    hours_phrase,
    measured_gpu_hours,
    measured_hours,
    plan_set_hours,
)
from tnlib.files import shown_path
from tnlib.learning.training_cost import (
    CPU_SECONDS_PER_STEP,
    CPU_TIMED_OBJECTS,
    MEASURED_GPU,
    MEASURED_PLAN_SET_EVALUATIONS_PER_SECOND,
    MEASURED_RUN_OVERHEAD_SECONDS,
    MEASURED_STEP_SECONDS,
)
from tnlib.paper import BATCH_SIZE, GPU_HOURS_PER_RUN, MAIN_TABLES_MODEL, MODELS, TRAIN_INSTANCES, TRAIN_STEPS

# Beyond this many CPU-hours the banner says the sweep needs a GPU or a cluster.
CPU_HOURS_WORTH_A_CLUSTER = 8.0


def describe_sweep(sweep) -> str:
    """What the sweep will do, for a banner before it starts: the settings against the paper's, the number
    of runs, and an estimate of the compute it needs (GPU hours from the paper's own times, CPU hours from
    tnlib's measured step time)."""
    configs = ", ".join("/".join(pair) for pair in sweep.configs)
    train, head = sweep.train, sweep.train.head
    fraction = train.steps * train.batch_size / (TRAIN_STEPS * BATCH_SIZE)
    instances = "all" if train.instances is None else f"{train.instances:,}"
    upper = "" if head.upper_bound == "none" else f", u = {head.upper_bound} (training only; beyond the paper)"
    link = f", learned sigma {head.sigma_link}" if any(s == "learn" for s, _ in sweep.configs) else ""
    if head.fixed_sigma == "authors" and any(s == "fixed" for s, _ in sweep.configs):
        link += ", fixed sigma sqrt(2) (the authors' code's)"
    profile = sweep.data_profile
    with contextlib.suppress(OSError, ValueError):
        profile = json.loads((sweep.dataset_path() / "manifest.json").read_text()).get("profile", profile)
    cpu_hours, cost = _cost(sweep, profile)
    lines = [
        f"tnlib sweep: {_title(sweep)}",
        f"  grid      {count_phrase(sweep.domains, 'domain')} ({', '.join(sweep.domains)}) x "
        f"{count_phrase(sweep.models, 'model')} ({', '.join(sweep.models)}) x "
        f"{count_phrase(sweep.configs, 'configuration')} ({configs}) x "
        f"{count_phrase(sweep.distributions, 'distribution')} ({', '.join(sweep.distributions)}) x "
        f"{count_phrase(sweep.seeds, 'seed')} ({', '.join(map(str, sweep.seeds))}) = "
        f"{count_phrase(range(sweep.runs()), 'run')}",
        f"  training  {train.steps:,} steps x batch {train.batch_size} per run ({percent(fraction)} of the paper's "
        f"{TRAIN_STEPS:,} x {BATCH_SIZE} samples), {instances} training instances (the paper: "
        f"{TRAIN_INSTANCES}), validation every {train.eval_every:,} steps, l = {head.lower_bound}{upper}{link}",
        *([f"            until flat: a run still improving then trains on, {sweep.extend_steps:,} steps at a "
           f"time, up to {sweep.max_steps:,} steps (beyond the paper, which trains a fixed number)"]
          if sweep.max_steps is not None else []),
        f"  data      {shown_path(sweep.dataset_path())} (profile {profile})",
        f"  planning  {_planning(sweep)}",
        f"  results   {shown_path(sweep.out_dir)}",
        f"  cost      {cost}",
    ]
    measured = measured_hours(sweep)
    if measured is not None:
        lines.append(_measured_line(sweep, measured))
    on_plan_set = plan_set_hours(sweep)
    if on_plan_set is not None:
        lines.append(_plan_set_line(sweep, *on_plan_set))
    on_gpu = measured_gpu_hours(sweep)
    if on_gpu is not None:
        lines.append(_gpu_line(sweep, on_gpu))
    if (cpu_hours if measured is None else measured) > CPU_HOURS_WORTH_A_CLUSTER:
        lines.append("  => this needs a GPU machine (runs use CUDA when present) or a Dask cluster "
                     "(--scheduler tcp://HOST:8786); `--preset small` runs on a laptop")
    left_out = [m for m in MODELS if m not in sweep.models]
    if left_out:
        appendix = [m for m in left_out if m != MAIN_TABLES_MODEL]
        groups = ([f"{MAIN_TABLES_MODEL} model (its main tables)"] if MAIN_TABLES_MODEL in left_out else []) + (
            [f"{' and '.join(appendix)} model{'s' if len(appendix) > 1 else ''} (its appendix tables)"]
            if appendix else [])
        lines.append(f"  not run   the paper's {' and '.join(groups)}: "
                     f"add --models {' '.join(dict.fromkeys([*sweep.models, *MODELS]))}")
    return "\n".join(lines)


def _title(sweep) -> str:
    """The banner's first line after ``tnlib sweep:``: the preset the sweep is, and how it differs from the paper."""
    preset = sweep.matching_preset()
    differs = sweep.settings_differing_from_paper()
    if preset == "paper":
        return "the paper's settings (preset 'paper'; `--preset small` is a demo for 2 CPU cores)"
    if preset is not None:
        return f"preset {preset!r} -- not the paper's settings (they differ in: {', '.join(differs)})"
    return f"custom settings -- they differ from the paper's in: {', '.join(differs)}"


def _planning(sweep) -> str:
    planned = ("all instances" if sweep.plan_instances is None
               else f"the first {count_phrase(range(sweep.plan_instances), 'instance')}")
    if sweep.plan_per_cell is not None:
        planned = (f"the first {count_phrase(range(sweep.plan_per_cell), 'instance')} of each grid cell"
                   + ("" if sweep.plan_instances is None else f", at most {sweep.plan_instances} in all"))
    where = "the plan split" if sweep.plan_on == "plan" else f"the plan set {sweep.plan_on}"
    return ("no planning" if not sweep.plan else
            f"GBFS on {where} (per domain: {planned}), at most {sweep.max_evaluations:,} "
            "evaluations, h_FF baseline")


def _cost(sweep, profile: str) -> tuple[float, str]:
    """(CPU-hours, the banner's cost line): the paper's GPU-hours and tnlib's CPU-hours of the training
    (:func:`tnlib.experiments.running.sweep_standing.estimated_hours`); ``profile``: the dataset's."""
    gpu_hours, cpu_hours = estimated_hours(sweep)
    untrained = [m for m in sweep.models if m not in GPU_HOURS_PER_RUN]
    cost = (f"training alone (evaluation and planning come on top): about {gpu_hours:,.1f} GPU-hours by the "
            "paper's V100 times per run, scaled by samples"
            + (f" ({', '.join(untrained)}: not in the paper, not counted)" if untrained else ""))
    timed = [m for m in sweep.models if m in CPU_SECONDS_PER_STEP]
    if timed:
        steps = " / ".join(f"{CPU_SECONDS_PER_STEP[m]} s" for m in timed)
        untimed = [m for m in sweep.models if m not in CPU_SECONDS_PER_STEP]
        cost += (f"; about {cpu_hours:,.1f} CPU-hours on 2 cores if the instances had {CPU_TIMED_OBJECTS} objects "
                 f"({' / '.join(timed)} there: {steps} per step at batch {BATCH_SIZE}"
                 f"{'; ' + ', '.join(untimed) + ' runs: minutes each' if untimed else ''})")
        if profile == "small":
            cost += (" -- an upper bound for data/small, whose training instances have at most 16 objects "
                     "(most far fewer, and smaller instances train several times faster)")
    return cpu_hours, cost


def _measured_line(sweep, measured: float) -> str:
    """The banner's line on the sweep's hours by tnlib's measured step times (``measured``: those hours)."""
    step_seconds = MEASURED_STEP_SECONDS[sweep.data_profile]
    per_step = "; ".join(
        f"{model} " + ", ".join(f"{d} {step_seconds[model][d]} s" for d in sweep.domains)
        for model in sweep.models)
    overhead = ", ".join(f"{m} {MEASURED_RUN_OVERHEAD_SECONDS[sweep.data_profile][m]:.0f} s"
                         for m in sweep.models)
    # planning on a plan set at the paper's sizes is not in the measured overhead (measured_hours says so)
    work = "test evaluation and planning" if sweep.plan and sweep.plan_on == "plan" else "test evaluation"
    took = hours_phrase(measured)
    if sweep.max_steps is not None and sweep.max_steps > sweep.train.steps:
        took += (f" (up to {hours_phrase(measured_hours(sweep, sweep.max_steps))} if every run trained to "
                 "max_steps)")
    # the step times are of each model's default arguments: another layout or size costs otherwise
    arguments = "; each model with its default arguments, not this sweep's model_args" if any(
        sweep.model_args.get(model) for model in sweep.models) else ""
    return (f"  measured  about {took} with {count_phrase(range(sweep.workers), 'process', 'processes')} "
            f"on this project's shared 2-core machine (training per step, validation included: "
            f"{per_step}; {work} per run: {overhead}{arguments})")


def _plan_set_line(sweep, hours: float, unmeasured: list[str]) -> str:
    """The banner's line on the planning on a plan set: at most ``hours``, the models ``unmeasured`` not counted
    (:func:`tnlib.experiments.running.sweep_standing.plan_set_hours`)."""
    rates = "; ".join(
        f"{model}: " + ", ".join(f"{d} {rate[d]:,}" for d in sweep.domains)
        for model, rate in MEASURED_PLAN_SET_EVALUATIONS_PER_SECOND.items() if model in sweep.models)
    counted = (f"at most about {hours_phrase(hours)} on top with "
               f"{count_phrase(range(sweep.workers), 'process', 'processes')}, if every search ran to its "
               f"{sweep.max_evaluations:,}-evaluation limit at the evaluations per second measured at each "
               f"domain's largest plan-set instance on one thread ({rates}; N plans twice, N and N+clip)"
               if rates else "not estimated")
    return (f"  plan set  planning {counted}"
            + (f"; {', '.join(unmeasured)}: no measured rate, not counted" if unmeasured else ""))


def _gpu_line(sweep, hours: float) -> str:
    """The banner's line on the training's ``hours`` on the measured GPU."""
    took = hours_phrase(hours)
    if sweep.max_steps is not None and sweep.max_steps > sweep.train.steps:
        took += f" (up to {hours_phrase(measured_gpu_hours(sweep, sweep.max_steps))} at max_steps)"
    return (f"  on a GPU  training alone about {took} on {MEASURED_GPU}, one run after another "
            f"(measured at batch {sweep.train.batch_size} on data/paper)")


def sweep_data_lines(sweep) -> list[str]:
    """The banner's lines on the data: what a run would lack, before it starts."""
    try:
        root, missing, out_of_reach = sweep.data_gaps()
        lines = [f"  missing   {', '.join(missing)} (never generated: the sweep stops before training)"] \
            if missing else []
    except DatasetError as err:
        root, out_of_reach, lines = None, [], [f"  missing   {err}"]
    # A generation under way (or interrupted) there: what the sweep reads will change when it completes. A
    # split's work folder is a `generate`'s; a plan set's, a `plan-set`'s (solving or drawing more instances).
    base = sweep.data_root_or_default()
    for folder in ([root] if root is not None else [base / sweep.data_profile, base]):
        running = [domain for domain in sweep.domains if unfinished_splits(folder, domain)]
        drawing = [domain for domain in sweep.domains if sweep.plan and sweep.plan_on != "plan"
                   and sweep.plan_on in unfinished_plan_sets(folder, domain)]
        if running:
            lines.append(f"  in progress  {', '.join(running)}: an unfinished `tnlib data generate` in {folder} "
                         f"(`tnlib data status {folder}`; rerun it to resume)")
        if drawing:
            lines.append(f"  in progress  {', '.join(drawing)}: an unfinished `tnlib data plan-set` of "
                         f"{sweep.plan_on} in {folder} (running or interrupted; rerun it to resume)")
        if running or drawing:
            break
    if out_of_reach:
        lines.append("  out of reach (generation gave these cells up at its solver limits; the sweep runs on the "
                     "cells that exist only with --accept-out-of-reach):")
        lines += [f"    {line}" for line in out_of_reach]
    if not lines:
        lines.append("  data      complete: every domain and split the sweep reads, no cell out of reach")
    return lines


__all__ = ["CPU_HOURS_WORTH_A_CLUSTER", "describe_sweep", "sweep_data_lines"]
