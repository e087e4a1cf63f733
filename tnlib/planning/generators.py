"""Random instance generators for the paper's four domains.

The paper drew its instances from the IPC parameterized generators. These are tnlib's own Python generators that
draw from the same distributions (see ``specs/instance-generators.md``): for every domain, the same random process
over the same objects, so a tnlib instance of given parameters is distributed like an IPC one. The random streams
differ from the C generators', so instances are not byte-identical to IPC ones.

Everything is deterministic given ``seed``: each call builds its own ``random.Random(seed)`` and never touches
global random state.

Domain names: generated problems say ``(:domain NAME)`` with the name declared in the domain file the paper lists
in its appendix, which is what tnlib ships (``tnlib/planning/domains/KEY/domain.pddl``): ``blocksworld-4ops``, ``ferry``,
``gripper`` and ``visit-all``. The IPC generators write ``gripper-strips`` and ``grid-visit-all`` instead; the
planners used here do not check the name, but pyperplan and human readers are happier when they agree.

Domains and parameters:

* ``blocksworld`` (``blocks``): initial and goal states are independent uniform samples over all block states
  (Slaney & Thiébaux's sampler with exact integer counts).
* ``ferry`` (``locations``, ``cars``): origins, destinations and the ferry's position uniform over locations.
* ``gripper`` (``balls``): the paper's randomized gripper -- each ball's start room, the robot's room and each ball's
  goal room uniform over the two rooms.
* ``visitall`` (``x``, ``y``, ``ratio``): start cell uniform; each cell is a goal when an integer draw
  ``d ~ U{0, .., x*y-1}`` satisfies ``d < ratio*x*y`` (so a non-start cell is a goal with probability
  ``ceil(ratio*x*y) / (x*y)``, exactly as in the IPC C generator), and the start cell always is.
"""
from __future__ import annotations

import functools
import math
import numbers
import random
from pathlib import Path
from typing import Any, Callable

from tnlib.paper import DOMAINS

# A blocksworld state: towers listed bottom to top, as tuples of block numbers (1-based). Canonical form
# (see `canonical_blocksworld_state`) sorts the towers, because towers on the table are unordered.
Tower = tuple[int, ...]
BlocksState = tuple[Tower, ...]

# Each domain's name as its PDDL file declares it.
DOMAIN_NAMES = dict(zip(DOMAINS, ("blocksworld-4ops", "ferry", "gripper", "visit-all")))

# The parameters each generator takes, in the order they appear in problem names.
DOMAIN_PARAMETERS: dict[str, tuple[str, ...]] = {
    "blocksworld": ("blocks",),
    "ferry": ("locations", "cars"),
    "gripper": ("balls",),
    "visitall": ("x", "y", "ratio"),
}


# ---------------------------------------------------------------------------------------------------------------
# Parameter checks


def _check_int(name: str, value: Any, minimum: int) -> int:
    # Integral admits numpy integers (parameter grids often come from numpy); bool is Integral too, but True
    # blocks is surely a mistake.
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"parameter {name!r} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"parameter {name!r} must be >= {minimum}, got {value}")
    return int(value)


def _check_ratio(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"parameter 'ratio' must be a number in (0, 1], got {value!r}")
    ratio = float(value)
    if not (0.0 < ratio <= 1.0):  # also rejects NaN
        raise ValueError(f"parameter 'ratio' must be in (0, 1], got {value!r}")
    return ratio


def _check_seed(seed: Any) -> int:
    # Negative seeds are refused: random.Random seeds with abs(seed), so -1 would silently repeat seed 1.
    return _check_int("seed", seed, 0)


# ---------------------------------------------------------------------------------------------------------------
# Blocksworld: uniform state sampling


@functools.lru_cache(maxsize=None)
def _completion_table(n_max: int) -> tuple[tuple[int, ...], ...]:
    """``table[n][k]`` = g(n, k) for n <= n_max and k <= n_max - n (all that sampling n_max blocks needs)."""
    table: list[list[int]] = [[1] * (n_max + 1)]  # g(0, k) = 1
    for n in range(n_max):
        prev = table[n]
        # g(n+1, k) = (n+k) g(n, k) + g(n, k+1); row n+1 needs k up to n_max - n - 1.
        table.append([(n + k) * prev[k] + prev[k + 1] for k in range(n_max - n)])
    return tuple(tuple(row) for row in table)


def blocksworld_completions(n: int, k: int) -> int:
    """g(n, k): the number of ways to complete a partial state with ``n`` floating and ``k`` grounded towers.

    Exact (Python int). ``blocksworld_completions(N, 0)`` is the number of N-block states.
    """
    _check_int("n", n, 0)
    _check_int("k", k, 0)
    return _completion_table(n + k)[n][k]


def blocksworld_state_count(blocks: int) -> int:
    """The number of distinct states of ``blocks`` blocks: 1, 3, 13, 73, 501, 4051, ..."""
    return blocksworld_completions(_check_int("blocks", blocks, 0), 0)


def canonical_blocksworld_state(towers: list[list[int]] | BlocksState) -> BlocksState:
    """Towers as a sorted tuple of tuples, so equal states compare equal."""
    return tuple(sorted(tuple(t) for t in towers))


def sample_blocksworld_state(blocks: int, rng: random.Random) -> BlocksState:
    """One state of ``blocks`` blocks, uniform over all states (Slaney & Thiébaux).

    Returns the canonical towers (bottom to top, block numbers 1..blocks). Consumes one ``rng.randrange`` per block.
    """
    _check_int("blocks", blocks, 1)
    table = _completion_table(blocks)
    floating: list[list[int]] = [[b] for b in range(1, blocks + 1)]
    grounded: list[list[int]] = []
    for _ in range(blocks):
        tower = floating.pop()
        n, k = len(floating), len(grounded)
        ground_weight = table[n][k + 1]
        # One exact integer draw decides both "ground it?" (weight g(n,k+1)) and, otherwise, which of the n+k
        # towers receives it (weight g(n,k) each): no floating-point rounding in the probabilities.
        r = rng.randrange(ground_weight + (n + k) * table[n][k])
        if r < ground_weight:
            grounded.append(tower)
        else:
            target = (r - ground_weight) // table[n][k]
            receiver = floating[target] if target < n else grounded[target - n]
            receiver.extend(tower)  # tower goes on top; a floating receiver stays floating
    return canonical_blocksworld_state(grounded)


def _blocksworld_problem(name: str, rng: random.Random, blocks: int) -> str:
    blocks = _check_int("blocks", blocks, 1)
    init_state = sample_blocksworld_state(blocks, rng)
    goal_state = sample_blocksworld_state(blocks, rng)
    objects = [f"b{i}" for i in range(1, blocks + 1)]
    init = ["(arm-empty)"]
    for tower in init_state:
        init.append(f"(on-table b{tower[0]})")
        init.extend(f"(on b{upper} b{lower})" for lower, upper in zip(tower, tower[1:]))
        init.append(f"(clear b{tower[-1]})")
    goal = [f"(on b{upper} b{lower})" for tower in goal_state for lower, upper in zip(tower, tower[1:])]
    return _problem_text(name, "blocksworld", objects, init, goal)


# ---------------------------------------------------------------------------------------------------------------
# Ferry, gripper, visitall


def _ferry_problem(name: str, rng: random.Random, locations: int, cars: int) -> str:
    locations = _check_int("locations", locations, 1)
    cars = _check_int("cars", cars, 0)
    # Draw order as in the spec: all origins, then all destinations, then the ferry.
    origins = [rng.randrange(locations) for _ in range(cars)]
    destinations = [rng.randrange(locations) for _ in range(cars)]
    ferry = rng.randrange(locations)
    objects = [f"l{i}" for i in range(locations)] + [f"c{i}" for i in range(cars)]
    init = [f"(location l{i})" for i in range(locations)]
    init += [f"(car c{i})" for i in range(cars)]
    init += [f"(not-eq l{i} l{j})" for i in range(locations) for j in range(locations) if i != j]
    init.append("(empty-ferry)")
    init += [f"(at c{i} l{origin})" for i, origin in enumerate(origins)]
    init.append(f"(at-ferry l{ferry})")
    goal = [f"(at c{i} l{dest})" for i, dest in enumerate(destinations)]
    return _problem_text(name, "ferry", objects, init, goal)


GRIPPER_ROOMS = ("rooma", "roomb")


def _gripper_problem(name: str, rng: random.Random, balls: int) -> str:
    balls = _check_int("balls", balls, 1)
    # Draw order as in the spec: every ball's start room, the robot's room, every ball's goal room.
    starts = [rng.choice(GRIPPER_ROOMS) for _ in range(balls)]
    robot = rng.choice(GRIPPER_ROOMS)
    goals = [rng.choice(GRIPPER_ROOMS) for _ in range(balls)]
    objects = [*GRIPPER_ROOMS, "left", "right"] + [f"ball{i}" for i in range(balls)]
    init = ["(room rooma)", "(room roomb)", "(gripper left)", "(gripper right)"]
    init += [f"(ball ball{i})" for i in range(balls)]
    init += ["(free left)", "(free right)"]
    init += [f"(at ball{i} {room})" for i, room in enumerate(starts)]
    init.append(f"(at-robby {robot})")
    goal = [f"(at ball{i} {room})" for i, room in enumerate(goals)]
    return _problem_text(name, "gripper", objects, init, goal)


def visitall_cell(i: int, j: int) -> str:
    """The object name of grid cell (i, j), i < x, j < y."""
    return f"loc-x{i}-y{j}"


def visitall_goal_probability(x: int, y: int, ratio: float) -> float:
    """The probability that a non-start cell is a goal: the share of draws d in {0..x*y-1} with d < ratio*x*y."""
    cells = _check_int("x", x, 1) * _check_int("y", y, 1)
    return min(cells, math.ceil(_check_ratio(ratio) * cells)) / cells


def _visitall_problem(name: str, rng: random.Random, x: int, y: int, ratio: float) -> str:
    x = _check_int("x", x, 1)
    y = _check_int("y", y, 1)
    ratio = _check_ratio(ratio)
    cells = [(i, j) for i in range(x) for j in range(y)]  # row-major: i is the row
    start = cells[rng.randrange(len(cells))]
    threshold = ratio * x * y
    # Exactly one integer draw per cell, start cell included, as the IPC generator does; with ratio 1 every draw
    # is below the threshold.
    goal_cells = [cell for cell in cells if rng.randrange(x * y) < threshold or cell == start]
    objects = [visitall_cell(i, j) for i, j in cells]
    init = [f"(at-robot {visitall_cell(*start)})", f"(visited {visitall_cell(*start)})"]
    for i, j in cells:
        for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            ni, nj = i + di, j + dj
            if 0 <= ni < x and 0 <= nj < y:
                init.append(f"(connected {visitall_cell(i, j)} {visitall_cell(ni, nj)})")
    goal = [f"(visited {visitall_cell(i, j)})" for i, j in goal_cells]
    return _problem_text(name, "visitall", objects, init, goal, object_type="place")


# ---------------------------------------------------------------------------------------------------------------
# Output and the public entry point


def _problem_text(
    name: str, domain: str, objects: list[str], init: list[str], goal: list[str], object_type: str | None = None
) -> str:
    typed = f" - {object_type}" if object_type else ""
    lines = [f"(define (problem {name})", f"  (:domain {DOMAIN_NAMES[domain]})"]
    lines += [f"  (:objects {' '.join(objects)}{typed})", "  (:init"]
    lines += [f"    {atom}" for atom in init]
    lines += ["  )", "  (:goal (and"]
    lines += [f"    {atom}" for atom in goal]
    lines += ["  ))", ")"]
    return "\n".join(lines) + "\n"


_GENERATORS: dict[str, Callable[..., str]] = {
    "blocksworld": _blocksworld_problem,
    "ferry": _ferry_problem,
    "gripper": _gripper_problem,
    "visitall": _visitall_problem,
}


_PARAM_CHECKS: dict[str, Callable[[Any], Any]] = {
    "blocks": lambda v: _check_int("blocks", v, 1),
    "locations": lambda v: _check_int("locations", v, 1),
    "cars": lambda v: _check_int("cars", v, 0),
    "balls": lambda v: _check_int("balls", v, 1),
    "x": lambda v: _check_int("x", v, 1),
    "y": lambda v: _check_int("y", v, 1),
    "ratio": _check_ratio,
}


def _checked_params(domain: str, params: dict[str, Any]) -> dict[str, Any]:
    """The parameters after all checks, as plain Python ints / floats, in the domain's order."""
    _check_domain_and_params(domain, params)
    return {p: _PARAM_CHECKS[p](params[p]) for p in DOMAIN_PARAMETERS[domain]}


def _check_domain_and_params(domain: str, params: dict[str, Any]) -> None:
    if domain not in _GENERATORS:
        raise ValueError(f"unknown domain {domain!r}; expected one of {sorted(_GENERATORS)}")
    expected = DOMAIN_PARAMETERS[domain]
    missing = [p for p in expected if p not in params]
    unknown = [p for p in params if p not in expected]
    if missing or unknown:
        raise ValueError(
            f"domain {domain!r} takes parameters {', '.join(expected)}"
            + (f"; missing: {', '.join(missing)}" if missing else "")
            + (f"; unknown: {', '.join(unknown)}" if unknown else "")
        )


def _format_param(value: Any) -> str:
    # Ratios print as 0.5 / 1 rather than repr noise (1 and 1.0 name the same instance); `g` keeps 0.25 as 0.25.
    return format(value, "g") if isinstance(value, float) else str(value)


_NAME_PREFIX = {"blocks": "b", "locations": "l", "cars": "c", "balls": "b", "x": "x", "y": "y", "ratio": "r"}


def problem_name(domain: str, seed: int, **params: Any) -> str:
    """The problem's name: domain key, then each parameter in order, then the seed.

    e.g. ``blocksworld-b5-s1``, ``ferry-l3-c2-s7``, ``gripper-b4-s1``, ``visitall-x3-y3-r0.5-s2``. A valid PDDL name
    and file stem; distinct parameters and seeds give distinct names.
    """
    params = _checked_params(domain, params)
    parts = [domain] + [f"{_NAME_PREFIX[p]}{_format_param(value)}" for p, value in params.items()]
    return "-".join(parts + [f"s{_check_seed(seed)}"])


def generate(domain: str, seed: int, **params: Any) -> str:
    """Problem PDDL text for ``domain`` with generator parameters ``params``, deterministic given ``seed``.

    Raises ValueError naming the parameter when one is missing, unknown, not an integer, or out of range.
    """
    params = _checked_params(domain, params)
    seed = _check_seed(seed)
    rng = random.Random(seed)
    return _GENERATORS[domain](problem_name(domain, seed, **params), rng, **params)


def domain_file(domain: str) -> Path:
    """The shipped domain PDDL file for a domain key."""
    if domain not in DOMAIN_NAMES:
        raise ValueError(f"unknown domain {domain!r}; expected one of {sorted(DOMAIN_NAMES)}")
    return Path(__file__).parent / "domains" / domain / "domain.pddl"


__all__ = [
    "DOMAIN_NAMES",
    "DOMAIN_PARAMETERS",
    "blocksworld_completions",
    "blocksworld_state_count",
    "canonical_blocksworld_state",
    "domain_file",
    "generate",
    "problem_name",
    "sample_blocksworld_state",
    "visitall_cell",
    "visitall_goal_probability",
]
