"""The numba kernels of the delete relaxation on packed states: goal count, h_max, h_add and h_FF (with its relaxed
plan) by one generalized Dijkstra, and LM-cut. Each runs over all the states of a batch in one call, on the index
arrays of :class:`tnlib.planning.heuristics.RelaxedTask`; :mod:`tnlib.planning.heuristics` wraps them as heuristics.
They share one file so that numba's cache, which watches only the file a kernel is defined in, recompiles every
kernel that calls the heap or the fact test when those change.

Exactness with pyperplan
------------------------
h_max, h_add and h_FF replicate pyperplan's generalized Dijkstra (``pyperplan.heuristics.relaxation``) step for
step: a priority queue ordered by (distance, insertion counter), a pseudo "start" fact pushed first for operators
without preconditions, then the state's facts, operators triggered when their last precondition is expanded,
achievers replaced only on a strict improvement, and the loop stopping once every goal fact has been popped.
h_max and h_add are unique numbers, so they equal pyperplan's on every state. h_FF's relaxed plan (the union of
the cheapest achievers of all facts reached backwards from the goal, as pyperplan computes it) depends on how
ties between equally cheap achievers are broken, which in pyperplan follows the iteration order of Python sets
of strings, i.e. ``PYTHONHASHSEED``. tnlib uses the deterministic order that pyperplan would use if it pushed the
state's facts in sorted name order and listed operators in sorted name order; the tests check equality with
pyperplan run in exactly that order, and measure how often stock pyperplan (hash order) agrees.

LM-cut follows Helmert & Domshlak (2009): h_max with the current costs, precondition choice function = the
precondition expanded last (an h_max argmax), goal zone = facts reaching the goal through zero-cost justification
edges, cut = operators leaving the part reachable from the state without entering the goal zone. Costs are unit,
so every cut costs 1 and reduced costs stay in {0, 1}; the h_max passes use a two-level FIFO queue.
Where several preconditions of an operator share the highest h_max, which one is its supporter decides the goal
zone and so the cuts: the value depends on it. ``lmcut_batch(..., fast_downward_ties=True)`` breaks those ties as
Fast Downward's LM-cut does (the one data/paper's ``lmcut`` column holds; tests/planning/test_heuristics.py
compares the two state by state); the default keeps the choice above, which data/small's labels hold.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from tnlib.kernel_cache import cache_by_folder_sources

cache_by_folder_sources(__file__)  # before the first njit(cache=True): tnlib.kernel_cache says why

INF_DIST = np.int64(1) << 40  # "unreachable" inside kernels; becomes math.inf outside


# ---------------------------------------------------------------------------------------------------------------
# Kernels. States arrive packed: row i of an (n, ceil(F/8)) uint8 matrix, fact f = bit f & 7 of byte f >> 3.


@njit(cache=True, inline="always")
def _holds(state, f):
    return (state[f >> 3] >> (f & 7)) & 1


@njit(cache=True)
def goalcount_batch(states, goal):
    out = np.empty(states.shape[0], dtype=np.float64)
    for i in range(states.shape[0]):
        unmet = 0
        for g in goal:
            if not _holds(states[i], g):
                unmet += 1
        out[i] = unmet
    return out


@njit(cache=True)
def _heap_push(keys, vals, size, key, val):
    i = size
    while i > 0:
        parent = (i - 1) >> 1
        if keys[parent] <= key:
            break
        keys[i] = keys[parent]
        vals[i] = vals[parent]
        i = parent
    keys[i] = key
    vals[i] = val
    return size + 1


@njit(cache=True)
def _heap_pop(keys, vals, size):
    key = keys[0]
    val = vals[0]
    size -= 1
    if size > 0:
        last_key = keys[size]
        last_val = vals[size]
        i = 0
        while True:
            child = 2 * i + 1
            if child >= size:
                break
            if child + 1 < size and keys[child + 1] < keys[child]:
                child += 1
            if keys[child] >= last_key:
                break
            keys[i] = keys[child]
            vals[i] = vals[child]
            i = child
        keys[i] = last_key
        vals[i] = last_val
    return key, val, size


@njit(cache=True)
def _explore(
    state, use_sum, num_facts, pre_start, pre_facts, add_start, add_facts, num_pre,
    prec_of_start, prec_of_ops, goal, is_goal_fact,
    dist, achiever, counter, expanded, goal_seen, heap_keys, heap_vals,
):
    """pyperplan's relaxed exploration (h_add if use_sum else h_max); fills dist and achiever, returns h."""
    start_fact = num_facts
    for f in range(num_facts + 1):
        dist[f] = INF_DIST
        achiever[f] = -1
        expanded[f] = 0
    for g in goal:
        goal_seen[g] = 0
    for o in range(num_pre.shape[0]):
        counter[o] = num_pre[o]
    # Heap key: distance in the high bits, insertion counter in the low 32 bits, so the heap orders by
    # (distance, insertion order) exactly like pyperplan's (dist, tie_breaker, fact) tuples.
    tie = 0
    size = _heap_push(heap_keys, heap_vals, 0, tie, start_fact)
    tie += 1
    for f in range(num_facts):
        if _holds(state, f):
            dist[f] = 0
            size = _heap_push(heap_keys, heap_vals, size, tie, f)
            tie += 1
    achieved = 0
    num_goals = goal.shape[0]
    while achieved < num_goals and size > 0:
        key, f, size = _heap_pop(heap_keys, heap_vals, size)
        if f < num_facts and is_goal_fact[f] and not goal_seen[f]:
            goal_seen[f] = 1
            achieved += 1
        if expanded[f]:
            continue
        expanded[f] = 1
        for k in range(prec_of_start[f], prec_of_start[f + 1]):
            o = prec_of_ops[k]
            counter[o] -= 1
            if counter[o] <= 0:
                cost = 0
                for j in range(pre_start[o], pre_start[o + 1]):
                    d = dist[pre_facts[j]]
                    if use_sum:
                        cost += d
                    elif d > cost:
                        cost = d
                cost += 1
                for j in range(add_start[o], add_start[o + 1]):
                    e = add_facts[j]
                    if cost < dist[e]:
                        dist[e] = cost
                        achiever[e] = o
                        size = _heap_push(heap_keys, heap_vals, size, (cost << 32) | tie, e)
                        tie += 1
    h = 0
    for g in goal:
        d = dist[g]
        if d >= INF_DIST:
            return INF_DIST
        if use_sum:
            h += d
        elif d > h:
            h = d
    return h


@njit(cache=True)
def _relaxed_plan(num_facts, pre_start, pre_facts, goal, achiever, closed, in_plan, stack, plan):
    """Union of the cheapest achievers of every fact reached backwards from the goal; returns its size."""
    for f in range(num_facts):
        closed[f] = 0
    for o in range(in_plan.shape[0]):
        in_plan[o] = 0
    top = 0
    for g in goal:
        if not closed[g]:
            closed[g] = 1
            stack[top] = g
            top += 1
    count = 0
    while top > 0:
        top -= 1
        f = stack[top]
        o = achiever[f]
        if o < 0 or in_plan[o]:
            continue
        in_plan[o] = 1
        plan[count] = o
        count += 1
        for j in range(pre_start[o], pre_start[o + 1]):
            p = pre_facts[j]
            if not closed[p]:
                closed[p] = 1
                stack[top] = p
                top += 1
    return count


@njit(cache=True)
def relaxation_batch(
    states, mode, num_facts, pre_start, pre_facts, add_start, add_facts, num_pre, num_del,
    prec_of_start, prec_of_ops, goal, is_goal_fact, want_plan,
):
    """mode 0: h_max, 1: h_add, 2: h_FF. Returns (h, ignored deletes total, plan ops of the last state)."""
    n = states.shape[0]
    num_ops = num_pre.shape[0]
    capacity = num_facts + 2 + add_facts.shape[0]
    dist = np.empty(num_facts + 1, dtype=np.int64)
    achiever = np.empty(num_facts + 1, dtype=np.int32)
    counter = np.empty(num_ops, dtype=np.int32)
    expanded = np.empty(num_facts + 1, dtype=np.uint8)
    goal_seen = np.zeros(num_facts, dtype=np.uint8)
    heap_keys = np.empty(capacity, dtype=np.int64)
    heap_vals = np.empty(capacity, dtype=np.int32)
    closed = np.empty(num_facts, dtype=np.uint8)
    in_plan = np.empty(num_ops, dtype=np.uint8)
    stack = np.empty(num_facts, dtype=np.int32)
    plan = np.empty(num_ops, dtype=np.int32)
    plan_len = 0
    h = np.empty(n, dtype=np.float64)
    ignored = np.zeros(n, dtype=np.float64)
    for i in range(n):
        value = _explore(
            states[i], mode != 0, num_facts, pre_start, pre_facts, add_start, add_facts, num_pre,
            prec_of_start, prec_of_ops, goal, is_goal_fact,
            dist, achiever, counter, expanded, goal_seen, heap_keys, heap_vals,
        )
        if value >= INF_DIST:
            h[i] = np.inf
            ignored[i] = np.inf
            plan_len = 0
            continue
        if mode != 2:
            h[i] = value
            continue
        plan_len = _relaxed_plan(num_facts, pre_start, pre_facts, goal, achiever, closed, in_plan, stack, plan)
        h[i] = plan_len
        total = 0
        for k in range(plan_len):
            total += num_del[plan[k]]
        ignored[i] = total
    return h, ignored, plan[:plan_len].copy()


@njit(cache=True)
def _hmax_levels(
    state, num_facts, x_pre_start, x_add_start, x_add_facts, x_prec_of_start, x_prec_of_ops,
    cost, dist, counter, pcf, expanded, queue_a, queue_b,
):
    """h_max over the extended task with 0/1 costs; fills dist and the precondition choice function pcf."""
    num_x_ops = cost.shape[0]
    total = num_facts + 2
    for f in range(total):
        dist[f] = INF_DIST
        expanded[f] = 0
    for o in range(num_x_ops):
        counter[o] = x_pre_start[o + 1] - x_pre_start[o]
        pcf[o] = -1
    current = queue_a
    upcoming = queue_b
    head = 0
    tail = 0
    upcoming_tail = 0
    current[tail] = num_facts  # start fact
    tail += 1
    dist[num_facts] = 0
    for f in range(num_facts):
        if _holds(state, f):
            dist[f] = 0
            current[tail] = f
            tail += 1
    level = 0
    while True:
        if head == tail:
            if upcoming_tail == 0:
                break
            current, upcoming = upcoming, current
            tail = upcoming_tail
            head = 0
            upcoming_tail = 0
            level += 1
        f = current[head]
        head += 1
        if expanded[f] or dist[f] < level:
            continue
        expanded[f] = 1
        for k in range(x_prec_of_start[f], x_prec_of_start[f + 1]):
            o = x_prec_of_ops[k]
            counter[o] -= 1
            if counter[o] == 0:
                pcf[o] = f
                d = level + cost[o]
                for j in range(x_add_start[o], x_add_start[o + 1]):
                    e = x_add_facts[j]
                    if d < dist[e]:
                        dist[e] = d
                        if cost[o] == 0:
                            current[tail] = e
                            tail += 1
                        else:
                            upcoming[upcoming_tail] = e
                            upcoming_tail += 1
    return dist[num_facts + 1]


@njit(cache=True)
def _hmax_after_cut(
    cut, num_cut, x_pre_start, x_pre_facts, x_add_start, x_add_facts, x_prec_of_start, x_prec_of_ops,
    cost, dist, pcf, heap_keys, heap_vals, fast_downward_ties,
):
    """Update h_max (and pcf) after the costs of the cut operators dropped: only values can decrease, so a
    Dijkstra pass seeded with the cut operators' effects suffices. A fact's decrease matters to an operator only
    if it is that operator's pcf (otherwise the operator's maximum stands); such operators re-pick their pcf, as
    :func:`lmcut_batch`'s ``fast_downward_ties`` says."""
    size = 0
    for k in range(num_cut):
        o = cut[k]
        value = dist[pcf[o]] + cost[o]
        for j in range(x_add_start[o], x_add_start[o + 1]):
            e = x_add_facts[j]
            if value < dist[e]:
                dist[e] = value
                size = _heap_push(heap_keys, heap_vals, size, (value << 32) | e, e)
    while size > 0:
        key, f, size = _heap_pop(heap_keys, heap_vals, size)
        if (key >> 32) > dist[f]:
            continue  # stale entry
        for k in range(x_prec_of_start[f], x_prec_of_start[f + 1]):
            o = x_prec_of_ops[k]
            if pcf[o] != f:
                continue
            if fast_downward_ties:  # keep the supporter unless a precondition is strictly dearer, in order
                arg = pcf[o]
                best = dist[arg]
                for j in range(x_pre_start[o], x_pre_start[o + 1]):
                    p = x_pre_facts[j]
                    if dist[p] > best:
                        best = dist[p]
                        arg = p
            else:  # the last precondition of highest h_max
                best = -1
                arg = -1
                for j in range(x_pre_start[o], x_pre_start[o + 1]):
                    p = x_pre_facts[j]
                    if dist[p] >= best:
                        best = dist[p]
                        arg = p
            pcf[o] = arg
            value = best + cost[o]
            for j in range(x_add_start[o], x_add_start[o + 1]):
                e = x_add_facts[j]
                if value < dist[e]:
                    dist[e] = value
                    size = _heap_push(heap_keys, heap_vals, size, (value << 32) | e, e)
    return dist[dist.shape[0] - 1]


@njit(cache=True, inline="always")
def _goal_zone_fast_downward(goal_fact, x_pre_start, x_pre_facts, x_achievers_start, x_achievers_ops, cost, dist,
                             pcf, goal_zone, stack, next_achiever):
    """The goal zone marked depth first from the goal (``goal_zone[goal_fact]`` set already), as Fast Downward's
    recursion marks it, breaking ties as it does: before a zero-cost achiever is followed to its supporter, the
    supporter moves to the first precondition of equal h_max that no zero-cost operator achieves or that is
    marked already. ``stack`` holds the facts on the recursion's path, ``next_achiever`` where each resumes."""
    top = 0
    stack[top] = goal_fact
    next_achiever[top] = x_achievers_start[goal_fact]
    top += 1
    while top > 0:
        f = stack[top - 1]
        k = next_achiever[top - 1]
        if k == x_achievers_start[f + 1]:
            top -= 1
            continue
        next_achiever[top - 1] = k + 1
        o = x_achievers_ops[k]
        if cost[o] != 0 or pcf[o] < 0:
            continue
        for j in range(x_pre_start[o], x_pre_start[o + 1]):
            q = x_pre_facts[j]
            if dist[q] != dist[pcf[o]]:
                continue
            border = True
            for m in range(x_achievers_start[q], x_achievers_start[q + 1]):
                if cost[x_achievers_ops[m]] == 0:
                    border = False
                    break
            if border or goal_zone[q]:
                pcf[o] = q
                break
        p = pcf[o]
        if not goal_zone[p]:
            goal_zone[p] = 1
            stack[top] = p
            next_achiever[top] = x_achievers_start[p]
            top += 1


@njit(cache=True)
def lmcut_batch(
    states, num_facts, x_pre_start, x_pre_facts, x_add_start, x_add_facts, x_prec_of_start, x_prec_of_ops,
    x_achievers_start, x_achievers_ops, fast_downward_ties=False,
):
    """LM-cut of each packed state. With ``fast_downward_ties`` it breaks ties between equally dear supporters as
    Fast Downward's LM-cut does (the one data/paper's labels hold): marking the goal zone, a zero-cost operator's
    supporter moves to a precondition of equal h_max no zero-cost operator achieves, else to one in the zone;
    updating h_max after a cut, an operator keeps its supporter unless a precondition is strictly dearer. Without
    it, the supporter h_max chose is followed and an update takes the last precondition of highest h_max."""
    n = states.shape[0]
    num_x_ops = x_pre_start.shape[0] - 1
    total = num_facts + 2
    goal_fact = num_facts + 1
    capacity = total + x_add_facts.shape[0] + 1
    cost = np.empty(num_x_ops, dtype=np.int64)
    dist = np.empty(total, dtype=np.int64)
    counter = np.empty(num_x_ops, dtype=np.int32)
    pcf = np.empty(num_x_ops, dtype=np.int32)
    expanded = np.empty(total, dtype=np.uint8)
    queue_a = np.empty(capacity, dtype=np.int32)
    queue_b = np.empty(capacity, dtype=np.int32)
    goal_zone = np.empty(total, dtype=np.uint8)
    reached = np.empty(total, dtype=np.uint8)
    in_cut = np.zeros(num_x_ops, dtype=np.uint8)
    stack = np.empty(capacity, dtype=np.int32)
    next_achiever = np.empty(capacity, dtype=np.int32)
    cut = np.empty(num_x_ops, dtype=np.int32)
    heap_keys = np.empty(capacity + x_add_facts.shape[0], dtype=np.int64)
    heap_vals = np.empty(capacity + x_add_facts.shape[0], dtype=np.int32)
    out = np.empty(n, dtype=np.float64)
    for i in range(n):
        state = states[i]
        for o in range(num_x_ops):
            cost[o] = 1
        cost[num_x_ops - 1] = 0  # the pseudo goal operator
        h_goal = _hmax_levels(
            state, num_facts, x_pre_start, x_add_start, x_add_facts, x_prec_of_start, x_prec_of_ops,
            cost, dist, counter, pcf, expanded, queue_a, queue_b,
        )
        if h_goal >= INF_DIST:
            out[i] = np.inf
            continue
        h = 0
        while h_goal > 0:
            # Goal zone: facts that reach the goal through zero-cost justification edges.
            for f in range(total):
                goal_zone[f] = 0
                reached[f] = 0
            goal_zone[goal_fact] = 1
            if fast_downward_ties:
                _goal_zone_fast_downward(goal_fact, x_pre_start, x_pre_facts, x_achievers_start, x_achievers_ops,
                                         cost, dist, pcf, goal_zone, stack, next_achiever)
            else:
                top = 0
                stack[top] = goal_fact
                top += 1
                while top > 0:
                    top -= 1
                    f = stack[top]
                    for k in range(x_achievers_start[f], x_achievers_start[f + 1]):
                        o = x_achievers_ops[k]
                        p = pcf[o]
                        if p >= 0 and cost[o] == 0 and not goal_zone[p]:
                            goal_zone[p] = 1
                            stack[top] = p
                            top += 1
            # Forward from the state (and the start fact) without entering the goal zone; operators whose
            # justification edge crosses into it form the cut.
            top = 0
            stack[top] = num_facts
            top += 1
            reached[num_facts] = 1
            for f in range(num_facts):
                if _holds(state, f):
                    reached[f] = 1
                    stack[top] = f
                    top += 1
            num_cut = 0
            while top > 0:
                top -= 1
                f = stack[top]
                for k in range(x_prec_of_start[f], x_prec_of_start[f + 1]):
                    o = x_prec_of_ops[k]
                    if pcf[o] != f:
                        continue
                    for j in range(x_add_start[o], x_add_start[o + 1]):
                        e = x_add_facts[j]
                        if goal_zone[e]:
                            if not in_cut[o]:
                                in_cut[o] = 1
                                cut[num_cut] = o
                                num_cut += 1
                        elif not reached[e]:
                            reached[e] = 1
                            stack[top] = e
                            top += 1
            if num_cut == 0:  # cannot happen while h_max(goal) > 0; guards against an endless loop
                break
            smallest = INF_DIST
            for k in range(num_cut):
                if cost[cut[k]] < smallest:
                    smallest = cost[cut[k]]
            for k in range(num_cut):
                cost[cut[k]] -= smallest
                in_cut[cut[k]] = 0
            h += smallest
            h_goal = _hmax_after_cut(
                cut, num_cut, x_pre_start, x_pre_facts, x_add_start, x_add_facts, x_prec_of_start,
                x_prec_of_ops, cost, dist, pcf, heap_keys, heap_vals, fast_downward_ties,
            )
        out[i] = h
    return out
