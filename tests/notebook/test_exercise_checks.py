"""tnlib.notebook.exercise_checks: the expected answers against scipy and mpmath, what a check cell says to right,
approximate, wrong and missing answers, and the classroom notebook's check cells (one per checked exercise, kept in
the students' copy)."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import mpmath
import pytest
from scipy import optimize, stats

from tnlib.notebook import exercise_checks
from tnlib.notebook.exercise_checks import check_answer, expected_answers
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


@pytest.mark.parametrize("exercise", sorted(expected_answers()))
def test_a_check_says_correct_or_not_yet_and_never_gives_the_answer_away(exercise):
    expected = expected_answers()[exercise]
    right = check_answer(exercise, expected.value + expected.tolerance / 2)
    assert right.startswith(f"Exercise {exercise}: correct")
    for wrong, side in ((expected.value + 10 * expected.tolerance + 1.0, "too large"),
                        (expected.value - 10 * expected.tolerance - 1.0, "too small")):
        message = check_answer(exercise, wrong)
        assert message.startswith(f"Exercise {exercise}: not yet") and side in message and "Hint:" in message
        shown = {f"{expected.value:.{digits}f}" for digits in (2, 3, 4, 6)} | {f"{expected.value:g}"}
        assert not [text for text in shown if text in message], message
    assert "no answer yet" in check_answer(exercise, None)
    for not_a_number in ("about 0.8", [1.0], True, math.nan, math.inf):
        assert "is not a finite number" in check_answer(exercise, not_a_number)


def test_the_open_bound_approximation_is_called_close_with_what_to_do_next():
    approximation = exercise_checks.EXERCISE_4_BOUND - 0.1 - exercise_checks.EXERCISE_4_SCALE ** 2 / 0.1
    message = check_answer(4, approximation)
    assert message.startswith("Exercise 4: close") and "lambda(a) - a = epsilon / sigma" in message
    assert "correct" not in check_answer(4, approximation)


def test_an_exercise_without_a_number_to_check_is_refused_naming_those_with_one():
    with pytest.raises(ValueError, match=r"exercise 7 has no number to check; exercises with a check: 1, 2, 3, 4, 10"):
        check_answer(7, 1.0)


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
    assert sorted(checked) == sorted(expected_answers())
    student, _ = student_copy(notebook)
    kept = {"".join(cell["source"]) for cell in student["cells"] if cell["cell_type"] == "code"}
    assert set(checked.values()) <= kept
