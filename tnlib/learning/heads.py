"""The distribution head: from a model's two raw outputs to a distribution over h* and its point estimates.

Every model (NLM, STRIPS-HGN, linear regression) ends in two unconstrained numbers per state, ``raw[..., 0]``
(for mu) and ``raw[..., 1]`` (for sigma). :class:`DistributionHead` turns them into the paper's statistical model:

* ``mu = raw_mu``, or ``mu = h + raw_mu`` with residual learning over a heuristic ``h`` (``ff`` or ``lmcut``);
* a learned sigma through its ``sigma_link`` (the paper does not give one): ``"softplus"`` (the default),
  ``softplus(raw_sigma) + SIGMA_FLOOR`` (the floor keeps the NLL bounded above and its gradients finite when a
  model becomes overconfident), or ``"bounded"``, the authors' code's ``10 * sigmoid(raw_sigma) + 0.1``
  (sigma in (0.1, 10.1)); a fixed sigma is the constant ``1/sqrt(2)``, which makes the Gaussian NLL the squared
  error plus a constant. The paper states 1/sqrt(2); its authors' code used sqrt(2); tnlib follows the paper
  (``fixed_sigma="paper"``) and offers the authors' (``fixed_sigma="authors"``) for the ablation of their settings;
* ``N``: ``torch.distributions.Normal(mu, sigma)``; ``TN``: ``tnlib.TruncatedNormal(mu, sigma, l - 0.1, u + 0.1)``,
  the paper's *open* bounds (appendix "Truncated Gaussian with Open Bounds"): a lower bound l that equals h*
  would otherwise reward mu -> -inf. A missing lower bound is ``-inf`` and a missing upper bound ``+inf``
  exactly (the paper's code used +-1e5).

Point estimates (the heuristic a planner uses): ``N`` -> mu; ``N+clip`` -> max(mu, l); ``TN`` -> its mean.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.distributions import Normal

from tnlib.distributions import TruncatedNormal
from tnlib.paper import (
    BOUNDED_SIGMA_FLOOR,
    BOUNDED_SIGMA_SCALE,
    DISTRIBUTIONS,
    FIXED_SIGMAS,
    LOWER_BOUNDS,
    MAIN_LOWER_BOUND,
    MAIN_RESIDUAL,
    OPEN_BOUND_EPSILON,
    RESIDUALS,
    SIGMA_LINKS,
    SIGMA_MODES,
    UPPER_BOUNDS,
)

SIGMA_FLOOR = 1e-2  # learned sigma = softplus(raw) + SIGMA_FLOOR


def learned_sigma(raw: torch.Tensor, link: str = "softplus") -> torch.Tensor:
    """A learned sigma from the network's raw output: ``softplus(raw) + SIGMA_FLOOR`` (``"softplus"``) or the
    authors' bounded ``BOUNDED_SIGMA_SCALE * sigmoid(raw) + BOUNDED_SIGMA_FLOOR`` (``"bounded"``)."""
    if link == "softplus":
        return F.softplus(raw) + SIGMA_FLOOR
    if link == "bounded":
        return BOUNDED_SIGMA_SCALE * torch.sigmoid(raw) + BOUNDED_SIGMA_FLOOR
    raise ValueError(f"unknown sigma link {link!r} (choose from {', '.join(SIGMA_LINKS)})")


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"unknown {name} {value!r} (choose from {', '.join(choices)})")
    return value


@dataclass(frozen=True)
class HeadConfig:
    """What the head does: the distribution, learned or fixed sigma, the residual base, the bounds, how a
    learned sigma is made positive (``sigma_link``; unused with a fixed sigma) and which constant a fixed sigma is
    (``fixed_sigma``: the paper's 1/sqrt 2 or the authors' code's sqrt 2; unused with a learned one)."""

    distribution: str = "TN"
    sigma: str = "learn"
    residual: str = MAIN_RESIDUAL
    lower_bound: str = MAIN_LOWER_BOUND
    upper_bound: str = "none"
    sigma_link: str = "softplus"
    fixed_sigma: str = "paper"

    def __post_init__(self) -> None:
        _check_choice("distribution", self.distribution, DISTRIBUTIONS)
        _check_choice("sigma mode", self.sigma, SIGMA_MODES)
        _check_choice("sigma link", self.sigma_link, SIGMA_LINKS)
        _check_choice("fixed sigma", self.fixed_sigma, tuple(FIXED_SIGMAS))
        _check_choice("residual", self.residual, RESIDUALS)
        _check_choice("lower bound", self.lower_bound, LOWER_BOUNDS)
        _check_choice("upper bound", self.upper_bound, UPPER_BOUNDS)


#: The point estimates a head gives a planner (Table 2's columns): ``"default"`` is mu for N and the truncated mean
#: for TN; ``"clip"`` is N+clip, max(mu, l).
POINT_ESTIMATES = ("default", "clip")


def point_estimates(distribution: str) -> tuple[str, ...]:
    """The point estimates a head of ``distribution`` offers: N has mu and N+clip; TN only its mean, which already
    lies in (l, u)."""
    return POINT_ESTIMATES if _check_choice("distribution", distribution, DISTRIBUTIONS) == "N" else POINT_ESTIMATES[:1]


def estimate_column(distribution: str, estimate: str) -> str:
    """The tables' name of a head's point estimate: the distribution's own for its default (``N``, ``TN``),
    ``N+clip`` for N's clip."""
    if estimate not in point_estimates(distribution):
        raise ValueError(f"a {distribution} head has no point estimate {estimate!r} "
                         f"(it has {', '.join(point_estimates(distribution))})")
    return distribution if estimate == POINT_ESTIMATES[0] else f"{distribution}+{estimate}"


#: The tables' columns: every point estimate of every distribution, N's before TN's (N, N+clip, TN).
ESTIMATE_COLUMNS = tuple(estimate_column(distribution, estimate)
                         for distribution in DISTRIBUTIONS for estimate in point_estimates(distribution))


def estimate_reads_lower_bound(distribution: str, estimate: str) -> bool:
    """Whether a point estimate depends on the lower bound's value: TN's mean and N+clip do, N's mu does not (a
    planner then needs the bound only where it is infinite, at dead ends)."""
    return not (distribution == "N" and estimate == "default")


class Prediction:
    """The predicted distribution of h* for a batch of states, with the bounds it was built with.

    ``distribution`` names it (``"N"`` or ``"TN"``, as :class:`HeadConfig` does); ``mu``, ``sigma``, ``lower`` (l,
    ``-inf`` when absent) and ``upper`` (u, ``+inf`` when absent) are 1-D tensors of the batch size;
    ``torch_distribution`` is the ``Normal`` or ``TruncatedNormal`` object; a TN's support is open by
    ``open_bound_margin`` on each side (the paper's epsilon; the classroom notebook varies it).
    """

    def __init__(self, distribution: str, mu: torch.Tensor, sigma: torch.Tensor, lower: torch.Tensor,
                 upper: torch.Tensor, open_bound_margin: float = OPEN_BOUND_EPSILON):
        self.distribution = distribution
        self.mu, self.sigma, self.lower, self.upper = mu, sigma, lower, upper
        if distribution == "N":
            self.torch_distribution = Normal(mu, sigma, validate_args=False)
        else:
            self.torch_distribution = TruncatedNormal(
                mu, sigma, lower - open_bound_margin, upper + open_bound_margin, validate_args=False
            )

    def nll(self, h_star: torch.Tensor) -> torch.Tensor:
        """Per-state negative log-likelihood of the targets (the training loss before averaging)."""
        return -self.torch_distribution.log_prob(h_star)

    def point_estimate(self) -> torch.Tensor:
        """The heuristic value: mu for N, the truncated mean for TN."""
        return self.mu if self.distribution == "N" else self.torch_distribution.mean

    def clipped_point_estimate(self) -> torch.Tensor:
        """N+clip: max(mu, l) (and min(., u) when an upper bound is present). Only defined for N."""
        if "clip" not in point_estimates(self.distribution):
            raise ValueError("the +clip estimate is defined for the Gaussian (N) only; TN's mean is already in (l, u)")
        return torch.minimum(torch.maximum(self.mu, self.lower), self.upper)


class DistributionHead(nn.Module):
    """Maps raw model outputs ``(..., 2)`` and the batch's residual base and bounds to a :class:`Prediction`.

    The head has no parameters: the network's second output is sigma's only degree of freedom, so a checkpoint
    rebuilds it from its :class:`HeadConfig` alone.
    """

    def __init__(self, config: HeadConfig):
        super().__init__()
        self.config = config

    def forward(
        self, raw: torch.Tensor, residual: torch.Tensor, lower: torch.Tensor, upper: torch.Tensor
    ) -> Prediction:
        config = self.config
        mu = raw[..., 0]
        if config.residual != "none":
            mu = residual + mu
        if config.sigma == "learn":
            sigma = learned_sigma(raw[..., 1], config.sigma_link)
        else:
            sigma = torch.full_like(mu, FIXED_SIGMAS[config.fixed_sigma])
        # The dataset supplies -inf / +inf for absent bounds; enforce it here too so a config decides alone.
        if config.lower_bound == "none":
            lower = torch.full_like(mu, -math.inf)
        if config.upper_bound == "none":
            upper = torch.full_like(mu, math.inf)
        return Prediction(config.distribution, mu, sigma, lower.to(mu.dtype), upper.to(mu.dtype))

    def extra_repr(self) -> str:
        c = self.config
        link = f" ({c.sigma_link})" if c.sigma == "learn" else f" ({FIXED_SIGMAS[c.fixed_sigma]:.4g})"
        return (f"{c.distribution}, sigma={c.sigma}{link}, residual={c.residual}, l={c.lower_bound}, "
                f"u={c.upper_bound}")
