"""A new user's mistakes -- an output path that is a folder, a misspelt device or model argument, a file that is not
a checkpoint, a notebook parameter of the wrong shape -- give one line naming the flag or parameter (exit status 2
on the command line), before any work is done, never a traceback or a silent default."""
from __future__ import annotations

import argparse
import io
import json
import math
import sys
from pathlib import Path

import pytest
import torch

from tnlib import TruncatedNormal
from tnlib.cli import main
from tnlib.errors import DamagedFile, DatasetError, MissingRuns
from tnlib.experiments.reporting.table_rows import collect_planning, collect_results
from tnlib.experiments.running.experiments_notebook_parameters import check_notebook_parameters
from tnlib.experiments.running.sweep_banner import describe_sweep
from tnlib.experiments.sweep_settings import Sweep
from tnlib.learning.training import TrainConfig
from tnlib.planning.generators import generate

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def one_line_error(capsys, command: str) -> str:
    err = capsys.readouterr().err
    assert err.startswith(f"tnlib {command}: error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.fixture
def problem(tmp_path) -> Path:
    path = tmp_path / "p.pddl"
    path.write_text(generate("blocksworld", 1, blocks=3))
    return path


# -- output paths and pipes ------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [
    ["generate", "blocksworld", "--seed", "1", "--blocks", "3", "-o", "{dir}"],
    ["plan", "blocksworld", "{problem}", "--plan-file", "{dir}"],
    ["solve", "blocksworld", "{problem}", "--plan-file", "{dir}"],
], ids=["generate", "plan", "solve"])
def test_an_output_path_that_is_a_folder_is_refused_up_front(command, tmp_path, problem, capsys):
    argv = [a.format(dir=tmp_path, problem=problem) for a in command]
    assert main(argv) == 2
    assert f"{tmp_path}: is a folder" in one_line_error(capsys, command[0])


def test_an_unwritable_output_path_is_a_one_line_error(tmp_path, capsys):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    assert main(["generate", "blocksworld", "--seed", "1", "--blocks", "3", "-o", str(not_a_folder / "p.pddl")]) == 2
    remedy = "a file stands where a folder goes: name another folder for the output, or move that file"
    line = one_line_error(capsys, "generate")
    assert f"error: --output {not_a_folder / 'p.pddl'}: {not_a_folder} is a file; {remedy}" in line
    # training creates its run folder under --out, which here is a file
    assert main(["train", "--domain", "gripper", "--model", "linear", "--steps", "1", "--no-progress",
                 "--out", str(not_a_folder)]) == 2
    line = one_line_error(capsys, "train")
    assert f"error: --out {not_a_folder}: is a file; {remedy}" in line and "Errno" not in line
    assert not_a_folder.read_text() == ""


# Each command's output flag and the kind of path it writes; the other arguments are as little as parses.
OUTPUT_FLAGS = [
    (["data", "generate", "--domain", "gripper", "--out", "{out}"], "folder"),
    (["train", "--domain", "gripper", "--model", "linear", "--steps", "1", "--out", "{out}"], "folder"),
    (["sweep", "--preset", "small", "--out", "{out}"], "folder"),
    (["report", "{tmp}", "--out", "{out}"], "folder"),
    (["baselines", "{tmp}", "--out", "{out}"], "folder"),
    (["export-records", "{tmp}", "--out", "{out}"], "folder"),
    (["intervals", "{tmp}", "--out", "{out}"], "file"),
    (["handout", "--out", "{out}"], "file"),
    (["generate", "blocksworld", "--seed", "1", "--blocks", "3", "-o", "{out}"], "file"),
    (["solve", "blocksworld", "{tmp}/p.pddl", "--plan-file", "{out}"], "file"),
    (["plan", "blocksworld", "{tmp}/p.pddl", "--plan-file", "{out}"], "file"),
]


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs /proc, where nothing can be made")
@pytest.mark.parametrize("argv, kind", OUTPUT_FLAGS, ids=lambda v: " ".join(v[:2]) if isinstance(v, list) else v)
def test_an_output_where_nothing_can_be_made_is_named_before_any_work(argv, kind, tmp_path, capsys):
    out = "/proc/tnlib-out/x"
    argv = [a.format(out=out, tmp=tmp_path) for a in argv]
    assert main(argv) == 2
    line = one_line_error(capsys, argv[0])
    flag = {"-o": "--output"}.get(argv[argv.index(out) - 1], argv[argv.index(out) - 1])  # the long spelling
    assert f"error: {flag} {out}: nothing can be made in /proc (" in line, line
    assert line.rstrip().endswith(f"name an output {kind} under a folder you can write to"), line


@pytest.mark.parametrize("argv, kind", OUTPUT_FLAGS, ids=lambda v: " ".join(v[:2]) if isinstance(v, list) else v)
def test_an_output_onto_the_wrong_kind_of_path_is_named_before_any_work(argv, kind, tmp_path, capsys):
    # a folder output onto an existing file, a file output onto an existing folder
    existing = tmp_path / "existing"
    if kind == "folder":
        existing.write_text("kept")
    else:
        existing.mkdir()
    argv = [a.format(out=existing, tmp=tmp_path) for a in argv]
    assert main(argv) == 2
    line = one_line_error(capsys, argv[0])
    if kind == "folder":
        assert f"{existing}: is a file; a file stands where a folder goes" in line, line
        assert existing.read_text() == "kept"
    else:
        assert f"{existing}: is a folder; name a file to write" in line, line
        assert list(existing.iterdir()) == []


class _ClosedPipe(io.StringIO):
    """stdout of a command piped into `head` after head has exited."""

    def write(self, text):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        raise BrokenPipeError(32, "Broken pipe")


def test_a_reader_that_stops_early_ends_the_command_quietly(problem, monkeypatch, capsys):
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    assert main(["heuristics", "blocksworld", str(problem)]) == 141  # a shell's status for SIGPIPE
    assert capsys.readouterr().err == ""


# -- planning inputs -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model, flags, message", [
    ("{tmp}/missing", [], "--model {tmp}/missing: no run folder or checkpoint at {tmp}/missing (run folders are not "
     "in git, so a fresh clone has none: `tnlib sweep --preset small` or `make reproduce` trains runs/small/"),
    ("{tmp}", [], "--model {tmp}: a folder that is not a run folder (no config.json, no best.pt)"),
    ("{problem}", [], "{problem}: not a tnlib checkpoint (not a complete zip archive"),
    ("{tmp}", ["--heuristic", "ff"], "--model and --heuristic exclude each other"),
    ("{tmp}", ["--search", "astar"], "--model plans with GBFS only"),
    (None, ["--estimate", "clip"], "--estimate applies to --model only"),
    (None, ["--device", "cpu"], "--device applies to --model only"),
], ids=["missing", "not-a-run-folder", "not-a-checkpoint", "two-heuristics", "astar", "estimate", "device"])
def test_plan_with_a_model_checks_its_flags(model, flags, message, tmp_path, problem, capsys):
    # (a model of another domain: tests/learning/test_split_planning.py, which trains one)
    argv = ["plan", "blocksworld", str(problem), *flags]
    if model is not None:
        argv += ["--model", model.format(tmp=tmp_path, problem=problem)]
    assert main(argv) == 2
    assert message.format(tmp=tmp_path, problem=problem) in one_line_error(capsys, "plan")


def test_generate_says_what_it_wrote_and_overwrites_only_with_force(tmp_path, capsys):
    out = tmp_path / "p.pddl"
    argv = ["generate", "blocksworld", "--seed", "1", "--blocks", "3", "-o", str(out)]
    assert main(argv) == 0
    assert capsys.readouterr().out == f"wrote {out}: blocksworld problem, seed 1, blocks 3\n"
    assert out.read_text() == generate("blocksworld", 1, blocks=3)
    argv[3] = "2"  # another seed, same file
    assert main(argv) == 2
    assert f"--output {out}: exists; pass --force to overwrite it" in one_line_error(capsys, "generate")
    assert out.read_text() == generate("blocksworld", 1, blocks=3)  # untouched
    assert main([*argv, "--force"]) == 0
    assert capsys.readouterr().out == f"wrote {out}: blocksworld problem, seed 2, blocks 3\n"
    assert out.read_text() == generate("blocksworld", 2, blocks=3)
    # to stdout: the problem and nothing else (it is piped into a file or another program)
    assert main(argv[:-2]) == 0
    assert capsys.readouterr().out == generate("blocksworld", 2, blocks=3)


def test_plan_refuses_a_negative_evaluation_limit(problem, capsys):
    assert main(["plan", "blocksworld", str(problem), "--max-evaluations", "-5"]) == 2
    assert "--max-evaluations must be >= 0" in one_line_error(capsys, "plan")
    assert main(["plan", "blocksworld", str(problem), "--max-evaluations", "0"]) == 0  # 0: no limit


@pytest.mark.parametrize("command", ["solve", "plan", "heuristics"])
@pytest.mark.parametrize("text, message", [
    ("", "the problem file is empty (no PDDL in it)"),
    ("; only a comment\n", "the problem file is empty (no PDDL in it)"),
    ("(define)", "malformed PDDL problem: it ends before the definition is complete (it has no (:init ...) and no "
     "(:goal ...) section)"),
    ("(define (problem p", "malformed PDDL problem: missing closing parenthesis"),
    ("(define (problem p) (:domain blocksworld) (:objects a) (:init (clear a) (ontable a) (handempty)))",
     "malformed PDDL problem: it ends before the definition is complete (it has no (:goal ...) section)"),
    ("(define (problem p) (:domain blocksworld) (:objects a)) (:init (clear a)) (:goal (clear a)))",
     "malformed PDDL problem: Unexpected token: (. (the definition's parentheses close at line 1, column 55, and text "
     "follows: a ')' too many before it?)"),
], ids=["empty", "comment", "define", "truncated", "no-goal", "extra-parenthesis"])
def test_malformed_problems_are_one_line_errors_in_every_command(command, text, message, tmp_path, capsys):
    path = tmp_path / "bad.pddl"
    path.write_text(text)
    assert main([command, "blocksworld", str(path)]) == 2
    assert f"{path}: {message}" in one_line_error(capsys, command)


def test_solve_names_its_time_limit_flag(problem, capsys):
    assert main(["solve", "blocksworld", str(problem), "--time-limit", "-1"]) == 2
    assert "error: --time-limit must be a number of seconds > 0, got -1" in one_line_error(capsys, "solve")


def test_a_domain_and_problem_given_the_wrong_way_round_say_so(problem, capsys):
    from tnlib.planning.pddl import resolve_domain

    domain = resolve_domain("blocksworld")
    assert main(["plan", str(problem), str(domain)]) == 2
    line = one_line_error(capsys, "plan")
    assert f"{problem}: malformed PDDL domain" in line and "it is a problem file: the domain comes first" in line
    assert main(["solve", "blocksworld", str(domain)]) == 2
    line = one_line_error(capsys, "solve")
    assert f"{domain}: malformed PDDL problem" in line and "it is a domain file: the domain comes first" in line


def test_an_empty_domain_file_says_it_is_empty(problem, tmp_path, capsys):
    domain = tmp_path / "domain.pddl"
    domain.write_text("\n")
    assert main(["plan", str(domain), str(problem)]) == 2
    assert f"{domain}: the domain file is empty" in one_line_error(capsys, "plan")


# -- training and evaluation -----------------------------------------------------------------------------------


def test_an_unknown_domain_leaves_no_run_folder(tmp_path, capsys):
    assert main(["train", "--domain", "sokoban", "--out", str(tmp_path / "runs"), "--no-progress"]) == 2
    assert "sokoban" in one_line_error(capsys, "train")
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("argument, message", [
    ("foo=3", "--model-args: nlm (NLM) takes no argument 'foo' (it takes breadth, depth, width, prune, layout, "
              "exclude_self)"),
    ("layout=paper", "--model-args: nlm's layout must be one of authors, paper-text (default 'authors'), got 'paper'"),
    ("depth=x", "--model-args: nlm's depth must be a whole number (default 5), got 'x'"),
    ("depth=2.5", "--model-args: nlm's depth must be a whole number"),
    ("prune=1", "--model-args: nlm's prune must be true or false"),
    ("input_channels=[1]", "takes no argument 'input_channels'"),  # from the data, not the user
])
def test_train_checks_model_arguments_against_the_constructor(argument, message, tmp_path, capsys):
    assert main(["train", "--domain", "ferry", "--steps", "1", "--model-arg", argument,
                 "--out", str(tmp_path / "runs"), "--no-progress"]) == 2
    assert message in one_line_error(capsys, "train")
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("argv, message", [
    (["train", "--lr", "-1"], "--lr must be > 0, got -1.0"),  # the flag typed, not TrainConfig's learning_rate
    (["train", "--eval-batch-size", "0"], "--eval-batch-size must be an integer >= 1, got 0"),
    (["sweep", "--steps", "0", "--dry-run"], "--steps must be an integer >= 1, got 0"),
    (["sweep", "--seeds", "-1", "--dry-run"], "--seeds must be whole numbers >= 0, got -1"),
    (["sweep", "--preset", "paper-scale", "--trained-only"], "--trained-only plans the runs already trained and "
     "tested, and this sweep does not plan (its preset's or --no-plan): add --plan"),
])
def test_validation_errors_name_the_flag(argv, message, tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path / "runs")]) == 2
    assert one_line_error(capsys, argv[0]) == f"tnlib {argv[0]}: error: {message}\n"
    assert not (tmp_path / "runs").exists()


def test_train_help_shows_every_default(capsys):
    from tnlib.cli import build_parser

    train = build_parser("train")._subparsers._group_actions[0].choices["train"]
    flags = [a for a in train._actions if a.option_strings and a.nargs != 0 and a.metavar != "KEY=VALUE"
             and a.help != argparse.SUPPRESS]  # (an older spelling taken but not shown: --data)
    assert len(flags) == 25  # every TrainConfig field taking a value (not --model-args, --no-progress)
    undocumented = [a.option_strings[0] for a in flags if "default" not in (a.help or "")]
    assert not undocumented
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--steps STEPS training steps (default: 40000, the paper's: hours on a CPU" in help_text
    assert "--batch-size BATCH_SIZE (default: 256)" in help_text and "--seed SEED (default: 0)" in help_text


def test_train_prints_its_estimated_cost_before_training(tmp_path, monkeypatch, capsys):
    import tnlib.progress

    def interrupt(*args, **kwargs):  # the first step's progress display: stop there, as a user's Ctrl-C would
        raise KeyboardInterrupt

    monkeypatch.setattr(tnlib.progress, "progress", interrupt)
    # the default 40,000 steps: the estimate, once the settings and the data are checked, then the first step
    assert main(["train", "--domain", "gripper", "--device", "cpu", "--out", str(tmp_path / "runs")]) == 130
    assert capsys.readouterr().err.splitlines() == [
        "tnlib train: 40,000 steps (the default, the paper's 40,000) at batch 256 of nlm on gripper: about 1h20m on "
        "2 CPU cores (0.12 s per step: the time measured on the small profile's gripper at batch 64, scaled to batch "
        "256); --steps N changes it (e.g. --steps 2000)",
        "tnlib train: interrupted"]
    from tnlib.cli.learning import cost_estimate
    from tnlib.learning.training import TrainConfig

    # STRIPS-HGN on data/paper has no measured CPU step time: the 16-object bound, 3.4 s x 2000 = 1h53m; a few
    # steps (tests, quick looks) print nothing, nor does a run of linear regression under a minute
    paper_hgn = {"model": "hgn", "domain": "ferry", "steps": 2000, "device": "cpu", "data_root": "data/paper"}
    assert ("2,000 steps (--steps) at batch 256 of hgn on ferry: about 1h53m on 2 CPU cores (3.4 s per step at batch "
            "256 with 16 objects; smaller instances train faster)") in cost_estimate(TrainConfig(**paper_hgn))
    assert cost_estimate(TrainConfig(steps=100, device="cpu")) is None
    assert "2,000 steps (--steps, 1,000 left from step 1,000) at batch 256 of hgn on ferry: about 56m40s" in (
        cost_estimate(TrainConfig(**paper_hgn), start_step=1000))
    assert cost_estimate(TrainConfig(model="linear", steps=10_000, device="cpu")) is None  # 32 s
    assert "about 2m08s on 2 CPU cores" in cost_estimate(TrainConfig(model="linear", device="cpu"))


def test_the_cost_estimate_on_a_gpu_uses_the_step_time_measured_there(monkeypatch):
    import torch

    import tnlib.device
    from tnlib.cli.learning import cost_estimate
    from tnlib.learning.training import TrainConfig
    from tnlib.learning.training_cost import MEASURED_GPU, MEASURED_GPU_STEP_SECONDS
    from tnlib.progress import duration

    monkeypatch.setattr(tnlib.device, "default_device", lambda prefer=None: torch.device("cuda"))
    seconds = MEASURED_GPU_STEP_SECONDS["paper"][64]["nlm"]["visitall"]
    on_paper = cost_estimate(TrainConfig(domain="visitall", steps=40_000, batch_size=64, data_root="data/paper"))
    assert f"on a GPU ({seconds} s per step measured on {MEASURED_GPU} at this batch size)" in on_paper
    assert f"about {duration(seconds * 40_000)} on a GPU" in on_paper
    # data/small (not measured on a GPU) and a batch size not measured keep the paper's V100 time
    for config in (TrainConfig(domain="visitall", steps=40_000, batch_size=64, data_root="data/small"),
                   TrainConfig(domain="visitall", steps=40_000, batch_size=32, data_root="data/paper")):
        assert "the paper's V100 time" in cost_estimate(config)


def test_device_names_are_checked_where_they_are_given(tmp_path, problem, capsys):
    from tnlib.device import default_device
    from tnlib.learning.training import TrainConfig

    for bad in ("tpu", "xla", "cuda:x"):
        with pytest.raises(ValueError, match=f"device must be one of cpu, cuda, mps .*got '{bad}'"):
            TrainConfig(device=bad)
        with pytest.raises(ValueError, match="device must be"):
            default_device(bad)
    assert TrainConfig(device="cuda:1").device == "cuda:1"  # whether the machine has it is checked at run time
    assert main(["train", "--domain", "ferry", "--steps", "1", "--device", "tpu", "--out", str(tmp_path / "runs"),
                 "--no-progress"]) == 2
    assert "device must be" in one_line_error(capsys, "train")
    assert main(["sweep", "--device", "tpu", "--dry-run"]) == 2
    assert "device must be" in one_line_error(capsys, "sweep")


def test_evaluate_says_when_a_file_is_not_a_checkpoint(problem, tmp_path, capsys):
    assert main(["evaluate", str(problem)]) == 2
    assert f"{problem}: not a tnlib checkpoint (not a complete zip archive" in one_line_error(capsys, "evaluate")
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    assert main(["evaluate", str(empty)]) == 2
    line = one_line_error(capsys, "evaluate")
    assert "not a tnlib checkpoint" in line and "give a checkpoint a run folder holds" in line
    # in a run folder the same bytes are that run's checkpoint cut short: the remedy says how to make it again
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text("{}")
    (run / "best.pt").write_bytes(b"PK\x03\x04 cut short")
    assert main(["evaluate", str(run / "best.pt")]) == 2
    line = one_line_error(capsys, "evaluate")
    # git first (a committed run's weights are there), training again only where they are not
    assert line.index(f"git checkout -- {run / 'best.pt'}") < line.index("tnlib restore-weights")
    assert line.index("tnlib restore-weights") < line.index("delete the run folder and train it again")


def test_a_torch_file_of_another_kind_is_named_with_what_it_holds(tmp_path, capsys):
    torch.save({"weights": 1}, tmp_path / "other.pt")
    torch.save([1, 2], tmp_path / "list.pt")
    assert main(["evaluate", str(tmp_path / "other.pt")]) == 2
    line = one_line_error(capsys, "evaluate")
    assert "not a tnlib checkpoint (a torch file without tnlib's format record; tnlib's are of format" in line
    assert main(["evaluate", str(tmp_path / "list.pt")]) == 2
    assert "not a tnlib checkpoint (a saved list; tnlib's are of format" in one_line_error(capsys, "evaluate")


def test_a_run_folder_without_its_weights_says_where_they_are_and_how_to_bring_them_back(tmp_path, problem, capsys):
    run = tmp_path / "results" / "blocksworld-nlm-TN-learn-ff-llmcut-s0"
    run.mkdir(parents=True)
    (run / "config.json").write_text("{}")
    restore = f"`tnlib restore-weights {tmp_path / 'results'}` writes them back"
    assert main(["evaluate", str(run)]) == 2
    line = one_line_error(capsys, "evaluate")
    assert f"no checkpoint at {run / 'best.pt'}" in line and restore in line and "not in git" not in line
    assert main(["plan", "blocksworld", str(problem), "--model", str(run)]) == 2
    line = one_line_error(capsys, "plan")
    assert f"--model {run}: no checkpoint at {run / 'best.pt'}" in line and restore in line
    not_a_run = tmp_path / "somewhere"
    not_a_run.mkdir()
    assert main(["plan", "blocksworld", str(problem), "--model", str(not_a_run)]) == 2
    assert "a folder that is not a run folder (no config.json, no best.pt)" in one_line_error(capsys, "plan")


def test_test_metrics_without_their_run_config_name_the_missing_file(tmp_path, capsys):
    runs = tmp_path / "runs"
    metrics = {"domain": "ferry", "model": "nlm", "distribution": "TN", "sigma": "learn", "residual": "ff",
               "lower_bound": "lmcut", "upper_bound": "none", "seed": 0, "split": "test", "states": 10,
               "checkpoint_step": 100, "mse": 1.0, "mse_clip": None, "nll": 2.0, "mse_ff": 3.0, "mse_lmcut": 4.0}
    for seed in (0, 1):  # seed 1 keeps its config.json, so that the folder holds a run folder to render
        run = runs / f"ferry-nlm-TN-learn-ff-llmcut-s{seed}"
        run.mkdir(parents=True)
        (run / "metrics-test.json").write_text(json.dumps({**metrics, "seed": seed}))
        (run / "config.json").write_text(json.dumps(TrainConfig(domain="ferry", seed=seed).to_dict()))
    run = runs / "ferry-nlm-TN-learn-ff-llmcut-s0"
    (run / "config.json").unlink()
    with pytest.raises(DamagedFile) as error:
        collect_results(runs)
    assert f"{run / 'config.json'} is missing beside the run's metrics" in str(error.value)
    assert main(["report", str(runs), "--out", str(tmp_path / "report")]) == 2
    line = one_line_error(capsys, "report")
    assert f"{run / 'config.json'} is missing" in line and f"git checkout -- {run / 'config.json'}" in line


def test_planning_records_without_their_run_config_name_the_missing_file(tmp_path):
    run = tmp_path / "runs" / "ferry-nlm-TN-learn-ff-llmcut-s0"
    run.mkdir(parents=True)
    (run / "planning-TN.jsonl").write_text("")
    with pytest.raises(DamagedFile) as error:
        collect_planning(tmp_path / "runs")
    assert f"{run / 'config.json'} is missing beside the run's planning records" in str(error.value)
    assert f"git checkout -- {run / 'config.json'}" in str(error.value)


def test_a_run_folder_a_fresh_clone_lacks_is_named_with_how_to_make_one(tmp_path, capsys):
    how = ("run folders are not in git, so a fresh clone has none: `tnlib sweep --preset small` or `make reproduce` "
           "trains runs/small/, `tnlib train` one run into runs/")
    missing = tmp_path / "runs" / "ferry-nlm-TN-learn-ff-llmcut-s0"
    assert main(["evaluate", str(missing)]) == 2
    error = one_line_error(capsys, "evaluate")
    assert error == f"tnlib evaluate: error: no run folder or checkpoint at {missing} ({how})\n"
    report = ["report", str(tmp_path / "runs"), "--out", str(tmp_path / "reports")]
    assert main(report) == 2
    assert one_line_error(capsys, "report").endswith(f"nothing to render (no such folder; {how})\n")
    (tmp_path / "runs").mkdir()  # a folder that is there but holds no run: no word of clones
    assert main(report) == 2
    assert one_line_error(capsys, "report").endswith("(a folder with a config.json): nothing to render\n")


def test_evaluate_table_without_metrics_is_an_error_not_an_empty_table(tmp_path, capsys):
    assert main(["evaluate", "--table", str(tmp_path / "missing")]) == 2
    assert "missing: no such folder" in one_line_error(capsys, "evaluate")
    assert main(["evaluate", "--table", str(tmp_path)]) == 2
    assert "no test metrics of best.pt checkpoints" in one_line_error(capsys, "evaluate")
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics-test.json").write_text(json.dumps(dict(
        model="nlm", lower_bound="lmcut", domain="ferry", distribution="TN", sigma="learn", residual="ff", mse=1.0,
        nll=1.0, mse_ff=2.0, mse_lmcut=3.0)))
    (run / "config.json").write_text(json.dumps(TrainConfig(domain="ferry").to_dict()))
    assert main(["evaluate", "--table", str(tmp_path), "--model", "foo"]) == 2
    assert "no metrics of model 'foo' with lower bound 'lmcut' (found: --model nlm --lower-bound lmcut)" in \
        one_line_error(capsys, "evaluate")
    assert main(["evaluate", "--table", str(tmp_path)]) == 0
    assert "| ferry | MSE | 2.00 | 3.00 |" in capsys.readouterr().out


def test_reproduce_only_with_no_matching_step_lists_the_steps(capsys):
    assert main(["reproduce", "--only", "xyz"]) == 2
    err = one_line_error(capsys, "reproduce")
    assert "no step's name contains 'xyz'" in err and "truncated normal accuracy and speed" in err


def test_data_generate_mentions_unfilled_slots_only_when_there_are_some(tmp_path, monkeypatch, capsys):
    import tnlib.cli.data as data_cli
    from types import SimpleNamespace

    counts = dict(instances=3, states=9, failed=0, retried=0, duplicates_rejected=0)
    report = SimpleNamespace(skipped=[], solves=3, reused_solves=0, wall_seconds=1.0, splits={
        "gripper/train": {**counts, "unfilled": 0}, "gripper/val": {**counts, "unfilled": 2}})
    monkeypatch.setattr(data_cli, "generate_dataset", lambda *args, **kwargs: report)
    assert main(["data", "generate", "--domain", "gripper", "--out", str(tmp_path), "--quiet"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("duplicate attempts rejected") and "unfilled" not in out[0]
    assert out[1].endswith("duplicate attempts rejected, 2 slots unfilled (cell exhausted)")


# -- the truncated normal's arguments -------------------------------------------------------------------------


def truncated_normal_arguments(low: float, high: float, dtype=torch.float32) -> dict:
    return {"loc": torch.zeros(3, dtype=dtype), "scale": torch.ones(3, dtype=dtype),
            "low": torch.full((3,), low, dtype=dtype), "high": torch.full((3,), high, dtype=dtype)}


@pytest.mark.parametrize("replaced, message", [
    (dict(scale=torch.ones(2)), r"the shape of scale, \[2\], does not broadcast with those before it \(loc \[3\]\)"),
    (dict(loc=torch.zeros(3, 1), scale=torch.ones(2), low=torch.zeros(1), high=torch.ones(4)),
     r"the shape of high, \[4\], does not broadcast with those before it \(loc \[3, 1\], scale \[2\], low \[1\]\)"),
], ids=["scale", "high"])
def test_truncated_normal_names_the_argument_whose_shape_does_not_broadcast(replaced, message):
    with pytest.raises(ValueError, match=f"^TruncatedNormal: {message}"):
        TruncatedNormal(**{**truncated_normal_arguments(0.0, 2.0), **replaced})
    broadcast = TruncatedNormal(torch.zeros(3, 1), torch.ones(2), torch.zeros(1), torch.full((1,), 2.0))
    assert broadcast.mean.shape == (3, 2)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("low, high", [(0.0, 2.0), (-1.0, 1.0), (0.0, math.inf)],
                         ids=["bounded", "symmetric", "one-sided"])
def test_truncated_normal_refuses_half_precision_when_constructed(dtype, low, high):
    name = str(dtype).removeprefix("torch.")
    half = truncated_normal_arguments(low, high, dtype)
    with pytest.raises(TypeError, match=f"^TruncatedNormal: loc is {name}; it computes in float32 or float64 only: "
                                        r"convert the arguments with \.float\(\)"):
        TruncatedNormal(**half)
    with pytest.raises(TypeError, match=f"^TruncatedNormal: high is {name}"):
        TruncatedNormal(**{**truncated_normal_arguments(low, high), "high": half["high"]})
    # the remedy it names: the arguments converted compute as float32 ones do
    converted = TruncatedNormal(**{key: value.float() for key, value in half.items()})
    assert torch.equal(converted.mean, TruncatedNormal(**truncated_normal_arguments(low, high)).mean)


@pytest.mark.parametrize("replaced, message", [
    (dict(loc=torch.zeros(3, dtype=torch.complex64)), "loc is complex; the distribution is over the reals"),
    (dict(scale=1j), "scale is complex"),
    (dict(low=torch.zeros(3, dtype=torch.bool)), "low is a bool; give real numbers"),
    (dict(high=True), "high is a bool"),
], ids=["complex tensor", "complex number", "bool tensor", "bool"])
def test_truncated_normal_refuses_complex_and_bool_arguments(replaced, message):
    with pytest.raises(TypeError, match=f"^TruncatedNormal: {message}"):
        TruncatedNormal(**{**truncated_normal_arguments(0.0, 2.0), **replaced})


@pytest.mark.parametrize("method", ["log_prob", "cdf", "icdf"])
@pytest.mark.parametrize("value", [torch.full((3,), 0.5 + 0.5j), 0.5j], ids=["complex tensor", "complex number"])
def test_truncated_normal_refuses_a_complex_value_rather_than_drop_its_imaginary_part(method, value):
    distribution = TruncatedNormal(**truncated_normal_arguments(0.0, 2.0))
    with pytest.raises(TypeError, match=f"^TruncatedNormal.{method}: the value is complex; the distribution is over "
                                        "the reals"):
        getattr(distribution, method)(value)
    assert getattr(distribution, method)(torch.full((3,), 0.5)).shape == (3,)  # a real one is computed


# -- sweeps and the experiments notebook's parameters ------------------------------------------------------------


@pytest.mark.parametrize("params, message", [
    (dict(model_args={"nlm": 3}), "model_args['nlm']: nlm's arguments must be a mapping"),
    (dict(model_args={"linear": {"foo": 1}}), "model_args['linear']: linear (LinearRegression) takes no argument 'foo'"),
    (dict(model_args={"mlp": {}}), "model_args['mlp']: unknown model 'mlp'"),
    (dict(model_args=[1]), "model_args must map model names"),
    (dict(seeds="0"), "seeds: expected a whole number >= 0 or a list of them"),
    (dict(seeds=[-1]), "seeds must be whole numbers >= 0, got -1"),
    (dict(seeds=[]), "seeds: name at least one"),
    (dict(domains=3), "domains: expected a name or a list of names, got 3"),
    (dict(domains=[]), "domains: name at least one"),
    (dict(data_root="/no/such/folder"), "data_root: no such folder /no/such/folder"),
    (dict(seeds=[0, 1, 0]), "seeds: 0 is named twice; name each value once"),
    (dict(domains=["ferry", "ferry"]), "domains: 'ferry' is named twice"),
    (dict(configs=["learn/ff", "learn/ff"]), "configs: 'learn/ff' is named twice"),
    (dict(distributions=["TN", "TN"]), "distributions: 'TN' is named twice"),
])
def test_sweep_parameters_are_checked_up_front(params, message):
    with pytest.raises(ValueError) as error:
        Sweep.from_parameters(preset="small", **params)
    assert message in str(error.value)


@pytest.mark.skipif(torch.cuda.is_available(), reason="the refusal needs a machine without CUDA")
def test_a_runs_refusal_inside_a_sweep_is_one_line_as_in_train(tmp_path, capsys):
    argv = ["sweep", "--preset", "small", "--models", "linear", "--domains", "gripper", "--configs", "learn/ff",
            "--distributions", "N", "--seeds", "0", "--steps", "10", "--device", "cuda", "--out", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err  # the sweep's banner, then the error
    assert "Traceback" not in err and err.splitlines()[-1] == (
        "tnlib sweep: error: device 'cuda' was requested but torch.cuda.is_available() is False")


def test_cli_sweep_checks_model_args_before_it_starts(capsys):
    assert main(["sweep", "--model-args", "nlm=3", "--dry-run"]) == 2
    assert "model_args['nlm']" in one_line_error(capsys, "sweep")
    assert main(["sweep", "--models", "linear", "--model-args", 'linear={"foo": 1}', "--dry-run"]) == 2
    assert "takes no argument 'foo'" in one_line_error(capsys, "sweep")


def test_one_name_or_seed_stands_for_a_list_of_one():
    sweep = Sweep.from_parameters(preset="small", domains="ferry", models="linear", configs="learn/ff",
                                  distributions="TN", seeds=3)
    assert (sweep.domains, sweep.models, sweep.configs, sweep.distributions, sweep.seeds) == (
        ["ferry"], ["linear"], [("learn", "ff")], ["TN"], [3])
    assert Sweep.from_parameters(preset="small", seeds=0).seeds == [0]


def test_a_missing_dataset_names_the_folder_once(tmp_path):
    sweep = Sweep.from_parameters(preset="small", data_root=str(tmp_path))
    with pytest.raises(DatasetError) as error:
        sweep.check_data()
    assert f"no dataset at {tmp_path} (no manifest.json there or in {tmp_path / 'small'})" in str(error.value)
    assert "small/small" not in str(error.value)


def test_a_missing_dataset_points_at_the_dataset_this_checkout_ships(tmp_path, monkeypatch):
    """$TNLIB_DATA left set, or a data root given by hand, is the usual cause; generating is the last resort."""
    shipped = Path(__file__).resolve().parents[2] / "data" / "small"
    monkeypatch.setenv("TNLIB_DATA", str(tmp_path))
    with pytest.raises(DatasetError) as error:
        Sweep.from_parameters(preset="small").check_data()
    message = str(error.value)
    assert f"$TNLIB_DATA is set; unset it to read the small dataset this checkout ships in {shipped}" in message
    assert message.index("$TNLIB_DATA") < message.index("tnlib data generate")
    monkeypatch.delenv("TNLIB_DATA")
    with pytest.raises(DatasetError) as error:
        Sweep.from_parameters(preset="small", data_root=str(tmp_path)).check_data()
    assert f"this checkout ships the small dataset in {shipped} (leave the data root unset" in str(error.value)


def test_report_selection_must_be_a_positive_number_of_seconds(tmp_path, capsys):
    for value in ("-3", "0", "nan", "soon"):
        with pytest.raises(SystemExit):
            main(["report", str(tmp_path), "--out", str(tmp_path / "out"), "--selection", value])
        assert "argument --selection: a number of seconds" in capsys.readouterr().err


def test_baselines_without_a_dataset_say_so_in_one_line(tmp_path, capsys):
    missing = tmp_path / "missing"
    assert main(["baselines", str(missing), "--out", str(tmp_path / "out")]) == 2
    assert f"no dataset at {missing}" in one_line_error(capsys, "baselines")


def test_notebook_folders_are_relative_to_the_notebooks_folder_from_any_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # papermill started from elsewhere, e.g. the repository root
    # (run=True checks the shipped data/small; run=False would want runs in the results folder)
    sweep, reports = check_notebook_parameters(preset="small", run=True, reports_dir="../reports")
    repo = NOTEBOOKS.parent
    assert Path(sweep.out_dir) == repo / "runs" / "small" and reports == repo / "reports"
    sweep, reports = check_notebook_parameters(preset="small", results_dir="../runs/x", run=True,
                                               data_root="../data")
    assert Path(sweep.out_dir) == repo / "runs" / "x" and reports is None
    assert sweep.dataset_path() == repo / "data" / "small"
    absolute = tmp_path / "elsewhere"
    sweep, _ = check_notebook_parameters(preset="small", results_dir=str(absolute), run=True)
    assert Path(sweep.out_dir) == absolute
    assert not list(tmp_path.iterdir())  # nothing written anywhere by checking


@pytest.mark.parametrize("params, error, message", [
    (dict(run="maybe"), ValueError, "run must be True or False, got 'maybe'"),
    # papermill's -p passes "false" on as text: the message says how to write the boolean
    (dict(run="false"), ValueError, "run must be True or False, got 'false' (papermill: -p run False, capitalised)"),
    (dict(scheduler=3), ValueError, "scheduler must be None or a Dask scheduler address"),
    (dict(results_dir=3), ValueError, "results_dir must be a folder path, got 3"),
    (dict(device="tpu"), ValueError, "device must be one of"),
    (dict(data_root="/no/such/folder"), ValueError, "data_root: no such folder"),
    (dict(domains="ferry", data_root="{tmp}"), DatasetError, "no dataset at"),  # run=True checks the data
    # run=False on a results folder without runs (a fresh clone: runs/ is not in git) says how to make them
    (dict(run=False), MissingRuns, "holds none of this sweep's 32 runs (no run folder with test metrics; runs are "
     "not in git, a fresh clone has none): set run = True to train them (papermill: -p run True), or run "
     "`make reproduce`"),
])
def test_notebook_parameters_fail_in_the_check(params, error, message, tmp_path):
    params = {k: (v.format(tmp=tmp_path) if isinstance(v, str) else v) for k, v in params.items()}
    with pytest.raises(error) as failure:
        check_notebook_parameters(**{"preset": "small", "results_dir": str(tmp_path / "runs"), **params})
    assert message in str(failure.value)
    assert not (tmp_path / "runs").exists()


def test_reading_results_needs_one_run_of_the_sweep_with_test_metrics(tmp_path):
    params = dict(preset="small", results_dir=str(tmp_path), run=False, domains="gripper", models="linear",
                  configs="learn/ff", seeds=0)
    run = tmp_path / "gripper-linear-TN-learn-ff-llmcut-s0"
    run.mkdir()
    (run / "config.json").write_text("{}")  # a run folder whose training never finished: nothing to tabulate
    with pytest.raises(MissingRuns, match=r"holds none of this sweep's 2 runs .*: set run = True to train them "
                                          r"\(papermill: -p run True\)$"):  # not the small preset: no make reproduce
        check_notebook_parameters(**params)
    (run / "metrics-test.json").write_text("{}")
    sweep, _ = check_notebook_parameters(**params)
    assert Path(sweep.out_dir) == tmp_path


def test_banner_names_the_main_table_model_and_an_honest_cpu_estimate():
    linear = describe_sweep(Sweep.from_parameters(models=["linear"]))
    assert ("not run   the paper's nlm model (its main tables) and hgn model (its appendix tables): add --models "
            "linear nlm hgn") in linear
    small = describe_sweep(Sweep.preset("small"))
    assert "CPU-hours on 2 cores if the instances had 16 objects" in small
    assert "an upper bound for data/small" in small
    assert "upper bound" not in describe_sweep(Sweep.from_parameters(data_profile="paper"))


def test_a_node_budget_for_exact_solves_needs_exact(tmp_path, capsys):
    assert main(["data", "plan-set", str(tmp_path), "--domain", "gripper", "--exact-max-nodes", "5"]) == 2
    assert "--exact-max-nodes bounds the exact solves: give it with --exact" in one_line_error(capsys, "data")
