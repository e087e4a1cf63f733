"""What a results folder can and cannot show: the header of the reports, computed from the run folders.

A sweep's tables look the same whether its runs trained for 40,000 steps or 300, on the paper's test sets or on
smaller ones, with the plan instances h_FF finds hard or ones it solves outright. :func:`collect_scope` reads what
was actually done -- every run's ``config.json`` and ``curves.jsonl``, the planning and baseline files, the sweep's
``sweep.json`` and the data manifests -- and sets it beside the paper's setting (:mod:`tnlib.paper` and the
``paper`` profile of :mod:`tnlib.data.profiles`); :func:`tnlib.experiments.scope_page.render_scope` writes it as a
short Markdown block that the reports (``accuracy.md``, ``planning.md``) and the experiments notebook put on top.
Nothing in it is typed in by hand: a shorter run, a missing configuration or an easy plan set shows up by itself.

**Still improving.** A run's validation curve counts as *still improving at the last step* when the best
validation MSE among its last quarter of evaluations (at least one) is more than 1% below the best before them
(:func:`tnlib.learning.until_flat.still_improving`): the model selection (best validation MSE) would likely have picked a better model had
training gone on. Runs with fewer than four evaluations are *too short to tell*.
"""
from __future__ import annotations

import contextlib
import math
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Sequence

from tnlib.data.manifest import dataset_root
from tnlib.data.plan_sets import load_plan_set
from tnlib.data.profiles import PROFILES
from tnlib.data.schema import MANIFEST
from tnlib.errors import DatasetError
from tnlib.experiments.damaged_records import damaged_records_items, run_curve
from tnlib.experiments.results_dir import ResultsDir
from tnlib.learning.run_files import RunDir
from tnlib.learning.split_planning import planned
from tnlib.learning.training import TrainConfig, read_run_config
from tnlib.learning.until_flat import still_improving
from tnlib.files import read_json
from tnlib.paper import AUTHORS_PLAN_GRID, DISTRIBUTIONS, DOMAINS, MODELS, TABLE1_CONFIGS
from tnlib.planning.generators import DOMAIN_PARAMETERS

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
