"""A sweep's reports: ``accuracy.md`` (Table 1 layout), ``planning.md`` (Table 2) and the training curves (the
paper's Figure 2), and a table of the cells' summaries for the notebook."""
from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Sequence

from tnlib.experiments.reporting.calibration_summary import calibration_markdown, folder_calibration
from tnlib.experiments.reporting.figure_html import figure_html
from tnlib.experiments.reporting.report_figures import (paired_intervals_figures, seed_csv_intervals_figures,
                                              size_intervals_figure, training_curves_figure,
                                              validation_spread_figure)
from tnlib.experiments.results_dir import ResultsDir
from tnlib.experiments.reporting.report_gaps import unplanned_note, untested_note
from tnlib.experiments.scope import collect_scopes
from tnlib.experiments.scope_page import render_scope, scope_header
from tnlib.experiments.reporting.report_files import (ACCURACY_SEEDS, PLANNING_SEEDS, REPORT_PAIRING, REPORT_PAIRING_CSV,
                                                     REPORT_PAIRING_PAGE)
from tnlib.experiments.reporting.size_tables import SIZES_FIGURE, SIZES_PAGE, SIZES_SEEDS, write_size_report
from tnlib.experiments.reporting.convergence import write_convergence
from tnlib.experiments.reporting.folder_comparison import dataset_names, folder_names, render_comparison
from tnlib.experiments.reporting.paper_directions import DIRECTIONS_RULE, render_directions, render_paper_directions
from tnlib.experiments.reporting.plan_quality import (COST_OVER_H_STAR, plan_quality, quality_seed_values,
                                                     render_plan_quality, run_cost_ratios)
from tnlib.experiments.reporting.table_rows import (baseline_records, collect_planning, collect_results,
                                                   optimal_costs, optimal_selection)
from tnlib.experiments.reporting.tables import (
    TABLE1_BOLD_RULE,
    TABLE2_BOLD_RULE,
    render_ablation,
    render_paper_table1,
    render_paper_table2,
    render_table,
    render_table2,
    table1_bold_rule,
    table1_seed_values,
    table2_bold_rule,
    table2_seed_values,
)
from tnlib.learning.heads import POINT_ESTIMATES, estimate_column, point_estimates
from tnlib.learning.run_files import NO_RUNS_YET, RunDir
from tnlib.learning.training import TrainConfig, read_run_config
from tnlib.experiments.reporting.seed_statistics import (
    FEW_SEEDS_BOLD_RULE,
    PAIRED_BOLD_RULE,
    PAIRED_CONFIDENCE,
    PAIRED_MIN_SEEDS,
    interval_count,
    multiplicity_note,
    paired_differences,
    read_seed_csv,
    render_paired,
    write_seed_csv,
)
import tnlib.files
from tnlib.device import machine_kind
from tnlib.files import atomic_write_text, shown_folder
from tnlib.provenance import code_commit
from tnlib.paper import (
    ABLATIONS,
    BATCH_SIZE,
    DOMAINS,
    MAIN_LOWER_BOUND,
    MAIN_TABLES_MODEL,
    MODELS,
    PAPER_CONFIGS,
    PAPER_TABLE1,
    PLAN_INSTANCES,
    TABLE1_CONFIGS,
    TRAIN_STEPS,
)

# Styles of the HTML reports. REPORT_CSS goes into every one (the exported notebooks too, after the JupyterLab
# styles it overrides): words wrap at spaces only -- JupyterLab's output style breaks anywhere
# (word-break: break-all), cutting numbers and names in two -- and a table wider than its column scrolls
# sideways in its own box instead of running over the page. PAGE_CSS gives training_curves.html, which has no
# JupyterLab styles, the look of the exported notebooks.
REPORT_CSS = """
.jp-OutputArea-output pre, .jp-RenderedHTMLCommon pre, .jp-RenderedHTMLCommon td, .jp-RenderedHTMLCommon th,
pre, td, th {
  word-break: normal;
  overflow-wrap: normal;
}
.jp-RenderedHTMLCommon table, table {
  display: block;
  max-width: 100%;
  overflow-x: auto;
  table-layout: auto;
}
"""
PAGE_CSS = """
body {
  font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif;
  font-size: 14px;
  line-height: 1.5;
  color: rgba(0, 0, 0, 0.87);
  max-width: 1100px;
  margin: 0 auto;
  padding: 1em 2em;
}
h1, h2 { font-weight: 500; }
table { border-collapse: collapse; margin-bottom: 1em; }
th, td { padding: 0.4em 0.6em; vertical-align: middle; text-align: left; }
thead { border-bottom: 1px solid #bdbdbd; }
tbody tr:nth-child(odd) { background: #f5f5f5; }
code { font-family: Menlo, Consolas, "DejaVu Sans Mono", monospace; font-size: 90%; }
"""
# Where an HTML report in reports/ loads plotly.js from: the bundle the exported notebooks share.
PLOTLY_SRC = "notebooks/plotly.min.js"


def write_reports(results_dir, reports_dir, models: Sequence[str] = (MAIN_TABLES_MODEL,),
                  lower_bound: str = MAIN_LOWER_BOUND,
                  plotly_src: str = PLOTLY_SRC, selection_seconds: float | None = None,
                  paper_tables: bool = False) -> list[Path]:
    """Render a sweep's results: ``accuracy.md`` (Table 1 layout), ``planning.md`` (Table 2) and training curves,
    one section per model. All three open with the scope header (:mod:`tnlib.experiments.scope`): what the runs
    did against the paper's setting, computed from the run folders. Each file is written atomically.
    ``plotly_src``: where training_curves.html loads plotly.js from, relative to ``reports_dir``. Table 2 is over
    what the folder's sweep planned on (the plan split or a plan set); for a plan set, ``selection_seconds`` adds
    Table 2 again under the paper's selection (:func:`tnlib.experiments.reporting.table_rows.optimal_selection`). With
    ``paper_tables`` the paper's own NLM Tables 1 and 2 follow the NLM ones, in the same layout."""
    results_dir, reports_dir = Path(results_dir), Path(reports_dir)
    reports_dir.mkdir(parents=True, exist_ok=True)
    scope = scope_header(results_dir) + "\n" + rendered_by() + "\n"
    source = f"From `{shown_folder(results_dir)}/`, l = {lower_bound}."
    results = collect_results(results_dir)
    by_nll = collect_results(results_dir, checkpoint=RunDir.BEST_NLL)
    split = ResultsDir(results_dir).planned_on()
    plans = collect_planning(results_dir, split)
    costs = optimal_costs(results_dir, split) if plans else {}  # h* of each planned instance
    baseline = baseline_records(results_dir, split) if plans else {}  # h_FF's records per domain
    selection = None
    if selection_seconds is not None:
        if split == "plan":
            raise ValueError("the paper's selection applies to a plan set (a sweep with --plan-on plan-set); "
                             f"{results_dir} planned on the plan split")
        selection = optimal_selection(results_dir, split, selection_seconds)
    # one rule a page: the paired one only where every model's cells have the seeds for it
    paired_accuracy = all(table1_bold_rule(results, m, lower_bound) == PAIRED_BOLD_RULE for m in models)
    paired_planning = plans and all(table2_bold_rule(plans, m, lower_bound) == PAIRED_BOLD_RULE for m in models)
    accuracy = [f"# Test accuracy\n\n{scope}\n## Tables\n\n{source} Mean ± std over seeds of the test MSE of the "
                "point estimate (N: mu, TN: truncated mean); +clip: max(mu, l) for N; h_FF and LM-cut: the MSE of "
                f"those heuristics. {PAIRED_BOLD_RULE if paired_accuracy else FEW_SEEDS_BOLD_RULE} Per-seed values: "
                "accuracy-seeds.csv.\n"]
    where = "the plan split" if split == "plan" else f"the plan set `{split}`"
    planning = [f"# Planning with the learned heuristics\n\n{scope}\n## Tables\n\nGBFS on {where}. {source} "
                "An unsolved instance counts as the evaluation limit. "
                f"{PAIRED_BOLD_RULE if paired_planning else FEW_SEEDS_BOLD_RULE} Per-seed values: planning-seeds.csv.\n"]
    selected_tables = []
    html = ["<html><head><meta charset='utf-8'><title>Training curves</title>"
            f"<style>{PAGE_CSS}{REPORT_CSS}</style><script src='{plotly_src}'></script></head><body>",
            _markdown_html(scope)]
    configs_of = [read_run_config(run) for run in ResultsDir(results_dir).runs()]
    compared = {"accuracy": 0, "planning": 0}  # paired intervals each page's tables show
    for model in models:
        # Table 2 shows every configuration that was run (the paper's main table shows two, its appendix four)
        ran = {(c.head.sigma, c.head.residual) for c in configs_of if c.model == model}
        planned = [pair for pair in TABLE1_CONFIGS if pair in ran] or list(PAPER_CONFIGS)
        sections, count = _model_accuracy(results_dir, results, by_nll, model, lower_bound, ran, paper_tables)
        accuracy += sections
        compared["accuracy"] += count
        sections, count = _model_planning(results_dir, plans, model, lower_bound, planned, split, paper_tables,
                                          baseline, costs)
        planning += sections
        compared["planning"] += count
        if selection is not None:
            sections, count = _model_selected_planning(results_dir, selection, model, lower_bound, planned, split,
                                                       costs)
            selected_tables += sections
            compared["planning"] += count
        html += _model_curves(results_dir, configs_of, model, lower_bound)
    if selection is not None:
        kept = "; ".join(f"{domain} {len(v['problems'])} of {v['instances']} ({v['undecided']} undecided)"
                         for domain, v in selection.items())
        planning.append(f"## Under the paper's selection\n\nThe paper planned only instances an optimal planner "
                        f"solved (Fast Downward, 30 minutes). Here: the instances of `{split}` whose recorded "
                        f"optimal solve finished within {selection_seconds:g} s -- {kept}; instances no recorded "
                        "solve decides are left out with the unsolved ones. Only the instances the runs planned "
                        "count, h_FF's column too.\n")
        planning += selected_tables
    html.append("</body></html>")
    accuracy[0] = accuracy[0].rstrip("\n") + " " + multiplicity_note(compared["accuracy"]) + "\n"
    planning[0] = planning[0].rstrip("\n") + " " + multiplicity_note(compared["planning"]) + "\n"
    written = [reports_dir / "accuracy.md", reports_dir / "planning.md", reports_dir / "training_curves.html"]
    for path, text in zip(written, ("\n".join(accuracy), "\n".join(planning), "\n".join(html))):
        atomic_write_text(path, text)
    written.append(write_seed_csv(accuracy_seed_rows(results, by_nll), reports_dir / ACCURACY_SEEDS))
    ratios = run_cost_ratios(plans, baseline, costs)
    written.append(write_seed_csv(planning_seed_rows(plans, ratios), reports_dir / PLANNING_SEEDS))
    return written


def _model_accuracy(results_dir, results: list[dict], by_nll: list[dict], model: str, lower_bound: str,
                    ran: set, paper_tables: bool) -> tuple[list[str], int]:
    """accuracy.md's section of one model: Table 1 with its paired intervals, the paper's own table, the paper's
    directions and the NLL table; and how many paired intervals it shows."""
    sections = []
    mse_differences = paired_differences(table1_seed_values(results, model, lower_bound))
    compared = interval_count(mse_differences)
    untested = untested_note(results_dir, model)
    sections.append(f"### {model}\n\n" + (f"{untested}\n\n" if untested else "")
                    + render_table(results, model=model, lower_bound=lower_bound) + "\n"
                    + render_paired(mse_differences, "test MSE") + "\n")
    if paper_tables and model == MAIN_TABLES_MODEL:
        shown = [pair for pair in TABLE1_CONFIGS if pair in ran] or list(TABLE1_CONFIGS)
        sections.append(f"{PAPER_TABLES_NOTE} {TABLE1_BOLD_RULE}\n\n" + render_paper_table1(shown) + "\n")
    if model in PAPER_TABLE1 and lower_bound == "lmcut":
        sections.append(f"The paper's directions ({model}): test MSE of TN against N and N+clip as the paper's "
                        f"table has them and as these runs do -- {DIRECTIONS_RULE}; where they are reversed, "
                        "the kit and the paper disagree.\n\n"
                        + render_paper_directions([table1_seed_values(results, model, lower_bound)],
                                                  ["these runs"], model,
                                                  [pair for pair in TABLE1_CONFIGS if pair in ran]) + "\n")
    if any(r["model"] == model for r in by_nll):
        nll_differences = paired_differences(table1_seed_values(by_nll, model, lower_bound, "nll"),
                                             comparisons=(("TN", "N"),))
        compared += interval_count(nll_differences)
        sections.append(f"Test NLL at the best-NLL checkpoint (the appendix's NLL rows), {model}:\n\n"
                        + render_table(by_nll, model=model, lower_bound=lower_bound, metric="nll") + "\n"
                        + render_paired(nll_differences, "test NLL") + "\n")
    return sections, compared


def _model_planning(results_dir, plans: list[dict], model: str, lower_bound: str, planned: list,
                    split: str, paper_tables: bool, baseline: dict, costs: dict) -> tuple[list[str], int]:
    """planning.md's section of one model: Table 2 (or why there is none), the paper's own table, the paired
    intervals of coverage and evaluations, and the plans' cost over h* (``baseline``: h_FF's records per domain,
    ``costs``: h* per domain and problem) with its paired intervals; and how many paired intervals it shows."""
    if not any(r["model"] == model for r in plans):  # a sweep run with --no-plan: no Table 2 to show
        sections = [f"### {model}\n\n{unplanned_note(results_dir, model)}\n"]
    else:
        sections = [f"### {model}\n\n" + render_table2(plans, model=model, lower_bound=lower_bound,
                                                        configs=planned, baseline_dir=results_dir, split=split)]
    if paper_tables and model == MAIN_TABLES_MODEL:
        sections.append(f"{PAPER_TABLES_NOTE} {TABLE2_BOLD_RULE} Planned on its {PLAN_INSTANCES} plan instances per "
                        "domain.\n\n" + render_paper_table2(planned) + "\n")
    mine = [r for r in plans if r["model"] == model and r["lower_bound"] == lower_bound]
    return _with_paired_planning(sections, mine, baseline, costs, planned)


def _model_selected_planning(results_dir, selection: dict, model: str, lower_bound: str, planned: list,
                             split: str, costs: dict) -> tuple[list[str], int]:
    """Table 2 of one model again under the paper's selection of plan instances, with its paired intervals and the
    plans' cost over h*; and how many paired intervals it shows."""
    problems = {domain: kept["problems"] for domain, kept in selection.items()}
    chosen = [r for r in collect_planning(results_dir, split, problems)
              if r["model"] == model and r["lower_bound"] == lower_bound]
    sections = [f"### {model}\n\n" + render_table2(
        chosen, model=model, lower_bound=lower_bound, configs=planned, baseline_dir=results_dir, split=split,
        problems=problems)]
    return _with_paired_planning(sections, chosen, baseline_records(results_dir, split, problems), costs, planned)


def _with_paired_planning(sections: list[str], rows: list[dict], baseline: dict, costs: dict,
                          configs: list) -> tuple[list[str], int]:
    """``sections`` followed by the paired intervals of coverage and evaluations of ``rows``, then the plans' cost
    over h* (:mod:`tnlib.experiments.reporting.plan_quality`; ``baseline``: h_FF's records per domain, ``costs``:
    h* per domain and problem) with its paired intervals; and how many paired intervals they show."""
    compared = 0
    for metric, lower in (("coverage", False), ("evaluations", True)):
        differences = paired_differences(table2_seed_values(rows, metric))
        compared += interval_count(differences)
        sections.append(render_paired(differences, metric, lower) + "\n")
    quality = plan_quality(rows, baseline, costs)
    table = render_plan_quality(quality, configs)
    if table:
        differences = paired_differences(quality_seed_values(quality))
        compared += interval_count(differences)
        paired = render_paired(differences, "plan cost over h\\*", True)
        sections += [table] + ([paired] if paired else [])
    return sections, compared


def _model_curves(results_dir, configs_of: list[TrainConfig], model: str, lower_bound: str) -> list[str]:
    """training_curves.html's section of one model: a figure per domain and configuration."""
    html = [f"<h1>Training curves ({model})</h1>"]
    for domain, sigma, residual in sorted({(c.domain, c.head.sigma, c.head.residual) for c in configs_of
                                           if c.model == model}):
        figure = training_curves_figure(results_dir, domain, model, sigma, residual, lower_bound)
        html.append(figure_html(figure, f"curves-{model}-{domain}-{sigma}-{residual}"))
    return html


# Above the paper's own tables, where a report sets them beside its own.
PAPER_TABLES_NOTE = (f"The paper's (its NLM: 5 seeds, its training data at batch {BATCH_SIZE} -- {TRAIN_STEPS:,} steps in "
                     "its appendix, "
                     "10^4 in this table's caption --, its own test sets), bold by its own rule, not the paired one.")

SETTING_COLUMNS = ("domain", "model", "sigma", "residual", "lower_bound")


def accuracy_seed_rows(results: Sequence[dict], by_nll: Sequence[dict] = ()) -> list[dict]:
    """One row per run and column (N, N+clip, TN) of Table 1: the seed, the steps trained, the test MSE of the
    best-MSE checkpoint, and the test NLL of the best-MSE and best-NLL checkpoints (N+clip has no NLL)."""
    nll_at_best_nll = {(*(r[k] for k in SETTING_COLUMNS), r["distribution"], r["seed"]): r["nll"] for r in by_nll}
    rows = []
    for r in sorted(results, key=lambda r: (*(str(r[k]) for k in SETTING_COLUMNS), r["distribution"], r["seed"])):
        setting = {k: r[k] for k in SETTING_COLUMNS}
        steps = r.get("config", {}).get("steps")
        for estimate in point_estimates(r["distribution"]):
            distribution_itself = estimate == POINT_ESTIMATES[0]  # the NLL is the distribution's, not an estimate's
            key = (*setting.values(), r["distribution"], r["seed"])
            rows.append({**setting, "column": estimate_column(r["distribution"], estimate), "seed": r["seed"],
                         "steps": steps, "checkpoint_step": r.get("checkpoint_step"),
                         "mse": repr(r.get("mse" if distribution_itself else f"mse_{estimate}")),
                         "nll": repr(r["nll"]) if distribution_itself else "",
                         "nll_best_nll": repr(nll_at_best_nll[key]) if distribution_itself and key in
                         nll_at_best_nll else ""})
    return rows


def planning_seed_rows(plans: Sequence[dict], cost_ratios: dict | None = None) -> list[dict]:
    """One row per run and column of Table 2: the seed, instances, coverage, average evaluations and the mean plan
    cost over h* (``cost_ratios``: :func:`tnlib.experiments.reporting.plan_quality.run_cost_ratios`; blank where a
    run has none)."""
    cost_ratios = cost_ratios or {}
    rows = []
    for r in sorted(plans, key=lambda r: (*(str(r[k]) for k in SETTING_COLUMNS), r["column"], r["seed"])):
        ratio = cost_ratios.get((r["model"], r["lower_bound"], r["domain"], r["sigma"], r["residual"], r["column"],
                                 r["seed"]))
        rows.append({**{k: r[k] for k in SETTING_COLUMNS}, "column": r["column"], "seed": r["seed"],
                     "instances": r["instances"], "coverage": repr(r["coverage"]),
                     "evaluations": repr(r["evaluations"]), COST_OVER_H_STAR: "" if ratio is None else repr(ratio)})
    return rows


# how a report's header line on its code begins (what a check comparing reports leaves aside)
RENDERED_AT = "Rendered at commit"


def rendered_by() -> str:
    """The line a report's header gives its code and environment: the commit and the versions that move rounding."""
    import platform

    import numba
    import numpy
    import torch

    return (f"{RENDERED_AT} {code_commit()} with Python {platform.python_version()}, torch {torch.__version__}, numpy "
            f"{numpy.__version__}, numba {numba.__version__}, on {machine_kind()}.")


# An ablation's tables bold by the paired rule where every cell of the table has the seeds, else nothing.
ABLATION_BOLD_RULE = f"{PAIRED_BOLD_RULE} Where some cell has fewer seeds, nothing is bold."


def write_ablation(results_dirs: Sequence, reports_dir, ablation: str, model: str = MAIN_TABLES_MODEL) -> list[Path]:
    """One of the appendix's ablations (``tnlib.paper.ABLATIONS``: ``residual`` or ``lower-bound``) from the runs
    of one or more results folders: ``accuracy.md`` (Table 1's layout) and ``planning.md`` (Table 2's), one column
    group per (sigma, residual, lower bound), each opening with the header of the runs they show."""
    if ablation not in ABLATIONS:
        raise ValueError(f"unknown ablation {ablation!r} (choose from {', '.join(ABLATIONS)})")
    columns = ABLATIONS[ablation]
    results_dirs = [Path(folder) for folder in results_dirs]
    accuracy, plans = render_ablation(results_dirs, columns, model)  # (before writing: a ValueError leaves nothing)
    scope = render_scope(collect_scopes(results_dirs, keep=lambda r: r.model == model and (
        r.sigma, r.residual, r.lower_bound) in columns))
    groups = ", ".join(f"{s}/{r} with l = {b}" for s, r, b in columns)
    source = (f"The appendix's {ablation} ablation ({model}): {groups}, from "
              + ", ".join(f"`{shown_folder(folder)}/`" for folder in results_dirs) + ". A column's name is its "
              "sigma/residual/l.")
    if len({b for _, _, b in columns}) > 1:
        source += (" N's training does not read l (tests/learning/test_training.py checks that its weights are "
                   "those of l = lmcut); l changes its +clip row and TN.")
    reports_dir = Path(reports_dir)
    reports_dir.mkdir(parents=True, exist_ok=True)
    written = [reports_dir / "accuracy.md", reports_dir / "planning.md"]
    atomic_write_text(written[0], f"# Test accuracy: {ablation} ablation\n\n{scope}\n## Table\n\n{source} Mean ± "
                      "std over seeds of the test MSE of the point estimate (N: mu, TN: truncated mean); +clip: "
                      f"max(mu, l) for N. {ABLATION_BOLD_RULE}\n\n{accuracy}")
    atomic_write_text(written[1], f"# Planning: {ablation} ablation\n\n{scope}\n## Table\n\nGBFS on the plan split. "
                      f"{source} An unsolved instance counts as the evaluation limit. {ABLATION_BOLD_RULE}\n\n{plans}")
    return written


def _markdown_html(text: str) -> str:
    """Markdown (the scope header: prose and tables) as HTML, with mistune (nbconvert's Markdown renderer)."""
    import mistune

    return mistune.create_markdown(plugins=["table"])(text)


def summaries_table(rows: Sequence[dict]) -> str:
    """The cells' summaries (run, test MSE and NLL, plan coverage) as a Markdown table."""
    lines = ["| run | test MSE | test NLL | plan coverage (default) | plan coverage (N+clip) |",
             "|---|---|---|---|---|"]
    for r in rows:
        clip = r.get("coverage_clip")
        default = r.get("coverage_default")
        lines.append(f"| {r['run']} | {r['mse']:.3f} | {r['nll']:.3f} | "
                     f"{'' if default is None else f'{default:.2f}'} | {'' if clip is None else f'{clip:.2f}'} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------
# Experiments: training curves (the paper's Figure 2)


def write_figure2(results_dir, path, model: str = MAIN_TABLES_MODEL, lower_bound: str = MAIN_LOWER_BOUND,
                  plotly_src: str = PLOTLY_SRC) -> Path:
    """``path`` (HTML): :func:`validation_spread_figure` for every domain and configuration of ``model`` in
    ``results_dir``, under the scope header; plotly.js from ``plotly_src`` (relative to the file's folder)."""
    path = Path(path)
    configs = {(c.domain, c.head.sigma, c.head.residual) for c in map(read_run_config, ResultsDir(results_dir).runs())
               if c.model == model and c.head.lower_bound == lower_bound}
    html = ["<html><head><meta charset='utf-8'><title>Validation curves, N vs TN (the paper's Figure 2)</title>"
            f"<style>{PAGE_CSS}{REPORT_CSS}</style><script src='{plotly_src}'></script></head><body>",
            f"<h1>Validation curves, N vs TN ({model}; the paper's Figure 2)</h1>",
            "<p>Validation MSE (log scale) during training: per distribution the mean over seeds and the seeds' "
            "range (min to max). The paper draws 5 seeds' curves for N (orange) and TN (blue).</p>",
            _markdown_html(scope_header(results_dir))]
    order = {pair: i for i, pair in enumerate(TABLE1_CONFIGS)}  # learn/ff first, as the tables
    for domain, sigma, residual in sorted(configs, key=lambda c: (_domain_order(c[0]), order.get(c[1:], 9), c)):
        figure = validation_spread_figure(results_dir, domain, model, sigma, residual, lower_bound)
        html.append(figure_html(figure, f"figure2-{model}-{domain}-{sigma}-{residual}"))
    html.append("</body></html>")
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, "\n".join(html))
    return path


# What intervals.html says above its figures (the numbers behind them are in the report's tables).
INTERVALS_CAPTION = (
    "Per domain and configuration, the per-seed difference TN minus N (and minus N+clip) of the test MSE (the point "
    "estimate), of the test NLL at the best-NLL checkpoint and of the average plan evaluations (an unsolved "
    "instance counting as the limit): its mean as a dot, its 95% t-interval as a bar. Lower is better in all "
    "three: left of the line at 0, TN is better. Filled blue: the interval says TN is better; filled orange: "
    "worse; hollow grey: the interval holds 0. Each interval holds at 95% on its own: findings.md's `after Holm` "
    "column says which directions survive a correction over all of the report's comparisons. The numbers are in "
    "accuracy.md and planning.md; what the runs are, under the figure.")


def write_intervals(results_dir, path, models: Sequence[str] = (MAIN_TABLES_MODEL,),
                    lower_bound: str = MAIN_LOWER_BOUND,
                    plotly_src: str = PLOTLY_SRC) -> Path | None:
    """``path`` (HTML): :func:`paired_intervals_figures` under a caption, the scope header below them. None, and no
    file, where no cell has the seeds."""
    figures = paired_intervals_figures(results_dir, models, lower_bound)
    if not figures:
        return None
    return _write_intervals_page(Path(path), figures, INTERVALS_CAPTION, scope_header(results_dir), plotly_src)


def write_seed_csv_intervals(report_dir, path=None) -> Path:
    """``tnlib intervals``: ``intervals.html`` of a rendered report (``path``, default: in ``report_dir``) from its
    per-seed CSVs (:func:`seed_csv_intervals_figures`), below the figures the header of its accuracy.md -- what
    the runs were, when the report was rendered. A ValueError where no cell has the seeds for paired intervals."""
    report_dir = Path(report_dir)
    figures = seed_csv_intervals_figures(report_dir)
    if not figures:
        raise ValueError(f"no cell of {shown_folder(report_dir)} has the {PAIRED_MIN_SEEDS} seeds a paired interval "
                         "needs: no intervals to draw")
    path = report_dir / "intervals.html" if path is None else Path(path)
    caption = (INTERVALS_CAPTION + " Drawn from the report's per-seed values (accuracy-seeds.csv, "
               "planning-seeds.csv), not its run folders: `tnlib intervals " + shown_folder(report_dir) + "`.")
    header = ""
    if (report_dir / "accuracy.md").is_file():
        header = report_header_section((report_dir / "accuracy.md").read_text())
    return _write_intervals_page(path, figures, caption, header, plotly_source(path.parent))


def report_header_section(markdown: str) -> str:
    """The section of a rendered report that says what its runs can and cannot show (from its heading to the
    next of its level), or "" where it has none."""
    heading = "## What these results can and cannot show"
    if heading not in markdown:
        return ""
    section = markdown[markdown.index(heading):]
    end = section.find("\n## ", len(heading))
    return section if end < 0 else section[:end + 1]


def _write_intervals_page(path: Path, figures: list, caption: str, footer_markdown: str, plotly_src: str,
                          heading: str = "TN against N and N+clip, paired by seed") -> Path:
    html = [f"<html><head><meta charset='utf-8'><title>Paired intervals: {heading}</title>"
            f"<style>{PAGE_CSS}{REPORT_CSS}</style><script src='{plotly_src}'></script></head><body>",
            f"<h1>{heading}</h1>", _markdown_html(caption)]
    for model, figure in figures:
        html.append(figure_html(figure, f"intervals-{model}"))
    html += [_markdown_html(footer_markdown), "</body></html>"]
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, "\n".join(html))
    return path


def plotly_source(reports_dir: Path) -> str:
    """Where an HTML report in ``reports_dir`` loads plotly.js from: reports/notebooks/' bundle when the folder is
    inside the repository's reports/ (no second copy of the 4.8 MB bundle in git), else a plotly.min.js written
    beside the files."""
    reports_dir = Path(reports_dir).resolve()
    shared = tnlib.files.REPO_ROOT / "reports" / PLOTLY_SRC
    reports_dir.mkdir(parents=True, exist_ok=True)
    if reports_dir.is_relative_to(tnlib.files.REPO_ROOT / "reports") and shared.is_file():
        return os.path.relpath(shared, reports_dir)
    import plotly.offline

    atomic_write_text(reports_dir / "plotly.min.js", plotly.offline.get_plotlyjs())
    return "plotly.min.js"


def _domain_order(domain: str) -> int:
    return DOMAINS.index(domain) if domain in DOMAINS else len(DOMAINS)


# The files a render writes only where its runs or options call for them (seeds for the intervals, whole-grid
# metrics, a folder or report set against, the paper's tables). One left from an earlier render would pass for this
# one's: a render that does not write it removes it. (calibration.md, which needs the runs' weights, is only ever
# written on request.)
CONDITIONAL_FILES = ("headline.md", "intervals.html", SIZES_PAGE, SIZES_SEEDS, SIZES_FIGURE, "comparison.md",
                     REPORT_PAIRING, REPORT_PAIRING_CSV, REPORT_PAIRING_PAGE)


def render_results(results_dir, reports_dir, against=None, selection_seconds: float | None = None,
                   paper_tables: bool = False, calibration: bool = False, against_report=None) -> list[Path]:
    """``tnlib report``: every report of one results folder in ``reports_dir`` -- :func:`write_reports` for the
    models its runs trained, :func:`write_figure2` (``figure2.html``) for its NLM runs, or else its first model,
    and :func:`write_intervals` (``intervals.html``) where cells have the seeds for paired intervals, the findings
    and ``convergence.md`` (Figure 2 counted: :mod:`tnlib.experiments.reporting.convergence`) -- and, with
    ``against`` (another results folder), ``comparison.md``: the cells both hold, side by side
    (:func:`tnlib.experiments.reporting.folder_comparison.render_comparison`); with ``against_report`` (a
    rendered report folder, whose run folders need not be here), ``against-report.md``: every cell both hold,
    paired by seed (:mod:`tnlib.experiments.reporting.report_pairing`). ``selection_seconds``,
    ``paper_tables``: see :func:`write_reports`; ``calibration`` adds ``calibration.md``
    (:func:`write_calibration`). Where runs have metrics on the whole test grid, ``accuracy-by-size.md`` too
    (:mod:`tnlib.experiments.reporting.size_tables`). With ``paper_tables`` and NLM runs, ``headline.md``: the main
    tables in brief beside the paper's (:mod:`tnlib.experiments.reporting.headline`).

    The runs must share one lower bound (a ValueError otherwise: a table holds one). plotly.js comes from
    reports/notebooks/ when ``reports_dir`` is inside the repository's reports/ (no second copy of the 4.8 MB
    bundle in git), else from a plotly.min.js written beside the files. Of :data:`CONDITIONAL_FILES`, those this
    render does not write are removed from ``reports_dir``."""

    results_dir, reports_dir = Path(results_dir), Path(reports_dir).resolve()
    configs = [read_run_config(run) for run in ResultsDir(results_dir).runs()]
    if not configs:
        missing = "" if results_dir.is_dir() else f" (no such folder; {NO_RUNS_YET})"
        raise ValueError(f"{results_dir} holds no run folder (a folder with a config.json): nothing to render{missing}")
    if against is not None and not ResultsDir(against).runs():
        raise ValueError(f"--against {against} holds no run folder (a folder with a config.json): nothing to compare "
                         "with")
    if against_report is not None:
        from tnlib.experiments.reporting.report_pairing import check_rendered_report

        check_rendered_report(against_report)
    bounds = sorted({c.head.lower_bound for c in configs})
    if len(bounds) > 1:
        raise ValueError(f"{results_dir} mixes lower bounds ({', '.join(bounds)}): render each from its own folder")
    ran = {c.model for c in configs}
    models = [m for m in MODELS if m in ran] + sorted(ran - set(MODELS))
    plotly_src = plotly_source(reports_dir)
    written = write_reports(results_dir, reports_dir, models=models, lower_bound=bounds[0], plotly_src=plotly_src,
                            selection_seconds=selection_seconds, paper_tables=paper_tables)
    figure_model = MAIN_TABLES_MODEL if MAIN_TABLES_MODEL in models else models[0]
    written.append(write_figure2(results_dir, reports_dir / "figure2.html", model=figure_model,
                                 lower_bound=bounds[0], plotly_src=plotly_src))
    intervals = write_intervals(results_dir, reports_dir / "intervals.html", models=models, lower_bound=bounds[0],
                                plotly_src=plotly_src)
    if intervals is not None:
        written.append(intervals)
    from tnlib.experiments.reporting.findings import findings, seed_values_of_results

    values = seed_values_of_results(results_dir, bounds[0])
    finding_rows = findings(values)
    written += _write_findings(results_dir, reports_dir, bounds[0], values, finding_rows, against)
    written += write_convergence(results_dir, reports_dir, bounds[0])
    written += write_size_report(results_dir, reports_dir, models, bounds[0], rendered_by())
    if reports_dir / SIZES_SEEDS in written:
        written += _write_size_intervals(reports_dir, models, scope_header(results_dir), plotly_src)
    if against is not None:
        names = folder_names(results_dir, against)
        table = render_comparison(results_dir, against, names)  # (before writing: a ValueError leaves no file behind)
        if figure_model == MAIN_TABLES_MODEL:
            table += ("\n## The paper's directions in both folders\n\nTest MSE of TN against N and N+clip: "
                      f"{DIRECTIONS_RULE}.\n\n"
                      + render_directions(results_dir, against, names=tuple(f"`{n}/`" for n in names)))
        text = (f"# `{names[0]}/` against `{names[1]}/`\n\n{scope_header(results_dir)}\n"
                f"{against_line(against, names[1])}\n\n"
                f"## Table\n\nThe cells both folders hold; columns named by the settings in which their runs differ. "
                "Mean ± std over seeds; an unsolved plan instance counts as the evaluation limit; what is bold is "
                "said under the table.\n\n" + table)
        atomic_write_text(reports_dir / "comparison.md", text)
        written.append(reports_dir / "comparison.md")
    pairing = None
    if against_report is not None:
        pairing = _write_against_report(results_dir, reports_dir, against_report, plotly_src)
        written += pairing[0]
    if paper_tables and MAIN_TABLES_MODEL in models:
        from tnlib.experiments.reporting.headline import write_folder_headline

        written.append(write_folder_headline(
            results_dir, reports_dir, bounds[0], configs, values.get(MAIN_TABLES_MODEL, {}), finding_rows,
            f"{scope_header(results_dir)}\n{rendered_by()}",
            pairing and (pairing[1], (shown_folder(results_dir), shown_folder(against_report)))))
    if calibration:
        written.append(write_calibration(results_dir, reports_dir / "calibration.md"))
    for name in CONDITIONAL_FILES:
        if reports_dir / name not in written and (reports_dir / name).is_file():
            (reports_dir / name).unlink()
    return written


def _write_against_report(results_dir, reports_dir: Path, against_report,
                          plotly_src: str) -> tuple[list[Path], list[dict]]:
    """against-report.md and .csv (:mod:`tnlib.experiments.reporting.report_pairing`) and, where a cell has the
    seeds for an interval, against-report.html: its paired intervals drawn; and the paired rows."""
    from tnlib.experiments.reporting.report_pairing import (report_pairing_figure, report_pairing_rows,
                                                           write_report_pairing)

    names = (shown_folder(results_dir), shown_folder(against_report))
    header = f"{scope_header(results_dir)}\n{rendered_by()}"
    # paired once, for the page and the figure (render_results has checked the other report's CSVs)
    rows = report_pairing_rows(reports_dir, against_report)
    written = write_report_pairing(reports_dir, against_report, names, header, rows)
    figure = report_pairing_figure(rows, names)
    if figure is not None:
        caption = (f"Each cell both hold, `{names[0]}` minus `{names[1]}` paired by seed: the mean difference and "
                   f"its {PAIRED_CONFIDENCE:.0%} t-interval, where at least {PAIRED_MIN_SEEDS} seeds pair up; a cell "
                   f"equal on every seed is not drawn. The numbers: {REPORT_PAIRING}.")
        written.append(_write_intervals_page(reports_dir / REPORT_PAIRING_PAGE, [("pairing", figure)], caption,
                                             header, plotly_src, f"{names[0]} against {names[1]}"))
    return written, rows


def _write_size_intervals(reports_dir: Path, models: Sequence[str], header: str, plotly_src: str) -> list[Path]:
    """accuracy-by-size.html: :func:`size_intervals_figure` per model, from the accuracy-by-size-seeds.csv the
    render has just written; [] where no size has the seeds for an interval."""
    rows = read_seed_csv(reports_dir / SIZES_SEEDS, ("mse",))
    figures = [(model, figure) for model in models if (figure := size_intervals_figure(rows, model)) is not None]
    if not figures:
        return []
    caption = (f"Per domain, configuration and size of the whole test grid, TN minus N+clip and TN minus N in test "
               f"MSE, paired by seed: the mean difference as a dot, its {PAIRED_CONFIDENCE:.0%} t-interval as a bar, "
               "filled where the interval excludes 0 and hollow where it holds it. Below the line at 0, TN is "
               "better. Each interval holds on its own, not corrected for the number of sizes. Where a difference "
               f"lives along the grid -- near the training sizes, or far from them -- shows here, where the whole "
               f"grid's row pools it. The numbers: {SIZES_PAGE}.")
    return [_write_intervals_page(reports_dir / SIZES_FIGURE, figures, caption, header, plotly_src,
                                  "TN against N+clip and N, size by size")]


def _write_findings(results_dir, reports_dir, lower_bound: str, values: dict, rows: list[dict],
                    against=None) -> list[Path]:
    """findings.md and findings.csv (:mod:`tnlib.experiments.reporting.findings`) of the folder's runs (``rows``:
    the findings of its ``values``); with ``against``, that folder's verdicts beside them (on its own lower
    bound)."""
    from tnlib.experiments.reporting.findings import findings, seed_values_of_results, write_findings

    source = (f"From `{shown_folder(results_dir)}/`, l = {lower_bound}: the values of accuracy-seeds.csv and "
              "planning-seeds.csv (planning of the runs that finished planning).")
    if any(r["metric"] == "grid_mse" for r in rows):
        source += (" The test MSE on the whole test grid: the whole grid's rows of accuracy-by-size-seeds.csv (the "
                   "paper's column beside it is its Table 1, on its test set).")
    if against is None:
        return write_findings(reports_dir, rows, source)
    names = folder_names(results_dir, against)
    their_bound = read_run_config(ResultsDir(against).runs()[0]).head.lower_bound
    other = findings(seed_values_of_results(against, their_bound))
    source += f" Beside each verdict, that of `{names[1]}/` (l = {their_bound}) and whether a direction holds in both."
    return write_findings(reports_dir, rows, source, other, (names[0], f"`{names[1]}/`"))


def against_line(folder, name: str) -> str:
    """What the folder a report is set against holds: its tested runs, their datasets and seeds per cell (the
    scope header above describes the report's own folder only)."""
    results = collect_results(folder)
    seeds: dict[tuple, set] = defaultdict(set)
    for r in results:
        c = r["config"]
        seeds[(c.get("domain"), c.get("model"), c.get("sigma"), c.get("residual"), c.get("distribution"))].add(
            c.get("seed"))
    counts = sorted({len(s) for s in seeds.values()})
    per_cell = str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    datasets = ", ".join(f"data/{d}" for d in dataset_names(r["config"] for r in results)) or "dataset not recorded"
    runs = f"{len(results)} tested run" + ("" if len(results) == 1 else "s")
    cells = f"{len(seeds)} cell" + ("" if len(seeds) == 1 else "s")
    seeds_text = f"{per_cell} seed" + ("" if per_cell == "1" else "s")
    return f"**Set against** `{name}/`: {runs} ({datasets}), {seeds_text} per cell ({cells})."


def write_calibration(results_dir, path) -> Path:
    """``calibration.md``: how calibrated and sharp the folder's learned-sigma runs are on the test split
    (:mod:`tnlib.experiments.reporting.calibration_summary`; beyond the paper), under the folder's scope header."""
    path = Path(path)
    text = (f"# Calibration of the predicted distributions\n\n{scope_header(results_dir)}\n{rendered_by()}\n\n"
            "## Table\n\nBeyond the paper, which reads point estimates and the NLL. For every configuration with a "
            "learned sigma, each run's predicted distribution of h* on the test states: the share of states inside "
            "its central 50/80/90/95% intervals (calibrated: that share; h* is an integer, so a state's PIT is "
            "drawn uniformly between F(h* - 1/2) and F(h* + 1/2)), the 90% interval's mean width (sharpness) and the "
            "probability put below the admissible bound (X < l - 1/2, which no state has); the seeds' states "
            "pooled. The test instances are larger than the training ones: a share below the nominal one is the "
            "model's confidence not carrying over to them.\n\n" + calibration_markdown(folder_calibration(results_dir))
            + "\n")
    atomic_write_text(path, text)
    return path
