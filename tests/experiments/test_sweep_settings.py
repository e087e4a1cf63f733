"""A sweep's settings: one training template, flat parameters for the command line and the notebook, and sweep.json
written in one shape and read back -- the flat record of older sweeps too -- by one reader."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tnlib.errors import DamagedFile
from tnlib.experiments.presets import PRESETS
from tnlib.experiments.results_dir import ResultsDir
from tnlib.experiments.sweep_settings import HEAD_PARAMETERS, TRAIN_PARAMETERS, Sweep
from tnlib.learning.training import TrainConfig

ROOT = Path(__file__).resolve().parents[2]


def committed_sweep_files() -> list[Path]:
    """Every sweep.json the repository tracks: the results folders of the committed reports (the campaign's among
    them, written by the code it runs)."""
    listed = subprocess.run(["git", "ls-files", "*sweep.json"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / line for line in listed.stdout.split()]


def test_the_repository_tracks_sweep_files_to_read():
    assert len(committed_sweep_files()) >= 10


@pytest.mark.parametrize("path", committed_sweep_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_committed_sweep_file_reads_back_to_the_same_sweep(path):
    record = json.loads(path.read_text())
    sweep = ResultsDir(path.parent).read_sweep()
    # the flat record reads as the sweep it describes: every setting as written, none added or lost
    assert json.loads(json.dumps(sweep.parameters())) == record
    # and the sweep's record now reads back to the same sweep
    written = json.loads(json.dumps(sweep.to_record()))
    assert Sweep.from_record(written) == sweep
    assert {name: written["train"][name] for name in (*HEAD_PARAMETERS, *TRAIN_PARAMETERS)} == {
        name: record[name] for name in (*HEAD_PARAMETERS, *TRAIN_PARAMETERS) if name in record}


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_a_sweep_record_nests_its_template_and_reads_back_to_the_sweep(name):
    sweep = Sweep.preset(name)
    record = json.loads(json.dumps(sweep.to_record()))
    assert not set(record) & {*HEAD_PARAMETERS, *TRAIN_PARAMETERS}  # the training settings live in the template
    assert record["train"]["steps"] == PRESETS[name].get("steps", 40_000)
    assert Sweep.from_record(record) == sweep
    assert Sweep.from_parameters(**sweep.parameters()) == sweep  # the flat parameters name the same sweep


def test_a_setting_a_record_predates_reads_as_the_papers_sweep_has_it():
    paper = Sweep()
    assert Sweep.from_record({}).to_record() == paper.to_record()
    flat = json.loads(json.dumps(Sweep.preset("small").parameters()))
    for name in ("fixed_sigma", "plan_on", "max_steps", "instances"):
        older = Sweep.from_record({k: v for k, v in flat.items() if k != name})
        assert older.parameters()[name] == paper.parameters()[name], name
    nested = Sweep.preset("small").to_record()
    del nested["train"]["instances"], nested["plan_on"]
    older = Sweep.from_record(nested)
    assert (older.train.instances, older.plan_on) == (paper.train.instances, paper.plan_on) == (400, "plan")


def test_a_folder_without_a_sweep_file_has_no_sweep_and_plans_on_the_plan_split(tmp_path):
    assert ResultsDir(tmp_path).read_sweep() is None and ResultsDir(tmp_path).planned_on() == "plan"
    (tmp_path / "sweep.json").write_text(json.dumps({"plan_on": "plan-set"}))
    assert ResultsDir(tmp_path).planned_on() == "plan-set"


@pytest.mark.parametrize("record", [{"stpes": 10}, {"train": {"domain": "ferry"}}, {"train": [1]}, [1, 2],
                                    {"train": {"steps": 0}}])
def test_a_sweep_file_that_holds_no_sweep_is_named_damaged(tmp_path, record):
    (tmp_path / "sweep.json").write_text(json.dumps(record))
    with pytest.raises(DamagedFile, match="sweep.json is damaged: not a sweep's record"):
        ResultsDir(tmp_path).read_sweep()


def test_each_run_is_the_template_with_its_place_in_the_grid(tmp_path):
    sweep = Sweep.preset("small", out_dir=str(tmp_path), domains="ferry", configs="fixed/none", seeds=3,
                         lower_bound="hmax", eval_every=40, model_args={"nlm": {"depth": 3}})
    assert isinstance(sweep.train, TrainConfig) and sweep.train.head.lower_bound == "hmax"
    (config,) = [c for c in sweep.train_configs() if c.head.distribution == "TN"]
    assert (config.domain, config.model, config.seed, config.head.sigma, config.head.residual) == (
        "ferry", "nlm", 3, "fixed", "none")
    assert (config.steps, config.batch_size, config.eval_every, config.checkpoint_every) == (120, 64, 40, 40)
    assert (config.head.lower_bound, config.model_args, config.out_dir) == ("hmax", {"depth": 3}, str(tmp_path))
    assert config.data_root == str(sweep.dataset_path()) and config.progress is False
