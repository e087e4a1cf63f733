"""Pruned runs: a finished run without its resume checkpoints is still a finished run to every reader."""
from __future__ import annotations

import hashlib
import json

import pytest

from fixtures.heuristic_items import small_items
from tnlib.cli import main
from tnlib.experiments.running.pruning import prune_finished_runs
from tnlib.experiments.running.sweep import run_sweep
from tnlib.experiments.sweep_settings import Sweep
from tnlib.learning.training import TrainConfig, train


def _sweep(out) -> Sweep:
    return Sweep.from_parameters(domains=("gripper",), models=("linear",), configs=(("learn", "ff"),),
                                 distributions=("N", "TN"), seeds=(0,), steps=12, batch_size=16, eval_every=6,
                                 out_dir=str(out), plan_instances=1, data_profile="small", instances=None)


def _contents(folder) -> dict[str, str]:
    return {p.name: hashlib.sha1(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def test_a_pruned_sweep_runs_again_without_training_or_changing_its_runs(tmp_path, capsys):
    out = tmp_path / "runs"
    first = run_sweep(_sweep(out), progress=False)
    runs = [out / r["run"] for r in first]
    pruned = prune_finished_runs(out)
    assert sorted(p.run for p in pruned) == sorted(runs) and all(p.step == 12 for p in pruned)
    for run in runs:
        assert not (run / "last.pt").exists() and json.loads((run / "pruned.json").read_text()) == {"step": 12}
        assert (run / "best.pt").is_file() and (run / "metrics-test.json").is_file()
    before = {run.name: _contents(run) for run in runs}
    assert run_sweep(_sweep(out), progress=False) == first  # the same metrics and coverage, read back
    assert {run.name: _contents(run) for run in runs} == before
    assert prune_finished_runs(out) == []  # nothing left to prune
    # the command line says what it freed
    assert main(["prune", str(out), "--dry-run"]) == 0
    assert "would prune 0 finished runs" in capsys.readouterr().out


def test_only_runs_trained_to_their_steps_and_tested_are_pruned(tmp_path):
    (tmp_path / "data").mkdir()
    items = small_items("blocksworld", tmp_path / "data")
    base = dict(domain="blocksworld", model="linear", batch_size=8, eval_every=4, checkpoint_every=4,
                out_dir=str(tmp_path / "runs"), progress=False, model_args={})
    tested = train(TrainConfig.from_dict({**base, "steps": 8, "seed": 1}), items[:10], items[10:])
    untested = train(TrainConfig.from_dict({**base, "steps": 8, "seed": 2}), items[:10], items[10:])
    (tested / "metrics-test.json").write_text("{}")
    # trained on past its checkpoint's steps in config.json, as an interrupted extension leaves it
    behind = train(TrainConfig.from_dict({**base, "steps": 8, "seed": 4}), items[:10], items[10:])
    (behind / "metrics-test.json").write_text("{}")
    config = json.loads((behind / "config.json").read_text())
    (behind / "config.json").write_text(json.dumps({**config, "steps": 12}))
    assert prune_finished_runs(tmp_path / "runs", dry_run=True) == prune_finished_runs(tmp_path / "runs")
    assert (tested / "pruned.json").is_file() and not (tested / "last.pt").exists()
    for kept in (untested, behind):
        assert (kept / "last.pt").is_file() and not (kept / "pruned.json").exists()


def test_a_pruned_run_refuses_more_steps_and_starts_afresh_when_told(tmp_path):
    (tmp_path / "data").mkdir()
    items = small_items("blocksworld", tmp_path / "data")
    base = dict(domain="blocksworld", model="linear", batch_size=8, eval_every=4, checkpoint_every=4,
                out_dir=str(tmp_path / "runs"), progress=False, model_args={}, seed=1)
    run = train(TrainConfig.from_dict({**base, "steps": 8}), items[:10], items[10:])
    (run / "metrics-test.json").write_text("{}")
    prune_finished_runs(tmp_path / "runs")
    with pytest.raises(ValueError, match="finished at step 8 and its resume checkpoint was pruned"):
        train(TrainConfig.from_dict({**base, "steps": 12}), items[:10], items[10:])
    with pytest.raises(ValueError, match="different configuration"):
        train(TrainConfig.from_dict({**base, "steps": 8, "learning_rate": 0.5}), items[:10], items[10:])
    assert train(TrainConfig.from_dict({**base, "steps": 8}), items[:10], items[10:]) == run
    train(TrainConfig.from_dict({**base, "steps": 12}), items[:10], items[10:], resume=False)
    assert (run / "last.pt").is_file() and not (run / "pruned.json").exists()
    assert max(json.loads(line)["step"] for line in (run / "curves.jsonl").read_text().splitlines()) == 12


def test_prune_names_a_missing_folder(tmp_path, capsys):
    assert main(["prune", str(tmp_path / "nowhere")]) == 2
    assert "no results folder" in capsys.readouterr().err
