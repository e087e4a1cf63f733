"""The distribution's properties, sampling and estimation (the classroom notebook's section 5b): short numpy formulas
a student can read, checked in the notebook against tnlib's TruncatedNormal and scipy, and where they break."""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import minimize
from scipy.stats import norm, truncnorm

from tnlib.distributions import TruncatedNormal
from tnlib.notebook.demo_tensors import DTYPE, single_thread, truncated_normal


def textbook_gaussian_nll(x, mu, sigma):
    """-log N(x | mu, sigma), the textbook formula in numpy (section 5 prints this source)."""
    return (x - mu) ** 2 / (2 * sigma ** 2) + np.log(np.sqrt(2 * np.pi) * sigma)


def textbook_truncated_nll(x, mu, sigma, low, high):
    """-log TN(x | mu, sigma, low, high): the Gaussian NLL plus log Z, Z = Phi(beta) - Phi(alpha), inf outside
    [low, high]. The textbook formula in numpy and scipy (section 5 prints this source): Z underflows to 0 far in a
    tail, where tnlib's TruncatedNormal keeps its digits (section 5b)."""
    log_z = np.log(norm.cdf((high - mu) / sigma) - norm.cdf((low - mu) / sigma))
    return np.where((low <= x) & (x <= high), textbook_gaussian_nll(x, mu, sigma) + log_z, np.inf)


def closed_form_properties(loc: float, scale: float, low: float, high: float) -> dict[str, float]:
    """The textbook formulas of TN(loc, scale, low, high) with a = (low - loc) / scale, b = (high - loc) / scale
    and Z = Phi(b) - Phi(a): mean, variance, median, entropy and the CDF at the mean. Plain numpy: accurate while Z
    is not tiny (the far tail needs tnlib's stable forms; section 5b shows where these break)."""
    a, b = (low - loc) / scale, (high - loc) / scale
    Z = norm.cdf(b) - norm.cdf(a)
    pa, pb = norm.pdf(a), norm.pdf(b)
    a_pa = a * pa if math.isfinite(a) else 0.0  # a phi(a) -> 0 as a -> -inf
    b_pb = b * pb if math.isfinite(b) else 0.0
    mean = loc + scale * (pa - pb) / Z
    variance = scale ** 2 * (1 + (a_pa - b_pb) / Z - ((pa - pb) / Z) ** 2)
    median = loc + scale * norm.ppf((norm.cdf(a) + norm.cdf(b)) / 2)
    entropy = math.log(math.sqrt(2 * math.pi * math.e) * scale * Z) + (a_pa - b_pb) / (2 * Z)
    cdf_at_mean = (norm.cdf((mean - loc) / scale) - norm.cdf(a)) / Z
    return {"mean": mean, "variance": variance, "median": median, "entropy": entropy, "cdf(mean)": cdf_at_mean}


def property_comparison(loc: float, scale: float, low: float, high: float) -> list[tuple[str, float, float, float]]:
    """(property, closed form, tnlib, scipy.stats.truncnorm) for :func:`closed_form_properties`' properties.
    scipy takes the *standardised* bounds a, b (the classic pitfall: not low and high)."""
    closed = closed_form_properties(loc, scale, low, high)
    tn = truncated_normal(loc, scale, low, high)
    scipy_tn = truncnorm((low - loc) / scale, (high - loc) / scale, loc=loc, scale=scale)
    mean = closed["mean"]
    ours = {"mean": float(tn.mean), "variance": float(tn.variance), "median": float(tn.icdf(torch.tensor(0.5, dtype=DTYPE))),
            "entropy": float(tn.entropy()), "cdf(mean)": float(tn.cdf(torch.tensor(mean, dtype=DTYPE)))}
    with np.errstate(invalid="ignore"), warnings.catch_warnings():  # scipy's entropy is nan for an infinite bound
        warnings.simplefilter("ignore", RuntimeWarning)
        theirs = {"mean": scipy_tn.mean(), "variance": scipy_tn.var(), "median": scipy_tn.median(),
                  "entropy": scipy_tn.entropy(), "cdf(mean)": scipy_tn.cdf(mean)}
    return [(name, closed[name], ours[name], float(theirs[name])) for name in closed]


def scipy_bounds_pitfall(loc: float, scale: float, low: float, high: float) -> dict[str, float]:
    """The mean scipy gives when handed the bounds themselves instead of the standardised a, b, beside the right
    one: ``truncnorm(low, high, loc, scale)`` truncates at loc + low * scale and loc + high * scale."""
    return {"truncnorm(a, b, loc, scale) with a, b standardised": float(
                truncnorm((low - loc) / scale, (high - loc) / scale, loc=loc, scale=scale).mean()),
            "truncnorm(low, high, loc, scale), the pitfall": float(truncnorm(low, high, loc=loc, scale=scale).mean())}


def naive_inverse_cdf_samples(loc: float, scale: float, low: float, high: float, count: int, seed: int) -> np.ndarray:
    """Inverse-CDF sampling written as in a textbook, x = loc + scale * Phi^-1(Phi(a) + U (Phi(b) - Phi(a))):
    exact in exact arithmetic, but in the far tail Phi(a) and Phi(b) round to the same double (both 1) and every
    sample comes out inf or nan."""
    uniform = np.random.default_rng(seed).random(count)
    a, b = (low - loc) / scale, (high - loc) / scale
    with np.errstate(all="ignore"):
        return loc + scale * norm.ppf(norm.cdf(a) + uniform * (norm.cdf(b) - norm.cdf(a)))


def tnlib_samples(loc: float, scale: float, low: float, high: float, count: int, seed: int) -> np.ndarray:
    """``count`` draws of tnlib's TruncatedNormal (exact rejection samplers, written in a numerically stable frame)."""
    generator_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        return truncated_normal(loc, scale, low, high).sample((count,)).numpy()
    finally:
        torch.random.set_rng_state(generator_state)


@dataclass(frozen=True)
class TruncatedFit:
    """A maximum-likelihood fit of TN(loc, scale, low, high) with known bounds, or the reason there is none.

    ``exists``: on a half-line [low, inf) a maximum exists only when the samples' variance (1/n) is below
    (mean - low)^2; otherwise (False) the likelihood keeps rising as loc -> -inf and scale -> inf with
    scale^2 / (low - loc) fixed, toward the exponential distribution shifted to ``low`` with scale mean - low
    (``limit_scale``, mean NLL ``limit_nll`` = 1 + log(mean - low)), which no Truncated Gaussian is; loc and scale
    are then wherever the optimizer stopped and mean nothing. On a bounded interval the condition is the same
    moment condition against the truncated exponential; it is not checked (None). ``converged``: the optimizer
    ended at a point where the NLL's gradient vanishes (to 1e-6); a fit without a maximum never does."""

    loc: float
    scale: float
    nll: float
    exists: bool | None
    converged: bool
    variance: float
    squared_distance: float  # (mean - low)^2: the bound the variance must stay below on a half-line
    limit_scale: float | None
    limit_nll: float | None

    def describe(self) -> str:
        """One line: the fit, or why there is none and what the likelihood tends to."""
        if self.exists is False:
            return (f"no maximum: variance {self.variance:.3g} >= (mean - l)^2 = {self.squared_distance:.3g}; the NLL "
                    f"falls toward the exponential limit's {self.limit_nll:.4f} (scale {self.limit_scale:.3g}) as mu "
                    f"-> -inf (the optimizer stopped at mu = {self.loc:.3g}, NLL {self.nll:.4f})")
        state = "converged" if self.converged else "NOT converged: the NLL's gradient is not zero there"
        return f"maximum likelihood (mu, sigma) = ({self.loc:.3f}, {self.scale:.3f}), NLL {self.nll:.4f} ({state})"


def fit_truncated_normal(samples: np.ndarray, low: float, high: float, steps: int = 200) -> TruncatedFit:
    """Maximum-likelihood (loc, scale) of TN(loc, scale, low, high) from ``samples`` (known bounds): L-BFGS on the
    mean NLL over (loc, log scale), started at the samples' mean and standard deviation (the biased estimates a
    student would try first), after checking that a maximum exists (:class:`TruncatedFit`)."""
    values = torch.as_tensor(samples, dtype=DTYPE)
    mean, variance = float(values.mean()), float(values.var(unbiased=False))
    squared_distance = (mean - low) ** 2
    exists = variance < squared_distance if math.isinf(high) else None
    loc = torch.tensor(mean, dtype=DTYPE, requires_grad=True)
    log_scale = torch.tensor(math.log(math.sqrt(variance)), dtype=DTYPE, requires_grad=True)
    low_t, high_t = torch.tensor(low, dtype=DTYPE), torch.tensor(high, dtype=DTYPE)

    def mean_nll() -> torch.Tensor:
        return -TruncatedNormal(loc, log_scale.exp(), low_t, high_t, validate_args=False).log_prob(values).mean()

    optimizer = torch.optim.LBFGS([loc, log_scale], lr=1.0, max_iter=steps, tolerance_grad=1e-9,
                                  tolerance_change=1e-14, line_search_fn="strong_wolfe")

    def closure() -> torch.Tensor:
        optimizer.zero_grad()
        nll = mean_nll()
        nll.backward()
        return nll

    with single_thread():
        optimizer.step(closure)
        nll = float(closure().detach())
    gradient = max(abs(float(loc.grad)), abs(float(log_scale.grad)))
    converged = bool(math.isfinite(nll) and gradient < 1e-6 and exists is not False)
    limit_scale = mean - low if exists is False else None
    return TruncatedFit(float(loc.detach()), float(log_scale.detach().exp()), nll, exists, converged,
                        variance, squared_distance, limit_scale,
                        1.0 + math.log(limit_scale) if limit_scale is not None else None)


def format_property_comparison(rows: list[tuple[str, float, float, float]]) -> str:
    """:func:`property_comparison`'s rows as an aligned table: each property's closed form, tnlib's and scipy's
    value side by side."""
    lines = [f"{'property':<10s}{'closed form':>22s}{'tnlib':>22s}{'scipy':>22s}"]
    for name, closed, ours, theirs in rows:
        lines.append(f"{name:<10s}{closed:22.15g}{ours:22.15g}{theirs:22.15g}")
    return "\n".join(lines)


def censoring_versus_truncation(loc: float, scale: float, bound: float, count: int, seed: int) -> dict:
    """A Tobit-style simulation: draw N(loc, scale) and record a value below ``bound`` as ``bound`` (censoring).
    The estimates of loc: the sample mean; the censored-data (Tobit) MLE, which counts each value at the bound
    as P(x <= bound) = Phi((bound - loc) / scale); and the truncated model fitted to the same data as if the
    values at the bound were exact observations -- the wrong model for censored data, whose lump at the bound
    gives it no maximum at all (a :class:`TruncatedFit` that says so)."""
    draws = np.random.default_rng(seed).normal(loc, scale, count)
    censored = np.maximum(draws, bound)
    at_bound = censored <= bound

    def tobit_nll(theta):
        mu, log_sigma = theta
        sigma = math.exp(log_sigma)
        return -(norm.logcdf((bound - mu) / sigma) * at_bound.sum()
                 + norm.logpdf(censored[~at_bound], mu, sigma).sum()) / count

    tobit = minimize(tobit_nll, [censored.mean(), math.log(censored.std())], method="Nelder-Mead",
                     options={"xatol": 1e-6, "fatol": 1e-9, "maxiter": 2000}).x
    truncated = fit_truncated_normal(censored, bound - 1e-9, math.inf)
    return {"true loc": loc, "share at the bound": float(at_bound.mean()), "sample mean": float(censored.mean()),
            "censored (Tobit) MLE": float(tobit[0]), "truncated model on censored data": truncated}
