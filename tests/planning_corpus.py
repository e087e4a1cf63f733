"""Shared fixtures-by-function for the planning-core tests: small instances of the four domains and random
reachable states (random walks from the initial state), built deterministically."""
from __future__ import annotations

import functools
import random
from pathlib import Path

from tnlib.planning.search import random_walk_states  # noqa: F401  (re-exported for the tests)
from tnlib.planning.task import Task, load_task

DATA = Path(__file__).resolve().parent / "fixtures" / "pddl"

# Small enough that the reachable state space is explored in well under a second (h* via breadth-first search).
SMALL_INSTANCES = {
    "blocksworld": dict(blocks=5),
    "ferry": dict(locations=4, cars=3),
    "gripper": dict(balls=3),
    "visitall": dict(x=3, y=3, ratio=0.6),
}
# Larger instances for heuristic comparisons on random-walk states.
MEDIUM_INSTANCES = {
    "blocksworld": dict(blocks=9),
    "ferry": dict(locations=5, cars=4),
    "gripper": dict(balls=6),
    "visitall": dict(x=5, y=5, ratio=0.5),
}


@functools.lru_cache(maxsize=None)
def problem_file(tmp_root: str, domain: str, seed: int, size: str) -> Path:
    from tnlib.planning.generators import generate

    params = (SMALL_INSTANCES if size == "small" else MEDIUM_INSTANCES)[domain]
    path = Path(tmp_root) / f"{domain}-{size}-{seed}.pddl"
    path.write_text(generate(domain, seed, **params), encoding="utf-8")
    return path


@functools.lru_cache(maxsize=None)
def instance(tmp_root: str, domain: str, seed: int = 1, size: str = "small") -> Task:
    return load_task(domain, problem_file(tmp_root, domain, seed, size))


def pyperplan_task(domain: str, problem: Path):
    """pyperplan's grounding of the domain and problem, every operator kept: a valid plan may use ones its relevance
    analysis would drop."""
    from pyperplan.grounding import ground
    from pyperplan.pddl.parser import Parser

    from tnlib.planning.generators import domain_file

    parser = Parser(str(domain_file(domain)), str(problem))
    return ground(parser.parse_problem(parser.parse_domain()), remove_irrelevant_operators=False)


def pyperplan_replays(domain: str, problem: Path, plan: list[str]) -> bool:
    """The plan simulated on :func:`pyperplan_task`: each step a ground operator applicable where it stands, the
    goal reached at the end. A reference for tnlib's own validator, which shares tnlib's grounding."""
    task = pyperplan_task(domain, problem)
    operators = {op.name: op for op in task.operators}
    state = task.initial_state
    for step in plan:
        if step not in operators or not operators[step].applicable(state):
            return False
        state = operators[step].apply(state)
    return task.goal_reached(state)


def random_strips_text(seed: int) -> tuple[str, str]:
    """A random propositional STRIPS domain and problem (PDDL text): 3-8 facts, 2-9 actions with 0-3
    preconditions (so some have none), overlapping add/delete lists, dead ends and unsolvable goals included."""
    rng = random.Random(seed)
    n = rng.randint(3, 8)
    facts = [f"p{i}" for i in range(n)]

    def conjunction(atoms, negated=()):
        return "(and " + " ".join([f"({a})" for a in atoms] + [f"(not ({a}))" for a in negated]) + ")"

    domain = ["(define (domain random-strips)", " (:requirements :strips)",
              " (:predicates " + " ".join(f"({f})" for f in facts) + ")"]
    for a in range(rng.randint(2, 9)):
        pre = rng.sample(facts, rng.randint(0, min(3, n)))
        add = rng.sample(facts, rng.randint(1, 2))
        delete = rng.sample(facts, rng.randint(0, 2))
        domain.append(f" (:action a{a} :parameters () :precondition {conjunction(pre)}"
                      f" :effect {conjunction(add, delete)})")
    domain.append(")")
    init = rng.sample(facts, rng.randint(1, n // 2 + 1))
    goal = rng.sample(facts, rng.randint(1, 3))
    problem = (f"(define (problem random-{seed}) (:domain random-strips)"
               f" (:init {' '.join(f'({f})' for f in init)}) (:goal {conjunction(goal)}))")
    return "\n".join(domain) + "\n", problem + "\n"
