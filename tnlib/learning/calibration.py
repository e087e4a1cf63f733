"""Whether a predicted distribution of h* tells the truth: calibration and sharpness on labelled states.

A model that predicts a distribution of h* (N or TN, :class:`tnlib.learning.heads.Prediction`) is calibrated when its
probabilities are frequencies -- its 80% intervals hold h* for 80% of the states -- and sharp when those intervals
are narrow. :func:`distribution_calibration` measures both for any torch distribution with a ``cdf`` and an ``icdf``;
:func:`run_calibration` for a trained run on a dataset split. The classroom notebook's section 8b reads the first on
synthetic data, the experiments notebook the second on the runs of a sweep.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

#: Nominal levels of the central prediction intervals whose coverage the calibration check reads.
COVERAGE_LEVELS = (0.5, 0.8, 0.9, 0.95)


@dataclass(frozen=True)
class Calibration:
    """Whether one model's predicted distribution of h* tells the truth about a set of labelled states.

    h* is an integer and the predicted distributions are continuous, so h* is read as the predicted X rounded to
    the nearest integer: a state's probability integral transform (PIT) is drawn uniformly between F(h* - 1/2) and
    F(h* + 1/2), the randomised PIT of a discrete outcome. A calibrated model makes these values uniform on
    [0, 1], and its central p-interval then holds a share p of the states (``coverage``). Calibration is not
    sharpness: ``mean_width`` is the central p-interval's mean width, the narrower the more the model says.
    ``naive_pit`` is F(h*) itself, what the check shows when h* is taken for a continuous value;
    ``mass_below_bound`` is the mean P(X < l - 1/2), the probability the model puts on costs below the admissible
    bound, which no state has."""

    pit: np.ndarray = field(repr=False)
    naive_pit: np.ndarray = field(repr=False)
    coverage: dict[float, float]
    mean_width: dict[float, float]
    mass_below_bound: float


def _coverage(pit: np.ndarray) -> dict[float, float]:
    """Per level p, the share of PIT values in the central interval [(1 - p) / 2, (1 + p) / 2]."""
    return {level: float(np.mean((pit >= (1 - level) / 2) & (pit <= (1 + level) / 2))) for level in COVERAGE_LEVELS}


def distribution_calibration(distribution, optimal_cost: torch.Tensor, lower_bound: torch.Tensor,
                             generator: torch.Generator) -> Calibration:
    """:class:`Calibration` of ``distribution`` (a torch Normal or TruncatedNormal, one element per state) against
    the states' ``optimal_cost``; ``generator`` draws the randomised PIT's uniforms."""
    low, high = (getattr(distribution.support, end, None) for end in ("lower_bound", "upper_bound"))

    def cdf(x: torch.Tensor) -> torch.Tensor:  # also outside a truncated support, where it is 0 or 1
        if low is None and high is None:
            return distribution.cdf(x)
        return distribution.cdf(torch.clamp(x, min=low, max=high))

    below, above = cdf(optimal_cost - 0.5), cdf(optimal_cost + 0.5)
    uniforms = torch.rand(optimal_cost.shape, generator=generator, dtype=optimal_cost.dtype)
    pit = (below + uniforms * (above - below)).numpy()
    coverage = _coverage(pit)
    mean_width = {level: float((distribution.icdf(torch.full_like(optimal_cost, (1 + level) / 2))
                                - distribution.icdf(torch.full_like(optimal_cost, (1 - level) / 2))).mean())
                  for level in COVERAGE_LEVELS}
    return Calibration(pit=pit, naive_pit=cdf(optimal_cost).numpy(), coverage=coverage,
                       mean_width=mean_width, mass_below_bound=float(cdf(lower_bound - 0.5).mean()))


def run_calibration(checkpoint: str | os.PathLike, split: str = "test", seed: int = 0, data_root: str | None = None,
                    device: str | None = None) -> Calibration:
    """:func:`distribution_calibration` of a trained run's predicted distributions (a ``.pt`` file, or a run folder: its
    ``best.pt``) on a split's labelled states; ``seed`` draws the randomised PIT's uniforms. The bound is the
    run's lower bound l (LM-cut), also for a Gaussian, which ignores it."""
    from tnlib.learning.evaluation import split_distributions

    _, distribution, p = split_distributions(checkpoint, split, data_root=data_root, device=device)
    return distribution_calibration(distribution.torch_distribution, p["h_star"], p["lower"],
                                    torch.Generator().manual_seed(seed))


def pooled_calibration(checks: Sequence[Calibration]) -> Calibration:
    """One :class:`Calibration` of several runs on the same states (seeds of one configuration): their PIT values
    together, coverage counted over all of them, widths and the mass below the bound averaged."""
    if not checks:
        raise ValueError("no calibration to pool")
    pit = np.concatenate([check.pit for check in checks])
    return Calibration(pit=pit, naive_pit=np.concatenate([check.naive_pit for check in checks]),
                       coverage=_coverage(pit),
                       mean_width={level: float(np.mean([c.mean_width[level] for c in checks]))
                                   for level in COVERAGE_LEVELS},
                       mass_below_bound=float(np.mean([check.mass_below_bound for check in checks])))
