"""benchmarks/lmcut_supporter_ties.py: its plain restatement of LM-cut equals tnlib's kernel state for state, with
either tie-breaking, and with Fast Downward's it gives Fast Downward's values where the default falls short."""
from __future__ import annotations

import numpy as np
import pytest

from fixtures.benchmark_scripts import load_benchmark
from planning_corpus import instance
from tnlib.paper import DOMAINS
from tnlib.planning.fast_downward import solve
from tnlib.planning.fast_downward_states import fd_state_values, translate_once
from tnlib.planning.generators import domain_file, generate
from tnlib.planning.heuristics import FastDownwardLMCutHeuristic, make_heuristic, relaxed_task
from tnlib.planning.pddl import problem_atoms
from tnlib.planning.plans import plan_states
from tnlib.planning.search import goal_distances
from tnlib.planning.task import load_search_task


@pytest.fixture(scope="module")
def ties():
    return load_benchmark("lmcut_supporter_ties")


@pytest.mark.parametrize("domain", DOMAINS)
def test_the_restatement_equals_the_kernel_on_every_state(corpus, ties, domain):
    task = instance(corpus, domain, 5, "small")
    states = list(goal_distances(task))[:60]
    rt = relaxed_task(task)
    facts = [list(task.state_to_indices(s)) for s in states]
    np.testing.assert_array_equal([ties.lmcut_value(rt, f, ties.KERNEL) for f in facts],
                                  make_heuristic("lmcut", task).batch(states))
    np.testing.assert_array_equal([ties.lmcut_value(rt, f, ties.FAST_DOWNWARD) for f in facts],
                                  FastDownwardLMCutHeuristic(task).batch(states))


@pytest.mark.parametrize("domain, size, seed", [("visitall", dict(x=4, y=4, ratio=1.0), 2),
                                               ("gripper", dict(balls=5), 3)])
def test_fast_downwards_tie_breaking_gives_its_values(tmp_path, ties, domain, size, seed):
    """On the states of an optimal plan of instances where the kernel's LM-cut falls below Fast Downward's."""
    problem = tmp_path / f"{domain}.pddl"
    problem.write_text(generate(domain, seed, **size))
    result = solve(domain_file(domain), problem, time_limit=60)
    task = load_search_task(domain_file(domain), problem)
    states = plan_states(task, result.plan)
    init_atoms, _ = problem_atoms(domain_file(domain), problem)
    static = [atom for atom in init_atoms if atom not in task.fact_index]
    atoms = [static + [task.fact_names[f] for f in task.state_to_indices(s)] for s in states]
    fast_downward = fd_state_values(translate_once(domain_file(domain), problem), atoms)
    rt = relaxed_task(task)
    facts = [list(task.state_to_indices(s)) for s in states]
    with_ties = [ties.lmcut_value(rt, f, ties.FAST_DOWNWARD) for f in facts]
    np.testing.assert_array_equal(with_ties, fast_downward)
    assert np.any(make_heuristic("lmcut", task).batch(states) < fast_downward)  # where the kernel falls short
