"""Per-state labels of a solved instance: the rows of tnlib's datasets.

Given a problem and an optimal plan (from :func:`tnlib.planning.fast_downward.solve`), :func:`label_instance` validates the plan,
walks it, and returns one record per visited state -- the initial state (``step`` 0) to the goal state
(``step == plan_length``) -- holding

* ``state``: every atom true in the state, lower case, sorted, *static atoms included* (``(connected ...)``,
  ``(not-eq ...)``, ``(ball ...)``: grounding compiles them away, but a model that reads the state as a set of
  atoms needs them), and ``goal``: the problem's goal atoms, sorted;
* ``h_star``: the remaining length of the optimal plan;
* ``blind``, ``goalcount``, ``hmax``, ``hadd``, ``ff``, ``lmcut`` and the linear model's ignored-delete features,
  computed in one batch per instance by :func:`tnlib.planning.heuristics.evaluate_all` -- the same code planning uses
  -- except ``lmcut`` where the profile labels with Fast Downward's LM-cut (the paper's labels; data/paper);
* ``h_sat``: an upper bound on h*, the length of the plan greedy best-first search with h_FF finds from the state
  under an evaluation limit (NaN when it finds none). Each such plan is validated too.

Why this is cheap next to the solve: the paper's code ran Fast Downward twice more per state; here all heuristics
of all states of an instance are one numba call each, and only h_sat runs a search per state.

Consistency checks (a :class:`LabelError` when one fails, since each means a bug or a non-optimal plan):
the plan is valid; the admissible heuristics (blind, h_max, LM-cut) never exceed h*; h_sat is never below h*.
"""
from __future__ import annotations

import copy
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from tnlib.data.schema import FAST_DOWNWARD_LMCUT, HEURISTIC_COLUMNS, LMCUT_SOURCES, TNLIB_LMCUT
from tnlib.errors import LabelError
from tnlib.planning.fast_downward_states import fd_state_values, translate_once
from tnlib.planning.heuristics import FFHeuristic, evaluate_all
from tnlib.planning.plans import plan_states, validate_plan
from tnlib.planning.search import gbfs
from tnlib.planning.search_settings import DISTINCT, PAPER_SEARCH, SearchSettings
from tnlib.planning.task import State, Task, load_task
from tnlib.planning.pddl import problem_atoms

ADMISSIBLE = ("blind", "hmax", "lmcut")


@dataclass
class LabelTiming:
    """Where labelling time went, in seconds: grounding both tasks, the heuristics batch, the h_sat searches."""

    ground: float
    heuristics: float
    h_sat: float
    states: int

    @property
    def total(self) -> float:
        return self.ground + self.heuristics + self.h_sat


def task_from(task: Task, state: State) -> Task:
    """The same task with ``state`` as its initial state (a shallow copy: arrays and indices are shared)."""
    moved = copy.copy(task)
    moved.init = state
    return moved


def check_fast_downward_lmcut(lmcut: np.ndarray, hmax: np.ndarray, h_star: np.ndarray, where: str,
                              after: str = "") -> None:
    """Fast Downward's LM-cut between h_max and h* on every state (it is admissible and dominates h_max, and tnlib's
    h_max equals Fast Downward's): a LabelError naming the first state outside, as ``where`` and its index, with
    ``after`` appended."""
    h_star = np.asarray(h_star, dtype=float)
    for name, bad in (("exceeds h*", lmcut > h_star + 1e-9), ("is below h_max", lmcut < hmax - 1e-9)):
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise LabelError(f"{where} {i}: Fast Downward's LM-cut {lmcut[i]:g} {name} (h* {h_star[i]:g}, "
                             f"h_max {hmax[i]:g}){after}")


def satisficing_lengths(
    task: Task, full_task: Task, states: Sequence[State], max_evaluations: int | None = PAPER_SEARCH.max_evaluations
) -> np.ndarray:
    """h_sat for each state: GBFS with h_FF on ``task``; NaN where it stops without a plan.

    Each plan found is validated on ``full_task`` (the grounding without relevance pruning, as plan validation
    requires), starting from the state it was found for.
    """
    ff = FFHeuristic(task)  # built once; its kernels only need the shared index arrays
    lengths = np.full(len(states), np.nan)
    for i, state in enumerate(states):
        # h_sat is a plan cost; the distinct-state protocol (each state evaluated once) is the labels' definition.
        result = gbfs(task_from(task, state), ff, SearchSettings(DISTINCT, max_evaluations))
        if not result.solved:
            continue
        verdict = validate_plan(task_from(full_task, state), result.plan)
        if not verdict.valid:
            raise LabelError(f"h_sat plan from state {i} is invalid: {verdict.message}")
        lengths[i] = len(result.plan)
    return lengths


def label_instance(
    domain_file: str | os.PathLike,
    problem_file: str | os.PathLike,
    plan: Sequence[str],
    sat_max_evaluations: int | None = PAPER_SEARCH.max_evaluations,
    lmcut: str = TNLIB_LMCUT,
) -> tuple[list[dict], LabelTiming]:
    """One record per state on the optimal ``plan`` (``step`` 0..len(plan)), and the time spent. ``lmcut``: whose
    LM-cut the ``lmcut`` value is (:data:`tnlib.data.schema.LMCUT_SOURCES`; Fast Downward's by
    :mod:`tnlib.planning.fast_downward_states`, on the problem translated once, and at least h_max).

    ``plan`` is a list of ``(op arg ...)`` strings as :func:`tnlib.planning.fast_downward.solve` returns. Record keys:
    :data:`tnlib.data.schema.RECORD_COLUMNS` (floats for heuristic values, ints for ``step``/``plan_length``/``h_star``, lists of
    atoms for ``state``/``goal``). Raises :class:`LabelError` when the plan is invalid or the labels are
    inconsistent, and :class:`tnlib.errors.TaskError` for unreadable PDDL.
    """
    if lmcut not in LMCUT_SOURCES:
        raise ValueError(f"lmcut must be one of {', '.join(LMCUT_SOURCES)}, got {lmcut!r}")
    started = time.perf_counter()
    problem_file = Path(problem_file)
    # States are simulated (and the plan validated) on the unpruned grounding, the one planning searches
    # (tnlib.planning.task.load_search_task); heuristic values and h_sat's search use the relevance-pruned one,
    # which gives the same values faster. Both have the same facts, so the packed states are interchangeable --
    # checked below rather than assumed.
    full = load_task(domain_file, problem_file, remove_irrelevant_operators=False)
    task = load_task(domain_file, problem_file)
    if full.fact_names != task.fact_names:
        raise LabelError(f"{problem_file}: pruned and unpruned groundings have different facts")
    init_atoms, goal_atoms = problem_atoms(domain_file, problem_file)
    static_atoms = [atom for atom in init_atoms if atom not in full.fact_index]
    verdict = validate_plan(full, plan)
    if not verdict.valid:
        raise LabelError(f"{problem_file}: the optimal plan is invalid: {verdict.message}")
    states = plan_states(full, plan)
    grounded = time.perf_counter()

    length = len(plan)
    h_star = np.arange(length, -1, -1, dtype=np.int64)
    values = evaluate_all(task, states)
    state_atoms = [sorted(static_atoms + [full.fact_names[f] for f in full.state_to_indices(s)]) for s in states]
    if lmcut == FAST_DOWNWARD_LMCUT:
        values["lmcut"] = fd_state_values(translate_once(domain_file, problem_file), state_atoms)
        check_fast_downward_lmcut(values["lmcut"], values["hmax"], h_star, f"{problem_file} step")
    evaluated = time.perf_counter()
    h_sat = satisficing_lengths(task, full, states, sat_max_evaluations)
    searched = time.perf_counter()

    for name in ADMISSIBLE:
        over = np.flatnonzero(values[name] > h_star + 1e-9)
        if over.size:
            i = int(over[0])
            raise LabelError(
                f"{problem_file}: {name} = {values[name][i]:g} exceeds h* = {h_star[i]} at step {i}"
                " (the plan is not optimal, or the heuristic is wrong)"
            )
    below = np.flatnonzero(h_sat < h_star)  # NaN compares False: missing h_sat is never flagged
    if below.size:
        i = int(below[0])
        raise LabelError(f"{problem_file}: h_sat = {h_sat[i]:g} is below h* = {h_star[i]} at step {i}")

    records = []
    for i, atoms in enumerate(state_atoms):
        record = {
            "step": i,
            "plan_length": length,
            "state": atoms,
            "goal": list(goal_atoms),
            "h_star": int(h_star[i]),
        }
        for name in HEURISTIC_COLUMNS:
            record[name] = float(values[name][i])
        record["ff_ignored_deletes_total"] = float(values["ignored_deletes_total"][i])
        record["ff_ignored_deletes_mean"] = float(values["ignored_deletes_mean"][i])
        record["h_sat"] = float(h_sat[i])
        records.append(record)
    timing = LabelTiming(grounded - started, evaluated - grounded, searched - evaluated, len(states))
    return records, timing


__all__ = [
    "LabelTiming",
    "check_fast_downward_lmcut",
    "label_instance",
    "satisficing_lengths",
    "task_from",
]
