"""The vectorized passes (numba) of the CDF and the inverse CDF of the Truncated Normal on the CPU and of their
gradients: a batch chunk by chunk, each chunk's elements gathered by kind into float64 columns and each kind taken by
a straight-line loop the compiler vectorizes (tnlib.distributions._cdf_vector's and _icdf_vector's formulas), the
elements those loops do not hold marked by a NaN and taken after by the per-element kernel
(tnlib.distributions._cdf_elements); with their serial and parallel loops over blocks of a batch.

Kept apart from the per-element kernel because they are another way of running the same formulas, compiled apart:
a batch below tnlib.distributions._cdf_dispatch' thresholds never compiles them. The float32 passes are here too: the
cdf's, whose chunks of straddling elements alone or of narrow intervals alone take the loops of
tnlib.distributions._cdf_float32 (_cdf_float32_block), and the icdf's, whose chunks mostly of one kind take the
float32 loops of _icdf_float32 over their elements in place (_icdf_single_block)."""
from __future__ import annotations

import math

import numba
import numpy as np
from numba.core import types
from numba.extending import overload

from tnlib.distributions._cdf_elements import _cdf_gradient_element, _cdf_or_icdf, _icdf_gradient_element
from tnlib.distributions._cdf_float32 import (
    MIXED_CHUNK,
    NARROW_CHUNK,
    NEAR_STRADDLING_CHUNK,
    SHORT_NARROW_CHUNK,
    STRADDLING_CHUNK,
    coarse_chunk_kind,
    narrow_cdf_coarse,
    narrow_chunk_coarse,
    near_straddling_chunk,
    short_narrow_chunk,
    straddling_cdf_rational,
    straddling_chunk_coarse,
)
from tnlib.distributions._cdf_vector import (
    CDF_KINDS,
    MIRRORED_NARROW_INTERVAL,
    MIRRORED_NARROW_SIDE,
    MIRRORED_WIDE_SIDE,
    NARROW_HEAD,
    NARROW_INTERVAL,
    NARROW_SIDE,
    PAST_LOC,
    WIDE_HEAD,
    WIDE_SIDE,
    WIDTH_NARROW,
    WIDTH_WIDE,
    _copy_by_order,
    canonical_frame,
    cdf_element,
    classify_cdf,
    frame_cdf,
    gather_by_kind,
    straddling_cdf,
)
from tnlib.distributions._icdf_float32 import (
    narrow_icdf_single,
    straddling_icdf_rational,
    straddling_icdf_single,
)
from tnlib.distributions._icdf_vector import (
    CLOSED,
    FAR_ITERATED,
    ICDF_KINDS,
    NARROW_ITERATED,
    STRADDLING,
    classify_icdf,
    icdf_by_halley,
    icdf_element,
    icdf_kind,
)
from tnlib.distributions._kernels import _BLOCK, _CHUNK
from tnlib.kernel_cache import cache_by_folder_sources

cache_by_folder_sources(__file__)  # before the first njit(cache=True): tnlib.kernel_cache says why


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _partition_past_median(start, stop, columns):
    """Moves the elements of columns [start, stop) (probability, loc, scale, low, high, index) whose canonical
    probability is above 1/2 after the others, whose end it returns; each end moves past what is in place, so a
    chunk of one side swaps nothing."""
    first, end = start, stop
    while True:
        while first < end and not _past_median(first, columns):
            first += 1
        while first < end and _past_median(end - 1, columns):
            end -= 1
        if first >= end:
            return first
        end -= 1
        for row in range(6):
            columns[row, first], columns[row, end] = columns[row, end], columns[row, first]
        first += 1


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _past_median(j, columns):
    prob = columns[0, j]
    return (1.0 - prob if columns[4, j] <= columns[1, j] else prob) > 0.5  # (mirrored where high <= loc)


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _kind_views(kind, starts, columns, out):
    """The rows of ``columns`` (value, loc, scale, low, high) and ``out`` over one kind's elements, as views from its
    first (gather_by_kind's ``starts``): a loop indexing them from a count the compiler cannot prove non-negative
    takes numpy's wraparound there, and reads through gathers."""
    first, last = starts[kind], starts[kind + 1]
    return (columns[0][first:last], columns[1][first:last], columns[2][first:last], columns[3][first:last],
            columns[4][first:last], out[first:last])


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _cdf_chunk(starts, columns, out, short):
    """The cdf of a chunk's elements gathered by kind (gather_by_kind, cdf_kind's kinds from the rows ``starts``
    says, the straddling ones first), NaN where not held: for each kind a loop the compiler vectorizes forms the
    value alone by that kind's formula (straddling_cdf, frame_cdf; with ``short``, every narrow interval's stretches
    by their short series); the few elements they leave (a value within a short stretch of a bound) take
    cdf_element's formulas, one at a time."""
    value, loc, scale, low, high, o = _kind_views(PAST_LOC, starts, columns, out)
    for j in range(o.shape[0]):
        x, held = straddling_cdf(value[j], loc[j], scale[j], low[j], high[j], PAST_LOC)
        o[j] = x if held else np.nan
    value, loc, scale, low, high, o = _kind_views(NARROW_HEAD, starts, columns, out)
    for j in range(o.shape[0]):
        x, held = straddling_cdf(value[j], loc[j], scale[j], low[j], high[j], NARROW_HEAD)
        o[j] = x if held else np.nan
    value, loc, scale, low, high, o = _kind_views(WIDE_HEAD, starts, columns, out)
    for j in range(o.shape[0]):
        x, held = straddling_cdf(value[j], loc[j], scale[j], low[j], high[j], WIDE_HEAD)
        o[j] = x if held else np.nan
    value, loc, scale, low, high, o = _kind_views(NARROW_SIDE, starts, columns, out)
    for j in range(o.shape[0]):
        x, held = frame_cdf(value[j], loc[j], scale[j], low[j], high[j], NARROW_SIDE, False)
        o[j] = x if held else np.nan
    value, loc, scale, low, high, o = _kind_views(WIDE_SIDE, starts, columns, out)
    for j in range(o.shape[0]):
        x, held = frame_cdf(value[j], loc[j], scale[j], low[j], high[j], WIDE_SIDE, False)
        o[j] = x if held else np.nan
    value, loc, scale, low, high, o = _kind_views(MIRRORED_NARROW_SIDE, starts, columns, out)
    for j in range(o.shape[0]):
        x, held = frame_cdf(value[j], loc[j], scale[j], low[j], high[j], MIRRORED_NARROW_SIDE, False)
        o[j] = x if held else np.nan
    value, loc, scale, low, high, o = _kind_views(MIRRORED_WIDE_SIDE, starts, columns, out)
    for j in range(o.shape[0]):
        x, held = frame_cdf(value[j], loc[j], scale[j], low[j], high[j], MIRRORED_WIDE_SIDE, False)
        o[j] = x if held else np.nan
    # (each loop twice: a constant ``short`` keeps the other series out of the loop)
    value, loc, scale, low, high, o = _kind_views(NARROW_INTERVAL, starts, columns, out)
    if short:
        for j in range(o.shape[0]):
            x, held = frame_cdf(value[j], loc[j], scale[j], low[j], high[j], NARROW_INTERVAL, True)
            o[j] = x if held else np.nan
    else:
        for j in range(o.shape[0]):
            x, held = frame_cdf(value[j], loc[j], scale[j], low[j], high[j], NARROW_INTERVAL, False)
            o[j] = x if held else np.nan
    value, loc, scale, low, high, o = _kind_views(MIRRORED_NARROW_INTERVAL, starts, columns, out)
    if short:
        for j in range(o.shape[0]):
            x, held = frame_cdf(value[j], loc[j], scale[j], low[j], high[j], MIRRORED_NARROW_INTERVAL, True)
            o[j] = x if held else np.nan
    else:
        for j in range(o.shape[0]):
            x, held = frame_cdf(value[j], loc[j], scale[j], low[j], high[j], MIRRORED_NARROW_INTERVAL, False)
            o[j] = x if held else np.nan
    value, loc, scale, low, high = columns[0], columns[1], columns[2], columns[3], columns[4]
    straddling = starts[NARROW_SIDE]
    for j in range(starts[CDF_KINDS]):
        if math.isnan(out[j]):
            x, _, _, _, _, _, held, _ = cdf_element(value[j], loc[j], scale[j], low[j], high[j], j < straddling,
                                                    False)
            out[j] = x if held else np.nan


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _icdf_chunk(starts, columns, out, spare, solved):
    """The icdf of a chunk's elements gathered by kind (gather_by_kind, classify_icdf's kinds from the rows
    ``starts`` says), NaN where not held: icdf_element's closed forms in a loop the compiler vectorizes for the
    straddling elements (the frame's formulas not formed) and another for the frame elements they invert; then
    icdf_by_halley's steps for the elements left, those only iterations invert (on narrow intervals and in far
    tails) and those the closed forms do not hold for, gathered again into ``spare`` with the narrow intervals
    first, a vectorized loop over each kind into ``solved``."""
    value, loc, scale, low, high, o = _kind_views(STRADDLING, starts, columns, out)
    for j in range(o.shape[0]):
        x, _, _, _, _, _, held, _ = icdf_element(value[j], loc[j], scale[j], low[j], high[j], True)
        o[j] = x if held else np.nan
    value, loc, scale, low, high, o = _kind_views(CLOSED, starts, columns, out)
    for j in range(o.shape[0]):
        x, _, _, _, _, _, held, _ = icdf_element(value[j], loc[j], scale[j], low[j], high[j], False)
        o[j] = x if held else np.nan
    value, loc, scale, low, high = columns[0], columns[1], columns[2], columns[3], columns[4]
    closed, far, stop = starts[NARROW_ITERATED], starts[FAR_ITERATED], starts[ICDF_KINDS]
    out[closed:stop] = np.nan
    narrow_count = 0
    rest = stop
    for j in range(stop):
        if math.isnan(out[j]):
            # (the kind says it past the closed forms' elements)
            if canonical_frame(loc[j], scale[j], low[j], high[j])[7] if j < closed else j < far:
                row = narrow_count
                narrow_count += 1
            else:
                rest -= 1
                row = rest
            for k in range(5):
                spare[k, row] = columns[k, j]
            spare[5, row] = j
    for k in range(narrow_count):
        x, held = icdf_by_halley(spare[0, k], spare[1, k], spare[2, k], spare[3, k], spare[4, k], True, True, 0)
        solved[k] = x if held else np.nan
    # those the quick steps leave (intervals about a scale wide) moved to the front, for all four steps in a loop
    # that vectorizes too
    again = 0
    for k in range(narrow_count):
        if math.isnan(solved[k]):
            for row in range(6):
                spare[row, again] = spare[row, k]
            again += 1
        else:
            out[np.int64(spare[5, k])] = solved[k]
    for k in range(again):
        x, held = icdf_by_halley(spare[0, k], spare[1, k], spare[2, k], spare[3, k], spare[4, k], True, False, 0)
        solved[k] = x if held else np.nan
    # the far tails apart by the side of the median they invert on, so that each loop forms one side's steps
    upper = _partition_past_median(rest, stop, spare)
    for k in range(rest, upper):
        x, held = icdf_by_halley(spare[0, k], spare[1, k], spare[2, k], spare[3, k], spare[4, k], False, False, -1)
        solved[k] = x if held else np.nan
    for k in range(upper, stop):
        x, held = icdf_by_halley(spare[0, k], spare[1, k], spare[2, k], spare[3, k], spare[4, k], False, False, 1)
        solved[k] = x if held else np.nan
    for k in range(again):
        out[np.int64(spare[5, k])] = solved[k]
    for k in range(rest, stop):
        out[np.int64(spare[5, k])] = solved[k]


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _pass_block(inverse, start, stop, value, loc, scale, low, high, out, table, nodes, weights):
    """The cdf (with ``inverse``, icdf) of elements [start, stop) into ``out``: chunk by chunk, straight-line loops
    the compiler vectorizes take every element as one of the common regimes (tnlib.distributions._cdf_vector,
    _icdf_vector: _cdf_chunk, _icdf_chunk), each kind of element in a loop of its own over float64 columns they are
    gathered into (the cdf's kinds found by a vectorized loop first, classify_cdf; a chunk of one kind copied in
    order, by a loop that vectorizes, and its results likewise), and mark those they do not hold for by a NaN; a
    last loop computes those again by the per-element kernel, each in its own regime."""
    arrays = (value, loc, scale, low, high)
    columns = np.empty((6, _CHUNK))
    spare = np.empty((6, _CHUNK))
    solved = np.empty(_CHUNK)
    results = np.empty(_CHUNK)
    kinds = np.empty(_CHUNK, dtype=np.uint8)
    starts = np.empty(CDF_KINDS + 1, dtype=np.int64)
    ends = np.empty(CDF_KINDS, dtype=np.int64)
    order = np.empty(_CHUNK, dtype=np.uint16)  # (rows within a chunk: _CHUNK is below 2^16)
    for first in range(start, stop, _CHUNK):
        last = min(first + _CHUNK, stop)
        if inverse:
            classify_icdf(first, last, arrays, kinds, starts)
            in_order = gather_by_kind(first, last, arrays, kinds, starts, columns, order, ends[:ICDF_KINDS])
            _icdf_chunk(starts, columns, results, spare, solved)
        else:
            short = classify_cdf(first, last, arrays, kinds, starts) == 0
            in_order = gather_by_kind(first, last, arrays, kinds, starts, columns, order, ends)
            _cdf_chunk(starts, columns, results, short)
        if in_order:
            its_out = out[first:last]
            for j in range(last - first):
                its_out[j] = results[j]
        else:
            for j in range(last - first):
                out[np.int64(columns[5, j])] = results[j]
    for i in range(start, stop):
        if math.isnan(out[i]):
            out[i] = _cdf_or_icdf(inverse, i, value, loc, scale, low, high, table, nodes, weights)


# a chunk of the float32 pass takes its commonest kind's loop over all its elements in place (the others' results
# discarded) where that kind holds at least this share of it: a gather costs 3-4 ns an element, a straddling
# element's loop about 12
_IN_PLACE_SHARE = 0.75


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _gather_left(first, last, arrays, kinds, known, results, columns, starts, ends, order):
    """gather_by_kind of the elements of [first, last) whose ``results`` are NaN alone, ``starts`` rewritten for
    them, their kinds from ``kinds`` where ``known`` (classify_icdf's) or else found here; returns their count."""
    count = last - first
    loc, scale, low, high = arrays[1][first:last], arrays[2][first:last], arrays[3][first:last], arrays[4][first:last]
    ends[:] = 0
    for j in range(count):
        if math.isnan(results[j]):
            if not known:
                kinds[j] = icdf_kind(np.float64(loc[j]), np.float64(scale[j]), np.float64(low[j]),
                                     np.float64(high[j]))[0]
            ends[kinds[j]] += 1
    starts[0] = 0
    for kind in range(ICDF_KINDS):
        starts[kind + 1] = starts[kind] + ends[kind]
        ends[kind] = starts[kind]
    for j in range(count):
        if math.isnan(results[j]):
            kind = kinds[j]
            order[ends[kind]] = j
            ends[kind] += 1
    left = starts[ICDF_KINDS]
    for k in range(5):
        _copy_by_order(arrays[k][first:last], order, left, columns[k])
    for row in range(left):
        columns[5, row] = first + order[row]
    return left


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _single_where_held(starts, columns, out):
    """The float32 loops' values (straddling_icdf_rational, else straddling_icdf_single; narrow_icdf_single by the
    full series) in place of the float64 ones in ``out`` over the gathered straddling and narrow rows where they
    hold: so an element's value is the same whether its chunk ran a loop in place or was gathered (whatever the
    threads' blocks). A narrow interval that straddles loc is the straddling loops' (narrow_icdf_single does not
    hold it): taken by a scalar loop, as few are."""
    value, loc, scale, low, high, o = _kind_views(STRADDLING, starts, columns, out)
    for j in range(o.shape[0]):
        x, held = straddling_icdf_single(value[j], loc[j], scale[j], low[j], high[j])
        o[j] = x if held else o[j]
    for j in range(o.shape[0]):  # (the rational loop's first where it holds, as a chunk in place takes them)
        x, held = straddling_icdf_rational(value[j], loc[j], scale[j], low[j], high[j])
        o[j] = x if held else o[j]
    value, loc, scale, low, high, o = _kind_views(NARROW_ITERATED, starts, columns, out)
    for j in range(o.shape[0]):
        x, held = narrow_icdf_single(value[j], loc[j], scale[j], low[j], high[j], False)
        o[j] = x if held else o[j]
    for j in range(o.shape[0]):
        if (high[j] > loc[j]) & (low[j] < loc[j]):
            x, held = _single_either(value[j], loc[j], scale[j], low[j], high[j])
            o[j] = x if held else o[j]


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _single_either(prob, loc, scale, low, high):
    """(icdf, held) of one element by straddling_icdf_rational, else straddling_icdf_single, else
    narrow_icdf_single by the full series: for the few elements a chunk's loop in place leaves (a narrow interval
    among straddling ones, one that straddles loc among narrow ones), so that they take no float64 loop. Called,
    not inlined: the three loops compiled once more here, for all its callers."""
    x, held = straddling_icdf_rational(prob, loc, scale, low, high)
    if held:
        return x, True
    x, held = straddling_icdf_single(prob, loc, scale, low, high)
    if held:
        return x, True
    return narrow_icdf_single(prob, loc, scale, low, high, False)


# how a chunk of the float32 pass starts: every element gathered by kind (classify_icdf first), or its commonest
# kind's float32 loop over all its elements in place (straddling; narrow, by the short series or the full one)
_BY_KIND, _STRADDLING_IN_PLACE, _SHORT_NARROW_IN_PLACE, _NARROW_IN_PLACE = 0, 1, 2, 3
# the share of a straddling chunk the rational loop may leave before the erfc route's loop takes the chunk again
# (what it leaves is else taken one at a time, at several times a loop's cost an element)
_ERFC_LOOP_SHARE = 0.125


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _icdf_single_block(start, stop, prob, loc, scale, low, high, out, table, nodes, weights):
    """The icdf of float32 elements [start, stop) into ``out``, chunk by chunk. A chunk most of whose elements are
    of one kind (_IN_PLACE_SHARE; straddling or narrow) runs that kind's float32 loop (tnlib.distributions.
    _icdf_float32.straddling_icdf_rational, narrow_icdf_single; what the straddling one leaves, if many,
    straddling_icdf_single) over all its elements where they lie, no gather and,
    while the chunks before held that share, no classification either; the elements it does not hold take the
    other kind's loop one at a time (_single_either: a narrow interval among straddling elements, one straddling
    loc among narrow ones), and those it does not hold either, with every element of a chunk of mixed kinds, are
    gathered by kind and take the float64 pass's loops (_icdf_chunk), and what those leave the per-element
    kernel."""
    arrays = (prob, loc, scale, low, high)
    columns = np.empty((6, _CHUNK))
    spare = np.empty((6, _CHUNK))
    solved = np.empty(_CHUNK)
    left = np.empty(_CHUNK)
    kinds = np.empty(_CHUNK, dtype=np.uint8)
    starts = np.empty(ICDF_KINDS + 1, dtype=np.int64)
    ends = np.empty(ICDF_KINDS, dtype=np.int64)
    order = np.empty(_CHUNK, dtype=np.uint16)  # (rows within a chunk: _CHUNK is below 2^16)
    mode = _BY_KIND
    for first in range(start, stop, _CHUNK):
        last = min(first + _CHUNK, stop)
        count = last - first
        known = mode == _BY_KIND
        if known:
            short = classify_icdf(first, last, arrays, kinds, starts) == 0
            if starts[STRADDLING + 1] - starts[STRADDLING] >= _IN_PLACE_SHARE * count:
                mode = _STRADDLING_IN_PLACE
            elif starts[NARROW_ITERATED + 1] - starts[NARROW_ITERATED] >= _IN_PLACE_SHARE * count:
                mode = _SHORT_NARROW_IN_PLACE if short else _NARROW_IN_PLACE
        p, lc, sc, lo, hi = prob[first:last], loc[first:last], scale[first:last], low[first:last], high[first:last]
        # (each loop writes the float32 result where it lies, NaN where it does not hold, and a loop of its own
        # counts the NaNs: the count summed in these loops, or a float64 row written and copied, measured 3-4 ns an
        # element more)
        its_out = out[first:last]
        if mode == _STRADDLING_IN_PLACE:
            for j in range(count):
                x, held = straddling_icdf_rational(np.float64(p[j]), np.float64(lc[j]), np.float64(sc[j]),
                                                   np.float64(lo[j]), np.float64(hi[j]))
                its_out[j] = x if held else np.nan
        # (twice: a constant ``short`` keeps the other series out of the loop)
        elif mode == _SHORT_NARROW_IN_PLACE:
            for j in range(count):
                x, held = narrow_icdf_single(np.float64(p[j]), np.float64(lc[j]), np.float64(sc[j]),
                                             np.float64(lo[j]), np.float64(hi[j]), True)
                its_out[j] = x if held else np.nan
        elif mode == _NARROW_IN_PLACE:
            for j in range(count):
                x, held = narrow_icdf_single(np.float64(p[j]), np.float64(lc[j]), np.float64(sc[j]),
                                             np.float64(lo[j]), np.float64(hi[j]), False)
                its_out[j] = x if held else np.nan
        else:
            its_out[:] = np.nan
        left_out = 0
        for j in range(count):
            left_out += math.isnan(its_out[j])
        if mode == _STRADDLING_IN_PLACE and left_out > _ERFC_LOOP_SHARE * count:
            # many bounds where the rational erf does not hold (3.5 to 5.14 scales times sqrt 2 from loc): the
            # erfc route's loop over the chunk, in place, rather than each of them alone
            for j in range(count):
                x, held = straddling_icdf_single(np.float64(p[j]), np.float64(lc[j]), np.float64(sc[j]),
                                                 np.float64(lo[j]), np.float64(hi[j]))
                its_out[j] = x if held & math.isnan(its_out[j]) else its_out[j]
            left_out = 0
            for j in range(count):
                left_out += math.isnan(its_out[j])
        if mode != _BY_KIND and left_out > 0:
            for j in range(count):
                if math.isnan(its_out[j]):
                    x, held = _single_either(np.float64(p[j]), np.float64(lc[j]), np.float64(sc[j]),
                                             np.float64(lo[j]), np.float64(hi[j]))
                    its_out[j] = x if held else np.nan
        gathered = 0
        if left_out > 0:
            gathered = _gather_left(first, last, arrays, kinds, known, its_out, columns, starts, ends, order)
        if count - gathered < _IN_PLACE_SHARE * count:
            mode = _BY_KIND  # (the next chunk classified again)
        if gathered > 0:
            _icdf_chunk(starts, columns, left, spare, solved)
            _single_where_held(starts, columns, left)
            # (what the float64 loops leave, the per-element kernel's, here: a scan of the whole block for it after
            # would cost about 0.8 ns an element, as its loop, calling that kernel, does not vectorize)
            for j in range(gathered):
                i = np.int64(columns[5, j])
                its_out[i - first] = (_cdf_or_icdf(True, i, prob, loc, scale, low, high, table, nodes, weights)
                                      if math.isnan(left[j]) else left[j])


def _icdf_pass(start, stop, prob, loc, scale, low, high, out, table, nodes, weights):
    """The icdf's vectorized pass over elements [start, stop), by ``out``'s dtype: _icdf_single_block for float32,
    _pass_block's for float64 (numba's overload below picks one as it compiles; no Python body)."""
    raise NotImplementedError("_icdf_pass is called from numba kernels only")


@overload(_icdf_pass)
def _icdf_pass_by_dtype(start, stop, prob, loc, scale, low, high, out, table, nodes, weights):
    if out.dtype == types.float32:
        return lambda start, stop, prob, loc, scale, low, high, out, table, nodes, weights: _icdf_single_block(
            start, stop, prob, loc, scale, low, high, out, table, nodes, weights)
    return lambda start, stop, prob, loc, scale, low, high, out, table, nodes, weights: _pass_block(
        True, start, stop, prob, loc, scale, low, high, out, table, nodes, weights)


# the kinds the cdf's gradient pass gathers a chunk's elements by (classify_cdf_gradient), each a loop forming its
# own formulas alone (cdf_element's ``straddling``, ``frame_known`` and ``width``): a straddling element, a frame
# element on a wide interval, one on a narrow interval
GRADIENT_STRADDLING, GRADIENT_WIDE, GRADIENT_NARROW = 0, 1, 2
GRADIENT_KINDS = 3


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def classify_cdf_gradient(start, stop, arrays, kinds, starts):
    """The gradient kind (GRADIENT_STRADDLING ...) of each of the five ``arrays``' elements [start, stop) into
    ``kinds``, by canonical_frame, and into ``starts`` (GRADIENT_KINDS + 1 rows) the row each kind's elements start
    from once gathered by kind (gather_by_kind), the last the count: a loop the compiler vectorizes."""
    loc, scale, low, high = arrays[1][start:stop], arrays[2][start:stop], arrays[3][start:stop], arrays[4][start:stop]
    straddling = wide = 0
    for j in range(stop - start):
        _, _, _, _, _, _, _, narrow, frame = canonical_frame(np.float64(loc[j]), np.float64(scale[j]),
                                                             np.float64(low[j]), np.float64(high[j]))
        kind = (GRADIENT_NARROW if narrow else GRADIENT_WIDE) if frame else GRADIENT_STRADDLING
        kinds[j] = kind
        straddling += kind == GRADIENT_STRADDLING
        wide += kind == GRADIENT_WIDE
    starts[0] = 0
    starts[1] = straddling
    starts[2] = straddling + wide
    starts[3] = stop - start


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=False)
def _cdf_gradients_chunk(starts, columns, derivatives):
    """The five derivatives of the cdf of a chunk's elements gathered by gradient kind (classify_cdf_gradient) into
    the rows of ``derivatives``, the value's NaN where not held: a loop a kind over 2-D views of the columns and the
    derivatives from the kind's first row, each vectorized where inlined into the caller that allocates both arrays
    (compiled apart, the compiler cannot tell that the ten rows do not overlap, and leaves the loops scalar)."""
    kind = GRADIENT_STRADDLING
    elements, slopes = columns[:, starts[kind]:starts[kind + 1]], derivatives[:, starts[kind]:starts[kind + 1]]
    for j in range(elements.shape[1]):
        _, dx, dl, ds, da, db, _, held = cdf_element(elements[0, j], elements[1, j], elements[2, j], elements[3, j],
                                                     elements[4, j], True, False)
        slopes[0, j] = dx if held else np.nan
        slopes[1, j], slopes[2, j], slopes[3, j], slopes[4, j] = dl, ds, da, db
    kind = GRADIENT_WIDE
    elements, slopes = columns[:, starts[kind]:starts[kind + 1]], derivatives[:, starts[kind]:starts[kind + 1]]
    for j in range(elements.shape[1]):
        _, dx, dl, ds, da, db, _, held = cdf_element(elements[0, j], elements[1, j], elements[2, j], elements[3, j],
                                                     elements[4, j], False, True, WIDTH_WIDE)
        slopes[0, j] = dx if held else np.nan
        slopes[1, j], slopes[2, j], slopes[3, j], slopes[4, j] = dl, ds, da, db
    kind = GRADIENT_NARROW
    elements, slopes = columns[:, starts[kind]:starts[kind + 1]], derivatives[:, starts[kind]:starts[kind + 1]]
    for j in range(elements.shape[1]):
        _, dx, dl, ds, da, db, _, held = cdf_element(elements[0, j], elements[1, j], elements[2, j], elements[3, j],
                                                     elements[4, j], False, True, WIDTH_NARROW)
        slopes[0, j] = dx if held else np.nan
        slopes[1, j], slopes[2, j], slopes[3, j], slopes[4, j] = dl, ds, da, db


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _cdf_gradients_block(start, stop, grad, value, loc, scale, low, high, slopes, table, nodes, weights):
    """grad times each derivative of the cdf of elements [start, stop) into the five rows of ``slopes``: chunk by
    chunk, the elements gathered by kind as the forward pass gathers them (classify_cdf_gradient's kinds: straddling,
    a wide or a narrow frame interval; a chunk of one kind copied in order), each kind in a loop that vectorizes and
    forms its own formulas alone, the others (marked by a NaN) by the per-element kernel after."""
    arrays = (value, loc, scale, low, high)
    columns = np.empty((6, _CHUNK))
    derivatives = np.empty((5, _CHUNK))
    kinds = np.empty(_CHUNK, dtype=np.uint8)
    starts = np.empty(GRADIENT_KINDS + 1, dtype=np.int64)
    ends = np.empty(GRADIENT_KINDS, dtype=np.int64)
    order = np.empty(_CHUNK, dtype=np.uint16)  # (rows within a chunk: _CHUNK is below 2^16)
    for first in range(start, stop, _CHUNK):
        last = min(first + _CHUNK, stop)
        classify_cdf_gradient(first, last, arrays, kinds, starts)
        in_order = gather_by_kind(first, last, arrays, kinds, starts, columns, order, ends)
        _cdf_gradients_chunk(starts, columns, derivatives)
        if in_order:
            for k in range(5):
                row, its_slopes, its_grad = derivatives[k], slopes[k, first:last], grad[first:last]
                for j in range(last - first):
                    its_slopes[j] = np.float64(its_grad[j]) * row[j]
        else:
            for j in range(last - first):
                i = np.int64(columns[5, j])
                gr = np.float64(grad[i])
                for k in range(5):
                    slopes[k, i] = gr * derivatives[k, j]
    for i in range(start, stop):
        if not math.isnan(slopes[0, i]):
            continue
        element = _cdf_gradient_element(np.float64(value[i]), np.float64(loc[i]), np.float64(scale[i]),
                                        np.float64(low[i]), np.float64(high[i]), table, nodes, weights)
        gr = np.float64(grad[i])
        for k in range(5):
            slopes[k, i] = gr * element[k]


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _cdf_vector_serial(value, loc, scale, low, high, out, table, nodes, weights):
    _pass_block(False, 0, out.shape[0], value, loc, scale, low, high, out, table, nodes, weights)


@numba.njit(cache=True, parallel=True, error_model="numpy", fastmath=False, forceinline=False)
def _cdf_vector_parallel(value, loc, scale, low, high, out, table, nodes, weights):
    n = out.shape[0]
    for block in numba.prange((n + _BLOCK - 1) // _BLOCK):
        _pass_block(False, block * _BLOCK, min(n, (block + 1) * _BLOCK), value, loc, scale, low, high, out, table,
                    nodes, weights)


# a chunk the near straddling loop runs before any look at it is kept where it leaves at most 1/_TRIED_SHARE of it:
# the rest costs the per-element kernel's 0.6-0.7 us an element at most, 32 of them about as much as the float64 pass
# over the chunk
_TRIED_SHARE = 32

# the float32 cdf's loops leave a few elements NaN in a chunk: they are looked for a group at a time (the NaN test
# of a group vectorizes; one element at a time, the look cost 0.5 ns an element, more than the loop left)
_LEFT_GROUP = 32


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _float32_cdf_left(first, last, kind, value, loc, scale, low, high, out, table, nodes, weights):
    """The cdf of the elements of [first, last) the float32 loop of a chunk of ``kind`` left NaN in ``out``: after
    the short loops (NEAR_STRADDLING_CHUNK, SHORT_NARROW_CHUNK), their kind's wider loop's formula where it holds
    (an argument past the short fit's end, a rounding the short fit cannot make certain: a few in 10^4 of the peer
    benchmark's moderate elements, each 20-40 times the cost of the loop's), else the per-element kernel's."""
    for group in range(first, last, _LEFT_GROUP):
        end = min(group + _LEFT_GROUP, last)
        its_out = out[group:end]
        nans = 0
        for j in range(end - group):
            nans += math.isnan(its_out[j])
        for i in range(group, end if nans > 0 else group):
            if not math.isnan(out[i]):
                continue
            held = False
            if kind == NEAR_STRADDLING_CHUNK or kind == SHORT_NARROW_CHUNK:
                arguments = (np.float64(value[i]), np.float64(loc[i]), np.float64(scale[i]), np.float64(low[i]),
                             np.float64(high[i]))
                x, held = (straddling_cdf_rational(*arguments) if kind == NEAR_STRADDLING_CHUNK
                           else narrow_cdf_coarse(*arguments))
                out[i] = x
            if not held:
                out[i] = _cdf_or_icdf(False, i, value, loc, scale, low, high, table, nodes, weights)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _cdf_float32_block(start, stop, value, loc, scale, low, high, out, table, nodes, weights):
    """The cdf of float32 elements [start, stop) into ``out``: a chunk of straddling elements alone or of narrow
    intervals alone by its loop over the arguments (tnlib.distributions._cdf_float32), any other by the float64
    route's pass (_pass_block); the elements those loops leave (NaN) as _float32_cdf_left says. Straddling chunks
    whose bounds all lie near loc, and narrow ones of the narrowest intervals, take the short loops
    (near_straddling_chunk, short_narrow_chunk: fewer terms for the same results).

    After a chunk of a short loop's kind, the next is run by that loop before any look at it (coarse_chunk_kind's
    pass over it, 0.2-0.3 ns an element, more where it is the first to read the chunk from memory): the loop tests
    each element itself, so the chunk is kept where the near straddling loop leaves at most 1/_TRIED_SHARE of it
    (what it leaves taken as after any near straddling chunk: each element's value correctly rounded, whatever the
    chunk's kind) or the short narrow loop leaves none; else it is looked at and taken by its kind's loop."""
    arrays = (value, loc, scale, low, high)
    previous = MIXED_CHUNK
    for first in range(start, stop, _CHUNK):
        last = min(first + _CHUNK, stop)
        kind = MIXED_CHUNK
        left = 0
        if previous == NEAR_STRADDLING_CHUNK:
            left = near_straddling_chunk(first, last, arrays, out)
            kind = NEAR_STRADDLING_CHUNK if left * _TRIED_SHARE <= last - first else MIXED_CHUNK
        elif previous == SHORT_NARROW_CHUNK:
            left = short_narrow_chunk(first, last, arrays, out)
            kind = SHORT_NARROW_CHUNK if left == 0 else MIXED_CHUNK
        if kind == MIXED_CHUNK:
            kind = coarse_chunk_kind(first, last, arrays)
            if kind == NEAR_STRADDLING_CHUNK:
                left = near_straddling_chunk(first, last, arrays, out)
            elif kind == STRADDLING_CHUNK:
                left = straddling_chunk_coarse(first, last, arrays, out)
            elif kind == SHORT_NARROW_CHUNK:
                left = short_narrow_chunk(first, last, arrays, out)
            elif kind == NARROW_CHUNK:
                left = narrow_chunk_coarse(first, last, arrays, out)
            else:
                _pass_block(False, first, last, value, loc, scale, low, high, out, table, nodes, weights)
                left = 0
        previous = kind
        if left > 0:
            _float32_cdf_left(first, last, kind, value, loc, scale, low, high, out, table, nodes, weights)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _cdf_float32_serial(value, loc, scale, low, high, out, table, nodes, weights):
    _cdf_float32_block(0, out.shape[0], value, loc, scale, low, high, out, table, nodes, weights)


@numba.njit(cache=True, parallel=True, error_model="numpy", fastmath=False, forceinline=False)
def _cdf_float32_parallel(value, loc, scale, low, high, out, table, nodes, weights):
    n = out.shape[0]
    for block in numba.prange((n + _BLOCK - 1) // _BLOCK):
        _cdf_float32_block(block * _BLOCK, min(n, (block + 1) * _BLOCK), value, loc, scale, low, high, out, table,
                           nodes, weights)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _cdf_gradients_vector_serial(grad, value, loc, scale, low, high, slopes, table, nodes, weights):
    _cdf_gradients_block(0, grad.shape[0], grad, value, loc, scale, low, high, slopes, table, nodes, weights)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _icdf_gradients_block(start, stop, grad, prob, loc, scale, low, high, slopes, table, nodes, weights):
    """grad times each derivative of the icdf of elements [start, stop) into the five rows of ``slopes``, as
    _cdf_gradients_block."""
    for i in range(start, stop):
        _, dp, dl, ds, da, db, _, held = icdf_element(np.float64(prob[i]), np.float64(loc[i]),
                                                      np.float64(scale[i]), np.float64(low[i]),
                                                      np.float64(high[i]), False)
        gr = np.float64(grad[i])
        slopes[0, i] = gr * dp if held else np.nan
        slopes[1, i] = gr * dl
        slopes[2, i] = gr * ds
        slopes[3, i] = gr * da
        slopes[4, i] = gr * db
    for i in range(start, stop):
        if not math.isnan(slopes[0, i]):
            continue
        derivatives = _icdf_gradient_element(np.float64(prob[i]), np.float64(loc[i]), np.float64(scale[i]),
                                             np.float64(low[i]), np.float64(high[i]), table, nodes, weights)
        gr = np.float64(grad[i])
        for k in range(5):
            slopes[k, i] = gr * derivatives[k]


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _icdf_vector_serial(prob, loc, scale, low, high, out, table, nodes, weights):
    _icdf_pass(0, out.shape[0], prob, loc, scale, low, high, out, table, nodes, weights)


@numba.njit(cache=True, parallel=True, error_model="numpy", fastmath=False, forceinline=False)
def _icdf_vector_parallel(prob, loc, scale, low, high, out, table, nodes, weights):
    n = out.shape[0]
    for block in numba.prange((n + _BLOCK - 1) // _BLOCK):
        _icdf_pass(block * _BLOCK, min(n, (block + 1) * _BLOCK), prob, loc, scale, low, high, out, table, nodes,
                   weights)


@numba.njit(cache=True, error_model="numpy", fastmath=False, forceinline=False)
def _icdf_gradients_vector_serial(grad, prob, loc, scale, low, high, slopes, table, nodes, weights):
    _icdf_gradients_block(0, grad.shape[0], grad, prob, loc, scale, low, high, slopes, table, nodes, weights)

