"""How a table cell reads: the mean and sample std over seeds, in the paper's digits (two decimals under 100, no
leading zero), a test metric as ``mean±std`` and a planning metric as Table 2 writes it; one seed says so."""
from __future__ import annotations

import math

import numpy as np

# A cell of one run has no spread across seeds: it says so instead of showing ±0.
ONE_SEED = "(1 seed)"


def mean_and_std(values: list[float]) -> tuple[float, float | None] | None:
    """Mean and sample std (ddof=1; None for one seed: no spread to show) of the values that are not None, or
    None."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    array = np.asarray(values, dtype=np.float64)
    return float(array.mean()), float(array.std(ddof=1)) if len(array) > 1 else None


def paper_number(x: float) -> str:
    """Like the paper: two decimals under 100, fewer above, no leading zero (.76)."""
    if not math.isfinite(x):
        return str(x)
    text = f"{x:.2f}" if abs(x) < 100 else f"{x:.1f}" if abs(x) < 1e4 else f"{x:.3g}"
    return text.replace("0.", ".", 1) if text.startswith(("0.", "-0.")) and "e" not in text else text


def accuracy_cell(stats: tuple[float, float] | None) -> str:
    """A test metric's cell as Table 1 writes it: ``mean±std`` in the paper's digits, or the mean and
    :data:`ONE_SEED`."""
    if stats is None:
        return ""
    mean, std = stats
    if std is None:
        return f"{paper_number(mean)} {ONE_SEED}"
    std_text = f"{std:.1f}" if abs(std) < 1e4 else f"{std:.2g}"
    if std_text.startswith("0."):
        std_text = std_text[1:]
    return f"{paper_number(mean)}±{std_text}"


def planning_cell(stats: tuple[float, float | None] | None, metric: str) -> str:
    """A planning metric's cell as Table 2 writes it: evaluations in whole numbers, a ratio (coverage, plan cost
    over h*) with two decimals."""
    if stats is None:
        return ""
    digits = 0 if metric == "evaluations" else 2
    mean, std = stats
    return f"{mean:.{digits}f} {ONE_SEED}" if std is None else f"{mean:.{digits}f}±{std:.{digits}f}"
