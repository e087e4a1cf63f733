"""The proposals of ``TruncatedNormal.sample``'s compiled kernels (tnlib.distributions._sample_kernels), one element
at a time: each element's code, its attempts' uniforms, candidates and tests.

The proposals are those of the torch route (tnlib.distributions._sampling): the Normal (folded where the interval
lies at or above loc), the exponential with the log-density's slope at the bound, or the uniform on the interval,
whichever accepts the most candidates, but the uniform wherever the interval is nearly flat (``_NEARLY_FLAT``); an
interval across loc at least ``_STRADDLING_FROM`` scales wide (a moderate batch's) takes two of them in each attempt
instead, Box and Muller's Normal pair and, where neither of the pair falls in the interval, the uniform
(:func:`_straddling_candidate`): fewer rejected attempts to draw again (on the peer benchmark's moderate batch,
1.9% of the first against 9.5% with the better proposal alone). The kernels' loops inline these functions, which
branch only on constants the compiler folds and call only the vectorizable functions of
tnlib.distributions._vector_math, so that the loops run eight draws at a time under AVX-512; libm's log and exp,
which a loop cannot vectorize, round differently, so these draws are not those of a scalar loop at the same
uniforms; each is an exact draw all the same, to the rounding of the functions it calls.

The test of the exponential's and the uniform's candidates, v <= exp(-x) with x >= 0, is decided by the bounds
1 - x <= exp(-x) <= 1 - x + x^2/2 where the element's x is small (at most ``_SQUEEZE_WITHIN``, or the exponential
at least ``_SQUEEZED_EXPONENTIAL_FROM`` scales out, where x = d^2/2 is about 1/a^2): a candidate between the bounds,
one in about x^2/2, is decided by its exp in the scalar loop that lists the rejected draws. Elsewhere the loop forms
the exp. The decision is made the same way whichever loop forms the candidate, so a draw's value does not depend
on the block it falls in.

The choice compares the rates divided by the element's mass (M0 in the frame, Z straddling), which all three share,
and only the pairs of rates that can decide it (:func:`_kind_of`): the exps it needs only above loc, below a = 0.8
and at least 1 / (2 phi(0)) = 1.25 scales wide (one exp and one expm1 an element there, in a second loop that runs
only for a block holding such an element). The torch route's fallback to inversion for a best rate below
``_sampling._MIN_ACCEPTANCE`` (0.05) is never needed, as the best rate is at least 0.05 everywhere: straddling (and
not narrow) the interval is wider than 1 and the Normal keeps Z >= 0.19; on a narrow interval the density varies by
at most e^1.5 and the uniform keeps more than 0.22; in the frame with a >= 0.25 the exponential keeps at least its
rate with no upper bound, a m(a) >= a^2 / (1 + a^2) > 0.058; with 0 <= a < 0.25 (not narrow: w > 1) the folded
Normal keeps 2 (Phi(a + w) - Phi(a)) > 0.59; the nearly flat uniform keeps at least exp(-1/16) > 0.93.

Random numbers: one 64-bit key is drawn from torch's generator per call, so ``torch.manual_seed`` fixes the draws.
The kernels' uniforms are SplitMix64's outputs (its Weyl sequence, counter * golden gamma + key, through its
finaliser; the top 53 bits as a float64 in [0, 1)) at counter = draw * 2^24 + 2 attempt and the next (a _STRADDLING
attempt's four at draw * 2^24 + 4 attempt on): every uniform of a call comes from a distinct counter, i.e. from one
stream of period 2^64, and a draw's value depends only on the key, its index in the output and its element, not on
the blocks or on how the threads split them. A draw would need 2^22 attempts to reach the next draw's counters: an
attempt is accepted with a probability of at least 0.05 (a _STRADDLING one with at least that of the better of its
two proposals), so the chance is below 0.95^(2^22). Normal candidates come in Box and Muller's pairs, the first of
the pair that falls in the interval taken. Float32 parameters are widened and each draw rounded once.
"""
from __future__ import annotations

import math

import numba
import numpy as np

from tnlib.distributions import _vector_math
from tnlib.distributions._regimes import _SQRT_2PI
from tnlib.distributions._sampling import _EXPONENTIAL, _NEARLY_FLAT, _NORMAL, _UNIFORM
from tnlib.kernel_cache import cache_by_folder_sources

cache_by_folder_sources(__file__)  # before the first njit(cache=True): tnlib.kernel_cache says why

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX_1, _MIX_2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_SHIFT_30, _SHIFT_27, _SHIFT_31, _SHIFT_11 = np.uint64(30), np.uint64(27), np.uint64(31), np.uint64(11)
_UNIFORMS_PER_DRAW_BITS = np.uint64(24)
_TO_UNIT = 2.0 ** -53
# from a = 0.8 the exponential's rate, at least a M0 (and at least the uniform's, M0 / w, as a w >= 1 - exp(-a w)),
# beats the folded Normal's, 2 phi(a) M0 <= 0.58 M0
_EXPONENTIAL_FROM = 0.8
_FOLDED_AT_LOC = 2.0 / _SQRT_2PI  # 2 phi(0), the folded Normal's rate over M0 at a = 0 (the largest)
# an element's code, one byte: its proposal (_NORMAL, _EXPONENTIAL, _UNIFORM), an interval of one point (its draw is
# the point), an element that defines no distribution (its draw is NaN), a choice the rates' exps must decide
# (_sample_kernels._classify replaces it), or an interval across loc that takes the Normal and the uniform in turn
# (_STRADDLING, :func:`_straddles`); plus _EXACT_TEST where the exponential's or the uniform's test forms its exp, and
# _UNBOUNDED where the exponential's tail expm1(-a w) is -1 in float64 (a w >= 40: exp(-40) is under half an ulp)
_POINT, _LAWLESS, _CHOICE_READS_EXPS, _STRADDLING = 3, 4, 5, 6
# an interval across loc at least this many scales wide is _STRADDLING's: narrower, the uniform keeps at least 98.9%
# of its candidates and the Normal's pair would add nothing but its cost
_STRADDLING_FROM = 0.25
_KIND_BITS, _EXACT_TEST, _UNBOUNDED = 7, 8, 16
_CODES = 32
_UNBOUNDED_FROM = 40.0
# the test's bounds decide a candidate unless v falls in a window of x^2/2: where x <= 1/16 at most 0.2% of them
_SQUEEZE_WITHIN = 1.0 / 16.0
# the exponential's x = d^2/2 with d ~ Exp(a): the window holds E[d^4]/8 = 3/a^4 of the candidates, 1.2% at a = 4
_SQUEEZED_EXPONENTIAL_FROM = 4.0
# a candidate's flag: rejected, accepted, or between the test's bounds (its exp decides)
_REJECTED, _ACCEPTED, _UNDECIDED = 0, 1, 2


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _uniform(key, counter):
    """SplitMix64's output at ``counter`` of the stream ``key`` as a float64 in [0, 1)."""
    z = counter * _GAMMA + key
    z = (z ^ (z >> _SHIFT_30)) * _MIX_1
    z = (z ^ (z >> _SHIFT_27)) * _MIX_2
    z = z ^ (z >> _SHIFT_31)
    return np.float64(np.int64(z >> _SHIFT_11)) * _TO_UNIT  # (a signed conversion is one instruction)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _kind_of(a, w, tail, folded):
    """The proposal with the highest acceptance rate (the first of equal ones) of the canonical element (a, w), given
    ``tail`` = expm1(-a w) and ``folded`` = 2 phi(a), the folded Normal's rate over M0: _sampling._acceptance_rates
    divided by the mass they share, with the comparisons that cannot change the choice left out. From a = 0.8 the
    exponential; below loc (a < 0: the interval straddles loc, as its upper end is above it) the peak is at t = 0,
    where the uniform's rate is sqrt(2 pi) / w of the Normal's, and the exponential does not apply; above it (a > 0)
    the uniform's rate, 1 / w, is never above the exponential's, a / (1 - exp(-a w)), so the folded Normal's is
    compared with the exponential's alone; at a = 0 the folded Normal's with the uniform's, 1 / w. Selects only, so
    that a loop of it vectorizes; neither ``tail`` nor ``folded`` is read below loc or from a = 0.8."""
    above = _EXPONENTIAL if a / -tail > folded else _NORMAL
    at_loc = _UNIFORM if w * folded < 1.0 else _NORMAL
    below = _UNIFORM if w < _SQRT_2PI else _NORMAL
    kind = above if a > 0.0 else (at_loc if a == 0.0 else below)
    return _EXPONENTIAL if a >= _EXPONENTIAL_FROM else kind


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _folded_normal_rate(a):
    """2 phi(a): the folded Normal's acceptance rate over M0."""
    return 2.0 / _SQRT_2PI * _vector_math.exp(-0.5 * a * a)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _nearly_flat(a, w):
    """Whether the canonical element (a, w) lies at or above loc with a log-density that falls by at most
    ``_NEARLY_FLAT`` across it: the uniform's (tnlib.distributions._sampling._NEARLY_FLAT)."""
    return a >= 0.0 and (a + 0.5 * w) * w <= _NEARLY_FLAT


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _kind_element(a, w):
    """The proposal of the canonical element (a, w): :func:`_kind_of`, but the uniform where it is nearly flat."""
    kind = _kind_of(a, w, _vector_math.expm1(-a * w), _folded_normal_rate(a))
    return _UNIFORM if _nearly_flat(a, w) else kind


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _defines_a_law(loc, scale, low, high):
    """Whether a rejection loop ends for (loc, scale, low, high): a finite loc, a positive finite scale and low <= high
    (low == high draws the point). For any other element -- a NaN bound accepts no candidate -- the draws are NaN."""
    return math.isfinite(loc) and 0.0 < scale < math.inf and low <= high


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _straddles(loc, scale, low, high):
    """Whether the element (loc, scale, low, high), float64, is _STRADDLING's: it defines a law, loc lies strictly
    inside its interval and the interval is at least ``_STRADDLING_FROM`` scales wide (multiplied, not divided, so
    that a block's test of it is as cheap as a comparison; every test of it is this one)."""
    return low < loc and loc < high and 0.0 < scale < math.inf and high - low >= _STRADDLING_FROM * scale


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _canonical(loc, scale, low, high):
    """(flip, c_loc, c_low, c_high, a, b, w): the element mirrored so that its mass is not below loc, as
    tnlib.distributions._regimes._core forms it, and its bounds and width in scales."""
    flip = high <= loc
    c_loc = -loc if flip else loc
    c_low = -high if flip else low
    c_high = -low if flip else high
    return flip, c_loc, c_low, c_high, (c_low - c_loc) / scale, (c_high - c_loc) / scale, (high - low) / scale


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _code(loc, scale, low, high, choice_reads_exps):
    """The code of the element (loc, scale, low, high), float64: its proposal (:func:`_kind_element`) and whether
    that proposal's test needs its exp. ``choice_reads_exps`` (a constant the compiler folds): False gives
    _CHOICE_READS_EXPS where the rates' exps decide the proposal (above loc, below a = 0.8, from 1.25 scales wide:
    narrower, 1 / w beats 2 phi(a)), without forming them."""
    _, _, _, _, a, _, w = _canonical(loc, scale, low, high)
    if choice_reads_exps:
        kind = _kind_of(a, w, _vector_math.expm1(-a * w), _folded_normal_rate(a))
    else:
        above = _EXPONENTIAL if w * _FOLDED_AT_LOC < 1.0 else _CHOICE_READS_EXPS
        at_loc = _UNIFORM if w * _FOLDED_AT_LOC < 1.0 else _NORMAL
        below = _UNIFORM if w < _SQRT_2PI else _NORMAL
        kind = _EXPONENTIAL if a >= _EXPONENTIAL_FROM else (above if a > 0.0 else (at_loc if a == 0.0 else below))
    kind = _UNIFORM if _nearly_flat(a, w) else kind
    # the largest x of the test: the uniform's log-density below its peak, (a + w/2) w in the frame (peak at the
    # lower end), max(a^2, b^2)/2 straddling (peak at loc; b as a + w, which spares the loop a division and moves
    # only which test decides); the exponential's d^2/2 <= w^2/2
    uniform_x = (a + 0.5 * w) * w if a >= 0.0 else 0.5 * max(a * a, (a + w) * (a + w))
    squeezed = (uniform_x <= _SQUEEZE_WITHIN if kind == _UNIFORM
                else a >= _SQUEEZED_EXPONENTIAL_FROM or 0.5 * w * w <= _SQUEEZE_WITHIN)
    code = kind if squeezed or kind == _NORMAL or kind == _CHOICE_READS_EXPS else kind + _EXACT_TEST
    code = code + _UNBOUNDED if kind == _EXPONENTIAL and a * w >= _UNBOUNDED_FROM else code
    code = _STRADDLING if _straddles(loc, scale, low, high) else code
    code = _POINT if low == high else code
    return code if _defines_a_law(loc, scale, low, high) else _LAWLESS



@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _normal_pair(u, v, a, b):
    """(t, accepted): Box and Muller's pair sqrt(-2 log(1 - u)) (cos 2 pi v, sin 2 pi v), two Normal draws, folded
    (|t|) where a >= 0; the first inside [a, b] is taken, so the value kept has the Normal's law on [a, b] (1 - u
    is exact, as u is a multiple of 2^-53, and at least 2^-53: the draws reach 8.57 scales from loc, beyond which
    the Normal's mass is 1e-17)."""
    radius = math.sqrt(-2.0 * _vector_math.log(1.0 - u))
    cos_v, sin_v = _vector_math.cos_sin_turns(v)
    t_p, t_q = radius * cos_v, radius * sin_v
    t_p = abs(t_p) if a >= 0.0 else t_p
    t_q = abs(t_q) if a >= 0.0 else t_q
    p_inside = a <= t_p and t_p <= b
    return (t_p if p_inside else t_q), p_inside or (a <= t_q and t_q <= b)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _test(v, fall, exact):
    """Whether v <= exp(-fall), fall >= 0: by the exp where ``exact``, else by the bounds 1 - x <= exp(-x) <=
    1 - x + x^2/2 (_UNDECIDED between them)."""
    if exact:
        return _ACCEPTED if v <= _vector_math.exp(-fall) else _REJECTED
    below = 1.0 - fall
    return _ACCEPTED if v <= below else (_UNDECIDED if v <= below + 0.5 * fall * fall else _REJECTED)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _straddling_pair(loc, scale, low, high, u, v):
    """(x, inside): the first of Box and Muller's pair from (u, v), as x = loc + scale t, that falls in [low, high]
    (the second where neither does), and whether one does: a _STRADDLING attempt's first proposal."""
    radius = math.sqrt(-2.0 * _vector_math.log(1.0 - u))  # (as in _normal_pair)
    cos_v, sin_v = _vector_math.cos_sin_turns(v)
    x_p, x_q = loc + scale * (radius * cos_v), loc + scale * (radius * sin_v)
    p_inside = low <= x_p and x_p <= high
    q_inside = low <= x_q and x_q <= high
    return (x_p if p_inside else x_q), p_inside or q_inside


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _straddling_uniform(loc, scale, low, high, u_next, v_next, exact):
    """(x, flag): a _STRADDLING attempt's second proposal, the uniform's x from u_next, kept where v_next <=
    exp(-z^2/2), z = (x - loc) / scale; never where the interval is infinite. The test compares v_next with
    _vector_math.short_exp (no division), _UNDECIDED where they are within twice its error, one candidate in about
    10^8 (decided by the exp where ``exact``, a constant the compiler folds: _sample_kernels._decide)."""
    width = high - low
    x_u = min(low + u_next * width, high)
    z = (x_u - loc) / scale
    if exact:
        flag = _ACCEPTED if v_next <= _vector_math.exp(-0.5 * z * z) else _REJECTED
    else:
        kept_below = _vector_math.short_exp(-0.5 * z * z)
        band = 2.0 * _vector_math.SHORT_EXP_ERROR * kept_below
        flag = _ACCEPTED if v_next <= kept_below - band else (_REJECTED if v_next > kept_below + band else _UNDECIDED)
    return x_u, (flag if width < math.inf else _REJECTED)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _straddling_candidate(loc, scale, low, high, u, v, u_next, v_next, exact):
    """(x, flag): a _STRADDLING element's candidate: the first of Box and Muller's pair from (u, v) that falls in
    [low, high] (:func:`_straddling_pair`), else the uniform's x from (u_next, v_next) with its test
    (:func:`_straddling_uniform`): the first accepted of two independent attempts, each of its proposal's law given
    that it is accepted, has the element's law. The tests read x itself, not its distance in scales, which spares
    two of the three divisions of :func:`_canonical`."""
    x_pair, inside = _straddling_pair(loc, scale, low, high, u, v)
    x_u, uniform_flag = _straddling_uniform(loc, scale, low, high, u_next, v_next, exact)
    return (x_pair if inside else x_u), (_ACCEPTED if inside else uniform_flag)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _candidate(code, loc, scale, low, high, key, counter):
    """(x, flag): the candidate of attempt ``counter`` (its uniforms u, v at ``counter`` and ``counter`` + 1) for the
    element (loc, scale, low, high) by the proposal and test of ``code``, mirrored back and clamped to the bounds,
    and whether the proposal keeps it (_ACCEPTED, _REJECTED, or _UNDECIDED where the test's bounds do not decide).
    ``code`` is a constant in the loops, which the compiler folds.

    * Normal: :func:`_normal_pair`;
    * exponential: d = -log1p(u tail) / a, tail = expm1(-a w) (-1 where _UNBOUNDED: d = -log(1 - u) / a, at most
      36.8 / a <= w), d ~ Exp(a) on [0, w], kept where v <= exp(-x), x = d^2 / 2;
    * uniform: d = u w, kept where v <= exp(-x), x the log-density's fall from its peak at d = max(-a, 0),
      (d - peak)(a + (d + peak)/2) (a product of the distance to the peak, so that nothing near-equal is
      subtracted);
    * _STRADDLING: :func:`_straddling_candidate`, its uniforms at ``counter`` to ``counter`` + 3."""
    u = _uniform(key, counter)
    v = _uniform(key, counter + np.uint64(1))
    if code == _STRADDLING:
        return _straddling_candidate(loc, scale, low, high, u, v, _uniform(key, counter + np.uint64(2)),
                                     _uniform(key, counter + np.uint64(3)), False)
    flip, c_loc, c_low, c_high, a, b, w = _canonical(loc, scale, low, high)
    kind = code & _KIND_BITS
    if kind == _NORMAL:
        t, kept = _normal_pair(u, v, a, b)
        flag = _ACCEPTED if kept else _REJECTED
        x = min(max(c_loc + scale * t, c_low), c_high)
    else:
        if kind == _EXPONENTIAL and code & _UNBOUNDED:
            d = -_vector_math.log(1.0 - u) / a
            fall = 0.5 * d * d
        elif kind == _EXPONENTIAL:
            # log1p(u tail) as Kahan's quotient z log(y) / (y - 1), y = 1 + z rounded, whose rounding errors
            # cancel (within 2 ulps)
            z = u * _vector_math.expm1(-a * w)
            y = 1.0 + z
            log1p = z if y == 1.0 else z * _vector_math.log(y) / (y - 1.0)
            d = min(-log1p / a, w)
            fall = 0.5 * d * d
        else:
            # (written out: a helper returning (d, fall) here, though never called for the Normal, kept the Normal's
            # loop from vectorizing, 14.5 against 5.9 ns an element)
            peak = max(-a, 0.0)
            d = u * w
            fall = (d - peak) * (a + 0.5 * (d + peak))
        flag = _test(v, fall, code & _EXACT_TEST != 0)
        x = min(max(c_low + scale * d, c_low), c_high)
    return (-x if flip else x), flag


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _normal_or_uniform(code, loc, scale, low, high, key, counter):
    """:func:`_candidate` of an element whose ``code`` (read from the element, not a constant) is the Normal's, the
    uniform's or _STRADDLING's, both proposals' formulas formed and one kept by selects, so that a loop over a block
    mixing them vectorizes: the same x and flag as :func:`_candidate`'s."""
    u = _uniform(key, counter)
    v = _uniform(key, counter + np.uint64(1))
    flip, c_loc, c_low, c_high, a, b, w = _canonical(loc, scale, low, high)
    t, kept = _normal_pair(u, v, a, b)
    peak = max(-a, 0.0)
    d = u * w
    fall = (d - peak) * (a + 0.5 * (d + peak))
    exact = _test(v, fall, True)
    squeezed = _test(v, fall, False)
    normal = code == _NORMAL
    uniform_flag = exact if code & _EXACT_TEST else squeezed
    flag = (_ACCEPTED if kept else _REJECTED) if normal else uniform_flag
    x = min(max(c_loc + scale * t, c_low), c_high) if normal else min(max(c_low + scale * d, c_low), c_high)
    # (a _STRADDLING element's: its own formulas, their Normal pair the one above; every element forms its two
    # uniforms)
    x_straddling, flag_straddling = _straddling_candidate(loc, scale, low, high, u, v,
                                                          _uniform(key, counter + np.uint64(2)),
                                                          _uniform(key, counter + np.uint64(3)), False)
    straddling = code == _STRADDLING
    return (x_straddling if straddling else (-x if flip else x)), (flag_straddling if straddling else flag)
