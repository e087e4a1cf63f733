"""The paper's tables from a results folder: Table 1 (test accuracy) and Table 2 (planning).

:func:`tnlib.experiments.reporting.table_rows.collect_results` reads every ``metrics-<split>.json`` under a results
folder (written by :func:`tnlib.learning.evaluation.evaluate_run`) and :func:`render_table` lays them out as the
paper's Table 1: per domain an ``MSE`` row and a ``+clip`` row, the h_FF and LM-cut columns, then N and TN for each
(sigma, residual) configuration, each cell the mean +- std over seeds, the best of N, N+clip and TN of a
configuration in bold where it beats the others seed by seed beyond noise
(:func:`tnlib.experiments.reporting.seed_statistics.paired_best`; nothing bold with fewer seeds than that needs). The paper's own tables keep its rule: bold when the gap to the next value
exceeds :data:`tnlib.paper.TABLE1_BOLD_GAP`.

:func:`tnlib.experiments.reporting.table_rows.collect_planning` reads every ``planning-<estimate>.jsonl`` (written
by :func:`tnlib.learning.split_planning.plan_split`) and :func:`render_table2` lays them out as the paper's Table 2:
coverage and average evaluations, an unsolved instance counting as the evaluation limit, beside the h_FF baseline.

The appendix's ablations are laid out in the same two tables, one column group per (sigma, residual, lower bound).
"""
from __future__ import annotations

import os
from collections import defaultdict
from typing import Sequence

from tnlib.experiments.reporting.seed_statistics import (
    FEW_SEEDS_BOLD_RULE,
    PAIRED_BOLD_RULE,
    PAIRED_MIN_SEEDS,
    paired_best,
    seed_count,
)
from tnlib.experiments.reporting.table_cells import accuracy_cell, mean_and_std, paper_number, planning_cell
from tnlib.experiments.reporting.table_rows import (baseline_records, check_one_setting, collect_planning,
                                                   collect_results, split_unfinished)
from tnlib.experiments.results_dir import ResultsDir
from tnlib.learning.heads import ESTIMATE_COLUMNS, POINT_ESTIMATES, estimate_column, point_estimates
from tnlib.learning.run_files import RunDir
from tnlib.learning.split_planning import planning_summary
from tnlib.planning.search_settings import PAPER
from tnlib.paper import (
    DISTRIBUTIONS,
    DOMAINS,
    FF_COVERAGE,
    FF_EVALUATIONS,
    MAIN_LOWER_BOUND,
    MAIN_TABLES_MODEL,
    PAPER_CONFIGS,
    PAPER_TABLE1_NLM,
    PAPER_TABLE2_NLM,
    TABLE1_BOLD_GAP,
    TABLE1_CONFIGS,
)

# The paper's bold rules, which its own tables (render_paper_table1, render_paper_table2) follow: Table 1's has a
# gap, Table 2's none (as the paper's captions).
TABLE1_BOLD_RULE = (f"Bold: per configuration, the smallest of N, N+clip and TN when the next larger one is more than "
                    f"{TABLE1_BOLD_GAP:g} above it (compared at the two decimals shown; values tied with it are bold "
                    "too).")
TABLE2_BOLD_RULE = ("Bold: per configuration, the best of N, N+clip and TN (highest coverage; fewest evaluations), "
                    "ties all bold.")


# ---------------------------------------------------------------------------------------------------------------
# Table 1


def _estimate_values(run: dict, metric: str) -> list[tuple[str, float]]:
    """``(column, value)`` of a run's test ``metric`` per point estimate of its head
    (:func:`tnlib.learning.heads.point_estimates`): the MSE of each (``mse``, ``mse_clip``), the NLL of the
    distribution alone."""
    estimates = point_estimates(run["distribution"]) if metric == "mse" else POINT_ESTIMATES[:1]
    return [(estimate_column(run["distribution"], estimate),
             run[metric if estimate == POINT_ESTIMATES[0] else f"{metric}_{estimate}"]) for estimate in estimates]


def table1_cells(results: Sequence[dict], model: str = MAIN_TABLES_MODEL, lower_bound: str = MAIN_LOWER_BOUND,
                 configs: Sequence[tuple[str, str]] = TABLE1_CONFIGS, metric: str = "mse") -> dict:
    """The table's numbers: ``{domain: {"ff": x, "lmcut": x, (sigma, residual, column): (mean, std)}}``.

    ``column`` is ``N``, ``N+clip`` or ``TN``. ``metric`` is ``mse`` (with ``mse_clip`` for N+clip) or ``nll``.
    A std is None where a cell has one seed.
    """
    groups: dict = defaultdict(lambda: defaultdict(list))
    pooled: dict = defaultdict(list)
    for r in results:
        if r["model"] != model or r["lower_bound"] != lower_bound:
            continue
        pooled[" ".join((r["domain"], model, r["distribution"], f"{r['sigma']}/{r['residual']}"))].append(
            r.get("config", {}))
        cell = groups[r["domain"]]
        cell["ff"].append(r.get("mse_ff"))
        cell["lmcut"].append(r.get("mse_lmcut"))
        for column, value in _estimate_values(r, metric):
            cell[(r["sigma"], r["residual"], column)].append(value)
    check_one_setting(pooled, "Table 1")
    table = {}
    for domain in sorted(groups, key=lambda d: DOMAINS.index(d) if d in DOMAINS else 99):
        cells = groups[domain]
        row = {"ff": mean_and_std(cells["ff"]), "lmcut": mean_and_std(cells["lmcut"])}
        for sigma, residual in configs:
            for column in ESTIMATE_COLUMNS:
                row[(sigma, residual, column)] = mean_and_std(cells.get((sigma, residual, column), []))
        table[domain] = row
    return table


def table1_seed_values(results: Sequence[dict], model: str = MAIN_TABLES_MODEL, lower_bound: str = MAIN_LOWER_BOUND,
                       metric: str = "mse") -> dict:
    """Table 1's values per seed: ``{(domain, sigma, residual, column): {seed: value}}`` (column N, N+clip with
    ``mse``, TN)."""
    values: dict = defaultdict(dict)
    for r in results:
        if r["model"] != model or r["lower_bound"] != lower_bound:
            continue
        for column, value in _estimate_values(r, metric):
            values[(r["domain"], r["sigma"], r["residual"], column)][r.get("seed")] = value
    return dict(values)


def uses_paired_bold(values: dict) -> bool:
    """Whether a table's bold can account for noise: every cell has at least PAIRED_MIN_SEEDS seeds."""
    return bool(values) and seed_count(values) >= PAIRED_MIN_SEEDS


def table1_bold_rule(results: str | os.PathLike | Sequence[dict], model: str = MAIN_TABLES_MODEL,
                     lower_bound: str = MAIN_LOWER_BOUND) -> str:
    """The rule :func:`render_table` bolds these results by: :data:`PAIRED_BOLD_RULE` where every cell has the
    seeds for paired intervals, else :data:`FEW_SEEDS_BOLD_RULE` (nothing bold, and why)."""
    if isinstance(results, (str, os.PathLike)):
        results = collect_results(results)
    paired = uses_paired_bold(table1_seed_values(results, model, lower_bound))
    return PAIRED_BOLD_RULE if paired else FEW_SEEDS_BOLD_RULE


def table2_bold_rule(results: str | os.PathLike | Sequence[dict], model: str = MAIN_TABLES_MODEL,
                     lower_bound: str = MAIN_LOWER_BOUND) -> str:
    """The rule :func:`render_table2` bolds these plans by (a results folder, or rows of :func:`collect_planning`):
    :data:`PAIRED_BOLD_RULE` where every cell has the seeds, else :data:`FEW_SEEDS_BOLD_RULE`."""
    rows = collect_planning(results) if isinstance(results, (str, os.PathLike)) else results
    mine = [r for r in rows if r["model"] == model and r["lower_bound"] == lower_bound]
    return PAIRED_BOLD_RULE if uses_paired_bold(table2_seed_values(mine, "coverage")) else FEW_SEEDS_BOLD_RULE


def _paired_bold_keys(values: dict, domain: str, configs, lower_is_better: bool = True) -> set:
    bold = set()
    for sigma, residual in configs:
        group = {c: values[(domain, sigma, residual, c)] for c in ESTIMATE_COLUMNS
                 if (domain, sigma, residual, c) in values}
        bold |= {(sigma, residual, c) for c in paired_best(group, lower_is_better)}
    return bold


def paper_bold_keys(row: dict, configs) -> set:
    """The paper's Table 1 rule, as its own table applies it: per configuration, the best (smallest mean) of N, N+clip and TN when the next distinct value is more than
    TABLE1_BOLD_GAP worse. Values tied with the best are all bold, as the paper does for N and N+clip (ferry, fixed/h_FF:
    both 2.98 in bold); comparisons use the displayed precision (two decimals) so a gap shown as .10 is not bold."""
    bold = set()
    for sigma, residual in configs:
        means = {(sigma, residual, c): round(row[(sigma, residual, c)][0], 2)
                 for c in ESTIMATE_COLUMNS if row[(sigma, residual, c)] is not None}
        if not means:
            continue
        best = min(means.values())
        others = [v for v in means.values() if v > best]
        if others and min(others) - best > TABLE1_BOLD_GAP + 1e-9:
            bold |= {k for k, v in means.items() if v == best}
    return bold


def render_table(results: str | os.PathLike | Sequence[dict], model: str = MAIN_TABLES_MODEL,
                 lower_bound: str = MAIN_LOWER_BOUND,
                 configs: Sequence[tuple[str, str]] = TABLE1_CONFIGS, fmt: str = "markdown",
                 metric: str = "mse", split: str = "test", checkpoint: str = RunDir.BEST,
                 row_name: str = "domain") -> str:
    """The paper's Table 1 layout from a results folder (or a list of metrics dicts), as Markdown or LaTeX.

    Rows: per domain ``MSE`` (h_FF, LM-cut, then N and TN per configuration) and ``+clip`` (N+clip under N).
    With ``metric="nll"`` the rows are the NLL (no +clip row, no baseline columns), as in the appendix's linear
    table (which evaluates the best-NLL checkpoints: ``checkpoint="best-nll.pt"``). Cells are mean±std over seeds
    (one seed: the mean and ``(1 seed)``); bold as :func:`table1_bold_rule` says: by
    :func:`tnlib.experiments.reporting.seed_statistics.paired_best` where every cell has the seeds, else nothing. Configurations without a value
    are left out (as Table 2 does). ``row_name`` heads the first column (rows whose ``domain`` is another label,
    such as a size: :mod:`tnlib.experiments.reporting.size_tables`).
    """
    if fmt not in ("markdown", "latex"):
        raise ValueError(f"unknown format {fmt!r} (markdown or latex)")
    if metric not in ("mse", "nll"):
        raise ValueError(f"unknown metric {metric!r} (mse or nll)")
    if isinstance(results, (str, os.PathLike)):
        results = collect_results(results, split, checkpoint)
    cells = table1_cells(results, model, lower_bound, configs, metric)
    per_seed = table1_seed_values(results, model, lower_bound, metric)
    paired = uses_paired_bold(per_seed)
    configs = _configs_with_values(configs, [{k[:2] for k, v in row.items() if isinstance(k, tuple) and v is not None}
                                             for row in cells.values()])
    latex = fmt == "latex"

    def show(stats, bold=False) -> str:
        text = accuracy_cell(stats)
        if latex:
            text = text.replace("±", r"$\pm$")
        if bold and text:
            return rf"\textbf{{{text}}}" if latex else f"**{text}**"
        return text

    def baseline(stats) -> str:
        return "" if stats is None else paper_number(stats[0])

    header = [row_name, "metric", "h_FF", "LM-cut"] + [f"{s}/{r} {d}" for s, r in configs for d in DISTRIBUTIONS]
    lines = []
    for domain, row in cells.items():
        bold = _paired_bold_keys(per_seed, domain, configs) if paired else set()
        first = [domain, metric.upper(), baseline(row["ff"]) if metric == "mse" else "",
                 baseline(row["lmcut"]) if metric == "mse" else ""]
        for sigma, residual in configs:
            for d in DISTRIBUTIONS:
                key = (sigma, residual, d)
                first.append(show(row[key], key in bold))
        lines.append(first)
        if metric == "mse":
            clip = ["", "+clip", "", ""]
            for sigma, residual in configs:
                key = (sigma, residual, "N+clip")
                clip += [show(row[key], key in bold), ""]
            lines.append(clip)
    if latex:
        out = [r"\begin{tabular}{ll" + "l" * 2 + "c" * (2 * len(configs)) + "}", r"\toprule",
               " & ".join(["", "", "", ""] + [rf"\multicolumn{{2}}{{c}}{{{s}/{r}}}" for s, r in configs]) + r" \\",
               " & ".join([row_name, "metric", r"$h^{FF}$", r"$h^{LM-cut}$"]
                          + [r"$\mathcal{N}$", r"$\mathcal{TN}$"] * len(configs)) + r" \\", r"\midrule"]
        out += [" & ".join(line) + r" \\" for line in lines]
        out += [r"\bottomrule", r"\end{tabular}"]
        return "\n".join(out) + "\n"
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(line) + " |" for line in lines]
    return "\n".join(out) + "\n"


def render_paper_table1(configs: Sequence[tuple[str, str]] = TABLE1_CONFIGS) -> str:
    """The paper's own Table 1 for NLM (:data:`tnlib.paper.PAPER_TABLE1_NLM`) in :func:`render_table`'s Markdown
    layout, for the configurations ``configs``, bold by the paper's rule: to set beside a results folder's table."""
    header = ["domain", "metric", "h_FF", "LM-cut"] + [f"{s}/{r} {d}" for s, r in configs for d in DISTRIBUTIONS]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for domain, row in PAPER_TABLE1_NLM.items():
        bold = paper_bold_keys(row, configs)

        def show(key):
            text = accuracy_cell(row[key])
            return f"**{text}**" if key in bold else text

        lines.append("| " + " | ".join([domain, "MSE", paper_number(row["ff"]), paper_number(row["lmcut"])]
                                       + [show((s, r, d)) for s, r in configs for d in DISTRIBUTIONS]) + " |")
        lines.append("| " + " | ".join(["", "+clip", "", ""]
                                       + [part for s, r in configs for part in (show((s, r, "N+clip")), "")]) + " |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------------------
# Table 2


def _configs_with_values(configs: Sequence[tuple[str, str]], ran: Sequence[set]) -> list[tuple[str, str]]:
    """The (sigma, residual) configurations some row has a value for (``ran``: per row, the configurations with a
    value); all of them when none has any, so an empty table keeps its layout."""
    found = set().union(*ran) if ran else set()
    return [c for c in configs if c in found] or list(configs)


def render_table2(results_dir, model: str = MAIN_TABLES_MODEL, lower_bound: str = MAIN_LOWER_BOUND,
                  configs: Sequence[tuple[str, str]] = PAPER_CONFIGS,
                  baseline_dir=None, split: str | None = None, problems: dict[str, set[str]] | None = None) -> str:
    """The paper's Table 2 as Markdown: coverage, then average evaluations, mean ± std over seeds (one seed: the
    mean and ``(1 seed)``), bold as :func:`table2_bold_rule` says (by the paired rule, or nothing). Configurations no run has are left out.
    ``results_dir``: a results folder, or rows of :func:`collect_planning` (then h_FF's column comes from
    ``baseline_dir``). ``split`` and ``problems`` choose the instances as :func:`collect_planning` does, for the
    h_FF column too."""
    if isinstance(results_dir, (str, os.PathLike)):
        split = ResultsDir(results_dir).planned_on() if split is None else split
        rows = collect_planning(results_dir, split, problems)
    else:
        rows, results_dir = list(results_dir), None
        if baseline_dir is None:
            raise ValueError("render_table2 of rows needs baseline_dir (the folder holding h_FF's planning files)")
        split = ResultsDir(baseline_dir).planned_on() if split is None else split
    rows = [r for r in rows if r["model"] == model and r["lower_bound"] == lower_bound]
    protocols = {p for r in rows for p in r["protocols"]}
    found = baseline_records(baseline_dir or results_dir, split, problems)
    protocols |= {r["protocol"] for records in found.values() for r in records}
    baseline = {domain: planning_summary(records) for domain, records in found.items()}
    # a run still planning is left out, and named under the table
    rows, unfinished, planned_count = split_unfinished(rows)
    groups: dict = defaultdict(list)
    for r in rows:
        groups[(r["domain"], r["sigma"], r["residual"], r["column"])].append(r)
    check_one_setting({f"{d} {model} {c} {s}/{res}": [r["config"] for r in g] for (d, s, res, c), g in groups.items()},
                      "Table 2")
    limits = ({r["max_evaluations"] for r in rows} | {b["max_evaluations"] for b in baseline.values()}) - {None}
    domains = sorted({r["domain"] for r in rows} | set(baseline),
                     key=lambda d: DOMAINS.index(d) if d in DOMAINS else 9)
    configs = _configs_with_values(configs, [{(r["sigma"], r["residual"]) for r in rows}])
    columns = [(s, res, c) for s, res in configs for c in ESTIMATE_COLUMNS]
    header = "| domain | FF | " + " | ".join(f"{s}/{res} {c}" for s, res, c in columns) + " |"
    lines = [f"GBFS counting protocol: {', '.join(sorted(protocols)) or 'none'}"
             + (" (mixed: rows are not comparable)" if len(protocols) > 1 else "")
             + (" -- the paper's planner: every generated successor counts, goal test at generation"
                if protocols == {PAPER} else "")
             + (f"; at most {', '.join(f'{n:,}' for n in sorted(limits))} evaluations"
                + (" (mixed: rows are not comparable)" if len(limits) > 1 else "") if limits else ""), ""]
    for metric, title, better in (("coverage", "Ratio of solved instances (higher is better)", max),
                                  ("evaluations", "Average node evaluations (lower is better)", min)):
        lines += [f"**{title}**", "", header, "|" + "---|" * (len(columns) + 2)]
        per_seed = table2_seed_values(rows, metric)
        paired = uses_paired_bold(per_seed)
        for domain in domains:
            cells, stats = [], {}
            for key in columns:
                values = [r[metric] for r in groups.get((domain, *key), [])]
                if values:
                    stats[key] = mean_and_std(values)
            bold = _paired_bold_keys(per_seed, domain, configs, better is min) if paired else set()
            for s, res in configs:
                for c in ESTIMATE_COLUMNS:
                    text = planning_cell(stats.get((s, res, c)), metric)
                    cells.append(f"**{text}**" if (s, res, c) in bold and text else text)
            ff = baseline.get(domain, {}).get(metric)
            ff_text = "" if ff is None else (f"{ff:.2f}" if metric == "coverage" else f"{ff:.0f}")
            lines.append(f"| {domain} | {ff_text} | " + " | ".join(cells) + " |")
        lines.append("")
    if unfinished:
        lines += ["Left out, fewer instances planned than another run of the domain (still planning, or its record "
                  "cut short: the header's damaged records name those): " + "; ".join(
            f"{r['domain']} {r['sigma']}/{r['residual']} {r['column']} seed {r['seed']} ({r['instances']} of "
            f"{planned_count[r['domain']]})" for r in unfinished) + ".", ""]
    return "\n".join(lines)


def table1_sections(results_dir, models: Sequence[str]) -> str:
    """Table 1 per model, as the experiments notebook shows it: the model's name in bold, :func:`render_table` and
    the rule its bold follows (:func:`table1_bold_rule`), from one reading of the folder's test metrics."""
    results = collect_results(results_dir)
    return "\n".join(f"**{model}**\n\n{render_table(results, model=model)}\n"
                     f"{table1_bold_rule(results, model=model)}\n" for model in models)


def table2_sections(results_dir, models: Sequence[str], configs: Sequence[tuple[str, str]] = PAPER_CONFIGS) -> str:
    """Table 2 per model, as the experiments notebook shows it: the model's name in bold, :func:`render_table2` over
    ``configs`` and the rule its bold follows (:func:`table2_bold_rule`, from one reading of the planning records)."""
    plans = collect_planning(results_dir)
    return "\n".join(f"**{model}**\n\n{render_table2(results_dir, model=model, configs=configs)}\n"
                     f"{table2_bold_rule(plans, model=model)}\n" for model in models)


def render_paper_table2(configs: Sequence[tuple[str, str]] = PAPER_CONFIGS) -> str:
    """The paper's own Table 2 for NLM (:data:`tnlib.paper.PAPER_TABLE2_NLM`, h_FF from FF_COVERAGE and
    FF_EVALUATIONS) in :func:`render_table2`'s layout, bold by its rule (the best of N, N+clip and TN)."""
    configs = [c for c in configs if c in PAPER_CONFIGS]
    columns = [(s, res, c) for s, res in configs for c in ESTIMATE_COLUMNS]
    header = "| domain | FF | " + " | ".join(f"{s}/{res} {c}" for s, res, c in columns) + " |"
    lines = []
    for metric, title, better, baseline in (
            ("coverage", "Ratio of solved instances (higher is better)", max, FF_COVERAGE),
            ("evaluations", "Average node evaluations (lower is better)", min, FF_EVALUATIONS)):
        lines += [f"**{title}**", "", header, "|" + "---|" * (len(columns) + 2)]
        for domain, row in PAPER_TABLE2_NLM[metric].items():
            cells = []
            for s, res in configs:
                best = better(row[(s, res, c)][0] for c in ESTIMATE_COLUMNS)
                for c in ESTIMATE_COLUMNS:
                    text = planning_cell(row[(s, res, c)], metric)
                    cells.append(f"**{text}**" if row[(s, res, c)][0] == best else text)
            ff = baseline[domain]
            ff_text = f"{ff:.2f}" if metric == "coverage" else f"{ff:.0f}"
            lines.append(f"| {domain} | {ff_text} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def table2_seed_values(rows: Sequence[dict], metric: str) -> dict:
    """Table 2's values per seed from :func:`collect_planning` rows (one model and bound):
    ``{(domain, sigma, residual, column): {seed: value}}``."""
    values: dict = defaultdict(dict)
    for r in rows:
        values[(r["domain"], r["sigma"], r["residual"], r["column"])][r.get("seed")] = r[metric]
    return dict(values)


# ---------------------------------------------------------------------------------------------------------------
# The appendix's ablations: column groups that differ in residual or lower bound, from one or more folders

ABLATION_ROWS = "ablation"  # the lower_bound of relabelled rows: tables select them by it


def ablation_labels(columns: Sequence[tuple[str, str, str]]) -> list[tuple[str, str]]:
    """The (sigma, residual) pairs under which the tables show an ablation's (sigma, residual, lower bound) column
    groups: ``("learn/ff", "l=hmax")``, so a column reads ``learn/ff/l=hmax TN``."""
    return [(f"{sigma}/{residual}", f"l={bound}") for sigma, residual, bound in columns]


def ablation_rows(rows: Sequence[dict], columns: Sequence[tuple[str, str, str]]) -> list[dict]:
    """The rows (of :func:`collect_results` or :func:`collect_planning`) that belong to one of ``columns``
    ((sigma, residual, lower bound) groups), relabelled by :func:`ablation_labels` so that Table 1's and Table 2's
    renderers, which group by (sigma, residual) under one lower bound, give each group its columns. Each row's
    ``config`` keeps what the run really was."""
    labels = dict(zip(columns, ablation_labels(columns)))
    out = []
    for r in rows:
        label = labels.get((r["sigma"], r["residual"], r["lower_bound"]))
        if label is not None:
            out.append({**r, "sigma": label[0], "residual": label[1], "lower_bound": ABLATION_ROWS})
    return out


def render_ablation(results_dirs: Sequence[str | os.PathLike], columns: Sequence[tuple[str, str, str]],
                    model: str = MAIN_TABLES_MODEL) -> tuple[str, str]:
    """An appendix ablation (``tnlib.paper.ABLATIONS``) from the runs of one or more results folders: the test
    accuracy in Table 1's layout and the planning results in Table 2's, one column group per (sigma, residual,
    lower bound) of ``columns``. h_FF's planning column comes from the first folder. A ValueError when no run
    matches, or when two runs of a cell differ in more than the seed."""
    results = [r for folder in results_dirs for r in collect_results(folder)]
    planning = [r for folder in results_dirs for r in collect_planning(folder)]
    accuracy_rows, planning_rows = ablation_rows(results, columns), ablation_rows(planning, columns)
    if not accuracy_rows and not planning_rows:
        wanted = ", ".join(f"{s}/{r} l={b}" for s, r, b in columns)
        raise ValueError(f"no {model} run of {wanted} in {', '.join(str(f) for f in results_dirs)}")
    labels = ablation_labels(columns)
    accuracy = render_table(accuracy_rows, model=model, lower_bound=ABLATION_ROWS, configs=labels)
    plans = render_table2(planning_rows, model=model, lower_bound=ABLATION_ROWS, configs=labels,
                          baseline_dir=results_dirs[0])
    return accuracy, plans
