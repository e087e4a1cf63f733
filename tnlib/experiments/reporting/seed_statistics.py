"""What a table's mean +- std rests on, and which of its differences survive the seeds' noise.

Every cell of Table 1 and Table 2 pools runs that differ only in the seed. Runs of N and TN with the same seed saw
the same data in the same order from the same initial weights, so their difference is *paired*: per
(domain, configuration), :func:`paired_differences` takes TN - N and TN - N+clip seed by seed and gives the mean
difference with its 95% t-interval (and the paired t-test's p-value). :func:`paired_best` is the bold rule that
accounts for noise: the best column of a configuration is bold only where its interval against every other column
excludes 0, which needs at least :data:`PAIRED_MIN_SEEDS` seeds; columns equal on every seed are no finding and
bold nothing. The intervals are each at :data:`PAIRED_CONFIDENCE` on their own, not corrected for the number a
report makes (:func:`multiplicity_note` says how many); :func:`holm_adjusted` corrects a family of them (a report's
findings). :func:`write_seed_csv` writes the values per seed beside a table, so any other test can be run on them.
"""
from __future__ import annotations

import csv
import math
import os
from collections import defaultdict
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
from scipy import stats

from tnlib.files import atomic_write_text
from tnlib.paper import DOMAINS, MODELS, TABLE1_CONFIGS

PAIRED_CONFIDENCE = 0.95
# Below this many paired seeds an interval is too wide to say anything (at 2 seeds the t quantile is 12.7).
PAIRED_MIN_SEEDS = 3
PAIRED_BOLD_RULE = (f"Bold: per configuration, the best of N, N+clip and TN by mean, only where it beats each of the "
                    f"others paired by seed (same seed: same data and initial weights): the {PAIRED_CONFIDENCE:.0%} "
                    f"t-interval of the per-seed differences excludes 0 (at least {PAIRED_MIN_SEEDS} seeds); columns "
                    "equal on every seed are no finding: nothing of theirs is bold.")
# What a table of runs says where the paired rule cannot decide: it bolds nothing rather than guess.
FEW_SEEDS_BOLD_RULE = (f"Nothing is bold: some cell has fewer than the {PAIRED_MIN_SEEDS} seeds a paired interval "
                       "needs to tell a difference from the seeds' noise (at 2 seeds its t quantile is 12.7).")
# The comparisons the paper's claims are about: the Truncated Gaussian against the Gaussian, with and without clip.
COMPARISONS = (("TN", "N"), ("TN", "N+clip"))


def paired_interval(differences: Sequence[float], min_seeds: int = PAIRED_MIN_SEEDS) -> dict | None:
    """Mean, ``PAIRED_CONFIDENCE`` t-interval and paired t-test p-value of per-seed differences (None below
    ``min_seeds``: the reports' :data:`PAIRED_MIN_SEEDS`; the classroom shows what two seeds say, too)."""
    d = np.asarray([x for x in differences if x is not None and math.isfinite(x)], dtype=np.float64)
    if len(d) < max(min_seeds, 2):
        return None
    mean = float(d.mean())
    spread = float(d.std(ddof=1)) / math.sqrt(len(d))
    if spread <= 1e-12 * max(1.0, abs(mean)):  # the same difference on every seed, up to rounding
        spread = 0.0
    half = float(stats.t.ppf(0.5 + PAIRED_CONFIDENCE / 2, len(d) - 1)) * spread
    p = float(stats.ttest_1samp(d, 0.0).pvalue) if spread > 0 else (0.0 if mean != 0 else 1.0)
    return {"n": len(d), "mean": mean, "low": mean - half, "high": mean + half, "p": p}


# Relative differences below which two values of one seed are the same figure. FLOAT64_ROUNDING: one metric computed
# twice in another summation order. EVALUATION_ROUNDING: one run's weights evaluated twice, on another machine or by
# another code -- the float32 model's sums in another order, up to 6.4e-7 measured (a GPU's test against a CPU's on
# the campaign's runs), where a run trained again moved its test metrics by 4.6e-3 or more.
FLOAT64_ROUNDING = 1e-12
EVALUATION_ROUNDING = 1e-5


def seed_difference(a: float, b: float, rounding: float = FLOAT64_ROUNDING) -> float:
    """``a - b``, and 0 where the two agree up to ``rounding`` relatively: rounding moves a figure computed twice in
    its last bits, which is no difference between the seeds' runs."""
    difference = a - b
    return 0.0 if abs(difference) <= rounding * max(abs(a), abs(b)) else difference


def _differences(a: dict[int, float], b: dict[int, float]) -> list[float]:
    return [seed_difference(a[s], b[s]) for s in sorted(set(a) & set(b)) if a[s] is not None and b[s] is not None]


def paired_best(by_column: dict, lower_is_better: bool = True) -> set:
    """The columns to bold among ``by_column`` ({column: {seed: value}}): the best mean, where its paired interval
    against each other column lies wholly on its side of 0; several columns equal on every seed are bold together
    when they beat the rest so; all of them equal on every seed, none."""
    means = {c: float(np.mean(list(v.values()))) for c, v in by_column.items() if v}
    if len(means) < 2:
        return set()
    best = min(means, key=means.get) if lower_is_better else max(means, key=means.get)
    tied = {c for c in means if by_column[c] == by_column[best]}
    if tied == set(means):  # every column the same on every seed: nothing beats anything
        return set()
    for other in set(means) - tied:
        interval = paired_interval(_differences(by_column[other], by_column[best]))
        if interval is None or (interval["low"] <= 0 if lower_is_better else interval["high"] >= 0):
            return set()
    return tied


def seed_count(by_column: dict) -> int:
    """The fewest seeds any column of a cell group has."""
    return min((len(v) for v in by_column.values() if v), default=0)


def paired_differences(values: dict, comparisons: Iterable[tuple[str, str]] = COMPARISONS) -> dict:
    """``{(domain, sigma, residual): {(a, b): interval}}`` from ``values`` = {(domain, sigma, residual, column):
    {seed: value}}: the per-seed a - b of each comparison (None where fewer seeds pair up)."""
    groups: dict = defaultdict(dict)
    for (domain, sigma, residual, column), by_seed in values.items():
        groups[(domain, sigma, residual)][column] = by_seed
    return {group: {(a, b): paired_interval(_differences(groups[group].get(a, {}), groups[group].get(b, {})))
                    for a, b in comparisons if a in groups[group] and b in groups[group]}
            for group in sorted(groups, key=lambda group: cell_rank(*group))}


def model_rank(model: str) -> tuple:
    """The tables' order of models: as :data:`tnlib.paper.MODELS` lists them, then any other by name."""
    return (MODELS.index(model) if model in MODELS else len(MODELS), model)


def domain_rank(domain: str) -> tuple:
    """The tables' order of domains: as the paper lists them, then any other by name."""
    return (DOMAINS.index(domain) if domain in DOMAINS else len(DOMAINS), domain)


def cell_rank(domain: str, sigma: str, residual: str) -> tuple:
    """The tables' order of cells: by domain, then configuration as Table 1 lists them, then any other by name."""
    return (*domain_rank(domain),
            TABLE1_CONFIGS.index((sigma, residual)) if (sigma, residual) in TABLE1_CONFIGS else 99, sigma, residual)


def interval_count(differences: dict) -> int:
    """How many paired intervals :func:`paired_differences` computed (those with the seeds for one)."""
    return sum(interval is not None for row in differences.values() for interval in row.values())


def multiplicity_note(count: int, what: str = "The paired tables") -> str:
    """What a report says of the ``count`` paired intervals its tables make: each holds on its own, and they are
    not corrected for their number (its findings correct theirs by Holm, :func:`holm_adjusted`; a reader can
    correct any other family from the per-seed CSVs)."""
    if count == 0:
        return (f"No cell has the {PAIRED_MIN_SEEDS} seeds a paired interval needs: {what[0].lower()}{what[1:]} "
                "make no paired comparison.")
    expected = count * (1 - PAIRED_CONFIDENCE)
    return (f"{what} make {count} comparison{'' if count == 1 else 's'} (intervals), each at "
            f"{PAIRED_CONFIDENCE:.0%} on its own: they are not corrected for multiplicity, so where no difference "
            f"is real about {expected:.1f} of them would still exclude 0 by chance.")


def holm_adjusted(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given: sorted ascending, the i-th smallest (from 0) of m
    becomes the largest of ``(m - j) * p`` over the j-th smallest up to it, at most 1. A comparison whose adjusted
    value is below ``1 - PAIRED_CONFIDENCE`` is rejected with the family's chance of any false rejection held at
    that level, whatever the dependence between the comparisons (Holm, 1979): the same verdicts as the step-down
    rule that rejects the i-th smallest where it and each smaller one, the j-th, pass ``p < alpha / (m - j)``."""
    m = len(p_values)
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(sorted(range(m), key=lambda i: p_values[i])):
        running = max(running, min(1.0, (m - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted


# paired_verdict's word for differences that are all 0: no finding either way
EQUAL_ON_EVERY_SEED = "equal on every seed"


def paired_verdict(interval: dict | None, seeds: int) -> str:
    """``lower`` / ``higher`` / ``within noise`` for a paired interval (``equal on every seed`` where every
    difference is 0: no finding either way); ``not testable at N seeds`` without one."""
    if interval is None:
        return f"not testable at {seeds} seed{'' if seeds == 1 else 's'}"
    if interval["low"] == interval["high"] == 0:
        return EQUAL_ON_EVERY_SEED
    return "lower" if interval["high"] < 0 else "higher" if interval["low"] > 0 else "within noise"


def with_holm_verdicts(rows: list[dict]) -> list[dict]:
    """``rows`` with ``p_holm`` (:func:`holm_adjusted` over every row with a paired interval) and ``verdict_holm``:
    the verdict where it is no direction or Holm's adjusted p-value still rejects a zero difference at
    ``1 - PAIRED_CONFIDENCE``, ``within noise`` where the direction does not survive the correction."""
    tested = [r for r in rows if r["p"] is not None]
    for row, adjusted in zip(tested, holm_adjusted([r["p"] for r in tested])):
        survives = row["verdict"] not in ("lower", "higher") or adjusted < 1 - PAIRED_CONFIDENCE
        row.update(p_holm=adjusted, verdict_holm=row["verdict"] if survives else "within noise")
    return rows


def holm_note(count: int, family: str = "comparisons", csv_name: str = "findings.csv",
              null: str = "a zero difference") -> str:
    """What an ``after Holm`` column is, for a family of ``count`` intervals (``family`` names them, ``null`` what
    a rejection rejects; ``csv_name`` holds the adjusted p-values); "" for none."""
    if count == 0:
        return ""
    return (f"`after Holm` corrects for that: a direction stands there only where Holm's step-down correction over "
            f"all {count} {family} (family-wise error {1 - PAIRED_CONFIDENCE:.0%}, whatever their dependence) "
            f"still rejects {null}; `p_holm` in {csv_name} is its adjusted p-value.")


def csv_values(rows: Sequence[dict], fields: Sequence[str]) -> list[dict]:
    """``rows`` cut to ``fields`` as CSV cells: a float at full precision (its repr), None empty."""
    return [{k: ("" if r[k] is None else repr(r[k]) if isinstance(r[k], float) else r[k]) for k in fields}
            for r in rows]


def significant_number(x: float) -> str:
    return f"{x:.3g}" if abs(x) >= 0.01 or x == 0 else f"{x:.1e}"


def render_paired(differences: dict, what: str, lower_is_better: bool = True) -> str:
    """A Markdown table of :func:`paired_differences`: per domain and configuration, each comparison's mean
    difference, its interval and p, marked where the interval excludes 0 (``TN better`` or ``TN worse``)."""
    comparisons = sorted({c for row in differences.values() for c in row}, key=COMPARISONS.index)
    if not any(interval is not None for row in differences.values() for interval in row.values()):
        return ""  # fewer than PAIRED_MIN_SEEDS seeds everywhere: nothing to say
    lines = [f"Paired by seed, {what} of the first column minus the second: mean [{PAIRED_CONFIDENCE:.0%} "
             f"t-interval], p of the paired t-test; `better` / `worse` where the interval excludes 0 "
             f"({'lower' if lower_is_better else 'higher'} is better); blank below {PAIRED_MIN_SEEDS} seeds.", "",
             "| domain | configuration | " + " | ".join(f"{a} - {b}" for a, b in comparisons) + " |",
             "|" + "---|" * (2 + len(comparisons))]
    for (domain, sigma, residual), row in differences.items():
        cells = []
        for comparison in comparisons:
            interval = row.get(comparison)
            if interval is None:
                cells.append("")
                continue
            cells.append(paired_cell(interval, lower_is_better))
        lines.append(f"| {domain} | {sigma}/{residual} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def interval_side(interval: dict, lower_is_better: bool = True) -> str:
    """``better`` or ``worse`` where a paired interval excludes 0, ``within noise`` where it holds it."""
    if interval["high"] < 0 or interval["low"] > 0:
        return "better" if (interval["high"] < 0) == lower_is_better else "worse"
    return "within noise"


def paired_cell(interval: dict, lower_is_better: bool = True, with_p: bool = True) -> str:
    """A paired interval as a table cell: mean [low, high], p (``with_p``), n and the verdict where the interval
    excludes 0 (``**better**`` or ``worse``)."""
    side = interval_side(interval, lower_is_better)
    verdict = {"better": " **better**", "worse": " worse"}.get(side, "")
    p_value = f"p {interval['p']:.2g}, " if with_p else ""
    return (f"{significant_number(interval['mean'])} [{significant_number(interval['low'])}, "
            f"{significant_number(interval['high'])}], {p_value}n {interval['n']}{verdict}")


def write_seed_csv(rows: Sequence[dict], path: str | os.PathLike) -> Path:
    """The rows (one per run and column) as CSV, columns in the first row's order, written atomically."""
    import io

    buffer = io.StringIO()
    if rows:
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    atomic_write_text(Path(path), buffer.getvalue())
    return Path(path)


# The columns every per-seed CSV of a report has (the rows write_seed_csv is given): a run's cell and its seed.
SEED_CSV_KEYS = ("domain", "model", "sigma", "residual", "lower_bound", "column", "seed")


# The per-seed CSVs' columns that hold numbers (a blank where a run has none), checked as they are read.
SEED_CSV_NUMBERS = frozenset({"mse", "nll", "nll_best_nll", "coverage", "evaluations", "instances", "states",
                              "cost_over_h_star"})


def read_seed_csv(path: str | os.PathLike, columns: Sequence[str] = ()) -> list[dict]:
    """The rows of a report's per-seed CSV ([] where there is no file); a ValueError naming the file and the
    columns it lacks (:data:`SEED_CSV_KEYS` and ``columns``) where it is not one -- an edit, another tool's CSV --,
    and naming the file and line where a row is damaged (cut short, bytes changed: a seed that is no integer, a
    value of ``columns`` among :data:`SEED_CSV_NUMBERS` that is no number)."""
    path = Path(path)
    if not path.is_file():
        return []
    remedy = "render the report again with `tnlib report` to write it"
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            if reader.fieldnames is None:  # write_seed_csv of no rows: an empty file
                return []
            missing = [name for name in (*SEED_CSV_KEYS, *columns) if name not in reader.fieldnames]
            if missing:
                raise ValueError(f"{path}: not a report's per-seed CSV (it lacks the "
                                 f"column{'s' if len(missing) > 1 else ''} {', '.join(missing)}); {remedy}")
            rows = []
            for row in reader:
                if not _seed_row_whole(row, columns):
                    raise ValueError(f"{path}, line {reader.line_num}: a damaged row (cut short, or bytes changed); "
                                     f"{remedy}")
                rows.append(row)
            return rows
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: damaged (byte {err.start} is no UTF-8 text); {remedy}") from None


def _seed_row_whole(row: dict, columns: Sequence[str]) -> bool:
    """Whether a per-seed CSV row has every field, an integer seed and, in ``columns``, numbers or blanks (a row cut
    short lacks fields: csv gives them as None; one with more fields than the header has them under None)."""
    if None in row or any(value is None for value in row.values()) or not row["seed"].lstrip("-").isdigit():
        return False
    for name in set(columns) & SEED_CSV_NUMBERS:
        try:
            if row[name]:
                float(row[name])
        except ValueError:
            return False
    return True


def read_seed_values(path: str | os.PathLike, model: str | None, metric: str = "mse") -> dict:
    """A report's per-seed CSV (``accuracy-seeds.csv``, :func:`write_seed_csv`) read back as the tables' values:
    ``{(domain, sigma, residual, column): {seed: value}}`` for one model (None: a file of one model, whichever) and
    metric (``mse``, ``nll``, ``nll_best_nll``; rows without it are skipped). What a committed report says can be
    recomputed from it without its run folders."""
    values: dict = defaultdict(dict)
    for row in read_seed_csv(path):
        if model in (None, row["model"]) and row.get(metric):
            values[(row["domain"], row["sigma"], row["residual"], row["column"])][int(row["seed"])] = float(row[metric])
    return dict(values)
