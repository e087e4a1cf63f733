"""The classroom notebook's answer checks: a student writes a number into the cell under an exercise and runs it;
:func:`check_answer` says whether it is right, how far off it is and what to look at again, without giving the
answer away. The check cells are code, so ``tnlib handout`` keeps them in the students' copy (the folded solutions
it leaves out are Markdown).

Each expected answer is computed here by tnlib (the Truncated Gaussian's statistics, the notebook's own
demonstrations), not typed in: ``tests/notebook/test_exercise_checks.py`` checks them against scipy and mpmath.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import torch
from scipy.optimize import brentq
from torch.distributions import Laplace

from tnlib.notebook.classroom_demos import nll_versus_scale
from tnlib.notebook.demo_tensors import DTYPE, single_thread, truncated_normal
from tnlib.paper import FIXED_SIGMA, OPEN_BOUND_EPSILON


@dataclass(frozen=True)
class ExpectedAnswer:
    """What an exercise's check cell asks for (``asks``, the quantity its variable holds), the value it expects
    and how close an answer must come (``tolerance``, absolute). ``near`` is an easier value a student may give
    instead (an approximation the exercise derives), with ``near_note`` saying what it is and how to do better."""

    exercise: int
    asks: str
    value: float
    tolerance: float
    hint: str
    near: float | None = None
    near_note: str = ""


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


# Exercise 10's state: section 8c's largest test state (l = 36, the open bound l - 0.1, the network's mu).
EXERCISE_10_BOUND, EXERCISE_10_LOC = 36.0 - OPEN_BOUND_EPSILON, 12.43
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
                       "write out -log of the Laplace density with b = 1: what is left when x = mu?"),
        ExpectedAnswer(2, f"the smallest mean Gaussian NLL of residuals whose RMS is {EXERCISE_2_RMS:g}",
                       _smallest_gaussian_nll(EXERCISE_2_RMS), 5e-3,
                       "put the minimising sigma (the residuals' RMS) back into the mean NLL: "
                       "1/2 + log sigma + 1/2 log(2 pi)"),
        ExpectedAnswer(3, "the mean of TN(0, 1, 0, inf)", _half_normal_mean(), 5e-3,
                       "alpha = 0 and beta = inf in the mean's formula of section 5: phi(0) / (1 - Phi(0))"),
        ExpectedAnswer(4, f"the mu minimising the NLL of h* = l = {EXERCISE_4_BOUND:g} under "
                          f"TN(mu, {EXERCISE_4_SCALE:g}, l - {epsilon:g}, inf)",
                       _open_bound_minimiser(EXERCISE_4_BOUND, EXERCISE_4_SCALE, epsilon), 1e-2,
                       "solve lambda(a) - a = epsilon / sigma for a (brentq), then mu = l - epsilon - sigma a; "
                       "section 6's figure shows where the minimum lies",
                       near=approximation_4,
                       near_note=f"that is the approximation l - epsilon - sigma^2 / epsilon = {approximation_4:g}; "
                                 "the exact minimiser solves lambda(a) - a = epsilon / sigma"),
        ExpectedAnswer(10, f"the mean of TN({EXERCISE_10_LOC:g}, 1/sqrt(2), {EXERCISE_10_BOUND:g}, inf)",
                       _far_tail_mean(EXERCISE_10_BOUND, EXERCISE_10_LOC, FIXED_SIGMA), 1e-3,
                       "the mean lies a little above a: by about sigma^2 / (a - mu)"),
    ]
    return {answer.exercise: answer for answer in answers}


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
    answer, nor how far off (which would give it away). A ValueError for an exercise that has no check."""
    expected = expected_answers().get(exercise)
    if expected is None:
        raise ValueError(f"exercise {exercise} has no number to check; exercises with a check: "
                         f"{', '.join(map(str, sorted(expected_answers())))}")
    name = f"Exercise {exercise}"
    number = _as_number(answer)
    if answer is None:
        message = (f"{name}: no answer yet. Set the variable above to {expected.asks} (a number) and run this "
                   "cell again.")
    elif number is None:
        message = f"{name}: {answer!r} is not a finite number; the cell wants {expected.asks}."
    elif abs(number - expected.value) <= expected.tolerance:
        message = f"{name}: correct ({number:.6g} is within {expected.tolerance:g} of {expected.asks})."
    elif expected.near is not None and abs(number - expected.near) <= expected.tolerance:
        message = f"{name}: close -- {expected.near_note}."
    else:
        side = "too large" if number > expected.value else "too small"
        message = f"{name}: not yet -- {number:.6g} is {side}. Hint: {expected.hint}."
    return message
