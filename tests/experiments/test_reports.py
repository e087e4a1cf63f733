"""The reports' pages: the summaries table of a sweep's cells."""
from __future__ import annotations


def test_summaries_table_lists_every_cell():
    from tnlib.experiments.reporting.reports import summaries_table

    table = summaries_table([{"run": "a", "mse": 1.0, "nll": 2.0, "coverage_default": 1.0},
                             {"run": "b", "mse": 1.5, "nll": 2.5, "coverage_default": 0.5, "coverage_clip": 1.0}])
    rows = table.splitlines()[2:]
    assert rows == ["| a | 1.000 | 2.000 | 1.00 |  |", "| b | 1.500 | 2.500 | 0.50 | 1.00 |"]
