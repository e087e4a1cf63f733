"""The notebooks' slider figures move in their rendered pages, with no kernel and no network.

The committed exports (`tnlib reproduce --only explorer`, `--only statistics`) open in headless Chromium. On each
of the explorer's section 3b figures a click at the right end of the slider's rail must redraw the figure at the
last step: its title then names that step's setting and prints its truncated mean as tnlib computes it; on the
classroom's section 6 slider the title must name the last margin epsilon. Every request to a host other than
localhost is blocked and must not happen, and the pages must log no JavaScript error. Skips where Playwright or
Chromium is missing, fails there on CI (tests/browser_support.py).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from browser_support import isolate, launch_chromium
from tnlib.notebook import classroom_demos, explorer

RENDERED = Path(__file__).resolve().parents[2] / "reports" / "notebooks"
PAGE = RENDERED / "truncated_gaussian_explorer.html"
CLASSROOM_PAGE = RENDERED / "statistics_of_heuristic_learning.html"
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("browser")]

# Each slider figure's title (plotly joins the title's lines without a separator in the DOM).
_SLIDER_TITLES = """() => [...document.querySelectorAll('.js-plotly-plot')]
    .filter(plot => plot.querySelector('.slider-container'))
    .map(plot => plot.querySelector('.g-gtitle').textContent.replace(/\\u200b/g, ' '))"""


@pytest.fixture(scope="module")
def chromium():
    yield from launch_chromium()


def _expected_title_start(setting: tuple[float, float, float, float]) -> str:
    loc, scale, low, high = setting
    bound = lambda value: "inf" if value == float("inf") else "-inf" if value == float("-inf") else f"{value:g}"
    return f"TN(mu={loc:g}, sigma={scale:g}, l={bound(low)}, u={bound(high)})"


def _click_last_step(page, rail) -> None:
    rail.scroll_into_view_if_needed(timeout=10_000)
    box = rail.bounding_box()
    page.mouse.click(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2)


def test_each_slider_figure_redraws_at_the_step_clicked(chromium):
    page = chromium.new_page(viewport={"width": 1300, "height": 900})
    blocked, errors = isolate(page)
    try:
        page.goto(PAGE.as_uri(), timeout=30_000)
        page.wait_for_function(f"() => document.querySelectorAll('.slider-container').length >= "
                               f"{len(explorer.THINGS_TO_TRY)}", timeout=30_000)
        before = page.evaluate(_SLIDER_TITLES)
        assert len(before) == len(explorer.THINGS_TO_TRY), "one slider figure per thing to try"
        rails = page.locator(".js-plotly-plot .slider-container rect.slider-rail-touch-rect")
        for index, example in enumerate(explorer.THINGS_TO_TRY):
            assert before[index].startswith(_expected_title_start(example.settings[0])), before[index]
            _click_last_step(page, rails.nth(index))
            last = example.settings[-1]
            page.wait_for_function(f"() => ({_SLIDER_TITLES})()[{index}].startsWith({_expected_title_start(last)!r})",
                                   timeout=10_000)
            title = page.evaluate(_SLIDER_TITLES)[index]
            shown_mean = float(re.search(r"TN mean (-?[\d.e+-]+),", title).group(1))
            expected = explorer.describe_truncated_normal(*last, example.observed)["mean"]
            assert shown_mean == pytest.approx(expected, rel=1e-3), title
    finally:
        page.close()
    assert not blocked, f"the page asked the network for {blocked}"
    assert not errors, errors


def test_the_classroom_open_bound_slider_redraws_at_the_margin_clicked(chromium):
    page = chromium.new_page(viewport={"width": 1300, "height": 900})
    blocked, errors = isolate(page)
    try:
        page.goto(CLASSROOM_PAGE.as_uri(), timeout=30_000)
        page.wait_for_function("() => document.querySelectorAll('.slider-container').length >= 1", timeout=30_000)
        titles = page.evaluate(_SLIDER_TITLES)
        assert len(titles) == 1 and "open bound l - 0.1" in titles[0], titles
        _click_last_step(page, page.locator(".js-plotly-plot .slider-container rect.slider-rail-touch-rect").first)
        last = f"open bound l - {classroom_demos.OPEN_BOUND_MARGINS_SHOWN[-1]:g}"
        page.wait_for_function(f"() => ({_SLIDER_TITLES})()[0].includes({last!r})", timeout=10_000)
    finally:
        page.close()
    assert not blocked, f"the page asked the network for {blocked}"
    assert not errors, errors
