"""The classroom notebook's small demonstrations: maximum likelihood, MSE as a Gaussian NLL, learned sigma, maximum
entropy, closed against open lower bounds (what a network does to a state whose bound equals h*), and what the
value of a fixed sigma changes (nothing for the Gaussian, the fit for the Truncated Gaussian)."""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch.distributions import Laplace, Normal, Uniform

from tnlib.distributions import TruncatedNormal
from tnlib.paper import DISTRIBUTIONS, FIXED_SIGMA, FIXED_SIGMAS
from tnlib.notebook.demo_tensors import DTYPE, single_thread, truncated_nll
from tnlib.notebook.explorer import describe_truncated_normal


def draw_gaussian_sample(num_points: int, loc: float, scale: float, seed: int) -> np.ndarray:
    """``num_points`` draws of ``N(loc, scale)``, reproducible for a seed."""
    generator = torch.Generator().manual_seed(seed)
    return (loc + scale * torch.randn(num_points, generator=generator, dtype=DTYPE)).numpy()


def gaussian_nll_curve(samples: np.ndarray, locs: np.ndarray, scale: float) -> np.ndarray:
    """Mean Gaussian NLL of ``samples`` for each candidate ``loc`` (fixed ``scale``)."""
    data = torch.as_tensor(samples, dtype=DTYPE)[None, :]
    candidates = torch.as_tensor(locs, dtype=DTYPE)[:, None]
    return (-Normal(candidates, torch.tensor(scale, dtype=DTYPE)).log_prob(data)).mean(dim=1).numpy()


def mse_nll_gap(samples: np.ndarray, predictions: np.ndarray) -> tuple[float, float]:
    """Check that MSE is the Gaussian NLL with sigma = 1/sqrt(2), up to a constant.

    Returns ``(largest, smallest)`` of ``NLL_i - (x_i - mu_i)^2`` over the points: both equal
    ``log sqrt(pi)`` (= 0.5724), the constant the MSE drops.
    """
    data = torch.as_tensor(samples, dtype=DTYPE)
    mean = torch.as_tensor(predictions, dtype=DTYPE)
    nll = -Normal(mean, torch.tensor(FIXED_SIGMA, dtype=DTYPE)).log_prob(data)
    gap = nll - (data - mean) ** 2
    return float(gap.max()), float(gap.min())


def nll_versus_scale(residuals: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """Mean Gaussian NLL of fixed ``residuals`` (x - mu) for each candidate sigma; minimal at their RMS."""
    data = torch.as_tensor(residuals, dtype=DTYPE)[None, :]
    candidates = torch.as_tensor(scales, dtype=DTYPE)[:, None]
    return (-Normal(torch.zeros((), dtype=DTYPE), candidates).log_prob(data)).mean(dim=1).numpy()


def equal_variance_entropies(variance: float = 1.0) -> dict[str, float]:
    """Differential entropies of a Gaussian, a Laplace and a uniform distribution with the same variance.

    The Gaussian's is the largest: it is the max-ent distribution on R for a given mean and variance.
    """
    std = math.sqrt(variance)
    half_width = math.sqrt(3.0) * std  # uniform on [-a, a] has variance a^2 / 3
    zero = torch.zeros((), dtype=DTYPE)
    distributions = {
        "Gaussian": Normal(zero, torch.tensor(std, dtype=DTYPE)),
        "Laplace": Laplace(zero, torch.tensor(std / math.sqrt(2.0), dtype=DTYPE)),
        "Uniform": Uniform(torch.tensor(-half_width, dtype=DTYPE), torch.tensor(half_width, dtype=DTYPE)),
    }
    return {name: float(distribution.entropy()) for name, distribution in distributions.items()}


def truncated_nll_decomposition(observed: float, loc: float, scale: float, low: float, high: float) -> dict[str, float]:
    """``-log TN(x) = -log N(x) + log Z``: the three terms, computed independently.

    Returns ``normal_nll``, ``log_normalizer`` and ``truncated_nll``; the first plus the second equals the
    third when ``low <= x <= high``.
    """
    description = describe_truncated_normal(loc, scale, low, high, observed)
    return {key: description[key] for key in ("normal_nll", "log_normalizer", "truncated_nll")}


#: Curve labels of :func:`bound_nll_curves` and :func:`descend_loc`.
GAUSSIAN_LABEL = "Gaussian N(mu, sigma)"
CLOSED_LABEL = "closed bound TN(mu, sigma, l, inf)"
OPEN_LABEL = "open bound TN(mu, sigma, l - eps, inf)"


#: The open-bound margins epsilon section 6's slider steps through, the paper's 0.1 among them.
OPEN_BOUND_MARGINS_SHOWN = (1.0, 0.5, 0.2, 0.1, 0.05)


def bound_loc_grid(observed: float, scale: float, margin: float, step: float = 0.1) -> np.ndarray:
    """The mu grid of section 6's figure: from below the open-bound minimiser (about ``observed - margin -
    scale**2 / margin``, exercise 4), and at least from ``observed - 25 scale``, to ``observed + 3 scale``."""
    low = min(observed - 25.0 * scale, observed - margin - 2.0 * scale ** 2 / margin)
    high = observed + 3.0 * scale
    return np.linspace(low, high, int(round((high - low) / step)) + 1)


def bound_nll_curves(observed: float, scale: float, margin: float, locs: np.ndarray) -> dict[str, np.ndarray]:
    """NLL of ``x = h*`` as a function of mu when the lower bound is tight (``l = h*``).

    The closed-bound curve decreases without limit as mu -> -inf (the failure mode); the open-bound curve,
    with ``l - margin``, has a finite minimum, as does the Gaussian (at mu = h*).
    """
    mu = torch.as_tensor(locs, dtype=DTYPE)
    value = torch.full_like(mu, observed)
    sigma = torch.full_like(mu, scale)
    infinity = torch.full_like(mu, math.inf)
    closed_low = torch.full_like(mu, observed)
    open_low = torch.full_like(mu, observed - margin)
    return {
        GAUSSIAN_LABEL: (-Normal(mu, sigma).log_prob(value)).numpy(),
        CLOSED_LABEL: truncated_nll(TruncatedNormal(mu, sigma, closed_low, infinity, validate_args=False), value, closed_low, infinity).numpy(),
        OPEN_LABEL: truncated_nll(TruncatedNormal(mu, sigma, open_low, infinity, validate_args=False), value, open_low, infinity).numpy(),
    }


def descend_loc(
    observed: float,
    scale: float,
    margin: float,
    steps: int,
    learning_rate: float = 0.1,
    initial_loc: float | None = None,
) -> dict[str, np.ndarray]:
    """Minimise the NLL of ``x = h* = l`` over mu alone with Adam; the mu trajectory for each model.

    This is what a network does to a training state whose admissible bound equals its optimal cost: under
    the closed bound mu keeps falling for as long as it runs (the gradient only decays like 1/(l - mu), and
    Adam rescales it); under the open bound it settles. Each trajectory has ``steps + 1`` entries.
    """
    start = observed if initial_loc is None else initial_loc
    value = torch.tensor(observed, dtype=DTYPE)
    sigma = torch.tensor(scale, dtype=DTYPE)
    infinity = torch.tensor(math.inf, dtype=DTYPE)

    def gaussian(mu: torch.Tensor) -> torch.Tensor:
        return -Normal(mu, sigma).log_prob(value)

    def truncated(low: float):
        low_tensor = torch.tensor(low, dtype=DTYPE)

        def nll(mu: torch.Tensor) -> torch.Tensor:
            return truncated_nll(TruncatedNormal(mu, sigma, low_tensor, infinity, validate_args=False), value, low_tensor, infinity)

        return nll

    objectives = {GAUSSIAN_LABEL: gaussian, CLOSED_LABEL: truncated(observed), OPEN_LABEL: truncated(observed - margin)}
    trajectories: dict[str, np.ndarray] = {}
    with single_thread():
        for label, objective in objectives.items():
            trajectories[label] = _descend(objective, start, steps, learning_rate)
    return trajectories


def _descend(objective: Callable[[torch.Tensor], torch.Tensor], start: float, steps: int, learning_rate: float) -> np.ndarray:
    """The path of a scalar parameter from ``start`` over ``steps`` Adam steps on ``objective``."""
    mu = torch.tensor(start, dtype=DTYPE, requires_grad=True)
    optimizer = torch.optim.Adam([mu], lr=learning_rate)
    path = [start]
    for _ in range(steps):
        optimizer.zero_grad()
        objective(mu).backward()
        optimizer.step()
        path.append(float(mu.detach()))
    return np.asarray(path)


#: Section 6b's states: three groups a model tells apart only by one feature z, as (z, the admissible bound l of the
#: group's states, their optimal costs h*). The first and last groups' bound is often exact, the middle one's loose.
FIXED_SCALE_GROUPS = ((0.0, 2.0, (2.0, 2.0, 2.0, 3.0)), (0.5, 3.0, (4.0, 5.0, 6.0, 9.0)),
                      (1.0, 6.0, (6.0, 6.0, 7.0, 7.0)))


@dataclass(frozen=True)
class FixedScaleFit:
    """The maximum-likelihood fit of :func:`fit_fixed_scale`: per group its mu and its heuristic (mu for N, the
    truncated mean for TN: what GBFS would use), and the heuristic's MSE over every state."""

    distribution: str
    scale: float
    shared: bool
    loc: tuple[float, ...]
    heuristic: tuple[float, ...]
    mse: float


def fit_fixed_scale(distribution: str, scale: float, shared: bool, margin: float,
                    groups=FIXED_SCALE_GROUPS) -> FixedScaleFit:
    """Fit mu by maximum likelihood with sigma fixed at ``scale``: N(mu, scale), or TN(mu, scale, l - margin, inf)
    (the paper's open bound). ``shared``: one line mu = a + b z for every group, as a network shares its weights;
    else a mu of its own per group. L-BFGS in float64 from the least-squares fit, to a gradient of 1e-12."""
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution must be N or TN, got {distribution!r}")
    z = torch.tensor([g[0] for g in groups for _ in g[2]], dtype=DTYPE)
    low = torch.tensor([g[1] - margin for g in groups for _ in g[2]], dtype=DTYPE)
    cost = torch.tensor([x for g in groups for x in g[2]], dtype=DTYPE)
    member = torch.tensor([i for i, g in enumerate(groups) for _ in g[2]])
    design = torch.stack([torch.ones_like(z), z], 1) if shared else \
        torch.nn.functional.one_hot(member, len(groups)).to(DTYPE)
    sigma = torch.full_like(z, scale)

    def model(loc: torch.Tensor):
        if distribution == "N":
            return Normal(loc, sigma)
        return TruncatedNormal(loc, sigma, low, torch.full_like(z, math.inf), validate_args=False)

    with single_thread():
        start = torch.linalg.lstsq(design, cost[:, None]).solution[:, 0]
        weights = start.clone().requires_grad_(True)
        optimizer = torch.optim.LBFGS([weights], lr=1.0, max_iter=500, tolerance_grad=1e-12,
                                      tolerance_change=1e-15, line_search_fn="strong_wolfe")

        def closure() -> torch.Tensor:
            optimizer.zero_grad()
            loss = -model(design @ weights).log_prob(cost).sum()
            loss.backward()
            return loss

        optimizer.step(closure)
        with torch.no_grad():
            loc = design @ weights
            heuristic = loc if distribution == "N" else model(loc).mean
    first = [int((member == i).nonzero()[0]) for i in range(len(groups))]
    return FixedScaleFit(distribution, scale, shared, tuple(float(loc[i]) for i in first),
                         tuple(float(heuristic[i]) for i in first), float(((heuristic - cost) ** 2).mean()))


def fixed_scale_fits(margin: float) -> list[FixedScaleFit]:
    """Section 6b's eight fits: N and TN, the paper's and the authors' fixed sigma (1/sqrt 2 and sqrt 2), a mu
    per group and one line for all."""
    return [fit_fixed_scale(distribution, scale, shared, margin) for shared in (False, True)
            for distribution in DISTRIBUTIONS for scale in FIXED_SIGMAS.values()]


def format_fixed_scale_fits(fits: list[FixedScaleFit], groups=FIXED_SCALE_GROUPS) -> str:
    """The fits as a table: per group mu and the heuristic, beside the group's mean h*; the heuristic's MSE."""
    owners = {"paper": "the paper's", "authors": "the authors'"}
    names = {value: f"{owners.get(name, name)} {value:.3f}" for name, value in FIXED_SIGMAS.items()}
    header = ["model", "fixed sigma", *[f"z={g[0]:g}: mu / heuristic" for g in groups], "MSE"]
    rows = [["", "group mean h*", *[f"{np.mean(g[2]):.3f}" for g in groups], ""]]
    for fit in fits:
        model = f"{fit.distribution}, {'one line' if fit.shared else 'a mu per group'}"
        rows.append([model, names.get(fit.scale, f"{fit.scale:.3f}"),
                     *[f"{loc:7.3f} / {value:.3f}" for loc, value in zip(fit.loc, fit.heuristic)], f"{fit.mse:.3f}"])
    widths = [max(len(str(row[k])) for row in [header, *rows]) for k in range(len(header))]
    return "\n".join("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip()
                     for row in [header, *rows])
