"""The committed reports are what the current code produces: a fixed subset of a committed report's runs is
trained again from scratch and its per-seed metrics must equal the committed ones. A change that moves rounding in
training or evaluation (a faster kernel, another torch) fails here, and the reports it touches are to be rerun."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tnlib.experiments.reports import accuracy_seed_rows
from tnlib.experiments.sweep import Sweep, run_sweep
from tnlib.experiments.tables import collect_results
from tnlib.learning.run_files import RunDir

REPORTS = Path(__file__).resolve().parents[1] / "reports"


@pytest.mark.slow
def test_rerunning_committed_linear_runs_gives_the_committed_metrics(tmp_path):
    committed = {(r["domain"], r["sigma"], r["residual"], r["column"], r["seed"]): r
                 for r in csv.DictReader((REPORTS / "converged" / "linear" / "accuracy-seeds.csv").open())}
    sweep = Sweep.preset("converged-linear", domains="gripper", configs="learn/ff", seeds=1, plan=False,
                         out_dir=str(tmp_path))
    run_sweep(sweep, progress=False)
    rows = accuracy_seed_rows(collect_results(tmp_path), collect_results(tmp_path, checkpoint=RunDir.BEST_NLL))
    assert len(rows) == 3  # N, N+clip, TN
    for row in rows:
        mine = committed[(row["domain"], row["sigma"], row["residual"], row["column"], str(row["seed"]))]
        for key in ("steps", "checkpoint_step", "mse", "nll", "nll_best_nll"):
            assert str(row[key]) == mine[key], (row["column"], key)
