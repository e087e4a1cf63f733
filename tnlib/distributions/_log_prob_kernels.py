"""log_prob of the Truncated Normal and its derivatives by compiled per-element kernels on the CPU (numba): every CPU
call of log_prob, the training loss among them. The elements they share with the other kernels (erfcx, an element's
canonical state, the chunk and block sizes, the threads) are tnlib.distributions._kernels'.

The training loss is log_prob with no upper bound, forward and backward, on batches up to millions: its kernel computes
the value and the wanted derivatives in one pass (the backward of KernelLogProb only scales them; each set of
derivatives wanted is a compilation of its own, which forms nothing the others alone need), in straight-line code
the compiler vectorizes (four elements at once under AVX2, eight under AVX-512, both regimes formed and one kept, by
the branch-free log, exp and erfcx of tnlib.distributions._vector_math), over each chunk of elements whose upper
bounds are all infinite. A chunk with a finite upper bound has its elements classified by kind in a vectorized loop
and gathered by kind into float64 columns, and each kind runs a straight-line loop of its own that forms the value
and its derivatives together: bounds straddling loc more than a scale apart (two erfcx's and their Gaussian
factors), narrow intervals (the stretch's Hermite series of tnlib.distributions._cdf_vector), no upper bound (the
loop above), a wide interval on one side of loc (two erfcx's and one exp), no lower bound (the no-upper-bound loop
on the mirror image), no bound at all (the Normal's own formulas); what those loops do not hold for goes to the per-element branches (_log_prob_element, from
_kernels' canonical state). On one thread it costs about what torch's Normal NLL does
(benchmarks/bench_truncated_normal_loss.py).
"""
from __future__ import annotations

import math

import numba
import numpy as np
import torch

from tnlib.distributions import _vector_math
from tnlib.distributions._autograd import _first_order
from tnlib.distributions._cdf_vector import _stretch_moments, gather_by_kind
from tnlib.distributions._kernels import (
    _BLOCK,
    _CHUNK,
    _ERFCX,
    _G_SERIES,
    _NODES,
    _PARALLEL_FROM,
    _V_SERIES,
    _WEIGHTS,
    _flat,
    _state,
    _straddles_loc,
    _threads,
)
from tnlib.distributions._regimes import _LOG_SQRT_2PI, _SQRT_2PI, _SQRT_HALF, _SQRT_PI_OVER_2
from tnlib.distributions._vector_math import _FUSED
from tnlib.kernel_cache import cache_by_folder_sources

cache_by_folder_sources(__file__)  # before the first njit(cache=True): tnlib.kernel_cache says why


@numba.njit(cache=True, error_model="numpy", fastmath={"contract"}, forceinline=False)
def _log_prob_element(value, loc, s, low, high, table, nodes, weights, g_series, v_series, slopes):
    """(log_prob, d/dvalue, d/dloc, d/dscale, d/dlow, d/dhigh) of one element in its own regime (the torch route's
    formulas), the derivatives 0 outside the support and left 0 without ``slopes``."""
    (flip, c_loc, c_low, c_high, a, b, w, frame, log_norm, first, p_a, p_b, var) = _state(
        loc, s, low, high, table, nodes, weights, g_series, v_series, slopes)
    x = -value if flip else value
    if x < c_low or x > c_high:
        return -np.inf, 0.0, 0.0, 0.0, 0.0, 0.0
    xi = (x - c_loc) / s
    if frame:
        d = (x - c_low) / s
        lp = -math.log(s) - log_norm - 0.5 * d * (d + 2.0 * a)
    else:
        lp = -math.log(s) - _LOG_SQRT_2PI - 0.5 * xi * xi - log_norm
    if not slopes:
        return lp, 0.0, 0.0, 0.0, 0.0, 0.0
    if frame:
        dl = d - first
        ds = dl * (2.0 * a + d + first) - var
    else:
        dl = xi - first
        a_pa = 0.0 if p_a == 0.0 else a * p_a
        b_pb = 0.0 if p_b == 0.0 else b * p_b
        ds = -1.0 + xi * xi - a_pa + b_pb
    # back through the mirror: log_prob is even under it
    sign = -1.0 if flip else 1.0
    return (lp, -xi * sign / s, dl * sign / s, ds / s, (p_b if flip else p_a) / s,
            -(p_a if flip else p_b) / s)


@numba.njit(cache=True, inline="always", error_model="numpy")
def _g_series(y):
    """g(x) = 1 - x M(x) by its asymptotic series in y = 1/x^2 (_G_SERIES, unrolled for the loop vectorizer)."""
    c = _G_SERIES
    return y * (c[0] + y * (c[1] + y * (c[2] + y * (c[3] + y * (c[4] + y * (c[5] + y * c[6]))))))


@numba.njit(cache=True, inline="always", error_model="numpy")
def _v_series(y):
    """Var[t] on [x, inf) by its asymptotic series in y = 1/x^2 (_V_SERIES, unrolled)."""
    c = _V_SERIES
    return y * (c[0] + y * (c[1] + y * (c[2] + y * (c[3] + y * (c[4] + y * (c[5] + y * (c[6] + y * c[7])))))))


@numba.njit(cache=True, inline="always", error_model="numpy")
def _one_sided_element(x, loc, s, low):
    """(log_prob, d/dvalue, d/dloc, d/dscale, d/dlow, whether the element is one the formulas hold for) of an element
    with no upper bound, as _log_prob_element computes it, in straight-line code the loop vectorizer turns into SIMD
    code: both regimes are formed and one is selected, by one erfcx, one exp and one log (tnlib.distributions.
    _vector_math). Elements it does not hold for (a finite upper bound, an infinite lower bound, a scale so small
    or large that scale M(a) leaves the normal floats) are the caller's to compute again."""
    a = (low - loc) / s
    d = (x - low) / s
    xi = (x - loc) / s
    frame = a >= 0.0  # the right frame, relative to the bound; else straddling, relative to loc
    scaled_erfcx = _vector_math.erfcx(abs(a) * _SQRT_HALF)
    gauss = _vector_math.exp(-0.5 * a * a)  # sqrt(2 pi) phi(a)
    m = _SQRT_PI_OVER_2 * scaled_erfcx  # Mills' ratio M(a) = Phi(-a) / phi(a)
    z = 1.0 - 0.5 * gauss * scaled_erfcx  # Z = Phi(-a) = 1 - Phi(a), a < 0: in [0.5, 1], no cancellation
    norm = s * (m if frame else z)
    lp = -_vector_math.log(norm) - (0.5 * d * (d + 2.0 * a) if frame else _LOG_SQRT_2PI + 0.5 * xi * xi)
    # the frame's p_a = 1/M, D = E[t] - a = g/M with g = 1 - a M (its series from a = 100, where that cancels
    # below rounding) and Var[t] = 1 - p_a D (its series from a = 20); straddling, p_a = phi(a)/Z and E[t] = p_a
    inv_a2 = 1.0 / (a * a)
    p_frame = 1.0 / m
    g_far = _g_series(inv_a2)
    g_near = 1.0 - a * m
    first = (g_far if a >= 100.0 else g_near) * p_frame
    var_far = _v_series(inv_a2)
    var_near = 1.0 - p_frame * first
    var = var_far if a >= 20.0 else var_near
    p_straddle = gauss / (_SQRT_2PI * z)
    dl = d - first if frame else xi - p_straddle
    ds = dl * (2.0 * a + d + first) - var if frame else -1.0 + xi * xi - a * p_straddle
    below = x < low  # (a NaN value is not below: it gives NaN, as in _log_prob_element)
    per_scale = 0.0 if below else 1.0 / s
    held = abs(a) < 1e300 and 1e-290 < norm < 1e290
    return (-np.inf if below else lp, -xi * per_scale, dl * per_scale, ds * per_scale,
            (p_frame if frame else p_straddle) * per_scale, held)



@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath={"contract"})
def _straddling_log_prob_element(x, loc, s, low, high):
    """(log_prob, d/dvalue, d/dloc, d/dscale, d/dlow, d/dhigh) of an element that _straddles_loc, as
    _log_prob_element computes it, in straight-line code the loop vectorizer turns into SIMD code: Z as 1 less the
    two tails, each phi erfcx, the vector exp's Gaussian factors reused for p_a and p_b (Z >= 0.34 there: the
    interval holds loc and is over a scale wide, so 1 less the tails cancels less than a bit), log(scale Z) by
    the vector log, E[t] = p_a - p_b (within an ulp of p_a of the per-element branch's, as the derivative's size
    wants). log_prob is NaN where it does not hold (a value outside [low, high] or not a number), for the caller
    to compute again. (The moment kernels' _straddle_state forms Z, p_a and p_b by the vector erf: a forceinline
    function shared by the two passes would be compiled for whichever comes first in a process, which moved the
    other's rounding by an ulp.)"""
    a = (low - loc) / s
    b = (high - loc) / s
    t = (x - loc) / s
    gauss_a = _vector_math.exp(-0.5 * a * a)  # sqrt(2 pi) phi(a)
    gauss_b = _vector_math.exp(-0.5 * b * b)
    tails = 0.5 * (gauss_a * _vector_math.erfcx(-a * _SQRT_HALF) + gauss_b * _vector_math.erfcx(b * _SQRT_HALF))
    z = max(1.0 - tails, 0.25)
    per_mass = 1.0 / (_SQRT_2PI * z)
    p_a = gauss_a * per_mass
    p_b = gauss_b * per_mass
    lp = -_vector_math.log(s * z) - _LOG_SQRT_2PI - 0.5 * t * t
    held = (x >= low) & (x <= high)
    per_scale = 1.0 / s
    return (lp if held else np.nan, -t * per_scale, (t - p_a + p_b) * per_scale,
            (-1.0 + t * t - a * p_a + b * p_b) * per_scale, p_a * per_scale, -p_b * per_scale)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath={"contract"})
def _narrow(loc, s, low, high):
    """Whether an element's interval is narrow (both bounds finite, w max(1, |a + w/2|) <= 1 in its canonical
    frame, as _state decides): the elements _narrow_log_prob_element holds for."""
    flip = high <= loc
    a = ((-high if flip else low) - (-loc if flip else loc)) / s
    w = (high - low) / s
    return (w * max(1.0, abs(a + 0.5 * w)) <= 1.0) & (abs(low) < np.inf) & (abs(high) < np.inf)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath={"contract"})
def _narrow_log_prob_element(value, loc, s, low, high):
    """(log_prob, d/dvalue, d/dloc, d/dscale, d/dlow, d/dhigh) of an element whose interval is _narrow, as
    _log_prob_element computes it, in straight-line code the loop vectorizer turns into SIMD code: the frame
    density's mass, mean and variance by the stretch's Hermite series (tnlib.distributions._cdf_vector.
    _stretch_moments, exact to rounding where the per-element branch takes 16 Gauss-Legendre nodes), log and exp
    the vector ones. log_prob is NaN where it does not hold (a value outside [low, high] or not a number), for the
    caller to compute again."""
    flip = high <= loc
    sign = -1.0 if flip else 1.0
    x, c_loc, c_low, c_high = sign * value, sign * loc, -high if flip else low, -low if flip else high
    a = (c_low - c_loc) / s
    w = (high - low) / s
    m0, d_mean, var = _stretch_moments(a, w)
    p_a = 1.0 / m0
    p_b = _vector_math.exp(-w * (a + 0.5 * w)) * p_a
    d = (x - c_low) / s
    xi = (x - c_loc) / s
    norm = s * m0
    lp = -_vector_math.log(norm) - 0.5 * d * (d + 2.0 * a)
    dl = d - d_mean
    ds = dl * (2.0 * a + d + d_mean) - var
    held = (x >= c_low) & (x <= c_high) & (1e-290 < norm) & (norm < 1e290)
    per_scale = 1.0 / s
    signed = sign * per_scale
    return (lp if held else np.nan, -xi * signed, dl * signed, ds * per_scale, (p_b if flip else p_a) * per_scale,
            -(p_a if flip else p_b) * per_scale)



# the kinds a chunk's elements are gathered by for log_prob's loops (_log_prob_kind), in the order gathered:
# bounds straddling loc more than a scale apart, a narrow interval, no upper bound, a wide interval on one side of
# loc, no lower bound, no bound at all (the Normal itself), and the rest (either bound not a number), which the
# per-element branches take
(STRADDLING_LOG_PROB, NARROW_LOG_PROB, ONE_SIDED_LOG_PROB, WIDE_LOG_PROB, LOWER_OPEN_LOG_PROB, UNBOUNDED_LOG_PROB,
 OTHER_LOG_PROB) = range(7)
LOG_PROB_KINDS = 7


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath={"contract"})
def _wide_on_one_side(loc, s, low, high):
    """Whether an element's interval lies on one side of loc (a >= 0 in its canonical frame), both bounds finite,
    and is not _narrow: the elements _wide_log_prob_element holds for."""
    return (((low >= loc) | (high <= loc)) & (abs(low) < np.inf) & (abs(high) < np.inf)
            & (not _narrow(loc, s, low, high)))


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath={"contract"})
def _wide_log_prob_element(value, loc, s, low, high):
    """(log_prob, d/dvalue, d/dloc, d/dscale, d/dlow, d/dhigh) of an element that is _wide_on_one_side, as
    _log_prob_element computes it, in straight-line code the loop vectorizer turns into SIMD code: the frame's mass
    M(a) - exp(-w (a + w/2)) M(b) from two erfcx's (not narrow: the second term is under e^-1/2 of the first, so the
    difference cancels less than two bits), D = E[t] - a and Var[t] from g = 1 - x M(x) at both bounds (its series
    from 100, as _g_element), log and exp the vector ones. log_prob is NaN where it does not hold (a value outside
    [low, high] or not a number, a scale so small or large that the frame leaves the normal floats), for the
    caller to compute again."""
    flip = high <= loc
    sign = -1.0 if flip else 1.0
    x, c_loc, c_low, c_high = sign * value, sign * loc, -high if flip else low, -low if flip else high
    a = (c_low - c_loc) / s
    b = (c_high - c_loc) / s
    w = (high - low) / s
    scaled_a = _vector_math.erfcx(a * _SQRT_HALF)  # M(x) = sqrt(pi/2) erfcx(x / sqrt 2)
    scaled_b = _vector_math.erfcx(b * _SQRT_HALF)
    delta = _vector_math.exp(-w * (a + 0.5 * w))  # phi(b) / phi(a)
    # (the mass from the erfcx's themselves, not from M(a) and M(b): the compiler fuses a product into the
    # difference by the products' other uses, and M(a)'s are the derivatives' alone, so log_prob would round
    # differently with the derivatives and without)
    m0 = _SQRT_PI_OVER_2 * (scaled_a - delta * scaled_b)
    m_a = _SQRT_PI_OVER_2 * scaled_a
    m_b = _SQRT_PI_OVER_2 * scaled_b
    g_a = _g_series(1.0 / (a * a)) if a >= 100.0 else 1.0 - a * m_a
    g_b = _g_series(1.0 / (b * b)) if b >= 100.0 else 1.0 - b * m_b
    d_mean = (g_a - delta * (g_b + w * m_b)) / m0
    p_a = 1.0 / m0
    p_b = delta / m0
    var = 1.0 - p_a * d_mean - p_b * (w - d_mean)
    d = (x - c_low) / s
    xi = (x - c_loc) / s
    norm = s * m0
    lp = -_vector_math.log(norm) - 0.5 * d * (d + 2.0 * a)
    dl = d - d_mean
    ds = dl * (2.0 * a + d + d_mean) - var
    held = (x >= c_low) & (x <= c_high) & (b < 1e300) & (1e-290 < norm) & (norm < 1e290)
    per_scale = 1.0 / s
    signed = sign * per_scale
    return (lp if held else np.nan, -xi * signed, dl * signed, ds * per_scale, (p_b if flip else p_a) * per_scale,
            -(p_a if flip else p_b) * per_scale)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath={"contract"})
def _lower_open_log_prob_element(value, loc, s, low, high):
    """(log_prob, d/dvalue, d/dloc, d/dscale, d/dlow, d/dhigh) of an element with no lower bound and a finite upper
    one: the mirror image of one without an upper bound (value, loc and the bounds negated and swapped), by
    _one_sided_element; the mirror turns the signs of d/dvalue and d/dloc and makes its d/dlow this one's -d/dhigh.
    log_prob is NaN where _one_sided_element does not hold, for the caller to compute again."""
    lp, dx, dl, ds, dh, held = _one_sided_element(-value, -loc, s, -high)
    return lp if held else np.nan, -dx, -dl, ds, 0.0, -dh


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath={"contract"})
def _unbounded_log_prob_element(value, loc, s):
    """(log_prob, d/dvalue, d/dloc, d/dscale, d/dlow, d/dhigh) of an element with both bounds infinite: the Normal's
    own, its mass 1 and E[t] 0, so d/dlow and d/dhigh are 0 (the per-element branch's values, without its state).
    log_prob is NaN where it does not hold (a value not finite, a scale the vector log does not take, t^2 past the
    floats), for the caller to compute again."""
    t = (value - loc) / s
    lp = -_vector_math.log(s) - _LOG_SQRT_2PI - 0.5 * t * t
    held = (abs(t) < 1e150) & (1e-290 < s) & (s < 1e290)
    per_scale = 1.0 / s
    return lp if held else np.nan, -t * per_scale, t * per_scale, (t * t - 1.0) * per_scale, 0.0, 0.0


@numba.njit(cache=True, error_model="numpy", fastmath={"contract"}, forceinline=False)
def _classify_log_prob(start, stop, arrays, kinds, starts):
    """The kind of each element of [start, stop) of the five ``arrays`` (value, loc, scale, low, high) into
    ``kinds`` (STRADDLING_LOG_PROB ... OTHER_LOG_PROB), and into ``starts`` (LOG_PROB_KINDS + 1 rows) the row each
    kind's elements start from once gathered by kind (_cdf_vector.gather_by_kind), the last the count. A loop the
    compiler vectorizes (its divisions are the costly part)."""
    loc, scale, low, high = arrays[1][start:stop], arrays[2][start:stop], arrays[3][start:stop], arrays[4][start:stop]
    n0 = n1 = n2 = n3 = n4 = n5 = 0
    for j in range(stop - start):
        element = (np.float64(loc[j]), np.float64(scale[j]), np.float64(low[j]), np.float64(high[j]))
        unbounded = (element[2] == -np.inf) & (element[3] == np.inf)
        one_sided = element[3] == np.inf
        lower_open = (element[2] == -np.inf) & (abs(element[3]) < np.inf)
        narrow = _narrow(*element)
        straddling = _straddles_loc(*element)
        wide = _wide_on_one_side(*element)
        kind = (UNBOUNDED_LOG_PROB if unbounded else ONE_SIDED_LOG_PROB if one_sided else
                LOWER_OPEN_LOG_PROB if lower_open else
                NARROW_LOG_PROB if narrow else STRADDLING_LOG_PROB if straddling else
                WIDE_LOG_PROB if wide else OTHER_LOG_PROB)
        kinds[j] = kind
        # (a count a kind, each a reduction the loop keeps in vector registers)
        n0 += kind == STRADDLING_LOG_PROB
        n1 += kind == NARROW_LOG_PROB
        n2 += kind == ONE_SIDED_LOG_PROB
        n3 += kind == WIDE_LOG_PROB
        n4 += kind == LOWER_OPEN_LOG_PROB
        n5 += kind == UNBOUNDED_LOG_PROB
    starts[0] = 0
    starts[1] = n0
    starts[2] = n0 + n1
    starts[3] = n0 + n1 + n2
    starts[4] = n0 + n1 + n2 + n3
    starts[5] = n0 + n1 + n2 + n3 + n4
    starts[6] = n0 + n1 + n2 + n3 + n4 + n5
    starts[7] = stop - start


# The derivatives log_prob's kernels form are a tuple of five rows, w.r.t. (value, loc, scale, low, high), each an
# array or None where it is not wanted. Numba compiles the kernels once for each pattern of arrays and Nones it is
# called with, and in each compilation a None row's store is gone (_put, _put_wanted) and with it whatever only
# that row needed (d/dscale's Var[t], the bounds' derivatives): in the loop of a chunk without upper bounds
# (training's) and in each kind's loop of a chunk gathered by kind (_log_prob_kinds, whose columns in the
# first-level cache are copied out after), so a loss that learns loc alone pays for d/dloc alone.


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def _rows_from(row, start, stop):
    """row[start:stop], or None where ``row`` is None (a test of an argument's type: no branch is compiled)."""
    if row is None:
        return None
    return row[start:stop]


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def _put(row, i, x):
    """row[i] = x, or nothing where ``row`` is None."""
    if row is not None:
        row[i] = x


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def _copy_into(row, source):
    """row[:] = source[:row's length], or nothing where ``row`` is None."""
    if row is not None:
        for j in range(row.shape[0]):
            row[j] = source[j]


@numba.njit(cache=True, error_model="numpy", fastmath=_FUSED, forceinline=False)
def _one_sided_pass(start, stop, value, loc, scale, low, high, out, derivatives):
    """log_prob of elements [start, stop) into ``out``, and the wanted ``derivatives`` into their rows, every element
    taken as one without an upper bound, by a straight-line loop the compiler vectorizes; NaN where that does not
    hold. (The loop indexes views from ``start``: an index from a start the compiler cannot prove non-negative takes
    numpy's wraparound, which keeps the loop from vectorizing, 5x slower.)"""
    value, loc, scale, low = value[start:stop], loc[start:stop], scale[start:stop], low[start:stop]
    high, its_out = high[start:stop], out[start:stop]
    d_value, d_loc, d_scale, d_low, d_high = (
        _rows_from(derivatives[0], start, stop), _rows_from(derivatives[1], start, stop),
        _rows_from(derivatives[2], start, stop), _rows_from(derivatives[3], start, stop),
        _rows_from(derivatives[4], start, stop))
    for i in range(stop - start):
        lp, dx, dl, ds, da, held = _one_sided_element(
            np.float64(value[i]), np.float64(loc[i]), np.float64(scale[i]), np.float64(low[i]))
        its_out[i] = lp if held and high[i] == np.inf else np.nan
        _put(d_value, i, dx)
        _put(d_loc, i, dl)
        _put(d_scale, i, ds)
        _put(d_low, i, da)
        _put(d_high, i, 0.0)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def _kind_rows(matrix, starts, kind):
    """The six rows of ``matrix`` over one kind's elements (gather_by_kind's ``starts``), as views from its first: a
    loop indexing them from a count the compiler cannot prove non-negative takes numpy's wraparound there."""
    first, last = starts[kind], starts[kind + 1]
    return (matrix[0][first:last], matrix[1][first:last], matrix[2][first:last], matrix[3][first:last],
            matrix[4][first:last], matrix[5][first:last])


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def _put_wanted(wanted, row, j, x):
    """row[j] = x, or nothing where ``wanted`` (the call's row of that derivative) is None: ``row`` is a chunk's
    column in the first-level cache, which a loop the compiler vectorizes stores into; the test is of an argument's
    type, so a set that does not want the derivative compiles neither the store nor what only it needed."""
    if wanted is not None:
        row[j] = x


@numba.njit(cache=True, error_model="numpy", fastmath=_FUSED, forceinline=False)
def _log_prob_kinds(starts, columns, results, derivatives):
    """log_prob and the wanted ``derivatives`` (log_prob_arrays' rows: only their pattern of arrays and Nones is
    read) of a chunk's elements gathered by kind (gather_by_kind, _classify_log_prob's kinds from the rows
    ``starts`` says) into the rows of ``results``, NaN where not held: a loop the compiler vectorizes a kind, each
    forming its own kind's formulas alone (_straddling_log_prob_element, _narrow_log_prob_element,
    _one_sided_element, _wide_log_prob_element, _lower_open_log_prob_element, _unbounded_log_prob_element); the rest
    (OTHER_LOG_PROB) left NaN.
    (The loops store into the chunk's ``results``, never into the call's rows: loops storing there, each an array or
    None, did not vectorize, 5-8x slower.)"""
    d_value, d_loc, d_scale, d_low, d_high = derivatives
    value, loc, scale, low, high, _ = _kind_rows(columns, starts, STRADDLING_LOG_PROB)
    r0, r1, r2, r3, r4, r5 = _kind_rows(results, starts, STRADDLING_LOG_PROB)
    for j in range(r0.shape[0]):
        lp, dx, dl, ds, da, db = _straddling_log_prob_element(value[j], loc[j], scale[j], low[j], high[j])
        r0[j] = lp
        _put_wanted(d_value, r1, j, dx)
        _put_wanted(d_loc, r2, j, dl)
        _put_wanted(d_scale, r3, j, ds)
        _put_wanted(d_low, r4, j, da)
        _put_wanted(d_high, r5, j, db)
    value, loc, scale, low, high, _ = _kind_rows(columns, starts, NARROW_LOG_PROB)
    r0, r1, r2, r3, r4, r5 = _kind_rows(results, starts, NARROW_LOG_PROB)
    for j in range(r0.shape[0]):
        lp, dx, dl, ds, da, db = _narrow_log_prob_element(value[j], loc[j], scale[j], low[j], high[j])
        r0[j] = lp
        _put_wanted(d_value, r1, j, dx)
        _put_wanted(d_loc, r2, j, dl)
        _put_wanted(d_scale, r3, j, ds)
        _put_wanted(d_low, r4, j, da)
        _put_wanted(d_high, r5, j, db)
    value, loc, scale, low, high, _ = _kind_rows(columns, starts, ONE_SIDED_LOG_PROB)
    r0, r1, r2, r3, r4, r5 = _kind_rows(results, starts, ONE_SIDED_LOG_PROB)
    for j in range(r0.shape[0]):
        lp, dx, dl, ds, da, held = _one_sided_element(value[j], loc[j], scale[j], low[j])
        r0[j] = lp if held else np.nan
        _put_wanted(d_value, r1, j, dx)
        _put_wanted(d_loc, r2, j, dl)
        _put_wanted(d_scale, r3, j, ds)
        _put_wanted(d_low, r4, j, da)
        _put_wanted(d_high, r5, j, 0.0)
    value, loc, scale, low, high, _ = _kind_rows(columns, starts, WIDE_LOG_PROB)
    r0, r1, r2, r3, r4, r5 = _kind_rows(results, starts, WIDE_LOG_PROB)
    for j in range(r0.shape[0]):
        lp, dx, dl, ds, da, db = _wide_log_prob_element(value[j], loc[j], scale[j], low[j], high[j])
        r0[j] = lp
        _put_wanted(d_value, r1, j, dx)
        _put_wanted(d_loc, r2, j, dl)
        _put_wanted(d_scale, r3, j, ds)
        _put_wanted(d_low, r4, j, da)
        _put_wanted(d_high, r5, j, db)
    value, loc, scale, low, high, _ = _kind_rows(columns, starts, LOWER_OPEN_LOG_PROB)
    r0, r1, r2, r3, r4, r5 = _kind_rows(results, starts, LOWER_OPEN_LOG_PROB)
    for j in range(r0.shape[0]):
        lp, dx, dl, ds, da, db = _lower_open_log_prob_element(value[j], loc[j], scale[j], low[j], high[j])
        r0[j] = lp
        _put_wanted(d_value, r1, j, dx)
        _put_wanted(d_loc, r2, j, dl)
        _put_wanted(d_scale, r3, j, ds)
        _put_wanted(d_low, r4, j, da)
        _put_wanted(d_high, r5, j, db)
    value, loc, scale, low, high, _ = _kind_rows(columns, starts, UNBOUNDED_LOG_PROB)
    r0, r1, r2, r3, r4, r5 = _kind_rows(results, starts, UNBOUNDED_LOG_PROB)
    for j in range(r0.shape[0]):
        lp, dx, dl, ds, da, db = _unbounded_log_prob_element(value[j], loc[j], scale[j])
        r0[j] = lp
        _put_wanted(d_value, r1, j, dx)
        _put_wanted(d_loc, r2, j, dl)
        _put_wanted(d_scale, r3, j, ds)
        _put_wanted(d_low, r4, j, da)
        _put_wanted(d_high, r5, j, db)
    r0 = _kind_rows(results, starts, OTHER_LOG_PROB)[0]
    r0[:] = np.nan


@numba.njit(cache=True, error_model="numpy", fastmath=_FUSED, forceinline=False)
def _log_prob_block(start, stop, value, loc, scale, low, high, out, derivatives, table, nodes, weights, g_series,
                    v_series):
    """log_prob of elements [start, stop) into ``out``, and the wanted ``derivatives`` (five rows, w.r.t. value,
    loc, scale, low and high, each an array or None) into their rows.

    Chunk by chunk: a chunk whose upper bounds are all infinite and lower ones all not (the paper's training) takes
    _one_sided_pass, a straight-line loop the compiler vectorizes, in place; any other has its elements' kinds found
    by a vectorized loop (_classify_log_prob), gathered by kind into float64 columns (a chunk of one kind copied in
    order, by a loop that vectorizes) and each kind computed by a loop of its own (_log_prob_kinds). The elements
    these mark by a NaN (a bound not a number, a value outside the support) go to a last loop, each in its own
    regime."""
    arrays = (value, loc, scale, low, high)
    d_value, d_loc, d_scale, d_low, d_high = derivatives
    want = ((d_value is not None) | (d_loc is not None) | (d_scale is not None) | (d_low is not None)
            | (d_high is not None))
    columns = np.empty((6, _CHUNK))
    results = np.empty((6, _CHUNK))
    kinds = np.empty(_CHUNK, dtype=np.uint8)
    starts = np.empty(LOG_PROB_KINDS + 1, dtype=np.int64)
    ends = np.empty(LOG_PROB_KINDS, dtype=np.int64)
    order = np.empty(_CHUNK, dtype=np.uint16)  # (rows within a chunk: _CHUNK is below 2^16)
    for first in range(start, stop, _CHUNK):
        last = min(first + _CHUNK, stop)
        bounded = 0  # elements _one_sided_pass does not hold for by their bounds
        its_low, its_high = low[first:last], high[first:last]  # (views: see _one_sided_pass)
        for j in range(last - first):
            bounded += (its_high[j] != np.inf) | (its_low[j] == -np.inf)
        if bounded == 0:
            _one_sided_pass(first, last, value, loc, scale, low, high, out, derivatives)
            continue
        _classify_log_prob(first, last, arrays, kinds, starts)
        in_order = gather_by_kind(first, last, arrays, kinds, starts, columns, order, ends)
        _log_prob_kinds(starts, columns, results, derivatives)
        if in_order:
            _copy_into(out[first:last], results[0])
            _copy_into(_rows_from(d_value, first, last), results[1])
            _copy_into(_rows_from(d_loc, first, last), results[2])
            _copy_into(_rows_from(d_scale, first, last), results[3])
            _copy_into(_rows_from(d_low, first, last), results[4])
            _copy_into(_rows_from(d_high, first, last), results[5])
        else:
            for j in range(last - first):
                i = np.int64(columns[5, j])
                out[i] = results[0, j]
                _put(d_value, i, results[1, j])
                _put(d_loc, i, results[2, j])
                _put(d_scale, i, results[3, j])
                _put(d_low, i, results[4, j])
                _put(d_high, i, results[5, j])
    for i in range(start, stop):
        if not math.isnan(out[i]):
            continue
        element = _log_prob_element(np.float64(value[i]), np.float64(loc[i]), np.float64(scale[i]),
                                    np.float64(low[i]), np.float64(high[i]), table, nodes, weights, g_series,
                                    v_series, want)
        out[i] = element[0]
        _put(d_value, i, element[1])
        _put(d_loc, i, element[2])
        _put(d_scale, i, element[3])
        _put(d_low, i, element[4])
        _put(d_high, i, element[5])



@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _log_prob_serial(value, loc, scale, low, high, out, derivatives, table, nodes, weights, g_series, v_series):
    _log_prob_block(0, out.shape[0], value, loc, scale, low, high, out, derivatives, table, nodes, weights,
                    g_series, v_series)


@numba.njit(cache=True, parallel=True, error_model="numpy", fastmath=False, forceinline=False)
def _log_prob_parallel(value, loc, scale, low, high, out, derivatives, table, nodes, weights, g_series, v_series):
    n = out.shape[0]
    for block in numba.prange((n + _BLOCK - 1) // _BLOCK):
        _log_prob_block(block * _BLOCK, min(n, (block + 1) * _BLOCK), value, loc, scale, low, high, out, derivatives,
                        table, nodes, weights, g_series, v_series)



_CONSTANTS = (_ERFCX, _NODES, _WEIGHTS, _G_SERIES, _V_SERIES)


# The derivatives a call forms: the fewest of these sets that hold the wanted ones, w.r.t. (value, loc, scale, low,
# high). Each set is a compilation of the kernels of its own (see _rows_from), so the sets are few: none (log_prob
# alone), loc (training with the scale fixed), loc and scale (training), and all five (anything else).
_DERIVATIVE_SETS = ((False,) * 5, (False, True, False, False, False), (False, True, True, False, False), (True,) * 5)


def _derivatives_formed(wanted) -> tuple[bool, ...]:
    """The first of _DERIVATIVE_SETS holding every derivative ``wanted`` (five booleans)."""
    for formed in _DERIVATIVE_SETS:
        if all(f or not w for f, w in zip(formed, wanted)):
            return formed
    raise AssertionError("the last set holds all five")


class KernelLogProb(torch.autograd.Function):
    """log_prob(value) of TN(loc, scale, low, high), all five of one shape, by the kernels in one pass: the forward
    computes the derivatives beside the value where an input needs them, and the backward only scales them."""

    @staticmethod
    def forward(ctx, value, loc, scale, low, high):
        needs = ctx.needs_input_grad
        out, derivatives = log_prob_arrays([_flat(t) for t in (value, loc, scale, low, high)], needs)
        flat = value.dim() == 1  # (a reshape costs microseconds that count on a training batch of hundreds)
        ctx.slopes = [None if not need else torch.from_numpy(row) if flat else
                      torch.from_numpy(row).reshape(value.shape) for row, need in zip(derivatives, needs)]
        return torch.from_numpy(out) if flat else torch.from_numpy(out).reshape(value.shape)

    @staticmethod
    @_first_order
    def backward(ctx, grad):
        return tuple(None if slope is None else slope * grad for slope in ctx.slopes)


def log_prob(value: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor, low: torch.Tensor,
             high: torch.Tensor) -> torch.Tensor:
    """log_prob(value) of TN(loc, scale, low, high), all five of one shape, by the kernels: through KernelLogProb
    where a gradient is wanted, else straight from the kernel (a torch.autograd.Function costs microseconds that
    count on a search's batches of tens)."""
    if torch.is_grad_enabled() and (value.requires_grad or loc.requires_grad or scale.requires_grad
                                    or low.requires_grad or high.requires_grad):
        return KernelLogProb.apply(value, loc, scale, low, high)
    out, _ = log_prob_arrays([_flat(t) for t in (value, loc, scale, low, high)], _DERIVATIVE_SETS[0])
    return torch.from_numpy(out).reshape(value.shape)


def log_prob_arrays(arrays: list[np.ndarray], wanted) -> tuple[np.ndarray, tuple]:
    """log_prob of the flat (value, loc, scale, low, high) ``arrays``, and its derivatives w.r.t. each that
    ``wanted`` (five booleans) says, in the arrays' dtype: five rows, each an array where formed (the fewest of
    _DERIVATIVE_SETS holding the wanted ones), else None. Threads split a batch from _PARALLEL_FROM elements where
    torch uses more than one."""
    out = np.empty_like(arrays[0])
    n = out.shape[0]
    derivatives = tuple(np.empty_like(out) if formed else None for formed in _derivatives_formed(wanted))
    # (numba's thread count is read and set only where its threads run: both cost microseconds a call)
    parallel = n >= _PARALLEL_FROM and torch.get_num_threads() > 1
    if parallel:
        _threads()
    kernel = _log_prob_parallel if parallel else _log_prob_serial
    kernel(*arrays, out, derivatives, *_CONSTANTS)
    return out, derivatives
