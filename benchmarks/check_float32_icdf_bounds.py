"""The error bounds the float32 icdf's straddling loops hold an element by (tnlib.distributions._icdf_float32's
straddling_icdf_rational and straddling_icdf_single), each part checked against mpmath and printed.

    python benchmarks/check_float32_icdf_bounds.py [--points 20000]

1. **Wichura's Phi^-1** (tnlib.distributions._icdf_float32.ndtri_wichura_parts, Algorithm AS 241's PPND16) on
   [WICHURA_NEAR_FLOOR, 1/2], relatively: in each region the approximation itself (its float64 coefficients and
   constants, 0.180625 and 1.6, taken exactly) against mpmath's Phi^-1 at 50 digits on ``--points`` evenly spaced
   points of the region's variable (s = 0.180625 - q^2, q = p - 1/2, centrally; r = sqrt(-log p) - 1.6 beyond),
   the error e being analytic there (the denominators have no zero: their least values are printed), with h^2/8
   max|e''| between points spaced h (e'' from the points' second differences, as benchmarks/fit_float32_cdf_erf.py
   bounds its erf); plus the float64 evaluation's rounding -- Horner's with fused multiply-adds at degree 7, at
   most 2 * 7 * 2^-53 times sum |c_k| v^k / |P(v)| for each polynomial, the product by q and the quotient, two
   more -- and what the rounding of the variable moves the value by: centrally q's (exact from p = 1/4 up,
   Sterbenz; else 2^-53 relatively, which moves the result as much) and s's (2^-53 of 0.180625 and of q^2), times
   |d log(P/Q)/ds|; beyond, r's (log under 1 ulp, relatively 2^-52 of log p; the square root and the difference,
   an ulp each), times |d log(P/Q)/dr|. The least upper bound over both regions is WICHURA_ERROR's floor.
2. **The straddling tails** (tnlib.distributions._icdf_float32.straddling_tails: exp(-y^2) by exp_taylor,
   erfcx(y) by its expansion cut at degree 22), relatively: the series' remainders (exp's Taylor remainder
   r^13/13! e^|r| at |r| <= ln 2 / 2, the Chebyshev terms dropped and the float64 rounding of the expansion's
   monomial coefficients, sum |c_k|) and the evaluation's rounding (exp: its range reduction, 3 ulps of r, and
   Horner at degree 12 on a sum of positive terms; erfcx: Estrin's at degree 22, at most 2 * 22 * 2^-53 times
   sum |p_k| |t|^k / |P(t)|, the least P on [-1, 1) printed; t and 1/(1 + 2y) from one division, 6 roundings),
   and y^2's rounding, 2^-53 y^2 -- the part that grows with y, TAILS_ERROR_PER_Y2. The constant part is
   TAILS_ERROR; both are then checked on ``--points`` y in [0, 26] against mpmath (the largest ratio of the error
   to the bound is printed: it must be below 1).
"""
from __future__ import annotations

import argparse
import math

import mpmath
import numba
import numpy as np
from numpy.polynomial import chebyshev

from tnlib.distributions._icdf_float32 import (
    _TAILS_ERFCX,
    TAILS_ERROR,
    TAILS_ERROR_PER_Y2,
    WICHURA_CENTRAL_DENOMINATOR,
    WICHURA_CENTRAL_END,
    WICHURA_CENTRAL_NUMERATOR,
    WICHURA_ERROR,
    WICHURA_NEAR_DENOMINATOR,
    WICHURA_NEAR_FLOOR,
    WICHURA_NEAR_NUMERATOR,
    straddling_tails,
)
from tnlib.distributions._vector_math import ERFCX_POLYNOMIAL

U = 2.0 ** -53
DEGREE = 7


def _poly(coefficients, v):
    """The polynomial and sum |c_k| |v|^k and its derivative, at mpmath's precision."""
    value = size = slope = mpmath.mpf(0)
    for k, c in enumerate(coefficients):
        c = mpmath.mpf(c)
        value += c * v ** k
        size += abs(c) * abs(v) ** k
        if k:
            slope += k * c * v ** (k - 1)
    return value, size, slope


def _ndtri(p):
    return -mpmath.sqrt(2) * mpmath.erfinv(1 - 2 * p)


def _between(errors, h):
    """h^2/8 max|e''|, e'' from the points' second differences."""
    second = max(abs(errors[k - 1] - 2 * errors[k] + errors[k + 1]) for k in range(1, len(errors) - 1)) / h ** 2
    return float(h * h / 8 * second)


def wichura_central(points: int) -> dict:
    """Wichura's central region, p in [1/2 - 0.425, 1/2]: s from 0 to 0.180625 (the float64 constant)."""
    top = mpmath.mpf(0.180625)
    h = top / (points - 1)
    errors, rounding, smallest = [], [], mpmath.inf
    for i in range(points):
        s = h * i
        q = -mpmath.sqrt(top - s)
        if q == 0:
            q = -mpmath.mpf(10) ** -30  # (the limit of the relative error at p = 1/2 is the same)
        a, size_a, slope_a = _poly(WICHURA_CENTRAL_NUMERATOR, s)
        b, size_b, slope_b = _poly(WICHURA_CENTRAL_DENOMINATOR, s)
        smallest = min(smallest, b)
        exact = _ndtri(mpmath.mpf(0.5) + q)
        errors.append(q * a / b / exact - 1)
        # q's rounding (relatively; 0 from p = 1/4), s's (of 0.180625 and q^2, and the difference), the
        # evaluation's, the product by q and the quotient
        q_rounding = U if q < -0.25 else 0
        s_rounding = 2 * U * top * abs(slope_a / a - slope_b / b)
        evaluation = 2 * DEGREE * U * (size_a / abs(a) + size_b / abs(b)) + 2 * U
        rounding.append(float(q_rounding + s_rounding + evaluation))
    largest = float(max(abs(e) for e in errors))
    between = _between(errors, h)
    return {"approximation": largest, "between the points": between, "rounding": max(rounding),
            "bound": largest + between + max(rounding), "smallest denominator": float(smallest)}


def wichura_near(points: int) -> dict:
    """Wichura's second region, p from WICHURA_NEAR_FLOOR to 1/2 - 0.425: r = sqrt(-log p) - 1.6 (the float64
    constant) from 5 - 1.6 down to that at p = 0.075."""
    shift = mpmath.mpf(1.6)
    low = mpmath.sqrt(-mpmath.log(mpmath.mpf(0.5) - mpmath.mpf(WICHURA_CENTRAL_END))) - shift
    high = mpmath.sqrt(-mpmath.log(mpmath.mpf(WICHURA_NEAR_FLOOR))) - shift
    h = (high - low) / (points - 1)
    errors, rounding, smallest = [], [], mpmath.inf
    for i in range(points):
        r = low + h * i
        c, size_c, slope_c = _poly(WICHURA_NEAR_NUMERATOR, r)
        d, size_d, slope_d = _poly(WICHURA_NEAR_DENOMINATOR, r)
        smallest = min(smallest, d)
        root = r + shift
        p = mpmath.exp(-root * root)
        exact = _ndtri(p)
        errors.append(-c / d / exact - 1)
        # r's rounding: log p within 2^-52 of itself, so sqrt(-log p) within 2^-53 of itself; the square root's
        # and the difference's own roundings
        r_rounding = (U * root + U * root + U * abs(r)) * abs(slope_c / c - slope_d / d)
        evaluation = 2 * DEGREE * U * (size_c / abs(c) + size_d / abs(d)) + U
        rounding.append(float(r_rounding + evaluation))
    largest = float(max(abs(e) for e in errors))
    between = _between(errors, h)
    return {"approximation": largest, "between the points": between, "rounding": max(rounding),
            "bound": largest + between + max(rounding), "smallest denominator": float(smallest)}


def tails_constant_part() -> dict:
    """The parts of straddling_tails' relative error that do not grow with y (module docstring)."""
    half_ln2 = mpmath.log(2) / 2
    exp_remainder = float(half_ln2 ** 13 / mpmath.factorial(13) * mpmath.exp(half_ln2))
    # exp's coefficients 1/n! rounded (each within 2^-53 of itself; their sum at |r| <= ln2/2 over e^r, e^|r|/e^r)
    exp_coefficients = float(U * mpmath.exp(2 * half_ln2))
    exp_evaluation = float(2 * 12 * U * mpmath.exp(2 * half_ln2)) + 3 * U  # (Horner; the reduction's r)
    full = chebyshev.poly2cheb(np.asarray(ERFCX_POLYNOMIAL))
    dropped = float(np.abs(full[23:]).sum())
    coefficient_rounding = float(sum(abs(c) for c in _TAILS_ERFCX)) * U
    smallest_p, largest_condition = mpmath.inf, 0.0
    for t in np.linspace(-1.0, 1.0, 4001):
        value, size, _ = _poly(_TAILS_ERFCX, mpmath.mpf(float(t)))
        smallest_p = min(smallest_p, value)
        largest_condition = max(largest_condition, float(size / abs(value)))
    erfcx_evaluation = 2 * 22 * U * largest_condition
    # the ERFCX_POLYNOMIAL's own distance from erfcx (its expansion's terms past 26, below 3e-18: _vector_math),
    # over P >= smallest
    expansion = 3e-18 / float(smallest_p)
    shared_division = 6 * U * 2.0  # (t's slope dP/dt t / P is below 2 on [-1, 1): a relative error in t moves P so)
    parts = {"exp's remainder": exp_remainder, "exp's coefficients": exp_coefficients,
             "exp's evaluation": exp_evaluation, "erfcx's terms dropped": dropped / float(smallest_p),
             "erfcx's coefficients": coefficient_rounding / float(smallest_p),
             "erfcx's expansion": expansion, "erfcx's evaluation": erfcx_evaluation,
             "erfcx's division and products": shared_division, "the products by 1/2 and the quotient": 3 * U}
    parts["constant part"] = sum(parts.values())
    parts["smallest P"] = float(smallest_p)
    return parts


@numba.njit(error_model="numpy")
def _tails_loop(a, out):
    for i in range(a.shape[0]):
        out[i] = straddling_tails(a[i], 0.0)[0]


def tails_checked(points: int) -> float:
    """The largest ratio of straddling_tails' relative error to TAILS_ERROR + TAILS_ERROR_PER_Y2 y^2 on y in
    [0, 26] (a = -y sqrt 2; beyond, the tail nears float64's subnormals, where a relative bound cannot hold)."""
    y = np.linspace(0.0, 26.0, points)
    a = -y * math.sqrt(2.0)
    got = np.empty_like(a)
    _tails_loop(a, got)
    worst = 0.0
    for v, g in zip(a, got):
        exact = mpmath.ncdf(mpmath.mpf(float(v)))
        yy = (float(v) * math.sqrt(0.5)) ** 2
        worst = max(worst, float(abs(g / exact - 1)) / (TAILS_ERROR + TAILS_ERROR_PER_Y2 * yy))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=20000)
    args = parser.parse_args()
    mpmath.mp.dps = 50
    worst = 0.0
    for name, parts in (("central", wichura_central(args.points)), ("beyond", wichura_near(args.points))):
        print(f"Wichura's Phi^-1, {name} region: " + ", ".join(f"{k} {v:.3e}" for k, v in parts.items()))
        worst = max(worst, parts["bound"])
    print(f"Wichura's bound {worst:.3e} against WICHURA_ERROR = {WICHURA_ERROR:.3e}: "
          f"{'holds' if worst <= WICHURA_ERROR else 'DOES NOT HOLD'}")
    tails = tails_constant_part()
    print("straddling_tails, relatively: " + ", ".join(f"{k} {v:.3e}" for k, v in tails.items()))
    print(f"constant part {tails['constant part']:.3e} against TAILS_ERROR = {TAILS_ERROR:.3e}: "
          f"{'holds' if tails['constant part'] <= TAILS_ERROR else 'DOES NOT HOLD'}; y^2's rounding {U:.3e} y^2 "
          f"against TAILS_ERROR_PER_Y2 = {TAILS_ERROR_PER_Y2:.3e}")
    print(f"straddling_tails against mpmath, the largest error over the bound: {tails_checked(args.points):.3f}")


if __name__ == "__main__":
    main()
