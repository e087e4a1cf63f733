"""Planning a whole split or plan set, resumably: one JSON record per instance (Table 2's planning files).

:func:`plan_split` plans every instance of a dataset split or label-free plan set with a run's best checkpoint (a
:class:`tnlib.learning.learned_heuristic.LearnedHeuristic` per problem) into ``planning-<estimate>.jsonl`` (another
split: ``planning-<split>-<estimate>.jsonl``); :func:`plan_baseline` does the same with a symbolic heuristic
(``baseline-<domain>-<heuristic>.jsonl``, the h_FF column). :func:`plan_problem` is one record: the problem, the
search settings it ran under, the grounding, the outcome; a learned heuristic's records name its weights too, and
whose LM-cut it computed (:func:`_learned_setting`). A file holds the records of one
setting only and is resumed where it stopped: instances already there are skipped, a line cut by a crash is planned
again.
:func:`planning_summary` is a file's coverage and average evaluations, from which
:func:`tnlib.experiments.reporting.tables.render_table2` renders the paper's Table 2.
"""
from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Sequence

import numpy as np

import tnlib.progress

from tnlib.data.loading import load_split
from tnlib.data.plan_sets import load_plan_set
from tnlib.data.schema import FAST_DOWNWARD_LMCUT, PLAN_SETS
from tnlib.errors import DamagedFile
from tnlib.files import (append_jsonl, atomic_write_text, damaged_message, has_shape, read_json_lines, read_jsonl,
                         sha256_file)
from tnlib.learning.learned_heuristic import LearnedHeuristic, reads_lmcut_value, search_problem, trained_lmcut
from tnlib.learning.run_files import RunDir, baseline_file
from tnlib.paper import BASELINE_HEURISTIC
from tnlib.planning.pddl import resolve_domain
from tnlib.planning.search_settings import PAPER_SEARCH, SearchSettings

# What planning records name about the search that made them (besides the protocol and the evaluation limit):
# the grounding searched (tnlib.planning.task.load_search_task); a record made on another grounding is planned again.
GROUNDING = "unpruned"
# What to do about a planning file holding a line of another shape: planning it again plans the instances missing.
PLANNING_REMEDY = "delete that line (or the file) and run the command that planned it again: it plans what is missing"


def plan_problem(heuristic, domain_file, problem_file, settings: SearchSettings = PAPER_SEARCH,
                 on_evaluations=None) -> dict:
    """:func:`search_problem`'s outcome as a JSON-able planning record (one line of a planning file) that names the
    protocol, the evaluation limit and the grounding."""
    result = search_problem(heuristic, domain_file, problem_file, settings, on_evaluations)
    return {"problem": Path(problem_file).name, "protocol": settings.protocol,
            "max_evaluations": settings.max_evaluations,
            "grounding": GROUNDING, "status": result.status, "solved": result.solved,
            "evaluations": result.evaluations, "expansions": result.expansions,
            "seconds": round(result.seconds, 4), "plan_length": len(result.plan) if result.solved else None}


def planned(path: Path) -> dict[str, dict]:
    """The records of a planning JSON-lines file by problem file name (a line cut by a crash is skipped: that
    instance is simply planned again; a line of another shape raises DamagedFile)."""
    return {record["problem"]: record for record in read_jsonl(path, "a planning record", PLANNING_REMEDY)}


def planning_summary(records: Sequence[dict], max_evaluations: int | None = PAPER_SEARCH.max_evaluations) -> dict:
    """Coverage and the average evaluations, counting an unsolved instance as the evaluation limit it ran under
    (as the paper): the record's own ``max_evaluations``, or the argument for records that do not name
    it. Records that ran under different limits are not averaged together (ValueError)."""
    if not records:
        return {"instances": 0, "coverage": math.nan, "evaluations": math.nan, "max_evaluations": None}
    limits = {r.get("max_evaluations", max_evaluations) for r in records}
    if len(limits) > 1:
        raise ValueError(f"planning records under different evaluation limits ({sorted(limits, key=str)}) "
                         "cannot be averaged: plan them again under one limit")
    (limit,) = limits
    solved = [r["solved"] for r in records]
    # without a limit, an unsolved search ended by exhausting the state space: its own count is the count
    evaluations = [r["evaluations"] if r["solved"] or limit is None else limit for r in records]
    return {"instances": len(records), "coverage": float(np.mean(solved)), "evaluations": float(np.mean(evaluations)),
            "max_evaluations": limit}


def chosen_instances(table, instances: int | None = None, per_cell: int | None = None) -> list[str]:
    """The instances of a split or plan set to plan: with ``per_cell`` the first that many of each grid cell of a
    plan set (:meth:`tnlib.data.plan_sets.PlanSet.first_per_cell`), then the first ``instances`` of those (all
    with None)."""
    if per_cell is None:
        return table.instances()[:instances]
    if not hasattr(table, "first_per_cell"):
        raise ValueError("planning the first instances of each grid cell needs a plan set (plan-set, "
                         "plan-set-authors), not a labelled split")
    return table.first_per_cell(per_cell)[:instances]


def _planning_setting(settings: SearchSettings, extra: dict) -> dict:
    """What a planning record must hold to count as planned now: the protocol, the evaluation limit, the grounding
    and what ``extra`` names (a learned heuristic's checkpoint digest)."""
    return {"protocol": settings.protocol, "max_evaluations": settings.max_evaluations, "grounding": GROUNDING,
            **extra}


def _learned_setting(run: RunDir, config, estimate: str) -> dict:
    """What a learned heuristic's planning records name besides the search settings: the estimate, the weights
    (the checkpoint's digest: a run trained further since is planned again) and whose LM-cut it computed
    (``lmcut``: the one the model trained with, :func:`trained_lmcut`; None where the estimate reads no LM-cut
    value)."""
    lmcut = trained_lmcut(config, run.path) if reads_lmcut_value(config.head, estimate) else None
    return {"estimate": estimate, "checkpoint": sha256_file(run.best)[:16], "lmcut": lmcut}


def planned_under(record: dict, setting: dict) -> bool:
    """Whether a planning record was made under ``setting`` (:func:`_planning_setting`). A record that names no
    ``lmcut`` was made before records named it, with tnlib's LM-cut wherever its estimate read one: it stands for
    a setting of tnlib's or of none, not for Fast Downward's."""
    for key, value in setting.items():
        if key == "lmcut" and key not in record:
            if value == FAST_DOWNWARD_LMCUT:
                return False
        elif record.get(key) != value:
            return False
    return True


def _plan_instances(table, domain: str, out: Path, make_heuristic_for, extra: dict, settings: SearchSettings,
                    instances: int | None, progress: bool = False, desc: str = "",
                    per_cell: int | None = None) -> list[dict]:
    """GBFS over a split's instances (:func:`chosen_instances`), one JSON line per instance in ``out``.

    ``out`` only ever holds records of one setting: the protocol, the evaluation limit, the grounding and what
    ``extra`` names (a learned heuristic's checkpoint digest). Records made otherwise -- an earlier limit, weights
    trained further since -- are dropped when it is opened, and their instances planned again; matching records
    are kept (resuming an interrupted split plans only what is missing)."""
    domain_file = resolve_domain(domain)
    chosen = chosen_instances(table, instances, per_cell)
    setting = _planning_setting(settings, extra)
    found = read_json_lines(out)
    lines = found.records
    if found.unreadable:  # the file is written again below without them: a cut line never stays mid-file
        print(damaged_message(out, found.damage(), "the instances on those lines are planned again"), file=sys.stderr)
    records = [r for r in lines if has_shape(r, "a planning record")]
    if len(records) != len(lines):
        wrong = len(lines) - len(records)
        reason = "a line is not a planning record" if wrong == 1 else f"{wrong} lines are not planning records"
        print(damaged_message(out, reason, "dropped (the instances missing are planned again)"), file=sys.stderr)
    done = {r["problem"]: r for r in records if planned_under(r, setting)}
    if len(done) != len(lines) or found.unreadable:  # stale, repeated or cut lines: keep the current setting's only
        atomic_write_text(out, "".join(json.dumps(r) + "\n" for r in done.values()))
    waiting = [i for i in chosen if table.problem_path(i).name not in done]
    # looked up at each call (not imported by name): notebooks and tests replace the display
    bar = tnlib.progress.progress(len(chosen), desc, unit="instances", initial=len(chosen) - len(waiting),
                                  disable=not progress or not waiting, leave=False)
    for instance in waiting:
        problem = table.problem_path(instance)
        # a search that runs long (minutes at the paper's sizes) shows its evaluations; most end in seconds
        searching = tnlib.progress.LateProgress(settings.max_evaluations or 0, problem.stem, unit="evaluations",
                                                disable=not progress or settings.max_evaluations is None)
        try:
            record = plan_problem(make_heuristic_for(domain_file, problem), domain_file, problem, settings,
                                  searching.update_to)
        finally:
            searching.close()
        record.update(instance=instance, **extra)
        append_jsonl(out, record)
        done[problem.name] = record
        bar.update(1)
    bar.close()
    return [done[table.problem_path(i).name] for i in chosen]


def planning_instances(data_root, domain: str, split: str = "plan"):
    """The instances to plan: a labelled split's table or, for a plan set's name (``plan-set``,
    ``plan-set-authors``: :data:`tnlib.data.schema.PLAN_SETS`), that label-free set -- both offer ``instances()``
    and ``problem_path(instance)``."""
    if split in PLAN_SETS.values():
        return load_plan_set(data_root, domain, split)
    return load_split(data_root, domain, split)


def plan_split(run_dir, estimate: str = "default", data_root=None, split: str = "plan",
               settings: SearchSettings = PAPER_SEARCH, instances: int | None = None,
               progress: bool = False, per_cell: int | None = None) -> list[dict]:
    """Plan every instance of a dataset split (or plan set) with a run's best checkpoint; results in
    ``planning-<estimate>.jsonl`` for the plan split, ``planning-<split>-<estimate>.jsonl`` otherwise."""
    from tnlib.learning.training import read_run_config

    run_dir = Path(run_dir)
    config = read_run_config(run_dir)
    table = planning_instances(data_root or config.data_root, config.domain, split)
    setting = _learned_setting(RunDir(run_dir), config, estimate)
    fast_downward_lmcut = setting["lmcut"] == FAST_DOWNWARD_LMCUT
    return _plan_instances(
        table, config.domain, RunDir(run_dir).planning_file(estimate, split),
        lambda domain_file, problem: LearnedHeuristic(run_dir, domain_file, problem, estimate=estimate,
                                                      fast_downward_lmcut=fast_downward_lmcut),
        setting, settings, instances, progress, desc=f"{run_dir.name} {estimate}", per_cell=per_cell)


def recorded_plans(run_dir, estimate: str = "default", split: str = "plan", settings: SearchSettings = PAPER_SEARCH,
                   instances: int | None = None, per_cell: int | None = None, table=None) -> list[dict] | None:
    """What :func:`plan_split` would return for a run planned on every instance it plans already, read from its
    records without loading its model or writing anything; None where an instance is left to plan, or a line is
    damaged or of another setting (:func:`plan_split` then plans, mends or drops it). ``table``: the split's
    :func:`planning_instances`, where the caller has it already (a sweep reads it once per domain)."""
    from tnlib.learning.training import read_run_config

    run = RunDir(run_dir)
    config = read_run_config(run.path)
    table = planning_instances(config.data_root, config.domain, split) if table is None else table
    found = read_json_lines(run.planning_file(estimate, split))
    setting = _planning_setting(settings, _learned_setting(run, config, estimate))
    if found.unreadable or not all(has_shape(r, "a planning record") for r in found.records):
        return None
    done = {r["problem"]: r for r in found.records if planned_under(r, setting)}
    names = [table.problem_path(instance).name for instance in chosen_instances(table, instances, per_cell)]
    if len(done) != len(found.records) or not all(name in done for name in names):
        return None
    return [done[name] for name in names]


def planned_problems(run_dir, estimate: str = "default", split: str = "plan",
                     settings: SearchSettings = PAPER_SEARCH) -> set[str]:
    """The problem files a run's planning file holds records of under the current setting (what
    :func:`plan_split` would keep), read without loading its model; a damaged line counts as not planned."""
    return set(recorded_seconds(run_dir, estimate, split, settings)[0])


def recorded_seconds(run_dir, estimate: str = "default", split: str = "plan",
                     settings: SearchSettings = PAPER_SEARCH) -> tuple[dict[str, float], dict[str, float]]:
    """The search seconds a run's planning file records by problem file: (those of the current setting, what
    :func:`plan_split` keeps; those of another one -- an earlier l or limit -- which it plans again), read without
    loading its model. A record without seconds (or with something else there) counts with 0; a damaged line is skipped. Without the run's
    weights, or with a damaged config, nothing is of the current setting."""
    from tnlib.learning.training import read_run_config

    run = RunDir(run_dir)
    records = [r for r in read_jsonl(run.planning_file(estimate, split)) if has_shape(r, "a planning record")]
    if not records:
        return {}, {}
    setting = None
    if run.best.is_file():  # no weights: nothing is planned with them
        try:
            setting = _planning_setting(settings, _learned_setting(run, config=read_run_config(run.path),
                                                                   estimate=estimate))
        except DamagedFile:  # the planning pass mends or names it; until then nothing counts as planned
            setting = None
    current, other = {}, {}
    for record in records:
        kept = setting is not None and planned_under(record, setting)
        seconds = record.get("seconds")  # not part of a record's checked shape: a value of another type counts 0
        number = isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and math.isfinite(seconds)
        (current if kept else other)[record["problem"]] = float(seconds) if number else 0.0
    return current, other


def plan_baseline(data_root, domain: str, heuristic: str = BASELINE_HEURISTIC, out_dir=None, split: str = "plan",
                  settings: SearchSettings = PAPER_SEARCH, instances: int | None = None,
                  per_cell: int | None = None) -> list[dict]:
    """GBFS with a symbolic heuristic over a split or plan set (the paper's h_FF column); resumable like
    :func:`plan_split`."""
    out_dir = Path(out_dir or ".")
    out_dir.mkdir(parents=True, exist_ok=True)
    out = baseline_file(out_dir, domain, heuristic)
    return _plan_instances(planning_instances(data_root, domain, split), domain, out,
                           lambda domain_file, problem: heuristic,
                           {"domain": domain, "heuristic": heuristic}, settings, instances, per_cell=per_cell)
