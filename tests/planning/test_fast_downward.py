"""Tests for tnlib.planning.fast_downward: optimal costs against pyperplan's breadth-first search, plan validity, unsolvable and
time-out paths (no process left behind), the initial heuristic value, and the CLI."""
from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from pyperplan.search import breadth_first_search

from planning_corpus import pyperplan_task
import tnlib.planning.fast_downward as solve_module
from tnlib import cli
from tnlib.planning.generators import domain_file, generate
from tnlib.planning.fast_downward import SolveResult, fast_downward_version, fd_heuristic_value, solve
from tnlib.planning.pddl import pddl_file_bytes

# Small enough for breadth-first search in pyperplan, large enough to have plans of a few steps.
SMALL_INSTANCES = [
    ("blocksworld", {"blocks": 4}),
    ("ferry", {"locations": 3, "cars": 2}),
    ("gripper", {"balls": 3}),
    ("visitall", {"x": 3, "y": 3, "ratio": 0.5}),
]

# Self-stacking: relaxed-reachable goal, so only the search proves it unsolvable (exit code 11).
UNSOLVABLE_BY_SEARCH = """(define (problem unsolvable-self-stack)
  (:domain blocksworld-4ops)
  (:objects b1 b2)
  (:init (arm-empty) (on-table b1) (on-table b2) (clear b1) (clear b2))
  (:goal (and (on b1 b1))))
"""
# roomc is not a (room ...): no action can ever reach it.
UNSOLVABLE_UNREACHABLE = """(define (problem unsolvable-no-room)
  (:domain gripper)
  (:objects rooma roomb roomc left right ball0)
  (:init (room rooma) (room roomb) (gripper left) (gripper right) (ball ball0) (free left) (free right)
         (at ball0 rooma) (at-robby rooma))
  (:goal (and (at ball0 roomc))))
"""


def write_instance(tmp_path: Path, domain: str, seed: int, **params) -> Path:
    path = tmp_path / f"{domain}-{seed}.pddl"
    path.write_text(generate(domain, seed, **params))
    return path


def assert_valid_plan(domain: str, problem_file: Path, plan: list[str]) -> None:
    """Simulate the plan with pyperplan's grounded operators: each step applicable, the goal reached."""
    task = pyperplan_task(domain, problem_file)
    operators = {op.name: op for op in task.operators}
    state = task.initial_state
    for i, step in enumerate(plan):
        assert step in operators, f"step {i} {step!r} is not a ground operator"
        assert operators[step].applicable(state), f"step {i} {step!r} is not applicable"
        state = operators[step].apply(state)
    assert task.goal_reached(state)


def sessions_alive(session_ids: set[int]) -> list[str]:
    """Processes still running in any of the given sessions (read from /proc)."""
    alive = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue  # exited meanwhile
        # Fields after the parenthesised command name: state ppid pgrp session ...
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] != "Z" and int(fields[3]) in session_ids:
            alive.append(f"pid {entry}: {stat[:80]}")
    return alive


@pytest.fixture
def recorded_sessions(monkeypatch):
    """Records the process ids of every process tnlib.planning.fast_downward starts (each leads its own session)."""
    pids: set[int] = set()
    real_popen = subprocess.Popen

    def recording_popen(*args, **kwargs):
        proc = real_popen(*args, **kwargs)
        pids.add(proc.pid)
        return proc

    monkeypatch.setattr(solve_module.subprocess, "Popen", recording_popen)
    return pids


# ---------------------------------------------------------------------------------------------------------------
# Optimality and validity


@pytest.mark.parametrize("domain,params", SMALL_INSTANCES)
def test_optimal_cost_matches_breadth_first_search(domain, params, tmp_path):
    for seed in (1, 2, 3):
        problem = write_instance(tmp_path, domain, seed, **params)
        result = solve(domain, problem, time_limit=60, memory_limit_mb=2000)
        assert result.status == "solved", result.log
        reference = breadth_first_search(pyperplan_task(domain, problem))
        assert reference is not None
        assert result.cost == len(reference) == len(result.plan)
        assert all(step == step.lower() and step.startswith("(") for step in result.plan)
        assert_valid_plan(domain, problem, result.plan)
        assert result.expansions is not None and result.log is None
        # LM-cut is admissible: its initial value never exceeds the optimal cost.
        assert result.initial_heuristic is not None and result.initial_heuristic <= result.cost


def test_domain_given_as_path(tmp_path):
    problem = write_instance(tmp_path, "gripper", 5, balls=2)
    by_key = solve("gripper", problem, time_limit=60)
    by_path = solve(domain_file("gripper"), problem, time_limit=60)
    assert by_key.status == by_path.status == "solved" and by_key.cost == by_path.cost


def test_a_compressed_problem_is_solved_as_its_plain_text(tmp_path):
    plain = write_instance(tmp_path, "ferry", 3, locations=4, cars=3)
    packed = tmp_path / "ferry-3.pddl.gz"
    packed.write_bytes(pddl_file_bytes(plain.read_text(), compressed=True))
    a, b = solve("ferry", plain, time_limit=60), solve("ferry", packed, time_limit=60)
    assert a.status == b.status == "solved", b.log
    assert b.plan == a.plan and b.cost == a.cost > 0
    assert_valid_plan("ferry", plain, b.plan)
    assert fd_heuristic_value("ferry", packed, "lmcut()", time_limit=60) == fd_heuristic_value(
        "ferry", plain, "lmcut()", time_limit=60)


def test_parallel_runs_do_not_clash(tmp_path):
    problems = [write_instance(tmp_path, "blocksworld", seed, blocks=5) for seed in (1, 2, 3, 4)]
    results: dict[int, SolveResult] = {}

    def run(i: int) -> None:
        results[i] = solve("blocksworld", problems[i], time_limit=60)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(problems))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, problem in enumerate(problems):
        assert results[i].status == "solved"
        assert_valid_plan("blocksworld", problem, results[i].plan)


# ---------------------------------------------------------------------------------------------------------------
# Unsolvable, time-out, errors


@pytest.mark.parametrize("text,domain", [(UNSOLVABLE_BY_SEARCH, "blocksworld"), (UNSOLVABLE_UNREACHABLE, "gripper")])
def test_unsolvable(text, domain, tmp_path):
    problem = tmp_path / "unsolvable.pddl"
    problem.write_text(text)
    result = solve(domain, problem, time_limit=60)
    assert result.status == "unsolvable"
    assert result.plan is None and result.cost is None


# Blocksworld with 22 blocks (the paper's largest test size) takes A* + LM-cut far more than a second.
HARD = ("blocksworld", 1, {"blocks": 22})


def test_timeout_by_fast_downward_limit(tmp_path, recorded_sessions):
    domain, seed, params = HARD
    problem = write_instance(tmp_path, domain, seed, **params)
    result = solve(domain, problem, time_limit=1)
    assert result.status == "timeout"
    # Fast Downward normally stops itself on the CPU-time limit (23); on a loaded machine the wall-clock backstop
    # may come first (None). Either way nothing may survive.
    assert result.exit_code in (23, None)
    assert len(recorded_sessions) == 2  # translator and search both ran
    assert sessions_alive(recorded_sessions) == []


def test_timeout_by_wall_clock_kill(tmp_path, recorded_sessions, monkeypatch):
    # Without the CPU rlimit only tnlib's wall-clock backstop can stop the search: it must kill the session.
    monkeypatch.setattr(solve_module, "_USE_CPU_RLIMIT", False)
    domain, seed, params = HARD
    problem = write_instance(tmp_path, domain, seed, **params)
    result = solve(domain, problem, time_limit=1)
    assert result.status == "timeout"
    assert result.exit_code is None  # killed by tnlib
    assert recorded_sessions
    assert sessions_alive(recorded_sessions) == []


def test_error_keeps_log(tmp_path):
    problem = tmp_path / "broken.pddl"
    problem.write_text("(define (problem broken) (:domain gripper) (:objects a) (:init (nonsense a)) (:goal")
    result = solve("gripper", problem, time_limit=60)
    assert result.status == "error"
    assert result.log and result.exit_code not in solve_module.STATUS_BY_EXIT_CODE


def test_bad_arguments(tmp_path):
    with pytest.raises(FileNotFoundError):
        solve("gripper", tmp_path / "missing.pddl")
    with pytest.raises(FileNotFoundError):
        solve("sokoban", tmp_path / "missing.pddl")
    problem = write_instance(tmp_path, "gripper", 1, balls=2)
    with pytest.raises(ValueError, match="time_limit"):
        solve("gripper", problem, time_limit=0)


# ---------------------------------------------------------------------------------------------------------------
# Heuristic value and version


def test_fd_heuristic_value(tmp_path):
    problem = write_instance(tmp_path, "blocksworld", 2, blocks=6)
    result = solve("blocksworld", problem, time_limit=60)
    lmcut = fd_heuristic_value("blocksworld", problem)
    assert lmcut == result.initial_heuristic
    assert 0 < lmcut <= result.cost
    assert fd_heuristic_value("blocksworld", problem, "blind()") == 1  # the heuristic argument is used
    dead_end = tmp_path / "dead.pddl"
    dead_end.write_text(UNSOLVABLE_UNREACHABLE)
    assert fd_heuristic_value("gripper", dead_end, "hmax()") == math.inf


def test_fast_downward_version():
    version = fast_downward_version()
    assert version.startswith("Fast Downward ")
    assert "unknown" not in version and "missing" not in version


# ---------------------------------------------------------------------------------------------------------------
# CLI


def test_cli_json_and_plan_file(tmp_path, capsys):
    problem = write_instance(tmp_path, "ferry", 4, locations=2, cars=2)
    plan_file = tmp_path / "out" / "plan.txt"
    code = cli.main(["solve", "ferry", str(problem), "--json", "--time-limit", "60", "--plan-file", str(plan_file)])
    result = json.loads(capsys.readouterr().out)
    assert code == 0 and result["status"] == "solved"
    assert [line for line in plan_file.read_text().splitlines() if line.startswith("(")] == result["plan"]
    assert_valid_plan("ferry", problem, result["plan"])


def test_cli_text_form_prints_the_plan(tmp_path, capsys):
    problem = write_instance(tmp_path, "blocksworld", 3, blocks=4)
    assert cli.main(["solve", "blocksworld", str(problem), "--json", "--time-limit", "60"]) == 0
    plan = json.loads(capsys.readouterr().out)["plan"]
    assert plan
    assert cli.main(["solve", "blocksworld", str(problem), "--time-limit", "60"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert f"plan length: {len(plan)}" in out
    assert out[-len(plan):] == plan  # one action per line, IPC style, after the figures
    plan_file = tmp_path / "plan.txt"  # with a plan file the plan goes there, as in `tnlib plan`
    assert cli.main(["solve", "blocksworld", str(problem), "--time-limit", "60", "--plan-file", str(plan_file)]) == 0
    assert not [line for line in capsys.readouterr().out.splitlines() if line.startswith("(")]


def test_cli_unsolvable_and_user_errors(tmp_path, capsys):
    problem = tmp_path / "unsolvable.pddl"
    problem.write_text(UNSOLVABLE_BY_SEARCH)
    assert cli.main(["solve", "blocksworld", str(problem)]) == 1
    assert "status: unsolvable" in capsys.readouterr().out
    assert cli.main(["solve", "blocksworld", str(tmp_path / "missing.pddl")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_limits_are_applied_to_each_stage(tmp_path):
    # Memory exhaustion is too slow to provoke in a fast test (LM-cut expands few states per second on big tasks),
    # so check the limits each stage runs under, and its own session, directly.
    probe = "import os, resource; print(resource.getrlimit(resource.RLIMIT_AS), resource.getrlimit(resource.RLIMIT_CPU), os.getsid(0) == os.getpid())"
    run = solve_module.run_stage([sys.executable, "-c", probe], tmp_path, None, 2.5, 512)
    assert run.exit_code == 0
    assert run.output.split() == ["(536870912,", "536870912)", "(3,", "8)", "True"]


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except OSError:
        return ""  # exited meanwhile


def children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux-only")
def test_search_dies_with_a_killed_parent(tmp_path):
    # A worker killed mid-solve (SIGKILL: no cleanup code runs) must not leave its search running.
    domain, seed, params = HARD
    problem = write_instance(tmp_path, domain, seed, **params)
    script = f"from tnlib.planning.fast_downward import solve; solve({domain!r}, {str(problem)!r}, time_limit=60)"
    worker = subprocess.Popen([sys.executable, "-c", script])
    try:
        search_pids: list[int] = []
        for _ in range(300):  # until the search stage is running (translation takes well under a second)
            search_pids = [p for p in children_of(worker.pid) if "--search" in cmdline(p)]
            if search_pids:
                break
            time.sleep(0.1)
        assert search_pids, "the search stage never started"
        run_folder = Path(os.readlink(f"/proc/{search_pids[0]}/cwd"))
    finally:
        worker.kill()
        worker.wait()
    shutil.rmtree(run_folder, ignore_errors=True)  # the killed worker could not remove its temporary folder
    for _ in range(100):  # the kernel delivers the parent-death signal asynchronously
        if not sessions_alive(set(search_pids)):
            break
        time.sleep(0.05)
    survivors = sessions_alive(set(search_pids))
    for pid in search_pids:  # do not leave an orphan running if the test fails
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    assert survivors == []


@pytest.mark.parametrize("domain,params", [("blocksworld", {"blocks": 1}), ("ferry", {"locations": 2, "cars": 0})])
def test_empty_goal_is_solved_by_the_empty_plan(domain, params, tmp_path):
    # Generators write `(:goal (and))` for trivial instances; Fast Downward alone would reject it (axioms).
    problem = write_instance(tmp_path, domain, 1, **params)
    assert "(:goal (and\n  ))" in problem.read_text()
    result = solve(domain, problem, time_limit=60)
    assert (result.status, result.plan, result.cost) == ("solved", [], 0)
    assert_valid_plan(domain, problem, result.plan)
    assert fd_heuristic_value(domain, problem) == 0


def test_goal_true_initially_gives_cost_zero(tmp_path):
    # A non-empty goal already true (a trivial gripper instance, probability 1/2 for one ball): Fast Downward
    # itself returns the empty plan.
    seed = next(s for s in range(100) if _ball_already_in_goal_room(generate("gripper", s, balls=1)))
    problem = write_instance(tmp_path, "gripper", seed, balls=1)
    result = solve("gripper", problem, time_limit=60)
    assert (result.status, result.plan, result.cost) == ("solved", [], 0)


def _ball_already_in_goal_room(text: str) -> bool:
    init, goal = text.split("(:goal", 1)
    return any(f"(at ball0 {room})" in init and f"(at ball0 {room})" in goal for room in ("rooma", "roomb"))
