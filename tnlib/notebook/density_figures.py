"""The Truncated Gaussian's density figures: the Normal and Truncated Normal PDFs with mu, the truncated mean and
mode and an observed h* (the explorer's figure), the paper's Figure 1 of preset bounds, and a slider stepping
through settings; the x range they show, a view that follows the truncated mass."""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from tnlib.notebook import demo_tensors, explorer, notebook_parameters
from tnlib.notebook.notebook_plotting import COLORS, TITLE_AT_THE_TOP, slider_figure

# Stable trace names: tests and legend toggling rely on them.
NORMAL_PDF = "Normal PDF"
TRUNCATED_PDF = "Truncated Normal PDF"
LOC_LINE = "mu (Normal mean = mode)"
MEAN_LINE = "TN mean (heuristic)"
MODE_MARKER = "TN mode"
OBSERVED_LINE = "observed x = h*"

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


def density_grid(loc: float, scale: float, low: float, high: float,
                 num_points: int = notebook_parameters.DEFAULT_NUM_POINTS) -> np.ndarray:
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


def with_jumps(x: np.ndarray, density: np.ndarray, low: float, high: float) -> tuple[np.ndarray, np.ndarray]:
    """Insert a zero at each finite bound (which is on ``x``), so the line drops vertically there and the
    trapezoid integral of the line is the integral of the density."""
    if math.isfinite(low):
        index = int(np.searchsorted(x, low, side="left"))  # (low, 0) goes just before (low, pdf(low))
        x, density = np.insert(x, index, low), np.insert(density, index, 0.0)
    if math.isfinite(high):
        index = int(np.searchsorted(x, high, side="right"))  # (high, 0) goes just after (high, pdf(high))
        x, density = np.insert(x, index, high), np.insert(density, index, 0.0)
    return x, density


# plotly.js sets a title of several lines about 12 px higher than a one-line title under the same top anchor: with
# the one-line title's padding, the first line's capitals would be cut off at the figure's top edge.
MULTILINE_TITLE_AT_THE_TOP = {**TITLE_AT_THE_TOP, "pad": dict(t=TITLE_AT_THE_TOP["pad"]["t"] + 12)}
# Legend in rows between the title and the plot: below the plot it covers the x-axis title once it wraps
# (windows <= 1400 px), and a vertical legend beside the plot scrolls and hides entries in JupyterLab's shorter
# output. The title is pinned to the figure's top and the top margin holds the title's three lines and up to
# four legend rows (about 560 px of plot width for the presets' long labels), so neither covers the other.
_LEGEND_ABOVE_THE_PLOT = dict(
    legend=dict(orientation="h", xanchor="left", x=0.0, yanchor="bottom", y=1.02),
    margin=dict(t=170, b=60),
    height=600,
)


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
    num_points: int = notebook_parameters.DEFAULT_NUM_POINTS,
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
    truncated_x, truncated_pdf = with_jumps(grid, truncated_density(loc, scale, low, high, grid), low, high)
    view_low, view_high = density_view(loc, scale, low, high)
    shown = (grid >= view_low) & (grid <= view_high)  # the grid also holds bounds and bulk points beyond the view
    top = 1.08 * max(float(normal_pdf[shown].max()), float(truncated_pdf.max()))

    figure = go.Figure()
    figure.add_trace(go.Scatter(x=grid, y=normal_pdf, name=NORMAL_PDF, mode="lines", line=dict(color=COLORS[7], dash="dash")))
    figure.add_trace(
        go.Scatter(x=truncated_x, y=truncated_pdf, name=TRUNCATED_PDF, mode="lines", line=dict(color=COLORS[0], width=3))
    )
    figure.add_trace(
        go.Scatter(x=[loc, loc], y=[0, top], name=LOC_LINE, mode="lines", line=dict(color=COLORS[7], dash="dot"))
    )
    figure.add_trace(
        go.Scatter(x=[summary["mean"]] * 2, y=[0, top], name=MEAN_LINE, mode="lines", line=dict(color=COLORS[3], width=2))
    )
    mode_height = float(truncated_density(loc, scale, low, high, np.array([summary["mode"]]))[0])
    figure.add_trace(
        go.Scatter(
            x=[summary["mode"]], y=[mode_height], name=MODE_MARKER, mode="markers",
            marker=dict(color=COLORS[1], size=11, symbol="diamond"),
        )
    )
    if observed is not None:
        figure.add_trace(
            go.Scatter(
                x=[params.observed] * 2, y=[0, top], name=OBSERVED_LINE, mode="lines", line=dict(color=COLORS[2], dash="dashdot")
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
            **MULTILINE_TITLE_AT_THE_TOP,
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
    num_points: int = notebook_parameters.DEFAULT_NUM_POINTS,
) -> go.Figure:
    """The paper's Figure 1: ``TN(loc, scale, l, u)`` PDFs for several bounds, each with its mean marked.

    Two traces per preset: the PDF (named by the preset label) and its mean (``"mean of " + label``), which
    lies inside the bounds even when ``loc`` does not.
    """
    figure = go.Figure()
    for index, (label, low, high) in enumerate(presets):
        notebook_parameters.check_explorer_parameters(loc, scale, low, high, 0.0, num_points)
        color = COLORS[index % len(COLORS)]
        grid = density_grid(loc, scale, low, high, num_points)
        x, density = with_jumps(grid, truncated_density(loc, scale, low, high, grid), low, high)
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
        title=dict(text=f"Truncated Gaussians TN(mu={loc:g}, sigma={scale:g}, l, u); x marks each mean", **TITLE_AT_THE_TOP),
        xaxis_title="x",
        yaxis_title="density p(x)",
        xaxis_range=[min(view[0] for view in views), max(view[1] for view in views)],
        **_LEGEND_ABOVE_THE_PLOT,
        template="plotly_white",
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
