"""Planning tasks: parse and ground PDDL with pyperplan, then compile to arrays.

A :class:`Task` is a grounded STRIPS task with unit costs in array form. Facts are indexed ``0..F-1`` and
operators ``0..O-1`` in sorted name order, so indices never depend on ``PYTHONHASHSEED`` (pyperplan keeps facts
and operators in hash-ordered sets). Operators are stored as CSR index arrays (``pre_start``/``pre_facts``,
``add_start``/``add_facts``, ``del_start``/``del_facts``): the facts of operator ``o`` are
``pre_facts[pre_start[o]:pre_start[o + 1]]``, sorted ascending.

State representation
--------------------
A state is an immutable ``bytes`` object of ``ceil(F / 8)`` bytes holding one bit per fact, little-endian bit
order: fact ``i`` is true iff ``state[i >> 3] >> (i & 7) & 1``. Bits beyond ``F`` are always zero, so two
states are equal iff their bytes are equal. ``bytes`` hash fast (and cache their hash), are compact (37 bytes
for 16-block blocksworld), and a list of them joins into one ``(n, ceil(F/8))`` uint8 matrix without copying
per fact, which is what the numba kernels of :mod:`tnlib.planning.heuristics` and the successor generator consume.
Use :meth:`Task.state_to_facts` / :meth:`Task.facts_to_state` to convert to and from fact names and
:meth:`Task.states_to_matrix` for a dense 0/1 matrix (model input).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
from numba import njit

from tnlib.errors import TaskError
from tnlib.kernel_cache import cache_by_folder_sources
from tnlib.planning.pddl import (
    describe_pyperplan_error,
    parse_domain,
    parse_problem,
    quiet_pyperplan,
    resolve_domain,
)

cache_by_folder_sources(__file__)  # before the first njit(cache=True): tnlib.kernel_cache says why

State = bytes

def _csr_arrays(groups: Sequence[Iterable[int]]) -> tuple[np.ndarray, np.ndarray]:
    start = np.zeros(len(groups) + 1, dtype=np.int32)
    flat: list[int] = []
    for i, group in enumerate(groups):
        items = sorted(group)
        flat.extend(items)
        start[i + 1] = len(flat)
    return start, np.asarray(flat, dtype=np.int32)


@dataclass(eq=False)
class Task:
    """A grounded unit-cost STRIPS task in array form (see the module docstring for the state format).

    Build one with :func:`load_task`. Index arrays are int32; ``goal`` holds the goal fact indices.
    """

    name: str
    domain_name: str
    domain_file: str
    problem_file: str
    fact_names: list[str]
    operator_names: list[str]
    pre_start: np.ndarray
    pre_facts: np.ndarray
    add_start: np.ndarray
    add_facts: np.ndarray
    del_start: np.ndarray
    del_facts: np.ndarray
    goal: np.ndarray
    init: State
    fact_index: dict[str, int] = field(init=False, repr=False)
    operator_index: dict[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.fact_index = {name: i for i, name in enumerate(self.fact_names)}
        self.operator_index = {name: i for i, name in enumerate(self.operator_names)}

    # -- sizes -------------------------------------------------------------------------------------------------
    @property
    def num_facts(self) -> int:
        return len(self.fact_names)

    @property
    def num_operators(self) -> int:
        return len(self.operator_names)

    @property
    def state_bytes(self) -> int:
        """Length in bytes of a packed state."""
        return (self.num_facts + 7) // 8

    def __repr__(self) -> str:
        return f"<Task {self.name} ({self.domain_name}): {self.num_facts} facts, {self.num_operators} operators>"

    # -- operators ---------------------------------------------------------------------------------------------
    def op_id(self, op: int | str) -> int:
        """Operator index from an index or a name such as ``(pickup a)`` (case-insensitive, spaces normalised)."""
        if isinstance(op, (int, np.integer)):
            if not 0 <= op < self.num_operators:
                raise IndexError(f"operator index {op} out of range")
            return int(op)
        key = "(" + " ".join(str(op).strip().lower().strip("()").split()) + ")"
        try:
            return self.operator_index[key]
        except KeyError:
            raise KeyError(f"unknown operator {op!r}") from None

    def preconditions(self, op: int) -> np.ndarray:
        return self.pre_facts[self.pre_start[op] : self.pre_start[op + 1]]

    def add_effects(self, op: int) -> np.ndarray:
        return self.add_facts[self.add_start[op] : self.add_start[op + 1]]

    def delete_effects(self, op: int) -> np.ndarray:
        return self.del_facts[self.del_start[op] : self.del_start[op + 1]]

    # -- states ------------------------------------------------------------------------------------------------
    def facts_to_state(self, facts: Iterable[str | int]) -> State:
        """Pack fact names (or indices) into a state."""
        bits = np.zeros(self.state_bytes * 8, dtype=np.uint8)
        for fact in facts:
            index = fact if isinstance(fact, (int, np.integer)) else self.fact_index[fact]
            bits[index] = 1
        return np.packbits(bits, bitorder="little").tobytes()

    def state_to_facts(self, state: State) -> frozenset[str]:
        """The set of fact names true in ``state``."""
        return frozenset(self.fact_names[i] for i in self.state_to_indices(state))

    def state_to_indices(self, state: State) -> np.ndarray:
        """Sorted indices of the facts true in ``state``."""
        return np.flatnonzero(self.state_to_array(state))

    def state_to_array(self, state: State) -> np.ndarray:
        """Dense 0/1 uint8 vector of length F."""
        return np.unpackbits(np.frombuffer(state, dtype=np.uint8), bitorder="little", count=self.num_facts)

    def states_to_matrix(self, states: Sequence[State]) -> np.ndarray:
        """Dense ``(len(states), F)`` 0/1 uint8 matrix (for models and datasets)."""
        packed = pack_states(states, self.state_bytes)
        return np.unpackbits(packed, axis=1, bitorder="little", count=self.num_facts)

    def holds(self, state: State, fact: int | str) -> bool:
        index = fact if isinstance(fact, (int, np.integer)) else self.fact_index[fact]
        return bool(state[index >> 3] >> (index & 7) & 1)

    # -- transitions -------------------------------------------------------------------------------------------
    def is_goal(self, state: State) -> bool:
        return _is_goal(np.frombuffer(state, dtype=np.uint8), self.goal)

    def applicable(self, state: State, op: int | str) -> bool:
        o = self.op_id(op)
        return all(self.holds(state, f) for f in self.preconditions(o))

    def apply(self, state: State, op: int | str) -> State:
        """Successor of ``state`` under ``op``; raises ValueError when ``op`` is not applicable."""
        o = self.op_id(op)
        if not self.applicable(state, o):
            raise ValueError(f"operator {self.operator_names[o]} is not applicable")
        bits = bytearray(state)
        for f in self.delete_effects(o):
            bits[f >> 3] &= ~(1 << (f & 7)) & 0xFF
        for f in self.add_effects(o):
            bits[f >> 3] |= 1 << (f & 7)
        return bytes(bits)

    def successors(self, state: State) -> list[tuple[int, State]]:
        """``(operator index, successor)`` for every applicable operator, in operator index order."""
        ops, packed = self.expand(state)
        width = self.state_bytes
        return [(int(o), packed[i * width : (i + 1) * width]) for i, o in enumerate(ops)]

    def expand(self, state: State) -> tuple[np.ndarray, bytes]:
        """Fast successor generation: applicable operator indices and their successors joined in one bytes
        object (successor ``i`` is ``packed[i*w:(i+1)*w]`` with ``w = state_bytes``)."""
        ops, succ = _expand(
            np.frombuffer(state, dtype=np.uint8),
            self.pre_start,
            self.pre_facts,
            self.add_start,
            self.add_facts,
            self.del_start,
            self.del_facts,
        )
        return ops, succ.tobytes()


def pack_states(states: Sequence[State], width: int) -> np.ndarray:
    """Join packed states into one read-only ``(n, width)`` uint8 matrix (no per-fact copying).

    Always read-only, even when empty, so the numba kernels see one array type and compile once.
    """
    return np.frombuffer(b"".join(states), dtype=np.uint8).reshape(len(states), width)


@njit(cache=True)
def _is_goal(state: np.ndarray, goal: np.ndarray) -> bool:
    for g in goal:
        if not (state[g >> 3] >> (g & 7)) & 1:
            return False
    return True


@njit(cache=True)
def _expand(state, pre_start, pre_facts, add_start, add_facts, del_start, del_facts):
    num_ops = pre_start.shape[0] - 1
    applicable = np.empty(num_ops, dtype=np.int32)
    count = 0
    for o in range(num_ops):
        ok = True
        for k in range(pre_start[o], pre_start[o + 1]):
            f = pre_facts[k]
            if not (state[f >> 3] >> (f & 7)) & 1:
                ok = False
                break
        if ok:
            applicable[count] = o
            count += 1
    succ = np.empty((count, state.shape[0]), dtype=np.uint8)
    for i in range(count):
        o = applicable[i]
        succ[i, :] = state
        for k in range(del_start[o], del_start[o + 1]):
            f = del_facts[k]
            succ[i, f >> 3] &= np.uint8(~(1 << (f & 7)) & 0xFF)
        for k in range(add_start[o], add_start[o + 1]):
            f = add_facts[k]
            succ[i, f >> 3] |= np.uint8(1 << (f & 7))
    return applicable[:count].copy(), succ


def compile_task(grounded, domain_name: str = "", domain_file: str = "", problem_file: str = "") -> Task:
    """Compile a pyperplan ``Task`` into a :class:`Task` with facts and operators in sorted name order."""
    fact_names = sorted(grounded.facts)
    fact_index = {name: i for i, name in enumerate(fact_names)}
    operators = sorted(grounded.operators, key=lambda op: op.name)
    names = [op.name for op in operators]
    if len(set(names)) != len(names):  # pyperplan names operators by action and arguments, so never expected
        raise TaskError(f"{problem_file}: grounding produced duplicate operator names")
    pre_start, pre_facts = _csr_arrays([[fact_index[f] for f in op.preconditions] for op in operators])
    add_start, add_facts = _csr_arrays([[fact_index[f] for f in op.add_effects] for op in operators])
    del_start, del_facts = _csr_arrays([[fact_index[f] for f in op.del_effects] for op in operators])
    goal = np.asarray(sorted(fact_index[g] for g in grounded.goals), dtype=np.int32)
    bits = np.zeros(((len(fact_names) + 7) // 8) * 8, dtype=np.uint8)
    for f in grounded.initial_state:
        bits[fact_index[f]] = 1
    init = np.packbits(bits, bitorder="little").tobytes()
    return Task(
        name=grounded.name,
        domain_name=domain_name,
        domain_file=str(domain_file),
        problem_file=str(problem_file),
        fact_names=fact_names,
        operator_names=names,
        pre_start=pre_start,
        pre_facts=pre_facts,
        add_start=add_start,
        add_facts=add_facts,
        del_start=del_start,
        del_facts=del_facts,
        goal=goal,
        init=init,
    )


def parse_and_ground(
    domain_file: str | os.PathLike, problem_file: str | os.PathLike, remove_irrelevant_operators: bool = True
):
    """Parse and ground with pyperplan; returns pyperplan's ``Task`` (hash-ordered sets; for reference use).

    The returned task carries the domain's name as ``domain_name``.
    """
    from pyperplan import grounding

    domain_path, problem_path = Path(domain_file), Path(problem_file)
    with quiet_pyperplan():
        domain = parse_domain(domain_path)
        problem = parse_problem(problem_path, domain)
        try:
            grounded = grounding.ground(problem, True, remove_irrelevant_operators)
        except (Exception, SystemExit) as err:  # noqa: BLE001
            raise TaskError(f"{problem_path}: grounding failed: {describe_pyperplan_error(err)}") from None
    grounded.domain_name = domain.name
    return grounded


def check_pddl(domain_file: str | os.PathLike, problem_file: str | os.PathLike) -> None:
    """Parse a domain (file or shipped key) and a problem without grounding them: a :class:`TaskError` naming the
    file for unreadable, malformed or mismatched PDDL (what ``tnlib solve`` checks before calling Fast Downward)."""
    with quiet_pyperplan():
        parse_problem(Path(problem_file), parse_domain(resolve_domain(domain_file)))


def domain_name(domain_file: str | os.PathLike) -> str:
    """The name a domain file (or a shipped domain key) defines, as pyperplan reads ``(define (domain NAME) ...)``:
    what a problem's ``(:domain NAME)`` and a grounded :class:`Task`'s ``domain_name`` are compared with."""
    with quiet_pyperplan():
        return parse_domain(resolve_domain(domain_file)).name


def load_search_task(domain_file: str | os.PathLike, problem_file: str | os.PathLike) -> Task:
    """The grounding planning searches (Table 2, ``tnlib plan``): unpruned, as the authors' planner grounds.

    Relevance pruning also drops goal-irrelevant *effects* (in visitall, ``visited`` of a cell that is not a goal),
    so its states would differ from the dataset's -- which are simulated on the unpruned grounding -- and a learned
    model would see inputs it was never trained on; the search would also merge states the paper's planner keeps
    apart and count fewer evaluations.
    """
    return load_task(domain_file, problem_file, remove_irrelevant_operators=False)


def load_task(
    domain_file: str | os.PathLike, problem_file: str | os.PathLike, remove_irrelevant_operators: bool = True
) -> Task:
    """Parse, ground and compile a PDDL instance. ``domain_file`` may also be a shipped domain key.

    Grounding is pyperplan's: static facts are compiled away and, by default, its relevance analysis drops
    operators and effects that cannot matter for the goal (enough for heuristic values, which it leaves
    unchanged). Plan validation, the dataset's states and planning (:func:`load_search_task`) ground with
    ``remove_irrelevant_operators=False``, so that goal-irrelevant actions and effects are simulated faithfully;
    the fact set is the same either way.

    Raises :class:`TaskError` (a ValueError) naming the file for unreadable, malformed or mismatched PDDL.
    """
    domain_path = resolve_domain(domain_file)
    grounded = parse_and_ground(domain_path, problem_file, remove_irrelevant_operators)
    return compile_task(grounded, grounded.domain_name, str(domain_path), str(problem_file))
