"""Heuristics on compiled tasks: blind, goal count, h_max, h_add, h_FF (with its relaxed plan) and LM-cut.

Every heuristic has a batch entry point, ``Heuristic.batch(states) -> float64 array`` (``math.inf`` for dead
ends), which runs one numba kernel over all states; ``heuristic(state)`` evaluates one state.

The kernels, and how h_max, h_add and h_FF replicate pyperplan step for step and LM-cut follows Helmert & Domshlak
(2009), are :mod:`tnlib.planning.relaxation_kernels`.

Linear-model features (Gomoluch et al. 2017, as used in the paper): goal count, h_FF, the total number of delete
effects of the relaxed plan's actions (the deletes the relaxation ignores) and that total divided by the number of
relaxed-plan actions (0 for an empty plan, inf at dead ends). Delete effects are counted on the grounded task
(pyperplan removes deletes of facts that are irrelevant to the goal and deletes that are also added).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from tnlib.planning.relaxation_kernels import goalcount_batch, lmcut_batch, relaxation_batch
from tnlib.planning.task import State, Task, pack_states

HEURISTIC_NAMES = ("blind", "goalcount", "hmax", "hadd", "ff", "lmcut")
#: The heuristics of the delete relaxation: each is infinite on exactly the states whose relaxed task has no plan,
#: so any one of them tells the same dead ends.
RELAXATION_HEURISTICS = ("hmax", "hadd", "ff", "lmcut")


# ---------------------------------------------------------------------------------------------------------------
# Relaxed task: the index arrays the kernels need, built once per Task.


@dataclass(eq=False)
class RelaxedTask:
    """Per-task arrays for the relaxation kernels (built by :func:`relaxed_task`).

    Fact ``F`` is the pseudo "start" fact (precondition of operators that have none) and, for LM-cut, fact
    ``F + 1`` is the pseudo goal fact added by the pseudo goal operator ``O`` (preconditions: the goal).
    """

    num_facts: int
    num_ops: int
    pre_start: np.ndarray
    pre_facts: np.ndarray
    add_start: np.ndarray
    add_facts: np.ndarray
    num_pre: np.ndarray
    num_del: np.ndarray
    prec_of_start: np.ndarray  # fact (incl. start fact F) -> operators having it as precondition, sorted
    prec_of_ops: np.ndarray
    goal: np.ndarray
    is_goal_fact: np.ndarray
    # LM-cut's extended operator set: O + 1 operators over F + 2 facts.
    x_pre_start: np.ndarray
    x_pre_facts: np.ndarray
    x_add_start: np.ndarray
    x_add_facts: np.ndarray
    x_prec_of_start: np.ndarray
    x_prec_of_ops: np.ndarray
    x_achievers_start: np.ndarray
    x_achievers_ops: np.ndarray


def _invert(start: np.ndarray, items: np.ndarray, num_targets: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR inverse: for each target t, the sorted rows whose items contain t."""
    rows = np.repeat(np.arange(len(start) - 1, dtype=np.int32), np.diff(start))
    order = np.lexsort((rows, items))
    counts = np.bincount(items, minlength=num_targets)
    inv_start = np.zeros(num_targets + 1, dtype=np.int32)
    np.cumsum(counts, out=inv_start[1:])
    return inv_start, rows[order].astype(np.int32)


def _with_rows(start: np.ndarray, items: np.ndarray, extra_rows: list[list[int]], replace_empty: int | None):
    groups = [list(items[start[i] : start[i + 1]]) for i in range(len(start) - 1)]
    if replace_empty is not None:
        groups = [g if g else [replace_empty] for g in groups]
    groups += extra_rows
    new_start = np.zeros(len(groups) + 1, dtype=np.int32)
    np.cumsum([len(g) for g in groups], out=new_start[1:])
    flat = np.asarray([x for g in groups for x in g], dtype=np.int32)
    return new_start, flat


def relaxed_task(task: Task) -> RelaxedTask:
    """The (cached) kernel arrays of ``task``."""
    cached = getattr(task, "_relaxed_task", None)
    if cached is not None:
        return cached
    F, O = task.num_facts, task.num_operators
    num_pre = np.diff(task.pre_start).astype(np.int32)
    num_del = np.diff(task.del_start).astype(np.int32)
    # Start fact F is the precondition of operators without one (pyperplan's "start" state).
    pre_start_s, pre_facts_s = _with_rows(task.pre_start, task.pre_facts, [], replace_empty=F)
    prec_of_start, prec_of_ops = _invert(pre_start_s, pre_facts_s, F + 1)
    goal = task.goal.astype(np.int32)
    is_goal_fact = np.zeros(F, dtype=np.uint8)
    is_goal_fact[goal] = 1
    goal_pre = [int(g) for g in goal] or [F]
    x_pre_start, x_pre_facts = _with_rows(task.pre_start, task.pre_facts, [goal_pre], replace_empty=F)
    x_add_start, x_add_facts = _with_rows(task.add_start, task.add_facts, [[F + 1]], replace_empty=None)
    x_prec_of_start, x_prec_of_ops = _invert(x_pre_start, x_pre_facts, F + 2)
    x_achievers_start, x_achievers_ops = _invert(x_add_start, x_add_facts, F + 2)
    relaxed = RelaxedTask(
        num_facts=F,
        num_ops=O,
        pre_start=task.pre_start,
        pre_facts=task.pre_facts,
        add_start=task.add_start,
        add_facts=task.add_facts,
        num_pre=num_pre,
        num_del=num_del,
        prec_of_start=prec_of_start,
        prec_of_ops=prec_of_ops,
        goal=goal,
        is_goal_fact=is_goal_fact,
        x_pre_start=x_pre_start,
        x_pre_facts=x_pre_facts,
        x_add_start=x_add_start,
        x_add_facts=x_add_facts,
        x_prec_of_start=x_prec_of_start,
        x_prec_of_ops=x_prec_of_ops,
        x_achievers_start=x_achievers_start,
        x_achievers_ops=x_achievers_ops,
    )
    task._relaxed_task = relaxed
    return relaxed


# ---------------------------------------------------------------------------------------------------------------
# Heuristic objects


class Heuristic:
    """A heuristic bound to one task. ``batch`` is the fast path; ``__call__`` evaluates one state."""

    name = "heuristic"

    def __init__(self, task: Task):
        self.task = task
        self.relaxed = relaxed_task(task)

    def evaluate_packed(self, packed: np.ndarray) -> np.ndarray:
        """Values for the rows of an ``(n, state_bytes)`` uint8 matrix of packed states."""
        raise NotImplementedError

    def batch(self, states: Sequence[State]) -> np.ndarray:
        """float64 values of many states in one kernel call (``inf`` for dead ends)."""
        return self.evaluate_packed(pack_states(states, self.task.state_bytes))

    def __call__(self, state: State) -> float:
        return float(self.batch([state])[0])

    def __repr__(self) -> str:
        return f"<{type(self).__name__} for {self.task.name}>"


class BlindHeuristic(Heuristic):
    """0 on goal states, 1 elsewhere (pyperplan's and Fast Downward's blind heuristic for unit costs)."""

    name = "blind"

    def evaluate_packed(self, packed: np.ndarray) -> np.ndarray:
        return (goalcount_batch(packed, self.relaxed.goal) > 0).astype(np.float64)


class GoalCountHeuristic(Heuristic):
    """Number of goal facts false in the state."""

    name = "goalcount"

    def evaluate_packed(self, packed: np.ndarray) -> np.ndarray:
        return goalcount_batch(packed, self.relaxed.goal)


class _RelaxationHeuristic(Heuristic):
    mode = -1

    def _run(self, packed: np.ndarray, want_plan: bool = False):
        r = self.relaxed
        return relaxation_batch(
            np.ascontiguousarray(packed), self.mode, r.num_facts, r.pre_start, r.pre_facts, r.add_start,
            r.add_facts, r.num_pre, r.num_del, r.prec_of_start, r.prec_of_ops, r.goal, r.is_goal_fact, want_plan,
        )

    def evaluate_packed(self, packed: np.ndarray) -> np.ndarray:
        return self._run(packed)[0]


class HMaxHeuristic(_RelaxationHeuristic):
    """h_max: cost of the most expensive goal fact in the delete relaxation (admissible)."""

    name = "hmax"
    mode = 0


class HAddHeuristic(_RelaxationHeuristic):
    """h_add: sum of the relaxed costs of the goal facts."""

    name = "hadd"
    mode = 1


@dataclass(frozen=True)
class RelaxedPlan:
    """h_FF's relaxed plan for one state and the features derived from it."""

    value: float
    operators: tuple[str, ...]
    ignored_deletes_total: float
    ignored_deletes_mean: float


class FFHeuristic(_RelaxationHeuristic):
    """h_FF: size of the relaxed plan extracted from h_add's cheapest achievers (pyperplan's tie-breaking)."""

    name = "ff"
    mode = 2

    def features_packed(self, packed: np.ndarray) -> np.ndarray:
        """``(n, 3)`` columns ff, ignored deletes total, ignored deletes mean."""
        h, ignored, _ = self._run(packed)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(h > 0, ignored / np.where(h > 0, h, 1.0), 0.0)
        mean[np.isinf(h)] = np.inf
        return np.stack([h, ignored, mean], axis=1)

    def relaxed_plan(self, state: State) -> RelaxedPlan:
        """The relaxed plan (operator names, sorted) and its ignored-delete counts for one state."""
        h, ignored, plan = self._run(pack_states([state], self.task.state_bytes), want_plan=True)
        value = float(h[0])
        if math.isinf(value):
            return RelaxedPlan(math.inf, (), math.inf, math.inf)
        names = tuple(sorted(self.task.operator_names[o] for o in plan))
        total = float(ignored[0])
        return RelaxedPlan(value, names, total, total / value if value > 0 else 0.0)


class LMCutHeuristic(Heuristic):
    """LM-cut (Helmert & Domshlak 2009): admissible, dominates h_max. Ties between equally dear supporters are
    broken as :func:`tnlib.planning.relaxation_kernels.lmcut_batch` describes."""

    name = "lmcut"
    fast_downward_ties = False

    def evaluate_packed(self, packed: np.ndarray) -> np.ndarray:
        r = self.relaxed
        return lmcut_batch(
            np.ascontiguousarray(packed), r.num_facts, r.x_pre_start, r.x_pre_facts, r.x_add_start, r.x_add_facts,
            r.x_prec_of_start, r.x_prec_of_ops, r.x_achievers_start, r.x_achievers_ops, self.fast_downward_ties,
        )


class FastDownwardLMCutHeuristic(LMCutHeuristic):
    """LM-cut with Fast Downward's tie-breaking between equally dear supporters: Fast Downward's LM-cut values, the
    ones data/paper's labels hold, at the kernel's speed. The same heuristic as ``lmcut`` otherwise (its name
    too: it stands for that column's l)."""

    fast_downward_ties = True


HEURISTICS: dict[str, type[Heuristic]] = {
    "blind": BlindHeuristic,
    "goalcount": GoalCountHeuristic,
    "hmax": HMaxHeuristic,
    "hadd": HAddHeuristic,
    "ff": FFHeuristic,
    "lmcut": LMCutHeuristic,
}


def make_heuristic(name: str, task: Task) -> Heuristic:
    """A heuristic by name: one of :data:`HEURISTIC_NAMES`."""
    try:
        return HEURISTICS[name](task)
    except KeyError:
        raise ValueError(f"unknown heuristic {name!r} (choose from {', '.join(HEURISTIC_NAMES)})") from None


def linear_features(task: Task, states: Sequence[State]) -> np.ndarray:
    """The linear model's ``(n, 4)`` features, columns :data:`tnlib.paper.LINEAR_FEATURES`."""
    packed = pack_states(states, task.state_bytes)
    goalcount = GoalCountHeuristic(task).evaluate_packed(packed)
    ff = FFHeuristic(task).features_packed(packed)
    return np.column_stack([goalcount, ff])


def evaluate_all(task: Task, states: Sequence[State], names: Sequence[str] = HEURISTIC_NAMES) -> dict[str, np.ndarray]:
    """Every named heuristic plus the linear features on ``states``: name -> float64 array (inf = dead end).

    Keys: the heuristic names, then ``ignored_deletes_total`` and ``ignored_deletes_mean``.
    """
    packed = pack_states(states, task.state_bytes)
    values: dict[str, np.ndarray] = {}
    for name in names:
        heuristic = make_heuristic(name, task)
        if isinstance(heuristic, FFHeuristic):
            ff = heuristic.features_packed(packed)
            values[name] = ff[:, 0]
            values["ignored_deletes_total"] = ff[:, 1]
            values["ignored_deletes_mean"] = ff[:, 2]
        else:
            values[name] = heuristic.evaluate_packed(packed)
    return values


def as_batch_function(heuristic: Heuristic | Callable) -> Callable[[Sequence[State]], Sequence[float]]:
    """The batch callable search uses: a Heuristic's ``batch`` or any callable taking a list of states."""
    batch = getattr(heuristic, "batch", None)
    return batch if batch is not None else heuristic
