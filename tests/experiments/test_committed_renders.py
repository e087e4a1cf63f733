"""The committed reports whose run folders or records are in git render again, line for line, from those files."""
from __future__ import annotations

import contextlib
import io
import shutil

import pytest

from tnlib.experiments.reporting.render_check import COMMITTED_RENDERS, render_differences, runs_changed_since_commit
from tnlib.files import REPO_ROOT


@pytest.mark.parametrize("report", sorted(COMMITTED_RENDERS))
def test_a_committed_report_is_what_the_code_renders_from_its_committed_runs(report):
    if runs_changed_since_commit(report):
        pytest.skip(f"{COMMITTED_RENDERS[report].results} is being trained (changed since its commit): its report is "
                    "checked against the committed runs on a clean checkout")
    with contextlib.redirect_stdout(io.StringIO()):
        differences = render_differences(report)
    assert differences == [], "render it again: " + COMMITTED_RENDERS[report].command(f"reports/{report}")


def test_a_line_that_differs_from_the_render_is_named_with_its_file(tmp_path):
    committed = tmp_path / "hgn5"
    committed.mkdir()
    for name in ("accuracy.md", "planning-seeds.csv"):
        shutil.copy(REPO_ROOT / "reports" / "converged" / "hgn5" / name, committed / name)
    lines = (committed / "planning-seeds.csv").read_text().splitlines(keepends=True)
    edited = lines[1].replace(",1.0,", ",0.9,", 1) if ",1.0," in lines[1] else lines[1].rstrip("\n") + "9\n"
    (committed / "planning-seeds.csv").write_text("".join([lines[0], edited, *lines[2:]]))
    with contextlib.redirect_stdout(io.StringIO()):
        differences = render_differences("converged/hgn5", committed)
    assert [line for line in differences if line.startswith("planning-seeds.csv")] == [
        f"planning-seeds.csv: -{edited.rstrip()}", f"planning-seeds.csv: +{lines[1].rstrip()}"]
    # the files it did not copy are rendered but not committed there; the unedited copy agrees
    assert {"planning.md: rendered, not committed", "accuracy-seeds.csv: rendered, not committed"} <= set(differences)
    assert not any(line.startswith("accuracy.md") for line in differences)
    # a page an earlier render wrote and this one does not (hgn5 has no whole-grid metrics) is named too
    (committed / "accuracy-by-size.md").write_text("# Test accuracy per size, from metrics since taken out\n")
    with contextlib.redirect_stdout(io.StringIO()):
        assert "accuracy-by-size.md: committed, not rendered" in render_differences("converged/hgn5", committed)


def test_a_report_whose_runs_changed_since_their_commit_is_known_as_such(tmp_path, monkeypatch):
    import subprocess

    import tnlib.experiments.reporting.render_check as render_check

    repo = tmp_path / "repo"
    (repo / "reports" / "x" / "runs").mkdir(parents=True)
    (repo / "reports" / "x" / "runs" / "curves.jsonl").write_text("{}\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "runs"], cwd=repo, check=True)
    monkeypatch.setattr(render_check, "REPO_ROOT", repo)
    monkeypatch.setitem(render_check.COMMITTED_RENDERS, "x", render_check.CommittedRender("reports/x/runs"))
    assert not runs_changed_since_commit("x")
    (repo / "reports" / "x" / "runs" / "curves.jsonl").write_text("{}\n{}\n")
    assert runs_changed_since_commit("x")
