"""Where a sweep stands: read from synthetic run folders over the shipped data/small gripper plan split."""
from __future__ import annotations

import json

import pytest

from tnlib.experiments.sweep_settings import Sweep
from tnlib.files import sha256_file
from tnlib.experiments.running.sweep_standing import finished_runs, hours_phrase, sweep_standing
from tnlib.learning.run_files import RunDir
from tnlib.learning.split_planning import chosen_instances, planning_instances
from tnlib.learning.training import TrainConfig
from tnlib.learning.training_cost import MEASURED_RUN_OVERHEAD_SECONDS, MEASURED_STEP_SECONDS


def _sweep(out_dir, **overrides) -> Sweep:
    return Sweep.from_parameters(preset="small", domains=["gripper"], configs=[["learn", "ff"]], seeds=[0],
                                 out_dir=str(out_dir), workers=1, **overrides)


def _write_run(config: TrainConfig, curve: list[float], steps: int) -> RunDir:
    run = RunDir(f"{config.out_dir}/{config.name}")
    run.path.mkdir(parents=True)
    run.config_file.write_text(json.dumps({**config.to_dict(), "steps": steps}))
    run.curves_file.write_text("".join(json.dumps({"step": 50 * (i + 1), "train_loss": 1.0, "val_mse": v,
                                                   "val_nll": 1.0, "seconds": 1.0}) + "\n"
                                       for i, v in enumerate(curve)))
    return run


def test_standing_names_tested_training_and_unplanned_runs_and_the_time_left(tmp_path):
    sweep = _sweep(tmp_path / "runs", plan=True)
    by_distribution = {config.head.distribution: config for config in sweep.train_configs()}
    tested = _write_run(by_distribution["N"], [3.0, 2.0, 1.5, 1.4], steps=600)
    tested.metrics_file("test").write_text(json.dumps({"mse": 1.0}))
    table = planning_instances(sweep.dataset_path(), "gripper", "plan")
    problems = [table.problem_path(instance).name
                for instance in chosen_instances(table, sweep.plan_instances, sweep.plan_per_cell)]
    tested.best.write_bytes(b"weights")
    setting = {"protocol": "paper", "max_evaluations": sweep.max_evaluations, "grounding": "unpruned",
               "checkpoint": sha256_file(tested.best)[:16]}

    def records(estimate, names, **extra):
        return "".join(json.dumps({"problem": name, "solved": True, "evaluations": 1, "estimate": estimate,
                                   **setting, **extra}) + "\n" for name in names)

    tested.planning_file("default").write_text(records("default", problems))
    # three clip records of tnlib's LM-cut, the one data/small holds; two of Fast Downward's, which count for none
    tested.planning_file("clip").write_text(records("clip", problems[:3])
                                            + records("clip", problems[3:5], lmcut="fast-downward"))
    training = _write_run(by_distribution["TN"], [9.0, 7.0, 5.0, 3.0, 2.0, 1.0], steps=6000)

    lines = sweep_standing(sweep)
    assert lines[0] == f"  so far    1 of 2 runs trained and tested, 1 training, 0 not started (in {tmp_path / 'runs'})"
    assert lines[1] == f"            training: {training.path.name} at step 300 of 6,000, curve still improving"
    assert lines[2] == (f"  planned   0 of the 1 tested runs on all their instances (gripper {len(problems)} per run and "
                        f"estimate), 1 part-way ({tested.path.name}: default {len(problems)} of {len(problems)}, "
                        f"clip 3 of {len(problems)}), 0 not yet")
    # the clip searches left: two planned with Fast Downward's l (no seconds recorded: 0), the rest with nothing
    assert lines[3].startswith("            planning left: under a minute with 1 process by the seconds recorded ")
    assert lines[3].endswith(f"; {len(problems) - 5} searches with none recorded not counted")
    seconds = 5700 * MEASURED_STEP_SECONDS["small"]["nlm"]["gripper"] + MEASURED_RUN_OVERHEAD_SECONDS["small"]["nlm"]
    assert lines[4].startswith(f"  left      training at least about {seconds / 60:.0f} minutes with 1 process by ")
    assert finished_runs(sweep) == set()  # tested, but its clip estimate is planned part-way
    assert finished_runs(_sweep(tmp_path / "runs", plan=False)) == {tested.path.name}  # without planning: tested

    # the clip planned too: the run counts as planned on all its instances; training done: nothing left to time
    tested.planning_file("clip").write_text(records("clip", problems, lmcut="tnlib"))
    training.metrics_file("test").write_text(json.dumps({"mse": 1.0}))
    assert sweep_standing(sweep) == [
        f"  so far    2 of 2 runs trained and tested, 0 training, 0 not started (in {tmp_path / 'runs'})",
        f"  planned   1 of the 2 tested runs on all their instances (gripper {len(problems)} per run and estimate), "
        "0 part-way, 1 not yet",
        "            planning left: under a minute with 1 process by the seconds recorded for the same instances (the "
        f"run's own earlier search, else its configuration's other runs); {len(problems)} searches with none "
        "recorded not counted"]
    assert finished_runs(sweep) == {tested.path.name}


def test_planning_left_is_timed_by_the_runs_own_earlier_search_else_its_peers_median(tmp_path):
    """Three TN seeds of one configuration: seed 0 planned every instance under the current setting, seed 1 none
    (its records are of an earlier checkpoint, with their seconds), seed 2 the first instance only. Seed 1's searches
    are timed by its own earlier ones, seed 2's by the median of the others that planned each instance."""
    sweep = Sweep.from_parameters(preset="small", domains=["gripper"], configs=[["learn", "ff"]], seeds=[0, 1, 2],
                                  distributions=["TN"], out_dir=str(tmp_path / "runs"), workers=1, plan=True)
    table = planning_instances(sweep.dataset_path(), "gripper", "plan")
    problems = [table.problem_path(i).name for i in chosen_instances(table, sweep.plan_instances, sweep.plan_per_cell)]
    runs = []
    for config in sweep.train_configs():
        run = _write_run(config, [3.0, 2.0], steps=100)
        run.metrics_file("test").write_text(json.dumps({"mse": 1.0}))
        run.best.write_bytes(f"weights {config.seed}".encode())
        runs.append(run)

    def records(run, names, seconds, checkpoint=None):
        digest = checkpoint or sha256_file(run.best)[:16]
        return "".join(json.dumps({"problem": name, "protocol": "paper", "max_evaluations": sweep.max_evaluations,
                                   "grounding": "unpruned", "checkpoint": digest, "estimate": "default",
                                   "solved": True, "evaluations": 1, "seconds": seconds(i)}) + "\n"
                       for i, name in enumerate(names))

    runs[0].planning_file("default").write_text(records(runs[0], problems, lambda i: 10.0 * (i + 1)))
    runs[1].planning_file("default").write_text(records(runs[1], problems, lambda i: 100.0, checkpoint="0" * 16))
    runs[2].planning_file("default").write_text(records(runs[2], problems[:1], lambda i: 7.0))
    line = next(line for line in sweep_standing(sweep) if "planning left" in line)
    own = 100.0 * len(problems)  # seed 1: its own earlier searches
    peers = sum(10.0 * (i + 1) for i in range(1, len(problems)))  # seed 2: seed 0's alone past the first
    assert line.startswith(f"            planning left: {hours_phrase((own + peers) / 3600)} with 1 process")
    assert "none recorded" not in line
    # every instance planned: no line
    for run in runs[1:]:
        run.planning_file("default").write_text(records(run, problems, lambda i: 1.0))
    assert not any("planning left" in line for line in sweep_standing(sweep))


@pytest.mark.parametrize("curve, state", [([9.0, 5.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0], ", curve flat so far"),
                                          ([9.0, 5.0], "")])
def test_standing_reads_the_flatness_rule_where_the_curve_can_tell(tmp_path, curve, state):
    sweep = _sweep(tmp_path / "runs")
    run = _write_run(sweep.train_configs()[0], curve, steps=600)
    assert f"{run.path.name} at step {50 * len(curve)} of 600{state}" in sweep_standing(sweep)[1]


def test_a_planning_line_of_another_shape_counts_as_no_instance_planned(tmp_path):
    sweep = _sweep(tmp_path / "runs", plan=True)
    config = next(c for c in sweep.train_configs() if c.head.distribution == "TN")
    run = _write_run(config, [3.0, 2.0], steps=100)
    run.metrics_file("test").write_text(json.dumps({"mse": 1.0}))
    name = planning_instances(sweep.dataset_path(), "gripper", "plan").instances()[0]
    run.planning_file("default").write_text(json.dumps({"problem": f"{name}.pddl"}) + "\n" + json.dumps([1]) + "\n")
    assert sweep_standing(sweep)[1].endswith("0 part-way, 1 not yet")


def test_standing_of_a_folder_without_runs(tmp_path):
    assert sweep_standing(_sweep(tmp_path / "none")) == [
        f"  so far    nothing: none of the 2 runs started in {tmp_path / 'none'}"]


def test_standing_says_under_a_minute_rather_than_zero_minutes(tmp_path):
    sweep = _sweep(tmp_path / "runs")
    for config in sweep.train_configs():
        _write_run(config, [3.0, 2.0, 1.0], steps=200)  # 50 steps left each: seconds
    assert sweep_standing(sweep)[-1].startswith("  left      training at least about under a minute with 1 process")


def test_hours_phrase_says_one_minute_in_the_singular():
    assert [hours_phrase(minutes / 60) for minutes in (0.2, 0.6, 1.4, 1.6, 40)] == [
        "under a minute", "1 minute", "1 minute", "2 minutes", "40 minutes"]
    assert hours_phrase(2.5) == "2.5 hours"
