"""The cdf of a float32 batch: a chunk of straddling elements or of narrow intervals in one loop over the arguments,
by special functions exact to about 1e-12 of the value, which a float32 result (an ulp: 6e-8 of it) cannot tell from
the float64 route's but where the value lies that close to a rounding boundary.

The float64 route's formulas (tnlib.distributions._cdf_vector) are exact to a few float64 ulps, and that costs:
erfc by a double-double square, a degree-26 erfcx and fdlibm's exp, three divisions each, and a chunk's elements
gathered by kind first. A float32 result needs about 1e-9 of its value, so here:

* a straddling element (low < loc < high) takes the masses on either side of loc as erf's, as straddling_cdf does,
  each erf a rational function of degree 7 over 7 in y^2 (erf_rational: within 7.9e-13 relatively on [0, 3.5],
  1 from 5.14; its fit and bound by benchmarks/fit_float32_cdf_erf.py), the three erf's (of the bounds and the
  value) and the quotient of the masses as one division. An element is held only where that bound, times how much
  the mass short of loc cancels, cannot move its float32 rounding (float32_rounding_certain); the others (a few
  in 10^4 of the peer benchmark's moderate elements: values near a rounding boundary, near the lower bound, or
  arguments between 3.5 and 5.14) are left NaN for the per-element kernel, exact in float64;
* a narrow interval (max(1, |c|) m <= 0.1, c and m its middle slope and half-width in scales) takes the ratio of
  its two stretches' Hermite series to He_8 (the first term dropped: below 1e-13 of the sum), times one exp of the
  difference of their exponents, exp its Taylor polynomial to degree 10 on [-ln2/2, ln2/2] (the first term
  dropped: 2e-13 of the value): for the mirrored element, the mass above the value, the same form;
* a chunk whose straddling elements all have both bounds within 2 sqrt(2) scales of loc takes erf_near's fit
  (degree 5 over 5 on [0, 2]: 1.5e-12 with the loop's margin), its three erf's over the common factor that cancels
  in the quotient (straddling_cdf_near), an element it leaves then straddling_cdf_rational; a chunk of narrow
  intervals all with max(1, |c|) m <= SHORT_NARROW_END takes the series to He_4 and exp's Taylor polynomial near 0
  with no range reduction (narrow_cdf_short), an element it leaves then narrow_cdf_coarse: a fifth and nearly half
  fewer multiplies and FMAs, the loops' cost, for the same results (the peer benchmark's moderate and narrow
  regimes take them);
* mul and add are fused where the compiler likes (``fastmath={"contract"}``, FMA: the one rounding less moves
  nothing a float32 keeps);
* each chunk is looked at first (coarse_chunk_kind, a loop that vectorizes): one of straddling elements alone or
  of narrow intervals alone runs its loop (the short one where all its elements allow) over the arguments
  themselves, in place, with no gathering. Any other chunk takes the float64 route's pass
  (tnlib.distributions._cdf_passes._pass_block), and an element the loops do not hold (a value outside the
  support, a NaN; for the straddling loop, above) is left NaN for the per-element kernel.

A straddling element's float32 result is therefore the exact value correctly rounded; a narrow interval's, the
float64 route's rounded except where the two straddle a rounding boundary (none of the peer benchmark's 1e5 narrow
elements; the tests bound the share).
"""
from __future__ import annotations

import math

import numba
import numpy as np

from tnlib.distributions._cdf_vector import _STRETCH_EVEN
from tnlib.distributions._regimes import _SQRT_HALF
from tnlib.distributions._vector_math import _EXP_FLOOR, _FUSED, _bits, _exp_reduction, _from_bits
from tnlib.kernel_cache import cache_by_folder_sources

cache_by_folder_sources(__file__)  # before the first njit(cache=True): tnlib.kernel_cache says why

COARSE_EXP_TAYLOR = tuple(1.0 / math.factorial(n) for n in range(11))

# max(1, |c|) m of a narrow interval the He_8 series holds for: the first term dropped, He_10(c) m^10 / 11!, is
# at most T(10) (max(1, |c|) m)^10 / 11! = 2.4e-14 of the sum there (T(10) = 9496, the sum of He_10's coefficients'
# sizes), and a part of the interval has at most max(1, |c|) m + m^2 <= 0.11 (6e-14)
COARSE_NARROW_END = 0.1

# max(1, |c|) m of a narrow interval the short loop holds (narrow_cdf_short): the series to He_4 drops at most
# T(6) SHORT_NARROW_END^6 / 7! = 1.5e-14 of the sum (T(6) = 76; a part of the interval, at most
# max(1, |c|) m + m^2 = 0.0101, 1.6e-14), and the exponent (at most max(1, |c|) m + 3 m^2,
# 0.0103, mirrored or not) needs no range reduction: its Taylor polynomial to degree 5 is within 0.0103^6 / 6! =
# 1.7e-15 of exp
SHORT_NARROW_END = 0.01
EXP_NEAR_ZERO_TAYLOR = tuple(1.0 / math.factorial(n) for n in range(6))

# a chunk's kinds for coarse_chunk_kind: straddling elements whose bounds are all near loc (erf_near's range), any
# other straddling ones, narrow intervals all within SHORT_NARROW_END, any other narrow ones, anything else
NEAR_STRADDLING_CHUNK, STRADDLING_CHUNK, SHORT_NARROW_CHUNK, NARROW_CHUNK, MIXED_CHUNK = 0, 1, 2, 3, 4

# erf(y) = y P(y^2) / Q(y^2) on [0, ERF_RATIONAL_END]: a near-minimax fit in relative error, its coefficients, and
# its error bound printed by benchmarks/fit_float32_cdf_erf.py (3.95e-13 with the evaluation's rounding; twice that
# here); from ERF_ONE_FROM, where erfc is below the bound, erf is 1
ERF_RATIONAL_END = 3.5
ERF_RATIONAL_P = (1.128379167095071, 0.1868587994530104, 0.05623599523752627, 0.0043704051161253515,
                  0.0004827281773533965, 1.8422453637827885e-05, 7.818140173879059e-07, 3.75386648757259e-09)
ERF_RATIONAL_Q = (1.0, 0.4989326326444095, 0.11614873091674918, 0.01650567408671436, 0.0015645452962455401,
                  0.00010042073518144261, 4.121696762696006e-06, 8.443820592000303e-08)
ERF_RATIONAL_BOUND = 7.9e-13
ERF_ONE_FROM = 5.14
# erf(y) = y P(y^2) / Q(y^2) on [0, ERF_NEAR_END] by degree 5 over 5 (``benchmarks/fit_float32_cdf_erf.py --end 2
# --degree 5``: 7.45e-13, twice that here): the erf's of a straddling element whose bounds are within 2 sqrt(2)
# scales of loc, four fused multiply-adds fewer an erf than erf_rational
ERF_NEAR_END = 2.0
ERF_NEAR_P = (1.1283791670963497, 0.16719759795803815, 0.049245213411424425, 0.0028244475226716693,
              0.0002506223728566748, 1.5788173493953661e-06)
ERF_NEAR_Q = (1.0, 0.4815083465712868, 0.10414521555580693, 0.012876865939670218, 0.0009347212550601914,
              3.331852657716437e-05)
ERF_NEAR_BOUND = 1.5e-12
# a bound near loc in float32 scales, for the chunks' look (the loop tests each element again in float64)
_NEAR_SCALES = ERF_NEAR_END * math.sqrt(2.0)
# the straddling cdf's own roundings past the erf's (a, b, t; three products, a sum, a quotient: a few float64
# ulps), relative
_STRADDLING_ROUNDING = 1e-15
_EXPONENT_BITS, _MANTISSA_BITS = 0x7FF0000000000000, 0x000FFFFFFFFFFFFF
_HALF_FLOAT32_ULP = 2.0 ** -24  # half a float32 ulp of a number in [1, 2)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def exp_coarse(x):
    """exp(x) for x <= 709 within 3e-13 relatively (0 below -708)."""
    k, hi, lo = _exp_reduction(min(max(x, _EXP_FLOOR), 709.0))
    r = hi - lo
    e = COARSE_EXP_TAYLOR
    p = e[0] + r * (e[1] + r * (e[2] + r * (e[3] + r * (e[4] + r * (e[5] + r * (e[6] + r * (e[7] + r * (
        e[8] + r * (e[9] + r * e[10])))))))))
    return p * _from_bits((k + 1023) << 52) if x >= _EXP_FLOOR else 0.0


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
def exp_near_zero(x):
    """exp(x) by its Taylor polynomial to degree 5: within 1.7e-15 relatively for |x| <= 0.0103."""
    e = EXP_NEAR_ZERO_TAYLOR
    return e[0] + x * (e[1] + x * (e[2] + x * (e[3] + x * (e[4] + x * e[5]))))


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def _stretch_sum_he4(c, m):
    """_stretch_sum_coarse to He_4 (max(1, |c|) m <= SHORT_NARROW_END)."""
    m2 = m * m
    h2 = c * c - 1.0
    h4 = c * (c * h2 - 2.0 * c) - 3.0 * h2
    e = _STRETCH_EVEN
    return 1.0 + m2 * (h2 * e[1] + m2 * (h4 * e[2]))


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def _narrow_frame(value, loc, s, low, high):
    """The narrow loops' canonical frame (mirrored where high <= loc): (flip, c_low, c_high, x, m, c, start, half,
    exponent) -- the interval's half width m and centre c in scales, the part the result is formed from (start, half
    width half) and the difference of the two parts' exponents."""
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
    return flip, c_low, c_high, x, m, c, start, half, exponent


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def narrow_cdf_short(value, loc, s, low, high):
    """narrow_cdf_coarse of an interval with max(1, |c|) m <= SHORT_NARROW_END, by the series to He_4 and exp's
    Taylor polynomial near 0 (SHORT_NARROW_END's comment says why they suffice); not held: a wider interval, a NaN."""
    flip, c_low, c_high, x, m, c, start, half, exponent = _narrow_frame(value, loc, s, low, high)
    ratio = (half * _stretch_sum_he4(start + half, half)) / (m * _stretch_sum_he4(c, m))
    short = (max(1.0, abs(c)) * m <= SHORT_NARROW_END) & (c_low < c_high)
    at_low = x <= c_low
    at_high = x >= c_high
    bound_value = (1.0 if at_low else 0.0) if flip else (0.0 if at_low else 1.0)
    result = bound_value if (at_low | at_high) else min(max(ratio * exp_near_zero(exponent), 0.0), 1.0)
    return result, short & ((x > c_low) & (x < c_high) | at_low | at_high)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def narrow_cdf_coarse(value, loc, s, low, high):
    """(cdf, held) of a narrow interval (max(1, |c|) m <= COARSE_NARROW_END in its canonical frame, mirrored where
    high <= loc): the mass of the part of the interval the result is formed from -- below the value, or above it
    where mirrored -- over the whole's, each by its stretch's series, their exponents' difference in one exp; 0 or
    1 at and beyond a bound. Not held: a wider interval, a NaN."""
    flip, c_low, c_high, x, m, c, start, half, exponent = _narrow_frame(value, loc, s, low, high)
    ratio = (half * _stretch_sum_coarse(start + half, half)) / (m * _stretch_sum_coarse(c, m))
    narrow = (max(1.0, abs(c)) * m <= COARSE_NARROW_END) & (c_low < c_high)
    at_low = x <= c_low
    at_high = x >= c_high
    bound_value = (1.0 if at_low else 0.0) if flip else (0.0 if at_low else 1.0)
    result = bound_value if (at_low | at_high) else min(max(ratio * exp_coarse(exponent), 0.0), 1.0)
    return result, narrow & ((x > c_low) & (x < c_high) | at_low | at_high)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def _straddling_counts(loc, scale, low, high):
    """How many elements have low < loc < high, and how many of those have both bounds within _NEAR_SCALES scales
    of loc: compared in the arguments' own dtype, as given (a loop that vectorizes; a float32 test's rounding only
    sends a chunk to the other loop, as straddling_cdf_near tests each element again in float64)."""
    straddling = near = 0
    reach = loc.dtype.type(_NEAR_SCALES)
    for j in range(loc.shape[0]):
        mu, lo, hi = loc[j], low[j], high[j]
        across = (lo < mu) & (mu < hi)
        reached = reach * scale[j]
        straddling += across
        near += across & (mu - lo <= reached) & (hi - mu <= reached)
    return straddling, near


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def _narrow_counts(loc, scale, low, high):
    """How many elements are narrow intervals narrow_cdf_coarse takes, and how many of those narrow_cdf_short
    takes, by the arguments' own dtype (a loop that vectorizes): a float32 test's rounding or overflow only sends a
    chunk to another loop or an element to the per-element kernel, as both loops test each element again in
    float64."""
    narrow = short = 0
    end = loc.dtype.type(COARSE_NARROW_END)
    short_end = loc.dtype.type(SHORT_NARROW_END)
    half_factor = loc.dtype.type(0.5)
    for j in range(loc.shape[0]):
        mu, s, lo, hi = loc[j], scale[j], low[j], high[j]
        # max(1, |c|) m <= end in scales, as max(s, |c s|) (m s) <= end s^2 (no division), c s the canonical
        # middle's offset from loc (mirrored where high <= loc)
        half = half_factor * (hi - lo)
        middle = ((mu - hi) if hi <= mu else (lo - mu)) + half
        spread = max(s, abs(middle)) * half
        square = s * s
        narrow += spread <= end * square
        short += spread <= short_end * square
    return narrow, short


@numba.njit(cache=True, error_model="numpy", fastmath=_FUSED, forceinline=False)
def coarse_chunk_kind(start, stop, arrays):
    """NEAR_STRADDLING_CHUNK where every element of [start, stop) has low < loc < high, both within _NEAR_SCALES
    scales of loc, STRADDLING_CHUNK where every one has low < loc < high, SHORT_NARROW_CHUNK where every one is a
    narrow interval narrow_cdf_short takes, NARROW_CHUNK where every one is one narrow_cdf_coarse takes,
    MIXED_CHUNK otherwise. The first element's kind says which counts are taken first (the straddling ones are the
    cheaper: no widening), the others only if needed."""
    loc, scale, low, high = (arrays[1][start:stop], arrays[2][start:stop], arrays[3][start:stop],
                             arrays[4][start:stop])
    count = stop - start
    if (low[0] < loc[0]) & (loc[0] < high[0]):
        straddling, near = _straddling_counts(loc, scale, low, high)
        if near == count:
            return NEAR_STRADDLING_CHUNK
        if straddling == count:
            return STRADDLING_CHUNK
    narrow, short = _narrow_counts(loc, scale, low, high)
    if short == count:
        return SHORT_NARROW_CHUNK
    return NARROW_CHUNK if narrow == count else MIXED_CHUNK


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def erf_rational(y):
    """erf(y) for y >= 0 as (numerator, denominator, held): y P(y^2) and Q(y^2), within ERF_RATIONAL_BOUND
    relatively below ERF_RATIONAL_END; 1 and 1 from ERF_ONE_FROM (+inf included); not held between the two or at
    a NaN."""
    clamped = min(y, ERF_RATIONAL_END)
    z = clamped * clamped
    p, q = ERF_RATIONAL_P, ERF_RATIONAL_Q
    numerator = p[0] + z * (p[1] + z * (p[2] + z * (p[3] + z * (p[4] + z * (p[5] + z * (p[6] + z * p[7]))))))
    denominator = q[0] + z * (q[1] + z * (q[2] + z * (q[3] + z * (q[4] + z * (q[5] + z * (q[6] + z * q[7]))))))
    one = y >= ERF_ONE_FROM
    return (1.0 if one else clamped * numerator), (1.0 if one else denominator), (y <= ERF_RATIONAL_END) | one


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def float32_rounding_certain(r, bound):
    """Whether every number within ``bound`` of r >= 0 rounds to float32 as r does: r's offset from its float32
    rounding f plus the bound is short of half the float32 spacing on that side of f, both ways (the spacing taken
    from f's exponent, so below float32's normal range it is smaller than float32's: stricter there, never wrong;
    0 is never certain). r - f is exact (Sterbenz)."""
    f = np.float64(np.float32(r))
    bits = _bits(f)
    half_up = _from_bits(bits & _EXPONENT_BITS) * _HALF_FLOAT32_ULP
    half_down = 0.5 * half_up if (bits & _MANTISSA_BITS) == 0 else half_up  # (below a power of two it halves)
    offset = r - f
    return (offset + bound < half_up) & (bound - offset < half_down)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def straddling_cdf_rational(value, loc, s, low, high):
    """(cdf, held) of an element with low < loc < high by erf_rational: erf_a, erf_b, erf_t of -a, b, |t| over
    sqrt 2, the cdf (erf_a +- erf_t)/(erf_a + erf_b) as one quotient of their numerators and denominators. Held
    where its float32 rounding is certain: the erf's error bound, times how much the difference erf_a - erf_t
    (below loc) cancels, puts every number within it on the same side of the float32 rounding boundaries
    (float32_rounding_certain); not held elsewhere, nor for a value outside the support or an argument between
    ERF_RATIONAL_END and ERF_ONE_FROM."""
    inverse = _SQRT_HALF / s  # (a, b and t over sqrt 2 at once)
    numerator_a, denominator_a, held_a = erf_rational((loc - low) * inverse)
    numerator_b, denominator_b, held_b = erf_rational((high - loc) * inverse)
    numerator_t, denominator_t, held_t = erf_rational(abs(value - loc) * inverse)
    # over denominator_a denominator_t: erf_a, erf_t
    part_a = numerator_a * denominator_t
    part_t = numerator_t * denominator_a
    mass = (part_a - part_t) if value <= loc else (part_a + part_t)
    inverse_whole = 1.0 / ((numerator_a * denominator_b + numerator_b * denominator_a) * denominator_t)
    cdf = mass * denominator_b * inverse_whole
    # relative error: the whole's sum and the mass's, the latter times (erf_a + erf_t) / |mass| below loc
    bound = cdf * (ERF_RATIONAL_BOUND + _STRADDLING_ROUNDING) + (
        ERF_RATIONAL_BOUND * (part_a + part_t) * denominator_b * inverse_whole)
    cdf = min(max(cdf, 0.0), 1.0)
    held = ((value > low) & (value < high) & (low < loc) & (loc < high) & held_a & held_b & held_t
            & float32_rounding_certain(cdf, bound))
    return cdf, held


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def _erf_near_parts(distance, factor):
    """erf(distance sqrt(factor)) for distance >= 0 over sqrt(factor) as (numerator, denominator, held): distance
    P(z) and Q(z), z = distance^2 factor, within ERF_NEAR_BOUND relatively for z <= ERF_NEAR_END^2; not held
    beyond (+inf included) or at a NaN. (sqrt(factor) is left out: it cancels in the cdf's quotient.)"""
    z = distance * distance * factor
    p, q = ERF_NEAR_P, ERF_NEAR_Q
    numerator = distance * (p[0] + z * (p[1] + z * (p[2] + z * (p[3] + z * (p[4] + z * p[5])))))
    denominator = q[0] + z * (q[1] + z * (q[2] + z * (q[3] + z * (q[4] + z * q[5]))))
    return numerator, denominator, z <= ERF_NEAR_END * ERF_NEAR_END


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def straddling_cdf_near(value, loc, s, low, high):
    """straddling_cdf_rational by erf_near's fit, for an element whose bounds lie within 2 sqrt(2) scales of loc:
    the three erf's over the common factor sqrt(1/2)/s, which cancels in their quotient, and that quotient as one
    division. Held as straddling_cdf_rational's, with ERF_NEAR_BOUND; not held where an argument is past
    ERF_NEAR_END (for straddling_cdf_rational, then the per-element kernel)."""
    factor = 0.5 / (s * s)
    numerator_a, denominator_a, held_a = _erf_near_parts(loc - low, factor)
    numerator_b, denominator_b, held_b = _erf_near_parts(high - loc, factor)
    numerator_t, denominator_t, held_t = _erf_near_parts(abs(value - loc), factor)
    part_a = numerator_a * denominator_t
    part_t = numerator_t * denominator_a
    mass = (part_a - part_t) if value <= loc else (part_a + part_t)
    per_mass = denominator_b / ((numerator_a * denominator_b + numerator_b * denominator_a) * denominator_t)
    cdf = mass * per_mass
    bound = cdf * (ERF_NEAR_BOUND + _STRADDLING_ROUNDING) + ERF_NEAR_BOUND * (part_a + part_t) * per_mass
    cdf = min(max(cdf, 0.0), 1.0)
    held = ((value > low) & (value < high) & (low < loc) & (loc < high) & held_a & held_b & held_t
            & float32_rounding_certain(cdf, bound))
    return cdf, held


@numba.njit(cache=True, error_model="numpy", fastmath=_FUSED, forceinline=False)
def near_straddling_chunk(start, stop, arrays, out):
    """straddling_cdf_near of elements [start, stop) into ``out`` (NaN where not held), over the arguments; returns
    the count not held (as straddling_chunk_coarse)."""
    value, loc, scale, low, high = (arrays[0][start:stop], arrays[1][start:stop], arrays[2][start:stop],
                                    arrays[3][start:stop], arrays[4][start:stop])
    its_out = out[start:stop]
    left = 0
    for j in range(stop - start):
        cdf, held = straddling_cdf_near(np.float64(value[j]), np.float64(loc[j]), np.float64(scale[j]),
                                        np.float64(low[j]), np.float64(high[j]))
        its_out[j] = cdf if held else np.nan
        left += not held
    return left


@numba.njit(cache=True, error_model="numpy", fastmath=_FUSED, forceinline=False)
def straddling_chunk_coarse(start, stop, arrays, out):
    """straddling_cdf_rational of elements [start, stop) into ``out`` (NaN where not held, for the per-element
    kernel, float64-exact), over the arguments; returns the count not held (a reduction the loop keeps in vector
    registers: no scalar loop looks for them where none is)."""
    value, loc, scale, low, high = (arrays[0][start:stop], arrays[1][start:stop], arrays[2][start:stop],
                                    arrays[3][start:stop], arrays[4][start:stop])
    its_out = out[start:stop]
    left = 0
    for j in range(stop - start):
        cdf, held = straddling_cdf_rational(np.float64(value[j]), np.float64(loc[j]), np.float64(scale[j]),
                                            np.float64(low[j]), np.float64(high[j]))
        its_out[j] = cdf if held else np.nan
        left += not held
    return left


@numba.njit(cache=True, error_model="numpy", fastmath=_FUSED, forceinline=False)
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


@numba.njit(cache=True, error_model="numpy", fastmath=_FUSED, forceinline=False)
def short_narrow_chunk(start, stop, arrays, out):
    """narrow_cdf_short of elements [start, stop) into ``out`` (NaN where not held), over the arguments; returns the
    count not held."""
    value, loc, scale, low, high = (arrays[0][start:stop], arrays[1][start:stop], arrays[2][start:stop],
                                    arrays[3][start:stop], arrays[4][start:stop])
    its_out = out[start:stop]
    left = 0
    for j in range(stop - start):
        cdf, held = narrow_cdf_short(np.float64(value[j]), np.float64(loc[j]), np.float64(scale[j]),
                                     np.float64(low[j]), np.float64(high[j]))
        its_out[j] = cdf if held else np.nan
        left += not held
    return left
