"""Computations behind the teaching notebooks.

The notebooks in ``notebooks/`` hold parameters, prose and plots only; every number they show is computed
here so that it is tested (``tests/test_teaching.py``) and reusable:

* parameter checks that turn bad notebook parameters into one clear ``ValueError``;
* :func:`describe_truncated_normal`, the summary the Truncated Gaussian explorer prints;
* the small numerical demonstrations of the classroom notebook (maximum likelihood, MSE as a Gaussian NLL,
  learned sigma, maximum entropy, closed vs open lower bounds);
* :func:`run_synthetic_regression`, a seconds-long CPU regression that compares Gaussian and Truncated
  Gaussian heuristic models trained from an admissible lower bound.

All tensors are float64: the demonstrations go far into the Gaussian tails, where float32 rounds the
normalizer of the Truncated Gaussian to zero.
"""
from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import numpy as np
import torch
from torch.distributions import Laplace, Normal, Uniform

from tnlib.distributions import TruncatedNormal
from tnlib.paper import FIXED_SIGMA, LOWER_BOUNDS, OPEN_BOUND_EPSILON

DTYPE = torch.float64

#: The open-bound margin of the paper's appendix: a lower bound ``l`` becomes ``l - 0.1`` so that an
#: observation equal to ``l`` is never on the boundary of the support.
PAPER_OPEN_BOUND_MARGIN = OPEN_BOUND_EPSILON

#: Bounds (label, low, high) shown by the explorer for mu=0, sigma=1. ``(0.2, 1.7)`` is the paper's
#: Figure 1 example whose mean respects the bounds although mu=0 lies outside them.
PRESET_BOUNDS: tuple[tuple[str, float, float], ...] = (
    ("(-inf, inf): plain Normal", -math.inf, math.inf),
    ("(0, inf): non-negative cost", 0.0, math.inf),
    ("(-1, 1): symmetric window", -1.0, 1.0),
    ("(0.2, 1.7): paper Figure 1", 0.2, 1.7),
    ("(1, 3): mu left of the bounds", 1.0, 3.0),
    ("(2.5, inf): far tail", 2.5, math.inf),
    ("(-inf, -0.5): upper bound only", -math.inf, -0.5),
)


# ----------------------------------------------------------------------------------------------------------
# Parameter checks
# ----------------------------------------------------------------------------------------------------------


def _as_float(name: str, value: object) -> float:
    """``float(value)``, accepting the strings "inf"/"-inf" that papermill can pass for infinite bounds."""
    if isinstance(value, bool):
        raise ValueError(f"{name} must be a number, got the boolean {value!r}")
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number (or 'inf'/'-inf' for a bound), got {value!r}") from None
    if math.isnan(number):
        raise ValueError(f"{name} must not be NaN")
    return number


def _as_int(name: str, value: object, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if maximum is not None and not minimum <= value <= maximum:
        raise ValueError(f"{name} must be between {minimum} and {maximum}, got {value}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


#: Allowed range of the explorer's ``num_points`` (grid points per density curve). The dense grid over the
#: truncated bulk already resolves every density at the default 801; above the maximum the nine figures of
#: the notebook would hold millions of points (1e8 exhausted the kernel's memory).
MIN_NUM_POINTS, MAX_NUM_POINTS = 11, 20_001


@dataclass(frozen=True)
class ExplorerParameters:
    """Validated parameters of ``truncated_gaussian_explorer.ipynb``."""

    loc: float
    scale: float
    low: float
    high: float
    observed: float
    num_points: int
    interactive: bool


def check_explorer_parameters(
    loc: object,
    scale: object,
    low: object,
    high: object,
    observed: object,
    num_points: object = 801,
    interactive: object = True,
) -> ExplorerParameters:
    """Validate the explorer's parameters; raise ``ValueError`` naming the first bad one.

    ``low``/``high`` may be ``-inf``/``inf`` (or those strings); ``observed`` may lie outside the bounds
    (its truncated NLL is then infinite, which the explorer shows).
    """
    loc_value = _as_float("loc", loc)
    scale_value = _as_float("scale", scale)
    low_value = _as_float("low", low)
    high_value = _as_float("high", high)
    observed_value = _as_float("observed", observed)
    if not math.isfinite(loc_value):
        raise ValueError(f"loc must be finite, got {loc_value}")
    if not (scale_value > 0 and math.isfinite(scale_value)):
        raise ValueError(f"scale must be a finite number > 0, got {scale_value}")
    if low_value == math.inf:
        raise ValueError("low must be < inf")
    if high_value == -math.inf:
        raise ValueError("high must be > -inf")
    if not low_value < high_value:
        raise ValueError(f"low must be < high, got low={low_value} and high={high_value}")
    if not math.isfinite(observed_value):
        raise ValueError(f"observed must be finite, got {observed_value}")
    points = _as_int("num_points", num_points, minimum=MIN_NUM_POINTS, maximum=MAX_NUM_POINTS)
    if not isinstance(interactive, bool):
        raise ValueError(f"interactive must be True or False, got {interactive!r}")
    return ExplorerParameters(loc_value, scale_value, low_value, high_value, observed_value, points, interactive)


@dataclass(frozen=True)
class ClassroomParameters:
    """Validated parameters of ``statistics_of_heuristic_learning.ipynb``."""

    seed: int
    num_train: int
    num_test: int
    steps: int
    learning_rate: float
    hidden_units: int
    open_bound_margin: float
    demo_steps: int
    data_root: str | None = None  # section 7's dataset (None: the default data root)
    label_split: str = "train"
    comparison_seeds: int = 8  # section 8's comparison over seeds: seeds seed, seed + 1, ...


def check_parameters(
    seed: object = 0,
    num_train: object = 500,
    num_test: object = 2000,
    steps: object = 400,
    learning_rate: object = 0.03,
    hidden_units: object = 16,
    open_bound_margin: object = PAPER_OPEN_BOUND_MARGIN,
    demo_steps: object = 300,
    data_root: object = "",
    label_split: object = "train",
    comparison_seeds: object = 8,
) -> ClassroomParameters:
    """Validate the classroom notebook's parameters; raise ``ValueError`` naming the first bad one."""
    from pathlib import Path

    from tnlib.data.schema import SPLITS

    seed_value = _as_int("seed", seed, minimum=0)
    train = _as_int("num_train", num_train, minimum=2)
    test = _as_int("num_test", num_test, minimum=2)
    step_count = _as_int("steps", steps, minimum=1)
    rate = _as_float("learning_rate", learning_rate)
    if not (rate > 0 and math.isfinite(rate)):
        raise ValueError(f"learning_rate must be a finite number > 0, got {rate}")
    hidden = _as_int("hidden_units", hidden_units, minimum=1)
    margin = _as_float("open_bound_margin", open_bound_margin)
    if not (margin > 0 and math.isfinite(margin)):
        raise ValueError(f"open_bound_margin must be a finite number > 0 (the paper uses 0.1), got {margin}")
    demo = _as_int("demo_steps", demo_steps, minimum=1)
    if data_root is not None and not isinstance(data_root, str):
        raise ValueError(f"data_root must be a folder name (\"\" for the default), got {data_root!r}")
    if data_root and not Path(data_root).is_dir():
        raise ValueError(f"data_root: no such folder {data_root!r} (\"\" for the default data root)")
    if label_split not in SPLITS:
        raise ValueError(f"label_split must be one of {', '.join(SPLITS)}, got {label_split!r}")
    compared = _as_int("comparison_seeds", comparison_seeds, minimum=3, maximum=50)
    return ClassroomParameters(seed_value, train, test, step_count, rate, hidden, margin, demo, data_root or None,
                               label_split, compared)


# ----------------------------------------------------------------------------------------------------------
# Explorer summary
# ----------------------------------------------------------------------------------------------------------


def truncated_normal(loc: float, scale: float, low: float, high: float) -> TruncatedNormal:
    """A scalar float64 ``TruncatedNormal`` (argument checks are done by the callers' parameter checks)."""
    return TruncatedNormal(
        torch.tensor(loc, dtype=DTYPE),
        torch.tensor(scale, dtype=DTYPE),
        torch.tensor(low, dtype=DTYPE),
        torch.tensor(high, dtype=DTYPE),
        validate_args=False,
    )


def truncated_nll(distribution: TruncatedNormal, value: torch.Tensor, low: torch.Tensor, high: torch.Tensor) -> torch.Tensor:
    """``-log p(value)``, +inf outside ``[low, high]`` whatever the implementation does off its support."""
    inside = (value >= low) & (value <= high)
    clamped = torch.minimum(torch.maximum(value, low), high)
    nll = -distribution.log_prob(clamped)
    return torch.where(inside, nll, torch.full_like(nll, math.inf))


def describe_truncated_normal(loc: float, scale: float, low: float, high: float, observed: float) -> dict[str, float]:
    """The numbers the explorer shows for ``TN(loc, scale, low, high)`` and an observed ``x = h*``.

    Keys: ``normal_mean`` (= mode of the Normal = loc), ``mean`` (the truncated mean, the paper's heuristic),
    ``mode``, ``stddev``, ``log_normalizer`` (log Z), ``kept_mass`` (Z, the Normal's probability of
    ``[low, high]``), ``normal_nll`` and ``truncated_nll`` (of ``observed``; inf outside the bounds).
    """
    distribution = truncated_normal(loc, scale, low, high)
    value = torch.tensor(observed, dtype=DTYPE)
    low_tensor, high_tensor = torch.tensor(low, dtype=DTYPE), torch.tensor(high, dtype=DTYPE)
    log_normalizer = float(distribution.log_normalizer)
    return {
        "normal_mean": float(loc),
        "mean": float(distribution.mean),
        "mode": float(distribution.mode),
        "stddev": float(distribution.stddev),
        "log_normalizer": log_normalizer,
        "kept_mass": math.exp(log_normalizer),
        "normal_nll": float(-Normal(torch.tensor(loc, dtype=DTYPE), torch.tensor(scale, dtype=DTYPE)).log_prob(value)),
        "truncated_nll": float(truncated_nll(distribution, value, low_tensor, high_tensor)),
    }


# ----------------------------------------------------------------------------------------------------------
# The distribution's properties, sampling and estimation (section 5b): short numpy formulas a student can read,
# checked in the notebook against tnlib's TruncatedNormal and scipy.
# ----------------------------------------------------------------------------------------------------------


def closed_form_properties(loc: float, scale: float, low: float, high: float) -> dict[str, float]:
    """The textbook formulas of TN(loc, scale, low, high) with a = (low - loc) / scale, b = (high - loc) / scale
    and Z = Phi(b) - Phi(a): mean, variance, median, entropy and the CDF at the mean. Plain numpy: accurate while Z
    is not tiny (the far tail needs tnlib's stable forms; section 5b shows where these break)."""
    from scipy.stats import norm

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
    from scipy.stats import truncnorm

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
    from scipy.stats import truncnorm

    return {"truncnorm(a, b, loc, scale) with a, b standardised": float(
                truncnorm((low - loc) / scale, (high - loc) / scale, loc=loc, scale=scale).mean()),
            "truncnorm(low, high, loc, scale), the pitfall": float(truncnorm(low, high, loc=loc, scale=scale).mean())}


def naive_inverse_cdf_samples(loc: float, scale: float, low: float, high: float, count: int, seed: int) -> np.ndarray:
    """Inverse-CDF sampling written as in a textbook, x = loc + scale * Phi^-1(Phi(a) + U (Phi(b) - Phi(a))):
    exact in exact arithmetic, but in the far tail Phi(a) and Phi(b) round to the same double (both 1) and every
    sample comes out inf or nan."""
    from scipy.stats import norm

    uniform = np.random.default_rng(seed).random(count)
    a, b = (low - loc) / scale, (high - loc) / scale
    with np.errstate(all="ignore"):
        return loc + scale * norm.ppf(norm.cdf(a) + uniform * (norm.cdf(b) - norm.cdf(a)))


def tnlib_samples(loc: float, scale: float, low: float, high: float, count: int, seed: int) -> np.ndarray:
    """``count`` draws of tnlib's TruncatedNormal (inverse CDF in a numerically stable frame)."""
    generator_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        return truncated_normal(loc, scale, low, high).sample((count,)).numpy()
    finally:
        torch.random.set_rng_state(generator_state)


def fit_truncated_normal(samples: np.ndarray, low: float, high: float, steps: int = 500) -> tuple[float, float]:
    """Maximum-likelihood (loc, scale) of TN(loc, scale, low, high) from ``samples`` (known bounds): Adam on the
    mean NLL over (loc, log scale), started at the samples' mean and standard deviation -- the biased estimates a
    student would try first."""
    values = torch.as_tensor(samples, dtype=DTYPE)
    loc = torch.tensor(float(values.mean()), dtype=DTYPE, requires_grad=True)
    log_scale = torch.tensor(math.log(float(values.std())), dtype=DTYPE, requires_grad=True)
    low_t, high_t = torch.tensor(low, dtype=DTYPE), torch.tensor(high, dtype=DTYPE)
    optimizer = torch.optim.Adam([loc, log_scale], lr=0.05)
    with _single_thread():
        for _ in range(steps):
            optimizer.zero_grad()
            nll = -TruncatedNormal(loc, log_scale.exp(), low_t, high_t, validate_args=False).log_prob(values).mean()
            nll.backward()
            optimizer.step()
    return float(loc.detach()), float(log_scale.detach().exp())


def format_property_comparison(rows: list[tuple[str, float, float, float]]) -> str:
    """:func:`property_comparison`'s rows as an aligned table with the largest difference from the closed form."""
    lines = [f"{'property':<10s}{'closed form':>22s}{'tnlib':>22s}{'scipy':>22s}"]
    for name, closed, ours, theirs in rows:
        lines.append(f"{name:<10s}{closed:22.15g}{ours:22.15g}{theirs:22.15g}")
    return "\n".join(lines)


def censoring_versus_truncation(loc: float, scale: float, bound: float, count: int, seed: int) -> dict[str, float]:
    """A Tobit-style simulation: draw N(loc, scale) and record a value below ``bound`` as ``bound`` (censoring).
    The estimates of loc: the sample mean; the censored-data (Tobit) MLE, which counts each value at the bound
    as P(x <= bound) = Phi((bound - loc) / scale); and the truncated-model MLE fitted to the same data as if the
    values at the bound were exact observations -- the wrong model for censored data."""
    from scipy.optimize import minimize
    from scipy.stats import norm

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
    truncated_loc, _ = fit_truncated_normal(censored, bound - 1e-9, math.inf, steps=800)
    return {"true loc": loc, "share at the bound": float(at_bound.mean()), "sample mean": float(censored.mean()),
            "censored (Tobit) MLE": float(tobit[0]), "truncated MLE on censored data": truncated_loc}


def format_probability(log_probability: float, digits: int = 4) -> str:
    """A probability given by its log, with ``digits`` significant digits, never rounded to "0" while the log
    is finite: plain below 1 down to 1e-3, ``m.mmme-N`` below (computed from the log, so far-tail masses such
    as ``exp(-1264.9)`` that underflow float64 are still shown), "0" only for a log of -inf."""
    if log_probability == -math.inf:
        return "0"
    if log_probability >= math.log(1e-3):
        return f"{math.exp(log_probability):.{digits}g}"
    log10 = log_probability / math.log(10.0)
    exponent = math.floor(log10)
    mantissa = round(10.0 ** (log10 - exponent), digits - 1)
    if mantissa >= 10.0:  # rounding carried into the next power of ten
        mantissa, exponent = mantissa / 10.0, exponent + 1
    return f"{mantissa:.{digits - 1}f}e{exponent:+d}"


def format_description(description: dict[str, float]) -> str:
    """A few aligned lines for printing :func:`describe_truncated_normal`'s result (Z through
    :func:`format_probability`, so a tiny but positive Z never prints as 0)."""
    labels = {
        "normal_mean": "Normal mean = mode = mu",
        "mean": "truncated mean E[x] (heuristic)",
        "mode": "truncated mode",
        "stddev": "truncated stddev",
        "kept_mass": "kept mass Z",
        "log_normalizer": "log Z",
        "normal_nll": "NLL of x under Normal",
        "truncated_nll": "NLL of x under Truncated Normal",
    }
    def value(key: str) -> str:
        if key == "kept_mass":
            return " " + format_probability(description["log_normalizer"])
        return f"{description[key]: .4f}"

    return "\n".join(f"{labels[key]:<34s} {value(key)}" for key in labels)


def preset_summary_table(
    loc: float = 0.0,
    scale: float = 1.0,
    observed: float = 0.5,
    presets: tuple[tuple[str, float, float], ...] = PRESET_BOUNDS,
) -> str:
    """One line per preset: its truncated mean, mode, kept mass and the NLL of ``observed`` (inf when the
    observation is outside the bounds)."""
    header = f"{'bounds (l, u)':<34s}{'mean':>9s}{'mode':>9s}{'Z':>10s}{'NLL N':>9s}{'NLL TN':>9s}"
    lines = [header, "-" * len(header)]
    for label, low, high in presets:
        row = describe_truncated_normal(loc, scale, low, high, observed)
        lines.append(
            f"{label:<34s}{row['mean']:9.3f}{row['mode']:9.3f}{format_probability(row['log_normalizer']):>10s}"
            f"{row['normal_nll']:9.3f}{row['truncated_nll']:9.3f}"
        )
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------------------
# Classroom demonstrations
# ----------------------------------------------------------------------------------------------------------


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


@contextlib.contextmanager
def _single_thread() -> Iterator[None]:
    """Run torch on one thread inside the block.

    The demonstrations' tensors are tiny: one thread is fastest, and on a busy two-core machine OpenMP's
    spin-waiting made two threads five to ten times slower than one.
    """
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


#: Curve labels of :func:`bound_nll_curves` and :func:`descend_loc`.
GAUSSIAN_LABEL = "Gaussian N(mu, sigma)"
CLOSED_LABEL = "closed bound TN(mu, sigma, l, inf)"
OPEN_LABEL = "open bound TN(mu, sigma, l - eps, inf)"


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
    with _single_thread():
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


# ----------------------------------------------------------------------------------------------------------
# Synthetic heuristic regression
# ----------------------------------------------------------------------------------------------------------


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
    trend = 2.0 + 8.0 * features[:, 0] + 4.0 * torch.sin(3.0 * features[:, 1])
    noise = torch.randn(num_states, generator=generator, dtype=DTYPE) * (0.5 + 2.0 * features[:, 0])
    optimal_cost = torch.clamp(torch.round(trend + noise), min=0.0)
    uniform = torch.rand(num_states, generator=generator, dtype=DTYPE).clamp_min(1e-12)
    gap = torch.floor(-_GAP_SCALE * torch.log(uniform))  # geometric: P(gap = 0) = 1 - exp(-2/3) ~ 0.49
    lower_bound = torch.clamp(optimal_cost - gap, min=0.0)
    return SyntheticHeuristicData(features, optimal_cost, lower_bound)


# The generator's parameters, as make_synthetic_heuristic_data draws them (the Bayes-optimal estimate reads them).
_GAP_SCALE = 1.5


def bayes_optimal_cost(data: SyntheticHeuristicData) -> np.ndarray:
    """E[h* | z, l] under the generator of :func:`make_synthetic_heuristic_data`: the best any model can predict
    from the features and the bound (its MSE is the floor of section 8's experiment). The posterior over the
    integer h* = v is P(v | z) P(l | v): P(v | z) is the rounded, clipped normal's mass on v, and l = max(v - g, 0)
    with the gap's P(g) = exp(-g / 1.5) - exp(-(g + 1) / 1.5), so P(l | v) = P(g = v - l) for l > 0 and P(g >= v)
    for l = 0."""
    from scipy.special import ndtr

    z1, z2 = (data.features[:, k].numpy()[:, None] for k in (0, 1))
    trend = 2.0 + 8.0 * z1 + 4.0 * np.sin(3.0 * z2)
    spread = 0.5 + 2.0 * z1
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
    "truncated": "Truncated Gaussian, learned sigma, open bound l - eps",
}
#: The models whose network reads the bound l beside the features (the others see the features only).
MODELS_READING_THE_BOUND = ("gaussian_mse_bound",)
#: The point estimates compared on the test states, with their labels.
ESTIMATE_LABELS: dict[str, str] = {
    "mu": "mu",
    "clipped": "max(mu, l)",
    "truncated_mean": "TN mean",
}
# Centre and spread of the typical cost, so that the network's raw outputs start near sensible values.
_COST_CENTRE, _COST_SPREAD = 8.0, 5.0


class _HeuristicNetwork(torch.nn.Module):
    """Features (and, with ``reads_bound``, the bound l scaled like the cost) -> (mu, sigma): a one-hidden-layer
    tanh network with a softplus sigma head."""

    def __init__(self, hidden_units: int, reads_bound: bool = False) -> None:
        super().__init__()
        self.reads_bound = reads_bound
        self.body = torch.nn.Sequential(torch.nn.Linear(3 if reads_bound else 2, hidden_units), torch.nn.Tanh(),
                                        torch.nn.Linear(hidden_units, 2))

    def forward(self, features: torch.Tensor, lower_bound: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.reads_bound:
            features = torch.cat([features, ((lower_bound - _COST_CENTRE) / _COST_SPREAD)[:, None]], dim=1)
        output = self.body(features)
        mu = _COST_CENTRE + _COST_SPREAD * output[:, 0]
        sigma = torch.nn.functional.softplus(output[:, 1]) + 1e-2  # floor keeps the NLL finite
        return mu, sigma


@dataclass
class RegressionResult:
    """What :func:`run_synthetic_regression` measured.

    ``validation_mse[model]`` is the test MSE of the model's planning heuristic (mu for the Gaussians, the
    TN mean for the Truncated Gaussian) after each step in ``recorded_steps``; ``train_nll[model]`` its
    training loss at the same steps. ``test_mse[model][estimate]`` compares the point estimates after
    training (``truncated_mean`` only for the truncated model). ``lower_bound_mse`` is the MSE of using l
    itself; ``truncated_mean_minus_bound`` is the smallest ``TN mean - l`` over the test states; ``best_mse`` the
    test MSE of the best possible predictor from features and l, :func:`bayes_optimal_cost`.
    """

    recorded_steps: list[int]
    validation_mse: dict[str, list[float]]
    train_nll: dict[str, list[float]]
    test_mse: dict[str, dict[str, float]]
    lower_bound_mse: float
    truncated_mean_minus_bound: float
    best_mse: float
    test_optimal_cost: np.ndarray = field(repr=False)
    test_lower_bound: np.ndarray = field(repr=False)
    test_heuristic: dict[str, np.ndarray] = field(repr=False)


def _model_distribution(kind: str, mu: torch.Tensor, sigma: torch.Tensor, lower_bound: torch.Tensor, margin: float):
    if kind in ("gaussian_mse", "gaussian_mse_bound"):
        return Normal(mu, torch.full_like(mu, FIXED_SIGMA))
    if kind == "gaussian":
        return Normal(mu, sigma)
    return TruncatedNormal(mu, sigma, lower_bound - margin, torch.full_like(mu, math.inf), validate_args=False)


def run_synthetic_regression(
    seed: int = 0,
    num_train: int = 500,
    num_test: int = 2000,
    steps: int = 400,
    learning_rate: float = 0.03,
    hidden_units: int = 16,
    open_bound_margin: float = PAPER_OPEN_BOUND_MARGIN,
    record_every: int | None = None,
) -> RegressionResult:
    """Train the three models of :data:`MODEL_LABELS` on the same synthetic data (full batch, Adam).

    Every model sees the features only; the Truncated Gaussian also gets the admissible bound l as the lower
    end of its support, at training and at test (planning) time. Deterministic for a seed: data and
    initial weights come from seeded generators and full-batch CPU training has no other randomness.
    """
    check_parameters(seed, num_train, num_test, steps, learning_rate, hidden_units, open_bound_margin)
    with _single_thread():
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

    validation_mse: dict[str, list[float]] = {}
    train_nll: dict[str, list[float]] = {}
    test_mse: dict[str, dict[str, float]] = {}
    test_heuristic: dict[str, np.ndarray] = {}
    truncated_margin = math.inf
    for kind in MODEL_LABELS:
        # Same initial weights for every model (seeded per run, isolated from the global RNG).
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed * 1000 + 17)
            network = _HeuristicNetwork(hidden_units, kind in MODELS_READING_THE_BOUND).to(DTYPE)
        optimizer = torch.optim.Adam(network.parameters(), lr=learning_rate)

        def heuristic(data: SyntheticHeuristicData) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            mu, sigma = network(data.features, data.lower_bound)
            if kind == "truncated":
                planning = _model_distribution(kind, mu, sigma, data.lower_bound, open_bound_margin).mean
            else:
                planning = mu
            return mu, sigma, planning

        validation_mse[kind], train_nll[kind] = [], []
        for step in range(steps + 1):
            mu, sigma = network(train.features, train.lower_bound)
            loss = -_model_distribution(kind, mu, sigma, train.lower_bound, open_bound_margin).log_prob(train.optimal_cost).mean()
            if step in recorded_steps:
                with torch.no_grad():
                    _, _, planning = heuristic(test)
                validation_mse[kind].append(float(((planning - test.optimal_cost) ** 2).mean()))
                train_nll[kind].append(loss.item())
            if step == steps:
                break
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

        with torch.no_grad():
            mu, sigma, planning = heuristic(test)
        estimates = {"mu": mu, "clipped": torch.maximum(mu, test.lower_bound)}
        if kind == "truncated":
            estimates["truncated_mean"] = planning
            truncated_margin = float((planning - test.lower_bound).min())
        test_mse[kind] = {name: float(((value - test.optimal_cost) ** 2).mean()) for name, value in estimates.items()}
        test_heuristic[kind] = planning.numpy()

    return RegressionResult(
        recorded_steps=recorded_steps,
        validation_mse=validation_mse,
        train_nll=train_nll,
        test_mse=test_mse,
        lower_bound_mse=float(((test.lower_bound - test.optimal_cost) ** 2).mean()),
        best_mse=float(((bayes_optimal_cost(test) - test.optimal_cost.numpy()) ** 2).mean()),
        truncated_mean_minus_bound=truncated_margin,
        test_optimal_cost=test.optimal_cost.numpy(),
        test_lower_bound=test.lower_bound.numpy(),
        test_heuristic=test_heuristic,
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
    seeds = [_as_int("seed", seed, 0) for seed in seeds]
    if len(seeds) < 2:
        raise ValueError(f"seeds: at least two to compare across seeds, got {seeds}")
    results = [run_synthetic_regression(seed=seed, **settings) for seed in seeds]
    return SeedComparison(seeds, [r.test_mse for r in results], [r.best_mse for r in results],
                          results[0].recorded_steps, [r.validation_mse for r in results])


def format_seed_comparison(comparison: SeedComparison) -> str:
    """Per seed the test MSE of each model's planning heuristic, the TN mean and the best possible; then the TN
    mean against each of :data:`SEED_COMPARISONS`, paired by seed (same data): mean difference and its 95%
    t-interval."""
    from tnlib.experiments.seed_statistics import paired_interval

    kinds = [k for k in MODEL_LABELS if k != "truncated"]
    header = f"{'seed':>4s}" + "".join(f"{k:>20s}" for k in kinds) + f"{'TN mean':>10s}{'best possible':>15s}"
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
    from tnlib.experiments.seed_statistics import paired_interval

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


# ----------------------------------------------------------------------------------------------------------
# The real labels: how far the bounds are from h*
# ----------------------------------------------------------------------------------------------------------

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

    def exact_fraction(self, bound: str = "lmcut") -> float:
        """The fraction of states where the lower bound equals h*: the training targets that sit exactly on
        the truncation point l (why the paper opens the bound to l - 0.1)."""
        return float(np.mean(self.lower_gaps[bound] == 0))


def label_gaps(data_root: str | None = None, profile: str = "small", split: str = "train",
               domains: tuple[str, ...] | None = None) -> list[LabelGaps]:
    """:class:`LabelGaps` of every domain of a dataset (``data_root``: a dataset root or a data root, None or ""
    for the default; checked like every load, :func:`tnlib.data.load_split`). Raises ``DatasetError`` naming
    what is missing or wrong, ``ValueError`` if a label breaks ``l <= h*`` (a corrupt dataset)."""
    from tnlib.data.loading import load_split
    from tnlib.paper import DOMAINS

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
    state) and the MSE of l + their mean on another split."""

    domain: str
    gaussian: tuple[float, float]
    truncated: tuple[float, float]
    gaussian_nll: float
    truncated_nll: float
    gaussian_mse: float
    truncated_mse: float


def fit_gap_models(train: list[LabelGaps], held_out: list[LabelGaps], bound: str = "lmcut",
                   margin: float = PAPER_OPEN_BOUND_MARGIN) -> list[GapFit]:
    """Per domain, fit the gap h* - l of ``train``'s states with a Gaussian (its MLE: the sample mean and standard
    deviation) and with TN(mu, sigma, -margin, inf) (:func:`fit_truncated_normal`), and score both on
    ``held_out``'s states: a model with no features, the simplest "fitted model" of the real labels."""
    fits = []
    for fit_on, score_on in zip(train, held_out):
        gap, test_gap = fit_on.lower_gaps[bound], score_on.lower_gaps[bound]
        loc, scale = float(gap.mean()), float(gap.std())
        t_loc, t_scale = fit_truncated_normal(gap, -margin, math.inf)
        values = torch.as_tensor(test_gap, dtype=DTYPE)
        gaussian_nll = float(-Normal(torch.tensor(loc, dtype=DTYPE), torch.tensor(scale, dtype=DTYPE)).log_prob(values).mean())
        tn = truncated_normal(t_loc, t_scale, -margin, math.inf)
        truncated_nll_value = float(-tn.log_prob(values).mean())
        fits.append(GapFit(fit_on.domain, (loc, scale), (t_loc, t_scale), gaussian_nll, truncated_nll_value,
                           float(np.mean((test_gap - loc) ** 2)), float(np.mean((test_gap - float(tn.mean)) ** 2))))
    return fits


def format_gap_fits(fits: list[GapFit]) -> str:
    """:func:`fit_gap_models` as an aligned table."""
    lines = [f"{'domain':<12s}{'Gaussian (mu, sigma)':>22s}{'TN (mu, sigma)':>20s}{'NLL Gaussian':>14s}{'NLL TN':>9s}"
             f"{'MSE Gaussian':>14s}{'MSE TN':>9s}"]
    for fit in fits:
        lines.append(f"{fit.domain:<12s}{f'({fit.gaussian[0]:.2f}, {fit.gaussian[1]:.2f})':>22s}"
                     f"{f'({fit.truncated[0]:.2f}, {fit.truncated[1]:.2f})':>20s}{fit.gaussian_nll:14.3f}"
                     f"{fit.truncated_nll:9.3f}{fit.gaussian_mse:14.3f}{fit.truncated_mse:9.3f}")
    return "\n".join(lines)
