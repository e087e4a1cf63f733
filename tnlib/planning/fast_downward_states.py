"""Fast Downward's heuristic values on many states of one problem: the paper's per-state labels, at a tenth of
their cost.

The paper's labels hold Fast Downward's LM-cut (its authors' data generation asks Fast Downward for the heuristic
values of every state of an optimal plan, each state written as the initial state of a problem of its own:
:func:`state_problem_text`, and :func:`tnlib.planning.fast_downward.fd_heuristic_value` on it). Translating each such
problem takes about nine tenths of the time. Here the problem is translated once and each state is written into
the SAS+ task's initial state (:func:`sas_initial_values`: every variable takes the value whose atom holds in the
state, else its negated atom or ``<none of those>``); the search binary then evaluates it with
``astar(HEURISTIC, bound=0)``. Whether both ways give the same values is measured, not assumed: the relabelling
(:mod:`tnlib.data.lmcut_relabelling`) translates a sample of each split's states one by one and stops on any
difference, and tests/planning/test_fast_downward_states.py compares them state for state on every domain.

tnlib's own LM-cut (:mod:`tnlib.planning.relaxation_kernels`) breaks ties between equally costly landmarks in
another order and is weaker on visitall; planning computes l with that kernel (a search calls it on every state it
evaluates, where a Fast Downward process a state would cost more than the search), breaking ties as Fast Downward
does where the model trained on Fast Downward's values.
"""
from __future__ import annotations

import math
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from tnlib.errors import TaskError
from tnlib.planning.fast_downward import resolve_domain_file, run_stage, search_binary, translate_command
from tnlib.planning.pddl import read_pddl_text

# What the labels hold: Fast Downward's LM-cut, as the authors' data generation computed it.
LMCUT = "lmcut()"
NONE_OF_THOSE = "<none of those>"
_VALUE = re.compile(r"(Negated)?Atom (\S+?)\((.*)\)$")


@dataclass(frozen=True)
class SasTask:
    """A translated task as text, with what writing another initial state into it needs: each variable's value
    names as atoms (``(pred arg ...)``, None for ``<none of those>``), whether the name is the atom's negation, and
    where the initial state's lines are."""

    lines: tuple[str, ...]
    values: tuple[tuple[tuple[str | None, bool], ...], ...]
    state_start: int  # the index of ``begin_state``
    state_end: int  # the index of ``end_state``

    @classmethod
    def parse(cls, text: str) -> "SasTask":
        lines = tuple(text.splitlines())
        if "begin_rule" in lines:
            raise TaskError("the translated task has axioms (derived predicates), which tnlib does not evaluate "
                            "state by state")
        values = []
        i = 0
        while lines[i] != "begin_state":
            if lines[i] == "begin_variable":
                count = int(lines[i + 3])
                values.append(tuple(_value_atom(name) for name in lines[i + 4:i + 4 + count]))
                i += 4 + count
            else:
                i += 1
        return cls(lines, tuple(values), i, lines.index("end_state", i))

    def with_state(self, atoms: Iterable[str]) -> str:
        """The task's text with ``atoms`` (a state's true atoms, static ones may be among them) as its initial
        state."""
        initial = sas_initial_values(self.values, frozenset(atoms))
        return "\n".join(self.lines[:self.state_start + 1] + tuple(map(str, initial))
                         + self.lines[self.state_end:]) + "\n"


def _value_atom(name: str) -> tuple[str | None, bool]:
    if name == NONE_OF_THOSE:
        return None, False
    match = _VALUE.match(name)
    if match is None:
        raise TaskError(f"unexpected value name in the translated task: {name!r}")
    args = [a.strip() for a in match.group(3).split(",") if a.strip()]
    return "(" + " ".join([match.group(2)] + args) + ")", bool(match.group(1))


def sas_initial_values(values: Sequence[Sequence[tuple[str | None, bool]]], atoms: frozenset[str]) -> list[int]:
    """Each variable's value in the state whose true atoms are ``atoms``: the one whose atom holds; where none
    does, the negated atom's or ``<none of those>``. A TaskError where two values of one variable hold (the state
    breaks an invariant the translator proved, so it is not reachable) or none may stand."""
    initial = []
    for variable, names in enumerate(values):
        holding = [k for k, (atom, negated) in enumerate(names) if atom is not None and not negated and atom in atoms]
        if len(holding) > 1:
            raise TaskError(f"variable {variable}: {', '.join(names[k][0] for k in holding)} hold at once")
        if not holding:
            holding = [k for k, (atom, negated) in enumerate(names) if atom is None or (negated and atom not in atoms)]
        if not holding:
            raise TaskError(f"variable {variable}: no value of {[n for n, _ in names]} stands in the state")
        initial.append(holding[0])
    return initial


def state_problem_text(problem_text: str, atoms: Iterable[str]) -> str:
    """The problem with ``atoms`` as its ``:init``: a state written as a problem of its own, as the authors' data
    generation wrote each state it labelled."""
    start, end = _init_span(problem_text)
    return problem_text[:start] + "(:init\n  " + "\n  ".join(atoms) + ")" + problem_text[end:]


def _init_span(text: str) -> tuple[int, int]:
    """Where the ``(:init ...)`` section starts and ends, comments skipped."""
    plain = re.sub(r";[^\n]*", lambda m: " " * len(m.group(0)), text)
    found = re.search(r"\(\s*:init\b", plain, re.IGNORECASE)
    if found is None:
        raise TaskError("the problem has no (:init ...) section")
    depth = 0
    for i in range(found.start(), len(plain)):
        depth += {"(": 1, ")": -1}.get(plain[i], 0)
        if depth == 0:
            return found.start(), i + 1
    raise TaskError("the problem's (:init ...) section is not closed")


def translate_once(domain_file: str | os.PathLike, problem_file: str | os.PathLike, time_limit: float = 300,
                   memory_limit_mb: int | None = 4000) -> SasTask:
    """The problem translated by Fast Downward's translator, parsed."""
    domain_path = resolve_domain_file(domain_file).resolve()
    with tempfile.TemporaryDirectory(prefix="tnlib-fd-states-") as tmp:
        folder = Path(tmp)
        problem_path = folder / "problem.pddl"
        problem_path.write_text(read_pddl_text(problem_file), encoding="utf-8")
        stage = run_stage(translate_command() + [str(domain_path), str(problem_path), "--sas-file", "output.sas"],
                           folder, None, time_limit, memory_limit_mb)
        if stage.exit_code != 0:
            raise TaskError(f"{problem_file}: Fast Downward's translator failed (exit {stage.exit_code}):\n"
                            f"{stage.output[-2000:]}")
        return SasTask.parse((folder / "output.sas").read_text())


def fd_state_values(sas: SasTask, states: Sequence[Iterable[str]], heuristic: str = LMCUT,
                    time_limit: float = 60, memory_limit_mb: int | None = 4000) -> np.ndarray:
    """Fast Downward's ``heuristic`` on each state (a collection of its true atoms) of the translated task ``sas``:
    one search process a state, ``astar(HEURISTIC, bound=0)``, which evaluates the initial state and stops.
    ``math.inf`` for a state Fast Downward proves a dead end; a TaskError where it reports no value."""
    values = np.empty(len(states), dtype=np.float64)
    with tempfile.TemporaryDirectory(prefix="tnlib-fd-states-") as tmp:
        folder = Path(tmp)
        task_file = folder / "state.sas"
        for i, atoms in enumerate(states):
            task_file.write_text(sas.with_state(atoms))
            stage = run_stage([str(search_binary()), "--search", f"astar({heuristic}, bound=0)"], folder,
                               task_file, time_limit, memory_limit_mb)
            found = re.search(r"Initial heuristic value for [^:]+: (\S+)", stage.output)
            if found is None:
                raise TaskError(f"state {i}: Fast Downward reported no value of {heuristic} "
                                f"(exit {stage.exit_code}):\n{stage.output[-2000:]}")
            values[i] = math.inf if found.group(1) == "infinity" else float(found.group(1))
            for log in folder.glob("*.log"):  # one log a process: the folder would fill up
                log.unlink()
    return values


__all__ = ["LMCUT", "SasTask", "fd_state_values", "sas_initial_values", "state_problem_text", "translate_once"]
