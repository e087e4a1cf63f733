"""A report figure's numbers are written rounded, never past what a log or a zoomed linear axis can show."""
from __future__ import annotations

import json
import math
import re

import plotly.graph_objects as go

from tnlib.experiments.reporting.figure_html import SIGNIFICANT_DIGITS, SPAN_RESOLUTION, figure_html, rounded_numbers


def test_each_number_keeps_its_significant_digits_across_magnitudes():
    values = [5.302155649198341, 0.0012345678, 1234.5678, 3e-9 * math.pi]
    rounded = rounded_numbers(values)
    for before, after in zip(values, rounded):
        assert abs(after - before) <= 0.5 * 10 ** (math.floor(math.log10(abs(before))) - SIGNIFICANT_DIGITS + 1)
        assert after != before  # digits past the fourth were dropped


def test_a_narrow_range_at_a_large_magnitude_keeps_its_resolution():
    values = [1000.0 + i * 1e-6 for i in range(11)]
    rounded = rounded_numbers(values)
    span = values[-1] - values[0]
    assert all(abs(a - b) <= span * SPAN_RESOLUTION for a, b in zip(values, rounded))
    assert len(set(rounded)) == len(values)


def test_ints_none_strings_and_non_finite_values_pass_unchanged():
    values = [1, None, "a", float("inf"), float("nan"), 2.123456]
    rounded = rounded_numbers(values)
    assert rounded[:4] == [1, None, "a", float("inf")] and math.isnan(rounded[4]) and rounded[5] == 2.1235  # its own magnitude is its span


def test_the_html_carries_the_rounded_traces_and_the_fixed_id():
    figure = go.Figure(go.Scatter(x=[100, 200, 300], y=[5.302155649198341, 3.2844617510384637, 2.574759892177264],
                                  error_y={"array": [0.123456789, 0.2, 0.3]}))
    html = figure_html(figure, "curves-x")
    assert 'id="curves-x"' in html
    data = json.loads(re.search(r'"curves-x",\s*(\[.*?\]),\s*\{', html, re.S).group(1))
    # four significant digits, and a ten-thousandth of the span (2.73) resolved
    assert data[0]["y"] == [5.3022, 3.2845, 2.5748]
    assert "x" not in data[0] and (data[0]["x0"], data[0]["dx"]) == (100, 100)
    assert data[0]["error_y"]["array"] == [0.12346, 0.2, 0.3]  # a ten-thousandth of the span 0.18


def test_unevenly_spaced_x_values_stay_a_list():
    figure = go.Figure(go.Scatter(x=[100, 200, 400], y=[1.0, 2.0, 3.0]))
    data = json.loads(re.search(r'"f",\s*(\[.*?\]),\s*\{', figure_html(figure, "f"), re.S).group(1))
    assert data[0]["x"] == [100, 200, 400] and "x0" not in data[0]


def test_plotly_base64_arrays_are_decoded_and_rounded():
    import base64

    import numpy as np

    from tnlib.experiments.reporting.figure_html import compact_figure_dict

    x = np.linspace(-8.0, 8.0, 5)
    y = np.array([[0.123456789, 1.0], [2.5, 3.14159265]])
    encoded = {"data": [{"type": "scatter", "x": {"dtype": "f8", "bdata": base64.b64encode(x.tobytes()).decode()},
                         "y": {"dtype": "f8", "bdata": base64.b64encode(y.tobytes()).decode(), "shape": "2, 2"}}],
               "layout": {"title": {"text": "t"}}}
    compact = compact_figure_dict(encoded)
    assert compact["data"][0]["x"] == [-8.0, -4.0, 0.0, 4.0, 8.0]
    assert compact["data"][0]["y"] == [[0.12346, 1.0], [2.5, 3.14159]]  # each row to a ten-thousandth of its span
    assert compact["layout"] == encoded["layout"]
