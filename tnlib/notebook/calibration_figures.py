"""Calibration figures: histograms of the randomised and the naive PIT, for the classroom's synthetic regression
and for a sweep's runs."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from tnlib.experiments.reporting import calibration_summary
from tnlib.learning.calibration import Calibration
from tnlib.notebook import synthetic_regression
from tnlib.notebook.notebook_plotting import COLORS, TITLE_AT_THE_TOP

# The PIT histograms' bins: ten, so that a calibrated model's bars each hold about a tenth of the states.
PIT_BINS = 10
PIT_LABELS = {"pit": "randomised PIT (h* an integer)", "naive": "naive PIT F(h*)"}


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
            trace = go.Bar(x=centres, y=density, width=1 / PIT_BINS, marker_color=COLORS[0]) if key == "pit" \
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
    figure.update_layout(title=dict(text=title, **TITLE_AT_THE_TOP), template="plotly_white",
                         height=140 + 270 * rows, bargap=0.05,
                         legend=dict(orientation="h", yanchor="top", y=-0.2 / rows))
    return figure


def calibration_figure(result: synthetic_regression.RegressionResult) -> go.Figure:
    """The classroom's section 8b: :func:`pit_histograms_figure` of the synthetic regression's models (:data:`tnlib.notebook.synthetic_regression.MODEL_LABELS`)."""
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
