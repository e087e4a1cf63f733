"""What the Truncated Gaussian explorer prints: the distribution's summary for given bounds and an observed h*, and
the presets' table."""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch.distributions import Normal

from tnlib.notebook.demo_tensors import DTYPE, truncated_normal, truncated_nll


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


@dataclass(frozen=True)
class SteppedExample:
    """One of the explorer's "things to try" as the settings a slider steps through
    (``tnlib.notebook.density_figures.stepped_truncated_normal_figure``): it can be tried without a kernel."""

    name: str
    slider_label: str
    settings: tuple[tuple[float, float, float, float], ...]  # (loc, scale, low, high) per step
    step_labels: tuple[str, ...]
    observed: float


def _stepped(name: str, slider_label: str, values: tuple[float, ...], setting, observed: float) -> SteppedExample:
    return SteppedExample(name, slider_label, tuple(setting(value) for value in values),
                          tuple(f"{value:g}" for value in values), observed)


#: The explorer's three things to try, each as a slider: (1) sigma shrinking under a far lower bound (the mean
#: stays sigma^2 / (l - mu) above l); (2) mu sliding away from an observation at a closed bound x = l (the
#: truncated NLL keeps falling: no minimum); (3) a symmetric window widening (log Z reaches 0 only without bounds).
THINGS_TO_TRY: tuple[SteppedExample, ...] = (
    _stepped("1. the mean in a far tail: sigma shrinks, l = 2.5", "sigma = ",
             (1.0, 0.7, 0.5, 0.3, 0.2, 0.1, 0.05, 0.02, 0.01), lambda sigma: (0.0, sigma, 2.5, math.inf), 2.6),
    _stepped("2. x = l and mu far to the left", "mu = ",
             (0.0, -1.0, -2.0, -5.0, -10.0, -20.0, -50.0, -100.0), lambda mu: (mu, 1.0, 0.2, math.inf), 0.2),
    _stepped("3. a symmetric window (-w, w) widening", "w = ",
             (1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0), lambda width: (0.0, 1.0, -width, width), 0.5),
)


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
        # significant digits, not decimals: a stddev of 9.9e-6 is not 0.0000, and log Z = 0 is not -0
        return f"{description[key] + 0.0: .6g}"

    return "\n".join(f"{labels[key]:<34s} {value(key)}" for key in labels)


def preset_summary_table(
    loc: float = 0.0,
    scale: float = 1.0,
    observed: float = 0.5,
    presets: tuple[tuple[str, float, float], ...] = PRESET_BOUNDS,
) -> str:
    """One line per preset: its truncated mean, mode, kept mass and the NLL of ``observed`` (inf when the
    observation is outside the bounds)."""
    # four significant digits in columns of 11 with a space between: an NLL of 1e5 or more keeps its column apart
    header = f"{'bounds (l, u)':<34s}{'mean':>11s}{'mode':>11s}{'Z':>11s}{'NLL N':>11s}{'NLL TN':>11s}"
    lines = [header, "-" * len(header)]
    for label, low, high in presets:
        row = describe_truncated_normal(loc, scale, low, high, observed)
        lines.append(
            f"{label:<34s} {row['mean']:>10.4g} {row['mode']:>10.4g} {format_probability(row['log_normalizer']):>10s}"
            f" {row['normal_nll']:>10.4g} {row['truncated_nll']:>10.4g}"
        )
    return "\n".join(lines)


def things_to_try_answer(index: int) -> str:
    """Section 4's answer to thing to try ``index`` (0, 1, 2: :data:`THINGS_TO_TRY`), one line per step of its
    slider: (1) the mean's distance from l beside the exponential tail's sigma^2 / (l - mu); (2) the truncated NLL of
    x = l beside -log(l - mu), which it approaches; (3) the Normal's and the Truncated Normal's NLL of x and log Z,
    their difference."""
    example = THINGS_TO_TRY[index]
    lines = []
    for (loc, scale, low, high), label in zip(example.settings, example.step_labels):
        row = describe_truncated_normal(loc, scale, low, high, example.observed)
        if index == 0:
            lines.append(f"sigma {label:>5s}: mean - l = {row['mean'] - low:.4g}, "
                         f"sigma^2 / (l - mu) = {scale ** 2 / (low - loc):.4g}")
        elif index == 1:
            lines.append(f"mu {label:>5s}: truncated NLL of x = l {row['truncated_nll']:8.4f}, "
                         f"-log(l - mu) = {-math.log(low - loc):8.4f}")
        else:
            lines.append(f"bounds +-{label:<3s}: Normal NLL {row['normal_nll']:.7f}, TN NLL {row['truncated_nll']:.7f}, "
                         f"log Z {row['log_normalizer']:.3g}")
    return "\n".join(lines)
