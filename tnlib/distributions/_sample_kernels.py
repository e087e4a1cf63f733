"""Compiled kernels (numba) for ``TruncatedNormal.sample`` on the CPU: exact draws by rejection, in vectorized passes.

Each element's proposal, the uniforms of its attempts, its candidates and their tests are
tnlib.distributions._sample_proposals'; these kernels run them over blocks of draws. A block of _STRADDLING elements
alone skips the codes and forms its first attempts in two loops (:func:`_straddling_in_order`): every draw's pair,
then the uniform of the draws whose pair missed (9.5% of the moderate batch's), listed. The draws go in blocks of
``_BLOCK``. One loop codes each element of a block (:func:`_classify`: its proposal, and whether that proposal's test
needs its exp), one byte an element; then the block's first candidates are formed in one loop over its elements in
order, each candidate from its element's four parameters (no state columns between the loops): with one proposal's
formulas alone where the block holds one code (a far, a narrow or a moderate batch), with the Normal's, the
uniform's and _STRADDLING's, one kept by selects, where it holds those alone; any other block runs a loop for each
code over a list of its draws. The rejected draws are listed by code and wait, across a thread's blocks, until
``_PENDING`` of a code are, then its loop runs again over them (their parameters gathered first), from their next
uniforms, until none is left: the later attempts' loops run over full vectors rather than a block's few draws. A
draw's value depends only on the key, its index in the output and its element (_sample_proposals' random numbers),
not on the blocks or on how the threads split them.
"""
from __future__ import annotations

import math

import numba
import numpy as np
import torch

from tnlib.distributions._kernels import _flat, _threads
from tnlib.distributions._moment_kernels import _PARALLEL_FROM
from tnlib.distributions._sample_proposals import (_ACCEPTED, _CHOICE_READS_EXPS, _CODES, _EXACT_TEST, _LAWLESS,
                                                   _POINT, _REJECTED, _STRADDLING, _UNBOUNDED, _UNDECIDED,
                                                   _UNIFORMS_PER_DRAW_BITS, _candidate, _code, _normal_or_uniform,
                                                   _straddles, _straddling_candidate, _straddling_pair,
                                                   _straddling_uniform, _uniform)
from tnlib.distributions._sampling import _EXPONENTIAL, _NORMAL, _UNIFORM
from tnlib.kernel_cache import cache_by_folder_sources

cache_by_folder_sources(__file__)  # before the first njit(cache=True): tnlib.kernel_cache says why

# a block's first candidates' flags share the codes' bytes, above the code (a loop that writes one array fewer
# keeps under the compiler's limit on the overlaps it checks before it vectorizes)
_CODE_BITS, _FLAG_SHIFT = _CODES - 1, 5
# draws a block holds
_BLOCK = 1024
# the rejected draws of each code wait, across a thread's blocks, until this many are pending, then are drawn again
# together, so that the loops of the later attempts run over full vectors rather than a block's few
_PENDING = 4096


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _classify(loc, scale, low, high, first, count, codes):
    """The codes of elements ``first`` to ``first + count`` into the first ``count`` places of ``codes`` (uint8), in
    one loop without exps, then :func:`_settle_choices`; returns the codes found, as bits (1 << code)."""
    # views from ``first``: an index first + k, which the compiler cannot prove non-negative, would take numpy's
    # wraparound in the loop
    loc, scale, low, high = loc[first:], scale[first:], low[first:], high[first:]
    held = np.int64(0)
    for k in range(count):
        code = _code(np.float64(loc[k]), np.float64(scale[k]), np.float64(low[k]), np.float64(high[k]), False)
        codes[k] = code
        held |= np.int64(1) << np.int64(code)
    return _settle_choices(loc, scale, low, high, count, codes, held)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _settle_choices(loc, scale, low, high, count, codes, held):
    """Where some of the first ``count`` codes (``held``: those found, as bits) is _CHOICE_READS_EXPS, a loop that
    forms the rates' exps and replaces it; returns the codes found then."""
    if held & (np.int64(1) << _CHOICE_READS_EXPS) == 0:
        return held
    held = np.int64(0)
    for k in range(count):
        code = codes[k] & _CODE_BITS
        exact = _code(np.float64(loc[k]), np.float64(scale[k]), np.float64(low[k]), np.float64(high[k]), True)
        code = exact if code == _CHOICE_READS_EXPS else code
        codes[k] = code
        held |= np.int64(1) << np.int64(code)
    return held


# the elements a block's first test reads: where all are _STRADDLING's (a moderate batch's blocks), the block's pairs
# are formed, and its codes only where another element is found among them (a mixed block rarely starts with this
# many, so rarely forms pairs in vain)
_STRADDLING_PROBE = 16


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _all_straddle(loc, scale, low, high, first, count):
    """Whether elements ``first`` to ``first + count`` are all _STRADDLING's (:func:`_straddles`): a block whose
    first ``_STRADDLING_PROBE`` are tries :func:`_straddling_in_order`, which tests the others as it draws them."""
    loc, scale, low, high = loc[first:], scale[first:], low[first:], high[first:]  # (see _classify)
    if not _straddles(np.float64(loc[0]), np.float64(scale[0]), np.float64(low[0]), np.float64(high[0])):
        return False  # (most blocks that are not, at the cost of one element)
    straddling = 0
    for k in range(count):
        straddling += 1 if _straddles(np.float64(loc[k]), np.float64(scale[k]), np.float64(low[k]),
                                      np.float64(high[k])) else 0
    return straddling == count
# a block whose draws are the Normal's and the uniform's alone, one an element, runs one loop of both
_NORMAL_OR_UNIFORM = -1
_NORMAL_OR_UNIFORM_CODES = ((1 << _NORMAL) | (1 << _UNIFORM) | (1 << (_UNIFORM + _EXACT_TEST)) | (1 << _STRADDLING))
# a block's listed draws: the rows of their elements' parameters (float64) in a (_PARAMETERS, size) array
_LOC, _SCALE, _LOW, _HIGH = range(4)
_PARAMETERS = 4


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _in_order_loop(code, loc, scale, low, high, codes, first, at, count, key, out):
    """The first candidates of draws ``first`` to ``first + count``, one an element (draw first + j is element
    at + j's), into ``out``, and their flags into ``codes`` (the block's: its first ``count`` places), above each
    code; ``code``: a constant the compiler folds into :func:`_candidate` (the block's codes need not be formed), or
    _NORMAL_OR_UNIFORM (each element's own code, read from ``codes``)."""
    # views from ``at`` and ``first`` (see _classify)
    loc, scale, low, high, out = loc[at:], scale[at:], low[at:], high[at:], out[first:]
    for j in range(count):
        counter = np.uint64(first + j) << _UNIFORMS_PER_DRAW_BITS
        x_loc, s, x_low, x_high = np.float64(loc[j]), np.float64(scale[j]), np.float64(low[j]), np.float64(high[j])
        own = np.int64(codes[j]) if code == _NORMAL_OR_UNIFORM else np.int64(code)
        if code == _NORMAL_OR_UNIFORM:
            x, flag = _normal_or_uniform(own, x_loc, s, x_low, x_high, key, counter)
        else:
            x, flag = _candidate(code, x_loc, s, x_low, x_high, key, counter)
        out[j] = x
        codes[j] = own | (flag << _FLAG_SHIFT)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _listed_loop(code, draws, params, count, attempt, key, values, flags):
    """The ``attempt``-th candidates of the listed ``draws``, their elements' parameters in ``params``' rows, into
    ``values`` and ``flags``; ``code``: a constant the compiler folds into :func:`_candidate`."""
    offset = np.uint64((4 if code == _STRADDLING else 2) * attempt)  # (an attempt's uniforms: see _candidate)
    locs, scales, lows, highs = params[_LOC], params[_SCALE], params[_LOW], params[_HIGH]
    for j in range(count):
        counter = (np.uint64(draws[j]) << _UNIFORMS_PER_DRAW_BITS) + offset
        values[j], flags[j] = _candidate(code, locs[j], scales[j], lows[j], highs[j], key, counter)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _straddling_in_order(loc, scale, low, high, codes, first, at, count, key, out, pending, scratch):
    """The first attempts of a block of _STRADDLING elements alone (draw first + j is element at + j's), their
    rejected draws added to ``pending``, in two loops: the pair of every draw, then the uniform of the draws whose
    pair missed, listed and their parameters gathered into ``scratch`` (a tenth of the moderate batch's draws: one
    loop of both proposals would form the uniform's for every draw); then the list's undecided candidates decided by
    the exp. The candidates and flags (above the codes in the block's ``codes``) are :func:`_candidate`'s. Returns
    whether every element was _STRADDLING's (:func:`_straddles`, tested in the first loop, which spares a block a
    pass to test them first); where one was not, the block's candidates and codes are left to be formed again, and
    nothing is listed."""
    loc, scale, low, high, out = loc[at:], scale[at:], low[at:], high[at:], out[first:]  # (see _classify)
    outside = 0
    for j in range(count):
        counter = np.uint64(first + j) << _UNIFORMS_PER_DRAW_BITS
        x_loc, s, x_low, x_high = np.float64(loc[j]), np.float64(scale[j]), np.float64(low[j]), np.float64(high[j])
        x, inside = _straddling_pair(x_loc, s, x_low, x_high, _uniform(key, counter),
                                     _uniform(key, counter + np.uint64(1)))
        out[j] = x
        codes[j] = _STRADDLING | ((_ACCEPTED if inside else _REJECTED) << _FLAG_SHIFT)
        outside += 0 if _straddles(x_loc, s, x_low, x_high) else 1
    if outside:
        return False
    listed = pending[2][0]
    missed = 0
    for j in range(count):  # (without branches, as in _settle_in_order)
        listed[missed] = j
        missed += 1 if codes[j] == _STRADDLING | (_REJECTED << _FLAG_SHIFT) else 0
    params, values, flags = scratch
    locs, scales, lows, highs = params[_LOC], params[_SCALE], params[_LOW], params[_HIGH]
    for k in range(missed):
        j = listed[k]
        locs[k], scales[k], lows[k], highs[k] = loc[j], scale[j], low[j], high[j]
    for k in range(missed):
        counter = (np.uint64(first + listed[k]) << _UNIFORMS_PER_DRAW_BITS) + np.uint64(2)
        values[k], flags[k] = _straddling_uniform(locs[k], scales[k], lows[k], highs[k], _uniform(key, counter),
                                                  _uniform(key, counter + np.uint64(1)), False)
    draws, elements, counts = pending[0][_STRADDLING], pending[1][_STRADDLING], pending[3]
    for k in range(missed):
        j = listed[k]
        out[j] = values[k]
        flag = np.int64(flags[k])
        if flag == _UNDECIDED:
            flag = _decide(_STRADDLING, locs[k], scales[k], lows[k], highs[k], key, first + j, 0)
        codes[j] = _STRADDLING | (flag << _FLAG_SHIFT)
        if flag == _REJECTED:
            draws[counts[_STRADDLING]] = first + j
            elements[counts[_STRADDLING]] = at + j
            counts[_STRADDLING] += 1
    return True


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _first_attempts(code, loc, scale, low, high, codes, first, at, count, key, out):
    """:func:`_in_order_loop` with ``code`` made a constant of the loop."""
    arguments = (loc, scale, low, high, codes, first, at, count, key, out)
    if code == _NORMAL_OR_UNIFORM:
        _in_order_loop(_NORMAL_OR_UNIFORM, *arguments)
    elif code == _STRADDLING:  # (a block :func:`_straddling_in_order` did not draw)
        _in_order_loop(_STRADDLING, *arguments)
    elif code == _NORMAL:
        _in_order_loop(_NORMAL, *arguments)
    elif code == _EXPONENTIAL:
        _in_order_loop(_EXPONENTIAL, *arguments)
    elif code == _EXPONENTIAL + _EXACT_TEST:
        _in_order_loop(_EXPONENTIAL + _EXACT_TEST, *arguments)
    elif code == _EXPONENTIAL + _UNBOUNDED:
        _in_order_loop(_EXPONENTIAL + _UNBOUNDED, *arguments)
    elif code == _EXPONENTIAL + _EXACT_TEST + _UNBOUNDED:
        _in_order_loop(_EXPONENTIAL + _EXACT_TEST + _UNBOUNDED, *arguments)
    elif code == _UNIFORM:
        _in_order_loop(_UNIFORM, *arguments)
    else:
        _in_order_loop(_UNIFORM + _EXACT_TEST, *arguments)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _listed_attempts(code, draws, params, count, attempt, key, values, flags):
    """:func:`_listed_loop` with ``code`` made a constant of the loop."""
    arguments = (draws, params, count, attempt, key, values, flags)
    if code == _STRADDLING:
        _listed_loop(_STRADDLING, *arguments)
    elif code == _NORMAL:
        _listed_loop(_NORMAL, *arguments)
    elif code == _EXPONENTIAL:
        _listed_loop(_EXPONENTIAL, *arguments)
    elif code == _EXPONENTIAL + _EXACT_TEST:
        _listed_loop(_EXPONENTIAL + _EXACT_TEST, *arguments)
    elif code == _EXPONENTIAL + _UNBOUNDED:
        _listed_loop(_EXPONENTIAL + _UNBOUNDED, *arguments)
    elif code == _EXPONENTIAL + _EXACT_TEST + _UNBOUNDED:
        _listed_loop(_EXPONENTIAL + _EXACT_TEST + _UNBOUNDED, *arguments)
    elif code == _UNIFORM:
        _listed_loop(_UNIFORM, *arguments)
    else:
        _listed_loop(_UNIFORM + _EXACT_TEST, *arguments)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _decide(code, loc, scale, low, high, key, draw, attempt):
    """Whether the ``attempt``-th candidate of ``draw`` is kept, by the exp of the test (a candidate its bounds left
    undecided)."""
    if code == _STRADDLING:
        counter = (np.uint64(draw) << _UNIFORMS_PER_DRAW_BITS) + np.uint64(4 * attempt)
        _, flag = _straddling_candidate(loc, scale, low, high, _uniform(key, counter),
                                        _uniform(key, counter + np.uint64(1)), _uniform(key, counter + np.uint64(2)),
                                        _uniform(key, counter + np.uint64(3)), True)
        return flag
    counter = (np.uint64(draw) << _UNIFORMS_PER_DRAW_BITS) + np.uint64(2 * attempt)
    exact = code | _EXACT_TEST
    if exact == _EXPONENTIAL + _EXACT_TEST:
        _, flag = _candidate(_EXPONENTIAL + _EXACT_TEST, loc, scale, low, high, key, counter)
    elif exact == _EXPONENTIAL + _EXACT_TEST + _UNBOUNDED:
        _, flag = _candidate(_EXPONENTIAL + _EXACT_TEST + _UNBOUNDED, loc, scale, low, high, key, counter)
    else:
        _, flag = _candidate(_UNIFORM + _EXACT_TEST, loc, scale, low, high, key, counter)
    return flag


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _settle_in_order(loc, scale, low, high, codes, first, at, count, key, pending):
    """Lists the rejected first candidates of draws ``first`` to ``first + count`` (of elements ``at`` to ``at +
    count``; their flags
    above their codes in the block's ``codes``) with their code's pending draws, an undecided one decided by its exp
    first."""
    listed = pending[2][0]
    m = 0
    accepted = _ACCEPTED << _FLAG_SHIFT
    for j in range(count):  # (without branches: a tenth of a moderate batch's candidates are rejected at random)
        listed[m] = j
        m += 0 if codes[j] & ~_CODE_BITS == accepted else 1
    draws, elements, counts = pending[0], pending[1], pending[3]
    for k in range(m):
        j = listed[k]
        i = at + j
        code = np.int64(codes[j] & _CODE_BITS)
        flag = np.int64(codes[j] >> _FLAG_SHIFT)
        if flag == _UNDECIDED:
            flag = _decide(code, np.float64(loc[i]), np.float64(scale[i]), np.float64(low[i]), np.float64(high[i]),
                           key, first + j, 0)
        if flag == _REJECTED:
            draws[code, counts[code]] = first + j
            elements[code, counts[code]] = i
            counts[code] += 1


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _gather(loc, scale, low, high, elements, count, params):
    """The parameters of the listed ``elements`` into ``params``' rows, as float64."""
    locs, scales, lows, highs = params[_LOC], params[_SCALE], params[_LOW], params[_HIGH]
    for j in range(count):
        i = elements[j]
        locs[j], scales[j], lows[j], highs[j] = loc[i], scale[i], low[i], high[i]


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _settle_listed(code, draws, elements, params, count, attempt, key, values, flags, out):
    """Writes the listed draws' candidates into ``out`` (a rejected one is written over when its draw is accepted) and
    keeps the rejected ones listed, in order, at the front of ``draws`` and ``elements``, an undecided one decided
    by its exp first; returns their number."""
    m = 0
    for j in range(count):
        d = draws[j]
        out[d] = values[j]
        flag = flags[j]
        if flag == _UNDECIDED:
            flag = _decide(code, params[_LOC, j], params[_SCALE, j], params[_LOW, j], params[_HIGH, j], key, d,
                           attempt)
        draws[m] = d  # (m <= j: each place is read before it is written)
        elements[m] = elements[j]
        m += 1 if flag == _REJECTED else 0
    return m


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _draw_listed(code, loc, scale, low, high, draws, elements, count, attempt, key, out, scratch):
    """The listed draws of one code from their ``attempt``-th candidates on, attempt after attempt, until every
    one is accepted."""
    params, values, flags = scratch
    while count:
        _gather(loc, scale, low, high, elements, count, params)
        _listed_attempts(code, draws, params, count, attempt, key, values, flags)
        count = _settle_listed(code, draws, elements, params, count, attempt, key, values, flags, out)
        attempt += 1


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _draw_pending(loc, scale, low, high, key, out, pending, scratch, more_than):
    """Draws again (from their second candidates) the pending draws of each code of which more than ``more_than``
    are pending."""
    draws, elements, counts = pending[0], pending[1], pending[3]
    for code in range(_CODES):
        if counts[code] > more_than:
            _draw_listed(code, loc, scale, low, high, draws[code], elements[code], counts[code], 1, key, out,
                         scratch)
            counts[code] = 0


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _one_loop_code(held):
    """The code of the one loop that draws a block holding the codes ``held`` (bits), one draw an element: its one
    code, _NORMAL_OR_UNIFORM for the Normal's, the uniform's and _STRADDLING's, or -2 where it takes a loop for each
    code (a point, an element that defines no distribution, an exponential beside other codes)."""
    special = (np.int64(1) << _POINT) | (np.int64(1) << _LAWLESS) | (np.int64(1) << _CHOICE_READS_EXPS)
    if held == 0 or held & special:
        return -2
    for code in range(_CODES):
        if held == np.int64(1) << code:
            return code
    return _NORMAL_OR_UNIFORM if held & ~np.int64(_NORMAL_OR_UNIFORM_CODES) == 0 else -2


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _draw_block(loc, scale, low, high, codes, first, count, one_each, key, out, pending, scratch):
    """Draws ``first`` to ``first + count`` of an output ordered draw-major, their rejected first candidates added to
    ``pending``. ``one_each``: one draw an element (draw first + j is element first % n + j's, n the elements: one
    draw of each, or a block's worth of copies of one distribution), the block's codes formed into ``codes``
    (its first ``count`` places); else ``codes`` holds every element's. A block of one code, or of the Normal's and
    the uniform's, drawn once each runs one loop over its elements in order; any other, a loop for each code over a
    list of its draws."""
    n = loc.shape[0]
    at = first % n  # (the block's first element)
    if one_each:
        if _all_straddle(loc, scale, low, high, at, min(count, _STRADDLING_PROBE)) and _straddling_in_order(
                loc, scale, low, high, codes, first, at, count, key, out, pending, scratch):
            return
        held = _classify(loc, scale, low, high, at, count, codes)
        one = _one_loop_code(held)
        if one != -2:
            _first_attempts(one, loc, scale, low, high, codes, first, at, count, key, out)
            _settle_in_order(loc, scale, low, high, codes, first, at, count, key, pending)
            return
    else:
        held = np.int64(0)
        i = first % n
        for k in range(count):
            held |= np.int64(1) << np.int64(codes[i])
            i = i + 1 if i + 1 < n else 0
    draws, elements = pending[2][0], pending[2][1]
    for code in range(_CODES):
        if held & (np.int64(1) << code) == 0:
            continue
        m = 0
        i = first % n
        for k in range(count):
            draws[m] = first + k
            elements[m] = i
            m += 1 if codes[k if one_each else i] == code else 0
            i = i + 1 if i + 1 < n else 0
        if code == _POINT or code == _LAWLESS:
            for j in range(m):
                out[draws[j]] = low[elements[j]] if code == _POINT else math.nan
        else:
            _draw_listed(code, loc, scale, low, high, draws, elements, m, 0, key, out, scratch)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _new_scratch(block_size):
    """A thread's scratch: its pending draws (their indices and elements, a row for each code; a block's listed
    draws and elements; the count of each code's) and the lists' parameters, candidates and flags."""
    size = max(_PENDING, block_size) + block_size
    # (one allocation for both tables: glibc maps a second one of their size afresh at each call, 13 us)
    tables = np.empty((2, _CODES, size), dtype=np.int64)
    pending = (tables[0], tables[1], np.empty((2, block_size), dtype=np.int64), np.zeros(_CODES, dtype=np.int64))
    return pending, (np.empty((_PARAMETERS, size)), np.empty(size), np.empty(size, dtype=np.uint8))


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _draw_blocks(loc, scale, low, high, codes, count, key, out, block_size, blocks):
    """Draws of the blocks ``blocks`` (a range) of ``block_size`` draws, one thread's: each block's first
    candidates, then the rejected ones drawn again together whenever more than ``_PENDING`` of a code are
    pending, and at the end."""
    total = loc.shape[0] * count
    one_each = count == 1 or loc.shape[0] == 1
    if loc.shape[0] == 1 and count != 1:
        # one distribution drawn many times: a block's worth of copies of it, whose element j draw first + j is
        loc, scale = np.full(block_size, loc[0]), np.full(block_size, scale[0])
        low, high = np.full(block_size, low[0]), np.full(block_size, high[0])
    pending, scratch = _new_scratch(block_size)
    block_codes = np.empty(block_size, dtype=np.uint8)
    for b in blocks:
        first = b * block_size
        _draw_block(loc, scale, low, high, block_codes if one_each else codes, first, min(block_size, total - first),
                    one_each, key, out, pending, scratch)
        _draw_pending(loc, scale, low, high, key, out, pending, scratch, max(_PENDING, block_size))
    _draw_pending(loc, scale, low, high, key, out, pending, scratch, 0)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _draws_serial(loc, scale, low, high, count, key, out, block_size):
    """``count`` draws of each element into ``out`` (ordered draw-major), block after block of ``block_size``."""
    n = loc.shape[0]
    codes = np.empty(n if count != 1 else 0, dtype=np.uint8)  # (one draw an element: each block forms its own)
    if count != 1:
        _classify(loc, scale, low, high, 0, n, codes)
    _draw_blocks(loc, scale, low, high, codes, count, key, out, block_size,
                 range((n * count + block_size - 1) // block_size))


# blocks a thread takes at a time: its rejected draws are drawn again together within them
_BLOCKS_A_TASK = 16


@numba.njit(cache=True, parallel=True, error_model="numpy", fastmath=False, forceinline=False)
def _draws_parallel(loc, scale, low, high, count, key, out, block_size):
    """:func:`_draws_serial`'s draws, the threads splitting the blocks, ``_BLOCKS_A_TASK`` at a time."""
    n = loc.shape[0]
    codes = np.empty(n if count != 1 else 0, dtype=np.uint8)
    if count != 1:
        for b in numba.prange((n + block_size - 1) // block_size):
            first = b * block_size
            _classify(loc, scale, low, high, first, min(block_size, n - first), codes[first:])
    blocks = (n * count + block_size - 1) // block_size
    for task in numba.prange((blocks + _BLOCKS_A_TASK - 1) // _BLOCKS_A_TASK):
        _draw_blocks(loc, scale, low, high, codes, count, key, out, block_size,
                     range(task * _BLOCKS_A_TASK, min((task + 1) * _BLOCKS_A_TASK, blocks)))


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
