"""The CDF of the Truncated Normal and its derivatives in straight-line code the compiler vectorizes (numba: four
float64 lanes under AVX2, eight under AVX-512), for the elements of the common regimes.

The formulas are the per-element kernel's (tnlib.distributions._cdf_elements) where each is exact, in closed form:
Phi of a non-positive argument as erfc(y)/2 = exp(-y^2) erfcx(y)/2 with y^2 kept as a double-double (so a far
argument loses no more than libm's erfc does), Mills' ratio M = sqrt(pi/2) erfcx(x / sqrt 2) and the frame's
g(x) = 1 - x M(x) = M(x) D(x) with D the one-sided mean's excess (tnlib.distributions._vector_math), where the
per-element kernel takes Gauss-Legendre moments of the frame integrand. Those closed forms hold where the stretch
they integrate over is not narrow (its integral then keeps at least a third of its leading term); where it is -- a
value within a short stretch of a bound, a narrow interval -- the stretch's Hermite series about its middle
(_stretch) takes their place. In the far tails (|t| from 36 on a straddling element, results below exp(-700)), on
a wide stretch with a negative slope, and for a value outside the support or a NaN, the element is marked not held
and the caller takes the per-element kernel for it.

cdf_element forms the value and the five derivatives, both the frame's (a >= 0) and the straddling element's (a < 0)
formulas in each lane, and keeps one: a select costs less than the branch that would stop the loop vectorizing.
The forward pass takes straddling_cdf and frame_cdf instead, the value alone and one kind of element each (a
chunk's elements are gathered by cdf_kind first: a straddling element's value past loc, under it near the lower
bound or beyond; a frame element on a wide interval, mirrored or not, whose side of the value is a narrow stretch
or a wide one; a narrow interval, mirrored or not), which drops the derivatives and the other kinds' formulas;
where every narrow interval of a chunk is short enough, their masses take the series to He_8 alone
(_short_stretch_mass). Both form a straddling element's normalizing mass and its mass on the far side of loc from
the bound as sums of erf's, never as 1 less the other masses (which cancels where the two tails pass 1/2, or
beside a bound just under loc), and cdf_element forms each derivative as a product of such masses or, for loc's,
as the frame does: F times the distance from the mean of the part below the value to the mean (past the mean,
1 - F times the other part's); on a narrow interval scale's as F (1 - F) times the difference of the two parts'
second moments (_stretch_moments).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from tnlib.distributions import _vector_math
from tnlib.distributions._regimes import _LOG_SQRT_2PI, _SQRT_HALF, _SQRT_PI_OVER_2
from tnlib.kernel_cache import cache_by_folder_sources

cache_by_folder_sources(__file__)  # before the first njit(cache=True): tnlib.kernel_cache says why

# the far tails the closed forms leave to the per-element kernel: a straddling element's |t| from here (Phi below
# 1e-300, where the vector exp returns 0 and libm's a subnormal), and a mirrored frame element's survival function
# below exp(-700) (a CDF up there is 1 less a mass that vanishes, which the pass forms as well as the kernel)
_STRADDLE_END = 36.0
_LOG_2 = math.log(2.0)
_LOG_RESULT_FLOOR = -700.0


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _ndtr_lower(x):
    """Phi(x) for x <= 0 (the caller's), relatively within a few ulps: erfc(-x/sqrt 2)/2."""
    return 0.5 * _vector_math.erfc(-x * _SQRT_HALF)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _vector_mills(x):
    """Mills' ratio M(x) = Phi(-x)/phi(x) for x >= 0 (+inf gives 0)."""
    return _SQRT_PI_OVER_2 * _vector_math.erfcx(x * _SQRT_HALF)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _wide(a, w):
    """Whether the frame integral J(a, w) is not narrow (tnlib.distributions._moment_kernels._is_narrow), where its
    closed form M(a) - exp(-w (a + w/2)) M(a + w) keeps at least a third of M(a)."""
    return w * max(1.0, abs(a + 0.5 * w)) > 1.0


# the narrow stretch's Hermite series to He_24: the first term dropped is below 3e-19 of the sum where |c| m and m
# are at most 1/2; its coefficients 1/(n+1)! (even n), 1/(n! (n+2)) (odd n) and, for the second moment,
# 1/(n! (n+3)) (even n)
_STRETCH_EVEN = tuple(1.0 / math.factorial(n + 1) for n in range(0, 25, 2))
_STRETCH_ODD = tuple(1.0 / (math.factorial(n) * (n + 2)) for n in range(1, 25, 2))
_STRETCH_SECOND = tuple(1.0 / (math.factorial(n) * (n + 3)) for n in range(0, 25, 2))


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _stretch(a, length):
    """(J, D) of _stretch_moments: the mass and mean of a narrow stretch (a caller that drops the variance does
    not pay its series: the compiler removes what nothing reads)."""
    mass, mean, _ = _stretch_moments(a, length)
    return mass, mean


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath={"contract"})
def _stretch_moments(a, length):
    """(J, D, V): the mass J(a, length) = int_0^length exp(-a r - r^2/2) dr of a narrow stretch, its mean D and
    its variance V, by the integrand's Hermite series about the stretch's middle m: exp(-c s - s^2/2) = sum He_n(c)
    (-s)^n / n! with c = a + m, so J = exp(-m (a + m/2)) 2m S0, D = m - m^2 S1/S0 and V = m^2 (S2/S0 -
    m^2 (S1/S0)^2), S0 = sum He_2k(c) m^2k / (2k+1)!, S1 = sum He_2k+1(c) m^2k / ((2k+1)! (2k+3)), S2 = sum
    He_2k(c) m^2k / ((2k)! (2k+3)) (to leading order 1/3 - (c m)^2/9: the difference keeps 11/12 of S2/S0).
    Exact to rounding where the per-element kernel takes 16 Gauss-Legendre nodes; written out term by term (a loop
    here would stop the caller's loop vectorizing)."""
    m = 0.5 * length
    c = a + m
    m2 = m * m
    h0, h1 = 1.0, c
    h2 = c * h1 - 1.0 * h0
    h3 = c * h2 - 2.0 * h1
    h4 = c * h3 - 3.0 * h2
    h5 = c * h4 - 4.0 * h3
    h6 = c * h5 - 5.0 * h4
    h7 = c * h6 - 6.0 * h5
    h8 = c * h7 - 7.0 * h6
    h9 = c * h8 - 8.0 * h7
    h10 = c * h9 - 9.0 * h8
    h11 = c * h10 - 10.0 * h9
    h12 = c * h11 - 11.0 * h10
    h13 = c * h12 - 12.0 * h11
    h14 = c * h13 - 13.0 * h12
    h15 = c * h14 - 14.0 * h13
    h16 = c * h15 - 15.0 * h14
    h17 = c * h16 - 16.0 * h15
    h18 = c * h17 - 17.0 * h16
    h19 = c * h18 - 18.0 * h17
    h20 = c * h19 - 19.0 * h18
    h21 = c * h20 - 20.0 * h19
    h22 = c * h21 - 21.0 * h20
    h23 = c * h22 - 22.0 * h21
    h24 = c * h23 - 23.0 * h22
    s0 = h24 * _STRETCH_EVEN[12]
    s0 = h20 * _STRETCH_EVEN[10] + m2 * (h22 * _STRETCH_EVEN[11] + m2 * s0)
    s0 = h16 * _STRETCH_EVEN[8] + m2 * (h18 * _STRETCH_EVEN[9] + m2 * s0)
    s0 = h12 * _STRETCH_EVEN[6] + m2 * (h14 * _STRETCH_EVEN[7] + m2 * s0)
    s0 = h8 * _STRETCH_EVEN[4] + m2 * (h10 * _STRETCH_EVEN[5] + m2 * s0)
    s0 = h4 * _STRETCH_EVEN[2] + m2 * (h6 * _STRETCH_EVEN[3] + m2 * s0)
    s0 = h0 * _STRETCH_EVEN[0] + m2 * (h2 * _STRETCH_EVEN[1] + m2 * s0)
    s1 = h23 * _STRETCH_ODD[11]
    s1 = h19 * _STRETCH_ODD[9] + m2 * (h21 * _STRETCH_ODD[10] + m2 * s1)
    s1 = h15 * _STRETCH_ODD[7] + m2 * (h17 * _STRETCH_ODD[8] + m2 * s1)
    s1 = h11 * _STRETCH_ODD[5] + m2 * (h13 * _STRETCH_ODD[6] + m2 * s1)
    s1 = h7 * _STRETCH_ODD[3] + m2 * (h9 * _STRETCH_ODD[4] + m2 * s1)
    s1 = h3 * _STRETCH_ODD[1] + m2 * (h5 * _STRETCH_ODD[2] + m2 * s1)
    s1 = h1 * _STRETCH_ODD[0] + m2 * s1
    s2 = h24 * _STRETCH_SECOND[12]
    s2 = h20 * _STRETCH_SECOND[10] + m2 * (h22 * _STRETCH_SECOND[11] + m2 * s2)
    s2 = h16 * _STRETCH_SECOND[8] + m2 * (h18 * _STRETCH_SECOND[9] + m2 * s2)
    s2 = h12 * _STRETCH_SECOND[6] + m2 * (h14 * _STRETCH_SECOND[7] + m2 * s2)
    s2 = h8 * _STRETCH_SECOND[4] + m2 * (h10 * _STRETCH_SECOND[5] + m2 * s2)
    s2 = h4 * _STRETCH_SECOND[2] + m2 * (h6 * _STRETCH_SECOND[3] + m2 * s2)
    s2 = h0 * _STRETCH_SECOND[0] + m2 * (h2 * _STRETCH_SECOND[1] + m2 * s2)
    q1 = s1 / s0
    variance = m2 * (s2 / s0 - m2 * q1 * q1)
    return _vector_math.exp(-m * (a + 0.5 * m)) * 2.0 * m * s0, m - m2 * s1 / s0, variance


# a stretch whose max(1, |c|) m is at most this (c and m as _stretch's) takes its mass's series to He_8 alone
# (_short_stretch_mass): the first term dropped, He_10(c) m^10 / 11!, is at most T(10) (max(1, |c|) m)^10 / 11!
# (T(10) = 9496, the sum of He_10's coefficients' sizes), 2.4e-24 of the sum at 1e-2, and the rest less
_SHORT_STRETCH_END = 1e-2


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _short_stretch(a, length):
    """Whether the stretch from a of this length is short enough for _short_stretch_mass."""
    m = 0.5 * length
    return max(1.0, abs(a + m)) * m <= _SHORT_STRETCH_END


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def short_stretch_sum(a, length):
    """(m, S0) of a stretch _short_stretch holds for: half its length and _stretch_moments' S0 to He_8 (the
    same terms summed the same way, less those below 1e-23 of the sum there), J(a, length) being
    exp(-m (a + m/2)) 2m S0 by whichever exponential the caller's loop takes."""
    m = 0.5 * length
    c = a + m
    m2 = m * m
    h0, h1 = 1.0, c
    h2 = c * h1 - 1.0 * h0
    h3 = c * h2 - 2.0 * h1
    h4 = c * h3 - 3.0 * h2
    h5 = c * h4 - 4.0 * h3
    h6 = c * h5 - 5.0 * h4
    h7 = c * h6 - 6.0 * h5
    h8 = c * h7 - 7.0 * h6
    s0 = h8 * _STRETCH_EVEN[4]
    s0 = h4 * _STRETCH_EVEN[2] + m2 * (h6 * _STRETCH_EVEN[3] + m2 * s0)
    s0 = h0 * _STRETCH_EVEN[0] + m2 * (h2 * _STRETCH_EVEN[1] + m2 * s0)
    return m, s0


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _short_stretch_mass(a, length):
    """_stretch's mass J(a, length) of a stretch _short_stretch holds for, its series to He_8 (a narrow interval's
    loop takes it in place of the 24 terms where every element's stretches are this short)."""
    m, s0 = short_stretch_sum(a, length)
    return _vector_math.exp(-m * (a + 0.5 * m)) * 2.0 * m * s0


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def canonical_frame(loc, s, low, high):
    """(flip, c_loc, c_low, c_high, a, b, w, narrow, frame) of one element: mirrored where high <= loc, its bounds
    in scales from loc in that frame, its width, whether the interval is narrow, and whether the element takes the
    frame's formulas (a >= 0, or narrow) rather than the straddling element's."""
    flip = high <= loc
    c_loc = -loc if flip else loc
    c_low = -high if flip else low
    c_high = -low if flip else high
    a = (c_low - c_loc) / s
    b = (c_high - c_loc) / s
    w = (high - low) / s
    # (& and | rather than and/or here: a short circuit is a branch, which would stop the loop vectorizing)
    narrow = (w < math.inf) & (not _wide(a, w))  # a narrow interval is a frame element whatever the sign of a
    frame = (a >= 0.0) | narrow
    return flip, c_loc, c_low, c_high, a, b, w, narrow, frame


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _erf_and_erfc(y):
    """(erf(y), erfc(y)) for y >= 0 from one erfc: erf by its series below 1/2, 1 - erfc beyond."""
    complement = _vector_math.erfc(y)
    return (_vector_math.erf_series(y) if y < _vector_math.ERF_SERIES_END else 1.0 - complement), complement


# the cancellation straddling_cdf lets a wide head's difference of masses carry (at least 1/8 of the smaller mass
# kept: a few ulps); a closer pair is left to cdf_element and the per-element kernel
_STRADDLE_CANCELLATION = 8.0


# the kinds a chunk's elements are gathered by for the cdf's forward loops (cdf_kind), in the order gathered, the
# straddling ones first: a straddling element's value past loc, under loc within a short stretch of the lower bound,
# under loc beyond it; a frame element on a wide interval whose side of the value the result is formed from (below
# it, or above it where mirrored) is a narrow stretch or a wide one, not mirrored and mirrored; a frame element on a
# narrow interval, not mirrored and mirrored
PAST_LOC, NARROW_HEAD, WIDE_HEAD = 0, 1, 2
NARROW_SIDE, WIDE_SIDE, MIRRORED_NARROW_SIDE, MIRRORED_WIDE_SIDE = 3, 4, 5, 6
NARROW_INTERVAL, MIRRORED_NARROW_INTERVAL = 7, 8
CDF_KINDS = 9


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _side(x, c_low, c_high, s, a, flip):
    """(d, rest, side_start, side_length, no_b) of a frame element at its canonical value ``x``: the distances in
    scales from the lower bound and to the upper one, and the stretch the cdf is formed from (frame_cdf)."""
    d = (x - c_low) / s
    rest = (c_high - x) / s
    no_b = c_high == math.inf
    return d, rest, (a + d) if flip else a, rest if flip else d, no_b


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def cdf_kind(value, loc, s, low, high):
    """The kind of one element (PAST_LOC ... MIRRORED_NARROW_INTERVAL) by the tests straddling_cdf and frame_cdf
    choose their formulas by, so that a loop over one kind forms that kind's formula alone, and whether it is a
    narrow interval whose stretches are too long for _short_stretch_mass."""
    flip, c_loc, c_low, c_high, a, b, w, narrow, frame = canonical_frame(loc, s, low, high)
    # (straddling_cdf's own a, t and d: unmirrored, which canonical_frame's differ from only where the scale is
    # not positive)
    raw_a = (low - loc) / s
    t = (value - loc) / s
    raw_d = (value - low) / s
    # (& and | rather than and/or here: a short circuit is a branch, which would stop the loop vectorizing)
    narrow_head = (low > -math.inf) & (not _wide(raw_a, raw_d))
    straddling_kind = (NARROW_HEAD if narrow_head else WIDE_HEAD) if t <= 0.0 else PAST_LOC
    _, _, side_start, side_length, no_b = _side(-value if flip else value, c_low, c_high, s, a, flip)
    narrow_side = (not (flip & no_b)) & (not _wide(side_start, side_length))
    wide_kind = ((MIRRORED_NARROW_SIDE if narrow_side else MIRRORED_WIDE_SIDE) if flip
                 else (NARROW_SIDE if narrow_side else WIDE_SIDE))
    frame_kind = (MIRRORED_NARROW_INTERVAL if flip else NARROW_INTERVAL) if narrow else wide_kind
    short = _short_stretch(a, w) & _short_stretch(side_start, side_length)
    return (frame_kind if frame else straddling_kind), narrow & frame & (not short)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def classify_cdf(start, stop, arrays, kinds, starts):
    """cdf_kind of each of the five ``arrays``' (value, loc, scale, low, high) elements [start, stop) into
    ``kinds``, and into ``starts`` (CDF_KINDS + 1 rows) the row each kind's elements start from once gathered by
    kind (gather_by_kind), the last the count; returns the count of narrow intervals too long for
    _short_stretch_mass. A loop the compiler vectorizes, whose divisions are the costly part of finding the
    kinds."""
    value, loc, scale, low, high = (arrays[0][start:stop], arrays[1][start:stop], arrays[2][start:stop],
                                    arrays[3][start:stop], arrays[4][start:stop])
    n0 = n1 = n2 = n3 = n4 = n5 = n6 = n7 = long_narrow = 0
    for j in range(stop - start):
        kind, long = cdf_kind(np.float64(value[j]), np.float64(loc[j]), np.float64(scale[j]), np.float64(low[j]),
                              np.float64(high[j]))
        kinds[j] = kind
        long_narrow += long
        # (a count a kind, each a reduction the loop keeps in vector registers)
        n0 += kind == 0
        n1 += kind == 1
        n2 += kind == 2
        n3 += kind == 3
        n4 += kind == 4
        n5 += kind == 5
        n6 += kind == 6
        n7 += kind == 7
    starts[0] = 0
    starts[1] = n0
    starts[2] = starts[1] + n1
    starts[3] = starts[2] + n2
    starts[4] = starts[3] + n3
    starts[5] = starts[4] + n4
    starts[6] = starts[5] + n5
    starts[7] = starts[6] + n6
    starts[8] = starts[7] + n7
    starts[9] = stop - start
    return long_narrow


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath={"contract"})
def _copy_by_order(array, order, count, column):
    for row in range(count):
        column[row] = np.float64(array[order[row]])


@numba.njit(cache=True, error_model="numpy", fastmath={"contract"}, forceinline=False)
def gather_by_kind(start, stop, arrays, kinds, starts, columns, order, ends):
    """The five ``arrays`` (value, loc, scale, low, high) of elements [start, stop) in float64 in the first columns
    of the rows of ``columns`` (6 x at least stop - start), each kind's elements (``kinds``, from 0) together from
    its row in ``starts``, in order, row 5 holding each one's index; ``order`` (a row an element) and ``ends`` (a
    row a kind) are scratch. Returns whether the rows are the elements' own order (one kind holds them all: then a
    loop that vectorizes copies them). A contiguous loop over one kind then forms that kind's formulas alone (a
    loop that reads the elements through their indices would not vectorize). The kinds are found by a vectorized
    loop before; here each element's row is found first, in a loop that moves one small integer an element, and
    the columns are copied after, a column at a time (moving the five at once took 1.2-1.5x longer)."""
    count = stop - start
    value, loc, scale, low, high = (arrays[0][start:stop], arrays[1][start:stop], arrays[2][start:stop],
                                    arrays[3][start:stop], arrays[4][start:stop])
    in_order = False
    for kind in range(ends.shape[0]):
        in_order |= starts[kind + 1] - starts[kind] == count
    if in_order:
        for j in range(count):
            columns[0, j] = np.float64(value[j])
            columns[1, j] = np.float64(loc[j])
            columns[2, j] = np.float64(scale[j])
            columns[3, j] = np.float64(low[j])
            columns[4, j] = np.float64(high[j])
            columns[5, j] = start + j
        return True
    ends[:] = starts[:ends.shape[0]]
    for j in range(count):
        kind = kinds[j]
        row = ends[kind]
        ends[kind] = row + 1
        order[row] = j
    _copy_by_order(value, order, count, columns[0])
    _copy_by_order(loc, order, count, columns[1])
    _copy_by_order(scale, order, count, columns[2])
    _copy_by_order(low, order, count, columns[3])
    _copy_by_order(high, order, count, columns[4])
    for row in range(count):
        columns[5, row] = start + order[row]
    return False


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def straddling_cdf(value, loc, s, low, high, kind):
    """(cdf, held) of an element whose bounds straddle loc (canonical_frame's frame false) of the ``kind`` said
    (PAST_LOC, NARROW_HEAD or WIDE_HEAD: a constant, so that only its formula is formed), the value alone, from
    erf(-a/sqrt 2)/2 and erf(b/sqrt 2)/2, the masses below and above loc (Z their sum): the mass below a value
    above loc is erf(-a/sqrt 2)/2 + erf(t/sqrt 2)/2, a sum; below one under loc, within a short stretch of the
    lower bound, the stretch's series (cdf_element's head: a difference of Phi's there would carry the rounding
    of t, amplified), and beyond it whichever difference has the smaller terms: of the lower tails,
    Phi(t) - Phi(a), or of the erf's. A value outside the support or 36 scales or more from loc, or an element not
    of the kind said, is not held."""
    a = (low - loc) / s
    b = (high - loc) / s
    t = (value - loc) / s
    d = (value - low) / s
    erf_a, erfc_a = _erf_and_erfc(-a * _SQRT_HALF)
    erf_b, _ = _erf_and_erfc(b * _SQRT_HALF)
    z = erf_a + erf_b  # (twice Z, as each mass below is twice its own)
    below = t <= 0.0
    # (& and | rather than and/or here: a short circuit is a branch, which would stop the loop vectorizing)
    narrow_head = (low > -math.inf) & (not _wide(a, d))
    if kind == NARROW_HEAD:
        head_mass, _ = _stretch(a, d)
        # phi(a) J(a, d) / Z, the log of twice Z less log 2
        result = head_mass * _vector_math.exp(-0.5 * a * a - _LOG_SQRT_2PI - _vector_math.log(z) + _LOG_2)
        kept = True
    else:
        erf_t, erfc_t = _erf_and_erfc(abs(t) * _SQRT_HALF)
        if kind == PAST_LOC:
            result = (erf_a + erf_t) / z
            kept = True
        else:
            by_tails = erfc_t < erf_a
            lower = (erfc_t - erfc_a) if by_tails else (erf_a - erf_t)
            result = lower / z
            kept = min(erfc_t, erf_a) <= _STRADDLE_CANCELLATION * lower
    of_kind = (not below) if kind == PAST_LOC else below & (narrow_head if kind == NARROW_HEAD else not narrow_head)
    held = (value > low) & (value < high) & (t > -_STRADDLE_END) & (t < _STRADDLE_END) & kept & of_kind
    return min(max(result, 0.0), 1.0), held


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def frame_cdf(value, loc, s, low, high, kind, short):
    """(cdf, held) of a frame element (canonical_frame's frame true) of the ``kind`` said (NARROW_SIDE ...
    MIRRORED_NARROW_INTERVAL: a constant, so that only its formula is formed), the value alone: cdf_element's frame
    formulas with only the side of the value the result is formed from -- the mass below it over M0, or for a
    mirrored element the mass above it times the density -- by its narrow stretch's series or its closed form; on
    a narrow interval M0 by the series too (with ``short``, _short_stretch_mass's), elsewhere in closed form. An
    element not of the kind said (or whose stretches are not short) is not held."""
    flip = (kind == MIRRORED_NARROW_SIDE) | (kind == MIRRORED_WIDE_SIDE) | (kind == MIRRORED_NARROW_INTERVAL)
    narrow_known = (kind == NARROW_INTERVAL) | (kind == MIRRORED_NARROW_INTERVAL)
    narrow_side_known = (kind == NARROW_SIDE) | (kind == MIRRORED_NARROW_SIDE)
    # canonical_frame's, mirrored as the kind says
    c_loc = -loc if flip else loc
    c_low = -high if flip else low
    c_high = -low if flip else high
    a = (c_low - c_loc) / s
    b = (c_high - c_loc) / s
    w = (high - low) / s
    narrow = (w < math.inf) & (not _wide(a, w))
    x = -value if flip else value
    d, rest, side_start, side_length, no_b = _side(x, c_low, c_high, s, a, flip)
    narrow_side = (not (flip & no_b)) & (not _wide(side_start, side_length))
    if narrow_known & short:
        m0 = _short_stretch_mass(a, w)
        side = _short_stretch_mass(side_start, side_length)
        of_kind = narrow & narrow_side & _short_stretch(a, w) & _short_stretch(side_start, side_length)
    elif narrow_known:
        m0, _ = _stretch(a, w)
        side, _ = _stretch(side_start, side_length)
        of_kind = narrow & narrow_side
    else:
        m_a = _vector_mills(a)
        m_b = _vector_mills(b)
        m0 = m_a - _vector_math.exp(-w * (a + 0.5 * w)) * m_b
        if narrow_side_known:
            side, _ = _stretch(side_start, side_length)
            of_kind = (not narrow) & narrow_side
        else:
            ad = a + d
            m_ad = _vector_mills(ad)
            side = (m_ad - _vector_math.exp(-rest * (ad + 0.5 * rest)) * m_b if flip
                    else m_a - _vector_math.exp(-d * (a + 0.5 * d)) * m_ad)
            # a wide stretch's closed form needs a non-negative slope
            of_kind = (not narrow) & (not narrow_side) & (a >= 0.0)
    of_kind = of_kind & ((high <= loc) == flip)
    if flip:
        log_density = -d * (a + 0.5 * d) - _vector_math.log(m0)
        result = side * _vector_math.exp(log_density)
        kept = log_density > _LOG_RESULT_FLOOR
    else:
        result = side / m0
        kept = True
    held = ((x > c_low) & (x < c_high) & (abs(a) < 1e300) & ((abs(b) < 1e300) | no_b) & of_kind & kept
            & (m0 > 1e-290))
    at_low = x <= c_low
    at_high = x >= c_high
    bound_value = (1.0 if at_low else 0.0) if flip else (0.0 if at_low else 1.0)
    result = bound_value if (at_low | at_high) else min(max(result, 0.0), 1.0)
    return result, held | ((at_low | at_high) & (c_low < c_high))


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _tail_product(d, t, tail_mean, tail_var):
    """E_tail[r t] of the part of a frame element above its value (r = t - a, the distance from the lower bound),
    from the tail's mean distance from the value and its variance. Minus s dF/ds = a F_a + d f(d) - w f(w) F,
    whose last two terms are equal next to the upper bound; since (r f(r))' = (1 - r t) f(r), d f(d) - w f(w) =
    -(1 - F) (1 - E_tail[r t]), so minus s dF/ds = a F_a + (1 - F) (E_tail[r t] - 1 + w p_b), which cancels no
    more than the derivative itself where F is past 1/2 (below, 1 - F against a result of order F would)."""
    return (d + tail_mean) * (t + tail_mean) + tail_var


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _second_moment(a, b, p_a, p_b, no_a, no_b):
    """E[t^2] = 1 + a p_a - b p_b of a straddling element (a < 0 < b: the terms add without cancelling), p_a and
    p_b the densities at the bounds over Z."""
    return 1.0 + (0.0 if no_a else a * p_a) - (0.0 if no_b else b * p_b)


# what a caller of cdf_element knows of a frame element's interval (its ``width``, a constant): nothing, that it is
# wide, that it is narrow
WIDTH_UNKNOWN, WIDTH_WIDE, WIDTH_NARROW = 0, 1, 2


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def cdf_element(value, loc, s, low, high, straddling, frame_known, width=WIDTH_UNKNOWN):
    """(cdf, d/dvalue, d/dloc, d/dscale, d/dlow, d/dhigh, value held, derivatives held) of one element, as the
    per-element kernel's _cdf_element and _cdf_gradient_element compute them; a value or derivatives not held are
    the caller's to compute again (they are meaningless here). ``straddling`` true says that the element is known
    to straddle (canonical_frame's frame false): the frame's formulas are then not formed; ``frame_known`` true
    that it is known not to: the straddling element's are not; and ``width`` (WIDTH_WIDE, WIDTH_NARROW) that a
    frame element's interval is known to be wide or narrow: the other's formulas are then not formed either (on a
    narrow interval the stretches either side of the value are narrow too, and their series are taken for them: an
    element where rounding says otherwise is not held)."""
    flip, c_loc, c_low, c_high, a, b, w, narrow, frame = canonical_frame(loc, s, low, high)
    frame = (frame & (not straddling)) | frame_known
    narrow_known = width == WIDTH_NARROW
    narrow = narrow_known | ((width != WIDTH_WIDE) & narrow)
    x = -value if flip else value
    d = (x - c_low) / s
    t = (x - c_loc) / s
    rest = (c_high - x) / s
    no_a = c_low == -math.inf
    no_b = c_high == math.inf
    ad = a + d
    head_found = (not no_a) & (not _wide(a, d))
    tail_found = (not no_b) & (not _wide(ad if frame else -b, rest))
    narrow_head = head_found | narrow_known
    narrow_tail = tail_found | narrow_known
    # the stretches from the lower bound to the value and from the value to the upper bound, where narrow
    head_mass, head_mean, head_var = _stretch_moments(a, d)
    tail_mass, tail_mean, tail_var = _stretch_moments(ad if frame else -b, rest)
    # the frame (a >= 0): masses relative to phi(a), from Mills' ratios at a, at the value and at b where wide
    m_a = _vector_mills(a)
    m_ad = _vector_mills(ad)
    m_b = _vector_mills(b)
    delta_w = _vector_math.exp(-w * (a + 0.5 * w))
    excess_a = _vector_math.mean_excess(a)
    excess_ad = _vector_math.mean_excess(ad)
    g_b = m_b * _vector_math.mean_excess(b)  # g(b) = 1 - b M(b)
    whole_mass, whole_mean = _stretch(a, w)
    m0 = whole_mass if narrow else m_a - delta_w * m_b
    log_m0 = _vector_math.log(m0)
    mean_d = whole_mean if narrow else excess_a if no_b else (m_a * excess_a - delta_w * (g_b + w * m_b)) / m0
    log_density = -d * (a + 0.5 * d) - log_m0  # the density at the value relative to phi(a)'s, over M0
    density = _vector_math.exp(log_density)
    delta_rest = _vector_math.exp(-rest * (ad + 0.5 * rest))
    frame_head = head_mass if narrow_head else m_a - _vector_math.exp(-d * (a + 0.5 * d)) * m_ad
    frame_tail = tail_mass if narrow_tail else m_ad - delta_rest * m_b
    wide_tail_mean = excess_ad if no_b else (m_ad * excess_ad - delta_rest * (g_b + rest * m_b)) / frame_tail
    frame_cdf = frame_head / m0
    frame_sf = frame_tail * density
    # dF/da at fixed d and w: F (D - D_head) up to the mean (where the head is narrow), (1 - F) (d - D + D_tail)
    # past it
    up_to_mean = d <= mean_d
    frame_fa = (frame_cdf * (mean_d - head_mean) if up_to_mean
                else frame_sf * (d - mean_d + (tail_mean if narrow_tail else wide_tail_mean)))
    frame_pb = 0.0 if no_b else delta_w / m0
    frame_fb = -frame_pb * frame_cdf
    # on a narrow interval the density's term d f(d) and the width's w f(w) F nearly cancel (they are equal next to
    # the upper bound): there F_a = F (1 - F) (d - D_head + D_tail) and minus s dF/ds = F (1 - F) (E_tail[t^2] -
    # E_head[t^2]), each part's second moment from its mean and variance by the stretches' series (_stretch_moments)
    apart = d - head_mean + tail_mean
    both = frame_cdf * frame_sf
    narrow_spread = both * (apart * (a + head_mean + ad + tail_mean) + tail_var - head_var)
    # on a wide interval past the median with a narrow tail, d f(d) and w f(w) F cancel alike: there minus s dF/ds
    # from the tail's moments (_tail_product)
    tail_form = narrow_tail & (frame_cdf > 0.5)
    frame_tail_spread = a * frame_fa + frame_sf * (_tail_product(d, ad, tail_mean, tail_var) - 1.0 + w * frame_pb)
    frame_width_term = 0.0 if no_b else w * frame_fb
    frame_terms_spread = a * frame_fa + density * d + frame_width_term
    frame_spread = frame_tail_spread if tail_form else frame_terms_spread
    frame_spread = narrow_spread if narrow else frame_spread
    frame_fa = both * apart if narrow else frame_fa
    # straddling (a < 0 < b): masses over Z = (erf(-a/sqrt 2) + erf(b/sqrt 2))/2, the masses on either side of
    # loc: past loc the mass below the value is a sum of erf's (and short of it the mass above it), its other side
    # a difference of Phi's of non-positive arguments; within a short stretch of a bound its mass relative to phi
    # at the bound
    erf_a, erfc_a = _erf_and_erfc(-a * _SQRT_HALF)
    erf_b, erfc_b = _erf_and_erfc(b * _SQRT_HALF)
    erf_t, erfc_t = _erf_and_erfc(abs(t) * _SQRT_HALF)
    twice_z = erf_a + erf_b
    log_z = _vector_math.log(twice_z) - _LOG_2
    f_t = _vector_math.exp(-0.5 * t * t - _LOG_SQRT_2PI - log_z)
    p_a = _vector_math.exp(-0.5 * a * a - _LOG_SQRT_2PI - log_z)
    p_b = 0.0 if no_b else _vector_math.exp(-0.5 * b * b - _LOG_SQRT_2PI - log_z)
    below = t <= 0.0
    # 0.5 erfc is Phi of a non-positive argument: the difference of two lower tails
    lower = p_a * head_mass if narrow_head else ((erfc_t - erfc_a) / twice_z if below else (erf_a + erf_t) / twice_z)
    upper = p_b * tail_mass if narrow_tail else ((erf_t + erf_b) / twice_z if below else (erfc_t - erfc_b) / twice_z)
    straddle_cdf = lower
    straddle_sf = upper
    straddle_fa = -p_a * straddle_sf
    straddle_fb = -p_b * straddle_cdf
    straddle_spread = t * f_t + (0.0 if no_a else a * straddle_fa) + (0.0 if no_b else b * straddle_fb)
    # next to a bound t f_t and the bound's term cancel (b p_b F past the median, a p_a (1 - F) short of it):
    # there minus s dF/ds = (1 - F) (E_tail[t^2] - E[t^2]), or F (E[t^2] - E_head[t^2]) (the narrow interval's
    # F (1 - F) (E_tail[t^2] - E_head[t^2]), as E_tail[t^2] - E[t^2] = F (E_tail[t^2] - E_head[t^2]) and E[t^2] -
    # E_head[t^2] = (1 - F) (E_tail[t^2] - E_head[t^2])), where that part is a narrow stretch: its second moment
    # from its mean distance from the bound and its variance
    second = _second_moment(a, b, p_a, p_b, no_a, no_b)
    below_b = b - tail_mean
    above_a = a + head_mean
    past_median = straddle_cdf > 0.5
    straddle_tail_spread = straddle_sf * (below_b * below_b + tail_var - second)
    straddle_head_spread = straddle_cdf * (second - above_a * above_a - head_var)
    straddle_spread = straddle_head_spread if narrow_head & (not past_median) else straddle_spread
    straddle_spread = straddle_tail_spread if narrow_tail & past_median else straddle_spread
    # minus s dF/dloc = phi(t)/Z - p_a (1 - F) - p_b F: F (E[t] - E_head) up to the mean, (1 - F) (E_tail - E[t])
    # past it, with phi(a) - phi(t) = phi(a) J(a, d) (a + D_head) on a short stretch (phi(t) and phi(a), both near
    # phi(0) beside a bound just under loc, would cancel) and phi(t) - phi(b) likewise
    straddle_mean = p_a - p_b
    drop = p_a * head_mass * (a + head_mean) if narrow_head else p_a - f_t
    rise = p_b * tail_mass * (b - tail_mean) if narrow_tail else f_t - p_b
    straddle_slope = straddle_mean * straddle_cdf - drop if t <= straddle_mean else rise - straddle_mean * straddle_sf
    # the element's own regime
    canonical = frame_cdf if frame else straddle_cdf
    result = (frame_sf if frame else straddle_sf) if flip else canonical
    result = min(max(result, 0.0), 1.0)
    f_b = frame_fb if frame else straddle_fb
    g_value = (density if frame else f_t) / s
    g_loc = -(frame_fa if frame else straddle_slope) / s
    g_scale = -(frame_spread if frame else straddle_spread) / s
    g_low = -(frame_sf / m0 if frame else p_a * straddle_sf) / s
    g_high = f_b / s
    # a wide stretch's closed form needs a non-negative slope, and a head up to the mean is narrow
    held_frame = (((a >= 0.0) | (narrow_head & narrow_tail)) & (narrow_head | (not up_to_mean))
                  & ((log_density > _LOG_RESULT_FLOOR) | (not flip)) & (m0 > 1e-290))
    held_straddle = (t > -_STRADDLE_END) & (t < _STRADDLE_END)
    held = ((x > c_low) & (x < c_high) & ((abs(a) < 1e300) | no_a) & ((abs(b) < 1e300) | no_b)
            & (held_frame if frame else held_straddle) & ((not narrow_known) | (head_found & tail_found)))
    # at or beyond a bound the CDF is exactly 0 or 1 (the per-element kernel's frame integral over the whole
    # interval may round a bound's to 1 - 1 ulp, below the vectorized value just inside it); its derivatives there
    # are the per-element kernel's
    at_low = x <= c_low
    at_high = x >= c_high
    bound_value = (1.0 if at_low else 0.0) if flip else (0.0 if at_low else 1.0)
    result = bound_value if (at_low | at_high) else result
    held_value = held | ((at_low | at_high) & (c_low < c_high))
    if flip:  # odd under the mirror
        return result, g_value, g_loc, -g_scale, g_high, g_low, held_value, held
    return result, g_value, g_loc, g_scale, g_low, g_high, held_value, held
