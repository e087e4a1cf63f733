"""The classroom notebook's sections 8d and 8e: how many seeds a claim needs, and what many claims at once need, on
the kit's own committed five-seed reports.

A report's ``accuracy-seeds.csv`` holds every run's test MSE. For one cell (domain and configuration) this module
reads TN's and N's values per seed and asks, as the seeds arrive (the first 2, 3, ... of them), what three rules
say about TN against N: the gap rule (the means differ by more than the two std summed: the kit's reading of a
table of mean +- std such as the paper's, not a test), an unpaired Welch t-interval, and the paired t-interval the
reports use (runs with the same seed share their data order and initial weights, :func:`tnlib.experiments.reporting.seed_statistics.paired_interval`). A report makes
dozens of such comparisons: :func:`null_family_errors` simulates how often a family of them with no real
difference claims one anyway, each at 95% and after Holm's correction, and :func:`committed_findings_after_holm`
reads which of a committed report's directions survive that correction (its ``findings.csv``).
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

from tnlib.experiments.reporting.report_files import ACCURACY_SEEDS
from tnlib.experiments.reporting.seed_statistics import (PAIRED_CONFIDENCE, holm_adjusted, paired_interval,
                                                        read_seed_values)
from tnlib.files import REPO_ROOT

# The committed reports with five seeds per cell and their per-seed CSV (reports/<name>/accuracy-seeds.csv).
# the committed five-seed reports section 8d reads: data/small's converged sweeps, and the campaign at the paper's
# training scale (its values move with each snapshot, so the notebook quotes none of them)
SEED_REPORTS = ("converged/nlm5", "converged/linear", "converged/wl", "paper-scale-nlm5")


def seed_values_path(report: str) -> Path:
    """Where a committed report keeps its per-seed test metrics."""
    return REPO_ROOT / "reports" / report / ACCURACY_SEEDS


def committed_seed_values(report: str, cell: str, metric: str = "mse") -> dict[str, dict[int, float]]:
    """``{column: {seed: value}}`` (columns N, N+clip, TN) of one cell of a committed report, ``cell`` written
    ``"DOMAIN SIGMA/RESIDUAL"`` (``"ferry learn/ff"``). A ValueError names the cells the report has when it lacks
    this one."""
    path = seed_values_path(report)
    if not path.is_file():
        raise ValueError(f"{report}: no per-seed values at {path} (reports with them: {', '.join(SEED_REPORTS)})")
    by_cell: dict[str, dict[str, dict[int, float]]] = {}
    for (domain, sigma, residual, column), by_seed in read_seed_values(path, None, metric).items():
        by_cell.setdefault(f"{domain} {sigma}/{residual}", {})[column] = by_seed
    if cell not in by_cell:
        cells = sorted(by_cell, key=lambda c: (c.split()[0], c))
        raise ValueError(f"{report} has no cell {cell!r}; its cells: {', '.join(cells)}")
    return by_cell[cell]


@dataclass(frozen=True)
class SeedsSoFar:
    """What the first ``len(seeds)`` seeds say about a - b (test MSE): the means, the gap rule's verdict and both
    intervals (None without a spread), and the correlation of a and b across the seeds (from three seeds)."""

    seeds: tuple[int, ...]
    mean_a: float
    mean_b: float
    gap_rule: bool  # |mean_a - mean_b| > std_a + std_b (sample std over the seeds)
    welch: tuple[float, float] | None
    paired: tuple[float, float] | None
    correlation: float | None


def _welch_interval(a: np.ndarray, b: np.ndarray) -> tuple[float, float] | None:
    """The Welch (unequal variances) t-interval of mean(a) - mean(b); None where neither side has a spread."""
    if a.std(ddof=1) == 0 and b.std(ddof=1) == 0:
        return None
    interval = stats.ttest_ind(a, b, equal_var=False).confidence_interval(PAIRED_CONFIDENCE)
    return float(interval.low), float(interval.high)


def _paired_t_interval(differences: np.ndarray) -> tuple[float, float] | None:
    """The t-interval of the mean per-seed difference, from two seeds on (the reports wait for three, where it
    starts to say something: at two the t quantile is 12.7); None where every seed gives the same difference."""
    interval = paired_interval(list(differences), min_seeds=2)
    if interval is None or interval["low"] == interval["high"]:
        return None
    return interval["low"], interval["high"]


def seeds_as_they_arrive(values: dict[str, dict[int, float]], a: str = "TN", b: str = "N") -> list[SeedsSoFar]:
    """:class:`SeedsSoFar` for the first 2, 3, ... of the seeds both columns have, in seed order."""
    seeds = sorted(set(values.get(a, {})) & set(values.get(b, {})))
    if len(seeds) < 2:
        raise ValueError(f"{a} and {b} share {len(seeds)} seed(s) in this cell: at least 2 are needed")
    rows = []
    for k in range(2, len(seeds) + 1):
        used = seeds[:k]
        x = np.array([values[a][s] for s in used])
        y = np.array([values[b][s] for s in used])
        correlation = float(np.corrcoef(x, y)[0, 1]) if k >= 3 and x.std() > 0 and y.std() > 0 else None
        rows.append(SeedsSoFar(tuple(used), float(x.mean()), float(y.mean()),
                               bool(abs(x.mean() - y.mean()) > x.std(ddof=1) + y.std(ddof=1)),
                               _welch_interval(x, y), _paired_t_interval(x - y), correlation))
    return rows


def _verdict(interval: tuple[float, float] | None, a: str, b: str) -> str:
    if interval is None:
        return "no spread"
    low, high = interval
    side = f"{a} lower" if high < 0 else f"{b} lower" if low > 0 else "holds 0"
    return f"[{low:+.2f}, {high:+.2f}] {side}"


def format_seeds_as_they_arrive(rows: list[SeedsSoFar], a: str = "TN", b: str = "N") -> str:
    """A plain-text table of :func:`seeds_as_they_arrive`: one line per number of seeds."""
    lines = [f"{'seeds':<12} {a + ' mean':>9} {b + ' mean':>9} {'gap rule':<18} {'Welch 95% interval':<28} "
             f"{'paired 95% interval':<28} {'r':>6}"]
    for row in rows:
        gap = (f"{a} lower" if row.mean_a < row.mean_b else f"{b} lower") if row.gap_rule else "within spread"
        r = "" if row.correlation is None or math.isnan(row.correlation) else f"{row.correlation:+.2f}"
        lines.append(f"{','.join(map(str, row.seeds)):<12} {row.mean_a:>9.3f} {row.mean_b:>9.3f} {gap:<18} "
                     f"{_verdict(row.welch, a, b):<28} {_verdict(row.paired, a, b):<28} {r:>6}")
    return "\n".join(lines)


@dataclass(frozen=True)
class NullFamilyErrors:
    """How often ``families`` simulated families of ``comparisons`` paired comparisons over ``seeds`` seeds, none of
    them with a real difference, claim one anyway: the share of single comparisons whose 95% interval excludes 0,
    the share of families where at least one does, and where at least one survives Holm's correction; beside them
    what independent comparisons would give, ``1 - 0.95 ** comparisons``."""

    comparisons: int
    seeds: int
    families: int
    per_comparison: float
    uncorrected: float
    holm: float
    independent: float


def null_family_errors(comparisons: int, seeds: int = 5, families: int = 4000, seed: int = 0) -> NullFamilyErrors:
    """Per-seed differences drawn from N(0, 1) -- no difference is real -- tested as the reports test them (the
    paired t-test, p below ``1 - PAIRED_CONFIDENCE``), each family corrected by
    :func:`tnlib.experiments.reporting.seed_statistics.holm_adjusted`."""
    if comparisons < 1 or seeds < 2 or families < 1:
        raise ValueError(f"need at least 1 comparison, 2 seeds and 1 family, got {comparisons}, {seeds}, {families}")
    alpha = 1 - PAIRED_CONFIDENCE
    differences = np.random.default_rng(seed).standard_normal((families, comparisons, seeds))
    t = differences.mean(axis=2) / (differences.std(axis=2, ddof=1) / math.sqrt(seeds))
    p = 2 * stats.t.sf(np.abs(t), seeds - 1)
    holm = np.mean([min(holm_adjusted(list(family))) < alpha for family in p])
    return NullFamilyErrors(comparisons, seeds, families, float(np.mean(p < alpha)),
                            float(np.mean((p < alpha).any(axis=1))), float(holm), 1 - (1 - alpha) ** comparisons)


@dataclass(frozen=True)
class FindingsAfterHolm:
    """A committed report's findings: how many comparisons have a paired interval, how many of them show a
    direction on their own, and those of the directions that Holm's correction over all of them keeps or not
    (a line each: what is compared, the mean difference, p on its own and after Holm)."""

    report: str
    comparisons: int
    directions: int
    kept: list[str]
    lost: list[str]
    p_values: tuple[float, ...] = ()  # every comparison's p on its own, the family Holm corrects


def committed_findings_after_holm(report: str, metric: str = "mse") -> FindingsAfterHolm:
    """:class:`FindingsAfterHolm` of ``reports/<report>/findings.csv``, its lines for ``metric``'s comparisons
    (the counts over all of them: Holm's family is the whole file)."""
    path = REPO_ROOT / "reports" / report / "findings.csv"
    if not path.is_file():
        raise ValueError(f"{report}: no findings at {path} (reports with them: {', '.join(SEED_REPORTS)})")
    with path.open(newline="") as handle:
        tested = [row for row in csv.DictReader(handle) if row["p"]]
    directed = [row for row in tested if row["verdict"] in ("lower", "higher")]
    mine = [row for row in directed if row["metric"] == metric]
    return FindingsAfterHolm(report, len(tested), len(directed),
                             [_finding_line(r) for r in mine if r["verdict_holm"] == r["verdict"]],
                             [_finding_line(r) for r in mine if r["verdict_holm"] != r["verdict"]],
                             tuple(float(r["p"]) for r in tested))


def _finding_line(row: dict) -> str:
    return (f"{row['domain']} {row['first']} - {row['second']}: {float(row['mean']):+.3g} "
            f"(p {float(row['p']):.2g} on its own, {float(row['p_holm']):.2g} after Holm)")


def format_holm(family_errors: list[NullFamilyErrors], findings: FindingsAfterHolm) -> str:
    """Section 8e's printout: the simulated error rates of each family size, then the report's directions kept and
    left within noise by Holm."""
    lines = [f"families of comparisons at {family_errors[0].seeds} seeds, no difference real: the share that claims "
             "at least one",
             f"{'comparisons':>11} {'one alone':>10} {'uncorrected':>12} {'independent':>12} {'after Holm':>11}"]
    for e in family_errors:
        lines.append(f"{e.comparisons:>11} {e.per_comparison:>10.3f} {e.uncorrected:>12.3f} {e.independent:>12.3f} "
                     f"{e.holm:>11.3f}")
    lines += ["", f"{findings.report}: {findings.comparisons} comparisons with an interval, {findings.directions} show "
              f"a direction on their own; of the test MSE's, Holm keeps {len(findings.kept)} and leaves "
              f"{len(findings.lost)} within noise.",
              "kept:", *(f"  {line}" for line in findings.kept), "within noise after Holm:",
              *(f"  {line}" for line in findings.lost)]
    return "\n".join(lines)


@dataclass(frozen=True)
class ConvergencePoint:
    """One point of a report's convergence.csv (:mod:`tnlib.experiments.reporting.convergence`): TN's best
    validation MSE so far over N's, paired by seed, at ``point`` (a fraction of the common steps, or ``end``)."""

    point: str
    step: int
    ratio: float
    low: float | None
    high: float | None
    verdict: str
    verdict_holm: str


def committed_convergence(report: str, domain: str) -> dict[str, list[ConvergencePoint]]:
    """``{"SIGMA/RESIDUAL": [ConvergencePoint, ...]}`` of one domain of ``reports/<report>/convergence.csv``, the
    configurations in the file's order. A ValueError names the domains it has when it lacks this one."""
    path = REPO_ROOT / "reports" / report / "convergence.csv"
    if not path.is_file():
        raise ValueError(f"{report}: no convergence table at {path} (the five-seed reports of this section: "
                         f"{', '.join(SEED_REPORTS)})")
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    if domain not in {row["domain"] for row in rows}:
        domains = sorted({row["domain"] for row in rows})
        raise ValueError(f"{report}'s convergence.csv has no domain {domain!r}; its domains: {', '.join(domains)}")
    by_config: dict[str, list[ConvergencePoint]] = {}
    for row in rows:
        if row["domain"] == domain and row["ratio"]:
            by_config.setdefault(f"{row['sigma']}/{row['residual']}", []).append(ConvergencePoint(
                row["point"], int(row["step"]), float(row["ratio"]), float(row["low"]) if row["low"] else None,
                float(row["high"]) if row["high"] else None, row["verdict"], row["verdict_holm"]))
    if not by_config:
        raise ValueError(f"{report}'s convergence.csv holds no ratio for {domain}: no seed of it has a positive, "
                         "finite validation MSE for both N and TN")
    return by_config


def format_convergence(by_config: dict[str, list[ConvergencePoint]]) -> str:
    """Section 8f's printout: per configuration, TN / N at each point with its interval and verdicts (on its own,
    after Holm)."""
    lines = [f"{'configuration':<14} {'point':>5} {'step':>7} {'TN / N':>7} {'95% interval':>16}  verdict on its own "
             "(after Holm's correction)"]
    for config, points in by_config.items():
        for p in points:
            interval = "" if p.low is None else f"[{p.low:.3g}, {p.high:.3g}]"
            lines.append(f"{config:<14} {p.point:>5} {p.step:>7,} {p.ratio:>7.3g} {interval:>16}  {p.verdict} "
                         f"({p.verdict_holm})")
    return "\n".join(lines)
