"""The path a newcomer walks first -- train, evaluate, report, plan with the model, reproduce -- says what it does and
what to do next: the training estimate from the data trained on, where a resumed run starts, the progress lines'
latest validation, one spelling for one setting across commands, a report of a folder without tests or plans
that says which command makes them."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from tnlib.cli import main

LINEAR = ["train", "--domain", "gripper", "--model", "linear", "--eval-every", "2", "--checkpoint-every", "2"]


def test_the_training_estimate_uses_the_step_time_measured_on_the_data_trained_on():
    from tnlib.cli.learning import cost_estimate
    from tnlib.learning.training import TrainConfig
    from tnlib.learning.training_cost import MEASURED_BATCH_SIZE, MEASURED_STEP_SECONDS
    from tnlib.progress import duration

    # data/small's blocksworld NLM at the default batch 256: the time measured at batch 64, times 4
    seconds = MEASURED_STEP_SECONDS["small"]["nlm"]["blocksworld"] * 256 / MEASURED_BATCH_SIZE
    line = cost_estimate(TrainConfig(steps=2000, device="cpu", data_root="data/small"))
    assert f"about {duration(seconds * 2000)} on 2 CPU cores ({seconds:.2g} s per step: the time measured on the " \
           "small profile's blocksworld at batch 64, scaled to batch 256)" in line
    # 200 steps there take well under a minute: no estimate printed (not the 16-object bound's 1m48s)
    assert cost_estimate(TrainConfig(steps=200, device="cpu", data_root="data/small")) is None
    paper = cost_estimate(TrainConfig(domain="visitall", steps=1000, batch_size=64, device="cpu",
                                      data_root="data/paper"))
    visitall = MEASURED_STEP_SECONDS["paper"]["nlm"]["visitall"]
    assert f"about {duration(visitall * 1000)} on 2 CPU cores ({visitall:.2g} s per step: the time measured on the " \
           "paper profile's visitall at batch 64)" in paper


def test_a_resumed_run_says_from_which_step_without_a_progress_display(tmp_path, capsys):
    out = ["--out", str(tmp_path), "--no-progress"]
    assert main([*LINEAR, "--steps", "4", *out]) == 0
    assert "resuming" not in capsys.readouterr().err
    assert main([*LINEAR, "--steps", "6", *out]) == 0
    err = capsys.readouterr().err
    assert "tnlib train: resuming gripper-linear-TN-learn-ff-llmcut-s0 from its checkpoint at step 4 of 6 " \
           "(--restart starts afresh)" in err.splitlines()


def test_the_last_progress_line_shows_the_final_validation(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TNLIB_PROGRESS", "text")
    assert main([*LINEAR, "--steps", "4", "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    final = float(re.search(r"last validation MSE (\S+)$", captured.out.strip()).group(1))
    last_line = [line for line in captured.err.splitlines() if "steps done" in line][-1]
    assert last_line.startswith("gripper-linear-TN-learn-ff-llmcut-s0: 4/4 steps done")
    assert f"val_mse {final:.3g})" in last_line, (last_line, final)


def test_a_report_of_runs_from_train_says_what_tests_and_plans_them(tmp_path, capsys):
    runs, out = tmp_path / "runs", tmp_path / "report"
    assert main([*LINEAR, "--steps", "2", "--no-progress", "--out", str(runs)]) == 0
    assert main(["report", str(runs), "--out", str(out)]) == 0
    run = runs / "gripper-linear-TN-learn-ff-llmcut-s0"
    evaluate = f"`tnlib evaluate {run}` tests each on the test split"
    assert f"tnlib report: note: No run of linear here is tested yet (1 trained): {evaluate}" in capsys.readouterr().err
    # (`tnlib report` renders nlm's tables; a page of the folder's own model says it where its table would be)
    from tnlib.experiments.reporting.reports import write_reports

    write_reports(runs, out, models=("linear",))
    assert evaluate in (out / "accuracy.md").read_text()
    planning = (out / "planning.md").read_text()
    assert "these runs come from `tnlib train`, which trains only" in planning and "--no-plan" not in planning
    assert f"`tnlib plan gripper PROBLEM.pddl --model {run}`" in planning
    # tested: the note goes, the table has its row
    assert main(["evaluate", str(run)]) == 0
    write_reports(runs, out, models=("linear",))
    assert "tnlib evaluate" not in (out / "accuracy.md").read_text()
    assert "| gripper |" in (out / "accuracy.md").read_text()


def test_train_evaluate_and_sweep_spell_the_dataset_root_and_model_arguments_alike(capsys):
    from tnlib.cli import build_parser

    for command in ("train", "sweep"):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        shown = capsys.readouterr().out
        assert "--data-root" in shown and "--model-args" in shown, command
        assert not re.search(r"--data[ ,]|--model-arg[ ,]", shown), command  # the older spellings are not shown
    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    shown = capsys.readouterr().out
    assert "--data-root" in shown and not re.search(r"--data[ ,]", shown)
    train = build_parser("train")
    for spelling in (["--data-root", "data/small", "--model-args", "depth=3", "--model-args", "width=8"],
                     ["--data", "data/small", "--model-arg", "depth=3", "--model-arg", "width=8"],
                     ["--data", "data/small", "--model-args", "depth=3", "--model-arg", "width=8"]):
        args = train.parse_args(["train", *spelling])
        assert (args.data_root, args.model_args) == ("data/small", ["depth=3", "width=8"]), spelling
    assert build_parser("evaluate").parse_args(["evaluate", "r", "--data", "d"]).data_root == "d"
    assert build_parser("evaluate").parse_args(["evaluate", "r", "--data-root", "d"]).data_root == "d"
    assert not hasattr(train.parse_args(["train"]), "data")  # (one setting, one name)


def test_the_readme_the_makefile_and_reproduce_help_name_what_the_main_job_leaves_out(capsys):
    from tnlib.experiments.presets import PRESETS
    from tnlib.experiments.running.reproduce import LEFT_OUT, REPORTS, steps
    from tnlib.files import REPO_ROOT

    with pytest.raises(SystemExit):
        main(["reproduce", "--help"])
    shown = " ".join(capsys.readouterr().out.split()).replace("- ", "-")  # (argparse wraps at hyphens)
    makefile = (REPO_ROOT / "Makefile").read_text()
    make_line = " ".join(line.lstrip("# ") for line in makefile.split("make reproduce", 1)[1].split("\n")[:2])
    readme = " ".join((REPO_ROOT / "README.md").read_text().split())
    readme = readme.split("`make reproduce` is `python -m tnlib reproduce`", 1)[1].split(";", 1)[0]
    # and what its short sweep leaves to the converged presets, with the preset's own numbers
    small_steps = f"{PRESETS['small']['steps']} steps"
    assert small_steps in shown and "converged presets' (reports/converged/)" in shown
    assert f"two seeds, {small_steps} at batch 64" in " ".join((REPO_ROOT / "README.md").read_text().split())
    for name in LEFT_OUT:
        assert name in shown, name
        assert name in make_line, name
        assert f"`{name}`" in readme, name
    # and what it leaves out is all it leaves out: every other entry of reports/ is a step's output
    made = {path.relative_to(REPORTS).parts[0] for step in steps() for path in step.outputs}
    for entry in REPORTS.iterdir():
        left = any(Path(entry.name).match(name.rstrip("/")) for name in LEFT_OUT)
        assert left or entry.name in made, entry.name


def test_make_env_says_what_it_does_before_each_quiet_install():
    from tnlib.files import REPO_ROOT

    recipe = (REPO_ROOT / "Makefile").read_text().split("$(STAMP): pyproject.toml\n", 1)[1].split("\n\n", 1)[0]
    lines = recipe.splitlines()
    installs = [i for i, line in enumerate(lines) if "pip install" in line or "ipykernel install" in line]
    assert len(installs) == 4
    for i in installs:
        assert lines[i - 1].strip().startswith('@echo "make env: ['), lines[i - 1]
    assert lines[0].strip().startswith('@echo "make env: setting up') and "done" in lines[-1]
