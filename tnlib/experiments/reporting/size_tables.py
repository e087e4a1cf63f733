"""Table 1 per size on the whole test grid: ``accuracy-by-size.md`` and ``accuracy-by-size-seeds.csv``.

The paper tests on sizes its training never saw (blocksworld 11-22 blocks, ferry 10-30 locations and cars, gripper
20-100 balls), and its Table 1 pools them. A dataset's ``test`` split, labelled under a solver's limits, holds
only the sizes and draws the solver reached; ``tnlib evaluate RUN --split test-grid``
(:func:`tnlib.learning.evaluation.evaluate_test_grid`) evaluates a run on the domain's whole test grid -- every
cell the test-grid split labels exactly, and those the test split labels whole -- and writes
``metrics-test-grid.json`` with one record per cell. This page lays those out per domain: the cells and what
labels them, then Table 1 with one row per size (test MSE of the best-validation-MSE checkpoint, N+clip under
N, h_FF and LM-cut beside), its NLL rows (the same checkpoint), and TN - N and TN - N+clip paired by seed per size;
above the sizes, the same runs on the reduced ``test`` split (the value accuracy.md shows) and on the whole grid.
The page is written only where some run has such metrics; :func:`size_metrics_note` says what writes them where
tested runs lack them.
"""
from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Sequence

from tnlib.data.full_test_grid import full_test_grid
from tnlib.data.schema import TEST_GRID
from tnlib.errors import DamagedFile, DatasetError
from tnlib.experiments.reporting.report_gaps import runs_argument
from tnlib.experiments.results_dir import ResultsDir
from tnlib.experiments.scope import sizes_text
from tnlib.experiments.scope_page import scope_header
from tnlib.experiments.reporting.seed_statistics import (
    COMPARISONS,
    PAIRED_BOLD_RULE,
    PAIRED_CONFIDENCE,
    PAIRED_MIN_SEEDS,
    interval_side,
    multiplicity_note,
    paired_cell,
    paired_interval,
    write_seed_csv,
)
from tnlib.experiments.reporting.table_rows import collect_results
from tnlib.experiments.reporting.tables import render_table
from tnlib.files import atomic_write_text, read_json, shown_folder
from tnlib.learning.training import read_run_config
from tnlib.paper import DOMAINS, TABLE1_CONFIGS

__all__ = ["SIZES_FIGURE", "SIZES_PAGE", "SIZES_SEEDS", "size_metrics_note", "write_size_report"]

SIZES_PAGE = "accuracy-by-size.md"
SIZES_SEEDS = "accuracy-by-size-seeds.csv"
SIZES_FIGURE = "accuracy-by-size.html"  # the paired intervals per size drawn (tnlib.experiments.reporting.reports)
# The rows above a domain's sizes: the same runs on the reduced test split, and on every labelled cell at once.
REDUCED_ROW = "test split (reduced)"
WHOLE_ROW = "whole test grid"
RUN_KEYS = ("domain", "model", "distribution", "sigma", "residual", "lower_bound", "seed")
METRIC_KEYS = ("mse", "mse_clip", "nll", "mse_ff", "mse_lmcut")


def _run_key(result: dict) -> tuple:
    return tuple(result.get(k) for k in RUN_KEYS)


def _labelled(result: dict, label: str, values: dict) -> dict:
    """A metrics record of one size (or row) as :func:`tnlib.experiments.reporting.tables.render_table` reads one run's: the
    row's label in the place of the domain."""
    return {**{k: result[k] for k in RUN_KEYS}, "config": result.get("config", {}), "domain": label,
            **{k: values.get(k) for k in METRIC_KEYS}}


def _cells(domain: str, results: Sequence[dict]) -> list[dict]:
    """The grid's cells as the domain's runs were evaluated on them; a ValueError where runs saw different cells
    (evaluated on a test grid with fewer cells or instances: evaluated again, they agree)."""
    seen = {tuple((str(s["params"]), s["split"], s["instances"], s["states"]) for s in r["sizes"]) for r in results}
    if len(seen) > 1:
        raise ValueError(f"{domain}'s runs were evaluated on different test grids (the split changed between their "
                         f"evaluations): evaluate them again with `tnlib evaluate RUN --split {TEST_GRID}`")
    return [{"params": s["params"], "split": s["split"], "instances": s["instances"], "states": s["states"],
             "label": sizes_text(domain, [s["params"]])} for s in results[0]["sizes"]]


def _rows(domain: str, grid: Sequence[dict], reduced: Sequence[dict]) -> tuple[list[dict], list[dict]]:
    """(the table's pseudo-runs, row by row: the reduced split, the whole grid, each labelled size; the cells)."""
    cells = _cells(domain, grid)
    tested = {_run_key(r) for r in grid}
    rows = [_labelled(r, REDUCED_ROW, r) for r in reduced if _run_key(r) in tested]
    rows += [_labelled(r, WHOLE_ROW, r) for r in grid]
    for i, cell in enumerate(cells):
        if cell["states"]:
            rows += [_labelled(r, cell["label"], r["sizes"][i]) for r in grid]
    return rows, cells


def _cell_lines(cells: Sequence[dict]) -> str:
    """What labels each cell: the split, its instances and states, or that neither labels it."""
    lines = ["| size | labelled by | instances | states |", "|---|---|---|---|"]
    for cell in cells:
        if cell["split"] is None:
            lines.append(f"| {cell['label']} | not labelled (no split holds it whole) | | |")
        else:
            lines.append(f"| {cell['label']} | {cell['split']} | {cell['instances']} | {cell['states']:,} |")
    return "\n".join(lines) + "\n"


def _seed_values(rows: Sequence[dict], label: str, sigma: str, residual: str, column: str, metric: str) -> dict:
    key = "mse_clip" if column == "N+clip" else metric
    distribution = "N" if column == "N+clip" else column
    return {r["seed"]: r[key] for r in rows if r["domain"] == label and r["sigma"] == sigma
            and r["residual"] == residual and r["distribution"] == distribution and r.get(key) is not None}


def _paired_text(interval: dict | None) -> str:
    return "" if interval is None else paired_cell(interval, with_p=False)


def _verdicts_over_sizes(verdicts: dict) -> str:
    """Per configuration and comparison, at how many sizes (the grid's cells, not the rows above them) TN is better,
    within noise and worse, and which (the largest group as "the other N"): where a difference lives along the grid
    (near the training sizes, or far from them) shows here, where the whole grid's row pools it."""
    lines = []
    for (config, comparison), by_label in verdicts.items():
        groups = {verdict: [label for label, found in by_label.items() if found == verdict]
                  for verdict in ("better", "within noise", "worse")}
        groups = {verdict: labels for verdict, labels in groups.items() if labels}
        largest = max(groups, key=lambda verdict: len(groups[verdict]))
        if len(groups) == 1:
            parts = [f"{largest} at all {len(groups[largest])}"]
        else:
            parts = [f"{verdict} at {len(labels)} ({' / '.join(labels)})" for verdict, labels in groups.items()
                     if verdict != largest] + [f"{largest} at the other {len(groups[largest])}"]
        lines.append(f"- {config}, {comparison}: of {len(by_label)} sizes with a paired interval, "
                     + "; ".join(parts) + ".")
    return ("\nOver the sizes alone (each its own interval, not corrected for their number):\n\n"
            + "\n".join(lines) + "\n") if lines else ""


def _paired_lines(rows: Sequence[dict], labels: Sequence[str], configs: Sequence[tuple[str, str]]) -> tuple[str, int]:
    """Per size and configuration, TN - N and TN - N+clip in test MSE and TN - N in test NLL, paired by seed, and
    the verdicts over the sizes (:func:`_verdicts_over_sizes`); with how many intervals it holds."""
    comparisons = [(a, b, "mse") for a, b in COMPARISONS] + [("TN", "N", "nll")]
    lines = ["| size | configuration | " + " | ".join(f"{a} - {b} ({metric.upper()})" for a, b, metric in comparisons)
             + " |", "|" + "---|" * (2 + len(comparisons))]
    count = 0
    verdicts: dict = defaultdict(dict)  # (configuration, comparison) -> {size: verdict}
    for label in labels:
        for sigma, residual in configs:
            cells = []
            for a, b, metric in comparisons:
                first = _seed_values(rows, label, sigma, residual, a, metric)
                second = _seed_values(rows, label, sigma, residual, b, metric)
                interval = paired_interval([first[s] - second[s] for s in sorted(set(first) & set(second))])
                count += interval is not None
                cells.append(_paired_text(interval))
                if interval is not None and label not in (REDUCED_ROW, WHOLE_ROW):
                    verdicts[(f"{sigma}/{residual}", f"{a} - {b} ({metric.upper()})")][label] = interval_side(interval)
            lines.append(f"| {label} | {sigma}/{residual} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n" + _verdicts_over_sizes(verdicts), count


def _seed_rows(rows: Sequence[dict], cells: Sequence[dict]) -> list[dict]:
    """The per-seed values of the sizes and the whole grid (accuracy-seeds.csv holds the reduced split's)."""
    by_label = {cell["label"]: cell for cell in cells}
    labelled = [cell for cell in cells if cell["split"] is not None]
    by_label[WHOLE_ROW] = {"split": "+".join(dict.fromkeys(c["split"] for c in labelled)),
                           "instances": sum(c["instances"] for c in labelled),
                           "states": sum(c["states"] for c in labelled)}
    out = []
    for r in rows:
        if r["domain"] == REDUCED_ROW:
            continue
        cell = by_label.get(r["domain"], {})
        for column, mse in ((r["distribution"], r["mse"]), ("N+clip", r.get("mse_clip"))):
            if column == "N+clip" and r["distribution"] != "N":
                continue
            out.append({"domain": r["config"].get("domain", ""), "size": r["domain"],
                        "labelled_by": cell.get("split", ""), "instances": cell.get("instances", ""),
                        "states": cell.get("states", ""),
                        **{k: r[k] for k in ("model", "sigma", "residual", "lower_bound")}, "column": column,
                        "seed": r["seed"], "mse": repr(mse), "nll": repr(r["nll"]) if column != "N+clip" else ""})
    return out


def _domain_section(domain: str, model: str, lower_bound: str, grid: Sequence[dict], reduced: Sequence[dict]):
    """(Markdown, seed rows, intervals) of one domain's runs of one model."""
    rows, cells = _rows(domain, grid, reduced)
    configs = [pair for pair in TABLE1_CONFIGS if any((r["sigma"], r["residual"]) == pair for r in grid)]
    labels = list(dict.fromkeys(r["domain"] for r in rows))
    labelled = [cell for cell in cells if cell["split"] is not None]
    text = (f"#### {domain}\n\n{len(labelled)} of the test grid's {len(cells)} cells labelled whole "
            f"({sum(c['instances'] for c in labelled)} instances, {sum(c['states'] for c in labelled):,} states)"
            + (f"; {len(cells) - len(labelled)} not labelled" if len(labelled) < len(cells) else "") + ".\n\n"
            + _cell_lines(cells) + "\n"
            + "Test MSE:\n\n" + render_table(rows, model, lower_bound, configs, row_name="size") + "\n"
            + "Test NLL (the same checkpoint):\n\n"
            + render_table(rows, model, lower_bound, configs, metric="nll", row_name="size") + "\n")
    paired, count = _paired_lines(rows, labels, configs)
    if count:
        text += (f"Paired by seed, the first column minus the second: mean [{PAIRED_CONFIDENCE:.0%} t-interval], n "
                 f"seeds; `better` / `worse` where the interval excludes 0 (lower is better); blank below "
                 f"{PAIRED_MIN_SEEDS} seeds.\n\n" + paired)
    else:
        text += f"No size has the {PAIRED_MIN_SEEDS} seeds of N and TN a paired interval needs.\n"
    return text, _seed_rows(rows, cells), count


def _has_sizes(path: Path) -> bool:
    """Whether a metrics file holds the per-cell records (a metrics file of `tnlib evaluate --split test-grid`
    without them holds the whole split's metrics only)."""
    try:
        return "sizes" in read_json(path)
    except (OSError, ValueError, DamagedFile):
        return False


def size_metrics_note(results_dir: str | os.PathLike) -> str | None:
    """Where tested runs (metrics-test.json) whose dataset has a test grid lack its metrics per cell: which command
    writes them; None where none lacks them."""
    results_dir = Path(results_dir)
    lacking, grids = [], {}
    for run in ResultsDir(results_dir).runs():
        if not run.metrics_file("test").is_file() or _has_sizes(run.metrics_file(TEST_GRID)):
            continue
        config = read_run_config(run)
        where = (config.data_root, config.domain)
        if where not in grids:
            try:
                grids[where] = bool(full_test_grid(*where))
            except (DatasetError, OSError, ValueError, KeyError):
                grids[where] = False
        if grids[where]:
            lacking.append(run.path)
    if not lacking:
        return None
    one = len(lacking) == 1
    return (f"{len(lacking)} tested run{'' if one else 's'} here {'has' if one else 'have'} no metrics on the whole "
            f"test grid: `tnlib evaluate {runs_argument(results_dir, lacking)} --split {TEST_GRID}` writes them "
            f"(metrics-{TEST_GRID}.json; a run still training has no best.pt to evaluate yet); `tnlib report` then "
            f"lays them out in {SIZES_PAGE}, Table 1 per size.")


def write_size_report(results_dir, reports_dir, models: Sequence[str], lower_bound: str,
                      rendered_line: str) -> list[Path]:
    """``accuracy-by-size.md`` and ``accuracy-by-size-seeds.csv`` in ``reports_dir`` from the folder's
    metrics-test-grid.json files (module docstring); nothing where no run has them."""
    grid = [r for r in collect_results(results_dir, TEST_GRID) if "sizes" in r and r["lower_bound"] == lower_bound]
    if not grid:
        return []
    reduced = collect_results(results_dir)
    sections, seed_rows, count = [], [], 0
    for model in models:
        mine = [r for r in grid if r["model"] == model]
        if not mine:
            continue
        sections.append(f"### {model}\n")
        for domain in sorted({r["domain"] for r in mine}, key=lambda d: (DOMAINS + (d,)).index(d)):
            text, rows, intervals = _domain_section(
                domain, model, lower_bound, [r for r in mine if r["domain"] == domain],
                [r for r in reduced if r["model"] == model and r["domain"] == domain])
            sections.append(text)
            seed_rows += rows
            count += intervals
    note = size_metrics_note(results_dir)
    head = (f"# Test accuracy per size, on the whole test grid\n\n{scope_header(results_dir)}\n{rendered_line}\n\n"
            f"## Tables\n\nFrom `{shown_folder(results_dir)}/`, l = {lower_bound}: Table 1 per size of the test grid "
            f"(the `{TEST_GRID}` split's cells, labelled exactly, and the cells the `test` split labels whole), each "
            f"run's best-validation-MSE checkpoint (`tnlib evaluate RUN --split {TEST_GRID}`); above the sizes the "
            f"same runs on the reduced `test` split (accuracy.md's split) and on every labelled cell at once. Mean ± "
            f"std over seeds. {PAIRED_BOLD_RULE} A table where some cell has fewer seeds bolds nothing. The test "
            "grid repeats the test split's instances where A* labelled the slot's first draw: the two rows are not "
            f"independent samples. {multiplicity_note(count)} Per-seed values: {SIZES_SEEDS}.\n"
            + (f"\n{note}\n" if note else ""))
    reports_dir = Path(reports_dir)
    atomic_write_text(reports_dir / SIZES_PAGE, head + "\n" + "\n".join(sections))
    return [reports_dir / SIZES_PAGE, write_seed_csv(seed_rows, reports_dir / SIZES_SEEDS)]
