"""A report's findings: every comparison its tables rest on, each with its paired interval and verdict, rendered.

The claims a report's README makes are differences between columns of its tables: TN against N and against N+clip
(test MSE, test NLL, plan coverage, plan evaluations) and a learned sigma against a fixed one, for N and for TN (the
paper's Table 1 has learning sigma lower TN's MSE in 7 of its 8 cells and raise N's in 5). :func:`findings` makes
each of them a row: the per-seed differences' mean and paired interval
(:func:`tnlib.experiments.reporting.seed_statistics.paired_interval`), a verdict -- ``lower``, ``higher``, ``within noise``,
or ``not testable`` where fewer than :data:`PAIRED_MIN_SEEDS` seeds pair up -- and, where the paper's table has the
two cells, the paper's direction and whether the runs agree with it. :func:`write_findings` writes them as
``findings.md`` (with the tallies that answer the paper's claims) and ``findings.csv`` (one row per comparison, every
number at full precision), so a README can quote its numbers from a file the code rendered.
"""
from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Sequence

import numpy as np

from tnlib.data.schema import TEST_GRID
from tnlib.experiments.reporting.seed_statistics import (
    PAIRED_CONFIDENCE,
    PAIRED_MIN_SEEDS,
    csv_values,
    domain_rank,
    holm_note,
    model_rank,
    multiplicity_note,
    paired_interval,
    paired_verdict,
    read_seed_csv,
    significant_number,
    with_holm_verdicts,
    write_seed_csv,
)
from tnlib.experiments.reporting.report_files import ACCURACY_SEEDS, PLANNING_SEEDS
from tnlib.experiments.reporting.size_tables import SIZES_SEEDS, WHOLE_ROW
from tnlib.experiments.reporting.table_rows import collect_planning, collect_results, split_unfinished
from tnlib.experiments.reporting.tables import paper_bold_keys, table1_seed_values, table2_seed_values
from tnlib.files import atomic_write_text
from tnlib.learning.run_files import RunDir
from tnlib.paper import DISTRIBUTIONS, MAIN_TABLES_MODEL, PAPER_TABLE1, PAPER_TABLE2_NLM, TABLE1_CONFIGS

# metric -> (what the report calls it, whether lower is better). grid_mse is Table 1's MSE on the whole test grid
# (metrics-test-grid.json), the paper's test set where the test split holds only the cells its labelling reached.
METRICS = {"mse": ("test MSE", True), "grid_mse": ("test MSE on the whole test grid", True),
           "nll": ("test NLL (best-NLL checkpoint)", True),
           "coverage": ("plan coverage", False), "evaluations": ("plan evaluations", True)}
# The columns TN is set against, per metric (N+clip has no NLL).
AGAINST = {"mse": ("N", "N+clip"), "grid_mse": ("N", "N+clip"), "nll": ("N",), "coverage": ("N", "N+clip"),
           "evaluations": ("N", "N+clip")}
# the metrics the paper's Table 1 has (its test set's MSE)
TABLE1_METRICS = ("mse", "grid_mse")
VERDICT_RULE = (f"Verdict: the {PAIRED_CONFIDENCE:.0%} t-interval of the per-seed differences (first minus second, "
                "paired by seed: same data and initial weights) lies below 0 (`lower`), above it (`higher`), or holds "
                f"it (`within noise`); `not testable` with fewer than {PAIRED_MIN_SEEDS} paired seeds. The paper's "
                "direction: from its table (5 seeds, mean ± sd), where its bold marks one column of the pair and not "
                "the other, or else where the means differ by more than their summed sd; `agrees` / `reversed` where "
                "the runs' verdict has its direction / the opposite one.")
CSV_FIELDS = ("model", "metric", "comparison", "domain", "first", "second", "seeds", "mean", "low", "high", "p", "verdict",
              "p_holm", "verdict_holm", "paper", "paper_means", "against_paper")


def seed_values_of_results(results_dir, lower_bound: str) -> dict:
    """``{model: {metric: {(domain, sigma, residual, column): {seed: value}}}}`` of a results folder: the values its
    tables show (test MSE at the best-MSE checkpoint, test NLL at the best-NLL one, planning of the runs that
    finished planning)."""
    results = collect_results(results_dir)
    by_nll = collect_results(results_dir, checkpoint=RunDir.BEST_NLL)
    # (the grid files accuracy-by-size.md lays out: those with their per-size metrics)
    grid = [r for r in collect_results(results_dir, TEST_GRID) if "sizes" in r]
    plans = _finished([r for r in collect_planning(results_dir) if r["lower_bound"] == lower_bound])
    values: dict = {}
    for model in sorted({r["model"] for r in results}, key=model_rank):
        mine = [r for r in plans if r["model"] == model]
        values[model] = {"mse": table1_seed_values(results, model, lower_bound),
                         "grid_mse": table1_seed_values(grid, model, lower_bound),
                         "nll": table1_seed_values(by_nll, model, lower_bound, "nll"),
                         "coverage": table2_seed_values(mine, "coverage"),
                         "evaluations": table2_seed_values(mine, "evaluations")}
    return values


def seed_values_of_report(report_dir) -> dict:
    """:func:`seed_values_of_results`' values from a rendered report's per-seed CSVs (``accuracy-seeds.csv``,
    ``planning-seeds.csv``, the whole test grid's rows of ``accuracy-by-size-seeds.csv``), for a report whose run
    folders are not on this machine."""
    report_dir = Path(report_dir)
    # (rows, {metric: the CSV column holding it}) of each file
    sources = ((read_seed_csv(report_dir / ACCURACY_SEEDS, ("mse", "nll_best_nll")),
                {"mse": "mse", "nll": "nll_best_nll"}),
               (_finished(read_seed_csv(report_dir / PLANNING_SEEDS, ("coverage", "evaluations"))),
                {"coverage": "coverage", "evaluations": "evaluations"}),
               ([r for r in read_seed_csv(report_dir / SIZES_SEEDS, ("size", "mse"))
                 if r["size"] == WHOLE_ROW], {"grid_mse": "mse"}))
    values: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))
    for rows, columns in sources:
        for row in rows:
            key = (row["domain"], row["sigma"], row["residual"], row["column"])
            for metric, column in columns.items():
                if row[column]:
                    values[row["model"]][metric][key][int(row["seed"])] = float(row[column])
    return {model: {metric: dict(by_key) for metric, by_key in values[model].items()}
            for model in sorted(values, key=model_rank)}


def _finished(rows: Sequence[dict]) -> list[dict]:
    """The planning rows of runs that finished planning, as the tables take them
    (:func:`tnlib.experiments.reporting.table_rows.split_unfinished`)."""
    return split_unfinished(list(rows))[0]


def _paper_cells(model: str, metric: str) -> dict:
    """The paper's table for ``model`` and ``metric``: ``{domain: {(sigma, residual, column): (mean, sd)}}``."""
    if metric in TABLE1_METRICS:
        return PAPER_TABLE1.get(model, {})
    if metric in ("coverage", "evaluations") and model == MAIN_TABLES_MODEL:
        return PAPER_TABLE2_NLM[metric]
    return {}


def paper_direction(model: str, metric: str, domain: str, first: tuple, second: tuple) -> tuple[str | None, str]:
    """The paper's direction of ``first`` minus ``second`` ((sigma, residual, column) cells): ``lower`` /
    ``higher`` / ``none`` (its table has both cells and no direction) / None (its table lacks one), and its two
    cells as it prints them. Within one configuration its bold decides where it marks one of the two and not the
    other; otherwise the means must differ by more than their summed sd."""
    row = _paper_cells(model, metric).get(domain, {})
    if first not in row or second not in row:
        return None, ""
    (a, sa), (b, sb) = row[first], row[second]
    means = f"{_number(a)}±{_number(sa)} vs {_number(b)}±{_number(sb)}"
    lower_is_better = METRICS[metric][1]
    if first[:2] == second[:2]:
        if metric in TABLE1_METRICS:
            bold = paper_bold_keys(row, [first[:2]])
        else:  # Table 2's rule: the best of the configuration, ties all bold
            group = {k: v[0] for k, v in row.items() if k[:2] == first[:2]}
            best = (min if lower_is_better else max)(group.values())
            bold = {k for k, v in group.items() if v == best}
        if (first in bold) != (second in bold):
            return ("lower" if (first in bold) == lower_is_better else "higher"), means
    if abs(a - b) > sa + sb:
        return ("lower" if a < b else "higher"), means
    return "none", means


def _agreement(runs: str, paper: str | None) -> str:
    if paper is None:
        return ""
    if paper == "none":
        return "the paper has none"
    if runs.startswith("not testable"):
        return "not testable"
    if runs not in ("lower", "higher"):
        return "within noise"
    return "agrees" if runs == paper else "reversed"


def _row(model: str, metric: str, domain: str, first: tuple, second: tuple, values: dict) -> dict | None:
    a, b = values.get((domain, *first)), values.get((domain, *second))
    if not a or not b:
        return None
    seeds = sorted(s for s in set(a) & set(b) if a[s] is not None and b[s] is not None)
    interval = paired_interval([a[s] - b[s] for s in seeds])
    runs = paired_verdict(interval, len(seeds))
    paper, means = paper_direction(model, metric, domain, first, second)
    comparison = f"TN - {second[2]}" if first[:2] == second[:2] else "learn - fixed"
    return {"model": model, "metric": metric, "comparison": comparison, "domain": domain, "first": " ".join(("/".join(first[:2]), first[2])),
            "second": " ".join(("/".join(second[:2]), second[2])), "seeds": len(seeds),
            "mean": float(np.mean([a[s] - b[s] for s in seeds])) if seeds else None,
            "low": interval and interval["low"], "high": interval and interval["high"],
            "p": interval and interval["p"], "verdict": runs, "p_holm": None, "verdict_holm": runs,
            "paper": paper or "", "paper_means": means, "against_paper": _agreement(runs, paper)}


def findings(values: dict) -> list[dict]:
    """One row per comparison (:data:`CSV_FIELDS`) of ``values`` (:func:`seed_values_of_results`): per model and
    metric, TN against N and N+clip in each (domain, configuration), then per domain, residual and column the
    learned sigma against the fixed one -- where both cells ran. The testable rows are one family for Holm's
    correction (:func:`with_holm_verdicts`)."""
    rows = []
    for model, by_metric in values.items():
        for metric in METRICS:
            cells = by_metric.get(metric, {})
            domains = sorted({key[0] for key in cells}, key=domain_rank)
            for domain in domains:
                for sigma, residual in TABLE1_CONFIGS:
                    for other in AGAINST[metric]:
                        rows.append(_row(model, metric, domain, (sigma, residual, "TN"), (sigma, residual, other),
                                         cells))
            for domain in domains:
                for residual in ("ff", "none"):
                    for column in DISTRIBUTIONS:
                        rows.append(_row(model, metric, domain, ("learn", residual, column),
                                         ("fixed", residual, column), cells))
    return with_holm_verdicts([r for r in rows if r is not None])


def _number(x: float) -> str:
    """Three significant digits, whole numbers from 1,000 on (evaluations)."""
    return f"{x:.0f}" if abs(x) >= 1000 else significant_number(x)


def _finding_interval(row: dict) -> str:
    if row["low"] is None:
        return "" if row["mean"] is None else _number(row["mean"])
    return f"{_number(row['mean'])} [{_number(row['low'])}, {_number(row['high'])}]"


def _tally(rows: Sequence[dict], key: str) -> str:
    counts: dict = defaultdict(int)
    for r in rows:
        if r[key]:
            counts[r[key].split(" at ")[0]] += 1
    return ", ".join(f"{word} {counts[word]}" for word in sorted(counts)) or "none"


def learned_sigma_summary(rows: Sequence[dict], model: str, metric: str = "mse") -> str:
    """The paper's learn-vs-fixed claim for one model: in how many cells learning sigma lowers and raises the
    metric of TN and of N, in the runs (by the paired interval) and in the paper's table (by its means, and by
    more than the summed sd)."""
    parts = []
    for column in ("TN", "N"):
        mine = [r for r in rows if r["model"] == model and r["metric"] == metric
                and r["comparison"] == "learn - fixed" and r["first"].endswith(f" {column}")]
        if not mine:
            continue
        tested = [r for r in mine if r["low"] is not None]
        text = (f"{column}: learning sigma gives a lower {METRICS[metric][0]} in "
                f"{sum(r['verdict'] == 'lower' for r in tested)} and a higher one in "
                f"{sum(r['verdict'] == 'higher' for r in tested)} of {len(tested)} testable cells "
                f"({len(mine) - len(tested)} not testable)")
        paper = _paper_cells(model, metric)
        pairs = [(paper[d][("learn", res, column)][0], paper[d][("fixed", res, column)][0])
                 for d in paper for res in ("ff", "none")
                 if ("learn", res, column) in paper[d] and ("fixed", res, column) in paper[d]]
        if pairs:
            beyond = [r["paper"] for r in mine if r["paper"]]
            text += (f"; the paper: lower in {sum(a < b for a, b in pairs)} and higher in "
                     f"{sum(a > b for a, b in pairs)} of its {len(pairs)} cells by the means "
                     f"(beyond the summed sd, in the cells these runs have: lower {beyond.count('lower')}, "
                     f"higher {beyond.count('higher')} of {len(beyond)})")
        parts.append(text)
    return "; ".join(parts) + "." if parts else ""


def render_findings(rows: Sequence[dict], source: str, other: Sequence[dict] | None = None,
                    names: tuple[str, str] = ("these runs", "other")) -> str:
    """``findings.md``: per model, TN against N and N+clip and a learned sigma against a fixed one, each metric a
    table of its comparisons with the tallies under it; with ``other`` (the findings of the folder a report is set
    against) a column with its verdict and whether a direction holds in both."""
    tested = sum(r["low"] is not None for r in rows)
    intro = [source, VERDICT_RULE, multiplicity_note(tested, "The findings"), holm_note(tested),
             "Every number at full precision: findings.csv."]
    lines = ["# Findings\n\n" + " ".join(part for part in intro if part) + "\n"]
    theirs = {(r["model"], r["metric"], r["domain"], r["first"], r["second"]): r for r in other or ()}
    for model in sorted({r["model"] for r in rows}, key=model_rank):
        lines.append(f"## {model}\n")
        for title, learned in (("TN against N and N+clip", False), ("A learned sigma against a fixed one", True)):
            section = [f"### {title}\n"]
            for metric, (what, lower_is_better) in METRICS.items():
                mine = [r for r in rows if r["model"] == model and r["metric"] == metric
                        and (r["comparison"] == "learn - fixed") == learned]
                if not mine:
                    continue
                header = (f"| domain | first | second | seeds | first - second: mean [{PAIRED_CONFIDENCE:.0%}] | "
                          f"verdict | after Holm | the paper | against the paper |")
                if other is not None:
                    header += f" {names[1]} | in both |"
                section += [f"**{what}** ({'lower' if lower_is_better else 'higher'} is better)\n", header,
                            "|" + "---|" * (header.count("|") - 1)]
                for r in mine:
                    cells = [r["domain"], r["first"], r["second"], str(r["seeds"]), _finding_interval(r), r["verdict"],
                             r["verdict_holm"], f"{r['paper']} ({r['paper_means']})" if r["paper"] else "",
                             r["against_paper"]]
                    if other is not None:
                        there = theirs.get((r["model"], r["metric"], r["domain"], r["first"], r["second"]))
                        cells += ["" if there is None else there["verdict"],
                                  _both(r["verdict"], None if there is None else there["verdict"])]
                    section.append("| " + " | ".join(cells) + " |")
                holm_against = [{"against": _agreement(r["verdict_holm"], r["paper"] or None)} for r in mine]
                section.append(f"\nIn all: {_tally(mine, 'verdict')}; after Holm: {_tally(mine, 'verdict_holm')}; "
                               f"against the paper: {_tally(mine, 'against_paper')}; after Holm: "
                               f"{_tally(holm_against, 'against')}.\n")
                if learned:
                    summary = learned_sigma_summary(rows, model, metric)
                    if summary:
                        section.append(summary + "\n")
            if len(section) > 1:
                lines += section
    return "\n".join(lines)


def _both(mine: str, theirs: str | None) -> str:
    if theirs is None:
        return ""
    if mine in ("lower", "higher"):
        return f"{mine} in both" if theirs == mine else "reversed" if theirs in ("lower", "higher") else "here only"
    return "there only" if theirs in ("lower", "higher") else ""


def write_findings(reports_dir, rows: Sequence[dict], source: str, other: Sequence[dict] | None = None,
                   names: tuple[str, str] = ("these runs", "other")) -> list[Path]:
    """``findings.md`` (:func:`render_findings`) and ``findings.csv`` (the rows, numbers at full precision) in
    ``reports_dir``, each written atomically."""
    reports_dir = Path(reports_dir)
    atomic_write_text(reports_dir / "findings.md", render_findings(rows, source, other, names))
    return [reports_dir / "findings.md", write_seed_csv(csv_values(rows, CSV_FIELDS), reports_dir / "findings.csv")]


def write_report_findings(report_dir: str | os.PathLike) -> list[Path]:
    """``tnlib findings``: findings.md and findings.csv of a rendered report from its per-seed CSVs."""
    report_dir = Path(report_dir)
    source = ("From the report's per-seed values (accuracy-seeds.csv, planning-seeds.csv): planning of runs that "
              "finished planning.")
    return write_findings(report_dir, findings(seed_values_of_report(report_dir)), source)
