"""The NLM kernels' row intrinsics (tnlib.learning.nlm_rows) against the scalar loops they stand for, bit for bit."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from tnlib.learning.nlm_rows import (ROW, add_scaled_row, add_tied_shares_row, copy_row, count_ties_row, extrema_row,
                                     scatter_source_row, sum_rows, sum_rows_with_extrema)


@njit
def _add_scaled_rows(target, at, source, source_at, scales):
    for e in range(scales.shape[0]):
        add_scaled_row(target, at, source, source_at + e * ROW, scales[e])


@njit
def _add_scaled_rows_by_loop(target, at, source, source_at, scales):
    flat_target, flat_source = target.reshape(-1), source.reshape(-1)
    for e in range(scales.shape[0]):
        for k in range(ROW):
            flat_target[at + k] += scales[e] * flat_source[source_at + e * ROW + k]


@njit
def _widen(target, at, source, source_at):
    copy_row(target, at, source, source_at)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_add_scaled_row_adds_the_products_of_the_scalar_loop_bit_for_bit_at_its_row_alone(dtype):
    rng = np.random.default_rng(0)
    target = rng.standard_normal((3, 5, ROW)).astype(dtype)
    source = rng.standard_normal((6, ROW)).astype(dtype)
    scales = rng.standard_normal(5).astype(dtype)
    expected = target.copy()
    _add_scaled_rows_by_loop(expected, 7 * ROW, source, ROW, scales)
    _add_scaled_rows(target, 7 * ROW, source, ROW, scales)
    assert np.array_equal(target, expected)
    untouched = np.ones(target.size, dtype=bool)
    untouched[7 * ROW:8 * ROW] = False
    assert np.array_equal(target.reshape(-1)[untouched], expected.reshape(-1)[untouched])


@pytest.mark.parametrize("source_dtype", [np.float32, np.float64])
def test_copy_row_copies_eight_values_into_float64(source_dtype):
    rng = np.random.default_rng(1)
    source = rng.standard_normal((4, ROW)).astype(source_dtype)
    target = np.full(3 * ROW, np.nan)
    _widen(target, ROW, source, 2 * ROW)
    assert np.array_equal(target[ROW:2 * ROW], source[2].astype(np.float64))
    assert np.isnan(target[:ROW]).all() and np.isnan(target[2 * ROW:]).all()


@njit
def _sum_rows(target, at, a, b, c, d):
    sum_rows(target, at, a, 0, b, ROW, c, 2 * ROW, d, 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sum_rows_adds_four_rows_left_to_right_bit_for_bit(dtype):
    rng = np.random.default_rng(2)
    # magnitudes far apart, so that another order of the adds rounds otherwise
    a, d = (rng.standard_normal(ROW) * 1e8).astype(dtype), (rng.standard_normal(ROW) * 1e-8).astype(dtype)
    b, c = rng.standard_normal(3 * ROW).astype(dtype), rng.standard_normal(3 * ROW).astype(dtype)
    target = np.zeros(2 * ROW, dtype)
    _sum_rows(target, ROW, a, b, c, d)
    expected = ((a + b[ROW:2 * ROW]) + c[2 * ROW:]) + d
    assert np.array_equal(target[ROW:], expected)
    assert not np.array_equal(target[ROW:], a + (b[ROW:2 * ROW] + (c[2 * ROW:] + d)))
    assert np.array_equal(target[:ROW], np.zeros(ROW, dtype))


@njit
def _extrema_rows(most, least, values):
    for k in range(values.shape[0]):
        extrema_row(most, 0, least, ROW, values, k * ROW)


@njit
def _extrema_by_builtins(most, least, values):
    for k in range(values.shape[0]):
        for c in range(ROW):
            most[c] = max(most[c], values[k, c])
            least[c] = min(least[c], values[k, c])


def test_extrema_row_keeps_what_numbas_max_and_min_keep_signed_zeros_and_nans_included():
    rng = np.random.default_rng(3)
    values = rng.standard_normal((6, ROW)).astype(np.float32)
    values[2, :3] = [0.0, -0.0, np.nan]
    values[4, :3] = [-0.0, 0.0, 1.0]
    kept = np.full(2 * ROW, np.nan, np.float32)
    kept[:ROW], kept[ROW:] = -np.inf, np.inf
    most, least = kept[:ROW].copy(), kept[ROW:].copy()
    _extrema_rows(kept, kept, values)
    _extrema_by_builtins(most, least, values)
    assert np.array_equal(np.signbit(kept[:ROW]), np.signbit(most))
    assert np.array_equal(kept[:ROW], most, equal_nan=True)
    assert np.array_equal(kept[ROW:], least, equal_nan=True)
    assert np.array_equal(np.signbit(kept[ROW:]), np.signbit(least))
    assert (kept[:ROW] == values.max(0))[3:].all()


@njit
def _sum_rows_with_extrema_by_rows(target, at, first, second, third, fourth, count, extrema, extrema_at):
    for t in range(count):
        sum_rows(target, at + t * ROW, first, t * ROW, second, 0, third, ROW + t * ROW, fourth, 2 * ROW + t * ROW)
        extrema_row(extrema, extrema_at, extrema, extrema_at + ROW, target, at + t * ROW)


@njit
def _sum_rows_with_extrema(target, at, first, second, third, fourth, count, extrema, extrema_at):
    sum_rows_with_extrema(target, at, first, 0, second, third, ROW, fourth, 2 * ROW, count, extrema, extrema_at)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("count", [0, 1, 8])
def test_sum_rows_with_extrema_equals_sum_rows_then_extrema_row_bit_for_bit(dtype, count):
    rng = np.random.default_rng(7)
    first = (rng.standard_normal((8, ROW)) * 1e8).astype(dtype)  # magnitudes far apart: order shows in rounding
    second = rng.standard_normal(ROW).astype(dtype)
    third = rng.standard_normal((10, ROW)).astype(dtype)
    fourth = (rng.standard_normal((11, ROW)) * 1e-8).astype(dtype)
    first[1, :3], third[2, :3], fourth[3, :3] = [0.0, -0.0, np.nan], [-0.0, 0.0, 1.0], [-0.0, -0.0, 0.0]
    second[:3] = [-0.0, 0.0, -0.0]
    first[5] = -first[4]  # sums equal in some channels: ties between rows
    third[6], fourth[7], second[4] = third[5], fourth[6], 0.0
    start = rng.standard_normal((3, 2 * ROW)).astype(dtype)
    start[1, :ROW], start[1, ROW:] = -np.inf, np.inf
    start[1, 4] = np.nan
    outcomes = []
    for kernel in (_sum_rows_with_extrema_by_rows, _sum_rows_with_extrema):
        target, extrema = np.full((10, ROW), 5.0, dtype), start.copy()
        kernel(target, ROW, first, second, third, fourth, count, extrema, 2 * ROW)
        outcomes.append((target, extrema))
    (target, extrema), (fused_target, fused_extrema) = outcomes
    assert np.array_equal(fused_target, target, equal_nan=True)
    assert np.array_equal(np.signbit(fused_target), np.signbit(target))
    assert np.array_equal(fused_extrema, extrema, equal_nan=True)
    assert np.array_equal(np.signbit(fused_extrema), np.signbit(extrema))
    assert np.array_equal(target[1 + count:], np.full((9 - count, ROW), 5.0, dtype))
    if count:
        assert np.array_equal(extrema[1, :ROW][5:], target[1:1 + count, 5:].max(0))


@njit
def _count_ties(ties_most, ties_least, values, most, least):
    for k in range(values.shape[0]):
        count_ties_row(ties_most, ties_least, values, k * ROW, most, least)


def test_count_ties_row_counts_the_values_equal_to_each_extremum():
    rng = np.random.default_rng(4)
    values = rng.integers(0, 3, (7, ROW)).astype(np.float32)
    most, least = values.max(0), values.min(0)
    ties_most, ties_least = np.full(ROW, 2.0, np.float32), np.zeros(ROW, np.float32)
    _count_ties(ties_most, ties_least, values, most, least)
    assert np.array_equal(ties_most, 2 + (values == most).sum(0))
    assert np.array_equal(ties_least, (values == least).sum(0))


@njit
def _add_tied_shares(target, values, most, least, share_most, share_least):
    for k in range(values.shape[0]):
        add_tied_shares_row(target, k * ROW, values, k * ROW, most, least, share_most, share_least)


@njit
def _add_tied_shares_by_loop(target, values, most, least, share_most, share_least):
    zero = values.dtype.type(0)  # in the arrays' dtype, as the kernels' scalar loops add
    for k in range(values.shape[0]):
        for c in range(ROW):
            v = values[k, c]
            target[k, c] += (share_most[c] if v == most[c] else zero) + (share_least[c] if v == least[c] else zero)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_add_tied_shares_row_adds_the_scalar_loops_shares_bit_for_bit(dtype):
    rng = np.random.default_rng(5)
    values = rng.integers(0, 3, (6, ROW)).astype(dtype)
    values[:, 0] = 1.0  # a constant channel: every value ties both extrema
    most, least = values.max(0), values.min(0)
    shares = rng.standard_normal((2, ROW)).astype(dtype)
    target = rng.standard_normal((6, ROW)).astype(dtype)
    expected = target.copy()
    _add_tied_shares(target, values, most, least, shares[0], shares[1])
    _add_tied_shares_by_loop(expected, values, most, least, shares[0], shares[1])
    assert np.array_equal(target, expected)
    assert not np.array_equal(target, expected - np.where(values == most, shares[0], 0))


@njit
def _scatter_by_rows(grad_x, x_at, x, w, grad_w, pre, channels, count, first_row):
    wide_x = np.empty(ROW, grad_w.dtype)
    copy_row(wide_x, 0, x, x_at)
    for e in range(count):
        c = channels[e]
        row = first_row + c
        add_scaled_row(grad_x, x_at, w, row * ROW, pre[c])
        add_scaled_row(grad_w, row * ROW, wide_x, 0, grad_w.dtype.type(pre[c]))


@njit
def _scatter_source_row(grad_x, x_at, x, w, grad_w, pre, channels, count, first_row):
    scatter_source_row(grad_x, x_at, x, w, grad_w, pre, channels, count, first_row)


@pytest.mark.parametrize("dtype, wide", [(np.float32, np.float64), (np.float64, np.float64)])
@pytest.mark.parametrize("count", [0, 1, 3])
def test_scatter_source_row_updates_both_gradients_as_add_scaled_row_does_bit_for_bit(dtype, wide, count):
    rng = np.random.default_rng(11)
    x = rng.standard_normal((4, ROW)).astype(dtype)
    w = (rng.standard_normal((3 * ROW, ROW)) * np.logspace(-6, 6, ROW)).astype(dtype)  # rounding shows any reorder
    pre = rng.standard_normal(ROW).astype(dtype)
    channels = np.array([6, 1, 6, 3], np.int64)  # a channel twice: its weight row updated twice in order
    start_x = (rng.standard_normal((4, ROW)) * 1e3).astype(dtype)
    start_w = (rng.standard_normal((3 * ROW, ROW)) * 1e3).astype(wide)
    results = []
    for kernel in (_scatter_by_rows, _scatter_source_row):
        grad_x, grad_w = start_x.copy(), start_w.copy()
        kernel(grad_x, 2 * ROW, x, w, grad_w, pre, channels, count, ROW)
        results.append((grad_x, grad_w))
    (grad_x, grad_w), (fused_x, fused_w) = results
    assert np.array_equal(fused_x, grad_x) and np.array_equal(fused_w, grad_w)
    changed_rows = {ROW + c for c in channels[:count]}
    assert {r for r in range(3 * ROW) if not np.array_equal(grad_w[r], start_w[r])} == changed_rows
    assert np.array_equal(np.delete(grad_x, 2, 0), np.delete(start_x, 2, 0))
    assert np.array_equal(grad_x[2], start_x[2]) == (count == 0)

