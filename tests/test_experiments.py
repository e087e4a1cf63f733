"""Sweeps: the grid, resuming finished work, local and Dask execution give the same results."""
from __future__ import annotations

import json

import pytest

from tnlib.cli import main
from tnlib.experiments.sweep import Sweep, run_sweep


def _sweep(out, **kwargs) -> Sweep:
    base = dict(domains=("gripper",), models=("linear",), configs=(("learn", "ff"),), distributions=("N", "TN"),
                seeds=(0,), steps=12, batch_size=16, eval_every=6, out_dir=str(out), plan_instances=1)
    base.update(kwargs)
    return Sweep(**base)


def test_grid_names_every_cell(tmp_path):
    sweep = _sweep(tmp_path, domains=("gripper", "ferry"), configs=(("learn", "ff"), ("fixed", "none")), seeds=(0, 1))
    configs = sweep.train_configs()
    assert len(configs) == 2 * 2 * 2 * 2
    assert len({(c["domain"], c["sigma"], c["residual"], c["distribution"], c["seed"]) for c in configs}) == 16


def test_sweep_runs_resumes_and_matches_dask(tmp_path):
    local = run_sweep(_sweep(tmp_path / "local"), progress=False)
    assert [r["run"] for r in local] == ["gripper-linear-N-learn-ff-llmcut-s0", "gripper-linear-TN-learn-ff-llmcut-s0"]
    assert all("coverage_default" in r for r in local) and "coverage_clip" in local[0]
    run = tmp_path / "local" / local[0]["run"]
    # checkpoints, metrics and planning results are not recomputed (config.json / curves are rewritten on resume)
    stamps = {p.name: p.stat().st_mtime_ns for p in run.iterdir() if p.suffix in (".pt",) or "-" in p.stem}
    again = run_sweep(_sweep(tmp_path / "local"), progress=False)  # everything is done: nothing is redone
    assert again == local
    assert {p.name: p.stat().st_mtime_ns for p in run.iterdir() if p.name in stamps} == stamps
    assert (tmp_path / "local" / "baseline-gripper-ff.jsonl").is_file()

    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as c:
        on_dask = run_sweep(_sweep(tmp_path / "dask"), scheduler=c.scheduler_address, progress=False)
    assert on_dask == local  # same seeds, same data: the same numbers wherever the cells run


def test_cli_refuses_bad_grids(capsys):
    assert main(["sweep", "--configs", "learn-ff"]) == 2
    assert "sigma/residual" in capsys.readouterr().err
    assert main(["sweep", "--models", "transformer"]) == 2
    assert "unknown model" in capsys.readouterr().err


def test_cli_runs_a_tiny_sweep(tmp_path, capsys):
    code = main(["sweep", "--domains", "gripper", "--models", "linear", "--configs", "fixed/none", "--distributions",
                 "TN", "--seeds", "0", "--steps", "6", "--eval-every", "3", "--plan-instances", "1", "--out",
                 str(tmp_path)])
    assert code == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert rows and rows[0]["run"] == "gripper-linear-TN-fixed-none-llmcut-s0"


def test_summaries_table_lists_every_cell():
    from tnlib.experiments.reports import summaries_table

    table = summaries_table([{"run": "a", "mse": 1.0, "nll": 2.0, "coverage_default": 1.0},
                             {"run": "b", "mse": 1.5, "nll": 2.5, "coverage_default": 0.5, "coverage_clip": 1.0}])
    rows = table.splitlines()[2:]
    assert rows == ["| a | 1.000 | 2.000 | 1.00 |  |", "| b | 1.500 | 2.500 | 0.50 | 1.00 |"]
