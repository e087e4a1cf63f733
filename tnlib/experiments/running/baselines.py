"""Table 2's symbolic baselines on label-free plan sets: GBFS with h_FF (the paper's column), LM-cut, h_add and goal
count, per grid cell and per domain, on every instance and under the paper's selection by optimal solves.

:func:`run_plan_set_baselines` plans (resumably: one JSON line per instance, :func:`tnlib.learning.split_planning.
plan_baseline`) into ``OUT/<plan set>/baseline-<domain>-<heuristic>.jsonl``; :func:`render_plan_set_baselines` writes
``OUT/baselines.md`` from those files and the plan sets' manifests, with a header that says how it was made.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from tnlib.files import atomic_write_text
from tnlib.learning.run_files import baseline_file
from tnlib.paper import FF_COVERAGE, FF_EVALUATIONS, MAX_EVALUATIONS, PLAN_INSTANCES
from tnlib.planning.search_settings import PAPER, PAPER_SEARCH, SearchSettings

# The symbolic heuristics tnlib offers for GBFS, h_FF first (the paper's Table 2 column).
BASELINE_HEURISTICS = ("ff", "lmcut", "hadd", "goalcount")
HEURISTIC_TITLES = {"ff": "h_FF", "lmcut": "LM-cut", "hadd": "h_add", "goalcount": "goal count"}


@dataclass(frozen=True)
class BaselineJob:
    data_root: str
    domain: str
    heuristic: str
    plan_set: str
    out_dir: str
    max_evaluations: int


# (The planners, the data and the reports are imported where they are used: `tnlib baselines --help` reads only the
# constants above.)


def _plan(job: BaselineJob) -> str:
    from tnlib.learning.split_planning import plan_baseline

    plan_baseline(job.data_root, job.domain, job.heuristic, Path(job.out_dir) / job.plan_set, split=job.plan_set,
                  settings=SearchSettings(PAPER, job.max_evaluations))
    return f"{job.plan_set}/{job.domain}/{job.heuristic}"


def run_plan_set_baselines(data_root, out_dir, domains: Sequence[str], heuristics: Sequence[str] = BASELINE_HEURISTICS,
                  plan_sets: Sequence[str] = ("plan-set",), max_evaluations: int = PAPER_SEARCH.max_evaluations,
                  workers: int = 1, progress=None) -> None:
    """Plan every (plan set, domain, heuristic) not planned yet, ``workers`` processes side by side; ``progress``
    is called with each finished job's name."""
    from tnlib.executors import run_jobs

    jobs = [BaselineJob(str(data_root), domain, heuristic, plan_set, str(out_dir), max_evaluations)
            for plan_set in plan_sets for heuristic in heuristics for domain in domains]
    for done in run_jobs(_plan, jobs, workers):
        if progress is not None:
            progress(done)


def _cell_summary(records: list[dict]) -> str:
    from tnlib.learning.split_planning import planning_summary

    if not records:
        return "-"
    summary = planning_summary(records)
    return f"{summary['coverage']:.2f} ({summary['evaluations']:,.0f})"


def render_plan_set_baselines(data_root, out_dir, domains: Sequence[str], heuristics: Sequence[str] = BASELINE_HEURISTICS,
                     plan_sets: Sequence[str] = ("plan-set",), selection_seconds: Sequence[float] = (),
                     command: str = "") -> Path:
    """``OUT/baselines.md``: per plan set and domain, coverage (average evaluations, an unsolved instance counted
    at the limit as the paper does) per grid cell and in all, on every instance and on those solved optimally
    within each of ``selection_seconds`` (with how many the recorded solves cannot decide); the paper's h_FF
    beside the domain rows. Heuristics not planned yet show as ``-``."""
    from tnlib.data.plan_sets import load_plan_set
    from tnlib.experiments.reporting.reports import rendered_by
    from tnlib.learning.split_planning import planned

    out_dir = Path(out_dir)
    lines, limits = [], set()
    for plan_set in plan_sets:
        for domain in domains:
            try:
                instances = load_plan_set(data_root, domain, plan_set)
            except Exception as err:  # noqa: BLE001 - a missing set is named in the report, not fatal
                lines += [f"## {domain}, {plan_set}", "", f"not available: {err}", ""]
                continue
            records = {h: planned(baseline_file(out_dir / plan_set, domain, h)) for h in heuristics}
            limits |= {record.get("max_evaluations", MAX_EVALUATIONS)
                       for by_name in records.values() for record in by_name.values()}
            cells: dict[str, list[str]] = {}
            for name in instances.instances():
                cells.setdefault(instances.record(name)["cell"], []).append(name)
            lines += [f"## {domain}, {plan_set} ({len(instances)} instances)", ""]
            header = "| cell | n | " + " | ".join(HEURISTIC_TITLES[h] for h in heuristics) + " |"
            lines += [header, "|" + "---|" * (2 + len(heuristics))]

            def row(label: str, names: list[str]) -> str:
                parts = [_cell_summary([records[h][f"{n}.pddl"] for n in names if f"{n}.pddl" in records[h]])
                         if all(f"{n}.pddl" in records[h] for n in names) else "-" for h in heuristics]
                return f"| {label} | {len(names)} | " + " | ".join(parts) + " |"

            for cell, names in cells.items():
                lines.append(row(cell, names))
            lines.append(row("**all**", instances.instances()))
            for seconds in selection_seconds:
                kept, unknown = instances.optimal_selection(seconds)
                lines.append(row(f"**solved optimally within {seconds:g} s** ({len(unknown)} undecided)", kept))
            paper = f"{FF_COVERAGE[domain]:.2f} ({FF_EVALUATIONS[domain]:,})"
            lines += ["", f"The paper's h_FF on its {PLAN_INSTANCES} plan instances: {paper}.", ""]
    # The limit the records were planned under (`tnlib baselines --max-evaluations`), not the default.
    limit = " or ".join(f"{n:,}" for n in sorted(limits)) if limits else f"{MAX_EVALUATIONS:,}"
    header = ["# Table 2's symbolic baselines on the label-free plan sets", "",
              f"Made by `{command or 'tnlib baselines'}`. {rendered_by()} "
              "GBFS under the paper's protocol (every generated successor counts as an evaluation, the goal is "
              f"tested at generation) with at most {limit} evaluations. A cell reads coverage "
              "(average evaluations, an unsolved instance counted at the limit, as the paper does). The plan sets and "
              "how far they are from the paper's: data/README.md and README.md beside this file.", ""]
    path = out_dir / "baselines.md"
    atomic_write_text(path, "\n".join(header + lines) + "\n")
    return path


__all__ = ["BASELINE_HEURISTICS", "render_plan_set_baselines", "run_plan_set_baselines"]
