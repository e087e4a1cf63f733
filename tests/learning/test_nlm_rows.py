"""The NLM kernels' row intrinsics (tnlib.learning.nlm_rows) against the scalar loops they stand for, bit for bit."""
from __future__ import annotations

import numpy as np
import pytest
from numba import njit

from tnlib.learning.nlm_rows import ROW, add_scaled_row, widen_row


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
    widen_row(target, at, source, source_at)


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
def test_widen_row_copies_eight_values_into_float64(source_dtype):
    rng = np.random.default_rng(1)
    source = rng.standard_normal((4, ROW)).astype(source_dtype)
    target = np.full(3 * ROW, np.nan)
    _widen(target, ROW, source, 2 * ROW)
    assert np.array_equal(target[ROW:2 * ROW], source[2].astype(np.float64))
    assert np.isnan(target[:ROW]).all() and np.isnan(target[2 * ROW:]).all()
