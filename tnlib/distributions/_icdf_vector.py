"""The inverse CDF of the Truncated Normal and its derivatives in straight-line code the compiler vectorizes (numba:
four float64 lanes under AVX2, eight under AVX-512), for the elements the per-element kernel inverts in closed form.

The per-element kernel (tnlib.distributions._cdf_elements: _icdf_element, _icdf_gradient_element) inverts in
closed form wherever that keeps the digits: a straddling element by Phi^-1 on whichever tail keeps its argument
small, a frame element near its mode (and a narrow interval within half a scale of loc) by erf^-1, a frame element
past the mode by Phi^-1 of the mass above the value; it takes safeguarded Newton steps on the frame integral only
where those would lose digits (a narrow interval away from loc, a tail beyond exp(-708), a value whose offset from
the bound cancels). This module is those closed forms, the same formulas in the same order with the branch-free
log, exp, erf and erfc of tnlib.distributions._vector_math in place of libm's: Phi^-1 is Acklam's rational
approximation and one Halley step, erf^-1 three Newton steps from it, so the two routes agree to a few ulps of the
functions they invert. The derivatives are the implicit function theorem's, as the per-element kernel's, with the
frame's dF/da from the closed-form masses and means of the cdf's pass (tnlib.distributions._cdf_vector: Mills'
ratios, the mean excess, a narrow stretch's series) in place of Gauss-Legendre moments. An element the closed forms
do not hold for (the Newton cases, a probability of 0 or 1 or NaN,
a derivative beyond exp(700)) is marked not held; the forward pass takes icdf_by_halley's vectorized Halley steps
for the two common Newton cases (a narrow interval away from loc, a far one-sided tail) and leaves the rest to the
per-element kernel.

Each lane forms both the frame's and the straddling element's formulas and keeps one, and one Phi^-1 serves
every path (its argument selected first): a select costs less than the branch that would stop the loop vectorizing.

A float32 result needs less: straddling_icdf_single and narrow_icdf_single (the float32 pass's) skip the
refinements the float64 loops take to reach float64's rounding, and hold an element only where a bound on what is
left cannot move its float32 rounding (straddling: rounding_certain_from_mass) or is within SINGLE_TOLERANCE of the
value (narrow). The float32 pass's first straddling loop is tnlib.distributions._icdf_float32's, by erf's
rational fit; straddling_icdf_single takes what that leaves.

Like tnlib.distributions._vector_math's functions, these are compiled once each and inlined into the caller's loop
by LLVM (``forceinline``, which that module's docstring explains): the forward and the gradients' loops of either
dtype share one compiled icdf_element.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numpy.polynomial import chebyshev

from tnlib.distributions import _vector_math
from tnlib.distributions._cdf_vector import (
    _erf_and_erfc,
    _ndtr_lower,
    _second_moment,
    _short_stretch,
    _stretch,
    _stretch_moments,
    _tail_product,
    _vector_mills,
    _wide,
    canonical_frame,
    short_stretch_sum,
)
from tnlib.distributions._cdf_float32 import float32_rounding_certain
from tnlib.distributions._regimes import _LOG_SQRT_2PI, _SQRT_HALF
from tnlib.distributions._vector_math import (
    _EXP_FLOOR,
    _INV_LN2,
    _LN2_HI,
    _LN2_LO,
    _ROUNDING_SHIFT,
    ERFCX_K,
    ERFCX_POLYNOMIAL,
    _bits,
    _from_bits,
)
from tnlib.kernel_cache import cache_by_folder_sources

cache_by_folder_sources(__file__)  # before the first njit(cache=True): tnlib.kernel_cache says why

# Phi^-1, which numba lacks: Acklam's rational approximation (relative error 1.2e-9), below p = 0.02425 in
# q = sqrt(-2 log p), above it in p - 1/2; one Halley step on Phi(x) - p makes it exact to rounding
ACKLAM_A = (-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02, 1.383577518672690e+02,
            -3.066479806614716e+01, 2.506628277459239e+00)
ACKLAM_B = (-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02, 6.680131188771972e+01,
            -1.328068155288572e+01)
ACKLAM_C = (-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00, -2.549732539343734e+00,
            4.374664141464968e+00, 2.938163982698783e+00)
ACKLAM_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00, 3.754408661907416e+00)
ACKLAM_TAIL_END = 0.02425
SQRT_2PI = math.sqrt(2.0 * math.pi)
TINY = float(np.finfo(np.float64).tiny)
TINY_LOG = math.log(TINY)
# fastmath's flag for fused multiply-adds alone (no reassociation, no finite-math shortcut): the float32 pass's
# functions, whose results need not be the float64 loops' to the bit
_FUSED = {"contract"}
# Phi^-1's root from which Phi(x) - p is formed by erf's series (x / sqrt 2 within its half-width; 1/2 - p is exact)
_NEAR_ZERO = 0.5
# erf'(0) = 2/sqrt(pi), the Newton steps' slope
_ERF_SLOPE = 1.1283791670955126
# a derivative's logarithm beyond which the vector exp no longer holds it (it clamps at 709)
_LOG_DERIVATIVE_END = 700.0

# Phi^-1 without a refinement step, for the float32 pass: Wichura's rational approximations (Algorithm AS 241,
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


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def ndtri_lower(p):
    """Phi^-1(p) for 0 < p <= 1/2, p a normal float: Acklam's approximation, both of its forms, one kept, then one
    Halley step through Phi, which is relatively exact in the lower tail and near 0."""
    a, b, c, d = ACKLAM_A, ACKLAM_B, ACKLAM_C, ACKLAM_D
    q = math.sqrt(-2.0 * _vector_math.log(p))
    tail = ((((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5])
            / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0))
    q = p - 0.5
    r = q * q
    central = ((((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q
               / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0))
    x = tail if p < ACKLAM_TAIL_END else central
    # Phi(x) - p, near x = 0 as (1/2 - p) + erf(x / sqrt 2)/2, where both terms keep their relative accuracy (the
    # per-element kernel's erfc there is off by an ulp of 1/2: Phi^-1(1/2) exactly 0 either way)
    near_zero = x > -_NEAR_ZERO
    residual = (0.5 - p) + 0.5 * _vector_math.erf_series(x * _SQRT_HALF) if near_zero else _ndtr_lower(x) - p
    u = residual * SQRT_2PI * _vector_math.exp(0.5 * x * x)
    return x - u / (1.0 + 0.5 * x * u)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _ndtri(p):
    """Phi^-1(p) for 0 < p < 1 (min(p, 1 - p) a normal float), as -Phi^-1(1 - p) above 1/2 (1 - p is exact there)."""
    lower = p <= 0.5
    x = ndtri_lower(p if lower else 1.0 - p)
    return x if lower else -x


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


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _erfinv_steps(x, v):
    """erf^-1(v) for |v| <= erf(1/2) by three Newton steps on erf from x (written out: a loop here would stop the
    caller's loop vectorizing); the root is within erf's series."""
    x -= (_vector_math.erf_series(x) - v) / (_ERF_SLOPE * _vector_math.exp(-x * x))
    x -= (_vector_math.erf_series(x) - v) / (_ERF_SLOPE * _vector_math.exp(-x * x))
    x -= (_vector_math.erf_series(x) - v) / (_ERF_SLOPE * _vector_math.exp(-x * x))
    return x


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _log_or_minus_inf(x):
    """log(x) for x >= 0 normal or 0 (-inf)."""
    return _vector_math.log(max(x, TINY)) if x > 0.0 else -math.inf


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _frame_head_spread(a, mean_d, head_mean, head_var, w_p_b):
    """Minus s dF/ds over F of a frame element on a wide interval from the moments of its part below the value (r
    its distance from the lower bound, t = a + r): a F_a + d f(d) - w p_b F with F_a = F (D - D_head) and, as
    (r f(r))' = (1 - r t) f(r), d f(d) = F (1 - E_head[r t]) = F (1 - a D_head - D_head^2 - V_head)."""
    return a * (mean_d - 2.0 * head_mean) - head_mean * head_mean - head_var + 1.0 - w_p_b


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def icdf_element(prob, loc, s, low, high, straddling):
    """(icdf, dx/dp, dx/dloc, dx/dscale, dx/dlow, dx/dhigh, value held, derivatives held) of one element, as the
    per-element kernel's _icdf_element and _icdf_gradient_element compute them; a value or derivatives not held are
    the caller's to compute again (they are meaningless here). ``straddling`` true says that the element is known
    to straddle (classify_icdf's STRADDLING): the frame's formulas are then not formed."""
    # mirrored where high <= loc: its canonical probability is 1 - p, and its complement p itself, each exact
    flip, c_loc, c_low, c_high, a, b, w, narrow, frame = canonical_frame(loc, s, low, high)
    frame = frame & (not straddling)
    c_p = 1.0 - prob if flip else prob
    c_q = prob if flip else 1.0 - prob
    no_a = c_low == -math.inf
    no_b = c_high == math.inf
    # (& and | rather than and/or here: a short circuit is a branch, which would stop the loop vectorizing)
    right = (a >= 0.0) & (not narrow) & (not straddling)
    use_upper = c_p > 0.5
    # the frame: M0 relative to phi(a) (a narrow interval's by the stretch's series) and Z = phi(a) M0
    whole_mass, whole_mean = _stretch(a, w)
    m_a = _vector_mills(a)
    m_b = _vector_mills(b)
    delta_w = _vector_math.exp(-w * (a + 0.5 * w))
    m0 = whole_mass if narrow else m_a - delta_w * m_b
    log_m0 = _vector_math.log(m0)
    p_b_frame = delta_w / m0
    z_frame = _vector_math.exp(-0.5 * a * a - _LOG_SQRT_2PI + log_m0)
    ea = _vector_math.erf(a * _SQRT_HALF)
    eb = 1.0 if no_b else _vector_math.erf(b * _SQRT_HALF)
    # near the mode, erf(t / sqrt 2) = v; a narrow interval within half a scale of loc likewise; past the mode the
    # mass above the value relative to phi(a), k, gives Phi(-t) = y
    v_mode = eb - 2.0 * c_q * z_frame if use_upper else ea + 2.0 * c_p * z_frame
    near_mode = right & (v_mode <= 0.5)
    near_loc = (not right) & (abs(a) <= 0.5) & (abs(b) <= 0.5)
    v_loc = eb - c_q * (eb - ea) if use_upper else ea + c_p * (eb - ea)
    v = v_mode if right else v_loc
    k = m0 * (c_q + (0.0 if no_b else p_b_frame * m_b)) if use_upper else m_a - c_p * m0
    log_y = _log_or_minus_inf(k) - 0.5 * a * a - _LOG_SQRT_2PI
    by_erf = near_mode | near_loc
    representable = by_erf | (right & (log_y > TINY_LOG) & (k > 0.0))
    # straddling: Z = erf(-a/sqrt 2)/2 + erf(b/sqrt 2)/2, the masses below and above loc (a sum: 1 less the two
    # tails would cancel where they pass 1/2); Phi^-1 of the mass below the value, or of that above it past 1/2
    erf_a, erfc_a = _erf_and_erfc(-a * _SQRT_HALF)
    erf_b, erfc_b = _erf_and_erfc(b * _SQRT_HALF)
    tail_a = 0.5 * erfc_a
    tail_b = 0.5 * erfc_b
    z_straddle = 0.5 * (erf_a + erf_b)
    lower_mass = tail_a + c_p * z_straddle
    below = lower_mass <= 0.5
    straddle_mass = lower_mass if below else tail_b + c_q * z_straddle
    # one Phi^-1 for every path: of (v + 1)/2 (erf^-1's start), y, or the straddling element's mass
    argument = (0.5 * (v + 1.0) if by_erf else _vector_math.exp(log_y)) if frame else straddle_mass
    root = _ndtri(argument)
    t_erf = _erfinv_steps(root * _SQRT_HALF, v) / _SQRT_HALF
    t_frame = t_erf if by_erf else -root
    d = min(max(t_frame - a, 0.0), w)
    x_start = c_low + s * d
    off_by = 2.0 * (abs(ea) + abs(eb)) if near_loc else (a + d if near_mode else a + d + 1.25)
    within = off_by * s <= 8.0 * max(abs(x_start), abs(c_low))
    frame_x = min(max(c_low + s * d, c_low), c_high)
    t_straddle = root if below else -root
    straddle_x = min(max(c_loc + s * min(max(t_straddle, a), b), c_low), c_high)
    x = frame_x if frame else straddle_x
    held_frame = representable & within & (d > 0.0) & (d < w) & (m0 > 1e-290)
    held = ((argument >= TINY) & (argument < 1.0) & (c_p > 0.0) & (c_q > 0.0) & (s > 0.0) & (s < math.inf)
            & ((abs(a) < 1e300) | no_a) & ((abs(b) < 1e300) | no_b) & (held_frame | (not frame)))
    # the derivatives: dx/dp = 1/pdf, dx/dlow = (1 - F) pdf(low)/pdf(x), dx/dhigh = F pdf(high)/pdf(x), as
    # logarithms; dx/dloc in the frame F_a / (s pdf(x)) (1 - dx/dlow - dx/dhigh cancels there), else that sum
    d = (x - c_low) / s
    t = (x - c_loc) / s
    log_s = _vector_math.log(s)
    log_z = _vector_math.log(z_straddle)
    log_pdf = (-log_s - log_m0 - 0.5 * d * (d + 2.0 * a) if frame
               else -log_s - _LOG_SQRT_2PI - 0.5 * t * t - log_z)
    dx_dp = _vector_math.exp(-log_pdf)
    p_a = 1.0 / m0 if frame else _vector_math.exp(-0.5 * a * a - _LOG_SQRT_2PI - log_z)
    p_b = p_b_frame if frame else (0.0 if no_b else _vector_math.exp(-0.5 * b * b - _LOG_SQRT_2PI - log_z))
    log_low = _log_or_minus_inf(c_q) + (_log_or_minus_inf(p_a) - log_s) - log_pdf
    log_high = _log_or_minus_inf(c_p) + (_log_or_minus_inf(p_b) - log_s) - log_pdf
    dx_dl = _vector_math.exp(log_low)
    dx_du = _vector_math.exp(log_high)
    # the frame's F_a at fixed d and w: F (D - D_head) up to the mean, (1 - F) (d - D + D_tail) past it, with
    # 1 - F from the tail's own mass
    mean_d = (whole_mean if narrow else _vector_math.mean_excess(a) if no_b
              else (m_a * _vector_math.mean_excess(a) - delta_w * (m_b * _vector_math.mean_excess(b) + w * m_b)) / m0)
    up_to_mean = d <= mean_d
    rest = (c_high - x) / s
    narrow_head = (not no_a) & (not _wide(a, d))
    narrow_tail = (not no_b) & (not _wide(t, rest))
    _, head_mean, head_var = _stretch_moments(a, d)
    tail_mass, tail_mean, tail_var = _stretch_moments(t, rest)
    m_t = _vector_mills(t)
    excess_t = _vector_math.mean_excess(t)
    delta_rest = _vector_math.exp(-rest * (t + 0.5 * rest))
    wide_tail_mass = m_t - delta_rest * m_b
    wide_tail_mean = (excess_t if no_b
                      else (m_t * excess_t - delta_rest * (m_b * _vector_math.mean_excess(b) + rest * m_b))
                      / wide_tail_mass)
    density = _vector_math.exp(-d * (a + 0.5 * d) - log_m0)
    # (past the median with a narrow tail, 1 - F at p itself: the tail's mass at the rounded x carries x's
    # rounding, relatively as large as the tail is short)
    tail_form = narrow_tail & (c_p > 0.5)
    f_a = (c_p * (mean_d - head_mean) if up_to_mean
           else (c_q if tail_form else (tail_mass if narrow_tail else wide_tail_mass) * density)
           * (d - mean_d + (tail_mean if narrow_tail else wide_tail_mean)))
    # on a narrow interval a dx/dloc + d - w dx/dhigh cancels next to a bound: there F_a = F (1 - F) (d - D_head +
    # D_tail) and minus s dF/ds = F (1 - F) (E_tail[t^2] - E_head[t^2]) (tnlib.distributions._cdf_vector.cdf_element's)
    # at p itself (1 - F at the rounded x would carry its rounding), each over s pdf(x)
    apart = d - head_mean + tail_mean
    narrow_fa = c_p * c_q * apart
    narrow_spread = c_p * c_q * (apart * (a + head_mean + t + tail_mean) + tail_var - head_var)
    dx_dloc = (narrow_fa if narrow else f_a) * dx_dp / s if frame else 1.0 - dx_dl - dx_du
    # past the median with a narrow tail, d - w dx/dhigh (t - b dx/dhigh straddling) cancels likewise: minus s
    # dF/ds from the tail's moments as the cdf's (_cdf_vector.cdf_element's), at p itself
    frame_tail_spread = a * f_a + c_q * (_tail_product(d, t, tail_mean, tail_var) - 1.0 + w * p_b_frame)
    # and short of the median next to the lower bound, where d (t - a dx/dlow straddling) carries x's rounding,
    # relatively as large as the head is short: F (E[t^2] - E_head[t^2]) at p, in the frame a F_a + d f(d) - w p_b F
    # with d f(d) = F (1 - E_head[r t]) (_frame_head_spread)
    head_form = narrow_head & (c_p <= 0.5)
    frame_head_spread = c_p * _frame_head_spread(a, mean_d, head_mean, head_var, 0.0 if no_b else w * p_b_frame)
    second = _second_moment(a, b, p_a, p_b, no_a, no_b)
    above_t = t + tail_mean
    above_a = a + head_mean
    straddle_tail_spread = c_q * (above_t * above_t + tail_var - second)
    straddle_head_spread = c_p * (second - above_a * above_a - head_var)
    frame_ds = (narrow_spread * dx_dp / s if narrow
                else frame_tail_spread * dx_dp / s if tail_form
                else frame_head_spread * dx_dp / s if head_form
                else a * dx_dloc + d - (0.0 if dx_du == 0.0 else w * dx_du))
    straddle_ds = (straddle_tail_spread * dx_dp / s if tail_form
                   else straddle_head_spread * dx_dp / s if head_form
                   else t - (0.0 if dx_dl == 0.0 else a * dx_dl) - (0.0 if dx_du == 0.0 else b * dx_du))
    dx_ds = frame_ds if frame else straddle_ds
    # a wide stretch's closed form needs a non-negative slope, and a head up to the mean is narrow
    held_slope = (narrow_head if up_to_mean else (narrow_tail | (t >= 0.0))) & (d > 0.0) & (x < c_high)
    held_derivatives = (held & (abs(log_pdf) < _LOG_DERIVATIVE_END) & (log_low < _LOG_DERIVATIVE_END)
                        & (log_high < _LOG_DERIVATIVE_END) & (held_slope | (not frame)))
    if flip:  # odd under the mirror
        return -x, dx_dp, dx_dloc, -dx_ds, dx_du, dx_dl, held, held_derivatives
    return x, dx_dp, dx_dloc, dx_ds, dx_dl, dx_du, held, held_derivatives


# Halley steps of icdf_by_halley, written out (a loop would stop the caller's loop vectorizing); from its starts
# (the uniform on a narrow interval, the exponential far out) the fourth step's correction is at the rounding's
# level: a few ulps of d, or of the bound x is formed from (far out, the log-mass's rounding moves d by about eps / a)
_STEP_TOLERANCE = 8.0 * float(np.finfo(np.float64).eps)


# exp(x) for |x| <= 1/32 by its Taylor series to x^8/8! (the first term dropped is below 1e-19 of it): on a
# stretch _short_stretch holds for, |x| = |m (a + m/2)| <= max(1, |c|) m + m^2 / 2 and the density's
# |d (a + d/2)| <= 2 (max(1, |c|) m + m^2), at most 0.021
_SMALL_EXP = tuple(1.0 / math.factorial(n) for n in range(9))


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _exp_small(x):
    c = _SMALL_EXP
    return c[0] + x * (c[1] + x * (c[2] + x * (c[3] + x * (c[4] + x * (c[5] + x * (c[6] + x * (c[7] + x * c[8])))))))


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _short_mass(a, length):
    """_short_stretch_mass (tnlib.distributions._cdf_vector's: the series to He_8) with its exponential by
    _exp_small: J(a, length) of a stretch _short_stretch holds for."""
    m, s0 = short_stretch_sum(a, length)
    return _exp_small(-m * (a + 0.5 * m)) * 2.0 * m * s0


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _narrow_step(a, w, d, upper, target, short):
    """One Halley step on a narrow interval's mass below d (with ``upper``, above it) towards ``target``, the
    masses by the stretch's series (with ``short``, _short_mass, where the whole interval is short enough for
    _short_stretch_mass: then the density's exponent is small too); the new d, within [0, w]. Either mass's second
    derivative over its first is the log-density's slope, -(a + d)."""
    start = a + d if upper else a
    length = max(w - d if upper else d, 0.0)
    mass = _short_mass(start, length) if short else _stretch(start, length)[0]
    density = _exp_small(-d * (a + 0.5 * d)) if short else _vector_math.exp(-d * (a + 0.5 * d))
    # the mass above d is J(a + d, w - d) times the density at d, relative to phi(a); r is Newton's step
    r = (target / density - mass) if upper else (mass - target) / density
    return min(max(d - r / (1.0 + 0.5 * (a + d) * r), 0.0), w)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _tail_lower_step(a, d, m_a, target):
    """One Halley step, far out in a one-sided tail, on the mass below d relative to phi(a) towards ``target``:
    M(a) - exp(-d (a + d/2)) M(a + d), or within a short stretch of the bound the stretch's series (the difference
    would cancel there)."""
    density = _vector_math.exp(-d * (a + 0.5 * d))
    series, _ = _stretch(a, d)
    mass = m_a - density * _vector_mills(a + d) if _wide(a, d) else series
    r = (mass - target) / density
    return max(d - r / (1.0 + 0.5 * (a + d) * r), 0.0)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _tail_step(a, d, log_target):
    """One Halley step, far out in a one-sided tail, on the log of the mass above d relative to phi(a),
    f = log M(a + d) - d (a + d/2), towards ``log_target``: f' = -1/M(u) and f''/f' = (1 - u M(u))/M(u) at
    u = a + d."""
    u = a + d
    mills = _vector_mills(u)
    r = -(_vector_math.log(mills) - d * (a + 0.5 * d) - log_target) * mills
    return max(d - r / (1.0 - 0.5 * r * (1.0 - u * mills) / mills), 0.0)


# a one-sided tail from here on: Phi^-1 of the mass above the value, below phi(a) < exp(-800), is not representable
_CLOSED_FORMS_END = 40.0


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def needs_iteration(loc, s, low, high):
    """Whether the element is inverted by Halley's steps alone, icdf_element's closed forms skipped: a narrow
    interval (about loc the closed forms' erf^-1 would hold, at 2.5x the quick steps' time), or a one-sided tail
    from 40 scales out (where the closed forms hold for none of its probabilities)."""
    _, c_loc, c_low, c_high, a, b, w, narrow, _ = canonical_frame(loc, s, low, high)
    return narrow | ((c_high == math.inf) & (a >= _CLOSED_FORMS_END))


# the kinds a chunk's elements are gathered by for the icdf's forward loops (classify_icdf), in the order gathered:
# a straddling element, a frame element the closed forms invert, one Halley's steps alone invert (needs_iteration)
# on a narrow interval and far in a one-sided tail
STRADDLING, CLOSED, NARROW_ITERATED, FAR_ITERATED = 0, 1, 2, 3
ICDF_KINDS = 4


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def icdf_kind(loc, s, low, high):
    """(kind, long) of one element: its kind (STRADDLING ... FAR_ITERATED), and whether it is a narrow interval too
    long for _short_stretch_mass."""
    _, _, _, _, a, _, w, narrow, frame = canonical_frame(loc, s, low, high)
    iterated_kind = NARROW_ITERATED if narrow else FAR_ITERATED
    kind = (iterated_kind if needs_iteration(loc, s, low, high) else CLOSED) if frame else STRADDLING
    return kind, narrow & (not _short_stretch(a, w))


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def classify_icdf(start, stop, arrays, kinds, starts):
    """The kind (STRADDLING ... FAR_ITERATED) of each of the five ``arrays``' (probability, loc, scale, low, high)
    elements [start, stop) into ``kinds``, and into ``starts`` (ICDF_KINDS + 1 rows) the row each kind's elements
    start from once gathered by kind (tnlib.distributions._cdf_vector's gather_by_kind), the last the count: a loop
    the compiler vectorizes, with canonical_frame's divisions in its lanes. Returns the count of narrow intervals
    too long for _short_stretch_mass (tnlib.distributions._cdf_vector's short series)."""
    loc, scale, low, high = arrays[1][start:stop], arrays[2][start:stop], arrays[3][start:stop], arrays[4][start:stop]
    straddling = closed = narrow_iterated = long_narrow = 0
    for j in range(stop - start):
        kind, long = icdf_kind(np.float64(loc[j]), np.float64(scale[j]), np.float64(low[j]), np.float64(high[j]))
        kinds[j] = kind
        straddling += kind == STRADDLING
        closed += kind == CLOSED
        narrow_iterated += kind == NARROW_ITERATED
        long_narrow += long
    starts[0] = 0
    starts[1] = straddling
    starts[2] = starts[1] + closed
    starts[3] = starts[2] + narrow_iterated
    starts[4] = stop - start
    return long_narrow


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def icdf_by_halley(prob, loc, s, low, high, narrow_known, quick, side):
    """(icdf, held) of a narrow interval (``narrow_known`` true: canonical_frame's narrow) or a one-sided tail from
    about 37 scales out (false) by Halley's steps: on a narrow interval on the mass below the value (above it past
    the median), each by the stretch's series, from the truncated exponential to first order, two steps with
    ``quick`` (enough where w max(1, |a + w/2|) is below about 1e-3) and four without; far in a one-sided tail
    on the mass below the value (past the median, the log of the mass above it), from the exponential, each side's
    steps formed only where ``side`` allows it (-1: the canonical probability is known to be at most 1/2, 1: above
    it; three steps, enough from 37 scales out, where the start is off by 1e-2 at most; 0: either, four). Held
    where the last step moved d by no more than a few ulps of d or of the bound, and the element is of the kind
    said; the rest are the caller's to take further (all four steps, the per-element kernel)."""
    flip, c_loc, c_low, c_high, a, b, w, narrow, _ = canonical_frame(loc, s, low, high)
    c_p = 1.0 - prob if flip else prob
    c_q = prob if flip else 1.0 - prob
    no_b = c_high == math.inf
    upper = c_p > 0.5
    if narrow_known:
        # on whichever side of the median keeps the smaller mass, from the truncated exponential's d to first order
        # in the log-density's slope at the interval's middle, p w (1 - (a + w/2) w (1 - p) / 2): off by the square
        # of that slope's and the curvature's terms, (w max(1, |a + w/2|))^2, which one Halley step cubes
        whole_mass, _ = _stretch(a, w)
        target = (c_q if upper else c_p) * whole_mass
        d = min(max(c_p * w * (1.0 - 0.5 * (a + 0.5 * w) * w * c_q), 0.0), w)
        d = _narrow_step(a, w, d, upper, target, False)
        if not quick:
            d = _narrow_step(a, w, d, upper, target, False)
            d = _narrow_step(a, w, d, upper, target, False)
        new_d = _narrow_step(a, w, d, upper, target, False)
        kind = narrow & (whole_mass > 1e-290)
    else:
        # past the median on the log of the mass above the value, q M(a) (q = 1 - p is exact there), below it on
        # the mass below, p M(a), which keeps d's relative accuracy where p is small (the log's would not)
        # (both formed, one kept: a branch would stop the loop vectorizing)
        m_a = _vector_mills(a)
        start = -_vector_math.log(c_q) / a
        upper_before, upper_d, lower_before, lower_d = np.nan, np.nan, np.nan, np.nan
        if side >= 0:
            log_target = _vector_math.log(c_q) + _vector_math.log(m_a)
            d = _tail_step(a, start, log_target)
            if side == 0:
                d = _tail_step(a, d, log_target)
            upper_before = _tail_step(a, d, log_target)
            upper_d = _tail_step(a, upper_before, log_target)
        if side <= 0:
            target = c_p * m_a
            d = _tail_lower_step(a, start, m_a, target)
            if side == 0:
                d = _tail_lower_step(a, d, m_a, target)
            lower_before = _tail_lower_step(a, d, m_a, target)
            lower_d = _tail_lower_step(a, lower_before, m_a, target)
        new_d = upper_d if upper else lower_d
        d = upper_before if upper else lower_before
        kind = (not narrow) & (a >= 1.0) & no_b
    x = min(max(c_low + s * new_d, c_low), c_high)
    # (& and | rather than and/or here: a short circuit is a branch, which would stop the loop vectorizing)
    held = (kind & (abs(new_d - d) <= _STEP_TOLERANCE * max(new_d, abs(c_low) / s)) & (new_d > 0.0)
            & (new_d < w) & (c_p > TINY) & (c_q > TINY) & (s > 0.0) & (s < math.inf) & (abs(a) < 1e300)
            & ((abs(b) < 1e300) | no_b))
    return -x if flip else x, held


# -- the float32 pass: the value to the dtype's need, the rest left to the float64 pass's loops --------------------
# A float32 result needs its float64 value within a small part of a float32 ulp, not exact to float64 rounding:
# these loops skip the refinements the float64 loops take for that (Phi^-1's Halley step, a narrow interval's
# further steps and their convergence test) and hold an element only where a bound on what is left says that its
# float32 rounding is the exact value's (the straddling loops) or that it is within SINGLE_TOLERANCE of the exact
# value, relatively (the narrow one); an element they do not hold (a value whose offset from loc or from a bound
# cancels, an interval too wide for one step) the float64 pass's loops take again.

_UNIT_ROUNDOFF = 2.0 ** -53
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
def rounding_certain_from_mass(x, t, loc, s, relative_mass_error, root_error):
    """Whether x = loc + s t (then clamped to the bounds, which moves it only towards the exact value) rounds to
    float32 as the exact value does, t being Phi^-1 of a mass (of 1 less it past 1/2) within
    ``relative_mass_error`` of min(m, 1 - m), at most a thousandth, and relatively within ``root_error`` of Phi^-1
    at the computed mass: t moves by MILLS_BOUND times the former and the latter |t|, x by s times that and
    its own two roundings (tnlib.distributions._cdf_float32.float32_rounding_certain decides)."""
    x_error = (s * (MILLS_BOUND * relative_mass_error + (root_error + _CLAMP_ROUNDING) * abs(t))
               + 2.0 * _UNIT_ROUNDOFF * (abs(loc) + s * abs(t)))
    return float32_rounding_certain(abs(x), x_error)


# exp(r) for |r| <= ln 2 / 2 by its Taylor series to r^12/12! (the remainder is below 2.4e-16 of it), and erfcx's
# expansion (tnlib.distributions._vector_math's) cut at degree 22 in Chebyshev's basis (the terms dropped sum to
# 1.3e-16 against P >= 1): the straddling element's tails with no division but one for both
_EXP_TAYLOR = tuple(1.0 / math.factorial(n) for n in range(13))
_TAILS_ERFCX = tuple(float(c) for c in chebyshev.cheb2poly(chebyshev.poly2cheb(ERFCX_POLYNOMIAL)[:23]))


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def exp_taylor(x):
    """exp(x) for x <= 0 within a few ulps (0 below -708): fdlibm's reduction to r = x - k ln 2, then _EXP_TAYLOR
    (tnlib.distributions._vector_math's exp divides once)."""
    clamped = max(x, _EXP_FLOOR)
    shifted = clamped * _INV_LN2 + _ROUNDING_SHIFT
    k_float = shifted - _ROUNDING_SHIFT  # the nearest integer to x / ln 2
    k = _bits(shifted) - _bits(_ROUNDING_SHIFT)
    r = (clamped - k_float * _LN2_HI) - k_float * _LN2_LO
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
