"""Tests for tnlib.data.labels: per-state labels against independent references -- h* against breadth-first goal
distances, atoms against the problem text, heuristic values against the single-state heuristic objects, h_sat
against a GBFS run of its own -- and the consistency checks that refuse bad plans."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest

from tnlib.planning.generators import generate
from tnlib.planning.heuristics import HEURISTIC_NAMES, make_heuristic
from tnlib.planning.plans import plan_states
from tnlib.data.labels import label_instance, task_from
from tnlib.data.schema import HEURISTIC_COLUMNS, RECORD_COLUMNS
from tnlib.errors import LabelError
from tnlib.planning.search import gbfs, goal_distances
from tnlib.planning.search_settings import SearchSettings
from tnlib.planning.fast_downward import solve
from tnlib.planning.task import load_task

# Small enough for exhaustive goal distances, with plans of several steps.
CASES = [
    ("blocksworld", 3, {"blocks": 4}),
    ("ferry", 2, {"locations": 3, "cars": 2}),
    ("gripper", 1, {"balls": 3}),
    ("visitall", 1, {"x": 3, "y": 3, "ratio": 1.0}),
]


def section_atoms(text: str, section: str) -> list[str]:
    """The atoms of a generated problem's :init or :goal, read straight from the text (one per line)."""
    body = text.split(f"(:{section}", 1)[1].split("(:", 1)[0]
    return sorted(m for m in re.findall(r"\([a-z][^()]*\)", body) if m != "(and)")


@pytest.fixture(scope="module", params=CASES, ids=[c[0] for c in CASES])
def labelled(request, tmp_path_factory):
    domain, seed, params = request.param
    path = tmp_path_factory.mktemp("records") / f"{domain}.pddl"
    path.write_text(generate(domain, seed, **params))
    result = solve(domain, path, time_limit=60)
    assert result.solved and result.plan
    records, timing = label_instance(domain, path, result.plan)
    return domain, path, result.plan, records, timing


def test_one_record_per_state_with_the_schema_columns(labelled):
    _domain, _path, plan, records, timing = labelled
    assert len(records) == len(plan) + 1 == timing.states
    assert [r["step"] for r in records] == list(range(len(plan) + 1))
    for record in records:
        assert tuple(record) == RECORD_COLUMNS
        assert record["plan_length"] == len(plan)


def test_h_star_equals_breadth_first_goal_distances(labelled):
    domain, path, plan, records, _ = labelled
    full = load_task(domain, path, remove_irrelevant_operators=False)
    distances = goal_distances(full)
    states = plan_states(full, plan)
    assert [r["h_star"] for r in records] == [distances[s] for s in states]
    assert records[0]["h_star"] == len(plan) and records[-1]["h_star"] == 0


def test_atoms_match_the_problem_text(labelled):
    domain, path, _plan, records, _ = labelled
    text = path.read_text()
    init, goal = section_atoms(text, "init"), section_atoms(text, "goal")
    assert records[0]["state"] == init  # static atoms included, sorted
    for record in records:
        assert record["goal"] == goal
        assert record["state"] == sorted(record["state"])
        assert all(a == a.lower() and a.startswith("(") for a in record["state"])
    # The goal holds in the last state, static atoms are in every state.
    assert set(goal) <= set(records[-1]["state"])
    full = load_task(domain, path, remove_irrelevant_operators=False)
    static = [a for a in init if a not in full.fact_index]
    for record in records:
        assert set(static) <= set(record["state"])


def test_heuristics_equal_the_single_state_heuristics(labelled):
    domain, path, plan, records, _ = labelled
    task = load_task(domain, path)
    full = load_task(domain, path, remove_irrelevant_operators=False)
    states = plan_states(full, plan)
    # the dataset keeps a column for every heuristic the planner offers, and only those
    assert HEURISTIC_COLUMNS == HEURISTIC_NAMES
    for name in HEURISTIC_COLUMNS:
        heuristic = make_heuristic(name, task)
        assert [r[name] for r in records] == [heuristic(s) for s in states], name
    ff = make_heuristic("ff", task)
    for record, state in zip(records, states):
        relaxed = ff.relaxed_plan(state)
        assert record["ff_ignored_deletes_total"] == relaxed.ignored_deletes_total
        assert record["ff_ignored_deletes_mean"] == pytest.approx(relaxed.ignored_deletes_mean)
        assert record["goalcount"] == len(set(record["goal"]) - set(record["state"]))


def test_bounds_bracket_h_star(labelled):
    *_, records, _ = labelled
    for r in records:
        assert r["blind"] <= r["hmax"] <= r["lmcut"] <= r["h_star"] <= r["h_sat"]
    assert records[-1]["h_sat"] == 0


def test_h_sat_is_the_length_of_gbfs_ff_from_each_state(labelled):
    domain, path, plan, records, _ = labelled
    task = load_task(domain, path)
    full = load_task(domain, path, remove_irrelevant_operators=False)
    for record, state in zip(records, plan_states(full, plan)):
        found = gbfs(task_from(task, state), "ff", SearchSettings(max_evaluations=10_000))
        assert record["h_sat"] == len(found.plan)


def test_h_sat_is_nan_when_gbfs_hits_its_evaluation_limit(tmp_path):
    path = tmp_path / "p.pddl"
    path.write_text(generate("gripper", 1, balls=3))
    plan = solve("gripper", path, time_limit=60).plan
    records, _ = label_instance("gripper", path, plan, sat_max_evaluations=1)
    # One evaluation covers the start state only: no plan unless the state is a goal.
    assert all(math.isnan(r["h_sat"]) for r in records[:-1])
    assert records[-1]["h_sat"] == 0


def test_invalid_plans_are_refused(tmp_path):
    path = tmp_path / "p.pddl"
    path.write_text(generate("gripper", 1, balls=3))
    plan = solve("gripper", path, time_limit=60).plan
    with pytest.raises(LabelError, match="invalid.*goal not reached"):
        label_instance("gripper", path, plan[:-1])
    with pytest.raises(LabelError, match="invalid.*not applicable"):
        label_instance("gripper", path, plan[1:])


def test_a_plan_shorter_than_lmcut_allows_is_refused(tmp_path, monkeypatch):
    """The admissibility check: if LM-cut exceeded the claimed h*, the plan could not be optimal."""
    import tnlib.data.labels as records_module

    path = tmp_path / "p.pddl"
    path.write_text(generate("ferry", 2, locations=3, cars=2))
    plan = solve("ferry", path, time_limit=60).plan
    real = records_module.evaluate_all

    def inflated(task, states):
        values = real(task, states)
        values["lmcut"] = values["lmcut"] + 1.0
        return values

    monkeypatch.setattr(records_module, "evaluate_all", inflated)
    with pytest.raises(LabelError, match="lmcut = .* exceeds h\\*"):
        label_instance("ferry", path, plan)


def test_fast_downwards_lmcut_labels_the_visitall_states_where_tnlibs_is_weaker(tmp_path):
    """The paper profile's labels: Fast Downward's LM-cut (equal to each state translated alone:
    tests/planning/test_fast_downward_states.py), here above tnlib's on some state and never outside [h_max, h*];
    every other column as tnlib labels it. An unknown source is refused."""
    path = tmp_path / "v.pddl"
    path.write_text(generate("visitall", 2, x=4, y=4, ratio=1.0))
    plan = solve("visitall", path, time_limit=60).plan
    ours, _ = label_instance("visitall", path, plan, lmcut="tnlib")
    theirs, _ = label_instance("visitall", path, plan, lmcut="fast-downward")
    assert any(t["lmcut"] > o["lmcut"] for o, t in zip(ours, theirs))
    assert all(t["hmax"] <= t["lmcut"] <= t["h_star"] for t in theirs)
    assert [{k: v for k, v in r.items() if k != "lmcut"} for r in ours] == \
           [{k: v for k, v in r.items() if k != "lmcut"} for r in theirs]
    with pytest.raises(ValueError, match="lmcut must be one of tnlib, fast-downward"):
        label_instance("visitall", path, plan, lmcut="pyperplan")


def test_empty_plan_on_a_solved_initial_state(tmp_path):
    # A one-block blocksworld has an empty goal: one record, everything 0.
    path = tmp_path / "p.pddl"
    path.write_text(generate("blocksworld", 1, blocks=1))
    records, _ = label_instance("blocksworld", path, [])
    assert len(records) == 1
    assert records[0]["h_star"] == 0 and records[0]["goal"] == []
    assert all(records[0][h] == 0 for h in ("blind", "goalcount", "hmax", "hadd", "ff", "lmcut", "h_sat"))


def test_labelling_is_deterministic(labelled):
    domain, path, plan, records, _ = labelled
    again, _ = label_instance(domain, path, plan)
    assert again == records
    assert np.isfinite([r["lmcut"] for r in records]).all()
