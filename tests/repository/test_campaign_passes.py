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
  evaluate-or-restore*) echo "$*" >> "$LOG" ;;
  *--plan*) echo "plan $*" >> "$LOG"; sleep 0.1 ;;
  *) echo "lane-start" >> "$LOG"; sleep 1.5; echo "lane-end" >> "$LOG" ;;
esac
"""


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_the_campaign_evaluates_and_plans_in_passes_until_the_lanes_end(tmp_path):
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
    variables = {"CAMPAIGN": str(stub), "CAMPAIGN_ENV": f"LOG={log}", "PY": f"{stub} evaluate-or-restore",
                 "CAMPAIGN_RUNS": str(tmp_path / "runs"), "PASS_SECONDS": "1", "LANES": "2", "LANE_STAGGER": "0",
                 "STAMP": str(tmp_path / "stamp"), "CAMPAIGN_TREE": str(tmp_path / "tree"),
                 "CAMPAIGN_GRID_TREE": str(tmp_path / "tree")}
    done = subprocess.run(["make", "-s", "-C", str(REPO_ROOT), "paper-scale",
                           *(f"{k}={v}" for k, v in variables.items())],
                          env={"LOG": str(log), "PATH": "/usr/bin:/bin"}, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = log.read_text().splitlines()
    # each of the 2 lanes runs its 3 stages, one after another
    assert lines.count("lane-start") == lines.count("lane-end") == 6
    last_lane_end = max(i for i, line in enumerate(lines) if line == "lane-end")
    plans = [i for i, line in enumerate(lines) if line.startswith("plan ")]
    # a pass plans the four domains in turn; passes came while the lanes trained, and one after they ended
    assert len(plans) % 4 == 0 and len(plans) >= 8
    assert any(i < last_lane_end for i in plans) and any(i > last_lane_end for i in plans)
    # the evaluation took the tested run without grid metrics, and only it
    evaluations = [line for line in lines if "evaluate" in line and "--split test-grid" in line]
    assert evaluations and all("tested-here" in line and "/evaluated" not in line for line in evaluations)
