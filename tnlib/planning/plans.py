"""Plans: IPC plan files and a validator that simulates a plan on a compiled task.

IPC format: one ground action per line, ``(action arg1 arg2)`` in lower case, then a comment line
``; cost = N (unit cost)``. Reading accepts blank lines and ``;`` comments anywhere, and any case and spacing.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from tnlib.errors import PlanError
from tnlib.files import atomic_write_text
from tnlib.planning.task import Task


def format_plan(plan: Sequence[str]) -> str:
    """IPC plan text for a sequence of operator names."""
    lines = [normalize_action(step) for step in plan]
    lines.append(f"; cost = {len(plan)} (unit cost)")
    return "\n".join(lines) + "\n"


def write_plan(plan: Sequence[str], path: str | os.PathLike) -> None:
    """Writes the plan's IPC text whole or not at all: a validator never reads half a plan."""
    atomic_write_text(path, format_plan(plan))


def normalize_action(step: str) -> str:
    """``(Pick-Up  A)`` / ``pick-up a`` -> ``(pick-up a)``."""
    inner = step.strip()
    if inner.startswith("(") and inner.endswith(")"):
        inner = inner[1:-1]
    words = inner.lower().split()
    if not words or any("(" in w or ")" in w for w in words):
        raise PlanError(f"not an action: {step!r}")
    return "(" + " ".join(words) + ")"


def parse_plan(text: str, source: str = "<plan>") -> list[str]:
    """Operator names from IPC plan text."""
    plan = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split(";", 1)[0].strip()
        if not line:
            continue
        if not (line.startswith("(") and line.endswith(")")):
            raise PlanError(f"{source}:{number}: expected '(action args)', got {raw.strip()!r}")
        try:
            plan.append(normalize_action(line))
        except PlanError as err:
            raise PlanError(f"{source}:{number}: {err}") from None
    return plan


def read_plan(path: str | os.PathLike) -> list[str]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise PlanError(f"{path}: cannot read plan file ({err.strerror or err})") from None
    return parse_plan(text, str(path))


@dataclass
class ValidationResult:
    """Verdict of :func:`validate_plan`.

    ``failed_step`` is the 1-based index of the first step that is unknown or inapplicable (None otherwise);
    ``missing_preconditions`` its false preconditions; ``unmet_goals`` the goal facts false at the end.
    """

    valid: bool
    length: int
    failed_step: int | None = None
    failed_action: str | None = None
    unknown_action: bool = False
    missing_preconditions: list[str] = field(default_factory=list)
    unmet_goals: list[str] = field(default_factory=list)

    @property
    def message(self) -> str:
        if self.valid:
            return f"valid plan, {self.length} steps, cost {self.length}"
        if self.failed_step is not None and self.unknown_action:
            return (
                f"step {self.failed_step}: unknown action {self.failed_action}"
                " (no such ground action, or one whose static preconditions never hold)"
            )
        if self.failed_step is not None:
            return (
                f"step {self.failed_step}: {self.failed_action} is not applicable,"
                f" missing preconditions: {' '.join(self.missing_preconditions)}"
            )
        return f"goal not reached after {self.length} steps, unmet goals: {' '.join(self.unmet_goals)}"

    def __bool__(self) -> bool:
        return self.valid


def validate_plan(task: Task, plan: Iterable[str | int]) -> ValidationResult:
    """Simulate ``plan`` (operator names or indices) from the initial state of ``task``.

    For plans from other planners load the task with ``remove_irrelevant_operators=False`` (as ``tnlib validate``
    does): pyperplan's relevance analysis removes actions that cannot help reach the goal.
    """
    steps = list(plan)
    state = task.init
    for k, step in enumerate(steps, start=1):
        try:
            op = task.op_id(step)
        except (KeyError, IndexError):
            return ValidationResult(False, len(steps), k, str(step), unknown_action=True)
        missing = [task.fact_names[f] for f in task.preconditions(op) if not task.holds(state, int(f))]
        if missing:
            return ValidationResult(False, len(steps), k, task.operator_names[op], missing_preconditions=missing)
        state = task.apply(state, op)
    unmet = [task.fact_names[g] for g in task.goal if not task.holds(state, int(g))]
    return ValidationResult(not unmet, len(steps), unmet_goals=unmet)


def plan_states(task: Task, plan: Iterable[str | int]) -> list[bytes]:
    """The initial state followed by the state after each step (raises ValueError on an inapplicable step)."""
    states = [task.init]
    for step in plan:
        states.append(task.apply(states[-1], task.op_id(step)))
    return states
