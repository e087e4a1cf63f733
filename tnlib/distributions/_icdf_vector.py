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

A float32 result needs less: tnlib.distributions._icdf_float32's loops.

Like tnlib.distributions._vector_math's functions, these are compiled once each and inlined into the caller's loop
by LLVM (``forceinline``, which that module's docstring explains): the forward and the gradients' loops of either
dtype share one compiled icdf_element.
"""
from __future__ import annotations

import math

import numba
import numpy as np

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
from tnlib.distributions._regimes import _LOG_SQRT_2PI, _SQRT_2PI, _SQRT_HALF
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
TINY = float(np.finfo(np.float64).tiny)
TINY_LOG = math.log(TINY)
# Phi^-1's root from which Phi(x) - p is formed by erf's series (x / sqrt 2 within its half-width; 1/2 - p is exact)
_NEAR_ZERO = 0.5
# erf'(0) = 2/sqrt(pi), the Newton steps' slope
_ERF_SLOPE = 1.1283791670955126
# a derivative's logarithm beyond which the vector exp no longer holds it (it clamps at 709)
_LOG_DERIVATIVE_END = 700.0



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
    u = residual * _SQRT_2PI * _vector_math.exp(0.5 * x * x)
    return x - u / (1.0 + 0.5 * x * u)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _ndtri(p):
    """Phi^-1(p) for 0 < p < 1 (min(p, 1 - p) a normal float), as -Phi^-1(1 - p) above 1/2 (1 - p is exact there)."""
    lower = p <= 0.5
    x = ndtri_lower(p if lower else 1.0 - p)
    return x if lower else -x


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
