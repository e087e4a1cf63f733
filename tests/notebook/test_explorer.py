"""tnlib.notebook.explorer: the Truncated Gaussian explorer's summary against scipy and mpmath, and its answers to
the explorer's "things to try"."""
from __future__ import annotations

import math
import re

import mpmath
import numpy as np
import pytest
import scipy.stats
from scipy.stats import truncnorm

from tnlib.notebook import explorer


@pytest.mark.parametrize("label, low, high", explorer.PRESET_BOUNDS)
def test_describe_truncated_normal_matches_scipy(label, low, high):
    described = explorer.describe_truncated_normal(0.0, 1.0, low, high, 0.5)
    reference = truncnorm(low, high)  # standardised bounds, mu=0, sigma=1
    assert described["mean"] == pytest.approx(reference.mean(), abs=1e-7)
    assert described["stddev"] == pytest.approx(reference.std(), abs=1e-7)
    assert low <= described["mean"] <= high
    assert described["mode"] == pytest.approx(min(max(0.0, low), high))
    if low <= 0.5 <= high:
        assert described["truncated_nll"] == pytest.approx(-reference.logpdf(0.5), abs=1e-9)
        assert described["truncated_nll"] == pytest.approx(described["normal_nll"] + described["log_normalizer"])
    else:
        assert described["truncated_nll"] == math.inf


@pytest.mark.parametrize("log_probability", [-1e-9, -0.5, -6.9, -7.0, -50.0, -708.0, -800.0, -1264.8553, -2.5e6])
def test_format_probability_matches_mpmath_and_never_shows_zero(log_probability):
    mpmath = pytest.importorskip("mpmath")
    text = explorer.format_probability(log_probability)
    assert mpmath.mpf(text) == pytest.approx(mpmath.exp(log_probability), rel=1e-3), text
    assert mpmath.mpf(text) > 0
    assert explorer.format_probability(-math.inf) == "0"


def test_description_shows_a_tiny_kept_mass_from_log_z():
    # mu = -50 with bounds (0.2, 1.7): Z = exp(-1264.86) underflows float64, log Z is finite
    described = explorer.describe_truncated_normal(-50.0, 1.0, 0.2, 1.7, 0.5)
    assert described["kept_mass"] == 0.0 and math.isfinite(described["log_normalizer"])
    line = next(line for line in explorer.format_description(described).splitlines() if line.startswith("kept mass Z"))
    assert line.split()[-1] == explorer.format_probability(described["log_normalizer"])
    assert line.split()[-1].endswith("e-550")


def test_paper_figure1_mean_lies_inside_the_bounds_although_mu_does_not():
    described = explorer.describe_truncated_normal(0.0, 1.0, 0.2, 1.7, 0.5)
    assert 0.2 < described["mean"] < 1.7
    assert described["mean"] == pytest.approx(scipy.stats.truncnorm(0.2, 1.7).mean(), rel=1e-12)
    assert "paper Figure 1" in explorer.preset_summary_table()


# The explorer's answers to its "things to try", each against scipy.

def test_a_far_tail_mean_approaches_the_bound_like_sigma_squared_over_its_distance():
    for scale in (0.1, 0.01, 0.001):
        described = explorer.describe_truncated_normal(0.0, scale, 2.5, math.inf, 2.5)
        reference = scipy.stats.truncnorm(2.5 / scale, np.inf, loc=0.0, scale=scale)
        if scale == 0.1:  # scipy still has the digits of mean - l here
            assert described["mean"] == pytest.approx(reference.mean(), rel=1e-12)
        assert described["mean"] - 2.5 == pytest.approx(scale ** 2 / 2.5, rel=0.02)
        assert described["mean"] > 2.5


def test_the_nll_at_a_closed_bound_falls_without_limit_as_mu_moves_away():
    locs = [0.0, -5.0, -20.0, -100.0, -1000.0]
    nlls = [explorer.describe_truncated_normal(loc, 1.0, 0.2, math.inf, 0.2)["truncated_nll"] for loc in locs]
    assert all(later < earlier for earlier, later in zip(nlls, nlls[1:]))
    assert nlls[0] == pytest.approx(-scipy.stats.truncnorm(0.2, np.inf).logpdf(0.2), rel=1e-12)
    for loc, nll in zip(locs[2:], nlls[2:]):
        assert nll == pytest.approx(-math.log(0.2 - loc), abs=0.01)


def test_the_two_nlls_differ_by_log_z_so_they_are_equal_only_without_bounds():
    plain = explorer.describe_truncated_normal(0.0, 1.0, -math.inf, math.inf, 0.5)
    assert plain["truncated_nll"] == plain["normal_nll"]
    for half_width in (1.0, 3.5, 5.0):
        window = explorer.describe_truncated_normal(0.0, 1.0, -half_width, half_width, 0.5)
        log_z = math.log(1.0 - 2.0 * scipy.stats.norm.sf(half_width))
        assert window["truncated_nll"] - window["normal_nll"] == pytest.approx(log_z, rel=1e-9)
        assert window["truncated_nll"] < window["normal_nll"]
    at_three_and_a_half = explorer.describe_truncated_normal(0.0, 1.0, -3.5, 3.5, 0.5)["log_normalizer"]
    assert -5e-4 < at_three_and_a_half < -4e-4  # equal at three decimals, and not equal


def test_the_explorer_prints_small_numbers_and_wide_columns_apart():
    tail = explorer.format_description(explorer.describe_truncated_normal(0.0, 0.01, 3.0, math.inf, 3.00001))
    assert re.search(r"truncated stddev\s+3\.33322e-05", tail)  # not 0.0000
    plain = explorer.format_description(explorer.describe_truncated_normal(0.0, 1.0, -math.inf, math.inf, 0.5))
    assert re.search(r"log Z\s+0$", plain, re.M)  # not -0.0000
    # an NLL past 1e5 keeps a space before it: every row splits into the same number of columns
    rows = explorer.preset_summary_table(loc=-500.0).splitlines()[2:]
    assert {len(row[34:].split()) for row in rows} == {5}


def test_the_answers_to_the_things_to_try_show_what_their_prose_says_at_every_slider_step():
    """(1) the mean's distance from l approaches sigma^2 / (l - mu); (2) the truncated NLL of x = l approaches
    -log(l - mu), with no minimum; (3) the two NLLs differ by log Z, which reaches 0 only as the window opens."""
    number = r"[-+]?\d+\.?\d*(?:e[-+]?\d+)?"
    numbers = [[[float(v) for v in re.findall(number, line.split(":", 1)[1].replace("sigma^2", ""))]
                for line in explorer.things_to_try_answer(index).splitlines()] for index in range(3)]
    assert [len(rows) for rows in numbers] == [len(example.settings) for example in explorer.THINGS_TO_TRY]
    tail = numbers[0]  # mean - l, sigma^2 / (l - mu)
    assert all(0 < gap < approximation for gap, approximation in tail[:-2])
    assert tail[-1][0] == pytest.approx(tail[-1][1], rel=1e-3)
    edge = numbers[1]  # truncated NLL, -log(l - mu)
    assert all(a[0] > b[0] for a, b in zip(edge, edge[1:]))  # falls at every step: no minimum
    assert abs(edge[-1][0] - edge[-1][1]) < 1e-3 < abs(edge[0][0] - edge[0][1])
    for (_, _, _, width), (normal_nll, truncated_nll, log_z) in zip(explorer.THINGS_TO_TRY[2].settings, numbers[2]):
        with mpmath.workdps(30):
            exact_log_z = float(mpmath.log(mpmath.erf(mpmath.mpf(width) / mpmath.sqrt(2))))  # Z of (-w, w)
        assert log_z == pytest.approx(exact_log_z, rel=5e-3)  # printed to three digits
        assert truncated_nll - normal_nll == pytest.approx(exact_log_z, abs=2e-7)  # both printed to seven decimals
