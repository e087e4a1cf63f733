"""The notebooks' plotting set-up and what every figure shares: the offline renderer, the colours, a title pinned
to the figure's top, the message figure and the slider figure that moves without a kernel.

Offline rendering: :func:`setup_notebook_plotting` embeds the plotly.js bundle once, in the output of the
cell that calls it, and makes every later ``fig.show()`` emit two representations: the plotly mimetype,
which JupyterLab draws with its bundled plotly extension, and a ``text/html`` div whose script uses that
embedded bundle, which nbconvert keeps when it writes HTML. Nothing is loaded from a CDN (plotly's own
``notebook`` renderer adds a MathJax CDN script to every figure, hence the renderer below).
"""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go
import plotly.io as pio
from plotly.io.base_renderers import MimetypeRenderer

from tnlib.experiments.reporting.figure_html import compact_figure_dict

#: Renderer name registered by :func:`setup_notebook_plotting`.
INLINE_RENDERER = "tnlib_inline_html"

#: Marker in the HTML that carries the embedded plotly.js bundle (tests look for it).
BUNDLE_MARKER = "tnlib: embedded plotly.js bundle"

#: The figures' colours, in the order their traces take them.
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")
#: A title pinned to the figure's top, left-aligned, so that a legend placed under it never covers it.
TITLE_AT_THE_TOP = dict(yref="container", y=1.0, yanchor="top", pad=dict(t=12), x=0.0, xanchor="left")


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


def show_in_output(output: Any, figure: go.Figure) -> None:
    """Replace what an ``ipywidgets.Output`` shows with ``figure``.

    The outputs are set directly instead of capturing ``figure.show()`` inside ``with output:``: capturing a
    plotly figure into an Output widget makes papermill hang after the last cell, and setting them works the
    same in JupyterLab. The bundle comes from ``_repr_mimebundle_``, not ``Output.append_display_data``: in a
    kernel that goes through the figure's ``_ipython_display_``, which shows it in the cell (or nowhere, from a
    slider callback) and leaves the widget empty.
    """
    output.outputs = ({"output_type": "display_data", "data": figure._repr_mimebundle_(), "metadata": {}},)


def message_figure(message: str) -> go.Figure:
    """An empty figure that shows ``message``: what the explorer draws for an invalid slider setting."""
    figure = go.Figure()
    figure.add_annotation(text=message, showarrow=False, x=0.5, y=0.5, xref="paper", yref="paper", font=dict(size=16))
    figure.update_layout(xaxis_visible=False, yaxis_visible=False, template="plotly_white", height=300)
    return figure


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
