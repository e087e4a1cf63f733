"""The rows the tables lay out, read from a results folder: every run's test metrics (:func:`collect_results`) and
every planning file's summary and plan lengths per point estimate (:func:`collect_planning`), each with the
training configuration its run was trained by (:func:`run_config`; :func:`known_run_config` names a run folder
that lost it); the h_FF baseline's records (:func:`baseline_records`); which runs finished planning
(:func:`split_unfinished`); the paper's selection of plan instances and each instance's h* (:func:`optimal_costs`);
and the check that a table cell pools runs of one setting, the seed aside (:func:`check_one_setting`)."""
from __future__ import annotations

import json
import os
from pathlib import Path

from tnlib.errors import DamagedFile
from tnlib.experiments.results_dir import ResultsDir
from tnlib.files import read_json, shown_path
from tnlib.learning.heads import estimate_column
from tnlib.learning.run_files import RunDir
from tnlib.learning.split_planning import planned, planning_summary
from tnlib.learning.training import read_run_config
from tnlib.paper import BASELINE_HEURISTIC


def collect_results(results_dir: str | os.PathLike, split: str = "test", checkpoint: str = RunDir.BEST) -> list[dict]:
    """Every metrics file of ``split`` and ``checkpoint`` (see :func:`tnlib.learning.evaluation.evaluate_run`) under
    ``results_dir``, recursively, sorted by path; each with its run's training configuration under ``"config"``."""
    sweeps: dict = {}
    return [{**read_json(p, _metrics_remedy(p, split, checkpoint), shape="a run's test metrics"),
             "config": known_run_config(p.parent, sweeps, "metrics")}
            for p in ResultsDir(results_dir).metrics_files(split, checkpoint)]


def _metrics_remedy(path: Path, split: str, checkpoint: str) -> str:
    """What to do about a damaged metrics file: test the run again, which writes it anew."""
    flags = ("" if split == "test" else f" --split {split}") + (
        "" if checkpoint == RunDir.BEST else f" --checkpoint {checkpoint}")
    return f"write it again with `tnlib evaluate {shown_path(path.parent)}{flags}`"


def known_run_config(folder, sweeps: dict, records: str) -> dict:
    """:func:`run_config` of a run whose ``records`` (its metrics or planning records) a table reads: neither says
    every setting a cell pools by, so a run folder that lost its config.json is named rather than pooled as a run of
    unknown settings."""
    config = run_config(folder, sweeps)
    if not config:
        missing = RunDir(folder).config_file
        raise DamagedFile(f"{shown_path(missing)} is missing beside the run's {records}: it says what trained them; "
                          f"restore it from git (`git checkout -- {shown_path(missing)}`) or a copy, or move the "
                          "folder out of the results folder", missing, "missing")
    return config


def run_config(folder, sweeps: dict) -> dict:
    """A run's training configuration as the tables pool it: its flat record as :func:`read_run_config` reads it (a
    setting the run folder predates at its default), but for ``steps`` of a run its sweep trained until flat
    (``sweep.json``'s ``max_steps`` in the results folder, the run's steps on that sweep's grid of chunks): the
    rule it trained by, not the steps it reached, so such runs pool across seeds that stopped at different steps.
    ``sweeps`` caches each results folder's sweep.json for the caller's pass over its runs."""
    from tnlib.learning.until_flat import until_flat_end

    run = RunDir(folder)
    if not run.config_file.is_file():
        return {}
    config = read_run_config(run).to_dict()
    results = ResultsDir(Path(folder).parent)
    if results.path not in sweeps:
        sweeps[results.path] = results.read_sweep()
    sweep = sweeps[results.path]
    steps = config["steps"]
    if sweep is not None and sweep.max_steps is not None:
        first, cap, chunk = sweep.train.steps, sweep.max_steps, sweep.extend_steps
        if first <= steps <= cap and until_flat_end(steps, first, cap, chunk) == steps:
            config["steps"] = f"until flat: {first:,}-{cap:,}, by {chunk:,}"
    return config


def collect_planning(results_dir, split: str | None = None, problems: dict[str, set[str]] | None = None) -> list[dict]:
    """One row per (run, estimate): the run's configuration and its summary on ``split`` (the plan split or a plan
    set; None: the one the folder's sweep plans on, :meth:`ResultsDir.planned_on`). With ``problems`` (``{domain:
    problem file names}``, e.g. the paper's selection by optimal solves) a row summarizes only those instances."""
    rows, sweeps = [], {}
    results = ResultsDir(results_dir)
    for path in results.planning_files(results.planned_on() if split is None else split):
        config = known_run_config(path.parent, sweeps, "planning records")
        estimate = RunDir.estimate_of(path)
        column = estimate_column(config["distribution"], estimate)
        records = kept_records(planned(path).values(), problems, config["domain"])
        if not records and problems is not None:  # none of its instances kept: no row, rather than an empty one
            continue
        rows.append({**{k: config[k] for k in ("domain", "model", "sigma", "residual", "lower_bound", "seed")},
                     "column": column, "protocols": sorted({r["protocol"] for r in records}),
                     "config": config, "plan_lengths": plan_lengths(records), **planning_summary(records)})
    return rows


def plan_lengths(records) -> dict[str, int | None]:
    """``{problem file name: the length of the plan its record found}``, None where it found none (unsolved, or a
    record that does not give the length)."""
    return {r["problem"]: r.get("plan_length") if r["solved"] else None for r in records}


def baseline_records(results_dir, split: str, problems: dict[str, set[str]] | None = None,
                     heuristic: str = BASELINE_HEURISTIC) -> dict[str, list[dict]]:
    """``{domain: records}`` of a symbolic heuristic's planning files over ``split`` in a results folder (the h_FF
    column), only those of ``problems`` where given; a domain none of whose records are kept is left out."""
    found = {}
    for domain, path in ResultsDir(results_dir).baseline_files(heuristic, split).items():
        records = kept_records(planned(path).values(), problems, domain)
        if records:
            found[domain] = records
    return found


def split_unfinished(rows: list[dict]) -> tuple[list[dict], list[dict], dict[str, int]]:
    """(the planning rows of runs that planned as many instances as the most any run of their domain did, the
    others, that most per domain). A run still planning, or whose record was cut short, would read as final: the
    tables leave it out and name it. (h_FF's baseline is not the reference: a folder may plan it on more instances
    than its runs.)"""
    most: dict[str, int] = {}
    for r in rows:
        most[r["domain"]] = max(most.get(r["domain"], 0), int(r["instances"]))
    finished = [r for r in rows if int(r["instances"]) >= most[r["domain"]]]
    return finished, [r for r in rows if int(r["instances"]) < most[r["domain"]]], most


def kept_records(records, problems: dict[str, set[str]] | None, domain: str) -> list[dict]:
    """The records of the problems kept for ``domain`` (all of them without ``problems``)."""
    if problems is None:
        return list(records)
    kept = problems.get(domain, set())
    return [r for r in records if r["problem"] in kept]


def optimal_selection(results_dir, split: str, seconds: float) -> dict[str, dict]:
    """The paper's selection of plan instances (those an optimal planner solves within a time limit) as the
    records of the plan set ``split`` can apply it at ``seconds``, per domain of the folder's runs: ``{domain:
    {"problems": problem file names kept, "undecided": how many no recorded solve decides, "instances": the set's
    size}}``. Undecided instances are left out with the unsolved ones (the tables say how many)."""
    from tnlib.data.plan_sets import load_plan_set

    selection = {}
    for domain, root in _data_roots(results_dir).items():
        plan_set = load_plan_set(root, domain, split)
        kept, undecided = plan_set.optimal_selection(seconds)
        selection[domain] = {"problems": {plan_set.problem_path(name).name for name in kept},
                             "undecided": len(undecided), "instances": len(plan_set)}
    return selection


def _data_roots(results_dir) -> dict[str, str | None]:
    """``{domain: the dataset root its first run trained on}`` of a results folder's runs."""
    roots: dict[str, str | None] = {}
    for run in ResultsDir(results_dir).runs():
        config = read_run_config(run)
        roots.setdefault(config.domain, config.data_root)
    return roots


def optimal_costs(results_dir, split: str) -> dict[str, dict[str, int | None]]:
    """``{domain: {problem file name: h* of its initial state, or None}}`` for the labelled split or plan set
    ``split`` of the dataset each domain's runs trained on: the labelled split's h* column, a plan set's exact
    solves (``tnlib data plan-set --exact``; None where it recorded none). A domain whose dataset cannot be read
    here maps to {}: its instances have no h*."""
    from tnlib.errors import DatasetError
    from tnlib.learning.split_planning import planning_instances

    costs = {}
    for domain, root in _data_roots(results_dir).items():
        try:
            table = planning_instances(root, domain, split)
        except DatasetError:
            costs[domain] = {}
            continue
        costs[domain] = {table.problem_path(name).name: table.optimal_cost(name) for name in table.instances()}
    return costs


# A table cell pools runs that differ in these settings only: the seed, and where and how a run was executed.
POOLED_OVER = frozenset({"seed", "out_dir", "run_name", "device", "progress", "data_root", "eval_batch_size",
                         "checkpoint_every"})


def check_one_setting(cells: dict, what: str) -> None:
    """Refuse to average runs that differ in more than the seed (:data:`POOLED_OVER`): ``cells`` maps a cell's
    label to the training configurations of the runs it would pool. A ValueError names the cell and the fields
    (e.g. a ``sigma_link="bounded"`` sweep written into the same results folder as a softplus one)."""
    for label, configs in cells.items():
        fields = sorted({k for c in configs for k in c} - POOLED_OVER)
        differing = {k: sorted({json.dumps(c.get(k), sort_keys=True) for c in configs})
                     for k in fields}
        differing = {k: v for k, v in differing.items() if len(v) > 1}
        if differing:
            detail = "; ".join(f"{k}: {', '.join(v)}" for k, v in differing.items())
            hint = "render them from separate results folders (e.g. `tnlib sweep --out`)"
            if set(differing) == {"steps"} and all(v.isdigit() for v in differing["steps"]):
                # no sweep rule applied to any of them: often run folders copied without their sweep.json
                hint = ("if a sweep trained them until flat, the results folder holds no sweep.json that says so "
                        "(run folders copied without it, say): run the same `tnlib sweep` over the folder, which "
                        "writes it and keeps every finished run; else " + hint)
            raise ValueError(f"{what} cell {label} would average runs that differ in more than the seed ({detail}): "
                             f"{hint}")
