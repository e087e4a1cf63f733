"""The moment kernels' shortcuts (tnlib.distributions._moment_kernels) against the quadrature they spare: a narrow
interval's variance and third cumulant from the state's own one-panel sums, bit for bit, and the tail's variance
from the one-sided fraction's (_mixture_variance), within 4e-15 of the eight panels' and of mpmath."""
from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from tnlib.distributions._moment_kernels import (
    _CONSTANTS,
    _WIDE_PANELS,
    ENTROPY,
    VARIANCE,
    _frame_moments_element,
    _gradient_element,
    _is_narrow,
    _moment_state,
    _slopes,
    _value_element,
    _variance_t,
)
from tnlib.distributions.mpmath_reference import mpf_bound, reference_variance

TABLE, NODES, WEIGHTS = _CONSTANTS
# the lower bound a scales above loc and the width w in scales: the tail from the fraction's start to far out
TAIL_A = np.concatenate([np.linspace(3.0, 40.0, 38), np.geomspace(40.0, 1e5, 12)[1:]])
TAIL_W = np.geomspace(1e-4, 1e3, 36)
NARROW = [(a, w) for a in (-50.0, -3.0, -0.5, 0.0, 0.3, 3.0, 50.0) for w in (1e-9, 1e-6, 1e-3, 1e-2)]


def _quadrature_variance(a: float, w: float) -> float:
    """Var[t] of the frame density by the eight panels the tail would otherwise integrate."""
    return _frame_moments_element(a, w, _WIDE_PANELS, NODES, WEIGHTS)[2]


def test_tail_variance_from_the_one_sided_fraction_is_within_4e_15_of_the_quadrature():
    taken = wide = 0
    worst = 0.0
    for a in TAIL_A:
        for w in TAIL_W:
            if _is_narrow(a, w):
                continue
            wide += 1
            state = _moment_state(0.0, 1.0, a, a + w, TABLE, NODES, WEIGHTS)
            taken += not math.isnan(state[12])
            got = _value_element(VARIANCE, 0.0, 1.0, a, a + w, TABLE, NODES, WEIGHTS)
            expected = _quadrature_variance(a, (a + w) - a)  # the width as the kernel forms it
            worst = max(worst, abs(got - expected) / expected)
    # the route is taken on most of the grid, and not everywhere: the quadrature is left where it cancels
    assert 0.8 * wide <= taken < wide
    assert worst <= 4e-15


@pytest.mark.parametrize("a, w", [(3.0, 2.0), (3.0, 1.5), (4.5, 1.0), (7.0, 0.8), (12.0, 0.5), (30.0, 5.0),
                                  (300.0, 0.02), (1e4, 1e-3)])
def test_tail_variance_from_the_one_sided_fraction_is_within_1e_15_of_mpmath(a, w):
    state = _moment_state(0.0, 1.0, a, a + w, TABLE, NODES, WEIGHTS)
    assert not math.isnan(state[12])  # the route under test is the one taken
    got = _value_element(VARIANCE, 0.0, 1.0, a, a + w, TABLE, NODES, WEIGHTS)
    with mp.workdps(80):
        expected = float(reference_variance(mp.mpf(0.0), mp.mpf(1.0), mpf_bound(a), mpf_bound(a + w)))
    assert abs(got - expected) <= 1e-15 * expected


def test_tail_variance_where_the_mixture_cancels_is_the_quadratures():
    # w well below the tail's own spread 1/a: the bound cuts off most of it, and the quadrature takes over
    a, w = 20.0, 0.2
    assert not _is_narrow(a, (a + w) - a) and math.isnan(_moment_state(0.0, 1.0, a, a + w, TABLE, NODES, WEIGHTS)[12])
    assert _value_element(VARIANCE, 0.0, 1.0, a, a + w, TABLE, NODES, WEIGHTS) == _quadrature_variance(a, (a + w) - a)


@pytest.mark.parametrize("a, w", NARROW)
def test_narrow_variance_and_third_cumulant_are_the_states_one_panel_sums(a, w):
    state = _moment_state(0.0, 1.0, a, a + w, TABLE, NODES, WEIGHTS)
    a_c, w_c = state[4], state[6]  # the canonical frame (an interval below loc is mirrored)
    assert _is_narrow(a_c, w_c)
    _, _, var, third = _frame_moments_element(a_c, w_c, 1, NODES, WEIGHTS)
    assert (state[12], state[13]) == (var, third)
    assert _value_element(VARIANCE, 0.0, 1.0, a, a + w, TABLE, NODES, WEIGHTS) == min(max(var, 0.0), 1.0)


@pytest.mark.parametrize("a, w", NARROW)
def test_narrow_entropy_gradient_equals_the_one_with_its_third_cumulant_integrated_again(a, w):
    # the gradient reads kappa_3 from the state; integrating it again (what _slopes does without it) agrees exactly
    state = _moment_state(0.0, 1.0, a, a + w, TABLE, NODES, WEIGHTS)
    _, _, _, _, a_c, b_c, w_c, frame, _, first, p_a, p_b, known_v, known_third = state
    v, _ = _variance_t(a_c, b_c, w_c, frame, first, p_a, p_b, known_v, NODES, WEIGHTS)
    with_state = _slopes(a_c, b_c, w_c, frame, first, p_a, p_b, v, known_third, NODES, WEIGHTS)
    again = _slopes(a_c, b_c, w_c, frame, first, p_a, p_b, v, math.nan, NODES, WEIGHTS)
    assert with_state == again
    assert all(math.isfinite(g) for g in _gradient_element(ENTROPY, 0.0, 1.0, a, a + w, TABLE, NODES, WEIGHTS))
