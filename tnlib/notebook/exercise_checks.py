"""The classroom notebook's answer checks: a student writes a number (or, for exercise 8, a sampler) into the cell
under an exercise and runs it; :func:`check_answer` says whether it is right, on which side it is off and what to
look at again, without giving the answer away. The check cells are code, so ``tnlib handout`` keeps them in the
students' copy (the folded solutions it leaves out are Markdown).

Each expected answer is computed here by tnlib (the Truncated Gaussian's statistics, the notebook's own
demonstrations), not typed in: ``tests/notebook/test_exercise_checks.py`` checks them against scipy and mpmath.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy import stats
from scipy.optimize import brentq
from torch.distributions import Laplace

from tnlib.experiments.reporting.seed_statistics import PAIRED_CONFIDENCE, holm_adjusted
from tnlib.notebook.classroom_demos import nll_versus_scale
from tnlib.notebook.demo_tensors import DTYPE, single_thread, truncated_normal
from tnlib.notebook.notebook_parameters import ClassroomParameters
from tnlib.notebook.seed_comparison import committed_seed_values
from tnlib.paper import FIXED_SIGMA, OPEN_BOUND_EPSILON


@dataclass(frozen=True)
class ExpectedAnswer:
    """What an exercise's check cell asks for (``asks``, the quantity its variable holds), the value it expects
    and how close an answer must come (``tolerance``, absolute). ``near`` is an easier value a student may give
    instead (an approximation the exercise derives), with ``near_note`` saying what it is and how to do better.
    ``whole``: the answer counts something, so only a whole number can be right."""

    exercise: int
    asks: str
    value: float
    tolerance: float
    hint: str
    near: float | None = None
    near_note: str = ""
    whole: bool = False


def _laplace_constant() -> float:
    """Exercise 1: with b = 1 the Laplace NLL is |x - mu| + c; c is the NLL at x = mu."""
    one, zero = torch.tensor(1.0, dtype=DTYPE), torch.tensor(0.0, dtype=DTYPE)
    return float(-Laplace(zero, one).log_prob(zero))


def _smallest_gaussian_nll(rms: float) -> float:
    """Exercise 2: the mean Gaussian NLL of residuals +-rms at its minimising sigma, which is their RMS."""
    return float(nll_versus_scale(np.array([rms, -rms]), np.array([rms]))[0])


def _half_normal_mean() -> float:
    """Exercise 3: the mean of TN(0, 1, 0, inf)."""
    with single_thread():
        return float(truncated_normal(0.0, 1.0, 0.0, math.inf).mean)


def _open_bound_minimiser(observed: float, scale: float, margin: float) -> float:
    """Exercise 4: the mu minimising the NLL of ``observed`` = l under TN(mu, scale, l - margin, inf).

    At the minimiser the truncated mean equals the observation (the exercise's solution shows why), and the mean
    grows with mu, so the minimiser is the root of mean(mu) - l: below l - margin - scale^2 / margin - 10 scale
    the mean is under l, at l it is above."""
    low = observed - margin

    def mean_minus_observed(loc: float) -> float:
        return float(truncated_normal(loc, scale, low, math.inf).mean) - observed

    with single_thread():
        return brentq(mean_minus_observed, low - scale ** 2 / margin - 10.0 * scale, observed, xtol=1e-12)


def _far_tail_mean(low: float, loc: float, scale: float) -> float:
    """Exercise 10: the mean of TN(loc, scale, low, inf) with loc far below low."""
    with single_thread():
        return float(truncated_normal(loc, scale, low, math.inf).mean)


def section_8d_differences() -> np.ndarray:
    """Exercise 11: the per-seed differences TN - N (test MSE) of section 8d's default report and cell."""
    defaults = ClassroomParameters()
    values = committed_seed_values(defaults.seed_report, defaults.seed_cell)
    return np.array([values["TN"][seed] - values["N"][seed] for seed in sorted(set(values["TN"]) & set(values["N"]))])


def seeds_to_exclude_zero(differences: np.ndarray, quantile) -> int:
    """Exercise 11 (b): the fewest seeds n whose interval mean +- quantile(n) * sd / sqrt(n) leaves 0 out, were
    the mean and the sample standard deviation of ``differences`` to stay as they are (``quantile(n)``: the t
    quantile with n - 1 degrees of freedom, or the normal's, which every n shares)."""
    mean, spread = abs(float(differences.mean())), float(differences.std(ddof=1))
    return next(n for n in range(2, 100_000) if quantile(n) * spread / math.sqrt(n) < mean)


def _t_quantile(n: int) -> float:
    return float(stats.t.ppf(0.5 + PAIRED_CONFIDENCE / 2, n - 1))


def _normal_quantile(n: int) -> float:
    return float(stats.norm.ppf(0.5 + PAIRED_CONFIDENCE / 2))


# The level each comparison of a report is tested at (a 95% interval excluding 0 is p below it).
ALPHA = 1 - PAIRED_CONFIDENCE
# Exercise 13's family: five comparisons' p-values, each on its own (a 95% interval excluding 0 is p < 0.05).
# Holm keeps 2, Holm without its stopping rule 3, Hochberg's step-up 4, Bonferroni 1, each on its own 4: every
# misreading of the procedure gives another count.
EXERCISE_13_P_VALUES = (0.004, 0.011, 0.019, 0.021, 0.2)


def holm_rejections(p_values) -> int:
    """Exercise 13: how many of the family's comparisons Holm's correction keeps at 1 - PAIRED_CONFIDENCE."""
    return sum(adjusted < ALPHA for adjusted in holm_adjusted(list(p_values)))


def bonferroni_rejections(p_values) -> int:
    """Exercise 13's near miss: every p below alpha / m."""
    return sum(p < ALPHA / len(p_values) for p in p_values)


# Exercise 14's cell: five seeds' best validation MSE at the end of training, N's and TN's (seed by seed).
EXERCISE_14_N = (8.0, 1.0, 2.0, 1.0, 1.5)
EXERCISE_14_TN = (2.0, 0.9, 1.8, 0.8, 1.2)


def geometric_mean_ratio(first, second) -> float:
    """Exercise 14: the geometric mean of the per-seed ratios first / second, exp(mean(log(first / second)))."""
    return math.exp(float(np.mean(np.log(np.asarray(first, dtype=float) / np.asarray(second, dtype=float)))))


# Exercise 10's state: section 8c's largest test state (l = 36, the open bound l - 0.1, the network's mu).
EXERCISE_10_BOUND, EXERCISE_10_LOC = 36.0 - OPEN_BOUND_EPSILON, 12.43
# Exercise 1's scale: the Laplace b whose NLL is |x - mu| plus a constant.
EXERCISE_1_SCALE = 1.0
# Exercise 4's example: section 6's demonstration (h* = l = 5, sigma = 1, the paper's epsilon).
EXERCISE_4_BOUND, EXERCISE_4_SCALE = 5.0, 1.0
# Exercise 2's residuals: RMS 2.
EXERCISE_2_RMS = 2.0


@functools.cache
def expected_answers() -> dict[int, ExpectedAnswer]:
    """Every exercise with a number to check, by its number in the notebook."""
    epsilon = OPEN_BOUND_EPSILON
    approximation_4 = EXERCISE_4_BOUND - epsilon - EXERCISE_4_SCALE ** 2 / epsilon
    answers = [
        ExpectedAnswer(1, "c in -log L(x | mu, b = 1) = |x - mu| + c", _laplace_constant(), 5e-3,
                       "write out -log of the Laplace density with b = 1: what is left when x = mu?",
                       near=EXERCISE_1_SCALE,
                       near_note=f"b = {EXERCISE_1_SCALE:g} answers the question; the cell wants the constant c that "
                                 "-log L(x | mu, 1) adds to |x - mu|"),
        ExpectedAnswer(2, f"the smallest mean Gaussian NLL of residuals whose RMS is {EXERCISE_2_RMS:g}",
                       _smallest_gaussian_nll(EXERCISE_2_RMS), 5e-3,
                       "put the minimising sigma (the residuals' RMS) back into the mean NLL: "
                       "1/2 + log sigma + 1/2 log(2 pi)"),
        ExpectedAnswer(3, "the mean of TN(0, 1, 0, inf)", _half_normal_mean(), 5e-3,
                       "alpha = 0 and beta = inf in the mean's formula of section 5: phi(0) / (1 - Phi(0))"),
        ExpectedAnswer(4, f"the mu minimising the NLL of h* = l = {EXERCISE_4_BOUND:g} under "
                          f"TN(mu, {EXERCISE_4_SCALE:g}, l - {epsilon:g}, inf)",
                       _open_bound_minimiser(EXERCISE_4_BOUND, EXERCISE_4_SCALE, epsilon), 1e-3,
                       "solve lambda(a) - a = epsilon / sigma for a (brentq), then mu = l - epsilon - sigma a, to "
                       "three decimals (section 6's cell prints its grid's minimum to two)",
                       near=approximation_4,
                       near_note=f"that is the approximation l - epsilon - sigma^2 / epsilon = {approximation_4:g}; "
                                 "the exact minimiser solves lambda(a) - a = epsilon / sigma"),
        ExpectedAnswer(10, f"the mean of TN({EXERCISE_10_LOC:g}, 1/sqrt(2), {EXERCISE_10_BOUND:g}, inf)",
                       _far_tail_mean(EXERCISE_10_BOUND, EXERCISE_10_LOC, FIXED_SIGMA), 1e-3,
                       "the mean lies a little above a, by about sigma^2 / (a - mu); the cell wants three decimals"),
        _seeds_answer(),
        ExpectedAnswer(13, f"the number of the five comparisons Holm's correction keeps at {ALPHA:g}",
                       float(holm_rejections(EXERCISE_13_P_VALUES)), 0.5,
                       f"sort the p-values and compare the j-th smallest with {ALPHA:g} / (5 - j + 1), stopping at "
                       "the first that fails",
                       near=float(bonferroni_rejections(EXERCISE_13_P_VALUES)),
                       near_note=f"that is Bonferroni's count (every p below {ALPHA:g} / 5); Holm's threshold loosens "
                                 f"after each rejection: {ALPHA:g} / 5, then {ALPHA:g} / 4, and so on",
                       whole=True),
        ExpectedAnswer(14, "the geometric mean of the five seeds' ratios TN / N",
                       geometric_mean_ratio(EXERCISE_14_TN, EXERCISE_14_N), 5e-3,
                       "take log(TN / N) seed by seed, average the five logs, and exponentiate the average",
                       near=sum(EXERCISE_14_TN) / sum(EXERCISE_14_N),
                       near_note="that is (b)'s answer, the ratio of the two means: a mean of the seeds' ratios "
                                 "weighted by N's errors, which the seed with the largest errors drives; (a) gives "
                                 "each seed's ratio one vote: one ratio per seed, averaged in logs"),
    ]
    return {answer.exercise: answer for answer in answers}


def _seeds_answer() -> ExpectedAnswer:
    """Exercise 11 (b), with the normal quantile's count as the near miss (the t quantile's is larger)."""
    differences = section_8d_differences()
    with_normal = seeds_to_exclude_zero(differences, _normal_quantile)
    return ExpectedAnswer(11, "the number of seeds the paired interval needs to leave 0 out",
                          float(seeds_to_exclude_zero(differences, _t_quantile)), 0.5,
                          "try n = 6, 7, ...: the half-width t(0.975, n - 1) s_d / sqrt(n) must fall below |mean d|",
                          near=float(with_normal),
                          near_note=f"{with_normal} is what the normal's {_normal_quantile(2):.2f} gives; with n seeds "
                                    "the interval takes the t quantile with n - 1 degrees of freedom, which is larger",
                          whole=True)


@dataclass(frozen=True)
class TailSamplerExercise:
    """Exercise 8: the student's ``sampler(a, b, count, seed)`` must return ``count`` draws of the standard
    normal's tail [a, b] that pass a Kolmogorov-Smirnov test against the exact (tnlib's) CDF at ``p_floor``, on
    each of ``tails``: far out, where the textbook inverse CDF returns inf and the tail is nearly exponential, and
    near the mode, where an exponential without the acceptance step is visibly wrong."""

    exercise: int = 8
    tails: tuple[tuple[float, float], ...] = ((9.0, 10.0), (0.0, 2.5))
    count: int = 4_000
    seed: int = 1
    p_floor: float = 5e-4  # a right sampler fails one seed in a thousand (two tails)


TAIL_SAMPLER = TailSamplerExercise()


def checked_exercises() -> list[int]:
    """Every exercise whose check cell :func:`check_answer` answers."""
    return sorted([*expected_answers(), TAIL_SAMPLER.exercise])


def _tail_draws(sampler: object, low: float, high: float) -> tuple[np.ndarray | None, str]:
    """The sampler's draws of the tail [low, high] as floats, or None and what is wrong with them."""
    count, seed = TAIL_SAMPLER.count, TAIL_SAMPLER.seed
    try:
        draws = np.asarray(sampler(low, high, count, seed), dtype=np.float64)  # type: ignore[operator]
    except Exception as error:  # the student's code: report whatever it raised
        return None, f"sampler({low:g}, {high:g}, {count}, {seed}) raised {_brief(error)}"
    if draws.shape != (count,):
        return None, f"sampler(a, b, count, seed) should return count = {count} draws, got shape {draws.shape}"
    if not np.isfinite(draws).all():
        return None, (f"on [{low:g}, {high:g}] {int((~np.isfinite(draws)).sum())} draws are not finite. Hint: this "
                      "is the textbook inverse CDF's failure (section 5b); propose z = a + E / lambda instead")
    outside = int(((draws < low) | (draws > high)).sum())
    if outside:
        return None, f"{outside} draws lie outside [{low:g}, {high:g}]. Hint: reject proposals z > b"
    # A continuous distribution puts no mass on a point: draws exactly at a bound are proposals clipped to it
    # (an atom the Kolmogorov-Smirnov test barely sees when the clipped mass is small).
    at_bound = int(((draws == low) | (draws == high)).sum())
    if at_bound:
        return None, (f"{at_bound} draws lie exactly on a bound of [{low:g}, {high:g}]: the tail has no mass on a "
                      "single point. Hint: reject proposals z > b rather than clipping them to b")
    return draws, ""


def _kolmogorov_smirnov(draws: np.ndarray, low: float, high: float) -> tuple[float, bool]:
    """The p-value of the one-sample KS test of ``draws`` against TN(0, 1, low, high)'s exact CDF, and whether the
    draws sit farther from ``low`` on average than the distribution's mean."""
    with single_thread():
        tail = truncated_normal(0.0, 1.0, low, high)
        exact_cdf = tail.cdf(torch.from_numpy(np.sort(draws))).numpy()
        too_far = bool(draws.mean() > float(tail.mean))
    count = len(draws)
    ranks = np.arange(1, count + 1) / count
    statistic = float(max((ranks - exact_cdf).max(), (exact_cdf - ranks + 1 / count).max()))
    return float(stats.kstwo.sf(statistic, count)), too_far


def _check_tail_sampler(sampler: object) -> str:
    """What exercise 8's check cell prints for ``sampler`` (None: not answered yet)."""
    check, name = TAIL_SAMPLER, f"Exercise {TAIL_SAMPLER.exercise}"
    if sampler is None:
        return (f"{name}: no answer yet. Set the variable above to your sampler, a function sampler(a, b, count, seed) "
                "returning count draws of the standard normal's tail [a, b], and run this cell again.")
    if not callable(sampler):
        return (f"{name}: not yet -- the {type(sampler).__name__} {_brief(sampler)} is not a function; the cell "
                "wants the sampler itself (exercise_8 = sampler, without calling it).")
    p_values = []
    for low, high in check.tails:
        draws, problem = _tail_draws(sampler, low, high)
        if draws is None:
            return f"{name}: not yet -- {problem}."
        p_value, too_far = _kolmogorov_smirnov(draws, low, high)
        if p_value < check.p_floor:
            side = "too far from a" if too_far else "too close to a"
            return (f"{name}: not yet -- on [{low:g}, {high:g}] the draws fail a Kolmogorov-Smirnov test against the "
                    f"exact CDF (p = {p_value:.1e}); they sit {side} on average. Hint: E is exponential with mean 1, "
                    "lambda = (a + sqrt(a^2 + 4)) / 2, and z is kept with probability exp(-(z - lambda)^2 / 2). "
                    "(A right sampler fails this test for about one seed in a thousand.)")
        p_values.append(p_value)
    tails = " and ".join(f"[{low:g}, {high:g}] (p = {p:.2g})" for (low, high), p in zip(check.tails, p_values))
    return f"{name}: correct -- {check.count} draws on {tails} pass a Kolmogorov-Smirnov test against the exact CDF."


def _brief(value: object, width: int = 100) -> str:
    """``value`` on one line, cut to ``width`` characters: an exception as its type and message, anything else
    as its repr (a student's array or a long error message must not fill the cell)."""
    text = f"{type(value).__name__}: {value}" if isinstance(value, BaseException) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


def _as_number(answer: object) -> float | None:
    """``answer`` as a float (a number, or a string that spells one), None where it is not a finite number."""
    if isinstance(answer, bool):
        return None
    try:
        number = float(answer)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def check_answer(exercise: int, answer: object) -> str:
    """What the check cell of ``exercise`` prints for ``answer`` (a number; None: not answered yet): "correct",
    "close" (an approximation the exercise derives) or "not yet", with on which side and a hint -- never the
    answer, nor how far off (which would give it away). Exercise 8 takes the student's sampler instead of a number.
    A ValueError for an exercise that has no check."""
    if exercise == TAIL_SAMPLER.exercise:
        return _check_tail_sampler(answer)
    expected = expected_answers().get(exercise)
    if expected is None:
        raise ValueError(f"exercise {exercise} has nothing to check; exercises with a check: "
                         f"{', '.join(map(str, checked_exercises()))}")
    name = f"Exercise {exercise}"
    number = _as_number(answer)
    if answer is None:
        message = (f"{name}: no answer yet. Set the variable above to {expected.asks} (a number) and run this "
                   "cell again.")
    elif number is None:
        message = f"{name}: {answer!r} is not a finite number; the cell wants {expected.asks}."
    elif expected.whole and not number.is_integer():
        message = f"{name}: not yet -- {number:g} is not a whole number; the cell wants {expected.asks}."
    elif abs(number - expected.value) <= expected.tolerance:
        message = f"{name}: correct ({number:.6g} is within {expected.tolerance:g} of {expected.asks})."
    elif expected.near is not None and abs(number - expected.near) <= expected.tolerance:
        message = f"{name}: close -- {expected.near_note}."
    else:
        side = "too large" if number > expected.value else "too small"
        ending = "" if expected.hint.endswith("?") else "."
        message = f"{name}: not yet -- {number:.6g} is {side}. Hint: {expected.hint}{ending}"
    return message
