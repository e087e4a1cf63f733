"""Compiled per-element kernels (numba) for the mean, variance and entropy of the Truncated Normal on the CPU.

The same formulas as the torch route (tnlib.distributions._regimes._core, _statistics), one pass per element in its
own regime and float64 inside, so the two agree to rounding: the state with g(a) by Laplace's continued fraction
from a = 3 (tnlib.distributions._series), the variance's and the third cumulant's closed forms where their
cancellation is within the torch route's tolerance and, where it is not, the fraction (no upper bound) or composite
Gauss-Legendre moments of the frame integrand, as the torch route decides, element by element.

Two places spare an element the quadrature the torch route integrates: a narrow interval's variance and third
cumulant are those of the one-panel quadrature its state already summed (the same sums, bit for bit), and from
a = 3 with a finite upper bound (the tail [3, 5]) the variance is the one-sided fraction's less the part beyond the
bound (_mixture_variance; within 4e-15 of the eight panels' variance and closer to mpmath), where that does not
cancel: a few flops beside the state, where eight panels cost 128 exps, five times the state.

The mean of elements with no upper bound (the training's and a learned search's) and its derivatives are one pass of
straight-line code the compiler vectorizes (_one_sided_mean_element: the excess E[t] - a by the Chebyshev expansions
of tnlib.distributions._vector_math, within a few ulps, where the fraction above costs 10-60 divisions an element);
the elements it does not hold for go on to the per-element branches after it. Elements whose bounds straddle loc
more than a scale apart (both finite: the moderate regime) take their mean, variance and entropy in another such
pass (_straddle_element: Z by the vector erf, the closed forms by its exp and log, within a few ulps of the
branches), and their derivatives in a third, which a block runs only where it holds such elements, so a batch
without them pays one count. The mean of narrow intervals is a fourth (_narrow_mean_element: the bound plus the
scale times the stretch's mean by its Hermite series, tnlib.distributions._cdf_vector._stretch), where a block
holds enough of them to repay a pass over every element: the per-element quadrature costs 16 exps an element.

These statistics are read on small batches as often as on large ones (a learned search's batch of successors is
10-100 states): below ``_PARALLEL_FROM`` elements the serial loops run, which spare the threads' start, and a call
without gradients goes straight to the kernel, without a torch.autograd.Function.
"""
from __future__ import annotations

import math

import numba
import numpy as np
import torch

from tnlib.distributions import _vector_math
from tnlib.distributions._autograd import _first_order
from tnlib.distributions._cdf_vector import _stretch, canonical_frame
from tnlib.distributions._kernels import (
    _BLOCK,
    _CONSTANTS,
    _PARALLEL_FROM,
    _V_SERIES,
    _flat,
    _mills_element,
    _ndtr_element,
    _straddles_loc,
    _threads,
)
from tnlib.distributions._regimes import _LOG_SQRT_2PI, _SQRT_2PI, _SQRT_HALF
from tnlib.distributions._series import _FRACTION_START
from tnlib.kernel_cache import cache_by_folder_sources

cache_by_folder_sources(__file__)  # before the first njit(cache=True): tnlib.kernel_cache says why

MEAN, VARIANCE, ENTROPY = 0, 1, 2
STATISTIC_CODES = {"mean": MEAN, "variance": VARIANCE, "entropy": ENTROPY}
_EPS = float(np.finfo(np.float64).eps)
# the torch route's tolerances (tnlib.distributions._statistics), for its working precision, float64
_VARIANCE_TOLERANCE, _KAPPA3_TOLERANCE = 4e-15, 1e-10
_WIDE_PANELS = 8  # composite Gauss-Legendre panels that are exact to double rounding for any a >= 0, w


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _tail_fraction_element(x):
    """R_1 and R_2 of Laplace's continued fraction at x >= 3, at the torch route's depth for x."""
    depth = int(10 + 150.0 / max(x, _FRACTION_START))
    r = 0.0
    for k in range(depth, 1, -1):
        r = k / (x + r)
    return 1.0 / (x + r), r


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _one_sided_moments(x, m):
    """(g(x) = 1 - x m(x), D = E[s], Var[s]) of the frame density exp(-x s - s^2/2) on [0, inf), x >= 0, given m(x):
    from x = 3 all three by the fraction, exact there (D = R_1, Var = R_1 (R_2 - R_1)); below, g's closed form and
    NaN for the two moments, which the caller does not read there."""
    if x >= _FRACTION_START:
        r1, r2 = _tail_fraction_element(x)
        return r1 / (x + r1), r1, r1 * (r2 - r1)
    return 1.0 - x * m, np.nan, np.nan


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _frame_moments_element(a, w, panels, nodes, weights):
    """(M0, mean, variance, third central moment) of the frame density exp(-a d - d^2/2) on [0, w] by ``panels``
    panels of Gauss-Legendre, cut where the integrand is below exp(-45) of its peak (a >= 0), as _frame_moments.
    Each node's weighted integrand is kept for the central moments' sums, so each costs one exp."""
    top = min(w, 90.0 / (math.sqrt(a * a + 90.0) + a)) if a >= 0 else w
    n = nodes.shape[0]
    weighted = np.empty(panels * n)
    mass = 0.0
    moment = 0.0
    for p in range(panels):
        for j in range(n):
            s = top * (p / panels + nodes[j] / panels)
            fw = math.exp(-s * (a + 0.5 * s)) * (weights[j] / panels)
            weighted[p * n + j] = fw
            mass += fw
            moment += fw * s
    mean = moment / mass
    second = 0.0
    third = 0.0
    for p in range(panels):
        for j in range(n):
            s = top * (p / panels + nodes[j] / panels)
            c = s - mean
            fw_c2 = weighted[p * n + j] * c * c
            second += fw_c2
            third += fw_c2 * c
    return mass * top, mean, second / mass, third / mass


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _is_narrow(a, w):
    return w * max(1.0, abs(a + 0.5 * w)) <= 1.0


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _canonical_frame(loc, scale, low, high):
    """(flip, c_loc, c_low, c_high, a, b, w): the element mirrored so its mass is not below loc, and its bounds in
    scales from loc."""
    flip = high <= loc
    if flip:
        c_loc, c_low, c_high = -loc, -high, -low
    else:
        c_loc, c_low, c_high = loc, low, high
    return flip, c_loc, c_low, c_high, (c_low - c_loc) / scale, (c_high - c_loc) / scale, (high - low) / scale


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _straddling(a, b, w):
    """(log Z, E[t], p_a, p_b) of an element whose bounds straddle loc (a < 0 < b): Z adds two non-negative terms,
    or is 1 less the two tails where they are small."""
    z = 0.5 * (math.erf(b * _SQRT_HALF) - math.erf(a * _SQRT_HALF))
    tails = _ndtr_element(a) + _ndtr_element(-b)
    log_z = math.log1p(-tails) if tails < 0.5 else math.log(z)
    p_a = 0.0 if math.isinf(a) else math.exp(-0.5 * a * a - _LOG_SQRT_2PI - log_z)
    p_b = 0.0 if math.isinf(b) else math.exp(-0.5 * b * b - _LOG_SQRT_2PI - log_z)
    half_gap = 0.0 if (math.isinf(a) and math.isinf(b)) else 0.5 * w * (a + b)
    if abs(a) <= abs(b):
        mean_t = -p_a * math.expm1(-half_gap)
    else:
        mean_t = p_b * math.expm1(half_gap)
    return log_z, mean_t, p_a, p_b


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _exact_state(loc, scale, low, high, table, nodes, weights):
    """The canonical state of one element as tnlib.distributions._regimes._core computes it.

    Returns (flip, c_loc, c_low, c_high, a, b, w, frame, log_norm, first, p_a, p_b): log_norm is log M0 (frame) or
    log Z (straddling), first is D = E[t] - a (frame) or E[t] (straddling). (_moment_state forms the same and the
    moments it meets on the way, which the cdf's kernels, calling this, would pay for and not read.)"""
    flip, c_loc, c_low, c_high, a, b, w = _canonical_frame(loc, scale, low, high)
    if _is_narrow(a, w):
        m0, d_mean, _, _ = _frame_moments_element(a, w, 1, nodes, weights)
        return (flip, c_loc, c_low, c_high, a, b, w, True, math.log(m0), d_mean, 1.0 / m0,
                math.exp(-w * (a + 0.5 * w)) / m0)
    if a >= 0:
        m_a = _mills_element(a, table)
        num = _one_sided_moments(a, m_a)[0]
        m0 = m_a
        p_b = 0.0
        if not math.isinf(b):
            delta = math.exp(-w * (a + 0.5 * w))
            m_b = _mills_element(b, table)
            m0 = m_a - delta * m_b
            num -= delta * (_one_sided_moments(b, m_b)[0] + w * m_b)
            p_b = delta / m0
        return (flip, c_loc, c_low, c_high, a, b, w, True, math.log(m0), num / m0, 1.0 / m0, p_b)
    log_z, mean_t, p_a, p_b = _straddling(a, b, w)
    return (flip, c_loc, c_low, c_high, a, b, w, False, log_z, mean_t, p_a, p_b)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _moment_state(loc, scale, low, high, table, nodes, weights):
    """_exact_state and two more: Var[t] and kappa_3 of t where forming the state gave them exactly (a narrow
    interval's quadrature; the fraction's one-sided moments from a = 3, and with a finite upper bound
    _mixture_variance), NaN elsewhere. _variance_t and _slopes read them instead of integrating again."""
    flip, c_loc, c_low, c_high, a, b, w = _canonical_frame(loc, scale, low, high)
    if _is_narrow(a, w):
        m0, d_mean, var, third = _frame_moments_element(a, w, 1, nodes, weights)
        return (flip, c_loc, c_low, c_high, a, b, w, True, math.log(m0), d_mean, 1.0 / m0,
                math.exp(-w * (a + 0.5 * w)) / m0, var, third)
    if a >= 0:
        m_a = _mills_element(a, table)
        num, d_a, v_a = _one_sided_moments(a, m_a)
        if math.isinf(b):
            return (flip, c_loc, c_low, c_high, a, b, w, True, math.log(m_a), num / m_a, 1.0 / m_a, 0.0, v_a,
                    np.nan)
        delta = math.exp(-w * (a + 0.5 * w))
        m_b = _mills_element(b, table)
        g_b, d_b, v_b = _one_sided_moments(b, m_b)
        m0 = m_a - delta * m_b
        num -= delta * (g_b + w * m_b)
        first = num / m0
        var = _mixture_variance(w, first, delta * m_b / m_a, m0 / m_a, v_a, d_b, v_b)
        return (flip, c_loc, c_low, c_high, a, b, w, True, math.log(m0), first, 1.0 / m0, delta / m0, var, np.nan)
    log_z, mean_t, p_a, p_b = _straddling(a, b, w)
    return (flip, c_loc, c_low, c_high, a, b, w, False, log_z, mean_t, p_a, p_b, np.nan, np.nan)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _mixture_variance(w, first, q, kept, v_a, d_b, v_b):
    """Var of the frame density on [0, w] from the one-sided ones at a and b = a + w (a >= 3, their fraction's
    moments; NaN below, which it returns): the density on [0, inf) is the mixture of the one on [0, w], weight
    kept = 1 - q, and the one on [b, inf) shifted by w, weight q = delta m(b) / m(a), so by the law of total
    variance Var_a = kept V + q Var_b + q kept (w + D_b - D)^2. Solved for V it subtracts q's terms from Var_a,
    which cancels where the upper bound cuts off most of the tail's spread: NaN where the error bound (a few ulps
    of Var_a, q's ulps -- the erfcx table's 7 of each m, the exp's -- on its terms) exceeds the tolerance the closed
    forms are held to, and the caller integrates instead. Where the bound is far (the tail [3, 5]) this costs a few
    flops beside the fraction the state sums anyway, where the quadrature takes 128 exps."""
    spread = q * (v_b / kept + (w + d_b - first) ** 2)
    v = v_a / kept - spread
    if not (v_a / kept + 16.0 * spread) * 4.0 * _EPS <= _VARIANCE_TOLERANCE * v:
        return np.nan
    return v


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _bound_slopes(a, b, w, frame, first, p_a, p_b):
    """d mean / d low and d mean / d high in canonical coordinates (_mean_bound_derivatives)."""
    if frame:
        return p_a * first, (0.0 if math.isinf(w) else p_b * (w - first))
    dedl = 0.0 if (math.isinf(a) or p_a == 0.0) else p_a * (first - a)
    dedu = 0.0 if (math.isinf(b) or p_b == 0.0) else p_b * (b - first)
    return dedl, dedu


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _variance_t(a, b, w, frame, first, p_a, p_b, known_v, nodes, weights):
    """(Var[t], kappa_3 of t or NaN), exact in every regime (_standardized_variance): the closed form where its
    cancellation is within the tolerance, else the state's own (``known_v``: the fraction, the mixture, a narrow
    interval's quadrature) or the frame's quadrature moments, whose kappa_3 is returned for _slopes."""
    dedl, dedu = _bound_slopes(a, b, w, frame, first, p_a, p_b)
    third = np.nan
    if not frame:
        a_pa = 0.0 if math.isinf(a) else a * p_a
        b_pb = 0.0 if math.isinf(b) else b * p_b
        v = 1.0 + a_pa - b_pb - first * first
    else:
        v = 1.0 - dedl - dedu
        g_ulps = 1.0 + min(max(a, 0.0), _FRACTION_START) ** 2
        if (dedl + dedu) * g_ulps * _EPS > _VARIANCE_TOLERANCE * abs(v) or v <= 0.0:
            if not math.isnan(known_v):
                v = known_v
            else:
                _, _, v, third = _frame_moments_element(a, w, 1 if _is_narrow(a, w) else _WIDE_PANELS, nodes,
                                                        weights)
    return min(max(v, 0.0), 1.0), third


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _slopes(a, b, w, frame, first, p_a, p_b, v, known_third, nodes, weights):
    """(V_a, V_b, V_a + V_b, a V_a + b V_b) and the same four of H_t (_variance_and_entropy_slopes), with the
    third cumulant's closed form replaced by the frame's quadrature where it cancels (_third_cumulant): the one
    already integrated (``known_third``) where there is one, NaN otherwise."""
    dist_low = first if frame else first - a
    dist_high = w - first if frame else b - first
    no_a, no_b = p_a == 0.0, p_b == 0.0
    v_a = 0.0 if no_a else p_a * (v - dist_low * dist_low)
    v_b = 0.0 if no_b else p_b * (dist_high * dist_high - v)
    kappa3 = -(v_a + v_b)
    if frame:
        terms = ((0.0 if no_a else p_a * (v + dist_low * dist_low))
                 + (0.0 if no_b else p_b * (v + dist_high * dist_high)))
        g_ulps = 1.0 + min(max(a, 0.0), _FRACTION_START) ** 2
        if not terms * (_EPS * g_ulps + _VARIANCE_TOLERANCE) <= _KAPPA3_TOLERANCE * abs(kappa3):
            if not math.isnan(known_third):
                kappa3 = known_third
            else:
                _, _, _, kappa3 = _frame_moments_element(a, w, 1 if _is_narrow(a, w) else _WIDE_PANELS, nodes,
                                                         weights)
    mean_t = a + first if frame else first
    b_plus_mean = 2.0 * a + w + first if frame else b + mean_t
    h_b = 0.0 if no_b else 0.5 * p_b * (2.0 - v + dist_high * b_plus_mean)
    h_a_s = 0.0 if no_a else 0.5 * p_a * (v - 2.0 + dist_low * (mean_t + a))
    if frame:
        v_shift, h_shift = -kappa3, -(mean_t * v + 0.5 * kappa3)
        w_v_b = 0.0 if no_b else w * v_b
        w_h_b = 0.0 if no_b else w * h_b
        return (v_shift - v_b, v_b, v_shift, a * v_shift + w_v_b,
                h_shift - h_b, h_b, h_shift, a * h_shift + w_h_b)
    a_v_a = 0.0 if no_a else a * v_a
    a_h_a = 0.0 if no_a else a * h_a_s
    b_v_b = 0.0 if no_b else b * v_b
    b_h_b = 0.0 if no_b else b * h_b
    return (v_a, v_b, v_a + v_b, a_v_a + b_v_b, h_a_s, h_b, h_a_s + h_b, a_h_a + b_h_b)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _value_element(which, loc, scale, low, high, table, nodes, weights):
    """The mean, variance or entropy of one element."""
    (flip, c_loc, c_low, c_high, a, b, w, frame, log_norm, first, p_a, p_b, known_v, _) = _moment_state(
        loc, scale, low, high, table, nodes, weights)
    if which == MEAN:
        mean = c_low + scale * first if frame else c_loc + scale * first
        # the mean never leaves [low, high]; rounding of the last ulp is clamped back
        mean = min(max(mean, c_low), c_high)
        return -mean if flip else mean
    v, _ = _variance_t(a, b, w, frame, first, p_a, p_b, known_v, nodes, weights)
    if which == VARIANCE:
        return scale * scale * v
    if frame:  # the a^2/2 terms of log Z and E[t^2]/2 cancel analytically
        return math.log(scale) + log_norm + a * first + 0.5 * (v + first * first)
    return math.log(scale) + _LOG_SQRT_2PI + log_norm + 0.5 * (v + first * first)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _gradient_element(which, loc, scale, low, high, table, nodes, weights):
    """d statistic / d (loc, scale, low, high) of one element."""
    (flip, c_loc, c_low, c_high, a, b, w, frame, log_norm, first, p_a, p_b, known_v, known_third) = _moment_state(
        loc, scale, low, high, table, nodes, weights)
    v, third = _variance_t(a, b, w, frame, first, p_a, p_b, known_v, nodes, weights)
    if math.isnan(known_third):
        known_third = third
    if which == MEAN:  # odd under the mirror (_mean_grads, _unflip_grads)
        dedl, dedu = _bound_slopes(a, b, w, frame, first, p_a, p_b)
        if frame:
            ds = first + a * v - (0.0 if math.isinf(w) else w * dedu)
        else:
            ds = first - (0.0 if dedl == 0.0 else a * dedl) - (0.0 if dedu == 0.0 else b * dedu)
        if flip:
            return v, -ds, dedu, dedl
        return v, ds, dedl, dedu
    slopes = _slopes(a, b, w, frame, first, p_a, p_b, v, known_third, nodes, weights)
    q_a, q_b, shift, spread = slopes[0:4] if which == VARIANCE else slopes[4:8]
    g_loc, g_scale, g_low, g_high = -shift / scale, -spread / scale, q_a / scale, q_b / scale
    if which == VARIANCE:  # Var = s^2 V
        s2 = scale * scale
        g_loc, g_scale, g_low, g_high = s2 * g_loc, 2.0 * scale * v + s2 * g_scale, s2 * g_low, s2 * g_high
    else:  # H = log s + H_t
        g_scale += 1.0 / scale
    # even under the mirror
    if flip:
        return -g_loc, g_scale, -g_high, -g_low
    return g_loc, g_scale, g_low, g_high


@numba.njit(cache=True, inline="always", error_model="numpy")
def _one_sided_mean_element(loc, s, low):
    """(mean, d/dloc, d/dscale, d/dlow, whether the element is one the formulas hold for) of an element with no upper
    bound, as _value_element and _gradient_element compute them, in straight-line code the loop vectorizer turns into
    SIMD code: both regimes are formed and one kept. With D = E[t] - a (mean_excess in the frame, a >= 0; phi(a)/Z - a
    straddling) the mean is low + s D (frame) or loc + s E[t], and its derivatives Var[t], D + a Var[t] and E[t] D,
    Var[t] = 1 - E[t] D by its series from a = 20, where that cancels. Elements it does not hold for (an infinite or
    NaN a, a scale outside the normal floats) are the caller's to compute again."""
    a = (low - loc) / s
    frame = a >= 0.0
    gauss = _vector_math.exp(-0.5 * a * a)  # sqrt(2 pi) phi(a)
    z = 1.0 - 0.5 * gauss * _vector_math.erfcx(abs(a) * _SQRT_HALF)  # Z = 1 - Phi(a), a < 0: in [0.5, 1]
    p_straddle = gauss / (_SQRT_2PI * z)
    excess = _vector_math.mean_excess(max(a, 0.0))
    d = excess if frame else p_straddle - a
    mean_t = a + excess if frame else p_straddle
    mean = max(low + s * excess if frame else loc + s * p_straddle, low)
    inv_a = 1.0 / a
    y = inv_a * inv_a
    c = _V_SERIES
    series = c[0] + y * (c[1] + y * (c[2] + y * (c[3] + y * (c[4] + y * (c[5] + y * (c[6] + y * c[7]))))))
    far = a >= 20.0
    var_near = 1.0 - mean_t * d
    var = min(max(y * series if far else var_near, 0.0), 1.0)
    a_var = inv_a * series if far else a * var
    held = abs(a) < np.inf and 1e-300 < s < 1e300
    return mean, var, d + a_var, mean_t * d, held


# expm1(x) = sum x^n / n! below |x| = 1/2, to n = 17 (the first term dropped is below 1e-19 of the sum); beyond,
# exp(x) - 1 loses under two bits
_EXPM1_SERIES = tuple(1.0 / math.factorial(n) for n in range(1, 18))
_EXPM1_SERIES_END = 0.5


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _expm1(x):
    """expm1(x) for x <= 709, within a few ulps; both forms are computed and one kept, so a loop of it vectorizes."""
    c = _EXPM1_SERIES
    inner = c[8] + x * (c[9] + x * (c[10] + x * (c[11] + x * (c[12] + x * (c[13] + x * (c[14] + x * (c[15]
                                                                                              + x * c[16])))))))
    series = x * (c[0] + x * (c[1] + x * (c[2] + x * (c[3] + x * (c[4] + x * (c[5] + x * (c[6] + x * (c[7]
                                                                                             + x * inner))))))))
    return series if abs(x) < _EXPM1_SERIES_END else _vector_math.exp(x) - 1.0


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _straddle_state(loc, s, low, high):
    """(a, b, log Z, p_a, p_b, E[t], Var[t]) of an element that _straddles_loc, as _moment_state's straddling branch and
    _variance_t form them. (Elements that do not straddle are formed too, and discarded: the floor on Z keeps log's
    argument a normal float for them.)"""
    a = (low - loc) / s
    b = (high - loc) / s
    w = (high - low) / s
    z = 0.5 * (_vector_math.erf(b * _SQRT_HALF) - _vector_math.erf(a * _SQRT_HALF))
    log_z = _vector_math.log(max(z, 0.25))
    p_a = _vector_math.exp(-0.5 * a * a - _LOG_SQRT_2PI - log_z)
    p_b = _vector_math.exp(-0.5 * b * b - _LOG_SQRT_2PI - log_z)
    half_gap = 0.5 * w * (a + b)
    mean_t = -p_a * _expm1(-half_gap) if abs(a) <= abs(b) else p_b * _expm1(half_gap)
    v = min(max(1.0 + a * p_a - b * p_b - mean_t * mean_t, 0.0), 1.0)
    return a, b, log_z, p_a, p_b, mean_t, v


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _straddle_gradient_element(which, loc, s, low, high):
    """d statistic / d (loc, scale, low, high) of an element that _straddles_loc, as _gradient_element and _slopes form
    them for a straddling element, in straight-line code."""
    a, b, _, p_a, p_b, mean_t, v = _straddle_state(loc, s, low, high)
    dist_low = mean_t - a
    dist_high = b - mean_t
    if which == MEAN:
        dedl = p_a * dist_low
        dedu = p_b * dist_high
        return v, mean_t - a * dedl - b * dedu, dedl, dedu
    if which == VARIANCE:
        q_a = p_a * (v - dist_low * dist_low)
        q_b = p_b * (dist_high * dist_high - v)
    else:
        q_a = 0.5 * p_a * (v - 2.0 + dist_low * (mean_t + a))
        q_b = 0.5 * p_b * (2.0 - v + dist_high * (b + mean_t))
    g_loc, g_scale, g_low, g_high = -(q_a + q_b) / s, -(a * q_a + b * q_b) / s, q_a / s, q_b / s
    if which == VARIANCE:  # Var = s^2 V
        s2 = s * s
        return s2 * g_loc, 2.0 * s * v + s2 * g_scale, s2 * g_low, s2 * g_high
    return g_loc, g_scale + 1.0 / s, g_low, g_high  # H = log s + H_t


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _straddle_element(which, loc, s, low, high):
    """The mean, variance or entropy of an element that _straddles_loc, as _moment_state's straddling branch and
    _value_element compute it, in straight-line code the loop vectorizer turns into SIMD code: Z by the vector erf,
    log Z by log (Z >= 0.34 there: the interval holds loc and is over a scale wide), the mean's E[t] by an expm1 of
    the half gap."""
    a, b, log_z, p_a, p_b, mean_t, v = _straddle_state(loc, s, low, high)
    if which == MEAN:
        return min(max(loc + s * mean_t, low), high)
    if which == VARIANCE:
        return s * s * v
    return _vector_math.log(s) + _LOG_SQRT_2PI + log_z + 0.5 * (v + mean_t * mean_t)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _regime_counts(loc, scale, low, high):
    """(elements with a finite upper bound, elements that _straddles_loc, narrow intervals); the last two counts
    are skipped (0) where no upper bound is finite, as in the batches a training or a search reads the mean of."""
    finite = 0
    for i in range(loc.shape[0]):
        finite += high[i] != np.inf
    straddling = 0
    narrow = 0
    if finite > 0:
        for i in range(loc.shape[0]):
            element = (np.float64(loc[i]), np.float64(scale[i]), np.float64(low[i]), np.float64(high[i]))
            straddling += _straddles_loc(*element)
            narrow += canonical_frame(*element)[7]
    return finite, straddling, narrow


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _narrow_mean_element(loc, s, low, high):
    """(mean, held) of a narrow interval: the bound plus the scale times the stretch's mean D by its Hermite series
    (tnlib.distributions._cdf_vector._stretch: within 1e-15 of the quadrature's); held for the narrow
    intervals of finite bounds and a finite, positive scale."""
    flip, _, c_low, c_high, a, _, w, narrow, _ = canonical_frame(loc, s, low, high)
    _, mean_d = _stretch(a, w)
    mean = min(max(c_low + s * mean_d, c_low), c_high)
    held = narrow & (abs(a) < 1e300) & (w > 0.0) & (1e-300 < s) & (s < 1e300)
    return -mean if flip else mean, held


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _narrow_mean_pass(loc, scale, low, high, out):
    """The vectorized loop of _narrow_mean_element: each narrow interval gets its mean, each other element keeps
    what it has."""
    for i in range(out.shape[0]):
        mean, held = _narrow_mean_element(np.float64(loc[i]), np.float64(scale[i]), np.float64(low[i]),
                                          np.float64(high[i]))
        out[i] = mean if held else out[i]


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _straddle_pass(which, loc, scale, low, high, out):
    """The vectorized loop of _straddle_element: each element that _straddles_loc gets its value; each other keeps what
    it has where it has no upper bound (the one-sided mean's loop) and is NaN else."""
    for i in range(out.shape[0]):
        lo, hi = np.float64(low[i]), np.float64(high[i])
        value = _straddle_element(which, np.float64(loc[i]), np.float64(scale[i]), lo, hi)
        kept = out[i] if hi == np.inf else np.nan
        out[i] = value if _straddles_loc(np.float64(loc[i]), np.float64(scale[i]), lo, hi) else kept


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _statistic_block(which, start, stop, loc, scale, low, high, out, table, nodes, weights):
    """The mean, variance or entropy of elements [start, stop): vectorized loops first -- the mean's over elements
    without an upper bound (_one_sided_mean_element), _straddle_pass's where some element straddles loc -- each run
    only where the block has elements it holds for, then each element they leave NaN (or, without the straddling
    loop, the mean of an element with an upper bound) in its own regime. The loops index the block's own slices
    from 0: an index the compiler cannot prove non-negative takes numpy's wraparound, which keeps the loops from
    vectorizing (3x slower)."""
    loc, scale, low, high, out = loc[start:stop], scale[start:stop], low[start:stop], high[start:stop], out[start:stop]
    n = out.shape[0]
    finite, straddling, narrow = _regime_counts(loc, scale, low, high)
    if which == MEAN and finite < n:
        for i in range(n):
            mean, _, _, _, held = _one_sided_mean_element(np.float64(loc[i]), np.float64(scale[i]),
                                                          np.float64(low[i]))
            out[i] = mean if held else np.nan
    else:
        out[:] = np.nan
    # the narrow pass costs about 5 ns for each element of the block, the per-element quadrature 180 for each narrow
    # interval: from one in 32 the pass
    narrow_pass = which == MEAN and narrow > 0 and 32 * narrow >= n
    if straddling > 0:
        _straddle_pass(which, loc, scale, low, high, out)
    elif narrow_pass:  # (the one-sided loop's values of the elements with an upper bound, which are not theirs)
        for i in range(n):
            out[i] = out[i] if high[i] == np.inf else np.nan
    if narrow_pass:
        _narrow_mean_pass(loc, scale, low, high, out)
    passes = straddling > 0 or narrow_pass
    for i in range(n):
        if math.isnan(out[i]) or (not passes and high[i] != np.inf):
            out[i] = _value_element(which, np.float64(loc[i]), np.float64(scale[i]), np.float64(low[i]),
                                    np.float64(high[i]), table, nodes, weights)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _gradients_block(which, start, stop, grad, loc, scale, low, high, g_loc, g_scale, g_low, g_high, table, nodes,
                     weights):
    """grad times the mean's, variance's or entropy's derivatives for elements [start, stop), as _statistic_block:
    the vectorized loops' derivatives (NaN in d_loc where they have none), then each other element's in its own
    regime; an output of length 0 is not wanted and not written."""
    grad, loc, scale = grad[start:stop], loc[start:stop], scale[start:stop]
    low, high = low[start:stop], high[start:stop]
    g_loc, g_scale, g_low, g_high = g_loc[start:stop], g_scale[start:stop], g_low[start:stop], g_high[start:stop]
    n = loc.shape[0]
    d_loc, d_scale, d_low, d_high = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
    finite, straddling, _ = _regime_counts(loc, scale, low, high)
    if which == MEAN and finite < n:
        for i in range(n):
            _, var, slope_scale, slope_low, held = _one_sided_mean_element(
                np.float64(loc[i]), np.float64(scale[i]), np.float64(low[i]))
            d_loc[i] = var if held else np.nan
            d_scale[i] = slope_scale
            d_low[i] = slope_low
            d_high[i] = 0.0
    else:
        d_loc[:] = np.nan
    if straddling > 0:
        for i in range(n):
            lo, hi = np.float64(low[i]), np.float64(high[i])
            s_loc, s_scale, s_low, s_high = _straddle_gradient_element(which, np.float64(loc[i]),
                                                                       np.float64(scale[i]), lo, hi)
            straddles = _straddles_loc(np.float64(loc[i]), np.float64(scale[i]), lo, hi)
            kept = d_loc[i] if hi == np.inf else np.nan  # the one-sided mean's loop holds no element with a bound
            d_loc[i] = s_loc if straddles else kept
            d_scale[i] = s_scale if straddles else d_scale[i]
            d_low[i] = s_low if straddles else d_low[i]
            d_high[i] = s_high if straddles else d_high[i]
    for i in range(n):
        if math.isnan(d_loc[i]) or (straddling == 0 and high[i] != np.inf):
            _write_gradients(i, which, grad, loc, scale, low, high, g_loc, g_scale, g_low, g_high, table, nodes,
                             weights)
            continue
        gr = np.float64(grad[i])
        if g_loc.shape[0] > 0:
            g_loc[i] = gr * d_loc[i]
        if g_scale.shape[0] > 0:
            g_scale[i] = gr * d_scale[i]
        if g_low.shape[0] > 0:
            g_low[i] = gr * d_low[i]
        if g_high.shape[0] > 0:
            g_high[i] = gr * d_high[i]


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _values_serial(which, loc, scale, low, high, out, table, nodes, weights):
    _statistic_block(which, 0, out.shape[0], loc, scale, low, high, out, table, nodes, weights)


@numba.njit(cache=True, parallel=True, error_model="numpy", fastmath=False, forceinline=False)
def _values_parallel(which, loc, scale, low, high, out, table, nodes, weights):
    n = out.shape[0]
    for block in numba.prange((n + _BLOCK - 1) // _BLOCK):
        _statistic_block(which, block * _BLOCK, min(n, (block + 1) * _BLOCK), loc, scale, low, high, out, table,
                         nodes, weights)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _gradients_serial(which, grad, loc, scale, low, high, g_loc, g_scale, g_low, g_high, table, nodes, weights):
    """grad times each derivative; an output of length 0 is not wanted and not written."""
    _gradients_block(which, 0, grad.shape[0], grad, loc, scale, low, high, g_loc, g_scale, g_low, g_high, table,
                     nodes, weights)


@numba.njit(cache=True, parallel=True, error_model="numpy", fastmath=False, forceinline=False)
def _gradients_parallel(which, grad, loc, scale, low, high, g_loc, g_scale, g_low, g_high, table, nodes,
                        weights):
    n = grad.shape[0]
    for block in numba.prange((n + _BLOCK - 1) // _BLOCK):
        _gradients_block(which, block * _BLOCK, min(n, (block + 1) * _BLOCK), grad, loc, scale, low, high, g_loc,
                         g_scale, g_low, g_high, table, nodes, weights)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _write_gradients(i, which, grad, loc, scale, low, high, g_loc, g_scale, g_low, g_high, table, nodes,
                     weights):
    d_loc, d_scale, d_low, d_high = _gradient_element(
        which, np.float64(loc[i]), np.float64(scale[i]), np.float64(low[i]), np.float64(high[i]), table, nodes,
        weights)
    gr = np.float64(grad[i])
    if g_loc.shape[0] > 0:
        g_loc[i] = gr * d_loc
    if g_scale.shape[0] > 0:
        g_scale[i] = gr * d_scale
    # an infinite bound's derivative is 0 (the element's state never reads it)
    if g_low.shape[0] > 0:
        g_low[i] = 0.0 if math.isinf(low[i]) else gr * d_low
    if g_high.shape[0] > 0:
        g_high[i] = 0.0 if math.isinf(high[i]) else gr * d_high



def _statistic_values(which: int, loc, scale, low, high) -> torch.Tensor:
    arrays = [_flat(t) for t in (loc, scale, low, high)]
    # the output in its shape from the start: a torch reshape would cost more than the kernel on a small batch
    out = np.empty(tuple(loc.shape), dtype=arrays[0].dtype)
    flat = out.reshape(-1)
    if flat.shape[0] >= _PARALLEL_FROM:
        _threads()
        _values_parallel(which, *arrays, flat, *_CONSTANTS)
    else:
        _values_serial(which, *arrays, flat, *_CONSTANTS)
    return torch.from_numpy(out)


def statistic(name: str, loc: torch.Tensor, scale: torch.Tensor, low: torch.Tensor,
              high: torch.Tensor) -> torch.Tensor:
    """The mean, variance or entropy (``name``) of TN(loc, scale, low, high), all four CPU tensors of one shape and
    dtype; through :class:`KernelStatistic` where a gradient may be asked for, else straight from the kernel."""
    which = STATISTIC_CODES[name]
    if torch.is_grad_enabled() and (loc.requires_grad or scale.requires_grad or low.requires_grad
                                    or high.requires_grad):
        return KernelStatistic.apply(loc, scale, low, high, which)
    return _statistic_values(which, loc, scale, low, high)


class KernelStatistic(torch.autograd.Function):
    """The mean, variance or entropy of TN(loc, scale, low, high), forward and backward by the kernels."""

    @staticmethod
    def forward(ctx, loc, scale, low, high, which):
        ctx.which = which
        ctx.save_for_backward(loc, scale, low, high)
        return _statistic_values(which, loc, scale, low, high)

    @staticmethod
    @_first_order
    def backward(ctx, grad):
        tensors = ctx.saved_tensors
        arrays = [_flat(t) for t in tensors]
        n = arrays[0].shape[0]
        needs = ctx.needs_input_grad[:4]
        outs = [np.empty(tuple(grad.shape) if need else 0, dtype=arrays[0].dtype) for need in needs]
        flats = [o.reshape(-1) for o in outs]
        if n >= _PARALLEL_FROM:
            _threads()
            _gradients_parallel(ctx.which, _flat(grad), *arrays, *flats, *_CONSTANTS)
        else:
            _gradients_serial(ctx.which, _flat(grad), *arrays, *flats, *_CONSTANTS)
        return tuple(torch.from_numpy(o) if need else None for o, need in zip(outs, needs)) + (None,)
