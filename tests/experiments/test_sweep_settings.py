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
from tnlib.experiments.running.sweep_banner import describe_sweep
from tnlib.experiments.sweep_settings import HEAD_PARAMETERS, TRAIN_PARAMETERS, Sweep
from tnlib.learning.training import TrainConfig

from fixtures.sweeps import small_linear_sweep

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
    if "train" in record:  # a record this code wrote: its training settings nested in the template
        assert json.loads(json.dumps(sweep.to_record())) == record
        return
    # the flat record an older code wrote reads as the sweep it describes: every setting as written, none lost
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


def test_grid_names_every_cell(tmp_path):
    sweep = small_linear_sweep(tmp_path, domains=("gripper", "ferry"), configs=(("learn", "ff"), ("fixed", "none")), seeds=(0, 1))
    configs = sweep.train_configs()
    assert len(configs) == 2 * 2 * 2 * 2
    assert len({(c.domain, c.head.sigma, c.head.residual, c.head.distribution, c.seed) for c in configs}) == 16


def test_default_sweep_is_the_papers_setting():
    sweep = Sweep.from_parameters()
    assert (sweep.train.steps, sweep.train.batch_size, sweep.train.instances) == (40_000, 256, 400)
    assert sweep.seeds == [0, 1, 2, 3, 4]
    assert sweep.configs == [("learn", "ff"), ("learn", "none"), ("fixed", "ff"), ("fixed", "none")]
    assert (sweep.models, sweep.distributions, sweep.train.head.lower_bound) == (["nlm"], ["N", "TN"], "lmcut")
    assert (sweep.data_profile, sweep.plan_instances, sweep.max_evaluations) == ("paper", None, 10_000)
    assert sweep.dataset_path().name == "paper"
    assert sweep.runs() == 4 * 4 * 2 * 5 == len(sweep.train_configs())
    assert all(c.data_root == str(sweep.dataset_path()) for c in sweep.train_configs())
    assert Sweep.from_parameters() == Sweep.preset("paper") == Sweep.from_parameters(out_dir="runs/paper")


def test_small_preset_and_overrides():
    small = Sweep.preset("small")
    assert (small.models, small.seeds, small.workers) == (["nlm"], [0, 1], 2)
    assert (small.train.steps, small.train.batch_size) == (120, 64)
    assert small.configs == [("learn", "ff"), ("fixed", "none")]  # Table 2's two: the main job's first look
    assert small.train.instances is None and small.dataset_path().name == "small"
    assert (small.plan_instances, small.max_evaluations) == (12, 200)
    assert Sweep.from_parameters(preset="small") == small
    # an override wins even when it equals the paper's value; the rest stays the preset's
    custom = Sweep.preset("small", batch_size=256, plan_instances="all", models=["nlm", "linear"])
    assert (custom.train.batch_size, custom.plan_instances, custom.train.steps) == (256, None, 120)
    assert custom.models == ["nlm", "linear"]
    with pytest.raises(ValueError, match="unknown sweep preset 'tiny'"):
        Sweep.preset("tiny")
    with pytest.raises(ValueError, match="plan_instances"):
        Sweep.preset("small", plan_instances="some")
    with pytest.raises(ValueError, match="sigma link"):
        Sweep.preset("small", sigma_link="exp")
    with pytest.raises(ValueError, match="fixed sigma"):
        Sweep.preset("small", fixed_sigma="sqrt2")
    with pytest.raises(ValueError, match="data_profile"):
        Sweep.preset("small", data_profile="huge")
    assert set(PRESETS) == {"paper", "small", "converged", "converged-linear", "converged-wl", "paper-scale",
                            "paper-scale-wl"}


@pytest.mark.parametrize("overrides, message", [
    (dict(steps=400, max_steps=300), "max_steps must be an integer >= steps"),
    (dict(steps=400, max_steps=800, extend_steps=150), r"extend_steps \(150\) must be a multiple of eval_every"),
    (dict(steps=450, max_steps=800), r"steps \(450\) must be a multiple of eval_every"),
    (dict(max_steps=800, extend_steps=0), "extend_steps must be an integer >= 1"),
])
def test_bad_until_flat_settings_are_refused(overrides, message):
    with pytest.raises(ValueError, match=message):
        Sweep.from_parameters(preset="small", eval_every=100, **overrides)


def test_the_authors_fixed_sigma_reaches_every_fixed_run_and_its_name(tmp_path):
    sweep = small_linear_sweep(tmp_path, configs=(("learn", "ff"), ("fixed", "none")), fixed_sigma="authors")
    configs = sweep.train_configs()
    assert {c.head.fixed_sigma for c in configs} == {"authors"}
    names = sorted(c.name for c in configs)
    assert "gripper-linear-N-fixed-authors-none-llmcut-s0" in names
    assert "gripper-linear-N-learn-ff-llmcut-s0" in names  # a learned sigma's name does not change
    assert "fixed sigma sqrt(2) (the authors' code's)" in describe_sweep(sweep)
    assert "fixed sigma" not in describe_sweep(small_linear_sweep(tmp_path, configs=(("fixed", "none"),)))  # the paper's: unsaid
