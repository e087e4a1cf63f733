"""The elements the Truncated Normal's compiled per-element kernels on the CPU (numba) share: erfcx and Mills' ratio,
Phi, an element's canonical state, the test of bounds straddling loc, the chunk and block sizes, and the threads and
arrays the kernels take. The kernels themselves are tnlib.distributions._log_prob_kernels (log_prob and the training
loss), _moment_kernels (mean, variance, entropy), _cdf_elements and _cdf_passes (cdf, icdf) and _sample_kernels
(sample, its per-element proposals in _sample_proposals).

The torch route (tnlib.distributions._regimes, _statistics) computes each regime on a whole batch and picks
elements with masks: about a hundred full-size passes per call. In the kernels each element takes its own regime's
branch in one pass, with the same formulas in float64 (float32 arguments are widened and the result rounded once),
so the two routes agree to rounding; the torch route stays for other devices and the methods without a kernel.
Threads split the elements (numba's prange, as many as torch uses).

Mills' ratio needs erfcx, which numba lacks: a table of 100 degree-6 polynomials in y = 4/(4 + x) on x in [0, 50]
(interpolated at Chebyshev nodes from scipy's erfcx, exact to 7 ulps against it) and its asymptotic series beyond,
where six terms are below rounding. Compiled code is cached on disk (cache=True), so a fresh process loads it.
"""
from __future__ import annotations

import math

import numba
import numpy as np
import scipy.special
import torch
from numpy.polynomial import chebyshev

from tnlib.distributions._regimes import _LOG_SQRT_2PI, _SQRT_HALF, _SQRT_PI_OVER_2, _gauss_legendre
from tnlib.kernel_cache import cache_by_folder_sources

cache_by_folder_sources(__file__)  # before the first njit(cache=True): tnlib.kernel_cache says why

_SQRT_PI = math.sqrt(math.pi)
_ERFCX_INTERVALS, _ERFCX_DEGREE, _ERFCX_TABLE_END = 100, 6, 50.0
_Y_START = 4.0 / (4.0 + _ERFCX_TABLE_END)
_Y_WIDTH = (1.0 - _Y_START) / _ERFCX_INTERVALS
# g(x) = 1 - x m(x) and Var[t] on [x, inf): their asymptotic series past 100 and 20, where seven and eight terms are
# below rounding, closed forms below (off by up to a^2 and a^4 ulps: 1e-12 and 4e-11). The kernels read them in
# gradients only, where the torch route's continued fraction would cost more than the loss itself
_G_SERIES = np.array([1.0, -3.0, 15.0, -105.0, 945.0, -10395.0, 135135.0])
_V_SERIES = np.array([1.0, -6.0, 50.0, -518.0, 6354.0, -89782.0, 1435330.0, -25625910.0])


def _erfcx_table() -> np.ndarray:
    """(intervals, degree + 1) monomial coefficients in t in [-1, 1] of erfcx on each interval of y."""
    rows = np.zeros((_ERFCX_INTERVALS, _ERFCX_DEGREE + 1))
    for k in range(_ERFCX_INTERVALS):
        centre = _Y_START + (k + 0.5) * _Y_WIDTH
        coefficients = chebyshev.chebinterpolate(
            lambda t, c=centre: scipy.special.erfcx(4.0 / (c + 0.5 * _Y_WIDTH * t) - 4.0), _ERFCX_DEGREE)
        poly = chebyshev.cheb2poly(coefficients)
        rows[k, : len(poly)] = poly
    return rows


_ERFCX = _erfcx_table()
_NODES, _WEIGHTS = _gauss_legendre(16)
# the tables the cdf's, icdf's and moments' kernels take, in the order they take them
_CONSTANTS = (_ERFCX, _NODES, _WEIGHTS)


@numba.njit(cache=True, error_model="numpy", fastmath={"contract"}, forceinline=False)
def _erfcx_kernel(x, table):
    """erfcx(x) for x >= 0."""
    if x >= 50.0:
        r = 0.5 / (x * x)
        return (1.0 - r * (1.0 - 3.0 * r * (1.0 - 5.0 * r * (1.0 - 7.0 * r * (1.0 - 9.0 * r))))) / (x * _SQRT_PI)
    y = 4.0 / (4.0 + x)
    k = min(int((y - _Y_START) / _Y_WIDTH), _ERFCX_INTERVALS - 1)
    t = (y - _Y_START - (k + 0.5) * _Y_WIDTH) / (0.5 * _Y_WIDTH)
    result = table[k, _ERFCX_DEGREE]
    for j in range(_ERFCX_DEGREE - 1, -1, -1):
        result = result * t + table[k, j]
    return result


@numba.njit(cache=True, error_model="numpy", fastmath={"contract"}, forceinline=False)
def _mills_element(x, table):
    if math.isinf(x):
        return 0.0
    return _SQRT_PI_OVER_2 * _erfcx_kernel(x * _SQRT_HALF, table)


@numba.njit(cache=True, error_model="numpy", fastmath={"contract"}, forceinline=False)
def _g_element(x, m, g_series):
    if math.isinf(x):
        return 0.0
    if x < 100.0:
        return 1.0 - x * m
    inv2 = 1.0 / (x * x)
    s = 0.0
    for j in range(g_series.shape[0] - 1, -1, -1):
        s = s * inv2 + g_series[j]
    return s * inv2


@numba.njit(cache=True, error_model="numpy", fastmath={"contract"}, forceinline=False)
def _ndtr_element(x):
    return 0.5 * math.erfc(-x * _SQRT_HALF)


@numba.njit(cache=True, error_model="numpy", fastmath={"contract"}, forceinline=False)
def _state(loc, scale, low, high, table, nodes, weights, g_series, v_series, moments):
    """The canonical state of one element, as tnlib.distributions._regimes._core computes it.

    Returns (flip, c_loc, c_low, c_high, a, b, w, frame, log_norm, first, p_a, p_b, var): log_norm is log M0
    (frame) or log Z (straddling), first is D = E[t] - a (frame) or E[t] (straddling), var is Var[t] in the frame
    (0 for straddling elements, which do not use it). Without ``moments`` (a forward pass needs log_norm only) first,
    p_a, p_b and var are left 0 where skipping them saves work."""
    flip = high <= loc
    if flip:
        c_loc, c_low, c_high = -loc, -high, -low
    else:
        c_loc, c_low, c_high = loc, low, high
    a = (c_low - c_loc) / scale
    b = (c_high - c_loc) / scale
    w = (high - low) / scale
    narrow = w * max(1.0, abs(a + 0.5 * w)) <= 1.0
    if narrow:
        d_max = 90.0 / (math.sqrt(a * a + 90.0) + a)
        top = min(w, d_max) if a >= 0 else w
        mass = 0.0
        moment = 0.0
        for j in range(nodes.shape[0]):
            s = top * nodes[j]
            fw = math.exp(-s * (a + 0.5 * s)) * weights[j]
            mass += fw
            moment += fw * s
        d_mean = moment / mass
        var = 0.0
        for j in range(nodes.shape[0]):
            s = top * nodes[j]
            var += math.exp(-s * (a + 0.5 * s)) * weights[j] * (s - d_mean) ** 2
        var /= mass
        m0 = mass * top
        return (flip, c_loc, c_low, c_high, a, b, w, True, math.log(m0), d_mean, 1.0 / m0,
                math.exp(-w * (a + 0.5 * w)) / m0, var)
    if a >= 0:
        m_a = _mills_element(a, table)
        if not moments and math.isinf(b):
            return (flip, c_loc, c_low, c_high, a, b, w, True, math.log(m_a), 0.0, 0.0, 0.0, 0.0)
        num = _g_element(a, m_a, g_series)
        m0 = m_a
        p_b = 0.0
        if not math.isinf(b):
            delta = math.exp(-w * (a + 0.5 * w))
            m_b = _mills_element(b, table)
            m0 = m_a - delta * m_b
            num -= delta * (_g_element(b, m_b, g_series) + w * m_b)
            p_b = delta / m0
        d_mean = num / m0
        p_a = 1.0 / m0
        if math.isinf(b) and a >= 20.0:
            inv2 = 1.0 / (a * a)
            s = 0.0
            for j in range(v_series.shape[0] - 1, -1, -1):
                s = s * inv2 + v_series[j]
            var = s * inv2
        else:
            var = 1.0 - p_a * d_mean - (0.0 if p_b == 0.0 else p_b * (w - d_mean))
        return (flip, c_loc, c_low, c_high, a, b, w, True, math.log(m0), d_mean, p_a, p_b, var)
    # straddling: a < 0 < b
    if math.isinf(b):  # Z = Phi(-a) = 1 - Phi(a), and E[t] = p_a
        log_z = math.log1p(-_ndtr_element(a))
        if not moments:
            return (flip, c_loc, c_low, c_high, a, b, w, False, log_z, 0.0, 0.0, 0.0, 0.0)
        p_a = 0.0 if math.isinf(a) else math.exp(-0.5 * a * a - _LOG_SQRT_2PI - log_z)
        return (flip, c_loc, c_low, c_high, a, b, w, False, log_z, p_a, p_a, 0.0, 0.0)
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
    return (flip, c_loc, c_low, c_high, a, b, w, False, log_z, mean_t, p_a, p_b, 0.0)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath={"contract"})
def _straddles_loc(loc, s, low, high):
    """Whether an element's bounds straddle loc more than a scale apart (a < 0 < b, both finite, not narrow): the
    elements log_prob's _straddling_log_prob_element holds for (tnlib.distributions._log_prob_kernels), and those
    the moment kernels' straddling pass takes."""
    a = (low - loc) / s
    b = (high - loc) / s
    w = (high - low) / s
    return ((a < 0.0) & (b > 0.0) & (w * max(1.0, abs(a + 0.5 * w)) > 1.0) & (abs(a) < np.inf) & (abs(b) < np.inf)
            & (1e-300 < s) & (s < 1e300))


_CHUNK = 1024  # elements gathered at a time for a vectorized loop (their columns stay in the first-level cache)

_BLOCK = 16384  # elements a thread takes at a time


def available(*tensors: torch.Tensor) -> bool:
    """Whether the kernels serve these tensors: on the CPU, float32 or float64, outside torch.compile's tracing."""
    first = tensors[0]
    return (first.device.type == "cpu" and first.dtype in (torch.float32, torch.float64)
            and not torch.compiler.is_compiling())


def _flat(t: torch.Tensor) -> np.ndarray:
    """The elements of ``t`` as a 1-D array: a view where ``t`` is contiguous, else a copy (numpy's ravel costs a
    few microseconds less than torch's reshape, which counts on a learned search's batches of tens)."""
    return (t.detach() if t.requires_grad else t).numpy().ravel()


def _threads() -> None:
    """numba's threads for the kernels: as many as torch uses. The first call launches numba's thread pool, and
    its OpenMP layer shares torch's libgomp, so the launch sets torch's thread count to NUMBA_NUM_THREADS (the
    machine's cores): torch's is put back, or a one-thread process (a sweep's cell) would run every later torch op
    on all the cores -- on a busy 2-core machine, small matmuls 40x slower."""
    torch_threads = torch.get_num_threads()
    wanted = max(1, min(torch_threads, numba.config.NUMBA_NUM_THREADS))
    if numba.get_num_threads() != wanted:
        numba.set_num_threads(wanted)
    if torch.get_num_threads() != torch_threads:
        torch.set_num_threads(torch_threads)


_PARALLEL_FROM = 4096  # elements from which the threads split a batch (below, their start costs more than they save)
