"""benchmarks/plan_with_trained_bound.py and the learned heuristic's ``fast_downward_lmcut``: Fast Downward's
LM-cut values reach the model as l, and nothing changes where the two LM-cuts agree."""
from __future__ import annotations

import numpy as np
import pytest

from fixtures.benchmark_scripts import load_benchmark
from tnlib.learning.heads import HeadConfig
from tnlib.learning.learned_heuristic import LearnedHeuristic
from tnlib.learning.training import TrainConfig, train
from tnlib.planning.fast_downward import solve
from tnlib.planning.fast_downward_states import fd_state_values, translate_once
from tnlib.planning.generators import domain_file, generate
from tnlib.planning.plans import plan_states
from tnlib.planning.search_settings import SearchSettings


@pytest.fixture(scope="module")
def bound():
    return load_benchmark("plan_with_trained_bound")


def _tn_run(tmp_path_factory, domain):
    out = tmp_path_factory.mktemp(f"{domain}-runs")
    return train(TrainConfig(domain=domain, model="linear", head=HeadConfig(distribution="TN"), steps=20,
                             batch_size=16, eval_every=10, checkpoint_every=10, out_dir=str(out), progress=False))


def test_fast_downwards_lmcut_reaches_the_model_as_l(tmp_path, tmp_path_factory):
    problem = tmp_path / "visitall.pddl"
    problem.write_text(generate("visitall", 2, x=4, y=4, ratio=1.0))  # where the two LM-cuts differ
    run = _tn_run(tmp_path_factory, "visitall")
    tnlib = LearnedHeuristic(run, domain_file("visitall"), problem, device="cpu")
    fast = LearnedHeuristic(run, domain_file("visitall"), problem, device="cpu", fast_downward_lmcut=True)
    states = plan_states(tnlib.task, solve(domain_file("visitall"), problem, time_limit=60).plan)
    atoms = [tnlib.static_atoms + [tnlib.task.fact_names[f] for f in tnlib.task.state_to_indices(s)] for s in states]
    np.testing.assert_array_equal(fast._symbolic(states)[0]["lmcut"],
                                  fd_state_values(translate_once(domain_file("visitall"), problem), atoms))
    moved = fast._symbolic(states)[0]["lmcut"] != tnlib._symbolic(states)[0]["lmcut"]
    assert moved.any()
    before, after = tnlib(states), fast(states)
    # the model reads l through the truncation only: the estimate moves exactly where l did
    assert np.all(after[~moved] == before[~moved]) and np.all(after[moved] != before[moved])


def test_where_the_lmcuts_agree_both_searches_are_one(tmp_path, tmp_path_factory, bound):
    problem = tmp_path / "ferry.pddl"
    problem.write_text(generate("ferry", 1, locations=3, cars=2))
    outcome = bound.plan_both_ways(_tn_run(tmp_path_factory, "ferry"), domain_file("ferry"), problem, "default",
                                   SearchSettings(max_evaluations=2000))
    assert outcome["tnlib"]["solved"]
    assert outcome["tnlib"]["evaluations"] == outcome["fast-downward"]["evaluations"]
