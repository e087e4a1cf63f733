"""Compiled per-element kernels (numba) for the CDF and the inverse CDF of the Truncated Normal on the CPU, forward
and backward.

The torch route's formulas (tnlib.distributions._statistics: _cdf_canonical, _sf_canonical, _cdf_grads and
_frame_cdf_slope), one pass per element in its own regime, float64 inside: in the frame the mass below the value is
the frame integral J(a, d) over M0 (a difference of erf's near the mode), the mass above it a frame integral from
the value (a mirrored element's CDF is that survival function, which keeps a tiny value's relative accuracy);
a straddling element's mass below a value on its lower bound's side of loc is a difference of Phi (within a short
stretch of the bound the frame integral from it), below one past loc the masses on either side of loc, a sum of
erf's (the mass above the value likewise, mirrored). The frame mass takes 16 Gauss-Legendre nodes on every element
(the torch route takes fewer where the batch's widest exponent range allows: the same value to rounding).

A CPU call of ``cdf`` on a batch of _CDF_PASS_FROM elements or more runs first the vectorized pass of
tnlib.distributions._cdf_vector over every element (the same masses in closed form and, on a narrow stretch, by a
Hermite series: straight-line code, four elements at once under AVX2, eight under AVX-512; forward, one loop per
regime that forms the value alone), forward or backward, and then this
module's per-element kernel on the elements that pass does not hold for: a value outside the support, the far tails (a
straddling element's value 36 scales or more from loc, a frame element's density below exp(-700) of phi at its bound), a
stretch too wide for the series with a negative slope (next to a narrow interval) and a NaN: none of the common regimes,
and forward 0.3% of the tests' batch spread over every regime from 1e-6 to 1e3 scales wide and 40 scales either side.
The gradients' pass runs on one thread (the forward's splits among torch's threads). A smaller batch takes the
per-element kernel alone, whose compile is a small part of the pass's nine kinds of loops.

A float32 batch's cdf takes the float32 pass instead (tnlib.distributions._cdf_float32): a chunk whose elements all
straddle loc, or are all narrow intervals, by one loop over the arguments with special functions exact to about
1e-12 (no gathering, a few divisions an element), the other chunks by the pass above; the result is the float64
route's rounded to float32 but for an ulp on a few elements in 10^5 (that module says why).

A CPU call of ``icdf`` (and so of ``rsample``) on a batch of _ICDF_PASS_FROM elements or more likewise runs first
the vectorized pass of tnlib.distributions._icdf_vector, the per-element kernel's closed-form inversions (Phi^-1 of
a straddling element, erf^-1 near a frame element's mode, Phi^-1 of a frame tail's mass); forward, the elements
it leaves, narrow intervals (which skip the closed forms) and one-sided tails from about 37 scales out, take its
Halley steps (icdf_by_halley: vectorized, each kind gathered apart, two steps on a narrow interval and all four for
those two leave); the per-element kernel takes what is still left (a value whose offset from the bound would
cancel, a value that rounds to a bound, probabilities of 0 or 1 and NaNs: none of the common regimes) and,
backward, every element the closed forms leave, 39% of a batch spread over every regime from 1e-6 to 1e3 scales
wide and 40 scales either side. A smaller batch, forward and backward, takes the per-element kernel alone, so that
its first call does not wait for the pass's compile. A float32 batch's pass (_icdf_single_block) first takes the
float32 loops of _icdf_vector, which stop where the value is within a sixty-fourth of a float32 ulp (Phi^-1
unrefined, one Halley step on a narrow interval), over a chunk's elements in place where most are of one kind;
what they do not hold takes the float64 loops above."""
from __future__ import annotations

import math

import numba
import numpy as np
import torch
from numba.core import types
from numba.extending import overload

from tnlib.distributions._cdf_float32 import (
    NARROW_CHUNK,
    STRADDLING_CHUNK,
    coarse_chunk_kind,
    narrow_chunk_coarse,
    straddling_chunk_coarse,
)
from tnlib.distributions._cdf_vector import (
    CDF_KINDS,
    MIRRORED_NARROW_INTERVAL,
    MIRRORED_NARROW_SIDE,
    MIRRORED_WIDE_SIDE,
    NARROW_HEAD,
    NARROW_INTERVAL,
    NARROW_SIDE,
    PAST_LOC,
    WIDE_HEAD,
    WIDE_SIDE,
    WIDTH_NARROW,
    WIDTH_WIDE,
    _copy_by_order,
    canonical_frame,
    cdf_element,
    classify_cdf,
    frame_cdf,
    gather_by_kind,
    straddling_cdf,
)
from tnlib.distributions._icdf_vector import (
    ACKLAM_A,
    ACKLAM_B,
    ACKLAM_C,
    ACKLAM_D,
    ACKLAM_TAIL_END,
    CLOSED,
    FAR_ITERATED,
    ICDF_KINDS,
    NARROW_ITERATED,
    SQRT_2PI,
    STRADDLING,
    TINY_LOG,
    _frame_head_spread,
    classify_icdf,
    icdf_by_halley,
    icdf_element,
    icdf_kind,
    narrow_icdf_single,
    straddling_icdf_single,
)
from tnlib.distributions._kernels import (
    _BLOCK,
    _CHUNK,
    _ERFCX,
    _NODES,
    _WEIGHTS,
    _flat,
    _mills_element,
    _ndtr_element,
    _threads,
)
from tnlib.distributions._moment_kernels import (
    _EPS,
    _PARALLEL_FROM,
    _WIDE_PANELS,
    _exact_state,
    _frame_moments_element,
    _is_narrow,
)
from tnlib.distributions._regimes import _LOG_SQRT_2PI, _SQRT_HALF
from tnlib.kernel_cache import cache_by_folder_sources

cache_by_folder_sources(__file__)  # before the first njit(cache=True): tnlib.kernel_cache says why


@numba.njit(cache=True, error_model="numpy")
def _frame_mass_element(a, d, nodes, weights):
    """J(a, d) by one panel of Gauss-Legendre, cut where the integrand is below exp(-45) of its peak (a >= 0)."""
    top = min(d, 90.0 / (math.sqrt(a * a + 90.0) + a)) if a >= 0 else d
    mass = 0.0
    for j in range(nodes.shape[0]):
        s = top * nodes[j]
        mass += math.exp(-s * (a + 0.5 * s)) * weights[j]
    return mass * top


@numba.njit(cache=True, error_model="numpy")
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


@numba.njit(cache=True, error_model="numpy")
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


@numba.njit(cache=True, error_model="numpy")
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


@numba.njit(cache=True, error_model="numpy")
def _cdf_element(value, loc, scale, low, high, table, nodes, weights):
    (flip, c_loc, c_low, c_high, a, b, w, frame, log_norm, first, p_a, p_b) = _exact_state(
        loc, scale, low, high, table, nodes, weights)
    # a mirrored element's CDF is the canonical survival function at the mirrored value, computed as such
    x = -value if flip else value
    return _canonical_cdf(x, flip, c_loc, c_low, c_high, scale, a, b, frame, log_norm, first, p_a, p_b, table,
                          nodes, weights)


@numba.njit(cache=True, error_model="numpy")
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


@numba.njit(cache=True, error_model="numpy")
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


@numba.njit(cache=True, error_model="numpy")
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


@numba.njit(cache=True, error_model="numpy")
def _narrow_tail(a, w, t, rest, no_b):
    """Whether an element on a wide interval has a narrow stretch from its value at t, ``rest`` scales long, to its
    upper bound (where _tail_spread_element takes minus s dF/ds)."""
    return (not no_b) and rest > 0.0 and not _is_narrow(a, w) and _is_narrow(t, rest)


@numba.njit(cache=True, error_model="numpy")
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


@numba.njit(cache=True, error_model="numpy")
def _second_moment_element(a, b, p_a, p_b):
    """E[t^2] = 1 + a p_a - b p_b of a straddling element (terms that add), p_a and p_b 0 without the bound."""
    return 1.0 + (0.0 if p_a == 0.0 else a * p_a) - (0.0 if p_b == 0.0 else b * p_b)


@numba.njit(cache=True, error_model="numpy")
def _narrow_head(a, d, no_a):
    """Whether a straddling element's stretch from its lower bound at a to its value, d scales, is narrow (where
    _head_spread_element takes minus s dF/ds)."""
    return (not no_a) and d > 0.0 and _is_narrow(a, d)


@numba.njit(cache=True, error_model="numpy")
def _head_spread_element(a, b, d, cdf, p_a, p_b, nodes, weights):
    """Minus s dF/ds of a straddling element _narrow_head holds for, short of the median: F (E[t^2] - E_head[t^2])
    from the head's moments (one panel), where t f_t and a p_a (1 - F) would cancel next to the lower bound."""
    _, head_mean, head_var, _ = _frame_moments_element(a, d, 1, nodes, weights)
    above = a + head_mean
    return cdf * (_second_moment_element(a, b, p_a, p_b) - above * above - head_var)


@numba.njit(cache=True, error_model="numpy")
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

@numba.njit(cache=True, error_model="numpy")
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
    u = (_ndtr_element(x) - p) * SQRT_2PI * math.exp(0.5 * x * x)
    return x - u / (1.0 + 0.5 * x * u)


@numba.njit(cache=True, error_model="numpy")
def _ndtri_element(p):
    if p <= 0.0:
        return -math.inf
    if p >= 1.0:
        return math.inf
    return _ndtri_lower(p) if p <= 0.5 else -_ndtri_lower(1.0 - p)


@numba.njit(cache=True, error_model="numpy")
def _erfinv_element(v):
    if v <= -1.0:
        return -math.inf
    if v >= 1.0:
        return math.inf
    x = _ndtri_element(0.5 * (v + 1.0)) * _SQRT_HALF
    for _ in range(3):
        x -= (math.erf(x) - v) / (1.1283791670955126 * math.exp(-x * x))
    return x


@numba.njit(cache=True, error_model="numpy")
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


@numba.njit(cache=True, error_model="numpy")
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


@numba.njit(cache=True, error_model="numpy")
def _icdf_element(prob, loc, scale, low, high, table, nodes, weights):
    (flip, c_loc, c_low, c_high, a, b, w, frame, log_norm, first, p_a, p_b) = _exact_state(
        loc, scale, low, high, table, nodes, weights)
    # a mirrored element's canonical probability is 1 - p, and its complement p itself, each exact
    c_p, c_q = (1.0 - prob, prob) if flip else (prob, 1.0 - prob)
    x = _canonical_icdf(c_p, c_q, c_loc, c_low, c_high, scale, a, b, w, frame, log_norm, p_b, table, nodes, weights)
    return -x if flip else x


@numba.njit(cache=True, error_model="numpy")
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


@numba.njit(cache=True, error_model="numpy")
def _partition_past_median(start, stop, columns):
    """Moves the elements of columns [start, stop) (probability, loc, scale, low, high, index) whose canonical
    probability is above 1/2 after the others, whose end it returns; each end moves past what is in place, so a
    chunk of one side swaps nothing."""
    first, end = start, stop
    while True:
        while first < end and not _past_median(first, columns):
            first += 1
        while first < end and _past_median(end - 1, columns):
            end -= 1
        if first >= end:
            return first
        end -= 1
        for row in range(6):
            columns[row, first], columns[row, end] = columns[row, end], columns[row, first]
        first += 1


@numba.njit(cache=True, error_model="numpy")
def _past_median(j, columns):
    prob = columns[0, j]
    return (1.0 - prob if columns[4, j] <= columns[1, j] else prob) > 0.5  # (mirrored where high <= loc)


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _kind_views(kind, starts, columns, out):
    """The rows of ``columns`` (value, loc, scale, low, high) and ``out`` over one kind's elements, as views from its
    first (gather_by_kind's ``starts``): a loop indexing them from a count the compiler cannot prove non-negative
    takes numpy's wraparound there, and reads through gathers."""
    first, last = starts[kind], starts[kind + 1]
    return (columns[0][first:last], columns[1][first:last], columns[2][first:last], columns[3][first:last],
            columns[4][first:last], out[first:last])


@numba.njit(cache=True, error_model="numpy")
def _cdf_chunk(starts, columns, out, short):
    """The cdf of a chunk's elements gathered by kind (gather_by_kind, cdf_kind's kinds from the rows ``starts``
    says, the straddling ones first), NaN where not held: for each kind a loop the compiler vectorizes forms the
    value alone by that kind's formula (straddling_cdf, frame_cdf; with ``short``, every narrow interval's stretches
    by their short series); the few elements they leave (a value within a short stretch of a bound) take
    cdf_element's formulas, one at a time."""
    value, loc, scale, low, high, o = _kind_views(PAST_LOC, starts, columns, out)
    for j in range(o.shape[0]):
        x, held = straddling_cdf(value[j], loc[j], scale[j], low[j], high[j], PAST_LOC)
        o[j] = x if held else np.nan
    value, loc, scale, low, high, o = _kind_views(NARROW_HEAD, starts, columns, out)
    for j in range(o.shape[0]):
        x, held = straddling_cdf(value[j], loc[j], scale[j], low[j], high[j], NARROW_HEAD)
        o[j] = x if held else np.nan
    value, loc, scale, low, high, o = _kind_views(WIDE_HEAD, starts, columns, out)
    for j in range(o.shape[0]):
        x, held = straddling_cdf(value[j], loc[j], scale[j], low[j], high[j], WIDE_HEAD)
        o[j] = x if held else np.nan
    value, loc, scale, low, high, o = _kind_views(NARROW_SIDE, starts, columns, out)
    for j in range(o.shape[0]):
        x, held = frame_cdf(value[j], loc[j], scale[j], low[j], high[j], NARROW_SIDE, False)
        o[j] = x if held else np.nan
    value, loc, scale, low, high, o = _kind_views(WIDE_SIDE, starts, columns, out)
    for j in range(o.shape[0]):
        x, held = frame_cdf(value[j], loc[j], scale[j], low[j], high[j], WIDE_SIDE, False)
        o[j] = x if held else np.nan
    value, loc, scale, low, high, o = _kind_views(MIRRORED_NARROW_SIDE, starts, columns, out)
    for j in range(o.shape[0]):
        x, held = frame_cdf(value[j], loc[j], scale[j], low[j], high[j], MIRRORED_NARROW_SIDE, False)
        o[j] = x if held else np.nan
    value, loc, scale, low, high, o = _kind_views(MIRRORED_WIDE_SIDE, starts, columns, out)
    for j in range(o.shape[0]):
        x, held = frame_cdf(value[j], loc[j], scale[j], low[j], high[j], MIRRORED_WIDE_SIDE, False)
        o[j] = x if held else np.nan
    # (each loop twice: a constant ``short`` keeps the other series out of the loop)
    value, loc, scale, low, high, o = _kind_views(NARROW_INTERVAL, starts, columns, out)
    if short:
        for j in range(o.shape[0]):
            x, held = frame_cdf(value[j], loc[j], scale[j], low[j], high[j], NARROW_INTERVAL, True)
            o[j] = x if held else np.nan
    else:
        for j in range(o.shape[0]):
            x, held = frame_cdf(value[j], loc[j], scale[j], low[j], high[j], NARROW_INTERVAL, False)
            o[j] = x if held else np.nan
    value, loc, scale, low, high, o = _kind_views(MIRRORED_NARROW_INTERVAL, starts, columns, out)
    if short:
        for j in range(o.shape[0]):
            x, held = frame_cdf(value[j], loc[j], scale[j], low[j], high[j], MIRRORED_NARROW_INTERVAL, True)
            o[j] = x if held else np.nan
    else:
        for j in range(o.shape[0]):
            x, held = frame_cdf(value[j], loc[j], scale[j], low[j], high[j], MIRRORED_NARROW_INTERVAL, False)
            o[j] = x if held else np.nan
    value, loc, scale, low, high = columns[0], columns[1], columns[2], columns[3], columns[4]
    straddling = starts[NARROW_SIDE]
    for j in range(starts[CDF_KINDS]):
        if math.isnan(out[j]):
            x, _, _, _, _, _, held, _ = cdf_element(value[j], loc[j], scale[j], low[j], high[j], j < straddling,
                                                    False)
            out[j] = x if held else np.nan


@numba.njit(cache=True, error_model="numpy")
def _icdf_chunk(starts, columns, out, spare, solved):
    """The icdf of a chunk's elements gathered by kind (gather_by_kind, classify_icdf's kinds from the rows
    ``starts`` says), NaN where not held: icdf_element's closed forms in a loop the compiler vectorizes for the
    straddling elements (the frame's formulas not formed) and another for the frame elements they invert; then
    icdf_by_halley's steps for the elements left, those only iterations invert (on narrow intervals and in far
    tails) and those the closed forms do not hold for, gathered again into ``spare`` with the narrow intervals
    first, a vectorized loop over each kind into ``solved``."""
    value, loc, scale, low, high, o = _kind_views(STRADDLING, starts, columns, out)
    for j in range(o.shape[0]):
        x, _, _, _, _, _, held, _ = icdf_element(value[j], loc[j], scale[j], low[j], high[j], True)
        o[j] = x if held else np.nan
    value, loc, scale, low, high, o = _kind_views(CLOSED, starts, columns, out)
    for j in range(o.shape[0]):
        x, _, _, _, _, _, held, _ = icdf_element(value[j], loc[j], scale[j], low[j], high[j], False)
        o[j] = x if held else np.nan
    value, loc, scale, low, high = columns[0], columns[1], columns[2], columns[3], columns[4]
    closed, far, stop = starts[NARROW_ITERATED], starts[FAR_ITERATED], starts[ICDF_KINDS]
    out[closed:stop] = np.nan
    narrow_count = 0
    rest = stop
    for j in range(stop):
        if math.isnan(out[j]):
            # (the kind says it past the closed forms' elements)
            if canonical_frame(loc[j], scale[j], low[j], high[j])[7] if j < closed else j < far:
                row = narrow_count
                narrow_count += 1
            else:
                rest -= 1
                row = rest
            for k in range(5):
                spare[k, row] = columns[k, j]
            spare[5, row] = j
    for k in range(narrow_count):
        x, held = icdf_by_halley(spare[0, k], spare[1, k], spare[2, k], spare[3, k], spare[4, k], True, True, 0)
        solved[k] = x if held else np.nan
    # those the quick steps leave (intervals about a scale wide) moved to the front, for all four steps in a loop
    # that vectorizes too
    again = 0
    for k in range(narrow_count):
        if math.isnan(solved[k]):
            for row in range(6):
                spare[row, again] = spare[row, k]
            again += 1
        else:
            out[np.int64(spare[5, k])] = solved[k]
    for k in range(again):
        x, held = icdf_by_halley(spare[0, k], spare[1, k], spare[2, k], spare[3, k], spare[4, k], True, False, 0)
        solved[k] = x if held else np.nan
    # the far tails apart by the side of the median they invert on, so that each loop forms one side's steps
    upper = _partition_past_median(rest, stop, spare)
    for k in range(rest, upper):
        x, held = icdf_by_halley(spare[0, k], spare[1, k], spare[2, k], spare[3, k], spare[4, k], False, False, -1)
        solved[k] = x if held else np.nan
    for k in range(upper, stop):
        x, held = icdf_by_halley(spare[0, k], spare[1, k], spare[2, k], spare[3, k], spare[4, k], False, False, 1)
        solved[k] = x if held else np.nan
    for k in range(again):
        out[np.int64(spare[5, k])] = solved[k]
    for k in range(rest, stop):
        out[np.int64(spare[5, k])] = solved[k]


@numba.njit(cache=True, error_model="numpy")
def _pass_block(inverse, start, stop, value, loc, scale, low, high, out, table, nodes, weights):
    """The cdf (with ``inverse``, icdf) of elements [start, stop) into ``out``: chunk by chunk, straight-line loops
    the compiler vectorizes take every element as one of the common regimes (tnlib.distributions._cdf_vector,
    _icdf_vector: _cdf_chunk, _icdf_chunk), each kind of element in a loop of its own over float64 columns they are
    gathered into (the cdf's kinds found by a vectorized loop first, classify_cdf; a chunk of one kind copied in
    order, by a loop that vectorizes, and its results likewise), and mark those they do not hold for by a NaN; a
    last loop computes those again by the per-element kernel, each in its own regime."""
    arrays = (value, loc, scale, low, high)
    columns = np.empty((6, _CHUNK))
    spare = np.empty((6, _CHUNK))
    solved = np.empty(_CHUNK)
    results = np.empty(_CHUNK)
    kinds = np.empty(_CHUNK, dtype=np.uint8)
    starts = np.empty(CDF_KINDS + 1, dtype=np.int64)
    ends = np.empty(CDF_KINDS, dtype=np.int64)
    order = np.empty(_CHUNK, dtype=np.uint16)  # (rows within a chunk: _CHUNK is below 2^16)
    for first in range(start, stop, _CHUNK):
        last = min(first + _CHUNK, stop)
        if inverse:
            classify_icdf(first, last, arrays, kinds, starts)
            in_order = gather_by_kind(first, last, arrays, kinds, starts, columns, order, ends[:ICDF_KINDS])
            _icdf_chunk(starts, columns, results, spare, solved)
        else:
            short = classify_cdf(first, last, arrays, kinds, starts) == 0
            in_order = gather_by_kind(first, last, arrays, kinds, starts, columns, order, ends)
            _cdf_chunk(starts, columns, results, short)
        if in_order:
            its_out = out[first:last]
            for j in range(last - first):
                its_out[j] = results[j]
        else:
            for j in range(last - first):
                out[np.int64(columns[5, j])] = results[j]
    for i in range(start, stop):
        if math.isnan(out[i]):
            out[i] = _cdf_or_icdf(inverse, i, value, loc, scale, low, high, table, nodes, weights)


# a chunk of the float32 pass takes its commonest kind's loop over all its elements in place (the others' results
# discarded) where that kind holds at least this share of it: a gather costs 3-4 ns an element, a straddling
# element's loop about 12
_IN_PLACE_SHARE = 0.75


@numba.njit(cache=True, error_model="numpy")
def _gather_left(first, last, arrays, kinds, known, results, columns, starts, ends, order):
    """gather_by_kind of the elements of [first, last) whose ``results`` are NaN alone, ``starts`` rewritten for
    them, their kinds from ``kinds`` where ``known`` (classify_icdf's) or else found here; returns their count."""
    count = last - first
    loc, scale, low, high = arrays[1][first:last], arrays[2][first:last], arrays[3][first:last], arrays[4][first:last]
    ends[:] = 0
    for j in range(count):
        if math.isnan(results[j]):
            if not known:
                kinds[j] = icdf_kind(np.float64(loc[j]), np.float64(scale[j]), np.float64(low[j]),
                                     np.float64(high[j]))[0]
            ends[kinds[j]] += 1
    starts[0] = 0
    for kind in range(ICDF_KINDS):
        starts[kind + 1] = starts[kind] + ends[kind]
        ends[kind] = starts[kind]
    for j in range(count):
        if math.isnan(results[j]):
            kind = kinds[j]
            order[ends[kind]] = j
            ends[kind] += 1
    left = starts[ICDF_KINDS]
    for k in range(5):
        _copy_by_order(arrays[k][first:last], order, left, columns[k])
    for row in range(left):
        columns[5, row] = first + order[row]
    return left


@numba.njit(cache=True, error_model="numpy")
def _single_where_held(starts, columns, out):
    """The float32 loops' values (straddling_icdf_single, narrow_icdf_single by the full series) in place of the
    float64 ones in ``out`` over the gathered straddling and narrow rows where they hold: so an element's value is
    the same whether its chunk ran a loop in place or was gathered (whatever the threads' blocks)."""
    value, loc, scale, low, high, o = _kind_views(STRADDLING, starts, columns, out)
    for j in range(o.shape[0]):
        x, held = straddling_icdf_single(value[j], loc[j], scale[j], low[j], high[j])
        o[j] = x if held else o[j]
    value, loc, scale, low, high, o = _kind_views(NARROW_ITERATED, starts, columns, out)
    for j in range(o.shape[0]):
        x, held = narrow_icdf_single(value[j], loc[j], scale[j], low[j], high[j], False)
        o[j] = x if held else o[j]


# how a chunk of the float32 pass starts: every element gathered by kind (classify_icdf first), or its commonest
# kind's float32 loop over all its elements in place (straddling; narrow, by the short series or the full one)
_BY_KIND, _STRADDLING_IN_PLACE, _SHORT_NARROW_IN_PLACE, _NARROW_IN_PLACE = 0, 1, 2, 3


@numba.njit(cache=True, error_model="numpy")
def _icdf_single_block(start, stop, prob, loc, scale, low, high, out, table, nodes, weights):
    """The icdf of float32 elements [start, stop) into ``out``, chunk by chunk. A chunk most of whose elements are
    of one kind (_IN_PLACE_SHARE; straddling or narrow) runs that kind's float32 loop (tnlib.distributions.
    _icdf_vector: straddling_icdf_single, narrow_icdf_single) over all its elements where they lie, no gather and,
    while the chunks before held that share, no classification either; the elements it does not hold, and every
    element of a chunk of mixed kinds, are gathered by kind and take the float64 pass's loops (_icdf_chunk), and
    what those leave the per-element kernel."""
    arrays = (prob, loc, scale, low, high)
    columns = np.empty((6, _CHUNK))
    spare = np.empty((6, _CHUNK))
    solved = np.empty(_CHUNK)
    results = np.empty(_CHUNK)
    left = np.empty(_CHUNK)
    kinds = np.empty(_CHUNK, dtype=np.uint8)
    starts = np.empty(ICDF_KINDS + 1, dtype=np.int64)
    ends = np.empty(ICDF_KINDS, dtype=np.int64)
    order = np.empty(_CHUNK, dtype=np.uint16)  # (rows within a chunk: _CHUNK is below 2^16)
    mode = _BY_KIND
    for first in range(start, stop, _CHUNK):
        last = min(first + _CHUNK, stop)
        count = last - first
        known = mode == _BY_KIND
        if known:
            short = classify_icdf(first, last, arrays, kinds, starts) == 0
            if starts[STRADDLING + 1] - starts[STRADDLING] >= _IN_PLACE_SHARE * count:
                mode = _STRADDLING_IN_PLACE
            elif starts[NARROW_ITERATED + 1] - starts[NARROW_ITERATED] >= _IN_PLACE_SHARE * count:
                mode = _SHORT_NARROW_IN_PLACE if short else _NARROW_IN_PLACE
        p, lc, sc, lo, hi = prob[first:last], loc[first:last], scale[first:last], low[first:last], high[first:last]
        if mode == _STRADDLING_IN_PLACE:
            for j in range(count):
                x, held = straddling_icdf_single(np.float64(p[j]), np.float64(lc[j]), np.float64(sc[j]),
                                                 np.float64(lo[j]), np.float64(hi[j]))
                results[j] = x if held else np.nan
        # (twice: a constant ``short`` keeps the other series out of the loop)
        elif mode == _SHORT_NARROW_IN_PLACE:
            for j in range(count):
                x, held = narrow_icdf_single(np.float64(p[j]), np.float64(lc[j]), np.float64(sc[j]),
                                             np.float64(lo[j]), np.float64(hi[j]), True)
                results[j] = x if held else np.nan
        elif mode == _NARROW_IN_PLACE:
            for j in range(count):
                x, held = narrow_icdf_single(np.float64(p[j]), np.float64(lc[j]), np.float64(sc[j]),
                                             np.float64(lo[j]), np.float64(hi[j]), False)
                results[j] = x if held else np.nan
        else:
            results[:count] = np.nan
        gathered = _gather_left(first, last, arrays, kinds, known, results, columns, starts, ends, order)
        if count - gathered < _IN_PLACE_SHARE * count:
            mode = _BY_KIND  # (the next chunk classified again)
        if gathered > 0:
            _icdf_chunk(starts, columns, left, spare, solved)
            _single_where_held(starts, columns, left)
            for j in range(gathered):
                results[np.int64(columns[5, j]) - first] = left[j]
        its_out = out[first:last]
        for j in range(count):
            its_out[j] = results[j]
    for i in range(start, stop):
        if math.isnan(out[i]):
            out[i] = _cdf_or_icdf(True, i, prob, loc, scale, low, high, table, nodes, weights)


def _icdf_pass(start, stop, prob, loc, scale, low, high, out, table, nodes, weights):
    """The icdf's vectorized pass over elements [start, stop), by ``out``'s dtype: _icdf_single_block for float32,
    _pass_block's for float64 (numba's overload below picks one as it compiles; no Python body)."""
    raise NotImplementedError("_icdf_pass is called from numba kernels only")


@overload(_icdf_pass)
def _icdf_pass_by_dtype(start, stop, prob, loc, scale, low, high, out, table, nodes, weights):
    if out.dtype == types.float32:
        return lambda start, stop, prob, loc, scale, low, high, out, table, nodes, weights: _icdf_single_block(
            start, stop, prob, loc, scale, low, high, out, table, nodes, weights)
    return lambda start, stop, prob, loc, scale, low, high, out, table, nodes, weights: _pass_block(
        True, start, stop, prob, loc, scale, low, high, out, table, nodes, weights)


# the kinds the cdf's gradient pass gathers a chunk's elements by (classify_cdf_gradient), each a loop forming its
# own formulas alone (cdf_element's ``straddling``, ``frame_known`` and ``width``): a straddling element, a frame
# element on a wide interval, one on a narrow interval
GRADIENT_STRADDLING, GRADIENT_WIDE, GRADIENT_NARROW = 0, 1, 2
GRADIENT_KINDS = 3


@numba.njit(cache=True, error_model="numpy")
def classify_cdf_gradient(start, stop, arrays, kinds, starts):
    """The gradient kind (GRADIENT_STRADDLING ...) of each of the five ``arrays``' elements [start, stop) into
    ``kinds``, by canonical_frame, and into ``starts`` (GRADIENT_KINDS + 1 rows) the row each kind's elements start
    from once gathered by kind (gather_by_kind), the last the count: a loop the compiler vectorizes."""
    loc, scale, low, high = arrays[1][start:stop], arrays[2][start:stop], arrays[3][start:stop], arrays[4][start:stop]
    straddling = wide = 0
    for j in range(stop - start):
        _, _, _, _, _, _, _, narrow, frame = canonical_frame(np.float64(loc[j]), np.float64(scale[j]),
                                                             np.float64(low[j]), np.float64(high[j]))
        kind = (GRADIENT_NARROW if narrow else GRADIENT_WIDE) if frame else GRADIENT_STRADDLING
        kinds[j] = kind
        straddling += kind == GRADIENT_STRADDLING
        wide += kind == GRADIENT_WIDE
    starts[0] = 0
    starts[1] = straddling
    starts[2] = straddling + wide
    starts[3] = stop - start


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _cdf_gradients_chunk(starts, columns, derivatives):
    """The five derivatives of the cdf of a chunk's elements gathered by gradient kind (classify_cdf_gradient) into
    the rows of ``derivatives``, the value's NaN where not held: a loop a kind over 2-D views of the columns and the
    derivatives from the kind's first row, each vectorized where inlined into the caller that allocates both arrays
    (compiled apart, the compiler cannot tell that the ten rows do not overlap, and leaves the loops scalar)."""
    kind = GRADIENT_STRADDLING
    elements, slopes = columns[:, starts[kind]:starts[kind + 1]], derivatives[:, starts[kind]:starts[kind + 1]]
    for j in range(elements.shape[1]):
        _, dx, dl, ds, da, db, _, held = cdf_element(elements[0, j], elements[1, j], elements[2, j], elements[3, j],
                                                     elements[4, j], True, False)
        slopes[0, j] = dx if held else np.nan
        slopes[1, j], slopes[2, j], slopes[3, j], slopes[4, j] = dl, ds, da, db
    kind = GRADIENT_WIDE
    elements, slopes = columns[:, starts[kind]:starts[kind + 1]], derivatives[:, starts[kind]:starts[kind + 1]]
    for j in range(elements.shape[1]):
        _, dx, dl, ds, da, db, _, held = cdf_element(elements[0, j], elements[1, j], elements[2, j], elements[3, j],
                                                     elements[4, j], False, True, WIDTH_WIDE)
        slopes[0, j] = dx if held else np.nan
        slopes[1, j], slopes[2, j], slopes[3, j], slopes[4, j] = dl, ds, da, db
    kind = GRADIENT_NARROW
    elements, slopes = columns[:, starts[kind]:starts[kind + 1]], derivatives[:, starts[kind]:starts[kind + 1]]
    for j in range(elements.shape[1]):
        _, dx, dl, ds, da, db, _, held = cdf_element(elements[0, j], elements[1, j], elements[2, j], elements[3, j],
                                                     elements[4, j], False, True, WIDTH_NARROW)
        slopes[0, j] = dx if held else np.nan
        slopes[1, j], slopes[2, j], slopes[3, j], slopes[4, j] = dl, ds, da, db


@numba.njit(cache=True, error_model="numpy")
def _cdf_gradients_block(start, stop, grad, value, loc, scale, low, high, slopes, table, nodes, weights):
    """grad times each derivative of the cdf of elements [start, stop) into the five rows of ``slopes``: chunk by
    chunk, the elements gathered by kind as the forward pass gathers them (classify_cdf_gradient's kinds: straddling,
    a wide or a narrow frame interval; a chunk of one kind copied in order), each kind in a loop that vectorizes and
    forms its own formulas alone, the others (marked by a NaN) by the per-element kernel after."""
    arrays = (value, loc, scale, low, high)
    columns = np.empty((6, _CHUNK))
    derivatives = np.empty((5, _CHUNK))
    kinds = np.empty(_CHUNK, dtype=np.uint8)
    starts = np.empty(GRADIENT_KINDS + 1, dtype=np.int64)
    ends = np.empty(GRADIENT_KINDS, dtype=np.int64)
    order = np.empty(_CHUNK, dtype=np.uint16)  # (rows within a chunk: _CHUNK is below 2^16)
    for first in range(start, stop, _CHUNK):
        last = min(first + _CHUNK, stop)
        classify_cdf_gradient(first, last, arrays, kinds, starts)
        in_order = gather_by_kind(first, last, arrays, kinds, starts, columns, order, ends)
        _cdf_gradients_chunk(starts, columns, derivatives)
        if in_order:
            for k in range(5):
                row, its_slopes, its_grad = derivatives[k], slopes[k, first:last], grad[first:last]
                for j in range(last - first):
                    its_slopes[j] = np.float64(its_grad[j]) * row[j]
        else:
            for j in range(last - first):
                i = np.int64(columns[5, j])
                gr = np.float64(grad[i])
                for k in range(5):
                    slopes[k, i] = gr * derivatives[k, j]
    for i in range(start, stop):
        if not math.isnan(slopes[0, i]):
            continue
        element = _cdf_gradient_element(np.float64(value[i]), np.float64(loc[i]), np.float64(scale[i]),
                                        np.float64(low[i]), np.float64(high[i]), table, nodes, weights)
        gr = np.float64(grad[i])
        for k in range(5):
            slopes[k, i] = gr * element[k]


@numba.njit(cache=True, error_model="numpy")
def _cdf_vector_serial(value, loc, scale, low, high, out, table, nodes, weights):
    _pass_block(False, 0, out.shape[0], value, loc, scale, low, high, out, table, nodes, weights)


@numba.njit(cache=True, parallel=True, error_model="numpy")
def _cdf_vector_parallel(value, loc, scale, low, high, out, table, nodes, weights):
    n = out.shape[0]
    for block in numba.prange((n + _BLOCK - 1) // _BLOCK):
        _pass_block(False, block * _BLOCK, min(n, (block + 1) * _BLOCK), value, loc, scale, low, high, out, table,
                    nodes, weights)


@numba.njit(cache=True, error_model="numpy")
def _cdf_float32_block(start, stop, value, loc, scale, low, high, out, table, nodes, weights):
    """The cdf of float32 elements [start, stop) into ``out``: a chunk of straddling elements alone or of narrow
    intervals alone by its loop over the arguments (tnlib.distributions._cdf_float32), any other by the float64
    route's pass (_pass_block); the elements those loops leave (NaN) by the per-element kernel."""
    arrays = (value, loc, scale, low, high)
    for first in range(start, stop, _CHUNK):
        last = min(first + _CHUNK, stop)
        kind = coarse_chunk_kind(first, last, arrays)
        if kind == STRADDLING_CHUNK:
            left = straddling_chunk_coarse(first, last, arrays, out)
        elif kind == NARROW_CHUNK:
            left = narrow_chunk_coarse(first, last, arrays, out)
        else:
            _pass_block(False, first, last, value, loc, scale, low, high, out, table, nodes, weights)
            continue
        for i in range(first, last if left > 0 else first):
            if math.isnan(out[i]):
                out[i] = _cdf_or_icdf(False, i, value, loc, scale, low, high, table, nodes, weights)


@numba.njit(cache=True, error_model="numpy")
def _cdf_float32_serial(value, loc, scale, low, high, out, table, nodes, weights):
    _cdf_float32_block(0, out.shape[0], value, loc, scale, low, high, out, table, nodes, weights)


@numba.njit(cache=True, parallel=True, error_model="numpy")
def _cdf_float32_parallel(value, loc, scale, low, high, out, table, nodes, weights):
    n = out.shape[0]
    for block in numba.prange((n + _BLOCK - 1) // _BLOCK):
        _cdf_float32_block(block * _BLOCK, min(n, (block + 1) * _BLOCK), value, loc, scale, low, high, out, table,
                           nodes, weights)


@numba.njit(cache=True, error_model="numpy")
def _cdf_gradients_vector_serial(grad, value, loc, scale, low, high, slopes, table, nodes, weights):
    _cdf_gradients_block(0, grad.shape[0], grad, value, loc, scale, low, high, slopes, table, nodes, weights)


@numba.njit(cache=True, error_model="numpy")
def _icdf_gradients_block(start, stop, grad, prob, loc, scale, low, high, slopes, table, nodes, weights):
    """grad times each derivative of the icdf of elements [start, stop) into the five rows of ``slopes``, as
    _cdf_gradients_block."""
    for i in range(start, stop):
        _, dp, dl, ds, da, db, _, held = icdf_element(np.float64(prob[i]), np.float64(loc[i]),
                                                      np.float64(scale[i]), np.float64(low[i]),
                                                      np.float64(high[i]), False)
        gr = np.float64(grad[i])
        slopes[0, i] = gr * dp if held else np.nan
        slopes[1, i] = gr * dl
        slopes[2, i] = gr * ds
        slopes[3, i] = gr * da
        slopes[4, i] = gr * db
    for i in range(start, stop):
        if not math.isnan(slopes[0, i]):
            continue
        derivatives = _icdf_gradient_element(np.float64(prob[i]), np.float64(loc[i]), np.float64(scale[i]),
                                             np.float64(low[i]), np.float64(high[i]), table, nodes, weights)
        gr = np.float64(grad[i])
        for k in range(5):
            slopes[k, i] = gr * derivatives[k]


@numba.njit(cache=True, error_model="numpy")
def _icdf_vector_serial(prob, loc, scale, low, high, out, table, nodes, weights):
    _icdf_pass(0, out.shape[0], prob, loc, scale, low, high, out, table, nodes, weights)


@numba.njit(cache=True, parallel=True, error_model="numpy")
def _icdf_vector_parallel(prob, loc, scale, low, high, out, table, nodes, weights):
    n = out.shape[0]
    for block in numba.prange((n + _BLOCK - 1) // _BLOCK):
        _icdf_pass(block * _BLOCK, min(n, (block + 1) * _BLOCK), prob, loc, scale, low, high, out, table, nodes,
                   weights)


@numba.njit(cache=True, error_model="numpy")
def _icdf_gradients_vector_serial(grad, prob, loc, scale, low, high, slopes, table, nodes, weights):
    _icdf_gradients_block(0, grad.shape[0], grad, prob, loc, scale, low, high, slopes, table, nodes, weights)


@numba.njit(cache=True, error_model="numpy")
def _cdf_serial(inverse, value, loc, scale, low, high, out, table, nodes, weights):
    """The cdf at ``value`` or, with ``inverse``, the icdf of ``value`` of each element by the per-element kernel
    alone (the reference the vectorized passes are tested against)."""
    for i in range(out.shape[0]):
        out[i] = _cdf_or_icdf(inverse, i, value, loc, scale, low, high, table, nodes, weights)


@numba.njit(cache=True, parallel=True, error_model="numpy")
def _cdf_parallel(inverse, value, loc, scale, low, high, out, table, nodes, weights):
    for i in numba.prange(out.shape[0]):
        out[i] = _cdf_or_icdf(inverse, i, value, loc, scale, low, high, table, nodes, weights)


@numba.njit(cache=True, error_model="numpy")
def _cdf_or_icdf(inverse, i, value, loc, scale, low, high, table, nodes, weights):
    element = (np.float64(value[i]), np.float64(loc[i]), np.float64(scale[i]), np.float64(low[i]),
               np.float64(high[i]))
    if inverse:
        return _icdf_element(*element, table, nodes, weights)
    return _cdf_element(*element, table, nodes, weights)


@numba.njit(cache=True, error_model="numpy")
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


@numba.njit(cache=True, error_model="numpy")
def _cdf_gradients_serial(inverse, grad, value, loc, scale, low, high, outs, table, nodes, weights):
    """grad times each derivative of the cdf or, with ``inverse``, the icdf; an output of length 0 is not wanted
    and not written."""
    for i in range(grad.shape[0]):
        _write_cdf_gradients(inverse, i, grad, value, loc, scale, low, high, outs, table, nodes, weights)


@numba.njit(cache=True, parallel=True, error_model="numpy")
def _cdf_gradients_parallel(inverse, grad, value, loc, scale, low, high, outs, table, nodes, weights):
    for i in numba.prange(grad.shape[0]):
        _write_cdf_gradients(inverse, i, grad, value, loc, scale, low, high, outs, table, nodes, weights)


_CONSTANTS = (_ERFCX, _NODES, _WEIGHTS)
# elements from which the icdf and its gradients take the vectorized pass, the per-element kernel below: warm, the
# pass is faster at any size, but a process's first call compiles the route it takes, and from here the pass's saving
# repays its own compile within about 50 forward + backward calls (benchmarks/bench_truncated_normal_methods.py
# --icdf-passes and --first-calls measure both)
_ICDF_PASS_FROM = 32768
# the same for the cdf and its gradients, above the notebooks' batches (at most 20,001 elements, opened by a class on
# fresh installs): with numba's cache empty the pass's forward compiles for 1.3-3 minutes on the loaded 2-core
# machine (the per-element kernel's, 12 s), and warm it saves about 25 ms a call at 20,001 elements, so a batch
# below here would repay that compile only after thousands of calls (reports/speed.md section 9, "The float32 cdf
# in one loop a chunk; the cdf's threshold")
_CDF_PASS_FROM = 32768


def _per_element(inverse: bool, route: str, n: int) -> bool:
    """Whether a call of ``n`` elements on ``route`` (tnlib.distributions.cpu_route's) takes the per-element kernel
    alone rather than the vectorized pass."""
    return route == "per-element" or (route == "kernels" and n < (_ICDF_PASS_FROM if inverse else _CDF_PASS_FROM))


def _cdf_values(inverse: bool, route: str, value, loc, scale, low, high) -> torch.Tensor:
    arrays = [_flat(t) for t in (value, loc, scale, low, high)]
    out = np.empty(tuple(loc.shape), dtype=arrays[1].dtype)  # in its shape: cheaper than a torch reshape
    flat = out.reshape(-1)
    _threads()
    parallel = flat.shape[0] >= _PARALLEL_FROM and numba.get_num_threads() > 1
    if _per_element(inverse, route, flat.shape[0]):
        (_cdf_parallel if parallel else _cdf_serial)(inverse, *arrays, flat, *_CONSTANTS)
    elif inverse:
        (_icdf_vector_parallel if parallel else _icdf_vector_serial)(*arrays, flat, *_CONSTANTS)
    elif flat.dtype == np.float32:
        (_cdf_float32_parallel if parallel else _cdf_float32_serial)(*arrays, flat, *_CONSTANTS)
    else:
        (_cdf_vector_parallel if parallel else _cdf_vector_serial)(*arrays, flat, *_CONSTANTS)
    return torch.from_numpy(out)


def _cdf_gradients(inverse: bool, route: str, grad: np.ndarray, arrays: list[np.ndarray], shape, needs) -> tuple:
    """grad times the cdf's (with ``inverse``, the icdf's) derivatives w.r.t. (value, loc, scale, low, high), in
    ``shape``, None where not ``needs``: the vectorized pass writes all five rows (a row skipped would cost it a
    branch per element); the per-element kernel, where ``route`` takes it, writes only what is needed."""
    if _per_element(inverse, route, grad.shape[0]):
        return _per_element_gradients(inverse, grad, arrays, shape, needs)
    slopes = np.empty((5, grad.shape[0]), dtype=arrays[1].dtype)
    # one thread: numba's prange over blocks of the cdf's pass measured 2.5-3.5x slower per element than the serial
    # loop (on one thread and on two), where the forward's is level with it
    (_icdf_gradients_vector_serial if inverse else _cdf_gradients_vector_serial)(grad, *arrays, slopes, *_CONSTANTS)
    return tuple(torch.from_numpy(row).reshape(shape) if need else None for row, need in zip(slopes, needs))


def _per_element_gradients(inverse: bool, grad: np.ndarray, arrays: list[np.ndarray], shape, needs) -> tuple:
    outs = [np.empty(shape if need else 0, dtype=arrays[1].dtype) for need in needs]
    flats = tuple(o.reshape(-1) for o in outs)
    if grad.shape[0] >= _PARALLEL_FROM:
        _threads()
        _cdf_gradients_parallel(inverse, grad, *arrays, flats, *_CONSTANTS)
    else:
        _cdf_gradients_serial(inverse, grad, *arrays, flats, *_CONSTANTS)
    return tuple(torch.from_numpy(o) if need else None for o, need in zip(outs, needs))


def cdf(value: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor, low: torch.Tensor, high: torch.Tensor,
        inverse: bool = False, route: str = "kernels") -> torch.Tensor:
    """The CDF at ``value`` (with ``inverse``, the icdf of ``value``) of TN(loc, scale, low, high), all five CPU
    tensors of one shape and dtype; through :class:`KernelCDF` where a gradient may be asked for, else straight
    from the kernel. On the "kernels" ``route`` (tnlib.distributions.cpu_route's) the CDF and its gradients take the
    vectorized pass from _CDF_PASS_FROM elements on, and the per-element kernel only on the elements that pass leaves
    to it (the far tails, values outside the support: the module's docstring says which), a float32 CDF the float32
    pass (_cdf_float32_block); so do the icdf and its gradients, with their own pass, from _ICDF_PASS_FROM elements
    on; a smaller batch takes the per-element kernel. The "per-element" route takes the per-element kernel alone,
    the "vectorized" one the passes at every size."""
    tensors = (value, loc, scale, low, high)
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return KernelCDF.apply(*tensors, inverse, route)
    return _cdf_values(inverse, route, *tensors)


class KernelCDF(torch.autograd.Function):
    """cdf(value), or with ``inverse`` icdf(value), of TN(loc, scale, low, high), all five of one shape, forward
    and backward by the kernels on ``route`` (tnlib.distributions.cpu_route's)."""

    @staticmethod
    def forward(ctx, value, loc, scale, low, high, inverse=False, route="kernels"):
        ctx.inverse = inverse
        ctx.route = route
        ctx.save_for_backward(value, loc, scale, low, high)
        return _cdf_values(inverse, route, value, loc, scale, low, high)

    @staticmethod
    def backward(ctx, grad):
        if torch.is_grad_enabled():
            raise RuntimeError(
                "TruncatedNormal: only first derivatives are implemented; backward with create_graph=True "
                "(second derivatives, Hessians, gradient penalties) is not supported")
        arrays = [_flat(t) for t in ctx.saved_tensors]
        needs = ctx.needs_input_grad[:5]
        return _cdf_gradients(ctx.inverse, ctx.route, _flat(grad), arrays, tuple(grad.shape), needs) + (None, None)
