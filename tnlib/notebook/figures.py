"""Plotly figure builders for the notebooks, and the notebook plotting setup.

Every figure the notebooks show is built here and returned as a ``plotly.graph_objects.Figure`` (tested in
``tests/test_figures.py``); the notebooks only choose parameters and call ``.show()``.

Offline rendering: :func:`setup_notebook_plotting` embeds the plotly.js bundle once, in the output of the
cell that calls it, and makes every later ``fig.show()`` emit two representations: the plotly mimetype,
which JupyterLab draws with its bundled plotly extension, and a ``text/html`` div whose script uses that
embedded bundle, which nbconvert keeps when it writes HTML. Nothing is loaded from a CDN (plotly's own
``notebook`` renderer adds a MathJax CDN script to every figure, hence the renderer below).
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import torch
from plotly.io.base_renderers import MimetypeRenderer

from tnlib.experiments.reporting.figure_html import compact_figure_dict
from tnlib.experiments.reporting import calibration_summary
from tnlib.experiments.reporting.report_figures import LOG_AXIS_TICKS
from tnlib.learning.calibration import Calibration
from tnlib.notebook import (
    classroom_demos,
    demo_tensors,
    explorer,
    label_gaps,
    notebook_parameters,
    synthetic_regression,
    trained_distributions,
)
from tnlib.paper import OPEN_BOUND_EPSILON

#: Renderer name registered by :func:`setup_notebook_plotting`.
INLINE_RENDERER = "tnlib_inline_html"
#: Marker in the HTML that carries the embedded plotly.js bundle (tests look for it).
BUNDLE_MARKER = "tnlib: embedded plotly.js bundle"

# Stable trace names: tests and legend toggling rely on them.
NORMAL_PDF = "Normal PDF"
TRUNCATED_PDF = "Truncated Normal PDF"
LOC_LINE = "mu (Normal mean = mode)"
MEAN_LINE = "TN mean (heuristic)"
MODE_MARKER = "TN mode"
OBSERVED_LINE = "observed x = h*"

_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


class _InlineHtmlRenderer(MimetypeRenderer):
    """``text/html`` figures that rely on the plotly.js bundle already embedded in the notebook. Each figure's
    element is numbered in display order (plotly's default is a random id), so rendering a notebook twice gives
    the same HTML and a committed report's diff shows only what changed."""

    def __init__(self) -> None:
        # shared by the shallow copies plotly makes of a renderer for every show()
        self.numbers = itertools.count(1)

    def to_mimebundle(self, fig_dict: dict) -> dict[str, str]:
        html = pio.to_html(
            compact_figure_dict(fig_dict),  # the HTML a rendered notebook keeps: digits no screen shows left out
            include_plotlyjs=False,
            include_mathjax=False,
            full_html=False,
            default_width="100%",
            default_height=480,
            validate=False,
            div_id=f"tnlib-figure-{next(self.numbers)}",
        )
        return {"text/html": html}


def setup_notebook_plotting() -> None:
    """Make plotly figures display in JupyterLab and in nbconvert HTML without network access.

    Call it once, near the top of a notebook: its cell output carries the plotly.js bundle (about 5 MB), so
    calling it in several cells would embed the bundle several times.
    """
    from IPython.display import HTML, display
    from plotly.offline import get_plotlyjs

    pio.renderers[INLINE_RENDERER] = _InlineHtmlRenderer()
    pio.renderers.default = f"plotly_mimetype+{INLINE_RENDERER}"
    display(
        HTML(
            f"<!-- {BUNDLE_MARKER} -->\n"
            "<script type=\"text/javascript\">window.PlotlyConfig = {MathJaxConfig: 'local'};</script>\n"
            f"<script type=\"text/javascript\">{get_plotlyjs()}</script>"
        )
    )


# ----------------------------------------------------------------------------------------------------------
# Truncated Gaussian densities
# ----------------------------------------------------------------------------------------------------------


def _finite_or_none(values: np.ndarray) -> list[float | None]:
    """Plotly draws a gap at ``None``; non-finite values would break the JSON or the axis range."""
    return [float(v) if math.isfinite(v) else None for v in np.asarray(values, dtype=float)]


#: Probability left out on each side of the truncated distribution's bulk (its icdf quantiles): the view
#: always shows the bulk, where the density's mass is.
BULK_TAIL_PROBABILITY = 1e-4
#: The view may be at most this many times wider than the truncated bulk. Context (the finite bounds, the
#: Normal's mu +- 4 sigma) is added only within it, nearest first, so that an extreme density (mu far
#: outside the bounds, a far tail, a very narrow window) is drawn at a readable width instead of as a spike
#: under the bound lines.
MAX_VIEW_TO_BULK = 6.0


#: The narrowest view the density figures draw, relative to the magnitude of x there: an axis narrower than this
#: holds only a few hundred float64 values and its tick labels cannot tell them apart.
DRAWABLE_RELATIVE_WIDTH = 1e-10


def density_view(loc: float, scale: float, low: float, high: float) -> tuple[float, float]:
    """The x range the density figures show: the truncated bulk (``icdf`` of ``BULK_TAIL_PROBABILITY`` and of
    its complement) widened to the finite bounds and the Normal's bulk (mu +- 4 sigma), nearest first, as far as
    the view stays at most ``MAX_VIEW_TO_BULK`` times the bulk's width; plus a 5% margin on each side. Raises
    ``ValueError`` saying why when the bulk is narrower than :data:`DRAWABLE_RELATIVE_WIDTH` of its magnitude (sigma
    many orders below a far bound): no axis could show it."""
    distribution = demo_tensors.truncated_normal(loc, scale, low, high)
    quantiles = distribution.icdf(torch.tensor([BULK_TAIL_PROBABILITY, 1.0 - BULK_TAIL_PROBABILITY], dtype=demo_tensors.DTYPE))
    bulk_low, bulk_high = (float(value) for value in quantiles)
    if not bulk_high > bulk_low:  # an interval a few ulps wide: the bounds are the bulk
        bulk_low, bulk_high = low, high
    scale_of_x = max(abs(bulk_low), abs(bulk_high), 1e-300) if math.isfinite(bulk_low + bulk_high) else math.inf
    if not (math.isfinite(bulk_high - bulk_low) and bulk_high - bulk_low > DRAWABLE_RELATIVE_WIDTH * scale_of_x):
        mean, stddev = float(distribution.mean), float(distribution.stddev)
        raise ValueError(f"the truncated density is too narrow to draw at x = {mean:.6g}: its mass lies within "
                         f"about {max(stddev, 0.0):.3g} of its mean (sigma {scale:.3g} with a bound "
                         f"{abs(mean - loc) / scale:.3g} sigmas away), below what a double-precision axis can show")
    widest = MAX_VIEW_TO_BULK * (bulk_high - bulk_low)
    view_low, view_high = bulk_low, bulk_high
    context = [bound for bound in (low, high) if math.isfinite(bound)] + [loc - 4.0 * scale, loc + 4.0 * scale]
    for point in sorted(context, key=lambda x: max(bulk_low - x, x - bulk_high, 0.0)):
        if max(view_high, point) - min(view_low, point) <= widest:
            view_low, view_high = min(view_low, point), max(view_high, point)
    margin = 0.05 * (view_high - view_low)
    return view_low - margin, view_high + margin


def density_grid(loc: float, scale: float, low: float, high: float, num_points: int = 801) -> np.ndarray:
    """Sorted x values covering :func:`density_view`, the finite bounds and the truncated bulk.

    A uniform grid over the view is joined with a dense one over the truncated distribution's own bulk (mean
    +- 8 stddev, inside the bounds), so that a narrow density is still resolved; the bounds themselves are on
    the grid so the density's jumps are drawn sharply.
    """
    distribution = demo_tensors.truncated_normal(loc, scale, low, high)
    mean, stddev = float(distribution.mean), float(distribution.stddev)
    bulk_low = max(low, mean - 8.0 * stddev)
    bulk_high = min(high, mean + 8.0 * stddev)
    view_low, view_high = density_view(loc, scale, low, high)
    coarse = np.linspace(view_low, view_high, num_points)
    dense = np.linspace(bulk_low, bulk_high, num_points)
    bounds = [bound for bound in (low, high) if math.isfinite(bound)]
    return np.unique(np.concatenate([coarse, dense, bounds]))


def truncated_density(loc: float, scale: float, low: float, high: float, x: np.ndarray) -> np.ndarray:
    """The Truncated Normal PDF on ``x``: zero outside ``[low, high]``."""
    values = torch.as_tensor(x, dtype=demo_tensors.DTYPE)
    low_tensor = torch.tensor(low, dtype=demo_tensors.DTYPE)
    high_tensor = torch.tensor(high, dtype=demo_tensors.DTYPE)
    nll = demo_tensors.truncated_nll(demo_tensors.truncated_normal(loc, scale, low, high), values, low_tensor, high_tensor)
    return torch.exp(-nll).numpy()


def _with_jumps(x: np.ndarray, density: np.ndarray, low: float, high: float) -> tuple[np.ndarray, np.ndarray]:
    """Insert a zero at each finite bound (which is on ``x``), so the line drops vertically there and the
    trapezoid integral of the line is the integral of the density."""
    if math.isfinite(low):
        index = int(np.searchsorted(x, low, side="left"))  # (low, 0) goes just before (low, pdf(low))
        x, density = np.insert(x, index, low), np.insert(density, index, 0.0)
    if math.isfinite(high):
        index = int(np.searchsorted(x, high, side="right"))  # (high, 0) goes just after (high, pdf(high))
        x, density = np.insert(x, index, high), np.insert(density, index, 0.0)
    return x, density


# Legend in rows between the title and the plot: below the plot it covered the x-axis title once it wrapped
# (windows <= 1400 px), and a vertical legend beside the plot scrolled and hid entries in JupyterLab's shorter
# output. The title is pinned to the figure's top and the top margin holds the title's three lines and up to
# four legend rows (about 560 px of plot width for the presets' long labels), so neither covers the other.
_LEGEND_ABOVE_THE_PLOT = dict(
    legend=dict(orientation="h", xanchor="left", x=0.0, yanchor="bottom", y=1.02),
    margin=dict(t=170, b=60),
    height=600,
)
_TITLE_AT_THE_TOP = dict(yref="container", y=1.0, yanchor="top", pad=dict(t=12), x=0.0, xanchor="left")


def _format_bound(value: float) -> str:
    return "inf" if value == math.inf else "-inf" if value == -math.inf else f"{value:g}"


def distinct_formats(values: Sequence[float], least: int = 4) -> list[str]:
    """``values`` with the fewest significant digits (at least ``least``, at most 17) at which every two that
    differ print differently: a mean 1e-5 above l = 1000 prints as 1000.00001, not as "1000" beside "l=1000"."""
    finite = sorted({value for value in values if math.isfinite(value)})
    digits = least
    while digits < 17 and len({f"{value:.{digits}g}" for value in finite}) < len(finite):
        digits += 1
    return ["inf" if value == math.inf else "-inf" if value == -math.inf else f"{value + 0.0:.{digits}g}"
            for value in values]


def truncated_normal_figure(
    loc: float,
    scale: float,
    low: float,
    high: float,
    observed: float | None = None,
    num_points: int = 801,
) -> go.Figure:
    """Normal and Truncated Normal PDFs with mu, the truncated mean and mode, and an observed ``x = h*``.

    Traces (by name): :data:`NORMAL_PDF`, :data:`TRUNCATED_PDF`, :data:`LOC_LINE`, :data:`MEAN_LINE`,
    :data:`MODE_MARKER` and, when ``observed`` is given, :data:`OBSERVED_LINE`. The title gives the truncated
    mean and mode and, for ``observed``, its NLL under both distributions. Finite bounds are dashed lines,
    the region outside them is shaded.
    """
    params = notebook_parameters.check_explorer_parameters(loc, scale, low, high, 0.0 if observed is None else observed, num_points)
    loc, scale, low, high = params.loc, params.scale, params.low, params.high
    summary = explorer.describe_truncated_normal(loc, scale, low, high, params.observed)
    grid = density_grid(loc, scale, low, high, num_points)
    normal_pdf = np.exp(-0.5 * ((grid - loc) / scale) ** 2) / (scale * math.sqrt(2 * math.pi))
    truncated_x, truncated_pdf = _with_jumps(grid, truncated_density(loc, scale, low, high, grid), low, high)
    view_low, view_high = density_view(loc, scale, low, high)
    shown = (grid >= view_low) & (grid <= view_high)  # the grid also holds bounds and bulk points beyond the view
    top = 1.08 * max(float(normal_pdf[shown].max()), float(truncated_pdf.max()))

    figure = go.Figure()
    figure.add_trace(go.Scatter(x=grid, y=normal_pdf, name=NORMAL_PDF, mode="lines", line=dict(color=_COLORS[7], dash="dash")))
    figure.add_trace(
        go.Scatter(x=truncated_x, y=truncated_pdf, name=TRUNCATED_PDF, mode="lines", line=dict(color=_COLORS[0], width=3))
    )
    figure.add_trace(
        go.Scatter(x=[loc, loc], y=[0, top], name=LOC_LINE, mode="lines", line=dict(color=_COLORS[7], dash="dot"))
    )
    figure.add_trace(
        go.Scatter(x=[summary["mean"]] * 2, y=[0, top], name=MEAN_LINE, mode="lines", line=dict(color=_COLORS[3], width=2))
    )
    mode_height = float(truncated_density(loc, scale, low, high, np.array([summary["mode"]]))[0])
    figure.add_trace(
        go.Scatter(
            x=[summary["mode"]], y=[mode_height], name=MODE_MARKER, mode="markers",
            marker=dict(color=_COLORS[1], size=11, symbol="diamond"),
        )
    )
    if observed is not None:
        figure.add_trace(
            go.Scatter(
                x=[params.observed] * 2, y=[0, top], name=OBSERVED_LINE, mode="lines", line=dict(color=_COLORS[2], dash="dashdot")
            )
        )
    for bound in (low, high):
        if math.isfinite(bound):
            figure.add_vline(x=bound, line=dict(color="black", dash="dash", width=1))
    if math.isfinite(low) and low > view_low:
        figure.add_vrect(x0=view_low, x1=low, fillcolor="gray", opacity=0.12, line_width=0)
    if math.isfinite(high) and high < view_high:
        figure.add_vrect(x0=high, x1=view_high, fillcolor="gray", opacity=0.12, line_width=0)
    # The view follows the truncated mass, so mu (far from the bounds) or x (beyond the bulk) can lie outside it:
    # each is then named, with its value, at the edge it lies beyond, instead of silently missing.
    beyond = [(name, value) for name, value in (("mu", loc), ("mean", summary["mean"]), ("mode", summary["mode"]),
                                                 ("x", None if observed is None else params.observed))
              if value is not None and not view_low <= value <= view_high]
    for row, (name, value) in enumerate(beyond):
        left = value < view_low
        figure.add_annotation(
            x=view_low if left else view_high, xref="x", xanchor="left" if left else "right",
            y=0.97 - 0.08 * row, yref="paper", showarrow=False, bgcolor="rgba(255, 255, 255, 0.85)",
            text=f"\u25c0 {name} = {value:.4g}" if left else f"{name} = {value:.4g} \u25b6", name=f"{name} off-screen",
        )

    # Z from log Z: a far-tail Z underflows exp() to 0 while log Z is finite, and "Z 0" would be wrong.
    # Four significant digits, not three decimals (a mean of 1e-5 is not 0.000), and log Z = 0 for the plain
    # Normal, not -0.
    # The positions on the x axis (mu, l, u, x, the mean and mode) with enough digits to tell apart every two that
    # differ: x a hair above l, or a mean 1e-5 above l = 1000, must not print as l itself.
    shown_x = observed if observed is not None else summary["mean"]
    mu_text, low_text, high_text, x_text, mean_text, mode_text = distinct_formats(
        [loc, low, high, shown_x, summary["mean"], summary["mode"]])
    statistics = (
        f"TN mean {mean_text}, mode {mode_text}, kept mass Z "
        f"{explorer.format_probability(summary['log_normalizer'])} (log Z {summary['log_normalizer'] + 0.0:.4g})"
    )
    if observed is not None:
        statistics += (
            f"<br>NLL of x={x_text}: Normal {summary['normal_nll']:.4g}, TN {summary['truncated_nll']:.4g}"
        )
    figure.update_layout(
        title=dict(
            text=f"TN(mu={mu_text}, sigma={scale:.4g}, l={low_text}, u={high_text})<br><sup>{statistics}</sup>",
            **_TITLE_AT_THE_TOP,
        ),
        xaxis_title="x (cost-to-go h*)",
        yaxis_title="density p(x)",
        yaxis_range=[0, top],
        yaxis_tickformat=".3~g",  # plotly's default SI prefixes read a density of 2e11 as "200B"
        xaxis_range=[view_low, view_high],
        **_LEGEND_ABOVE_THE_PLOT,
        template="plotly_white",
    )
    return figure


def preset_bounds_figure(
    loc: float = 0.0,
    scale: float = 1.0,
    presets: Sequence[tuple[str, float, float]] = explorer.PRESET_BOUNDS,
    num_points: int = 801,
) -> go.Figure:
    """The paper's Figure 1: ``TN(loc, scale, l, u)`` PDFs for several bounds, each with its mean marked.

    Two traces per preset: the PDF (named by the preset label) and its mean (``"mean of " + label``), which
    lies inside the bounds even when ``loc`` does not.
    """
    figure = go.Figure()
    for index, (label, low, high) in enumerate(presets):
        notebook_parameters.check_explorer_parameters(loc, scale, low, high, 0.0, num_points)
        color = _COLORS[index % len(_COLORS)]
        grid = density_grid(loc, scale, low, high, num_points)
        x, density = _with_jumps(grid, truncated_density(loc, scale, low, high, grid), low, high)
        figure.add_trace(go.Scatter(x=x, y=density, name=label, mode="lines", legendgroup=label, line=dict(color=color)))
        mean = float(demo_tensors.truncated_normal(loc, scale, low, high).mean)
        height = float(truncated_density(loc, scale, low, high, np.array([mean]))[0])
        figure.add_trace(
            go.Scatter(
                x=[mean], y=[height], name=f"mean of {label}", mode="markers", legendgroup=label, showlegend=False,
                marker=dict(color=color, size=10, symbol="x"), hovertemplate=f"mean of {label}: %{{x:.3f}}<extra></extra>",
            )
        )
    views = [density_view(loc, scale, low, high) for _, low, high in presets]
    figure.update_layout(
        title=dict(text=f"Truncated Gaussians TN(mu={loc:g}, sigma={scale:g}, l, u); x marks each mean", **_TITLE_AT_THE_TOP),
        xaxis_title="x",
        yaxis_title="density p(x)",
        xaxis_range=[min(view[0] for view in views), max(view[1] for view in views)],
        **_LEGEND_ABOVE_THE_PLOT,
        template="plotly_white",
    )
    return figure


# ----------------------------------------------------------------------------------------------------------
# Generic curves and bars for the classroom notebook
# ----------------------------------------------------------------------------------------------------------


def curves_figure(
    x: Sequence[float] | np.ndarray,
    curves: Mapping[str, Sequence[float] | np.ndarray],
    title: str,
    x_title: str,
    y_title: str,
    log_y: bool = False,
    vertical_lines: Mapping[str, float] | None = None,
) -> go.Figure:
    """One line per entry of ``curves`` (name -> y values on ``x``), optional labelled vertical lines.

    Non-finite y values are left as gaps.
    """
    figure = go.Figure()
    for index, (name, values) in enumerate(curves.items()):
        if len(values) != len(x):
            raise ValueError(f"curve {name!r} has {len(values)} values for {len(x)} x values")
        figure.add_trace(
            go.Scatter(x=list(map(float, x)), y=_finite_or_none(np.asarray(values)), name=name, mode="lines",
                       line=dict(color=_COLORS[index % len(_COLORS)], width=2))
        )
    for name, position in (vertical_lines or {}).items():
        figure.add_vline(x=position, line=dict(color="black", dash="dash", width=1), annotation_text=name,
                         annotation_position="top")
    figure.update_layout(
        title=title, xaxis_title=x_title, yaxis_title=y_title, template="plotly_white",
        yaxis_type="log" if log_y else "linear", legend=dict(orientation="h", yanchor="top", y=-0.2),
    )
    if log_y:
        figure.update_yaxes(**LOG_AXIS_TICKS)
    return figure


def bar_figure(values: Mapping[str, float], title: str, y_title: str) -> go.Figure:
    """A single bar trace, one bar per entry, labelled with its value."""
    figure = go.Figure(
        go.Bar(x=list(values), y=[float(v) for v in values.values()], text=[f"{v:.3f}" for v in values.values()],
               textposition="outside", marker_color=_COLORS[: len(values)])
    )
    figure.update_layout(title=title, yaxis_title=y_title, template="plotly_white")
    return figure


def sample_histogram_figure(samples: np.ndarray, loc: float, scale: float, low: float, high: float,
                            bins: int = 60) -> go.Figure:
    """A density-normalised histogram of ``samples`` with the density of TN(loc, scale, low, high) over it: what a
    correct sampler must match."""
    finite = samples[np.isfinite(samples)]
    start, end = max(float(finite.min()), low), min(float(finite.max()), high)
    # bins from the support's edge: a first bin reaching past it would be half empty and look like a bad sampler
    figure = go.Figure(go.Histogram(x=finite, histnorm="probability density", name="samples", opacity=0.6,
                                    xbins=dict(start=start, end=end, size=(end - start) / bins),
                                    marker_color=_COLORS[0]))
    grid = np.linspace(float(finite.min()), float(finite.max()), 400)
    density = demo_tensors.truncated_normal(loc, scale, low, high).log_prob(torch.as_tensor(grid, dtype=demo_tensors.DTYPE))
    figure.add_trace(go.Scatter(x=grid, y=np.exp(density.numpy()), name="density", mode="lines",
                                line=dict(color=_COLORS[1], width=2)))
    figure.update_layout(title=f"{len(finite):,} samples of TN({loc:g}, {scale:g}, {low:g}, {high:g}) and its density",
                         xaxis_title="x", yaxis_title="density", template="plotly_white", bargap=0.02)
    return figure


def bound_nll_figure(locs: np.ndarray, curves: Mapping[str, np.ndarray], observed: float,
                     margin: float | None = None, scale: float = 1.0) -> go.Figure:
    """Section 6's figure: the NLL of ``h* = l = observed`` against mu for the Gaussian and the closed- and
    open-bound Truncated Gaussians, the y-axis fitted to the two truncated curves (the Gaussian's parabola,
    hundreds of nats at the grid's end, would flatten them). With the open bound's ``margin`` (epsilon), a line
    marks Exercise 4's approximate minimiser of the open-bound curve, ``l - epsilon - sigma^2 / epsilon``."""
    lines = {"h* = l": observed}
    title = f"NLL of h* = l = {observed:g} as a function of mu (sigma = {scale:g})"
    if margin is not None:
        lines["l - eps - sigma^2/eps"] = observed - margin - scale ** 2 / margin
        title += f", open bound l - {margin:g}"
    figure = curves_figure(locs, curves, title, "mu", "NLL of h* (nats)", vertical_lines=lines)
    truncated = np.concatenate([np.asarray(v, dtype=float) for k, v in curves.items() if k != classroom_demos.GAUSSIAN_LABEL])
    truncated = truncated[np.isfinite(truncated)]
    pad = 0.1 * max(float(truncated.max() - truncated.min()), 1.0)
    figure.update_yaxes(range=[float(truncated.min()) - pad, float(truncated.max()) + pad])
    return figure


def open_bound_slider_figure(observed: float, scale: float, margins: Sequence[float],
                             active: int | None = None) -> go.Figure:
    """:func:`bound_nll_figure` for each open-bound margin epsilon in ``margins``, in one :func:`slider_figure`:
    the open-bound curve's minimum moves down as epsilon shrinks, beside Exercise 4's approximation. It opens at
    step ``active``, by default the paper's epsilon where ``margins`` hold it, else the first."""
    if active is None:
        active = list(margins).index(OPEN_BOUND_EPSILON) if OPEN_BOUND_EPSILON in margins else 0
    step_figures = []
    for margin in margins:
        locs = classroom_demos.bound_loc_grid(observed, scale, margin)
        curves = classroom_demos.bound_nll_curves(observed, scale, margin, locs)
        step_figures.append(bound_nll_figure(locs, curves, observed, margin=margin, scale=scale))
    return slider_figure(step_figures, [f"{margin:g}" for margin in margins], "epsilon = ", active)


REFERENCE_LABELS = {"bound": "the bound l alone", "best": "best possible (E[h* | z, l])"}


def regression_loss_figure(result: synthetic_regression.RegressionResult) -> go.Figure:
    """Test MSE of each model's planning heuristic against the training step (log y, over the data's range), like
    the paper's Figure 2, with two dotted references drawn as traces in the legend: the MSE of the bound l alone
    and of the best possible predictor."""
    curves = {synthetic_regression.MODEL_LABELS[kind]: values for kind, values in result.test_mse_curve.items()}
    figure = curves_figure(
        result.recorded_steps, curves, "Test MSE of the planning heuristic during training",
        "training step", "test MSE (log scale)", log_y=True,
    )
    span = [result.recorded_steps[0], result.recorded_steps[-1]]
    for key, value, dash in (("bound", result.lower_bound_mse, "dot"), ("best", result.best_mse, "dash")):
        figure.add_trace(go.Scatter(x=span, y=[value, value], name=REFERENCE_LABELS[key], mode="lines",
                                    line=dict(color="black", dash=dash, width=1)))
    values = [v for curve in curves.values() for v in curve if v is not None and v > 0]
    values += [result.lower_bound_mse, result.best_mse]
    low, high = math.log10(min(values)), math.log10(max(values))
    pad = 0.05 * max(high - low, 0.1)
    # six legend rows under the plot: a taller figure keeps the plot area as tall as the other figures'
    figure.update_yaxes(range=[low - pad, high + pad], **LOG_AXIS_TICKS)
    figure.update_layout(height=600, legend=dict(orientation="h", yanchor="top", y=-0.15))
    return figure


def point_estimate_figure(result: synthetic_regression.RegressionResult) -> go.Figure:
    """Grouped horizontal bars: test MSE of mu, max(mu, l) and the TN mean for each model (one trace per
    estimate). Horizontal because the model names are long: on a vertical chart they were tilted and cut off at
    the figure's edge."""
    models = list(synthetic_regression.MODEL_LABELS)
    labels = [synthetic_regression.MODEL_LABELS[kind] for kind in models]
    figure = go.Figure()
    for index, (name, label) in enumerate(synthetic_regression.ESTIMATE_LABELS.items()):
        values = [result.test_mse[kind].get(name) for kind in models]
        figure.add_trace(
            go.Bar(y=labels, x=values, name=label, orientation="h", marker_color=_COLORS[index],
                   text=[f"{v:.2f}" if v is not None else "" for v in values], textposition="outside",
                   cliponaxis=False)
        )
    # the first model on top, as in the table printed under the figure; a group's traces read top-down too
    figure.update_yaxes(autorange="reversed", automargin=True)
    figure.update_layout(barmode="group", title="Test MSE of each point estimate (lower is better)",
                         xaxis_title="test MSE", template="plotly_white", height=120 + 90 * len(models),
                         legend=dict(traceorder="normal"))
    return figure


# The PIT histograms' bins: ten, so that a calibrated model's bars each hold about a tenth of the states.
PIT_BINS = 10
PIT_LABELS = {"pit": "randomised PIT (h* an integer)", "naive": "naive PIT F(h*)"}


def calibration_figure(result: synthetic_regression.RegressionResult) -> go.Figure:
    """The classroom's section 8b: :func:`pit_histograms_figure` of the synthetic regression's four models."""
    return pit_histograms_figure({synthetic_regression.MODEL_LABELS[kind]: check
                                  for kind, check in result.calibration.items()},
                                 "Calibration: histograms of the PIT on the test states")


def sweep_calibration_figures(rows: Sequence[calibration_summary.CalibrationRow]) -> list[go.Figure]:
    """The experiments notebook's calibration: a :func:`pit_histograms_figure` per model and configuration of
    ``rows`` (:func:`tnlib.experiments.reporting.calibration_summary.sweep_calibration`), a row of panels (N, TN) per domain,
    each run's seeds pooled."""
    groups: dict[tuple[str, tuple[str, str]], dict] = {}
    for row in rows:
        title = f"{row.domain}, {row.distribution} (seeds {', '.join(map(str, row.seeds))})"
        groups.setdefault((row.model, tuple(row.config)), {})[title] = row.calibration
    return [pit_histograms_figure(panels, f"Calibration of {model} {'/'.join(config)} on the test split: "
                                          "histograms of the PIT")
            for (model, config), panels in groups.items()]


def pit_histograms_figure(panels: Mapping[str, Calibration], title: str, columns: int = 2) -> go.Figure:
    """One panel per entry, ``columns`` to a row: the histogram of its randomised PIT values (bars; flat at 1 for a
    calibrated model, U-shaped for an over-confident one, humped for an under-confident one) and, as a grey line,
    the naive PIT F(h*) that ignores h* being an integer."""
    from plotly.subplots import make_subplots

    rows = max(1, math.ceil(len(panels) / columns))
    # two to a row: a panel's title gets half a notebook's width, which the longest needs
    figure = make_subplots(rows=rows, cols=columns, shared_yaxes=True, horizontal_spacing=0.06,
                           vertical_spacing=min(0.2, 0.5 / rows), subplot_titles=list(panels))
    edges = np.linspace(0.0, 1.0, PIT_BINS + 1)
    centres = (edges[:-1] + edges[1:]) / 2
    for index, check in enumerate(panels.values()):
        row, column = index // columns + 1, index % columns + 1
        for key, values in (("pit", check.pit), ("naive", check.naive_pit)):
            density = np.histogram(values, bins=edges)[0] / len(values) * PIT_BINS
            trace = go.Bar(x=centres, y=density, width=1 / PIT_BINS, marker_color=_COLORS[0]) if key == "pit" \
                else go.Scatter(x=centres, y=density, mode="lines+markers", line=dict(color="gray", shape="hvh"))
            trace.update(name=PIT_LABELS[key], legendgroup=key, showlegend=index == 0)
            figure.add_trace(trace, row=row, col=column)
        figure.add_trace(go.Scatter(x=[0, 1], y=[1, 1], mode="lines", line=dict(color="black", dash="dash", width=1),
                                    name="calibrated (uniform)", legendgroup="uniform", showlegend=index == 0),
                         row=row, col=column)
        figure.update_xaxes(range=[0, 1], tickvals=[0, 0.5, 1], title_text="PIT", row=row, col=column)
    for row in range(1, rows + 1):
        figure.update_yaxes(title_text="density", row=row, col=1)
    figure.update_annotations(font_size=13)  # the subplot titles: the longest fits half a notebook's width
    figure.update_layout(title=dict(text=title, **_TITLE_AT_THE_TOP), template="plotly_white",
                         height=140 + 270 * rows, bargap=0.05,
                         legend=dict(orientation="h", yanchor="top", y=-0.2 / rows))
    return figure


# The lowest density the real models' panels show: far from a Gaussian's mean its density falls below any scale.
TRAINED_DENSITY_FLOOR = 1e-3


def trained_distributions_figure(states: Sequence[trained_distributions.StateDistributions], title: str,
                                 columns: int = 3) -> go.Figure:
    """One panel per state: each run's predicted density of h* (a log axis: a TN whose mu lies far below l puts
    its mass in a spike just above the open bound, tens of times a Gaussian's peak), the open bound l - 0.1
    (dashed), h* (black) and each run's heuristic (dotted, its colour)."""
    from plotly.subplots import make_subplots

    rows = max(1, math.ceil(len(states) / columns))
    figure = make_subplots(rows=rows, cols=columns, shared_yaxes=True, horizontal_spacing=0.04,
                           vertical_spacing=min(0.2, 0.5 / rows),
                           subplot_titles=[f"h* = {s.h_star:.0f}, l = {s.lower:.0f}" for s in states])
    top = max(float(np.max(d)) for s in states for d in s.density.values()) * 1.5
    span = [TRAINED_DENSITY_FLOOR, top]
    for index, state in enumerate(states):
        row, column = index // columns + 1, index % columns + 1
        bound = state.lower - OPEN_BOUND_EPSILON
        for k, (label, density) in enumerate(state.density.items()):
            x, y = _with_jumps(state.grid, density, state.support_low[label], math.inf)
            y = np.where(y > TRAINED_DENSITY_FLOOR, y, np.nan)  # below the axis: left out, not drawn at its edge
            figure.add_trace(go.Scatter(x=x, y=y, mode="lines", name=f"{label}: predicted density", legendgroup=label,
                                        showlegend=index == 0, line=dict(color=_COLORS[k], width=2)),
                             row=row, col=column)
            figure.add_trace(go.Scatter(x=[state.estimate[label]] * 2, y=span, mode="lines",
                                        name=f"{label}: the heuristic GBFS plans with",
                                        legendgroup=f"{label} estimate", showlegend=index == 0,
                                        line=dict(color=_COLORS[k], dash="dot", width=2)), row=row, col=column)
        figure.add_trace(go.Scatter(x=[bound] * 2, y=span, mode="lines", name="open bound l - 0.1", legendgroup="l",
                                    showlegend=index == 0, line=dict(color="gray", dash="dash")), row=row, col=column)
        figure.add_trace(go.Scatter(x=[state.h_star] * 2, y=span, mode="lines", name="h*", legendgroup="h*",
                                    showlegend=index == 0, line=dict(color="black", width=1.5)), row=row, col=column)
    figure.update_yaxes(type="log", range=[math.log10(span[0]), math.log10(span[1])])
    for row in range(1, rows + 1):
        figure.update_yaxes(title_text="density", row=row, col=1)
    figure.update_xaxes(title_text="h*", row=rows)
    figure.update_annotations(font_size=13)
    figure.update_layout(title=dict(text=title, **_TITLE_AT_THE_TOP), template="plotly_white",
                         height=140 + 280 * rows, legend=dict(orientation="h", yanchor="top", y=-0.25 / rows))
    return figure


def prediction_scatter_figure(result: synthetic_regression.RegressionResult, max_points: int = 400) -> go.Figure:
    """Planning heuristic against h* for each model and for the bound l, on the first ``max_points`` test
    states, with the diagonal ``y = x`` (perfect heuristic)."""
    count = min(max_points, len(result.test_optimal_cost))
    optimal = result.test_optimal_cost[:count]
    # Deterministic horizontal jitter: h* is an integer and the points would hide each other otherwise.
    jitter = (np.arange(count) % 7 - 3) * 0.04
    figure = go.Figure()
    series = {"admissible bound l": result.test_lower_bound[:count]}
    series.update({synthetic_regression.MODEL_LABELS[kind]: values[:count] for kind, values in result.test_heuristic.items()})
    for index, (name, values) in enumerate(series.items()):
        figure.add_trace(go.Scatter(x=optimal + jitter, y=values, name=name, mode="markers",
                                    marker=dict(size=5, opacity=0.55, color=_COLORS[(index + 7) % len(_COLORS)])))
    top = float(max(optimal.max(), max(float(np.max(v)) for v in series.values())))
    figure.add_trace(go.Scatter(x=[0, top], y=[0, top], name="perfect heuristic y = h*", mode="lines",
                                line=dict(color="black", dash="dash")))
    figure.update_layout(title="Planning heuristic vs optimal cost h* on test states", xaxis_title="h*",
                         yaxis_title="heuristic", template="plotly_white")
    return figure


# ----------------------------------------------------------------------------------------------------------
# Explorer widgets
# ----------------------------------------------------------------------------------------------------------


def message_figure(message: str) -> go.Figure:
    """An empty figure that shows ``message``: what the explorer draws for an invalid slider setting."""
    figure = go.Figure()
    figure.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper", font=dict(size=16))
    figure.update_layout(xaxis_visible=False, yaxis_visible=False, template="plotly_white", height=300)
    return figure


def explorer_figure(
    loc: float,
    scale: float,
    low: float,
    high: float,
    observed: float,
    low_is_infinite: bool = False,
    high_is_infinite: bool = False,
) -> go.Figure:
    """The explorer's figure for the current widget values: ``-inf``/``inf`` replace the bounds whose
    checkbox is ticked; an invalid combination (e.g. low >= high) gives a message instead of an error."""
    lower = -math.inf if low_is_infinite else low
    upper = math.inf if high_is_infinite else high
    try:
        return truncated_normal_figure(loc, scale, lower, upper, observed)
    except ValueError as error:
        return message_figure(f"cannot draw: {error}")


def slider_figure(step_figures: Sequence[go.Figure], step_labels: Sequence[str], slider_label: str = "",
                  active: int = 0) -> go.Figure:
    """One figure whose slider shows each of ``step_figures`` in turn: every step's traces (data and names), title,
    axis ranges, shapes and annotations travel inside the figure, so the slider moves in an exported HTML page, a
    papermill output or any plotly viewer, with no kernel behind it (an ipywidgets control needs one).

    The step figures must draw the same number of traces, in the same roles. Their values are kept to six
    significant digits (the page holds every step's)."""
    if len(step_figures) != len(step_labels) or not step_figures:
        raise ValueError(f"slider figure: {len(step_figures)} figures and {len(step_labels)} step labels; "
                         "give one label per figure, at least one")
    if not 0 <= active < len(step_figures):
        raise ValueError(f"slider figure: active step {active} is not one of the {len(step_figures)} steps")
    traces = {len(step.data) for step in step_figures}
    if len(traces) != 1:
        raise ValueError(f"slider figure: the steps draw different numbers of traces ({sorted(traces)})")

    def rounded(values) -> list:
        return [None if value is None else float(f"{value:.6g}") for value in values]

    def restyle(step: go.Figure) -> dict:
        return {"x": [rounded(trace.x) for trace in step.data], "y": [rounded(trace.y) for trace in step.data],
                "name": [trace.name for trace in step.data]}

    def relayout(step: go.Figure) -> dict:
        layout = step.layout
        update = {"title.text": layout.title.text, "shapes": [shape.to_plotly_json() for shape in layout.shapes],
                  "annotations": [annotation.to_plotly_json() for annotation in layout.annotations]}
        for axis in ("xaxis", "yaxis"):
            shown = layout[axis].range
            update.update({f"{axis}.range": list(shown)} if shown is not None else {f"{axis}.autorange": True})
        return update

    figure = go.Figure(step_figures[active])
    # below the plot: under the x-axis title, and under the legend where the step figures put it there
    legend_y = figure.layout.legend.y
    below_legend = legend_y is not None and legend_y < 0
    figure.update_layout(
        sliders=[dict(
            active=active, currentvalue=dict(prefix=slider_label), pad=dict(t=50),
            y=legend_y - 0.15 if below_legend else 0.0, yanchor="top",
            steps=[dict(method="update", label=label, args=[restyle(step), relayout(step)])
                   for label, step in zip(step_labels, step_figures)],
        )],
        margin=dict(b=230 if below_legend else 130),
        height=(figure.layout.height or 450) + (200 if below_legend else 100),
    )
    return figure


#: Grid points per curve at each step of :func:`stepped_truncated_normal_figure`: every step's curves travel
#: inside the page, and 201 keeps a 10-step figure near 200 KB while the dense bulk grid still resolves each
#: density.
STEPPED_NUM_POINTS = 201


def stepped_truncated_normal_figure(
    settings: Sequence[tuple[float, float, float, float]],
    step_labels: Sequence[str],
    observed: float | None = None,
    slider_label: str = "",
    active: int = 0,
    num_points: int = STEPPED_NUM_POINTS,
) -> go.Figure:
    """:func:`truncated_normal_figure` for each ``(loc, scale, low, high)`` of ``settings``, in one
    :func:`slider_figure`: every step is the static figure of its setting -- the same curves, lines, title,
    bounds, shading, view and off-screen labels. Raises ``ValueError`` naming the step whose setting is invalid
    (e.g. ``low >= high``)."""
    if len(settings) != len(step_labels):
        raise ValueError(f"stepped figure: {len(settings)} settings and {len(step_labels)} step labels; "
                         "give one label per setting")
    step_figures = []
    for label, (loc, scale, low, high) in zip(step_labels, settings):
        try:
            step_figures.append(truncated_normal_figure(loc, scale, low, high, observed, num_points))
        except ValueError as error:
            raise ValueError(f"stepped figure, step {label!r}: {error}") from None
    return slider_figure(step_figures, step_labels, slider_label, active)


def show_in_output(output: Any, figure: go.Figure) -> None:
    """Replace what an ``ipywidgets.Output`` shows with ``figure``.

    The outputs are set directly instead of capturing ``figure.show()`` inside ``with output:``: capturing a
    plotly figure into an Output widget made papermill hang after the last cell, and setting them works the
    same in JupyterLab. The bundle comes from ``_repr_mimebundle_``, not ``Output.append_display_data``: in a
    kernel that goes through the figure's ``_ipython_display_``, which shows it in the cell (or nowhere, from a
    slider callback) and leaves the widget empty.
    """
    output.outputs = ({"output_type": "display_data", "data": figure._repr_mimebundle_(), "metadata": {}},)


class ExplorerControls:
    """The explorer's widgets.

    ``values`` maps :func:`explorer_figure`'s argument names to their widgets, ``output`` is where the figure
    goes, ``panel`` lays everything out with the preset selector. :meth:`on_change` registers the redraw
    callback; a preset changes several widgets but triggers a single redraw.
    """

    def __init__(self, values: dict[str, Any], preset: Any, output: Any, panel: Any) -> None:
        self.values, self.preset, self.output, self.panel = values, preset, output, panel
        self._callbacks: list[Callable[[], None]] = []
        self._applying_preset = False
        for control in values.values():
            control.observe(self._value_changed, names="value")
        preset.observe(self._apply_preset, names="value")

    def current_values(self) -> dict[str, Any]:
        """The widgets' values, as keyword arguments of :func:`explorer_figure`."""
        return {name: control.value for name, control in self.values.items()}

    def on_change(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` after every user change."""
        self._callbacks.append(callback)

    def _notify(self) -> None:
        for callback in self._callbacks:
            callback()

    def _value_changed(self, change: dict) -> None:
        if not self._applying_preset:
            # The selector shows a preset only while the sliders hold it; back on "custom", choosing the same
            # preset again is a change the dropdown reports (it reports none for re-selecting its current value).
            self.preset.value = ()
            self._notify()

    def _apply_preset(self, change: dict) -> None:
        if not change["new"]:  # back on "custom": nothing to apply
            return
        low, high = change["new"]
        self._applying_preset = True
        try:
            self.values["loc"].value, self.values["scale"].value = 0.0, 1.0
            self.values["low_is_infinite"].value = not math.isfinite(low)
            self.values["high_is_infinite"].value = not math.isfinite(high)
            if math.isfinite(low):
                self.values["low"].value = low
            if math.isfinite(high):
                self.values["high"].value = high
        finally:
            self._applying_preset = False
        self._notify()


#: The sigma slider's range in decades (a log slider: 0.001 to 100 at one-hundredth of a decade per step), so that
#: sigma -> 0 and bounds many sigmas into a tail are reached by sliding, not only from the parameters cell.
SIGMA_SLIDER_DECADES = (-3.0, 2.0)
#: The label of the preset selector when the sliders hold values of no preset.
CUSTOM_PRESET = "(custom: move a slider or choose a preset)"


def explorer_controls(params: notebook_parameters.ExplorerParameters, slider_limit: float = 10.0) -> ExplorerControls:
    """Sliders for loc, scale, low, high and observed, "infinite" checkboxes for the bounds, a preset
    selector that sets the bounds (mu=0, sigma=1) from :data:`tnlib.notebook.explorer.PRESET_BOUNDS`, and an output
    area for the figure.

    l, u and x share one range, ``[-slider_limit, slider_limit]`` widened to hold their finite values; mu's slider
    spans that range widened to hold mu, so a starting point such as mu = -50 is shown as it is (a slider would
    silently clip it to its range) while l, u and x keep a range whose 0.05 steps a hand can set. sigma has a
    logarithmic slider over :data:`SIGMA_SLIDER_DECADES`, widened to the parameter's value.
    """
    import ipywidgets as widgets

    positions = [params.observed] + [bound for bound in (params.low, params.high) if math.isfinite(bound)]
    position_low, position_high = min([-slider_limit, *positions]), max([slider_limit, *positions])

    def slider(description: str, value: float, low: float = position_low,
               high: float = position_high) -> widgets.FloatSlider:
        return widgets.FloatSlider(value=value, min=low, max=high, step=0.05,
                                   description=description, continuous_update=False, readout_format=".2f")

    decades = math.log10(params.scale)
    values = {
        # mu's own range: a far mean (mu = -50) widens it alone, so l, u and x keep a range a hand can set
        "loc": slider("mu", params.loc, min(position_low, params.loc), max(position_high, params.loc)),
        "scale": widgets.FloatLogSlider(
            value=params.scale, base=10.0, min=min(SIGMA_SLIDER_DECADES[0], decades),
            max=max(SIGMA_SLIDER_DECADES[1], decades), step=0.01, description="sigma", continuous_update=False,
            readout_format=".3g"),
        "low": slider("low l", params.low if math.isfinite(params.low) else position_low),
        "high": slider("high u", params.high if math.isfinite(params.high) else position_high),
        "observed": slider("x = h*", params.observed),
        "low_is_infinite": widgets.Checkbox(value=not math.isfinite(params.low), description="l = -inf"),
        "high_is_infinite": widgets.Checkbox(value=not math.isfinite(params.high), description="u = +inf"),
    }
    options = [(CUSTOM_PRESET, ())] + [(label, (low, high)) for label, low, high in explorer.PRESET_BOUNDS]
    preset = widgets.Dropdown(options=options, value=(), description="preset",
                              layout=widgets.Layout(width="max-content"))
    output = widgets.Output()
    panel = widgets.VBox([
        preset,
        widgets.HBox([values["loc"], values["scale"], values["observed"]]),
        widgets.HBox([values["low"], values["low_is_infinite"]]),
        widgets.HBox([values["high"], values["high_is_infinite"]]),
        output,
    ])
    return ExplorerControls(values, preset, output, panel)


def label_gap_figure(gaps: Sequence[label_gaps.LabelGaps], bound: str = "lmcut") -> go.Figure:
    """Per domain, the share of states at each gap h* - l (integers: unit costs), one bar group per gap: the
    bar at 0 is the states whose target lies exactly on the truncation point."""
    figure = go.Figure()
    largest = max((int(g.lower_gaps[bound].max()) for g in gaps if g.states), default=0)
    values = list(range(largest + 1))
    for index, g in enumerate(gaps):
        counts = np.bincount(g.lower_gaps[bound].astype(np.int64), minlength=largest + 1)
        figure.add_trace(go.Bar(x=values, y=(counts / max(g.states, 1)).tolist(), name=f"{g.domain} ({g.states:,})",
                                marker_color=_COLORS[index % len(_COLORS)]))
    split = gaps[0].split if gaps else ""
    figure.update_layout(
        title=f"h* - {bound} over the {split} states: the bar at 0 is where the bound is exact",
        xaxis_title=f"h* - {bound}", yaxis_title="share of the states", barmode="group", template="plotly_white",
        xaxis=dict(dtick=1), legend=dict(orientation="h", yanchor="top", y=-0.2),
    )
    return figure


def seed_pairs_figure(values: Mapping[str, Mapping[int, float]], title: str, a: str = "TN", b: str = "N",
                      first: int = 2) -> go.Figure:
    """The seeds of one report cell side by side: per seed a line from ``b``'s test MSE to ``a``'s (blue where
    ``a`` is lower on that seed, orange where higher; the first ``first`` seeds solid, the later ones dotted),
    and the two means. The slope of each line is that seed's paired difference."""
    seeds = sorted(set(values[a]) & set(values[b]))
    figure = go.Figure()
    for k, seed in enumerate(seeds):
        lower = values[a][seed] < values[b][seed]
        figure.add_trace(go.Scatter(
            x=[b, a], y=[values[b][seed], values[a][seed]], mode="lines+markers+text",
            text=["", f"seed {seed}"], textposition="middle right",
            line=dict(color=_COLORS[0] if lower else _COLORS[1], width=2, dash="solid" if k < first else "dot"),
            name=f"seed {seed}: {a} - {b} = {values[a][seed] - values[b][seed]:+.2f}"))
    means = [float(np.mean([values[c][s] for s in seeds])) for c in (b, a)]
    figure.add_trace(go.Scatter(x=[b, a], y=means, mode="lines+markers", line=dict(color="black", width=4),
                                marker=dict(size=12, symbol="diamond"), name=f"mean of {len(seeds)} seeds"))
    figure.update_layout(title=title, yaxis_title="test MSE", template="plotly_white", height=460,
                         xaxis=dict(range=[-0.3, 1.6]), legend=dict(x=1.02, y=1))
    return figure


def fixed_scale_figure(fits: Sequence[classroom_demos.FixedScaleFit],
                       groups=classroom_demos.FIXED_SCALE_GROUPS) -> go.Figure:
    """Section 6b: every state's h* (grey, one dot per state, side by side where equal), each group's mean h*
    and bound l, and per fit the heuristic it gives each group (lines join the groups)."""
    figure = go.Figure()
    for z, bound, costs in groups:
        seen: dict[float, int] = {}
        offsets = []
        for cost in costs:
            offsets.append(seen.get(cost, 0))
            seen[cost] = seen.get(cost, 0) + 1
        figure.add_trace(go.Scatter(
            x=[z + 0.012 * k for k in offsets], y=list(costs), mode="markers", name="h* of a state",
            marker=dict(color="#9e9e9e", size=7), legendgroup="states", showlegend=z == groups[0][0]))
    figure.add_trace(go.Scatter(x=[g[0] for g in groups], y=[float(np.mean(g[2])) for g in groups],
                                mode="markers", name="group mean h*", marker=dict(color="black", symbol="diamond",
                                                                                  size=11)))
    figure.add_trace(go.Scatter(x=[g[0] for g in groups], y=[g[1] for g in groups], mode="markers",
                                name="bound l", marker=dict(color="black", symbol="line-ew-open", size=18,
                                                            line=dict(width=2))))
    for index, fit in enumerate(fits):
        dash = "dot" if index % 2 else "solid"  # the authors' sigma dotted over the paper's: N's two coincide
        figure.add_trace(go.Scatter(
            x=[g[0] for g in groups], y=list(fit.heuristic), mode="lines+markers",
            name=f"{fit.distribution}, sigma {fit.scale:.3f} (MSE {fit.mse:.2f})",
            line=dict(color=_COLORS[(index // 2) % len(_COLORS)], width=2, dash=dash)))
    figure.update_layout(title="One line mu = a + b z for three groups: the heuristic each fixed sigma gives",
                         xaxis_title="feature z", yaxis_title="cost", template="plotly_white",
                         legend=dict(orientation="h", yanchor="top", y=-0.2))
    return figure
