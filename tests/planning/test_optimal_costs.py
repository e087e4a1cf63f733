"""The exact optimal costs of tnlib.planning.optimal_costs: equal to every A*/LM-cut label of the shipped datasets,
to breadth-first search and Fast Downward on generated instances, consistent along transitions on random reachable
states, with optimal plans that validate, and refusing what their formulas do not cover."""
from __future__ import annotations

import dataclasses
import functools
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tnlib.data.loading import load_split
from tnlib.data.schema import SPLITS
from tnlib.errors import OutsideFormulaScope
from tnlib.planning.fast_downward import solve
from tnlib.planning.generators import generate
from tnlib.planning.blocksworld_optimal import blocksworld_optimal_cost
from tnlib.planning.optimal_costs import OPTIMAL_COSTS, optimal_cost, optimal_plan, visitall_optimal_cost
from tnlib.planning.pddl import problem_atoms
from tnlib.planning.plans import validate_plan
from tnlib.planning.search import goal_distances, hstar, random_walk_states
from tnlib.planning.task import load_task

DATA = Path(__file__).resolve().parents[2] / "data"
DOMAINS = sorted(OPTIMAL_COSTS)
PROFILES = ("small", "paper")


class Instance:
    """A generated problem as a task, with its static atoms, to turn a packed state into the atoms the formulas
    read."""

    def __init__(self, path: Path, domain: str):
        self.domain = domain
        self.task = load_task(domain, path, remove_irrelevant_operators=False)
        init, self.goal = problem_atoms(domain, path)
        self.statics = [atom for atom in init if atom not in self.task.fact_index]

    def atoms(self, state: bytes) -> list[str]:
        return sorted(self.task.state_to_facts(state)) + self.statics

    def cost(self, state: bytes) -> int:
        return optimal_cost(self.domain, self.atoms(state), self.goal)

    def plan_from(self, state: bytes) -> tuple[list[str], object]:
        plan = optimal_plan(self.domain, self.atoms(state), self.goal)
        return plan, validate_plan(dataclasses.replace(self.task, init=state), plan)


@functools.lru_cache(maxsize=None)
def _instance(folder: str, domain: str, seed: int, params: tuple) -> Instance:
    path = Path(folder) / f"{domain}-{seed}-{'-'.join(map(str, (v for _k, v in params)))}.pddl"
    path.write_text(generate(domain, seed, **dict(params)), encoding="utf-8")
    return Instance(path, domain)


def instance(folder, domain: str, seed: int, **params) -> Instance:
    return _instance(str(folder), domain, seed, tuple(sorted(params.items())))


SMALL = {"blocksworld": dict(blocks=4), "ferry": dict(locations=4, cars=3), "gripper": dict(balls=4),
         "visitall": dict(x=3, y=4, ratio=0.6)}
MEDIUM = {"blocksworld": dict(blocks=9), "ferry": dict(locations=6, cars=8), "gripper": dict(balls=9),
          "visitall": dict(x=5, y=5, ratio=0.7)}


# ---------------------------------------------------------------------------------------------------------------
# The recorded labels


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("domain", DOMAINS)
def test_cost_equals_every_astar_label_of_the_datasets(domain, profile):
    checked = 0
    for split in SPLITS:
        table = load_split(DATA, domain, split, verify=False, profile=profile).table
        rows = zip(*(table.column(c).to_pylist() for c in ("instance", "step", "state", "goal", "h_star")))
        found = [(name, step, label, optimal_cost(domain, state, goal)) for name, step, state, goal, label in rows]
        wrong = [row for row in found if row[2] != row[3]]
        assert not wrong, f"{profile}/{split}: (instance, step, A* label, formula) {wrong[:5]}"
        checked += table.num_rows
    assert checked > 1000


@pytest.mark.parametrize("domain", DOMAINS)
def test_plan_from_each_small_dataset_instance_start_validates_at_the_label_length(domain):
    starts = 0
    for split in SPLITS:
        table = load_split(DATA, domain, split, verify=False, profile="small")
        for row in table.table.filter(table.table.column("step").to_numpy() == 0).to_pylist():
            starts += 1
            task = load_task(domain, table.root / row["problem"], remove_irrelevant_operators=False)
            plan = optimal_plan(domain, row["state"], row["goal"])
            verdict = validate_plan(task, plan)
            assert verdict.valid, f"{row['instance']}: {verdict.message}"
            assert len(plan) == row["h_star"], row["instance"]
    assert starts > 0


# ---------------------------------------------------------------------------------------------------------------
# Generated instances


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_cost_equals_breadth_first_search_on_random_reachable_states(tmp_path_factory, domain, seed):
    inst = instance(tmp_path_factory.getbasetemp(), domain, seed, **SMALL[domain])
    for state in [inst.task.init] + random_walk_states(inst.task, 25, seed=seed):
        assert inst.cost(state) == hstar(inst.task, state)


@pytest.mark.parametrize("domain", DOMAINS)
def test_cost_equals_fast_downward_optimal_plan_length(tmp_path, domain):
    for seed in (11, 12):
        path = tmp_path / f"{domain}-{seed}.pddl"
        path.write_text(generate(domain, seed, **MEDIUM[domain]), encoding="utf-8")
        result = solve(domain, path, time_limit=60)
        assert result.solved, result.status
        init, goal = problem_atoms(domain, path)
        assert optimal_cost(domain, init, goal) == len(result.plan)


@settings(max_examples=40, deadline=None, derandomize=True)
@given(seed=st.integers(min_value=0, max_value=10**6), domain=st.sampled_from(DOMAINS), walk=st.integers(0, 60))
def test_successor_costs_differ_by_at_most_one_and_one_is_one_less(tmp_path_factory, seed, domain, walk):
    rng = random.Random(seed)
    size = {"blocksworld": dict(blocks=rng.randint(1, 8)),
            "ferry": dict(locations=rng.randint(1, 6), cars=rng.randint(0, 7)),
            "gripper": dict(balls=rng.randint(1, 9)),
            "visitall": dict(x=rng.randint(1, 5), y=rng.randint(2, 5), ratio=rng.choice((0.3, 0.5, 1.0)))}[domain]
    inst = instance(tmp_path_factory.getbasetemp(), domain, seed % 50, **size)
    state = inst.task.init
    for _ in range(walk):
        state = rng.choice(inst.task.successors(state))[1]
    cost = inst.cost(state)
    successors = [inst.cost(succ) for _op, succ in inst.task.successors(state)]
    assert all(abs(c - cost) <= 1 for c in successors)
    assert inst.task.is_goal(state) == (cost == 0)
    assert cost == 0 or cost - 1 in successors


@pytest.mark.parametrize("domain", DOMAINS)
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_plan_from_random_reachable_states_validates_at_the_cost(tmp_path_factory, domain, seed):
    inst = instance(tmp_path_factory.getbasetemp(), domain, seed, **MEDIUM[domain])
    for state in [inst.task.init] + random_walk_states(inst.task, 30, seed=seed):
        plan, verdict = inst.plan_from(state)
        assert verdict.valid, verdict.message
        assert len(plan) == inst.cost(state)


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_blocksworld_cost_equals_the_distance_of_every_reachable_state(tmp_path_factory, seed):
    # the whole state space of a 6-block instance (about 7,000 states, the held block's included) against
    # breadth-first distances: partial goals, deadlocks and the hand all occur in it
    inst = instance(tmp_path_factory.getbasetemp(), "blocksworld", seed, blocks=6)
    distances = goal_distances(inst.task)
    assert len(distances) > 5000
    wrong = [(sorted(inst.task.state_to_facts(s)), d) for s, d in distances.items() if inst.cost(s) != d]
    assert not wrong, wrong[:3]


@pytest.mark.parametrize("blocks", [14, 16, 18, 22])
def test_blocksworld_plan_at_the_paper_sizes_validates_at_the_cost(tmp_path_factory, blocks):
    for seed in (1, 2):
        inst = instance(tmp_path_factory.getbasetemp(), "blocksworld", seed, blocks=blocks)
        plan, verdict = inst.plan_from(inst.task.init)
        assert verdict.valid, verdict.message
        assert len(plan) == inst.cost(inst.task.init) > 0


# ---------------------------------------------------------------------------------------------------------------
# Outside the formulas' scope

GRIPPER_STATE = ["(room rooma)", "(room roomb)", "(gripper left)", "(gripper right)", "(ball ball0)",
                 "(ball ball1)", "(at ball0 rooma)", "(carry ball1 left)", "(free right)", "(at-robby rooma)"]
GRIPPER_GOAL = ["(at ball0 roomb)", "(at ball1 roomb)"]
FERRY_STATE = ["(location l0)", "(location l1)", "(location l2)", "(car c0)", "(car c1)",
               "(not-eq l0 l1)", "(not-eq l1 l0)", "(not-eq l0 l2)", "(not-eq l2 l0)", "(not-eq l1 l2)",
               "(not-eq l2 l1)", "(at c0 l1)", "(on c1)", "(at-ferry l2)"]
FERRY_GOAL = ["(at c0 l0)", "(at c1 l1)"]


def test_the_scope_examples_are_in_scope():
    # the refusals below change one thing of these, so each refusal is for that thing
    assert optimal_cost("gripper", GRIPPER_STATE, GRIPPER_GOAL) == 4  # pick, move, drop, drop
    assert optimal_cost("ferry", FERRY_STATE, FERRY_GOAL) == 5  # sail, debark; board, sail, debark


def _changed(atoms, drop=(), add=()):
    return [a for a in atoms if a not in drop] + list(add)


@pytest.mark.parametrize(("state", "goal", "says"), [
    (_changed(GRIPPER_STATE, add=["(room roomc)"]), GRIPPER_GOAL, "two rooms"),
    (GRIPPER_STATE, GRIPPER_GOAL[:1], "none for ball1"),
    (GRIPPER_STATE, GRIPPER_GOAL + ["(at-robby rooma)"], "unexpected atom"),
    (GRIPPER_STATE, GRIPPER_GOAL + ["(at ball1 rooma)"], "has two"),
    (_changed(GRIPPER_STATE, add=["(free left)"]), GRIPPER_GOAL, "free grippers"),
    (_changed(GRIPPER_STATE, add=["(at-robby roomb)"]), GRIPPER_GOAL, "has two"),
    (_changed(GRIPPER_STATE, drop=["(at ball0 rooma)"], add=["(carry ball0 left)"]), GRIPPER_GOAL,
     "two balls in one gripper"),
    (_changed(GRIPPER_STATE, add=["(holding ball0)"]), GRIPPER_GOAL, "unexpected atom"),
])
def test_gripper_outside_scope_raises(state, goal, says):
    with pytest.raises(OutsideFormulaScope, match=says):
        optimal_cost("gripper", state, goal)


@pytest.mark.parametrize(("state", "goal", "says"), [
    (_changed(FERRY_STATE, drop=["(not-eq l1 l2)"]), FERRY_GOAL, "every location connected"),
    (_changed(FERRY_STATE, drop=["(at c0 l1)"], add=["(on c0)"]), FERRY_GOAL, "capacity one"),
    (_changed(FERRY_STATE, add=["(empty-ferry)"]), FERRY_GOAL, "capacity one"),
    (FERRY_STATE, FERRY_GOAL[1:], "none for c0"),
    (FERRY_STATE, FERRY_GOAL + ["(on c0)"], "unexpected atom"),
    (_changed(FERRY_STATE, drop=["(at-ferry l2)"]), FERRY_GOAL, "none for ferry"),
    (_changed(FERRY_STATE, drop=["(at c0 l1)"], add=["(at c0 l7)"]), FERRY_GOAL, "no location"),
])
def test_ferry_outside_scope_raises(state, goal, says):
    with pytest.raises(OutsideFormulaScope, match=says):
        optimal_cost("ferry", state, goal)


VISITALL_STATE = ["(connected a b)", "(connected b a)", "(connected b c)", "(connected c b)", "(at-robot b)",
                  "(visited b)"]
VISITALL_GOAL = ["(visited a)", "(visited c)"]


def test_visitall_scope_example_is_in_scope():
    assert optimal_cost("visitall", VISITALL_STATE, VISITALL_GOAL) == 3  # b-a-b-c


@pytest.mark.parametrize(("state", "goal", "says"), [
    (_changed(VISITALL_STATE, drop=["(connected c b)"]), VISITALL_GOAL, "symmetric"),
    (_changed(VISITALL_STATE, drop=["(visited b)"]), VISITALL_GOAL, "not visited"),
    (VISITALL_STATE, VISITALL_GOAL + ["(visited d)"], "cannot reach"),
    (VISITALL_STATE, VISITALL_GOAL + ["(at-robot a)"], "unexpected atom"),
    (_changed(VISITALL_STATE, add=["(at-robot a)"]), VISITALL_GOAL, "has two"),
])
def test_visitall_outside_scope_raises(state, goal, says):
    with pytest.raises(OutsideFormulaScope, match=says):
        optimal_cost("visitall", state, goal)


def test_visitall_search_beyond_its_node_limit_raises():
    with pytest.raises(OutsideFormulaScope, match="within 2 search nodes"):
        visitall_optimal_cost(VISITALL_STATE, VISITALL_GOAL, max_nodes=2)


def test_domain_without_a_formula_raises():
    with pytest.raises(OutsideFormulaScope, match="no exact optimal-cost formula for 'logistics'"):
        optimal_cost("logistics", ["(arm-empty)"], [])


BLOCKS_STATE = ["(on-table b1)", "(on b2 b1)", "(clear b2)", "(holding b3)"]
BLOCKS_GOAL = ["(on b1 b2)"]


def test_blocksworld_scope_example_is_in_scope():
    # put b3 down; unstack b2 b1, put it down; pick b1, stack it on b2
    assert optimal_cost("blocksworld", BLOCKS_STATE, BLOCKS_GOAL) == 5


@pytest.mark.parametrize(("state", "goal", "says"), [
    (BLOCKS_STATE, BLOCKS_GOAL + ["(on-table b2)"], "unexpected"),
    (BLOCKS_STATE, BLOCKS_GOAL + ["(on b1 b3)"], "names a block twice"),
    (BLOCKS_STATE, BLOCKS_GOAL + ["(on b3 b4)"], "no block of the state"),
    (BLOCKS_STATE, ["(on b1 b2)", "(on b3 b2)"], "two blocks on one"),
    (BLOCKS_STATE, ["(on b1 b2)", "(on b2 b1)"], "cycle"),
    (_changed(BLOCKS_STATE, add=["(arm-empty)"]), BLOCKS_GOAL, "hand holds"),
    (_changed(BLOCKS_STATE, add=["(on b3 b2)"]), BLOCKS_GOAL, "hand holds"),
    (_changed(BLOCKS_STATE, add=["(on-table b2)"]), BLOCKS_GOAL, "two places"),
    (_changed(BLOCKS_STATE, add=["(clear b1)"]), BLOCKS_GOAL, "clear blocks"),
    (_changed(BLOCKS_STATE, drop=["(on-table b1)", "(clear b2)"], add=["(on b1 b2)"]), BLOCKS_GOAL, "cycle"),
    (_changed(BLOCKS_STATE, add=["(handempty)"]), BLOCKS_GOAL, "unexpected atom"),
])
def test_blocksworld_outside_scope_raises(state, goal, says):
    with pytest.raises(OutsideFormulaScope, match=says):
        optimal_cost("blocksworld", state, goal)


def test_blocksworld_search_beyond_its_node_limit_raises():
    # two blocks each above the other's goal support: a deadlock, so the search needs more than one node
    state = ["(on-table b1)", "(on b3 b1)", "(clear b3)", "(on-table b2)", "(on b4 b2)", "(clear b4)", "(arm-empty)"]
    goal = ["(on b3 b2)", "(on b4 b1)"]
    assert blocksworld_optimal_cost(state, goal) == 6
    with pytest.raises(OutsideFormulaScope, match="within 1 search nodes"):
        blocksworld_optimal_cost(state, goal, max_nodes=1)
