"""Run weights taken out of the tracked tree come back from git's history, newest version first."""
import json
import subprocess

import pytest

from tnlib.cli import main
from tnlib.experiments.running.weights_history import restore_weights


def git(repo, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                   capture_output=True)


def make_run(runs, name, tested=True, weights=b"w"):
    folder = runs / name
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"domain": "ferry"}))
    if tested:
        (folder / "metrics-test.json").write_text(json.dumps({"mse": 1.0}))
    if weights is not None:
        (folder / "best.pt").write_bytes(weights + b"-mse")
        (folder / "best-nll.pt").write_bytes(weights + b"-nll")
    return folder


@pytest.fixture
def repo(tmp_path):
    git(tmp_path, "init", "-q")
    runs = tmp_path / "runs"
    make_run(runs, "a", weights=b"first")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "weights")
    (runs / "a" / "best.pt").write_bytes(b"second-mse")  # a later snapshot's weights
    git(tmp_path, "commit", "-q", "-am", "newer weights")
    # the weights leave the tree: ignored from now on, kept on disk here
    (tmp_path / ".gitignore").write_text("runs/*/best*.pt\n")
    git(tmp_path, "rm", "-q", "--cached", "runs/a/best.pt", "runs/a/best-nll.pt")
    git(tmp_path, "add", ".gitignore")
    git(tmp_path, "commit", "-q", "-m", "weights out of the tree")
    return tmp_path


def test_missing_weights_come_back_as_their_newest_committed_version(repo):
    run = repo / "runs" / "a"
    (run / "best.pt").unlink()
    (run / "best-nll.pt").unlink()
    restored = restore_weights(repo / "runs")
    assert (run / "best.pt").read_bytes() == b"second-mse"
    assert (run / "best-nll.pt").read_bytes() == b"first-nll"
    assert sorted(p.name for p in restored.written) == ["best-nll.pt", "best.pt"]
    assert restored.not_in_history == []


def test_weights_on_disk_are_left_as_they_are(repo):
    run = repo / "runs" / "a"
    (run / "best.pt").write_bytes(b"trained here")
    (run / "best-nll.pt").unlink()
    restored = restore_weights(repo / "runs")
    assert (run / "best.pt").read_bytes() == b"trained here"
    assert [p.name for p in restored.present] == ["best.pt"]
    assert [p.name for p in restored.written] == ["best-nll.pt"]


def test_a_dry_run_writes_nothing(repo):
    run = repo / "runs" / "a"
    (run / "best.pt").unlink()
    restored = restore_weights(repo / "runs", dry_run=True)
    assert [p.name for p in restored.written] == ["best.pt"]
    assert not (run / "best.pt").exists()


def test_tested_runs_whose_weights_history_never_held_are_named(repo, capsys):
    make_run(repo / "runs", "b", weights=None)  # tested elsewhere after the last snapshot
    make_run(repo / "runs", "c", tested=False, weights=None)  # still training: no weights yet is fine
    restored = restore_weights(repo / "runs")
    assert sorted(p.parent.name + "/" + p.name for p in restored.not_in_history) == ["b/best-nll.pt", "b/best.pt"]
    assert main(["restore-weights", str(repo / "runs")]) == 1
    assert "not in history (2)" in capsys.readouterr().out


def test_exported_records_are_named_as_keeping_no_weights_not_as_missing_them(repo, capsys):
    exported = make_run(repo / "runs", "d", weights=None)  # tested, its curve only as export-records writes it
    (exported / "curves.jsonl.gz").write_bytes(b"")
    restored = restore_weights(repo / "runs")
    assert restored.exported == [exported] and restored.not_in_history == []
    assert main(["restore-weights", str(repo / "runs")]) == 0
    assert "1 run folder of exported records (`tnlib export-records`), which keep no weights" in capsys.readouterr().out


def test_a_folder_outside_git_is_refused_with_the_reason(tmp_path):
    make_run(tmp_path / "runs", "a")
    with pytest.raises(ValueError, match="not inside a git checkout"):
        restore_weights(tmp_path / "runs")
