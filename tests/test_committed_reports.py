"""The committed reports are what the current code produces: a fixed subset of a committed report's runs is
trained again from scratch and its per-seed metrics must equal the committed ones. A change that moves rounding in
training or evaluation (a faster kernel, another torch) fails here on the kind of machine that made the report, and
the reports it touches are to be rerun; on another kind of processor there is nothing to compare, and it skips."""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tnlib.device import machine_kind
from tnlib.experiments.reports import accuracy_seed_rows
from tnlib.experiments.sweep import Sweep, run_sweep
from tnlib.experiments.tables import collect_results
from tnlib.learning.run_files import RunDir

REPORTS = Path(__file__).resolve().parents[1] / "reports"


# The kind of machine the committed reports were made on where their header names none (before headers named
# it): this project's 2-core AMD EPYC machines (reports/speed.md). Training in float32 is bit for bit repeatable on
# one kind of machine only: on another, kernels round differently (AVX-512 against AVX2) and the differences grow
# over thousands of steps (a TN test MSE of .324 there, .347 on an AVX-512 Xeon), so there is nothing to compare.
UNNAMED_MACHINE = "AMD EPYC"


def made_on_this_kind_of_machine(report: Path) -> bool:
    """Whether ``report``'s header names the kind of machine this is (or names none and this is
    :data:`UNNAMED_MACHINE` with AVX2 kernels)."""
    header = report.read_text()
    if ", on " in header.split("Rendered at commit", 1)[-1].split("\n", 1)[0]:
        return f"on {machine_kind()}." in header
    return machine_kind().startswith(UNNAMED_MACHINE) and machine_kind().endswith(", AVX2")


@pytest.mark.slow
def test_rerunning_committed_linear_runs_gives_the_committed_metrics(tmp_path):
    report = REPORTS / "converged" / "linear" / "accuracy.md"
    if not made_on_this_kind_of_machine(report):
        pytest.skip(f"the committed linear runs were made on another kind of machine than this one "
                    f"({machine_kind()}): float32 training is repeatable bit for bit on its own kind only")
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
