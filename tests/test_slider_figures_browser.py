"""The explorer's slider figures move in its rendered page, with no kernel and no network.

reports/notebooks/truncated_gaussian_explorer.html (the committed export, `tnlib reproduce --only explorer`) opens
in headless Chromium; on each of section 3b's figures a click at the right end of the slider's rail must redraw the
figure at the last step: its title then names that step's setting and prints its truncated mean as tnlib computes
it. Every request to a host other than localhost is blocked and must not happen, and the page must log no
JavaScript error. Skips where Playwright or Chromium is missing, fails there on CI (tests/browser_support.py).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from browser_support import isolate, launch_chromium
from tnlib.notebook import explorer

PAGE = Path(__file__).resolve().parents[1] / "reports" / "notebooks" / "truncated_gaussian_explorer.html"
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
            rail = rails.nth(index)
            rail.scroll_into_view_if_needed(timeout=10_000)
            box = rail.bounding_box()
            page.mouse.click(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2)
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
