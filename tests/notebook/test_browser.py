"""The truncated Gaussian explorer in a real browser.

JupyterLab serves a copy of notebooks/truncated_gaussian_explorer.ipynb on 127.0.0.1 (free port, token, no
browser); headless Chromium opens it, runs all cells from the Run menu, then moves the mu (loc) and the lower
bound sliders with the keyboard. After each move the plot in the widget panel must be redrawn (its SVG paths
change) and the truncated mean printed in its title must change to tnlib's ``TruncatedNormal`` mean at the
values the widgets show. Every request to a host other than localhost is blocked and must not happen, and the
page must log no JavaScript error.

Skips where Playwright, Chromium or JupyterLab is missing (see the README's "Browser test"), fails there on CI. Every wait draws on
one deadline, so the test ends well within two minutes even when something hangs, and the server (with its
kernel) and the browser are always stopped.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import secrets
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

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "truncated_gaussian_explorer.ipynb"
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


def _with_parameters(notebook: Path, overrides: dict[str, object]) -> str:
    """The notebook's JSON with the parameters cell's ``name: type = value`` lines set to ``overrides``, as a
    reader would edit them."""
    content = json.loads(notebook.read_text())
    cell = next(cell for cell in content["cells"] if "parameters" in cell["metadata"].get("tags", []))
    source = "".join(cell["source"])
    for name, value in overrides.items():
        source, count = re.subn(rf"^({name}: \w+ = )[^#\n]*?(\s*#|$)", rf"\g<1>{value!r}\g<2>", source, flags=re.M)
        assert count == 1, f"no parameter {name} in the parameters cell"
    cell["source"] = source.splitlines(keepends=True)
    return json.dumps(content)


@pytest.fixture
def jupyterlab(tmp_path, request):
    """A JupyterLab server whose root holds a copy of the explorer notebook: yields the notebook's URL.

    Parametrized indirectly with a dict, the copy's parameters cell holds those values instead.
    """
    if importlib.util.find_spec("jupyterlab") is None:
        unavailable("browser test needs JupyterLab (pip install jupyterlab)")
    root, state = tmp_path / "root", tmp_path / "jupyter"
    root.mkdir()
    (root / NOTEBOOK.name).write_text(_with_parameters(NOTEBOOK, getattr(request, "param", {})))
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
  // widgets pad labels with ZWSP and print negative readouts with the minus sign U+2212
  const text = element => element.textContent.replace(/\u200b/g, '').replace(/\u2212/g, '-').trim();
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


def _run_all_cells(page, url: str, deadline: Deadline) -> dict:
    """Open the notebook, run all its cells from the Run menu, wait for the widget panel's plot: its reading."""
    page.goto(url, timeout=deadline.ms())
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
    return _read_panel(page)


def test_explorer_sliders_redraw_the_plot_and_the_truncated_mean(chromium, jupyterlab, tmp_path):
    deadline = Deadline(DEADLINE_S)
    page = chromium.new_page(viewport={"width": 1400, "height": 1000})
    blocked, errors = isolate(page)
    try:
        start = _run_all_cells(page, jupyterlab, deadline)
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


# Every plotly figure of the notebook, in page order: title, boxes (viewport pixels) of the legend, its entries,
# the title, the axis titles and the plot area, the figure's size, and the x range plotly drew.
_READ_FIGURES = """() => [...document.querySelectorAll('.jp-Notebook .js-plotly-plot')].map(plot => {
  const box = element => {
    if (!element) return null;
    const r = element.getBoundingClientRect();
    return {left: r.left, top: r.top, right: r.right, bottom: r.bottom};
  };
  const title = plot.querySelector('.g-gtitle');
  return {title: title ? title.textContent : '', gtitle: box(title), legend: box(plot.querySelector('.legend .bg')),
          xtitle: box(plot.querySelector('.xtitle')), ytitle: box(plot.querySelector('.ytitle')),
          plotarea: box(plot.querySelector('.nsewdrag')), svg: box(plot.querySelector('.main-svg')),
          entries: [...plot.querySelectorAll('.legend .traces')].map(entry => ({text: entry.textContent, box: box(entry)})),
          xrange: plot._fullLayout ? plot._fullLayout.xaxis.range : null,
          slider: box(plot.querySelector('.slider-container')), widget: !!plot.closest('.widget-vbox')};
})"""
# the explorer's figures: the parameters' figure, the presets (Figure 1), one per preset, the widget's, and one
# slider figure per thing to try (section 3b)
EXPLORER_FIGURES = 1 + 1 + 7 + 1 + 3
EDGE_CASE = {"loc": -50.0}  # mu far left of the bounds (0.2, 1.7): Z = exp(-1264.9) underflows float64


def _overlap(a: dict, b: dict, tolerance: float = 1.0) -> bool:
    return (a["left"] < b["right"] - tolerance and b["left"] < a["right"] - tolerance
            and a["top"] < b["bottom"] - tolerance and b["top"] < a["bottom"] - tolerance)


def _inside(inner: dict, outer: dict, tolerance: float = 1.0) -> bool:
    return (inner["left"] >= outer["left"] - tolerance and inner["right"] <= outer["right"] + tolerance
            and inner["top"] >= outer["top"] - tolerance and inner["bottom"] <= outer["bottom"] + tolerance)


def _check_layout(figures_read: list[dict], width: int) -> None:
    """No legend covers the title, an axis title or the plot; every legend entry is drawn inside its legend
    (not scrolled out of it) and inside the figure, and none covers another."""
    for figure in figures_read:
        where = f"at {width} px, figure {figure['title'][:60]!r}"
        assert figure["legend"] and figure["entries"], f"{where}: no legend"
        for part in ("gtitle", "xtitle", "ytitle", "plotarea"):
            assert not _overlap(figure["legend"], figure[part]), f"{where}: the legend covers the {part}: {figure}"
        # a title's text box starts a few pixels above its capitals, so a box above the figure's top edge means
        # capitals cut off there (one pixel of slack, as for the legend's entries)
        assert _inside(figure["gtitle"], figure["svg"]), f"{where}: the title is cut off"
        if figure["slider"]:  # a slider figure's slider lies below the plot, its axis title and its legend
            for part in ("legend", "xtitle", "plotarea"):
                assert not _overlap(figure["slider"], figure[part]), f"{where}: the slider covers the {part}"
        for index, entry in enumerate(figure["entries"]):
            assert _inside(entry["box"], figure["legend"]), f"{where}: legend entry {entry['text']!r} is hidden"
            assert _inside(entry["box"], figure["svg"]), f"{where}: legend entry {entry['text']!r} is cut off"
            for other in figure["entries"][index + 1:]:
                assert not _overlap(entry["box"], other["box"]), f"{where}: {entry['text']!r} covers {other['text']!r}"


@pytest.mark.parametrize("jupyterlab", [EDGE_CASE], indirect=True, ids=["loc=-50"])
def test_explorer_edge_cases_in_the_browser(chromium, jupyterlab, tmp_path):
    """A parameter outside the sliders' range is shown as it is (not clipped to +-5), a tiny but finite
    Z is not printed as 0, the view zooms to where the mass is, and at 1200-1400 px no legend covers an axis
    title and the presets figure shows all its 7 labels."""
    from tnlib.notebook import explorer, figures

    deadline = Deadline(DEADLINE_S + 20)
    page = chromium.new_page(viewport={"width": 1280, "height": 1000})
    blocked, errors = isolate(page)
    try:
        start = _run_all_cells(page, jupyterlab, deadline)
        assert start["readouts"][SLIDER_LABELS["loc"]] == "-50.00", start["readouts"]
        assert _values(start) == {"loc": -50.0, "scale": 1.0, "low": 0.2, "high": 1.7, "observed": 0.5}
        _check_printed_mean_matches(start)
        described = explorer.describe_truncated_normal(-50.0, 1.0, 0.2, 1.7, 0.5)
        kept_mass = explorer.format_probability(described["log_normalizer"])
        assert f"kept mass Z {kept_mass} " in start["title"] and "e-550" in kept_mass, start["title"]
        page.wait_for_function(f"() => ({_READ_FIGURES})().filter(f => f.entries.length).length >= {EXPLORER_FIGURES}",
                               timeout=deadline.ms())
        page.locator(".jp-Notebook .widget-vbox .js-plotly-plot").first.scroll_into_view_if_needed()
        page.screenshot(path=tmp_path / "explorer_edge_1280.png")
        read = page.evaluate(_READ_FIGURES)
        assert len(read) == EXPLORER_FIGURES, [figure["title"] for figure in read]
        assert sum(bool(figure["slider"]) for figure in read) == len(explorer.THINGS_TO_TRY)
        # the widget's figure shows where the mass is: the view tnlib computes, not mu -50 +- 4 sigma
        widget_figure = next(figure for figure in read if figure["widget"])
        assert widget_figure["xrange"] == pytest.approx(list(figures.density_view(-50.0, 1.0, 0.2, 1.7)), rel=1e-9)
        presets = [figure for figure in read if figure["title"].startswith("Truncated Gaussians TN(")]
        assert len(presets) == 1
        assert [entry["text"] for entry in presets[0]["entries"]] == [label for label, _, _ in explorer.PRESET_BOUNDS]
        _check_layout(read, 1280)

        # the widened mu slider still moves by its step, and the plot follows
        moved = _press_and_wait_for_redraw(page, SLIDER_LABELS["loc"], "ArrowRight", 1, start, deadline)
        assert _values(moved)["loc"] == pytest.approx(-50.0 + SLIDER_STEP)
        _check_printed_mean_matches(moved)

        for width in (1200, 1400):  # JupyterLab resizes its plotly figures to the notebook's new width
            widths = [figure["svg"]["right"] - figure["svg"]["left"] for figure in page.evaluate(_READ_FIGURES)]
            page.set_viewport_size({"width": width, "height": 1000})
            page.wait_for_function(
                "(before) => { const now = (" + _READ_FIGURES + ")(); return now.length === before.length"
                " && now.every((f, i) => f.svg && Math.abs((f.svg.right - f.svg.left) - before[i]) > 20); }",
                arg=widths, timeout=deadline.ms())
            _check_layout(page.evaluate(_READ_FIGURES), width)
        page.screenshot(path=tmp_path / "explorer_edge_1400.png")

        assert not errors, f"JavaScript errors in JupyterLab: {errors}"
        assert not blocked, f"the page tried to reach the network: {blocked}"
    except BaseException:
        page.screenshot(path=tmp_path / "explorer_edge_failed.png")
        raise
    finally:
        page.close()
