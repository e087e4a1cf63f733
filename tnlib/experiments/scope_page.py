"""The reports' scope header as Markdown: :func:`render_scope` writes what :func:`tnlib.experiments.scope.collect_scope`
found in a results folder -- the setting beside the paper's, per-domain data and plan sets, the training curves'
state and what follows for reading the tables -- and :func:`scope_header` does both for one folder."""
from __future__ import annotations

import math
import os
import statistics
from collections import Counter, defaultdict
from typing import Sequence

from tnlib.experiments.scope import (
    NOT_RECORDED,
    PROTOCOL_TEXT,
    UNNAMED_LMCUT,
    DomainFacts,
    RunFacts,
    Scope,
    authors_plan_grid,
    collect_scope,
)
from tnlib.data.schema import FAST_DOWNWARD_LMCUT, TNLIB_LMCUT
from tnlib.files import shown_folder
from tnlib.learning.until_flat import IMPROVEMENT, LAST_FRACTION, MIN_EVALUATIONS
from tnlib.paper import (
    AUTHORS_FIXED_SIGMA,
    AUTHORS_SEEDS,
    BATCH_SIZE,
    DISTRIBUTIONS,
    DOMAINS,
    FF_COVERAGE,
    FIXED_SIGMA,
    FIXED_SIGMAS,
    MAX_EVALUATIONS,
    MODELS,
    PAPER_HARDWARE,
    PLAN_INSTANCES,
    SEEDS,
    TABLE1_CONFIGS,
    TRAIN_INSTANCES,
    TRAIN_STEPS,
)
from tnlib.planning.search_settings import PAPER_SEARCH

def _range_text(values: Sequence[int]) -> str:
    """``6,000`` or ``6,000-14,000`` (median 8,000) for a sorted list of step counts."""
    if values[0] == values[-1]:
        return f"{values[0]:,}"
    return f"{values[0]:,}-{values[-1]:,} (median {statistics.median(values):,.0f})"


def percent(fraction: float) -> str:
    """A share as a percentage: two significant digits under 10% (0.19%), whole numbers above."""
    return f"{100 * fraction:.2g}%" if fraction < 0.1 else f"{100 * fraction:.0f}%"


def _listing(values: Sequence, missing: Sequence = ()) -> str:
    text = ", ".join(map(str, values)) or "none"
    return text + (f" (missing: {', '.join(map(str, missing))})" if missing else "")


def _seeds_text(seeds: Sequence[int]) -> str:
    return f"{len(seeds)} ({', '.join(map(str, seeds))})"


def _sigma_text(sigma: float) -> str:
    """A fixed sigma by its closed form where it has the one of the paper or of its authors' code."""
    for value, name in ((FIXED_SIGMA, "1/sqrt(2)"), (AUTHORS_FIXED_SIGMA, "sqrt(2)")):
        if math.isclose(sigma, value):
            return f"{name} = {sigma:.3f}"
    return f"{sigma:g}"


def _hardware_groups(runs: Sequence[RunFacts], by: str = "trained_on") -> dict[str, list[str]]:
    """The runs' names by the hardware that trained them (:attr:`RunFacts.trained_on`), or by the code
    (``by="trained_by"``)."""
    groups: dict[str, list[str]] = defaultdict(list)
    for r in runs:
        groups[getattr(r, by)].append(r.name)
    return dict(groups)


def _hardware_text(groups: dict[str, list[str]]) -> str:
    """``AMD EPYC, AVX512: 12 runs; X, then Y: 1 run (name)``: the most common first, unrecorded last; runs
    resumed on another kind are named (up to three)."""
    parts = []
    for kind, names in sorted(groups.items(), key=lambda kv: (kv[0] == NOT_RECORDED, -len(kv[1]), kv[0])):
        text = f"{kind}: {len(names)} run{'' if len(names) == 1 else 's'}"
        if ", then " in kind and len(names) <= 3:
            text += f" ({', '.join(names)})"
        parts.append(text)
    return "; ".join(parts)


def _train_share(used: int, domain: DomainFacts) -> str:
    if used == domain.train_instances:
        return "all"
    if used in domain.train_then:
        return f"all the split then held; {domain.train_instances} now"
    return f"of {domain.train_instances}"


def render_scope(scope: Scope) -> str:
    """The header as Markdown: the setting against the paper's, per-domain data and plan sets, the training
    curves' state, and what follows for reading the tables."""
    names = ", ".join(f"`{shown_folder(folder)}/`" for folder in scope.results_dirs)
    lines = ["## What these results can and cannot show\n",
             f"Computed from the {len(scope.runs)} run folder{'' if len(scope.runs) == 1 else 's'} in {names}, their data manifests and planning files "
             "(`tnlib.experiments.scope`); the paper's setting beside it.\n"]
    if scope.damaged:
        lines += ["**Damaged records** -- what follows is built without what these lost:\n"]
        lines += [f"- {item}" for item in scope.damaged] + [""]
    if scope.without_metrics:
        count = len(scope.without_metrics)
        lines.append(f"Left out: {count} run folder{'s' if count > 1 else ''} without test metrics yet (still "
                     f"training, or stopped before the test evaluation): {', '.join(scope.without_metrics)}.\n")
    if not scope.runs:
        return "\n".join(lines + ["No run folders (with a config.json) here: nothing to show.\n"])
    lines += _setting_rows(scope) + _domain_rows(scope) + _curve_rows(scope) + _caveat_rows(scope)
    return "\n".join(lines)


def _learned_sigma_links(scope: Scope) -> list[str]:
    """The learned sigma's links of the runs, where any run learns sigma."""
    return scope.values("sigma_link") if any(r.sigma == "learn" for r in scope.runs) else []


def _improving_of_judged(scope: Scope) -> tuple[int, int]:
    """How many runs' validation curves were still improving, of those long enough to tell."""
    groups = scope.improving()
    return sum(c[True] for c in groups.values()), sum(c[True] + c[False] for c in groups.values())


def _setting_rows(scope: Scope) -> list[str]:
    """The setting of the runs beside the paper's: training, seeds, domains, models, configurations,
    distributions, bounds, sigma, hardware and code."""
    paper_samples = TRAIN_STEPS * BATCH_SIZE
    samples = scope.samples()
    low, high = min(samples), max(samples)
    steps = sorted({r.steps_done for r in scope.runs})
    batches = sorted({r.batch_size for r in scope.runs})
    steps_text = f"{steps[0]:,}" if len(steps) == 1 else f"{steps[0]:,}-{steps[-1]:,}"
    budget = (f"{steps_text} steps x batch {'/'.join(map(str, batches))} = "
              + (f"{low:,} samples ({percent(low / paper_samples)})" if low == high else
                 f"{low:,}-{high:,} samples ({percent(low / paper_samples)}-{percent(high / paper_samples)})"))
    if scope.until_flat is not None:
        first, cap = scope.until_flat
        went_on = sum(r.steps_done > first for r in scope.runs)
        at_cap = sum(r.steps_done >= cap for r in scope.runs)
        budget += (f"; trained until flat (beyond the paper): {first:,} steps, then on while still improving, up to "
                   f"{cap:,} -- {went_on} of {len(scope.runs)} runs went on, {at_cap} reached {cap:,}")
    unfinished = scope.unfinished()
    if unfinished:
        budget += ("; 1 run stopped before its configured steps" if len(unfinished) == 1 else
                   f"; {len(unfinished)} runs stopped before their configured steps")
    seeds = scope.values("seed")
    per_cell = Counter((r.domain, r.model, r.sigma, r.residual, r.distribution) for r in scope.runs)
    seeds_text = _seeds_text(seeds) + ("" if len(set(per_cell.values())) <= 1
                                       else f"; {min(per_cell.values())}-{max(per_cell.values())} per cell")
    links = _learned_sigma_links(scope)
    link_text = {"softplus": "softplus(x) + 0.01", "bounded": "10 sigmoid(x) + 0.1"}
    lines = [
        "| | these runs | the paper |", "|---|---|---|",
        f"| training per run | {budget} | {TRAIN_STEPS:,} steps x batch {BATCH_SIZE} = {paper_samples:,} samples |",
        f"| seeds | {seeds_text} | {len(SEEDS)}, not named (the authors' scripts: "
        f"{', '.join(map(str, AUTHORS_SEEDS))}) |",
        f"| domains | {_listing(scope.values('domain'), scope.missing('domain'))} | {', '.join(DOMAINS)} |",
        f"| models | {_listing(scope.values('model'), scope.missing('model'))} | {', '.join(MODELS)} "
        "(main tables: nlm) |",
        f"| configurations (sigma/residual) | {_listing(scope.configs(), scope.missing('config'))} | "
        f"{', '.join('/'.join(c) for c in TABLE1_CONFIGS)} |",
        f"| distributions | {_listing(scope.values('distribution'), scope.missing('distribution'))} | "
        f"{', '.join(DISTRIBUTIONS)} |",
        f"| lower bound l | {', '.join(scope.values('lower_bound'))} | lmcut (hmax, blind in the appendix) |",
    ]
    if links:
        lines.append(f"| learned sigma | {', '.join(link_text.get(v, v) for v in links)} | not stated (the "
                     "authors' code: 10 sigmoid(x) + 0.1) |")
    fixed = sorted({r.fixed_sigma for r in scope.runs if r.sigma == "fixed"}, key=list(FIXED_SIGMAS).index)
    if fixed:
        used = ", ".join(_sigma_text(FIXED_SIGMAS[v]) + ("" if v == "paper" else " (the authors' code's)")
                         for v in fixed)
        lines.append(f"| fixed sigma | {used} | {_sigma_text(FIXED_SIGMA)} in the text (the "
                     f"authors' code: {_sigma_text(AUTHORS_FIXED_SIGMA)}) |")
    hardware = _hardware_groups(scope.runs)
    if set(hardware) != {NOT_RECORDED}:  # no line where no run folder records it
        lines.append(f"| trained on | {_hardware_text(hardware)} | {PAPER_HARDWARE} |")
    codes = _hardware_groups(scope.runs, by="trained_by")
    if set(codes) != {NOT_RECORDED}:  # only runs whose starts record the commit that trained them say it
        lines.append(f"| code that trained (tnlib commit) | {_hardware_text(codes)} | the authors' (IBM/pddlsl) |")
    lines.append("")
    return lines


def _domain_rows(scope: Scope) -> list[str]:
    """Per domain: training instances, test set and plan set against the paper's; the authors' plan grid; how GBFS
    counted."""
    max_evaluations = scope.max_evaluations or PAPER_SEARCH.max_evaluations
    limit_note = "" if scope.max_evaluations else " (assumed: no sweep.json)"
    protocols = sorted({p for d in scope.domains.values() for p in d.protocols} | set(scope.plan_protocols))
    lines = [f"| domain | training instances (paper: {TRAIN_INSTANCES}) | test set | paper's test set | "
             f"plan set: h_FF solves | paper: h_FF solves |", "|---|---|---|---|---|---|"]
    for d in scope.domains.values():
        if d.train_instances is None:
            train = "?"
        else:
            train = ", ".join(f"{u} ({_train_share(u, d)})" for u in d.train_used) or f"{d.train_instances} in the split"
        test = ("?" if d.test_instances is None
                else f"{d.test_instances} instances, {d.test_states:,} states; {d.test_sizes}")
        paper_test = ("" if d.paper_test_instances is None
                      else f"{d.paper_test_instances} instances; {d.paper_test_sizes}")
        if d.planned:
            plan = f"{d.ff_solved}/{d.planned} ({d.ff_solved / d.planned:.2f})"
            if d.plan_split_size is not None and d.plan_split_size != d.planned:
                plan += f"; {d.planned} of the split's {d.plan_split_size} planned"
        else:
            plan = "not planned"
        paper_plan = (f"{FF_COVERAGE[d.domain]:.2f} of {PLAN_INSTANCES}" if d.domain in FF_COVERAGE else "")
        lines.append(f"| {d.domain} | {train} | {test} | {paper_test} | {plan} | {paper_plan} |")
    lines.append("")
    grids = {d: authors_plan_grid(d) for d in scope.domains}
    grids = {d: g for d, g in grids.items() if g is not None}
    if grids:
        lines.append(f"The paper's plan instances ({PLAN_INSTANCES} per domain, \"sampled from the test set\") "
                     "came, in the authors' scripts, from this grid (`plan2` of `test2`), not always the appendix's "
                     "test table (the paper's test set above):\n")
        lines += [f"- {d}: {authors}" + (" -- the same as the appendix's" if authors == appendix
                                         else f" -- the appendix's: {appendix}")
                  for d, (authors, appendix) in grids.items()]
        lines.append("")
    if protocols:
        paper_limit = "" if max_evaluations == MAX_EVALUATIONS else f" (the paper: {MAX_EVALUATIONS:,})"
        lines.append(f"GBFS: at most {max_evaluations:,} evaluations{limit_note}{paper_limit}, counted by "
                     + "; ".join(f"`{p}`: {PROTOCOL_TEXT.get(p, p)}" for p in protocols)
                     + (" -- **mixed protocols: planning numbers are not comparable**" if len(protocols) > 1 else "")
                     + ".\n")
    lines += _plan_lmcut_lines(scope.plan_lmcuts)
    return lines


def _plan_lmcut_lines(counts: Counter) -> list[str]:
    """Whose LM-cut the learned heuristics computed as they planned, where a record names it: nothing where none
    does (every record then predates the field and was planned with tnlib's)."""
    if not counts.keys() - {UNNAMED_LMCUT}:
        return []
    fast_downward, tnlib = counts[FAST_DOWNWARD_LMCUT], counts[TNLIB_LMCUT]
    others = counts[None] + counts[UNNAMED_LMCUT]
    text = (f"l at planning (TN's truncated mean and N+clip's max(mu, l) read it): the LM-cut each run trained with, "
            f"computed state by state -- Fast Downward's tie-breaking in {fast_downward:,} planning records, "
            f"tnlib's in {tnlib:,}")
    if others:
        text += (f"; {others:,} read none (N's mu, which reads l only where it is infinite"
                 + (", or planned before records named it, with tnlib's" if counts[UNNAMED_LMCUT] else "") + ")")
    return [text + ".", ""]


def _curve_rows(scope: Scope) -> list[str]:
    """The training curves: per model, configuration and distribution, how many runs were still improving."""
    groups = scope.improving()
    trained = scope.steps_trained()
    improving, judged = _improving_of_judged(scope)
    lines = [f"Validation curves still improving at the last evaluation (best validation MSE of the last "
             f"{LAST_FRACTION:.0%} of evaluations more than {IMPROVEMENT:.0%} below the best before them): "
             f"**{improving} of {judged} runs**"
             + (f" ({len(scope.runs) - judged} with fewer than {MIN_EVALUATIONS} evaluations cannot tell)"
                if judged < len(scope.runs) else "") + ".\n",
             "| model | configuration | " + " | ".join(DISTRIBUTIONS) + " |",
             "|---|---|" + "---|" * len(DISTRIBUTIONS)]
    for model in scope.values("model"):
        for config in scope.configs():
            cells = []
            for distribution in DISTRIBUTIONS:
                counts = groups.get((model, config, distribution))
                if not counts:
                    cells.append("")
                    continue
                total = sum(counts.values())
                cell = f"{counts[True]} of {total - counts[None]} still improving"
                steps = trained[(model, config, distribution)]
                if steps[0] != steps[-1] or scope.until_flat is not None:
                    cell += f", {_range_text(steps)} steps"
                cells.append(cell + (f" ({counts[None]} too short)" if counts[None] else ""))
            if any(cells):
                lines.append(f"| {model} | {config} | " + " | ".join(cells) + " |")
    lines.append("")
    return lines


def _caveat_rows(scope: Scope) -> list[str]:
    """What follows for reading the tables: the caveats these runs call for, or nothing."""
    paper_samples = TRAIN_STEPS * BATCH_SIZE
    samples = scope.samples()
    low, high = min(samples), max(samples)
    improving, judged = _improving_of_judged(scope)
    links = _learned_sigma_links(scope)
    seeds = scope.values("seed")
    caveats = []
    if high < paper_samples:
        caveats.append(f"The runs saw {percent(high / paper_samples)} of the paper's training samples"
                       + (" or less" if low != high else "")
                       + ": compare N with TN within a row, not these numbers with the paper's.")
    if judged and improving:
        stopped = "" if scope.until_flat is None else f" at max_steps ({scope.until_flat[1]:,})"
        caveats.append(f"{improving} of {judged} runs were still improving when training stopped{stopped}: the tables "
                       "compare models part-way through training (faster convergence, as in the paper's Figure 2, "
                       "is not the same as a better final model).")
    if judged and improving and scope.until_flat is None:
        caveats.append("Trained a fixed number of steps, short of flat: training on while the curves still fall "
                       f"-- with all four configurations, more seeds and the paper's {MAX_EVALUATIONS:,} evaluations -- "
                       "is the "
                       "converged presets' (`tnlib sweep --preset converged`, `converged-linear`; their results in "
                       "reports/converged/).")
    missing = [(what, scope.missing(key)) for what, key in (("configurations", "config"), ("models", "model"),
                                                            ("distributions", "distribution"),
                                                            ("domains", "domain"))]
    missing = [f"{what} {', '.join(values)}" for what, values in missing if values]
    if missing:
        caveats.append(f"Not run here: {'; '.join(missing)}.")
    if len({machine for r in scope.runs for _, machine in r.starts or ()}) > 1:
        caveats.append("Trained on more than one kind of hardware (above): float32 rounds differently on each, so "
                       "these figures repeat exactly only on the same machines in the same order (a difference of "
                       "rounding at one step grows over thousands).")
    if len(links) > 1:
        caveats.append(f"Runs with different learned-sigma links ({', '.join(links)}) are averaged together in the "
                       "tables.")
    if len(seeds) < len(SEEDS):
        caveats.append(f"1 seed (the paper: {len(SEEDS)}): the tables show no spread across seeds." if len(seeds) == 1
                       else f"{len(seeds)} seeds (the paper: {len(SEEDS)}): the ± are rough.")
    smaller = [d.domain for d in scope.domains.values()
               if d.test_sizes is not None and d.paper_test_sizes is not None and d.test_sizes != d.paper_test_sizes]
    if smaller:
        caveats.append(f"Test sets differ from the paper's in {', '.join(smaller)} (sizes above): accuracy on them "
                       "says less about generalisation to larger instances.")
    easy = [d.domain for d in scope.domains.values() if d.planned and d.ff_solved == d.planned]
    if easy:
        caveats.append(f"h_FF alone solves every planned instance of {', '.join(easy)}: coverage cannot separate the "
                       "heuristics there, only the evaluation counts can.")
    small_plan = [d.domain for d in scope.domains.values() if d.planned and d.planned < PLAN_INSTANCES]
    if small_plan:
        sizes = sorted({scope.domains[x].planned for x in small_plan})
        caveats.append(f"Plan sets of {'/'.join(map(str, sizes))} instances ({', '.join(small_plan)}; the paper: "
                       f"{PLAN_INSTANCES}): one instance moves coverage by up to {1 / sizes[0]:.2f}.")
    if not caveats:
        return []
    return ["**Read the tables with this in mind:**\n", *[f"- {c}" for c in caveats], ""]


def scope_header(results_dir: str | os.PathLike) -> str:
    """:func:`render_scope` of :func:`collect_scope`: the Markdown header of a results folder's reports."""
    return render_scope(collect_scope(results_dir))

