"""The cdf of a float32 batch (tnlib.distributions._cdf_float32): its special functions and its two loops against
mpmath, and its results against the float64 route's rounded to float32."""
from __future__ import annotations

import math
from pathlib import Path

import mpmath as mp
import numba
import numpy as np
import pytest

from tnlib.distributions._cdf_float32 import (
    COARSE_NARROW_END,
    ERF_NEAR_BOUND,
    ERF_NEAR_END,
    ERF_NEAR_P,
    ERF_NEAR_Q,
    ERF_ONE_FROM,
    ERF_RATIONAL_BOUND,
    ERF_RATIONAL_END,
    ERF_RATIONAL_P,
    ERF_RATIONAL_Q,
    MIXED_CHUNK,
    NARROW_CHUNK,
    NEAR_STRADDLING_CHUNK,
    SHORT_NARROW_CHUNK,
    SHORT_NARROW_END,
    STRADDLING_CHUNK,
    _erf_near_parts,
    coarse_chunk_kind,
    erf_rational,
    exp_coarse,
    exp_near_zero,
    float32_rounding_certain,
    straddling_cdf_near,
    straddling_cdf_rational,
)
from tnlib.distributions._cdf_elements import _cdf_serial
from tnlib.distributions._cdf_dispatch import _CONSTANTS
from tnlib.distributions._cdf_passes import _cdf_float32_parallel, _cdf_float32_serial, _cdf_vector_serial
from tnlib.distributions._kernels import _BLOCK, _CHUNK


@numba.njit(error_model="numpy")
def _coarse_functions(x, y, exps, erfs, held):
    for i in range(x.shape[0]):
        exps[i] = exp_coarse(x[i])
    for i in range(y.shape[0]):
        numerator, denominator, held[i] = erf_rational(y[i])
        erfs[i] = numerator / denominator


def _relative(got: np.ndarray, exact: list) -> np.ndarray:
    return np.array([float(abs(mp.mpf(g) - e) / abs(e)) if e != 0 else abs(g) for g, e in zip(got, exact)])


def test_coarse_exp_and_the_rational_erf_are_within_their_bounds_of_mpmath():
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.uniform(-708.0, 709.0, 1500), rng.uniform(-1.0, 1.0, 500), [0.0, -707.9, 708.9]])
    y = np.concatenate([rng.uniform(0.0, 0.6, 800), rng.uniform(0.4, ERF_RATIONAL_END, 1200),
                        rng.uniform(ERF_ONE_FROM, 30.0, 200), [0.0, 1e-300, 1e-8, ERF_RATIONAL_END, ERF_ONE_FROM]])
    exps, erfs, held = np.empty_like(x), np.empty_like(y), np.empty(y.shape[0], dtype=np.bool_)
    _coarse_functions(x, y, exps, erfs, held)
    assert held.all()
    with mp.workdps(40):
        assert float(_relative(exps, [mp.exp(mp.mpf(v)) for v in x]).max()) <= 3e-13
        # (the fit's own bound is half the loop's: benchmarks/fit_float32_cdf_erf.py)
        assert float(_relative(erfs, [mp.erf(mp.mpf(v)) for v in y]).max()) <= ERF_RATIONAL_BOUND / 2
    beyond = np.array([-708.5, -1e5, -np.inf])
    between = np.array([np.nextafter(ERF_RATIONAL_END, 4.0), 0.5 * (ERF_RATIONAL_END + ERF_ONE_FROM), np.nan])
    exps, erfs, held = np.empty(3), np.empty(3), np.empty(3, dtype=np.bool_)
    _coarse_functions(beyond, between, exps, erfs, held)
    assert np.all(exps == 0.0) and not held.any()
    _coarse_functions(beyond, np.array([27.5, 1e300, np.inf]), exps, erfs, held)
    assert np.all(erfs == 1.0) and held.all()


# How close the script's fit on this machine comes to the committed coefficients (see the first test below).
FIT_RTOL = 1e-4


def test_the_rational_erf_is_the_fit_its_script_makes(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from fit_float32_cdf_erf import FIT_END, lawson_fit, monomials

    p, q = monomials(*lawson_fit(8000, 400))
    assert FIT_END == ERF_RATIONAL_END
    # The reweighted least squares carry LAPACK's rounding, which differs by CPU kind (OpenBLAS's AVX2 kernels against
    # the AVX-512 ones that made the committed fit: 1e-5 relative); another fit differs in the leading digits.
    np.testing.assert_allclose(p, ERF_RATIONAL_P, rtol=FIT_RTOL)
    np.testing.assert_allclose(q, ERF_RATIONAL_Q, rtol=FIT_RTOL)


def test_the_near_erf_is_the_fit_its_script_makes(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from fit_float32_cdf_erf import NEAR_DEGREE, NEAR_FIT_END, lawson_fit, monomials

    p, q = monomials(*lawson_fit(8000, 400, NEAR_FIT_END, NEAR_DEGREE), NEAR_FIT_END)
    assert NEAR_FIT_END == ERF_NEAR_END
    np.testing.assert_allclose(p, ERF_NEAR_P, rtol=FIT_RTOL)
    np.testing.assert_allclose(q, ERF_NEAR_Q, rtol=FIT_RTOL)


@numba.njit(error_model="numpy")
def _near_functions(y, x, erfs, held, exps):
    for i in range(y.shape[0]):
        numerator, denominator, held[i] = _erf_near_parts(y[i], 1.0)
        erfs[i] = numerator / denominator
    for i in range(x.shape[0]):
        exps[i] = exp_near_zero(x[i])


def test_the_near_erf_and_exp_near_zero_are_within_their_bounds_of_mpmath():
    rng = np.random.default_rng(1)
    y = np.concatenate([rng.uniform(0.0, 0.6, 800), rng.uniform(0.4, ERF_NEAR_END, 1200),
                        [0.0, 1e-300, 1e-8, ERF_NEAR_END]])
    # (the exponent of narrow_cdf_short is at most 0.0103 in size: SHORT_NARROW_END's comment)
    x = np.concatenate([rng.uniform(-0.0103, 0.0103, 1000), [0.0, -0.0103, 0.0103]])
    erfs, held, exps = np.empty_like(y), np.empty(y.shape[0], dtype=np.bool_), np.empty_like(x)
    _near_functions(y, x, erfs, held, exps)
    assert held.all()
    with mp.workdps(40):
        # (the fit's own bound is half the loop's: benchmarks/fit_float32_cdf_erf.py --end 2 --degree 5)
        assert float(_relative(erfs, [mp.erf(mp.mpf(v)) for v in y]).max()) <= ERF_NEAR_BOUND / 2
        assert float(_relative(exps, [mp.exp(mp.mpf(v)) for v in x]).max()) <= 2e-15
    beyond = np.array([np.nextafter(ERF_NEAR_END, 3.0), 5.0, np.inf, np.nan])
    erfs, held = np.empty(4), np.empty(4, dtype=np.bool_)
    _near_functions(beyond, x[:0], erfs, held, exps)
    assert not held.any()


@numba.njit(error_model="numpy")
def _certain(r, bound, out):
    for i in range(r.shape[0]):
        out[i] = float32_rounding_certain(r[i], bound[i])


def test_float32_rounding_is_certain_only_where_the_bound_stays_inside_the_rounding_interval():
    f = np.array([0.75, 1.0, 0.125, 3e-5, 0.999], dtype=np.float32)
    up = np.spacing(f).astype(np.float64)
    down = (f - np.nextafter(f, np.float32(0))).astype(np.float64)  # (half of up below a power of two)
    f64 = f.astype(np.float64)
    r = np.concatenate([f64, f64 + 0.49 * up, f64 - 0.49 * down, f64 + 0.4 * up, f64 - 0.4 * down, [0.0]])
    bound = np.concatenate([0.49 * down, np.full(2 * f.shape[0], 1e-3 * down.min()), 0.11 * up, 0.11 * down,
                            [0.0]])
    certain = np.empty(r.shape[0], dtype=np.bool_)
    _certain(r, bound, certain)
    n = f.shape[0]
    assert certain[:3 * n].all()
    assert not certain[3 * n:].any()  # (past the half-way point within the bound; 0, never)


def _straddling_inputs(n: int, rng) -> list[np.ndarray]:
    """float32 (value, loc, scale, low, high) with low < loc < high: bounds 1e-4 to 40 scales from loc or
    infinite, values anywhere inside (a tenth within 1e-3 of a width from the lower bound)."""
    loc = rng.uniform(-3.0, 3.0, n)
    scale = np.exp(rng.uniform(-2.0, 2.0, n))
    low = loc - scale * np.exp(rng.uniform(np.log(1e-4), np.log(40.0), n))
    high = loc + scale * np.exp(rng.uniform(np.log(1e-4), np.log(40.0), n))
    low = np.where(rng.random(n) < 0.1, -np.inf, low)
    high = np.where(rng.random(n) < 0.1, np.inf, high)
    near, far = np.maximum(low, loc - 8.0 * scale), np.minimum(high, loc + 8.0 * scale)
    value = near + rng.random(n) * (far - near)
    close = rng.random(n) < 0.1
    value[close] = near[close] + (far - near)[close] * 10.0 ** rng.uniform(-3.0, -1.0, close.sum())
    return _float32_inside([value, loc, scale, low, high])


def _near_straddling_inputs(n: int, rng) -> list[np.ndarray]:
    """float32 (value, loc, scale, low, high) with low < loc < high, both bounds 1e-4 to 2.8 scales from loc (the
    near straddling loop's), values anywhere inside (a tenth within 1e-3 of a width from the lower bound)."""
    loc = rng.uniform(-3.0, 3.0, n)
    scale = np.exp(rng.uniform(-2.0, 2.0, n))
    low = loc - scale * np.exp(rng.uniform(np.log(1e-4), np.log(2.8), n))
    high = loc + scale * np.exp(rng.uniform(np.log(1e-4), np.log(2.8), n))
    value = low + rng.random(n) * (high - low)
    close = rng.random(n) < 0.1
    value[close] = low[close] + (high - low)[close] * 10.0 ** rng.uniform(-3.0, -1.0, close.sum())
    return _float32_inside([value, loc, scale, low, high])


def _short_narrow_inputs(n: int, rng) -> list[np.ndarray]:
    """float32 narrow intervals the short narrow loop takes (max(1, |c|) m below SHORT_NARROW_END): 1e-7 to 10^-2.5
    scales wide, -6 to 6 scales from loc (half mirrored, a tenth straddling loc), values anywhere inside."""
    loc = rng.uniform(-3.0, 3.0, n)
    scale = np.exp(rng.uniform(-2.0, 2.0, n))
    low = loc + scale * np.concatenate([rng.uniform(-6.0, 6.0, n - n // 10), rng.uniform(-1e-3, 0.0, n // 10)])
    high = low + scale * 10.0 ** rng.uniform(-7.0, -2.5, n)
    value = low + rng.random(n) * (high - low)
    return _float32_inside([value, loc, scale, low, high])


def _inputs(regime: str, n: int, rng) -> list[np.ndarray]:
    return {"straddling": _straddling_inputs, "near straddling": _near_straddling_inputs,
            "narrow": _narrow_inputs, "short narrow": _short_narrow_inputs}[regime](n, rng)


_CHUNK_KINDS = {"straddling": STRADDLING_CHUNK, "near straddling": NEAR_STRADDLING_CHUNK, "narrow": NARROW_CHUNK,
                "short narrow": SHORT_NARROW_CHUNK}


def _narrow_inputs(n: int, rng) -> list[np.ndarray]:
    """float32 narrow intervals, 1e-6 to 1e-3 scales wide, -50 to 50 scales from loc (both sides, so half are
    mirrored, and a few straddle loc), values anywhere inside."""
    loc = rng.uniform(-3.0, 3.0, n)
    scale = np.exp(rng.uniform(-2.0, 2.0, n))
    low = loc + scale * np.concatenate([rng.uniform(-50.0, 50.0, n - n // 10), rng.uniform(-1e-2, 0.0, n // 10)])
    high = low + scale * 10.0 ** rng.uniform(-6.0, -3.0, n)
    value = low + rng.random(n) * (high - low)
    return _float32_inside([value, loc, scale, low, high])


def _float32_inside(arrays: list[np.ndarray]) -> list[np.ndarray]:
    value, loc, scale, low, high = (a.astype(np.float32) for a in arrays)
    proper = low < high
    return [np.clip(value, low, high)[proper], loc[proper], scale[proper], low[proper], high[proper]]


def _float32_cdf(arrays: list[np.ndarray]) -> np.ndarray:
    out = np.empty(arrays[0].shape[0], dtype=np.float32)
    _cdf_float32_serial(*arrays, out, *_CONSTANTS)
    return out


def _float64_cdf(arrays: list[np.ndarray]) -> np.ndarray:
    out = np.empty(arrays[0].shape[0])
    _cdf_vector_serial(*(a.astype(np.float64) for a in arrays), out, *_CONSTANTS)
    return out


def _exact_cdf(value, loc, scale, low, high):
    with mp.workdps(40):
        t, a, b = ((mp.mpf(float(v)) - mp.mpf(float(loc))) / mp.mpf(float(scale)) for v in (value, low, high))
        below = lambda u: mp.ncdf(u) if mp.isfinite(u) else (0 if u < 0 else 1)  # noqa: E731
        if a > 0:  # the upper tail, where 1 - Phi would cancel
            return (mp.ncdf(-a) - mp.ncdf(-t)) / (mp.ncdf(-a) - (mp.ncdf(-b) if mp.isfinite(b) else 0))
        return (below(t) - below(a)) / (below(b) - below(a))


@pytest.mark.parametrize("regime", list(_CHUNK_KINDS))
def test_float32_cdf_of_one_kind_chunks_is_the_exact_value_correctly_rounded_to_within_2_percent_of_an_ulp(regime):
    rng = np.random.default_rng(7)
    arrays = _inputs(regime, 2 * _CHUNK + 300, rng)
    # (the loop under test is the one taken)
    assert coarse_chunk_kind(0, _CHUNK, tuple(arrays)) == _CHUNK_KINDS[regime]
    got = _float32_cdf(arrays)
    exact = [_exact_cdf(*row) for row in zip(*arrays)]
    size = np.spacing(np.array([float(e) for e in exact], dtype=np.float32)).astype(np.float64)
    ulps = np.array([float(abs(mp.mpf(float(g)) - e)) for g, e in zip(got, exact)]) / size
    worst = int(ulps.argmax())
    # correctly rounded is within half an ulp (the straddling loop's results are: the next test); the narrow
    # loop's series and exp, within 1e-12, add at most 0.005 of one
    assert ulps[worst] <= 0.52, ([float(a[worst]) for a in arrays], float(got[worst]), float(exact[worst]))


@pytest.mark.parametrize("regime", ["straddling", "near straddling"])
def test_float32_cdf_of_straddling_chunks_is_the_exact_value_correctly_rounded(regime):
    # the rational erf's loops where their rounding is certain, the per-element kernel (float64) elsewhere
    arrays = _inputs(regime, 2 * _CHUNK + 300, np.random.default_rng(13))
    assert coarse_chunk_kind(0, _CHUNK, tuple(arrays)) == _CHUNK_KINDS[regime]
    got = _float32_cdf(arrays)
    exact = np.array([float(_exact_cdf(*row)) for row in zip(*arrays)]).astype(np.float32)
    wrong = np.nonzero(got != exact)[0]
    assert wrong.shape[0] == 0, [([float(a[i]) for a in arrays], float(got[i]), float(exact[i])) for i in wrong[:3]]


@numba.njit(error_model="numpy")
def _held_by_the_rational_loop(near, arrays, held):
    for j in range(held.shape[0]):
        arguments = (np.float64(arrays[0][j]), np.float64(arrays[1][j]), np.float64(arrays[2][j]),
                     np.float64(arrays[3][j]), np.float64(arrays[4][j]))
        _, held[j] = straddling_cdf_near(*arguments) if near else straddling_cdf_rational(*arguments)


@pytest.mark.parametrize("near, most", [(False, 20), (True, 30)])
def test_the_rational_loops_hold_all_but_a_few_in_ten_thousand_moderate_elements(near, most):
    # bounds within 2.5 scales of loc, values between them (the peer benchmark's moderate regime): the elements
    # left to the per-element kernel are those within the bound of a rounding boundary or of the lower bound
    rng = np.random.default_rng(17)
    n = 40 * _CHUNK
    loc, scale, u = rng.uniform(-1.0, 1.0, n), rng.uniform(0.5, 2.0, n), rng.uniform(0.05, 0.95, n)
    low, high = loc + scale * rng.uniform(-2.5, 0.0, n), loc + scale * rng.uniform(0.5, 2.5, n)
    arrays = _float32_inside([low + u * (high - low), loc, scale, low, high])
    held = np.empty(arrays[0].shape[0], dtype=np.bool_)
    _held_by_the_rational_loop(near, tuple(arrays), held)
    assert (~held).sum() <= most, (~held).sum()  # (7 and 11 when written)


@pytest.mark.parametrize("regime", list(_CHUNK_KINDS))
def test_float32_cdf_is_the_float64_route_rounded_but_for_an_ulp_on_a_few_elements(regime):
    rng = np.random.default_rng(11)
    arrays = _inputs(regime, 40 * _CHUNK, rng)
    got, rounded = _float32_cdf(arrays), _float64_cdf(arrays).astype(np.float32)
    moved = got != rounded
    assert np.all(np.abs(got[moved] - rounded[moved]) <= np.spacing(np.abs(rounded[moved])))
    assert moved.sum() <= 4, moved.sum()  # (1e-4 of the batch; none moved when written)


def test_float32_cdf_of_a_mixed_chunk_is_the_float64_route_rounded():
    rng = np.random.default_rng(3)
    parts = [_straddling_inputs(_CHUNK // 2, rng), _narrow_inputs(_CHUNK // 2, rng)]
    arrays = [np.concatenate(columns) for columns in zip(*parts)]
    # a one-sided far tail in the chunk: neither loop's kind
    arrays[1][0], arrays[3][0], arrays[4][0] = -30.0, 0.0, np.inf
    arrays[0][0] = 0.01
    assert coarse_chunk_kind(0, arrays[0].shape[0], tuple(arrays)) == MIXED_CHUNK
    assert np.array_equal(_float32_cdf(arrays), _float64_cdf(arrays).astype(np.float32))


def test_a_chunk_after_a_short_loops_chunk_is_taken_as_if_looked_at_first():
    # the chunk after a near straddling or short narrow one runs that loop before any look: kept where the loop
    # leaves little of it (a few one-sided far elements: those by the per-element kernel), else looked at and
    # taken by its own kind (a mixed chunk, a narrow one of wider intervals): as the chunk taken alone
    rng = np.random.default_rng(21)
    mixed = [np.concatenate(columns) for columns in zip(_straddling_inputs(_CHUNK // 2, rng),
                                                        _narrow_inputs(_CHUNK // 2, rng))]
    mixed[1][0], mixed[3][0], mixed[4][0], mixed[0][0] = -30.0, 0.0, np.inf, 0.01
    few_far = [a[:_CHUNK].copy() for a in _near_straddling_inputs(_CHUNK + 200, rng)]
    for j in range(0, 5 * 100, 100):
        few_far[1][j], few_far[2][j], few_far[3][j], few_far[4][j], few_far[0][j] = -30.0, 1.0, 0.0, np.inf, 0.01
    wider = [a[:_CHUNK] for a in _narrow_inputs(_CHUNK + 200, rng)]
    near = [a[:_CHUNK] for a in _near_straddling_inputs(_CHUNK + 200, rng)]
    short = [a[:_CHUNK] for a in _short_narrow_inputs(_CHUNK + 200, rng)]
    for before, after in ((near, mixed), (near, few_far), (short, wider), (short, mixed)):
        arrays = [np.concatenate(columns) for columns in zip(before, after)]
        assert coarse_chunk_kind(0, _CHUNK, tuple(arrays)) in (NEAR_STRADDLING_CHUNK, SHORT_NARROW_CHUNK)
        assert np.array_equal(_float32_cdf(arrays)[_CHUNK:], _float32_cdf(after), equal_nan=True)
    assert coarse_chunk_kind(0, _CHUNK, tuple(few_far)) == MIXED_CHUNK  # (alone, the float64 route's pass)


def test_float32_cdf_leaves_what_its_loops_do_not_hold_to_the_per_element_kernel():
    # in a straddling chunk: values outside the support, at the bounds, 36 scales and more from loc, a NaN, and a
    # value a hair above its lower bound (a difference that cancels); in a narrow one: a NaN and the bounds
    straddling = _straddling_inputs(_CHUNK, np.random.default_rng(5))
    narrow = _narrow_inputs(_CHUNK, np.random.default_rng(6))
    for arrays, rows in ((straddling, [(-5.0, 0.0, 1.0, -2.0, 3.0), (4.0, 0.0, 1.0, -2.0, 3.0),
                                       (-2.0, 0.0, 1.0, -2.0, 3.0), (3.0, 0.0, 1.0, -2.0, 3.0),
                                       (-37.0, 0.0, 1.0, -np.inf, 3.0), (38.0, 0.0, 1.0, -2.0, np.inf),
                                       (np.nan, 0.0, 1.0, -2.0, 3.0), (np.nextafter(np.float32(-2.0), 0), 0.0,
                                                                       1.0, -2.0, 3.0)]),
                         (narrow, [(np.nan, 0.0, 1.0, 5.0, 5.001), (5.0, 0.0, 1.0, 5.0, 5.001),
                                   (5.001, 0.0, 1.0, 5.0, 5.001), (-5.0, 0.0, 1.0, -5.001, -5.0)])):
        for j, row in enumerate(rows):
            for column, v in zip(arrays, row):
                column[j] = v
        got = _float32_cdf(arrays)
        reference = np.empty(arrays[0].shape[0])
        _cdf_serial(False, *(a.astype(np.float64) for a in arrays), reference, *_CONSTANTS)
        head = len(rows)
        assert np.array_equal(got[:head], reference[:head].astype(np.float32), equal_nan=True), (got[:head],
                                                                                                 reference[:head])


def test_the_short_loops_leave_what_they_do_not_hold_to_the_wider_loops_or_the_per_element_kernel():
    # in a near straddling chunk: values outside the support, at the bounds, a NaN and values a hair above the lower
    # bound (differences that cancel: the near fit's bound, then the wider one's, cannot make their rounding
    # certain); in a short narrow one: a NaN and the bounds
    near = [a[:_CHUNK] for a in _near_straddling_inputs(_CHUNK + 200, np.random.default_rng(15))]
    short = [a[:_CHUNK] for a in _short_narrow_inputs(_CHUNK + 200, np.random.default_rng(16))]
    hair = float(np.nextafter(np.float32(-2.0), np.float32(0.0)))
    for arrays, kind, rows in (
            (near, NEAR_STRADDLING_CHUNK, [(-5.0, 0.0, 1.0, -2.0, 2.5), (2.6, 0.0, 1.0, -2.0, 2.5),
                                           (-2.0, 0.0, 1.0, -2.0, 2.5), (2.5, 0.0, 1.0, -2.0, 2.5),
                                           (np.nan, 0.0, 1.0, -2.0, 2.5), (hair, 0.0, 1.0, -2.0, 2.5),
                                           (float(np.nextafter(np.float32(hair), np.float32(0.0))), 0.0, 1.0,
                                            -2.0, 2.5)]),
            (short, SHORT_NARROW_CHUNK, [(np.nan, 0.0, 1.0, 5.0, 5.001), (5.0, 0.0, 1.0, 5.0, 5.001),
                                         (5.001, 0.0, 1.0, 5.0, 5.001), (-5.0, 0.0, 1.0, -5.001, -5.0)])):
        for j, row in enumerate(rows):
            for column, v in zip(arrays, row):
                column[j] = v
        assert coarse_chunk_kind(0, _CHUNK, tuple(arrays)) == kind
        got = _float32_cdf(arrays)
        reference = np.empty(arrays[0].shape[0])
        _cdf_serial(False, *(a.astype(np.float64) for a in arrays), reference, *_CONSTANTS)
        head = len(rows)
        assert np.array_equal(got[:head], reference[:head].astype(np.float32), equal_nan=True), (got[:head],
                                                                                                 reference[:head])


def test_coarse_chunk_kind_says_narrow_up_to_its_bound_and_not_past_it():
    # intervals of canonical middle c and half-width m (loc 0, scale 1; mirrored: below loc), max(1, |c|) m just
    # under COARSE_NARROW_END and just over it
    for c in (0.5, 3.0, 40.0):
        for factor, kind in ((0.999, NARROW_CHUNK), (1.001, MIXED_CHUNK)):
            m = factor * COARSE_NARROW_END / max(1.0, c)
            for mirrored in (False, True):
                low, high = (-(c + m), -(c - m)) if mirrored else (c - m, c + m)
                arrays = [np.full(4, 0.5 * (low + high)), np.zeros(4), np.ones(4), np.full(4, low), np.full(4, high)]
                assert coarse_chunk_kind(0, 4, tuple(arrays)) == kind, (c, factor, mirrored)
    arrays = [np.zeros(4), np.zeros(4), np.ones(4), np.full(4, -1e-3), np.full(4, 1e-3)]
    # (narrow too: the straddling loop takes it)
    assert coarse_chunk_kind(0, 4, tuple(arrays)) == NEAR_STRADDLING_CHUNK


def test_coarse_chunk_kind_says_short_narrow_and_near_straddling_up_to_their_bounds_and_not_past_them():
    for c in (0.5, 3.0, 40.0):
        for factor, kind in ((0.999, SHORT_NARROW_CHUNK), (1.001, NARROW_CHUNK)):
            m = factor * SHORT_NARROW_END / max(1.0, c)
            for mirrored in (False, True):
                low, high = (-(c + m), -(c - m)) if mirrored else (c - m, c + m)
                arrays = [np.full(4, 0.5 * (low + high)), np.zeros(4), np.ones(4), np.full(4, low), np.full(4, high)]
                assert coarse_chunk_kind(0, 4, tuple(arrays)) == kind, (c, factor, mirrored)
    reach = ERF_NEAR_END * math.sqrt(2.0)  # (scales: the erf's argument is the offset over sqrt(2) scales)
    for factor, kind in ((0.999, NEAR_STRADDLING_CHUNK), (1.001, STRADDLING_CHUNK)):
        for low, high in ((-factor * reach, 1.0), (-1.0, factor * reach)):
            arrays = [np.zeros(4), np.zeros(4), np.full(4, 2.0), np.full(4, 2.0 * low), np.full(4, 2.0 * high)]
            assert coarse_chunk_kind(0, 4, tuple(arrays)) == kind, (factor, low, high)


def test_float32_cdf_of_a_batch_split_among_threads_equals_the_serial_pass():
    rng = np.random.default_rng(9)
    parts = [_straddling_inputs(_BLOCK + 100, rng), _narrow_inputs(_BLOCK, rng), _near_straddling_inputs(_BLOCK, rng),
             _short_narrow_inputs(_BLOCK, rng)]
    arrays = [np.concatenate(columns) for columns in zip(*parts)]
    serial, parallel = _float32_cdf(arrays), np.empty(arrays[0].shape[0], dtype=np.float32)
    _cdf_float32_parallel(*arrays, parallel, *_CONSTANTS)
    assert np.array_equal(serial, parallel, equal_nan=True)
    assert not math.isnan(float(serial.max()))
