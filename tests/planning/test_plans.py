"""IPC plan files, the validator, and the `tnlib plan / validate / heuristics` commands."""
from __future__ import annotations

import json

import pytest

from planning_corpus import DATA, instance, problem_file
from tnlib.cli import main
from tnlib.paper import DOMAINS
from tnlib.planning.plans import (
    PlanError,
    format_plan,
    parse_plan,
    plan_states,
    read_plan,
    validate_plan,
    write_plan,
)
from tnlib.planning.search import gbfs, hstar
from tnlib.planning.task import load_task

BW3_PLAN = ["(unstack a b)", "(putdown a)", "(pickup b)", "(stack b c)", "(pickup a)", "(stack a b)"]


@pytest.fixture(scope="module")
def bw3():
    return load_task("blocksworld", DATA / "bw-3.pddl")


def test_format_is_ipc():
    assert format_plan(["(Pick-Up A)", "stack a  b"]) == "(pick-up a)\n(stack a b)\n; cost = 2 (unit cost)\n"
    assert format_plan([]) == "; cost = 0 (unit cost)\n"


def test_a_plan_file_is_replaced_whole_and_its_folder_made(tmp_path):
    path = tmp_path / "plans" / "b3.plan"  # the folder does not exist yet
    write_plan(BW3_PLAN, path)
    write_plan(BW3_PLAN[:1], path)  # over an existing plan: the new text, never a mix
    assert read_plan(path) == BW3_PLAN[:1]
    assert [f.name for f in path.parent.iterdir()] == ["b3.plan"]  # no temporary file left beside it
    assert path.stat().st_mode & 0o777 == 0o644


def test_roundtrip_and_lenient_reading(tmp_path):
    path = tmp_path / "plan.txt"
    write_plan(BW3_PLAN, path)
    assert read_plan(path) == BW3_PLAN
    text = "; found by hand\n\n(UNSTACK A B)  ; first\n  ( putdown   a )\n"
    assert parse_plan(text) == ["(unstack a b)", "(putdown a)"]
    with pytest.raises(PlanError, match=":2: expected"):
        parse_plan("(unstack a b)\nputdown a\n", "p.txt")
    with pytest.raises(PlanError, match="cannot read"):
        read_plan(tmp_path / "missing.txt")


def test_valid_plan(bw3):
    verdict = validate_plan(bw3, BW3_PLAN)
    assert verdict.valid and bool(verdict) and verdict.length == 6
    assert "valid plan, 6 steps" in verdict.message
    assert len(plan_states(bw3, BW3_PLAN)) == 7
    assert bw3.is_goal(plan_states(bw3, BW3_PLAN)[-1])
    assert len(BW3_PLAN) == hstar(bw3)


def test_inapplicable_step_names_missing_preconditions(bw3):
    plan = ["(unstack a b)", "(pickup b)"]  # the hand still holds a
    verdict = validate_plan(bw3, plan)
    assert not verdict.valid
    assert verdict.failed_step == 2 and verdict.failed_action == "(pickup b)"
    assert verdict.missing_preconditions == ["(arm-empty)"]
    assert "step 2: (pickup b) is not applicable" in verdict.message


def test_goal_not_reached_names_unmet_goals(bw3):
    verdict = validate_plan(bw3, BW3_PLAN[:4])
    assert not verdict.valid and verdict.failed_step is None
    assert verdict.unmet_goals == ["(on a b)"]
    assert "unmet goals: (on a b)" in verdict.message


def test_unknown_action(bw3):
    verdict = validate_plan(bw3, ["(unstack a b)", "(teleport a)"])
    assert not verdict.valid and verdict.failed_step == 2 and verdict.unknown_action


def test_goal_irrelevant_actions_are_simulated_with_full_grounding(tmp_path, capsys):
    domain, problem = DATA / "errands-domain.pddl", DATA / "errands-problem.pddl"
    pruned = load_task(domain, problem)
    full = load_task(domain, problem, remove_irrelevant_operators=False)
    assert pruned.operator_names == ["(buy)", "(walk)"]
    assert full.operator_names == ["(buy)", "(walk)", "(whistle)"]
    assert pruned.fact_names == full.fact_names
    plan = ["(whistle)", "(walk)", "(buy)"]
    assert validate_plan(full, plan).valid
    assert validate_plan(pruned, plan).unknown_action
    plan_path = tmp_path / "errands.plan"
    write_plan(plan, plan_path)
    assert main(["validate", str(domain), str(problem), str(plan_path)]) == 0
    assert main(["heuristics", str(domain), str(problem), "--plan", str(plan_path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert [row["ff"] for row in rows] == [2, 2, 1, 0]


def test_cli_plan_validate_heuristics(corpus, tmp_path, capsys):
    problem = problem_file(corpus, "ferry", 1, "medium")
    plan_path = tmp_path / "out" / "ferry.plan"
    assert main(["plan", "ferry", str(problem), "--heuristic", "lmcut", "--plan-file", str(plan_path), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["status"] == "solved"
    assert {"status", "plan_length", "evaluations", "expansions", "seconds"} <= set(record)
    assert record["protocol"] == "paper"  # the paper's counting is the default, and the JSON says so
    assert main(["plan", "ferry", str(problem), "--heuristic", "lmcut", "--protocol", "distinct", "--json"]) == 0
    distinct = json.loads(capsys.readouterr().out)
    assert distinct["protocol"] == "distinct" and distinct["evaluations"] <= record["evaluations"] + 1
    plan = read_plan(plan_path)
    assert len(plan) == record["plan_length"] and plan == record["plan"]
    assert plan_path.read_text().endswith(f"; cost = {len(plan)} (unit cost)\n")

    assert main(["validate", "ferry", str(problem), str(plan_path)]) == 0
    assert capsys.readouterr().out.startswith("VALID")
    short = tmp_path / "short.plan"
    write_plan(plan[:-1], short)
    assert main(["validate", "ferry", str(problem), str(short)]) == 1
    assert "unmet goals" in capsys.readouterr().out
    assert main(["validate", "ferry", str(problem), str(short), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["valid"] is False

    assert main(["heuristics", "ferry", str(problem), "--plan", str(plan_path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == len(plan) + 1
    expected = {"blind", "goalcount", "hmax", "hadd", "ff", "lmcut", "ignored_deletes_total", "ignored_deletes_mean"}
    assert all(expected <= set(row) for row in rows)
    assert rows[0]["action"] is None and rows[1]["action"] == plan[0]
    assert rows[-1]["is_goal"] and rows[-1]["ff"] == 0 and rows[-1]["lmcut"] == 0
    # The plan is optimal only if A*-checked; LM-cut is admissible along it anyway.
    assert all(row["lmcut"] <= len(plan) - row["step"] for row in rows)

    assert main(["heuristics", "ferry", str(problem)]) == 0
    assert "lmcut" in capsys.readouterr().out


def test_cli_failures(corpus, tmp_path, capsys):
    problem = problem_file(corpus, "gripper", 1, "small")
    assert main(["plan", "gripper", str(problem), "--heuristic", "blind", "--max-evaluations", "3", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["status"] == "evaluation limit"
    assert main(["plan", "nosuchdomain", str(problem)]) == 2
    assert "not a shipped domain" in capsys.readouterr().err
    assert main(["validate", "gripper", str(DATA / "bw-3.pddl"), str(problem)]) == 2
    assert "problem is for domain" in capsys.readouterr().err
    bad = tmp_path / "bad.plan"
    bad.write_text("(fly)\n")
    assert main(["heuristics", "gripper", str(problem), "--plan", str(bad)]) == 2
    assert "step 1: unknown action (fly)" in capsys.readouterr().err
    assert main(["validate", "gripper", str(problem), str(bad)]) == 1
    assert "INVALID" in capsys.readouterr().out


def test_every_search_plan_in_the_corpus_validates_with_full_grounding(corpus):
    # Plans found on the pruned task must also be valid for the unpruned grounding (what `validate` uses).
    for domain in DOMAINS:
        task = instance(corpus, domain, 7, "medium")
        result = gbfs(task, "ff")
        full = load_task(domain, task.problem_file, remove_irrelevant_operators=False)
        assert validate_plan(full, result.plan).valid


def test_cli_heuristics_prints_dead_ends_as_null(tmp_path, capsys):
    plan_path = tmp_path / "drop.plan"
    write_plan(["(drop)"], plan_path)
    domain, problem = DATA / "deadend-domain.pddl", DATA / "deadend-problem.pddl"
    assert main(["heuristics", str(domain), str(problem), "--plan", str(plan_path), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["ff"] == 2 and rows[0]["lmcut"] == 2
    assert rows[1]["ff"] is None and rows[1]["lmcut"] is None and rows[1]["hmax"] is None
    assert rows[1]["goalcount"] == 1
