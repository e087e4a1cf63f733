"""A sweep's settings (:class:`Sweep`): its grid of domains x models x configurations x distributions x seeds, the
training configuration its runs share (one :class:`tnlib.learning.training.TrainConfig`, the template each run sets
its place in the grid on), training until flat, the data, and how its runs are planned; and the record of them a
results folder keeps (``sweep.json``: :meth:`Sweep.to_record`, read back by :meth:`Sweep.from_record`, which also
reads a flat record, the template's settings beside the sweep's own).

``Sweep()`` is the paper's setting: NLM, the four (sigma, residual) configurations, N and TN, five seeds, 40,000
steps at batch 256 on 400 training instances of the ``paper`` data profile, planning every plan instance with the
paper's evaluation limit -- hundreds of GPU-hours. Named presets (:data:`tnlib.experiments.presets.PRESETS`) start
from it: ``Sweep.preset("small")`` is what ``make reproduce`` runs on 2 CPU cores. Running a sweep is
:mod:`tnlib.experiments.running.sweep`'s; the reports read what a folder's sweep was through
:meth:`tnlib.experiments.results_dir.ResultsDir.read_sweep`, so the sweep's settings live here, at the base both
wings of experiments/ read.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Sequence

from tnlib.data.manifest import dataset_root, default_data_root
from tnlib.data.plan_sets import find_plan_sets
from tnlib.data.profiles import PROFILES, params_label
from tnlib.data.schema import MANIFEST, PLAN_SETS
from tnlib.errors import DatasetError
from tnlib.experiments.presets import PRESETS
from tnlib.files import read_json
from tnlib.learning.heads import HeadConfig
from tnlib.learning.models import check_model_args
from tnlib.learning.run_files import RunDir
from tnlib.learning.training import TrainConfig
from tnlib.learning.until_flat import EXTEND_STEPS, check_until_flat
from tnlib.paper import DISTRIBUTIONS, DOMAINS, SEEDS, TABLE1_CONFIGS, TRAIN_INSTANCES
from tnlib.planning.search_settings import PAPER, PAPER_SEARCH, SearchSettings

# The template's settings a sweep's parameters name (`tnlib sweep`'s flags, the experiments notebook's parameters,
# the presets and a flat sweep.json), flat beside the sweep's own: the training configuration's,
# and its head's.
TRAIN_PARAMETERS = ("steps", "batch_size", "eval_every", "instances", "device")
HEAD_PARAMETERS = ("lower_bound", "upper_bound", "sigma_link", "fixed_sigma")
# What each run sets on the template (TrainConfig.to_dict's names): its place in the grid, and what the sweep's own
# settings decide -- the model's arguments, the dataset path, the results folder, a checkpoint at every validation
# (a run resumes from its last validated step), no progress display of its own. sweep.json's template leaves them out.
PER_RUN_SETTINGS = ("domain", "model", "seed", "distribution", "sigma", "residual", "model_args", "data_root",
                    "out_dir", "run_name", "checkpoint_every", "progress")
# The grid's axes (lists in a sweep, whatever sequence they are given as).
GRID_AXES = ("domains", "models", "configs", "distributions", "seeds")


def paper_train_template() -> TrainConfig:
    """The training configuration the paper's runs share: TrainConfig's defaults (the paper's steps, batch size and
    head) on the paper's 400 training instances per run."""
    return TrainConfig(instances=TRAIN_INSTANCES)


@dataclass
class Sweep:
    """A grid of training runs and what to do with each. The defaults are the paper's settings (see the module
    docstring); :meth:`preset` starts from a named smaller one, :meth:`from_parameters` from flat parameters."""

    domains: Sequence[str] = DOMAINS
    # The paper's main tables are NLM's; HGN and linear regression (its appendix) are models=("nlm", "hgn", "linear").
    models: Sequence[str] = ("nlm",)
    configs: Sequence[tuple[str, str]] = TABLE1_CONFIGS
    distributions: Sequence[str] = DISTRIBUTIONS
    seeds: Sequence[int] = SEEDS
    # What every run trains by: steps, batch size, validation, training instances, device, and the head's bounds and
    # sigma settings ("h_sat" as upper bound: TN bounded above by a satisficing plan's cost during training, beyond
    # the paper). Each run sets PER_RUN_SETTINGS on it (train_configs).
    train: TrainConfig = field(default_factory=paper_train_template)
    # Train until flat (beyond the paper, which trains a fixed number of steps): with max_steps, a run whose
    # validation curve is still improving after the template's steps (the reports' rule,
    # tnlib.learning.until_flat.still_improving) trains on in chunks of extend_steps, each checked again, up to
    # max_steps. None: every run trains the template's steps.
    max_steps: int | None = None
    extend_steps: int = EXTEND_STEPS
    model_args: dict = field(default_factory=dict)  # per model name, e.g. {"nlm": {"depth": 5}}
    # The dataset: data_root when it is a dataset root, else its data_profile sub-folder (data_root None:
    # $TNLIB_DATA or <repo>/data).
    data_profile: str = "paper"
    data_root: str | None = None
    out_dir: str = "runs/paper"
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
    def parameter_names(cls) -> list[str]:
        """The names :meth:`from_parameters` takes, as :meth:`parameters` gives them: the sweep's own settings with
        the template's (:data:`HEAD_PARAMETERS`, :data:`TRAIN_PARAMETERS`) in its place."""
        return [name for f in fields(cls)
                for name in ((*HEAD_PARAMETERS, *TRAIN_PARAMETERS) if f.name == "train" else (f.name,))]

    def parameters(self) -> dict:
        """The sweep as flat parameters (:meth:`from_parameters`'s keys), the template's settings in its place."""
        shared = {**{name: getattr(self.train.head, name) for name in HEAD_PARAMETERS},
                  **{name: getattr(self.train, name) for name in TRAIN_PARAMETERS}}
        return {name: shared[name] if name in shared else getattr(self, name) for name in self.parameter_names()}

    @classmethod
    def from_parameters(cls, preset: str | None = None, **params) -> "Sweep":
        """A checked sweep from keyword parameters (the experiments notebook's and ``tnlib sweep``'s).

        Keys are :meth:`parameter_names` (the sweep's own settings, the template's flat beside them); those left out
        take the ``preset``'s values (None: the paper's, the defaults). ``configs`` may be ``"sigma/residual"``
        strings (``"learn/ff"``) or pairs; a single name (``domains="ferry"``, ``configs="learn/ff"``) or seed
        (``seeds=3``) stands for a list of one; ``instances`` and ``plan_instances`` may be ``"all"`` (None);
        ``out_dir`` is made absolute; ``model_args`` maps model names to constructor arguments they take;
        ``data_root``, when given, must be a folder. A ValueError names the first bad parameter.
        """
        if preset is not None and preset not in PRESETS:
            raise ValueError(f"unknown sweep preset {preset!r} (choose from {', '.join(PRESETS)})")
        known = cls.parameter_names()
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise ValueError(f"unknown sweep parameters: {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        values = _checked_parameters({**cls().parameters(), **PRESETS.get(preset or "paper", {}), **params})
        head = HeadConfig(**{name: values.pop(name) for name in HEAD_PARAMETERS})
        template = replace(paper_train_template(), head=head, **{name: values.pop(name) for name in TRAIN_PARAMETERS})
        sweep = cls(**{**values, "train": template, "out_dir": str(Path(values["out_dir"]).resolve())})
        sweep.train_configs()  # the training configuration's own checks (model, distribution, sigma, residual names)
        return sweep

    def to_record(self) -> dict:
        """The sweep as its results folder's ``sweep.json`` holds it: its own settings, and under ``train`` the
        template's as a run's ``config.json`` writes them (:meth:`TrainConfig.to_dict`) but for
        :data:`PER_RUN_SETTINGS`. JSON values: tuples as lists, as it is read back."""
        train = {name: value for name, value in self.train.to_dict().items() if name not in PER_RUN_SETTINGS}
        record = {f.name: train if f.name == "train" else getattr(self, f.name) for f in fields(self)}
        return json.loads(json.dumps(record))

    @classmethod
    def from_record(cls, record: dict) -> "Sweep":
        """The sweep a ``sweep.json`` record holds (:meth:`to_record`'s), or a flat one, where the
        template's settings (:data:`HEAD_PARAMETERS`, :data:`TRAIN_PARAMETERS`) stand beside the sweep's own: the
        one reader of that record. A setting the record lacks reads as the paper's sweep has it (``Sweep()``),
        what a sweep without that setting ran. A ValueError for a key no setting has, or a value a
        setting refuses."""
        if not isinstance(record, dict):
            raise ValueError(f"a sweep's record is a JSON object, not {type(record).__name__}")
        own = dict(record)
        shared = own.pop("train") if "train" in own else {
            name: own.pop(name) for name in (*HEAD_PARAMETERS, *TRAIN_PARAMETERS) if name in own}
        default = cls()
        template = {name: value for name, value in default.train.to_dict().items() if name not in PER_RUN_SETTINGS}
        unknown = sorted(set(own) - {f.name for f in fields(cls)}) + sorted(
            f"train.{name}" for name in set(shared if isinstance(shared, dict) else {}) - set(template))
        if not isinstance(shared, dict) or unknown:
            raise ValueError(f"not a sweep's settings: {', '.join(unknown) or 'train is no JSON object'}")
        values = {f.name: getattr(default, f.name) for f in fields(cls)}
        values.update(own)
        for axis in GRID_AXES:
            values[axis] = [tuple(v) if axis == "configs" else v for v in values[axis]]
        values["train"] = TrainConfig.from_dict({**default.train.to_dict(), **shared})
        return cls(**values)

    @property
    def search_settings(self) -> SearchSettings:
        """What GBFS plans under: the paper's counting protocol and this sweep's evaluation limit."""
        return SearchSettings(PAPER, self.max_evaluations)

    def dataset_path(self) -> Path:
        """The dataset root the runs read: ``data_root`` when it holds a manifest, else its ``data_profile``
        sub-folder (absolute, so run folders name it wherever they are read from)."""
        base = self.data_root_or_default()
        return (base if (base / MANIFEST).is_file() else base / self.data_profile).resolve()

    def data_root_or_default(self) -> Path:
        """``data_root`` when given, else the default data root (``$TNLIB_DATA`` or ``<repo>/data``)."""
        return Path(self.data_root) if self.data_root is not None else default_data_root()

    def train_configs(self) -> list[TrainConfig]:
        """The configuration of every run of the grid, domain by domain, then model, configuration, distribution and
        seed: what each cell trains. Each is the template with its :data:`PER_RUN_SETTINGS` set."""
        template = replace(self.train, data_root=str(self.dataset_path()), out_dir=self.out_dir,
                           checkpoint_every=self.train.eval_every, progress=False, run_name=None)
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
        mine = _compared(Sweep.from_parameters(**self.parameters()))
        for name in PRESETS:
            if _compared(Sweep.preset(name)) == mine:
                return name
        return None

    def settings_differing_from_paper(self) -> list[str]:
        """The parameters in which this sweep differs from the paper's (where the results go, the device and the
        parallelism aside)."""
        mine = _compared(self)
        return [name for name, value in _compared(Sweep.preset("paper")).items() if mine[name] != value]

    def runs(self) -> int:
        """The number of training runs: domains x models x configurations x distributions x seeds."""
        return (len(self.domains) * len(self.models) * len(self.configs) * len(self.distributions)
                * len(self.seeds))

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


def _check_no_repeats(name: str, values: list) -> None:
    """A ValueError naming a value an axis of the grid repeats: it would count its runs twice (in the run count and
    the cost), though each run folder is trained once."""
    seen = set()
    for value in values:
        if value in seen:
            shown = "/".join(value) if isinstance(value, tuple) else value
            raise ValueError(f"{name}: {shown!r} is named twice; name each value once")
        seen.add(value)


# Where a sweep's results go and how it runs them, not what they are: a preset is the same experiment whatever they are.
WHERE_AND_HOW = ("out_dir", "data_root", "device", "workers")


def _compared(sweep: Sweep) -> dict:
    """The sweep's parameters that say what experiment it is (:data:`WHERE_AND_HOW` aside), sequences as lists."""
    return {name: _as_lists(value) for name, value in sweep.parameters().items() if name not in WHERE_AND_HOW}


def _as_lists(value):
    if isinstance(value, (list, tuple)):
        return [_as_lists(v) for v in value]
    return value


def _checked_parameters(values: dict) -> dict:
    """Every parameter of a sweep (:meth:`Sweep.parameter_names`) checked and in its form: the grid's axes as
    lists, configurations as pairs, ``"all"`` as None; a ValueError naming the first bad one."""
    values = dict(values)
    for name in ("domains", "models", "configs", "distributions"):
        values[name] = _names(name, values[name])
    values["seeds"] = _seed_list(values["seeds"])
    unknown_domains = [d for d in values["domains"] if d not in DOMAINS]
    if unknown_domains:
        raise ValueError(f"domains: unknown {unknown_domains} (choose from {', '.join(DOMAINS)})")
    pairs = []
    for config in values["configs"]:
        parts = list(config) if isinstance(config, (tuple, list)) else str(config).split("/")
        if len(parts) != 2:
            raise ValueError(f"configs must be sigma/residual pairs such as 'learn/ff', got {config!r}")
        pairs.append(tuple(parts))
    values["configs"] = pairs
    for name in ("domains", "models", "configs", "distributions", "seeds"):
        _check_no_repeats(name, values[name])
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
    for model, args in model_args.items():
        check_model_args(model, args, setting=f"model_args[{model!r}]")
    if values["data_root"] is not None and not Path(values["data_root"]).is_dir():
        raise ValueError(f"data_root: no such folder {values['data_root']}")
    return values
