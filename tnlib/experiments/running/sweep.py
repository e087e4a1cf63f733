"""Sweeps: train, evaluate and plan over domains x models x configurations x seeds, locally or on Dask.

A :class:`Sweep` names the grid; :func:`run_sweep` runs each cell -- ``train`` (resumes from ``last.pt``),
``evaluate_run`` on the test split (``metrics-test.json``), then GBFS over the plan split
(``planning-*.jsonl``, resumable) -- plus the h_FF planning baseline per domain. Every stage skips what an earlier,
interrupted run already finished, so rerunning the same sweep picks up where it stopped. Cells run one after the
other by default, on a local process pool with ``workers > 1``, or on a Dask cluster with ``scheduler`` (the
address of a running ``distributed`` scheduler); results land in ``out_dir`` either way (a shared filesystem on
a cluster).

``Sweep()`` is the paper's setting: NLM, the four (sigma, residual) configurations, N and TN, five seeds, 40,000
steps at batch 256 on 400 training instances of the ``paper`` data profile, planning every plan instance with at
most 10,000 evaluations -- hundreds of GPU-hours (:meth:`Sweep.describe` estimates them). Named presets
(:data:`PRESETS`) start from it: ``Sweep.preset("small")`` is what ``make reproduce`` runs on 2 CPU cores.
"""
from __future__ import annotations

import functools
import json
import sys
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Sequence

from tnlib.data.manifest import dataset_root, default_data_root
from tnlib.data.plan_sets import find_plan_sets
from tnlib.data.profiles import PROFILES, params_label
from tnlib.data.schema import MANIFEST, PLAN_SETS
from tnlib.errors import DamagedFile, DatasetError, MissingRuns
from tnlib.executors import run_jobs
from tnlib.experiments.running.cell_settings import CellSettings
from tnlib.experiments.running.presets import PRESETS
from tnlib.experiments.results_dir import ResultsDir
from tnlib.experiments.running.sweep_banner import describe_sweep
from tnlib.experiments.running.sweep_standing import count_phrase, finished_runs
from tnlib.files import atomic_write_text, locked, locked_if_free, read_json
from tnlib.learning.heads import HeadConfig
from tnlib.learning.run_files import RunDir, baseline_file
from tnlib.learning.until_flat import EXTEND_STEPS, check_until_flat
from tnlib.paper import (
    BATCH_SIZE,
    DISTRIBUTIONS,
    DOMAINS,
    EVAL_EVERY,
    SEEDS,
    TABLE1_CONFIGS,
    TRAIN_INSTANCES,
    TRAIN_STEPS,
)
from tnlib.planning.search_settings import PAPER, PAPER_SEARCH, SearchSettings
from tnlib.progress import progress as progress_display



@dataclass
class Sweep:
    """A grid of training runs and what to do with each. The defaults are the paper's settings (see the module
    docstring); :meth:`preset` starts from a named smaller one."""

    domains: Sequence[str] = DOMAINS
    # The paper's main tables are NLM's; HGN and linear regression (its appendix) are models=("nlm", "hgn", "linear").
    models: Sequence[str] = ("nlm",)
    configs: Sequence[tuple[str, str]] = TABLE1_CONFIGS
    distributions: Sequence[str] = DISTRIBUTIONS
    seeds: Sequence[int] = SEEDS
    # The head's settings the sweep's runs share, at the head's defaults (HeadConfig)
    lower_bound: str = HeadConfig.lower_bound
    # "h_sat": TN bounded above by a satisficing plan's cost during training (doubly truncated; beyond the paper)
    upper_bound: str = HeadConfig.upper_bound
    sigma_link: str = HeadConfig.sigma_link  # a learned sigma's link: softplus | bounded (authors' code)
    fixed_sigma: str = HeadConfig.fixed_sigma  # a fixed sigma's value: paper (1/sqrt 2) | authors (sqrt 2)
    steps: int = TRAIN_STEPS
    # Train until flat (beyond the paper, which trains a fixed number of steps): with max_steps, a run whose
    # validation curve is still improving after `steps` (the reports' rule, tnlib.learning.until_flat.still_improving)
    # trains on in chunks of extend_steps, each checked again, up to max_steps. None: every run trains `steps`.
    max_steps: int | None = None
    extend_steps: int = EXTEND_STEPS
    batch_size: int = BATCH_SIZE
    eval_every: int = EVAL_EVERY
    instances: int | None = TRAIN_INSTANCES  # training instances to subsample per run; None: all
    model_args: dict = field(default_factory=dict)  # per model name, e.g. {"nlm": {"depth": 5}}
    # The dataset: data_root when it is a dataset root, else its data_profile sub-folder (data_root None:
    # $TNLIB_DATA or <repo>/data).
    data_profile: str = "paper"
    data_root: str | None = None
    out_dir: str = "runs/paper"
    device: str | None = None
    plan: bool = True
    plan_instances: int | None = None  # the first N instances of the plan split or set (None: all)
    # What GBFS plans on: the dataset's plan split ("plan") or a label-free plan set of it (tnlib.data.schema.
    # PLAN_SETS: "plan-set" holds the paper's test grid at its sizes); a plan set lists its grid cells in turn, so
    # plan_instances takes a subset spread over the cells.
    plan_on: str = "plan"
    plan_per_cell: int | None = None  # on a plan set: the first N instances of each grid cell (None: all)
    max_evaluations: int = PAPER_SEARCH.max_evaluations
    workers: int = 1  # local processes running cells side by side (ignored on a Dask scheduler)

    @classmethod
    def preset(cls, name: str, **overrides) -> "Sweep":
        """A checked sweep from the preset ``name`` (:data:`PRESETS`), with ``overrides`` on top."""
        return cls.from_parameters(preset=name, **overrides)

    @classmethod
    def from_parameters(cls, preset: str | None = None, **params) -> "Sweep":
        """A checked sweep from keyword parameters (the experiments notebook's and ``tnlib sweep``'s).

        Keys are the fields of :class:`Sweep`; those left out take the ``preset``'s values (None: the paper's,
        the defaults). ``configs`` may be ``"sigma/residual"`` strings (``"learn/ff"``) or pairs; a single name
        (``domains="ferry"``, ``configs="learn/ff"``) or seed (``seeds=3``) stands for a list of one; ``instances``
        and ``plan_instances`` may be ``"all"`` (None); ``out_dir`` is made absolute; ``model_args`` maps model
        names to constructor arguments they take; ``data_root``, when given, must be a folder. A ValueError names
        the first bad parameter.
        """
        if preset is not None and preset not in PRESETS:
            raise ValueError(f"unknown sweep preset {preset!r} (choose from {', '.join(PRESETS)})")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(params) - known)
        if unknown:
            raise ValueError(f"unknown sweep parameters: {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        values = {**asdict(cls()), **PRESETS.get(preset or "paper", {}), **params}
        for name in ("domains", "models", "configs", "distributions"):
            values[name] = _names(name, values[name])
        values["seeds"] = _seed_list(values["seeds"])
        domains = values["domains"]
        unknown_domains = [d for d in domains if d not in DOMAINS]
        if unknown_domains:
            raise ValueError(f"domains: unknown {unknown_domains} (choose from {', '.join(DOMAINS)})")
        pairs = []
        for config in values["configs"]:
            parts = list(config) if isinstance(config, (tuple, list)) else str(config).split("/")
            if len(parts) != 2:
                raise ValueError(f"configs must be sigma/residual pairs such as 'learn/ff', got {config!r}")
            pairs.append(tuple(parts))
        for name in ("steps", "extend_steps", "batch_size", "eval_every", "max_evaluations", "workers"):
            value = values[name]
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        if values["max_steps"] is not None:
            check_until_flat(values["steps"], values["max_steps"], values["extend_steps"], values["eval_every"])
        for name in ("instances", "plan_instances", "plan_per_cell"):
            value = values[name]
            if value == "all":
                values[name] = value = None
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ValueError(f"{name} must be None, 'all' or an integer >= 1, got {value!r}")

        if values["plan_on"] not in ("plan", *PLAN_SETS.values()):
            raise ValueError(f"plan_on: unknown {values['plan_on']!r} (the plan split 'plan' or a plan set: "
                             f"{', '.join(PLAN_SETS.values())})")
        if values["plan_per_cell"] is not None and values["plan_on"] == "plan":
            raise ValueError("plan_per_cell: a labelled plan split has no grid cells to take instances from; plan on "
                             "a plan set (plan_on plan-set) or leave it out")
        if values["data_profile"] not in PROFILES:
            raise ValueError(f"data_profile: unknown {values['data_profile']!r} (choose from {', '.join(PROFILES)})")
        model_args = values["model_args"]
        if not isinstance(model_args, dict):
            raise ValueError(f"model_args must map model names to their arguments, e.g. {{'nlm': {{'depth': 3}}}}, "
                             f"got {model_args!r}")
        from tnlib.learning.models import check_model_args

        for model, args in model_args.items():
            check_model_args(model, args, setting=f"model_args[{model!r}]")
        if values["data_root"] is not None and not Path(values["data_root"]).is_dir():
            raise ValueError(f"data_root: no such folder {values['data_root']}")
        sweep = cls(**{**values, "configs": pairs, "out_dir": str(Path(values["out_dir"]).resolve())})
        sweep.train_configs()  # the training configuration's own checks (model, distribution, sigma, residual names)
        return sweep

    @property
    def search_settings(self) -> SearchSettings:
        """What GBFS plans under: the paper's counting protocol and this sweep's evaluation limit."""
        return SearchSettings(PAPER, self.max_evaluations)

    @property
    def cell_settings(self) -> CellSettings:
        """What each cell does besides training its configuration (passed with it to run_cell)."""
        return CellSettings(max_steps=self.max_steps, extend_steps=self.extend_steps, plan=self.plan,
                            plan_on=self.plan_on, plan_per_cell=self.plan_per_cell,
                            plan_instances=self.plan_instances, search=self.search_settings)

    def dataset_path(self) -> Path:
        """The dataset root the runs read: ``data_root`` when it holds a manifest, else its ``data_profile``
        sub-folder (absolute, so run folders name it wherever they are read from)."""
        base = self.data_root_or_default()
        return (base if (base / MANIFEST).is_file() else base / self.data_profile).resolve()

    def data_root_or_default(self) -> Path:
        """``data_root`` when given, else the default data root (``$TNLIB_DATA`` or ``<repo>/data``)."""
        return Path(self.data_root) if self.data_root is not None else default_data_root()

    def train_template(self):
        """The training configuration every run of the sweep shares (a
        :class:`tnlib.learning.training.TrainConfig`): this sweep's steps, batches, data, bounds, sigma settings
        and folder; :meth:`train_configs` sets the grid's domain, model, sigma, residual, distribution and seed on
        it."""
        from tnlib.learning.training import TrainConfig

        head = HeadConfig(lower_bound=self.lower_bound, upper_bound=self.upper_bound, sigma_link=self.sigma_link,
                          fixed_sigma=self.fixed_sigma)
        return TrainConfig(head=head, steps=self.steps, batch_size=self.batch_size, eval_every=self.eval_every,
                           checkpoint_every=self.eval_every, instances=self.instances,
                           data_root=str(self.dataset_path()), out_dir=self.out_dir, device=self.device,
                           progress=False)

    def train_configs(self) -> list:
        """The configuration of every run of the grid (:class:`tnlib.learning.training.TrainConfig`), domain by
        domain, then model, configuration, distribution and seed: what each cell trains."""
        template = self.train_template()
        return [replace(template, domain=domain, model=model, seed=seed,
                        head=replace(template.head, distribution=distribution, sigma=sigma, residual=residual),
                        model_args=dict(self.model_args.get(model, {})))
                for domain in self.domains
                for model in self.models
                for sigma, residual in self.configs
                for distribution in self.distributions
                for seed in self.seeds]

    def run_folder(self, config) -> RunDir:
        """The run folder of one of :meth:`train_configs` in the sweep's results folder."""
        return RunDir(Path(self.out_dir) / config.name)

    def matching_preset(self) -> str | None:
        """The preset whose experiment this is (where the results go, the device and the parallelism aside)."""
        ignored = {"out_dir", "data_root", "device", "workers"}
        mine = {k: v for k, v in asdict(Sweep.from_parameters(**asdict(self))).items() if k not in ignored}
        for name in PRESETS:
            theirs = {k: v for k, v in asdict(Sweep.preset(name)).items() if k not in ignored}
            if mine == theirs:
                return name
        return None

    def settings_differing_from_paper(self) -> list[str]:
        """The settings in which this sweep differs from the paper's (where the results go, the device and the
        parallelism aside)."""
        return [name for name, value in asdict(Sweep.preset("paper")).items()
                if name not in ("out_dir", "data_root", "device", "workers")
                and _comparable(getattr(self, name)) != _comparable(value)]

    def describe(self) -> str:
        """What the sweep will do, for a banner before it starts: the settings against the paper's, the number of
        runs, the compute it needs (:func:`tnlib.experiments.running.sweep_banner.describe_sweep`)."""
        return describe_sweep(self)

    def runs(self) -> int:
        """The number of training runs: domains x models x configurations x distributions x seeds."""
        return (len(self.domains) * len(self.models) * len(self.configs) * len(self.distributions)
                * len(self.seeds))

    def check_results(self) -> Path:
        """The results folder, after checking that it holds at least one of the sweep's runs with test metrics
        (what the tables read): a :class:`tnlib.errors.MissingRuns` saying how to make them when it holds none
        (runs/ is not in git, so a fresh clone has none)."""
        out = Path(self.out_dir)
        folders = [self.run_folder(config) for config in self.train_configs()]
        if any(run.metrics_file("test").is_file() for run in folders):
            return out
        how = "set run = True to train them (papermill: -p run True)"
        if self.matching_preset() == "small":
            how += ", or run `make reproduce` (it trains the small preset into runs/small)"
        raise MissingRuns(f"{out} holds none of this sweep's {count_phrase(folders, 'run')} (no run folder with test "
                          f"metrics; runs are not in git, a fresh clone has none): {how}")

    def data_gaps(self) -> tuple[Path, list[str], list[str]]:
        """What of the data this sweep reads is not there: (dataset root, missing, out of reach). ``missing``:
        domains or splits that were never generated (``"ferry/test"``, ``"blocksworld (all splits)"``); ``out of
        reach``: one line per split whose generation gave up cells at its solver limits
        (:func:`tnlib.data.attempt_selection.select_attempts`), naming the cells, the limits and the empty slots.
        Raises DatasetError when there is no dataset at all."""
        root = dataset_root(self.data_root_or_default(), self.data_profile).resolve()  # (it adds the profile itself)
        domains = read_json(root / MANIFEST).get("domains", {})
        plan_sets = set(find_plan_sets(root)) if self.plan and self.plan_on != "plan" else set()
        splits = ("train", "val", "test") + (("plan",) if self.plan and self.plan_on == "plan" else ())
        missing, out_of_reach = [], []
        for domain in self.domains:
            there = read_json(root / domains[domain]["manifest"]).get("splits", {}) if domain in domains else {}
            absent = [split for split in splits if split not in there]
            missing += [f"{domain} (all splits)"] if len(absent) == len(splits) else [f"{domain}/{s}" for s in absent]
            if self.plan and self.plan_on != "plan" and (domain, self.plan_on) not in plan_sets:
                missing.append(f"{domain}/{self.plan_on}")
            for split in splits:
                cells = there.get(split, {}).get("out_of_reach_cells", [])
                if cells:
                    settings, counts = there[split]["settings"], there[split]["counts"]
                    given_up = {params_label(domain, c["params"]) for c in cells}
                    names = ", ".join(label for label in (params_label(domain, p) for p in settings["grid"]["params"])
                                      if label in given_up)  # in the grid's order
                    out_of_reach.append(
                        f"{domain}/{split}: {len(cells)} cell(s) out of reach at {settings['time_limit']:g} s / "
                        f"{settings['memory_limit_mb']} MB ({names}): {sum(c['unfilled'] for c in cells)} of "
                        f"{counts['slots']} slots empty, {counts['instances']} instances there")
        return root, missing, out_of_reach

    def check_data(self, accept_out_of_reach: bool = False) -> Path:
        """The dataset root, after checking that it exists and holds every domain and split the sweep reads
        (a DatasetError with the command that generates what is missing). Splits with cells out of reach (given
        up at the solver limits) pass only with ``accept_out_of_reach``: the sweep then trains and tests on the
        cells that exist."""
        root, missing, out_of_reach = self.data_gaps()
        plan_sets = [m for m in missing if self.plan_on != "plan" and m.endswith(f"/{self.plan_on}")]
        missing = [m for m in missing if m not in plan_sets]
        if plan_sets and not missing:
            grid = next(g for g, name in PLAN_SETS.items() if name == self.plan_on)
            command = " ".join(f"--domain {m.split('/')[0]}" for m in plan_sets)
            raise DatasetError(f"{root} lacks the plan set {', '.join(plan_sets)}: make it with `tnlib data plan-set "
                               f"{root} {command} --grid {grid}` (or plan on the plan split: --plan-on plan)")
        if missing:
            lacking = [d for d in self.domains if any(m.startswith(f"{d}/") or m.startswith(f"{d} ") for m in missing)]
            command = " ".join(f"--domain {d}" for d in lacking)
            raise DatasetError(f"{root} lacks {', '.join(missing)}: generate it with `tnlib data generate {command} "
                               f"--profile {self.data_profile} --out {root}` (or choose another --data-root or "
                               "--preset)")
        if out_of_reach and not accept_out_of_reach:
            raise DatasetError(
                f"{root} has cells out of reach of its solver limits ({'; '.join(out_of_reach)}): pass "
                "--accept-out-of-reach to train and test on the cells that exist, or generate them with longer limits "
                "(`tnlib data generate ... --force --time-limit S --test-time-limit S`, see data/README.md)")
        return root


def _names(name: str, value) -> list:
    """A list parameter's value as a list: one string stands for a list of one (papermill's ``-p domains ferry``)."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, (list, tuple)):
        raise ValueError(f"{name}: expected a name or a list of names, got {value!r}")
    if not value:
        raise ValueError(f"{name}: name at least one")
    return list(value)


def _seed_list(value) -> list[int]:
    """Seeds as a list of whole numbers >= 0; one number stands for a list of one (``-p seeds 3``)."""
    seeds = [value] if isinstance(value, int) and not isinstance(value, bool) else value
    if not isinstance(seeds, (list, tuple)):
        raise ValueError(f"seeds: expected a whole number >= 0 or a list of them (papermill: -p seeds 3, or "
                         f"-y 'seeds: [0, 1]'), got {value!r}")
    if not seeds:
        raise ValueError("seeds: name at least one")
    bad = [s for s in seeds if not isinstance(s, int) or isinstance(s, bool) or s < 0]
    if bad:
        raise ValueError(f"seeds must be whole numbers >= 0, got {bad[0]!r}")
    return list(seeds)


def _comparable(value):
    if isinstance(value, (list, tuple)):
        return [_comparable(v) for v in value]
    return value


def run_baselines(sweep: Sweep) -> None:
    """The h_FF baseline of every domain, each under a lock beside its file, as the runs are: sweeps side by side
    over one folder reach this together at their end, and without it each would plan every instance (each
    appending its own records). A domain another process holds is done after the others, then waited for and
    found planned."""
    from tnlib.learning.split_planning import plan_baseline

    out_dir = ResultsDir(sweep.out_dir).baseline_folder(sweep.plan_on)

    def plan(domain: str) -> None:
        plan_baseline(sweep.dataset_path(), domain, "ff", out_dir=out_dir, split=sweep.plan_on,
                      settings=sweep.search_settings, instances=sweep.plan_instances, per_cell=sweep.plan_per_cell)

    busy = []
    for domain in sweep.domains:
        with locked_if_free(baseline_lock(out_dir, domain)) as free:
            if free:
                plan(domain)
                continue
        print(f"h_FF baseline of {domain}: another process is planning it; coming back to it after the others",
              file=sys.stderr, flush=True)
        busy.append(domain)
    for domain in busy:
        with locked(baseline_lock(out_dir, domain),
                    waiting=f"h_FF baseline of {domain}: another process is planning it; waiting for it to finish"):
            plan(domain)


def baseline_lock(out_dir: Path, domain: str) -> Path:
    """The lock a sweep holds while it plans ``domain``'s h_FF baseline into ``out_dir``."""
    return out_dir / f".{baseline_file(out_dir, domain, 'ff').name}.lock"


# The axes a sweep may be split along into one results folder (one process per domain, say): the folder's
# sweep.json then names the union of the parts.
GRID_AXES = ("domains", "models", "configs", "distributions", "seeds")
# Settings of one process, not of the results: parts of one sweep may differ in them (two training processes with
# --no-plan beside one planning the trained runs with --plan --trained-only).
PROCESS_SETTINGS = ("workers", "plan")


def write_sweep_file(sweep: Sweep) -> dict:
    """Write the results folder's ``sweep.json`` and return what it holds. Where the folder already holds a
    sweep that differs from this one only along its grid (:data:`GRID_AXES`; :data:`PROCESS_SETTINGS` aside),
    the file names the union of the two grids -- a sweep split across processes or sessions (``--domains ferry``
    here, ``--domains gripper`` there, or training in one process and planning in another) is described whole;
    any other difference (steps, data, bounds, the planning settings) replaces it."""
    results = ResultsDir(sweep.out_dir)
    path = results.sweep_file
    record = json.loads(json.dumps(asdict(sweep)))  # tuples as JSON lists, as it is read back
    canonical = {"domains": list(DOMAINS), "distributions": list(DISTRIBUTIONS)}
    with locked(path.with_name(f".{path.name}.lock")):  # parts starting side by side read and write in turn
        try:
            previous = results.read_sweep() if path.is_file() else None
        except DamagedFile:  # what it held is rebuilt below from this sweep's own settings
            previous = None
        if isinstance(previous, dict):  # a file written before a setting existed held that setting's default
            previous = {**json.loads(json.dumps(asdict(Sweep()))), **previous}
        same_sweep = isinstance(previous, dict) and previous.keys() == record.keys() and all(
            previous[k] == record[k] for k in record if k not in GRID_AXES and k not in PROCESS_SETTINGS)
        if same_sweep:  # some part of the folder's sweep planned: its planning settings describe the results
            record["plan"] = bool(previous["plan"] or record["plan"])
        for axis in GRID_AXES if same_sweep else ():
            union = previous[axis] + [v for v in record[axis] if v not in previous[axis]]
            if axis == "seeds":
                union.sort()
            elif axis in canonical and set(union) <= set(canonical[axis]):
                union.sort(key=canonical[axis].index)
            record[axis] = union
        atomic_write_text(path, json.dumps(record, indent=2) + "\n")
    return record


SWEEP_LINE_INTERVAL_S = 10.0


def run_sweep(sweep: Sweep, workers: int | None = None, scheduler: str | None = None,
              progress: bool = True, accept_out_of_reach: bool = False, trained_only: bool = False,
              run_progress: bool = False) -> list[dict]:
    """Run every cell of the sweep (resuming finished work) and the h_FF baselines; returns the cells' summaries.

    ``workers`` local processes (None: ``sweep.workers``), or the Dask ``scheduler``'s workers. The dataset is
    checked first (:meth:`Sweep.check_data`), so a missing domain or split stops the sweep before any training, and
    so do cells out of reach unless ``accept_out_of_reach``. ``trained_only``: only the runs already trained and
    tested (``metrics-test.json``), none trained or started -- a planning process beside sweeps still training
    the rest of the grid. ``progress`` shows the runs done (here, or tested by another sweep over the folder);
    ``run_progress`` also each run's training steps and planned instances, in one process only (side by side their
    displays would mix): what a terminal running one long sweep wants, not a notebook running many short runs.
    """
    # here, not at the top: a cell imports torch (about 1.1 s), which describing or checking a sweep does not need
    from tnlib.experiments.running.cells import run_cell

    sweep.check_data(accept_out_of_reach)
    workers = sweep.workers if workers is None else workers
    Path(sweep.out_dir).mkdir(parents=True, exist_ok=True)
    write_sweep_file(sweep)
    configs = sweep.train_configs()
    if trained_only:
        configs = [config for config in configs if sweep.run_folder(config).metrics_file("test").is_file()]
    settings = replace(sweep.cell_settings, progress=run_progress and workers <= 1 and scheduler is None)
    # Where the display is text (papermill, a log), a line per finished run, at most one per SWEEP_LINE_INTERVAL_S
    # (however small a share of the sweep the run is): runs that train take minutes each, runs resumed finished take
    # a fraction of a second (a line each would bury a notebook's output). Runs finished before the sweep began count
    # as done from the start, not as progress: counted as they return at once, they would make the time left look
    # like seconds.
    folders = {folder.path.name: folder for folder in map(sweep.run_folder, configs)}
    counted = finished_runs(sweep) & set(folders)
    bar = progress_display(len(configs), "sweep", unit="runs", initial=len(counted), disable=not progress,
                           interval_s=SWEEP_LINE_INTERVAL_S, fraction=0)
    # Runs another process is working on (a second sweep over the folder) are left for a second pass, so that two
    # sweeps over one grid share its runs instead of the second waiting behind the first run by run; in the second
    # pass each waits for its run, then finds it done. The display counts them as the other process tests them:
    # otherwise each of two sweeps side by side counts half the runs and projects the time left about twice too long.
    results, busy = [], []

    def count(name: str) -> None:
        if name not in counted:
            counted.add(name)
            bar.update(1)

    def count_tested_elsewhere() -> None:
        for name in busy:
            if folders[name].metrics_file("test").is_file():
                count(name)

    for summary in run_jobs(functools.partial(run_cell, settings=settings, wait_if_busy=False), configs, workers,
                            scheduler):
        if summary.get("busy"):
            busy.append(summary["run"])
        else:
            results.append(summary)
            count(summary["run"])
        count_tested_elsewhere()
    busy_configs = [config for config in configs if sweep.run_folder(config).path.name in busy]
    if busy_configs:  # (a runner starts its worker processes even for no jobs)
        for summary in run_jobs(functools.partial(run_cell, settings=settings), busy_configs, workers, scheduler):
            results.append(summary)
            count(summary["run"])
            count_tested_elsewhere()
    bar.close()
    if sweep.plan:
        run_baselines(sweep)
    return sorted(results, key=lambda r: r["run"])
