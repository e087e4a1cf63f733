"""The real labels (the classroom notebook's section 7): how far each admissible bound lies below h* in a tnlib
dataset, and a Gaussian and a Truncated Gaussian fitted to the gap."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
from torch.distributions import Normal

from tnlib.data.loading import load_split
from tnlib.data.schema import DEFAULT_PROFILE
from tnlib.notebook.demo_tensors import DTYPE, truncated_normal
from tnlib.notebook.distribution_properties import TruncatedFit, fit_truncated_normal
from tnlib.paper import DOMAINS, LOWER_BOUNDS, MAIN_LOWER_BOUND, OPEN_BOUND_EPSILON


#: The admissible lower bounds of the dataset (the paper's l and its appendix's alternatives), strongest first.
LOWER_BOUND_COLUMNS = tuple(bound for bound in LOWER_BOUNDS if bound != "none")


@dataclass(frozen=True)
class LabelGaps:
    """One domain and split of a tnlib dataset: per state, how far each admissible lower bound lies below h*
    (``lower_gaps[name] = h* - l >= 0``) and how far h_FF, the residual's base, lies from it
    (``ff_error = h_FF - h*``, either sign: h_FF is not admissible)."""

    domain: str
    split: str
    h_star: np.ndarray
    lower_gaps: dict[str, np.ndarray]
    ff_error: np.ndarray

    @property
    def states(self) -> int:
        return int(self.h_star.size)

    def exact_fraction(self, bound: str = MAIN_LOWER_BOUND) -> float:
        """The fraction of states where the lower bound equals h*: the training targets that sit exactly on
        the truncation point l (why the paper opens the bound to l - 0.1)."""
        return float(np.mean(self.lower_gaps[bound] == 0))


def label_gaps(data_root: str | None = None, profile: str = DEFAULT_PROFILE, split: str = "train",
               domains: tuple[str, ...] | None = None) -> list[LabelGaps]:
    """:class:`LabelGaps` of every domain of a dataset (``data_root``: a dataset root or a data root, None or ""
    for the default; checked like every load, :func:`tnlib.data.load_split`). Raises ``DatasetError`` naming
    what is missing or wrong, ``ValueError`` if a label breaks ``l <= h*`` (a corrupt dataset)."""

    result = []
    for domain in domains or DOMAINS:
        table = load_split(data_root or None, domain, split, profile=profile)
        h_star = table.numpy("h_star").astype(np.float64)
        gaps = {name: h_star - table.numpy(name) for name in LOWER_BOUND_COLUMNS}
        for name, gap in gaps.items():
            if np.any(gap < 0):
                raise ValueError(f"{domain}/{split}: {name} exceeds h* on {int(np.sum(gap < 0))} state(s)")
        result.append(LabelGaps(domain, split, h_star, gaps, table.numpy("ff") - h_star))
    return result


def format_label_gaps(gaps: list[LabelGaps]) -> str:
    """A plain-text table: states, the fraction where each lower bound is exact, the mean gap h* - LM-cut, and
    where h_FF is exact, above and below h*."""
    header = (f"{'domain':<12} {'states':>6}  " + "  ".join(f"{'l=h* ' + n:>11}" for n in LOWER_BOUND_COLUMNS)
              + f"  {'mean h*-lmcut':>13}  {'ff=h*':>6} {'ff>h*':>6} {'ff<h*':>6}")
    lines = [header, "-" * len(header)]
    for g in gaps:
        exact = "  ".join(f"{g.exact_fraction(n):>11.1%}" for n in LOWER_BOUND_COLUMNS)
        lines.append(f"{g.domain:<12} {g.states:>6}  {exact}  {float(np.mean(g.lower_gaps['lmcut'])):>13.2f}  "
                     f"{float(np.mean(g.ff_error == 0)):>6.1%} {float(np.mean(g.ff_error > 0)):>6.1%} "
                     f"{float(np.mean(g.ff_error < 0)):>6.1%}")
    return "\n".join(lines)


@dataclass(frozen=True)
class GapFit:
    """Section 7's fitted models of one domain: the gap h* - l (l = LM-cut) fitted on the train split by a
    Gaussian and by a Truncated Gaussian on (-eps, inf), both by maximum likelihood, and their mean NLL (nats per
    state) and the MSE of l + their mean on another split. Where the gaps' variance is not below their squared
    mean distance from -eps the Truncated Gaussian has no maximum (``truncated.exists`` is False): its columns
    are then those of the limit the likelihood rises toward, the exponential on (-eps, inf) with the gaps' mean."""

    domain: str
    gaussian: tuple[float, float]
    truncated: TruncatedFit
    gaussian_nll: float
    truncated_nll: float
    gaussian_mse: float
    truncated_mse: float


def fit_gap_models(train: list[LabelGaps], held_out: list[LabelGaps], bound: str = MAIN_LOWER_BOUND,
                   margin: float = OPEN_BOUND_EPSILON) -> list[GapFit]:
    """Per domain, fit the gap h* - l of ``train``'s states with a Gaussian (its MLE: the sample mean and standard
    deviation) and with TN(mu, sigma, -margin, inf) (:func:`fit_truncated_normal`, or the exponential limit where
    it has no maximum), and score both on ``held_out``'s states: a model with no features, the simplest "fitted
    model" of the real labels."""
    fits = []
    for fit_on, score_on in zip(train, held_out):
        gap, test_gap = fit_on.lower_gaps[bound], score_on.lower_gaps[bound]
        loc, scale = float(gap.mean()), float(gap.std())
        truncated = fit_truncated_normal(gap, -margin, math.inf)
        values = torch.as_tensor(test_gap, dtype=DTYPE)
        gaussian_nll = float(-Normal(torch.tensor(loc, dtype=DTYPE), torch.tensor(scale, dtype=DTYPE)).log_prob(values).mean())
        if truncated.exists is False:
            rate = 1.0 / truncated.limit_scale
            truncated_nll = float(np.mean(rate * (test_gap + margin) - math.log(rate)))
            truncated_mean = -margin + truncated.limit_scale
        else:
            tn = truncated_normal(truncated.loc, truncated.scale, -margin, math.inf)
            truncated_nll = float(-tn.log_prob(values).mean())
            truncated_mean = float(tn.mean)
        fits.append(GapFit(fit_on.domain, (loc, scale), truncated, gaussian_nll, truncated_nll,
                           float(np.mean((test_gap - loc) ** 2)), float(np.mean((test_gap - truncated_mean) ** 2))))
    return fits


def format_gap_fits(fits: list[GapFit]) -> str:
    """:func:`fit_gap_models` as an aligned table; a Truncated Gaussian without a maximum shows as its exponential
    limit, "exp(scale)"."""
    lines = [f"{'domain':<12s}{'Gaussian (mu, sigma)':>22s}{'TN (mu, sigma)':>20s}{'NLL Gaussian':>14s}{'NLL TN':>9s}"
             f"{'MSE Gaussian':>14s}{'MSE TN':>9s}"]
    for fit in fits:
        t = fit.truncated
        shown = f"({t.loc:.2f}, {t.scale:.2f})" if t.exists is not False else f"none: exp({t.limit_scale:.2f})"
        lines.append(f"{fit.domain:<12s}{f'({fit.gaussian[0]:.2f}, {fit.gaussian[1]:.2f})':>22s}"
                     f"{shown:>20s}{fit.gaussian_nll:14.3f}{fit.truncated_nll:9.3f}{fit.gaussian_mse:14.3f}"
                     f"{fit.truncated_mse:9.3f}")
    return "\n".join(lines)
