"""`make paper-scale`'s process beside the training lanes: it evaluates and plans in passes while a lane trains,
once more after the lanes end, and then lets make end. Run with stub commands in place of the campaign's sweeps
and Python (make's variables, given on its command line), so that it takes seconds and trains nothing."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from tnlib.files import REPO_ROOT

STUB = """#!/bin/sh
case "$*" in
  *cluster-check*) echo "$*" >> "$LOG"; exit "${CHECK_STATUS:-0}" ;;
  evaluate-or-restore*) echo "$*" >> "$LOG" ;;
  render*) echo "render" >> "$LOG" ;;
  *--plan*) echo "plan $*" >> "$LOG"; [ "${PLAN_STATUS:-0}" = 0 ] || exit "$PLAN_STATUS"; sleep 0.1 ;;
  *) echo "lane-start $*" >> "$LOG"; sleep 1.5
     case "$*" in *"--configs learn/none fixed/ff"*) run="trained-learn-none-$$"; table=other ;;
                  *) run="trained-learn-ff-$$"; table=table2 ;; esac
     mkdir -p "$RUNS/$run"; echo "{}" > "$RUNS/$run/metrics-test.json"; echo "lane-end $table" >> "$LOG" ;;
esac
"""


def _campaign_with_stubs(tmp_path, check_status: int = 0, plan_status: int = 0, **more: str) -> list[str]:
    """`make paper-scale` with the stubs, its variables and ``more``: the lines the stubs logged (``check_status``:
    the cluster check's exit status, make must fail where it is not 0; ``plan_status``: each planning sweep's)."""
    log = tmp_path / "log"
    stub = tmp_path / "stub.sh"
    stub.write_text(STUB)
    stub.chmod(0o755)
    (tmp_path / "tree" / "tnlib").mkdir(parents=True)
    (tmp_path / "tree" / "tnlib" / "__init__.py").write_text("")
    (tmp_path / "stamp").write_text("")
    untested = tmp_path / "runs" / "tested-here"
    untested.mkdir(parents=True)
    (untested / "metrics-test.json").write_text("{}")
    (tmp_path / "runs" / "evaluated").mkdir()
    for name in ("metrics-test.json", "metrics-test-grid.json"):
        (tmp_path / "runs" / "evaluated" / name).write_text("{}")
    variables = {"CAMPAIGN": str(stub), "CAMPAIGN_PLAN": str(stub), "CAMPAIGN_ENV": f"LOG={log}", "PY": f"{stub} evaluate-or-restore",
                 "CAMPAIGN_RUNS": str(tmp_path / "runs"), "PASS_SECONDS": "1", "LANES": "2", "LANE_STAGGER": "0",
                 "STAMP": str(tmp_path / "stamp"), "CAMPAIGN_TREE": str(tmp_path / "tree"),
                 "CAMPAIGN_GRID_TREE": str(tmp_path / "tree"), "CAMPAIGN_PLAN_TREE": str(tmp_path / "tree"),
                 "CAMPAIGN_RENDER": f"{stub} render", **more}
    done = subprocess.run(["make", "-s", "-C", str(REPO_ROOT), "paper-scale",
                           *(f"{k}={v}" for k, v in variables.items())],
                          env={"LOG": str(log), "PATH": "/usr/bin:/bin", "CHECK_STATUS": str(check_status),
                               "PLAN_STATUS": str(plan_status), "RUNS": str(tmp_path / "runs")},
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode == 0) == (check_status == 0), done.stderr
    return log.read_text().splitlines()


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_campaign_evaluates_and_plans_in_passes_until_the_lanes_end(tmp_path):
    # (passes every 0.2 s: many more than the times the lanes' records change)
    lines = _campaign_with_stubs(tmp_path, PASS_SECONDS="0.2")
    starts = [line for line in lines if line.startswith("lane-start")]
    # each of the 2 lanes runs its 3 stages, one after another, on this machine
    assert len(starts) == sum(line.startswith("lane-end") for line in lines) == 6
    assert not any("--scheduler" in line for line in starts) and not any("cluster-check" in line for line in lines)
    # the machine that trains the lanes is named before they start
    kind = [i for i, line in enumerate(lines) if "this_machine_for_results" in line]
    assert len(kind) == 1 and kind[0] < lines.index(starts[0])
    last_lane_end = max(i for i, line in enumerate(lines) if line.startswith("lane-end"))
    plans = [i for i, line in enumerate(lines) if line.startswith("plan ")]
    # every pass evaluates here (the stub writes no grid metrics, so the run tested before stays unevaluated)
    evaluations = [line for line in lines if "evaluate" in line and "--split test-grid" in line]
    # the evaluation took the tested runs without grid metrics, and only them
    assert evaluations and "tested-here" in evaluations[0] and all("/evaluated" not in line for line in evaluations)
    # a pass that plans plans the four domains in turn; passes came while the lanes trained, one planned after the
    # last run of Table 2's configurations was tested, and one evaluated after the lanes ended
    assert len(plans) % 4 == 0 and len(plans) >= 8
    last_table2_test = max(i for i, line in enumerate(lines) if line == "lane-end table2")
    assert any(i > last_table2_test for i in plans) and last_table2_test < last_lane_end
    assert any("--split test-grid" in line for line in lines[last_lane_end:])
    # the first pass planned and rendered; later ones rendered only once lanes had tested runs since (each lane's
    # stage leaves one), not in a pass that found the records the report reads as they were
    renders = [i for i, line in enumerate(lines) if line == "render"]
    assert renders[0] > plans[3] and renders[-1] > last_lane_end
    lane_ends = sum(line.startswith("lane-end") for line in lines)
    assert 2 <= len(renders) <= 1 + lane_ends and len(renders) < len(evaluations), (renders, evaluations)
    # and planned again only once a run of Table 2's configurations was tested since the pass that planned before
    # (from its start, its evaluation: a run tested as it read the runs is planned by the next): a run of Table 1's
    # other two, the third stage's, is rendered with nothing to plan
    pass_starts = [i for i, line in enumerate(lines) if "--split test-grid" in line]
    planning_passes = plans[::4]
    for before, after in zip(planning_passes, planning_passes[1:]):
        since = max(i for i in pass_starts if i < before)
        assert "lane-end table2" in lines[since:after], lines


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_a_pass_whose_planning_failed_plans_again_at_the_next_pass(tmp_path):
    lines = _campaign_with_stubs(tmp_path, plan_status=1, PASS_SECONDS="0.2")
    evaluations = [line for line in lines if "evaluate" in line and "--split test-grid" in line]
    plans = [line for line in lines if line.startswith("plan ")]
    # no run tested between most passes (a failing planning takes no time here: many passes), yet each pass plans
    # all four domains again
    assert len(evaluations) > 1 + sum(line.startswith("lane-end") for line in lines) and len(plans) == 4 * len(evaluations)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_campaign_on_a_cluster_asks_its_workers_first_then_sends_each_stage_once(tmp_path):
    # (the stages start LANE_STAGGER apart, so that their order in the log is the order they were sent in)
    lines = _campaign_with_stubs(tmp_path, SCHEDULER="tcp://cluster:8786", LANE_STAGGER="0.5")
    checks = [i for i, line in enumerate(lines) if "cluster-check tcp://cluster:8786" in line]
    starts = [i for i, line in enumerate(lines) if line.startswith("lane-start")]
    assert len(checks) == 1 and checks[0] < min(starts)
    assert not any("this_machine_for_results" in line for line in lines)  # the check names the workers' kinds
    assert "--code" in lines[checks[0]] and f"--results {tmp_path / 'runs'}" in lines[checks[0]]
    # one sweep a stage, each sent to the scheduler, in the stages' order; the passes still run here
    assert len(starts) == sum(line.startswith("lane-end") for line in lines) == 3
    assert all("--scheduler tcp://cluster:8786" in lines[i] for i in starts)
    assert ["blocksworld" in lines[i] for i in starts] == [False, True, False]
    assert "learn/none fixed/ff" in lines[starts[2]]
    assert any(line.startswith("plan ") and "--scheduler" not in line for line in lines)


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_campaign_sends_nothing_to_a_cluster_whose_workers_the_check_refuses(tmp_path):
    lines = _campaign_with_stubs(tmp_path, check_status=1, SCHEDULER="tcp://cluster:8786")
    assert any("cluster-check" in line for line in lines)
    assert not any(line.startswith(("lane-start", "plan ")) for line in lines)
