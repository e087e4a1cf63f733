"""How good the plans GBFS finds are: each plan's cost over its instance's exact optimal cost h*, beside Table 2.

Every action of the four domains costs one, so a planning record's ``plan_length`` is its plan's cost, and
``plan_length / h*`` says how far above optimal it is (1 = optimal). h* is that of the instance's initial state:
the labelled plan split's h* column, or a plan set's exact solves (``tnlib data plan-set --exact``), through
:func:`tnlib.experiments.reporting.table_rows.optimal_costs`; an instance without one is left out.

A mean ratio over different instances would compare unlike things (a heuristic that solves only the easy
instances would look better than one that also solves the hard ones), so per domain and configuration
:func:`common_instances` keeps the instances every compared column solved: h_FF's where its records give plan
lengths, and N, N+clip and TN at every seed of the configuration. Every cell of the row, and every seed of a cell,
averages over those same instances, so the seeds pair as in the other tables
(:func:`tnlib.experiments.reporting.seed_statistics.paired_differences`).
"""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Sequence

import numpy as np

from tnlib.experiments.reporting.seed_statistics import paired_best
from tnlib.experiments.reporting.table_cells import mean_and_std, planning_cell
from tnlib.experiments.reporting.table_rows import plan_lengths, split_unfinished
from tnlib.experiments.reporting.tables import uses_paired_bold
from tnlib.learning.heads import ESTIMATE_COLUMNS
from tnlib.paper import DOMAINS

# The metric's name where its values per seed go (planning-seeds.csv's column, the paired table's key).
COST_OVER_H_STAR = "cost_over_h_star"
TITLE = "Plan cost over h\\* (lower is better, 1 = optimal)"
CAPTION = ("Each solved instance's plan length (every action costs one: its cost) over its h\\* (the initial state's "
           "exact optimal cost: the plan split's labels, or the plan set's `--exact` solves), averaged over the "
           "instances every compared column solved -- FF's where its records give plan lengths, and N, N+clip and "
           "TN at every seed of the configuration -- so that each cell, and each seed of a cell, is over the same "
           "instances: a ratio over different instance sets would compare unlike things. `instances`: how many "
           "that is, of the planned instances with an h\\* recorded (instances without one are left out).")


def common_instances(solved: Iterable[dict[str, int | None]], costs: dict[str, int | None]) -> list[str]:
    """The problems with an h* in ``costs`` that every plan-length map of ``solved`` (``{problem: plan length, or
    None}``) has a plan for, sorted."""
    kept = {problem for problem, cost in costs.items() if cost is not None}
    for lengths in solved:
        kept &= {problem for problem, length in lengths.items() if length is not None}
    return sorted(kept)


def mean_cost_ratio(lengths: dict[str, int | None], problems: Sequence[str], costs: dict[str, int | None]) -> float:
    """The mean of plan length / h* over ``problems`` (each with a plan in ``lengths`` and an h* in ``costs``)."""
    return float(np.mean([lengths[p] / costs[p] for p in problems]))


def plan_quality(rows: Sequence[dict], baseline: dict[str, Sequence[dict]],
                 costs: dict[str, dict[str, int | None]]) -> dict:
    """Per (domain, sigma, residual) of ``rows`` (:func:`tnlib.experiments.reporting.table_rows.collect_planning`'s,
    one model and lower bound; runs still planning left out): ``{"planned": instances the runs planned, "with_h_star":
    those with an h*, "common": :func:`common_instances`, "ff": h_FF's mean ratio over them (None where its records
    give no plan lengths), "seeds": {column: {seed: mean ratio}} (empty where no instance is common)}``.
    ``baseline``: h_FF's records per domain; ``costs``: h* per domain and problem file name."""
    rows, _, _ = split_unfinished(list(rows))
    groups: dict = defaultdict(list)
    for r in rows:
        groups[(r["domain"], r["sigma"], r["residual"])].append(r)
    quality = {}
    for (domain, sigma, residual), group in groups.items():
        ff = plan_lengths(baseline.get(domain, ()))
        ff_compared = any(length is not None for length in ff.values())
        compared = [r["plan_lengths"] for r in group] + ([ff] if ff_compared else [])
        planned = set().union(*(r["plan_lengths"] for r in group))
        domain_costs = costs.get(domain, {})
        with_h_star = {p: domain_costs.get(p) for p in planned if domain_costs.get(p) is not None}
        common = common_instances(compared, with_h_star)
        seeds: dict = defaultdict(dict)
        if common:
            for r in group:
                seeds[r["column"]][r["seed"]] = mean_cost_ratio(r["plan_lengths"], common, domain_costs)
        quality[(domain, sigma, residual)] = {
            "planned": len(planned), "with_h_star": len(with_h_star), "common": common,
            "ff": mean_cost_ratio(ff, common, domain_costs) if common and ff_compared else None,
            "seeds": dict(seeds)}
    return quality


def run_cost_ratios(rows: Sequence[dict], baseline: dict[str, Sequence[dict]],
                    costs: dict[str, dict[str, int | None]]) -> dict:
    """Each run's mean ratio, as :func:`plan_quality` computes it for the model and lower bound of its row:
    ``{(model, lower_bound, domain, sigma, residual, column, seed): value}`` (no entry where its configuration has no
    common instance, or where the run is still planning)."""
    ratios = {}
    for model, bound in sorted({(r["model"], r["lower_bound"]) for r in rows}):
        mine = [r for r in rows if r["model"] == model and r["lower_bound"] == bound]
        for key, value in quality_seed_values(plan_quality(mine, baseline, costs)).items():
            *group, column = key
            for seed, ratio in value.items():
                ratios[(model, bound, *group, column, seed)] = ratio
    return ratios


def quality_seed_values(quality: dict) -> dict:
    """:func:`plan_quality`'s per-seed ratios as the tables' values: ``{(domain, sigma, residual, column): {seed:
    value}}``, for :func:`tnlib.experiments.reporting.seed_statistics.paired_differences`."""
    return {(*group, column): by_seed for group, cell in quality.items() for column, by_seed in cell["seeds"].items()}


def render_plan_quality(quality: dict, configs: Sequence[tuple[str, str]]) -> str:
    """:func:`plan_quality` as Markdown: per domain and configuration of ``configs`` that has runs, the instances
    the means are over, then FF, N, N+clip and TN (mean ± std over seeds; one seed: the mean and ``(1 seed)``), the
    best of N, N+clip and TN bold by the paired rule where every cell has the seeds for it; "" without rows."""
    order = {c: i for i, c in enumerate(configs)}
    groups = sorted((g for g in quality if g[1:] in order),
                    key=lambda g: (DOMAINS.index(g[0]) if g[0] in DOMAINS else len(DOMAINS), g[0], order[g[1:]]))
    if not groups:
        return ""
    paired = uses_paired_bold(quality_seed_values(quality))
    lines = [f"**{TITLE}**", "", CAPTION, "", "| domain | configuration | instances | FF | "
             + " | ".join(ESTIMATE_COLUMNS) + " |", "|" + "---|" * (4 + len(ESTIMATE_COLUMNS))]
    for domain, sigma, residual in groups:
        cell = quality[(domain, sigma, residual)]
        bold = paired_best(cell["seeds"]) if paired else set()
        texts = []
        for column in ESTIMATE_COLUMNS:
            text = planning_cell(mean_and_std(list(cell["seeds"].get(column, {}).values())), COST_OVER_H_STAR)
            texts.append(f"**{text}**" if column in bold and text else text)
        instances = f"{len(cell['common'])} of {cell['with_h_star']}" + (
            f" ({cell['planned'] - cell['with_h_star']} planned without h\\*)"
            if cell["planned"] > cell["with_h_star"] else "")
        ff = "" if cell["ff"] is None else f"{cell['ff']:.2f}"
        lines.append(f"| {domain} | {sigma}/{residual} | {instances} | {ff} | " + " | ".join(texts) + " |")
    return "\n".join(lines) + "\n"
