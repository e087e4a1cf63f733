"""A seconds-long CPU regression (the classroom notebook's section 8): Gaussian and Truncated Gaussian heuristic models
trained on synthetic states with an admissible lower bound, and their comparison over seeds."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
from scipy.special import ndtr

from tnlib.experiments.reporting.seed_statistics import paired_interval
from tnlib.learning.calibration import COVERAGE_LEVELS, Calibration, distribution_calibration
from tnlib.learning.heads import HeadConfig, Prediction, learned_sigma
from tnlib.learning.optimizer_step import optimizer_step
from tnlib.notebook.demo_tensors import DTYPE, single_thread
from tnlib.notebook.notebook_parameters import ClassroomParameters, check_regression_parameters, checked_int
from tnlib.paper import FIXED_SIGMAS


@dataclass(frozen=True)
class SyntheticHeuristicData:
    """States described by two features in [0, 1], their optimal cost h* and an admissible bound l <= h*."""

    features: torch.Tensor
    optimal_cost: torch.Tensor
    lower_bound: torch.Tensor


def make_synthetic_heuristic_data(num_states: int, generator: torch.Generator) -> SyntheticHeuristicData:
    """Draw ``num_states`` synthetic states.

    ``h* = round(2 + 8 z1 + 4 sin(3 z2) + noise)``, clipped at 0, with noise whose spread grows with z1
    (harder states are less predictable, as in planning). The bound is ``l = max(h* - gap, 0)`` with an
    integer gap that is 0 for about half of the states, like LM-cut, which is often exact: the features
    alone cannot tell the model how far a state is from its bound.
    """
    features = torch.rand(num_states, 2, generator=generator, dtype=DTYPE)
    trend, spread = _trend_and_spread(features[:, 0], features[:, 1], torch.sin)
    noise = torch.randn(num_states, generator=generator, dtype=DTYPE) * spread
    optimal_cost = torch.clamp(torch.round(trend + noise), min=0.0)
    uniform = torch.rand(num_states, generator=generator, dtype=DTYPE).clamp_min(1e-12)
    gap = torch.floor(-_GAP_SCALE * torch.log(uniform))  # geometric: P(gap = 0) = 1 - exp(-2/3) ~ 0.49
    lower_bound = torch.clamp(optimal_cost - gap, min=0.0)
    return SyntheticHeuristicData(features, optimal_cost, lower_bound)


_GAP_SCALE = 1.5


def _trend_and_spread(z1, z2, sin):
    """The generator's mean cost and noise spread of states with features ``z1``, ``z2`` (torch or numpy: ``sin``
    is the library's): the one place both the generator and :func:`bayes_optimal_cost` read them from."""
    return 2.0 + 8.0 * z1 + 4.0 * sin(3.0 * z2), 0.5 + 2.0 * z1


def bayes_optimal_cost(data: SyntheticHeuristicData) -> np.ndarray:
    """E[h* | z, l] under the generator of :func:`make_synthetic_heuristic_data`: the best any model can predict
    from the features and the bound (its MSE is the floor of section 8's experiment). The posterior over the
    integer h* = v is P(v | z) P(l | v): P(v | z) is the rounded, clipped normal's mass on v, and l = max(v - g, 0)
    with the gap's P(g) = exp(-g / 1.5) - exp(-(g + 1) / 1.5), so P(l | v) = P(g = v - l) for l > 0 and P(g >= v)
    for l = 0."""
    z1, z2 = (data.features[:, k].numpy()[:, None] for k in (0, 1))
    trend, spread = _trend_and_spread(z1, z2, np.sin)
    values = np.arange(0, int(np.ceil(trend.max() + 12 * spread.max())) + 1)[None, :].astype(np.float64)
    upper = ndtr((values + 0.5 - trend) / spread)
    prior = upper - np.where(values > 0, ndtr((values - 0.5 - trend) / spread), 0.0)
    lower = data.lower_bound.numpy()[:, None]
    gap = values - lower
    at_least = np.exp(-np.maximum(gap, 0.0) / _GAP_SCALE)  # P(g >= gap)
    likelihood = np.where(lower > 0, np.where(gap >= 0, at_least - np.exp(-(gap + 1) / _GAP_SCALE), 0.0),
                          np.exp(-values / _GAP_SCALE))
    posterior = prior * likelihood
    return (posterior * values).sum(axis=1) / posterior.sum(axis=1)


#: The models of :func:`run_synthetic_regression`, in display order, with their labels.
MODEL_LABELS: dict[str, str] = {
    "gaussian_mse": "Gaussian, fixed sigma (MSE)",
    "gaussian": "Gaussian, learned sigma",
    "gaussian_mse_bound": "Gaussian, fixed sigma (MSE), l as an input",
    "gaussian_bound": "Gaussian, learned sigma, l as an input",
    "truncated": "Truncated Gaussian, learned sigma, open bound l - eps",
}


#: Short column headers of the same models, for tables with a column per model.
MODEL_COLUMN_LABELS: dict[str, str] = {
    "gaussian_mse": "N fixed (MSE)",
    "gaussian": "N learned",
    "gaussian_mse_bound": "N fixed, reads l",
    "gaussian_bound": "N learned, reads l",
    "truncated": "TN",
}


@dataclass(frozen=True)
class SyntheticModel:
    """One model of :data:`MODEL_LABELS`: its head as the learning stage describes one (the distribution, a learned
    or fixed sigma; no residual, l the lower bound) and whether its network reads l beside the features."""

    head: HeadConfig
    reads_bound: bool = False


#: The models of :func:`run_synthetic_regression`, by their keys in :data:`MODEL_LABELS`.
SYNTHETIC_MODELS: dict[str, SyntheticModel] = {
    "gaussian_mse": SyntheticModel(HeadConfig("N", "fixed", residual="none")),
    "gaussian": SyntheticModel(HeadConfig("N", "learn", residual="none")),
    "gaussian_mse_bound": SyntheticModel(HeadConfig("N", "fixed", residual="none"), reads_bound=True),
    "gaussian_bound": SyntheticModel(HeadConfig("N", "learn", residual="none"), reads_bound=True),
    "truncated": SyntheticModel(HeadConfig("TN", "learn", residual="none")),
}

#: The models whose network reads the bound l beside the features (the others see the features only).
MODELS_READING_THE_BOUND = tuple(kind for kind, model in SYNTHETIC_MODELS.items() if model.reads_bound)


#: The point estimates compared on the test states, with their labels.
ESTIMATE_LABELS: dict[str, str] = {
    "mu": "mu",
    "clipped": "max(mu, l)",
    "truncated_mean": "TN mean",
}


# Centre and spread of the typical cost, so that the network's raw outputs start near sensible values.
_COST_CENTRE, _COST_SPREAD = 8.0, 5.0


class _HeuristicNetwork(torch.nn.Module):
    """Features (and, with ``reads_bound``, the bound l scaled like the cost) -> (mu, sigma's raw output): a
    one-hidden-layer tanh network."""

    def __init__(self, hidden_units: int, reads_bound: bool = False) -> None:
        super().__init__()
        self.reads_bound = reads_bound
        self.body = torch.nn.Sequential(torch.nn.Linear(3 if reads_bound else 2, hidden_units), torch.nn.Tanh(),
                                        torch.nn.Linear(hidden_units, 2))

    def forward(self, features: torch.Tensor, lower_bound: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.reads_bound:
            features = torch.cat([features, ((lower_bound - _COST_CENTRE) / _COST_SPREAD)[:, None]], dim=1)
        output = self.body(features)
        return _COST_CENTRE + _COST_SPREAD * output[:, 0], output[:, 1]


@dataclass
class RegressionResult:
    """What :func:`run_synthetic_regression` measured.

    ``test_mse_curve[model]`` is the test MSE of the model's planning heuristic (mu for the Gaussians, the
    TN mean for the Truncated Gaussian) after each step in ``recorded_steps``; ``train_nll[model]`` its
    training loss at the same steps. ``test_mse[model][estimate]`` compares the point estimates after
    training (``truncated_mean`` only for the truncated model). ``lower_bound_mse`` is the MSE of using l
    itself; ``truncated_mean_minus_bound`` is the smallest ``TN mean - l`` over the test states; ``best_mse`` the
    test MSE of the best possible predictor from features and l, :func:`bayes_optimal_cost`; ``calibration[model]``
    how well the model's whole predicted distribution fits the test states (:class:`Calibration`).
    """

    recorded_steps: list[int]
    test_mse_curve: dict[str, list[float]]
    train_nll: dict[str, list[float]]
    test_mse: dict[str, dict[str, float]]
    lower_bound_mse: float
    truncated_mean_minus_bound: float
    best_mse: float
    test_optimal_cost: np.ndarray = field(repr=False)
    test_lower_bound: np.ndarray = field(repr=False)
    test_heuristic: dict[str, np.ndarray] = field(repr=False)
    calibration: dict[str, Calibration] = field(repr=False)


def _prediction(head: HeadConfig, network: _HeuristicNetwork, data: SyntheticHeuristicData,
                margin: float) -> Prediction:
    """The head's predicted distribution of h* on ``data``: sigma as learning's heads make it (softplus plus a
    floor, or the paper's fixed value), a TN's support open at l - ``margin``."""
    mu, raw_sigma = network(data.features, data.lower_bound)
    sigma = (learned_sigma(raw_sigma, head.sigma_link) if head.sigma == "learn"
             else torch.full_like(mu, FIXED_SIGMAS[head.fixed_sigma]))
    return Prediction(head.distribution, mu, sigma, data.lower_bound, torch.full_like(mu, math.inf), margin)


def run_synthetic_regression(
    seed: int = ClassroomParameters.seed,
    num_train: int = ClassroomParameters.num_train,
    num_test: int = ClassroomParameters.num_test,
    steps: int = ClassroomParameters.steps,
    learning_rate: float = ClassroomParameters.learning_rate,
    hidden_units: int = ClassroomParameters.hidden_units,
    open_bound_margin: float = ClassroomParameters.open_bound_margin,
    record_every: int | None = None,
) -> RegressionResult:
    """Train the models of :data:`MODEL_LABELS` on the same synthetic data (full batch, Adam).

    Every model sees the features; those of :data:`MODELS_READING_THE_BOUND` also read the admissible bound l as an
    input, and the Truncated Gaussian gets l as the lower end of its support, at training and at test (planning)
    time. Deterministic for a seed: data and
    initial weights come from seeded generators and full-batch CPU training has no other randomness.
    """
    check_regression_parameters(seed, num_train, num_test, steps, learning_rate, hidden_units, open_bound_margin)
    with single_thread():
        return _run_synthetic_regression(seed, num_train, num_test, steps, learning_rate, hidden_units, open_bound_margin, record_every)


def _run_synthetic_regression(
    seed: int,
    num_train: int,
    num_test: int,
    steps: int,
    learning_rate: float,
    hidden_units: int,
    open_bound_margin: float,
    record_every: int | None,
) -> RegressionResult:
    data_generator = torch.Generator().manual_seed(seed)
    train = make_synthetic_heuristic_data(num_train, data_generator)
    test = make_synthetic_heuristic_data(num_test, data_generator)
    interval = record_every or max(1, steps // 50)
    recorded_steps = sorted({0, *range(interval, steps + 1, interval), steps})

    test_mse_curve: dict[str, list[float]] = {}
    train_nll: dict[str, list[float]] = {}
    test_mse: dict[str, dict[str, float]] = {}
    test_heuristic: dict[str, np.ndarray] = {}
    calibrations: dict[str, Calibration] = {}
    truncated_margin = math.inf
    for kind in MODEL_LABELS:
        head = SYNTHETIC_MODELS[kind].head
        # Same initial weights for every model (seeded per run, isolated from the global RNG).
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed * 1000 + 17)
            network = _HeuristicNetwork(hidden_units, SYNTHETIC_MODELS[kind].reads_bound).to(DTYPE)
        optimizer = torch.optim.Adam(network.parameters(), lr=learning_rate)

        test_mse_curve[kind], train_nll[kind] = [], []
        for step in range(steps + 1):
            loss = _prediction(head, network, train, open_bound_margin).nll(train.optimal_cost).mean()
            if step in recorded_steps:
                with torch.no_grad():
                    planning = _prediction(head, network, test, open_bound_margin).point_estimate()
                test_mse_curve[kind].append(float(((planning - test.optimal_cost) ** 2).mean()))
                train_nll[kind].append(loss.item())
            if step == steps:
                break
            optimizer_step(optimizer, network.parameters(), loss)  # full batch: no clip

        with torch.no_grad():
            prediction = _prediction(head, network, test, open_bound_margin)
            planning = prediction.point_estimate()
        mu = prediction.mu
        estimates = {"mu": mu, "clipped": torch.maximum(mu, test.lower_bound)}
        if head.distribution == "TN":
            estimates["truncated_mean"] = planning
            truncated_margin = float((planning - test.lower_bound).min())
        test_mse[kind] = {name: float(((value - test.optimal_cost) ** 2).mean()) for name, value in estimates.items()}
        test_heuristic[kind] = planning.numpy()
        with torch.no_grad():  # every model's PIT from the same uniforms: their differences are the models'
            calibrations[kind] = distribution_calibration(
                prediction.torch_distribution, test.optimal_cost, test.lower_bound,
                torch.Generator().manual_seed(seed * 1000 + 29))

    return RegressionResult(
        recorded_steps=recorded_steps,
        test_mse_curve=test_mse_curve,
        train_nll=train_nll,
        test_mse=test_mse,
        lower_bound_mse=float(((test.lower_bound - test.optimal_cost) ** 2).mean()),
        best_mse=float(((bayes_optimal_cost(test) - test.optimal_cost.numpy()) ** 2).mean()),
        truncated_mean_minus_bound=truncated_margin,
        test_optimal_cost=test.optimal_cost.numpy(),
        test_lower_bound=test.lower_bound.numpy(),
        test_heuristic=test_heuristic,
        calibration=calibrations,
    )


#: The comparisons section 8 makes over seeds: the Truncated Gaussian's mean against each other model's planning
#: heuristic and clipped estimate (the MSE model that reads l is the fair one: it has l as the TN has).
SEED_COMPARISONS = (("gaussian_mse_bound", "mu"), ("gaussian_mse_bound", "clipped"), ("gaussian", "clipped"),
                    ("gaussian_mse", "clipped"))


@dataclass
class SeedComparison:
    """:func:`compare_over_seeds`'s results: per seed the :class:`RegressionResult`'s test MSEs and best MSE."""

    seeds: list[int]
    test_mse: list[dict[str, dict[str, float]]]
    best_mse: list[float]
    recorded_steps: list[int]
    curves: list[dict[str, list[float]]]  # per seed, each model's test-MSE curve at ``recorded_steps``

    def curve_step(self, step: int) -> int:
        """The first recorded step at or after ``step`` (the last one when training stopped before it)."""
        return next((s for s in self.recorded_steps if s >= step), self.recorded_steps[-1])

    def curve_differences(self, kind: str, step: int) -> list[float]:
        """Per seed, the TN mean's test MSE minus ``kind``'s planning heuristic's at :meth:`curve_step`."""
        at = self.recorded_steps.index(self.curve_step(step))
        return [c["truncated"][at] - c[kind][at] for c in self.curves]

    def differences(self, kind: str, estimate: str) -> list[float]:
        """Per seed, the TN mean's test MSE minus ``kind``'s ``estimate``'s (negative: the TN mean is better)."""
        return [m["truncated"]["truncated_mean"] - m[kind][estimate] for m in self.test_mse]


def compare_over_seeds(seeds, **settings) -> SeedComparison:
    """:func:`run_synthetic_regression` for every seed (each its own data and initial weights) with the same
    ``settings``: what section 8 compares, with enough runs to tell a real difference from the seed's noise."""
    seeds = [checked_int("seed", seed, 0) for seed in seeds]
    if len(seeds) < 2:
        raise ValueError(f"seeds: at least two to compare across seeds, got {seeds}")
    results = [run_synthetic_regression(seed=seed, **settings) for seed in seeds]
    return SeedComparison(seeds, [r.test_mse for r in results], [r.best_mse for r in results],
                          results[0].recorded_steps, [r.test_mse_curve for r in results])


def format_seed_comparison(comparison: SeedComparison) -> str:
    """Per seed the test MSE of each model's planning heuristic, the TN mean and the best possible; then the TN
    mean against each of :data:`SEED_COMPARISONS`, paired by seed (same data): mean difference and its 95%
    t-interval."""
    kinds = [k for k in MODEL_LABELS if k != "truncated"]
    header = (f"{'seed':>4s}" + "".join(f"{MODEL_COLUMN_LABELS[k]:>20s}" for k in kinds)
              + f"{'TN mean':>10s}{'best possible':>15s}")
    lines = ["test MSE of each planning heuristic (mu for the Gaussians)", header, "-" * len(header)]
    for seed, mse, best in zip(comparison.seeds, comparison.test_mse, comparison.best_mse):
        lines.append(f"{seed:>4d}" + "".join(f"{mse[k]['mu']:20.3f}" for k in kinds)
                     + f"{mse['truncated']['truncated_mean']:10.3f}{best:15.3f}")
    lines += ["", "TN mean minus ..., paired by seed: mean [95% t-interval]"]
    for kind, estimate in SEED_COMPARISONS:
        interval = paired_interval(comparison.differences(kind, estimate))
        label = f"{MODEL_LABELS[kind]}, {ESTIMATE_LABELS[estimate]}"
        if interval is None:
            lines.append(f"  {label}: too few seeds")
            continue
        verdict = "TN better" if interval["high"] < 0 else "TN worse" if interval["low"] > 0 else "no difference shown"
        lines.append(f"  {label:<50s} {interval['mean']:+.3f} [{interval['low']:+.3f}, {interval['high']:+.3f}]"
                     f"  {verdict}")
    return "\n".join(lines)


def format_curve_comparison(comparison: SeedComparison, step: int) -> str:
    """The TN mean against the MSE network that reads l during training: their test-MSE difference at ``step``,
    paired by seed, with its 95% t-interval (does the Truncated Gaussian get there faster?)."""
    interval = paired_interval(comparison.curve_differences("gaussian_mse_bound", step))
    step = comparison.curve_step(step)
    if interval is None:
        return f"at step {step}: too few seeds"
    return (f"at step {step}, TN mean minus {MODEL_LABELS['gaussian_mse_bound']}: {interval['mean']:+.3f} "
            f"[{interval['low']:+.3f}, {interval['high']:+.3f}]")


def format_regression_table(result: RegressionResult) -> str:
    """The test MSE of every (model, point estimate) pair as an aligned text table."""
    header = f"{'model':<54s}" + "".join(f"{label:>12s}" for label in ESTIMATE_LABELS.values())
    lines = [header, "-" * len(header)]
    for kind, label in MODEL_LABELS.items():
        cells = "".join(
            f"{result.test_mse[kind][name]:12.3f}" if name in result.test_mse[kind] else f"{'-':>12s}"
            for name in ESTIMATE_LABELS
        )
        lines.append(f"{label:<54s}{cells}")
    lines.append(f"{'the admissible bound l alone':<54s}{result.lower_bound_mse:12.3f}")
    return "\n".join(lines)


def format_calibration_table(result: RegressionResult) -> str:
    """Per model, the share of test states inside its central prediction intervals (randomised PIT, see
    :class:`Calibration`) at each of :data:`COVERAGE_LEVELS`, the 90% interval's mean width and the probability
    the model puts below l - 1/2."""
    # narrow enough for JupyterLab's output area (about 115 characters) without wrapping
    header = f"{'model':<54s}" + "".join(f"{f'{level:.0%}':>8s}" for level in COVERAGE_LEVELS) \
        + f"{'90% width':>11s}{'P(below l)':>12s}"
    lines = ["share of test states inside each central prediction interval (calibrated: the nominal share)",
             header, "-" * len(header)]
    for kind, label in MODEL_LABELS.items():
        check = result.calibration[kind]
        lines.append(f"{label:<54s}" + "".join(f"{check.coverage[level]:8.1%}" for level in COVERAGE_LEVELS)
                     + f"{check.mean_width[0.9]:11.2f}{check.mass_below_bound:12.1%}")
    return "\n".join(lines)
