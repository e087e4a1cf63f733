"""Two results folders side by side (:func:`render_comparison`): the cells they share, each folder's mean ± std
over seeds, the better one in bold where the difference survives the seeds' noise, and the paired intervals of the
differences -- for a setting the paper's tables have no column for (an upper bound, another lower bound, another
sigma link)."""
from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Sequence

from tnlib.experiments.reporting.seed_statistics import (
    PAIRED_CONFIDENCE,
    PAIRED_MIN_SEEDS,
    paired_best,
    paired_interval,
    seed_difference,
)
from tnlib.experiments.reporting.table_cells import accuracy_cell, mean_and_std, paper_number, planning_cell
from tnlib.experiments.reporting.table_rows import (
    POOLED_OVER,
    check_one_setting,
    collect_planning,
    collect_results,
    known_run_config,
)
from tnlib.experiments.results_dir import ResultsDir
from tnlib.learning.split_planning import planned
from tnlib.paper import DOMAINS

def folder_names(first, second) -> tuple[str, str]:
    """Names that tell two results folders apart: the shortest trailing parts of their paths that differ
    (``paper-scale/runs`` and ``nlm5/runs``, not ``runs`` twice)."""
    parts = [Path(folder).resolve().parts for folder in (first, second)]
    for k in range(1, max(map(len, parts)) + 1):
        names = ["/".join(p[-k:]) for p in parts]
        if names[0] != names[1]:
            return names[0], names[1]
    return str(first), str(second)


def dataset_names(configs) -> list[str]:
    """The datasets runs trained and tested on, by their folder's name (``paper``, ``small``): a data root's path
    differs from machine to machine, its name does not."""
    return sorted({Path(c["data_root"]).name for c in configs if c.get("data_root")})


COMPARISON_BOLD_RULE = (f"Bold: the better of the two, where both folders' runs used the same data and the difference "
                        f"survives the seeds' noise: with at least {PAIRED_MIN_SEEDS} seeds in both, paired by seed "
                        f"(same seed: same data order and initial weights), the {PAIRED_CONFIDENCE:.0%} t-interval of "
                        "the per-seed differences excludes 0; with fewer seeds nothing is bold (too few for the "
                        "interval).")


def _better_side(by_seed: Sequence[dict], lower_is_better: bool = True) -> list[int]:
    """Which of two folders' cells ({seed: value} each) is better beyond noise, by the paired interval where at least
    PAIRED_MIN_SEEDS seeds pair up; [] where neither is, or too few seeds pair up to tell."""
    if not all(by_seed) or len(set(by_seed[0]) & set(by_seed[1])) < PAIRED_MIN_SEEDS:
        return []
    return sorted(paired_best(dict(enumerate(by_seed)), lower_is_better))


def _paired_between_folders(cells: Sequence[dict], keys, metrics: Sequence[str]) -> list[tuple[tuple, dict]]:
    """Per shared cell with enough seeds in both folders: {metric: paired interval of first minus second}."""
    rows = []
    for key in keys:
        by_metric = {}
        for metric in metrics:
            first, second = (side[key][metric] for side in cells)
            interval = paired_interval([seed_difference(first[s], second[s])
                                        for s in sorted(set(first) & set(second), key=str)
                                        if first[s] is not None and second[s] is not None])
            if interval is not None:
                by_metric[metric] = interval
        if by_metric:
            rows.append((key, by_metric))
    return rows


def _interval_text(interval: dict) -> str:
    text = f"{paper_number(interval['mean'])} [{paper_number(interval['low'])}, {paper_number(interval['high'])}]"
    if interval["high"] < 0:
        return text + " lower"
    return text + " higher" if interval["low"] > 0 else text


def _comparison_cells(folders) -> tuple[list[dict], list[dict], list[dict], dict[str, set[str]]]:
    """What :func:`render_comparison` compares, per folder: ``{(domain, model, configuration, distribution):
    {metric: {seed: value}}}``, the cells' run configurations, the problems each domain's runs all planned, and the
    problems both folders planned per domain (a domain one folder alone planned: all of its own)."""
    # planning compares on the instances every run of both folders planned (one folder may have planned a plan set
    # on more of its instances than the other): paired seeds, the same instances
    planned_by_folder = [_planned_problems(folder) for folder in folders]
    shared_problems = {}
    for domain in set(planned_by_folder[0]) | set(planned_by_folder[1]):
        sides = [side[domain] for side in planned_by_folder if domain in side]
        shared_problems[domain] = set.intersection(*sides)  # a domain one folder alone planned: all of its own
    # {(domain, model, configuration, distribution): {metric: {seed: value}}} per folder
    cells: list[dict] = [defaultdict(lambda: defaultdict(dict)) for _ in folders]
    configs: list[dict] = [defaultdict(list), defaultdict(list)]
    for side, folder in enumerate(folders):
        pooled = defaultdict(list)
        for r in collect_results(folder):
            config = r["config"]
            key = (config["domain"], config["model"], f"{config['sigma']}/{config['residual']}", config["distribution"])
            pooled[" ".join(key)].append(config)
            configs[side][key].append(config)
            cells[side][key]["mse"][config.get("seed")] = r["mse"]
            cells[side][key]["nll"][config.get("seed")] = r["nll"]
        for row in collect_planning(folder, problems=shared_problems):
            if row["column"] == row["config"]["distribution"]:  # the default estimate (N+clip has no cell here)
                key = (row["domain"], row["model"], f"{row['sigma']}/{row['residual']}", row["column"])
                cells[side][key]["coverage"][row["seed"]] = row["coverage"]
                cells[side][key]["evaluations"][row["seed"]] = row["evaluations"]
        check_one_setting(pooled, f"{folder}:")
    return cells, configs, planned_by_folder, shared_problems


def _comparison_notes(differ: list[str], names, labels: list[str], datasets: list[list[str]], planned_on: list[str],
                      planned_by_folder: list[dict], shared_problems: dict) -> list[str]:
    """What :func:`render_comparison` says under its tables: where the folders' data or planned instances differ,
    where planning compares on fewer instances than each planned, and what an upper bound changes."""
    same_data = datasets[0] == datasets[1]
    same_plans = same_data and planned_on[0] == planned_on[1]
    lines = []
    if not same_data:
        lines += ["", f"The two folders' runs trained and were tested on different datasets ({labels[0]} and "
                  f"{labels[1]}): their test splits differ, so magnitudes do not compare across the columns and "
                  "nothing is bold; the directions within each folder do."]
    if not same_plans:
        where = [f"`{name}` on " + ("data/" + "+".join(data) + "'s " if data else "")
                 + ("plan split" if split == "plan" else split)
                 for name, data, split in zip(names, datasets, planned_on)]
        lines += ["", f"Planning is left out: {where[0]}, {where[1]} -- not the same instances."]
    narrowed = [f"{domain} {len(shared_problems[domain])} (of {len(planned_by_folder[0][domain])} and "
                f"{len(planned_by_folder[1][domain])})"
                for domain in sorted(shared_problems, key=lambda d: DOMAINS.index(d) if d in DOMAINS else 9)
                if all(domain in side for side in planned_by_folder)
                and any(len(side[domain]) != len(shared_problems[domain]) for side in planned_by_folder)]
    if same_plans and narrowed:
        lines += ["", "Planning compares the instances both folders planned with every run: " + "; ".join(narrowed)
                  + " -- the other instances are in each folder's own planning.md."]
    if "upper_bound" in differ:
        lines += ["", "Test MSE and NLL of runs trained with an upper bound use it on the test states too (their "
                  "truncated mean lies between l and u = h_sat, a satisficing plan's cost a planner does not have); "
                  "GBFS plans with the lower bound only, so coverage and evaluations compare on equal terms."]
    return lines


def render_comparison(results_dir, other_dir, names: tuple[str, str] | None = None) -> str:
    """The cells two results folders share, side by side, as Markdown: for a setting the paper's tables have no
    column for (training with the upper bound h_sat against without, another lower bound, ...).

    A cell is (domain, model, configuration, distribution); each folder's runs of it must share one setting, the
    seed aside (:func:`check_one_setting`). The columns are named by the settings in which the two folders' runs
    differ (e.g. ``upper_bound h_sat`` and ``upper_bound none``). Per cell: test MSE and NLL of the point estimate
    and plan coverage and average evaluations (an unsolved instance counting as the limit), mean ± std over seeds
    (:func:`accuracy_cell`); the better of the two in bold where the difference survives the seeds' noise
    (:data:`COMPARISON_BOLD_RULE`), and under the table the paired intervals of the differences. Where the folders'
    runs used different datasets, their test splits differ: the columns are named by the dataset and nothing is
    bold; where they planned on different instances (another dataset, or a plan set against the plan split),
    planning is left out, and where one planned more of the same instances than the other, planning compares on
    those every run of both planned (said under the table). ``names``: the folders' names where no setting tells them apart (default
    :func:`folder_names`). A ValueError when the folders share no cell."""
    folders = (results_dir, other_dir)
    cells, configs, planned_by_folder, shared_problems = _comparison_cells(folders)
    shared = sorted(set(cells[0]) & set(cells[1]), key=lambda k: (DOMAINS.index(k[0]) if k[0] in DOMAINS else 9, k))
    if not shared:
        raise ValueError(f"{results_dir} and {other_dir} share no (domain, model, configuration, distribution) cell")
    # the settings that tell the folders apart, among the runs of the cells both hold tested runs of (a cell one
    # folder only planned has no tested run there, and would make its domain look like such a setting)
    tested_in_both = [key for key in shared if configs[0].get(key) and configs[1].get(key)]
    shared_configs = [[c for key in tested_in_both for c in side[key]] for side in configs]
    fields = sorted({k for side in shared_configs for c in side for k in c} - POOLED_OVER)
    differ = [k for k in fields if {json.dumps(c.get(k), sort_keys=True) for c in shared_configs[0]}
              != {json.dumps(c.get(k), sort_keys=True) for c in shared_configs[1]}]
    names = names or folder_names(results_dir, other_dir)
    datasets = [dataset_names(side) for side in shared_configs]
    same_data = datasets[0] == datasets[1]
    planned_on = [ResultsDir(folder).planned_on() for folder in folders]
    same_plans = same_data and planned_on[0] == planned_on[1]
    labels = [", ".join(([] if same_data else ["data/" + "+".join(data)])
                        + [f"{k} " + "/".join(sorted({str(c.get(k)) for c in side})) for k in differ]) or name
              for side, data, name in zip(shared_configs, datasets, names)]
    metrics = (("mse", "test MSE", min), ("nll", "test NLL", min))
    if same_plans and any(side[key]["coverage"] for side in cells for key in shared):  # (neither planned: no columns)
        metrics += (("coverage", "plan coverage", max), ("evaluations", "average evaluations", min))
    lines = ["| domain | model | configuration | distribution | "
             + " | ".join(f"{title}: {label}" for _, title, _ in metrics for label in labels) + " |",
             "|" + "---|" * (4 + 2 * len(metrics))]
    for key in shared:
        row = list(key)
        for metric, _, better in metrics:
            by_seed = [side[key][metric] for side in cells]
            stats = [mean_and_std(list(values.values())) for values in by_seed]
            texts = [accuracy_cell(s) if metric in ("mse", "nll") else planning_cell(s, metric) for s in stats]
            if same_data:
                for side in _better_side(by_seed, lower_is_better=better is min):
                    texts[side] = f"**{texts[side]}**"
            row += texts
        lines.append("| " + " | ".join(row) + " |")
    if same_data:
        lines += ["", COMPARISON_BOLD_RULE]
        differences = _paired_between_folders(cells, shared, [m for m, _, _ in metrics])
        if differences:
            lines += ["", f"Paired by seed, the first folder (`{names[0]}`) minus the second (`{names[1]}`): mean "
                      f"[{PAIRED_CONFIDENCE:.0%} t-interval], where a cell has at least {PAIRED_MIN_SEEDS} seeds in "
                      "both; `lower` / `higher` where the interval excludes 0.", "",
                      "| domain | model | configuration | distribution | "
                      + " | ".join(title for _, title, _ in metrics) + " |", "|" + "---|" * (4 + len(metrics))]
            for key, by_metric in differences:
                lines.append("| " + " | ".join(list(key) + [_interval_text(by_metric[m]) if m in by_metric else ""
                                                            for m, _, _ in metrics]) + " |")
    lines += _comparison_notes(differ, names, labels, datasets, planned_on, planned_by_folder, shared_problems)
    return "\n".join(lines) + "\n"


def _planned_problems(results_dir) -> dict[str, set[str]]:
    """``{domain: problem file names}`` that every run of the folder planned, on the split or plan set its sweep
    plans on (a run still planning narrows its domain to what it has planned)."""
    results, sweeps = ResultsDir(results_dir), {}
    by_domain: dict[str, set[str]] = {}
    for path in results.planning_files(results.planned_on()):
        domain, names = known_run_config(path.parent, sweeps, "planning records")["domain"], set(planned(path))
        by_domain[domain] = by_domain[domain] & names if domain in by_domain else names
    return by_domain
