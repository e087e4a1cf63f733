"""The paired intervals of a five-seed report as one figure: where TN beats N (and N+clip), where it loses, where
the seeds cannot tell.

A forest plot: one panel per domain (rows) and metric (columns), one line per configuration and comparison
(``learn/ff: TN - N``), the mean per-seed difference as a dot and its 95% t-interval as a bar
(:func:`tnlib.experiments.seed_statistics.paired_differences`). A filled dot in TN's colour: the interval says TN
is better; in N's colour: worse; hollow grey: the interval holds 0. Each panel has its own x scale (MSE gaps of
.02 and of 7 sit in different domains), and a vertical line at 0.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from tnlib.experiments.seed_statistics import PAIRED_CONFIDENCE, PAIRED_MIN_SEEDS
from tnlib.paper import DOMAINS, TABLE1_CONFIGS

# What a dot's colour says; TN's blue and N's orange as in the paper's Figure 2 and the training curves.
VERDICT_STYLES = {
    "TN better": dict(color="#1f77b4", symbol="circle"),
    "TN worse": dict(color="#ff7f0e", symbol="circle"),
    "within noise": dict(color="#7f7f7f", symbol="circle-open"),
}


def verdict(interval: dict, lower_is_better: bool = True) -> str:
    """How a paired interval of TN minus another column reads: TN better, TN worse, or within noise (0 inside)."""
    if interval["low"] <= 0 <= interval["high"]:
        return "within noise"
    return "TN better" if (interval["high"] < 0) == lower_is_better else "TN worse"


def paired_intervals_figure(panels: Sequence[tuple[str, Mapping, bool]], title: str):
    """``panels``: ``(metric title, paired differences, lower is better)`` per metric, the differences as
    :func:`tnlib.experiments.seed_statistics.paired_differences` returns them ({(domain, sigma, residual): {(a, b):
    interval or None}}). One row of panels per domain any of them holds; a panel whose cells have fewer than
    :data:`PAIRED_MIN_SEEDS` seeds says so instead of plotting."""
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
    figure = make_subplots(
        rows=max(len(domains), 1), cols=len(panels), row_heights=heights or None,
        subplot_titles=[f"{domain}: {metric}" for domain in domains for metric, _, _ in panels],
        horizontal_spacing=0.14, vertical_spacing=0.3 / max(len(domains), 1))
    shown: set[str] = set()
    order = {pair: i for i, pair in enumerate(TABLE1_CONFIGS)}  # learn/ff first, as the tables
    for row, domain in enumerate(domains, start=1):
        for col, (metric, differences, lower_is_better) in enumerate(panels, start=1):
            labels, groups = [], [g for g in differences if g[0] == domain]
            for group in sorted(groups, key=lambda g: (order.get(g[1:], len(order)), g)):
                for (a, b), interval in differences[group].items():
                    if interval is None:
                        continue
                    label = f"{group[1]}/{group[2]}: {a} - {b}"
                    labels.append(label)
                    said = verdict(interval, lower_is_better)
                    style = VERDICT_STYLES[said]
                    figure.add_trace(go.Scatter(
                        x=[interval["mean"]], y=[label], mode="markers",
                        marker=dict(size=9, color=style["color"], symbol=style["symbol"],
                                    line=dict(width=2, color=style["color"])),
                        error_x=dict(type="data", symmetric=False, array=[interval["high"] - interval["mean"]],
                                     arrayminus=[interval["mean"] - interval["low"]], color=style["color"],
                                     thickness=2, width=4),
                        name=said, legendgroup=said, showlegend=said not in shown,
                        legendrank=list(VERDICT_STYLES).index(said),
                        hovertemplate=(f"{domain}, {label}<br>{metric}: %{{x:.3g}} [{interval['low']:.3g}, "
                                       f"{interval['high']:.3g}]<br>p {interval['p']:.2g}, n {interval['n']}"
                                       "<extra></extra>")), row=row, col=col)
                    shown.add(said)
            if labels:
                figure.add_vline(x=0, line=dict(color="#424242", width=1), row=row, col=col)
                figure.update_yaxes(categoryorder="array", categoryarray=list(reversed(labels)), row=row, col=col)
            else:
                axis = "" if (row - 1) * len(panels) + col == 1 else (row - 1) * len(panels) + col
                figure.add_annotation(text=f"fewer than {PAIRED_MIN_SEEDS} seeds", showarrow=False,
                                      xref=f"x{axis} domain", yref=f"y{axis} domain", x=0.5, y=0.5)
                figure.update_xaxes(visible=False, row=row, col=col)
                figure.update_yaxes(visible=False, row=row, col=col)
    figure.update_layout(
        title=dict(text=title, x=0.5, xanchor="center"), template="plotly_white",
        height=170 + 26 * sum(heights) + 40 * len(domains), margin=dict(l=170, r=30, t=110, b=90),
        legend=dict(orientation="h", yref="container", y=0.0, yanchor="bottom", x=0.5, xanchor="center",
                    title=f"{PAIRED_CONFIDENCE:.0%} t-interval of the per-seed differences:"))
    figure.update_annotations(font_size=13)
    return figure
