"""tnlib.notebook.exercise_checks: the expected answers against scipy and mpmath, what a check cell says to right,
approximate, wrong and missing answers (numbers, and exercise 8's samplers), and the classroom notebook's check cells
(one per checked exercise, kept in the students' copy)."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import mpmath
import numpy as np
import pytest
from scipy import optimize, stats

from tnlib.notebook import exercise_checks
from tnlib.notebook.distribution_properties import naive_inverse_cdf_samples
from tnlib.notebook.exercise_checks import TAIL_SAMPLER, check_answer, checked_exercises, expected_answers
from tnlib.notebook.handout import student_copy

CLASSROOM = Path(__file__).resolve().parents[2] / "notebooks" / "statistics_of_heuristic_learning.ipynb"
CHECK_CALL = re.compile(r"exercise_checks\.check_answer\((\d+),")


def _mp_open_bound_nll(loc, observed, scale, margin):
    """The NLL of ``observed`` under TN(loc, scale, observed - margin, inf), at mpmath's precision."""
    z = (observed - loc) / scale
    kept = mpmath.erfc((observed - margin - loc) / (scale * mpmath.sqrt(2))) / 2
    return z ** 2 / 2 + mpmath.log(mpmath.sqrt(2 * mpmath.pi) * scale) + mpmath.log(kept)


def _mp_lower_truncated_mean(loc, scale, low):
    a = (mpmath.mpf(low) - loc) / scale
    return loc + scale * mpmath.npdf(a) / (mpmath.erfc(a / mpmath.sqrt(2)) / 2)


def test_expected_answers_agree_with_scipy_and_mpmath():
    answers = expected_answers()
    assert answers[1].value == pytest.approx(-stats.laplace.logpdf(1.5, loc=1.5, scale=1.0), abs=1e-12)
    rms = exercise_checks.EXERCISE_2_RMS
    fit = optimize.minimize_scalar(lambda s: -stats.norm.logpdf([rms, -rms], scale=s).mean(), bounds=(0.1, 10.0),
                                   method="bounded", options={"xatol": 1e-10})
    assert fit.x == pytest.approx(rms, abs=1e-6)
    assert answers[2].value == pytest.approx(fit.fun, abs=1e-10)
    assert answers[3].value == pytest.approx(stats.truncnorm(0.0, math.inf).mean(), abs=1e-12)
    with mpmath.workdps(40):
        bound, scale, margin = exercise_checks.EXERCISE_4_BOUND, exercise_checks.EXERCISE_4_SCALE, 0.1
        slope = lambda loc: mpmath.diff(lambda m: _mp_open_bound_nll(m, bound, scale, margin), loc)
        minimiser = mpmath.findroot(slope, -4.9)
        assert answers[4].value == pytest.approx(float(minimiser), abs=1e-9)
        # a minimum, not a maximum: the NLL is higher on both sides
        here = _mp_open_bound_nll(minimiser, bound, scale, margin)
        assert all(_mp_open_bound_nll(minimiser + step, bound, scale, margin) > here for step in (-0.01, 0.01))
        far = _mp_lower_truncated_mean(mpmath.mpf(exercise_checks.EXERCISE_10_LOC), 1 / mpmath.sqrt(2),
                                       mpmath.mpf(exercise_checks.EXERCISE_10_BOUND))
        assert answers[10].value == pytest.approx(float(far), abs=1e-9)


def test_the_seeds_exercise_counts_the_first_seed_number_whose_t_interval_leaves_zero_out():
    d = exercise_checks.section_8d_differences()
    assert len(d) == 5
    needed = int(expected_answers()[11].value)
    half_width = lambda n: stats.t.ppf(0.975, n - 1) * d.std(ddof=1) / math.sqrt(n)
    assert half_width(needed) < abs(d.mean()) <= half_width(needed - 1)
    # five seeds leave 0 in: the exercise's point
    five = stats.ttest_1samp(d, 0.0).confidence_interval(0.95)
    assert five.low < 0 < five.high
    with_normal, z = expected_answers()[11].near, stats.norm.ppf(0.975)
    assert z * d.std(ddof=1) / math.sqrt(with_normal) < abs(d.mean()) <= z * d.std(ddof=1) / math.sqrt(with_normal - 1)


def test_the_holm_exercise_counts_as_the_step_down_rule_does_and_bonferroni_is_the_near_miss():
    p = sorted(exercise_checks.EXERCISE_13_P_VALUES)
    m, kept = len(p), 0
    while kept < m and p[kept] < 0.05 / (m - kept):  # Holm, 1979: step down from the smallest p
        kept += 1
    answer = expected_answers()[13]
    assert answer.value == kept == 2 and answer.whole
    assert answer.near == sum(x < 0.05 / m for x in p) == 1 and sum(x < 0.05 for x in p) == 4
    assert check_answer(13, 1).startswith("Exercise 13: close -- that is Bonferroni's count")


def test_the_holm_exercise_tells_holm_from_each_misreading_of_it():
    """Counting on past the first failure, Hochberg's step-up rule, Bonferroni and no correction each give a count
    of their own, so only Holm's step-down rule with its stop passes."""
    p = sorted(exercise_checks.EXERCISE_13_P_VALUES)
    m = len(p)
    no_stop = sum(x < 0.05 / (m - j) for j, x in enumerate(p))
    hochberg = max((j + 1 for j, x in enumerate(p) if x <= 0.05 / (m - j)), default=0)
    alone, bonferroni = sum(x < 0.05 for x in p), sum(x < 0.05 / m for x in p)
    holm = expected_answers()[13].value
    assert len({holm, no_stop, hochberg, bonferroni}) == 4 and holm not in (alone, no_stop, hochberg)
    for misreading in (no_stop, hochberg, alone):
        assert check_answer(13, misreading).startswith("Exercise 13: not yet")


def test_the_ratio_exercise_is_the_geometric_mean_of_the_seeds_ratios_and_the_ratio_of_means_the_near_miss():
    n, tn = np.array(exercise_checks.EXERCISE_14_N), np.array(exercise_checks.EXERCISE_14_TN)
    answer = expected_answers()[14]
    assert answer.value == pytest.approx(stats.gmean(tn / n), rel=1e-12)
    assert answer.near == pytest.approx(tn.mean() / n.mean(), rel=1e-12)
    assert abs(answer.near - answer.value) > 10 * answer.tolerance  # the near miss is told apart
    # the exercise's point (c): the paired interval of the log ratios holds 1
    interval = np.exp(stats.ttest_1samp(np.log(tn / n), 0.0).confidence_interval(0.95))
    assert interval[0] < 1 < interval[1]
    assert check_answer(14, answer.near).startswith("Exercise 14: close -- that is (b)'s answer, the ratio of the two means")


@pytest.mark.parametrize("exercise", sorted(expected_answers()))
def test_a_check_says_correct_or_not_yet_and_never_gives_the_answer_away(exercise):
    expected = expected_answers()[exercise]
    right = check_answer(exercise, expected.value if expected.whole else expected.value + expected.tolerance / 2)
    assert right.startswith(f"Exercise {exercise}: correct")
    for wrong, side in ((expected.value + 10 * expected.tolerance + 1.0, "too large"),
                        (expected.value - 10 * expected.tolerance - 1.0, "too small")):
        message = check_answer(exercise, wrong)
        assert message.startswith(f"Exercise {exercise}: not yet") and side in message and "Hint:" in message
        assert not re.search(r"[?.]\.$", message), message
        shown = {f"{expected.value:.{digits}f}" for digits in (2, 3, 4, 6)} | {f"{expected.value:g}"}
        assert not [text for text in shown if text in message], message
    assert "no answer yet" in check_answer(exercise, None)
    for not_a_number in ("about 0.8", [1.0], True, math.nan, math.inf):
        assert "is not a finite number" in check_answer(exercise, not_a_number)


def test_a_value_the_notebook_prints_to_two_decimals_does_not_pass_for_the_exact_answer():
    """Section 6 prints exercise 4's grid minimum and section 8c exercise 10's mean to two decimals: copying them
    is not the derivation the checks ask for, and the hint says how many decimals they want."""
    for exercise in (4, 10):
        printed = round(expected_answers()[exercise].value, 2)
        message = check_answer(exercise, printed)
        assert message.startswith(f"Exercise {exercise}: not yet") and "three decimals" in message, message


def test_the_laplace_exercise_calls_the_scale_close_and_asks_for_the_constant():
    message = check_answer(1, exercise_checks.EXERCISE_1_SCALE)
    assert message.startswith("Exercise 1: close -- b = 1 answers the question") and "constant c" in message
    assert check_answer(1, math.log(2)).startswith("Exercise 1: correct")


def test_the_open_bound_approximation_is_called_close_with_what_to_do_next():
    approximation = exercise_checks.EXERCISE_4_BOUND - 0.1 - exercise_checks.EXERCISE_4_SCALE ** 2 / 0.1
    message = check_answer(4, approximation)
    assert message.startswith("Exercise 4: close") and "lambda(a) - a = epsilon / sigma" in message
    assert "correct" not in check_answer(4, approximation)


def test_a_count_is_right_only_as_a_whole_number_and_a_string_that_spells_it_counts():
    seeds = expected_answers()[11].value
    assert check_answer(11, seeds).startswith("Exercise 11: correct")
    assert check_answer(11, str(int(seeds))).startswith("Exercise 11: correct")
    for fraction in (seeds - 0.4, seeds + 0.25):
        message = check_answer(11, fraction)
        assert message.startswith("Exercise 11: not yet") and "not a whole number" in message, message


def test_an_exercise_without_a_check_is_refused_naming_those_with_one():
    with pytest.raises(ValueError,
                       match=r"exercise 7 has nothing to check; exercises with a check: 1, 2, 3, 4, 8, 10, 11, 13, 14"):
        check_answer(7, 1.0)


def _robert_tail_sampler(a, b, count, seed, accept=True, reject_above_b=True):
    """Exercise 8's solution (and, with a step left out, two wrong ones): exponential proposals from a, kept
    with probability exp(-(z - lambda)^2 / 2) and below b."""
    rng, lam, kept = np.random.default_rng(seed), (a + math.sqrt(a * a + 4)) / 2, []
    while len(kept) < count:
        z = a + rng.exponential(1 / lam, count)
        keep = rng.random(count) < (np.exp(-(z - lam) ** 2 / 2) if accept else 1.0)
        kept.extend(z[keep & (z <= b) if reject_above_b else keep])
    return np.array(kept[:count])


def test_the_tail_sampler_check_reference_is_the_exact_tail_cdf():
    for low, high in TAIL_SAMPLER.tails:
        x = np.linspace(low, high, 7)[1:-1]
        p_value, _ = exercise_checks._kolmogorov_smirnov(x, low, high)
        with mpmath.workdps(40):
            tail = lambda t: mpmath.erfc(mpmath.mpf(t) / mpmath.sqrt(2))
            exact = [float((tail(low) - tail(v)) / (tail(low) - tail(high))) for v in x]
        statistic = max(max(r - f for r, f in zip(np.arange(1, 6) / 5, exact)),
                        max(f - r + 0.2 for r, f in zip(np.arange(1, 6) / 5, exact)))
        assert p_value == pytest.approx(stats.kstwo.sf(statistic, 5), rel=1e-9)


def test_a_right_tail_sampler_is_called_correct_on_both_tails():
    message = check_answer(8, _robert_tail_sampler)
    assert message.startswith("Exercise 8: correct") and "[9, 10]" in message and "[0, 2.5]" in message


@pytest.mark.parametrize("sampler, says", [
    (None, "no answer yet"),
    (3.0, "is not a function"),
    (lambda a, b, count, seed: 1 / 0, "raised ZeroDivisionError"),
    (lambda a, b, count, seed: undefined_name, "raised NameError: name 'undefined_name' is not defined"),
    (np.linspace(9.0, 10.0, 4_000), "the ndarray array([ 9."),
    (lambda a, b, count, seed: np.full(3, a), "should return count = 4000 draws"),
    (lambda a, b, count, seed: naive_inverse_cdf_samples(0.0, 1.0, a, b, count, seed), "not finite"),
    (lambda a, b, count, seed: _robert_tail_sampler(a, b, count, seed, reject_above_b=False), "outside [0, 2.5]"),
    (lambda a, b, count, seed: _robert_tail_sampler(a, b, count, seed, accept=False), "too far from a"),
    (lambda a, b, count, seed: np.minimum(_robert_tail_sampler(a, b, count, seed, reject_above_b=False), b),
     "lie exactly on a bound of [0, 2.5]"),
    (lambda a, b, count, seed: np.random.default_rng(seed).uniform(a, b, count), "on [9, 10] the draws fail"),
], ids=["missing", "not-callable", "raises", "name-error", "draws-not-sampler", "wrong-count", "inverse-cdf",
        "ignores-b", "no-acceptance", "clips-to-b", "uniform"])
def test_a_wrong_tail_sampler_is_told_what_is_wrong_without_passing(sampler, says):
    message = check_answer(8, sampler)
    assert says in message and "correct" not in message, message
    # one paragraph the cell shows whole, whatever the student's code printed or raised
    assert "\n" not in message and len(message) < 420, message


def test_a_long_error_of_the_students_sampler_is_cut_to_one_line():
    def sampler(a, b, count, seed):
        raise ValueError("operands could not be broadcast\n" + "x" * 5_000)

    message = check_answer(8, sampler)
    assert "raised ValueError: operands could not be broadcast x" in message and message.endswith("....")
    assert "\n" not in message and len(message) < 250, message


def test_the_classroom_notebook_has_a_check_cell_under_each_checked_exercise_and_the_handout_keeps_them():
    notebook = json.loads(CLASSROOM.read_text())
    cells = notebook["cells"]
    checked = {}
    for index, cell in enumerate(cells):
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and (found := CHECK_CALL.findall(source)):
            exercise = int(found[0])
            assert found == [str(exercise)], f"cell {index} checks more than one exercise"
            # the statement of the exercise is the Markdown right above its check cell
            above = "".join(cells[index - 1]["source"])
            assert f"**Exercise {exercise}.**" in above, f"cell {index}: not under exercise {exercise}"
            # the answer starts empty: the cell asks for one instead of checking the teacher's
            assert re.search(rf"^exercise_{exercise} = None\b", source, re.M), source
            checked[exercise] = source
    assert sorted(checked) == checked_exercises()
    student, _ = student_copy(notebook)
    kept = {"".join(cell["source"]) for cell in student["cells"] if cell["cell_type"] == "code"}
    assert set(checked.values()) <= kept
