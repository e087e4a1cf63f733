"""Every file tnlib writes, cut short or with bytes changed, then read by the commands that read it: each case either
recovers (the damaged record dropped and redone, a damaged checkpoint replaced by the one before it, a derived file
computed again) or stops with one line that names the file and says what to do. No traceback, nothing complete
lost. The README's reliability section lists the outcomes."""
from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

from tnlib import cli
from tnlib.errors import DamagedFile
from tnlib.files import append_jsonl, atomic_write_text, read_json_lines, read_jsonl

DATA_SMALL = Path(__file__).resolve().parents[2] / "data" / "small"
RUN = "gripper-linear-N-learn-ff-llmcut-s0"
SWEEP = ["sweep", "--preset", "small", "--models", "linear", "--domains", "gripper", "--configs", "learn/ff",
         "--distributions", "N", "--seeds", "0", "--eval-every", "10", "--plan-instances", "2",
         "--max-evaluations", "200", "--workers", "1", "--data-root", str(DATA_SMALL)]
# What each file of a results folder does when damaged, as the README's table says: "recovers" (the command
# succeeds), or "one line" (it may stop with one line naming the file, when what was lost cannot be recomputed).
RESULTS_FILES = {
    "sweep.json": "recovers",
    "baseline-gripper-ff.jsonl": "recovers",
    f"{RUN}/config.json": "recovers",
    f"{RUN}/data.json": "recovers",
    f"{RUN}/curves.jsonl": "recovers",
    f"{RUN}/last.pt": "recovers",
    f"{RUN}/last-previous.pt": "recovers",
    f"{RUN}/machines.jsonl": "recovers",
    f"{RUN}/best.pt": "one line",
    f"{RUN}/best-nll.pt": "one line",
    f"{RUN}/metrics-test.json": "recovers",
    f"{RUN}/metrics-test-best-nll.json": "recovers",
    f"{RUN}/planning-default.jsonl": "recovers",
    f"{RUN}/planning-clip.jsonl": "recovers",
}
DAMAGES = ("truncated", "bytes flipped")


def damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    middle = len(data) // 2
    if how == "truncated":
        path.write_bytes(data[:middle])
    else:
        path.write_bytes(data[:middle] + bytes(b ^ 0xFF for b in data[middle:middle + 16]) + data[middle + 16:])


def run_cli(argv: list[str]) -> tuple[int, list[str]]:
    """Exit code and stderr lines of one command run in this process (an exception escaping it fails the test)."""
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, err.getvalue().splitlines()


def assert_one_line_naming(code: int, lines: list[str], name: str) -> None:
    errors = [line for line in lines if ": error: " in line]
    assert code == 2 and len(errors) == 1, lines
    assert name in errors[0] and "Traceback" not in "\n".join(lines), lines


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """A results folder of one tiny sweep cell (linear regression, 40 steps, 2 plan instances): every file a sweep
    writes."""
    out = tmp_path_factory.mktemp("torn") / "results"
    code, lines = run_cli(SWEEP + ["--steps", "40", "--out", str(out)])
    assert code == 0, lines
    assert set(RESULTS_FILES) <= {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    return out


@pytest.mark.parametrize("how", DAMAGES)
@pytest.mark.parametrize("name", sorted(RESULTS_FILES))
def test_a_damaged_results_file_is_recovered_or_named_in_one_line(results, tmp_path, name, how):
    out = tmp_path / "results"
    shutil.copytree(results, out)
    damage(out / name, how)
    code, lines = run_cli(SWEEP + ["--steps", "60", "--out", str(out)])  # resumes the run: 20 more steps
    if code == 0:
        # nothing else lost: the curve runs on to step 60 (without a gap, but for records in a damaged curves file
        # itself, which are said to be lost), the plans and metrics are there
        steps = [record["step"] for record in read_jsonl(out / RUN / "curves.jsonl")]
        lost = sorted(set(range(10, 70, 10)) - set(steps))
        assert steps == sorted(steps) and steps[-1] == 60, steps
        if lost:
            assert name.endswith("curves.jsonl") and any("curves.jsonl is damaged" in line for line in lines), lines
        assert len(read_jsonl(out / RUN / "planning-default.jsonl")) == 2
        assert json.loads((out / RUN / "metrics-test.json").read_text())["mse"] >= 0
        code, lines = run_cli(["report", str(out), "--out", str(tmp_path / "report")])
        assert code == 0, lines
    else:
        assert RESULTS_FILES[name] == "one line", f"{name} {how}: expected to recover, got {lines}"
        assert_one_line_naming(code, lines, Path(name).name)


# Records of another shape: valid JSON, but not what tnlib wrote there (an edit, a line appended by another program,
# a file of another kind copied over it). (file, its new text, or the line appended to it)
WRONG_SHAPES = {
    "configuration of garbage": (f"{RUN}/config.json", "garbage", None),
    "configuration a list": (f"{RUN}/config.json", "[1, 2, 3]", None),
    "metrics of other types": (f"{RUN}/metrics-test.json", '{"mse": "NaN?", "nll": [1]}', None),
    "planning line of another shape": (f"{RUN}/planning-default.jsonl", None, '{"problem": 7}'),
    "baseline line of another shape": ("baseline-gripper-ff.jsonl", None, '{"problem": 7}'),
}


@pytest.mark.parametrize("case", sorted(WRONG_SHAPES))
def test_a_record_of_another_shape_is_named_by_report_and_written_again_by_a_sweep(results, tmp_path, case):
    name, text, line = WRONG_SHAPES[case]
    out = tmp_path / "results"
    shutil.copytree(results, out)
    if text is not None:
        (out / name).write_text(text)
    else:
        append_jsonl(out / name, json.loads(line))
    report = ["report", str(out), "--out", str(tmp_path / "report")]
    code, lines = run_cli(report)
    assert_one_line_naming(code, lines, name)
    # the sweep that made the folder, again: its run is trained, so it only reads the record, and writes it again
    code, lines = run_cli(SWEEP + ["--steps", "40", "--out", str(out)])
    assert code == 0 and any(f"{Path(name).name} is damaged" in line for line in lines), lines
    assert len(read_jsonl(out / RUN / "planning-default.jsonl")) == 2
    code, lines = run_cli(report)
    assert code == 0, lines


def cut_mid_line(path: Path) -> None:
    """Cut ``path`` in the middle of its last line but one: the file ends in a line cut short."""
    data = path.read_bytes()
    ends = [i for i, byte in enumerate(data) if byte == ord("\n")]
    path.write_bytes(data[:ends[-2] + 1 + (ends[-1] - ends[-2]) // 2])


# Records cut mid-line: the file, and the words the report's header and the command's output give its loss
CUT_RECORDS = {
    "curves": (f"{RUN}/curves.jsonl", "the validation records of steps 40 are missing"),
    "planning": (f"{RUN}/planning-default.jsonl", "its run's planning counts the 1 instance still readable"),
    "baseline": ("baseline-gripper-ff.jsonl", "the h_FF column and this header's h_FF solves count the 1 instance"),
}


@pytest.mark.parametrize("case", sorted(CUT_RECORDS))
def test_a_report_from_a_record_cut_mid_line_names_it_and_what_it_lost_until_a_sweep_restores_it(results, tmp_path,
                                                                                                  case):
    name, loss = CUT_RECORDS[case]
    out = tmp_path / "results"
    shutil.copytree(results, out)
    cut_mid_line(out / name)
    report = ["report", str(out), "--out", str(tmp_path / "report")]
    code, lines = run_cli(report)
    warnings = [line for line in lines if "warning" in line]
    assert code == 0 and len(warnings) == 1 and name in warnings[0] and loss in warnings[0], lines
    header = (tmp_path / "report" / "planning.md").read_text().split("## Tables")[0]
    assert "**Damaged records**" in header and f"`{name}`: " in header and loss in header, header
    assert "stopped before its configured steps" not in header  # the run trained all its steps
    if case == "planning":  # the run the table leaves out is not said to be planning still
        assert "(still planning, or its record cut short: the header's damaged records name those)" in \
            (tmp_path / "report" / "planning.md").read_text()
    code, lines = run_cli(SWEEP + ["--steps", "40", "--out", str(out)])
    assert code == 0 and any(f"{Path(name).name} is damaged" in line for line in lines), lines
    code, lines = run_cli(report)
    if case == "curves":  # the weights that validation measured are gone: the header still says so
        assert any("run its sweep again" in line for line in lines), lines
        assert loss in (tmp_path / "report" / "planning.md").read_text()
        shutil.rmtree(out / RUN)  # the remedy printed: delete the run folder, run the sweep again
        assert run_cli(SWEEP + ["--steps", "40", "--out", str(out)])[0] == 0
        code, lines = run_cli(report)
    assert code == 0 and not [line for line in lines if "warning" in line], lines
    assert "Damaged records" not in (tmp_path / "report" / "planning.md").read_text()
    timeless = [[{k: v for k, v in record.items() if k != "seconds"} for record in read_jsonl(folder / name)]
                for folder in (out, results)]
    assert timeless[0] == timeless[1]  # the whole record again, as the sweep first wrote it


def test_a_tested_run_without_its_curve_is_named_with_git_as_the_first_remedy(results, tmp_path):
    out = tmp_path / "results"
    shutil.copytree(results, out)
    (out / RUN / "curves.jsonl").unlink()
    code, lines = run_cli(["report", str(out), "--out", str(tmp_path / "report")])
    warnings = [line for line in lines if "warning" in line]
    assert code == 0 and len(warnings) == 1 and "curves.jsonl is damaged: missing from a tested run" in warnings[0]
    assert warnings[0].index("`git checkout` of the file restores it") < warnings[0].index("run its sweep again")
    header = (tmp_path / "report" / "planning.md").read_text().split("## Tables")[0]
    assert f"`{RUN}/curves.jsonl`: missing from a tested run" in header, header


def test_the_evaluate_command_a_damaged_metrics_file_names_writes_it_again(results, tmp_path):
    out = tmp_path / "results"
    shutil.copytree(results, out)
    (out / RUN / "metrics-test-best-nll.json").write_text('{"mse": "NaN?", "nll": [1]}')
    code, lines = run_cli(["report", str(out), "--out", str(tmp_path / "report")])
    assert_one_line_naming(code, lines, "metrics-test-best-nll.json")
    command = re.search(r"`tnlib (evaluate [^`]*)`", lines[-1]).group(1)
    assert command.endswith(" --checkpoint best-nll.pt"), command
    code, lines = run_cli(shlex.split(command))
    assert code == 0, lines
    code, lines = run_cli(["report", str(out), "--out", str(tmp_path / "report")])
    assert code == 0, lines


@pytest.mark.parametrize("how", DAMAGES)
@pytest.mark.parametrize("name", ["best.pt", "best-nll.pt"])
def test_commands_given_a_damaged_checkpoint_name_it_in_one_line(results, tmp_path, name, how):
    run = tmp_path / RUN
    shutil.copytree(results / RUN, run)
    damage(run / name, how)
    code, lines = run_cli(["evaluate", str(run / name)])
    assert_one_line_naming(code, lines, name)


def test_a_damaged_last_checkpoint_resumes_from_the_one_before_it_with_the_same_weights(results, tmp_path):
    import torch

    straight, damaged = tmp_path / "straight", tmp_path / "damaged"
    for out in (straight, damaged):
        shutil.copytree(results, out)
    damage(damaged / RUN / "last.pt", "bytes flipped")
    for out in (straight, damaged):
        code, lines = run_cli(SWEEP + ["--steps", "60", "--out", str(out)])
        assert code == 0, lines
    assert any("last.pt is damaged" in line and "last-previous.pt instead" in line for line in lines), lines
    weights = [torch.load(out / RUN / "last.pt", weights_only=False)["model"] for out in (straight, damaged)]
    assert all(torch.equal(weights[0][key], weights[1][key]) for key in weights[0])


def test_an_unwritable_output_is_named_as_given_not_as_a_temporary_file(results, tmp_path):
    blocked = tmp_path / "report" / "accuracy.md"
    blocked.mkdir(parents=True)  # a folder where the report's file goes
    code, lines = run_cli(["report", str(results), "--out", str(tmp_path / "report")])
    assert code == 2 and len(lines) == 1 and str(blocked) in lines[0] and ".tmp" not in lines[0], lines


DATASET_FILES = ["manifest.json", "gripper/manifest.json", "gripper/train.parquet", "gripper/val.parquet",
                 "gripper/domain.pddl"]


@pytest.mark.parametrize("how", DAMAGES)
@pytest.mark.parametrize("name", DATASET_FILES + ["a train problem"])
def test_a_damaged_dataset_file_is_named_by_verify_and_stops_training_in_one_message(tmp_path, name, how):
    root = tmp_path / "small"
    shutil.copytree(DATA_SMALL, root)
    if name == "a train problem":
        name = sorted((root / "gripper" / "problems" / "train").glob("*.pddl"))[0].relative_to(root).as_posix()
    damage(root / name, how)
    code, lines = run_cli(["data", "verify", str(root)])
    assert code == 1 and any(name in line for line in lines) and "Traceback" not in "\n".join(lines), lines
    code, lines = run_cli(["train", "--data", str(root), "--domain", "gripper", "--model", "linear", "--steps", "10",
                           "--out", str(tmp_path / "runs")])
    assert code == 2 and lines[0].startswith("tnlib train: error: ") and any(name in line for line in lines), lines


@pytest.fixture
def interrupted_generation(tmp_path, monkeypatch):
    """A tiny gripper train split whose generation stopped after two solves: its work folder holds their attempt
    files and the split's settings."""
    import tnlib.data.profiles as profiles
    import tnlib.planning.fast_downward as fast_downward
    from dataset_helpers import tiny_profile

    monkeypatch.setitem(profiles.PROFILES, "tiny", tiny_profile())
    real, calls = fast_downward.solve, []

    def stopping(*args, **kwargs):
        if len(calls) == 2:
            raise KeyboardInterrupt  # not recorded: the run stops here, as on Ctrl-C
        calls.append(args)
        return real(*args, **kwargs)

    argv = ["data", "generate", "--domain", "gripper", "--profile", "tiny", "--splits", "train", "--out",
            str(tmp_path / "tiny"), "--quiet"]
    monkeypatch.setattr(fast_downward, "solve", stopping)
    code, _ = run_cli(argv)
    assert code == 130
    monkeypatch.setattr(fast_downward, "solve", real)
    work = tmp_path / "tiny" / "gripper" / ".work" / "train"
    assert len(list((work / "attempts").glob("*.json"))) == 2
    return argv, work


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_attempt_file_is_solved_again(interrupted_generation, tmp_path, how):
    argv, work = interrupted_generation
    attempt = sorted((work / "attempts").glob("*.json"))[0]
    damage(attempt, how)
    code, lines = run_cli(argv)
    assert code == 0 and any(attempt.name in line and "its solve runs again" in line for line in lines), lines
    code, lines = run_cli(["data", "verify", str(tmp_path / "tiny")])
    assert code == 0, lines


@pytest.mark.parametrize("text", ['{"status": 5}', "[1, 2, 3]", '{"seed": 1, "attempt": 0, "status": "solved", '
                                  '"worker_seconds": 1.0}'], ids=["no seed", "a list", "solved without a plan"])
@pytest.mark.parametrize("command", ["status", "generate"])
def test_an_attempt_file_of_another_shape_is_named_and_solved_again(interrupted_generation, tmp_path, command,
                                                                    text):
    argv, work = interrupted_generation
    attempt = sorted((work / "attempts").glob("*.json"))[0]
    attempt.write_text(text)
    code, lines = run_cli(argv if command == "generate" else ["data", "status", str(tmp_path / "tiny")])
    assert code == 0 and any(attempt.name in line and "its solve runs again" in line for line in lines), lines
    assert "Traceback" not in "\n".join(lines)
    if command == "generate":
        code, lines = run_cli(["data", "verify", str(tmp_path / "tiny")])
        assert code == 0, lines


@pytest.mark.parametrize("how", DAMAGES)
def test_damaged_generation_settings_are_named_and_force_starts_over(interrupted_generation, tmp_path, how):
    argv, work = interrupted_generation
    damage(work / "settings.json", how)
    for command in (argv, ["data", "status", str(tmp_path / "tiny")]):
        code, lines = run_cli(command)
        assert_one_line_naming(code, lines, "settings.json")
    assert "--force" in lines[-1]
    code, lines = run_cli(argv + ["--force"])
    assert code == 0, lines


def test_a_torn_last_line_of_a_json_lines_file_is_skipped(tmp_path):
    path = tmp_path / "records.jsonl"
    atomic_write_text(path, '{"step": 1}\n{"step": 2}\n{"st')
    assert read_jsonl(path) == [{"step": 1}, {"step": 2}]
    path.write_bytes(b'{"step": 1}\n\xff\xfe{"step": 2}\n{"step": 3}\n')  # a damaged middle line: dropped alone
    assert read_jsonl(path) == [{"step": 1}, {"step": 3}]
    append_jsonl(path, {"step": 4})  # after whole lines: the next line
    atomic_write_text(path, path.read_text(errors="replace") + '{"st')
    append_jsonl(path, {"step": 5})  # after a torn line: a line of its own, the torn one skipped
    assert read_jsonl(path)[-2:] == [{"step": 4}, {"step": 5}]
    assert path.read_bytes().endswith(b'\n{"st\n{"step": 5}\n')


def test_a_json_lines_reader_counts_the_lines_it_skips_and_tells_a_cut_end_from_a_changed_line(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_bytes(b'{"step": 1}\n{"step": 2}\n{"st')
    found = read_json_lines(path)
    assert found.records == [{"step": 1}, {"step": 2}] and found.cut_end
    assert found.damage() == "its last line (3) is cut short"
    path.write_bytes(b'{"step": 1}\n\xff\xfe\n{"step": 3}\n')
    found = read_json_lines(path)
    assert found.unreadable == (2,) and not found.cut_end and found.damage() == "line 2 of 3 is not JSON"
    path.write_bytes(b'{"step": 1}\n{"step": 2}\n')
    assert read_json_lines(path).damage() is None


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_compressed_records_file_is_named_in_one_line(results, tmp_path, how):
    exported = tmp_path / "results"
    cli.main(["export-records", str(results), "--out", str(exported)])
    path = exported / RUN / "planning-default.jsonl.gz"
    assert read_jsonl(path) == read_jsonl(results / RUN / "planning-default.jsonl")
    damage(path, how)  # a changed byte decodes to other, well-formed lines: only gzip's checksum tells
    with pytest.raises(DamagedFile, match="export the records again"):
        read_jsonl(path)
    code, lines = run_cli(["report", str(exported), "--out", str(tmp_path / "report")])
    assert_one_line_naming(code, lines, "planning-default.jsonl.gz")


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_plan_set_manifest_is_named_in_one_line(tmp_path, how):
    root = tmp_path / "paper"
    shutil.copytree(DATA_SMALL.parent / "paper", root)
    damage(root / "gripper" / "plan-set" / "manifest.json", how)
    for command in (["data", "verify", str(root)],
                    ["baselines", str(root), "--out", str(tmp_path / "out"), "--plan-sets", "plan-set",
                     "--domains", "gripper"]):
        code, lines = run_cli(command)
        errors = [line for line in lines if "plan-set/manifest.json" in line]
        assert code in (1, 2) and len(errors) == 1 and "Traceback" not in "\n".join(lines), lines


def test_a_checkpoint_is_written_only_after_the_validation_record_of_its_step_is_on_disk(tmp_path, monkeypatch):
    """The machine may stop between any two writes (a session's end, a power cut): a last.pt whose step has no
    curve record on disk would make that record lost for good, since the resume redoes only later steps."""
    import os

    import tnlib.learning.training as training

    synced: list[int] = []
    real_fsync, real_save = os.fsync, training.save_resume_checkpoint

    def fsync(fd):
        real_fsync(fd)
        name = os.readlink(f"/proc/self/fd/{fd}")
        if name.endswith("curves.jsonl"):
            synced.append(json.loads(Path(name).read_text().splitlines()[-1])["step"])

    def save_last(obj, run):
        if obj["step"] % 10 == 0:  # a validation step (eval every 10)
            assert synced and synced[-1] == obj["step"], (synced, obj["step"])
        real_save(obj, run)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(training, "save_resume_checkpoint", save_last)
    code, lines = run_cli(SWEEP + ["--steps", "30", "--out", str(tmp_path / "results")])
    assert code == 0, lines
    assert synced == [10, 20, 30]


@pytest.mark.parametrize("hard_links", [True, False], ids=["hard links", "no hard links"])
def test_a_process_stopped_while_its_resume_checkpoint_is_replaced_leaves_one_to_resume_from(tmp_path, monkeypatch,
                                                                                          hard_links):
    """Stopped at the moment the new last.pt is being written (after the old one became last-previous.pt): last.pt
    is still the old checkpoint, so a stop leaves it whatever the moment; on a filesystem without hard links the
    old one is moved and last-previous.pt alone holds it, which the resume reads."""
    import os

    import torch

    import tnlib.learning.checkpoints as checkpoints
    from tnlib.learning.run_files import RunDir

    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    checkpoints.save_resume_checkpoint({"step": 10}, run)
    old = run.last.read_bytes()

    def stopped(path, data):
        raise KeyboardInterrupt  # what a SIGINT there would do; SIGKILL leaves the same files

    monkeypatch.setattr(checkpoints, "atomic_write_bytes", stopped)
    if not hard_links:
        def no_link(source, target):
            raise OSError("hard links not supported")
        monkeypatch.setattr(os, "link", no_link)
    with pytest.raises(KeyboardInterrupt):
        checkpoints.save_resume_checkpoint({"step": 20}, run)
    assert run.last_previous.read_bytes() == old
    assert run.last.is_file() == hard_links and (not hard_links or run.last.read_bytes() == old)
    monkeypatch.undo()
    checkpoints.save_resume_checkpoint({"step": 30}, run)  # the next checkpoint after a resume: the link name left is reused
    assert torch.load(run.last, weights_only=True)["step"] == 30 and not run.last_previous_link.exists()


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_report_csv_is_named_in_one_line_by_the_commands_that_read_it(results, tmp_path, how):
    """A rendered report's per-seed CSV read back without its runs -- `tnlib intervals REPORT`, `tnlib findings
    REPORT`, `tnlib report RUNS --against-report REPORT` -- stops in one line naming it, before it writes
    anything."""
    report = tmp_path / "report"
    assert run_cli(["report", str(results), "--out", str(report)])[0] == 0
    damage(report / "accuracy-seeds.csv", how)
    assert_one_line_naming(*run_cli(["intervals", str(report)]), "accuracy-seeds.csv")
    findings = (report / "findings.md").read_text()
    assert_one_line_naming(*run_cli(["findings", str(report)]), "accuracy-seeds.csv")
    assert (report / "findings.md").read_text() == findings
    out = tmp_path / "against"
    assert_one_line_naming(*run_cli(["report", str(results), "--out", str(out), "--against-report", str(report)]),
                           "accuracy-seeds.csv")
    assert not out.exists()
