"""log, exp, expm1, cos and sin of a turn's fraction, erfcx, erfc, erf and the one-sided mean's excess for numba
kernels whose loops the compiler turns into SIMD code (four float64 at once under AVX2, eight under AVX-512).

A loop calling libm's log or exp (numba has no vector math library here) runs one element at a time, at 15-30 ns an
element on a shared core, and numba has no erfcx at all. These are branch-free float64 versions the loop vectorizer
inlines: log and exp are fdlibm's algorithms (e_log.c, e_exp.c: under 1 ulp) with their special cases left to the
caller, the exponent read and written through the float's bits; expm1 is its Taylor series near 0 and exp(x) - 1
beyond; cos and sin of 2 pi v are their Taylor series about the quarter turn nearest to v; erfcx is a single
Chebyshev expansion on [0, inf) (Shepherd and Laframboise's form, (1 + 2x) erfcx(x) in t = (x - K)/(x + K)),
evaluated as a degree-26 polynomial in t by Estrin's scheme (short dependency chains); erfc is exp(-x^2) erfcx(x)
and erf its Taylor series near 0 and 1 - erfc beyond. The mean's excess over a lower bound, D(a) = E[t] - a for t
standard normal on [a, inf), is two Chebyshev expansions, on [0, 4] and in 1/a^2 beyond, where the closed form
1/M(a) - a loses a^2 ulps. tests/distributions/test_truncated_normal_kernels.py checks each against mpmath.

These, and the cdf's and icdf's element functions built on them (tnlib.distributions._cdf_vector, _icdf_vector),
are compiled once each, for float64 scalars, and inlined by LLVM into the loops that call them (``forceinline``),
which is what lets those loops vectorize. numba's own inlining (``inline="always"``) copies a function's IR, its
callees already inlined, into every call site and types it again there: the icdf's element function took 2-3
minutes to compile that way on the loaded 2-core machine, most of it numba copying IR. Each states its compile flags:
numba compiles a function that leaves a flag unset under the flags of its first caller, so the values of every
method would depend on which method a process compiled first (tests/repository/test_compile_flags.py,
benchmarks/check_compile_order.py). The helpers the log_prob loops share with the other methods fuse multiply-adds
(``fastmath={"contract"}``), log_prob's own flags and the faster choice for every method.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from tnlib.kernel_cache import cache_by_folder_sources

cache_by_folder_sources(__file__)  # before the first njit(cache=True): tnlib.kernel_cache says why

# fastmath's flag for fused multiply-adds alone (a * b + c rounded once instead of twice; no reassociation, no
# finite-math shortcut): the kernels whose results need not be the unfused loops' to the bit
_FUSED = {"contract"}


@intrinsic
def _bits(typingctx, x):
    """The bits of a float64 as an int64 (a bitcast, which vectorizes)."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def _from_bits(typingctx, n):
    """The float64 whose bits are the int64 ``n``."""

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


# fdlibm's constants: ln 2 split so that k ln2_hi is exact for |k| < 2^11, log's minimax polynomial in s^2 on
# [0, 0.1716], exp's in r^2 on [-ln2/2, ln2/2]
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_LOG_COEFFICIENTS = (6.666666666666735130e-01, 3.999999999940941908e-01, 2.857142874366239149e-01,
                     2.222219843214978396e-01, 1.818357216161805012e-01, 1.531383769920937332e-01,
                     1.479819860511658591e-01)
_LG1, _LG2, _LG3, _LG4, _LG5, _LG6, _LG7 = _LOG_COEFFICIENTS
_INV_LN2 = 1.44269504088896338700e+00
_EXP_COEFFICIENTS = (1.66666666666666019037e-01, -2.77777777770155933842e-03, 6.61375632143793436117e-05,
                     -1.65339022054652515390e-06, 4.13813679705723846039e-08)
_P1, _P2, _P3, _P4, _P5 = _EXP_COEFFICIENTS
_ROUNDING_SHIFT = 6755399441055744.0  # 1.5 * 2^52: adding it rounds a double below 2^51 in size to an integer
_MANTISSA = 0x000FFFFFFFFFFFFF
_SQRT2_MANTISSA = 0x6A09E667F3BCD  # the mantissa bits of sqrt(2)
_ONE_BITS, _HALF_BITS = 0x3FF0000000000000, 0x3FE0000000000000
_EXP_FLOOR = -708.0  # exp below it is under 2^-1021; 0 is returned (the callers add it to numbers of order 1)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath={"contract"})
def log(x):
    """log(x) for a positive normal finite x, under 1 ulp (fdlibm's e_log.c); other x are the caller's."""
    bits = _bits(x)
    mantissa = bits & _MANTISSA
    above = mantissa > _SQRT2_MANTISSA  # 1 + f in [sqrt(2)/2, sqrt(2)): a mantissa above sqrt(2) an octave down
    k = float((bits >> 52) - 1023 + (1 if above else 0))
    f = _from_bits(mantissa | (_HALF_BITS if above else _ONE_BITS)) - 1.0
    s = f / (2.0 + f)
    z = s * s
    w = z * z
    r = z * (_LG1 + w * (_LG3 + w * (_LG5 + w * _LG7))) + w * (_LG2 + w * (_LG4 + w * _LG6))
    half_f2 = 0.5 * f * f
    return k * _LN2_HI - ((half_f2 - (s * (half_f2 + r) + k * _LN2_LO)) - f)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath={"contract"})
def _exp_reduction(x):
    """(k, hi, lo) with x = k ln 2 + (hi - lo), k the nearest integer to x / ln 2 (fdlibm's reduction, for
    |x| <= 709: ln 2 in two parts, the first with k's product exact), for :func:`exp`, :func:`short_exp` and the
    float32 passes' Taylor exps (_cdf_float32.exp_coarse, _icdf_float32.exp_taylor)."""
    shifted = x * _INV_LN2 + _ROUNDING_SHIFT
    k_float = shifted - _ROUNDING_SHIFT
    k = _bits(shifted) - _bits(_ROUNDING_SHIFT)
    return k, x - k_float * _LN2_HI, k_float * _LN2_LO


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath={"contract"})
def exp(x):
    """exp(x) for x <= 709, under 1 ulp (fdlibm's e_exp.c); 0 below -708."""
    clamped = min(max(x, _EXP_FLOOR), 709.0)
    k, hi, lo = _exp_reduction(clamped)
    r = hi - lo
    r2 = r * r
    c = r - r2 * (_P1 + r2 * (_P2 + r2 * (_P3 + r2 * (_P4 + r2 * _P5))))
    y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi)
    below = k < -1022  # 2^k is subnormal: scale by 2^(k+1), then halve
    y = y * _from_bits((k + (1024 if below else 1023)) << 52) * (0.5 if below else 1.0)
    return y if x >= _EXP_FLOOR else 0.0


# expm1's Taylor series x + x^2/2! + ... + x^15/15! below |x| = 1/2 (the first term dropped is under 2e-18 of the
# sum); beyond, exp(x) - 1, whose subtraction loses under two bits there
EXPM1_SERIES = tuple(1.0 / math.factorial(n) for n in range(1, 16))
EXPM1_SERIES_END = 0.5


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def expm1(x):
    """exp(x) - 1 for x <= 709 (-inf gives -1; -1 below -708), within a few ulps; both forms are computed and one
    kept, so a loop of it vectorizes."""
    c = EXPM1_SERIES
    inner = c[7] + x * (c[8] + x * (c[9] + x * (c[10] + x * (c[11] + x * (c[12] + x * (c[13] + x * c[14]))))))
    series = x * (c[0] + x * (c[1] + x * (c[2] + x * (c[3] + x * (c[4] + x * (c[5] + x * (c[6] + x * inner)))))))
    return series if abs(x) < EXPM1_SERIES_END else exp(x) - 1.0


# exp's Taylor series 1 + r + ... + r^7/7! on the reduced |r| <= ln(2)/2: the first term dropped is under 5.3e-9 of
# the sum
SHORT_EXP_SERIES = tuple(1.0 / math.factorial(n) for n in range(8))
SHORT_EXP_ERROR = 2.0 ** -27  # a bound on short_exp's relative error (5.3e-9 and the roundings'), tested


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def short_exp(x):
    """exp(x) for -708 <= x <= 0 within ``SHORT_EXP_ERROR`` relative (exp's range reduction, then a series without its
    division), for a test that compares a uniform with it and lets :func:`exp` decide the rare ones within that
    error (x below -708 is taken as -708)."""
    k, hi, lo = _exp_reduction(max(x, _EXP_FLOOR))
    r = hi - lo
    c = SHORT_EXP_SERIES
    series = c[0] + r * (c[1] + r * (c[2] + r * (c[3] + r * (c[4] + r * (c[5] + r * (c[6] + r * c[7]))))))
    return series * _from_bits((k + 1023) << 52)


# cos and sin of a quarter turn's fraction f in [-1/2, 1/2], i.e. of f pi/2 in [-pi/4, pi/4], by their Taylor series
# in f to degrees 18 and 17 (the first terms dropped are under 1e-18 of the value)
QUARTER_TURN_COS = tuple((-1.0) ** n * (math.pi / 2) ** (2 * n) / math.factorial(2 * n) for n in range(10))
QUARTER_TURN_SIN = tuple((-1.0) ** n * (math.pi / 2) ** (2 * n + 1) / math.factorial(2 * n + 1) for n in range(9))


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def cos_sin_turns(v):
    """(cos 2 pi v, sin 2 pi v) for v in [0, 1), within a few ulps of each (relative): 4 v less its nearest
    integer q, exact, is the fraction f of a quarter turn, whose cos and sin the quadrant q rotates."""
    shifted = 4.0 * v + _ROUNDING_SHIFT
    q = shifted - _ROUNDING_SHIFT
    quadrant = (_bits(shifted) - _bits(_ROUNDING_SHIFT)) & 3
    f = 4.0 * v - q
    z = f * f
    c, s = QUARTER_TURN_COS, QUARTER_TURN_SIN
    cos_f = c[0] + z * (c[1] + z * (c[2] + z * (c[3] + z * (c[4] + z * (c[5] + z * (c[6] + z * (c[7] + z * (
        c[8] + z * c[9]))))))))
    sin_f = f * (s[0] + z * (s[1] + z * (s[2] + z * (s[3] + z * (s[4] + z * (s[5] + z * (s[6] + z * (s[7] + z * s[8]
                                                                                                         ))))))))
    # (a chain of four-way selects is left scalar by the vectorizer; these two-way ones are not)
    odd = (quadrant & 1) == 1
    cos_turn = sin_f if odd else cos_f
    sin_turn = cos_f if odd else sin_f
    return (-cos_turn if quadrant == 1 or quadrant == 2 else cos_turn), (-sin_turn if quadrant >= 2 else sin_turn)


# erfcx(x) = P(t) / (1 + 2x), t = (x - K)/(x + K) = 1 - 2K/(x + K) in [-1, 1): P's monomial coefficients, from its
# Chebyshev expansion (computed at 50 digits by mpmath and converted there;
# tests/distributions/test_truncated_normal_kernels.py recomputes them). The terms dropped are below 3e-18, and |P's coefficients| sum to 1.8 against P >= 1: Horner or
# Estrin lose no digits.
ERFCX_K = 3.75
ERFCX_POLYNOMIAL = np.array((
    1.2375126308378275, -0.14024059858554702, 0.00358541548546369, 0.08227673849015102, -0.10880393014170746,
    0.09230432116019834, -0.05869339859054762, 0.0283622774215156, -0.009746579547619623, 0.0017556258324217529,
    0.00029371359480570737, -0.00029015397928986765, 5.164940777546399e-05, 2.2383912036550678e-05,
    -1.1445049125831309e-05, -9.72849582211122e-07, 1.7534434251106334e-06, -5.826281078800777e-08,
    -2.6114702359900956e-07, 2.4289762925488707e-08, 4.0971223152703005e-08, -4.389284159986328e-09,
    -6.545560212480267e-09, 5.457157304704688e-10, 9.02214970034059e-10, -3.75315827795962e-11,
    -7.33950500852954e-11))


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath={"contract"})
def _estrin_26(t, p):
    """p[0] + p[1] t + ... + p[26] t^26 by Estrin's scheme."""
    t2 = t * t
    t4 = t2 * t2
    t8 = t4 * t4
    r0 = (p[0] + p[1] * t) + (p[2] + p[3] * t) * t2
    r1 = (p[4] + p[5] * t) + (p[6] + p[7] * t) * t2
    r2 = (p[8] + p[9] * t) + (p[10] + p[11] * t) * t2
    r3 = (p[12] + p[13] * t) + (p[14] + p[15] * t) * t2
    r4 = (p[16] + p[17] * t) + (p[18] + p[19] * t) * t2
    r5 = (p[20] + p[21] * t) + (p[22] + p[23] * t) * t2
    r6 = (p[24] + p[25] * t) + p[26] * t2
    return (r0 + r1 * t4) + (r2 + r3 * t4) * t8 + ((r4 + r5 * t4) + r6 * t8) * (t8 * t8)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath={"contract"})
def erfcx(x):
    """erfcx(x) = exp(x^2) erfc(x) for x >= 0 (+inf gives 0), within 8 ulps."""
    t = 1.0 - 2.0 * ERFCX_K / (x + ERFCX_K)
    return _estrin_26(t, ERFCX_POLYNOMIAL) / (1.0 + 2.0 * x)


# Veltkamp's splitting constant, 2^27 + 1: c = K y, hi = c - (c - y) holds y's upper 26 bits exactly
_SPLITTER = 134217729.0
# erfc(y) is 0 in float64 from y = 27.3; clamping there keeps y^2 finite for an infinite argument
_ERFC_ARGUMENT_END = 38.0


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def erfc(y):
    """erfc(y) for y >= 0 (+inf gives 0), relatively within a few ulps: exp(-y^2) erfcx(y) with y^2 = hi + lo
    exactly (a rounded y^2 of 700 would cost 1e-13)."""
    y = min(y, _ERFC_ARGUMENT_END)
    hi = y * y
    c = _SPLITTER * y
    y_hi = c - (c - y)
    y_lo = y - y_hi
    lo = ((y_hi * y_hi - hi) + 2.0 * y_hi * y_lo) + y_lo * y_lo
    return exp(-hi) * (1.0 - lo) * erfcx(y)


# erf(x) = (2/sqrt pi) sum (-1)^n x^(2n+1) / (n! (2n+1)) below |x| = 1/2, to n = 13 (the first term dropped is below
# 1e-19 of the sum); beyond, 1 - erfc(|x|) with erfc(1/2) = 0.48 loses under a bit
ERF_SERIES = tuple(2.0 / math.sqrt(math.pi) * (-1.0) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(14))
ERF_SERIES_END = 0.5


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def erf_series(x):
    """erf(x) for |x| <= 1/2 by its Taylor series, within a few ulps."""
    c = ERF_SERIES
    z = x * x
    inner = c[7] + z * (c[8] + z * (c[9] + z * (c[10] + z * (c[11] + z * (c[12] + z * c[13])))))
    return x * (c[0] + z * (c[1] + z * (c[2] + z * (c[3] + z * (c[4] + z * (c[5] + z * (c[6] + z * inner)))))))


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def erf(x):
    """erf(x), within a few ulps; both forms are computed and one kept, so a loop of it vectorizes."""
    far = 1.0 - erfc(abs(x))
    return erf_series(x) if abs(x) < ERF_SERIES_END else (far if x >= 0.0 else -far)


# D(a) = E[t] - a, t standard normal on [a, inf), a >= 0: P_NEAR(a/2 - 1) on [0, 4], and P_FAR(2 (4/a)^2 - 1) / a
# beyond, where a D(a) = 1 - 2/a^2 + 10/a^4 - ... is smooth in 1/a^2 (its asymptotic series diverges, so it is not
# summed). Each P is the degree-24 Chebyshev expansion of its function (the terms dropped are below 3e-17), computed
# at 50 digits by mpmath and converted to monomials there (tests/distributions/test_truncated_normal_kernels.py recomputes them);
# |coefficients| sum to 0.80 (near, against P >= 0.22) and 1.0 (far, against P >= 0.94): Estrin loses no digits.
MEAN_EXCESS_SPLIT = 4.0
MEAN_EXCESS_NEAR = np.array((
    0.37321553282284087, -0.22855820082816253, 0.11871172258313203, -0.0525626584879286, 0.019399325770209766,
    -0.005490671855913906, 0.0007905141098911359, 0.00030523222375414895, -0.00032125100151451957,
    0.00016219402752178203, -5.4772483784162114e-05, 9.504671807868671e-06, 2.839560105393815e-06,
    -3.5049102170507947e-06, 1.86802169914351e-06, -6.568112388990755e-07, 1.2141291515210087e-07,
    3.057451130497797e-08, -4.011665494189723e-08, 2.1884962446681036e-08, -8.976070936165278e-09,
    2.1942519149518514e-09, 7.367827118909194e-10, -8.400456317985217e-10, 2.0661656811021405e-10))
MEAN_EXCESS_FAR = np.array((
    0.9455075708007042, -0.04786720143234518, 0.005527979612316973, -0.0008787865392718997, 0.00016896882032009926,
    -3.711612023875381e-05, 9.025235967668977e-06, -2.3816107867678846e-06, 6.727925373135097e-07,
    -2.0145342206584016e-07, 6.345453226319597e-08, -2.090135889238662e-08, 7.164681953950128e-09,
    -2.542233359368718e-09, 9.319585923259697e-10, -3.592982160513306e-10, 1.413384093276341e-10,
    -4.6093479871522616e-11, 1.691087386960039e-11, -1.70483189327333e-11, 8.520556785334031e-12,
    2.5832524574209496e-12, -1.6337007372955747e-12, -1.544173803014433e-12, 7.868536025474648e-13))


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _estrin_24(t, p):
    """p[0] + p[1] t + ... + p[24] t^24 by Estrin's scheme."""
    t2 = t * t
    t4 = t2 * t2
    t8 = t4 * t4
    r0 = (p[0] + p[1] * t) + (p[2] + p[3] * t) * t2
    r1 = (p[4] + p[5] * t) + (p[6] + p[7] * t) * t2
    r2 = (p[8] + p[9] * t) + (p[10] + p[11] * t) * t2
    r3 = (p[12] + p[13] * t) + (p[14] + p[15] * t) * t2
    r4 = (p[16] + p[17] * t) + (p[18] + p[19] * t) * t2
    r5 = (p[20] + p[21] * t) + (p[22] + p[23] * t) * t2
    return (r0 + r1 * t4) + (r2 + r3 * t4) * t8 + ((r4 + r5 * t4) + p[24] * t8) * (t8 * t8)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def mean_excess(a):
    """D(a) = E[t] - a for t standard normal on [a, inf), a >= 0 (+inf gives 0); both expansions are formed and one
    kept, so a loop of it vectorizes."""
    ratio = MEAN_EXCESS_SPLIT / a
    near = _estrin_24(0.5 * a - 1.0, MEAN_EXCESS_NEAR)
    far = _estrin_24(2.0 * ratio * ratio - 1.0, MEAN_EXCESS_FAR) / a
    return near if a < MEAN_EXCESS_SPLIT else far
