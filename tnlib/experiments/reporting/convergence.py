"""The paper's Figure 2, counted: does TN's validation error fall faster than N's, beyond the seeds' noise?

The paper draws five seeds' validation-MSE curves of N and TN on a log axis and reads from them that TN converges
faster. A results folder's curves say the same thing in numbers: per model, domain and configuration, at a few
points of training, the best validation MSE so far of TN over that of N, paired by seed (the same seed: the same
data and initial weights). The best so far rather than the validation at that step: it is the model training would
keep had it stopped there (best.pt), and one validation alone jumps with the last few batches. The ratio is taken in
logs -- early in training the errors span decades, and a difference of
MSEs would weigh the first points alone -- so each point gives the geometric mean of the per-seed ratios TN/N and
its 95% t-interval (of the log ratios, exponentiated): 0.5 is half N's error. A ratio below 1 at the early points
and near 1 at the last is what "converges faster" means; below 1 throughout is a lower error as well.

The points are fractions (:data:`CONVERGENCE_FRACTIONS`) of the steps every run of the cell validated at, each the
latest such step at or before its fraction, so that every seed of both distributions is read at the same step. Only
runs that finished (their test metrics written) count: a run a campaign is still training has a curve that grows.
The comparisons form a family of their own, apart from the findings' (another question), with Holm's correction
over it (:func:`tnlib.experiments.reporting.findings.with_holm_verdicts`).
"""
from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Sequence

from tnlib.experiments.reporting.findings import paired_verdict, with_holm_verdicts
from tnlib.experiments.reporting.seed_statistics import (PAIRED_CONFIDENCE, PAIRED_MIN_SEEDS, multiplicity_note,
                                                         paired_interval, significant_number, write_seed_csv)
from tnlib.experiments.results_dir import ResultsDir
from tnlib.files import atomic_write_text, read_jsonl, shown_folder
from tnlib.learning.training import read_run_config
from tnlib.paper import DOMAINS, MODELS, TABLE1_CONFIGS

__all__ = ["CONVERGENCE_FRACTIONS", "convergence_rows", "render_convergence", "write_convergence"]

# Where along training the curves are compared: from early (a sixteenth of the common steps) to the last common step.
CONVERGENCE_FRACTIONS = (Fraction(1, 16), Fraction(1, 8), Fraction(1, 4), Fraction(1, 2), Fraction(1))
CONVERGENCE_CSV_FIELDS = ("model", "domain", "sigma", "residual", "step", "seeds", "n_val_mse", "tn_val_mse", "ratio",
                          "low", "high", "p", "verdict", "p_holm", "verdict_holm")


def _finished_curves(results_dir, lower_bound: str) -> dict:
    """``{(model, domain, sigma, residual): {distribution: {seed: {step: best validation MSE up to it}}}}`` of the
    finished runs (test metrics written) with lower bound ``lower_bound``."""
    cells: dict = {}
    for run in ResultsDir(results_dir).runs():
        if not run.metrics_file().is_file() or not run.curves_file.is_file():
            continue
        config = read_run_config(run)
        if config.head.lower_bound != lower_bound:
            continue
        curve, best = {}, math.inf
        for record in sorted(read_jsonl(run.curves_file), key=lambda r: r["step"]):
            best = min(best, float(record["val_mse"]))
            curve[int(record["step"])] = best
        key = (config.model, config.domain, config.head.sigma, config.head.residual)
        cells.setdefault(key, {}).setdefault(config.head.distribution, {})[config.seed] = curve
    return cells


def compared_steps(curves: Sequence[dict]) -> list[int]:
    """The steps at which ``curves`` (step -> value) are compared: for each of :data:`CONVERGENCE_FRACTIONS` of the
    last step every curve holds, the latest step every curve holds at or before it (each step once)."""
    common = sorted(set.intersection(*(set(c) for c in curves))) if curves else []
    if not common:
        return []
    steps = []
    for fraction in CONVERGENCE_FRACTIONS:
        before = [s for s in common if s <= fraction * common[-1]]
        if before and before[-1] not in steps:
            steps.append(before[-1])
    return steps


def _geometric_mean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _point_row(cell: tuple, step: int, normal: dict, truncated: dict, seeds: list[int]) -> dict:
    """One compared point: N's and TN's best validation MSE up to ``step`` (geometric means over ``seeds``) and the
    paired interval of log(TN / N), as ratios."""
    model, domain, sigma, residual = cell
    logs = [math.log(truncated[s][step] / normal[s][step]) for s in seeds]
    interval = paired_interval(logs)
    row = {"model": model, "domain": domain, "sigma": sigma, "residual": residual, "step": step, "seeds": len(seeds),
           "n_val_mse": _geometric_mean([normal[s][step] for s in seeds]),
           "tn_val_mse": _geometric_mean([truncated[s][step] for s in seeds]),
           "ratio": math.exp(sum(logs) / len(logs)), "low": None, "high": None, "p": None,
           "verdict": paired_verdict(interval, len(seeds)), "p_holm": None}
    if interval is not None:
        row.update(low=math.exp(interval["low"]), high=math.exp(interval["high"]), p=interval["p"])
    row["verdict_holm"] = row["verdict"]
    return row


def _cell_rank(cell: tuple) -> tuple:
    model, domain, sigma, residual = cell
    order = {pair: i for i, pair in enumerate(TABLE1_CONFIGS)}
    return (MODELS.index(model) if model in MODELS else len(MODELS), model,
            DOMAINS.index(domain) if domain in DOMAINS else len(DOMAINS), domain, order.get((sigma, residual), 9))


def convergence_rows(results_dir, lower_bound: str) -> list[dict]:
    """Every compared point of the folder's finished runs (cells holding both N and TN with a seed in common), in
    the tables' order, with Holm's correction over the points that have an interval (``p_holm``,
    ``verdict_holm``: ``within noise`` where a direction does not survive it)."""
    rows = []
    for cell, runs in sorted(_finished_curves(results_dir, lower_bound).items(), key=lambda item: _cell_rank(item[0])):
        normal, truncated = runs.get("N", {}), runs.get("TN", {})
        seeds = sorted(set(normal) & set(truncated))
        if not seeds:
            continue
        curves = [normal[s] for s in seeds] + [truncated[s] for s in seeds]
        rows += [_point_row(cell, step, normal, truncated, seeds) for step in compared_steps(curves)]
    return with_holm_verdicts(rows)


def _ratio_cell(row: dict) -> str:
    if row["low"] is None:
        return significant_number(row["ratio"])
    return f"{significant_number(row['ratio'])} [{significant_number(row['low'])}, {significant_number(row['high'])}]"


def _summary(rows: Sequence[dict]) -> str:
    """How many points say TN lower / higher, on their own and after Holm; and at each cell's first and last point."""
    def count(selected: Sequence[dict], key: str, verdict: str) -> int:
        return sum(r[key] == verdict for r in selected)

    tested = [r for r in rows if r["low"] is not None]
    if not tested:
        return f"No point has the {PAIRED_MIN_SEEDS} seeds a paired interval needs."
    cells: dict = {}
    for r in tested:
        cells.setdefault((r["domain"], r["sigma"], r["residual"]), []).append(r)
    first, last = [points[0] for points in cells.values()], [points[-1] for points in cells.values()]
    return (f"Of {len(tested)} points with an interval, TN's best validation MSE so far is lower than N's at "
            f"{count(tested, 'verdict', 'lower')} ({count(tested, 'verdict_holm', 'lower')} after Holm) and higher at "
            f"{count(tested, 'verdict', 'higher')} ({count(tested, 'verdict_holm', 'higher')} after Holm); at each "
            f"cell's first point lower in {count(first, 'verdict', 'lower')} of {len(first)} cells, at its last in "
            f"{count(last, 'verdict', 'lower')} of {len(last)}.")


def render_convergence(rows: Sequence[dict], source: str) -> str:
    """``convergence.md``: per model, a table of the compared points, cell by cell, and a summary under it."""
    tested = sum(r["low"] is not None for r in rows)
    intro = (f"{source} The paper (Figure 2, five seeds each, read by eye): TN's validation loss converges faster. "
             f"Here, per domain and configuration, N's and TN's best validation MSE so far (the model training "
             f"would keep had it stopped there; geometric means over the seeds) at "
             f"{', '.join(map(str, CONVERGENCE_FRACTIONS[:-1]))} and all of the steps every run of the cell "
             f"validated at, and TN / N: the geometric mean of the per-seed ratios (paired by seed: same data and "
             f"initial weights) and its {PAIRED_CONFIDENCE:.0%} t-interval, taken over the log ratios. "
             f"Below 1 TN's error is lower; verdict `lower` / `higher` where the interval excludes 1 (a log ratio of "
             f"0), `not testable` "
             f"below {PAIRED_MIN_SEEDS} seeds. Lower early and level late is faster convergence; lower throughout is "
             f"a lower error as well. Only runs that finished count.")
    note = multiplicity_note(tested, "These points")
    if tested:
        note += (f" `after Holm` holds a direction only where Holm's step-down correction over these {tested} "
                 "(their own family, apart from the findings') still rejects a ratio of 1; `p_holm` in "
                 "convergence.csv is its adjusted p-value.")
    lines = ["# Convergence: the paper's Figure 2, counted\n",
             " ".join(part for part in (intro, note, "Every number at full precision: convergence.csv.") if part)
             + "\n"]
    if not rows:
        return "\n".join(lines + ["No cell holds finished N and TN runs of a seed in common: nothing to compare.\n"])
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == model]
        lines += [f"## {model}\n",
                  "| domain | configuration | step | seeds | N | TN | TN / N [95%] | verdict | after Holm |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for r in mine:
            lines.append(f"| {r['domain']} | {r['sigma']}/{r['residual']} | {r['step']:,} | {r['seeds']} | "
                         f"{significant_number(r['n_val_mse'])} | {significant_number(r['tn_val_mse'])} | "
                         f"{_ratio_cell(r)} | {r['verdict']} | {r['verdict_holm']} |")
        lines.append("\n" + _summary(mine) + "\n")
    return "\n".join(lines)


def write_convergence(results_dir, reports_dir, lower_bound: str) -> list[Path]:
    """``convergence.md`` (:func:`render_convergence`) and ``convergence.csv`` (the rows at full precision) in
    ``reports_dir``, from the finished runs of ``results_dir``."""
    reports_dir = Path(reports_dir)
    rows = convergence_rows(results_dir, lower_bound)
    source = f"From `{shown_folder(results_dir)}/`, l = {lower_bound}: the validation curves of its runs (curves.jsonl)."
    atomic_write_text(reports_dir / "convergence.md", render_convergence(rows, source))
    table = [{k: ("" if r[k] is None else repr(r[k]) if isinstance(r[k], float) else r[k])
              for k in CONVERGENCE_CSV_FIELDS} for r in rows]
    return [reports_dir / "convergence.md", write_seed_csv(table, reports_dir / "convergence.csv")]
