"""The classroom notebook's figures: curves and bars, a sampler's histogram, the NLL at a closed and an open
bound, the synthetic regression's losses, point estimates and predictions, the trained models' densities, the
label gaps, the seeds of a report cell side by side and the fixed sigma's heuristic."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch

from tnlib.experiments.reporting.report_figures import LOG_AXIS_TICKS, round_log_yaxis
from tnlib.notebook import classroom_demos, demo_tensors, label_gaps, synthetic_regression, trained_distributions
from tnlib.notebook.density_figures import with_jumps
from tnlib.notebook.notebook_plotting import COLORS, TITLE_AT_THE_TOP, slider_figure
from tnlib.experiments.reporting.convergence import CONVERGENCE_FRACTIONS, END
from tnlib.experiments.reporting.seed_statistics import PAIRED_CONFIDENCE, holm_adjusted
from tnlib.paper import MAIN_LOWER_BOUND, OPEN_BOUND_EPSILON

def _finite_or_none(values: np.ndarray) -> list[float | None]:
    """Plotly draws a gap at ``None``; non-finite values would break the JSON or the axis range."""
    return [float(v) if math.isfinite(v) else None for v in np.asarray(values, dtype=float)]


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
                       line=dict(color=COLORS[index % len(COLORS)], width=2))
        )
    for name, position in (vertical_lines or {}).items():
        figure.add_vline(x=position, line=dict(color="black", dash="dash", width=1), annotation_text=name,
                         annotation_position="top")
    figure.update_layout(
        title=title, xaxis_title=x_title, yaxis_title=y_title, template="plotly_white",
        yaxis_type="log" if log_y else "linear", legend=dict(orientation="h", yanchor="top", y=-0.2),
    )
    if log_y:
        round_log_yaxis(figure, [v for values in curves.values() for v in values])
    return figure


def bar_figure(values: Mapping[str, float], title: str, y_title: str) -> go.Figure:
    """A single bar trace, one bar per entry, labelled with its value."""
    figure = go.Figure(
        go.Bar(x=list(values), y=[float(v) for v in values.values()], text=[f"{v:.3f}" for v in values.values()],
               textposition="outside", marker_color=COLORS[: len(values)])
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
                                    marker_color=COLORS[0]))
    grid = np.linspace(float(finite.min()), float(finite.max()), 400)
    density = demo_tensors.truncated_normal(loc, scale, low, high).log_prob(torch.as_tensor(grid, dtype=demo_tensors.DTYPE))
    figure.add_trace(go.Scatter(x=grid, y=np.exp(density.numpy()), name="density", mode="lines",
                                line=dict(color=COLORS[1], width=2)))
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
    round_log_yaxis(figure, [v for curve in curves.values() for v in curve] + [result.lower_bound_mse, result.best_mse])
    # six legend rows under the plot: a taller figure keeps the plot area as tall as the other figures'
    figure.update_layout(height=600, legend=dict(orientation="h", yanchor="top", y=-0.15))
    return figure


def point_estimate_figure(result: synthetic_regression.RegressionResult) -> go.Figure:
    """Grouped horizontal bars: test MSE of mu, max(mu, l) and the TN mean for each model (one trace per
    estimate). Horizontal because the model names are long: on a vertical chart they are tilted and cut off at
    the figure's edge."""
    models = list(synthetic_regression.MODEL_LABELS)
    labels = [synthetic_regression.MODEL_LABELS[kind] for kind in models]
    figure = go.Figure()
    for index, (name, label) in enumerate(synthetic_regression.ESTIMATE_LABELS.items()):
        values = [result.test_mse[kind].get(name) for kind in models]
        figure.add_trace(
            go.Bar(y=labels, x=values, name=label, orientation="h", marker_color=COLORS[index],
                   text=[f"{v:.2f}" if v is not None else "" for v in values], textposition="outside",
                   cliponaxis=False)
        )
    # the first model on top, as in the table printed under the figure; a group's traces read top-down too
    figure.update_yaxes(autorange="reversed", automargin=True)
    figure.update_layout(barmode="group", title="Test MSE of each point estimate (lower is better)",
                         xaxis_title="test MSE", template="plotly_white", height=120 + 90 * len(models),
                         legend=dict(traceorder="normal"))
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
                                    marker=dict(size=5, opacity=0.55, color=COLORS[(index + 7) % len(COLORS)])))
    top = float(max(optimal.max(), max(float(np.max(v)) for v in series.values())))
    figure.add_trace(go.Scatter(x=[0, top], y=[0, top], name="perfect heuristic y = h*", mode="lines",
                                line=dict(color="black", dash="dash")))
    figure.update_layout(title="Planning heuristic vs optimal cost h* on test states", xaxis_title="h*",
                         yaxis_title="heuristic", template="plotly_white")
    return figure


# The lowest density the real models' panels show: far from a Gaussian's mean its density falls below any scale.
TRAINED_DENSITY_FLOOR = 1e-3


def trained_distributions_figure(states: Sequence[trained_distributions.StateDistributions], title: str,
                                 columns: int = 3) -> go.Figure:
    """One panel per state: each run's predicted density of h* (a log axis: a TN whose mu lies far below l puts
    its mass in a spike just above the open bound, tens of times a Gaussian's peak), the open bound l - 0.1
    (dashed), h* (black), each run's heuristic (dotted, its colour) and, for a Gaussian run (its support unbounded),
    the clipping trick's heuristic max(mu, l) (dash-dot, its colour): the paper's N, N+clip and TN side by side."""
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
            x, y = with_jumps(state.grid, density, state.support_low[label], math.inf)
            y = np.where(y > TRAINED_DENSITY_FLOOR, y, np.nan)  # below the axis: left out, not drawn at its edge
            figure.add_trace(go.Scatter(x=x, y=y, mode="lines", name=f"{label}: predicted density", legendgroup=label,
                                        showlegend=index == 0, line=dict(color=COLORS[k], width=2)),
                             row=row, col=column)
            figure.add_trace(go.Scatter(x=[state.estimate[label]] * 2, y=span, mode="lines",
                                        name=f"{label}: the heuristic GBFS plans with",
                                        legendgroup=f"{label} estimate", showlegend=index == 0,
                                        line=dict(color=COLORS[k], dash="dot", width=2)), row=row, col=column)
            if state.support_low[label] == -math.inf:
                figure.add_trace(go.Scatter(x=[max(state.mu[label], state.lower)] * 2, y=span, mode="lines",
                                            name=f"{label}+clip: max(mu, l)", legendgroup=f"{label} clipped",
                                            showlegend=index == 0, line=dict(color=COLORS[k], dash="dashdot", width=2)),
                                 row=row, col=column)
        figure.add_trace(go.Scatter(x=[bound] * 2, y=span, mode="lines", name=f"open bound l - {OPEN_BOUND_EPSILON:g}",
                                    legendgroup="l", showlegend=index == 0, line=dict(color="gray", dash="dash")),
                         row=row, col=column)
        figure.add_trace(go.Scatter(x=[state.h_star] * 2, y=span, mode="lines", name="h*", legendgroup="h*",
                                    showlegend=index == 0, line=dict(color="black", width=1.5)), row=row, col=column)
    figure.update_yaxes(type="log", range=[math.log10(span[0]), math.log10(span[1])])
    for row in range(1, rows + 1):
        figure.update_yaxes(title_text="density", row=row, col=1)
    figure.update_xaxes(title_text="h*", row=rows)
    figure.update_annotations(font_size=13)
    figure.update_layout(title=dict(text=title, **TITLE_AT_THE_TOP), template="plotly_white",
                         height=140 + 280 * rows, legend=dict(orientation="h", yanchor="top", y=-0.25 / rows))
    return figure


def label_gap_figure(gaps: Sequence[label_gaps.LabelGaps], bound: str = MAIN_LOWER_BOUND) -> go.Figure:
    """Per domain, the share of states at each gap h* - l (integers: unit costs), one bar group per gap: the
    bar at 0 is the states whose target lies exactly on the truncation point."""
    figure = go.Figure()
    largest = max((int(g.lower_gaps[bound].max()) for g in gaps if g.states), default=0)
    values = list(range(largest + 1))
    for index, g in enumerate(gaps):
        counts = np.bincount(g.lower_gaps[bound].astype(np.int64), minlength=largest + 1)
        figure.add_trace(go.Bar(x=values, y=(counts / max(g.states, 1)).tolist(), name=f"{g.domain} ({g.states:,})",
                                marker_color=COLORS[index % len(COLORS)]))
    split = gaps[0].split if gaps else ""
    figure.update_layout(
        title=f"h* - {bound} over the {split} states: the bar at 0 is where the bound is exact",
        xaxis_title=f"h* - {bound}", yaxis_title="share of the states", barmode="group", template="plotly_white",
        xaxis=dict(dtick=1), legend=dict(orientation="h", yanchor="top", y=-0.2),
    )
    return figure


# Two labels closer than this share of the y range would overprint each other at the figure's 460 px height.
LABEL_CLEARANCE = 0.04


def _end_labels(ends: Mapping[int, float], everything: Sequence[float]) -> dict[int, str]:
    """Each seed's label at its line's end: seeds whose ends lie within :data:`LABEL_CLEARANCE` of the y range of
    one another (a chain of such neighbours) share one label, "seeds 1, 4", on the lowest of them; the others
    get none. Printed one by one, such labels overprint and neither can be read."""
    span = (max(everything) - min(everything)) or 1.0
    labels = {seed: "" for seed in ends}
    groups: list[list[int]] = []
    for seed in sorted(ends, key=lambda s: (ends[s], s)):
        if groups and ends[seed] - ends[groups[-1][-1]] < LABEL_CLEARANCE * span:
            groups[-1].append(seed)
        else:
            groups.append([seed])
    for group in groups:
        names = ", ".join(str(seed) for seed in sorted(group))
        labels[group[0]] = f"seeds {names}" if len(group) > 1 else f"seed {names}"
    return labels


def seed_pairs_figure(values: Mapping[str, Mapping[int, float]], title: str, a: str = "TN", b: str = "N",
                      first: int = 2) -> go.Figure:
    """The seeds of one report cell side by side: per seed a line from ``b``'s test MSE to ``a``'s (blue where
    ``a`` is lower on that seed, orange where higher; the first ``first`` seeds solid, the later ones dotted),
    and the two means. The slope of each line is that seed's paired difference; seeds that end together share
    one label (:func:`_end_labels`)."""
    seeds = sorted(set(values[a]) & set(values[b]))
    end_labels = _end_labels({seed: values[a][seed] for seed in seeds},
                             [values[c][s] for c in (a, b) for s in seeds])
    figure = go.Figure()
    for k, seed in enumerate(seeds):
        lower = values[a][seed] < values[b][seed]
        figure.add_trace(go.Scatter(
            x=[b, a], y=[values[b][seed], values[a][seed]], mode="lines+markers+text",
            text=["", end_labels[seed]], textposition="middle right",
            line=dict(color=COLORS[0] if lower else COLORS[1], width=2, dash="solid" if k < first else "dot"),
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
            line=dict(color=COLORS[(index // 2) % len(COLORS)], width=2, dash=dash)))
    figure.update_layout(title="One line mu = a + b z for three groups: the heuristic each fixed sigma gives",
                         xaxis_title="feature z", yaxis_title="cost", template="plotly_white",
                         legend=dict(orientation="h", yanchor="top", y=-0.2))
    return figure


def holm_step_down_figure(p_values: Sequence[float], title: str) -> go.Figure:
    """Section 8e: a family's p-values sorted (log scale) against their rank, with the three thresholds -- alpha
    for each on its own, Bonferroni's alpha / m, Holm's alpha / (m - j + 1) at rank j -- and the ranks Holm
    rejects filled (:func:`~tnlib.experiments.reporting.seed_statistics.holm_adjusted` below alpha: every rank up to
    the first p at or above its threshold)."""
    alpha = 1 - PAIRED_CONFIDENCE
    ordered = sorted(p_values)
    m = len(ordered)
    ranks = list(range(1, m + 1))
    holm = [alpha / (m - j + 1) for j in ranks]
    rejected = sum(adjusted < alpha for adjusted in holm_adjusted(ordered))  # the first ones, in sorted order
    figure = go.Figure()
    for name, picked, style in (("Holm rejects: a difference stands", range(rejected), dict(color=COLORS[0], size=8)),
                                ("Holm does not reject: within noise", range(rejected, m),
                                 dict(color=COLORS[0], size=8, symbol="circle-open"))):
        figure.add_trace(go.Scatter(x=[ranks[i] for i in picked], y=[max(ordered[i], 1e-12) for i in picked],
                                    mode="markers", marker=style, name=name))
    for name, values, dash in ((f"alpha = {alpha:g}, each on its own", [alpha] * m, "dot"),
                               ("Holm: alpha / (m - j + 1)", holm, "solid"),
                               (f"Bonferroni: alpha / m = {alpha / m:.2g}", [alpha / m] * m, "dash")):
        figure.add_trace(go.Scatter(x=ranks, y=values, mode="lines", line=dict(color="black", dash=dash, width=1.5),
                                    name=name, line_shape="hv" if dash == "solid" else "linear"))
    figure.update_layout(title=title, xaxis_title=f"rank j of the p-value (m = {m})", yaxis_title="p-value",
                         yaxis_type="log", template="plotly_white", height=500,
                         legend=dict(orientation="h", yanchor="top", y=-0.22))
    figure.update_yaxes(**LOG_AXIS_TICKS)
    return figure


def convergence_ratio_figure(by_config: Mapping[str, Sequence], title: str) -> go.Figure:
    """Section 8f: per configuration, TN's best validation MSE so far over N's (the geometric mean of the per-seed
    ratios, log scale) at each compared point of training and at its end, with its 95% interval as error bars; the
    line at 1 is no difference. A point below 1 after Holm's correction over the report's points is filled, one below
    it on its own only dotted, any other open."""
    figure = go.Figure()
    points_in_order: list[str] = []
    for k, (config, points) in enumerate(by_config.items()):
        colour = COLORS[k % len(COLORS)]
        tested = [p for p in points if p.low is not None]
        figure.add_trace(go.Scatter(
            x=[p.point for p in points], y=[p.ratio for p in points], mode="lines+markers", name=config,
            line=dict(color=colour, width=1.5),
            marker=dict(color=colour, size=9, symbol=[_convergence_symbol(p) for p in points]),
            error_y=dict(type="data", symmetric=False, array=[(p.high - p.ratio) if p.high else 0 for p in points],
                         arrayminus=[(p.ratio - p.low) if p.low else 0 for p in points]) if tested else None,
            hovertemplate=[f"{config}, {p.point} (step {p.step:,}): %{{y:.3g}}<extra>{p.verdict}</extra>"
                           for p in points]))
        points_in_order += [p.point for p in points if p.point not in points_in_order]
    figure.add_hline(y=1, line=dict(color="black", width=1, dash="dot"))
    training_order = [str(fraction) for fraction in CONVERGENCE_FRACTIONS] + [END]
    figure.update_xaxes(categoryorder="array",
                        categoryarray=[point for point in training_order if point in points_in_order])
    figure.update_layout(title=title, xaxis_title="point of training: a fraction of the steps every run reached, "
                         "then each run's end", yaxis_title="TN / N, best validation MSE so far", yaxis_type="log",
                         template="plotly_white", height=460, legend=dict(x=1.02, y=1))
    round_log_yaxis(figure, [v for points in by_config.values() for p in points for v in (p.ratio, p.low, p.high)])
    return figure


def _convergence_symbol(point) -> str:
    if point.verdict_holm == "lower":
        return "circle"
    return "circle-dot" if point.verdict == "lower" else "circle-open"
