"""Compiled per-element kernels (numba) for the CDF and the inverse CDF of the Truncated Normal on the CPU, forward
and backward, and their loops over a batch (serial and parallel): what a batch below the vectorized passes'
thresholds takes alone, what those passes (tnlib.distributions._cdf_passes) leave to it, and the reference the
passes are tested against; tnlib.distributions._cdf_dispatch chooses between them.

The torch route's formulas (tnlib.distributions._statistics: _cdf_canonical, _sf_canonical, _cdf_grads and
_frame_cdf_slope), one pass per element in its own regime, float64 inside: in the frame the mass below the value is
the frame integral J(a, d) over M0 (a difference of erf's near the mode), the mass above it a frame integral from
the value (a mirrored element's CDF is that survival function, which keeps a tiny value's relative accuracy);
a straddling element's mass below a value on its lower bound's side of loc is a difference of Phi (within a short
stretch of the bound the frame integral from it), below one past loc the masses on either side of loc, a sum of
erf's (the mass above the value likewise, mirrored). The frame mass takes 16 Gauss-Legendre nodes on every element
(the torch route takes fewer where the batch's widest exponent range allows: the same value to rounding). The
inverse CDF inverts Phi on a straddling element and, in the frame, takes safeguarded Newton steps on the mass below
the value (past the median, on the logarithm of the mass above it) from a closed-form start; its gradients follow
from the implicit function theorem."""
from __future__ import annotations

import math

import numba
import numpy as np

from tnlib.distributions._icdf_vector import (
    ACKLAM_A,
    ACKLAM_B,
    ACKLAM_C,
    ACKLAM_D,
    ACKLAM_TAIL_END,
    TINY_LOG,
    _frame_head_spread,
)
from tnlib.distributions._kernels import _mills_element, _ndtr_element
from tnlib.distributions._moment_kernels import (
    _EPS,
    _WIDE_PANELS,
    _exact_state,
    _frame_moments_element,
    _is_narrow,
)
from tnlib.distributions._regimes import _LOG_SQRT_2PI, _SQRT_2PI, _SQRT_HALF
from tnlib.kernel_cache import cache_by_folder_sources

cache_by_folder_sources(__file__)  # before the first njit(cache=True): tnlib.kernel_cache says why


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _frame_mass_element(a, d, nodes, weights):
    """J(a, d) by one panel of Gauss-Legendre, cut where the integrand is below exp(-45) of its peak (a >= 0)."""
    top = min(d, 90.0 / (math.sqrt(a * a + 90.0) + a)) if a >= 0 else d
    mass = 0.0
    for j in range(nodes.shape[0]):
        s = top * nodes[j]
        mass += math.exp(-s * (a + 0.5 * s)) * weights[j]
    return mass * top


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _frame_integral_element(a, d, table, nodes, weights):
    """J(a, d) = int_0^d exp(-a r - r^2/2) dr for a >= 0 or narrow (a, d), d possibly infinite (_frame_integral)."""
    if _is_narrow(a, d):
        return _frame_mass_element(a, d, nodes, weights)
    if a < 0:  # wide with a < 0 happens only for moderate |a|: a difference of Phi's
        return (_ndtr_element(a + d) - _ndtr_element(a)) * math.exp(0.5 * a * a + _LOG_SQRT_2PI)
    closed = _mills_element(a, table)
    if not math.isinf(d):
        closed -= math.exp(-d * (a + 0.5 * d)) * _mills_element(a + d, table)
    return closed


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _straddle_mass_element(x, above, t, a, b, c_low, c_high, scale, log_z, p_a, p_b, nodes, weights):
    """The mass below x (with ``above``, above it) of a straddling element, relatively exact (_straddle_mass)."""
    twice_z = math.erf(-a * _SQRT_HALF) + math.erf(b * _SQRT_HALF)  # (the vectorized pass's, to its rounding)
    if above:  # the mass above x is the mass below -t of the element mirrored about loc
        t, a, length, p_a = -t, -b, (c_high - x) / scale, p_b
    else:
        length = (x - c_low) / scale
    z = math.exp(log_z)
    if t > 0:  # the masses on either side of loc, a sum: 1 less the mass beyond x would cancel as a and t near 0
        return (math.erf(-a * _SQRT_HALF) + math.erf(t * _SQRT_HALF)) / twice_z
    if not math.isinf(a) and _is_narrow(a, length):
        return p_a * _frame_mass_element(a, length, nodes, weights)
    return (_ndtr_element(t) - _ndtr_element(a)) / z


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _canonical_cdf(x, survival, c_loc, c_low, c_high, scale, a, b, frame, log_norm, first, p_a, p_b, table, nodes,
                   weights):
    """The canonical CDF (or, with ``survival``, 1 - CDF) at x, clamped into the support."""
    x = min(max(x, c_low), c_high)
    if frame:
        d = (x - c_low) / scale
        if survival:
            rest = (c_high - x) / scale
            value = (_frame_integral_element(a + d, rest, table, nodes, weights)
                     * math.exp(-d * (a + 0.5 * d) - log_norm))
        elif 0.0 <= a <= 1.0 and 8.0 * d >= a:  # near the mode: the difference of erf's cancels at most 3 bits
            log_z = -0.5 * a * a - _LOG_SQRT_2PI + log_norm
            value = 0.5 * (math.erf((a + d) * _SQRT_HALF) - math.erf(a * _SQRT_HALF)) / math.exp(log_z)
        else:
            value = _frame_integral_element(a, d, table, nodes, weights) * math.exp(-log_norm)
    else:
        t = (x - c_loc) / scale
        value = _straddle_mass_element(x, survival, t, a, b, c_low, c_high, scale, log_norm, p_a, p_b, nodes,
                                       weights)
    return min(max(value, 0.0), 1.0)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _cdf_element(value, loc, scale, low, high, table, nodes, weights):
    (flip, c_loc, c_low, c_high, a, b, w, frame, log_norm, first, p_a, p_b) = _exact_state(
        loc, scale, low, high, table, nodes, weights)
    # a mirrored element's CDF is the canonical survival function at the mirrored value, computed as such
    x = -value if flip else value
    return _canonical_cdf(x, flip, c_loc, c_low, c_high, scale, a, b, frame, log_norm, first, p_a, p_b, table,
                          nodes, weights)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _frame_slope_element(x, d, t, cdf, a, w, c_high, scale, log_m0, d_mean, nodes, weights):
    """dF/da at fixed d and w of a frame element (_frame_cdf_slope): F (D - D_head) at or below the mean, else
    (1 - F) (d - D + D_tail) with 1 - F from the tail's own mass."""
    if 0.0 < d <= d_mean:
        _, d_head, _, _ = _frame_moments_element(a, d, _WIDE_PANELS, nodes, weights)
        return cdf * (d_mean - d_head)
    if d > d_mean and x < c_high:
        m0_tail, d_tail, _, _ = _frame_moments_element(t, (c_high - x) / scale, _WIDE_PANELS, nodes, weights)
        return m0_tail * math.exp(-d * (a + 0.5 * d) - log_m0) * (d - d_mean + d_tail)
    return 0.0


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _straddle_loc_slope_element(t, d, rest, a, b, cdf, sf, mean_t, p_a, p_b, log_z):
    """F_t + F_a + F_b = phi(t)/Z - p_a (1 - F) - p_b F of a straddling element (minus s times dF/dloc), which is
    F (E[t] - E_head) up to the mean and (1 - F) (E_tail - E[t]) past it, E_head and E_tail the means of the parts
    below and above the value: as (p_a - p_b) F - (p_a - phi(t)/Z), or (p_b - p_a) (1 - F) + phi(t)/Z - p_b, with
    each difference of densities as p expm1 of the difference of their exponents where those are close (phi(t)
    and p_a both near phi(0) beside a bound just under loc would cancel)."""
    f_t = math.exp(-0.5 * t * t - _LOG_SQRT_2PI - log_z)
    if t <= mean_t:
        exponent = -0.5 * d * (t + a)  # log phi(t) - log phi(a)
        drop = -p_a * math.expm1(exponent) if abs(exponent) < 1.0 else p_a - f_t
        return mean_t * cdf - drop
    exponent = 0.5 * rest * (b + t)  # log phi(t) - log phi(b)
    rise = p_b * math.expm1(exponent) if abs(exponent) < 1.0 else f_t - p_b
    return rise - mean_t * sf


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _narrow_slopes_element(d, t, rest, a, cdf, sf, nodes, weights):
    """(F_a, minus s dF/ds) of a frame element on a narrow interval, the value inside it: F (1 - F) times the distance
    between the means of the parts below and above the value, and F (1 - F) (E_tail[t^2] - E_head[t^2]), each part's
    second moment from its mean and variance, by one panel of Gauss-Legendre each (the state's quadrature on the
    interval; the wide intervals' F_a takes eight on one part). a F_a + d f(d) - w f(w) F would cancel: next to the
    upper bound its last two terms are equal."""
    _, head_mean, head_var, _ = _frame_moments_element(a, d, 1, nodes, weights)
    _, tail_mean, tail_var, _ = _frame_moments_element(t, rest, 1, nodes, weights)
    apart = d - head_mean + tail_mean
    both = cdf * sf
    return both * apart, both * (apart * (a + head_mean + t + tail_mean) + tail_var - head_var)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _narrow_tail(a, w, t, rest, no_b):
    """Whether an element on a wide interval has a narrow stretch from its value at t, ``rest`` scales long, to its
    upper bound (where _tail_spread_element takes minus s dF/ds)."""
    return (not no_b) and rest > 0.0 and not _is_narrow(a, w) and _is_narrow(t, rest)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _tail_spread_element(frame, a, b, w, d, t, rest, f_a, sf, p_a, p_b, nodes, weights):
    """Minus s dF/ds of an element _narrow_tail holds for, past the median, from its tail's moments (one panel of
    Gauss-Legendre) and 1 - F, in the frame a F_a + (1 - F) (E_tail[r t] - 1 + w p_b) with r = t - a, straddling
    (1 - F) (E_tail[t^2] - E[t^2]): the terms in d and w (t and b straddling) of the other form are equal next to
    the upper bound (tnlib.distributions._statistics._tail_spread derives both)."""
    _, tail_mean, tail_var, _ = _frame_moments_element(t, rest, 1, nodes, weights)
    if frame:
        return a * f_a + sf * ((d + tail_mean) * (t + tail_mean) + tail_var - 1.0 + w * p_b)
    above = t + tail_mean
    return sf * (above * above + tail_var - _second_moment_element(a, b, p_a, p_b))


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _second_moment_element(a, b, p_a, p_b):
    """E[t^2] = 1 + a p_a - b p_b of a straddling element (terms that add), p_a and p_b 0 without the bound."""
    return 1.0 + (0.0 if p_a == 0.0 else a * p_a) - (0.0 if p_b == 0.0 else b * p_b)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _narrow_head(a, d, no_a):
    """Whether a straddling element's stretch from its lower bound at a to its value, d scales, is narrow (where
    _head_spread_element takes minus s dF/ds)."""
    return (not no_a) and d > 0.0 and _is_narrow(a, d)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _head_spread_element(a, b, d, cdf, p_a, p_b, nodes, weights):
    """Minus s dF/ds of a straddling element _narrow_head holds for, short of the median: F (E[t^2] - E_head[t^2])
    from the head's moments (one panel), where t f_t and a p_a (1 - F) would cancel next to the lower bound."""
    _, head_mean, head_var, _ = _frame_moments_element(a, d, 1, nodes, weights)
    above = a + head_mean
    return cdf * (_second_moment_element(a, b, p_a, p_b) - above * above - head_var)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _cdf_gradient_element(value, loc, scale, low, high, table, nodes, weights):
    """dF / d(value, loc, scale, low, high) of one element, 0 outside the support (_cdf_grads). F_low = -p_a (1 - F)
    and F_high = -p_b F in either regime, 1 - F formed as the mass above the value where F passes 1/2."""
    (flip, c_loc, c_low, c_high, a, b, w, frame, log_norm, first, p_a, p_b) = _exact_state(
        loc, scale, low, high, table, nodes, weights)
    c_value = -value if flip else value
    if c_value < c_low or c_value > c_high:
        return 0.0, 0.0, 0.0, 0.0, 0.0
    cdf = _canonical_cdf(c_value, False, c_loc, c_low, c_high, scale, a, b, frame, log_norm, first, p_a, p_b,
                         table, nodes, weights)
    sf = 1.0 - cdf
    if cdf > 0.5:
        sf = _canonical_cdf(c_value, True, c_loc, c_low, c_high, scale, a, b, frame, log_norm, first, p_a, p_b,
                            table, nodes, weights)
    x = c_value
    d = (x - c_low) / scale
    t = (x - c_loc) / scale
    no_a, no_b = p_a == 0.0, p_b == 0.0
    f_a = 0.0 if no_a else -p_a * sf
    f_b = 0.0 if no_b else -p_b * cdf
    rest = (c_high - x) / scale
    if frame:
        fr_d = math.exp(-d * (a + 0.5 * d) - log_norm)
        if _is_narrow(a, w) and d > 0.0 and x < c_high:
            fr_a, spread = _narrow_slopes_element(d, t, rest, a, cdf, sf, nodes, weights)
        else:
            fr_a = _frame_slope_element(x, d, t, cdf, a, w, c_high, scale, log_norm, first, nodes, weights)
            spread = a * fr_a + d * fr_d + (0.0 if no_b else w * f_b)
        g_value, g_loc = fr_d, -fr_a
    else:
        f_t = math.exp(-0.5 * t * t - _LOG_SQRT_2PI - log_norm)
        fr_a = 0.0
        spread = t * f_t + (0.0 if no_a else a * f_a) + (0.0 if no_b else b * f_b)
        g_value = f_t
        g_loc = -_straddle_loc_slope_element(t, d, rest, a, b, cdf, sf, first, p_a, p_b, log_norm)
    if cdf > 0.5 and _narrow_tail(a, w, t, rest, no_b):
        spread = _tail_spread_element(frame, a, b, w, d, t, rest, fr_a, sf, p_a, p_b, nodes, weights)
    elif not frame and cdf <= 0.5 and _narrow_head(a, d, no_a):
        spread = _head_spread_element(a, b, d, cdf, p_a, p_b, nodes, weights)
    g_value, g_loc, g_scale, g_low, g_high = (g_value / scale, g_loc / scale, -spread / scale, f_a / scale,
                                              f_b / scale)
    if flip:  # odd under the mirror
        return g_value, g_loc, -g_scale, g_high, g_low
    return g_value, g_loc, g_scale, g_low, g_high


# ----------------------------------------------------------------------------------------------------------------
# The inverse CDF (icdf, and rsample through it): _icdf_canonical and _ICDF's gradients, per element.
# ----------------------------------------------------------------------------------------------------------------
# Phi^-1 and erf^-1, which numba lacks: Acklam's rational approximation (tnlib.distributions._icdf_vector's
# constants) and one Halley step on Phi(x) - p through erfc, which is relatively exact in the lower tail; p above 1/2
# is inverted as -Phi^-1(1 - p) (1 - p is exact there). erf^-1 takes Newton steps on erf from the same start.

@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _ndtri_lower(p):
    """Phi^-1(p) for 0 < p <= 1/2."""
    a, b, c, d = ACKLAM_A, ACKLAM_B, ACKLAM_C, ACKLAM_D
    if p < ACKLAM_TAIL_END:
        q = math.sqrt(-2.0 * math.log(p))
        x = ((((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5])
             / ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0))
    else:
        q = p - 0.5
        r = q * q
        x = ((((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q
             / (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0))
    u = (_ndtr_element(x) - p) * _SQRT_2PI * math.exp(0.5 * x * x)
    return x - u / (1.0 + 0.5 * x * u)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _ndtri_element(p):
    if p <= 0.0:
        return -math.inf
    if p >= 1.0:
        return math.inf
    return _ndtri_lower(p) if p <= 0.5 else -_ndtri_lower(1.0 - p)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _erfinv_element(v):
    if v <= -1.0:
        return -math.inf
    if v >= 1.0:
        return math.inf
    x = _ndtri_element(0.5 * (v + 1.0)) * _SQRT_HALF
    for _ in range(3):
        x -= (math.erf(x) - v) / (1.1283791670955126 * math.exp(-x * x))
    return x


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _frame_icdf_start_element(a, b, w, c_low, scale, p, q, m0, p_b, log_z, table):
    """(d, solved) as _frame_icdf_start: a starting d of a frame element, and whether it is already the answer."""
    use_upper = p > 0.5
    z = math.exp(log_z)
    ea = math.erf(a * _SQRT_HALF)
    eb = 1.0 if math.isinf(b) else math.erf(b * _SQRT_HALF)
    right = a >= 0 and not _is_narrow(a, w)
    near_mode = False
    near_loc = False
    representable = False
    t = 0.0
    if right:
        v = eb - 2.0 * q * z if use_upper else ea + 2.0 * p * z
        near_mode = v <= 0.5
        if near_mode:
            t = _erfinv_element(v) / _SQRT_HALF
            representable = True
        else:
            if use_upper:
                k = m0 * (q + (0.0 if math.isinf(b) else p_b * _mills_element(b, table)))
            else:
                k = _mills_element(a, table) - p * m0
            log_y = (math.log(k) if k > 0 else -math.inf) - 0.5 * a * a - _LOG_SQRT_2PI
            representable = log_y > TINY_LOG and k > 0
            t = -_ndtri_element(math.exp(log_y if representable else -1.0))
    elif abs(a) <= 0.5 and abs(b) <= 0.5:  # a narrow interval within half a scale of loc
        near_loc = True
        v_loc = eb - q * (eb - ea) if use_upper else ea + p * (eb - ea)
        t = _erfinv_element(v_loc) / _SQRT_HALF
        representable = True
    d = min(max(t - a, 0.0), w)
    if not representable:  # the truncated exponential with the log-density's slope
        rate = a if right else a + 0.5 * (0.0 if math.isinf(w) else w)
        if abs(rate) < 1e-8:
            rate = 1e-8
        d_exp = -math.log1p(p * math.expm1(-rate * w)) / rate
        if math.isfinite(d_exp):
            d = min(max(d_exp, 0.0), w)
        else:
            d = 1.0 / max(rate, 1e-3) if math.isinf(w) else 0.5 * w
    x = c_low + scale * d
    if near_loc:
        off_by = 2.0 * (abs(ea) + abs(eb))
    else:
        off_by = a + d if near_mode else a + d + 1.25
    within = off_by * scale <= 8.0 * max(abs(x), abs(c_low))
    return d, representable and within and 0.0 < d < w


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _canonical_icdf(p, q, c_loc, c_low, c_high, scale, a, b, w, frame, log_norm, p_b, table, nodes, weights):
    """The canonical value with canonical CDF p and survival q (each exact), as _icdf_canonical."""
    if not frame:  # invert Phi on whichever tail keeps the argument small
        z = math.exp(log_norm)
        lower_mass = _ndtr_element(a) + p * z
        if lower_mass <= 0.5:
            t = _ndtri_element(lower_mass)
        else:
            t = -_ndtri_element(_ndtr_element(-b) + q * z)
        return min(max(c_loc + scale * min(max(t, a), b), c_low), c_high)
    m0 = math.exp(log_norm)
    log_z = -0.5 * a * a - _LOG_SQRT_2PI + log_norm
    d, solved = _frame_icdf_start_element(a, b, w, c_low, scale, p, q, m0, p_b, log_z, table)
    if not solved:
        # safeguarded Newton steps on the mass below d (or above it, past the median, on its logarithm)
        use_upper = p > 0.5
        rate = max(a, 1e-3)
        lo, hi = 0.0, w
        target = (q if use_upper else p) * m0
        for _ in range(60):
            dens = math.exp(-d * (a + 0.5 * d))
            if use_upper:
                mass = _frame_integral_element(a + d, max(w - d, 0.0), table, nodes, weights) * dens
                too_high = mass < target
            else:
                mass = _frame_integral_element(a, d, table, nodes, weights)
                too_high = mass > target
            if too_high:
                hi = min(hi, d)
            else:
                lo = max(lo, d)
            new_d = d + math.log(mass / target) * mass / dens if use_upper else d - (mass - target) / dens
            converged = math.isfinite(new_d) and abs(new_d - d) <= 4.0 * _EPS * new_d
            if not converged and (not math.isfinite(new_d) or new_d <= lo or new_d >= hi):
                new_d = 2.0 * lo + 1.0 / rate if math.isinf(hi) else 0.5 * (lo + hi)
            d = new_d
            if converged:
                break
    return min(max(c_low + scale * d, c_low), c_high)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _icdf_element(prob, loc, scale, low, high, table, nodes, weights):
    (flip, c_loc, c_low, c_high, a, b, w, frame, log_norm, first, p_a, p_b) = _exact_state(
        loc, scale, low, high, table, nodes, weights)
    # a mirrored element's canonical probability is 1 - p, and its complement p itself, each exact
    c_p, c_q = (1.0 - prob, prob) if flip else (prob, 1.0 - prob)
    x = _canonical_icdf(c_p, c_q, c_loc, c_low, c_high, scale, a, b, w, frame, log_norm, p_b, table, nodes, weights)
    return -x if flip else x


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _icdf_gradient_element(prob, loc, scale, low, high, table, nodes, weights):
    """dx / d(p, loc, scale, low, high) of one element, by the implicit function theorem (_ICDF.backward)."""
    (flip, c_loc, c_low, c_high, a, b, w, frame, log_norm, first, p_a, p_b) = _exact_state(
        loc, scale, low, high, table, nodes, weights)
    c_p, c_q = (1.0 - prob, prob) if flip else (prob, 1.0 - prob)
    x = _canonical_icdf(c_p, c_q, c_loc, c_low, c_high, scale, a, b, w, frame, log_norm, p_b, table, nodes, weights)
    d = (x - c_low) / scale
    t = (x - c_loc) / scale
    log_s = math.log(scale)
    if frame:
        log_pdf = -log_s - log_norm - 0.5 * d * (d + 2.0 * a)
    else:
        log_pdf = -log_s - _LOG_SQRT_2PI - 0.5 * t * t - log_norm
    # dx/dp = 1/pdf; dx/dlow = (1 - F) pdf(low)/pdf(x); dx/dhigh = F pdf(high)/pdf(x), as logarithms
    dx_dp = math.exp(-log_pdf)
    log_pa = (math.log(p_a) if p_a > 0 else -math.inf) - log_s
    log_pb = (math.log(p_b) if p_b > 0 else -math.inf) - log_s
    dx_dl = math.exp((math.log(c_q) if c_q > 0 else -math.inf) + log_pa - log_pdf)
    dx_du = math.exp((math.log(c_p) if c_p > 0 else -math.inf) + log_pb - log_pdf)
    dx_dl = 0.0 if math.isnan(dx_dl) else dx_dl
    dx_du = 0.0 if math.isnan(dx_du) else dx_du
    narrow = frame and _is_narrow(a, w) and 0.0 < d and x < c_high
    if narrow and dx_dp > 0 and math.isfinite(dx_dp):  # on a narrow interval both from the parts' moments
        f_a, spread = _narrow_slopes_element(d, t, (c_high - x) / scale, a, c_p, c_q, nodes, weights)
        dx_dloc, dx_ds = f_a * dx_dp / scale, spread * dx_dp / scale
    else:
        usable = dx_dp > 0 and math.isfinite(dx_dp)
        # past the median with a narrow tail, the frame's F_a past the mean and minus s dF/ds from the tail's
        # moments at p itself (the tail's mass at the rounded x carries x's rounding, relatively as large as the
        # tail is short; d - w dx/dhigh and t - b dx/dhigh cancel next to the upper bound)
        rest = (c_high - x) / scale
        tail = usable and c_p > 0.5 and _narrow_tail(a, w, t, rest, p_b == 0.0)
        f_a = 0.0
        if frame and usable:  # dx/dloc = F_a / (s pdf(x)), not 1 - dx/dlow - dx/dhigh
            if tail and d > first:
                _, tail_mean, _, _ = _frame_moments_element(t, rest, 1, nodes, weights)
                f_a = c_q * (d - first + tail_mean)
            else:
                f_a = _frame_slope_element(x, d, t, c_p, a, w, c_high, scale, log_norm, first, nodes, weights)
            dx_dloc = f_a * dx_dp / scale
        else:
            dx_dloc = 1.0 - dx_dl - dx_du
        if tail:
            dx_ds = _tail_spread_element(frame, a, b, w, d, t, rest, f_a, c_q, p_a, p_b, nodes, weights) * dx_dp / scale
        elif usable and c_p <= 0.5 and _narrow_head(a, d, p_a == 0.0):
            # short of the median next to the lower bound d (t - a dx/dlow) carries x's rounding: from the head's
            # moments at p itself
            if frame:
                _, head_mean, head_var, _ = _frame_moments_element(a, d, 1, nodes, weights)
                spread = c_p * _frame_head_spread(a, first, head_mean, head_var, 0.0 if p_b == 0.0 else w * p_b)
            else:
                spread = _head_spread_element(a, b, d, c_p, p_a, p_b, nodes, weights)
            dx_ds = spread * dx_dp / scale
        elif frame:
            dx_ds = a * dx_dloc + d - (0.0 if dx_du == 0.0 else w * dx_du)
        else:
            dx_ds = t - (0.0 if dx_dl == 0.0 else a * dx_dl) - (0.0 if dx_du == 0.0 else b * dx_du)
    if flip:  # odd under the mirror
        return dx_dp, dx_dloc, -dx_ds, dx_du, dx_dl
    return dx_dp, dx_dloc, dx_ds, dx_dl, dx_du


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _cdf_serial(inverse, value, loc, scale, low, high, out, table, nodes, weights):
    """The cdf at ``value`` or, with ``inverse``, the icdf of ``value`` of each element by the per-element kernel
    alone (the reference the vectorized passes are tested against)."""
    for i in range(out.shape[0]):
        out[i] = _cdf_or_icdf(inverse, i, value, loc, scale, low, high, table, nodes, weights)


@numba.njit(cache=True, parallel=True, error_model="numpy", fastmath=False, forceinline=False)
def _cdf_parallel(inverse, value, loc, scale, low, high, out, table, nodes, weights):
    for i in numba.prange(out.shape[0]):
        out[i] = _cdf_or_icdf(inverse, i, value, loc, scale, low, high, table, nodes, weights)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _cdf_or_icdf(inverse, i, value, loc, scale, low, high, table, nodes, weights):
    element = (np.float64(value[i]), np.float64(loc[i]), np.float64(scale[i]), np.float64(low[i]),
               np.float64(high[i]))
    if inverse:
        return _icdf_element(*element, table, nodes, weights)
    return _cdf_element(*element, table, nodes, weights)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _write_cdf_gradients(inverse, i, grad, value, loc, scale, low, high, outs, table, nodes, weights):
    element = (np.float64(value[i]), np.float64(loc[i]), np.float64(scale[i]), np.float64(low[i]),
               np.float64(high[i]))
    if inverse:
        derivatives = _icdf_gradient_element(*element, table, nodes, weights)
    else:
        derivatives = _cdf_gradient_element(*element, table, nodes, weights)
    gr = np.float64(grad[i])
    for k in range(5):
        if outs[k].shape[0] > 0:
            outs[k][i] = gr * derivatives[k]


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _cdf_gradients_serial(inverse, grad, value, loc, scale, low, high, outs, table, nodes, weights):
    """grad times each derivative of the cdf or, with ``inverse``, the icdf; an output of length 0 is not wanted
    and not written."""
    for i in range(grad.shape[0]):
        _write_cdf_gradients(inverse, i, grad, value, loc, scale, low, high, outs, table, nodes, weights)


@numba.njit(cache=True, parallel=True, error_model="numpy", fastmath=False, forceinline=False)
def _cdf_gradients_parallel(inverse, grad, value, loc, scale, low, high, outs, table, nodes, weights):
    for i in numba.prange(grad.shape[0]):
        _write_cdf_gradients(inverse, i, grad, value, loc, scale, low, high, outs, table, nodes, weights)

