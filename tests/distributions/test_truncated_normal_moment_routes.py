"""The moment kernels' shortcuts (tnlib.distributions._moment_kernels) against the routes they stand in for: a
narrow interval's variance and third cumulant from the state's own one-panel sums, bit for bit; the tail's variance
from the one-sided fraction's (_mixture_variance), within 4e-15 of the eight panels' and 1e-15 of mpmath; the
vectorized pass over elements whose bounds straddle loc, and the narrow intervals' mean by the stretch's series,
within a few ulps of the per-element branches."""
from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

from tnlib.distributions._cdf_vector import canonical_frame
from tnlib.distributions._moment_kernels import (
    _CONSTANTS,
    _WIDE_PANELS,
    ENTROPY,
    MEAN,
    VARIANCE,
    _frame_moments_element,
    _gradient_element,
    _gradients_block,
    _is_narrow,
    _moment_state,
    _narrow_mean_pass,
    _slopes,
    _statistic_block,
    _straddles_loc,
    _value_element,
    _variance_t,
)
from tnlib.distributions.mpmath_reference import mpf_bound, reference_entropy, reference_mean, reference_variance

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


def _per_element(which: int, columns: list[np.ndarray]) -> np.ndarray:
    return np.array([_value_element(which, *row, TABLE, NODES, WEIGHTS) for row in zip(*columns)])


def _block(which: int, columns: list[np.ndarray]) -> np.ndarray:
    out = np.empty(columns[0].shape[0])
    _statistic_block(which, 0, out.shape[0], *columns, out, TABLE, NODES, WEIGHTS)
    return out


def _narrow(columns: list[np.ndarray]) -> np.ndarray:
    """Whether each element (loc, scale, low, high) is a narrow interval."""
    return np.array([canonical_frame(*row)[7] for row in zip(*columns)])


def test_narrow_mean_pass_holds_every_narrow_interval_within_a_few_ulps_of_the_per_element_branches():
    # a from -1e4 to 1e5 scales, widths from 1e-12 scales to the widest narrow one, either side of loc (mirrored)
    rows = [(loc, scale, loc + scale * side * a, loc + scale * side * (a + w))
            for a in (-1e4, -30.0, -1.0, -0.3, -1e-3, 0.0, 0.2, 1.0, 7.0, 300.0, 1e5)
            for w in (1e-12, 1e-6, 1e-3, 0.1, 1.0) for loc, scale in ((0.0, 1.0), (-3.0, 1e-3), (40.0, 50.0))
            for side in (1.0, -1.0) if w * max(1.0, abs(a + 0.5 * w)) <= 1.0]
    rows = [(loc, scale, min(low, high), max(low, high)) for loc, scale, low, high in rows]
    # (those the rounding of the bounds leaves narrow and of a positive width)
    kept = _narrow([np.array(column) for column in zip(*rows)])
    rows = [row for row, narrow in zip(rows, kept) if narrow and row[3] > row[2]]
    assert len(rows) >= 0.8 * len(kept)
    columns = [np.array(column) for column in zip(*rows)]
    got = np.full(len(rows), np.nan)
    _narrow_mean_pass(*columns, got)
    expected = _per_element(MEAN, columns)
    # relative to the bound the mean is formed from (the ulps of low + scale D)
    size = np.maximum(np.abs(expected), np.maximum(np.abs(columns[2]), np.abs(columns[3])))
    error = np.abs(got - expected) / size
    worst = int(np.argmax(error))  # (a NaN, an element not held, would be the worst)
    assert error[worst] <= 1e-15, (rows[worst], got[worst], expected[worst])
    assert np.array_equal(_block(MEAN, columns), got)  # a block of them takes the pass


def _straddling_columns() -> list[np.ndarray]:
    """Bounds a < 0 < b, from 1e-3 to 40 scales on either side of loc, at scales 1e-3 to 1e3 and locs -1e3 to 1e3."""
    rng = np.random.default_rng(0)
    n = 4000
    a = -np.exp(rng.uniform(np.log(1e-3), np.log(40.0), n))
    b = np.exp(rng.uniform(np.log(1e-3), np.log(40.0), n))
    scale = np.exp(rng.uniform(np.log(1e-3), np.log(1e3), n))
    loc = rng.uniform(-1e3, 1e3, n)
    return [loc, scale, loc + a * scale, loc + b * scale]


@pytest.mark.parametrize("which", [MEAN, VARIANCE, ENTROPY], ids=["mean", "variance", "entropy"])
def test_straddling_pass_is_within_a_few_ulps_of_the_per_element_branches(which):
    columns = _straddling_columns()
    straddling = np.array([_straddles_loc(*row) for row in zip(*columns)])
    assert 0.5 * straddling.size <= straddling.sum() < straddling.size  # (and narrow ones, left to the branches)
    got, expected = _block(which, columns), _per_element(which, columns)
    # the mean relative to max(|mean|, scale), the variance to itself, the entropy to max(1, |H|)
    size = {MEAN: np.maximum(np.abs(expected), columns[1]), VARIANCE: expected,
            ENTROPY: np.maximum(np.abs(expected), 1.0)}[which]
    # the variance's closed form 1 + a p_a - b p_b - E[t]^2 cancels about 12x on intervals about a scale wide, by
    # either route: each is 1e-15 to 4e-15 from mpmath there
    tolerance = 6e-15 if which == VARIANCE else 1.2e-15
    assert float((np.abs(got - expected) / size).max()) <= tolerance
    # the others take the branches themselves, but for the narrow intervals' mean (its own pass)
    branches = ~straddling & ~(_narrow(columns) & (which == MEAN))
    assert np.array_equal(got[branches], expected[branches])


@pytest.mark.parametrize("loc, scale, low, high", [(0.0, 1.0, -1.0, 2.0), (0.3, 2.0, -0.7, 1.5),
                                                   (5.0, 1e-3, 4.9, 5.0 + 1e-3), (-2.0, 10.0, -300.0, 10.0)])
def test_straddling_pass_is_within_1_5e_15_of_mpmath(loc, scale, low, high):
    columns = [np.full(3, v) for v in (loc, scale, low, high)]
    assert _straddles_loc(loc, scale, low, high)
    with mp.workdps(80):
        args = (mp.mpf(loc), mp.mpf(scale), mpf_bound(low), mpf_bound(high))
        mean, variance, entropy = (float(f(*args)) for f in (reference_mean, reference_variance, reference_entropy))
    assert abs(_block(MEAN, columns)[0] - mean) <= 1.5e-15 * max(abs(mean), scale)
    assert abs(_block(VARIANCE, columns)[0] - variance) <= 1.5e-15 * variance
    assert abs(_block(ENTROPY, columns)[0] - entropy) <= 1.5e-15 * max(abs(entropy), 1.0)


@pytest.mark.parametrize("which", [MEAN, VARIANCE, ENTROPY], ids=["mean", "variance", "entropy"])
def test_a_block_of_every_regime_takes_each_elements_own_route(which):
    # straddling, one-sided both ways (the mean's own loop), the tail, narrow, both bounds infinite, mirrored
    rows = [(0.0, 1.0, -1.0, 2.0), (0.0, 1.0, 0.0, math.inf), (-30.0, 1.0, 0.0, math.inf), (2.0, 1.0, 0.0, math.inf),
            (0.0, 1.0, 3.0, 5.0), (0.0, 1.0, -1e-3, 1e-3), (0.0, 1.0, -math.inf, math.inf), (0.0, 1.0, -5.0, -3.0),
            (1.0, 1.0, -math.inf, 0.5)]
    columns = [np.array(column) for column in zip(*rows)]
    got, expected = _block(which, columns), _per_element(which, columns)
    assert np.allclose(got, expected, rtol=6e-15, atol=0.0)
    # the straddling element and, for the mean, those without an upper bound and the narrow one (their own loops)
    # take another route; the others take the branches, with a straddling element in the block and without one
    narrow = _narrow(columns)
    branches = np.array([i > 0 and not (which == MEAN and (row[3] == math.inf or narrow[i]))
                         for i, row in enumerate(rows)])
    assert np.array_equal(got[branches], expected[branches])
    assert np.array_equal(_block(which, [c[1:] for c in columns])[branches[1:]], expected[branches])
    slopes, expected_slopes = _gradients(which, columns, True), _gradients(which, columns, False)
    assert np.allclose(slopes, expected_slopes, rtol=1e-13, atol=1e-300)
    assert np.array_equal(slopes[:, branches], expected_slopes[:, branches])
    assert np.array_equal(_gradients(which, [c[1:] for c in columns], True)[:, branches[1:]],
                          expected_slopes[:, branches])


def _gradients(which: int, columns: list[np.ndarray], block: bool) -> np.ndarray:
    """(4, n) derivatives w.r.t. (loc, scale, low, high): by _gradients_block, or element by element."""
    n = columns[0].shape[0]
    if block:
        out = [np.empty(n) for _ in range(4)]
        _gradients_block(which, 0, n, np.ones(n), *columns, *out, TABLE, NODES, WEIGHTS)
        return np.array(out)
    return np.array([_gradient_element(which, *row, TABLE, NODES, WEIGHTS) for row in zip(*columns)]).T


@pytest.mark.parametrize("which", [MEAN, VARIANCE, ENTROPY], ids=["mean", "variance", "entropy"])
def test_straddling_pass_gradients_are_within_1e_13_of_the_per_element_branches(which):
    columns = _straddling_columns()
    straddling = np.array([_straddles_loc(*row) for row in zip(*columns)])
    got, expected = _gradients(which, columns, True), _gradients(which, columns, False)
    # each derivative relative to its natural size (the mean's of order 1, the variance's of order scale, the
    # entropy's of order 1/scale) where it is smaller
    natural = {MEAN: np.ones_like(columns[1]), VARIANCE: columns[1], ENTROPY: 1.0 / columns[1]}[which]
    error = np.abs(got - expected) / np.maximum(np.abs(expected), natural)
    assert float(error.max()) <= 1e-13
    assert np.array_equal(got[:, ~straddling], expected[:, ~straddling])
    assert not np.array_equal(got[:, straddling], expected[:, straddling])  # the pass is the route taken
