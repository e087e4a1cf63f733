"""Exact optimal plan costs h* (and optimal plans) for any state of gripper and ferry, by closed forms, of
visitall, by a search over the order of the cells left to visit, and (from :mod:`tnlib.planning.blocksworld_optimal`)
of blocksworld, by a search over which blocks go to the table.

A state and a goal are given as a dataset row stores them: lists of atoms such as ``"(at ball0 rooma)"``, the
state's static atoms included (``(room ...)``, ``(not-eq ...)``, ...); a task's packed state becomes such a list
with :meth:`tnlib.planning.task.Task.state_to_facts` plus the problem's static atoms. Every action costs one.

Each formula (and the search) covers the states and goals its docstring names -- those the domain's generator
(:mod:`tnlib.planning.generators`) makes and every state reachable from them -- and raises
:class:`~tnlib.errors.OutsideFormulaScope` for anything else, never a number it cannot vouch for. Each docstring
gives the argument: a lower bound every plan pays, and a plan (the one ``*_optimal_plan`` returns) that meets it.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from tnlib.errors import OutsideFormulaScope, SearchNodeLimit
from tnlib.planning.blocksworld_optimal import Atoms, blocksworld_optimal_cost, blocksworld_optimal_plan
from tnlib.planning.pddl import parse_atom


def _by_predicate(atoms: Atoms, arities: dict[str, int], what: str) -> dict[str, list[tuple[str, ...]]]:
    """The atoms' arguments grouped by predicate; any predicate outside ``arities`` or of another arity is refused."""
    grouped: dict[str, list[tuple[str, ...]]] = {name: [] for name in arities}
    for atom in atoms:
        name, args = parse_atom(atom)
        if arities.get(name) != len(args):
            raise OutsideFormulaScope(f"{what}: unexpected atom {atom!r}")
        grouped[name].append(args)
    return {name: sorted(set(args)) for name, args in grouped.items()}


def _one_each(pairs: Iterable[tuple[str, str]], keys: Iterable[str], what: str) -> dict[str, str]:
    """``{key: value}`` from ``(key, value)`` pairs, refusing a key of ``keys`` with no value or several, and a key
    outside ``keys``."""
    keys = set(keys)
    found: dict[str, str] = {}
    for key, value in pairs:
        if key not in keys:
            raise OutsideFormulaScope(f"{what}: {key!r} is not one of the objects it should name")
        if key in found:
            raise OutsideFormulaScope(f"{what}: {key!r} has two ({found[key]!r} and {value!r})")
        found[key] = value
    missing = sorted(keys - set(found))
    if missing:
        raise OutsideFormulaScope(f"{what}: none for {', '.join(missing[:5])}")
    return found


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


# ---------------------------------------------------------------------------------------------------------------
# Gripper


_GRIPPER_STATE = {"room": 1, "ball": 1, "gripper": 1, "at-robby": 1, "at": 2, "free": 1, "carry": 2}


def _gripper_state(state: Atoms, goal: Atoms):
    """The robot's room, the other room, each ball's place (a room, or the gripper holding it), each ball's goal
    room, and the grippers, after checking that the state is one of the domain and the goal the generator's form."""
    facts = _by_predicate(state, _GRIPPER_STATE, "gripper state")
    rooms = [r for (r,) in facts["room"]]
    balls = [b for (b,) in facts["ball"]]
    grippers = [g for (g,) in facts["gripper"]]
    if len(rooms) != 2:
        raise OutsideFormulaScope(f"gripper: the formula covers two rooms, the state has {len(rooms)}")
    if not grippers:
        raise OutsideFormulaScope("gripper: the state has no gripper")
    here = _one_each([("robot", r) for (r,) in facts["at-robby"]], ["robot"], "gripper at-robby")["robot"]
    if here not in rooms:
        raise OutsideFormulaScope(f"gripper: the robot is at {here!r}, not a room")
    places = _one_each(facts["at"] + facts["carry"], balls, "gripper ball places")
    held = [g for (_b, g) in facts["carry"]]
    if any(r not in rooms for (_b, r) in facts["at"]) or any(g not in grippers for g in held):
        raise OutsideFormulaScope("gripper: a ball at no room, or held by no gripper")
    if len(set(held)) != len(held):
        raise OutsideFormulaScope("gripper: two balls in one gripper")
    if {g for (g,) in facts["free"]} != set(grippers) - set(held):
        raise OutsideFormulaScope("gripper: the free grippers are not exactly those holding no ball")
    goal_facts = _by_predicate(goal, {"at": 2}, "gripper goal (every ball's room, as the generator makes)")
    goals = _one_each(goal_facts["at"], balls, "gripper goal rooms")
    if any(room not in rooms for room in goals.values()):
        raise OutsideFormulaScope("gripper: a goal room that is no room")
    there = rooms[1] if here == rooms[0] else rooms[0]
    return here, there, places, goals, grippers


def gripper_optimal_cost(state: Atoms, goal: Atoms) -> int:
    """h* of a gripper state: ``2 (a + b) + c + max(2 ceil(n_out / k) - 1, 2 ceil(b / k), 0)``.

    Scope: two rooms, ``k >= 1`` grippers, any state of the domain (every ball in one room or one gripper, at most
    one ball per gripper, ``free`` exactly for the empty grippers), and a goal naming one room for every ball (the
    generator's form). Anything else raises :class:`OutsideFormulaScope`.

    With the robot in room A and B the other room: ``a`` balls lie in A with goal B, ``b`` lie in B with goal A,
    ``c`` balls are held, ``c_B`` of them with goal B, and ``n_out = a + c_B`` balls must leave A.

    Lower bound: each of the ``a + b`` misplaced lying balls is picked and dropped at least once and each held ball
    dropped at least once: ``2 (a + b) + c`` pick and drop actions. A ball changes room only while held during a
    move, so each of the ``n_out`` balls is held during some move A -> B and each of the ``b`` during some move
    B -> A; a move holds at most ``k`` balls, so at least ``p = ceil(n_out / k)`` moves go A -> B and
    ``q = ceil(b / k)`` go B -> A. Moves alternate starting with A -> B, so ``m`` moves make ``ceil(m / 2)`` of the
    first kind and ``floor(m / 2)`` of the second: ``m >= 2p - 1`` and ``m >= 2q``.

    A plan that meets it (:func:`gripper_optimal_plan`): drop the held balls whose goal is A; then, until no ball
    is misplaced, fill the free grippers with balls bound for the other room, move there and drop everything held.
    Each move A -> B carries ``min(k, still to go)`` balls, each move back likewise, so both directions are done
    after ``max(2p - 1, 2q)`` moves, and no ball is picked or dropped more than the bound counts.
    """
    here, there, places, goals, grippers = _gripper_state(state, goal)
    k = len(grippers)
    lying_out = sum(1 for b, p in places.items() if p == here and goals[b] == there)
    lying_in = sum(1 for b, p in places.items() if p == there and goals[b] == here)
    held = [b for b, p in places.items() if p in grippers]
    held_out = sum(1 for b in held if goals[b] == there)
    moves = max(2 * _ceil_div(lying_out + held_out, k) - 1, 2 * _ceil_div(lying_in, k), 0)
    return 2 * (lying_out + lying_in) + len(held) + moves


def gripper_optimal_plan(state: Atoms, goal: Atoms) -> list[str]:
    """An optimal plan for a gripper state (the plan of :func:`gripper_optimal_cost`'s argument), as operator names
    ``(pick ball room gripper)``, ``(drop ball room gripper)``, ``(move from to)``."""
    here, there, places, goals, grippers = _gripper_state(state, goal)
    holding = {p: b for b, p in places.items() if p in grippers}
    lying = {room: sorted(b for b, p in places.items() if p == room and goals[b] != room) for room in (here, there)}
    plan: list[str] = []
    for gripper, ball in sorted(holding.items()):
        if goals[ball] == here:
            plan.append(f"(drop {ball} {here} {gripper})")
            del holding[gripper]
    while holding or lying[here] or lying[there]:
        for gripper in grippers:
            if gripper not in holding and lying[here]:
                ball = lying[here].pop(0)
                plan.append(f"(pick {ball} {here} {gripper})")
                holding[gripper] = ball
        plan.append(f"(move {here} {there})")
        here, there = there, here
        for gripper, ball in sorted(holding.items()):
            plan.append(f"(drop {ball} {here} {gripper})")
        holding.clear()
    return plan


# ---------------------------------------------------------------------------------------------------------------
# Ferry


_FERRY_STATE = {"location": 1, "car": 1, "not-eq": 2, "at-ferry": 1, "at": 2, "empty-ferry": 0, "on": 1}


def _ferry_state(state: Atoms, goal: Atoms):
    """The ferry's location, the car on board (None if empty) and every car's place and goal location, after
    checking that the state is one of the domain with every location connected and the goal the generator's form."""
    facts = _by_predicate(state, _FERRY_STATE, "ferry state")
    locations = [loc for (loc,) in facts["location"]]
    cars = [c for (c,) in facts["car"]]
    if set(facts["not-eq"]) != {(u, w) for u in locations for w in locations if u != w}:
        raise OutsideFormulaScope("ferry: the formula covers every location connected to every other (not-eq "
                                  "exactly the pairs of distinct locations)")
    ferry = _one_each([("ferry", loc) for (loc,) in facts["at-ferry"]], ["ferry"], "ferry at-ferry")["ferry"]
    if ferry not in locations:
        raise OutsideFormulaScope(f"ferry: the ferry is at {ferry!r}, not a location")
    aboard = [c for (c,) in facts["on"]]
    places = _one_each(facts["at"] + [(c, "") for c in aboard], cars, "ferry car places")
    if any(p not in locations + [""] for p in places.values()):
        raise OutsideFormulaScope("ferry: a car at no location")
    if len(aboard) > 1 or bool(facts["empty-ferry"]) == bool(aboard):
        raise OutsideFormulaScope("ferry: the formula covers one ferry of capacity one (empty-ferry exactly when "
                                  "no car is on board)")
    goal_facts = _by_predicate(goal, {"at": 2}, "ferry goal (every car's location, as the generator makes)")
    goals = _one_each(goal_facts["at"], cars, "ferry goal locations")
    if any(loc not in locations for loc in goals.values()):
        raise OutsideFormulaScope("ferry: a goal location that is no location")
    return ferry, (aboard[0] if aboard else None), places, goals


def _ferry_start_and_arcs(state: Atoms, goal: Atoms):
    """Where the empty ferry starts its transport of the lying cars, the sails and debarks it pays before (for a car
    on board), and the arcs ``(origin, destination, car)`` of the misplaced lying cars."""
    ferry, aboard, places, goals = _ferry_state(state, goal)
    arcs = sorted((place, goals[car], car) for car, place in places.items() if place and place != goals[car])
    if aboard is None:
        return ferry, 0, arcs, []
    first = [] if goals[aboard] == ferry else [f"(sail {ferry} {goals[aboard]})"]
    first.append(f"(debark {aboard} {goals[aboard]})")
    return goals[aboard], len(first), arcs, first


class _Components:
    """Union-find over locations: the weakly connected components of a multigraph."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, v: str) -> str:
        self.parent.setdefault(v, v)
        while self.parent[v] != v:
            self.parent[v] = self.parent[self.parent[v]]
            v = self.parent[v]
        return v

    def union(self, u: str, w: str) -> None:
        self.parent[self.find(u)] = self.find(w)


# A vertex of no location: the arc from it to the ferry's start makes "the walk starts there" part of the trail cover.
_ORIGIN = ""


def _components_and_excesses(arcs: list[tuple[str, str, str]]) -> tuple[_Components, dict[str, int]]:
    """The weakly connected components of a directed multigraph's arcs and each vertex's out-degree - in-degree."""
    components = _Components()
    excess: dict[str, int] = defaultdict(int)
    for u, w, _car in arcs:
        components.union(u, w)
        excess[u] += 1
        excess[w] -= 1
    return components, excess


def _trail_cover_count(arcs: list[tuple[str, str, str]]) -> int:
    """The fewest trails that cover a directed multigraph's arcs: per weakly connected component with arcs,
    ``max(1, sum of positive excesses out - in)``."""
    components, excess = _components_and_excesses(arcs)
    surplus: dict[str, int] = defaultdict(int)
    for v, e in excess.items():
        surplus[components.find(v)] += max(e, 0)
    return sum(max(1, s) for s in surplus.values())


def ferry_optimal_cost(state: Atoms, goal: Atoms) -> int:
    """h* of a ferry state: ``3 |A| + T(A + z->s) - 1``, plus the on-board car's debark and sail if any.

    Scope: one ferry of capacity one (``empty-ferry`` exactly when no car is on board), ``not-eq`` holding for
    exactly the pairs of distinct locations (every location connected, as the generator makes them), any state of
    the domain, and a goal naming one location for every car (the generator's form). Anything else raises
    :class:`OutsideFormulaScope`.

    Terms: ``A`` is the multigraph on locations with an arc ``o -> d`` for every car lying at ``o`` with goal
    ``d != o``. ``s`` is where the ferry starts transporting them: its location if empty; if a car is on board, its
    goal ``d_b``, which costs one debark and, if ``d_b`` is not the ferry's location, one sail first. ``T(G)``, the
    fewest trails covering a multigraph's arcs, is the sum over its weakly connected components with arcs of
    ``max(1, sum of positive excesses out-degree - in-degree)`` (a trail raises the excess sum by at most one, and
    balancing a component with that many added arcs gives an Euler circuit that cut at those arcs gives as many
    trails); ``z -> s`` is an arc from a new vertex, so ``T(A + z->s) - 1`` counts the empty sails needed.

    Lower bound: take any plan. Call a ride a car's stay on board from boarding (or the start) to its debark at
    another location. Replacing each ride's sails by one sail from its start to its end (every location is
    connected) and dropping the sails of stays that end where they began leaves a walk from the ferry's location
    that sails each ride directly; the rides' arcs ``R`` split into the walk's maximal runs of loaded sails, which
    with ``z ->`` the start are trails, so the walk has at least ``T(R + z->start) - 1`` empty sails. Each ride costs a
    board (except a first ride of the car on board) and a debark. A misplaced car's rides form a walk from its origin
    to its goal, a placed car's a closed walk: from ``A`` by splitting an arc ``u -> w`` at a vertex ``x`` or adding
    closed walks. A split costs three actions (sail, board, debark) and leaves every excess as it was, so it merges
    at most two components and lowers ``T`` by at most one; a closed walk of ``k`` arcs costs ``3k`` and lowers
    ``T`` by at most ``k - 1``. So no plan pays less than with ``R = A``. The car on board ``b`` rides first, so the walk
    starts with its first ride ``f -> w``, if it has one: debarked first at ``w = d_b``, it pays the formula's sail
    and debark; at another ``w != f`` it pays those and a ride ``w -> d_b`` (three actions) that lowers ``T`` by at
    most one; debarked first at ``f`` (ride or not), it pays that debark and a later ride ``f -> d_b`` (three
    actions) that lowers ``T`` by at most one against the formula's two. No case pays less than the formula.

    A plan that meets it (:func:`ferry_optimal_plan`): after the car on board is delivered, cover ``A + z->s`` with
    ``T`` trails, the one from ``z`` first; sail along each trail boarding the car of each arc at its origin and
    debarking it at its destination, and make one empty sail from each trail's end to the next trail's start.
    """
    start, prefix, arcs, _first = _ferry_start_and_arcs(state, goal)
    return prefix + 3 * len(arcs) + _trail_cover_count(arcs + [(_ORIGIN, start, "")]) - 1


def _euler_circuit(start: str, out: dict[str, list[tuple[int, str]]]) -> list[int]:
    """The arc indices of an Euler circuit from ``start`` of a connected balanced multigraph (Hierholzer),
    consuming ``out``, each vertex's list of ``(arc index, head)``."""
    stack: list[tuple[str, int]] = [(start, -1)]
    circuit: list[int] = []
    while stack:
        v, arc = stack[-1]
        if out[v]:
            index, w = out[v].pop()
            stack.append((w, index))
        else:
            stack.pop()
            if arc >= 0:
                circuit.append(arc)
    return circuit[::-1]


def _trails(arcs: list[tuple[str, str, str]]) -> list[list[tuple[str, str, str]]]:
    """A cover of the arcs by :func:`_trail_cover_count` trails, the trail from :data:`_ORIGIN` first."""
    components, excess = _components_and_excesses(arcs)
    members: dict[str, list[str]] = defaultdict(list)
    for v in sorted(excess, key=lambda v: (v != _ORIGIN, v)):
        members[components.find(v)].append(v)
    trails = []
    for vertices in members.values():  # the origin's component first: its first vertex is the origin
        graph = [a for a in arcs if components.find(a[0]) == components.find(vertices[0])]
        short = [v for v in vertices for _ in range(-excess[v])]
        over = [v for v in vertices for _ in range(excess[v])]
        # arcs from each vertex short of out-arcs to one with too many balance the component; the circuit cut at
        # them is the trail cover
        balanced = graph + [(u, w, None) for u, w in zip(short, over)]
        out: dict[str, list[tuple[int, str]]] = defaultdict(list)
        for index, (u, w, _car) in enumerate(balanced):
            out[u].append((index, w))
        circuit = [balanced[i] for i in _euler_circuit(over[0] if over else vertices[0], out)]
        # the circuit is cyclic: started right after an added arc, its cuts give no trail in two pieces
        cut = max((i for i, arc in enumerate(circuit) if arc[2] is None), default=len(circuit) - 1)
        circuit = circuit[cut + 1 :] + circuit[: cut + 1]
        current: list[tuple[str, str, str]] = []
        for arc in circuit:
            if arc[2] is None:
                trails.append(current)
                current = []
            else:
                current.append(arc)
        trails.append(current)
    return [trail for trail in trails if trail]


def ferry_optimal_plan(state: Atoms, goal: Atoms) -> list[str]:
    """An optimal plan for a ferry state (the plan of :func:`ferry_optimal_cost`'s argument), as operator names
    ``(sail from to)``, ``(board car location)``, ``(debark car location)``."""
    start, _prefix, arcs, plan = _ferry_start_and_arcs(state, goal)
    here = start
    for trail in _trails([(_ORIGIN, start, "")] + arcs):
        for u, w, car in trail:
            if u == _ORIGIN:
                continue
            if u != here:
                plan.append(f"(sail {here} {u})")
            plan += [f"(board {car} {u})", f"(sail {u} {w})", f"(debark {car} {w})"]
            here = w
    return plan


# ---------------------------------------------------------------------------------------------------------------
# Visitall


_VISITALL_STATE = {"connected": 2, "at-robot": 1, "visited": 1}


class _Tour:
    """A visitall state as a shortest-path problem: the robot's cell, the unvisited goal cells (targets), the
    distances between them on the ``connected`` graph, and the graph's two-colouring if it is bipartite."""

    def __init__(self, state: Atoms, goal: Atoms):
        facts = _by_predicate(state, _VISITALL_STATE, "visitall state")
        edges = set(facts["connected"])
        if any((w, u) not in edges for u, w in edges):
            raise OutsideFormulaScope("visitall: the search covers a symmetric connected relation")
        self.neighbours: dict[str, list[str]] = defaultdict(list)
        for u, w in sorted(edges):
            self.neighbours[u].append(w)
        self.robot = _one_each([("robot", c) for (c,) in facts["at-robot"]], ["robot"], "visitall at-robot")["robot"]
        visited = {c for (c,) in facts["visited"]}
        if self.robot not in visited:
            raise OutsideFormulaScope("visitall: the robot's cell is not visited (no reachable state is so)")
        goals = {c for (c,) in _by_predicate(goal, {"visited": 1}, "visitall goal (visited cells)")["visited"]}
        self.targets = sorted(goals - visited)
        self.places = [self.robot] + self.targets  # index 0 the robot's start, 1.. the targets
        rows = [self._distances(place) for place in self.places]
        if any(d is None for row in rows for d in row):
            raise OutsideFormulaScope("visitall: a goal cell the robot cannot reach")
        self.distance = rows
        self.colour = self._colouring()
        self._trees: dict[tuple[int, ...], int] = {}

    def _depths(self, source: str) -> dict[str, int]:
        """Breadth-first distances from ``source`` to every cell it reaches."""
        seen = {source: 0}
        frontier = [source]
        while frontier:
            following = []
            for u in frontier:
                for w in self.neighbours[u]:
                    if w not in seen:
                        seen[w] = seen[u] + 1
                        following.append(w)
            frontier = following
        return seen

    def _distances(self, source: str) -> list[int | None]:
        seen = self._depths(source)
        return [seen.get(place) for place in self.places]

    def _colouring(self) -> list[int] | None:
        """Each place's side of the bipartite graph (the parity of its distance from the robot), or None if the
        graph has an odd cycle in the robot's component (an edge joining two cells of one parity)."""
        depth = self._depths(self.robot)
        if any(depth[u] % 2 == depth[w] % 2 for u in depth for w in self.neighbours[u]):
            return None
        return [depth[place] % 2 for place in self.places]

    def lower_bound(self, at: int, left: tuple[int, ...]) -> int:
        """A cost no walk from place ``at`` through the places ``left`` beats (see :func:`visitall_optimal_cost`)."""
        if not left:
            return 0
        row = self.distance[at]
        bound = min(row[t] for t in left) + self._spanning_tree(left)
        if self.colour is not None:
            other = sum(1 for t in left if self.colour[t] != self.colour[at])
            same = len(left) - other
            bound = max(bound, 2 * other - 1, 2 * same)
        return bound

    def _spanning_tree(self, left: tuple[int, ...]) -> int:
        """The weight of a minimum spanning tree of ``left`` under the graph distance (Prim), kept per set: the
        search meets each set at many places."""
        if left in self._trees:
            return self._trees[left]
        best = {t: self.distance[left[0]][t] for t in left[1:]}
        total = 0
        while best:
            t = min(best, key=best.__getitem__)
            total += best.pop(t)
            for u in best:
                best[u] = min(best[u], self.distance[t][u])
        self._trees[left] = total
        return total

    def candidates(self, at: int, left: tuple[int, ...]) -> list[int]:
        """The targets worth heading for next: those with no other target on a shortest path to them (visiting that
        one first costs nothing more, and leaving it out later nothing either, distances being a metric)."""
        row = self.distance[at]
        return sorted(
            (t for t in left if not any(u != t and row[u] + self.distance[u][t] == row[t] for u in left)),
            key=row.__getitem__,
        )


def _visitall_order(tour: _Tour, max_nodes: int | None) -> tuple[int, list[int]]:
    """The optimal cost and an optimal order of the targets: iterative deepening on the bound, remembering for each
    (place, targets left) the best lower bound known, the static one or one more than a budget that failed."""
    proven: dict[tuple[int, tuple[int, ...]], int] = {}
    nodes = 0

    def within(at: int, left: tuple[int, ...], budget: int, order: list[int]) -> bool:
        nonlocal nodes
        nodes += 1
        if max_nodes is not None and nodes > max_nodes:
            raise SearchNodeLimit(f"visitall: no optimal plan proved within {max_nodes} search nodes")
        if not left:
            return True
        key = (at, left)
        if key not in proven:
            proven[key] = tour.lower_bound(at, left)
        if proven[key] > budget:
            return False
        for t in tour.candidates(at, left):
            step = tour.distance[at][t]
            order.append(t)
            if within(t, tuple(u for u in left if u != t), budget - step, order):
                return True
            order.pop()
        proven[key] = max(proven[key], budget + 1)
        return False

    start = tuple(range(1, len(tour.places)))
    budget = tour.lower_bound(0, start)
    while True:
        order: list[int] = []
        if within(0, start, budget, order):
            return budget, order
        budget += 1


def visitall_optimal_cost(state: Atoms, goal: Atoms, max_nodes: int | None = None) -> int:
    """h* of a visitall state, by an exact search: the shortest walk from the robot through every unvisited goal cell.

    Scope: any symmetric ``connected`` graph (the generator's grids), a state whose robot cell is visited (every
    reachable state), a goal of ``visited`` atoms with every goal cell reachable; else :class:`OutsideFormulaScope`,
    also when ``max_nodes`` search nodes do not prove the optimum.

    A move visits the cell it enters and nothing else changes, so h* is the length of the shortest walk from the
    robot's cell entering every target (unvisited goal cell). Such a walk enters the targets first in some order and
    costs at least the sum of the graph distances between consecutive ones; following shortest paths in that order
    costs exactly that. So h* is the cheapest order, found by iterative deepening on the cost bound. Lower bound of
    the rest of a walk from place ``a`` through targets ``R``: the distance to the nearest of ``R`` plus a minimum
    spanning tree of ``R`` (the walk from its first target on connects all of ``R``); and, on a bipartite graph,
    where steps alternate sides, ``2 o - 1`` and ``2 s`` for ``o`` targets on the other side of ``a`` and ``s`` on
    its side (odd steps land on the other side, even ones on its own). A target next is skipped when another target
    lies on a shortest path to it (heading there first costs nothing more, and a metric order never pays for
    leaving a target out), and a search that fails at a budget records that budget plus one as a lower bound for
    its (place, targets left), both of which keep the search exact.
    """
    cost, _order = _visitall_order(_Tour(state, goal), max_nodes)
    return cost


def _shortest_path(tour: _Tour, source: str, target: str) -> list[str]:
    """Cells after ``source`` on a shortest path to ``target`` (breadth-first, neighbours in name order)."""
    parent = {source: source}
    frontier = [source]
    while target not in parent:
        following = []
        for u in frontier:
            for w in tour.neighbours[u]:
                if w not in parent:
                    parent[w] = u
                    following.append(w)
        frontier = following
    path = [target]
    while path[-1] != source:
        path.append(parent[path[-1]])
    return path[-2::-1]


def visitall_optimal_plan(state: Atoms, goal: Atoms, max_nodes: int | None = None) -> list[str]:
    """An optimal plan for a visitall state (:func:`visitall_optimal_cost`'s order, along shortest paths), as
    operator names ``(move from to)``."""
    tour = _Tour(state, goal)
    _cost, order = _visitall_order(tour, max_nodes)
    plan: list[str] = []
    here = tour.robot
    for t in order:
        for cell in _shortest_path(tour, here, tour.places[t]):
            plan.append(f"(move {here} {cell})")
            here = cell
    return plan


# ---------------------------------------------------------------------------------------------------------------
# By domain key

OPTIMAL_COSTS = {"blocksworld": blocksworld_optimal_cost, "ferry": ferry_optimal_cost, "gripper": gripper_optimal_cost,
                 "visitall": visitall_optimal_cost}
OPTIMAL_PLANS = {"blocksworld": blocksworld_optimal_plan, "ferry": ferry_optimal_plan, "gripper": gripper_optimal_plan,
                 "visitall": visitall_optimal_plan}


def optimal_cost(domain: str, state: Atoms, goal: Atoms) -> int:
    """h* of ``state`` for ``goal`` in a domain with an exact formula (:data:`OPTIMAL_COSTS`' keys)."""
    if domain not in OPTIMAL_COSTS:
        raise OutsideFormulaScope(f"no exact optimal-cost formula for {domain!r}; there is one for "
                                  f"{', '.join(sorted(OPTIMAL_COSTS))}")
    return OPTIMAL_COSTS[domain](state, goal)


# The solvers that search (the others are closed forms, whose cost does not grow past a budget)
SEARCHING_SOLVERS = ("blocksworld", "visitall")


def optimal_plan(domain: str, state: Atoms, goal: Atoms, max_nodes: int | None = None) -> list[str]:
    """An optimal plan from ``state`` for ``goal`` (operator names) in a domain of :data:`OPTIMAL_PLANS`;
    ``max_nodes`` bounds a searching solver's nodes (:class:`~tnlib.errors.SearchNodeLimit` past it; None: no
    bound) and is not needed by the closed forms."""
    if domain not in OPTIMAL_PLANS:
        raise OutsideFormulaScope(f"no exact optimal plan for {domain!r}; there is one for "
                                  f"{', '.join(sorted(OPTIMAL_PLANS))}")
    if domain in SEARCHING_SOLVERS:
        return OPTIMAL_PLANS[domain](state, goal, max_nodes=max_nodes)
    return OPTIMAL_PLANS[domain](state, goal)
