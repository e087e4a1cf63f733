"""Progress of long work is visible where it runs: a widget in a Jupyter frontend, tqdm's bar on a terminal, and
plain text lines in papermill's kernel, a log or a pipe (tnlib.progress); the main job passes a notebook's output
on to its terminal as it comes."""
from __future__ import annotations

import io
import os
import sys

import nbformat
import pytest

from tnlib import progress as progress_module
from tnlib.progress import LateProgress, TextProgress, duration, progress, progress_mode


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def plain_environment(monkeypatch):
    """No override, no Jupyter server, not in a kernel."""
    monkeypatch.delenv("TNLIB_PROGRESS", raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.setattr(progress_module, "_in_kernel", lambda: False)
    return monkeypatch


def test_the_display_follows_the_context(plain_environment):
    monkeypatch = plain_environment
    monkeypatch.setattr(sys, "stderr", _Terminal())
    assert progress_mode() == "bar"
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # piped or logged (make reproduce > log, CI)
    assert progress_mode() == "text"
    monkeypatch.setattr(progress_module, "_in_kernel", lambda: True)
    assert progress_mode() == "text"  # a kernel no Jupyter server started: papermill, nbclient
    monkeypatch.setenv("JPY_SESSION_NAME", "notebooks/heuristic_learning_experiments.ipynb")
    assert progress_mode() == "widget"  # JupyterLab's kernel
    monkeypatch.setenv("TNLIB_PROGRESS", "Text")
    assert progress_mode() == "text"
    monkeypatch.setenv("TNLIB_PROGRESS", "fancy")
    with pytest.raises(ValueError, match="TNLIB_PROGRESS must be one of widget, bar, text, off, got 'fancy'"):
        progress_mode()


def test_durations_are_short():
    assert [duration(s) for s in (0, 44.6, 72, 3599, 7500)] == ["0s", "45s", "1m12s", "59m59s", "2h05m"]


def test_text_progress_prints_timed_lines_with_the_time_left():
    now = [100.0]
    out = io.StringIO()
    bar = TextProgress(16, "sweep", "runs", file=out, interval_s=30, clock=lambda: now[0])
    for seconds in (24, 24, 24):  # 3 runs of 24 s: the first two within 30 s of the last line, the third after
        now[0] += seconds
        bar.update()
    now[0] += 10
    bar.set_postfix(loss="0.25")
    bar.close()  # stopped early: where it stopped
    assert out.getvalue().splitlines() == [
        "sweep: 0/16 runs done, 0s elapsed",
        "sweep: 2/16 runs done, 48s elapsed, ~5m36s left",
        "sweep: 3/16 runs done, 1m22s elapsed, ~5m55s left (loss 0.25)",
    ]


def test_text_progress_counts_only_this_sessions_items_for_the_time_left_and_always_prints_the_end():
    now = [0.0]
    out = io.StringIO()
    bar = TextProgress(4, "train", "steps", initial=2, file=out, interval_s=30, clock=lambda: now[0])
    now[0] += 5
    bar.update()
    now[0] += 5
    bar.update()  # the last: printed although within the interval
    bar.close()
    assert out.getvalue().splitlines() == ["train: 2/4 steps done, 0s elapsed", "train: 4/4 steps done, 10s elapsed"]


def test_late_progress_shows_nothing_for_short_work_and_long_work_from_where_it_stands(plain_environment):
    plain_environment.setattr(sys, "stderr", io.StringIO())
    now = [0.0]
    plain_environment.setattr(progress_module.time, "monotonic", lambda: now[0])  # the clock of both displays
    short = LateProgress(10_000, "gripper-b20", "evaluations", after_s=30)
    for count in (200, 4_000, 9_000):  # a search that ends within 30 s
        now[0] += 5
        short.update_to(count)
    short.close()
    assert sys.stderr.getvalue() == ""
    now[0] = 0.0
    long = LateProgress(10_000, "gripper-b100", "evaluations", after_s=30)
    for count in (300, 700, 1_200, 2_000, 2_500):  # 20 s apart: shown at 40 s, then a line per 30 s
        now[0] += 20
        long.update_to(count)
    now[0] += 20
    long.update_to(10_000)  # the search's end: the limit
    long.close()
    assert sys.stderr.getvalue().splitlines() == [
        "gripper-b100: 700/10,000 evaluations done, 40s elapsed",  # elapsed since the search began
        "gripper-b100: 2,000/10,000 evaluations done, 1m20s elapsed, ~4m06s left",  # at the rate since shown
        "gripper-b100: 10,000/10,000 evaluations done, 2m00s elapsed",
    ]
    assert LateProgress(10, "x", after_s=0, disable=True).update_to(5) is None and sys.stderr.getvalue().count("\n") == 3


def test_off_a_terminal_progress_is_text_lines_and_disabled_it_is_nothing(plain_environment, capsys):
    plain_environment.setattr(sys, "stderr", io.StringIO())
    bar = progress(2, "sweep", unit="runs", interval_s=0)
    bar.update()
    bar.update()
    bar.close()
    assert sys.stderr.getvalue().splitlines()[-1] == "sweep: 2/2 runs done, 0s elapsed"
    assert isinstance(progress(2, "sweep", disable=True), progress_module._Silent)


def test_the_main_job_passes_a_notebooks_progress_on_to_its_terminal(tmp_path, monkeypatch, capsys):
    pytest.importorskip("papermill")
    from tnlib.experiments.running import reproduce

    notebook = nbformat.v4.new_notebook()
    notebook.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell(
        "from tnlib.progress import progress, progress_mode\n"
        "print('mode', progress_mode())\n"
        "bar = progress(2, 'sweep', unit='runs', interval_s=0)\n"
        "bar.update(); bar.update(); bar.close()")]
    nbformat.write(notebook, tmp_path / "demo.ipynb")
    monkeypatch.setattr(reproduce, "NOTEBOOKS", tmp_path)
    # started from a JupyterLab kernel (`!make reproduce`): the notebook it runs still prints text
    monkeypatch.setenv("JPY_SESSION_NAME", "started-from-lab.ipynb")
    monkeypatch.delenv("TNLIB_PROGRESS", raising=False)
    reproduce.execute_notebook("demo.ipynb", {}, tmp_path / "demo.html", timeout_s=120)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "    mode text"
    assert lines[1] == "    sweep: 0/2 runs done, 0s elapsed" and lines[-1].startswith("    sweep: 2/2 runs done, ")
    assert "sweep: 2/2 runs done" in (tmp_path / "demo.html").read_text()  # and the saved notebook holds them
    assert "TNLIB_PROGRESS" not in os.environ  # restored after the run


def test_text_progress_prints_once_both_ten_seconds_and_a_tenth_of_the_work_have_passed():
    now = [0.0]
    out = io.StringIO()
    bar = TextProgress(200, "tnlib data (small)", "inst", file=out, clock=lambda: now[0])
    for _ in range(200):  # a 26 s generation: 0.13 s an instance
        now[0] += 0.13
        bar.update()
    bar.close()
    lines = out.getvalue().splitlines()
    # the first and the last, and between them a line per 10 s (20 instances, a tenth, pass in 2.6 s)
    assert [line.split(" done")[0] for line in lines] == [
        "tnlib data (small): 0/200 inst", "tnlib data (small): 77/200 inst", "tnlib data (small): 154/200 inst",
        "tnlib data (small): 200/200 inst"]
    now[0] = 0.0
    out = io.StringIO()
    bar = TextProgress(100_000, "fast", file=out, clock=lambda: now[0])
    for _ in range(100_000):  # 100,000 items in 200 s: a line per tenth, not per 10 s
        now[0] += 0.002
        bar.update()
    assert len(out.getvalue().splitlines()) == 11
    now[0] = 0.0
    out = io.StringIO()
    bar = TextProgress(40_000, "train", "steps", file=out, clock=lambda: now[0])
    for _ in range(1_000):  # hours-long training: a line at least every five minutes, its tenth a long way off
        now[0] += 0.5
        bar.update()
    assert [line.split(" done")[0] for line in out.getvalue().splitlines()] == [
        "train: 0/40,000 steps", "train: 600/40,000 steps"]


def test_work_found_done_is_one_line_where_the_display_goes_and_none_where_it_is_off(plain_environment, capsys):
    monkeypatch = plain_environment
    monkeypatch.setattr(sys, "stderr", _Terminal())  # where a bar would sit at 32/32 with no rate ("?runs/s")
    progress_module.say_done(32, "sweep", unit="runs", detail="in runs/small")
    assert sys.stderr.getvalue() == "sweep: 32/32 runs done already (in runs/small)\n"
    monkeypatch.setattr(progress_module, "_in_kernel", lambda: True)  # papermill: the saved notebook keeps it
    progress_module.say_done(1_200, "plans")
    assert capsys.readouterr().out == "plans: 1,200/1,200 done already\n"
    monkeypatch.setenv("TNLIB_PROGRESS", "off")
    progress_module.say_done(2, "sweep", unit="runs")
    assert capsys.readouterr().out == "" and sys.stderr.getvalue().count("\n") == 1
