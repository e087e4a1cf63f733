"""The cdf of a float32 batch: a chunk of straddling elements or of narrow intervals in one loop over the arguments,
by special functions exact to about 1e-12 of the value, which a float32 result (an ulp: 6e-8 of it) cannot tell from
the float64 route's.

The float64 route's formulas (tnlib.distributions._cdf_vector) are exact to a few float64 ulps, and that costs:
erfc by a double-double square, a degree-26 erfcx and fdlibm's exp, three divisions each, and a chunk's elements
gathered by kind first. A float32 result needs about 1e-9 of its value, so here:

* exp is its Taylor polynomial to degree 10 on [-ln2/2, ln2/2] (the first term dropped: 2e-13 of the value),
  erfcx the degree-16 truncation of _vector_math's Chebyshev expansion (1.2e-12 relative; tested against mpmath),
  both divisions of erfcx's one, and erf's series below 1/2 to its ninth term (6e-13); mul and add fused where the
  compiler likes (``fastmath={"contract"}``, FMA: the one rounding less moves nothing a float32 keeps);
* a straddling element (low < loc < high) takes the masses on either side of loc as erf's, as straddling_cdf does:
  past loc a sum, short of it the difference with the smaller terms, held where the difference keeps at least
  1/256 of them (what is lost there, 2.6e-10 of the value at most, is still 0.004 float32 ulps); one loop takes
  the value past and short of loc, as the same three erf's give both;
* a narrow interval (max(1, |c|) m <= 0.1, c and m its middle slope and half-width in scales) takes the ratio of
  its two stretches' Hermite series to He_8 (the first term dropped: below 1e-13 of the sum), times one exp of the
  difference of their exponents: for the mirrored element, the mass above the value, the same form;
* each chunk is looked at first (coarse_chunk_kind, a loop that vectorizes): one of straddling elements alone or
  of narrow intervals alone runs its loop over the arguments themselves, in place, with no gathering. Any other
  chunk takes the float64 route's pass (tnlib.distributions._cdf_passes._pass_block), and an element the loops
  do not hold (a value outside the support, |t| from 36 on, a difference that cancels more) is left NaN for the
  per-element kernel.

The float32 result is therefore the float64 route's rounded to float32 except where the two straddle a rounding
boundary: by an ulp, on 1 of the peer benchmark's 1e5 moderate elements and none of its narrow ones (the tests
bound the share).
"""
from __future__ import annotations

import math

import numba
import numpy as np
from numpy.polynomial import chebyshev

from tnlib.distributions._cdf_vector import _STRETCH_EVEN
from tnlib.distributions._vector_math import ERF_SERIES, ERFCX_K, ERFCX_POLYNOMIAL, _bits, _from_bits
from tnlib.kernel_cache import cache_by_folder_sources

cache_by_folder_sources(__file__)  # before the first njit(cache=True): tnlib.kernel_cache says why

_FUSED = {"contract"}  # fastmath's flag for fused multiply-adds alone (no reassociation, no finite-math shortcut)

_SQRT_HALF = math.sqrt(0.5)
_INV_LN2 = 1.44269504088896338700e+00
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_ROUNDING_SHIFT = 6755399441055744.0  # 1.5 * 2^52: adding it rounds a double below 2^51 in size to an integer
_EXP_FLOOR = -708.0
COARSE_EXP_TAYLOR = tuple(1.0 / math.factorial(n) for n in range(11))


def _truncated_erfcx_polynomial(degree: int) -> tuple:
    """The monomial coefficients of _vector_math's erfcx expansion cut at ``degree`` in Chebyshev's basis."""
    return tuple(float(c) for c in chebyshev.cheb2poly(chebyshev.poly2cheb(ERFCX_POLYNOMIAL)[:degree + 1]))


COARSE_ERFCX_POLYNOMIAL = _truncated_erfcx_polynomial(16)
COARSE_ERF_SERIES = ERF_SERIES[:9]
# erfc below 1e-300 past here: the float32 result of any formula using it is 0 or unchanged
_COARSE_ERFC_END = 27.0
# a straddling element's difference of masses is held while it keeps 1/this of the larger of its terms
_COARSE_CANCELLATION = 256.0
# max(1, |c|) m of a narrow interval the He_8 series holds for: the first term dropped, He_10(c) m^10 / 11!, is
# at most T(10) (max(1, |c|) m)^10 / 11! = 2.4e-14 of the sum there (T(10) = 9496, the sum of He_10's coefficients'
# sizes), and a part of the interval has at most max(1, |c|) m + m^2 <= 0.11 (6e-14)
COARSE_NARROW_END = 0.1
_STRADDLE_END = 36.0

# a chunk's kinds for coarse_chunk_kind
STRADDLING_CHUNK, NARROW_CHUNK, MIXED_CHUNK = 0, 1, 2


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def exp_coarse(x):
    """exp(x) for x <= 709 within 3e-13 relatively (0 below -708)."""
    clamped = min(max(x, _EXP_FLOOR), 709.0)
    shifted = clamped * _INV_LN2 + _ROUNDING_SHIFT
    k_float = shifted - _ROUNDING_SHIFT
    k = _bits(shifted) - _bits(_ROUNDING_SHIFT)
    r = (clamped - k_float * _LN2_HI) - k_float * _LN2_LO
    e = COARSE_EXP_TAYLOR
    p = e[0] + r * (e[1] + r * (e[2] + r * (e[3] + r * (e[4] + r * (e[5] + r * (e[6] + r * (e[7] + r * (
        e[8] + r * (e[9] + r * e[10])))))))))
    return p * _from_bits((k + 1023) << 52) if x >= _EXP_FLOOR else 0.0


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def _estrin_16(t, p):
    t2 = t * t
    t4 = t2 * t2
    t8 = t4 * t4
    r0 = (p[0] + p[1] * t) + (p[2] + p[3] * t) * t2
    r1 = (p[4] + p[5] * t) + (p[6] + p[7] * t) * t2
    r2 = (p[8] + p[9] * t) + (p[10] + p[11] * t) * t2
    r3 = (p[12] + p[13] * t) + (p[14] + p[15] * t) * t2
    return (r0 + r1 * t4) + (r2 + r3 * t4) * t8 + p[16] * (t8 * t8)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def erf_and_erfc_coarse(y):
    """(erf(y), erfc(y)) for y >= 0 (+inf gives 1, 0), each within 2e-12 relatively: erfc as exp(-y^2) erfcx(y)
    (erfcx's t and its 1/(1 + 2y) from one division), erf by its series below 1/2 and 1 - erfc beyond."""
    y = min(y, _COARSE_ERFC_END)
    shifted = y + ERFCX_K
    widened = 1.0 + 2.0 * y
    inverse = 1.0 / (shifted * widened)
    t = 1.0 - 2.0 * ERFCX_K * widened * inverse
    erfc = exp_coarse(-y * y) * _estrin_16(t, COARSE_ERFCX_POLYNOMIAL) * (shifted * inverse)
    c = COARSE_ERF_SERIES
    z = y * y
    series = y * (c[0] + z * (c[1] + z * (c[2] + z * (c[3] + z * (c[4] + z * (c[5] + z * (c[6] + z * (
        c[7] + z * c[8]))))))))
    return (series if y < 0.5 else 1.0 - erfc), erfc


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def straddling_cdf_coarse(value, loc, s, low, high):
    """(cdf, held) of an element with low < loc < high: the masses below and above loc, erf(-a/sqrt 2)/2 and
    erf(b/sqrt 2)/2, Z their sum; below a value past loc their sum with erf(t/sqrt 2)/2, below one short of it the
    difference of the lower tails or of the erf's, whichever has the smaller terms. Not held: an element not
    straddling, a value outside the support or 36 scales or more from loc, a difference that keeps less than
    1/256 of its terms."""
    inverse = 1.0 / s
    a = (low - loc) * inverse
    b = (high - loc) * inverse
    t = (value - loc) * inverse
    erf_a, erfc_a = erf_and_erfc_coarse(-a * _SQRT_HALF)
    erf_b, _ = erf_and_erfc_coarse(b * _SQRT_HALF)
    erf_t, erfc_t = erf_and_erfc_coarse(abs(t) * _SQRT_HALF)
    below = t <= 0.0
    by_tails = erfc_t < erf_a
    lower = (erfc_t - erfc_a) if by_tails else (erf_a - erf_t)
    mass = lower if below else erf_a + erf_t
    # (& and | rather than and/or here: a short circuit is a branch, which would stop the loop vectorizing)
    kept = (not below) | (min(erfc_t, erf_a) <= _COARSE_CANCELLATION * lower)
    held = ((value > low) & (value < high) & (low < loc) & (loc < high) & (t > -_STRADDLE_END)
            & (t < _STRADDLE_END) & kept)
    return min(max(mass / (erf_a + erf_b), 0.0), 1.0), held


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def _stretch_sum_coarse(c, m):
    """S0 of _cdf_vector._stretch_moments to He_8: J(a, 2m) = exp(-m (a + m/2)) 2m S0, c = a + m."""
    m2 = m * m
    h2 = c * c - 1.0
    h3 = c * h2 - 2.0 * c
    h4 = c * h3 - 3.0 * h2
    h5 = c * h4 - 4.0 * h3
    h6 = c * h5 - 5.0 * h4
    h7 = c * h6 - 6.0 * h5
    h8 = c * h7 - 7.0 * h6
    e = _STRETCH_EVEN  # He_n's coefficient 1/(n+1)!, the first five
    return 1.0 + m2 * (h2 * e[1] + m2 * (h4 * e[2] + m2 * (h6 * e[3] + m2 * (h8 * e[4]))))


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def narrow_cdf_coarse(value, loc, s, low, high):
    """(cdf, held) of a narrow interval (max(1, |c|) m <= COARSE_NARROW_END in its canonical frame, mirrored where
    high <= loc): the mass of the part of the interval the result is formed from -- below the value, or above it
    where mirrored -- over the whole's, each by its stretch's series, their exponents' difference in one exp; 0 or
    1 at and beyond a bound. Not held: a wider interval, a NaN."""
    inverse = 1.0 / s
    flip = high <= loc
    c_loc = -loc if flip else loc
    c_low = -high if flip else low
    c_high = -low if flip else high
    x = -value if flip else value
    a = (c_low - c_loc) * inverse
    w = (high - low) * inverse
    d = (x - c_low) * inverse
    rest = (c_high - x) * inverse
    m = 0.5 * w
    c = a + m
    start = (a + d) if flip else a
    half = 0.5 * (rest if flip else d)
    exponent = m * (a + 0.5 * m) - half * (start + 0.5 * half) - (d * (a + 0.5 * d) if flip else 0.0)
    ratio = (half * _stretch_sum_coarse(start + half, half)) / (m * _stretch_sum_coarse(c, m))
    narrow = (max(1.0, abs(c)) * m <= COARSE_NARROW_END) & (c_low < c_high)
    at_low = x <= c_low
    at_high = x >= c_high
    bound_value = (1.0 if at_low else 0.0) if flip else (0.0 if at_low else 1.0)
    result = bound_value if (at_low | at_high) else min(max(ratio * exp_coarse(exponent), 0.0), 1.0)
    return result, narrow & ((x > c_low) & (x < c_high) | at_low | at_high)


@numba.njit(cache=True, error_model="numpy", fastmath=_FUSED)
def coarse_chunk_kind(start, stop, arrays):
    """STRADDLING_CHUNK where every element of [start, stop) has low < loc < high, NARROW_CHUNK where every one is
    a narrow interval narrow_cdf_coarse takes, MIXED_CHUNK otherwise: a loop that vectorizes (counts, no exits)."""
    _, loc, scale, low, high = (arrays[0][start:stop], arrays[1][start:stop], arrays[2][start:stop],
                                arrays[3][start:stop], arrays[4][start:stop])
    straddling = narrow = 0
    for j in range(stop - start):
        mu, s, lo, hi = np.float64(loc[j]), np.float64(scale[j]), np.float64(low[j]), np.float64(high[j])
        # max(1, |c|) m <= end in scales, as max(s, |c s|) (m s) <= end s^2 (no division), c s the canonical
        # middle's offset from loc (mirrored where high <= loc)
        half = 0.5 * (hi - lo)
        middle = ((mu - hi) if hi <= mu else (lo - mu)) + half
        straddling += (lo < mu) & (mu < hi)
        narrow += max(s, abs(middle)) * half <= COARSE_NARROW_END * (s * s)
    count = stop - start
    return STRADDLING_CHUNK if straddling == count else NARROW_CHUNK if narrow == count else MIXED_CHUNK


@numba.njit(cache=True, error_model="numpy", fastmath=_FUSED)
def straddling_chunk_coarse(start, stop, arrays, out):
    """straddling_cdf_coarse of elements [start, stop) into ``out`` (NaN where not held), over the arguments;
    returns the count not held (a reduction the loop keeps in vector registers: no scalar loop looks for them where
    none is)."""
    value, loc, scale, low, high = (arrays[0][start:stop], arrays[1][start:stop], arrays[2][start:stop],
                                    arrays[3][start:stop], arrays[4][start:stop])
    its_out = out[start:stop]
    left = 0
    for j in range(stop - start):
        cdf, held = straddling_cdf_coarse(np.float64(value[j]), np.float64(loc[j]), np.float64(scale[j]),
                                          np.float64(low[j]), np.float64(high[j]))
        its_out[j] = cdf if held else np.nan
        left += not held
    return left


@numba.njit(cache=True, error_model="numpy", fastmath=_FUSED)
def narrow_chunk_coarse(start, stop, arrays, out):
    """narrow_cdf_coarse of elements [start, stop) into ``out`` (NaN where not held), over the arguments; returns the
    count not held (a reduction the loop keeps in vector registers: no scalar loop looks for them where none is)."""
    value, loc, scale, low, high = (arrays[0][start:stop], arrays[1][start:stop], arrays[2][start:stop],
                                    arrays[3][start:stop], arrays[4][start:stop])
    its_out = out[start:stop]
    left = 0
    for j in range(stop - start):
        cdf, held = narrow_cdf_coarse(np.float64(value[j]), np.float64(loc[j]), np.float64(scale[j]),
                                      np.float64(low[j]), np.float64(high[j]))
        its_out[j] = cdf if held else np.nan
        left += not held
    return left
