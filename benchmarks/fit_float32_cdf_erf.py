"""The rational erf's of the float32 cdf's straddling loops (tnlib.distributions._cdf_float32: erf_rational, and
erf_near for chunks whose bounds are all near loc): their fits, their coefficients and the bounds on their errors,
printed.

    python benchmarks/fit_float32_cdf_erf.py [--points 20000] [--iterations 400] [--end 3.5] [--degree 7]

erf(y) = y P(z) / Q(z) for 0 <= y <= ``--end``, z = y^2, P and Q of degree ``--degree`` (Q's constant 1): the
defaults are erf_rational's fit (FIT_END, DEGREE), ``--end 2 --degree 5`` erf_near's (NEAR_FIT_END,
NEAR_DEGREE). erf(y)/y is an entire function of y^2, so the ratio is fitted in y^2: the relative error of erf
is that of P/Q against erf(y)/y. The fit is Lawson's iteration (reweighted linearised least squares, the weights
multiplied by each point's error) on Chebyshev nodes in x = 2 z / end^2 - 1, in numpy with scipy's erf; it
ends near the minimax rational. Its coefficients are then taken to powers of z and rounded to float64.

The bound: the coefficients rounded to float64 and evaluated exactly (mpmath, 40 digits) against mpmath's erf on
``--points`` evenly spaced points in z; the relative error e(z) is analytic there (Q has no zero on
[0, end^2]: its smallest value is printed), and between points spaced h it is at most the points' largest plus
h^2/8 max|e''|, e'' taken from the points' second differences (a term of 2e-17 at 20,000 points, so an estimate
of e'' off by orders of magnitude moves nothing). The evaluation's rounding in float64 (Horner with fused
multiply-adds, degree d: at most 2 d 2^-53 times the sum of |coefficient| z^k over |P|, and likewise Q -- both 1
here, every coefficient being positive -- plus the product and quotient's 3 roundings) is added. ERF_ONE_FROM is where
erfc(y) drops below that bound: from there erf_rational takes erf as 1 (erf_near holds nothing past its end). The
straddling loops use twice the printed bound, which also covers the rounding of z itself.
"""
from __future__ import annotations

import argparse
import math

import mpmath
import numpy as np
from numpy.polynomial import chebyshev, polynomial
from scipy import special

FIT_END = 3.5
DEGREE = 7
# erf_near's: bounds within 2 sqrt(2) scales of loc
NEAR_FIT_END = 2.0
NEAR_DEGREE = 5


def lawson_fit(points: int, iterations: int, end: float = FIT_END,
               degree: int = DEGREE) -> tuple[np.ndarray, np.ndarray]:
    """Chebyshev coefficients of P and Q (Q's constant term fixed by Q = 1 + ...) near-minimax in relative error on
    [0, end]."""
    x = np.cos(np.pi * (np.arange(points) + 0.5) / points)[::-1]
    y = np.sqrt((x + 1.0) * 0.5) * end
    target = np.where(y > 0.0, special.erf(y) / np.where(y > 0.0, y, 1.0), 2.0 / math.sqrt(math.pi))
    basis_p = chebyshev.chebvander(x, degree)
    basis_q = chebyshev.chebvander(x, degree)[:, 1:]
    weights = np.full(points, 1.0 / points)
    q_before = np.ones(points)
    best = (np.inf, None, None)
    for _ in range(iterations):
        scale = 1.0 / (target * q_before)
        system = np.hstack([basis_p, -target[:, None] * basis_q]) * scale[:, None]
        root = np.sqrt(weights)
        solution, *_ = np.linalg.lstsq(system * root[:, None], target * scale * root, rcond=None)
        p, q = solution[:degree + 1], np.concatenate([[1.0], solution[degree + 1:]])
        q_values = chebyshev.chebval(x, q)
        error = (chebyshev.chebval(x, p) / q_values - target) / target
        worst = float(np.abs(error).max())
        if worst < best[0]:
            best = (worst, p, q)
        weights = weights * np.abs(error)
        weights /= weights.sum()
        q_before = q_values
    return best[1], best[2]


def monomials(p_cheb: np.ndarray, q_cheb: np.ndarray, end: float = FIT_END) -> tuple[tuple, tuple]:
    """P and Q in powers of z = y^2, normalised so that Q(0) = 1, as float64 (Chebyshev's basis on
    [0, end^2] in z is the fit's in x on [-1, 1])."""
    p, q = (chebyshev.Chebyshev(c, domain=[0.0, end ** 2]).convert(kind=polynomial.Polynomial).coef
            for c in (p_cheb, q_cheb))
    return tuple(float(c) for c in p / q[0]), tuple(float(c) for c in q / q[0])


def relative_error_bound(p: tuple, q: tuple, points: int, fit_end: float = FIT_END) -> dict:
    """The largest relative error of y P(z)/Q(z) against erf(y) on [0, fit_end] (module docstring), its parts."""
    mpmath.mp.dps = 40
    end = mpmath.mpf(fit_end) ** 2
    zs = [end * k / (points - 1) for k in range(points)]
    errors, conditions, q_smallest = [], [], mpmath.inf
    for z in zs:
        pv = mpmath.polyval([mpmath.mpf(c) for c in reversed(p)], z)
        qv = mpmath.polyval([mpmath.mpf(c) for c in reversed(q)], z)
        y = mpmath.sqrt(z)
        ratio = mpmath.mpf(2) / mpmath.sqrt(mpmath.pi) if y == 0 else mpmath.erf(y) / y
        errors.append(pv / qv / ratio - 1)
        q_smallest = min(q_smallest, qv)
        size_p = sum(abs(c) * z ** k for k, c in enumerate(p))
        size_q = sum(abs(c) * z ** k for k, c in enumerate(q))
        conditions.append(float(size_p / abs(pv) + size_q / abs(qv)))
    e = np.array([float(v) for v in errors])
    h = fit_end ** 2 / (points - 1)
    second = max(abs(float(errors[k - 1] - 2 * errors[k] + errors[k + 1])) for k in range(1, points - 1)) / h ** 2
    between = h * h / 8.0 * second
    rounding = 2 * (len(p) - 1) * 2.0 ** -53 * max(conditions) + 3 * 2.0 ** -53
    return {"largest on the points": float(np.abs(e).max()), "between the points": between,
            "rounding": rounding, "bound": float(np.abs(e).max()) + between + rounding,
            "smallest Q": float(q_smallest)}


def erf_one_from(bound: float, end: float = FIT_END) -> float:
    """The least y (to 0.01) from which erfc(y) <= bound: there erf(y) is 1 within the bound."""
    y = end
    while special.erfc(y) > bound:
        y = round(y + 0.01, 2)
    return y


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=20000)
    parser.add_argument("--iterations", type=int, default=400)
    parser.add_argument("--end", type=float, default=FIT_END)
    parser.add_argument("--degree", type=int, default=DEGREE)
    args = parser.parse_args()
    p, q = monomials(*lawson_fit(8000, args.iterations, args.end, args.degree), args.end)
    parts = relative_error_bound(p, q, args.points, args.end)
    print(f"end = {args.end}, degree {args.degree} over {args.degree}")
    print(f"P = {p!r}")
    print(f"Q = {q!r}")
    for name, value in parts.items():
        print(f"{name}: {value:.3e}")
    one_from = erf_one_from(parts["bound"], args.end)
    print(f"erf is 1 within the bound from {one_from}  (erfc there: {special.erfc(one_from):.2e})")


if __name__ == "__main__":
    main()
