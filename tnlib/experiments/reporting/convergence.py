"""The paper's Figure 2, counted: is TN's validation error lower than N's part-way through training, and at its end?

The paper draws five seeds' validation-MSE curves of N and TN on a log axis and reads from them that TN converges
faster. A results folder's curves say it in numbers: per model, domain and configuration, at a few points of
training and at its end, the best validation MSE so far of TN over that of N, paired by seed (the same seed: the
same data and initial weights). The best so far rather than the validation at that step: it is the model training
would keep had it stopped there (best.pt), and one validation alone jumps with the last few batches. The ratio is
taken in logs -- early in training the errors span decades, and a difference of MSEs would weigh the first points
alone -- so each point gives the geometric mean of the per-seed ratios TN/N and its 95% t-interval (of the log
ratios, exponentiated): 0.5 is half N's error.

The points part-way are fractions (:data:`CONVERGENCE_FRACTIONS`) of the last step every run of the cell validated
at, each the latest such step at or before its fraction, so that every seed of both distributions is read at the
same step; runs trained until flat stop at different steps, so the end is a point of its own: each run's best at
the step it stopped (its best.pt). TN below N part-way and not at the end is the picture the paper describes -- TN
ahead early, N catching up; below at the end too is a better final model as well. Only runs that finished (their
test metrics written) count: a run a campaign is still training has a curve that grows. The comparisons form a
family of their own, apart from the findings' (another question), with Holm's correction over it.
"""
from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Sequence

from tnlib.experiments.reporting.seed_statistics import (PAIRED_CONFIDENCE, PAIRED_MIN_SEEDS, cell_rank, csv_values,
                                                         holm_note, model_rank, multiplicity_note, paired_interval,
                                                         paired_verdict, significant_number, with_holm_verdicts,
                                                         write_seed_csv)
from tnlib.experiments.results_dir import ResultsDir
from tnlib.files import atomic_write_text, read_jsonl, shown_folder
from tnlib.learning.training import read_run_config
from tnlib.paper import MAIN_LOWER_BOUND

__all__ = ["CONVERGENCE_FRACTIONS", "END", "cell_readings", "compared_steps", "convergence_rows", "convergence_section",
           "render_convergence", "write_convergence"]

# Where part-way the curves are compared: from early (a sixteenth of the steps every run reached) to the last of them.
CONVERGENCE_FRACTIONS = (Fraction(1, 16), Fraction(1, 8), Fraction(1, 4), Fraction(1, 2), Fraction(1))
# The point that compares each run's best where it stopped (its best.pt), whatever step that was.
END = "end"
CONVERGENCE_CSV_FIELDS = ("model", "domain", "sigma", "residual", "point", "step", "seeds", "n_val_mse", "tn_val_mse",
                          "ratio", "low", "high", "p", "verdict", "p_holm", "verdict_holm")


def _best_so_far(run) -> dict[int, float]:
    """step -> the run's best validation MSE up to and at it (an unreadable value counts as no improvement)."""
    curve, best = {}, math.inf
    for record in sorted(read_jsonl(run.curves_file), key=lambda r: r["step"]):
        value = float(record["val_mse"])
        if value < best:  # (NaN compares false: it never becomes the best, as best.pt's rule keeps it)
            best = value
        curve[int(record["step"])] = best
    return curve


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
        curve = _best_so_far(run)
        if curve:
            key = (config.model, config.domain, config.head.sigma, config.head.residual)
            cells.setdefault(key, {}).setdefault(config.head.distribution, {})[config.seed] = curve
    return cells


def compared_steps(curves: Sequence[dict]) -> list[tuple[Fraction, int]]:
    """Where ``curves`` (step -> value) are compared part-way: (fraction, step) for each of
    :data:`CONVERGENCE_FRACTIONS` of the last step every curve holds, the latest step every curve holds at or before
    it (each step once, named by the first fraction that lands on it)."""
    common = sorted(set.intersection(*(set(c) for c in curves))) if curves else []
    points: list[tuple[Fraction, int]] = []
    for fraction in CONVERGENCE_FRACTIONS:
        before = [s for s in common if s <= fraction * common[-1]]
        if before and before[-1] not in (step for _, step in points):
            points.append((fraction, before[-1]))
    return points


def _geometric_mean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _point_row(cell: tuple, point: str, step: int | None, pairs: dict[int, tuple[float, float]]) -> dict:
    """One compared point from ``pairs`` = {seed: (N's value, TN's value)}: the seeds whose two values are positive
    and finite (an MSE of 0 or a diverged one has no ratio), N's and TN's geometric means over them and the paired
    interval of log(TN / N), as ratios."""
    model, domain, sigma, residual = cell
    usable = {s: (n, tn) for s, (n, tn) in pairs.items() if all(0 < v < math.inf for v in (n, tn))}
    logs = [math.log(tn / n) for n, tn in usable.values()]
    interval = paired_interval(logs)
    row = {"model": model, "domain": domain, "sigma": sigma, "residual": residual, "point": point, "step": step,
           "seeds": len(usable), "n_val_mse": None, "tn_val_mse": None, "ratio": None, "low": None, "high": None,
           "p": None, "verdict": paired_verdict(interval, len(usable)), "p_holm": None}
    if usable:
        row.update(n_val_mse=_geometric_mean([n for n, _ in usable.values()]),
                   tn_val_mse=_geometric_mean([tn for _, tn in usable.values()]),
                   ratio=_geometric_mean([tn / n for n, tn in usable.values()]))
    if interval is not None:
        row.update(low=math.exp(interval["low"]), high=math.exp(interval["high"]), p=interval["p"])
    row["verdict_holm"] = row["verdict"]
    return row


def _cell_rows(cell: tuple, normal: dict, truncated: dict) -> list[dict]:
    """A cell's points: part-way at :func:`compared_steps` of its paired runs, then at the end where the runs did
    not all stop at the last of those steps."""
    seeds = sorted(set(normal) & set(truncated))
    curves = [normal[s] for s in seeds] + [truncated[s] for s in seeds]
    points = compared_steps(curves)
    rows = [_point_row(cell, str(fraction), step, {s: (normal[s][step], truncated[s][step]) for s in seeds})
            for fraction, step in points]
    if any(max(curve) != (points[-1][1] if points else None) for curve in curves):
        last = {s: (normal[s][max(normal[s])], truncated[s][max(truncated[s])]) for s in seeds}
        rows.append(_point_row(cell, END, max(max(curve) for curve in curves), last))
    return rows


def convergence_rows(results_dir, lower_bound: str) -> list[dict]:
    """Every compared point of the folder's finished runs (cells holding N and TN runs of a seed in common), in the
    tables' order, with Holm's correction over the points that have an interval (``p_holm``, ``verdict_holm``:
    ``within noise`` where a direction does not survive it)."""
    rows = []
    cells = _finished_curves(results_dir, lower_bound)
    for cell in sorted(cells, key=lambda c: (*model_rank(c[0]), *cell_rank(*c[1:]))):
        normal, truncated = cells[cell].get("N", {}), cells[cell].get("TN", {})
        if set(normal) & set(truncated):
            rows += _cell_rows(cell, normal, truncated)
    return with_holm_verdicts(rows)


def _ratio_cell(row: dict) -> str:
    if row["ratio"] is None:
        return ""
    if row["low"] is None:
        return significant_number(row["ratio"])
    return f"{significant_number(row['ratio'])} [{significant_number(row['low'])}, {significant_number(row['high'])}]"


def _step_cell(row: dict) -> str:
    return "" if row["step"] is None else f"up to {row['step']:,}" if row["point"] == END else f"{row['step']:,}"


def cell_readings(rows: Sequence[dict], verdict: str = "verdict") -> dict[str, int]:
    """Per cell (its points in order, the last one its end): how many cells ``rows`` hold, in how many TN is lower
    / higher than N at some point before the end, lower / higher / neither at the end, and lower before the end but
    not at it -- by ``verdict`` (``verdict_holm``: after Holm)."""
    cells: dict = {}
    for row in rows:
        cells.setdefault((row["model"], row["domain"], row["sigma"], row["residual"]), []).append(row)
    counts = dict.fromkeys(("cells", "lower_before", "higher_before", "lower_end", "higher_end", "caught_up"), 0)
    for points in cells.values():
        before, end = [p[verdict] for p in points[:-1]], points[-1][verdict]
        counts["cells"] += 1
        counts["lower_before"] += "lower" in before
        counts["higher_before"] += "higher" in before
        counts["lower_end"] += end == "lower"
        counts["higher_end"] += end == "higher"
        counts["caught_up"] += "lower" in before and end != "lower"
    return counts


def _summary(rows: Sequence[dict]) -> str:
    """The cells' readings, on their own and after Holm."""
    own, holm = cell_readings(rows), cell_readings(rows, "verdict_holm")
    if not any(r["low"] is not None for r in rows):
        return f"No point has the {PAIRED_MIN_SEEDS} seeds a paired interval needs."

    def both(key: str) -> str:
        return f"{own[key]} ({holm[key]} after Holm)"

    return (f"Of {own['cells']} cell{'' if own['cells'] == 1 else 's'}, TN's best validation MSE so far is below N's at some point before the end in "
            f"{both('lower_before')} and above it in {both('higher_before')}; at the end below in {both('lower_end')} "
            f"and above in {both('higher_end')}. Below before the end and not shown below at it -- TN ahead part-way, "
            f"and at the end the seeds show no gap -- in {both('caught_up')}.")


def render_convergence(rows: Sequence[dict], source: str, page: bool = True) -> str:
    """``convergence.md``: per model, a table of the compared points, cell by cell, and the cells' readings.
    ``page=False``: the same as a notebook's section, which has its own heading and no CSV beside it -- no title,
    and the full-precision CSV named as ``tnlib report`` writes it."""
    tested = sum(r["low"] is not None for r in rows)
    fractions = ", ".join(map(str, CONVERGENCE_FRACTIONS[:-1]))
    intro = (f"{source} The paper (Figure 2, five seeds each, read by eye): TN's validation loss converges faster. "
             f"Here, per domain and configuration, N's and TN's best validation MSE so far -- the model training "
             f"would keep had it stopped there -- at {fractions} and all of the last step every run of the cell "
             f"validated at, and at the end (`end`: each run's best where it stopped; runs trained until flat stop "
             f"apart), with TN / N: the geometric mean of the per-seed ratios (paired by seed: same data and initial "
             f"weights) and its {PAIRED_CONFIDENCE:.0%} t-interval, taken over the log ratios. N and TN are geometric "
             f"means over the seeds (figure2.html draws arithmetic means of each validation). Below 1 TN's error is "
             f"lower at that point: as many steps of training gave a better model; verdict `lower` / `higher` where the interval excludes 1 "
             f"(0 in logs), `not testable` below {PAIRED_MIN_SEEDS} seeds; a seed whose value at a point is 0 or not "
             f"finite is left out of that point. Lower part-way and not at the end is the paper's picture (TN ahead "
             f"early, N catching up); lower at the end too, a better final model as well. A best so far over more "
             f"validations is lower by chance alone, which favours the longer-trained runs at the end: the test "
             f"split's tables (accuracy.md, findings.md) have no such bias. N's validation MSE is that of its "
             f"mean mu, not clipped at l (the curves hold no N+clip), while TN's truncated mean lies within its "
             f"bounds: part of a gap here may be what clipping N would close (findings.md's TN - N+clip rows "
             f"separate that on the test split). Only runs that finished count, and only cells with N and TN runs of "
             f"a seed in common.")
    table = "convergence.csv" if page else "the convergence.csv that `tnlib report` writes"
    notes = [intro, multiplicity_note(tested, "These points"),
             holm_note(tested, f"points of this {'file' if page else 'section'}", table, "a ratio of 1"),
             "Its family is these points alone, apart from the findings' comparisons (another question)." if tested
             else "", f"Every number at full precision: {table}."]
    lines = ["# Convergence: the paper's Figure 2, counted\n"] if page else []
    lines.append(" ".join(part for part in notes if part) + "\n")
    if not rows:
        return "\n".join(lines + ["No cell holds finished N and TN runs of a seed in common: nothing to compare.\n"])
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = [r for r in rows if r["model"] == model]
        lines += [f"## {model}\n",
                  "| domain | configuration | point | step | seeds | N | TN | TN / N [95%] | verdict | after Holm |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in mine:
            values = ["" if r[k] is None else significant_number(r[k]) for k in ("n_val_mse", "tn_val_mse")]
            lines.append(f"| {r['domain']} | {r['sigma']}/{r['residual']} | {r['point']} | {_step_cell(r)} | "
                         f"{r['seeds']} | {values[0]} | {values[1]} | {_ratio_cell(r)} | {r['verdict']} | "
                         f"{r['verdict_holm']} |")
        lines.append("\n" + _summary(mine) + "\n")
    return "\n".join(lines)


def _convergence_source(results_dir, lower_bound: str) -> str:
    return f"From `{shown_folder(results_dir)}/`, l = {lower_bound}: the validation curves of its runs (curves.jsonl)."


def convergence_section(results_dir, lower_bound: str = MAIN_LOWER_BOUND) -> str:
    """``convergence.md``'s text without its title, from the finished runs of ``results_dir``: the experiments
    notebook's section on Figure 2, counted."""
    return render_convergence(convergence_rows(results_dir, lower_bound),
                              _convergence_source(results_dir, lower_bound), page=False)


def write_convergence(results_dir, reports_dir, lower_bound: str) -> list[Path]:
    """``convergence.md`` (:func:`render_convergence`) and ``convergence.csv`` (the rows at full precision) in
    ``reports_dir``, from the finished runs of ``results_dir``."""
    reports_dir = Path(reports_dir)
    rows = convergence_rows(results_dir, lower_bound)
    atomic_write_text(reports_dir / "convergence.md",
                      render_convergence(rows, _convergence_source(results_dir, lower_bound)))
    return [reports_dir / "convergence.md", write_seed_csv(csv_values(rows, CONVERGENCE_CSV_FIELDS),
                                                           reports_dir / "convergence.csv")]
