"""Label-free plan sets: drawn by the generator alone, distinct, disjoint from train/val/test, non-trivial, shown
solvable by a validated plan, deterministic, resumable, verified; the paper's selection by optimal solves; the
symbolic baselines planned on them."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tnlib.data import plan_set_generation
from tnlib.data.instance_keys import instance_key, problem_from_text
from tnlib.data.plan_set_generation import generate_plan_set, plan_set_grid
from tnlib.data.plan_sets import load_plan_set, optimal_verdict, taken_instance_keys, verify_plan_set
from tnlib.errors import DatasetError
from tnlib.files import read_json
from tnlib.planning.plans import validate_plan
from tnlib.planning.task import load_search_task
from tnlib.planning.pddl import resolve_domain

SMALL = Path(__file__).resolve().parents[2] / "data" / "small"


@pytest.fixture
def root(tmp_path):
    copy = tmp_path / "small"
    shutil.copytree(SMALL, copy)
    return copy


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    copy = tmp_path_factory.mktemp("plan-set") / "small"
    shutil.copytree(SMALL, copy)
    generate_plan_set(copy, "gripper", count=8, progress=False)
    return copy


def test_a_plan_set_is_distinct_disjoint_non_trivial_and_solvable(made):
    plan_set = load_plan_set(made, "gripper")
    assert len(plan_set) == 8
    taken = taken_instance_keys(made, "gripper")
    keys = set()
    for name in plan_set.instances():
        path = plan_set.problem_path(name)
        problem = problem_from_text(path.read_text())
        key = instance_key(problem)
        assert not problem.trivial and key not in taken and key not in keys
        keys.add(key)
        record = plan_set.record(name)
        assert record["instance_key"] == key
        assert record["satisficing"]["status"] == "solved" and record["satisficing"]["valid"]
        # the size comes from the profile's plan slots over its test grid
        assert record["params"]["balls"] in (8, 9, 10)
    assert verify_plan_set(made, "gripper") == []


def test_the_satisficing_check_rejects_an_invalid_plan(made):
    # the recorded plan length is a validated plan's: replaying a wrong plan is caught by the same validator
    plan_set = load_plan_set(made, "gripper")
    path = plan_set.problem_path(plan_set.instances()[0])
    task = load_search_task(resolve_domain("gripper"), path)
    assert not validate_plan(task, ["(move rooma roomb)", "(move rooma roomb)"]).valid


def test_a_plan_set_is_deterministic_and_draws_the_labelled_plan_splits_seeds(made, tmp_path):
    again = tmp_path / "small"
    shutil.copytree(SMALL, again)
    generate_plan_set(again, "gripper", count=8, progress=False)
    first = read_json(made / "gripper" / "plan-set" / "manifest.json")
    second = read_json(again / "gripper" / "plan-set" / "manifest.json")
    assert [(i["instance"], i["instance_key"], i["sha256"]) for i in first["instances"]] == \
        [(i["instance"], i["instance_key"], i["sha256"]) for i in second["instances"]]
    # where the labelled plan split solved the same draw, its optimal solve comes along
    labelled = {i["seed"]: i for i in read_json(SMALL / "gripper" / "manifest.json")["splits"]["plan"]["instances"]}
    shared = [i for i in first["instances"] if i["seed"] in labelled]
    assert shared
    for inst in shared:
        [solve] = [o for o in inst["optimal"] if o["source"] == "labelled plan split"]
        assert solve["status"] == "solved" and solve["seconds"] == labelled[inst["seed"]]["solve_seconds"]


def test_verify_finds_a_changed_a_stray_and_a_repeated_problem(made, tmp_path):
    copy = tmp_path / "small"
    shutil.copytree(made, copy)
    folder = copy / "gripper" / "plan-set"
    plan_set = load_plan_set(copy, "gripper")
    first, second = (plan_set.problem_path(n) for n in plan_set.instances()[:2])
    second.write_text(first.read_text())  # a repeat of the set's first instance, and a checksum mismatch
    (folder / "problems" / "extra.pddl").write_text(first.read_text())
    problems = verify_plan_set(copy, "gripper")
    assert any("checksum mismatch" in p for p in problems)
    assert any("extra.pddl: not listed" in p for p in problems)
    with pytest.raises(DatasetError, match="fails its checks"):
        load_plan_set(copy, "gripper")
    # a manifest entry repeating a train instance's key is reported as shared with train
    manifest = read_json(folder / "manifest.json")
    train_key = next(iter(taken_instance_keys(copy, "gripper")))
    manifest["instances"][2]["instance_key"] = train_key
    (folder / "manifest.json").write_text(json.dumps(manifest))
    assert any("the same instance as train/" in p for p in verify_plan_set(copy, "gripper", recompute=False))


def test_an_interrupted_plan_set_resumes_without_solving_again(root, monkeypatch):
    calls = []
    real = plan_set_generation.run_solve

    def counting(job):
        calls.append(job.name)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(job)

    monkeypatch.setattr(plan_set_generation, "run_solve", counting)
    with pytest.raises(KeyboardInterrupt):
        generate_plan_set(root, "blocksworld", count=6, progress=False)
    assert not (root / "blocksworld" / "plan-set" / "manifest.json").exists()
    calls.clear()
    monkeypatch.setattr(plan_set_generation, "run_solve", lambda job: (calls.append(job.name), real(job))[1])
    report = generate_plan_set(root, "blocksworld", count=6, progress=False)
    assert len(calls) == 3 and report.instances == 6 and report.solves_run == 3
    assert not (root / "blocksworld" / ".work").exists()
    # optimal solves under a new limit are added to what is recorded, nothing else is run again
    calls.clear()
    generate_plan_set(root, "blocksworld", count=6, optimal_time_limit=30, progress=False)
    assert len(calls) == 6
    plan_set = load_plan_set(root, "blocksworld")
    for name in plan_set.instances():
        mine = [o for o in plan_set.record(name)["optimal"] if o["source"] == "this plan set"]
        assert [(o["kind"], o["time_limit"], o["status"]) for o in mine] == [("optimal", 30.0, "solved")]


def test_the_papers_selection_is_decided_only_by_solves_that_tell():
    solved = {"status": "solved", "seconds": 12.0, "time_limit": 60}
    timeout = {"status": "timeout", "seconds": 10.2, "time_limit": 10}
    assert optimal_verdict([solved], 30) is True
    assert optimal_verdict([solved], 5) is False  # solved, but only after 12 s
    assert optimal_verdict([timeout], 10) is False
    assert optimal_verdict([timeout], 1800) is None  # a 10 s time-out says nothing about 30 minutes
    assert optimal_verdict([], 30) is None


def test_the_authors_grid_is_their_plan_grid():
    grid = plan_set_grid("paper", "gripper", "authors")
    assert sorted({dict(p)["balls"] for p, _ in grid.slots()}) == [20, 30, 40, 50, 60]
    assert len(grid.slots()) == 100
    assert {dict(p)["balls"] for p, _ in plan_set_grid("paper", "gripper", "test").slots()} == {20, 40, 60, 80, 100}


def test_a_plan_set_needs_the_splits_it_is_disjoint_from(tmp_path):
    with pytest.raises(DatasetError, match="no dataset"):
        generate_plan_set(tmp_path, "gripper", progress=False)
    with pytest.raises(DatasetError, match="tnlib data plan-set"):
        load_plan_set(SMALL, "ferry", "plan-set-authors")


def test_baselines_plan_every_instance_of_a_plan_set(made, tmp_path):
    from tnlib.experiments.running.baselines import render_plan_set_baselines, run_plan_set_baselines
    from tnlib.files import read_jsonl

    run_plan_set_baselines(made, tmp_path, ["gripper"], ["ff"])
    records = read_jsonl(tmp_path / "plan-set" / "baseline-gripper-ff.jsonl")
    assert sorted(r["problem"] for r in records) == sorted(f"{n}.pddl" for n in load_plan_set(made, "gripper").instances())
    assert all(r["solved"] and r["protocol"] == "paper" for r in records)
    text = render_plan_set_baselines(made, tmp_path, ["gripper"], ["ff"], selection_seconds=[120]).read_text()
    assert "| **all** | 8 | 1.00 (" in text and "solved optimally within 120 s" in text
    assert "with at most 10,000 evaluations" in text


def test_baselines_say_the_evaluation_limit_their_records_were_planned_under(made, tmp_path):
    from tnlib.experiments.running.baselines import render_plan_set_baselines, run_plan_set_baselines

    run_plan_set_baselines(made, tmp_path, ["gripper"], ["ff"], max_evaluations=300)
    text = render_plan_set_baselines(made, tmp_path, ["gripper"], ["ff"]).read_text()
    assert "with at most 300 evaluations" in text and "10,000 evaluations" not in text


def test_a_sweep_plans_on_a_plan_set_and_table2_reads_it_under_the_papers_selection(made, tmp_path):
    from tnlib.experiments.reporting.reports import write_reports
    from tnlib.experiments.results_dir import ResultsDir
    from tnlib.experiments.running.sweep import run_sweep
    from tnlib.experiments.running.sweep_banner import describe_sweep
    from tnlib.experiments.sweep_settings import Sweep
    from tnlib.experiments.reporting.table_rows import collect_planning, optimal_selection
    from tnlib.files import read_jsonl

    data = tmp_path / "small"
    shutil.copytree(made, data)
    generate_plan_set(data, "gripper", count=8, optimal_time_limit=60, progress=False)  # adds optimal solves
    plan_set = load_plan_set(data, "gripper")
    sweep = Sweep.from_parameters(domains=["gripper"], models=["linear"], configs=["learn/ff"], distributions=["TN"],
                                  seeds=[0], steps=20, batch_size=16, eval_every=10, instances=None,
                                  data_root=str(data), out_dir=str(tmp_path / "runs"), plan_on="plan-set",
                                  plan_per_cell=1, plan_instances=3)
    assert "GBFS on the plan set plan-set (per domain: the first 1 instance of each grid cell, at most 3 in all)" \
        in describe_sweep(sweep)
    run_sweep(sweep, progress=False)
    results = ResultsDir(tmp_path / "runs")
    (run,) = results.runs()
    planned = read_jsonl(run.planning_file("default", "plan-set"))
    first = [f"{name}.pddl" for name in plan_set.first_per_cell(1)[:3]]
    assert len({plan_set.record(name)["cell"] for name in plan_set.first_per_cell(1)[:3]}) == 3  # 3 cells, 1 each
    assert [r["problem"] for r in planned] == first
    assert not run.planning_file("default").exists()  # nothing on the plan split
    assert results.planned_on() == "plan-set"
    assert list(results.baseline_files("ff", "plan-set")) == ["gripper"] and not results.baseline_files("ff")
    assert [r["problem"] for r in read_jsonl(results.baseline_file("gripper", "ff", "plan-set"))] == first
    # the paper's selection keeps the instances solved optimally in time, for the learned rows and h_FF alike
    selection = optimal_selection(results.path, "plan-set", 60)["gripper"]
    assert selection["problems"] == {f"{n}.pddl" for n in plan_set.optimal_selection(60)[0]}
    assert selection["instances"] == 8 and selection["problems"]
    only = {"gripper": {first[0]}}
    assert [r["instances"] for r in collect_planning(results.path)] == [3]
    assert [r["instances"] for r in collect_planning(results.path, problems=only)] == [1]
    assert collect_planning(results.path, problems={"gripper": set()}) == []
    written = write_reports(results.path, tmp_path / "reports", models=["linear"], selection_seconds=60)
    planning = (tmp_path / "reports" / "planning.md").read_text()
    assert "GBFS on the plan set `plan-set`" in planning and "## Under the paper's selection" in planning
    assert f"gripper {len(selection['problems'])} of 8" in planning
    assert written[1].name == "planning.md"


def test_a_sweep_refuses_an_unknown_plan_set():
    from tnlib.experiments.sweep_settings import Sweep

    with pytest.raises(ValueError, match="plan_on: unknown 'plan-sets'"):
        Sweep.from_parameters(preset="small", plan_on="plan-sets")


def test_the_first_instances_of_each_grid_cell_are_taken_in_the_sets_order(made):
    from tnlib.learning.split_planning import chosen_instances
    from tnlib.data.loading import load_split

    plan_set = load_plan_set(made, "gripper")
    cells = [plan_set.record(name)["cell"] for name in plan_set.instances()]
    two = plan_set.first_per_cell(2)
    assert two == [n for i, n in enumerate(plan_set.instances()) if cells[:i].count(cells[i]) < 2]
    assert len(two) < len(cells)  # some cell holds more than two
    assert chosen_instances(plan_set, per_cell=2) == two and chosen_instances(plan_set, 1, per_cell=2) == two[:1]
    with pytest.raises(ValueError, match="needs a plan set"):
        chosen_instances(load_split(made, "gripper", "plan"), per_cell=1)


def test_a_sweep_on_a_missing_plan_set_says_how_to_make_it(tmp_path):
    from tnlib.errors import DatasetError
    from tnlib.experiments.sweep_settings import Sweep

    data = tmp_path / "small"
    shutil.copytree(SMALL, data)  # data/small has no plan set
    sweep = Sweep.from_parameters(preset="small", domains=["ferry"], data_root=str(data), plan_on="plan-set",
                                  out_dir=str(tmp_path / "runs"))
    with pytest.raises(DatasetError, match=r"lacks the plan set ferry/plan-set: make it with `tnlib data plan-set .* "
                                           r"--domain ferry --grid test`"):
        sweep.check_data()


@pytest.mark.parametrize("domain", ["ferry", "visitall"])
def test_exact_costs_are_validated_plans_equal_to_fast_downwards_optimal_ones(root, domain):
    generate_plan_set(root, domain, count=4, optimal_time_limit=60, exact=True, progress=False)
    plan_set = load_plan_set(root, domain)
    for name in plan_set.instances():
        record = plan_set.record(name)
        [astar] = [o for o in record["optimal"] if o["source"] == "this plan set"]
        assert astar["status"] == "solved"
        assert record["exact"]["valid"] and plan_set.optimal_cost(name) == astar["plan_length"] > 0
    assert "exact" in read_json(root / domain / "plan-set" / "manifest.json")["settings"]
    assert verify_plan_set(root, domain) == []


def test_exact_costs_are_added_to_a_plan_set_without_solving_anything_else_again(root, monkeypatch):
    generate_plan_set(root, "gripper", count=3, progress=False)
    assert [load_plan_set(root, "gripper").optimal_cost(n) for n in load_plan_set(root, "gripper").instances()] == \
        [None] * 3
    kinds = []
    real = plan_set_generation.run_solve
    monkeypatch.setattr(plan_set_generation, "run_solve", lambda job: (kinds.append(job.kind), real(job))[1])
    generate_plan_set(root, "gripper", count=3, exact=True, progress=False)
    assert kinds == ["exact"] * 3
    kinds.clear()
    generate_plan_set(root, "gripper", count=3, progress=False)  # a rerun without --exact keeps them
    assert kinds == [] and all(load_plan_set(root, "gripper").optimal_cost(n) for n in
                               load_plan_set(root, "gripper").instances())


def test_verify_finds_an_exact_cost_that_disagrees_with_fast_downward_or_an_invalid_plan(root):
    generate_plan_set(root, "gripper", count=2, optimal_time_limit=60, exact=True, progress=False)
    path = root / "gripper" / "plan-set" / "manifest.json"
    manifest = read_json(path)
    first, second = manifest["instances"]
    first["exact"]["plan_length"] += 1
    second["exact"].update(valid=False, message="step 3 is not applicable")
    path.write_text(json.dumps(manifest))
    problems = verify_plan_set(root, "gripper")
    assert any(f"exact h* {first['exact']['plan_length']} but Fast Downward's A* found" in p for p in problems)
    assert any("did not give a validated plan (step 3 is not applicable)" in p for p in problems)
    assert load_plan_set(root, "gripper", verify=False).optimal_cost(second["instance"]) is None


def test_exact_costs_are_refused_for_a_domain_without_an_exact_solver(root, monkeypatch):
    monkeypatch.delitem(plan_set_generation.OPTIMAL_PLANS, "gripper")
    with pytest.raises(DatasetError, match="gripper has no exact solver"):
        generate_plan_set(root, "gripper", count=2, exact=True, progress=False)


def test_an_exact_search_past_its_node_budget_is_recorded_and_tried_again_with_a_larger_one(root):
    generate_plan_set(root, "visitall", count=2, exact=True, exact_max_nodes=1, progress=False)
    plan_set = load_plan_set(root, "visitall")
    for name in plan_set.instances():
        assert plan_set.record(name)["exact"]["status"] == "node_limit"
        assert plan_set.record(name)["exact"]["max_nodes"] == 1 and plan_set.optimal_cost(name) is None
    assert verify_plan_set(root, "visitall") == []  # a budget that ran out is no damage
    assert "exact" in read_json(root / "visitall" / "plan-set" / "manifest.json")["settings"]
    generate_plan_set(root, "visitall", count=2, exact=True, progress=False)
    plan_set = load_plan_set(root, "visitall")
    assert all(plan_set.optimal_cost(name) > 0 for name in plan_set.instances())


def test_a_plan_set_larger_than_its_grid_is_refused_naming_the_room(root):
    grid = plan_set_grid("small", "gripper", "test")
    room = len(grid.combos) * len(grid.seeds)
    with pytest.raises(DatasetError, match=f"count {room + 1} is more than the {room} slots of gripper's test "
                                           f"plan-set grid .*; give at most {room}"):
        generate_plan_set(root, "gripper", count=room + 1, progress=False)
