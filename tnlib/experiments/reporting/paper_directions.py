"""Where the paper's directions (TN against N and against N+clip in test MSE) appear in one or two sets of runs:
per domain and configuration, by the paired interval where a cell has the seeds, and whether the paper's direction
holds (:func:`render_paper_directions`)."""
from __future__ import annotations

from collections import defaultdict
from typing import Sequence

import numpy as np

from tnlib.experiments.reporting.seed_statistics import PAIRED_CONFIDENCE, PAIRED_MIN_SEEDS, paired_interval
from tnlib.experiments.reporting.table_cells import mean_and_std, paper_number
from tnlib.experiments.reporting.table_rows import collect_results
from tnlib.experiments.reporting.tables import table1_seed_values
from tnlib.paper import MAIN_TABLES_MODEL, PAPER_CONFIGS, PAPER_TABLE1

DIRECTIONS_RULE = (f"a direction counts, in a folder whose cell has at least {PAIRED_MIN_SEEDS} seeds of both columns, "
                   f"where the {PAIRED_CONFIDENCE:.0%} t-interval of the per-seed differences (paired by seed) "
                   "excludes 0 -- the interval follows the means; with fewer seeds, and in the paper (mean ± std over "
                   "its 5 seeds), where the two means differ by more than their summed std")


def _direction(tn: tuple[float, float | None] | None, other: tuple[float, float | None] | None,
               lower_is_better: bool = True) -> str | None:
    """``TN`` or the other column where one mean is better by more than the two cells' summed std (their spread
    over seeds), ``tie`` otherwise; None without both cells. A cell of one seed has no spread: any gap counts."""
    if tn is None or other is None:
        return None
    gap = other[0] - tn[0] if lower_is_better else tn[0] - other[0]
    if abs(gap) <= (tn[1] or 0.0) + (other[1] or 0.0):
        return "tie"
    return "TN" if gap > 0 else "other"


def _folder_direction(values: dict, tn_key: tuple, other_key: tuple) -> tuple[str | None, str]:
    """TN against another column in one folder's cell ({key: {seed: value}}): the direction (as :func:`_direction`)
    and how it reads -- the two means, and the paired interval of TN minus the other where it decides."""
    tn, other = values.get(tn_key, {}), values.get(other_key, {})
    if not tn or not other:
        return None, ""
    means = f"{paper_number(float(np.mean(list(tn.values()))))} vs {paper_number(float(np.mean(list(other.values()))))}"
    interval = paired_interval([tn[s] - other[s] for s in sorted(set(tn) & set(other), key=str)
                                if tn[s] is not None and other[s] is not None])
    if interval is None:
        return _direction(mean_and_std(list(tn.values())), mean_and_std(list(other.values()))), means
    way = "TN" if interval["high"] < 0 else "other" if interval["low"] > 0 else "tie"
    return way, f"{means}; {paper_number(interval['mean'])} [{paper_number(interval['low'])}, {paper_number(interval['high'])}]"


def render_directions(results_dir, other_dir, model: str = MAIN_TABLES_MODEL, names: tuple[str, str] = ("these runs", "other"),
                      configs: Sequence[tuple[str, str]] = PAPER_CONFIGS) -> str:
    """Where the paper's directions appear in two results folders (:func:`render_paper_directions` of both), and
    whether the folders agree with each other (what an ablation asks: does a setting change a conclusion)."""
    values = [table1_seed_values(collect_results(folder), model) for folder in (results_dir, other_dir)]
    return render_paper_directions(values, names, model, configs)


def render_paper_directions(values: Sequence[dict], names: Sequence[str], model: str = MAIN_TABLES_MODEL,
                            configs: Sequence[tuple[str, str]] = PAPER_CONFIGS) -> str:
    """Where the paper's directions appear: per domain and configuration, TN against N and against N+clip in test
    MSE as the paper's table for ``model`` has them (:data:`tnlib.paper.PAPER_TABLE1`) and as each of one or two
    sets of runs has them (``values``: :func:`table1_seed_values` per set; :data:`DIRECTIONS_RULE`: by the paired
    interval where a cell has the seeds, else by the summed std); then whether the paper's direction holds there
    (for two sets: in both, in one only, or in neither, and whether the two agree). Markdown."""
    if model not in PAPER_TABLE1:
        raise ValueError(f"the paper's test-MSE table of {model!r} is not transcribed (those of: "
                         f"{', '.join(PAPER_TABLE1)})")
    table = PAPER_TABLE1[model]
    words = {"TN": "TN lower", "other": "{other} lower", "tie": "within noise", None: "not run"}

    def said(direction, other: str, reading: str) -> str:
        text = words[direction].format(other=other)
        return f"{text} ({reading})" if reading else text

    two = len(values) == 2
    lines = ["| domain | configuration | comparison | the paper | " + " | ".join(names) + " | the paper's direction |"
             + (" the two folders |" if two else ""), "|" + "---|" * (5 + len(values) + two)]
    tally: dict[str, int] = defaultdict(int)
    agreement: dict[str, int] = defaultdict(int)
    for domain in table:
        for sigma, residual in configs:
            for other in ("N", "N+clip"):
                paper = table[domain]
                pair = (paper[(sigma, residual, "TN")], paper[(sigma, residual, other)])
                paper_way = _direction(*pair)
                row = [domain, f"{sigma}/{residual}", f"TN vs {other}",
                       said(paper_way, other, f"{paper_number(pair[0][0])} vs {paper_number(pair[1][0])}")]
                ways = []
                for folder_values in values:
                    way, reading = _folder_direction(folder_values, (domain, sigma, residual, "TN"),
                                                     (domain, sigma, residual, other))
                    ways.append(way)
                    row.append(said(way, other, reading))
                if paper_way == "tie" or None in ways:
                    verdict = "the paper has none" if paper_way == "tie" else "not run in both" if two else "not run"
                elif not two:
                    verdict = ("holds" if ways[0] == paper_way else "not shown (within noise)" if ways[0] == "tie"
                               else "reversed")
                else:
                    held = [way == paper_way for way in ways]
                    verdict = ("holds in both" if all(held) else f"only in {names[0]}" if held[0]
                               else f"only in {names[1]}" if held[1] else "in neither")
                tally[verdict] += 1
                row.append(verdict)
                if two:
                    between = "" if None in ways else "agree" if ways[0] == ways[1] else "differ"
                    if between:
                        agreement[between] += 1
                    row.append(between)
                lines.append("| " + " | ".join(row) + " |")
    summary = ", ".join(f"{verdict} {count}" for verdict, count in sorted(tally.items()))
    compared = sum(agreement.values())
    folders = (f" The two folders agree in {agreement['agree']} of the {compared} comparisons both ran, differ in "
               f"{agreement['differ']}." if compared else "")
    return "\n".join(lines) + f"\n\nIn all: {summary}.{folders}\n"
