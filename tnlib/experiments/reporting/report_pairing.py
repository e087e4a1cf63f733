"""Two rendered reports paired by seed, cell by cell (:func:`render_report_pairing`).

What moved between two sets of runs that differ in one thing -- the same runs trained again on another label column,
by another code -- when the other set's run folders are no longer in the tree: both reports' per-seed CSVs
(``accuracy-seeds.csv``, ``planning-seeds.csv`` and the whole test grid's rows of ``accuracy-by-size-seeds.csv``,
read by :func:`tnlib.experiments.reporting.findings.seed_values_of_report`) hold every number the pairing needs. Each
cell (model, domain, configuration, column: N, N+clip or TN) the two share becomes one row per metric: each report's
mean ± std over the seeds, the paired interval of the first minus the second and its verdict, Holm-corrected over
every row tested. A column equal on every seed (N, whose training never reads the lower bound, trained once and
tested in both) is said so and tested for nothing. Planning pairs only where both planned as many instances per run.
:func:`report_pairing_figure` draws the intervals as the reports' forest plot (against-report.html).
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from tnlib.experiments.reporting.findings import METRICS, seed_values_of_report
from tnlib.experiments.reporting.report_files import ACCURACY_SEEDS, PLANNING_SEEDS, REPORT_PAIRING, REPORT_PAIRING_CSV
from tnlib.experiments.reporting.seed_statistics import (
    EQUAL_ON_EVERY_SEED,
    EVALUATION_ROUNDING,
    PAIRED_CONFIDENCE,
    PAIRED_MIN_SEEDS,
    cell_rank,
    csv_values,
    holm_note,
    model_rank,
    paired_interval,
    paired_verdict,
    read_seed_csv,
    seed_difference,
    significant_number,
    with_holm_verdicts,
    write_seed_csv,
)
from tnlib.experiments.reporting.table_cells import accuracy_cell, mean_and_std, planning_cell

__all__ = ["check_rendered_report", "report_pairing_figure", "report_pairing_rows", "render_report_pairing",
           "write_report_pairing"]
_COLUMNS = ("N", "N+clip", "TN")
_CSV_FIELDS = ("model", "metric", "domain", "configuration", "column", "seeds", "first_mean", "second_mean", "mean",
               "low", "high", "p", "verdict", "p_holm", "verdict_holm")
_PLANNING = ("coverage", "evaluations")


def _planned_instances(report_dir: Path) -> dict:
    """``{(model, domain, sigma, residual, column): {seed: instances planned}}`` of a report's planning-seeds.csv."""
    counts: dict = {}
    for row in read_seed_csv(report_dir / PLANNING_SEEDS, ("instances",)):
        key = (row["model"], row["domain"], row["sigma"], row["residual"], row["column"])
        counts.setdefault(key, {})[int(row["seed"])] = row["instances"]
    return counts


def _row_order(row: dict) -> tuple:
    sigma, residual = row["configuration"].split("/")
    column = _COLUMNS.index(row["column"]) if row["column"] in _COLUMNS else len(_COLUMNS)
    return (*model_rank(row["model"]), list(METRICS).index(row["metric"]), *cell_rank(row["domain"], sigma, residual),
            column, row["column"])


def report_pairing_rows(first_dir, second_dir) -> list[dict]:
    """One row per metric of :data:`tnlib.experiments.reporting.findings.METRICS` and cell both reports hold: the
    seeds both have, each report's mean over them, the paired interval of first minus second (None below
    :data:`PAIRED_MIN_SEEDS` seeds, and where every seed's difference is 0), its verdict and the Holm-corrected one.
    A planning cell pairs only where each of its seeds planned as many instances in both reports."""
    first_dir, second_dir = Path(first_dir), Path(second_dir)
    values = [seed_values_of_report(folder) for folder in (first_dir, second_dir)]
    instances = [_planned_instances(folder) for folder in (first_dir, second_dir)]
    rows = []
    for model in set(values[0]) & set(values[1]):
        for metric in METRICS:
            mine, theirs = (side[model].get(metric, {}) for side in values)
            for key in set(mine) & set(theirs):
                domain, sigma, residual, column = key
                seeds = sorted(set(mine[key]) & set(theirs[key]))
                if metric in _PLANNING:
                    planned = [side.get((model, *key), {}) for side in instances]
                    seeds = [s for s in seeds if planned[0].get(s) == planned[1].get(s)]
                if not seeds:
                    continue
                # both reports may hold one run evaluated twice (N, whose training never reads the bound)
                interval = paired_interval([seed_difference(mine[key][s], theirs[key][s], EVALUATION_ROUNDING)
                                            for s in seeds])
                verdict = paired_verdict(interval, len(seeds))
                if verdict == EQUAL_ON_EVERY_SEED:
                    interval = None  # no test: it would only widen the Holm family
                rows.append({"model": model, "metric": metric, "domain": domain, "configuration": f"{sigma}/{residual}",
                             "column": column, "seeds": len(seeds),
                             "first": mean_and_std([mine[key][s] for s in seeds]),
                             "second": mean_and_std([theirs[key][s] for s in seeds]),
                             "mean": None if interval is None else interval["mean"],
                             "low": None if interval is None else interval["low"],
                             "high": None if interval is None else interval["high"],
                             "p": None if interval is None else interval["p"], "verdict": verdict})
    rows = with_holm_verdicts(sorted(rows, key=_row_order))
    for row in rows:
        row.setdefault("p_holm", None)
        row.setdefault("verdict_holm", row["verdict"])
    return rows


def _cell(stats, metric: str) -> str:
    return planning_cell(stats, metric) if metric in _PLANNING else accuracy_cell(stats)


def _interval(row: dict) -> str:
    if row["low"] is None:
        return ""
    return (f"{significant_number(row['mean'])} [{significant_number(row['low'])}, "
            f"{significant_number(row['high'])}]")


def render_report_pairing(rows: Sequence[dict], names: tuple[str, str]) -> str:
    """The Markdown of :func:`report_pairing_rows`: per model and metric a table of the cells, each report's
    mean ± std, first minus second with its interval and verdict, and the tallies under it."""
    tested = sum(r["p"] is not None for r in rows)
    rounding = f"{EVALUATION_ROUNDING:.0e}".replace("e-0", "e-")
    lines = [f"Paired by seed, `{names[0]}` minus `{names[1]}`: mean [{PAIRED_CONFIDENCE:.0%} t-interval] of the "
             f"per-seed differences, where a cell has at least {PAIRED_MIN_SEEDS} seeds in both; `lower` / `higher` "
             "where the interval excludes 0, `equal on every seed` where no seed differs by more than the "
             f"rounding of one run evaluated twice ({rounding} relatively). "
             + holm_note(tested, "intervals", REPORT_PAIRING_CSV) + " Every number at full precision: "
             + f"{REPORT_PAIRING_CSV}.", ""]
    for model in sorted({r["model"] for r in rows}, key=model_rank):
        lines.append(f"## {model}\n")
        for metric, (what, lower_is_better) in METRICS.items():
            mine = [r for r in rows if r["model"] == model and r["metric"] == metric]
            if not mine:
                continue
            lines.append(f"**{what}** ({'lower' if lower_is_better else 'higher'} is better)\n")
            differing = [r for r in mine if r["verdict"] != EQUAL_ON_EVERY_SEED]
            if differing:
                lines += [f"| domain | configuration | column | seeds | `{names[0]}` | `{names[1]}` | first - second: "
                          f"mean [{PAIRED_CONFIDENCE:.0%}] | verdict | after Holm |", "|" + "---|" * 9]
                for r in differing:
                    lines.append("| " + " | ".join([r["domain"], r["configuration"], r["column"], str(r["seeds"]),
                                                    _cell(r["first"], metric), _cell(r["second"], metric),
                                                    _interval(r), r["verdict"], r["verdict_holm"]]) + " |")
                lines.append("")
            # cells whose every seed agrees (the same records in both): one line, not a table of blanks
            equal = [f"{r['domain']} {r['configuration']} {r['column']}" for r in mine if r["verdict"] == EQUAL_ON_EVERY_SEED]
            if equal:
                lines += [f"Equal on every seed in both ({len(equal)}): " + ", ".join(equal) + ".", ""]
            counts: dict = {}
            for r in mine:
                counts[r["verdict_holm"]] = counts.get(r["verdict_holm"], 0) + 1
            lines += ["After Holm: " + ", ".join(f"{v} {n}" for v, n in sorted(counts.items())) + ".", ""]
    return "\n".join(lines)


def report_pairing_figure(rows: Sequence[dict], names: tuple[str, str]):
    """The forest plot of :func:`report_pairing_rows`' ``rows`` (the reports' paired-intervals figure,
    :mod:`tnlib.experiments.reporting.report_figures`): per domain and metric, each cell's paired interval of first
    minus second, coloured by which report it favours; None where no cell has one. Cells equal on every seed are
    left out: a dot at 0 with no bar says nothing the table's line does not."""
    from tnlib.experiments.reporting.report_figures import paired_intervals_figure

    rows = [r for r in rows if r["p"] is not None]
    panels = []
    for metric, (what, lower_is_better) in METRICS.items():
        differences: dict = {}
        for r in rows:
            if r["metric"] == metric:
                sigma, residual = r["configuration"].split("/")
                differences.setdefault((r["domain"], sigma, residual), {})[(r["column"], r["column"])] = {
                    "mean": r["mean"], "low": r["low"], "high": r["high"], "p": r["p"], "n": r["seeds"]}
        if differences:
            panels.append((what, differences, lower_is_better))
    if not panels:
        return None
    return paired_intervals_figure(panels, f"{names[0]} minus {names[1]}, paired by seed", subject=names[0],
                                   pair_label=lambda column, _: column)


def check_rendered_report(report_dir) -> None:
    """A ValueError naming what is wrong where ``report_dir`` is no rendered report whose per-seed CSVs read whole
    (no accuracy-seeds.csv; a CSV damaged or of another shape): asked before a render writes anything."""
    report_dir = Path(report_dir)
    if not (report_dir / ACCURACY_SEEDS).is_file():
        raise ValueError(f"--against-report {report_dir}: no {ACCURACY_SEEDS} there (not a rendered report; "
                         "`tnlib report` writes one)")
    seed_values_of_report(report_dir)


def against_report_line(report_dir: Path, name: str) -> str:
    """What the rendered report a folder is paired with holds -- its tested runs and cells, by its per-seed CSV --
    and, where it has a README, that README's title (what the report is, said by whoever kept it)."""
    rows = read_seed_csv(report_dir / ACCURACY_SEEDS)
    # N and N+clip are two columns of one N run
    runs = {(r["domain"], r["model"], r["sigma"], r["residual"], r["column"] == "TN", r["seed"]) for r in rows}
    cells = {run[:5] for run in runs}
    line = (f"**Set against** the rendered report `{name}/`: its per-seed values ({ACCURACY_SEEDS}, "
            f"{PLANNING_SEEDS}) of {len(runs)} tested run{'s' if len(runs) != 1 else ''} in {len(cells)} "
            f"cell{'s' if len(cells) != 1 else ''}; its run folders need not be here.")
    readme = report_dir / "README.md"
    if readme.is_file():
        title = next((t for t in readme.read_text().splitlines() if t.startswith("# ")), "")
        if title:
            line += f" Its README: *{title[2:].strip()}*."
    return line


def write_report_pairing(report_dir, other_report_dir, names: tuple[str, str], header: str,
                         rows: Sequence[dict] | None = None) -> list[Path]:
    """:data:`REPORT_PAIRING` and :data:`REPORT_PAIRING_CSV` in ``report_dir`` (a rendered report: its per-seed
    CSVs written) against ``other_report_dir``, under ``header``: ``rows``, or :func:`report_pairing_rows` of the
    two after :func:`check_rendered_report`. A ValueError, and no file, where the other folder is no rendered report
    or the two share no cell."""
    from tnlib.files import atomic_write_text

    report_dir, other_report_dir = Path(report_dir), Path(other_report_dir)
    if rows is None:
        check_rendered_report(other_report_dir)
        rows = report_pairing_rows(report_dir, other_report_dir)
    if not rows:
        raise ValueError(f"{report_dir} and {other_report_dir} share no (model, domain, configuration, column) cell")
    text = (f"# `{names[0]}` against the rendered report `{names[1]}`\n\n{header}\n"
            f"{against_report_line(other_report_dir, names[1])}\n\n## Paired by seed\n\n"
            + render_report_pairing(rows, names))
    atomic_write_text(report_dir / REPORT_PAIRING, text)
    fields = list(_CSV_FIELDS)
    flat = [{**r, "first_mean": r["first"][0], "second_mean": r["second"][0]} for r in rows]
    write_seed_csv(csv_values(flat, fields), report_dir / REPORT_PAIRING_CSV)
    return [report_dir / REPORT_PAIRING, report_dir / REPORT_PAIRING_CSV]

