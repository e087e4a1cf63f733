"""The paper's tables from a results folder: Table 1 (test accuracy) and Table 2 (planning).

:func:`collect_results` reads every ``metrics-<split>.json`` under a results folder (written by
:func:`tnlib.learning.evaluation.evaluate_run`) and :func:`render_table` lays them out as the paper's Table 1: per
domain an ``MSE`` row and a ``+clip`` row, the h_FF and LM-cut columns, then N and TN for each (sigma, residual)
configuration, each cell the mean +- std over seeds, the best of N, N+clip and TN of a configuration in bold where
it beats the others seed by seed beyond noise (:func:`tnlib.experiments.reporting.seed_statistics.paired_best`; nothing bold
with fewer seeds than that needs). The paper's own tables keep its rule: bold when the gap to the next value
exceeds :data:`tnlib.paper.TABLE1_BOLD_GAP`.

:func:`collect_planning` reads every ``planning-<estimate>.jsonl`` (written by
:func:`tnlib.learning.split_planning.plan_split`) and :func:`render_table2` lays them out as the paper's Table 2:
coverage and average evaluations, an unsolved instance counting as the evaluation limit, beside the h_FF baseline.
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
from collections import defaultdict
from pathlib import Path
from typing import Sequence

import numpy as np

from tnlib.experiments.results_dir import ResultsDir
from tnlib.learning.heads import ESTIMATE_COLUMNS, POINT_ESTIMATES, HeadConfig, estimate_column, point_estimates
from tnlib.learning.run_files import RunDir
from tnlib.experiments.reporting.seed_statistics import (
    FEW_SEEDS_BOLD_RULE,
    PAIRED_BOLD_RULE,
    PAIRED_CONFIDENCE,
    PAIRED_MIN_SEEDS,
    paired_best,
    paired_interval,
    seed_count,
)
from tnlib.files import read_json, shown_path
from tnlib.learning.split_planning import planned, planning_summary
from tnlib.planning.search_settings import PAPER
from tnlib.paper import (
    DOMAINS,
    FF_COVERAGE,
    FF_EVALUATIONS,
    PAPER_CONFIGS,
    PAPER_TABLE1,
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
# A cell of one run has no spread across seeds: it says so instead of showing ±0.
ONE_SEED = "(1 seed)"


def collect_results(results_dir: str | os.PathLike, split: str = "test", checkpoint: str = RunDir.BEST) -> list[dict]:
    """Every metrics file of ``split`` and ``checkpoint`` (see :func:`tnlib.learning.evaluation.evaluate_run`) under
    ``results_dir``, recursively, sorted by path; each with its run's training configuration under ``"config"``."""
    sweeps: dict = {}
    return [{**read_json(p, _metrics_remedy(p, split, checkpoint), shape="a run's test metrics"),
             "config": _run_config(p.parent, sweeps)} for p in ResultsDir(results_dir).metrics_files(split, checkpoint)]


def _metrics_remedy(path: Path, split: str, checkpoint: str) -> str:
    """What to do about a damaged metrics file: test the run again, which writes it anew."""
    flags = ("" if split == "test" else f" --split {split}") + (
        "" if checkpoint == RunDir.BEST else f" --checkpoint {checkpoint}")
    return f"write it again with `tnlib evaluate {shown_path(path.parent)}{flags}`"


def _run_config(folder, sweeps: dict) -> dict:
    """A run's training configuration as the tables pool it: ``steps`` of a run its sweep trained until flat
    (``sweep.json``'s ``max_steps`` in the results folder, the run's steps on that sweep's grid of chunks) is the
    rule it trained by, not the steps it reached, so such runs pool across seeds that stopped at different steps.
    ``sweeps`` caches each results folder's sweep.json for the caller's pass over its runs."""
    from tnlib.learning.until_flat import until_flat_end

    run = RunDir(folder)
    if not run.config_file.is_file():
        return {}
    config = run.read_config()
    results = ResultsDir(Path(folder).parent)
    if results.path not in sweeps:
        sweeps[results.path] = read_json(results.sweep_file) if results.sweep_file.is_file() else {}
    sweep = sweeps[results.path]
    first, cap, chunk = sweep.get("steps"), sweep.get("max_steps"), sweep.get("extend_steps")
    steps = config.get("steps")
    if all(isinstance(v, int) and v > 0 for v in (first, cap, chunk, steps)) and first <= steps <= cap and (
            until_flat_end(steps, first, cap, chunk) == steps):
        config["steps"] = f"until flat: {first:,}-{cap:,}, by {chunk:,}"
    return config


# A run folder written before a head setting existed holds that setting's default: compared as such.
_HEAD_DEFAULTS = {f.name: f.default for f in dataclasses.fields(HeadConfig)}

# A table cell pools runs that differ in these settings only: the seed, and where and how a run was executed.
POOLED_OVER = frozenset({"seed", "out_dir", "run_name", "device", "progress", "data_root", "eval_batch_size",
                         "checkpoint_every"})


def check_one_setting(cells: dict, what: str) -> None:
    """Refuse to average runs that differ in more than the seed (:data:`POOLED_OVER`): ``cells`` maps a cell's
    label to the training configurations of the runs it would pool. A ValueError names the cell and the fields
    (e.g. a ``sigma_link="bounded"`` sweep written into the same results folder as a softplus one)."""
    for label, configs in cells.items():
        fields = sorted({k for c in configs for k in c} - POOLED_OVER)
        differing = {k: sorted({json.dumps(c.get(k, _HEAD_DEFAULTS.get(k)), sort_keys=True) for c in configs})
                     for k in fields}
        differing = {k: v for k, v in differing.items() if len(v) > 1}
        if differing:
            detail = "; ".join(f"{k}: {', '.join(v)}" for k, v in differing.items())
            hint = "render them from separate results folders (e.g. `tnlib sweep --out`)"
            if set(differing) == {"steps"} and all(v.isdigit() for v in differing["steps"]):
                # no sweep rule applied to any of them: often run folders copied without their sweep.json
                hint = ("if a sweep trained them until flat, the results folder holds no sweep.json that says so "
                        "(run folders copied without it, say): run the same `tnlib sweep` over the folder, which "
                        "writes it and keeps every finished run; else " + hint)
            raise ValueError(f"{what} cell {label} would average runs that differ in more than the seed ({detail}): "
                             f"{hint}")


# ---------------------------------------------------------------------------------------------------------------
# Table 1


def _stats(values: list[float]) -> tuple[float, float | None] | None:
    """Mean and sample std (ddof=1; None for one seed: no spread to show) of the values that are not None, or
    None."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    array = np.asarray(values, dtype=np.float64)
    return float(array.mean()), float(array.std(ddof=1)) if len(array) > 1 else None


def _paper_number(x: float) -> str:
    """Like the paper: two decimals under 100, fewer above, no leading zero (.76)."""
    if not math.isfinite(x):
        return str(x)
    text = f"{x:.2f}" if abs(x) < 100 else f"{x:.1f}" if abs(x) < 1e4 else f"{x:.3g}"
    return text.replace("0.", ".", 1) if text.startswith(("0.", "-0.")) and "e" not in text else text


def _cell(stats: tuple[float, float] | None) -> str:
    if stats is None:
        return ""
    mean, std = stats
    if std is None:
        return f"{_paper_number(mean)} {ONE_SEED}"
    std_text = f"{std:.1f}" if abs(std) < 1e4 else f"{std:.2g}"
    if std_text.startswith("0."):
        std_text = std_text[1:]
    return f"{_paper_number(mean)}±{std_text}"


def _estimate_values(run: dict, metric: str) -> list[tuple[str, float]]:
    """``(column, value)`` of a run's test ``metric`` per point estimate of its head
    (:func:`tnlib.learning.heads.point_estimates`): the MSE of each (``mse``, ``mse_clip``), the NLL of the
    distribution alone."""
    estimates = point_estimates(run["distribution"]) if metric == "mse" else POINT_ESTIMATES[:1]
    return [(estimate_column(run["distribution"], estimate),
             run[metric if estimate == POINT_ESTIMATES[0] else f"{metric}_{estimate}"]) for estimate in estimates]


def table1_cells(results: Sequence[dict], model: str = "nlm", lower_bound: str = "lmcut",
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
        row = {"ff": _stats(cells["ff"]), "lmcut": _stats(cells["lmcut"])}
        for sigma, residual in configs:
            for column in ESTIMATE_COLUMNS:
                row[(sigma, residual, column)] = _stats(cells.get((sigma, residual, column), []))
        table[domain] = row
    return table


def table1_seed_values(results: Sequence[dict], model: str = "nlm", lower_bound: str = "lmcut",
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


def table1_bold_rule(results: str | os.PathLike | Sequence[dict], model: str = "nlm",
                     lower_bound: str = "lmcut") -> str:
    """The rule :func:`render_table` bolds these results by: :data:`PAIRED_BOLD_RULE` where every cell has the
    seeds for paired intervals, else :data:`FEW_SEEDS_BOLD_RULE` (nothing bold, and why)."""
    if isinstance(results, (str, os.PathLike)):
        results = collect_results(results)
    paired = uses_paired_bold(table1_seed_values(results, model, lower_bound))
    return PAIRED_BOLD_RULE if paired else FEW_SEEDS_BOLD_RULE


def table2_bold_rule(results: str | os.PathLike | Sequence[dict], model: str = "nlm",
                     lower_bound: str = "lmcut") -> str:
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


def render_table(results: str | os.PathLike | Sequence[dict], model: str = "nlm", lower_bound: str = "lmcut",
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
        text = _cell(stats)
        if latex:
            text = text.replace("±", r"$\pm$")
        if bold and text:
            return rf"\textbf{{{text}}}" if latex else f"**{text}**"
        return text

    def baseline(stats) -> str:
        return "" if stats is None else _paper_number(stats[0])

    header = [row_name, "metric", "h_FF", "LM-cut"] + [f"{s}/{r} {d}" for s, r in configs for d in ("N", "TN")]
    lines = []
    for domain, row in cells.items():
        bold = _paired_bold_keys(per_seed, domain, configs) if paired else set()
        first = [domain, metric.upper(), baseline(row["ff"]) if metric == "mse" else "",
                 baseline(row["lmcut"]) if metric == "mse" else ""]
        for sigma, residual in configs:
            for d in ("N", "TN"):
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
    header = ["domain", "metric", "h_FF", "LM-cut"] + [f"{s}/{r} {d}" for s, r in configs for d in ("N", "TN")]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for domain, row in PAPER_TABLE1_NLM.items():
        bold = paper_bold_keys(row, configs)

        def show(key):
            text = _cell(row[key])
            return f"**{text}**" if key in bold else text

        lines.append("| " + " | ".join([domain, "MSE", _paper_number(row["ff"]), _paper_number(row["lmcut"])]
                                       + [show((s, r, d)) for s, r in configs for d in ("N", "TN")]) + " |")
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


def collect_planning(results_dir, split: str | None = None, problems: dict[str, set[str]] | None = None) -> list[dict]:
    """One row per (run, estimate): the run's configuration and its summary on ``split`` (the plan split or a plan
    set; None: the one the folder's sweep plans on, :meth:`ResultsDir.planned_on`). With ``problems`` (``{domain:
    problem file names}``, e.g. the paper's selection by optimal solves) a row summarizes only those instances."""
    rows, sweeps = [], {}
    results = ResultsDir(results_dir)
    for path in results.planning_files(results.planned_on() if split is None else split):
        config = _run_config(path.parent, sweeps)
        estimate = RunDir.estimate_of(path)
        column = estimate_column(config["distribution"], estimate)
        records = _kept(planned(path).values(), problems, config["domain"])
        if not records and problems is not None:  # none of its instances kept: no row, rather than an empty one
            continue
        rows.append({**{k: config[k] for k in ("domain", "model", "sigma", "residual", "lower_bound", "seed")},
                     "column": column, "protocols": sorted({r["protocol"] for r in records}),
                     "config": config, **planning_summary(records)})
    return rows


def optimal_selection(results_dir, split: str, seconds: float) -> dict[str, dict]:
    """The paper's selection of plan instances (those an optimal planner solves within a time limit) as the
    records of the plan set ``split`` can apply it at ``seconds``, per domain of the folder's runs: ``{domain:
    {"problems": problem file names kept, "undecided": how many no recorded solve decides, "instances": the set's
    size}}``. Undecided instances are left out with the unsolved ones (the tables say how many)."""
    from tnlib.data.plan_sets import load_plan_set

    roots: dict[str, str] = {}
    for run in ResultsDir(results_dir).runs():
        config = run.read_config()
        roots.setdefault(config["domain"], config.get("data_root"))
    selection = {}
    for domain, root in roots.items():
        plan_set = load_plan_set(root, domain, split)
        kept, undecided = plan_set.optimal_selection(seconds)
        selection[domain] = {"problems": {plan_set.problem_path(name).name for name in kept},
                             "undecided": len(undecided), "instances": len(plan_set)}
    return selection


def _kept(records, problems: dict[str, set[str]] | None, domain: str) -> list[dict]:
    """The records of the problems kept for ``domain`` (all of them without ``problems``)."""
    if problems is None:
        return list(records)
    kept = problems.get(domain, set())
    return [r for r in records if r["problem"] in kept]


def render_table2(results_dir, model: str = "nlm", lower_bound: str = "lmcut",
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
    baseline = {}
    protocols = {p for r in rows for p in r["protocols"]}
    for domain, path in ResultsDir(baseline_dir or results_dir).baseline_files("ff", split).items():
        records = _kept(planned(path).values(), problems, domain)
        if not records:
            continue
        protocols |= {r["protocol"] for r in records}
        baseline[domain] = planning_summary(records)
    # A run still planning, or whose record was cut short, has fewer instances than the most any run of its domain
    # has: its coverage and evaluations would read as final, so it is left out and named under the table. (h_FF's baseline is not the
    # reference: a folder may plan it on more instances than its runs.)
    planned_count = defaultdict(int)
    for r in rows:
        planned_count[r["domain"]] = max(planned_count[r["domain"]], r["instances"])
    unfinished = [r for r in rows if r["instances"] < planned_count[r["domain"]]]
    rows = [r for r in rows if r["instances"] >= planned_count[r["domain"]]]
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
                    stats[key] = _stats(values)
            bold = _paired_bold_keys(per_seed, domain, configs, better is min) if paired else set()
            for s, res in configs:
                for c in ESTIMATE_COLUMNS:
                    text = _planning_cell(stats.get((s, res, c)), metric)
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
                    text = _planning_cell(row[(s, res, c)], metric)
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
                    model: str = "nlm") -> tuple[str, str]:
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


# ---------------------------------------------------------------------------------------------------------------
# Two results folders side by side


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
            interval = paired_interval([first[s] - second[s] for s in sorted(set(first) & set(second), key=str)
                                        if first[s] is not None and second[s] is not None])
            if interval is not None:
                by_metric[metric] = interval
        if by_metric:
            rows.append((key, by_metric))
    return rows


def _interval_text(interval: dict) -> str:
    text = f"{_paper_number(interval['mean'])} [{_paper_number(interval['low'])}, {_paper_number(interval['high'])}]"
    if interval["high"] < 0:
        return text + " lower"
    return text + " higher" if interval["low"] > 0 else text


def render_comparison(results_dir, other_dir, names: tuple[str, str] | None = None) -> str:
    """The cells two results folders share, side by side, as Markdown: for a setting the paper's tables have no
    column for (training with the upper bound h_sat against without, another lower bound, ...).

    A cell is (domain, model, configuration, distribution); each folder's runs of it must share one setting, the
    seed aside (:func:`check_one_setting`). The columns are named by the settings in which the two folders' runs
    differ (e.g. ``upper_bound h_sat`` and ``upper_bound none``). Per cell: test MSE and NLL of the point estimate
    and plan coverage and average evaluations (an unsolved instance counting as the limit), mean ± std over seeds
    (:func:`_cell`); the better of the two in bold where the difference survives the seeds' noise
    (:data:`COMPARISON_BOLD_RULE`), and under the table the paired intervals of the differences. Where the folders'
    runs used different datasets, their test splits differ: the columns are named by the dataset and nothing is
    bold; where they planned on different instances (another dataset, or a plan set against the plan split),
    planning is left out, and where one planned more of the same instances than the other, planning compares on
    those every run of both planned (said under the table). ``names``: the folders' names where no setting tells them apart (default
    :func:`folder_names`). A ValueError when the folders share no cell."""
    folders = (results_dir, other_dir)
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
    shared = sorted(set(cells[0]) & set(cells[1]), key=lambda k: (DOMAINS.index(k[0]) if k[0] in DOMAINS else 9, k))
    if not shared:
        raise ValueError(f"{results_dir} and {other_dir} share no (domain, model, configuration, distribution) cell")
    # the settings that tell the folders apart, among the runs of the cells they share
    shared_configs = [[c for key in shared for c in side[key]] for side in configs]
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
            stats = [_stats(list(values.values())) for values in by_seed]
            texts = [_cell(s) if metric in ("mse", "nll") else _planning_cell(s, metric) for s in stats]
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
    return "\n".join(lines) + "\n"


def _planned_problems(results_dir) -> dict[str, set[str]]:
    """``{domain: problem file names}`` that every run of the folder planned, on the split or plan set its sweep
    plans on (a run still planning narrows its domain to what it has planned)."""
    results, sweeps = ResultsDir(results_dir), {}
    by_domain: dict[str, set[str]] = {}
    for path in results.planning_files(results.planned_on()):
        domain, names = _run_config(path.parent, sweeps)["domain"], set(planned(path))
        by_domain[domain] = by_domain[domain] & names if domain in by_domain else names
    return by_domain


def _planning_cell(stats: tuple[float, float | None] | None, metric: str) -> str:
    """A coverage (two decimals) or evaluations (whole numbers) cell as Table 2 writes it."""
    if stats is None:
        return ""
    digits = 2 if metric == "coverage" else 0
    mean, std = stats
    return f"{mean:.{digits}f} {ONE_SEED}" if std is None else f"{mean:.{digits}f}±{std:.{digits}f}"


# ---------------------------------------------------------------------------------------------------------------
# The paper's directions (TN against N) in two results folders


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


DIRECTIONS_RULE = (f"a direction counts, in a folder whose cell has at least {PAIRED_MIN_SEEDS} seeds of both columns, "
                   f"where the {PAIRED_CONFIDENCE:.0%} t-interval of the per-seed differences (paired by seed) "
                   "excludes 0 -- the interval follows the means; with fewer seeds, and in the paper (mean ± std over "
                   "its 5 seeds), where the two means differ by more than their summed std")


def _folder_direction(values: dict, tn_key: tuple, other_key: tuple) -> tuple[str | None, str]:
    """TN against another column in one folder's cell ({key: {seed: value}}): the direction (as :func:`_direction`)
    and how it reads -- the two means, and the paired interval of TN minus the other where it decides."""
    tn, other = values.get(tn_key, {}), values.get(other_key, {})
    if not tn or not other:
        return None, ""
    means = f"{_paper_number(float(np.mean(list(tn.values()))))} vs {_paper_number(float(np.mean(list(other.values()))))}"
    interval = paired_interval([tn[s] - other[s] for s in sorted(set(tn) & set(other), key=str)
                                if tn[s] is not None and other[s] is not None])
    if interval is None:
        return _direction(_stats(list(tn.values())), _stats(list(other.values()))), means
    way = "TN" if interval["high"] < 0 else "other" if interval["low"] > 0 else "tie"
    return way, f"{means}; {_paper_number(interval['mean'])} [{_paper_number(interval['low'])}, {_paper_number(interval['high'])}]"


def render_directions(results_dir, other_dir, model: str = "nlm", names: tuple[str, str] = ("these runs", "other"),
                      configs: Sequence[tuple[str, str]] = PAPER_CONFIGS) -> str:
    """Where the paper's directions appear in two results folders (:func:`render_paper_directions` of both), and
    whether the folders agree with each other (what an ablation asks: does a setting change a conclusion)."""
    values = [table1_seed_values(collect_results(folder), model) for folder in (results_dir, other_dir)]
    return render_paper_directions(values, names, model, configs)


def render_paper_directions(values: Sequence[dict], names: Sequence[str], model: str = "nlm",
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
                       said(paper_way, other, f"{_paper_number(pair[0][0])} vs {_paper_number(pair[1][0])}")]
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
