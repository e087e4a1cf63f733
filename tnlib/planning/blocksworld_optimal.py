"""Exact optimal plan costs h* (and optimal plans) for any state of the 4-operator blocksworld (``pickup``,
``putdown``, ``stack``, ``unstack``), by a search over which blocks go to the table, after Gupta and Nau ("On the
complexity of blocks-world planning", AIJ 1992) and Slaney and Thiébaux ("Blocks World revisited", AIJ 2001).

A state and a goal are lists of atoms as a dataset row stores them (``(on b1 b2)``, ``(on-table b3)``,
``(clear b1)``, ``(arm-empty)``, ``(holding b4)``). The goal is a set of ``(on x y)`` atoms, as the generator
writes it: it gives some blocks a goal support (the block they must end on) and says nothing of the others --
where a goal tower's bottom block stands, or what lies on a goal tower's top block, is free. Goals with other atoms
(``on-table``, ``clear``, ``arm-empty``, ``holding``) raise :class:`~tnlib.errors.OutsideFormulaScope`, as do atoms
that describe no state of the domain.

**Moves.** Call a *move* the pair of actions that takes a clear block from where it lies (a block or the table) and
puts it somewhere (the table or a clear block). From a state with the hand empty, a plan is a sequence of moves,
perhaps followed by one last pick; the goal has only ``on`` atoms and a pick makes none true, so an optimal plan ends
with the hand empty and costs ``2 M`` for ``M`` the fewest moves. With a block ``h`` held, the first action puts
``h`` down somewhere. Putting it on a block ``y`` other than its goal support, or on its goal support while that
is not in position (below), is never better than the table: a plan from the state with ``h`` on ``y`` can be
replayed from ``h`` on the table -- nothing reaches ``y``'s top before ``h`` leaves it; when ``h`` first moves it
goes where it went from ``y`` (one move fewer if that is the table); if it never moves, ``h`` has no goal support
and no block must end on ``y``, so the goal holds with ``h`` on the table too. So h* is ``1 + 2 M`` of the state
after putting ``h`` on the table or, where its goal support is clear and in position, on it (a move that is
constructive, below, so no worse than the table).

**In position.** A block with a goal support ``g`` is in position if it lies on ``g`` and ``g`` is in position; a
block without one is in position if it lies on the table, or on an in-position block that is no block's goal
support. Every block not in position moves at least once (the lowest block of its tower not in position lies on a
wrong support, or on a block another block must end on), so ``M >= n``, ``n`` the blocks not in position, and
``M = 0`` exactly when the goal holds. Blocks in position never need to move.

**Normal form** (Gupta and Nau prove it for complete goals; for these partial goals the same exchange arguments
hold, a block without goal support ending on the table at no loss by the replay argument above, and the tests
check the result against breadth-first search on whole state spaces and against A* on every dataset state): some
optimal plan moves no block in position, moves every other block either once, straight to its final place, or
twice, first to the table; and where a *constructive* move exists -- a clear block not in position to its final
place: onto its goal support when that is clear and in position, or, without one, to the table -- some optimal
plan starts with it. A constructive move lowers ``n`` by one, the most a move can. So the search makes
constructive moves while there are any; in a *deadlock* (none left) some block must go to the table first, and
the search branches on which clear block, not in position and not on the table, goes there.

**Forced blocks.** A block ``x`` not in position must move twice when a block of its goal chain -- its goal support
``g``, then ``g``'s goal support while the chain's blocks are not in position -- lies below ``x`` in its tower:
that block (or the one the chain needs cleared) must be cleared before ``x`` can reach its place, which needs
``x`` gone first. A clear forced block goes to the table at once: its first move is to the table in every
normal-form plan, and nothing is put on it before then (no final place is on a block not in position).

**Bound and search.** With ``f`` forced blocks, no plan makes fewer than ``n + f`` moves, and in a deadlock one more
(the block tabled next is not forced, and moves again). Iterative deepening on the total moves with that bound,
remembering per state the best bound proved (as a failed budget plus one), finds the fewest moves ``M`` over the
normal-form plans, which is the optimum.
"""
from __future__ import annotations

from typing import Iterable

from tnlib.errors import OutsideFormulaScope, SearchNodeLimit
from tnlib.planning.pddl import parse_atom

Atoms = Iterable[str]  # a state or goal as its ground atoms, "(on a b)" (optimal_costs reads them so too)
# A block's support: another block's name, or TABLE.
TABLE = ""
# A move: (block, from, to), each place a block name or TABLE.
Move = tuple[str, str, str]

_STATE = {"on": 2, "on-table": 1, "clear": 1, "arm-empty": 0, "holding": 1}


def _blocksworld_state(state: Atoms, goal: Atoms) -> tuple[dict[str, str], str | None, dict[str, str]]:
    """Each lying block's support, the held block (None if the hand is empty) and each goal-supported block's goal
    support, after checking that the atoms are a state of the domain and the goal the generator's form."""
    facts: dict[str, list[tuple[str, ...]]] = {name: [] for name in _STATE}
    for atom in state:
        name, args = parse_atom(atom)
        if _STATE.get(name) != len(args):
            raise OutsideFormulaScope(f"blocksworld state: unexpected atom {atom!r}")
        facts[name].append(args)
    support: dict[str, str] = {}
    for place in [(b, TABLE) for (b,) in facts["on-table"]] + facts["on"]:
        if place[0] in support:
            raise OutsideFormulaScope(f"blocksworld: {place[0]!r} lies in two places")
        support[place[0]] = place[1]
    held = [b for (b,) in facts["holding"]]
    if len(held) > 1 or bool(held) == bool(facts["arm-empty"]) or any(b in support for b in held):
        raise OutsideFormulaScope("blocksworld: the hand holds at most one block, exactly when it is not empty, "
                                  "and a held block lies nowhere")
    blocks = set(support) | set(held)
    if any(s != TABLE and s not in support for s in support.values()):
        raise OutsideFormulaScope("blocksworld: a block lies on no lying block of the state")
    under = [s for s in support.values() if s != TABLE]
    if len(set(under)) != len(under):
        raise OutsideFormulaScope("blocksworld: two blocks lie on one")
    if {b for (b,) in facts["clear"]} != set(support) - set(under):
        raise OutsideFormulaScope("blocksworld: the clear blocks are not exactly the lying blocks with none on them")
    _check_towers(support, "state")
    goal_support: dict[str, str] = {}
    for atom in goal:
        name, args = parse_atom(atom)
        if name != "on" or len(args) != 2:
            raise OutsideFormulaScope(f"blocksworld goal (on atoms, as the generator makes): unexpected {atom!r}")
        if args[0] in goal_support or any(b not in blocks for b in args):
            raise OutsideFormulaScope(f"blocksworld goal: {atom!r} names a block twice or no block of the state")
        goal_support[args[0]] = args[1]
    if len(set(goal_support.values())) != len(goal_support):
        raise OutsideFormulaScope("blocksworld goal: two blocks on one")
    _check_towers(goal_support, "goal")
    return support, (held[0] if held else None), goal_support


def _check_towers(support: dict[str, str], what: str) -> None:
    """Refuses supports that go round in a cycle (no tower stands on the table)."""
    for block in support:
        seen = {block}
        while support.get(block, TABLE) != TABLE:
            block = support[block]
            if block in seen:
                raise OutsideFormulaScope(f"blocksworld {what}: blocks stacked in a cycle")
            seen.add(block)


class _Problem:
    """The goal of a move-blocksworld problem: each goal-supported block's goal support, and the blocks that are
    some block's goal support."""

    def __init__(self, goal_support: dict[str, str]):
        self.goal_support = goal_support
        self.wanted_under = set(goal_support.values())

    def in_position(self, support: dict[str, str]) -> dict[str, bool]:
        """Each block's "in position" (see the module docstring)."""
        known: dict[str, bool] = {}

        def placed(block: str) -> bool:
            if block not in known:
                below = support[block]
                if block in self.goal_support:
                    known[block] = below == self.goal_support[block] and placed(below)
                else:
                    known[block] = below == TABLE or (below not in self.wanted_under and placed(below))
            return known[block]

        for block in support:
            placed(block)
        return known

    def forced(self, block: str, support: dict[str, str], placed: dict[str, bool]) -> bool:
        """Whether a block not in position must move twice: a block of its goal chain lies below it."""
        below = set()
        under = support[block]
        while under != TABLE:
            below.add(under)
            under = support[under]
        link = self.goal_support.get(block)
        while link is not None:
            if link in below:
                return True
            link = self.goal_support.get(link) if not placed[link] else None
        return False

    def settle(self, support: dict[str, str], moves: list[Move]) -> tuple[dict[str, bool], list[str]]:
        """Makes constructive moves and tables clear forced blocks (in ``support``, appending to ``moves``) until
        none is left; returns the blocks' "in position" and the clear blocks that could go to the table next."""
        while True:
            placed = self.in_position(support)
            clear = sorted(set(support) - set(support.values()))
            step = None
            for block in clear:
                if placed[block]:
                    continue
                target = self.goal_support.get(block, TABLE)
                if target == TABLE or (target in clear and placed[target]):
                    step = (block, support[block], target)
                    break
            if step is None:
                step = next(((b, support[b], TABLE) for b in clear if not placed[b] and support[b] != TABLE
                             and self.forced(b, support, placed)), None)
            if step is None:
                return placed, [b for b in clear if not placed[b] and support[b] != TABLE]
            moves.append(step)
            support[step[0]] = step[2]

    def lower_bound(self, support: dict[str, str], placed: dict[str, bool], deadlock: bool) -> int:
        """Moves no plan from a settled state beats: the blocks not in position, the forced ones once more, and one
        more in a deadlock."""
        out = [b for b in support if not placed[b]]
        forced = sum(1 for b in out if support[b] != TABLE and self.forced(b, support, placed))
        return len(out) + forced + (1 if deadlock else 0)


def _fewest_moves(support: dict[str, str], goal_support: dict[str, str], max_nodes: int | None) -> list[Move]:
    """The moves of an optimal move-blocksworld plan from ``support``: iterative deepening on the move count over
    which blocks go to the table in deadlocks (see the module docstring)."""
    problem = _Problem(goal_support)
    proven: dict[tuple, int] = {}
    nodes = 0

    def within(support: dict[str, str], budget: int, path: list[Move]) -> bool:
        nonlocal nodes
        nodes += 1
        if max_nodes is not None and nodes > max_nodes:
            raise SearchNodeLimit(f"blocksworld: no optimal plan proved within {max_nodes} search nodes")
        support = dict(support)
        mark = len(path)
        placed, candidates = problem.settle(support, path)
        budget -= len(path) - mark
        if all(placed.values()):
            return budget >= 0
        key = tuple(sorted(support.items()))
        bound = max(proven.get(key, 0), problem.lower_bound(support, placed, True))
        if bound > budget:
            del path[mark:]
            return False
        for block in candidates:
            path.append((block, support[block], TABLE))
            if within({**support, block: TABLE}, budget - 1, path):
                return True
            path.pop()
        proven[key] = max(bound, budget + 1)
        del path[mark:]
        return False

    start = dict(support)
    budget = problem.lower_bound(start, problem.in_position(start), False)
    while True:
        path: list[Move] = []
        if within(start, budget, path):
            return path
        budget += 1


def _optimal_actions(state: Atoms, goal: Atoms, max_nodes: int | None) -> list[str]:
    """An optimal plan, as operator names (see the module docstring for the argument)."""
    support, held, goal_support = _blocksworld_state(state, goal)
    if held is None:
        return _actions(_fewest_moves(support, goal_support, max_nodes))
    if _goal_holds(support, goal_support):
        return []
    target = goal_support.get(held, TABLE)
    if target != TABLE and (target in support.values() or not _Problem(goal_support).in_position(support)[target]):
        target = TABLE
    first = f"(putdown {held})" if target == TABLE else f"(stack {held} {target})"
    return [first] + _actions(_fewest_moves({**support, held: target}, goal_support, max_nodes))


def _goal_holds(support: dict[str, str], goal_support: dict[str, str]) -> bool:
    return all(support.get(block) == under for block, under in goal_support.items())


def _actions(moves: list[Move]) -> list[str]:
    """The 4-operator actions of a sequence of moves."""
    actions = []
    for block, source, target in moves:
        actions.append(f"(pickup {block})" if source == TABLE else f"(unstack {block} {source})")
        actions.append(f"(putdown {block})" if target == TABLE else f"(stack {block} {target})")
    return actions


def blocksworld_optimal_plan(state: Atoms, goal: Atoms, max_nodes: int | None = None) -> list[str]:
    """An optimal plan for a blocksworld state (the module docstring's search), as operator names ``(pickup b)``,
    ``(putdown b)``, ``(stack b under)``, ``(unstack b under)``. ``max_nodes`` bounds the search (else
    :class:`OutsideFormulaScope`)."""
    return _optimal_actions(state, goal, max_nodes)


def blocksworld_optimal_cost(state: Atoms, goal: Atoms, max_nodes: int | None = None) -> int:
    """h* of a blocksworld state: ``2 M``, or ``1 + 2 M`` after putting a held block down (the module docstring
    gives the argument), ``M`` found by the module's search."""
    return len(_optimal_actions(state, goal, max_nodes))


__all__ = ["blocksworld_optimal_cost", "blocksworld_optimal_plan"]
