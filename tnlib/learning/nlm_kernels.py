"""The Neural Logic Machine's compiled kernels (numba, CPU): masked max / min over an object axis and its exact
gradient, the projected extrema and broadcast sums of the inference route, the sparse backward of a permuted sum,
and the thread pool they share. :mod:`tnlib.learning.nlm_autograd` holds the autograd functions that call them;
each kernel's array layout is described where it is defined.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
from numba import njit

from tnlib.kernel_cache import cache_by_folder_sources
from tnlib.learning.nlm_rows import (ROW, add_scaled_row, add_tied_shares_row, copy_row, count_ties_row, extrema_row,
                                     scatter_source_row, sum_rows, sum_rows_with_extrema)

cache_by_folder_sources(__file__)  # before the first njit(cache=True): tnlib.kernel_cache says why


@njit(nogil=True, cache=True)
def kept_objects(m, r, n, kept):  # pragma: no cover - compiled
    """Fill ``kept`` with the objects of kept position ``m``."""
    rest = m
    for a in range(r - 1, -1, -1):
        kept[a] = rest % n
        rest //= n


@njit(nogil=True, cache=True)
def is_excluded(real, b, k, kept, r, exclude):  # pragma: no cover - compiled
    if not real[b, k]:
        return True
    if exclude:
        for a in range(r):
            if kept[a] == k:
                return True
    return False


# A batch pads its states to the largest one's object count, the padding after the real objects (collation's
# layout). A position with a padded object never reaches the arity-0 output (expand and permute keep the padded
# object, and every reduction skips it), so its value is no part of the model's function and its gradient is 0:
# the arity-3 kernels visit the real objects of a state alone -- a cube of the real count a side, about half of
# the batch's cube on data/paper -- and give the positions with a padded object constants (0 before the caller's
# sigmoid; the extrema of such a pair those of an empty range: exists 0, forall 1). A state whose real objects are
# not a prefix is visited whole, its padding skipped entry by entry.
@njit(nogil=True, cache=True)
def visited_objects(real, b):  # pragma: no cover - compiled
    """The objects the arity-3 kernels visit in state b: its real count where they come first, else all."""
    n = real.shape[1]
    count = 0
    while count < n and real[b, count]:
        count += 1
    for k in range(count, n):
        if real[b, k]:
            return n
    return count


@njit(nogil=True, cache=True)
def fill_padded(values, b, n, limit, first_i, i_step):  # pragma: no cover - compiled
    """Zero the positions (i, j, k) of state b's ``values`` [B, N^3, C] that hold an object from ``limit`` on, for
    i = first_i, first_i + i_step, ..."""
    for i in range(first_i, n, i_step):
        if i >= limit:
            values[b, i * n * n:(i + 1) * n * n, :] = 0.0
            continue
        for j in range(n):
            first = (i * n + j) * n
            values[b, first + (0 if j >= limit else limit):first + n, :] = 0.0


@njit(nogil=True, cache=True)
def extrema_kernel(x, real, r, exclude, out, start, stop):  # pragma: no cover - compiled
    _, positions, n, channels = x.shape
    kept = np.empty(max(r, 1), np.int64)
    most = np.empty(channels, x.dtype)
    least = np.empty(channels, x.dtype)
    for b in range(start, stop):
        for m in range(positions):
            kept_objects(m, r, n, kept)
            most[:] = -np.inf
            least[:] = np.inf
            for k in range(n):
                if is_excluded(real, b, k, kept, r, exclude):
                    for c in range(channels):
                        most[c] = max(most[c], 0.0)
                        least[c] = min(least[c], 1.0)
                else:
                    for c in range(channels):
                        most[c] = max(most[c], x[b, m, k, c])
                        least[c] = min(least[c], x[b, m, k, c])
            for c in range(channels):
                out[b, m, c] = most[c]
                out[b, m, channels + c] = least[c]


@njit(nogil=True, cache=True, error_model="numpy")
def extrema_backward_kernel(x, real, r, exclude, out, grad, grad_x, start, stop):  # pragma: no cover - compiled
    # Per kept position: which objects are excluded (once), the ties of its max and min (counted branch-free, in
    # x's dtype: exact, n is far below 2^24), then each entry's share. Each pass over the objects does one thing and
    # indexes the arrays directly: 2.5x faster than interleaving the exclusion test with the tie counts and
    # addressing rows through 1-d views (measured at 30 objects, arity 2, 64 states; the same numbers). A tie
    # count is never 0 (the extremum is one of the entries), so numpy's error model (no division check) changes
    # nothing but the speed.
    _, positions, n, channels = x.shape
    kept = np.empty(max(r, 1), np.int64)
    excluded = np.empty(n, np.bool_)
    most = np.empty(channels, x.dtype)
    least = np.empty(channels, x.dtype)
    ties_max = np.empty(channels, x.dtype)
    ties_min = np.empty(channels, x.dtype)
    share_max = np.empty(channels, x.dtype)
    share_min = np.empty(channels, x.dtype)
    for b in range(start, stop):
        for m in range(positions):
            kept_objects(m, r, n, kept)
            for c in range(channels):
                most[c] = out[b, m, c]
                least[c] = out[b, m, channels + c]
                ties_max[c] = 0.0
                ties_min[c] = 0.0
            for k in range(n):
                excluded[k] = is_excluded(real, b, k, kept, r, exclude)
            for k in range(n):
                if excluded[k]:  # counts as 0 for the max, 1 for the min
                    for c in range(channels):
                        ties_max[c] += most[c] == 0.0
                        ties_min[c] += least[c] == 1.0
                else:
                    for c in range(channels):
                        v = x[b, m, k, c]
                        ties_max[c] += v == most[c]
                        ties_min[c] += v == least[c]
            for c in range(channels):
                share_max[c] = grad[b, m, c] / ties_max[c]
                share_min[c] = grad[b, m, channels + c] / ties_min[c]
            for k in range(n):
                if excluded[k]:
                    for c in range(channels):
                        grad_x[b, m, k, c] = 0.0
                else:
                    for c in range(channels):
                        v = x[b, m, k, c]
                        grad_x[b, m, k, c] = (share_max[c] if v == most[c] else 0.0) + \
                            (share_min[c] if v == least[c] else 0.0)


# Inference only: an arity-3 output that the next layer reads only through exists / forall is never stored. The
# kernel walks the output in cubes of ``TILE`` objects a side: it gathers, for each position of a cube, the six
# permuted rows of the local input side by side ([tile^3, 6 C_in]), projects them with one matrix product, adds the
# bias and the three broadcast expand terms and keeps the max and min over the reduced object k per kept pair
# (i, j) in ``out``. The cube of tile coordinates (A, B, C) reads the six source cubes at the orderings of
# {A, B, C}, and so do the (up to six) cubes at the other orderings: the kernel visits the cubes a multiset at a
# time, so the six source cubes are read from memory once and from cache five times (the input of a 64-object
# state, 8 MB, does not stay in L2; reading each source cube six times from L3 cost half the kernel's time). The
# sigmoid is monotone, so sigmoid(max) is the max of the sigmoids: the caller applies it to the N^2 results
# instead of to N^3 values, and an empty range (-inf, +inf) becomes exists 0, forall 1, as excluded entries give in
# ``extrema_kernel``. x is [B, N^3, C_in] (row-major positions) and ``words`` the same memory as 8-byte words
# where a row fills whole words (rows are moved as bits, four words at a time: the gather's cost is the number of
# moves); ``w`` is [6 C_in, out] (permutation-major); ``strides[p, t]`` the stride, in positions, of the axis of x
# that output axis t reads under permutation p; s0, s1, s2 the expand terms constant along output axis 0, 1, 2
# ([B, N, N, out]). The kernel covers the multisets whose two smallest tiles form the ``first_pair``-th,
# ``first_pair + pair_step``-th, ... pair (t0 <= t1, in order): threads that share one state each take every
# ``pair_step``-th pair and keep their own ``out``, merged by the caller. In training, where the backward needs every
# entry, a non-empty ``stored`` [B, N^3, out] receives the sums themselves (the caller's sigmoid makes them the
# layer's output, so the max and min above are its exists / forall without another pass over it). Without NaNs or
# infinities in the sums, reassociating them (fastmath, infinities kept) moves only rounding; the max and min are
# exact whatever the order the cubes come in. A cube of 8 keeps the six source cubes and the gathered rows in L2
# (measured: 16 was 10-15% slower at 64 and 104 objects). With rows of 8 (every inner layer of the paper's NLM) the
# gather moves a row, and the reduction sums and compares one, as a few vector instructions
# (:mod:`tnlib.learning.nlm_rows`; 1.3x faster than the scalar loops on a visitall training step, the same numbers).
TILE = 8


@njit(nogil=True, cache=True)
def multiset_cubes(t0, t1, t2, cubes):  # pragma: no cover - compiled
    """Fill ``cubes`` with the distinct orderings of the tile coordinates (t0, t1, t2); returns how many."""
    count = 0
    for q in range(6):
        a, b, c = (t0, t1, t2) if q == 0 else (t0, t2, t1) if q == 1 else (t1, t0, t2) if q == 2 else \
            (t1, t2, t0) if q == 3 else (t2, t0, t1) if q == 4 else (t2, t1, t0)
        seen = False
        for e in range(count):
            seen = seen or (cubes[e, 0] == a and cubes[e, 1] == b and cubes[e, 2] == c)
        if not seen:
            cubes[count, 0], cubes[count, 1], cubes[count, 2] = a, b, c
            count += 1
    return count


@njit(nogil=True, cache=True, fastmath={"contract", "reassoc", "nsz", "arcp"})
def projected_extrema_kernel(x, words, w, strides, bias, s0, s1, s2, real, exclude, out, stored, first_pair,
                              pair_step, start, stop):  # pragma: no cover - compiled
    n = real.shape[1]
    store = stored.shape[0] > 0
    inputs = x.shape[2]
    row_words = words.shape[2]
    perms = strides.shape[0]
    width = w.shape[1]
    tile = min(TILE, n)
    gathered_words = np.zeros((tile * tile * tile, perms * row_words), words.dtype)
    gathered = gathered_words.view(x.dtype)
    pre = np.zeros((tile * tile * tile, width), x.dtype)
    base = np.empty(width, x.dtype)
    row_sum = np.empty(width, x.dtype)
    kept = np.empty(2, np.int64)
    cubes = np.empty((6, 3), np.int64)
    for b in range(start, stop):
        limit = visited_objects(real, b)
        tiles = (limit + tile - 1) // tile
        every_object = not exclude
        for k in range(limit):
            every_object = every_object and real[b, k]
        if store and limit < n:
            fill_padded(stored, b, n, limit, first_pair, pair_step)
        out[b, :, :, :width] = -np.inf
        out[b, :, :, width:] = np.inf
        pair = 0
        for t0 in range(tiles):
            for t1 in range(t0, tiles):
                pair += 1
                if (pair - 1) % pair_step != first_pair:
                    continue
                for t2 in range(t1, tiles):
                    for e in range(multiset_cubes(t0, t1, t2, cubes)):
                        i0, j0, k0 = cubes[e, 0] * tile, cubes[e, 1] * tile, cubes[e, 2] * tile
                        ti, tj, tk = min(tile, limit - i0), min(tile, limit - j0), min(tile, limit - k0)
                        if inputs:
                            for ii in range(ti):
                                for jj in range(tj):
                                    first = (ii * tj + jj) * tk
                                    for p in range(perms):
                                        step = strides[p, 2]
                                        source = (i0 + ii) * strides[p, 0] + (j0 + jj) * strides[p, 1] + k0 * step
                                        at = p * row_words
                                        if inputs == ROW:  # one vector move a row (nlm_rows)
                                            into = first * perms * ROW + p * ROW
                                            for kk in range(tk):
                                                copy_row(gathered, into, x, (b * x.shape[1] + source) * ROW)
                                                into += perms * ROW
                                                source += step
                                        elif row_words == 4:  # unrolled: one vector move
                                            for kk in range(tk):
                                                gathered_words[first + kk, at] = words[b, source, 0]
                                                gathered_words[first + kk, at + 1] = words[b, source, 1]
                                                gathered_words[first + kk, at + 2] = words[b, source, 2]
                                                gathered_words[first + kk, at + 3] = words[b, source, 3]
                                                source += step
                                        else:
                                            for kk in range(tk):
                                                for q in range(row_words):
                                                    gathered_words[first + kk, at + q] = words[b, source, q]
                                                source += step
                            rows = ti * tj * tk
                            np.dot(gathered[:rows], w, pre[:rows])
                        for ii in range(ti):
                            i = i0 + ii
                            kept[0] = i
                            for jj in range(tj):
                                j = j0 + jj
                                kept[1] = j
                                for c in range(width):
                                    base[c] = bias[c] + s2[b, i, j, c]
                                first = (ii * tj + jj) * tk
                                high = out[b, i, j, :width]
                                low = out[b, i, j, width:]
                                if width == ROW and every_object:  # a row at a time as vector instructions
                                    extrema_at = ((b * n + i) * n + j) * 2 * ROW
                                    if store:  # the run of tk rows in one call, its extrema in registers
                                        at = (b * n ** 3 + (i * n + j) * n + k0) * ROW
                                        sum_rows_with_extrema(stored, at, pre, first * ROW, base, s0,
                                                              ((b * n + j) * n + k0) * ROW, s1,
                                                              ((b * n + i) * n + k0) * ROW, tk, out, extrema_at)
                                        continue
                                    for kk in range(tk):
                                        k = k0 + kk
                                        row0, row1 = ((b * n + j) * n + k) * ROW, ((b * n + i) * n + k) * ROW
                                        sum_rows(row_sum, 0, pre, (first + kk) * ROW, base, 0, s0, row0, s1, row1)
                                        extrema_row(out, extrema_at, out, extrema_at + ROW, row_sum, 0)
                                    continue
                                for kk in range(tk):
                                    k = k0 + kk
                                    if store:
                                        for c in range(width):
                                            stored[b, (i * n + j) * n + k, c] = \
                                                pre[first + kk, c] + base[c] + s0[b, j, k, c] + s1[b, i, k, c]
                                    if not every_object and is_excluded(real, b, k, kept, 2, exclude):
                                        continue
                                    for c in range(width):
                                        v = pre[first + kk, c] + base[c] + s0[b, j, k, c] + s1[b, i, k, c]
                                        high[c] = max(high[c], v)
                                        low[c] = min(low[c], v)


@njit(nogil=True, cache=True, fastmath={"contract", "reassoc", "nsz", "arcp"})
def broadcast_sum_kernel(bias, s0, s1, s2, real, exclude, pre, extrema, start, stop):  # pragma: no cover - compiled
    """Inference only: an arity-3 output made of broadcast expand terms alone (no arity-3 input to project), in one
    pass -- ``pre[b, (i, j, k)] = bias + s2[i, j] + s0[j, k] + s1[i, k]`` and, over k, its max and min per (i, j)
    (excluded entries skipped, as in ``projected_extrema_kernel``) -- for the caller's sigmoid on both."""
    n = real.shape[1]
    width = bias.shape[0]
    base = np.empty(width, pre.dtype)
    kept = np.empty(2, np.int64)
    for unit in range(start, stop):  # (state, object i): threads split a state's work too
        b, i = unit // n, unit % n
        limit = visited_objects(real, b)
        if limit < n:
            fill_padded(pre, b, n, limit, i, n)
        every_object = not exclude
        for k in range(limit):
            every_object = every_object and real[b, k]
        kept[0] = i
        for j in range(n):
            kept[1] = j
            high = extrema[b, i, j, :width]
            low = extrema[b, i, j, width:]
            high[:] = -np.inf
            low[:] = np.inf
            if i >= limit or j >= limit:
                continue
            for c in range(width):
                base[c] = bias[c] + s2[b, i, j, c]
            if width == 8 and every_object:  # a constant channel loop: one vector register a row (as above)
                first = (i * n + j) * n
                for k in range(limit):
                    for c in range(8):
                        v = base[c] + s0[b, j, k, c] + s1[b, i, k, c]
                        pre[b, first + k, c] = v
                        high[c] = max(high[c], v)
                        low[c] = min(low[c], v)
                continue
            for k in range(limit):
                target = pre[b, (i * n + j) * n + k]
                row0 = s0[b, j, k]
                row1 = s1[b, i, k]
                for c in range(width):
                    target[c] = base[c] + row0[c] + row1[c]
                if every_object or not is_excluded(real, b, k, kept, 2, exclude):
                    for c in range(width):
                        high[c] = max(high[c], target[c])
                        low[c] = min(low[c], target[c])


@njit(nogil=True, cache=True, inline="always", error_model="numpy")
def add_tied_shares(pre, y, first, limit, padded, grad_pair, scratch):  # pragma: no cover - compiled
    """Add to ``pre`` (a pair's run, [limit * 8] values) the shares of the pair's exists / forall gradient
    (``grad_pair``, [16]) at their ties in the run of y that starts at flat index ``first``, no visited object
    excluded and ``padded`` (in y's dtype) excluded objects after them: ``broadcast_sum_backward_kernel``'s scalar
    passes as row instructions (:mod:`tnlib.learning.nlm_rows`), the same numbers. ``scratch`` is [6, 8]."""
    one = y.dtype.type(1)
    zero = one - one
    most, least, ties_max, ties_min, share_max, share_min = scratch[0], scratch[1], scratch[2], scratch[3], \
        scratch[4], scratch[5]
    copy_row(most, 0, y, first)
    copy_row(least, 0, y, first)
    for k in range(1, limit):
        extrema_row(most, 0, least, 0, y, first + k * ROW)
    for c in range(ROW):
        if padded:
            most[c] = max(most[c], zero)
            least[c] = min(least[c], one)
        ties_max[c] = zero
        ties_min[c] = zero
    for k in range(limit):
        count_ties_row(ties_max, ties_min, y, first + k * ROW, most, least)
    for c in range(ROW):
        if padded and most[c] == zero:
            ties_max[c] += padded
        if padded and least[c] == one:
            ties_min[c] += padded
        share_max[c] = grad_pair[c] / ties_max[c]
        share_min[c] = grad_pair[ROW + c] / ties_min[c]
    for k in range(limit):
        add_tied_shares_row(pre, k * ROW, y, first + k * ROW, most, least, share_max, share_min)


@njit(nogil=True, cache=True, error_model="numpy")
def broadcast_sum_backward_kernel(grad_y, grad_extrema, y, real, exclude, one, grad_bias, g0, g1, g2, start,
                                  stop):  # pragma: no cover - compiled
    """Training, backward of ``broadcast_sum_kernel``'s output y ``[B, N^3, out]`` (after the caller's sigmoid)
    and of its exists / forall in one pass: per position, y's gradient (``grad_y``, empty when y has none) plus the
    share of its pair's extrema's gradient (``grad_extrema`` [B, N^2, 2 out], empty when they have none; the ties
    found from y as in ``extrema_backward_kernel``), through the sigmoid (as torch's sigmoid_backward), summed into
    the expand terms' gradients g0, g1, g2 ([B, N, N, out], constant along output axis 0, 1, 2; each state's zeroed
    here) and the bias's (float64, this thread's own). The gradient of every position is the one the stored
    route adds up (y's own plus its extrema's share), so only the order of the sums differs. y, grad_y, g0, g1 and
    g2 come flat: a pair's n positions are one run of n out values, each pass over them a plain loop."""
    width = grad_bias.shape[0]
    n = real.shape[1]
    run = n * width
    # loop bounds and offsets from range variables only, and a pair's runs as views indexed from 0: a bound computed
    # in the loop, or an index LLVM cannot prove non-negative (pair % n, or first + q: numba tests each index for a
    # negative value), keeps a pass scalar, 3-5x slower
    pairs = n * n
    has_y = grad_y.shape[0] > 0
    has_extrema = grad_extrema.shape[0] > 0
    kept = np.empty(2, np.int64)
    excluded = np.empty(n, np.bool_)
    zero = one - one
    pre = np.empty(run, y.dtype)
    across = np.empty(width, y.dtype)
    scratch = np.empty((6, width), y.dtype)
    for b in range(start, stop):
        # this state's expand-term gradients zeroed here, just before its sums, rather than by the caller for all
        g0[b * pairs * width:(b + 1) * pairs * width] = 0.0
        g1[b * pairs * width:(b + 1) * pairs * width] = 0.0
        g2[b * pairs * width:(b + 1) * pairs * width] = 0.0
        limit = visited_objects(real, b)
        # the excluded entries after the visited ones (0 for the max, 1 for the min), counted in y's dtype
        padded = zero
        for _ in range(limit, n):
            padded += one
        real_run = limit * width
        every_object = not exclude
        for k in range(limit):
            every_object = every_object and real[b, k]
        for i in range(limit):
            for j in range(limit):
                pair = i * n + j
                first = (b * pairs + pair) * run
                y_run = y[first:first + run]
                if has_y:
                    grad_run = grad_y[first:first + run]
                    for q in range(real_run):
                        pre[q] = grad_run[q]
                else:
                    pre[:] = 0.0
                reduced = False
                if has_extrema:
                    for c in range(2 * width):
                        reduced = reduced or grad_extrema[b, pair, c] != 0.0
                if reduced and every_object and width == ROW:
                    add_tied_shares(pre, y, first, limit, padded, grad_extrema[b, pair], scratch)
                elif reduced and every_object:  # no visited entry excluded: the same passes without the tests
                    for c in range(width):
                        high = y_run[c]
                        low = high
                        for k in range(1, limit):
                            v = y_run[k * width + c]
                            high = max(high, v)
                            low = min(low, v)
                        if padded:
                            high = max(high, zero)
                            low = min(low, one)
                        ties_high = zero
                        ties_low = zero
                        for k in range(limit):
                            v = y_run[k * width + c]
                            ties_high += one if v == high else zero
                            ties_low += one if v == low else zero
                        if padded and high == zero:
                            ties_high += padded
                        if padded and low == one:
                            ties_low += padded
                        share_high = grad_extrema[b, pair, c] / ties_high
                        share_low = grad_extrema[b, pair, width + c] / ties_low
                        for k in range(limit):
                            v = y_run[k * width + c]
                            pre[k * width + c] += (share_high if v == high else zero) + \
                                (share_low if v == low else zero)
                elif reduced:
                    kept[0], kept[1] = i, j
                    for k in range(n):
                        excluded[k] = is_excluded(real, b, k, kept, 2, exclude)
                    # a channel at a time, its extremum, ties and share in registers (an 8-wide row at a time kept
                    # them in memory, scalar); all in y's dtype, as the stored route computes them
                    for c in range(width):
                        high = zero if excluded[0] else y_run[c]
                        low = one if excluded[0] else y_run[c]
                        for k in range(1, n):
                            high = max(high, zero if excluded[k] else y_run[k * width + c])
                            low = min(low, one if excluded[k] else y_run[k * width + c])
                        ties_high = zero
                        ties_low = zero
                        for k in range(n):
                            if excluded[k]:
                                if high == zero:
                                    ties_high += one
                                if low == one:
                                    ties_low += one
                            else:
                                v = y_run[k * width + c]
                                if v == high:
                                    ties_high += one
                                if v == low:
                                    ties_low += one
                        share_high = grad_extrema[b, pair, c] / ties_high
                        share_low = grad_extrema[b, pair, width + c] / ties_low
                        for k in range(n):
                            if not excluded[k]:
                                v = y_run[k * width + c]
                                pre[k * width + c] += (share_high if v == high else zero) + \
                                    (share_low if v == low else zero)
                # one plain loop a pass (each vectorised; a loop that also summed over k ran scalar)
                for q in range(real_run):
                    v = y_run[q]
                    pre[q] = pre[q] * (one - v) * v
                row0 = (b * n + j) * run
                row1 = (b * n + i) * run
                g0_run = g0[row0:row0 + run]
                g1_run = g1[row1:row1 + run]
                for q in range(real_run):
                    g0_run[q] += pre[q]
                for q in range(real_run):
                    g1_run[q] += pre[q]
                # the sums over k an object's row at a time (each channel's terms in the same order)
                for c in range(width):
                    across[c] = pre[c]
                for k in range(1, limit):
                    row_pre = pre[k * width:(k + 1) * width]
                    for c in range(width):
                        across[c] += row_pre[c]
                for c in range(width):
                    g2[(b * pairs + pair) * width + c] = across[c]
                    grad_bias[c] += np.float64(across[c])


_KERNEL_POOL: ThreadPoolExecutor | None = None


SPLIT_WORK = 1 << 18  # elements below which a kernel runs on one thread (starting threads costs more)


_BLAS_CONTROLLER = None


def single_threaded_blas():
    """A context in which the BLAS that numba's ``np.dot`` calls (scipy's OpenBLAS) uses one thread: kernels split
    among threads each call it, and its own threads on top of theirs oversubscribe the cores (measured at gripper 60
    on 2 threads: 80 evaluations per second with them, 104 without)."""
    global _BLAS_CONTROLLER
    if _BLAS_CONTROLLER is None:
        import scipy.linalg.cython_blas  # noqa: F401 - loads that BLAS, so the controller finds it
        from threadpoolctl import ThreadpoolController

        _BLAS_CONTROLLER = ThreadpoolController()
    return _BLAS_CONTROLLER.limit(limits=1, user_api="blas")


def run_split(kernel, batch: int, work: int, *args) -> None:
    """``kernel(*args, start, stop)`` over the batch, split among torch's intra-op threads when there is enough
    work (the kernels release the GIL)."""
    global _KERNEL_POOL
    threads = min(torch.get_num_threads(), batch)
    if threads <= 1 or work < SPLIT_WORK:
        kernel(*args, 0, batch)
        return
    if _KERNEL_POOL is None or _KERNEL_POOL._max_workers < threads:
        _KERNEL_POOL = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="tnlib-nlm")
    bounds = [batch * t // threads for t in range(threads + 1)]
    with single_threaded_blas():
        for future in [_KERNEL_POOL.submit(kernel, *args, bounds[t], bounds[t + 1]) for t in range(threads)]:
            future.result()


def run_each(kernel, calls: list[tuple]) -> None:
    """``kernel(*args)`` for each ``args`` of ``calls``, side by side on the kernels' threads."""
    global _KERNEL_POOL
    if len(calls) <= 1:
        for args in calls:
            kernel(*args)
        return
    if _KERNEL_POOL is None or _KERNEL_POOL._max_workers < len(calls):
        _KERNEL_POOL = ThreadPoolExecutor(max_workers=len(calls), thread_name_prefix="tnlib-nlm")
    with single_threaded_blas():
        for future in [_KERNEL_POOL.submit(kernel, *args) for args in calls]:
            future.result()


# The sparse backwards scatter into a state's rows of x's gradient, and read its rows of x, at the r! permutations of
# each position: rows far apart (a state of 25 objects: 500 KB each), which the caches hold only once visited. Each
# state's rows of x's gradient are zeroed here, just before its scatter, instead of by the caller for the whole batch,
# and its rows of x are read once in order, so that the scattered accesses find both in the caches (the
# extrema-permuted backward kernel 1.2x faster on a captured visitall step, the zero fill included; the same numbers).
@njit(nogil=True, cache=True, inline="always")
def warm_state(x, grad_x, small, b, scratch):  # pragma: no cover - compiled
    """Zero state b's rows of ``grad_x`` and of the expand terms' gradients ``small``, and read its rows of ``x``
    into the caches (into ``scratch[0]``, which the caller overwrites)."""
    grad_x[b] = 0.0
    for d in range(small.shape[0]):
        small[d, b] = 0.0
    if x.shape[2] > 0:
        for m in range(x.shape[1]):
            scratch[0] += x[b, m, 0]


@njit(nogil=True, cache=True, inline="always")
def add_bias_and_expand_shares(b, digits, pre, n, has_small, grad_bias, small):  # pragma: no cover - compiled
    """Add the gradient ``pre`` of output position ``digits``'s pre-activation (state b) to the bias's (float64)
    and to the expand terms' gradients ``small`` [r, B, N^(r-1), out] (where ``has_small``)."""
    r = digits.shape[0]
    width = pre.shape[0]
    for c in range(width):
        grad_bias[c] += np.float64(pre[c])
    for d in range(r):
        if has_small[d]:
            rest = 0
            for t in range(r):
                if t != d:
                    rest = rest * n + digits[t]
            for c in range(width):
                small[d, b, rest, c] += pre[c]


# Inlined into its callers (a call per scattered position passed a dozen arrays' fields: 1.4x slower at
# data/paper's sizes, the same numbers).
@njit(nogil=True, cache=True, inline="always")
def scatter_position(b, digits, pre, x, w, strides, n, has_small, grad_x, grad_w, grad_bias, small, channels,
                     wide_x):  # pragma: no cover - compiled
    """Add the share of output position ``digits`` of state b (``pre``: the gradient of its pre-activation, per
    channel) to the r! source rows of x, to the weight's, the bias's and the expand terms' gradients. ``channels``
    and ``wide_x`` are scratch: the channels with a share, a source row of x in float64."""
    perms, r = strides.shape
    width = pre.shape[0]
    inputs = x.shape[2]
    add_bias_and_expand_shares(b, digits, pre, n, has_small, grad_bias, small)
    count = 0
    for c in range(width):
        if pre[c] != 0.0:
            channels[count] = c
            count += 1
    for p in range(perms):
        source = 0
        for t in range(r):
            source += digits[t] * strides[p, t]
        if inputs == ROW:  # the rows' updates as vector instructions (nlm_rows), the same numbers
            scatter_source_row(grad_x, (b * x.shape[1] + source) * ROW, x, w, grad_w, pre, channels, count,
                               p * width)
            continue
        row_x = x[b, source]
        row_grad_x = grad_x[b, source]
        for k in range(inputs):
            wide_x[k] = row_x[k]
        for e in range(count):
            c = channels[e]
            share = pre[c]
            row = p * width + c
            row_w = w[row]
            row_grad_w = grad_w[row]
            for k in range(inputs):
                row_grad_x[k] += share * row_w[k]
            wide = np.float64(share)
            for k in range(inputs):
                row_grad_w[k] += wide * wide_x[k]


@njit(nogil=True, cache=True)
def sparse_permuted_backward_kernel(grad, y, x, w, strides, n, one, has_small, grad_x, grad_w, grad_bias, small,
                                     start, stop):  # pragma: no cover - compiled
    # A position at a time: its channels' shares computed side by side, the position skipped when all are 0.
    _, positions, width = grad.shape
    r = strides.shape[1]
    digits = np.empty(r, np.int64)
    pre = np.empty(width, y.dtype)
    channels = np.empty(width, np.int64)
    wide_x = np.empty(max(x.shape[2], 1), np.float64)
    for b in range(start, stop):
        warm_state(x, grad_x, small, b, wide_x)
        for m in range(positions):
            nonzero = False
            for c in range(width):
                g = grad[b, m, c]
                v = y[b, m, c]
                pre[c] = g * (one - v) * v  # as torch's sigmoid_backward (``one`` in the arrays' dtype)
                nonzero = nonzero or pre[c] != 0.0
            if not nonzero:
                continue
            kept_objects(m, r, n, digits)
            scatter_position(b, digits, pre, x, w, strides, n, has_small, grad_x, grad_w, grad_bias, small, channels,
                             wide_x)


@njit(nogil=True, cache=True)
def reduced_pair_rows(grad, rows, reduced):  # pragma: no cover - compiled
    """For the extrema's gradient ``grad`` [P, 2 out] (a row a kept pair): ``reduced`` receives, in order, the pairs
    with a nonzero gradient and ``rows[pair]`` that pair's place among them (-1 for a pair without one); returns
    how many there are."""
    count = 0
    for pair in range(grad.shape[0]):
        nonzero = False
        for c in range(grad.shape[1]):
            nonzero = nonzero or grad[pair, c] != 0.0
        if nonzero:
            rows[pair] = count
            reduced[count] = pair
            count += 1
        else:
            rows[pair] = -1
    return count


# The tied entries whose shares ``extrema_permuted_backward_kernel`` collects before it multiplies them out: their
# shares [E, out] and gathered source rows [E, 6 C_in] (48 KB and 192 KB in float32 at 8 channels), in L2.
TIED_ENTRIES = 1024


@njit(nogil=True, cache=True)
def add_tied_products(entries, shares, gathered, sources, w_by_share, products_w, products_x, grad_x, grad_w,
                      one):  # pragma: no cover - compiled
    """The weight's and x's gradients of ``entries`` tied entries as two products: the weight's, ``shares^T
    gathered`` ([out, E] times [E, r! C_in], the six permutations' blocks side by side), added into grad_w (float64,
    [r! out, C_in]); x's, ``shares w_by_share`` ([E, out] times [out, r! C_in]), each entry's r! blocks added to its
    source rows of grad_x (flat row numbers in ``sources``)."""
    width = shares.shape[1]
    perms = sources.shape[1]
    inputs = grad_x.shape[2]
    used = shares[:entries]
    np.dot(used.T, gathered[:entries], products_w)
    for p in range(perms):
        for c in range(width):
            for k in range(inputs):
                grad_w[p * width + c, k] += np.float64(products_w[c, p * inputs + k])
    np.dot(used, w_by_share, products_x[:entries])
    positions = grad_x.shape[1]
    for e in range(entries):
        for p in range(perms):
            source = sources[e, p]
            if inputs == ROW:
                add_scaled_row(grad_x, source * ROW, products_x, (e * perms + p) * ROW, one)
            else:
                for k in range(inputs):
                    grad_x[source // positions, source % positions, k] += products_x[e, p * inputs + k]


# Training, backward of an arity-3 output that the next layer only reduces, formed with its exists / forall by
# ``projected_extrema_kernel``: ``extrema_backward_kernel`` and ``sparse_permuted_backward_kernel`` in one pass,
# without the dense [B, N^3, out] gradient between them. Per kept pair (i, j) it finds the ties of y's max and min
# over k (as ``extrema_backward_kernel``, from y itself: the forward's extrema are the sigmoid of the sums' and may
# differ from y's by the sigmoid's rounding) and gives each tied entry its share. Its pre-activation's gradient goes
# to the bias's and the expand terms' as in the sparse kernel (the same numbers as the two kernels in a row); to
# the weight's and x's by two products over a batch of tied entries (``add_tied_products``) instead of a scaled
# row per channel with a share and source row, which chained each update on the weight gradient's row before it
# (1.14-1.20x faster on a captured visitall and gripper step; the products sum in another order, so x's and the
# weight's gradients move by float32's rounding).
# grad is the extrema's gradient [B, N^2, 2 out]; the output y is read at the pairs with a gradient alone, so it
# comes as those pairs' rows side by side, [P, N, out], ``rows[b N^2 + pair]`` the row of pair ``pair`` of state b.
@njit(nogil=True, cache=True, error_model="numpy")
def extrema_permuted_backward_kernel(grad, y, rows, x, w, strides, real, exclude, one, has_small, grad_x, grad_w,
                                     grad_bias, small, start, stop):  # pragma: no cover - compiled
    width = y.shape[2]
    n = real.shape[1]
    digits = np.empty(3, np.int64)
    excluded = np.empty(n, np.bool_)
    most = np.empty(width, y.dtype)
    least = np.empty(width, y.dtype)
    ties_max = np.empty(width, y.dtype)
    ties_min = np.empty(width, y.dtype)
    share_max = np.empty(width, y.dtype)
    share_min = np.empty(width, y.dtype)
    g = np.empty(width, y.dtype)
    pre = np.empty(width, y.dtype)
    wide_x = np.empty(max(x.shape[2], 1), np.float64)
    perms = strides.shape[0]
    inputs = x.shape[2]
    # w [perms out, C] as [out, perms C]: a tied entry's shares times it give its six source rows' gradients at once
    w_by_share = np.empty((width, perms * inputs), x.dtype)
    for p in range(perms):
        for c in range(width):
            for k in range(inputs):
                w_by_share[c, p * inputs + k] = w[p * width + c, k]
    shares = np.empty((TIED_ENTRIES, width), y.dtype)
    gathered = np.empty((TIED_ENTRIES, perms * inputs), x.dtype)
    sources = np.empty((TIED_ENTRIES, perms), np.int64)
    products_w = np.empty((width, perms * inputs), x.dtype)
    products_x = np.empty((TIED_ENTRIES, perms * inputs), x.dtype)
    entries = 0
    for b in range(start, stop):
        warm_state(x, grad_x, small, b, wide_x)
        limit = visited_objects(real, b)
        padded = n - limit  # excluded entries after the visited ones: 0 for the max, 1 for the min
        for pair in range(n * n):
            if pair // n >= limit or pair % n >= limit:  # a padded pair: constant extrema
                continue
            nonzero = False
            for c in range(2 * width):
                nonzero = nonzero or grad[b, pair, c] != 0.0
            if not nonzero:
                continue
            digits[0], digits[1] = pair // n, pair % n
            for k in range(limit):
                excluded[k] = is_excluded(real, b, k, digits, 2, exclude)
            most[:] = -np.inf if padded == 0 else 0.0
            least[:] = np.inf if padded == 0 else 1.0
            row = y[rows[b * n * n + pair]]
            for k in range(limit):
                if excluded[k]:
                    for c in range(width):
                        most[c] = max(most[c], 0.0)
                        least[c] = min(least[c], 1.0)
                else:
                    for c in range(width):
                        most[c] = max(most[c], row[k, c])
                        least[c] = min(least[c], row[k, c])
            for c in range(width):
                ties_max[c] = padded if most[c] == 0.0 else 0
                ties_min[c] = padded if least[c] == 1.0 else 0
            for k in range(limit):
                if excluded[k]:
                    for c in range(width):
                        ties_max[c] += most[c] == 0.0
                        ties_min[c] += least[c] == 1.0
                else:
                    for c in range(width):
                        v = row[k, c]
                        ties_max[c] += v == most[c]
                        ties_min[c] += v == least[c]
            for c in range(width):
                share_max[c] = grad[b, pair, c] / ties_max[c]
                share_min[c] = grad[b, pair, width + c] / ties_min[c]
            for k in range(limit):
                if excluded[k]:
                    continue
                nonzero = False
                for c in range(width):
                    v = row[k, c]
                    g[c] = (share_max[c] if v == most[c] else 0.0) + (share_min[c] if v == least[c] else 0.0)
                    pre[c] = g[c] * (one - v) * v
                    nonzero = nonzero or pre[c] != 0.0
                if not nonzero:
                    continue
                digits[2] = k
                add_bias_and_expand_shares(b, digits, pre, n, has_small, grad_bias, small)
                if inputs == 0:
                    continue
                for c in range(width):
                    shares[entries, c] = pre[c]
                for p in range(perms):
                    source = b * x.shape[1] + digits[0] * strides[p, 0] + digits[1] * strides[p, 1] + \
                        k * strides[p, 2]
                    sources[entries, p] = source
                    if inputs == ROW:
                        copy_row(gathered, (entries * perms + p) * ROW, x, source * ROW)
                    else:
                        for q in range(inputs):
                            gathered[entries, p * inputs + q] = x[b, source - b * x.shape[1], q]
                entries += 1
                if entries == TIED_ENTRIES:
                    add_tied_products(entries, shares, gathered, sources, w_by_share, products_w, products_x,
                                      grad_x, grad_w, one)
                    entries = 0
        if entries:  # a state's entries scattered while its rows are in the caches
            add_tied_products(entries, shares, gathered, sources, w_by_share, products_w, products_x, grad_x,
                              grad_w, one)
            entries = 0
