"""What a results folder can and cannot show: the header of the reports, computed from the run folders.

A sweep's tables look the same whether its runs trained for 40,000 steps or 300, on the paper's test sets or on
smaller ones, with the plan instances h_FF finds hard or ones it solves outright. :func:`collect_scope` reads what
was actually done -- every run's ``config.json`` and ``curves.jsonl``, the planning and baseline files, the sweep's
``sweep.json`` and the data manifests -- and sets it beside the paper's setting (:mod:`tnlib.paper` and the
``paper`` profile of :mod:`tnlib.data.profiles`); :func:`render_scope` writes it as a short Markdown block that
the reports (``accuracy.md``, ``planning.md``) and the experiments notebook put on top. Nothing in it is typed
in by hand: a shorter run, a missing configuration or an easy plan set shows up by itself.

**Still improving.** A run's validation curve counts as *still improving at the last step* when the best
validation MSE among its last quarter of evaluations (at least one) is more than 1% below the best before them
(:func:`tnlib.learning.until_flat.still_improving`): the model selection (best validation MSE) would likely have picked a better model had
training gone on. Runs with fewer than four evaluations are *too short to tell*.
"""
from __future__ import annotations

import contextlib
import math
import os
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from tnlib.data.manifest import dataset_root
from tnlib.data.plan_sets import load_plan_set
from tnlib.data.profiles import PROFILES
from tnlib.data.schema import FAST_DOWNWARD_LMCUT, MANIFEST, TNLIB_LMCUT
from tnlib.errors import DatasetError
from tnlib.experiments.damaged_records import damaged_records_items, run_curve
from tnlib.experiments.results_dir import ResultsDir
from tnlib.learning.run_files import RunDir
from tnlib.learning.split_planning import planned
from tnlib.learning.training import TrainConfig, read_run_config
from tnlib.learning.until_flat import IMPROVEMENT, LAST_FRACTION, MIN_EVALUATIONS, still_improving
from tnlib.files import read_json, shown_folder
from tnlib.paper import (
    AUTHORS_FIXED_SIGMA,
    AUTHORS_PLAN_GRID,
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
from tnlib.planning.generators import DOMAIN_PARAMETERS
from tnlib.planning.search_settings import PAPER_SEARCH

# What the header says of a run whose folder does not record the hardware of its training, or of its first steps.
NOT_RECORDED = "not recorded"

# GBFS counting protocols (tnlib.planning.search), as the header names them.
# A planning record made before records named whose LM-cut they computed (tnlib's, wherever one was read).
UNNAMED_LMCUT = "unnamed"
PROTOCOL_TEXT = {
    "paper": "the paper's counting (every generated successor is an evaluation, goal test at generation)",
    "distinct": "distinct-state counting (goal test at expansion; looser than the paper's)",
}


@dataclass
class RunFacts:
    """One run folder as the header needs it."""

    name: str
    domain: str
    model: str
    sigma: str
    residual: str
    distribution: str
    lower_bound: str
    sigma_link: str
    fixed_sigma: str
    seed: int
    steps: int  # configured
    steps_done: int  # the last validated step (0 without curves)
    batch_size: int
    instances: int | None
    data_root: str | None
    evaluations: int
    improving: bool | None
    instances_used: int | None = None  # training instances it trained on (data.json; None: the folder has none)
    # (step, kind of hardware) of each start of training (machines.jsonl); None: the folder does not record it
    starts: list[tuple[int, str]] | None = None
    # (step, commit of the code that trained, None where the start did not record it) of each start of training
    code_starts: list[tuple[int, str | None]] | None = None

    @property
    def trained_by(self) -> str:
        """The commits of the code that trained it, in order (``38b9e834``; ``not recorded, then 38b9e834`` for a
        run whose folder records no code for its first starts)."""
        return _in_order(self.code_starts)

    @property
    def trained_on(self) -> str:
        """The hardware that trained it, in order: ``AMD EPYC, AVX512``; ``X, then Y`` for a run resumed on
        another kind; ``not recorded`` where its folder does not say for its first steps (or all)."""
        return _in_order(self.starts)

    @property
    def cell(self) -> tuple[str, str, str]:
        """(model, "sigma/residual", distribution): the row and column of the header's curves table."""
        return self.model, f"{self.sigma}/{self.residual}", self.distribution


@dataclass
class DomainFacts:
    """One domain: its data (from the manifest) beside the paper's, and its plan set with h_FF's coverage."""

    domain: str
    data_root: str | None = None
    train_instances: int | None = None  # in the train split
    train_used: list[int] = field(default_factory=list)  # per distinct instances setting of its runs
    train_then: list[int] = field(default_factory=list)  # of those, counts of a whole split smaller than it is now
    test_instances: int | None = None
    test_states: int | None = None
    test_sizes: str | None = None
    paper_test_instances: int | None = None
    paper_test_sizes: str | None = None
    plan_split_size: int | None = None  # instances in the plan split
    planned: int | None = None  # instances GBFS(h_FF) was run on
    ff_solved: int | None = None
    protocols: list[str] = field(default_factory=list)


@dataclass
class Scope:
    results_dirs: list[str]  # one folder, or several (collect_scopes: an ablation's)
    runs: list[RunFacts]
    domains: dict[str, DomainFacts]
    max_evaluations: int | None  # from sweep.json; None when the folder has none
    plan_protocols: list[str]  # of the learned heuristics' planning records
    # (steps, max_steps) of a sweep that trained until flat (sweep.json's max_steps); None: a fixed number of steps
    until_flat: tuple[int, int] | None = None
    # run folders left out because they have no test metrics yet while others do (a sweep still training them)
    without_metrics: list[str] = field(default_factory=list)
    # records that lost lines, what that costs the report and what restores them (tnlib.experiments.damaged_records)
    damaged: list[str] = field(default_factory=list)
    # the learned heuristics' planning records by whose LM-cut they computed (their "lmcut": fast-downward, tnlib,
    # None where the estimate reads none; UNNAMED_LMCUT where the record predates the field)
    plan_lmcuts: Counter = field(default_factory=Counter)

    # -- the grid -------------------------------------------------------------------------------------------------
    def values(self, attribute: str) -> list:
        return sorted({getattr(r, attribute) for r in self.runs}, key=_order(attribute))

    def missing(self, attribute: str) -> list:
        """What the paper ran and these runs did not (domains, models, configs, distributions)."""
        paper = {"domain": DOMAINS, "model": MODELS, "distribution": DISTRIBUTIONS,
                 "config": ["/".join(c) for c in TABLE1_CONFIGS]}[attribute]
        here = {f"{r.sigma}/{r.residual}" for r in self.runs} if attribute == "config" else set(self.values(attribute))
        return [value for value in paper if value not in here]

    def configs(self) -> list[str]:
        order = ["/".join(c) for c in TABLE1_CONFIGS]
        found = {f"{r.sigma}/{r.residual}" for r in self.runs}
        return sorted(found, key=lambda c: order.index(c) if c in order else len(order))

    # -- training -------------------------------------------------------------------------------------------------
    def samples(self) -> list[int]:
        """Training samples (steps done x batch size) per run."""
        return [r.steps_done * r.batch_size for r in self.runs]

    def unfinished(self) -> list[str]:
        return [r.name for r in self.runs if r.steps_done < r.steps]

    def improving(self) -> dict[tuple[str, str, str], Counter]:
        """Per (model, configuration, distribution): counts of True (still improving), False and None."""
        groups: dict = defaultdict(Counter)
        for r in self.runs:
            groups[r.cell][r.improving] += 1
        return dict(groups)

    def steps_trained(self) -> dict[tuple[str, str, str], list[int]]:
        """Per (model, configuration, distribution): the steps its runs trained, sorted."""
        groups: dict = defaultdict(list)
        for r in self.runs:
            groups[r.cell].append(r.steps_done)
        return {key: sorted(steps) for key, steps in groups.items()}


def _order(attribute: str):
    orders = {"domain": DOMAINS, "model": MODELS, "distribution": DISTRIBUTIONS}
    if attribute in orders:
        known = list(orders[attribute])
        return lambda v: (known.index(v) if v in known else len(known), str(v))
    return lambda v: (str(type(v)), v)


# ---------------------------------------------------------------------------------------------------------------
# Reading


def _run_facts(run: RunDir, config: TrainConfig) -> RunFacts:
    curve, trained, _, _ = run_curve(run, config)
    val_mse = [float(row["val_mse"]) if row["val_mse"] is not None else math.nan for row in curve]
    head = config.head
    return RunFacts(
        name=run.name, domain=config.domain, model=config.model, sigma=head.sigma, residual=head.residual,
        distribution=head.distribution, lower_bound=head.lower_bound, sigma_link=head.sigma_link,
        fixed_sigma=head.fixed_sigma, seed=config.seed, steps=config.steps, steps_done=trained,
        batch_size=config.batch_size, instances=config.instances, data_root=config.data_root,
        evaluations=len(val_mse),
        improving=still_improving(val_mse),
        instances_used=read_json(run.data_file).get("train_instances") if run.data_file.is_file() else None,
        starts=_training_starts(run), code_starts=_code_starts(run))


def _in_order(starts: list[tuple[int, str | None]] | None) -> str:
    """What each start of training recorded (a machine kind, a commit), in order, repeats merged: ``X, then Y``;
    ``not recorded`` where the folder does not say for the first steps, a start or all."""
    if not starts:
        return NOT_RECORDED
    values = [] if starts[0][0] == 0 else [NOT_RECORDED]
    for _, value in starts:
        value = value or NOT_RECORDED
        if not values or values[-1] != value:
            values.append(value)
    return ", then ".join(values)


def _code_starts(run: RunDir) -> list[tuple[int, str | None]] | None:
    """A run's starts of training by step with the commit each recorded (None where it did not), or None."""
    if not run.machines_file.is_file():
        return None
    by_step = {record["step"]: record.get("code") if isinstance(record.get("code"), str) else None
               for record in run.training_starts()}
    return sorted(by_step.items())


def _training_starts(run: RunDir) -> list[tuple[int, str]] | None:
    """A run's starts of training by step (the last one written where two started at one step), or None."""
    if not run.machines_file.is_file():
        return None
    by_step = {record["step"]: record["machine"] for record in run.training_starts()}
    return sorted(by_step.items())


def _domain_manifest(data_root: str | None, domain: str) -> tuple[str | None, dict | None]:
    """(the dataset root, the domain's manifest) of a run's data, or (root or None, None) when unreadable."""
    try:
        root = dataset_root(data_root)
    except DatasetError:
        return data_root, None
    try:
        entry = read_json(root / MANIFEST)["domains"][domain]
        return str(root), read_json(root / entry["manifest"])
    except (OSError, KeyError, ValueError):
        return str(root), None


def sizes_text(domain: str, params: Iterable[dict]) -> str:
    """A grid's generator parameters as ranges, e.g. ``blocks 9-10`` or ``x 5-7, y 5-7, ratio {0.5,1}``."""
    params = list(params)
    parts = []
    for name in DOMAIN_PARAMETERS[domain]:
        values = sorted({p[name] for p in params if name in p})
        if not values:
            continue
        if len(values) == 1:
            text = f"{values[0]:g}"
        elif all(isinstance(v, int) for v in values) and values == list(range(values[0], values[-1] + 1)):
            text = f"{values[0]}-{values[-1]}"
        else:
            text = "{" + ",".join(f"{v:g}" for v in values) + "}"
        parts.append(f"{name} {text}")
    return ", ".join(parts)


def _paper_test(domain: str) -> tuple[int, str]:
    """The paper profile's test split of ``domain``: (instances, sizes)."""
    grid = PROFILES["paper"].grid(domain, "test")
    return len(grid.slots()), sizes_text(domain, [dict(combo) for combo in grid.combos])


def _grid_text(domain: str, params: Sequence[dict], first_seed: int, last_seed: int) -> str:
    """A generator grid as the header shows it: sizes, ``x = y`` for square visitall grids, seed numbers."""
    text = sizes_text(domain, params)
    if len(params) > 1 and all("x" in p and p["x"] == p.get("y") for p in params):
        text += " (x = y)"
    return f"{text}; seeds {first_seed}-{last_seed}"


def authors_plan_grid(domain: str) -> tuple[str, str] | None:
    """(the grid the authors' scripts drew the paper's plan instances from, the appendix's test grid) of
    ``domain`` as text (:data:`tnlib.paper.AUTHORS_PLAN_GRID`; the ``paper`` profile), or None for a domain the
    paper did not plan on."""
    if domain not in AUTHORS_PLAN_GRID:
        return None
    authors = AUTHORS_PLAN_GRID[domain]
    appendix = PROFILES["paper"].grid(domain, "test")
    return (_grid_text(domain, list(authors["params"]), *authors["seeds"]),
            _grid_text(domain, [dict(c) for c in appendix.combos], appendix.seeds[0], appendix.seeds[-1]))


def _records_by_problem(path: Path) -> list[dict]:
    """A planning JSON-lines file's records, the last one per problem (as the tables read them)."""
    return list(planned(path).values())


def collect_scope(results_dir: str | os.PathLike) -> Scope:
    """Everything the header states, read from a results folder (see the module docstring)."""
    results = ResultsDir(results_dir)
    folders = results.runs()
    # The tables read the runs with test metrics; a folder a sweep is still filling also holds runs part-way
    # through training, whose steps would misstate the budget of the runs tabled. A folder where no run has test
    # metrics yet is described whole (its curves are all there is).
    evaluated = [run.metrics_file("test").is_file() for run in folders]
    tabled = evaluated if any(evaluated) else [True] * len(folders)
    without_metrics = [run.name for run, kept in zip(folders, tabled) if not kept]
    read = [(run, read_run_config(run)) for run, kept in zip(folders, tabled) if kept]
    runs = [_run_facts(run, config) for run, config in read]
    damaged = damaged_records_items(results_dir, read)
    sweep = results.read_sweep()  # None: the folder has no sweep.json
    sweep_data_root = None if sweep is None else sweep.data_root
    planned_on = results.planned_on()
    baselines = results.baseline_files("ff", planned_on)
    domains: dict[str, DomainFacts] = {}
    for name in sorted({r.domain for r in runs} | set(baselines), key=_order("domain")):
        facts = DomainFacts(name)
        domain_runs = [r for r in runs if r.domain == name]
        # a domain planned but not yet tabled (its runs still training) reads the data its folder's runs trained on
        data_roots = (sorted({r.data_root for r in domain_runs if r.data_root})
                      or sorted({r.data_root for r in runs if r.data_root}) or [sweep_data_root])
        facts.data_root, manifest = _domain_manifest(data_roots[0], name)
        splits = (manifest or {}).get("splits", {})
        if "train" in splits:
            facts.train_instances = splits["train"]["counts"]["instances"]
            facts.train_used = sorted({r.instances_used if r.instances_used is not None
                                       else facts.train_instances if r.instances is None
                                       else min(r.instances, facts.train_instances) for r in domain_runs})
            # runs that asked for the whole split and got fewer trained on a smaller split (an exact solver fills
            # the slots A* left out of reach): they trained on all it held when they trained
            facts.train_then = sorted({r.instances_used for r in domain_runs if r.instances is None
                                       and r.instances_used is not None and r.instances_used < facts.train_instances})
        if "test" in splits:
            facts.test_instances = splits["test"]["counts"]["instances"]
            facts.test_states = splits["test"]["counts"]["states"]
            facts.test_sizes = sizes_text(name, splits["test"]["settings"]["grid"]["params"])
        if planned_on == "plan" and "plan" in splits:
            facts.plan_split_size = splits["plan"]["counts"]["instances"]
        elif planned_on != "plan" and facts.data_root is not None:
            with contextlib.suppress(DatasetError):
                facts.plan_split_size = len(load_plan_set(facts.data_root, name, planned_on, verify=False))
        if name in DOMAINS:
            facts.paper_test_instances, facts.paper_test_sizes = _paper_test(name)
        if name in baselines:
            records = _records_by_problem(baselines[name])
            facts.planned = len(records)
            facts.ff_solved = sum(r["solved"] for r in records)
            facts.protocols = sorted({r["protocol"] for r in records})
        domains[name] = facts
    plan_records = [record for path in results.planning_files(planned_on) for record in _records_by_problem(path)]
    plan_protocols = sorted({record["protocol"] for record in plan_records})
    plan_lmcuts = Counter(record.get("lmcut", UNNAMED_LMCUT) for record in plan_records)
    if sweep is None:
        return Scope([str(results_dir)], runs, domains, None, plan_protocols, None, without_metrics, damaged,
                     plan_lmcuts)
    until_flat = (sweep.train.steps, sweep.max_steps) if sweep.max_steps is not None else None
    return Scope([str(results_dir)], runs, domains, sweep.max_evaluations, plan_protocols, until_flat,
                 without_metrics, damaged, plan_lmcuts)


# ---------------------------------------------------------------------------------------------------------------
# Rendering


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


def collect_scopes(results_dirs: Sequence[str | os.PathLike], keep=None) -> Scope:
    """One :class:`Scope` for the runs of several results folders (an ablation's column groups): the runs that
    ``keep(run_facts)`` accepts (all by default), the first folder's planning facts per domain (a later folder's for
    the domains the first lacks), the evaluation limit when the folders share one (None otherwise)."""
    scopes = [collect_scope(folder) for folder in results_dirs]
    runs = [r for scope in scopes for r in scope.runs if keep is None or keep(r)]
    domains: dict[str, DomainFacts] = {}
    for scope in scopes:
        for name, facts in scope.domains.items():
            domains.setdefault(name, facts)
    ran = {r.domain for r in runs}
    domains = {name: facts for name, facts in sorted(domains.items(), key=lambda kv: _order("domain")(kv[0]))
               if name in ran}
    limits = {scope.max_evaluations for scope in scopes}
    return Scope([folder for scope in scopes for folder in scope.results_dirs], runs, domains,
                 limits.pop() if len(limits) == 1 else None,
                 sorted({p for scope in scopes for p in scope.plan_protocols}),
                 next((scope.until_flat for scope in scopes if scope.until_flat is not None), None),
                 [name for scope in scopes for name in scope.without_metrics],
                 [item for scope in scopes for item in scope.damaged],
                 sum((scope.plan_lmcuts for scope in scopes), Counter()))
