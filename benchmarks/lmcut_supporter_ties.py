"""Where tnlib's LM-cut and Fast Downward's part: the tie-breaking of h_max supporters while marking the goal zone.

LM-cut repeats: h_max with the current costs; mark the goal zone (the facts that reach the goal through zero-cost
operators, each followed to its h_max supporter, the precondition of highest h_max); cut the operators that enter
it from the state's side; lower their costs. Where a zero-cost operator has several preconditions of its
supporter's h_max, which one is followed decides the zone, hence the cut. tnlib's kernel
(:func:`tnlib.planning.relaxation_kernels.lmcut_batch`) follows by default the supporter h_max chose, as Helmert &
Domshlak (2009) define it, and with ``fast_downward_ties`` breaks ties as Fast Downward does. Fast Downward's current LM-cut (the one data/paper's ``lmcut`` column holds) first moves each
such supporter to a tied precondition that no zero-cost operator achieves (its "border detection"), else to one
already in the goal zone ("goal zone detection"). In visitall the pseudo goal operator (cost 0, a precondition per
cell to visit) ties on many goals at once: the tie-breaking picks a goal whose moves in still cost 1, so each cut is
one cell's moves and the bound stays near the count of cells left.

This re-states LM-cut in plain Python over the same relaxed task as the kernel, with either rule (the reference
the kernel's two modes are tested against), and compares both with the kernel's default and with the dataset's
column on the states of a split's instances (h_max is updated
after each cut as each implementation does: the kernel re-picks the last precondition of highest h_max, Fast
Downward keeps its supporter unless another precondition is strictly dearer):

    python benchmarks/lmcut_supporter_ties.py data/paper --domains visitall blocksworld --instances 6

Without the tie-breaking it must equal the kernel on every state (it restates it); with it, the dataset's column
where that column is Fast Downward's. A few seconds an instance (plain Python).
"""
from __future__ import annotations

import argparse
import heapq
import sys

import numpy as np

from tnlib.planning.heuristics import make_heuristic, relaxed_task
from tnlib.planning.pddl import resolve_domain
from tnlib.planning.task import load_search_task

UNREACHED = 1 << 40
KERNEL, FAST_DOWNWARD = "kernel", "fast-downward"


def _relaxed_lists(rt) -> dict:
    """The relaxed task's extended operators and facts as lists (pseudo start fact F, pseudo goal fact F + 1, the
    pseudo goal operator last)."""
    n_ops, n_facts = len(rt.x_pre_start) - 1, rt.num_facts + 2
    return {"pre": [rt.x_pre_facts[rt.x_pre_start[o]:rt.x_pre_start[o + 1]] for o in range(n_ops)],
            "add": [rt.x_add_facts[rt.x_add_start[o]:rt.x_add_start[o + 1]] for o in range(n_ops)],
            "pre_of": [rt.x_prec_of_ops[rt.x_prec_of_start[f]:rt.x_prec_of_start[f + 1]] for f in range(n_facts)],
            "achievers": [rt.x_achievers_ops[rt.x_achievers_start[f]:rt.x_achievers_start[f + 1]]
                          for f in range(n_facts)]}


def _h_max(lists, start, state_facts, cost):
    """h_max with the current costs, facts expanded by (cost, insertion order) as the kernel's level queues do,
    and each operator's supporter: the precondition whose expansion made it applicable."""
    dist = np.full(len(lists["pre_of"]), UNREACHED, dtype=np.int64)
    waiting = np.array([len(p) for p in lists["pre"]])
    supporter = np.full(len(lists["pre"]), -1)
    queue, pushed = [], 0
    for fact in [start, *state_facts]:
        dist[fact] = 0
        queue.append((0, pushed, fact))
        pushed += 1
    expanded = np.zeros(len(dist), dtype=bool)
    while queue:
        d, _, fact = heapq.heappop(queue)
        if expanded[fact] or d > dist[fact]:
            continue
        expanded[fact] = True
        for op in lists["pre_of"][fact]:
            waiting[op] -= 1
            if waiting[op] == 0:
                supporter[op] = fact
                for effect in lists["add"][op]:
                    if d + cost[op] < dist[effect]:
                        dist[effect] = d + cost[op]
                        heapq.heappush(queue, (int(dist[effect]), pushed, effect))
                        pushed += 1
    return dist, supporter


def _h_max_after_cut(lists, cut, cost, dist, supporter, rule):
    """h_max after the cut's costs dropped, from the cut's effects on. An operator whose supporter got cheaper
    picks its supporter again: the kernel takes the last precondition of highest h_max; Fast Downward keeps its
    supporter unless a precondition is strictly dearer, scanning in order."""
    queue = []
    for op in cut:
        for effect in lists["add"][op]:
            if dist[supporter[op]] + cost[op] < dist[effect]:
                dist[effect] = dist[supporter[op]] + cost[op]
                heapq.heappush(queue, (int(dist[effect]), effect))
    while queue:
        d, fact = heapq.heappop(queue)
        if d > dist[fact]:
            continue
        for op in lists["pre_of"][fact]:
            if supporter[op] != fact:
                continue
            if rule == KERNEL:
                best = max(dist[p] for p in lists["pre"][op])
                supporter[op] = [p for p in lists["pre"][op] if dist[p] == best][-1]
            else:
                for pre in lists["pre"][op]:
                    if dist[pre] > dist[supporter[op]]:
                        supporter[op] = pre
            for effect in lists["add"][op]:
                if dist[supporter[op]] + cost[op] < dist[effect]:
                    dist[effect] = dist[supporter[op]] + cost[op]
                    heapq.heappush(queue, (int(dist[effect]), effect))


def _goal_zone(lists, goal, dist, supporter, cost, rule):
    """The facts reaching the goal through zero-cost operators and their supporters, marked depth first from the
    goal. Fast Downward first moves a zero-cost operator's supporter to a tied precondition that no zero-cost
    operator achieves, else to one already marked."""
    zone = np.zeros(len(dist), dtype=bool)
    stack = [(goal, None)]
    while stack:  # an explicit stack in the order recursion takes: the tie-breaking reads what is marked so far
        fact, achievers = stack.pop()
        if achievers is None:
            if zone[fact]:
                continue
            zone[fact] = True
            achievers = iter(lists["achievers"][fact])
        for op in achievers:
            if cost[op] != 0 or supporter[op] < 0:
                continue
            if rule == FAST_DOWNWARD:
                for pre in lists["pre"][op]:
                    if dist[pre] == dist[supporter[op]] and (
                            zone[pre] or not any(cost[a] == 0 for a in lists["achievers"][pre])):
                        supporter[op] = pre
                        break
            stack.append((fact, achievers))
            stack.append((supporter[op], None))
            break
    return zone


def lmcut_value(rt, state_facts, rule: str) -> float:
    """LM-cut of one state (its true facts' indices) by the kernel's rules or Fast Downward's."""
    lists = _relaxed_lists(rt)
    start, goal = rt.num_facts, rt.num_facts + 1
    cost = np.ones(len(lists["pre"]), dtype=np.int64)
    cost[-1] = 0  # the pseudo goal operator
    dist, supporter = _h_max(lists, start, state_facts, cost)
    if dist[goal] >= UNREACHED:
        return float("inf")
    total = 0
    while dist[goal] > 0:
        zone = _goal_zone(lists, goal, dist, supporter, cost, rule)
        reached = np.zeros(len(dist), dtype=bool)
        stack = [start, *state_facts]
        reached[stack] = True
        cut = []
        while stack:
            fact = stack.pop()
            for op in lists["pre_of"][fact]:
                if supporter[op] != fact:
                    continue
                for effect in lists["add"][op]:
                    if zone[effect]:
                        if op not in cut:
                            cut.append(op)
                    elif not reached[effect]:
                        reached[effect] = True
                        stack.append(effect)
        lowest = min(cost[op] for op in cut)
        for op in cut:
            cost[op] -= lowest
        total += lowest
        _h_max_after_cut(lists, cut, cost, dist, supporter, rule)
    return float(total)


def compare_instance(domain: str, problem: str, state_atoms: list[list[str]], column: np.ndarray) -> dict:
    """Per rule and for the kernel: the values on the states of one problem, and the column's."""
    task = load_search_task(resolve_domain(domain), problem)
    rt = relaxed_task(task)
    states = [task.facts_to_state([a for a in atoms if a in task.fact_index]) for atoms in state_atoms]
    facts = [list(task.state_to_indices(state)) for state in states]
    return {"kernel": make_heuristic("lmcut", task).batch(states),
            "as the kernel": np.array([lmcut_value(rt, f, KERNEL) for f in facts]),
            "Fast Downward's ties": np.array([lmcut_value(rt, f, FAST_DOWNWARD) for f in facts]),
            "column": np.asarray(column, dtype=float)}


def main() -> None:
    from tnlib.data.loading import load_split

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", help="a dataset root, e.g. data/paper")
    parser.add_argument("--domains", nargs="+", default=["visitall", "blocksworld", "ferry", "gripper"])
    parser.add_argument("--split", default="test")
    parser.add_argument("--instances", type=int, default=6, help="instances spread over the split (default 6)")
    args = parser.parse_args()
    print("| domain | states | kernel | as the kernel (equal) | Fast Downward's ties (equal to the column) | column |")
    print("|---|---|---|---|---|---|")
    for domain in args.domains:
        table = load_split(args.data, domain, args.split)
        names = table.instances()
        chosen = [names[i] for i in np.linspace(0, len(names) - 1, min(args.instances, len(names))).round()
                  .astype(int)]
        found = {k: [] for k in ("kernel", "as the kernel", "Fast Downward's ties", "column")}
        for name in chosen:
            rows = table.select_instances([name])
            values = compare_instance(domain, str(table.problem_path(name)), rows.column("state"),
                                      rows.numpy("lmcut"))
            for key, v in values.items():
                found[key].append(v)
        v = {k: np.concatenate(x) for k, x in found.items()}
        same = int((v["as the kernel"] == v["kernel"]).sum())
        ties = v["Fast Downward's ties"]
        print(f"| {domain} | {len(ties)} | {v['kernel'].mean():.3f} | {v['as the kernel'].mean():.3f} ({same}) | "
              f"{ties.mean():.3f} ({int((ties == v['column']).sum())}) | {v['column'].mean():.3f} |", flush=True)
        if same != len(ties):
            print(f"{domain}: the restatement differs from the kernel on {len(ties) - same} states",
                  file=sys.stderr)


if __name__ == "__main__":
    main()
