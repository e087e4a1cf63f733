"""The reports' figures (plotly): the training curves (the paper's Figure 2) and the paired intervals of the
seeds, drawn from a results folder or a rendered report's per-seed CSVs. :mod:`tnlib.experiments.reporting.reports` writes
them into HTML pages, the experiments notebook shows them. Every figure a report page embeds is drawn here, since the
reports never import the notebooks' front end; figures only a notebook shows are drawn in :mod:`tnlib.notebook`.

**The paired intervals as one figure** (:func:`paired_intervals_figure`): where TN beats N (and N+clip), where it
loses, where the seeds cannot tell. A forest plot: one panel per domain (rows) and metric (columns), one line per
configuration and comparison (``learn/ff: TN - N``), the mean per-seed difference as a dot and its 95% t-interval as
a bar (:func:`tnlib.experiments.reporting.seed_statistics.paired_differences`). A filled dot in TN's colour: the interval
says TN is better; in N's colour: worse; hollow grey: the interval holds 0. Each panel has its own x scale (MSE gaps
of .02 and of 7 sit in different domains), and a vertical line at 0.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Mapping, Sequence

from tnlib.experiments.results_dir import ResultsDir
from tnlib.experiments.reporting.report_files import ACCURACY_SEEDS, PLANNING_SEEDS
from tnlib.experiments.reporting.seed_statistics import (PAIRED_CONFIDENCE, PAIRED_MIN_SEEDS, paired_differences,
                                               paired_interval, read_seed_csv, read_seed_values)
from tnlib.experiments.reporting.size_tables import REDUCED_ROW, WHOLE_ROW
from tnlib.experiments.reporting.table_rows import collect_planning, collect_results
from tnlib.experiments.reporting.tables import table1_seed_values, table2_seed_values
from tnlib.files import read_jsonl, shown_folder
from tnlib.learning.run_files import RunDir
from tnlib.learning.training import TrainConfig, read_run_config
from tnlib.paper import DOMAINS, MAIN_LOWER_BOUND, MAIN_RESIDUAL, MAIN_TABLES_MODEL, MODELS, TABLE1_CONFIGS

# Ticks per axis of the training-curve figures (plotly's automatic choice crowds a 380-pixel log axis).
CURVE_TICKS = 6
# A log axis's ticks as whole numbers: plotly's own labels print 20 as a small "2" above "10", which reads as 2.
LOG_AXIS_TICKS = {"nticks": CURVE_TICKS, "tickformat": ".3~g"}

# What a dot's colour says; TN's blue and N's orange as in the paper's Figure 2 and the training curves.
VERDICT_STYLES = {
    "TN better": dict(color="#1f77b4", symbol="circle"),
    "TN worse": dict(color="#ff7f0e", symbol="circle"),
    "within noise": dict(color="#7f7f7f", symbol="circle-open"),
}


def verdict(interval: dict, lower_is_better: bool = True, subject: str = "TN") -> str:
    """How a paired interval of ``subject`` (TN) minus another column reads: better, worse, or within noise (0
    inside)."""
    if interval["low"] <= 0 <= interval["high"]:
        return "within noise"
    return f"{subject} better" if (interval["high"] < 0) == lower_is_better else f"{subject} worse"


def _verdict_style(said: str) -> tuple[dict, int]:
    """The dot's style for a verdict of :func:`verdict`, whatever its subject, and its rank in the legend."""
    key = "within noise" if said == "within noise" else "TN " + said.rsplit(" ", 1)[1]
    return VERDICT_STYLES[key], list(VERDICT_STYLES).index(key)


# plotly's default 12 px font, about 6.5 px a character in these labels: each panel's row labels sit in a
# gutter that wide, so that a long label ("fixed/none: TN - N+clip") does not run into the panel to its left. The
# figure fits a laptop's screen beside the page's margin, wider only where the panels would be narrower than their
# minimum; narrow panels take their titles in a smaller font, so that neighbouring titles do not overlap.
LABEL_CHARACTER_PX = 6.5
INTERVALS_FIGURE_PX = 1200
INTERVAL_PANEL_MIN_PX = 100
NARROW_PANEL_PX = 200


def _comparison_label(group: tuple, a: str, b: str, pair_label=None) -> str:
    """A row of :func:`paired_intervals_figure`: the configuration, then the comparison."""
    return f"{group[1]}/{group[2]}: " + (f"{a} - {b}" if pair_label is None else pair_label(a, b))


def paired_intervals_figure(panels: Sequence[tuple[str, Mapping, bool]], title: str, subject: str = "TN",
                            pair_label=None):
    """``panels``: ``(metric title, paired differences, lower is better)`` per metric, the differences as
    :func:`tnlib.experiments.reporting.seed_statistics.paired_differences` returns them ({(domain, sigma, residual): {(a, b):
    interval or None}}). One row of panels per domain any of them holds; a panel whose cells have fewer than
    :data:`PAIRED_MIN_SEEDS` seeds says so instead of plotting. ``subject`` names what each difference's first
    term is in the legend (``TN better``); ``pair_label(a, b)`` the line of a comparison after its configuration
    (default ``a - b``)."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    every = sorted({group[0] for _, differences, _ in panels for group in differences},
                   key=lambda d: (DOMAINS.index(d) if d in DOMAINS else len(DOMAINS), d))
    domains = [d for d in every if any(interval is not None for _, differences, _ in panels
                                       for group, row in differences.items() if group[0] == d
                                       for interval in row.values())]
    if len(domains) < len(every):  # a row of empty panels says less than a line in the title
        left_out = ", ".join(d for d in every if d not in domains)
        title += f"<br><sup>not shown, fewer than {PAIRED_MIN_SEEDS} seeds: {left_out}</sup>"
    lines_per_domain = {domain: max((sum(1 for group, row in differences.items() if group[0] == domain
                                         for interval in row.values() if interval is not None)
                                     for _, differences, _ in panels), default=0) for domain in domains}
    heights = [max(lines_per_domain[d], 1) + 2 for d in domains]
    longest = max((len(_comparison_label(group, a, b, pair_label)) for _, differences, _ in panels
                   for group, row in differences.items() for a, b in row), default=0)
    gutter, right = round(LABEL_CHARACTER_PX * longest) + 24, 30
    width = max(INTERVALS_FIGURE_PX, (gutter + INTERVAL_PANEL_MIN_PX) * len(panels) + right)
    panel_px = (width - right) / len(panels) - gutter
    figure = make_subplots(
        rows=max(len(domains), 1), cols=len(panels), row_heights=heights or None,
        subplot_titles=[f"{domain}: {metric}" for domain in domains for metric, _, _ in panels],
        horizontal_spacing=gutter / (width - gutter - right), vertical_spacing=0.3 / max(len(domains), 1))
    shown: set[str] = set()
    order = {pair: i for i, pair in enumerate(TABLE1_CONFIGS)}  # learn/ff first, as the tables
    for row, domain in enumerate(domains, start=1):
        for col, (metric, differences, lower_is_better) in enumerate(panels, start=1):
            labels, groups = [], [g for g in differences if g[0] == domain]
            for group in sorted(groups, key=lambda g: (order.get(g[1:], len(order)), g)):
                for (a, b), interval in differences[group].items():
                    if interval is None:
                        continue
                    label = _comparison_label(group, a, b, pair_label)
                    labels.append(label)
                    said = verdict(interval, lower_is_better, subject)
                    style, rank = _verdict_style(said)
                    figure.add_trace(go.Scatter(
                        x=[interval["mean"]], y=[label], mode="markers",
                        marker=dict(size=9, color=style["color"], symbol=style["symbol"],
                                    line=dict(width=2, color=style["color"])),
                        error_x=dict(type="data", symmetric=False, array=[interval["high"] - interval["mean"]],
                                     arrayminus=[interval["mean"] - interval["low"]], color=style["color"],
                                     thickness=2, width=4),
                        name=said, legendgroup=said, showlegend=said not in shown,
                        legendrank=rank,
                        hovertemplate=(f"{domain}, {label}<br>{metric}: %{{x:.3g}} [{interval['low']:.3g}, "
                                       f"{interval['high']:.3g}]<br>p {interval['p']:.2g}, n {interval['n']}"
                                       "<extra></extra>")), row=row, col=col)
                    shown.add(said)
            if labels:
                figure.add_vline(x=0, line=dict(color="#424242", width=1), row=row, col=col)
                figure.update_yaxes(categoryorder="array", categoryarray=list(reversed(labels)), row=row, col=col)
            else:
                # placed on the page at the panel's centre: plotly.js draws an "x5 domain" reference of a hidden
                # axis at the first panel's
                axis = "" if (row - 1) * len(panels) + col == 1 else (row - 1) * len(panels) + col
                x_domain, y_domain = figure.layout[f"xaxis{axis}"].domain, figure.layout[f"yaxis{axis}"].domain
                figure.add_annotation(text=f"fewer than {PAIRED_MIN_SEEDS} seeds", showarrow=False, xref="paper",
                                      yref="paper", x=sum(x_domain) / 2, y=sum(y_domain) / 2)
                figure.update_xaxes(visible=False, row=row, col=col)
                figure.update_yaxes(visible=False, row=row, col=col)
    figure.update_layout(
        title=dict(text=title, x=0.5, xanchor="center"), template="plotly_white",
        width=width, height=170 + 26 * sum(heights) + 40 * len(domains), margin=dict(l=gutter, r=right, t=110, b=90),
        legend=dict(orientation="h", yref="container", y=0.0, yanchor="bottom", x=0.5, xanchor="center",
                    title=f"{PAIRED_CONFIDENCE:.0%} t-interval of the per-seed differences:"))
    figure.update_annotations(font_size=13 if panel_px >= NARROW_PANEL_PX else 11)
    return figure


# ---------------------------------------------------------------------------------------------------------------
# The training curves (the paper's Figure 2)

def _setting(config: TrainConfig) -> tuple[str, str, str, str, str]:
    """What a figure's curves share: (domain, model, sigma, residual, lower bound)."""
    head = config.head
    return config.domain, config.model, head.sigma, head.residual, head.lower_bound


_DISTRIBUTION_COLOURS = {"N": "#ff7f0e", "TN": "#1f77b4"}  # the paper's orange (Gaussian) and blue (truncated)
_BAND_COLOURS = {"N": "rgba(255, 127, 14, 0.2)", "TN": "rgba(31, 119, 180, 0.2)"}


def training_curves_figure(results_dir, domain: str, model: str = MAIN_TABLES_MODEL, sigma: str = "learn",
                           residual: str = MAIN_RESIDUAL, lower_bound: str = MAIN_LOWER_BOUND,
                           metric: str = "val_mse"):
    """Validation curves of N and TN runs (one line per seed) for one domain and configuration, log scale."""
    import plotly.graph_objects as go

    figure = go.Figure()
    for run in ResultsDir(results_dir).runs():
        config = read_run_config(run)
        if _setting(config) != (domain, model, sigma, residual, lower_bound):
            continue
        if not run.curves_file.is_file():
            continue
        rows = read_jsonl(run.curves_file)
        distribution = config.head.distribution
        figure.add_trace(go.Scatter(
            x=[r["step"] for r in rows], y=[r[metric] for r in rows], mode="lines",
            name=f"{distribution} seed {config.seed}", legendgroup=distribution,
            line=dict(color=_DISTRIBUTION_COLOURS.get(distribution), width=1.5)))
    return _curve_layout(figure, f"{domain}: {metric.replace('_', ' ')} during training ({model}, {sigma}/{residual}, "
                         f"l = {lower_bound})", metric)


def sweep_training_curves_figures(results_dir, models: Sequence[str], domains: Sequence[str],
                                  configs: Sequence[tuple[str, str]], lower_bound: str = MAIN_LOWER_BOUND) -> list:
    """:func:`training_curves_figure` for every model, domain and configuration of a sweep, in that order (the
    experiments notebook's Figure 2 section)."""
    return [training_curves_figure(results_dir, domain, model, sigma, residual, lower_bound)
            for model in models for domain in domains for sigma, residual in configs]


def validation_spread_figure(results_dir, domain: str, model: str = MAIN_TABLES_MODEL, sigma: str = "learn",
                             residual: str = MAIN_RESIDUAL, lower_bound: str = MAIN_LOWER_BOUND,
                             metric: str = "val_mse"):
    """The paper's Figure 2 for one domain and configuration: validation MSE (log scale) of N and TN over training,
    per distribution the mean over seeds as a line and the seeds' range (min to max) as a band around it.

    The mean and band cover the steps every seed of a distribution evaluated (runs stopped early would otherwise
    make the band jump); a seed that trained on past them (trained until flat, or interrupted twins) goes on as a
    dotted line of its own from the last common step, one legend entry for them all and the seed in its hover text.
    The legend names the number of seeds."""
    import plotly.graph_objects as go

    curves: dict[str, list[tuple[int, dict[int, float]]]] = {}  # distribution -> (seed, step -> value) per run
    for run in ResultsDir(results_dir).runs():
        config = read_run_config(run)
        if _setting(config) != (domain, model, sigma, residual, lower_bound) or not run.curves_file.is_file():
            continue
        curves.setdefault(config.head.distribution, []).append(
            (config.seed, {r["step"]: r[metric] for r in read_jsonl(run.curves_file)}))
    figure = go.Figure()
    for distribution in sorted(curves, key=lambda d: (d != "N", d)):  # N first, as the paper's legend
        runs = sorted(curves[distribution], key=lambda pair: pair[0])
        seeds = [curve for _, curve in runs]
        steps = sorted(set.intersection(*(set(c) for c in seeds)))
        values = [[c[step] for c in seeds] for step in steps]
        colour = _DISTRIBUTION_COLOURS.get(distribution, "#7f7f7f")
        group = f"{distribution} ({len(seeds)} seed{'' if len(seeds) == 1 else 's'})"
        # the band: the maximum, then the minimum filled up to it
        figure.add_trace(go.Scatter(x=steps, y=[max(v) for v in values], mode="lines", line=dict(width=0),
                                    legendgroup=distribution, showlegend=False, hoverinfo="skip"))
        figure.add_trace(go.Scatter(x=steps, y=[min(v) for v in values], mode="lines", line=dict(width=0),
                                    fill="tonexty", fillcolor=_BAND_COLOURS.get(distribution, "rgba(0,0,0,0.15)"),
                                    legendgroup=distribution, name=f"{distribution}: seeds' range"))
        figure.add_trace(go.Scatter(x=steps, y=[sum(v) / len(v) for v in values], mode="lines",
                                    line=dict(color=colour, width=2), legendgroup=distribution,
                                    name=f"{group}: mean"))
        last = steps[-1] if steps else None
        # one legend entry for all of a distribution's seeds trained on: an entry per seed would make the legend scroll
        named = False
        for seed, curve in runs:
            beyond = sorted(step for step in curve if last is None or step >= last)
            if len(beyond) > 1:
                figure.add_trace(go.Scatter(x=beyond, y=[curve[step] for step in beyond], mode="lines",
                                            line=dict(color=colour, width=1, dash="dot"), legendgroup=distribution,
                                            name=f"{distribution}: seeds trained on", showlegend=not named,
                                            hovertemplate=f"seed {seed}, step %{{x}}: %{{y}}"
                                                          f"<extra>{distribution}</extra>"))
                named = True
    return _curve_layout(figure, f"{domain}: {metric.replace('_', ' ')}, N vs TN ({model}, {sigma}/{residual}, "
                         f"l = {lower_bound})", metric)


# Tick values on a log axis: the finest of these mantissa sets (per decade) that puts at most LOG_TICKS_AT_MOST ticks
# from the one at or below the data's smallest value to the one at or above its largest; past that, every few decades.
LOG_TICK_MANTISSAS = ((1, 1.5, 2, 3, 4, 5, 6, 8), (1, 2, 3, 5, 7), (1, 2, 5), (1,))
LOG_TICKS_AT_MOST = 6


def log_axis_ticks(values: Sequence[float]) -> list[float]:
    """Round tick values from the last at or below ``min(values)`` to the first at or above ``max(values)``
    (finite, positive values only; none: []), as finely as :data:`LOG_TICK_MANTISSAS` allows. An axis drawn over
    exactly these has every curve between two labelled ticks: plotly's own choice left a curve below the lowest
    one (gripper fixed/none's TN at 10, ticks from 20)."""
    finite = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    if not finite:
        return []
    low, high = min(finite), max(finite)
    decades = range(math.floor(math.log10(low)) - 1, math.ceil(math.log10(high)) + 2)
    for mantissas in LOG_TICK_MANTISSAS:
        candidates = sorted({round(m * 10.0 ** k, 12) for k in decades for m in mantissas})
        below = max(t for t in candidates if t <= low * (1 + 1e-12))
        above = min(t for t in candidates if t >= high * (1 - 1e-12))
        ticks = [t for t in candidates if below <= t <= above]
        if len(ticks) <= LOG_TICKS_AT_MOST:
            return ticks
    step = math.ceil((len(ticks) - 1) / (LOG_TICKS_AT_MOST - 1))  # decades: every step-th, the top one kept
    return ticks[::step] + ([ticks[-1]] if (len(ticks) - 1) % step else [])


def _curve_layout(figure, title: str, metric: str):
    """The training-curve figures' common look: ``metric`` on a log axis against the training step, few ticks,
    the y axis from a round tick below the curves to one above them (:func:`log_axis_ticks`)."""
    figure.update_layout(title=title, xaxis_title="training step", yaxis_title=metric.replace("_", " "),
                         yaxis_type="log", template="plotly_white", height=380)
    figure.update_xaxes(nticks=CURVE_TICKS)
    round_log_yaxis(figure, [v for trace in figure.data for v in (trace.y or ())])
    return figure


def round_log_yaxis(figure, values: Sequence[float | None]) -> None:
    """Draw ``figure``'s log y axis from the round tick at or below ``values`` to the one at or above them,
    labelled at :func:`log_axis_ticks`' ticks only: plotly's own labels a log axis spanning a decade or so on every
    digit, and those near its top overprint (0.7, 0.8, 0.9, 1). None, non-finite and non-positive values are not
    drawn on a log axis and are left out; with nothing left, plotly's ticks."""
    ticks = log_axis_ticks(values)
    if not ticks:
        figure.update_yaxes(**LOG_AXIS_TICKS)
        return
    low, high = math.log10(ticks[0]), math.log10(ticks[-1])
    pad = 0.02 * max(high - low, 0.1)
    figure.update_yaxes(tickvals=ticks, range=[low - pad, high + pad], tickformat=LOG_AXIS_TICKS["tickformat"])


# ---------------------------------------------------------------------------------------------------------------
# The paired intervals of the seeds


def paired_intervals_figures(results_dir, models: Sequence[str] = (MAIN_TABLES_MODEL,),
                             lower_bound: str = MAIN_LOWER_BOUND) -> list:
    """``(model, figure)`` per model whose cells have the seeds for paired intervals: TN against N and N+clip in
    test MSE, test NLL at the best-NLL checkpoint and planning evaluations
    (:func:`paired_intervals_figure`); [] where no cell has
    :data:`tnlib.experiments.reporting.seed_statistics.PAIRED_MIN_SEEDS` seeds."""
    results = collect_results(results_dir)
    by_nll = collect_results(results_dir, checkpoint=RunDir.BEST_NLL)
    plans = collect_planning(results_dir)
    figures = []
    for model in models:
        mine = [r for r in plans if r["model"] == model and r["lower_bound"] == lower_bound]
        figure = _intervals_figure(model, lower_bound, table1_seed_values(results, model, lower_bound),
                                   table1_seed_values(by_nll, model, lower_bound, "nll"),
                                   table2_seed_values(mine, "evaluations"))
        if figure is not None:
            figures.append((model, figure))
    return figures


def seed_csv_intervals_figures(report_dir) -> list:
    """:func:`paired_intervals_figures` drawn from a rendered report's per-seed CSVs (``accuracy-seeds.csv``,
    ``planning-seeds.csv`` where it planned) instead of its run folders, for reports whose runs are not on this
    machine: the same intervals (the CSVs hold every value the figure reads). A ValueError where the report has
    no ``accuracy-seeds.csv`` or mixes lower bounds."""
    report_dir = Path(report_dir)
    accuracy, planning = report_dir / ACCURACY_SEEDS, report_dir / PLANNING_SEEDS
    if not report_dir.is_dir():
        raise ValueError(f"no folder {report_dir}: give a rendered report's folder, e.g. reports/converged/linear")
    if not accuracy.is_file() and not (report_dir / "accuracy.md").is_file():
        raise ValueError(f"{shown_folder(report_dir)} holds no rendered report (no accuracy.md, no "
                         "accuracy-seeds.csv): give a folder `tnlib report` wrote, e.g. reports/converged/linear")
    if not accuracy.is_file():
        raise ValueError(f"{shown_folder(report_dir)} holds no accuracy-seeds.csv beside its accuracy.md, so there is "
                         "nothing to draw the intervals from: render the report again from its runs (`tnlib report`), "
                         "which writes the values per seed")
    rows = read_seed_csv(accuracy, ("mse", "nll_best_nll"))
    bounds = sorted({row["lower_bound"] for row in rows})
    if len(bounds) > 1:
        raise ValueError(f"{accuracy} mixes lower bounds ({', '.join(bounds)}): a figure holds one")
    ran = {row["model"] for row in rows}
    figures = []
    for model in [m for m in MODELS if m in ran] + sorted(ran - set(MODELS)):
        evaluations = read_seed_values(planning, model, "evaluations") if planning.is_file() else {}
        figure = _intervals_figure(model, bounds[0], read_seed_values(accuracy, model, "mse"),
                                   read_seed_values(accuracy, model, "nll_best_nll"), evaluations)
        if figure is not None:
            figures.append((model, figure))
    return figures


def _intervals_figure(model: str, lower_bound: str, mse: dict, nll: dict, evaluations: dict):
    """The forest plot of one model's per-seed values (``{(domain, sigma, residual, column): {seed: value}}`` of
    the test MSE, the test NLL at the best-NLL checkpoint and the plan evaluations); None where no cell has the
    seeds for a paired interval."""
    panels = [("test MSE", paired_differences(mse), True),
              ("test NLL", paired_differences(nll, comparisons=(("TN", "N"),)), True),
              ("plan evaluations", paired_differences(evaluations), True)]
    panels = [panel for panel in panels if panel[1]]
    if not any(interval is not None for _, differences, _ in panels for row in differences.values()
               for interval in row.values()):
        return None
    return paired_intervals_figure(panels, f"TN against N and N+clip, paired by seed ({model}, l = {lower_bound})")


# ---------------------------------------------------------------------------------------------------------------
# The paired intervals size by size, on the whole test grid

# Each configuration's colour in the per-size figure: TN's blue and N's orange keep the meaning the other figures
# give them, so a configuration takes neither.
CONFIGURATION_COLOURS = {("learn", "ff"): "#2ca02c", ("learn", "none"): "#9467bd", ("fixed", "ff"): "#8c564b",
                         ("fixed", "none"): "#d62728"}
# What the per-size figure compares, in its columns: the comparison the whole grid turns on first.
SIZE_COMPARISONS = (("TN", "N+clip"), ("TN", "N"))


def _size_values(rows: Sequence[dict], model: str) -> tuple[dict, dict]:
    """From accuracy-by-size-seeds.csv's rows of ``model``: ({domain: its sizes in the grid's order},
    {(domain, sigma, residual, column, size): {seed: test MSE}}), the pooled rows above the sizes left out."""
    sizes: dict = {}
    values: dict = {}
    for row in rows:
        if row["model"] != model or row["size"] in (WHOLE_ROW, REDUCED_ROW):
            continue
        sizes.setdefault(row["domain"], {})[row["size"]] = None
        key = (row["domain"], row["sigma"], row["residual"], row["column"], row["size"])
        values.setdefault(key, {})[int(row["seed"])] = float(row["mse"])
    return {domain: list(found) for domain, found in sizes.items()}, values


def size_intervals_figure(rows: Sequence[dict], model: str):
    """TN - N+clip and TN - N in test MSE at each size of the whole test grid, paired by seed, from the rows of
    ``accuracy-by-size-seeds.csv`` (:mod:`tnlib.experiments.reporting.size_tables`) of ``model``: one row of panels
    per domain, one column per comparison; per configuration the mean difference at each size as a dot and its
    95% t-interval as a bar, filled where the interval excludes 0 and hollow where it holds it. Below the line at 0
    TN is better. The same intervals as accuracy-by-size.md's tables; None where no size has the seeds for one."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    sizes, values = _size_values(rows, model)
    domains = sorted(sizes, key=lambda d: (DOMAINS.index(d) if d in DOMAINS else len(DOMAINS), d))
    panels: dict = {}  # (domain, comparison) -> {(sigma, residual): [(size index, interval)]}
    for domain in domains:
        for a, b in SIZE_COMPARISONS:
            for sigma, residual in TABLE1_CONFIGS:
                points = []
                for i, size in enumerate(sizes[domain]):
                    first = values.get((domain, sigma, residual, a, size), {})
                    second = values.get((domain, sigma, residual, b, size), {})
                    interval = paired_interval([first[s] - second[s] for s in sorted(set(first) & set(second))])
                    if interval is not None:
                        points.append((i, interval))
                if points:
                    panels.setdefault((domain, (a, b)), {})[(sigma, residual)] = points
    domains = [d for d in domains if any((d, pair) in panels for pair in SIZE_COMPARISONS)]
    if not domains:
        return None
    figure = make_subplots(rows=len(domains), cols=len(SIZE_COMPARISONS), vertical_spacing=0.4 / len(domains),
                           horizontal_spacing=0.08,
                           subplot_titles=[f"{domain}: {a} - {b} (test MSE)" for domain in domains
                                           for a, b in SIZE_COMPARISONS])
    shown: set = set()
    for row, domain in enumerate(domains, start=1):
        for col, (a, b) in enumerate(SIZE_COMPARISONS, start=1):
            by_config = panels.get((domain, (a, b)), {})
            for k, ((sigma, residual), points) in enumerate(by_config.items()):
                offset = (k - (len(by_config) - 1) / 2) * 0.12  # side by side at a size, not on top
                colour, config = CONFIGURATION_COLOURS.get((sigma, residual), "#7f7f7f"), f"{sigma}/{residual}"
                figure.add_trace(go.Scatter(
                    x=[i + offset for i, _ in points], y=[interval["mean"] for _, interval in points],
                    mode="markers", name=config, legendgroup=config, showlegend=config not in shown,
                    marker=dict(size=8, color=colour, line=dict(width=2, color=colour),
                                symbol=["circle-open" if interval["low"] <= 0 <= interval["high"] else "circle"
                                        for _, interval in points]),
                    error_y=dict(type="data", symmetric=False, color=colour, thickness=1.5, width=3,
                                 array=[interval["high"] - interval["mean"] for _, interval in points],
                                 arrayminus=[interval["mean"] - interval["low"] for _, interval in points]),
                    customdata=[[sizes[domain][i], interval["low"], interval["high"], interval["n"]]
                                for i, interval in points],
                    hovertemplate=(f"{domain}, {config}, %{{customdata[0]}}<br>{a} - {b}: %{{y:.3g}} "
                                   "[%{customdata[1]:.3g}, %{customdata[2]:.3g}], n %{customdata[3]}<extra></extra>")),
                    row=row, col=col)
                shown.add(config)
            figure.add_hline(y=0, line=dict(color="#424242", width=1), row=row, col=col)
            figure.update_xaxes(tickvals=list(range(len(sizes[domain]))), ticktext=sizes[domain], tickangle=-40,
                                tickfont=dict(size=10), range=[-0.6, len(sizes[domain]) - 0.4], row=row, col=col)
    figure.update_layout(
        title=dict(text=f"TN against N+clip and N, size by size on the whole test grid ({model})", x=0.5,
                   xanchor="center"),
        template="plotly_white", height=140 + 430 * len(domains), margin=dict(l=70, r=30, t=100, b=60),
        legend=dict(orientation="h", yref="container", y=0.0, yanchor="bottom", x=0.5, xanchor="center",
                    title=f"{PAIRED_CONFIDENCE:.0%} t-interval of the per-seed differences, filled where it excludes "
                          "0:"))
    figure.update_annotations(font_size=13)
    return figure
