"""The float32 icdf's loops: each element's value to float32's need, not to float64's rounding, held only where a
proven bound on its error cannot move its float32 rounding (straddling) or is within SINGLE_TOLERANCE of the value
(narrow); an element they do not hold (a value whose offset from loc or from a bound cancels, an interval too wide
for one step) the float64 pass's loops (tnlib.distributions._icdf_vector) take again. They skip the refinements
the float64 loops take for that rounding: Phi^-1's Halley step, a narrow interval's further steps and their
convergence test.

**Straddling, the first loop** (straddling_icdf_rational, by erf's rational fit). The mass below the value is
Phi(a) + p (Phi(b) - Phi(a)) = 1/2 - ((1 - p) E_a - p E_b)/2 with E_a = erf(-a/sqrt 2) and E_b = erf(b/sqrt 2),
each by the float32 cdf's rational erf (tnlib.distributions._cdf_float32.erf_rational: y P(y^2)/Q(y^2), within
ERF_RATIONAL_BOUND relatively on [0, 3.5], 1 from 5.14; its fit and bound by benchmarks/fit_float32_cdf_erf.py),
the two quotients from one division; Phi^-1 of the mass (of 1 less it past 1/2) by Wichura's approximation
unrefined (ndtri_wichura_parts), its quotient and the mass's relative error from one more division. No exp: the
tails of straddling_tails (an exp and erfcx's 23 terms each) cost twice these.

The bound, each part checked by benchmarks/check_float32_icdf_bounds.py (which prints the constants below):

* each E is relatively within ERF_RATIONAL_BOUND and the roundings of y (four, moving E by at most as much, as
  y E'(y) <= E(y)) and of its quotient (four): ERF_ERROR;
* the mass's error is then at most ERF_ERROR ((1 - p) E_a + p E_b)/2 and its own roundings, relative to the terms
  it sums (MASS_ROUNDING) -- absolute, so large relatively only where the mass is small beside the tail it comes
  from;
* Phi^-1 moves by that over the density at the root, phi(t) >= min(m, 1 - m) / sqrt(pi/2) (Mills' ratio is at
  most sqrt(pi/2) on [0, inf)), with the mass's error held below a thousandth of min(m, 1 - m); Wichura's own
  error and the quotient's roundings add NDTRI_ERROR |t|;
* x = loc + s t adds two roundings.

An element is held where every number within that bound of |x| rounds to float32 as |x| does
(rounding_certain_from_mass, as straddling_icdf_single's test): its float32
value is then the exact value correctly rounded. The rest -- a value near a rounding boundary (28 of the peer
benchmark's 1e5 moderate elements), a bound between 3.5 and 5.14 scales times sqrt 2 from loc (where the erf is
not held), a mass below Wichura's floor -- are the caller's, which takes them by the erfc route
(straddling_icdf_single, held by the same test) and then the float64 loops.

**Straddling, what the first loop leaves** (straddling_icdf_single): icdf_element's straddling path with its tails
by exp_taylor and a degree-22 erfcx, Phi^-1 by Wichura's approximation unrefined, held by the same test
(rounding_certain_from_mass). **Narrow** (narrow_icdf_single): one Halley step from icdf_by_halley's start, held
where the step leaves the value within SINGLE_TOLERANCE.
"""
from __future__ import annotations

import math

import numba
from numpy.polynomial import chebyshev

from tnlib.distributions import _vector_math
from tnlib.distributions._cdf_float32 import ERF_RATIONAL_BOUND, erf_rational, float32_rounding_certain
from tnlib.distributions._cdf_vector import _short_stretch, _stretch, _wide, short_stretch_sum
from tnlib.distributions._icdf_vector import TINY, _exp_small
from tnlib.distributions._regimes import _SQRT_HALF
from tnlib.distributions._vector_math import (
    _EXP_FLOOR,
    _FUSED,
    ERFCX_K,
    ERFCX_POLYNOMIAL,
    _exp_reduction,
    _from_bits,
)
from tnlib.kernel_cache import cache_by_folder_sources

cache_by_folder_sources(__file__)  # before the first njit(cache=True): tnlib.kernel_cache says why

_SQRT_2 = math.sqrt(2.0)
_UNIT_ROUNDOFF = 2.0 ** -53
# Phi^-1 without a refinement step, for these loops: Wichura's rational approximations (Algorithm AS 241,
# PPND16, Applied Statistics 37(3), 1988), degree 7 over 7 in 0.180625 - (p - 1/2)^2 for |p - 1/2| <= 0.425, else
# in r = sqrt(-log p) less 1.6 up to r = 5; within 7.5e-16 relatively of mpmath's in float64
# (tests/distributions/test_truncated_normal_icdf_pass.py), where Acklam's is 1.2e-9 and wants its Halley step.
# Below p = exp(-25) (Wichura's third region, r beyond 5) the float32 pass does not hold an element: its masses come
# there only with a probability or a tail below 1.4e-11, which the float64 loops take
WICHURA_CENTRAL_END = 0.425
WICHURA_CENTRAL_NUMERATOR = (
    3.3871328727963666080e0, 1.3314166789178437745e+2, 1.9715909503065514427e+3, 1.3731693765509461125e+4,
    4.5921953931549871457e+4, 6.7265770927008700853e+4, 3.3430575583588128105e+4, 2.5090809287301226727e+3)
WICHURA_CENTRAL_DENOMINATOR = (
    1.0, 4.2313330701600911252e+1, 6.8718700749205790830e+2, 5.3941960214247511077e+3, 2.1213794301586595867e+4,
    3.9307895800092710610e+4, 2.8729085735721942674e+4, 5.2264952788528545610e+3)
WICHURA_NEAR_NUMERATOR = (
    1.42343711074968357734e0, 4.63033784615654529590e0, 5.76949722146069140550e0, 3.64784832476320460504e0,
    1.27045825245236838258e0, 2.41780725177450611770e-1, 2.27238449892691845833e-2, 7.74545014278341407640e-4)
WICHURA_NEAR_DENOMINATOR = (
    1.0, 2.05319162663775882187e0, 1.67638483018380384940e0, 6.89767334985100004550e-1, 1.48103976427480074590e-1,
    1.51986665636164571966e-2, 5.47593808499534494600e-4, 1.05075007164441684324e-9)
WICHURA_NEAR_FLOOR = math.exp(-25.0)
# the float32 pass's narrow loop holds an element where its float64 value is within this of the exact one,
# relatively (a sixty-fourth of a float32 ulp at least: the float32 it rounds to is the exact value's rounding, or
# its neighbour where that sits within the margin of a half-way point); the rest take the float64 pass's loops
SINGLE_TOLERANCE = 2.0 ** -30
# the float32 straddling loops' bound on Wichura's Phi^-1 unrefined, relatively: the approximation's error and its
# evaluation's rounding, at most 3.8e-15 (benchmarks/check_float32_icdf_bounds.py prints the parts)
WICHURA_ERROR = 4e-15
# E's relative error: the fit's bound (its evaluation's rounding included) and eight roundings (y's four, the
# quotient's four), doubled for the slack the bound's arithmetic needs
ERF_ERROR = ERF_RATIONAL_BOUND + 16.0 * _UNIT_ROUNDOFF
# the mass's own roundings (two products, a difference, a subtraction from 1/2), relative to the terms it sums
MASS_ROUNDING = 4.0 * _UNIT_ROUNDOFF
# Phi^-1's relative error: Wichura's (its evaluation's rounding included) and the quotient's four roundings
NDTRI_ERROR = WICHURA_ERROR + 4.0 * _UNIT_ROUNDOFF
# straddling_tails' relative error: TAILS_ERROR (the series' remainders and their evaluation's rounding) and
# TAILS_ERROR_PER_Y2 y^2 (y's roundings from the arguments, and y^2's, move exp(-y^2) so); each part printed by
# benchmarks/check_float32_icdf_bounds.py
TAILS_ERROR = 4e-14
TAILS_ERROR_PER_Y2 = 16.0 * _UNIT_ROUNDOFF
# 1/phi(Phi^-1(m)) <= sqrt(pi/2) / m for 0 < m <= 1/2 (Mills' ratio is at most sqrt(pi/2) on [0, inf)), at any
# point within a thousandth of m of the computed mass (which the held tests ask of the mass's error)
MILLS_BOUND = math.sqrt(math.pi / 2.0) * 1000.0 / 999.0
# a root clamped to a bound in scales that is itself a few roundings off
_CLAMP_ROUNDING = 8.0 * _UNIT_ROUNDOFF


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def _degree_7(c, x):
    return c[0] + x * (c[1] + x * (c[2] + x * (c[3] + x * (c[4] + x * (c[5] + x * (c[6] + x * c[7]))))))


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def ndtri_wichura_parts(p):
    """(numerator, denominator) of Phi^-1(p) for WICHURA_NEAR_FLOOR <= p <= 1/2 by Wichura's approximations alone
    (no refinement): both regions' polynomials formed, one kept (selecting their coefficients instead measured 4%
    slower); the caller divides, so that it may fold another quotient into the one division."""
    q = p - 0.5
    central = abs(q) <= WICHURA_CENTRAL_END
    s = 0.180625 - q * q
    r = math.sqrt(-_vector_math.log(p)) - 1.6
    numerator = q * _degree_7(WICHURA_CENTRAL_NUMERATOR, s) if central else -_degree_7(WICHURA_NEAR_NUMERATOR, r)
    denominator = _degree_7(WICHURA_CENTRAL_DENOMINATOR, s) if central else _degree_7(WICHURA_NEAR_DENOMINATOR, r)
    return numerator, denominator


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def ndtri_wichura(p):
    """Phi^-1(p) for WICHURA_NEAR_FLOOR <= p <= 1/2 by Wichura's approximations alone: ndtri_wichura_parts'
    quotient."""
    numerator, denominator = ndtri_wichura_parts(p)
    return numerator / denominator


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def rounding_certain_from_mass(x, t, loc, s, relative_mass_error, root_error):
    """Whether x = loc + s t (then clamped to the bounds, which moves it only towards the exact value) rounds to
    float32 as the exact value does, t being Phi^-1 of a mass (of 1 less it past 1/2) within
    ``relative_mass_error`` of min(m, 1 - m), at most a thousandth, and relatively within ``root_error`` of Phi^-1
    at the computed mass: t moves by MILLS_BOUND times the former and the latter |t|, x by s times that and
    its own two roundings (tnlib.distributions._cdf_float32.float32_rounding_certain decides)."""
    x_error = (s * (MILLS_BOUND * relative_mass_error + (root_error + _CLAMP_ROUNDING) * abs(t))
               + 2.0 * _UNIT_ROUNDOFF * (abs(loc) + s * abs(t)))
    return float32_rounding_certain(abs(x), x_error)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def straddling_icdf_rational(prob, loc, s, low, high):
    """(icdf, held) of an element with low < loc < high, its arguments float32 values, by erf's rational fit and
    Wichura's Phi^-1 (the module's docstring): held where its float32 rounding is certain."""
    k = _SQRT_HALF / s
    ya = (loc - low) * k
    yb = (high - loc) * k
    numerator_a, denominator_a, held_a = erf_rational(ya)
    numerator_b, denominator_b, held_b = erf_rational(yb)
    inverse = 1.0 / (denominator_a * denominator_b)
    erf_a = numerator_a * denominator_b * inverse
    erf_b = numerator_b * denominator_a * inverse
    q = 1.0 - prob
    lower_mass = 0.5 - 0.5 * (q * erf_a - prob * erf_b)
    below = lower_mass <= 0.5
    mass = lower_mass if below else 1.0 - lower_mass  # (exact: Sterbenz)
    numerator, denominator = ndtri_wichura_parts(mass)
    over = 1.0 / (denominator * mass)
    root = numerator * mass * over
    t = root if below else -root
    a = -_SQRT_2 * ya  # (a product: a quotient by sqrt(1/2) would be a division, as it is not exact)
    b = _SQRT_2 * yb
    t = min(max(t, a), b)
    x = min(max(loc + s * t, low), high)
    mass_error = (ERF_ERROR + MASS_ROUNDING) * 0.5 * (q * erf_a + prob * erf_b) + MASS_ROUNDING * mass
    # the mass at or above Wichura's floor and a thousand times its error, 0 < p < 1, s > 0 (an infinite s gives
    # ya = 0) and low < loc < high, as one comparison of their least: each comparison more costs a loop of 1e5
    # about 0.15 ns an element. (& rather than and: a short circuit is a branch, which would stop the loop
    # vectorizing. A NaN argument fails erf_rational's held or makes x NaN, which float32_rounding_certain fails.)
    held = ((min(mass - WICHURA_NEAR_FLOOR, mass - 1000.0 * mass_error, prob * q, s, ya, yb) > 0.0) & held_a
            & held_b & rounding_certain_from_mass(x, t, loc, s, mass_error * denominator * over, NDTRI_ERROR))
    return x, held


# exp(r) for |r| <= ln 2 / 2 by its Taylor series to r^12/12! (the remainder is below 2.4e-16 of it), and erfcx's
# expansion (tnlib.distributions._vector_math's) cut at degree 22 in Chebyshev's basis (the terms dropped sum to
# 1.3e-16 against P >= 1): the straddling element's tails with no division but one for both
_EXP_TAYLOR = tuple(1.0 / math.factorial(n) for n in range(13))
_TAILS_ERFCX = tuple(float(c) for c in chebyshev.cheb2poly(chebyshev.poly2cheb(ERFCX_POLYNOMIAL)[:23]))


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def exp_taylor(x):
    """exp(x) for x <= 0 within a few ulps (0 below -708): fdlibm's reduction to r = x - k ln 2, then _EXP_TAYLOR
    (tnlib.distributions._vector_math's exp divides once)."""
    k, hi, lo = _exp_reduction(max(x, _EXP_FLOOR))
    r = hi - lo
    e = _EXP_TAYLOR
    p = e[0] + r * (e[1] + r * (e[2] + r * (e[3] + r * (e[4] + r * (e[5] + r * (e[6] + r * (e[7] + r * (
        e[8] + r * (e[9] + r * (e[10] + r * (e[11] + r * e[12])))))))))))
    return p * _from_bits((k + 1023) << 52) if x >= _EXP_FLOOR else 0.0


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def _estrin_22(t, p):
    """p[0] + p[1] t + ... + p[22] t^22 by Estrin's scheme."""
    t2 = t * t
    t4 = t2 * t2
    t8 = t4 * t4
    r0 = (p[0] + p[1] * t) + (p[2] + p[3] * t) * t2
    r1 = (p[4] + p[5] * t) + (p[6] + p[7] * t) * t2
    r2 = (p[8] + p[9] * t) + (p[10] + p[11] * t) * t2
    r3 = (p[12] + p[13] * t) + (p[14] + p[15] * t) * t2
    r4 = (p[16] + p[17] * t) + (p[18] + p[19] * t) * t2
    r5 = (p[20] + p[21] * t) + p[22] * t2
    return (r0 + r1 * t4) + (r2 + r3 * t4) * t8 + (r4 + r5 * t4) * (t8 * t8)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def straddling_tails(a, b):
    """(Phi(a), Phi(-b)) for a <= 0 <= b (infinite bounds give 0), each relatively within a few ulps and
    1.1e-16 y^2 (y^2 rounded): exp(-y^2) erfcx(y) / 2 at y = -a / sqrt 2 and b / sqrt 2, erfcx's t = 1 - 2K/(y + K)
    and 1/(1 + 2y) of both from one division."""
    ya = min(-a * _SQRT_HALF, 38.0)
    yb = min(b * _SQRT_HALF, 38.0)
    shifted_a, widened_a = ya + ERFCX_K, 1.0 + 2.0 * ya
    shifted_b, widened_b = yb + ERFCX_K, 1.0 + 2.0 * yb
    product_a, product_b = shifted_a * widened_a, shifted_b * widened_b
    inverse = 1.0 / (product_a * product_b)
    inverse_a, inverse_b = inverse * product_b, inverse * product_a
    t_a = 1.0 - 2.0 * ERFCX_K * widened_a * inverse_a
    t_b = 1.0 - 2.0 * ERFCX_K * widened_b * inverse_b
    tail_a = 0.5 * exp_taylor(-ya * ya) * (_estrin_22(t_a, _TAILS_ERFCX) * (shifted_a * inverse_a))
    tail_b = 0.5 * exp_taylor(-yb * yb) * (_estrin_22(t_b, _TAILS_ERFCX) * (shifted_b * inverse_b))
    return tail_a, tail_b


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def straddling_icdf_single(prob, loc, s, low, high):
    """(icdf, held) of an element whose bounds straddle loc, its arguments float32 values, as icdf_element's
    straddling path with Phi^-1 by Wichura's approximations unrefined: held where its float32 rounding is certain
    (rounding_certain_from_mass), the mass's error being the tails' (TAILS_ERROR and TAILS_ERROR_PER_Y2 y^2 of
    each, counted twice: once in the tail, once in Z) and four roundings of the mass, and Phi^-1's WICHURA_ERROR.
    A narrow interval that straddles loc is held too (the float64 loops take it as a frame element): the masses'
    errors are absolute, a few ulps of 1/2, whatever the interval's width, so the same bound holds for it. Taken
    by the float32 pass where straddling_icdf_rational (tnlib.distributions._icdf_float32) does not hold an
    element: a bound between 3.5 and 5.14 scales times sqrt 2 from loc, a value near a rounding boundary."""
    # the bounds in scales from loc by one division (a and b an ulp from canonical_frame's quotients); not mirrored
    # (canonical_frame mirrors only an element with high <= loc, which does not straddle)
    inverse = 1.0 / s
    a = (low - loc) * inverse
    b = (high - loc) * inverse
    # the tails beyond the bounds (straddling_tails, y^2 rounded: relatively 1e-16 y^2 off, 7e-14 at most where a
    # tail is held), and Z as what the two leave, the masses on either side of loc, whose differences lose nothing
    # but their absolute rounding
    tail_a, tail_b = straddling_tails(a, b)
    z_straddle = (0.5 - tail_a) + (0.5 - tail_b)
    q = 1.0 - prob
    lower_mass = tail_a + prob * z_straddle
    below = lower_mass <= 0.5
    mass = lower_mass if below else tail_b + q * z_straddle
    lower = mass <= 0.5
    root = ndtri_wichura(mass if lower else 1.0 - mass)
    root = root if lower else -root
    t = root if below else -root
    x = min(max(loc + s * min(max(t, a), b), low), high)
    error_a = (TAILS_ERROR + TAILS_ERROR_PER_Y2 * 0.5 * min(a * a, 1e4)) * tail_a
    error_b = (TAILS_ERROR + TAILS_ERROR_PER_Y2 * 0.5 * min(b * b, 1e4)) * tail_b
    least = min(mass, 1.0 - mass)
    relative_mass_error = (2.0 * (error_a + error_b) + 4.0 * _UNIT_ROUNDOFF * least) / least
    # (& and | rather than and/or here: a short circuit is a branch, which would stop the loop vectorizing; a NaN
    # bound fails a < 0 or b > 0, and from float32 arguments a finite a or b is below 1e84 in size, so no test of
    # their size is needed)
    held = ((least >= WICHURA_NEAR_FLOOR) & (relative_mass_error <= 1e-3) & (prob > 0.0) & (q > 0.0)
            & (s > 0.0) & (s < math.inf) & (a < 0.0) & (b > 0.0)
            & rounding_certain_from_mass(x, t, loc, s, relative_mass_error, WICHURA_ERROR))
    return x, held


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _narrow_step_single(a, w, d, upper, target):
    """_narrow_step (the full series) with one division: its Newton step r = n / density (n the mass's difference
    from the target, relative to the density at d) folded into Halley's r / (1 + (a + d) r / 2) =
    n / (density + (a + d) n / 2)."""
    start = a + d if upper else a
    length = max(w - d if upper else d, 0.0)
    mass = _stretch(start, length)[0]
    density = _vector_math.exp(-d * (a + 0.5 * d))
    difference = (target - mass * density) if upper else (mass - target)
    return min(max(d - difference / (density + 0.5 * (a + d) * difference), 0.0), w)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _short_step_single(a, w, d, upper, c_p, c_q):
    """(d, the whole interval's mass over exp(-m (a + m/2))) after _narrow_step_single's step on a short interval
    (_short_stretch), the masses by the series to He_8 and every exponential relative to the whole interval's (n
    and the density both over it leave the step as it is): two _exp_small where the step with the whole mass takes
    three. Their arguments are differences of exponents of at most 0.021 each, so at most 0.063, where the
    Taylor series' first term dropped is below 5e-17 of the sum."""
    m, s0 = short_stretch_sum(a, w)
    exponent = -m * (a + 0.5 * m)
    whole = 2.0 * m * s0
    start = a + d if upper else a
    length = max(w - d if upper else d, 0.0)
    part_m, part_s0 = short_stretch_sum(start, length)
    part_exponent = -part_m * (start + 0.5 * part_m)
    density_exponent = -d * (a + 0.5 * d)
    density = _exp_small(density_exponent - exponent)
    part = _exp_small(part_exponent - exponent + (density_exponent if upper else 0.0)) * 2.0 * part_m * part_s0
    difference = (c_q * whole - part) if upper else (part - c_p * whole)
    return min(max(d - difference / (density + 0.5 * (a + d) * difference), 0.0), w), whole


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def narrow_icdf_single(prob, loc, s, low, high, short):
    """(icdf, held) of a narrow interval (canonical_frame's narrow) by one Halley step from icdf_by_halley's start,
    the masses by the short series with ``short`` (an interval too long for it not held). Halley's step leaves
    about |C| e^3 of its start's error e, C = -(u^2/12 + 1/6) at the log-density's slope u = a + d, |u| <= |a| + w;
    the step itself is -e to first order: held where k^2 step^3, k = max(1, |a| + w), is within SINGLE_TOLERANCE
    of x over the scale and k step <= 1e-2 (the terms past e^3 a hundredth of it), and the interval does not
    straddle loc (straddling_icdf_single's: so an element's float32 value is one loop's whatever its chunk ran).
    canonical_frame's a and w by one reciprocal of the scale, and the step by one division (_narrow_step_single,
    _short_step_single): two divisions an element, where the float64 loops' forms take four."""
    flip = high <= loc
    c_loc = -loc if flip else loc
    c_low = -high if flip else low
    c_high = -low if flip else high
    inverse = 1.0 / s
    a = (c_low - c_loc) * inverse
    w = (high - low) * inverse
    narrow = (w < math.inf) & (not _wide(a, w))
    c_p = 1.0 - prob if flip else prob
    c_q = prob if flip else 1.0 - prob
    upper = c_p > 0.5
    start = min(max(c_p * w * (1.0 - 0.5 * (a + 0.5 * w) * w * c_q), 0.0), w)
    # (a constant ``short`` keeps the other series out of the caller's loop)
    if short:
        d, whole_mass = _short_step_single(a, w, start, upper, c_p, c_q)
    else:
        whole_mass = _stretch(a, w)[0]
        d = _narrow_step_single(a, w, start, upper, (c_q if upper else c_p) * whole_mass)
    step = abs(d - start)
    k = max(1.0, abs(a) + w)
    x = min(max(c_low + s * d, c_low), c_high)
    held = (narrow & (a >= 0.0) & ((not short) | _short_stretch(a, w)) & (whole_mass > 1e-290) & (k * step <= 1e-2)
            & (s * k * k * step * step * step <= SINGLE_TOLERANCE * abs(c_low + s * d)) & (d > 0.0) & (d < w)
            & (c_p > TINY) & (c_q > TINY) & (s > 0.0) & (s < math.inf) & (abs(a) < 1e300))
    return -x if flip else x, held
