"""Compiled kernels (numba) for ``TruncatedNormal.sample`` on the CPU: exact draws by rejection, in vectorized passes.

The proposals are those of the torch route (tnlib.distributions._sampling): the Normal (folded where the interval
lies at or above loc), the exponential with the log-density's slope at the bound, or the uniform on the interval,
whichever accepts the most candidates. The draws go in blocks of ``_BLOCK``: one loop forms each draw's element's
state (its canonical frame, its proposal and the proposal's constant), then one loop forms and tests every pending
draw's candidate, each element's proposal taken by selects rather than branches (one log, one exp and one cos and
sin a candidate, the vectorizable ones of tnlib.distributions._vector_math), so that the compiler runs both loops
eight draws at a time under AVX-512; a block whose draws all take one proposal runs a copy of the loop with that
proposal's formulas alone. The rejected draws are gathered to the front of the block's columns and the candidate
loop runs again over them, from their next uniforms, until none is left. libm's log and exp, which a loop cannot
vectorize, round differently from _vector_math's, so these draws are not those of a scalar loop at the same
uniforms; each is an exact draw all the same, to the rounding of the functions it calls.

The choice compares the rates divided by the element's mass (M0 in the frame, Z straddling), which all three share,
and only the pairs of rates that can decide it (:func:`_kind_of`): one exp and one expm1 an element, none in a block
whose elements all straddle loc or are one-sided tails from 0.8 scales out (the peer benchmark's moderate and far
batches). The torch route's fallback to inversion for a best rate below ``_sampling._MIN_ACCEPTANCE`` (0.05) is
never needed, as the best rate is at least 0.05 everywhere: straddling (and not narrow) the interval is wider than 1
and the Normal keeps Z >= 0.19; on a narrow interval the density varies by at most e^1.5 and the uniform keeps more
than 0.22; in the frame with a >= 0.25 the exponential keeps at least its rate with no upper bound, a m(a) >= a^2 /
(1 + a^2) > 0.058; with 0 <= a < 0.25 (not narrow: w > 1) the folded Normal keeps 2 (Phi(a + w) - Phi(a)) > 0.59.

Random numbers: one 64-bit key is drawn from torch's generator per call, so ``torch.manual_seed`` fixes the draws.
The kernels' uniforms are SplitMix64's outputs (its Weyl sequence, counter * golden gamma + key, through its
finaliser; the top 53 bits as a float64 in [0, 1)) at counter = draw * 2^24 + 2 attempt and the next: every
uniform of a call comes from a distinct counter, i.e. from one stream of period 2^64, and a draw's value depends
only on the key, its index in the output and its element, not on the blocks or on how the threads split them. A
draw would need 2^23 attempts to reach the next draw's counters: an attempt is accepted with a probability of at
least 0.05, so the chance is below 0.95^(2^23). Normal candidates come in Box and Muller's pairs, the first of the
pair that falls in the interval taken. Float32 parameters are widened and each draw rounded once.
"""
from __future__ import annotations

import math

import numba
import numpy as np
import torch

from tnlib.distributions import _vector_math
from tnlib.distributions._kernels import _flat, _threads
from tnlib.distributions._moment_kernels import _PARALLEL_FROM
from tnlib.distributions._sampling import _EXPONENTIAL, _NORMAL, _SQRT_2PI, _UNIFORM
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
# the kinds beside the proposals': an interval of one point (its draw is the point) and an element that defines no
# distribution (its draw is NaN); both accept their first candidate
_POINT, _LAWLESS = 3.0, -1.0
# a block's columns, one row each of a (_COLUMNS, _BLOCK) array: the kind (as a float, so that the candidate loop
# holds one type of lane), the canonical bounds in scales, the width in scales, the proposal's constant (the
# exponential's expm1(-a w), the uniform's peak, -1 for the Normal), the value the canonical draw is measured from
# (c_loc for the Normal, c_low else), the scale, the canonical bounds the draw is clamped to, and -1 where the element
# is mirrored (else 1)
_KIND, _A, _B, _W, _SHAPE, _BASE, _SCALE, _LOW, _HIGH, _SIGN = range(10)
_COLUMNS = 10
# draws a block holds: its columns (80 KiB) stay in the core's cache through the passes
_BLOCK = 1024


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _uniform(key, counter):
    """SplitMix64's output at ``counter`` of the stream ``key`` as a float64 in [0, 1)."""
    z = counter * _GAMMA + key
    z = (z ^ (z >> _SHIFT_30)) * _MIX_1
    z = (z ^ (z >> _SHIFT_27)) * _MIX_2
    z = z ^ (z >> _SHIFT_31)
    return np.float64(np.int64(z >> _SHIFT_11)) * _TO_UNIT  # (a signed conversion is one instruction)


@numba.njit(cache=True, forceinline=True, error_model="numpy")
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


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _folded_normal_rate(a):
    """2 phi(a): the folded Normal's acceptance rate over M0."""
    return 2.0 / _SQRT_2PI * _vector_math.exp(-0.5 * a * a)


@numba.njit(cache=True, error_model="numpy")
def _kind_element(a, w):
    """:func:`_kind_of` of the canonical element (a, w)."""
    return _kind_of(a, w, _vector_math.expm1(-a * w), _folded_normal_rate(a))


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _defines_a_law(loc, scale, low, high):
    """Whether a rejection loop ends for (loc, scale, low, high): a finite loc, a positive finite scale and low <= high
    (low == high draws the point). For any other element -- a NaN bound accepts no candidate -- the draws are NaN."""
    return math.isfinite(loc) and 0.0 < scale < math.inf and low <= high


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _canonical(loc, scale, low, high):
    """(flip, c_loc, c_low, c_high, a, b, w): the element mirrored so that its mass is not below loc, as
    tnlib.distributions._regimes._core forms it, and its bounds and width in scales."""
    flip = high <= loc
    c_loc = -loc if flip else loc
    c_low = -high if flip else low
    c_high = -low if flip else high
    return flip, c_loc, c_low, c_high, (c_low - c_loc) / scale, (c_high - c_loc) / scale, (high - low) / scale


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _state_loop(loc, scale, low, high, count, columns, choice_reads_exps):
    """The loop of :func:`_states`; ``choice_reads_exps`` (a constant the compiler folds): False where every element
    lies below loc or is a one-sided tail from a = 0.8, whose choice reads neither exp (and whose tail is -1)."""
    kinds, lows_a, highs_b, widths, shapes = columns[_KIND], columns[_A], columns[_B], columns[_W], columns[_SHAPE]
    bases, scales, lows, highs, signs = columns[_BASE], columns[_SCALE], columns[_LOW], columns[_HIGH], columns[_SIGN]
    for k in range(count):
        x_loc, s = np.float64(loc[k]), np.float64(scale[k])
        x_low, x_high = np.float64(low[k]), np.float64(high[k])
        flip, c_loc, c_low, c_high, a, b, w = _canonical(x_loc, s, x_low, x_high)
        tail = _vector_math.expm1(-a * w) if choice_reads_exps else -1.0
        folded = _folded_normal_rate(a) if choice_reads_exps else 0.0
        kind = np.float64(_kind_of(a, w, tail, folded))
        peak = max(-a, 0.0)  # (the uniform's: at t = 0 where the interval straddles loc, else at its lower end)
        kind = _POINT if x_low == x_high else kind
        kind = kind if _defines_a_law(x_loc, s, x_low, x_high) else _LAWLESS
        kinds[k] = kind
        lows_a[k] = a
        highs_b[k] = b
        widths[k] = w
        shapes[k] = tail if kind == _EXPONENTIAL else (peak if kind == _UNIFORM else -1.0)
        bases[k] = c_loc if kind == _NORMAL else c_low
        scales[k] = s
        lows[k] = c_low
        highs[k] = c_high
        signs[k] = -1.0 if flip else 1.0


@numba.njit(cache=True, error_model="numpy")
def _states(loc, scale, low, high, first, count, columns):
    """The states of elements ``first`` to ``first + count`` into the first ``count`` places of ``columns``' rows (as
    ``_KIND`` to ``_SIGN`` name them): the element in its canonical frame, its proposal and the proposal's constant,
    in one loop of selects; where no element's choice reads an exp (a batch straddling loc, or of one-sided far
    tails), a loop without them."""
    # views from ``first``: an index first + k, which the compiler cannot prove non-negative, would take numpy's
    # wraparound in the loop
    loc, scale, low, high = loc[first:], scale[first:], low[first:], high[first:]
    reads_exps = False
    for k in range(count):
        _, _, _, _, a, _, w = _canonical(np.float64(loc[k]), np.float64(scale[k]), np.float64(low[k]),
                                         np.float64(high[k]))
        reads_exps |= not (a < 0.0 or (a >= _EXPONENTIAL_FROM and math.isinf(w)))
    if reads_exps:
        _state_loop(loc, scale, low, high, count, columns, True)
    else:
        _state_loop(loc, scale, low, high, count, columns, False)


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _candidate(kind, a, b, w, shape, key, counter):
    """(t, accepted): the canonical candidate of attempt ``counter`` (its uniforms u, v at ``counter`` and
    ``counter`` + 1) by the element's proposal, and whether the proposal keeps it, every proposal's formulas written
    as selects.

    * Normal (``shape`` = -1): Box and Muller's pair sqrt(-2 log(1 - u)) (cos 2 pi v, sin 2 pi v), two Normal
      draws, folded (|t|) where a >= 0; the first inside [a, b] is taken, so the value kept has the Normal's law on
      [a, b] (1 - u is exact, as u is a multiple of 2^-53, and at least 2^-53: the draws reach 8.57 scales from
      loc, beyond which the Normal's mass is 1e-17);
    * exponential: d = -log1p(u tail) / a (``shape`` = tail = expm1(-a w)), d ~ Exp(a) on [0, w], kept where
      v <= exp(-d^2 / 2);
    * uniform: d = u w, kept where v <= the density over its peak at d = ``shape``, exp(-(d - peak)(a + (d + peak)/2))
      (a product of the distance to the peak, so that nothing near-equal is subtracted; straddling, peak = -a);
    * a point: t = 0 from its bound; no distribution: NaN, both accepted.

    The Normal's log(1 - u) and the exponential's log1p(u tail) are one log1p(u shape), and the uniform's and the
    exponential's tests one exp."""
    one = np.uint64(1)
    u = _uniform(key, counter)
    v = _uniform(key, counter + one)
    normal = kind == _NORMAL
    exponential = kind == _EXPONENTIAL
    # log1p(u shape) as Kahan's quotient x log(y) / (y - 1), y = 1 + x rounded, whose rounding errors cancel
    # (within 2 ulps)
    u_shape = u * shape
    y = 1.0 + u_shape
    log1p = u_shape if y == 1.0 else u_shape * _vector_math.log(y) / (y - 1.0)
    # the Normal's
    radius = math.sqrt(-2.0 * log1p)
    cos_v, sin_v = _vector_math.cos_sin_turns(v)
    t_p, t_q = radius * cos_v, radius * sin_v
    t_p = abs(t_p) if a >= 0.0 else t_p
    t_q = abs(t_q) if a >= 0.0 else t_q
    p_inside = a <= t_p and t_p <= b
    t_normal = t_p if p_inside else t_q
    normal_kept = p_inside or (a <= t_q and t_q <= b)
    # the exponential's and the uniform's
    d = min(-log1p / a, w) if exponential else u * w
    log_ratio = -0.5 * d * d if exponential else -(d - shape) * (a + 0.5 * (d + shape))
    other_kept = v <= _vector_math.exp(log_ratio)
    t = t_normal if normal else (d if kind != _POINT else 0.0)
    accepted = normal_kept if normal else (other_kept or kind == _POINT or kind == _LAWLESS)
    return t, accepted


@numba.njit(cache=True, forceinline=True, error_model="numpy")
def _candidate_loop(columns, draws, count, attempt, key, values, accepted, one_kind):
    """The loop of :func:`_candidates`; ``one_kind``: the kind every draw takes, a constant the compiler folds into
    :func:`_candidate` so that only that proposal's formulas are left, or NaN to read each draw's."""
    kinds, lows_a, highs_b, widths, shapes = columns[_KIND], columns[_A], columns[_B], columns[_W], columns[_SHAPE]
    bases, scales, lows, highs, signs = columns[_BASE], columns[_SCALE], columns[_LOW], columns[_HIGH], columns[_SIGN]
    offset = np.uint64(2 * attempt)
    for k in range(count):
        kind = kinds[k] if math.isnan(one_kind) else one_kind
        counter = (np.uint64(draws[k]) << _UNIFORMS_PER_DRAW_BITS) + offset
        t, kept = _candidate(kind, lows_a[k], highs_b[k], widths[k], shapes[k], key, counter)
        x = min(max(bases[k] + scales[k] * t, lows[k]), highs[k])
        values[k] = math.nan if kind == _LAWLESS else signs[k] * x
        accepted[k] = kept


@numba.njit(cache=True, error_model="numpy")
def _candidates(columns, draws, count, attempt, key, values, accepted):
    """The ``attempt``-th candidate of the first ``count`` pending draws of a block (``draws``: their indices in the
    output; ``columns``: their elements' states) into ``values`` (the draw, mirrored back and clamped to its bounds)
    and ``accepted``, in one loop: where every draw takes one proposal (a block of one regime, the usual), a loop
    with that proposal's formulas alone."""
    kinds = columns[_KIND]
    first_kind, same = kinds[0], True
    for k in range(count):
        same &= kinds[k] == first_kind
    if same and first_kind == _NORMAL:
        _candidate_loop(columns, draws, count, attempt, key, values, accepted, np.float64(_NORMAL))
    elif same and first_kind == _EXPONENTIAL:
        _candidate_loop(columns, draws, count, attempt, key, values, accepted, np.float64(_EXPONENTIAL))
    elif same and first_kind == _UNIFORM:
        _candidate_loop(columns, draws, count, attempt, key, values, accepted, np.float64(_UNIFORM))
    else:
        _candidate_loop(columns, draws, count, attempt, key, values, accepted, math.nan)


@numba.njit(cache=True, error_model="numpy")
def _settle(columns, draws, count, values, accepted, out, pending):
    """Writes the candidates of the first ``count`` pending draws into ``out`` (a rejected one is written over when its
    draw is accepted) and gathers the rejected draws' states and indices to the front, in order; returns their
    number."""
    m = 0
    for k in range(count):
        out[draws[k]] = values[k]
        pending[m] = k
        m += 0 if accepted[k] else 1
    for row in range(_COLUMNS):
        column = columns[row]
        for j in range(m):
            column[j] = column[pending[j]]  # (pending[j] >= j: each place is read before it is written)
    for j in range(m):
        draws[j] = draws[pending[j]]
    return m


@numba.njit(cache=True, error_model="numpy")
def _finish_block(columns, draws, count, key, out, values, accepted, pending):
    """Candidates for the block's ``count`` draws, attempt after attempt, until every draw is accepted."""
    attempt = 0
    while count:
        _candidates(columns, draws, count, attempt, key, values, accepted)
        count = _settle(columns, draws, count, values, accepted, out, pending)
        attempt += 1


@numba.njit(cache=True, error_model="numpy")
def _block_of_elements(loc, scale, low, high, first, count, key, out, block):
    """One draw each of elements ``first`` to ``first + count`` (draws ``first`` to ``first + count``)."""
    columns, draws, values, accepted, pending = block
    _states(loc, scale, low, high, first, count, columns)
    for k in range(count):
        draws[k] = first + k
    _finish_block(columns, draws, count, key, out, values, accepted, pending)


@numba.njit(cache=True, error_model="numpy")
def _block_of_draws(table, first, count, key, out, block):
    """Draws ``first`` to ``first + count`` of an output ordered draw-major (draw j n + i is element i's j-th), their
    elements' states copied from ``table`` (the states of all n elements)."""
    columns, draws, values, accepted, elements = block
    n = table.shape[1]
    i = first % n
    for k in range(count):
        elements[k] = i
        draws[k] = first + k
        i = i + 1 if i + 1 < n else 0
    for row in range(_COLUMNS):
        source, column = table[row], columns[row]
        for k in range(count):
            column[k] = source[elements[k]]
    _finish_block(columns, draws, count, key, out, values, accepted, elements)


@numba.njit(cache=True, error_model="numpy")
def _new_block(size):
    """A block's scratch: its columns, the pending draws' indices, the candidates, whether accepted, the gather's
    indices."""
    return (np.empty((_COLUMNS, size)), np.empty(size, dtype=np.int64), np.empty(size),
            np.empty(size, dtype=np.bool_), np.empty(size, dtype=np.int64))


@numba.njit(cache=True, error_model="numpy")
def _draws_serial(loc, scale, low, high, count, key, out, block_size):
    """``count`` draws of each element into ``out`` (ordered draw-major), block after block of ``block_size``."""
    n = loc.shape[0]
    block = _new_block(block_size)
    if count == 1:
        for first in range(0, n, block_size):
            _block_of_elements(loc, scale, low, high, first, min(block_size, n - first), key, out, block)
        return
    table = np.empty((_COLUMNS, n))
    _states(loc, scale, low, high, 0, n, table)
    total = n * count
    for first in range(0, total, block_size):
        _block_of_draws(table, first, min(block_size, total - first), key, out, block)


@numba.njit(cache=True, parallel=True, error_model="numpy")
def _draws_parallel(loc, scale, low, high, count, key, out, block_size):
    """:func:`_draws_serial`'s draws, the threads splitting the blocks."""
    n = loc.shape[0]
    if count == 1:
        for b in numba.prange((n + block_size - 1) // block_size):
            first = b * block_size
            _block_of_elements(loc, scale, low, high, first, min(block_size, n - first), key, out,
                               _new_block(block_size))
        return
    table = np.empty((_COLUMNS, n))
    _states(loc, scale, low, high, 0, n, table)
    total = n * count
    for b in numba.prange((total + block_size - 1) // block_size):
        first = b * block_size
        _block_of_draws(table, first, min(block_size, total - first), key, out, _new_block(block_size))


def sample_with_key(loc: torch.Tensor, scale: torch.Tensor, low: torch.Tensor, high: torch.Tensor, shape: torch.Size,
                    key: int, parallel: bool | None = None, block_size: int = _BLOCK) -> torch.Tensor:
    """Draws of shape ``shape`` (a sample shape before the parameters' shape) of TN(loc, scale, low, high), all four
    CPU tensors of one shape and dtype, from the stream ``key`` (0 <= key < 2^64); ``parallel``: whether threads
    split the draws (None: from ``_PARALLEL_FROM`` draws where torch uses more than one thread: a parallel region
    of one thread costs its start, which on a loaded machine is a wait of milliseconds for the worker's turn);
    ``block_size``: the draws a block holds (the values do not depend on it)."""
    arrays = [_flat(t) for t in (loc, scale, low, high)]
    out = np.empty(tuple(shape), dtype=arrays[0].dtype)
    flat = out.reshape(-1)
    if parallel is None:
        parallel = flat.shape[0] >= _PARALLEL_FROM and torch.get_num_threads() > 1
    count = flat.shape[0] // max(arrays[0].shape[0], 1)
    if parallel:
        _threads()
        _draws_parallel(*arrays, count, np.uint64(key), flat, block_size)
    elif flat.shape[0]:
        _draws_serial(*arrays, count, np.uint64(key), flat, block_size)
    return torch.from_numpy(out)


def sample(loc: torch.Tensor, scale: torch.Tensor, low: torch.Tensor, high: torch.Tensor,
           shape: torch.Size) -> torch.Tensor:
    """:func:`sample_with_key` with a key drawn from torch's default generator (one draw a call)."""
    key = int(torch.randint(0, 2**63 - 1, (), dtype=torch.int64))
    return sample_with_key(loc, scale, low, high, shape, key)
