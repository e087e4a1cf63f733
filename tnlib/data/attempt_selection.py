"""Choosing each slot's attempt: distinct within a split, disjoint from earlier splits, cells out of reach given up.

The generator draws attempts cheaply and solves them in workers; :func:`select_attempts`, run in the process that
coordinates a split, decides from the draws and the solve outcomes which attempt each slot keeps, so the dataset
does not depend on the number of workers or their order. Instances are compared by their
:func:`tnlib.data.instance_keys.instance_key`. This is the writing wing's rule: a finished dataset's manifest
records its outcome, and ``tnlib data verify`` checks it (:func:`tnlib.data.instance_keys.check_domain_instances`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from tnlib.data.schema import LIMIT_HITS


@dataclass(frozen=True)
class Draw:
    """One attempt of one slot, generated but not solved: what the selection rule needs to know about it."""

    attempt: int
    seed: int
    name: str
    key: str  # instance_key
    problem_sha256: str  # of the PDDL text (the solution cache's key)
    trivial: bool


@dataclass
class SlotChoice:
    """The selection's verdict on one slot.

    ``status``: ``ok`` (``draw`` is the instance), ``pending`` (``draw`` waits for its solve), ``failed`` (attempts
    ran out or the labelling raised), ``exhausted`` (every one of ``max_attempts`` draws was trivial or a repeat:
    the slot's cell has no new instance to give), ``skipped`` (an earlier slot of the same cell was exhausted) or
    ``out_of_reach`` (its cell was found out of the solver's reach under the split's limits: see
    :func:`select_attempts`). ``rejected`` lists the rejected attempts in order: ``{"seed", "status"}`` plus
    ``"of"`` (the split/instance it repeats) for duplicates, or the solve's ``seconds`` / exception ``message``.
    """

    params: tuple
    seed_number: int
    status: str = "pending"
    draw: Draw | None = None
    rejected: list[dict] = field(default_factory=list)


@dataclass
class Selection:
    """:func:`select_attempts`' result: a choice per slot, the draws whose solve is still needed, and the keys
    now taken (those of earlier splits, plus this split's instances and failed attempts)."""

    choices: list[SlotChoice]
    needed: list[Draw]
    taken: dict[str, str]
    # cell (params) -> {"split": where it was found out of reach, "attempts": the consecutive limit hits}
    out_of_reach: dict[tuple, dict] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.needed

    def exhausted_cells(self) -> list[dict]:
        """Cells that ran out of new instances: where, how many instances the split holds there, how many of
        its slots stay empty."""
        cells: dict[tuple, dict] = {}
        for choice in self.choices:
            cell = cells.setdefault(choice.params, {"instances": 0, "unfilled": 0, "exhausted_at": None})
            if choice.status == "ok":
                cell["instances"] += 1
            elif choice.status in ("exhausted", "skipped"):
                cell["unfilled"] += 1
                if choice.status == "exhausted" and cell["exhausted_at"] is None:
                    cell["exhausted_at"] = choice.seed_number
        return [{"params": dict(params), **info} for params, info in cells.items() if info["exhausted_at"] is not None]

    def out_of_reach_cells(self) -> list[dict]:
        """Cells given up because the solver hit its limits on consecutive attempts: the instances the split holds
        there (solved before), the slots left empty, and those attempts (seed number, seed, status, seconds)."""
        cells = []
        for params, found in self.out_of_reach.items():
            mine = [c for c in self.choices if c.params == params]
            if not mine:
                continue  # given up in an earlier split, not in this one's grid
            cells.append({
                "params": dict(params),
                "instances": sum(c.status == "ok" for c in mine),
                "unfilled": sum(c.status == "out_of_reach" for c in mine),
                "found_in": found["split"],
                "attempts": found["attempts"],
            })
        return cells


def _draw_round(split: str, choices: list[SlotChoice], draw: Callable[[int, int], Draw], taken: dict[str, str],
                max_attempts: int, next_attempt: list[int], stopped: set, unreachable: Mapping[tuple, dict]) -> None:
    """One round's draws of :func:`select_attempts`: each pending slot without a draw, in slot order, takes its next
    attempt that is not trivial and whose key is not taken (and takes the key), or is exhausted (stopping its cell)
    or failed; slots of a stopped cell are skipped, those of a cell out of reach are out of reach."""
    for i, choice in enumerate(choices):
        if choice.status != "pending" or choice.draw is not None:
            continue
        if choice.params in stopped:
            choice.status = "skipped"
            continue
        if choice.params in unreachable:
            choice.status = "out_of_reach"
            continue
        while next_attempt[i] < max_attempts:
            d = draw(i, next_attempt[i])
            next_attempt[i] += 1
            if d.trivial:
                choice.rejected.append({"seed": d.seed, "status": "trivial"})
            elif d.key in taken:
                choice.rejected.append({"seed": d.seed, "status": "duplicate", "of": taken[d.key]})
            else:
                choice.draw = d
                taken[d.key] = f"{split}/{d.name}"
                break
        if choice.draw is None:
            repeats_only = all(r["status"] in ("trivial", "duplicate") for r in choice.rejected)
            choice.status = "exhausted" if repeats_only else "failed"
            if repeats_only:
                stopped.add(choice.params)


def select_attempts(
    split: str,
    slots: Sequence[tuple[tuple, int]],
    draw: Callable[[int, int], Draw],
    outcome: Callable[[int], dict | None],
    taken: Mapping[str, str],
    max_attempts: int,
    out_of_reach_after: int | None = None,
    out_of_reach: Mapping[tuple, dict] | None = None,
) -> Selection:
    """Pick each slot's attempt so that the split's instances are distinct and new (deterministic).

    ``slots``: (params, seed number) in the split's order; ``draw(slot, attempt)``: that attempt's :class:`Draw`;
    ``outcome(seed)``: the solve's result for a draw (a dict with ``status``: ``solved``, ``exception`` or a
    failure such as ``timeout``), or None while unknown; ``taken``: instance keys of the earlier splits -> their
    ``split/instance`` name.

    The rule, in rounds: each slot still without an instance, in slot order, takes its next attempt that is not
    trivial and whose key is not taken; that key is then taken (by the slot, even if the solve later fails: the
    same problem would fail again). Then the round's solves are read: a failed solve sends its slot to the next
    round, from its next attempt. A slot whose ``max_attempts`` draws are all trivial or repeats is *exhausted*
    and stops its cell: later slots of the same parameters are skipped. The result depends only on the slots,
    the draws and the solves' outcomes -- not on the order solves finish in -- so any runner gives the same
    dataset. While some round's solves are unknown, ``needed`` lists them (call again once they are in).

    ``out_of_reach_after`` (K, off when None): a cell whose solves hit the time or memory limit K times in a row
    is *out of reach* under these limits: its slots without an instance become ``out_of_reach`` and none of its
    draws is solved any more, so a split whose large cells no solver run can finish still completes, in bounded
    time, and says where. "In a row" is in a fixed order -- round by round, slots in order within a round --
    and only solves that are not limit hits (solved) break a run, so the verdict depends on the outcomes alone,
    not on the order they arrive in: a known outcome that follows an unknown one of its cell waits for it, and at
    most K minus the current run of a cell's unknown solves are ``needed`` at once (no solve is run that the
    verdict could make moot). ``out_of_reach``: cells already found out of reach (by an earlier split, under the
    same limits and K), as :attr:`Selection.out_of_reach` holds them: none of their slots is drawn.
    """
    taken = dict(taken)
    choices = [SlotChoice(params, n) for params, n in slots]
    next_attempt = [0] * len(slots)
    stopped: set = set()
    run: dict[tuple, list[dict]] = {}  # cell -> its current run of consecutive limit hits
    unreachable: dict[tuple, dict] = dict(out_of_reach or {})
    while True:
        _draw_round(split, choices, draw, taken, max_attempts, next_attempt, stopped, unreachable)
        needed, retry = [], False
        unknown: dict[tuple, int] = {}  # cell -> its solves of this round not known yet
        for choice in choices:
            if choice.status != "pending":
                continue
            cell, d = choice.params, choice.draw
            if cell in unreachable:  # drawn, but the cell was given up before its solve counted
                choice.status, choice.draw = "out_of_reach", None
                if taken.get(d.key) == f"{split}/{d.name}":
                    del taken[d.key]
                continue
            result = outcome(d.seed)
            if result is None:
                seen = unknown.get(cell, 0)
                unknown[cell] = seen + 1
                if out_of_reach_after is None or seen < out_of_reach_after - len(run.get(cell, ())):
                    needed.append(d)
            elif out_of_reach_after is not None and cell in unknown:
                continue  # counts after the cell's earlier solves, once they are known
            elif result["status"] == "solved":
                choice.status = "ok"
                run.pop(cell, None)
            else:
                entry = {"seed": d.seed, "status": result["status"]}
                for extra in ("seconds", "message"):
                    if extra in result:
                        entry[extra] = result[extra]
                choice.rejected.append(entry)
                taken[d.key] = f"{split}/{d.name} (unsolved: {result['status']})"
                if result["status"] == "exception":
                    choice.status = "failed"  # a bug, not bad luck: no further attempts
                else:
                    choice.draw = None
                    retry = True
                if out_of_reach_after is not None and result["status"] in LIMIT_HITS:
                    hits = run.setdefault(cell, [])
                    hits.append({"seed_number": choice.seed_number, **entry})
                    if len(hits) >= out_of_reach_after:
                        unreachable[cell] = {"split": split, "attempts": run.pop(cell)}
                        if choice.status == "pending":
                            choice.status = "out_of_reach"
        if needed or not retry:
            return Selection(choices, needed, taken, unreachable)




__all__ = ["Draw", "Selection", "SlotChoice", "select_attempts"]
