"""A report's plotly figure as an HTML fragment whose data is written only as precisely as a reader can see.

Plotly writes every float with all 17 digits (or as base64 doubles, which is no shorter); a report page of 160 runs' validation curves is then mostly digits no
screen can show (reports/ travels to lent machines under a size limit). Evenly spaced integer x values (the
validation steps) are written as a start and a step, and each number here keeps at least
:data:`SIGNIFICANT_DIGITS` significant digits -- a log axis resolves relative differences -- and at least
:data:`SPAN_RESOLUTION` of its array's span -- a linear axis zoomed onto a narrow range resolves absolute ones. A
screen of a few thousand pixels sees neither rounding; hover labels show the rounded value.
"""
from __future__ import annotations

import base64
import math
from typing import Any

import numpy as np

SIGNIFICANT_DIGITS = 4
SPAN_RESOLUTION = 1e-4


def _decimals(value: float, span_decimals: int) -> int:
    magnitude = math.floor(math.log10(abs(value))) if value else 0
    return max(SIGNIFICANT_DIGITS - 1 - magnitude, span_decimals)


def rounded_numbers(values: list) -> list:
    """``values`` with each finite float rounded (see the module docstring); ints, None, strings, non-finite
    floats and nested lists kept as they are."""
    floats = [v for v in values if isinstance(v, float) and math.isfinite(v)]
    if not floats:
        return values
    span = max(floats) - min(floats) or abs(max(floats, key=abs))
    span_decimals = -math.floor(math.log10(span * SPAN_RESOLUTION)) if span else 0
    return [round(v, _decimals(v, span_decimals)) if isinstance(v, float) and math.isfinite(v) else v
            for v in values]


def _typed_array(node: dict) -> np.ndarray | None:
    """Plotly's base64 form of a numeric array (``{"dtype": "f8", "bdata": ..., "shape": "2, 3"}``), decoded."""
    if not (isinstance(node.get("bdata"), str) and isinstance(node.get("dtype"), str)):
        return None
    values = np.frombuffer(base64.b64decode(node["bdata"]), dtype=np.dtype(node["dtype"]))
    shape = node.get("shape")
    return values.reshape([int(n) for n in str(shape).split(",")]) if shape else values


def _rounded_tree(node: Any) -> Any:
    if isinstance(node, dict) and (typed := _typed_array(node)) is not None:
        node = typed
    if isinstance(node, dict):
        return {key: _rounded_tree(value) for key, value in node.items()}
    if isinstance(node, np.ndarray):
        node = node.tolist() if node.dtype.kind in "fiub" else node
        if isinstance(node, list) and node and isinstance(node[0], list):  # a matrix: each row on its own
            return [_rounded_tree(row) for row in node]
    if isinstance(node, (list, tuple)):
        if any(isinstance(v, float) for v in node):
            return rounded_numbers(list(node))
        return [_rounded_tree(v) for v in node]
    return node


def _compact_trace(trace: dict) -> dict:
    """A scatter trace's evenly spaced integer x (validation steps) as plotly's ``x0``/``dx``, its numbers rounded."""
    trace = _rounded_tree(trace)
    x = trace.get("x")
    if (trace.get("type", "scatter") == "scatter" and isinstance(x, list) and len(x) > 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in x)
            and len({b - a for a, b in zip(x, x[1:])}) == 1):
        trace = {key: value for key, value in trace.items() if key != "x"}
        trace.update(x0=x[0], dx=x[1] - x[0])
    return trace


def compact_figure_dict(fig_dict: dict) -> dict:
    """A plotly figure's dict with its traces compacted (see the module docstring); the layout as it was."""
    return {**fig_dict, "data": [_compact_trace(trace) for trace in fig_dict.get("data", [])]}


def figure_html(figure, div_id: str) -> str:
    """``figure`` (a plotly Figure) as a ``<div>`` for a page that loads plotly.js itself, its traces' numbers
    rounded; ``div_id`` fixed (plotly draws a random one) so the same runs render the same file."""
    import plotly.io as pio

    return pio.to_html(compact_figure_dict(figure.to_dict()), full_html=False, include_plotlyjs=False,
                       div_id=div_id, validate=False)
