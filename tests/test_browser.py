"""The truncated Gaussian explorer in a real browser.

JupyterLab serves a copy of notebooks/truncated_gaussian_explorer.ipynb on 127.0.0.1 (free port, token, no
browser); headless Chromium opens it, runs all cells from the Run menu, then moves the mu (loc) and the lower
bound sliders with the keyboard. After each move the plot in the widget panel must be redrawn (its SVG paths
change) and the truncated mean printed in its title must change to tnlib's ``TruncatedNormal`` mean at the
values the widgets show. Every request to a host other than localhost is blocked and must not happen, and the
page must log no JavaScript error.

Skips where Playwright, Chromium or JupyterLab is missing (see the README's "Browser test"). Every wait draws on
one deadline, so the test ends well within two minutes even when something hangs, and the server (with its
kernel) and the browser are always stopped.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import torch

from browser_support import isolate, launch_chromium, unavailable

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "truncated_gaussian_explorer.ipynb"
# Seconds for the whole browser session (server start, kernel start, all cells, two redraws); ~20 s when quiet.
DEADLINE_S = 100.0
SERVER_START_S = 30.0
# The explorer's slider labels (tnlib.figures.explorer_controls) and their step.
SLIDER_LABELS = {"loc": "mu", "scale": "sigma", "low": "low l", "high": "high u", "observed": "x = h*"}
SLIDER_STEP = 0.05
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]


@pytest.fixture(scope="module")
def chromium():
    yield from launch_chromium()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _write_lab_settings(settings: Path) -> None:
    """No news or update checks (no network, no pop-up over the notebook), the notebook's kernel started without
    a "Select Kernel" dialog, every cell kept in the DOM."""
    for plugin, values in {
        "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
        "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none", "autoStartDefaultKernel": True},
    }.items():
        path = settings / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


def _stop(server: subprocess.Popen) -> None:
    """Stop the server's process group (the server and its kernels): SIGTERM, then SIGKILL after 10 s."""
    for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(server.pid, sig)
        except ProcessLookupError:
            break
        try:
            server.wait(wait_s)
            break
        except subprocess.TimeoutExpired:
            continue


@pytest.fixture
def jupyterlab(tmp_path):
    """A JupyterLab server whose root holds a copy of the explorer notebook: yields the notebook's URL."""
    if importlib.util.find_spec("jupyterlab") is None:
        unavailable("browser test needs JupyterLab (pip install jupyterlab)")
    root, state = tmp_path / "root", tmp_path / "jupyter"
    root.mkdir()
    shutil.copy(NOTEBOOK, root / NOTEBOOK.name)
    _write_lab_settings(state / "settings")
    port, token = _free_port(), secrets.token_hex(16)
    command = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
        "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
        f"--LabApp.user_settings_dir={state / 'settings'}", f"--LabApp.workspaces_dir={state / 'workspaces'}",
        "--LabApp.news_url=None", "--LabApp.extension_manager=readonly",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ] + (["--allow-root"] if os.geteuid() == 0 else [])
    # Own config and runtime folders: nothing from ~/.jupyter, nothing left behind.
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(state / "config"), JUPYTER_RUNTIME_DIR=str(state / "runtime"),
               OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    log_path = state / "server.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status?token={token}", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"JupyterLab did not start in {SERVER_START_S:.0f} s:\n{log_path.read_text()[-3000:]}")
                time.sleep(0.25)
        yield f"http://127.0.0.1:{port}/lab/tree/{NOTEBOOK.name}?token={token}"
    finally:
        _stop(server)


class Deadline:
    """Milliseconds left for the next wait, from one budget for the whole test."""

    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def ms(self) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            pytest.fail("browser test ran out of time")
        return left * 1000


# What the explorer's widget panel shows: slider readouts by label, the plot's title and its trace paths.
_READ_PANEL = """() => {
  const panel = [...document.querySelectorAll('.jp-Notebook .widget-vbox')].find(
      box => box.querySelector('.widget-slider') && box.querySelector('.js-plotly-plot'));
  if (!panel) return null;
  const text = element => element.textContent.replace(/\u200b/g, '').trim();  // widgets pad labels with ZWSP
  const readouts = {};
  for (const slider of panel.querySelectorAll('.widget-slider')) {
    readouts[text(slider.querySelector('.widget-label'))] = text(slider.querySelector('.widget-readout'));
  }
  const checkboxes = {};
  for (const box of panel.querySelectorAll('.widget-checkbox')) {
    checkboxes[text(box)] = box.querySelector('input').checked;
  }
  const plot = panel.querySelector('.js-plotly-plot');
  const title = plot.querySelector('.g-gtitle');
  return {readouts, checkboxes, title: title ? text(title) : '',
          paths: [...plot.querySelectorAll('.scatterlayer path.js-line')].map(path => path.getAttribute('d'))};
}"""


# Every code cell has run: its prompt shows an execution count ("[6]:"), none is queued or running ("[*]:").
_ALL_CELLS_RUN = """() => {
  const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')];
  return prompts.length > 0 && prompts.every(prompt => /\\[\\d+\\]/.test(prompt.textContent));
}"""


def _read_panel(page) -> dict:
    panel = page.evaluate(_READ_PANEL)
    assert panel is not None, "the explorer's widget panel does not hold the plot"
    return panel


def _values(panel: dict) -> dict[str, float]:
    """The slider values as the readouts show them (two decimals, as the slider's steps are)."""
    return {name: float(panel["readouts"][label]) for name, label in SLIDER_LABELS.items()}


def _printed_mean(panel: dict) -> float:
    match = re.search(r"TN mean (-?\d+\.\d+)", panel["title"])
    assert match, f"no truncated mean in the plot title {panel['title']!r}"
    return float(match.group(1))


def _tnlib_mean(values: dict[str, float]) -> float:
    from tnlib import TruncatedNormal

    args = [torch.tensor(values[name], dtype=torch.float64) for name in ("loc", "scale", "low", "high")]
    return float(TruncatedNormal(*args).mean)


def _check_printed_mean_matches(panel: dict) -> None:
    assert panel["checkboxes"] == {"l = -inf": False, "u = +inf": False}
    values = _values(panel)
    # the title prints three decimals
    assert _printed_mean(panel) == pytest.approx(_tnlib_mean(values), abs=5e-4 + 1e-9), (values, panel["title"])


def _press_and_wait_for_redraw(page, label: str, key: str, presses: int, before: dict, deadline: Deadline) -> dict:
    handle = page.locator(".widget-slider", has=page.locator(".widget-label", has_text=re.compile(f"^{re.escape(label)}$")))
    handle = handle.locator(".noUi-handle")
    handle.focus(timeout=deadline.ms())
    title = before["title"]
    for _ in range(presses):  # one step per press, each sent to the kernel and redrawn before the next
        page.keyboard.press(key)
        page.wait_for_function(f"(before) => {{ const p = ({_READ_PANEL})(); return p && p.title !== before; }}",
                               arg=title, timeout=deadline.ms())
        title = _read_panel(page)["title"]
    return _read_panel(page)


def test_explorer_sliders_redraw_the_plot_and_the_truncated_mean(chromium, jupyterlab, tmp_path):
    deadline = Deadline(DEADLINE_S)
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    blocked, errors = isolate(page)
    try:
        page.goto(jupyterlab, timeout=deadline.ms())
        page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=deadline.ms())
        page.locator(".jp-StatusBar-Widget", has_text=re.compile(r"\|\s*Idle")).first.wait_for(timeout=deadline.ms())
        # Run > Run All Cells, as a reader would (the kernel starts by itself; execution waits for it)
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile("^Run$")).click(timeout=deadline.ms())
        page.locator(".lm-Menu-itemLabel", has_text=re.compile("^Run All Cells$")).click(timeout=deadline.ms())
        page.wait_for_function(_ALL_CELLS_RUN, timeout=deadline.ms())
        panel = page.locator(".jp-Notebook .widget-vbox", has=page.locator(".widget-slider")).first
        panel.wait_for(timeout=deadline.ms())
        try:  # the plot follows the sliders by a moment
            panel.locator(".js-plotly-plot .scatterlayer path.js-line").first.wait_for(timeout=min(deadline.ms(), 5000))
        except Exception:  # playwright's TimeoutError: _read_panel says what is missing
            pass
        start = _read_panel(page)
        page.locator(".jp-Notebook .widget-vbox .js-plotly-plot").first.scroll_into_view_if_needed()
        page.screenshot(path=tmp_path / "explorer_start.png")
        assert _values(start) == {"loc": 0.0, "scale": 1.0, "low": 0.2, "high": 1.7, "observed": 0.5}
        _check_printed_mean_matches(start)

        moved_loc = _press_and_wait_for_redraw(page, SLIDER_LABELS["loc"], "ArrowRight", 2, start, deadline)
        assert _values(moved_loc)["loc"] == pytest.approx(2 * SLIDER_STEP)
        assert moved_loc["paths"] != start["paths"], "the plot was not redrawn after moving mu"
        assert _printed_mean(moved_loc) != _printed_mean(start)
        _check_printed_mean_matches(moved_loc)

        moved_low = _press_and_wait_for_redraw(page, SLIDER_LABELS["low"], "ArrowRight", 6, moved_loc, deadline)
        assert _values(moved_low)["low"] == pytest.approx(0.2 + 6 * SLIDER_STEP)
        assert _values(moved_low)["loc"] == _values(moved_loc)["loc"]
        assert moved_low["paths"] != moved_loc["paths"], "the plot was not redrawn after moving the lower bound"
        assert _printed_mean(moved_low) > _printed_mean(moved_loc)  # raising l raises the truncated mean
        _check_printed_mean_matches(moved_low)
        page.screenshot(path=tmp_path / "explorer_moved.png")

        assert not errors, f"JavaScript errors in JupyterLab: {errors}"
        assert not blocked, f"the page tried to reach the network: {blocked}"
    except BaseException:
        page.screenshot(path=tmp_path / "explorer_failed.png")  # what the browser showed, for the report
        raise
    finally:
        page.close()
