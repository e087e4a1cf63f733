"""Optimal plans for generation from a domain's exact solver (:mod:`tnlib.planning.optimal_costs`) instead of Fast
Downward's A* with LM-cut.

A split's ``solver`` setting (:data:`tnlib.data.schema.SOLVERS`) names the route. ``exact`` labels with the domain's
exact solver where it has one and falls back to A* with LM-cut where it has none, so one setting serves a run over
every domain (all four of the paper's have one); the split's settings record the route it actually took
(:func:`split_solver`). The exact solvers have no time or memory limit: they never fail a solvable instance, so a
split made with them has no slot lost to the solver's limits, and no out-of-reach cell
(:mod:`tnlib.data.slot_filling` fills the out-of-reach slots of an A* split with them).

The plan an exact solver returns is labelled like A*'s: validated by the kit's validator, then walked, with h* the
length of the rest of it (:func:`tnlib.data.labels.label_instance`). Both routes give the same h* on every state of
every instance (both plans are optimal); where an instance has several optimal plans they may walk different
states.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from tnlib.data.schema import DEFAULT_SOLVER, EXACT_SOLVER, SOLVERS
from tnlib.errors import DatasetError
from tnlib.planning.optimal_costs import OPTIMAL_PLANS, optimal_plan
from tnlib.planning.pddl import problem_atoms


def check_solver(solver: str) -> str:
    """``solver`` when it is one of :data:`tnlib.data.schema.SOLVERS`; a DatasetError naming them otherwise."""
    if solver not in SOLVERS:
        raise DatasetError(f"unknown solver {solver!r}; choose from {', '.join(SOLVERS)}")
    return solver


def split_solver(domain: str, solver: str | None) -> str:
    """The route a split of ``domain`` is labelled by when ``solver`` is asked for (None: the default): the exact
    solver only where the domain has one."""
    solver = check_solver(solver or DEFAULT_SOLVER)
    if solver == EXACT_SOLVER and domain not in OPTIMAL_PLANS:
        return DEFAULT_SOLVER
    return solver


@dataclass(frozen=True)
class ExactSolve:
    """An exact solver's optimal plan (``(op arg ...)`` strings) and the seconds it took (parsing included)."""

    plan: list[str]
    seconds: float


def solve_exactly(domain: str, problem_file: str | Path, max_nodes: int | None = None) -> ExactSolve:
    """An optimal plan of the problem's initial state by the domain's exact solver. Raises
    :class:`tnlib.errors.OutsideFormulaScope` for a problem its solver does not cover (never a plan it cannot vouch
    for), and its :class:`tnlib.errors.SearchNodeLimit` when a searching solver is given ``max_nodes`` and needs
    more."""
    started = time.perf_counter()
    init, goal = problem_atoms(domain, problem_file)
    plan = optimal_plan(domain, init, goal, max_nodes=max_nodes)
    return ExactSolve(plan, time.perf_counter() - started)


__all__ = ["ExactSolve", "check_solver", "solve_exactly", "split_solver"]
