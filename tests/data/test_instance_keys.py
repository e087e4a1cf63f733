"""Tests for tnlib.data.instance_keys: keys against a brute-force isomorphism test, invariance to renaming and
reordering, class counts against closed forms, the attempt-selection rule, and duplicate counting."""
from __future__ import annotations

import itertools
import math
import random
from collections import Counter

import pytest

import tnlib.data.instance_keys as keys_module
from tnlib.data.attempt_selection import Draw, select_attempts
from tnlib.data.instance_keys import (
    ProblemAtoms,
    canonical_form,
    domain_duplicates,
    exact_key,
    instance_key,
    problem_from_text,
)
from tnlib.errors import InstanceKeyError
from tnlib.planning.generators import generate

DOMAIN_NAMES = {"blocksworld": "blocksworld-4ops", "ferry": "ferry", "gripper": "gripper", "visitall": "visit-all"}

# Generator sizes small enough for brute force over all object bijections (at most 7 objects).
TINY = {
    "blocksworld": [dict(blocks=3), dict(blocks=4)],
    "ferry": [dict(locations=2, cars=2), dict(locations=3, cars=2), dict(locations=2, cars=3)],
    "gripper": [dict(balls=2), dict(balls=3)],
    "visitall": [dict(x=2, y=2, ratio=1.0), dict(x=2, y=3, ratio=0.5), dict(x=3, y=2, ratio=1.0)],
}


def brute_isomorphic(p: ProblemAtoms, q: ProblemAtoms) -> bool:
    """Reference: some type-preserving bijection of objects maps p's init onto q's and p's goal onto q's."""
    if sorted(p.types) != sorted(q.types) or len(p.init) != len(q.init) or len(p.goal) != len(q.goal):
        return False
    q_type = dict(zip(q.objects, q.types))
    for image in itertools.permutations(q.objects):
        mapping = dict(zip(p.objects, image))
        if any(q_type[mapping[o]] != t for o, t in zip(p.objects, p.types)):
            continue
        renamed = p.renamed(mapping)
        if renamed.init == q.init and renamed.goal == q.goal:
            return True
    return False


def random_renaming(p: ProblemAtoms, rng: random.Random) -> ProblemAtoms:
    """Objects renamed to fresh names, shuffled among themselves (the strongest renaming there is)."""
    fresh = [f"obj{k}" for k in rng.sample(range(1000), len(p.objects))]
    return p.renamed(dict(zip(p.objects, fresh)), name="renamed")


def tiny_problems(domain: str, count: int) -> list[ProblemAtoms]:
    return [problem_from_text(generate(domain, seed, **params)) for params in TINY[domain] for seed in range(count)]


# ---------------------------------------------------------------------------------------------------------------
# Keys


@pytest.mark.parametrize("domain", sorted(TINY))
def test_equal_keys_exactly_for_isomorphic_problems(domain):
    problems = tiny_problems(domain, 14)
    keys = [instance_key(p) for p in problems]
    pairs = 0
    for i, j in itertools.combinations(range(len(problems)), 2):
        assert (keys[i] == keys[j]) == brute_isomorphic(problems[i], problems[j]), (problems[i].name, problems[j].name)
        pairs += keys[i] == keys[j]
    assert pairs > 0, "the sample should contain renamed copies, or the test shows nothing"


@pytest.mark.parametrize("domain", sorted(TINY))
def test_keys_ignore_problem_name_object_names_and_order(domain):
    rng = random.Random(7)
    for params in TINY[domain] + [dict(blocks=9)] * (domain == "blocksworld"):
        for seed in range(5):
            text = generate(domain, seed, **params)
            p = problem_from_text(text)
            key = instance_key(text)
            renamed = random_renaming(p, rng)
            order = list(range(len(p.objects)))
            rng.shuffle(order)
            shuffled = ProblemAtoms("other", tuple(renamed.objects[k] for k in order),
                                    tuple(renamed.types[k] for k in order), renamed.init, renamed.goal)
            # Through PDDL text, upper case: the parser's case folding and any atom order are covered too.
            rewritten = shuffled.to_pddl(DOMAIN_NAMES[domain]).upper()
            assert instance_key(rewritten) == key
            assert instance_key(renamed) == key
            assert exact_key(p) != exact_key(renamed)  # the names did change


def test_different_problems_get_different_keys():
    # One atom changed (the visitall robot's start cell, a gripper goal room): different keys.
    base = problem_from_text(generate("visitall", 3, x=3, y=3, ratio=0.5))
    start = next(a for a in base.init if a[0] == "at-robot")[1]
    other = next(o for o in base.objects if o != start)
    moved = ProblemAtoms("m", base.objects, base.types,
                         (base.init - {("at-robot", start), ("visited", start)}) | {("at-robot", other),
                                                                                    ("visited", other)},
                         base.goal | {("visited", other)})
    assert instance_key(moved) != instance_key(base)
    g = problem_from_text(generate("gripper", 1, balls=4))
    atom = sorted(g.goal)[0]
    flipped = ("at", atom[1], "roomb" if atom[2] == "rooma" else "rooma")
    changed = ProblemAtoms("c", g.objects, g.types, g.init, (g.goal - {atom}) | {flipped})
    assert instance_key(changed) != instance_key(g)
    # An init atom moved to the goal is another problem (phases are part of the key).
    a = ProblemAtoms("a", ("x", "y"), ("object", "object"), frozenset({("p", "x")}), frozenset({("q", "y")}))
    b = ProblemAtoms("b", ("x", "y"), ("object", "object"), frozenset({("q", "y")}), frozenset({("p", "x")}))
    assert instance_key(a) != instance_key(b)
    # Types count: the same atoms over objects of other types.
    c = ProblemAtoms("c", ("x", "y"), ("place", "object"), a.init, a.goal)
    assert instance_key(c) != instance_key(a)


def _visitall_ratio_one(x: int, y: int, start: tuple[int, int]) -> ProblemAtoms:
    cells = [(i, j) for i in range(x) for j in range(y)]
    name = lambda c: f"loc-x{c[0]}-y{c[1]}"  # noqa: E731
    init = {("at-robot", name(start)), ("visited", name(start))}
    for i, j in cells:
        for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            if (i + di, j + dj) in cells:
                init.add(("connected", name((i, j)), name((i + di, j + dj))))
    return ProblemAtoms("v", tuple(map(name, cells)), ("place",) * len(cells), frozenset(init),
                        frozenset(("visited", name(c)) for c in cells))


def _grid_start_orbits(x: int, y: int) -> int:
    """Closed form for the reference: start cells up to the grid's symmetries (the dihedral group of the
    rectangle: 8 maps for a square, 4 otherwise), counted with Burnside's lemma."""
    maps = [lambda i, j: (i, j), lambda i, j: (x - 1 - i, j), lambda i, j: (i, y - 1 - j),
            lambda i, j: (x - 1 - i, y - 1 - j)]
    if x == y:
        maps += [lambda i, j: (j, i), lambda i, j: (x - 1 - j, i), lambda i, j: (j, x - 1 - i),
                 lambda i, j: (x - 1 - j, x - 1 - i)]
    fixed = sum(1 for f in maps for i in range(x) for j in range(y) if f(i, j) == (i, j))
    return fixed // len(maps)


@pytest.mark.parametrize("x,y", [(3, 3), (4, 4), (5, 5), (5, 6), (6, 5), (7, 7)])
def test_visitall_ratio_one_has_one_instance_per_start_cell_orbit(x, y):
    """With every cell a goal, a problem is its start cell: x*y of them as written, fewer up to renaming (the
    grid's rotations and reflections), e.g. 3 for 3x3 and 6 for 5x5."""
    starts = [(i, j) for i in range(x) for j in range(y)]
    problems = [_visitall_ratio_one(x, y, s) for s in starts]
    assert len({exact_key(p) for p in problems}) == x * y
    assert len({instance_key(p) for p in problems}) == _grid_start_orbits(x, y)
    assert _grid_start_orbits(3, 3) == 3 and _grid_start_orbits(5, 5) == 6
    # And the generator's ratio-1 draws are such problems.
    drawn = problem_from_text(generate("visitall", 11, x=x, y=y, ratio=1.0))
    assert instance_key(drawn) in {instance_key(p) for p in problems}


@pytest.mark.parametrize("balls", [1, 2, 3, 4])
def test_gripper_instance_count_matches_the_closed_form(balls):
    """Every gripper problem of n balls (each ball's start and goal room, the robot's room: 2^(2n+1) written
    problems) up to renaming: a multiset of n balls over 4 (start, goal) kinds, and the robot's room, modulo
    swapping the rooms, which always moves the robot -- so C(n+3, 3) instances."""
    rooms = ("rooma", "roomb")
    found = set()
    for starts in itertools.product(rooms, repeat=balls):
        for goals in itertools.product(rooms, repeat=balls):
            for robot in rooms:
                objects = ("rooma", "roomb", "left", "right", *(f"ball{i}" for i in range(balls)))
                init = {("room", "rooma"), ("room", "roomb"), ("gripper", "left"), ("gripper", "right"),
                        ("free", "left"), ("free", "right"), ("at-robby", robot)}
                init |= {("ball", f"ball{i}") for i in range(balls)}
                init |= {("at", f"ball{i}", r) for i, r in enumerate(starts)}
                goal = {("at", f"ball{i}", r) for i, r in enumerate(goals)}
                found.add(instance_key(ProblemAtoms("g", objects, ("object",) * len(objects),
                                                    frozenset(init), frozenset(goal))))
    assert len(found) == math.comb(balls + 3, 3)


def test_large_instances_are_keyed_consistently():
    rng = random.Random(3)
    for domain, params in (("gripper", dict(balls=100)), ("ferry", dict(locations=30, cars=30)),
                           ("ferry", dict(locations=30, cars=10)), ("visitall", dict(x=7, y=7, ratio=1.0)),
                           ("blocksworld", dict(blocks=22))):
        p = problem_from_text(generate(domain, 5, **params))
        assert instance_key(random_renaming(p, rng)) == instance_key(p), domain


@pytest.mark.parametrize("domain", sorted(TINY))
def test_state_goal_keys_equal_exactly_for_pairs_equal_up_to_renaming(domain):
    """(state, goal) pairs -- states made from tiny problems' initial states by dropping one atom -- keyed from
    the tables' atom strings: equal under a random renaming, and equal for two pairs exactly when brute force
    over every renaming finds one mapping one onto the other."""
    from tnlib.data.instance_keys import state_goal_key, state_goal_signature

    rng = random.Random(7)
    show = lambda atoms: [f"({' '.join(a)})" for a in sorted(atoms)]  # noqa: E731  the tables' atom strings
    pairs = []
    for p in tiny_problems(domain, 2)[:4]:
        for dropped in sorted(p.init)[:3]:
            pairs.append(ProblemAtoms(p.name, p.objects, p.types, p.init - {dropped}, p.goal))
    for p in pairs:
        q = random_renaming(p, rng)
        assert state_goal_key(p, show(p.init), show(p.goal)) == state_goal_key(q, q.init, q.goal) \
            == instance_key(p)
        assert state_goal_signature(p, show(p.init), show(p.goal)) == state_goal_signature(q, show(q.init),
                                                                                          show(q.goal))
    for p, q in itertools.combinations(pairs, 2):
        same = state_goal_key(p, p.init, p.goal) == state_goal_key(q, q.init, q.goal)
        assert same == brute_isomorphic(p, q), (p.name, q.name)


def test_complete_relations_are_kept_as_their_support():
    # not-eq over {l0, l1, l2} minus one pair is not complete: it must stay a relation and change the key.
    p = problem_from_text(generate("ferry", 2, locations=3, cars=1))
    pair = sorted(a for a in p.init if a[0] == "not-eq")[0]
    broken = ProblemAtoms("b", p.objects, p.types, p.init - {pair}, p.goal)
    assert instance_key(broken) != instance_key(p)
    assert "not-eq*all-pairs" in canonical_form(p) and "not-eq*all-pairs" not in canonical_form(broken)


def test_too_symmetric_problems_stop_with_an_error(monkeypatch):
    # A hub with k pendant paths hub -> a_i -> b_i: k! automorphisms that exchanging single objects cannot
    # capture, so the search needs k! leaves.
    k = 6
    objects = ("hub", *(f"a{i}" for i in range(k)), *(f"b{i}" for i in range(k)))
    init = {("e", "hub", f"a{i}") for i in range(k)} | {("e", f"a{i}", f"b{i}") for i in range(k)}
    p = ProblemAtoms("star", objects, ("object",) * len(objects), frozenset(init), frozenset())
    assert len(canonical_form(p).splitlines()) == len(objects) + len(init)
    monkeypatch.setattr(keys_module, "MAX_LEAVES", math.factorial(k) - 1)
    with pytest.raises(InstanceKeyError, match="too symmetric"):
        instance_key(p)


def test_parse_errors_are_clear():
    good = generate("gripper", 1, balls=2)
    with pytest.raises(InstanceKeyError, match="undeclared 'ball7'"):
        instance_key(good.replace("(at ball1", "(at ball7"))
    with pytest.raises(InstanceKeyError, match="only positive atoms"):
        problem_from_text(good.replace("(:goal (and", "(:goal (and (not (free left))"))
    with pytest.raises(InstanceKeyError, match="unbalanced"):
        problem_from_text(good + ")")
    with pytest.raises(InstanceKeyError, match="without :goal"):
        problem_from_text("(define (problem p) (:domain d) (:objects a) (:init (p a)))")
    assert problem_from_text(good.replace("(define", "; a comment\n(define")).init == problem_from_text(good).init


def test_exact_key_is_the_atom_strings_without_the_name():
    text = generate("ferry", 4, locations=3, cars=2)
    p = problem_from_text(text)
    assert exact_key(text) == exact_key(p.renamed({}, name="another-name"))
    one_less = ProblemAtoms(p.name, p.objects, p.types, p.init, p.goal - {sorted(p.goal)[0]})
    assert exact_key(one_less) != exact_key(p)
    # Renaming two cars that start and end in different places changes the atom strings, not the instance.
    swapped = p.renamed({"c0": "c1", "c1": "c0"})
    assert instance_key(swapped) == instance_key(p)
    assert (exact_key(swapped) == exact_key(p)) == (swapped.init == p.init and swapped.goal == p.goal)


# ---------------------------------------------------------------------------------------------------------------
# Selecting attempts


def _draws(table: dict[tuple[int, int], str], trivial: set = frozenset()):
    """draw(slot, attempt) from a table of keys; seeds 100 * slot + attempt."""
    def draw(slot, attempt):
        key = table.get((slot, attempt), f"fresh-{slot}-{attempt}")
        return Draw(attempt, 100 * slot + attempt, f"s{slot}a{attempt}", key, f"sha-{slot}-{attempt}",
                    (slot, attempt) in trivial)
    return draw


def _solve_all(status_by_seed: dict | None = None):
    status_by_seed = status_by_seed or {}
    return lambda seed: {"status": status_by_seed.get(seed, "solved"), "seconds": 1.0}


def test_a_draw_equal_to_an_earlier_split_or_slot_is_rejected_and_retried():
    slots = [((("n", 1),), 1), ((("n", 1),), 2), ((("n", 2),), 1)]
    table = {(0, 0): "K-train", (1, 0): "A", (2, 0): "A", (2, 1): "K-train"}
    sel = select_attempts("val", slots, _draws(table, trivial={(0, 1)}), _solve_all(), {"K-train": "train/t7"}, 5)
    assert sel.complete
    first, second, third = sel.choices
    assert first.status == "ok" and first.draw.attempt == 2
    assert first.rejected == [{"seed": 0, "status": "duplicate", "of": "train/t7"}, {"seed": 1, "status": "trivial"}]
    assert second.status == "ok" and second.draw.key == "A" and second.rejected == []
    assert third.draw.attempt == 2
    assert [r["of"] for r in third.rejected] == ["val/s1a0", "train/t7"]
    assert len({c.draw.key for c in sel.choices}) == 3


def test_an_exhausted_cell_stops_instead_of_drawing_on():
    # A cell with two distinct problems ("a", "b"): five slots, three attempts each.
    cell = (("x", 3),)
    slots = [(cell, n) for n in range(1, 6)] + [((("x", 4),), 1)]
    table = {(i, a): "ab"[(i + a) % 2] for i in range(5) for a in range(3)}
    calls = Counter()
    base = _draws(table)

    def draw(slot, attempt):
        calls[slot] += 1
        return base(slot, attempt)

    sel = select_attempts("train", slots, draw, _solve_all(), {}, 3)
    statuses = [c.status for c in sel.choices]
    assert statuses == ["ok", "ok", "exhausted", "skipped", "skipped", "ok"]
    assert [r["status"] for r in sel.choices[2].rejected] == ["duplicate"] * 3
    assert calls[3] == calls[4] == 0  # skipped slots draw nothing
    assert sel.exhausted_cells() == [{"params": {"x": 3}, "instances": 2, "unfilled": 3, "exhausted_at": 3}]


def test_failed_solves_move_to_the_next_round_whatever_order_outcomes_arrive_in():
    slots = [((("n", 1),), s) for s in range(4)]
    table = {(0, 1): "B", (2, 0): "B", (1, 1): "C"}  # slot 0's retry may not take slot 2's key
    failures = {0: "timeout", 100: "memory", 101: "exception"}  # seeds: 100 * slot + attempt
    outcomes: dict[int, dict] = {}
    rng = random.Random(0)
    while True:
        sel = select_attempts("test", slots, _draws(table), outcomes.get, {}, 4)
        if sel.complete:
            break
        revealed = rng.sample(sel.needed, k=max(1, len(sel.needed) // 2))  # outcomes arrive in a random order
        for d in revealed:
            outcomes[d.seed] = {"status": failures.get(d.seed, "solved"), "seconds": 1.0}
    direct = select_attempts("test", slots, _draws(table), _solve_all(failures), {}, 4)
    assert [(c.status, c.draw and c.draw.seed, c.rejected) for c in sel.choices] == \
        [(c.status, c.draw and c.draw.seed, c.rejected) for c in direct.choices]
    zero, one, two, three = sel.choices
    assert zero.status == "ok" and zero.draw.attempt == 2  # attempt 0 timed out, attempt 1 repeats slot 2's B
    assert [r["status"] for r in zero.rejected] == ["timeout", "duplicate"]
    assert one.status == "failed" and [r["status"] for r in one.rejected] == ["memory", "exception"]
    assert two.status == three.status == "ok"


# ---------------------------------------------------------------------------------------------------------------
# Counting


def test_duplicate_counts_per_split():
    keys = {
        "train": [("t1", "a"), ("t2", "b"), ("t3", "a")],
        "val": [("v1", "b"), ("v2", "c"), ("v3", "c")],
        "test": [("x1", "c"), ("x2", "d")],
    }
    report = domain_duplicates(keys)
    assert (report["train"].within, report["train"].in_earlier) == (1, 0)
    assert (report["val"].within, report["val"].in_train, report["val"].in_earlier) == (1, 1, 1)
    assert (report["test"].within, report["test"].in_train, report["test"].in_earlier) == (0, 0, 1)
    assert report["val"].earlier_examples == ["v1 repeats t2"] and report["train"].within_examples == ["t3 repeats t1"]
