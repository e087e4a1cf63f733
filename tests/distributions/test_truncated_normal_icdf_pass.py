"""The icdf's vectorized pass (tnlib.distributions._icdf_vector) against the per-element kernel it stands in for, which
of the two a batch of the icdf or of the cdf takes (by its size), and the pass's erf, erfc and Phi^-1 against mpmath."""
from __future__ import annotations

import math
import os
import subprocess
import sys

import mpmath as mp
import numba
import numpy as np
import pytest
import torch

from test_truncated_normal_kernels import _mixed_regime_cdf_inputs, _ulps
from tnlib import TruncatedNormal
from tnlib.distributions import CPU_ROUTES, _vector_math, cdf_pass_from, cpu_route, icdf_pass_from
from tnlib.distributions._cdf_elements import _cdf_gradients_serial, _cdf_serial
from tnlib.distributions._cdf_dispatch import _CDF_PASS_FROM, _CONSTANTS, _ICDF_PASS_FROM, cdf
from tnlib.distributions._cdf_passes import (
    _cdf_gradients_vector_serial,
    _cdf_vector_serial,
    _icdf_gradients_vector_serial,
    _icdf_vector_parallel,
    _icdf_vector_serial,
)
from tnlib.distributions._icdf_float32 import (
    SINGLE_TOLERANCE,
    TAILS_ERROR,
    TAILS_ERROR_PER_Y2,
    WICHURA_ERROR,
    WICHURA_NEAR_FLOOR,
    exp_taylor,
    narrow_icdf_single,
    ndtri_wichura,
    straddling_icdf_rational,
    straddling_icdf_single,
    straddling_tails,
)
from tnlib.distributions._icdf_vector import (
    icdf_by_halley,
    icdf_element,
    ndtri_lower,
)
from tnlib.distributions._kernels import _BLOCK, _CHUNK
from tnlib.files import REPO_ROOT


def _mixed_regime_icdf_inputs(n: int, seed: int) -> list[np.ndarray]:
    """(p, loc, scale, low, high) over every regime the icdf meets (the cdf's mixed parameters: straddling, a bound
    0-40 scales away either side, one-sided, both bounds infinite, intervals 1e-6 to 1e3 scales wide), with
    probabilities uniform on (0, 1), down to 1e-300 and up to 1 - 1e-16, and a few exactly 0 or 1."""
    _, loc, scale, low, high = _mixed_regime_cdf_inputs(n, seed)
    rng = np.random.default_rng(seed + 1)
    prob = rng.random(n)
    small = rng.random(n) < 0.15
    prob[small] = np.exp(rng.uniform(-690.0, -1.0, small.sum()))
    large = rng.random(n) < 0.15
    prob[large] = 1.0 - np.exp(rng.uniform(-36.0, -1.0, large.sum()))
    prob[rng.random(n) < 0.01] = 0.0
    prob[rng.random(n) < 0.01] = 1.0
    return [prob, loc, scale, low, high]


@numba.njit(error_model="numpy")
def _icdf_held(prob, loc, scale, low, high, held):
    for i in range(held.shape[0]):
        held[i] = icdf_element(prob[i], loc[i], scale[i], low[i], high[i], False)[7]  # (derivatives held)


def test_icdf_vectorized_pass_and_its_gradients_equal_the_per_element_kernel_on_mixed_regimes():
    arrays = _mixed_regime_icdf_inputs(20_000, seed=59)
    prob, loc, scale, low, high = arrays
    n = prob.shape[0]
    held = np.empty(n, dtype=np.bool_)
    _icdf_held(*arrays, held)
    # (the comparison means something only where the vectorized pass computes: every element of the common regimes,
    # the per-element kernel's Newton steps -- narrow intervals away from loc, most of these inputs -- aside)
    assert held.mean() >= 0.55, held.mean()
    vector, per_element = np.empty(n), np.empty(n)
    _icdf_vector_serial(*arrays, vector, *_CONSTANTS)
    _cdf_serial(True, *arrays, per_element, *_CONSTANTS)
    # in ulps of the numbers x is formed from: itself, loc (about which straddling elements invert) and the bounds
    finite = [np.where(np.isinf(t), 0.0, np.abs(t)) for t in (loc, low, high)]
    size = np.maximum.reduce([np.abs(per_element), *finite])
    with np.errstate(invalid="ignore"):  # (equal infinities subtract to NaN in the branch np.where drops)
        error = np.where(vector == per_element, 0.0, np.abs(vector - per_element) / size)
    worst = int(error.argmax())
    assert error[worst] <= 1e-14, ([float(t[worst]) for t in arrays], vector[worst], per_element[worst])
    grad = np.random.default_rng(1).normal(size=n)
    slopes = np.empty((5, n))
    _icdf_gradients_vector_serial(grad, *arrays, slopes, *_CONSTANTS)
    reference = tuple(np.empty(n) for _ in range(5))
    _cdf_gradients_serial(True, grad, *arrays, reference, *_CONSTANTS)
    # the derivatives are functions of x and t = (x - loc) / scale: at values apart by dx they differ by dx / scale
    # (t's own move, in dx/dscale) and by the log-density's slope |t| / scale times dx, relatively; and each is an exp
    # of a sum of logarithms (of the density at x, of p and 1 - p), whose rounding moves it by eps times their size.
    # Each is relative to itself, or (those w.r.t. loc, low and high, dimensionless and summed from terms up to 1;
    # that w.r.t. scale, from terms up to |t|) to grad times that size where it cancels
    t = np.abs(per_element - loc) / scale
    with np.errstate(invalid="ignore"):  # (as above)
        moved = np.where(vector == per_element, 0.0, (1.0 + t) * np.abs(vector - per_element) / scale)
    with np.errstate(divide="ignore", invalid="ignore"):
        tn = TruncatedNormal(*(torch.tensor(v) for v in (loc, scale, low, high)), validate_args=False)
        log_density = tn.log_prob(torch.tensor(per_element)).numpy() + np.log(scale)  # (per scale)
        logs = np.abs(log_density) + np.abs(np.log(prob)) + np.abs(np.log1p(-prob))
    rounding = 4.0 * np.finfo(np.float64).eps * np.nan_to_num(logs, nan=0.0, posinf=0.0)
    floors = (0.0, 1.0, np.maximum(t, 1.0), 1.0, 1.0)
    for name, g, g_ref, floor in zip(("p", "loc", "scale", "low", "high"), slopes, reference, floors):
        with np.errstate(invalid="ignore"):  # (as above)
            error = np.where(g == g_ref, 0.0, np.abs(g - g_ref) / np.maximum(np.abs(g_ref), np.abs(grad) * floor))
        excess = error / (1e-14 + 2.0 * moved + rounding)
        worst = int(excess.argmax())
        assert excess[worst] <= 1.0, (name, [float(t[worst]) for t in arrays], g[worst], g_ref[worst], error[worst])


def test_icdf_vectorized_pass_holds_every_element_of_the_common_regimes():
    # the benchmark's regimes (bench_truncated_normal_methods.py --icdf-passes) at probabilities across (0, 1)
    regimes = ((-1.0, 2.0), (0.0, math.inf), (3.0, 5.0), (-1e-3, 1e-3), (-math.inf, math.inf), (-5.0, -2.0),
               (2.0, math.inf), (-30.0, math.inf))
    prob = np.concatenate([np.linspace(1e-6, 1.0 - 1e-6, 101), [1e-12, 1.0 - 1e-12]])
    rows = [(p, 0.0, 1.0, low, high) for low, high in regimes for p in prob]
    arrays = [np.array(column) for column in zip(*rows)]
    held = np.empty(len(rows), dtype=np.bool_)
    _icdf_held(*arrays, held)
    missed = [rows[i] for i in np.flatnonzero(~held)]
    assert not missed, missed[:5]


@numba.njit(error_model="numpy")
def _halley_loop(prob, loc, scale, low, high, narrow, quick, side, out, held):
    for i in range(out.shape[0]):
        out[i], held[i] = icdf_by_halley(prob[i], loc[i], scale[i], low[i], high[i], narrow[i], quick[i], side[i])


def test_icdf_halley_steps_hold_narrow_intervals_and_far_tails_within_a_few_ulps_of_the_per_element_kernel():
    # narrow intervals (about loc and away from it; by the quick steps and by all four) and one-sided tails from 37
    # scales out, at probabilities across (0, 1) from 1e-12 to 1 - 1e-12, either side of loc (mirrored); closer to
    # 0 or 1 the value may round to a bound, which the per-element kernel takes
    prob = np.concatenate([np.linspace(1e-6, 1.0 - 1e-6, 41), [1e-12, 1e-9, 1.0 - 1e-9, 1.0 - 1e-12]])
    narrow = [(low, low + width) for low in (-0.3, -1e-3, 0.7, 3.0, -40.0, 300.0)
              for width in (1e-9, 1e-4, 1e-3 / 300, 1e-3)]
    far = [(low, math.inf) for low in (37.5, 50.0, 1e3, 1e4)] + [(-math.inf, -low) for low in (40.0, 1e3)]
    # a far tail's steps on either side of the median (side 0), or on the one its canonical probability is on
    kinds = ((True, True, narrow, False), (True, False, narrow, False), (False, False, far, False),
             (False, False, far, True))
    rows = [(p, 0.25, 2.0, 0.25 + 2.0 * low, 0.25 + 2.0 * high, kind, quick,
             (1 if (1.0 - p if high < 0 else p) > 0.5 else -1) if sided else 0)
            for kind, quick, bounds, sided in kinds for low, high in bounds for p in prob]
    arrays = [np.array(column) for column in zip(*rows)]
    got, held = np.empty(len(rows)), np.empty(len(rows), dtype=np.bool_)
    _halley_loop(*arrays, got, held)
    assert held.all(), [rows[i] for i in np.flatnonzero(~held)[:5]]
    expected = np.empty(len(rows))
    _cdf_serial(True, *arrays[:5], expected, *_CONSTANTS)
    size = np.maximum(np.abs(expected), np.abs(np.where(np.isinf(arrays[3]), arrays[4], arrays[3])))
    error = np.abs(got - expected) / size
    worst = int(error.argmax())
    assert error[worst] <= 1e-14, (rows[worst], got[worst], expected[worst])


def test_icdf_quick_halley_steps_are_exact_where_they_hold_and_all_four_hold_intervals_about_a_scale_wide():
    # the quick steps' start is off by (w max(1, |a + w/2|))^2: about a scale wide, most are not held (the pass then
    # takes all four steps for them), and those held must be as exact as the four steps
    prob = np.linspace(0.05, 0.95, 19)
    rows = [(p, 0.0, 1.0, low, low + width, True, quick, 0) for low in (-0.45, 0.1, 0.6) for width in (0.3, 0.9)
            for p in prob for quick in (True, False)]
    arrays = [np.array(column) for column in zip(*rows)]
    got, held = np.empty(len(rows)), np.empty(len(rows), dtype=np.bool_)
    _halley_loop(*arrays, got, held)
    quick = arrays[6].astype(bool)
    assert held[~quick].all(), [rows[i] for i in np.flatnonzero(~held & ~quick)[:5]]
    expected = np.empty(len(rows))
    _cdf_serial(True, *arrays[:5], expected, *_CONSTANTS)
    error = np.abs(got - expected) / np.maximum(np.abs(expected), np.abs(arrays[3]))
    worst = int(np.argmax(np.where(held, error, 0.0)))
    assert error[worst] <= 1e-14, (rows[worst], got[worst], expected[worst])


def test_icdf_of_a_batch_split_among_threads_equals_the_serial_pass():
    arrays = _mixed_regime_icdf_inputs(3 * _BLOCK + 17, seed=3)
    n = arrays[0].shape[0]
    serial, parallel = np.empty(n), np.empty(n)
    _icdf_vector_serial(*arrays, serial, *_CONSTANTS)
    _icdf_vector_parallel(*arrays, parallel, *_CONSTANTS)
    assert np.array_equal(serial, parallel, equal_nan=True)


@numba.njit(error_model="numpy")
def _erf_erfc_ndtri_loop(x, erf, erfc, p, ndtri):
    for i in range(x.shape[0]):
        erf[i] = _vector_math.erf(x[i])
        erfc[i] = _vector_math.erfc(abs(x[i]))
    for i in range(p.shape[0]):
        ndtri[i] = ndtri_lower(p[i])


def test_vector_erf_erfc_and_ndtri_are_within_a_few_ulps_of_mpmath():
    x = np.concatenate([np.linspace(-6.0, 6.0, 97), [1e-300, 1e-9, -1e-5, 0.4999, 0.5, 0.5001, 10.0, 26.0]])
    p = np.concatenate([np.exp(-np.linspace(0.1, 690.0, 60)) * 0.5, [0.02425, 0.0242, 0.3, 0.49999, 1e-307]])
    erf, erfc, ndtri = np.empty_like(x), np.empty_like(x), np.empty_like(p)
    _erf_erfc_ndtri_loop(x, erf, erfc, p, ndtri)
    with mp.workdps(40):
        exact_erf = [mp.erf(mp.mpf(float(v))) for v in x]
        exact_erfc = [mp.erfc(abs(mp.mpf(float(v)))) for v in x]
        # Phi^-1 is as exact as Phi's rounding at the root allows: p's half ulp moves it by eps p / (2 phi(x))
        exact_ndtri = [-mp.sqrt(2) * mp.erfinv(1 - 2 * mp.mpf(float(v))) if v > 1e-10
                       else mp.findroot(lambda z, v=v: mp.log(mp.ncdf(z)) - mp.log(mp.mpf(float(v))),
                                        -mp.sqrt(-2 * mp.log(v)))
                       for v in p]
    assert float(_ulps(erf, exact_erf).max()) <= 3
    assert float(_ulps(erfc, exact_erfc).max()) <= 6
    assert float(_ulps(ndtri, exact_ndtri).max()) <= 4


@numba.njit(error_model="numpy")
def _wichura_loop(p, out):
    for i in range(p.shape[0]):
        out[i] = ndtri_wichura(p[i])


def test_wichura_phi_inverse_is_within_its_stated_bound_of_mpmath():
    # the regions' end (p = 0.075) and either side, down to the float32 pass's floor (r = sqrt(-log p) = 5)
    p = np.concatenate([np.geomspace(WICHURA_NEAR_FLOOR, 0.5, 300)[:-1], np.linspace(0.05, 0.5, 120)[:-1],
                        [0.075, np.nextafter(0.075, 0.0), 0.0751, WICHURA_NEAR_FLOOR, 1.4e-11]])
    got = np.empty_like(p)
    _wichura_loop(p, got)
    with mp.workdps(40):
        exact = [-mp.sqrt(2) * mp.erfinv(1 - 2 * mp.mpf(float(v))) if v > 1e-10
                 else mp.findroot(lambda z, v=v: mp.log(mp.ncdf(z)) - mp.log(mp.mpf(float(v))), mp.mpf(float(g)))
                 for v, g in zip(p, got)]
        error = np.array([float(abs((g - e) / e)) for g, e in zip(got, exact)])
    worst = int(error.argmax())
    assert error[worst] <= WICHURA_ERROR, (p[worst], got[worst], error[worst])
    half = np.empty(1)
    _wichura_loop(np.array([0.5]), half)
    assert half[0] == 0.0


@numba.njit(error_model="numpy")
def _tails_and_exp_loop(a, b, x, tail_a, tail_b, exp_x):
    for i in range(a.shape[0]):
        tail_a[i], tail_b[i] = straddling_tails(a[i], b[i])
        exp_x[i] = exp_taylor(x[i])


def test_float32_pass_tails_and_exp_are_within_their_stated_bounds_of_mpmath():
    # the tails from 1e-12 to 53 scales (erfc's argument clamped at 38, the tail 0 beyond 1e-308), each within a
    # few ulps and the rounding of y^2 (1.1e-16 y^2 relatively, y = |a| / sqrt 2); exp down to -708
    a = -np.concatenate([np.geomspace(1e-12, 53.0, 300), np.linspace(0.0, 10.0, 101), [np.inf]])
    b = np.concatenate([np.linspace(0.0, 12.0, 101), np.geomspace(1e-12, 53.0, 300), [np.inf]])
    x = np.concatenate([-np.geomspace(1e-12, 708.0, 300), np.linspace(-708.0, 0.0, 102)])
    tail_a, tail_b, exp_x = np.empty_like(a), np.empty_like(b), np.empty_like(x)
    _tails_and_exp_loop(a, b, x, tail_a, tail_b, exp_x)
    eps = float(np.finfo(np.float64).eps)
    with mp.workdps(40):
        for bound, got in ((a, tail_a), (-b, tail_b)):
            exact = [mp.ncdf(mp.mpf(float(v))) for v in bound]
            for v, g, e in zip(bound, got, exact):
                if e < 1e-300:
                    assert g <= 1e-300, (v, g)
                    continue
                assert float(abs((g - e) / e)) <= (8.0 + v * v) * eps, (v, g, e)
        error = [float(abs((g - mp.exp(mp.mpf(float(v)))) / mp.exp(mp.mpf(float(v))))) for v, g in zip(x, exp_x)]
    assert max(error) <= 3 * eps, x[int(np.argmax(error))]


@numba.njit(error_model="numpy")
def _single_loops(prob, loc, scale, low, high, narrow, out, held):
    for i in range(out.shape[0]):
        if narrow:
            out[i], held[i] = narrow_icdf_single(prob[i], loc[i], scale[i], low[i], high[i], False)
        else:
            out[i], held[i] = straddling_icdf_single(prob[i], loc[i], scale[i], low[i], high[i])


def _float32_regimes(n: int, seed: int) -> dict[str, list[np.ndarray]]:
    """(p, loc, scale, low, high) in float32: straddling (bounds within 2.5 scales of loc, or one of them
    infinite), narrow intervals (1e-9 to a scale wide, 40 scales either side of loc) and the mixed regimes, with
    probabilities down to 1e-12 of 0 and of 1."""
    rng = np.random.default_rng(seed)
    loc = rng.uniform(-1.0, 1.0, n)
    scale = rng.uniform(0.5, 2.0, n)
    prob = np.where(rng.random(n) < 0.1, np.exp(rng.uniform(-27.6, -1.0, n)), rng.uniform(0.0, 1.0, n))
    prob = np.where(rng.random(n) < 0.5, prob, 1.0 - prob)
    low = loc + scale * rng.uniform(-2.5, 0.0, n)
    high = loc + scale * rng.uniform(0.5, 2.5, n)
    low = np.where(rng.random(n) < 0.1, -np.inf, low)
    high = np.where(rng.random(n) < 0.1, np.inf, high)
    narrow_low = loc + scale * rng.uniform(-40.0, 40.0, n)
    narrow_high = narrow_low + scale * np.exp(rng.uniform(np.log(1e-9), 0.0, n))
    regimes = {"straddling": [prob, loc, scale, low, high], "narrow": [prob, loc, scale, narrow_low, narrow_high],
               "mixed": _mixed_regime_icdf_inputs(n, seed)}
    return {name: [a.astype(np.float32) for a in arrays] for name, arrays in regimes.items()}


def test_float32_loops_hold_most_common_elements_within_their_tolerance_of_the_float64_kernel():
    for name, arrays in _float32_regimes(20_000, seed=5).items():
        if name == "mixed":
            continue
        wide = [a.astype(np.float64) for a in arrays]
        n = wide[0].shape[0]
        got, held, exact = np.empty(n), np.empty(n, dtype=np.bool_), np.empty(n)
        _single_loops(*wide, name == "narrow", got, held)
        _cdf_serial(True, *wide, exact, *_CONSTANTS)
        # (what they are for: the benchmark's narrow intervals are 1e-3 scales wide, its straddling ones these; a
        # probability of 0 or 1, and an interval float32 rounds to a point, are the per-element kernel's)
        width = wide[4] - wide[3]
        common = (wide[0] > 0.0) & (wide[0] < 1.0) & ((width > 0.0) & (width <= 1e-3 * wide[2]) if name == "narrow"
                                                      else True)
        assert held[common].mean() >= 0.9, (name, held[common].mean())
        with np.errstate(invalid="ignore"):  # (infinite values, the per-element kernel's, equal and not held)
            error = np.where(got == exact, 0.0, np.abs(got - exact) / np.where(exact == 0.0, 1.0, np.abs(exact)))
        worst = int(np.argmax(np.where(held, error, 0.0)))
        assert error[worst] <= SINGLE_TOLERANCE, (name, [float(t[worst]) for t in wide], got[worst], exact[worst])


def test_float32_pass_is_the_float64_pass_rounded_within_a_sixteenth_of_an_ulp_of_a_half():
    for name, arrays in _float32_regimes(20_000, seed=6).items():
        n = arrays[0].shape[0]
        single, double = np.empty(n, dtype=np.float32), np.empty(n)
        _icdf_vector_serial(*arrays, single, *_CONSTANTS)
        _icdf_vector_serial(*(a.astype(np.float64) for a in arrays), double, *_CONSTANTS)
        assert np.array_equal(np.isnan(single), np.isnan(double)), name
        finite = np.isfinite(double)
        assert np.array_equal(single[~finite], double[~finite].astype(np.float32), equal_nan=True), name
        ulp = np.spacing(np.abs(double[finite]).astype(np.float32)).astype(np.float64)
        error = np.abs(single[finite].astype(np.float64) - double[finite]) / ulp
        worst = int(error.argmax())
        assert error[worst] <= 0.5 + 1.0 / 16.0, (name, [float(t[finite][worst]) for t in arrays], error[worst])


def _narrow_straddling(n: int, seed: int) -> list[np.ndarray]:
    """(p, loc, scale, low, high) in float32 of intervals 1e-8 to 1 scale wide that straddle loc."""
    rng = np.random.default_rng(seed)
    loc = rng.uniform(-1.0, 1.0, n)
    scale = rng.uniform(0.5, 2.0, n)
    width = scale * np.exp(rng.uniform(np.log(1e-8), 0.0, n))
    low = loc - width * rng.uniform(0.01, 0.99, n)
    arrays = [a.astype(np.float32) for a in (rng.uniform(0.0, 1.0, n), loc, scale, low, low + width)]
    keep = (arrays[3] < arrays[1]) & (arrays[4] > arrays[1])  # (still straddling once rounded)
    return [a[keep] for a in arrays]


def test_narrow_interval_straddling_loc_is_held_by_the_straddling_loop_alone_within_its_tolerance():
    wide = [a.astype(np.float64) for a in _narrow_straddling(20_000, seed=12)]
    n = wide[0].shape[0]
    got, held, exact = np.empty(n), np.empty(n, dtype=np.bool_), np.empty(n)
    _cdf_serial(True, *wide, exact, *_CONSTANTS)
    _single_loops(*wide, True, got, held)
    assert not held.any()  # (narrow_icdf_single leaves them to straddling_icdf_single)
    _single_loops(*wide, False, got, held)
    assert held.mean() >= 0.9, held.mean()
    error = np.where(got == exact, 0.0, np.abs(got - exact) / np.abs(exact))
    worst = int(np.argmax(np.where(held, error, 0.0)))
    assert error[worst] <= SINGLE_TOLERANCE, ([float(t[worst]) for t in wide], got[worst], exact[worst])


@numba.njit(error_model="numpy")
def _straddling_loops(prob, loc, scale, low, high, rational, out, held):
    for i in range(out.shape[0]):
        if rational:
            out[i], held[i] = straddling_icdf_rational(prob[i], loc[i], scale[i], low[i], high[i])
        else:
            out[i], held[i] = straddling_icdf_single(prob[i], loc[i], scale[i], low[i], high[i])


def _exact_icdf(prob: float, loc: float, scale: float, low: float, high: float) -> mp.mpf:
    """The icdf at 50 digits, through whichever side's mass is below 1/2 (so that neither cancels)."""
    with mp.workdps(50):
        a, b = (mp.mpf(low) - loc) / scale, (mp.mpf(high) - loc) / scale
        lower, upper = mp.ncdf(a), mp.ncdf(-b)
        whole = 1 - lower - upper
        below = lower + mp.mpf(prob) * whole
        t = (-mp.sqrt(2) * mp.erfinv(1 - 2 * below) if below <= 0.5
             else mp.sqrt(2) * mp.erfinv(1 - 2 * (upper + (1 - mp.mpf(prob)) * whole)))
        return min(max(mp.mpf(loc) + scale * t, mp.mpf(low)), mp.mpf(high))


def _straddling_sets(n: int, seed: int) -> dict[str, list[np.ndarray]]:
    """float32 (p, loc, scale, low, high) across loc: the straddling regime of _float32_regimes, narrow intervals
    across loc, and bounds 4.9 to 7.3 scales out (where the rational erf does not hold)."""
    rng = np.random.default_rng(seed)
    straddling = [a for a in _float32_regimes(n, seed)["straddling"]]
    loc, scale = rng.uniform(-1.0, 1.0, n), rng.uniform(0.5, 2.0, n)
    far = [rng.uniform(0.0, 1.0, n), loc, scale, loc - scale * rng.uniform(4.9, 7.3, n),
           loc + scale * rng.uniform(0.5, 7.3, n)]
    return {"straddling": straddling, "narrow across loc": _narrow_straddling(n, seed),
            "far bounds": [a.astype(np.float32) for a in far]}


def test_float32_straddling_loops_hold_an_element_only_where_its_float32_value_is_the_exact_one_rounded():
    for name, arrays in _straddling_sets(20_000, seed=31).items():
        wide = [a.astype(np.float64) for a in arrays]
        n = wide[0].shape[0]
        exact = np.empty(n)
        _cdf_serial(True, *wide, exact, *_CONSTANTS)
        rounded = exact.astype(np.float32)
        # (the float64 kernel is within a few ulps of float64: where that could straddle a float32 rounding
        # boundary, mpmath decides)
        size = np.spacing(np.abs(rounded)).astype(np.float64)
        with np.errstate(invalid="ignore"):  # (an infinite value, at p = 0 or 1 with an infinite bound, is sure)
            offset = np.abs(exact - rounded.astype(np.float64))
            unsure = np.abs(offset - 0.5 * size) <= 1e-13 * np.abs(exact)
        for i in np.flatnonzero(unsure):
            rounded[i] = np.float32(float(_exact_icdf(*(float(a[i]) for a in wide))))
        for rational in (True, False):
            got, held = np.empty(n), np.empty(n, dtype=np.bool_)
            _straddling_loops(*wide, rational, got, held)
            wrong = np.flatnonzero(held & (got.astype(np.float32) != rounded))
            assert wrong.shape[0] == 0, (name, rational, [[float(a[i]) for a in wide] for i in wrong[:3]])
            common = (wide[0] > 1e-6) & (wide[0] < 1.0 - 1e-6)
            if name == "far bounds" and rational:  # (a bound in the rational erf's gap: left to the erfc loop)
                y = np.minimum(wide[1] - wide[3], wide[4] - wide[1]) / wide[2] * math.sqrt(0.5)
                assert not held[(y > 3.5) & (y < 5.14)].any(), name
                continue
            assert held[common].mean() >= 0.99, (name, rational, held[common].mean())


def test_the_rational_straddling_loop_leaves_a_few_in_ten_thousand_of_the_peer_benchmarks_moderate_elements():
    # (the peer benchmark's moderate regime: bounds within 2.5 scales of loc; those left are within the bound of a
    # float32 rounding boundary)
    rng = np.random.default_rng(0)
    n = 40 * _CHUNK
    loc, scale = rng.uniform(-1.0, 1.0, n), rng.uniform(0.5, 2.0, n)
    low, high = loc + scale * rng.uniform(-2.5, 0.0, n), loc + scale * rng.uniform(0.5, 2.5, n)
    arrays = [a.astype(np.float32).astype(np.float64) for a in (rng.uniform(0.01, 0.99, n), loc, scale, low, high)]
    got, held = np.empty(n), np.empty(n, dtype=np.bool_)
    _straddling_loops(*arrays, True, got, held)
    assert 0 < (~held).sum() <= 30, (~held).sum()  # (6 when written; 28 of the benchmark's 1e5)


def test_a_chunk_of_bounds_the_rational_erf_leaves_takes_the_erfc_loop_and_is_the_float64_pass_rounded():
    rng = np.random.default_rng(33)
    n = 3 * _CHUNK
    loc, scale = rng.uniform(-1.0, 1.0, n), rng.uniform(0.5, 2.0, n)
    arrays = [a.astype(np.float32) for a in (rng.uniform(0.0, 1.0, n), loc, scale,
                                             loc - scale * rng.uniform(5.0, 7.0, n), loc + scale * 6.0)]
    wide = [a.astype(np.float64) for a in arrays]
    got, held = np.empty(n), np.empty(n, dtype=np.bool_)
    _straddling_loops(*wide, True, got, held)
    assert not held.any()
    _straddling_loops(*wide, False, got, held)
    assert held.mean() >= 0.99
    single, double = np.empty(n, dtype=np.float32), np.empty(n)
    _icdf_vector_serial(*arrays, single, *_CONSTANTS)
    _icdf_vector_serial(*wide, double, *_CONSTANTS)
    assert np.array_equal(single, double.astype(np.float32))


def test_the_straddling_loops_bounds_hold_as_their_check_script_finds(monkeypatch):
    monkeypatch.syspath_prepend(str(REPO_ROOT / "benchmarks"))
    from check_float32_icdf_bounds import tails_constant_part, wichura_central, wichura_near

    with mp.workdps(50):
        for region in (wichura_central(400), wichura_near(400)):
            assert region["bound"] <= WICHURA_ERROR, region
            assert region["approximation"] <= 3e-16, region  # (the fit itself: the rest is the evaluation's)
        assert tails_constant_part()["constant part"] <= TAILS_ERROR
    assert TAILS_ERROR_PER_Y2 >= 9.0 * 2.0 ** -53  # (y's roundings move y^2 by 8 of them, y^2's own one more)


def test_float32_icdf_of_an_element_is_the_same_among_straddling_narrow_or_mixed_neighbours():
    # (a chunk of straddling elements runs their loop in place, one of narrow intervals theirs, a mixed one gathers
    # by kind: the elements each of those loops leaves take the other's, so none of them depends on its chunk)
    others = _float32_regimes(2048, seed=13)
    probe = [np.concatenate(parts) for parts in zip(_narrow_straddling(2048, seed=14), others["narrow"],
                                                    others["straddling"])]
    count = probe[0].shape[0]
    regimes = _float32_regimes(4 * count, seed=15)
    values = []
    for neighbours in ("straddling", "narrow", "mixed"):
        # each probe element alone among three of its chunk's four quarters
        batch = [np.empty(4 * count, dtype=np.float32) for _ in range(5)]
        for k in range(5):
            spread = regimes[neighbours][k].copy()
            spread[3::4] = probe[k]
            batch[k][:] = spread
        out = np.empty(4 * count, dtype=np.float32)
        _icdf_vector_serial(*batch, out, *_CONSTANTS)
        values.append(out[3::4])
    assert np.array_equal(values[0], values[1], equal_nan=True)
    assert np.array_equal(values[0], values[2], equal_nan=True)


def test_float32_icdf_of_a_batch_split_among_threads_equals_the_serial_pass():
    # (a chunk runs a kind's loop in place or gathers its elements by what the chunks before it held: an element's
    # value must not depend on it, nor so on where the threads' blocks start)
    arrays = _float32_regimes(3 * _BLOCK + 17, seed=8)
    mixed = [np.concatenate([arrays[name][k] for name in ("straddling", "mixed", "narrow", "straddling")])
             for k in range(5)]
    for batch in (*arrays.values(), mixed):
        n = batch[0].shape[0]
        serial, parallel = np.empty(n, dtype=np.float32), np.empty(n, dtype=np.float32)
        _icdf_vector_serial(*batch, serial, *_CONSTANTS)
        _icdf_vector_parallel(*batch, parallel, *_CONSTANTS)
        assert np.array_equal(serial, parallel, equal_nan=True)


def _public_icdf_and_gradients(arrays: list[np.ndarray], grad: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """icdf and grad times its derivatives through _cdf_dispatch.cdf, the dispatch TruncatedNormal.icdf calls."""
    leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    x = cdf(*leaves, inverse=True)
    x.backward(torch.tensor(grad))
    return x.detach().numpy(), [leaf.grad.numpy() for leaf in leaves]


def _routes(arrays: list[np.ndarray], grad: np.ndarray) -> dict[str, tuple[np.ndarray, list[np.ndarray]]]:
    """The vectorized pass's and the per-element kernel's icdf and grad times its derivatives."""
    n = grad.shape[0]
    vector, per_element = np.empty(n), np.empty(n)
    _icdf_vector_serial(*arrays, vector, *_CONSTANTS)
    _cdf_serial(True, *arrays, per_element, *_CONSTANTS)
    slopes = np.empty((5, n))
    _icdf_gradients_vector_serial(grad, *arrays, slopes, *_CONSTANTS)
    reference = tuple(np.empty(n) for _ in range(5))
    _cdf_gradients_serial(True, grad, *arrays, reference, *_CONSTANTS)
    return {"pass": (vector, list(slopes)), "per-element kernel": (per_element, list(reference))}


def test_icdf_takes_the_per_element_kernel_below_the_pass_threshold_and_the_pass_from_it():
    for n, route in ((_ICDF_PASS_FROM - 1, "per-element kernel"), (_ICDF_PASS_FROM, "pass")):
        arrays = _mixed_regime_icdf_inputs(n, seed=n)
        grad = np.random.default_rng(n).normal(size=n)
        routes = _routes(arrays, grad)
        # (the routes differ in the last bits of some elements, so equality tells which one ran)
        assert not np.array_equal(routes["pass"][0], routes["per-element kernel"][0], equal_nan=True)
        x, grads = _public_icdf_and_gradients(arrays, grad)
        x_ref, grads_ref = routes[route]
        assert np.array_equal(x, x_ref, equal_nan=True), route
        for name, g, g_ref in zip(("p", "loc", "scale", "low", "high"), grads, grads_ref):
            assert np.array_equal(g, g_ref, equal_nan=True), (route, name)


def _routed_icdf_and_gradients(route: str, arrays: list[np.ndarray], grad: np.ndarray):
    """icdf and grad times its derivatives through the public class within cpu_route(route), the backward outside
    it (as a training step's backward runs after its forward's with-block)."""
    leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    with cpu_route(route):
        x = TruncatedNormal(*leaves[1:], validate_args=False).icdf(leaves[0])
    x.backward(torch.tensor(grad))
    return x.detach().numpy(), [leaf.grad.numpy() for leaf in leaves]


def test_cpu_route_chooses_the_per_element_kernel_or_the_pass_at_any_batch_size():
    n = 2_000  # below the pass threshold, where the "kernels" route takes the per-element kernel
    assert n < icdf_pass_from() == _ICDF_PASS_FROM
    arrays = _mixed_regime_icdf_inputs(n, seed=7)
    grad = np.random.default_rng(n).normal(size=n)
    routes = _routes(arrays, grad)
    assert not np.array_equal(routes["pass"][0], routes["per-element kernel"][0], equal_nan=True)
    for route, reference in (("vectorized", "pass"), ("per-element", "per-element kernel"),
                             ("kernels", "per-element kernel")):
        x, grads = _routed_icdf_and_gradients(route, arrays, grad)
        x_ref, grads_ref = routes[reference]
        assert np.array_equal(x, x_ref, equal_nan=True), route
        for name, g, g_ref in zip(("p", "loc", "scale", "low", "high"), grads, grads_ref):
            assert np.array_equal(g, g_ref, equal_nan=True), (route, name)


def test_cpu_route_per_element_takes_the_per_element_cdf_kernel_forward_and_backward():
    value, loc, scale, low, high = _mixed_regime_cdf_inputs(3_000, seed=11)
    arrays = [value, loc, scale, low, high]
    per_element = np.empty(value.shape[0])
    _cdf_serial(False, *arrays, per_element, *_CONSTANTS)
    grad = np.random.default_rng(3).normal(size=value.shape[0])
    reference = tuple(np.empty(value.shape[0]) for _ in range(5))
    _cdf_gradients_serial(False, grad, *arrays, reference, *_CONSTANTS)
    leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
    with cpu_route("per-element"):
        x = TruncatedNormal(*leaves[1:], validate_args=False).cdf(leaves[0])
    x.backward(torch.tensor(grad))
    assert np.array_equal(x.detach().numpy(), per_element, equal_nan=True)
    with cpu_route("vectorized"):
        by_pass = TruncatedNormal(*(torch.tensor(a) for a in arrays[1:]), validate_args=False).cdf(torch.tensor(value))
    assert not np.array_equal(by_pass.numpy(), per_element, equal_nan=True)  # (so equality says which ran)
    for name, leaf, g_ref in zip(("value", "loc", "scale", "low", "high"), leaves, reference):
        assert np.array_equal(leaf.grad.numpy(), g_ref, equal_nan=True), name


def test_cdf_takes_the_per_element_kernel_below_the_pass_threshold_and_the_pass_from_it():
    # (the two routes agree within 1e-14 on these inputs:
    # test_cdf_vectorized_pass_and_its_gradients_equal_the_per_element_kernel_on_mixed_regimes)
    assert cdf_pass_from() == _CDF_PASS_FROM
    for n, route in ((_CDF_PASS_FROM - 1, "per-element kernel"), (_CDF_PASS_FROM, "pass")):
        arrays = _mixed_regime_cdf_inputs(n, seed=n)
        grad = np.random.default_rng(n).normal(size=n)
        routes = {"pass": (np.empty(n), np.empty((5, n))), "per-element kernel": (np.empty(n), np.empty((5, n)))}
        _cdf_vector_serial(*arrays, routes["pass"][0], *_CONSTANTS)
        _cdf_gradients_vector_serial(grad, *arrays, routes["pass"][1], *_CONSTANTS)
        _cdf_serial(False, *arrays, routes["per-element kernel"][0], *_CONSTANTS)
        _cdf_gradients_serial(False, grad, *arrays, tuple(routes["per-element kernel"][1]), *_CONSTANTS)
        # (the routes differ in the last bits of some elements, so equality tells which one ran)
        assert not np.array_equal(routes["pass"][0], routes["per-element kernel"][0], equal_nan=True)
        leaves = [torch.tensor(a, requires_grad=True) for a in arrays]
        x = cdf(*leaves)
        x.backward(torch.tensor(grad))
        x_ref, grads_ref = routes[route]
        assert np.array_equal(x.detach().numpy(), x_ref, equal_nan=True), route
        for name, leaf, g_ref in zip(("value", "loc", "scale", "low", "high"), leaves, grads_ref):
            assert np.array_equal(leaf.grad.numpy(), g_ref, equal_nan=True), (route, name)


def test_cpu_route_refuses_an_unknown_route_and_restores_the_route_after_its_block():
    with pytest.raises(ValueError, match="unknown route"):
        with cpu_route("gpu"):
            pass
    from tnlib.distributions import truncated_normal as module

    with cpu_route("torch"):
        with cpu_route("per-element"):
            assert module._CPU_ROUTE == "per-element"
        assert module._CPU_ROUTE == "torch"
    assert module._CPU_ROUTE == "kernels" and set(CPU_ROUTES) == {"kernels", "torch", "per-element", "vectorized"}


def test_a_small_batchs_icdf_and_gradients_do_not_compile_the_pass():
    # a fresh process: the pass's dispatchers hold a signature once it is compiled or loaded from numba's cache
    code = ("import torch; from tnlib.distributions import _cdf_dispatch as k, _cdf_passes as passes, "
            "_icdf_vector as v\n"
            "torch.set_default_dtype(torch.float64)\n"
            "def icdf(n):\n"
            "    leaves = [torch.rand(n).requires_grad_(), torch.zeros(n, requires_grad=True), torch.ones(n), "
            "torch.full((n,), -1.0), torch.full((n,), 2.0)]\n"
            "    k.cdf(*leaves, inverse=True).sum().backward()\n"
            "    kernels = (passes._icdf_vector_serial, passes._icdf_vector_parallel, "
            "passes._icdf_gradients_vector_serial, v.icdf_element)\n"
            "    print(sum(len(f.signatures) for f in kernels))\n"
            "icdf(1000); icdf(k._ICDF_PASS_FROM)")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    small, large = out.stdout.split()
    assert small == "0"
    assert int(large) > 0


def test_a_small_batchs_cdf_and_gradients_do_not_compile_the_pass():
    # a fresh process: the pass's dispatchers hold a signature once it is compiled or loaded from numba's cache
    code = ("import torch; from tnlib.distributions import _cdf_dispatch as k, _cdf_passes as passes\n"
            "torch.set_default_dtype(torch.float64)\n"
            "def cdf(n):\n"
            "    leaves = [3.0 * torch.rand(n) - 1.0, torch.zeros(n, requires_grad=True), torch.ones(n), "
            "torch.full((n,), -1.0), torch.full((n,), 2.0)]\n"
            "    k.cdf(*leaves).sum().backward()\n"
            "    kernels = (passes._cdf_vector_serial, passes._cdf_vector_parallel, "
            "passes._cdf_gradients_vector_serial)\n"
            "    print(sum(len(f.signatures) for f in kernels))\n"
            "cdf(1000); cdf(k._CDF_PASS_FROM)")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    small, large = out.stdout.split()
    assert small == "0"
    assert int(large) > 0
