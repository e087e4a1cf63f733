"""Compiled per-element kernels (numba) for the CDF of the Truncated Normal on the CPU, forward and backward.

The torch route's formulas (tnlib.distributions._statistics: _cdf_canonical, _sf_canonical, _cdf_grads and
_frame_cdf_slope), one pass per element in its own regime, float64 inside: in the frame the mass below the value is
the frame integral J(a, d) over M0 (a difference of erf's near the mode), the mass above it a frame integral from
the value (a mirrored element's CDF is that survival function, which keeps a tiny value's relative accuracy);
straddling elements take differences of Phi, and within a short stretch of a bound the frame integral from that
bound. The frame mass takes 16 Gauss-Legendre nodes on every element (the torch route takes fewer where the
batch's widest exponent range allows: the same value to rounding).
"""
from __future__ import annotations

import math

import numba
import numpy as np
import torch

from tnlib.distributions._kernels import _ERFCX, _NODES, _WEIGHTS, _flat, _mills_element, _ndtr_element, _threads
from tnlib.distributions._moment_kernels import (
    _PARALLEL_FROM,
    _WIDE_PANELS,
    _exact_state,
    _frame_moments_element,
    _is_narrow,
)
from tnlib.distributions._regimes import _LOG_SQRT_2PI, _SQRT_HALF


@numba.njit(cache=True, error_model="numpy")
def _frame_mass_element(a, d, nodes, weights):
    """J(a, d) by one panel of Gauss-Legendre, cut where the integrand is below exp(-45) of its peak (a >= 0)."""
    top = min(d, 90.0 / (math.sqrt(a * a + 90.0) + a)) if a >= 0 else d
    mass = 0.0
    for j in range(nodes.shape[0]):
        s = top * nodes[j]
        mass += math.exp(-s * (a + 0.5 * s)) * weights[j]
    return mass * top


@numba.njit(cache=True, error_model="numpy")
def _frame_integral_element(a, d, table, nodes, weights):
    """J(a, d) = int_0^d exp(-a r - r^2/2) dr for a >= 0 or narrow (a, d), d possibly infinite (_frame_integral)."""
    if _is_narrow(a, d):
        return _frame_mass_element(a, d, nodes, weights)
    if a < 0:  # wide with a < 0 happens only for moderate |a|: a difference of Phi's
        return (_ndtr_element(a + d) - _ndtr_element(a)) * math.exp(0.5 * a * a + _LOG_SQRT_2PI)
    closed = _mills_element(a, table)
    if not math.isinf(d):
        closed -= math.exp(-d * (a + 0.5 * d)) * _mills_element(a + d, table)
    return closed


@numba.njit(cache=True, error_model="numpy")
def _straddle_masses_element(x, t, a, b, c_low, c_high, scale, log_z, p_a, p_b, nodes, weights):
    """The masses below and above x of a straddling element, each relatively exact (_straddle_masses)."""
    z = math.exp(log_z)
    lower = (_ndtr_element(t) - _ndtr_element(a)) / z
    upper = (_ndtr_element(-t) - _ndtr_element(-b)) / z
    length = (x - c_low) / scale
    if not math.isinf(a) and _is_narrow(a, length):
        lower = p_a * _frame_mass_element(a, length, nodes, weights)
    length = (c_high - x) / scale
    if not math.isinf(b) and _is_narrow(-b, length):
        upper = p_b * _frame_mass_element(-b, length, nodes, weights)
    return lower, upper


@numba.njit(cache=True, error_model="numpy")
def _canonical_cdf(x, survival, c_loc, c_low, c_high, scale, a, b, frame, log_norm, first, p_a, p_b, table, nodes,
                   weights):
    """The canonical CDF (or, with ``survival``, 1 - CDF) at x, clamped into the support."""
    x = min(max(x, c_low), c_high)
    if frame:
        d = (x - c_low) / scale
        if survival:
            rest = (c_high - x) / scale
            value = (_frame_integral_element(a + d, rest, table, nodes, weights)
                     * math.exp(-d * (a + 0.5 * d) - log_norm))
        elif 0.0 <= a <= 1.0 and 8.0 * d >= a:  # near the mode: the difference of erf's cancels at most 3 bits
            log_z = -0.5 * a * a - _LOG_SQRT_2PI + log_norm
            value = 0.5 * (math.erf((a + d) * _SQRT_HALF) - math.erf(a * _SQRT_HALF)) / math.exp(log_z)
        else:
            value = _frame_integral_element(a, d, table, nodes, weights) * math.exp(-log_norm)
    else:
        t = (x - c_loc) / scale
        lower, upper = _straddle_masses_element(x, t, a, b, c_low, c_high, scale, log_norm, p_a, p_b, nodes,
                                                weights)
        if survival:
            value = 1.0 - lower if t <= 0 else upper
        else:
            value = lower if t <= 0 else 1.0 - upper
    return min(max(value, 0.0), 1.0)


@numba.njit(cache=True, error_model="numpy")
def _cdf_element(value, loc, scale, low, high, table, nodes, weights):
    (flip, c_loc, c_low, c_high, a, b, w, frame, log_norm, first, p_a, p_b) = _exact_state(
        loc, scale, low, high, table, nodes, weights)
    # a mirrored element's CDF is the canonical survival function at the mirrored value, computed as such
    x = -value if flip else value
    return _canonical_cdf(x, flip, c_loc, c_low, c_high, scale, a, b, frame, log_norm, first, p_a, p_b, table,
                          nodes, weights)


@numba.njit(cache=True, error_model="numpy")
def _frame_slope_element(x, d, t, cdf, a, w, c_high, scale, log_m0, d_mean, nodes, weights):
    """dF/da at fixed d and w of a frame element (_frame_cdf_slope): F (D - D_head) at or below the mean, else
    (1 - F) (d - D + D_tail) with 1 - F from the tail's own mass."""
    if 0.0 < d <= d_mean:
        _, d_head, _, _ = _frame_moments_element(a, d, _WIDE_PANELS, nodes, weights)
        return cdf * (d_mean - d_head)
    if d > d_mean and x < c_high:
        m0_tail, d_tail, _, _ = _frame_moments_element(t, (c_high - x) / scale, _WIDE_PANELS, nodes, weights)
        return m0_tail * math.exp(-d * (a + 0.5 * d) - log_m0) * (d - d_mean + d_tail)
    return 0.0


@numba.njit(cache=True, error_model="numpy")
def _cdf_gradient_element(value, loc, scale, low, high, table, nodes, weights):
    """dF / d(value, loc, scale, low, high) of one element, 0 outside the support (_cdf_grads)."""
    (flip, c_loc, c_low, c_high, a, b, w, frame, log_norm, first, p_a, p_b) = _exact_state(
        loc, scale, low, high, table, nodes, weights)
    c_value = -value if flip else value
    if c_value < c_low or c_value > c_high:
        return 0.0, 0.0, 0.0, 0.0, 0.0
    cdf = _canonical_cdf(c_value, False, c_loc, c_low, c_high, scale, a, b, frame, log_norm, first, p_a, p_b,
                         table, nodes, weights)
    x = c_value
    d = (x - c_low) / scale
    t = (x - c_loc) / scale
    no_a, no_b = p_a == 0.0, p_b == 0.0
    f_a = 0.0 if no_a else -p_a * (1.0 - cdf)
    f_b = 0.0 if no_b else -p_b * cdf
    if frame:
        fr_a = _frame_slope_element(x, d, t, cdf, a, w, c_high, scale, log_norm, first, nodes, weights)
        fr_d = math.exp(-d * (a + 0.5 * d) - log_norm)
        spread = a * fr_a + d * fr_d + (0.0 if no_b else w * f_b)
        g_value, g_loc, g_low = fr_d, -fr_a, fr_a - fr_d - f_b
    else:
        f_t = math.exp(-0.5 * t * t - _LOG_SQRT_2PI - log_norm)
        spread = t * f_t + (0.0 if no_a else a * f_a) + (0.0 if no_b else b * f_b)
        g_value, g_loc, g_low = f_t, -(f_t + f_a + f_b), f_a
    g_value, g_loc, g_scale, g_low, g_high = (g_value / scale, g_loc / scale, -spread / scale, g_low / scale,
                                              f_b / scale)
    if flip:  # odd under the mirror
        return g_value, g_loc, -g_scale, g_high, g_low
    return g_value, g_loc, g_scale, g_low, g_high


@numba.njit(cache=True, error_model="numpy")
def _cdf_serial(value, loc, scale, low, high, out, table, nodes, weights):
    for i in range(out.shape[0]):
        out[i] = _cdf_element(np.float64(value[i]), np.float64(loc[i]), np.float64(scale[i]), np.float64(low[i]),
                              np.float64(high[i]), table, nodes, weights)


@numba.njit(cache=True, parallel=True, error_model="numpy")
def _cdf_parallel(value, loc, scale, low, high, out, table, nodes, weights):
    for i in numba.prange(out.shape[0]):
        out[i] = _cdf_element(np.float64(value[i]), np.float64(loc[i]), np.float64(scale[i]), np.float64(low[i]),
                              np.float64(high[i]), table, nodes, weights)


@numba.njit(cache=True, error_model="numpy")
def _write_cdf_gradients(i, grad, value, loc, scale, low, high, outs, table, nodes, weights):
    derivatives = _cdf_gradient_element(np.float64(value[i]), np.float64(loc[i]), np.float64(scale[i]),
                                        np.float64(low[i]), np.float64(high[i]), table, nodes, weights)
    gr = np.float64(grad[i])
    for k in range(5):
        if outs[k].shape[0] > 0:
            outs[k][i] = gr * derivatives[k]


@numba.njit(cache=True, error_model="numpy")
def _cdf_gradients_serial(grad, value, loc, scale, low, high, outs, table, nodes, weights):
    """grad times each derivative; an output of length 0 is not wanted and not written."""
    for i in range(grad.shape[0]):
        _write_cdf_gradients(i, grad, value, loc, scale, low, high, outs, table, nodes, weights)


@numba.njit(cache=True, parallel=True, error_model="numpy")
def _cdf_gradients_parallel(grad, value, loc, scale, low, high, outs, table, nodes, weights):
    for i in numba.prange(grad.shape[0]):
        _write_cdf_gradients(i, grad, value, loc, scale, low, high, outs, table, nodes, weights)


_CONSTANTS = (_ERFCX, _NODES, _WEIGHTS)


def _cdf_values(value, loc, scale, low, high) -> torch.Tensor:
    arrays = [_flat(t) for t in (value, loc, scale, low, high)]
    out = np.empty(tuple(loc.shape), dtype=arrays[1].dtype)  # in its shape: cheaper than a torch reshape
    flat = out.reshape(-1)
    if flat.shape[0] >= _PARALLEL_FROM:
        _threads()
        _cdf_parallel(*arrays, flat, *_CONSTANTS)
    else:
        _cdf_serial(*arrays, flat, *_CONSTANTS)
    return torch.from_numpy(out)


def cdf(value: torch.Tensor, loc: torch.Tensor, scale: torch.Tensor, low: torch.Tensor,
        high: torch.Tensor) -> torch.Tensor:
    """The CDF at ``value`` of TN(loc, scale, low, high), all five CPU tensors of one shape and dtype; through
    :class:`KernelCDF` where a gradient may be asked for, else straight from the kernel."""
    tensors = (value, loc, scale, low, high)
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return KernelCDF.apply(*tensors)
    return _cdf_values(*tensors)


class KernelCDF(torch.autograd.Function):
    """cdf(value) of TN(loc, scale, low, high), all five of one shape, forward and backward by the kernels."""

    @staticmethod
    def forward(ctx, value, loc, scale, low, high):
        ctx.save_for_backward(value, loc, scale, low, high)
        return _cdf_values(value, loc, scale, low, high)

    @staticmethod
    def backward(ctx, grad):
        if torch.is_grad_enabled():
            raise RuntimeError(
                "TruncatedNormal: only first derivatives are implemented; backward with create_graph=True "
                "(second derivatives, Hessians, gradient penalties) is not supported")
        arrays = [_flat(t) for t in ctx.saved_tensors]
        outs = [np.empty(tuple(grad.shape) if need else 0, dtype=arrays[1].dtype) for need in ctx.needs_input_grad]
        flats = tuple(o.reshape(-1) for o in outs)
        if arrays[0].shape[0] >= _PARALLEL_FROM:
            _threads()
            _cdf_gradients_parallel(_flat(grad), *arrays, flats, *_CONSTANTS)
        else:
            _cdf_gradients_serial(_flat(grad), *arrays, flats, *_CONSTANTS)
        return tuple(torch.from_numpy(o) if need else None for o, need in zip(outs, ctx.needs_input_grad))
