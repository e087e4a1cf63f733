"""Sweeps: train, evaluate and plan over domains x models x configurations x seeds, locally or on Dask.

A :class:`Sweep` names the grid; :func:`run_sweep` runs each cell -- ``train`` (resumes from ``last.pt``),
``evaluate_run`` on the test split (``metrics-test.json``), then GBFS over the plan split
(``planning-*.jsonl``, resumable) -- plus the h_FF planning baseline per domain. Every stage skips what an earlier,
interrupted run already finished, so rerunning the same sweep picks up where it stopped. Cells run one after the
other by default, on a local process pool with ``workers > 1``, or on a Dask cluster with ``scheduler`` (the
address of a running ``distributed`` scheduler); results land in ``out_dir`` either way (a shared filesystem on
a cluster).
"""
from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Sequence

from tnlib.executors import run_jobs
from tnlib.experiments.run_dir import ResultsDir, RunDir
from tnlib.paper import DOMAINS, MAX_EVALUATIONS, PAPER_CONFIGS


@dataclass
class Sweep:
    """A grid of training runs and what to do with each."""

    domains: Sequence[str] = DOMAINS
    models: Sequence[str] = ("nlm",)
    configs: Sequence[tuple[str, str]] = PAPER_CONFIGS
    distributions: Sequence[str] = ("N", "TN")
    seeds: Sequence[int] = (0, 1)
    lower_bound: str = "lmcut"
    steps: int = 1000
    batch_size: int = 64
    eval_every: int = 100
    instances: int | None = None  # training instances to subsample (the paper: 400 of its larger sets); None: all
    model_args: dict = field(default_factory=dict)  # per model name, e.g. {"nlm": {"depth": 5}}
    data_root: str | None = None
    out_dir: str = "runs/small"
    device: str | None = None
    plan: bool = True
    plan_instances: int | None = None  # the first N instances of the plan split (None: all)
    max_evaluations: int = MAX_EVALUATIONS

    @classmethod
    def from_parameters(cls, **params) -> "Sweep":
        """A checked sweep from keyword parameters (the experiments notebook's and ``tnlib sweep``'s).

        Keys are the fields of :class:`Sweep`; those left out keep their defaults. ``configs`` may be
        ``"sigma/residual"`` strings (``"learn/ff"``) or pairs; ``out_dir`` is made absolute. A ValueError names
        the first bad parameter.
        """
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(params) - known)
        if unknown:
            raise ValueError(f"unknown sweep parameters: {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        values = {**asdict(cls()), **params}
        domains = values["domains"]
        unknown_domains = [d for d in domains if d not in DOMAINS]
        if unknown_domains or not domains:
            raise ValueError(f"domains: unknown {unknown_domains} (choose from {', '.join(DOMAINS)})"
                             if unknown_domains else "domains: name at least one")
        pairs = []
        for config in values["configs"]:
            parts = list(config) if isinstance(config, (tuple, list)) else str(config).split("/")
            if len(parts) != 2:
                raise ValueError(f"configs must be sigma/residual pairs such as 'learn/ff', got {config!r}")
            pairs.append(tuple(parts))
        for name in ("steps", "batch_size", "eval_every", "max_evaluations"):
            value = values[name]
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        plan_instances = values["plan_instances"]
        if plan_instances is not None and (not isinstance(plan_instances, int) or plan_instances < 1):
            raise ValueError(f"plan_instances must be None or an integer >= 1, got {plan_instances!r}")
        if not values["seeds"]:
            raise ValueError("seeds: name at least one")
        for name in ("domains", "models", "distributions", "seeds"):
            values[name] = list(values[name])
        sweep = cls(**{**values, "configs": pairs, "out_dir": str(Path(values["out_dir"]).resolve())})
        sweep.train_configs()  # the training configuration's own checks (model, distribution, sigma, residual names)
        return sweep

    def train_configs(self) -> list[dict]:
        from tnlib.learning.training import TrainConfig

        configs = []
        for domain in self.domains:
            for model in self.models:
                for sigma, residual in self.configs:
                    for distribution in self.distributions:
                        for seed in self.seeds:
                            config = TrainConfig(
                                domain=domain, model=model, distribution=distribution, sigma=sigma,
                                residual=residual, lower_bound=self.lower_bound, steps=self.steps,
                                batch_size=self.batch_size, eval_every=self.eval_every,
                                checkpoint_every=self.eval_every, instances=self.instances, seed=seed,
                                model_args=dict(self.model_args.get(model, {})), data_root=self.data_root,
                                out_dir=self.out_dir, device=self.device, progress=False)
                            configs.append(asdict(config))
        return configs


def run_cell(config: dict, plan: bool = True, plan_instances: int | None = None,
             max_evaluations: int = MAX_EVALUATIONS) -> dict:
    """Train (or resume) one configuration, evaluate it on the test split and plan with it."""
    import torch

    from tnlib.learning.evaluation import evaluate_run
    from tnlib.experiments.tables import summarize
    from tnlib.learning.learned_heuristic import plan_split
    from tnlib.learning.training import TrainConfig, train

    torch.set_num_threads(1)  # cells run side by side; one thread each keeps the machine's cores busy, no more
    run_dir = train(TrainConfig.from_dict(config))
    metrics_path = RunDir(run_dir).metrics_file("test")
    best_step = torch.load(RunDir(run_dir).best, map_location="cpu", weights_only=False)["step"]
    metrics = json.loads(metrics_path.read_text()) if metrics_path.is_file() else None
    if metrics is None or metrics.get("checkpoint_step") != best_step:
        metrics = evaluate_run(run_dir, "test")
    summary = {"run": run_dir.name, "mse": metrics["mse"], "nll": metrics["nll"]}
    if plan:
        estimates = ("default", "clip") if config["distribution"] == "N" else ("default",)
        for estimate in estimates:
            records = plan_split(run_dir, estimate, limit=plan_instances, max_evaluations=max_evaluations)
            summary[f"coverage_{estimate}"] = summarize(records, max_evaluations)["coverage"]
    return summary


def run_baselines(sweep: Sweep) -> None:
    from tnlib.learning.learned_heuristic import plan_baseline

    for domain in sweep.domains:
        plan_baseline(sweep.data_root, domain, "ff", out_dir=sweep.out_dir, limit=sweep.plan_instances,
                      max_evaluations=sweep.max_evaluations)


def run_sweep(sweep: Sweep, workers: int = 1, scheduler: str | None = None, progress: bool = True) -> list[dict]:
    """Run every cell of the sweep (resuming finished work) and the h_FF baselines; returns the cells' summaries."""
    from tqdm.auto import tqdm

    Path(sweep.out_dir).mkdir(parents=True, exist_ok=True)
    ResultsDir(sweep.out_dir).sweep_file.write_text(json.dumps(asdict(sweep), indent=2) + "\n")
    configs = sweep.train_configs()
    kwargs = dict(plan=sweep.plan, plan_instances=sweep.plan_instances, max_evaluations=sweep.max_evaluations)
    bar = tqdm(total=len(configs), desc="sweep", disable=not progress)
    results = []
    for summary in run_jobs(functools.partial(run_cell, **kwargs), configs, workers, scheduler):
        results.append(summary)
        bar.update(1)
    bar.close()
    if sweep.plan:
        run_baselines(sweep)
    return sorted(results, key=lambda r: r["run"])
