"""``headline.md``: a report's Tables 1 and 2 in brief, beside the paper -- the rows a README quotes, rendered.

One table per metric -- Table 1's test MSE on the test split and on the whole test grid, Table 2's coverage and
evaluations -- with a row per domain and configuration: the three columns' means over seeds; TN's paired intervals
against N and N+clip as ``findings.csv`` holds them, marked ``(not after Holm)`` where Holm's correction over the
report's findings leaves a direction within noise; the paper's means (its NLM tables; the whole grid has none);
the lower bound's and h_FF's own test MSE; and, with ``--against-report``, TN's paired interval against the other
report's TN. A configuration the folder's runs hold but a metric lacks yet says so (not yet tested, not yet on the
whole test grid, not yet planned), so a campaign's page shows where it stands at each snapshot.

Means and intervals come from the values and findings rows the render has just computed
(:mod:`tnlib.experiments.reporting.findings`), so the page cannot disagree with findings.md; its numbers are written
to three significant digits, as a sentence quotes them.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

from tnlib.data.schema import TEST_GRID
from tnlib.experiments.reporting.seed_statistics import EQUAL_ON_EVERY_SEED, domain_rank
from tnlib.experiments.reporting.table_rows import collect_results
from tnlib.files import atomic_write_text
from tnlib.paper import MAIN_TABLES_MODEL, PAPER_CONFIGS, PAPER_TABLE1, PAPER_TABLE2_NLM, TABLE1_CONFIGS

HEADLINE_PAGE = "headline.md"
COLUMNS = ("TN", "N", "N+clip")
# metric -> (the table's title, what a missing row waits for)
HEADLINE_METRICS = {
    "mse": ("Table 1: test MSE on the test split", "not yet tested"),
    "grid_mse": ("Table 1 on the whole test grid: test MSE (the paper has no such table)",
                 "not yet on the whole test grid"),
    "coverage": ("Table 2: ratio of solved instances", "not yet planned"),
    "evaluations": ("Table 2: average node evaluations (an unsolved instance counts as the limit)",
                    "not yet planned"),
}
HOLM_MARK = " (not after Holm)"


def figure(x: float, plus: bool = False) -> str:
    """``x`` to three significant digits, thousands separated, a leading zero dropped: -0.391 -> -.391,
    -2535.6 -> -2,536, 12.71 -> 12.7; with ``plus`` a positive number carries its sign."""
    if x == 0:
        return "0"
    places = max(2 - math.floor(math.log10(abs(x))), 0)
    text = f"{round(x, places):,.{places}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    if text.lstrip("-").startswith("0."):
        text = text.replace("0.", ".", 1)
    return ("+" if plus and x > 0 else "") + text


def mean_text(metric: str, x: float) -> str:
    """A table cell's mean as the paper prints its own: MSE to two decimals (one from 100 on), coverage to two,
    evaluations whole; a leading zero dropped."""
    if metric == "evaluations":
        return f"{x:,.0f}"
    text = f"{x:,.1f}" if metric != "coverage" and x >= 100 else f"{x:,.2f}"
    return text[1:] if text.startswith("0.") else text


def interval_text(row: dict | None, holm: bool = True) -> str:
    """A findings or pairing row's interval as "mean [low, high]", or its verdict where it has none ("equal on
    every seed", "not testable ..."); with ``holm``, the mark where Holm's correction loses its direction."""
    if row is None:
        return ""
    if row["low"] is None:
        return row["verdict"]
    if row["verdict"] == EQUAL_ON_EVERY_SEED:  # findings keep the interval [0, 0]: no finding either way
        return row["verdict"]
    text = f"{figure(row['mean'], plus=True)} [{figure(row['low'])}, {figure(row['high'])}]"
    if holm and row["verdict"] in ("lower", "higher") and row["verdict_holm"] == "within noise":
        text += HOLM_MARK
    return text


def _mean(by_seed: dict | None) -> float | None:
    values = [v for v in (by_seed or {}).values() if v is not None]
    return sum(values) / len(values) if values else None


def _paper_means(model: str, metric: str, domain: str, config: tuple[str, str]) -> str:
    if metric == "mse":
        table = PAPER_TABLE1.get(model, {})
    elif metric in ("coverage", "evaluations") and model == MAIN_TABLES_MODEL:
        table = PAPER_TABLE2_NLM[metric]
    else:
        return ""
    cells = table.get(domain, {})
    if not all((*config, column) in cells for column in COLUMNS):
        return ""
    return " / ".join(mean_text(metric, cells[(*config, column)][0]) for column in COLUMNS)


def _bounds_text(bound_mse: dict, domain: str) -> str:
    """``l (h_FF)``: the lower bound's and h_FF's own test MSE on a domain's states."""
    bound, ff = bound_mse.get(domain, (None, None))
    if bound is None:
        return ""
    return mean_text("mse", bound) + ("" if ff is None else f" ({mean_text('mse', ff)})")


def _row_keys(metric: str, cells: dict, held: set) -> list[tuple[str, str, str]]:
    """The (domain, sigma, residual) rows of a metric's table: each domain of the runs in every configuration of
    any of them (a sweep's grid: a configuration no run of a domain has started yet stands there too) for Table 1's
    metrics; for Table 2's, those planned and the paper's Table 2 configurations among them."""
    has = {key[:3] for key in cells}
    grid = {(domain, *config) for domain in {k[0] for k in held} for config in {k[1:] for k in held}}
    if metric in ("coverage", "evaluations"):
        wanted = has | {key for key in grid if key[1:] in PAPER_CONFIGS}
    else:
        wanted = has | grid
    order = {config: i for i, config in enumerate(TABLE1_CONFIGS)}
    return sorted(wanted, key=lambda k: (*domain_rank(k[0]), order.get(k[1:], len(order)), k[1:]))


def _seeds_note(counts: Sequence[int], most: int) -> str:
    """What a row of means over fewer seeds than the table's fullest says: " (4 seeds)", or, where its columns
    stand on different numbers of seeds (one still training), each column's: " (seeds: TN 1, N 5, N+clip 5)"."""
    if len(set(counts)) > 1:
        return " (seeds: " + ", ".join(f"{column} {count}" for column, count in zip(COLUMNS, counts)) + ")"
    return f" ({counts[0]} seed{'' if counts[0] == 1 else 's'})" if counts[0] < most else ""


def headline_table(model: str, metric: str, values: dict, findings_rows: Sequence[dict], held: set,
                   bound_mse: dict | None = None, pairing_rows: Sequence[dict] | None = None,
                   pairing_names: tuple[str, str] | None = None) -> str:
    """One metric's table (Markdown). ``values``: ``{metric: {(domain, sigma, residual, column): {seed: value}}}``
    of ``model`` (:func:`tnlib.experiments.reporting.findings.seed_values_of_results`); ``held``: the (domain,
    sigma, residual) of the model's runs; ``bound_mse``: ``{domain: (l's MSE, h_FF's MSE)}`` for Table 1's
    metrics; ``pairing_rows``: the against-report rows, named ``pairing_names``. "" where nothing is held."""
    cells = values.get(metric, {})
    keys = _row_keys(metric, cells, held)
    if not keys or (metric == "grid_mse" and not cells):
        return ""
    found = {(r["domain"], r["first"], r["second"]): r for r in findings_rows
             if r["model"] == model and r["metric"] == metric}
    paired = {(r["domain"], r["configuration"]): r for r in pairing_rows or ()
              if r["model"] == model and r["metric"] == metric and r["column"] == "TN"}
    header = ["domain", "configuration", " / ".join(COLUMNS), "TN - N", "TN - N+clip"]
    if metric != "grid_mse":
        header.append("the paper: " + " / ".join(COLUMNS))
    if bound_mse is not None:
        header.append("l (h_FF)")
    if pairing_rows is not None:
        header.append(f"TN: these runs - `{Path(pairing_names[1]).name}`" if pairing_names else "TN: against")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    waits_for = HEADLINE_METRICS[metric][1]
    # a row over fewer seeds than the table's others says how many (a seed still training or planning)
    most = max((min(len(cells.get((*key, c), {})) for c in COLUMNS) for key in keys), default=0)
    for domain, sigma, residual in keys:
        config = f"{sigma}/{residual}"
        means = [_mean(cells.get((domain, sigma, residual, column))) for column in COLUMNS]
        if None in means:
            waiting: dict[str, list[str]] = {}  # what a column waits for -> the columns waiting for it
            for column, mean in zip(COLUMNS, means):
                tested = metric != "grid_mse" or values.get("mse", {}).get((domain, sigma, residual, column))
                if mean is None:
                    waiting.setdefault(waits_for if tested else HEADLINE_METRICS["mse"][1], []).append(column)
            # a cell some of whose columns have values, or that waits for two things, names the columns
            text = (next(iter(waiting)) if len(waiting) == 1 and not any(m is not None for m in means)
                    else "; ".join(f"{what}: {', '.join(columns)}" for what, columns in waiting.items()))
            row = [domain, config, text, "", ""]
        else:
            counts = [len(cells[(domain, sigma, residual, column)]) for column in COLUMNS]
            row = [domain, config, " / ".join(mean_text(metric, m) for m in means) + _seeds_note(counts, most),
                   interval_text(found.get((domain, f"{config} TN", f"{config} N"))),
                   interval_text(found.get((domain, f"{config} TN", f"{config} N+clip")))]
        if metric != "grid_mse":
            row.append(_paper_means(model, metric, domain, (sigma, residual)))
        if bound_mse is not None:
            row.append(_bounds_text(bound_mse, domain))
        if pairing_rows is not None:
            row.append("" if None in means else interval_text(paired.get((domain, config)), holm=False))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def bound_mse_of(results: Sequence[dict], lower_bound: str) -> dict:
    """``{domain: (l's test MSE, h_FF's)}``, averaged over the runs' metrics files (each run scores the same
    states, so the runs agree but for rounding)."""
    by_domain: dict = {}
    for result in results:
        for name, key in ((0, f"mse_{lower_bound}"), (1, "mse_ff")):
            if result.get(key) is not None:
                by_domain.setdefault(result["domain"], ([], []))[name].append(result[key])
    return {domain: tuple(sum(v) / len(v) if v else None for v in pair) for domain, pair in by_domain.items()}


def render_headline(model: str, values: dict, findings_rows: Sequence[dict], held: set, bound_mse: dict,
                    header: str, pairing_rows: Sequence[dict] | None = None,
                    pairing_names: tuple[str, str] | None = None) -> str:
    """The page: ``header`` (the report's scope), then :func:`headline_table` for each of
    :data:`HEADLINE_METRICS` the runs hold. ``bound_mse``: ``{metric: {domain: (l, h_FF)}}`` for Table 1's."""
    parts = [f"# In brief: {model}'s tables beside the paper\n\n{header}\n",
             "Per domain and configuration: the mean over seeds of TN, N and N+clip; TN minus N and minus N+clip, "
             "paired by seed (mean [95% t-interval], as findings.csv holds them, marked" + HOLM_MARK + " where Holm's "
             "correction over the report's findings leaves the direction within noise); the paper's means; the "
             "lower bound's own test MSE and h_FF's"
             + ("; TN against the same seed's TN of the other report, paired by seed (against-report.md)"
                if pairing_rows is not None else "") + ". Planning: the runs that finished planning.\n"]
    for metric, (title, _) in HEADLINE_METRICS.items():
        table = headline_table(model, metric, values, findings_rows, held, bound_mse.get(metric),
                               pairing_rows, pairing_names)
        if table:
            parts.append(f"## {title}\n\n{table}")
    return "\n".join(parts)


def write_headline(reports_dir, model: str, values: dict, findings_rows: Sequence[dict], held: set,
                   bound_mse: dict, header: str, pairing_rows: Sequence[dict] | None = None,
                   pairing_names: tuple[str, str] | None = None) -> Path:
    """:func:`render_headline` written atomically as ``headline.md`` in ``reports_dir``."""
    path = Path(reports_dir) / HEADLINE_PAGE
    atomic_write_text(path, render_headline(model, values, findings_rows, held, bound_mse, header, pairing_rows,
                                            pairing_names))
    return path


def write_folder_headline(results_dir, reports_dir, lower_bound: str, configs: Sequence, values: dict,
                          findings_rows: Sequence[dict], header: str, pairing: tuple | None = None) -> Path:
    """headline.md of a results folder's main-tables model (``tnlib report --paper-tables``): ``configs``, its runs'
    TrainConfigs; ``values``, that model's per-seed values and ``findings_rows`` the folder's findings, as the
    render computed them; ``pairing``, the against-report rows and the two folders' names, or None."""
    model = MAIN_TABLES_MODEL
    held = {(c.domain, c.head.sigma, c.head.residual) for c in configs if c.model == model}
    tested = [r for r in collect_results(results_dir) if r["model"] == model]
    grid = [r for r in collect_results(results_dir, TEST_GRID) if "sizes" in r and r["model"] == model]
    bound_mse = {"mse": bound_mse_of(tested, lower_bound), "grid_mse": bound_mse_of(grid, lower_bound)}
    rows, names = pairing if pairing else (None, None)
    return write_headline(reports_dir, model, values, findings_rows, held, bound_mse, header, rows, names)
