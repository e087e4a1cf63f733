"""Real predictions (the classroom notebook's section 8c): the distributions of h* that NLMs trained on the paper's
data predict for a few test states, N beside TN, with the state's bound l and its h*.

The runs are the committed paper-scale ones (reports/paper-scale/runs: NLM trained on data/paper until flat), so
the section needs no training; the states are spread over the test split's h*, smallest to largest, where the
paper's test sizes lie beyond the training sizes and the two losses part ways.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from tnlib.learning.evaluation import split_distributions
from tnlib.files import REPO_ROOT
from tnlib.learning.run_files import RunDir
from tnlib.learning.heads import HeadConfig
from tnlib.learning.training import TrainConfig, load_items, read_run_config
from tnlib.paper import MAIN_TABLES_MODEL, OPEN_BOUND_EPSILON

#: The committed paper-scale run folders (``tnlib sweep --preset paper-scale``).
PAPER_SCALE_RUNS = REPO_ROOT / "reports" / "paper-scale" / "runs"
# Points of a density curve over the state's range, and more just above the open bound l - 0.1, where a TN whose
# mu lies far below l puts nearly all its mass within a fraction of a step.
GRID_POINTS = 600
BOUND_POINTS = 300


@dataclass(frozen=True)
class StateDistributions:
    """One test state: its h*, its bound l (LM-cut) and h_FF, and per run label the predicted mu, sigma, the
    heuristic GBFS plans with (N: mu, TN: the truncated mean), where its support starts and its density on
    ``grid``."""

    h_star: float
    lower: float
    ff: float
    mu: dict[str, float]
    sigma: dict[str, float]
    estimate: dict[str, float]
    support_low: dict[str, float]  # where each density starts: a TN's open bound l - 0.1, -inf for N
    grid: np.ndarray
    density: dict[str, np.ndarray]


def paper_scale_run_name(domain: str, configuration: str, distribution: str, seed: int) -> str:
    """The name a paper-scale NLM run of this cell and seed has (:attr:`TrainConfig.name`: l = LM-cut, the default
    sigma link and fixed value)."""
    sigma, residual = configuration.split("/")
    head = HeadConfig(distribution=distribution, sigma=sigma, residual=residual)
    return TrainConfig(domain=domain, model=MAIN_TABLES_MODEL, head=head, seed=seed).name


def paper_scale_run(domain: str, configuration: str, distribution: str, seed: int = 0,
                    runs: str | Path = PAPER_SCALE_RUNS) -> Path:
    """The folder of one paper-scale run (``configuration`` as ``"learn/ff"``); a ValueError naming the runs
    there when it holds none of that name trained to its end (and tested)."""
    name = paper_scale_run_name(domain, configuration, distribution, seed)
    folder = Path(runs) / name
    if not RunDir(folder).metrics_file("test").is_file():  # trained to its end and tested, not still training
        trained = sorted(p.name for p in Path(runs).glob("*") if RunDir(p).metrics_file("test").is_file())
        raise ValueError(f"no trained run {name} in {runs}; trained there: {', '.join(trained) or 'none'}")
    return folder


def trained_seeds(domain: str, configuration: str, runs: str | Path = PAPER_SCALE_RUNS) -> list[int]:
    """The seeds of which both an N and a TN paper-scale run of ``domain`` and ``configuration`` are trained and
    tested (:func:`paper_scale_run` finds them)."""
    seeds = []
    prefix = paper_scale_run_name(domain, configuration, "TN", 0).rsplit("-s", 1)[0]
    for folder in sorted(Path(runs).glob(f"{prefix}-s*")):
        seed = int(folder.name.rsplit("-s", 1)[1])
        try:
            for distribution in ("N", "TN"):
                paper_scale_run(domain, configuration, distribution, seed, runs)
        except ValueError:
            continue
        seeds.append(seed)
    return sorted(seeds)


def spread_states(h_star: np.ndarray, count: int) -> list[int]:
    """Indices of ``count`` states spread evenly over the sorted h* (the smallest and the largest included), in
    the order of their h*; ties keep the split's order."""
    order = np.argsort(h_star, kind="stable")
    picks = np.unique(np.round(np.linspace(0, len(order) - 1, min(count, len(order)))).astype(int))
    return [int(order[p]) for p in picks]


def state_distributions(runs: dict[str, str | Path], count: int = 6, split: str = "test",
                        data_root: str | None = None) -> list[StateDistributions]:
    """:class:`StateDistributions` of ``count`` states of ``split`` (:func:`spread_states`) under each run of
    ``runs`` (label -> run folder; runs of one domain and dataset, whose lower bound is LM-cut)."""
    configs = {label: read_run_config(folder) for label, folder in runs.items()}
    if len({config.domain for config in configs.values()}) != 1:
        raise ValueError(f"runs of one domain only: {', '.join(f'{k}: {c.domain}' for k, c in configs.items())}")
    predictions, chosen = {}, None
    for label, folder in runs.items():
        config = configs[label]
        if data_root is not None:
            config.data_root = data_root
        items = load_items(config, split)  # the split's states in its own order, targets as this run reads them
        if chosen is None:  # the same states for every run
            chosen = spread_states(np.array([item["h_star"] for item in items]), count)
        predictions[label] = split_distributions(folder, split, [items[i] for i in chosen])[1:]
    first = next(iter(predictions.values()))[1]
    states = []
    for k in range(len(first["h_star"])):
        h_star, lower = float(first["h_star"][k]), float(first["lower"][k])
        mus = {label: float(p["mu"][k]) for label, (_, p) in predictions.items()}
        sigmas = {label: float(p["sigma"][k]) for label, (_, p) in predictions.items()}
        estimates = {label: float(p["estimate"][k]) for label, (_, p) in predictions.items()}
        low = min([lower - 2.0] + [mus[label] - 4 * sigmas[label] for label in mus])
        high = max([h_star + 2.0, lower + 2.0] + [mus[label] + 4 * sigmas[label] for label in mus])
        bound = lower - OPEN_BOUND_EPSILON  # a TN's support starts here
        grid = np.unique(np.concatenate([np.linspace(low, high, GRID_POINTS),
                                         np.linspace(bound, min(high, bound + 1.0), BOUND_POINTS)]))
        x = torch.tensor(grid, dtype=torch.float64)[:, None]  # against every state's distribution: column k
        density = {label: distribution.torch_distribution.log_prob(x)[:, k].exp().numpy()
                   for label, (distribution, _) in predictions.items()}
        support_low = {label: bound if distribution.distribution == "TN" else -np.inf
                       for label, (distribution, _) in predictions.items()}
        states.append(StateDistributions(h_star, lower, float(first["ff"][k]), mus, sigmas, estimates, support_low,
                                         grid, density))
    return states


def format_state_table(states: list[StateDistributions]) -> str:
    """One line per state: h*, l, h_FF, then each run's mu and its heuristic (the truncated mean for TN)."""
    labels = list(states[0].mu)
    header = f"{'h*':>5} {'l':>5} {'h_FF':>5}" + "".join(f" {label + ' mu':>12} {label + ' heuristic':>14}"
                                                       for label in labels)
    lines = [header]
    for state in states:
        lines.append(f"{state.h_star:5.0f} {state.lower:5.0f} {state.ff:5.0f}" + "".join(
            f" {state.mu[label]:12.2f} {state.estimate[label]:14.2f}" for label in labels))
    return "\n".join(lines)
