"""Tests for tnlib.notebook.figures: figure builders return the expected traces with correct densities, the offline
renderer loads nothing from a CDN, and the explorer's widgets redraw as described."""
from __future__ import annotations

import math
import re

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
import scipy.stats
import torch

from tnlib.notebook import (
    classroom_demos,
    demo_tensors,
    distribution_properties,
    explorer,
    figures,
    notebook_parameters,
    synthetic_regression,
    trained_distributions,
)
from tnlib.paper import OPEN_BOUND_EPSILON

EXTRA_BOUNDS = [("far right tail", 10.0, math.inf), ("narrow window", -0.001, 0.001), ("left of mu", -6.0, -3.0)]


def traces_by_name(figure: go.Figure) -> dict[str, go.Scatter]:
    return {trace.name: trace for trace in figure.data}


@pytest.mark.parametrize("label, low, high", [*explorer.PRESET_BOUNDS, *EXTRA_BOUNDS])
def test_truncated_pdf_is_zero_outside_the_bounds_and_integrates_to_one(label, low, high):
    figure = figures.truncated_normal_figure(0.0, 1.0, low, high, observed=0.5, num_points=401)
    assert isinstance(figure, go.Figure)
    traces = traces_by_name(figure)
    assert set(traces) == {
        figures.NORMAL_PDF, figures.TRUNCATED_PDF, figures.LOC_LINE, figures.MEAN_LINE, figures.MODE_MARKER, figures.OBSERVED_LINE,
    }
    x = np.asarray(traces[figures.TRUNCATED_PDF].x, dtype=float)
    density = np.asarray(traces[figures.TRUNCATED_PDF].y, dtype=float)
    assert np.all(density[(x < low) | (x > high)] == 0.0)
    # inside the bounds: scipy's truncnorm density (an independent implementation) at every grid point, all of
    # it positive (the view ends a few scales out, where no density underflows)
    inside = (x > low) & (x < high)
    assert inside.sum() >= 300  # the grid resolves the truncated density (dense over its bulk)
    expected = scipy.stats.truncnorm.pdf(x[inside], low, high)  # loc 0, scale 1: the bounds are standardised
    assert np.all(expected > 0.0)
    np.testing.assert_allclose(density[inside], expected, rtol=1e-9)
    assert np.trapezoid(density, x) == pytest.approx(1.0, abs=2e-3)
    mean = traces[figures.MEAN_LINE].x[0]
    assert low <= mean <= high
    assert mean == pytest.approx(explorer.describe_truncated_normal(0.0, 1.0, low, high, 0.5)["mean"])
    assert low <= traces[figures.MODE_MARKER].x[0] <= high


def test_normal_pdf_integrates_to_one_over_the_view():
    traces = traces_by_name(figures.truncated_normal_figure(1.0, 2.0, 0.0, math.inf))
    normal = traces[figures.NORMAL_PDF]
    assert np.trapezoid(np.asarray(normal.y), np.asarray(normal.x)) == pytest.approx(1.0, abs=1e-3)
    assert figures.OBSERVED_LINE not in traces  # no observed value given
    assert traces[figures.LOC_LINE].x[0] == 1.0


def test_title_reports_the_nll_of_the_observed_value():
    figure = figures.truncated_normal_figure(0.0, 1.0, 0.2, 1.7, observed=0.5)
    assert "Normal 1.044" in figure.layout.title.text and "TN 0.066" in figure.layout.title.text


@pytest.mark.parametrize("arguments", [(0.0, 0.0, 0.0, 1.0), (0.0, -1.0, 0.0, 1.0), (0.0, 1.0, 2.0, 1.0)])
def test_truncated_normal_figure_rejects_bad_parameters(arguments):
    with pytest.raises(ValueError):
        figures.truncated_normal_figure(*arguments)


def test_preset_figure_has_a_density_and_a_mean_marker_inside_the_bounds_per_preset():
    figure = figures.preset_bounds_figure(0.0, 1.0, num_points=201)
    assert len(figure.data) == 2 * len(explorer.PRESET_BOUNDS)
    traces = traces_by_name(figure)
    for label, low, high in explorer.PRESET_BOUNDS:
        assert label in traces
        assert low <= traces[f"mean of {label}"].x[0] <= high
    # one legend entry per preset (the browser test checks that all 7 are drawn and none overlaps another)
    assert [trace.name for trace in figure.data if trace.showlegend is not False] == [p[0] for p in explorer.PRESET_BOUNDS]


@pytest.mark.parametrize("build", [
    lambda: figures.truncated_normal_figure(0.0, 1.0, 0.2, 1.7, observed=0.5),
    lambda: figures.preset_bounds_figure(0.0, 1.0, num_points=101),
], ids=["explorer", "presets"])
def test_legend_is_in_rows_above_the_plot_not_over_the_x_axis_title(build):
    # below the plot (y < 0) a wrapped legend covered the x-axis title; beside it, a tall legend scrolled
    layout = build().layout
    assert layout.legend.orientation == "h" and layout.legend.yanchor == "bottom" and layout.legend.y >= 1.0
    assert layout.title.yref == "container" and layout.title.yanchor == "top"


# Extreme densities: their mass is a small part of the Normal's bulk or far from it (mu far outside the bounds,
# a far tail, a very narrow window, mu 1e5 scales above an upper bound).
EXTREME = [(-50.0, 1.0, 0.2, 1.7), (0.0, 1.0, 10.0, math.inf), (0.0, 1.0, -0.001, 0.001), (1e5, 1.0, -math.inf, 0.0),
           (3.0, 0.01, -math.inf, 2.0)]


@pytest.mark.parametrize("loc, scale, low, high", EXTREME + [(0.0, 1.0, low, high) for _, low, high in explorer.PRESET_BOUNDS])
def test_the_view_is_where_the_truncated_mass_is(loc, scale, low, high):
    figure = figures.truncated_normal_figure(loc, scale, low, high, num_points=401)
    view_low, view_high = figure.layout.xaxis.range
    distribution = demo_tensors.truncated_normal(loc, scale, low, high)
    # the central 99.8% of the mass is in view ...
    q_low, q_high = (float(distribution.icdf(torch.tensor(q, dtype=demo_tensors.DTYPE))) for q in (1e-3, 1 - 1e-3))
    assert view_low <= q_low and q_high <= view_high
    # ... and spans at least a tenth of it: the density is a visible curve, not a spike under a bound line
    # (before: mu = -50 showed its mass on 0.2% of the axis, next to the lines at l and u)
    assert (q_high - q_low) >= 0.1 * (view_high - view_low)
    traces = traces_by_name(figure)
    x = np.asarray(traces[figures.TRUNCATED_PDF].x, dtype=float)
    density = np.asarray(traces[figures.TRUNCATED_PDF].y, dtype=float)
    shown = (x >= view_low) & (x <= view_high)
    assert np.count_nonzero(density[shown] > 0.05 * density.max()) >= 100  # resolved by the grid
    assert 0.0 < figure.layout.yaxis.range[1] <= 1.2 * density.max() or density.max() < traces[figures.NORMAL_PDF].y[0]


def test_title_shows_a_tiny_kept_mass_and_its_log_not_zero():
    # Z = exp(-1264.86) underflows float64; the title printed "kept mass Z 0" with a finite log Z
    title = figures.truncated_normal_figure(-50.0, 1.0, 0.2, 1.7, observed=0.5).layout.title.text
    described = explorer.describe_truncated_normal(-50.0, 1.0, 0.2, 1.7, 0.5)
    assert f"kept mass Z {explorer.format_probability(described['log_normalizer'])} " in title
    assert "e-550" in title and "log Z -1265" in title
    assert not re.search(r"Z 0\b", title)


def test_explorer_sliders_widen_to_parameters_outside_their_range():
    # the sliders spanned +-5 and clipped mu = -50 to -5 without a word
    params = notebook_parameters.check_explorer_parameters(-50.0, 12.0, -60.0, 70.0, 80.0)
    values = figures.explorer_controls(params).values
    assert {name: values[name].value for name in ("loc", "scale", "low", "high", "observed")} == {
        "loc": -50.0, "scale": 12.0, "low": -60.0, "high": 70.0, "observed": 80.0}
    for name in ("low", "high", "observed"):  # one range for l, u and x, which holds them
        assert (values[name].min, values[name].max) == (-60.0, 80.0)
    assert (values["loc"].min, values["loc"].max) == (-60.0, 80.0)  # mu's holds them and mu
    # a far mu widens its own slider only: l, u and x keep a range whose 0.05 steps a hand can set
    far = figures.explorer_controls(notebook_parameters.check_explorer_parameters(-500.0, 1.0, 0.2, 1.7, 0.5)).values
    assert (far["loc"].value, far["loc"].min, far["loc"].max) == (-500.0, -500.0, 10.0)
    for name in ("low", "high", "observed"):
        assert (far[name].min, far[name].max) == (-10.0, 10.0)
    assert (values["scale"].min, values["scale"].max) == figures.SIGMA_SLIDER_DECADES  # log10 of sigma's range
    tiny = figures.explorer_controls(notebook_parameters.check_explorer_parameters(0.0, 1e-4, "-inf", "inf", 0.0)).values
    assert tiny["scale"].value == pytest.approx(1e-4) and tiny["scale"].min == pytest.approx(-4.0)
    assert (tiny["low"].value, tiny["high"].value, tiny["low"].min, tiny["high"].max) == (-10.0, 10.0, -10.0, 10.0)


def test_the_sigma_slider_reaches_small_sigmas_and_far_tails():
    controls = figures.explorer_controls(notebook_parameters.check_explorer_parameters(0.0, 1.0, 2.5, "inf", 2.5))
    scale = controls.values["scale"]
    assert 10 ** scale.min <= 1e-3 and 10 ** scale.max >= 100
    scale.value = 10 ** scale.min  # l = 2.5 is then 2,500 sigmas into the tail
    figure = figures.explorer_figure(**controls.current_values())
    mean = traces_by_name(figure)[figures.MEAN_LINE].x[0]
    # far in the tail the mass piles against l like an exponential of rate (l - mu) / sigma^2
    assert mean - 2.5 == pytest.approx(scale.value ** 2 / 2.5, rel=1e-4)


def test_choosing_a_preset_again_after_moving_a_slider_applies_it_again():
    controls = figures.explorer_controls(notebook_parameters.check_explorer_parameters(0.0, 1.0, 0.2, 1.7, 0.5))
    calls = []
    controls.on_change(lambda: calls.append(controls.current_values()))
    assert controls.preset.label == figures.CUSTOM_PRESET
    controls.preset.value = (1.0, 3.0)
    controls.values["loc"].value = 2.0
    assert controls.preset.label == figures.CUSTOM_PRESET  # the sliders no longer hold the preset, and the selector says so
    controls.preset.value = (1.0, 3.0)
    assert [call["loc"] for call in calls] == [0.0, 2.0, 0.0] and calls[-1]["low"] == 1.0


@pytest.mark.parametrize("loc, observed, named", [
    (-50.0, 0.3, {"mu": "left"}), (-50.0, 0.5, {"mu": "left", "x": "right"}), (0.0, 80.0, {"x": "right"}), (-50.0, 80.0, {"mu": "left", "x": "right"}),
    (0.0, 0.5, {}),
])
def test_positions_outside_the_view_are_named_at_the_edge_they_lie_beyond(loc, observed, named):
    figure = figures.truncated_normal_figure(loc, 1.0, 0.2, 1.7, observed)
    view_low, view_high = figure.layout.xaxis.range
    found = {}
    for annotation in figure.layout.annotations:
        if annotation.name and annotation.name.endswith("off-screen"):
            name = annotation.name.split()[0]
            found[name] = "left" if annotation.x == view_low else "right" if annotation.x == view_high else "inside"
            value = loc if name == "mu" else observed
            assert f"{name} = {value:.4g}" in annotation.text
    assert found == named


def test_curves_figure_leaves_gaps_for_non_finite_values_and_checks_lengths():
    figure = figures.curves_figure([0, 1, 2], {"a": [1.0, math.inf, 2.0], "b": [1, 2, 3]}, "t", "x", "y", log_y=True,
                                   vertical_lines={"here": 1.0})
    assert [trace.name for trace in figure.data] == ["a", "b"]
    assert figure.data[0].y == (1.0, None, 2.0)
    assert figure.layout.yaxis.type == "log"
    with pytest.raises(ValueError, match="curve 'a'"):
        figures.curves_figure([0, 1], {"a": [1.0]}, "t", "x", "y")


def test_bar_figure_has_one_bar_per_entry():
    figure = figures.bar_figure({"Gaussian": 1.42, "Laplace": 1.35}, "t", "y")
    assert list(figure.data[0].x) == ["Gaussian", "Laplace"]


def test_regression_figures():
    result = synthetic_regression.run_synthetic_regression(seed=0, num_train=40, num_test=30, steps=4)
    loss = figures.regression_loss_figure(result)
    assert [trace.name for trace in loss.data] == [*synthetic_regression.MODEL_LABELS.values(), *figures.REFERENCE_LABELS.values()]
    assert loss.layout.yaxis.type == "log" and "Test MSE" in loss.layout.title.text
    low, high = loss.layout.yaxis.range  # log10 units, around the data and the two references
    values = [v for trace in loss.data for v in trace.y]
    assert low < math.log10(min(values)) and math.log10(max(values)) < high < math.log10(max(values)) + 0.5
    ticks = list(loss.layout.yaxis.tickvals)  # at most six round ticks, the outer two bracketing every value
    assert len(ticks) <= 6 and ticks[0] <= min(values) and max(values) <= ticks[-1]
    bars = figures.point_estimate_figure(result)
    assert [trace.name for trace in bars.data] == list(synthetic_regression.ESTIMATE_LABELS.values())
    assert all(trace.orientation == "h" for trace in bars.data)
    assert list(bars.data[0].y) == list(synthetic_regression.MODEL_LABELS.values())
    assert bars.data[2].x[:2] == (None, None)  # only the truncated model has a TN mean
    scatter = figures.prediction_scatter_figure(result, max_points=20)
    assert len(scatter.data) == 1 + len(synthetic_regression.MODEL_LABELS) + 1
    calibration = figures.calibration_figure(result)
    bars = [trace for trace in calibration.data if trace.type == "bar"]
    assert len(bars) == len(synthetic_regression.MODEL_LABELS)
    for trace, kind in zip(bars, synthetic_regression.MODEL_LABELS):  # densities: each panel's bars average 1
        counts = np.histogram(result.calibration[kind].pit, bins=figures.PIT_BINS, range=(0, 1))[0]
        np.testing.assert_allclose(trace.y, counts / counts.sum() * figures.PIT_BINS)
    assert [trace.name for trace in calibration.data if trace.showlegend] == [*figures.PIT_LABELS.values(),
                                                                             "calibrated (uniform)"]
    assert all(len(trace.x) == 20 for trace in scatter.data[:-1])


def test_trained_distributions_figure_draws_each_density_from_its_support_with_bound_clip_and_h_star():
    runs = {d: trained_distributions.paper_scale_run("ferry", "fixed/none", d) for d in ("N", "TN")}
    states = trained_distributions.state_distributions(runs, count=4)
    figure = figures.trained_distributions_figure(states, "ferry fixed/none")
    # per panel: two densities, two heuristics, N's clipped heuristic, the bound, h*
    assert len(figure.data) == 4 * 7
    assert [t.name for t in figure.data if t.showlegend] == [
        "N: predicted density", "N: the heuristic GBFS plans with", "N+clip: max(mu, l)", "TN: predicted density",
        "TN: the heuristic GBFS plans with", "open bound l - 0.1", "h*"]
    assert figure.layout.yaxis.type == "log" and figure.layout.yaxis.range[0] == -3
    clipped_up = 0
    for k, state in enumerate(states):
        panel = figure.data[7 * k:7 * (k + 1)]
        truncated = panel[3]
        x, y = np.array(truncated.x, dtype=float), np.array(truncated.y, dtype=float)
        bound = state.lower - OPEN_BOUND_EPSILON
        assert np.all(np.isnan(y[x < bound]))  # no TN density below its support
        assert np.nanmax(y) == pytest.approx(state.density["TN"].max())  # its spike is drawn
        assert list(panel[5].x) == [bound, bound] and list(panel[6].x) == [state.h_star, state.h_star]
        assert list(panel[1].x) == [state.estimate["N"]] * 2 and list(panel[4].x) == [state.estimate["TN"]] * 2
        # N+clip: N's mu where it reaches l, l itself where it falls below
        assert panel[2].x[0] == (state.lower if state.mu["N"] < state.lower else state.mu["N"])
        clipped_up += state.mu["N"] < state.lower
        assert f"h* = {state.h_star:.0f}, l = {state.lower:.0f}" == figure.layout.annotations[k].text
    assert clipped_up  # the states beyond the training sizes, where N's mu falls below the bound


def test_inline_renderer_uses_no_cdn_and_no_bundle_per_figure(monkeypatch):
    monkeypatch.setattr(pio.renderers, "default", pio.renderers.default)  # restored after the test
    rendered = {}
    monkeypatch.setattr("IPython.display.display", lambda obj: rendered.setdefault("html", obj.data))
    figures.setup_notebook_plotting()
    assert pio.renderers.default == f"plotly_mimetype+{figures.INLINE_RENDERER}"
    assert figures.BUNDLE_MARKER in rendered["html"] and "plotly.js v" in rendered["html"]
    assert not re.findall(r"<script\b[^>]*\bsrc\s*=", rendered["html"])
    bundle = pio.renderers[figures.INLINE_RENDERER].to_mimebundle(figures.message_figure("hello").to_dict())
    html = bundle["text/html"]
    assert "Plotly.newPlot" in html
    assert "<script src" not in html and "cdn" not in html.lower()
    assert len(html) < 100_000  # the figure, not the 5 MB library


def test_inline_figures_are_numbered_in_display_order(monkeypatch):
    monkeypatch.setattr(pio.renderers, "default", pio.renderers.default)
    monkeypatch.setattr("IPython.display.display", lambda obj: None)
    figures.setup_notebook_plotting()
    def shown(text: str) -> str:  # what fig.show() puts in the notebook, through plotly's renderer copies
        return pio.renderers._build_mime_bundle(figures.message_figure(text).to_dict())["text/html"]

    first = [shown(text) for text in ("a", "b")]
    assert [re.findall(r'<div id="([^"]+)" class="plotly-graph-div"', html) for html in first] == [
        ["tnlib-figure-1"], ["tnlib-figure-2"]]
    figures.setup_notebook_plotting()  # a rerun of the notebook numbers from 1 again
    assert shown("a") == first[0]


def test_explorer_figure_shows_a_message_for_invalid_widget_values():
    figure = figures.explorer_figure(0.0, 1.0, 2.0, 1.0, 0.5)
    assert len(figure.data) == 0 and "low must be < high" in figure.layout.annotations[0].text
    unbounded = figures.explorer_figure(0.0, 1.0, 2.0, 1.0, 0.5, low_is_infinite=True, high_is_infinite=True)
    assert traces_by_name(unbounded)[figures.MEAN_LINE].x[0] == pytest.approx(0.0, abs=1e-12)


def test_explorer_controls_redraw_once_per_change_and_once_per_preset(monkeypatch):
    monkeypatch.setattr(pio.renderers, "default", pio.renderers.default)  # restored after the test
    monkeypatch.setattr("IPython.display.display", lambda obj: None)
    # as in a kernel, where a figure's _ipython_display_ shows it in the cell, outside the widget
    shown_outside = []
    monkeypatch.setattr(go.Figure, "_ipython_display_", lambda figure: shown_outside.append(figure))
    figures.setup_notebook_plotting()  # as in the notebook: figures render to the plotly mimetype and HTML
    params = notebook_parameters.check_explorer_parameters(0.0, 1.0, 0.2, "inf", 0.5)
    controls = figures.explorer_controls(params)
    assert controls.current_values()["high_is_infinite"] is True
    calls = []
    controls.on_change(lambda: calls.append(controls.current_values()))
    controls.values["loc"].value = 1.0
    assert len(calls) == 1 and calls[0]["loc"] == 1.0
    controls.preset.value = (1.0, 3.0)  # "(1, 3): mu left of the bounds"
    assert len(calls) == 2
    assert calls[1] == {"loc": 0.0, "scale": 1.0, "low": 1.0, "high": 3.0, "observed": 0.5,
                        "low_is_infinite": False, "high_is_infinite": False}
    figures.show_in_output(controls.output, figures.explorer_figure(**controls.current_values()))
    figures.show_in_output(controls.output, figures.explorer_figure(**controls.current_values()))
    assert len(controls.output.outputs) == 1 and not shown_outside
    data = controls.output.outputs[0]["data"]
    assert "application/vnd.plotly.v1+json" in data and "Plotly.newPlot" in data["text/html"]


def test_the_explorers_interactive_section_shows_its_panel_and_redraws_its_figure_at_every_change(monkeypatch):
    monkeypatch.setattr(pio.renderers, "default", pio.renderers.default)  # restored after the test
    shown = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    figures.setup_notebook_plotting()
    shown.clear()  # (the plotting set-up displays plotly.js once)
    controls = figures.show_explorer_controls(notebook_parameters.check_explorer_parameters(0.0, 1.0, 0.2, "inf", 0.5))
    assert shown == [controls.panel]
    first = controls.output.outputs[0]["data"]["application/vnd.plotly.v1+json"]
    controls.values["loc"].value = 1.0
    assert len(controls.output.outputs) == 1  # replaced, not appended
    assert controls.output.outputs[0]["data"]["application/vnd.plotly.v1+json"] != first


def test_the_bound_nll_figure_fits_the_truncated_curves():
    locs = classroom_demos.bound_loc_grid(5.0, 1.0, 0.1)
    curves = classroom_demos.bound_nll_curves(5.0, 1.0, 0.1, locs)
    figure = figures.bound_nll_figure(locs, curves, 5.0)
    low, high = figure.layout.yaxis.range
    truncated = np.concatenate([v for k, v in curves.items() if k != classroom_demos.GAUSSIAN_LABEL])
    assert low < np.nanmin(truncated) and np.nanmax(truncated) < high < 15  # the Gaussian reaches ~300 at the edge
    assert max(curves[classroom_demos.GAUSSIAN_LABEL]) > 100


def test_the_sample_histogram_starts_its_bins_at_the_support():
    samples = distribution_properties.tnlib_samples(0.0, 1.0, 9.0, 10.0, 2000, seed=0)
    figure = figures.sample_histogram_figure(samples, 0.0, 1.0, 9.0, 10.0, bins=40)
    bins = figure.data[0].xbins
    assert bins.start >= 9.0 and bins.end <= 10.0 and bins.size == pytest.approx((bins.end - bins.start) / 40)
    assert [trace.name for trace in figure.data] == ["samples", "density"] and max(figure.data[1].y) > 8


def test_explorer_titles_show_significant_digits_and_no_negative_zero():
    plain = figures.truncated_normal_figure(0.0, 1.0, -math.inf, math.inf, observed=0.5)
    assert "log Z 0)" in plain.layout.title.text and "log Z -0" not in plain.layout.title.text
    tiny = figures.truncated_normal_figure(-1.0, 1.0, -1e-5, 2e-5)
    mean = float(demo_tensors.truncated_normal(-1.0, 1.0, -1e-5, 2e-5).mean)
    assert f"TN mean {mean:.4g}," in tiny.layout.title.text and "TN mean 0.000" not in tiny.layout.title.text
    assert tiny.layout.yaxis.tickformat == ".3~g"  # a density near 3e4 is not written with an SI prefix


def _step_update(figure: go.Figure, index: int) -> tuple[dict, dict]:
    """What the slider's step ``index`` sets: (trace data, layout)."""
    return tuple(figure.layout.sliders[0].steps[index].args)


@pytest.mark.parametrize("example", explorer.THINGS_TO_TRY, ids=lambda example: example.slider_label.strip(" ="))
def test_each_slider_step_is_the_static_figure_of_its_setting(example):
    figure = figures.stepped_truncated_normal_figure(example.settings, example.step_labels, example.observed,
                                                     example.slider_label, num_points=101)
    slider = figure.layout.sliders[0]
    assert [step.label for step in slider.steps] == list(example.step_labels)
    assert slider.currentvalue.prefix == example.slider_label
    for index, (loc, scale, low, high) in enumerate(example.settings):
        data, layout = _step_update(figure, index)
        static = figures.truncated_normal_figure(loc, scale, low, high, example.observed, num_points=101)
        assert len(data["x"]) == len(data["y"]) == len(static.data)
        for x, y, trace in zip(data["x"], data["y"], static.data):
            np.testing.assert_allclose(x, trace.x, rtol=1e-5)
            np.testing.assert_allclose(y, trace.y, rtol=1e-5, atol=1e-300)
        assert layout["title.text"] == static.layout.title.text
        assert layout["xaxis.range"] == list(static.layout.xaxis.range)
        assert layout["yaxis.range"] == list(static.layout.yaxis.range)
        assert len(layout["shapes"]) == len(static.layout.shapes)
        assert [a["text"] for a in layout["annotations"]] == [a.text for a in static.layout.annotations]
        # the truncated mean each step draws, against scipy's
        names = [trace.name for trace in static.data]
        mean = data["x"][names.index(figures.MEAN_LINE)][0]
        a, b = (low - loc) / scale, (high - loc) / scale
        assert mean == pytest.approx(scipy.stats.truncnorm.mean(a, b, loc=loc, scale=scale), rel=1e-5)
    # the figure opens at its active step (the first), as that step draws it
    first_data, first_layout = _step_update(figure, 0)
    np.testing.assert_allclose(figure.data[1].y, first_data["y"][1], rtol=1e-5)
    assert figure.layout.title.text == first_layout["title.text"]


def test_the_things_to_try_show_what_their_answers_say():
    tail, closed_bound, window = explorer.THINGS_TO_TRY
    # 1: the mean stays above l by about sigma^2 / (l - mu) as sigma shrinks
    gaps = [explorer.describe_truncated_normal(*setting, tail.observed)["mean"] - setting[2] for setting in tail.settings]
    assert all(gap > 0 for gap in gaps) and gaps == sorted(gaps, reverse=True)
    loc, scale, low, _ = tail.settings[-1]
    assert gaps[-1] == pytest.approx(scale ** 2 / (low - loc), rel=1e-2)
    # 2: with x = l the truncated NLL keeps falling as mu moves left: no minimum
    assert closed_bound.observed == closed_bound.settings[0][2]
    nlls = [explorer.describe_truncated_normal(*setting, closed_bound.observed)["truncated_nll"]
            for setting in closed_bound.settings]
    assert all(later < earlier for earlier, later in zip(nlls, nlls[1:]))
    # 3: log Z rises towards 0 as the window widens and is still below 0 at its widest
    log_z = [explorer.describe_truncated_normal(*setting, window.observed)["log_normalizer"] for setting in window.settings]
    assert all(earlier < later < 0.0 for earlier, later in zip(log_z, log_z[1:]))


def test_a_stepped_figure_names_the_step_whose_setting_is_invalid():
    with pytest.raises(ValueError, match=r"step '2'.*low"):
        figures.stepped_truncated_normal_figure([(0.0, 1.0, 0.0, 1.0), (0.0, 1.0, 2.0, 1.0)], ["1", "2"])
    with pytest.raises(ValueError, match="one label per setting"):
        figures.stepped_truncated_normal_figure([(0.0, 1.0, 0.0, 1.0)], ["1", "2"])
    with pytest.raises(ValueError, match="active step 3"):
        figures.stepped_truncated_normal_figure([(0.0, 1.0, 0.0, 1.0)], ["1"], active=3)


def test_the_open_bound_slider_steps_through_the_margins_with_exact_curves():
    margins = (1.0, 0.2, 0.05)
    figure = figures.open_bound_slider_figure(5.0, 1.0, margins, active=1)
    assert figure.layout.sliders[0].active == 1 and [step.label for step in figure.layout.sliders[0].steps] == ["1", "0.2", "0.05"]
    minimisers = []
    for index, margin in enumerate(margins):
        data, layout = _step_update(figure, index)
        open_index = data["name"].index(classroom_demos.OPEN_LABEL)
        locs, nll = np.asarray(data["x"][open_index]), np.asarray(data["y"][open_index], dtype=float)
        # scipy's truncnorm (an independent implementation) for the open bound l - epsilon
        expected = -scipy.stats.truncnorm.logpdf(5.0, (5.0 - margin - locs), np.inf, loc=locs)
        np.testing.assert_allclose(nll, expected, rtol=1e-5, atol=1e-4)  # x and y both kept to 6 digits
        minimisers.append(locs[np.argmin(nll)])
        # Exercise 4's approximate minimiser is marked, and the grid reaches below it
        lines = {annotation["text"]: shape["x0"] for shape, annotation in zip(layout["shapes"], layout["annotations"])}
        assert lines["l - eps - sigma^2/eps"] == pytest.approx(5.0 - margin - 1.0 / margin)
        assert lines["h* = l"] == 5.0 and locs.min() < lines["l - eps - sigma^2/eps"]
        assert f"open bound l - {margin:g}" in layout["title.text"]
    assert minimisers == sorted(minimisers, reverse=True) and minimisers[-1] < -10  # smaller epsilon, lower mu


def test_a_slider_figure_needs_steps_that_draw_the_same_traces():
    one = figures.curves_figure([0, 1], {"a": [0, 1]}, "t", "x", "y")
    two = figures.curves_figure([0, 1], {"a": [0, 1], "b": [1, 0]}, "t", "x", "y")
    with pytest.raises(ValueError, match="different numbers of traces"):
        figures.slider_figure([one, two], ["1", "2"])
    with pytest.raises(ValueError, match="one label per figure"):
        figures.slider_figure([], [])


def test_the_open_bound_slider_opens_at_the_papers_margin():
    margins = classroom_demos.OPEN_BOUND_MARGINS_SHOWN
    figure = figures.open_bound_slider_figure(5.0, 1.0, margins)
    assert margins[figure.layout.sliders[0].active] == OPEN_BOUND_EPSILON
    assert f"open bound l - {OPEN_BOUND_EPSILON:g}" in figure.layout.title.text
    assert figures.open_bound_slider_figure(5.0, 1.0, (1.0, 0.5)).layout.sliders[0].active == 0


def test_a_density_too_narrow_for_double_precision_is_named_not_drawn_empty():
    # sigma 1e-10 under a bound 1e10 sigmas away: the mass lies within 1e-20 of l = 1, below float64's spacing there
    figure = figures.explorer_figure(0.0, 1e-10, 1.0, 5.0, 1.0, high_is_infinite=True)
    assert not figure.data and "too narrow to draw" in figure.layout.annotations[0].text
    with pytest.raises(ValueError, match="too narrow to draw"):
        figures.density_view(0.0, 1e-10, 1.0, math.inf)
    # a narrow density that double precision resolves is drawn, on a finite view around its mass
    view = figures.density_view(0.0, 1e-3, 1.0, math.inf)
    assert all(math.isfinite(v) for v in view) and view[0] < 1.0 + 1e-6 < view[1]
    assert figures.explorer_figure(0.0, 1e-3, 1.0, 5.0, 1.0, high_is_infinite=True).data


def test_titles_tell_apart_positions_that_differ_by_less_than_four_digits():
    title = figures.truncated_normal_figure(0.0, 0.01, 1000.0, math.inf, 1000.00002).layout.title.text
    assert "l=1000," in title and "x=1000.00002:" in title and "TN mean 1000.0000001," in title
    narrow = figures.truncated_normal_figure(0.0, 1.0, 0.3, 0.3 + 1e-9, 0.3 + 5e-10).layout.title.text
    assert "l=0.3, u=0.300000001)" in narrow
    assert figures.distinct_formats([1.0, 1.0, 2.0]) == ["1", "1", "2"]  # equal values stay equal
    assert figures.distinct_formats([0.0, -0.0, math.inf]) == ["0", "0", "inf"]


def test_the_seed_pairs_figure_draws_one_line_per_seed_and_the_means():
    values = {"TN": {0: 1.0, 1: 2.0, 2: 1.5}, "N": {0: 1.5, 1: 1.8, 2: 2.5}}
    figure = figures.seed_pairs_figure(values, "a title")
    lines, means = figure.data[:-1], figure.data[-1]
    assert [tuple(t.y) for t in lines] == [(1.5, 1.0), (1.8, 2.0), (2.5, 1.5)]
    assert [t.line.color for t in lines] == ["#1f77b4", "#ff7f0e", "#1f77b4"]  # TN lower, higher, lower
    assert [t.line.dash for t in lines] == ["solid", "solid", "dot"]  # the first two seeds solid
    assert tuple(means.y) == (pytest.approx(29 / 15), pytest.approx(1.5))
    assert lines[1].name == "seed 1: TN - N = +0.20"
    assert [t.text[1] for t in lines] == ["seed 0", "seed 1", "seed 2"]  # ends 0.5 apart of a 1.5 range


def test_the_seed_pairs_figure_gives_seeds_that_end_together_one_label():
    # TN's ends: 2.15 and 2.151 (seeds 4 and 1) within 4% of the range 2.0-2.53, 2.25 clear of them, 2.53 alone
    values = {"TN": {0: 2.53, 1: 2.151, 3: 2.25, 4: 2.15}, "N": {0: 2.37, 1: 2.16, 3: 2.0, 4: 2.5}}
    figure = figures.seed_pairs_figure(values, "a title")
    labels = {t.name.split(":")[0]: t.text[1] for t in figure.data[:-1]}
    assert labels == {"seed 0": "seed 0", "seed 1": "", "seed 3": "seed 3", "seed 4": "seeds 1, 4"}
    chained = figures.seed_pairs_figure({"TN": {0: 0.0, 1: 0.03, 2: 0.06}, "N": {0: 1.0, 1: 1.0, 2: 1.0}}, "t")
    assert [t.text[1] for t in chained.data[:-1]] == ["seeds 0, 1, 2", "", ""]  # neighbours of neighbours join


def test_holms_step_down_figure_fills_the_ranks_holm_rejects_under_its_staircase():
    from tnlib.experiments.reporting.seed_statistics import holm_adjusted

    p_values = [0.2, 0.004, 0.03, 0.011, 0.019, 1e-7]
    figure = figures.holm_step_down_figure(p_values, "six p-values")
    rejected, kept, alone, holm, bonferroni = figure.data
    assert list(rejected.y) == [1e-7, 0.004, 0.011] and list(rejected.x) == [1, 2, 3]
    assert sum(a < 0.05 for a in holm_adjusted(p_values)) == len(rejected.x)
    assert list(kept.y) == [0.019, 0.03, 0.2] and kept.marker.symbol == "circle-open"
    assert list(holm.y) == pytest.approx([0.05 / 6, 0.05 / 5, 0.05 / 4, 0.05 / 3, 0.05 / 2, 0.05])
    assert list(bonferroni.y) == pytest.approx([0.05 / 6] * 6) and list(alone.y) == pytest.approx([0.05] * 6)
    assert figure.layout.yaxis.type == "log"


def test_the_convergence_figure_draws_each_configurations_ratios_with_their_intervals_filled_below_one_after_holm():
    from tnlib.notebook.seed_comparison import ConvergencePoint

    by_config = {"learn/ff": [ConvergencePoint("1/2", 300, 0.5, 0.4, 0.7, "lower", "lower"),
                              ConvergencePoint("end", 900, 0.9, 0.7, 1.2, "within noise", "within noise")],
                 "fixed/none": [ConvergencePoint("1/4", 150, 0.8, 0.7, 0.9, "lower", "within noise"),
                                ConvergencePoint("1/2", 300, 1.1, None, None, "not testable at 2 seeds",
                                                 "not testable at 2 seeds")]}
    figure = figures.convergence_ratio_figure(by_config, "two cells")
    learned, fixed = figure.data
    assert (learned.name, list(learned.x), list(learned.y)) == ("learn/ff", ["1/2", "end"], [0.5, 0.9])
    assert list(learned.error_y.array) == pytest.approx([0.2, 0.3])
    assert list(learned.error_y.arrayminus) == pytest.approx([0.1, 0.2])
    assert list(learned.marker.symbol) == ["circle", "circle-open"]  # below 1 after Holm: filled
    assert list(fixed.marker.symbol) == ["circle-dot", "circle-open"]  # below 1 on its own only: dotted
    assert list(fixed.error_y.array) == pytest.approx([0.1, 0.0])  # no interval at 2 seeds: no bar
    assert list(figure.layout.xaxis.categoryarray) == ["1/4", "1/2", "end"]  # the points in training's order
    assert figure.layout.yaxis.type == "log" and figure.layout.shapes[0].y0 == 1
    assert list(figure.layout.yaxis.tickvals) == pytest.approx([0.4, 0.5, 0.6, 0.8, 1, 1.5])  # round, around 0.4-1.2
    wide = figures.convergence_ratio_figure(
        {"learn/none": [ConvergencePoint("1", 6000, 0.1, 0.09, 0.11, "lower", "lower")], **by_config}, "wide")
    assert list(wide.layout.yaxis.tickvals) == pytest.approx([0.05, 0.1, 0.2, 0.5, 1, 2])  # no digit crowding near 1
