"""The compiled CPU kernels (tnlib.distributions._log_prob_kernels, _moment_kernels, _cdf_elements, _cdf_passes)
against the torch route they stand in for."""
from __future__ import annotations

import math
import os
import subprocess
import sys

import mpmath as mp
import numba
import numpy as np
import pytest
import torch

from test_truncated_normal import GRID, _points
from tnlib import TruncatedNormal
from tnlib.distributions import _vector_math
from tnlib.distributions._autograd import (
    _CDF,
    _ICDF,
    _Entropy,
    _FastLogProb,
    _FastMean,
    _LogProb,
    _Mean,
    _Variance,
)
from tnlib.distributions._cdf_elements import _cdf_gradients_serial, _cdf_serial
from tnlib.distributions._cdf_dispatch import _CONSTANTS as _CDF_CONSTANTS
from tnlib.distributions._cdf_dispatch import KernelCDF
from tnlib.distributions._cdf_passes import _cdf_gradients_vector_serial, _cdf_vector_parallel, _cdf_vector_serial
from tnlib.distributions._cdf_vector import (
    CDF_KINDS,
    _ndtr_lower,
    _short_stretch,
    _short_stretch_mass,
    _stretch,
    _stretch_moments,
    cdf_element,
    classify_cdf,
)
from tnlib.distributions._regimes import _SQRT_HALF
from tnlib.distributions._kernels import _BLOCK, _CHUNK, _PARALLEL_FROM
from tnlib.distributions._log_prob_kernels import (
    _CONSTANTS,
    KernelLogProb,
    _log_prob_element,
    _log_prob_parallel,
    _log_prob_serial,
)
from tnlib.distributions._moment_kernels import (
    MEAN,
    STATISTIC_CODES,
    KernelStatistic,
    _gradient_element,
    _gradients_block,
    _statistic_block,
    _value_element,
)
from tnlib.distributions._moment_kernels import _CONSTANTS as _MOMENT_CONSTANTS
from tnlib.files import REPO_ROOT


def _grid_batch(dtype: torch.dtype) -> list[torch.Tensor]:
    """(value, loc, scale, low, high) over every regime of the grid, a few points inside each, and one outside."""
    rows = []
    for params in GRID:
        points = _points(*params)
        loc, scale, low, high = params
        outside = low - scale if low > -math.inf else high + scale
        rows += [(x, *params) for x in points + [outside] if math.isfinite(x)]
    return [torch.tensor(column, dtype=dtype) for column in zip(*rows)]


def _both_routes(tensors: list[torch.Tensor]):
    """log_prob and its five gradients, by the kernels and by the torch route."""
    results = []
    for route in ("kernels", "torch"):
        leaves = [t.clone().requires_grad_() for t in tensors]
        if route == "kernels":
            lp = KernelLogProb.apply(*leaves)
        else:
            d = TruncatedNormal(*leaves[1:], validate_args=False)
            lp = _LogProb.apply(leaves[0], *leaves[1:], d._core)
        grads = torch.autograd.grad(lp.sum(), leaves)
        results.append((lp.detach(), grads))
    return results


def test_log_prob_and_its_gradients_equal_the_torch_route_in_every_regime():
    tensors = _grid_batch(torch.float64)
    (lp, grads), (lp_ref, grads_ref) = _both_routes(tensors)
    assert torch.equal(torch.isinf(lp), torch.isinf(lp_ref))
    finite = torch.isfinite(lp_ref)
    assert int(finite.sum()) > len(GRID)  # (the batch holds values inside every support)
    error = (lp - lp_ref)[finite].abs() / lp_ref[finite].abs().clamp_min(1.0)
    assert float(error.max()) <= 1e-13
    scale = tensors[2]
    for name, g, g_ref in zip(("value", "loc", "scale", "low", "high"), grads, grads_ref):
        # derivatives times scale are dimensionless; a derivative that vanishes is compared against 1
        error = (g - g_ref).abs() * scale / (g_ref.abs() * scale).clamp_min(1.0)
        worst = int(error.argmax())
        assert float(error[worst]) <= 1e-9, (name, [float(t[worst]) for t in tensors], float(g[worst]),
                                             float(g_ref[worst]))


def test_float32_log_prob_is_the_float64_value_rounded():
    tensors = _grid_batch(torch.float32)
    lp32 = KernelLogProb.apply(*tensors)
    lp64 = KernelLogProb.apply(*(t.double() for t in tensors))
    finite = torch.isfinite(lp64)
    assert torch.equal(finite, torch.isfinite(lp32))
    ulps = np.spacing(lp64[finite].abs().float().clamp_min(1.0).numpy()).astype(np.float64)
    assert float(((lp32[finite].double() - lp64[finite]).abs().numpy() / ulps).max()) <= 1.0


def test_gradcheck_of_the_kernels():
    # one element per regime: straddling, right frame, far tail, two-sided, mirrored, narrow
    params = [(0.5, 0.0, 1.0, 0.0, math.inf), (1.0, -2.0, 1.0, 0.5, math.inf), (0.1, -30.0, 1.0, 0.0, math.inf),
              (1.5, 0.0, 2.0, 1.0, 3.0), (-1.0, 20.0, 1.0, -math.inf, 0.0), (7.0000005, 7.0, 1.0, 7.0, 7.000001)]
    columns = [torch.tensor(c, dtype=torch.float64) for c in zip(*params)]
    finite = [torch.where(torch.isinf(c), torch.zeros_like(c), c) for c in columns]

    def log_prob(value, loc, scale, low, high):
        # infinite bounds stay fixed (their derivative is 0 and a finite difference of them undefined)
        low = torch.where(torch.isinf(columns[3]), columns[3], low)
        high = torch.where(torch.isinf(columns[4]), columns[4], high)
        return KernelLogProb.apply(value, loc, scale, low, high)

    inputs = [c.clone().requires_grad_() for c in finite]
    assert torch.autograd.gradcheck(log_prob, inputs, eps=1e-9, atol=1e-6, rtol=1e-5)


def test_cpu_log_prob_takes_the_kernels():
    d = TruncatedNormal(torch.zeros(3), torch.ones(3), torch.zeros(3), torch.full((3,), math.inf))
    lp = d.log_prob(torch.ones(3).requires_grad_())
    assert lp.grad_fn is not None and type(lp.grad_fn).__name__ == "KernelLogProbBackward"


TORCH_ROUTE = {"mean": _Mean, "variance": _Variance, "entropy": _Entropy}


def _statistic_and_gradients(name: str, route, columns: list[torch.Tensor]):
    leaves = [c.clone().requires_grad_() for c in columns]
    if route is KernelStatistic:
        value = KernelStatistic.apply(*leaves, STATISTIC_CODES[name])
    else:
        d = TruncatedNormal(*leaves, validate_args=False)
        value = route.apply(*leaves, d._fast if route is _FastMean else d._core)
    return value.detach(), torch.autograd.grad(value.sum(), leaves)


def _natural_sizes(name: str, scale: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The size of the statistic and of its derivatives w.r.t. (loc, scale, low, high) that rounding is relative
    to: the mean moves with loc (derivatives of order 1), the variance as scale^2 (derivatives of order scale), the
    entropy as log scale (derivatives of order 1/scale)."""
    ones = torch.ones_like(scale)
    return {"mean": (scale, ones), "variance": (scale.square(), scale), "entropy": (ones, 1.0 / scale)}[name]


@pytest.mark.parametrize("name", TORCH_ROUTE)
def test_mean_variance_and_entropy_and_their_gradients_equal_the_torch_route_in_every_regime(name):
    columns = [torch.tensor(c, dtype=torch.float64) for c in zip(*GRID)]
    value, grads = _statistic_and_gradients(name, KernelStatistic, columns)
    value_ref, grads_ref = _statistic_and_gradients(name, TORCH_ROUTE[name], columns)
    value_size, grad_size = _natural_sizes(name, columns[1])
    error = (value - value_ref).abs() / torch.maximum(value_ref.abs(), 1e-300 * value_size)
    if name == "entropy":  # a logarithm: relative to max(1, |H|) in units of log scale
        error = (value - value_ref).abs() / value_ref.abs().clamp_min(1.0)
    worst = int(error.argmax())
    assert float(error[worst]) <= 1e-14, (GRID[worst], float(value[worst]), float(value_ref[worst]))
    for argument, g, g_ref in zip(("loc", "scale", "low", "high"), grads, grads_ref):
        error = (g - g_ref).abs() / torch.maximum(g_ref.abs(), grad_size)
        worst = int(error.argmax())
        assert float(error[worst]) <= 1e-12, (argument, GRID[worst], float(g[worst]), float(g_ref[worst]))


def test_one_sided_mean_and_its_gradients_equal_the_fast_torch_route():
    one_sided = [params for params in GRID if params[3] == math.inf]
    columns = [torch.tensor(c, dtype=torch.float64) for c in zip(*one_sided)]
    value, grads = _statistic_and_gradients("mean", KernelStatistic, columns)
    value_ref, grads_ref = _statistic_and_gradients("mean", _FastMean, columns)
    assert float(((value - value_ref).abs() / torch.maximum(value_ref.abs(), columns[1])).max()) <= 1e-14
    for g, g_ref in zip(grads, grads_ref):
        assert float(((g - g_ref).abs() / g_ref.abs().clamp_min(1.0)).max()) <= 1e-12


@pytest.mark.parametrize("name", TORCH_ROUTE)
def test_float32_statistics_are_the_float64_values_rounded_once(name):
    # (a few-ulp float64 interval collapses to a point in float32: not a distribution)
    rows = [params for params in GRID if np.float32(params[2]) < np.float32(params[3])]
    columns = [torch.tensor(c, dtype=torch.float32) for c in zip(*rows)]
    value32 = KernelStatistic.apply(*columns, STATISTIC_CODES[name])
    value64 = KernelStatistic.apply(*(c.double() for c in columns), STATISTIC_CODES[name])
    assert value32.dtype == torch.float32 and torch.equal(value32, value64.float())


@pytest.mark.parametrize("name", TORCH_ROUTE)
def test_statistics_of_a_batch_split_among_threads_equal_the_serial_loop(name):
    columns = [torch.tensor(c, dtype=torch.float64) for c in zip(*GRID)]
    copies = -(-_PARALLEL_FROM // len(GRID))  # the batch is long enough for the threaded loop
    serial, serial_grads = _statistic_and_gradients(name, KernelStatistic, columns)
    threaded, threaded_grads = _statistic_and_gradients(name, KernelStatistic, [c.repeat(copies) for c in columns])
    assert torch.equal(threaded, serial.repeat(copies))
    for g, g_serial in zip(threaded_grads, serial_grads):
        assert torch.equal(g, g_serial.repeat(copies))


def test_cpu_statistics_take_the_kernels_and_skip_autograd_without_gradients():
    loc = torch.tensor([-3.0, 0.0, 2.0], requires_grad=True)
    d = TruncatedNormal(loc, torch.ones(3), torch.zeros(3), torch.tensor([math.inf, 1.0, math.inf]))
    with_graph = (d.mean, d.variance, d.entropy(), d.cdf(torch.full((3,), 0.5)))
    assert [type(s.grad_fn).__name__ for s in with_graph] == ["KernelStatisticBackward"] * 3 + ["KernelCDFBackward"]
    with torch.no_grad():
        without = (d.mean, d.variance, d.entropy(), d.cdf(torch.full((3,), 0.5)))
    assert all(s.grad_fn is None for s in without)
    assert all(torch.equal(s, t.detach()) for s, t in zip(without, with_graph))


def test_cdf_and_its_gradients_equal_the_torch_route_in_every_regime():
    tensors = _grid_batch(torch.float64)
    results = []
    for route in (KernelCDF, _CDF):
        leaves = [t.clone().requires_grad_() for t in tensors]
        if route is KernelCDF:
            cdf = KernelCDF.apply(*leaves)
        else:
            cdf = _CDF.apply(*leaves, TruncatedNormal(*leaves[1:], validate_args=False)._core)
        results.append((cdf.detach(), torch.autograd.grad(cdf.sum(), leaves)))
    (cdf, grads), (cdf_ref, grads_ref) = results
    error = torch.where(cdf == cdf_ref, 0.0, (cdf - cdf_ref).abs() / cdf_ref.abs())
    worst = int(error.argmax())
    assert float(error[worst]) <= 1e-14, ([float(t[worst]) for t in tensors], float(cdf[worst]))
    # each derivative relative to the density at the value or the bound (the size of the terms that cancel in a
    # derivative that vanishes, as d cdf / d low at the upper bound of an interval a few ulps wide), at least 1/scale
    size = torch.maximum(grads_ref[0].abs(), 1.0 / tensors[2])
    for name, g, g_ref in zip(("value", "loc", "scale", "low", "high"), grads, grads_ref):
        error = (g - g_ref).abs() / torch.maximum(g_ref.abs(), size)
        worst = int(error.argmax())
        assert float(error[worst]) <= 1e-12, (name, [float(t[worst]) for t in tensors], float(g[worst]),
                                              float(g_ref[worst]))


def test_float32_cdf_is_the_float64_value_rounded_once():
    tensors = _grid_batch(torch.float32)
    proper = tensors[3] < tensors[4]  # (a few-ulp float64 interval collapses to a point in float32)
    tensors = [t[proper] for t in tensors]
    cdf32 = KernelCDF.apply(*tensors)
    assert cdf32.dtype == torch.float32 and torch.equal(cdf32, KernelCDF.apply(*(t.double() for t in tensors)).float())


PROBABILITIES = (1e-300, 1e-30, 1e-6, 0.01, 0.3, 0.5, 0.7, 0.99, 1.0 - 1e-6, 1.0 - 1e-15)


def test_icdf_and_its_gradients_equal_the_torch_route_in_every_regime():
    rows = [(p, *params) for params in GRID for p in PROBABILITIES]
    tensors = [torch.tensor(column, dtype=torch.float64) for column in zip(*rows)]
    results = []
    for route in (KernelCDF, _ICDF):
        leaves = [t.clone().requires_grad_() for t in tensors]
        if route is KernelCDF:
            x = KernelCDF.apply(*leaves, True)
        else:
            x = _ICDF.apply(*leaves, TruncatedNormal(*leaves[1:], validate_args=False)._core)
        results.append((x.detach(), torch.autograd.grad(x.sum(), leaves)))
    (x, grads), (x_ref, grads_ref) = results
    # in ulps of the numbers x is formed from: itself, loc (about which straddling elements invert) and the bounds
    finite = [torch.where(torch.isinf(t), 0.0, t).abs() for t in tensors[1:]]
    size = torch.stack([x_ref.abs(), finite[0], finite[2], finite[3]]).amax(0)
    error = torch.where(x == x_ref, 0.0, (x - x_ref).abs() / size)
    worst = int(error.argmax())
    assert float(error[worst]) <= 1e-14, (rows[worst], float(x[worst]), float(x_ref[worst]))
    for name, g, g_ref in zip(("p", "loc", "scale", "low", "high"), grads, grads_ref):
        error = torch.where(g == g_ref, 0.0, (g - g_ref).abs() / g_ref.abs().clamp_min(1.0))
        worst = int(error.argmax())
        assert float(error[worst]) <= 1e-11, (name, rows[worst], float(g[worst]), float(g_ref[worst]))


def test_a_kernel_call_leaves_torchs_thread_count_as_it_was():
    # launching numba's OpenMP layer (the first parallel kernel of a process) sets the process's OpenMP thread count
    # to numba's maximum, which torch reads as its own: a process set to one thread must keep one
    code = ("import torch; from tnlib import TruncatedNormal; torch.set_num_threads(1); n = 5000; "
            "d = TruncatedNormal(torch.zeros(n), torch.ones(n), torch.zeros(n), torch.full((n,), float('inf'))); "
            "d.log_prob(torch.ones(n)); d.cdf(torch.ones(n)); d.sample(); print(torch.get_num_threads())")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("OMP_NUM_THREADS", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "1"


# ----------------------------------------------------------------------------------------------------------------
# The vectorizable log, exp and erfcx (tnlib.distributions._vector_math) the one-sided loss kernel is built from
# ----------------------------------------------------------------------------------------------------------------

@numba.njit
def _vector_log(x, out):
    for i in range(x.shape[0]):
        out[i] = _vector_math.log(x[i])


@numba.njit
def _vector_exp(x, out):
    for i in range(x.shape[0]):
        out[i] = _vector_math.exp(x[i])


@numba.njit
def _vector_expm1(x, out):
    for i in range(x.shape[0]):
        out[i] = _vector_math.expm1(x[i])


@numba.njit
def _vector_short_exp(x, out):
    for i in range(x.shape[0]):
        out[i] = _vector_math.short_exp(x[i])


@numba.njit
def _vector_cos_sin_turns(v, cos_out, sin_out):
    for i in range(v.shape[0]):
        cos_out[i], sin_out[i] = _vector_math.cos_sin_turns(v[i])


@numba.njit
def _vector_erfcx(x, out):
    for i in range(x.shape[0]):
        out[i] = _vector_math.erfcx(x[i])


def _ulps(got: np.ndarray, exact: list) -> np.ndarray:
    """|got - exact| in ulps of the exact value rounded to float64."""
    exact_float = np.array([float(e) for e in exact])
    return np.array([float(abs(mp.mpf(g) - e)) for g, e in zip(got, exact)]) / np.spacing(np.abs(exact_float))


def test_vector_log_and_exp_are_within_an_ulp_of_mpmath():
    rng = np.random.default_rng(0)
    x = np.concatenate([np.exp(rng.uniform(-700.0, 700.0, 2000)), rng.uniform(0.5, 2.0, 1000),
                        1.0 + rng.uniform(-1e-6, 1e-6, 200),
                        [2.2250738585072014e-308, 1.0, 2.0, 1.7976931348623157e308]])
    y = np.concatenate([rng.uniform(-708.0, 709.0, 2000), rng.uniform(-1.0, 1.0, 1000), [-708.0, 0.0, 709.0]])
    logs, exps = np.empty_like(x), np.empty_like(y)
    _vector_log(x, logs)
    _vector_exp(y, exps)
    with mp.workdps(40):
        assert float(_ulps(logs, [mp.log(mp.mpf(v)) for v in x]).max()) <= 1.0
        assert float(_ulps(exps, [mp.exp(mp.mpf(v)) for v in y]).max()) <= 1.0
    below = np.array([-708.5, -745.2, -1e5])
    _vector_exp(below, exps[:3])
    assert np.all(exps[:3] == 0.0)  # (under 2^-1021: 0, which the callers add to numbers of order 1)


def test_vector_expm1_is_within_two_ulps_of_mpmath():
    # the sampler's exponential proposal draws through expm1(-a w), from a narrow interval's -1e-16 to a far tail's
    # -1e5; either side of the series' end 1/2 and beyond
    rng = np.random.default_rng(1)
    magnitudes = np.exp(rng.uniform(-40.0, 6.5, 3000))
    x = np.concatenate([-magnitudes, magnitudes[:1000], rng.uniform(-0.6, 0.6, 1000),
                        [-0.5, 0.5, np.nextafter(-0.5, 0.0), np.nextafter(0.5, 0.0), -1e-300, 0.0, -700.0, 709.0]])
    got = np.empty_like(x)
    _vector_expm1(x, got)
    with mp.workdps(40):
        assert float(_ulps(got, [mp.expm1(mp.mpf(v)) for v in x]).max()) <= 2.0
    far = np.array([-708.5, -1e5, -np.inf])
    _vector_expm1(far, got[:3])
    assert np.all(got[:3] == -1.0)


def test_vector_short_exp_is_within_its_stated_error_of_mpmath():
    # the sampler's test of a uniform candidate across loc, v <= exp(-z^2/2), reads short_exp and leaves to exp the
    # candidates within twice SHORT_EXP_ERROR of it: over the range it is called on, the reduced argument's ends
    # (where the dropped terms are largest) and exp's floor
    rng = np.random.default_rng(3)
    half_ln2 = math.log(2.0) / 2.0
    ends = -(np.arange(1, 1000) * math.log(2.0))[:, None] + np.array([-half_ln2, half_ln2]) * (1.0 - 1e-12)
    x = np.concatenate([-np.exp(rng.uniform(-40.0, np.log(708.0), 3000)), rng.uniform(-2.0, 0.0, 1000),
                        ends.ravel()[ends.ravel() >= -708.0], [0.0, -708.0, -1e-300]])
    got = np.empty_like(x)
    _vector_short_exp(x, got)
    with mp.workdps(40):
        error = max(float(abs(mp.mpf(g) / mp.exp(mp.mpf(v)) - 1)) for g, v in zip(got, x))
    assert error <= _vector_math.SHORT_EXP_ERROR
    assert error >= _vector_math.SHORT_EXP_ERROR / 8  # (the stated bound is near the truth, not loose by far)


def test_vector_cos_and_sin_of_a_turns_fraction_are_within_two_ulps_of_mpmath():
    # the sampler's Normal pairs turn by 2 pi v, v a uniform in [0, 1): about each quarter turn, where the series
    # meet, and next to the values 0, which the quarter turns give exactly
    rng = np.random.default_rng(2)
    quarters = np.array([0.0, 0.25, 0.5, 0.75])
    near = (quarters[:, None] + rng.uniform(-1e-6, 1e-6, (4, 50))).ravel() % 1.0
    v = np.concatenate([rng.uniform(0.0, 1.0, 3000), near, [0.125, 0.375, 0.625, 0.875, 1.0 - 2.0 ** -53, 2.0 ** -53],
                        np.nextafter(quarters[1:] + 0.125, 0.0), np.nextafter(quarters + 0.125, 1.0)])
    cos_got, sin_got = np.empty_like(v), np.empty_like(v)
    _vector_cos_sin_turns(v, cos_got, sin_got)
    with mp.workdps(40):
        assert float(_ulps(cos_got, [mp.cos(2 * mp.pi * mp.mpf(x)) for x in v]).max()) <= 2.0
        assert float(_ulps(sin_got, [mp.sin(2 * mp.pi * mp.mpf(x)) for x in v]).max()) <= 2.0
    _vector_cos_sin_turns(quarters, cos_got[:4], sin_got[:4])
    assert np.array_equal(cos_got[:4], [1.0, 0.0, -1.0, 0.0]) and np.array_equal(sin_got[:4], [0.0, 1.0, 0.0, -1.0])


def _erfcx_polynomial_at_50_digits() -> list:
    """The monomial coefficients of (1 + 2x) erfcx(x) in t = (x - K)/(x + K): its Chebyshev expansion at 64 nodes,
    converted at 50 digits."""
    with mp.workdps(50):
        k_value, count, degree = mp.mpf(_vector_math.ERFCX_K), 64, len(_vector_math.ERFCX_POLYNOMIAL) - 1
        nodes = [mp.cos(mp.pi * (j + mp.mpf(1) / 2) / count) for j in range(count)]
        values = []
        for t in nodes:
            x = k_value * (1 + t) / (1 - t)
            values.append((1 + 2 * x) * mp.erfc(x) * mp.exp(x * x))
        chebyshev = [2 * mp.fsum(v * mp.cos(mp.pi * k * (j + mp.mpf(1) / 2) / count) for j, v in enumerate(values))
                     / count for k in range(degree + 1)]
        chebyshev[0] /= 2
        basis = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]  # T_k's monomial coefficients
        for _ in range(2, degree + 1):
            shifted = [mp.mpf(0)] + [2 * c for c in basis[-1]]
            basis.append([c - (basis[-2][i] if i < len(basis[-2]) else 0) for i, c in enumerate(shifted)])
        return [float(mp.fsum(chebyshev[k] * basis[k][j] for k in range(j, degree + 1))) for j in range(degree + 1)]


def test_vector_erfcx_polynomial_is_its_chebyshev_expansion_and_within_8_ulps_of_mpmath():
    recomputed = np.array(_erfcx_polynomial_at_50_digits())
    assert float(np.abs(recomputed - _vector_math.ERFCX_POLYNOMIAL).max()) <= 1e-17
    rng = np.random.default_rng(1)
    x = np.concatenate([[0.0, 1e-300, 3.75, 50.0], rng.uniform(0.0, 1.0, 500), rng.uniform(1.0, 10.0, 500),
                        rng.uniform(10.0, 100.0, 200), np.geomspace(100.0, 1e5, 200)])
    got = np.empty_like(x)
    _vector_erfcx(x, got)
    with mp.workdps(40):
        assert float(_ulps(got, [mp.erfc(mp.mpf(v)) * mp.exp(mp.mpf(v) ** 2) for v in x]).max()) <= 8.0
    far = np.array([1e8, 1e150, math.inf])
    _vector_erfcx(far, got[:3])
    with mp.workdps(40):
        asymptotic = [(1 - 1 / (2 * mp.mpf(v) ** 2)) / (mp.mpf(v) * mp.sqrt(mp.pi)) for v in far[:2]]
    assert float(_ulps(got[:2], asymptotic).max()) <= 8.0 and got[2] == 0.0


def test_one_sided_log_prob_and_its_gradients_equal_the_fast_torch_route():
    # the CUDA route of the paper's batches (every upper bound +inf) against the kernels' vectorized loop
    rows = [row for row in zip(*_grid_batch(torch.float64)) if row[4] == math.inf and row[3] > -math.inf]
    tensors = [torch.tensor(column, dtype=torch.float64) for column in zip(*rows)]
    results = []
    for route in ("kernels", "torch"):
        leaves = [t.clone().requires_grad_() for t in tensors]
        if route == "kernels":
            lp = KernelLogProb.apply(*leaves)
        else:
            d = TruncatedNormal(*leaves[1:], validate_args=False)
            assert d._one_sided
            lp = _FastLogProb.apply(leaves[0], *leaves[1:], d._fast)
        results.append((lp.detach(), torch.autograd.grad(lp.sum(), leaves)))
    (lp, grads), (lp_ref, grads_ref) = results
    assert torch.equal(torch.isinf(lp), torch.isinf(lp_ref))
    finite = torch.isfinite(lp_ref)
    assert float(((lp - lp_ref)[finite].abs() / lp_ref[finite].abs().clamp_min(1.0)).max()) <= 1e-13
    for name, g, g_ref in zip(("value", "loc", "scale", "low", "high"), grads, grads_ref):
        error = (g - g_ref).abs() * tensors[2] / (g_ref.abs() * tensors[2]).clamp_min(1.0)
        worst = int(error.argmax())
        assert float(error[worst]) <= 1e-9, (name, [float(t[worst]) for t in tensors], float(g[worst]),
                                             float(g_ref[worst]))


def test_log_prob_without_gradients_equals_the_value_with_them():
    tensors = _grid_batch(torch.float64)
    with torch.no_grad():
        plain = TruncatedNormal(*tensors[1:], validate_args=False).log_prob(tensors[0])
    leaves = [t.clone().requires_grad_() for t in tensors]
    assert torch.equal(plain, KernelLogProb.apply(*leaves).detach())


@pytest.mark.parametrize("wanted", [(1, 0, 0, 0, 0), (0, 1, 0, 0, 0), (0, 1, 1, 0, 0), (0, 0, 1, 0, 1)])
def test_log_prob_forms_the_derivatives_wanted_as_it_forms_all_five(wanted):
    # each set of derivatives is a compilation of its own that forms only what it needs: the value bit for bit,
    # each derivative to rounding (the compiler fuses a product into a sum by the product's other uses)
    tensors = _grid_batch(torch.float64)
    everything = [t.clone().requires_grad_() for t in tensors]
    lp_all = KernelLogProb.apply(*everything)
    grads_all = torch.autograd.grad(lp_all.sum(), everything)
    some = [t.clone().requires_grad_(bool(w)) for t, w in zip(tensors, wanted)]
    lp = KernelLogProb.apply(*some)
    assert torch.equal(lp.detach(), lp_all.detach())
    grads = torch.autograd.grad(lp.sum(), [t for t, w in zip(some, wanted) if w])
    scale = tensors[2]
    for got, want in zip(grads, [g for g, w in zip(grads_all, wanted) if w]):
        error = (got - want).abs() * scale / (want.abs() * scale).clamp_min(1.0)
        assert float(error.max()) <= 4e-15


def test_log_prob_of_a_batch_split_among_threads_equals_the_serial_loop():
    tensors = _grid_batch(torch.float64)
    copies = -(-_PARALLEL_FROM // tensors[0].shape[0]) + 1
    arrays = [t.numpy() for t in tensors]
    serial, serial_slopes = np.empty_like(arrays[0]), np.empty((5, arrays[0].shape[0]))
    _log_prob_serial(*arrays, serial, tuple(serial_slopes), *_CONSTANTS)
    long = [np.tile(a, copies) for a in arrays]
    threaded, threaded_slopes = np.empty_like(long[0]), np.empty((5, long[0].shape[0]))
    _log_prob_parallel(*long, threaded, tuple(threaded_slopes), *_CONSTANTS)
    assert np.array_equal(threaded, np.tile(serial, copies))
    assert np.array_equal(threaded_slopes, np.tile(serial_slopes, copies))



def test_log_prob_through_the_class_is_the_same_on_one_torch_thread_as_on_two():
    # the class's call takes the threaded loop from _PARALLEL_FROM elements where torch uses more than one thread
    tensors = _grid_batch(torch.float64)
    copies = -(-_PARALLEL_FROM // tensors[0].shape[0]) + 1
    results = []
    threads = torch.get_num_threads()
    try:
        for count in (1, 2):
            torch.set_num_threads(count)
            leaves = [t.repeat(copies).requires_grad_() for t in tensors]
            lp = TruncatedNormal(*leaves[1:], validate_args=False).log_prob(leaves[0])
            lp.sum().backward()
            results.append([lp.detach()] + [leaf.grad for leaf in leaves])
    finally:
        torch.set_num_threads(threads)
    for one, two in zip(*results):
        assert torch.equal(one, two)


@numba.njit
def _per_element(value, loc, scale, low, high, out, slopes, table, nodes, weights, g_series, v_series):
    for i in range(out.shape[0]):
        element = _log_prob_element(value[i], loc[i], scale[i], low[i], high[i], table, nodes, weights, g_series,
                                    v_series, True)
        out[i] = element[0]
        for k in range(5):
            slopes[k, i] = element[k + 1]


def test_one_sided_loop_equals_the_per_element_branches_it_leaves_other_elements_to():
    # the branches still take one-sided elements the loop does not hold for (a scale near the floats' ends)
    rows = [row for row in zip(*_grid_batch(torch.float64)) if row[4] == math.inf and row[3] > -math.inf]
    arrays = [np.array(column) for column in zip(*rows)]
    n = arrays[0].shape[0]
    loop, loop_slopes = np.empty(n), np.empty((5, n))
    _log_prob_serial(*arrays, loop, tuple(loop_slopes), *_CONSTANTS)
    branches, branch_slopes = np.empty(n), np.empty((5, n))
    _per_element(*arrays, branches, branch_slopes, *_CONSTANTS)
    assert np.array_equal(np.isinf(loop), np.isinf(branches))
    finite = np.isfinite(branches)
    assert float((np.abs(loop[finite] - branches[finite]) / np.maximum(np.abs(branches[finite]), 1.0)).max()) <= 1e-13
    scale = arrays[2]
    error = np.abs(loop_slopes - branch_slopes) * scale / np.maximum(np.abs(branch_slopes) * scale, 1.0)
    assert float(error.max()) <= 1e-9


@numba.njit(error_model="numpy")  # (the expansion not kept divides by a = 0)
def _vector_mean_excess(a, out):
    for i in range(a.shape[0]):
        out[i] = _vector_math.mean_excess(a[i])


def _mean_excess_at_50_digits(a):
    """D(a) = E[t] - a for t standard normal on [a, inf): 1/M(a) - a, or its asymptotic series beyond a = 1e6."""
    if a > 1e6:
        return 1 / a - 2 / a**3 + 10 / a**5
    return 1 / (mp.sqrt(mp.pi / 2) * mp.erfc(a / mp.sqrt(2)) * mp.exp(a * a / 2)) - a


def _mean_excess_polynomials_at_50_digits() -> tuple[list, list]:
    """The monomial coefficients of D(a) in t = a/2 - 1 on [0, 4] and of a D(a) in t = 2 (4/a)^2 - 1 beyond: their
    Chebyshev expansions at 60 nodes, converted at 50 digits."""
    split, count, degree = _vector_math.MEAN_EXCESS_SPLIT, 60, len(_vector_math.MEAN_EXCESS_NEAR) - 1
    with mp.workdps(50):
        nodes = [mp.cos(mp.pi * (j + mp.mpf(1) / 2) / count) for j in range(count)]
        basis = [[mp.mpf(1)], [mp.mpf(0), mp.mpf(1)]]  # T_k's monomial coefficients
        for _ in range(2, degree + 1):
            shifted = [mp.mpf(0)] + [2 * c for c in basis[-1]]
            basis.append([c - (basis[-2][i] if i < len(basis[-2]) else 0) for i, c in enumerate(shifted)])
        polynomials = []
        for function in (lambda t: _mean_excess_at_50_digits(split * (t + 1) / 2),
                         lambda t: (lambda a: a * _mean_excess_at_50_digits(a))(split / mp.sqrt((t + 1) / 2))):
            values = [function(t) for t in nodes]
            chebyshev = [2 * mp.fsum(v * mp.cos(mp.pi * k * (j + mp.mpf(1) / 2) / count) for j, v in enumerate(values))
                         / count for k in range(degree + 1)]
            chebyshev[0] /= 2
            polynomials.append([float(mp.fsum(chebyshev[k] * basis[k][j] for k in range(j, degree + 1)))
                                for j in range(degree + 1)])
    return polynomials[0], polynomials[1]


def test_mean_excess_polynomials_are_their_chebyshev_expansions_and_within_3_ulps_of_mpmath():
    near, far = _mean_excess_polynomials_at_50_digits()
    assert float(np.abs(np.array(near) - _vector_math.MEAN_EXCESS_NEAR).max()) <= 1e-17
    assert float(np.abs(np.array(far) - _vector_math.MEAN_EXCESS_FAR).max()) <= 1e-17
    a = np.concatenate([[0.0, 1e-300, np.nextafter(4.0, 0.0), 4.0], np.linspace(0.0, 4.0, 401),
                        np.linspace(4.0, 30.0, 401), np.geomspace(30.0, 1e8, 200), [1e200]])
    got = np.empty_like(a)
    _vector_mean_excess(a, got)
    with mp.workdps(40):
        assert float(_ulps(got, [_mean_excess_at_50_digits(mp.mpf(v)) for v in a]).max()) <= 3.0
    _vector_mean_excess(np.array([math.inf]), got[:1])
    assert got[0] == 0.0


@numba.njit(error_model="numpy")
def _mean_per_element(loc, scale, low, high, out, slopes, table, nodes, weights):
    for i in range(out.shape[0]):
        out[i] = _value_element(MEAN, loc[i], scale[i], low[i], high[i], table, nodes, weights)
        slopes[:, i] = _gradient_element(MEAN, loc[i], scale[i], low[i], high[i], table, nodes, weights)


def test_one_sided_mean_loop_equals_the_per_element_branches():
    # N(-a, s) on [0, inf), a from -40 to 1e8 and s from 1e-3 to 1e3, beside the grid's one-sided elements
    a = np.concatenate([np.linspace(-40.0, 40.0, 1601), np.geomspace(40.0, 1e8, 200)])
    rows = [(-a_value * s, s, 0.0, math.inf) for a_value in a for s in (1e-3, 1.0, 1e3)]
    rows += [params for params in GRID if params[3] == math.inf]
    loc, scale, low, high = (np.array(column) for column in zip(*rows))
    n = loc.shape[0]
    loop, branches, branch_slopes = np.empty(n), np.empty(n), np.empty((4, n))
    _statistic_block(MEAN, 0, n, loc, scale, low, high, loop, *_MOMENT_CONSTANTS)
    loop_slopes = [np.empty(n) for _ in range(4)]
    _gradients_block(MEAN, 0, n, np.ones(n), loc, scale, low, high, *loop_slopes, *_MOMENT_CONSTANTS)
    _mean_per_element(loc, scale, low, high, branches, branch_slopes, *_MOMENT_CONSTANTS)
    assert np.array_equal(np.isnan(loop), np.isnan(branches))
    finite = np.isfinite(branches)
    size = np.maximum(np.abs(branches[finite]), scale[finite])
    assert float((np.abs(loop[finite] - branches[finite]) / size).max()) <= 1e-14
    for name, got, expected in zip(("loc", "scale", "low", "high"), loop_slopes, branch_slopes):
        error = np.abs(got - expected) / np.maximum(np.abs(expected), 1.0)
        worst = int(np.nanargmax(error))
        assert float(error[worst]) <= 1e-12, (name, rows[worst], float(got[worst]), float(expected[worst]))


# ----------------------------------------------------------------------------------------------------------------
# The cdf's vectorized pass (tnlib.distributions._cdf_vector) against the per-element kernel it stands in for
# ----------------------------------------------------------------------------------------------------------------

def _mixed_regime_cdf_inputs(n: int, seed: int) -> list[np.ndarray]:
    """(value, loc, scale, low, high) of every regime the cdf meets: straddling, a bound 0-40 scales away (either
    side, so half the elements are mirrored), one-sided, both bounds infinite, intervals 1e-6 to 1e3 scales wide,
    values spread over the support (a short stretch from a bound included) and a few outside it."""
    rng = np.random.default_rng(seed)
    loc = rng.normal(0.0, 5.0, n)
    scale = np.exp(rng.normal(0.0, 2.0, n))
    a = rng.choice([-1.0, 1.0], n) * np.exp(rng.uniform(-5.0, 3.7, n)) - rng.uniform(0.0, 3.0, n)
    width = np.exp(rng.uniform(-14.0, 7.0, n))
    low = loc + scale * a
    high = np.where(rng.random(n) < 0.3, np.inf, low + scale * width)
    low = np.where(rng.random(n) < 0.05, -np.inf, low)
    inner = TruncatedNormal(*(torch.tensor(v) for v in (loc, scale, low, high))).icdf(torch.tensor(rng.random(n)))
    value = inner.numpy().copy()
    near = rng.random(n) < 0.2  # within a short stretch of the lower bound
    value[near] = np.where(np.isfinite(low[near]), low[near] + scale[near] * np.exp(rng.uniform(-12, 0, near.sum())),
                           value[near])
    outside = rng.random(n) < 0.02
    value[outside] = loc[outside] + rng.normal(0.0, 50.0, outside.sum()) * scale[outside]
    return [value, loc, scale, low, high]


@numba.njit(error_model="numpy")
def _cdf_held(value, loc, scale, low, high, held):
    for i in range(held.shape[0]):
        held[i] = cdf_element(value[i], loc[i], scale[i], low[i], high[i], False, False)[7]  # (derivatives held)


def test_cdf_vectorized_pass_and_its_gradients_equal_the_per_element_kernel_on_mixed_regimes():
    arrays = _mixed_regime_cdf_inputs(20_000, seed=59)
    n = arrays[0].shape[0]
    held = np.empty(n, dtype=np.bool_)
    _cdf_held(*arrays, held)
    # (the comparison means something only where the vectorized pass computes: most elements)
    assert held.mean() >= 0.9, held.mean()
    vector, per_element = np.empty(n), np.empty(n)
    _cdf_vector_serial(*arrays, vector, *_CDF_CONSTANTS)
    _cdf_serial(False, *arrays, per_element, *_CDF_CONSTANTS)
    # relative to the CDF, or to max(F, 1 - F) for straddling elements above loc, whose masses on the two sides of
    # loc each route sums in its own order
    value, loc, _, low, _ = arrays
    size = np.where((low < loc) & (value > loc), np.maximum(per_element, 1.0 - per_element), per_element)
    with np.errstate(invalid="ignore"):  # (0 / 0 where both are 0, in the branch np.where drops)
        error = np.where(vector == per_element, 0.0, np.abs(vector - per_element) / size)
    worst = int(error.argmax())
    assert error[worst] <= 1e-14, ([float(t[worst]) for t in arrays], vector[worst], per_element[worst])
    grad = np.random.default_rng(1).normal(size=n)
    slopes = np.empty((5, n))
    _cdf_gradients_vector_serial(grad, *arrays, slopes, *_CDF_CONSTANTS)
    reference = tuple(np.empty(n) for _ in range(5))
    _cdf_gradients_serial(False, grad, *arrays, reference, *_CDF_CONSTANTS)
    # each relative to the density at the value, at least grad / scale (the size of the terms that cancel in one
    # that vanishes)
    size = np.maximum(np.abs(reference[0]), np.abs(grad) / arrays[2])
    for name, g, g_ref in zip(("value", "loc", "scale", "low", "high"), slopes, reference):
        error = np.where(g == g_ref, 0.0, np.abs(g - g_ref) / np.maximum(np.abs(g_ref), size))
        worst = int(error.argmax())
        assert error[worst] <= 1e-14, (name, [float(t[worst]) for t in arrays], g[worst], g_ref[worst])


def test_cdf_of_a_batch_split_among_threads_equals_the_serial_pass():
    arrays = _mixed_regime_cdf_inputs(3 * _BLOCK + 17, seed=3)
    n = arrays[0].shape[0]
    serial, parallel = np.empty(n), np.empty(n)
    _cdf_vector_serial(*arrays, serial, *_CDF_CONSTANTS)
    _cdf_vector_parallel(*arrays, parallel, *_CDF_CONSTANTS)
    assert np.array_equal(serial, parallel, equal_nan=True)


def test_cdf_pass_of_straddling_elements_is_within_a_few_ulps_of_mpmath_where_the_tails_pass_one_half():
    # a lower bound just under loc, the value just above it (the mass below the value formed as a sum of erf's,
    # not as 1 less the mass above it, which cancels there), and values below loc near and far from the bound
    rows = [(x, 0.0, 1.0, a, b) for a in (-1e-4, -1e-3, -0.02, -0.3, -3.0) for b in (0.5, 2.0, math.inf)
            for x in (a + 1e-3 * abs(a), 0.5 * a, 1e-3 * abs(a), 2e-4, 0.2)]
    arrays = [np.array(column) for column in zip(*rows)]
    got = np.empty(len(rows))
    _cdf_vector_serial(*arrays, got, *_CDF_CONSTANTS)
    with mp.workdps(50):
        phi = lambda v: mp.ncdf(mp.mpf(v))  # noqa: E731
        exact = [(phi(x) - phi(a)) / ((phi(b) if math.isfinite(b) else 1) - phi(a)) for x, _, _, a, b in rows]
    error = [float(abs(g - e) / e) for g, e in zip(got, exact)]
    worst = int(np.argmax(error))
    assert error[worst] <= 4e-15, (rows[worst], got[worst], float(exact[worst]))


@numba.njit(error_model="numpy")
def _stretch_loop(a, length, mass, mean, variance):
    for i in range(a.shape[0]):
        mass[i], mean[i], variance[i] = _stretch_moments(a[i], length[i])
        if _stretch(a[i], length[i]) != (mass[i], mean[i]):  # the same sums, whether the variance is read or not
            mass[i] = np.nan


def test_narrow_stretch_series_is_within_a_few_ulps_of_mpmath():
    # the narrow stretches the vectorized pass takes the series on: length (1 + |slope at the middle|) <= 1
    rows = [(a, length) for a in (-1e4, -30.0, -2.0, -0.5, 0.0, 0.3, 1.0, 5.0, 1e3, 1e5)
            for length in (1e-9, 1e-4, 0.1, 0.5, 1.0) if length * max(1.0, abs(a + 0.5 * length)) <= 1.0]
    a, length = (np.array(column) for column in zip(*rows))
    mass, mean, variance = np.empty(len(rows)), np.empty(len(rows)), np.empty(len(rows))
    _stretch_loop(a, length, mass, mean, variance)
    with mp.workdps(40):
        for (x, w), got_mass, got_mean, got_variance in zip(rows, mass, mean, variance):
            integrand = lambda r: mp.exp(-x * r - r * r / 2)  # noqa: E731
            exact_mass = mp.quad(integrand, [0, w])
            exact_mean = mp.quad(lambda r: r * integrand(r), [0, w]) / exact_mass
            exact_variance = mp.quad(lambda r: (r - exact_mean) ** 2 * integrand(r), [0, w]) / exact_mass
            assert abs(got_mass / exact_mass - 1) <= 4e-16, (x, w, got_mass, exact_mass)
            assert abs(got_mean / exact_mean - 1) <= 8e-16, (x, w, got_mean, exact_mean)
            assert abs(got_variance / exact_variance - 1) <= 8e-16, (x, w, got_variance, exact_variance)


@numba.njit(error_model="numpy")
def _short_stretch_loop(a, length, short, mass, full_mass):
    for i in range(a.shape[0]):
        short[i] = _short_stretch(a[i], length[i])
        mass[i] = _short_stretch_mass(a[i], length[i])
        full_mass[i] = _stretch(a[i], length[i])[0]


def test_short_stretch_series_is_the_full_series_to_an_ulp_and_within_a_few_ulps_of_mpmath_where_it_is_short():
    # up to its bound, max(1, |a + length/2|) length/2 = 1e-2, and just past it (where it must say not short)
    rows = [(a, length) for a in (-2e3, -40.0, -2.0, -0.5, 0.0, 0.3, 1.0, 5.0, 40.0, 1e3)
            for length in (1e-9, 1e-6, 1e-4, 2e-3, 2e-2, 0.02 / max(1.0, abs(a)), 0.0201 / max(1.0, abs(a)))]
    a, length = (np.array(column) for column in zip(*rows))
    short, mass, full_mass = np.empty(len(rows), dtype=np.bool_), np.empty(len(rows)), np.empty(len(rows))
    _short_stretch_loop(a, length, short, mass, full_mass)
    bound = np.maximum(1.0, np.abs(a + 0.5 * length)) * 0.5 * length
    assert np.array_equal(short, bound <= 1e-2)
    assert short.sum() >= 40 and (~short).sum() >= 10
    assert np.all(np.abs(mass - full_mass)[short] <= np.spacing(full_mass[short]))
    with mp.workdps(40):
        for (x, w), got, is_short in zip(rows, mass, short):
            if is_short:
                exact = mp.quad(lambda r: mp.exp(-x * r - r * r / 2), [0, w])
                assert abs(got / exact - 1) <= 4e-16, (x, w, got, exact)


@numba.njit(error_model="numpy")
def _short_chunks(value, loc, scale, low, high):
    arrays = (value, loc, scale, low, high)
    kinds = np.empty(_CHUNK, dtype=np.uint8)
    starts = np.empty(CDF_KINDS + 1, dtype=np.int64)
    short = 0
    for first in range(0, value.shape[0], _CHUNK):
        short += classify_cdf(first, min(first + _CHUNK, value.shape[0]), arrays, kinds, starts) == 0
    return short


def test_cdf_pass_on_narrow_intervals_by_their_short_series_equals_the_per_element_kernel():
    # intervals narrow enough that every chunk takes the short series, on either side of loc and far from it
    rng = np.random.default_rng(61)
    n = 4 * _CHUNK
    loc, scale = rng.uniform(-3.0, 3.0, n), rng.uniform(0.3, 3.0, n)
    low = loc + scale * rng.uniform(-40.0, 40.0, n)
    high = low + scale * 10.0 ** rng.uniform(-8.0, -3.7, n)
    value = low + rng.uniform(0.0, 1.0, n) * (high - low)
    arrays = [value, loc, scale, low, high]
    assert _short_chunks(*arrays) == 4
    vector, per_element = np.empty(n), np.empty(n)
    _cdf_vector_serial(*arrays, vector, *_CDF_CONSTANTS)
    _cdf_serial(False, *arrays, per_element, *_CDF_CONSTANTS)
    error = np.where(vector == per_element, 0.0, np.abs(vector - per_element) / per_element)
    worst = int(error.argmax())
    assert error[worst] <= 1e-14, ([float(t[worst]) for t in arrays], vector[worst], per_element[worst])


@numba.njit(error_model="numpy")
def _ndtr_lower_loop(x, out):
    for i in range(x.shape[0]):
        out[i] = _ndtr_lower(x[i])


def test_vector_ndtr_of_a_non_positive_argument_is_erfc_of_its_float64_argument_within_a_few_ulps():
    # erfc(y)/2 at y = -x/sqrt 2 rounded to float64, as libm's erfc gets it in the per-element kernel (that rounding
    # alone moves Phi(-37) by 2 y^2 eps, 1e-13: the argument's own conditioning, which no Phi shares)
    x = -np.concatenate([np.linspace(0.0, 8.0, 41), np.linspace(8.0, 37.0, 30), [1e-9, 1e-3]])
    got = np.empty_like(x)
    _ndtr_lower_loop(x, got)
    with mp.workdps(40):
        exact = [mp.erfc(mp.mpf(float(-v * _SQRT_HALF))) / 2 for v in x]
    assert float(_ulps(got, exact).max()) <= 6


def _two_sided_columns(regime: str, n: int, rng) -> tuple[np.ndarray, ...]:
    """(a, b, loc, scale): bounds a < 0 < b from 1e-3 to 40 scales either side of loc ("straddling"; the narrow
    ones among them are left to the branches), or intervals 1e-9 to 1 scale wide (narrow in the canonical frame)
    with the lower bound 50 scales either side of loc ("narrow"); scales 1e-3 to 1e3, locs -1e3 to 1e3."""
    if regime == "straddling":
        a = -np.exp(rng.uniform(np.log(1e-3), np.log(40.0), n))
        b = np.exp(rng.uniform(np.log(1e-3), np.log(40.0), n))
    else:
        a = rng.uniform(-50.0, 50.0, n)
        b = a + np.exp(rng.uniform(np.log(1e-9), 0.0, n)) / np.maximum(1.0, np.abs(a) + 1.0)
    return a, b, rng.uniform(-1e3, 1e3, n), np.exp(rng.uniform(np.log(1e-3), np.log(1e3), n))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_one_sided_elements_log_prob_does_not_depend_on_its_neighbours(dtype):
    # a chunk of one-sided elements takes the one-sided loop in place; beside two-sided elements they are gathered
    # by kind into columns: the same values and derivatives, bit for bit
    rng = np.random.default_rng(61)
    n = 5000
    loc, scale, a = rng.uniform(-5.0, 5.0, n), np.exp(rng.uniform(-3.0, 3.0, n)), rng.uniform(-3.0, 60.0, n)
    low = loc + a * scale
    value = low + scale * rng.exponential(1.0, n) / np.maximum(1.0, a)
    alone = [column.astype(dtype) for column in (value, loc, scale, low, np.full(n, np.inf))]
    out, slopes = np.empty(n, dtype), np.empty((5, n), dtype)
    _log_prob_serial(*alone, out, tuple(slopes), *_CONSTANTS)
    # every other element a straddling one, TN(0, 1, -1, 2) at 0
    mixed = []
    for column, neighbour in zip(alone, (0.0, 0.0, 1.0, -1.0, 2.0)):
        both = np.full(2 * n, neighbour, dtype)
        both[0::2] = column
        mixed.append(both)
    mixed_out, mixed_slopes = np.empty(2 * n, dtype), np.empty((5, 2 * n), dtype)
    _log_prob_serial(*mixed, mixed_out, tuple(mixed_slopes), *_CONSTANTS)
    assert np.isfinite(out).all()
    assert np.array_equal(mixed_out[0::2], out) and np.array_equal(mixed_slopes[:, 0::2], slopes)


@pytest.mark.parametrize("regime", ["straddling", "narrow"])
def test_two_sided_log_prob_passes_are_within_a_few_ulps_of_the_per_element_branches(regime):
    # values across the interval, a few outside it and a NaN
    rng = np.random.default_rng(59)
    n = 4000
    a, b, loc, scale = _two_sided_columns(regime, n, rng)
    low, high = loc + a * scale, loc + b * scale
    value = low + rng.uniform(0.0, 1.0, n) * (high - low)
    value[:40] = high[:40] + scale[:40]
    value[40] = np.nan
    out, slopes = np.empty(n), np.empty((5, n))
    _log_prob_serial(value, loc, scale, low, high, out, tuple(slopes), *_CONSTANTS)
    expected = np.array([_log_prob_element(*row, *_CONSTANTS, True) for row in zip(value, loc, scale, low, high)]).T
    inside = np.isfinite(expected[0])
    assert inside.sum() > 0.9 * n and np.array_equal(np.isnan(out), np.isnan(expected[0]))
    assert np.array_equal(out[~inside], expected[0, ~inside], equal_nan=True)
    # (the passes' exp and log are not libm's: some values differ, so the passes did serve these elements)
    assert not np.array_equal(out[inside], expected[0, inside])
    t = (value - loc) / scale
    # log_prob relative to max(1, |log_prob|); each derivative to the size of the terms it sums, over the scale
    # (a narrow interval's density is about 1 / (width scale), its derivatives to the bounds as large: the
    # straddling regime's narrow elements too)
    size = (1.0 + t * t + np.abs(a) + np.abs(b)) / scale
    bound_size = size + 1.0 / ((b - a) * scale)
    sizes = [np.maximum(np.abs(expected[0]), 1.0), size, size, size, bound_size, bound_size]
    for name, got, want, size in zip(("log_prob", "value", "loc", "scale", "low", "high"), [out, *slopes], expected,
                                     sizes):
        error = np.abs(got[inside] - want[inside]) / size[inside]
        assert float(error.max()) <= 2e-15, name


def _log_prob_and_derivatives_by_mpmath(value, loc, scale, low, high) -> list[float]:
    """log_prob and its derivatives w.r.t. (value, loc, scale, low, high) at 40 digits, in the canonical frame (an
    interval at or below loc mirrored), Z as a difference of upper tails there (no cancellation to 1 - tiny)."""
    with mp.workdps(40):
        x, mu, s = mp.mpf(value), mp.mpf(loc), mp.mpf(scale)
        lo, hi = (mp.mpf(low) if low > -math.inf else -mp.inf), mp.mpf(high)
        flip = hi <= mu
        if flip:
            x, mu, lo, hi = -x, -mu, -hi, -lo
        t, a, b = (x - mu) / s, (lo - mu) / s, (hi - mu) / s

        def upper_tail(v):
            return mp.erfc(v / mp.sqrt(2)) / 2

        def density(v):
            return mp.npdf(v) if mp.isfinite(v) else mp.mpf(0)

        z = upper_tail(a) - upper_tail(b)
        a_pa = a * density(a) if mp.isfinite(a) else 0
        b_pb = b * density(b) if mp.isfinite(b) else 0
        lp = -mp.log(s) - t ** 2 / 2 - mp.log(z) - mp.log(mp.sqrt(2 * mp.pi))
        g = [-t / s, t / s + (density(b) - density(a)) / (z * s), (-1 + t ** 2 + (b_pb - a_pa) / z) / s,
             density(a) / (z * s), -density(b) / (z * s)]
        if flip:  # back through the mirror: log_prob is even under it
            g = [-g[0], -g[1], g[2], -g[4], -g[3]]
        return [float(lp)] + [float(v) for v in g]


@pytest.mark.parametrize("kind", ["wide on one side", "no lower bound"])
def test_log_prob_passes_of_one_sided_wide_and_lower_open_intervals_match_mpmath(kind):
    # a wide interval 0 to 50 scales from loc on either side of it, or no lower bound and the upper one 50 scales
    # under loc to 5 above it: batches of one kind, which the kind's vectorized loop takes
    rng = np.random.default_rng(58)
    n = 120
    loc, scale = rng.uniform(-1e3, 1e3, n), np.exp(rng.uniform(np.log(1e-3), np.log(1e3), n))
    if kind == "wide on one side":
        a = rng.uniform(0.0, 50.0, n)
        w = np.maximum(np.exp(rng.uniform(np.log(1.2), np.log(50.0), n)), 1.1 / np.maximum(1.0, a))
        below = rng.uniform(size=n) < 0.5
        low = np.where(below, loc - (a + w) * scale, loc + a * scale)
        high = np.where(below, loc - a * scale, loc + (a + w) * scale)
        value = low + rng.uniform(0.0, 1.0, n) * (high - low)
    else:
        a = rng.uniform(-5.0, 50.0, n)  # the mirrored lower bound: the upper one 5 scales above loc to 50 under it
        low, high = np.full(n, -np.inf), loc - a * scale
        value = high - scale * rng.exponential(1.0, n) / np.maximum(1.0, a)
    out, slopes = np.empty(n), np.empty((5, n))
    _log_prob_serial(value, loc, scale, low, high, out, tuple(slopes), *_CONSTANTS)
    branches = np.array([_log_prob_element(*row, *_CONSTANTS, True)[0] for row in zip(value, loc, scale, low, high)])
    assert not np.array_equal(out, branches)  # (the loop's erfcx, exp and log are not the branches')
    exact = np.array([_log_prob_and_derivatives_by_mpmath(*row) for row in zip(value, loc, scale, low, high)]).T
    # g(a) = 1 - a M(a) cancels to 1/a^2 (a^2 ulps of M(a)), d/dscale multiplies it by about a: each derivative
    # relative to max(1, |derivative| scale) / scale, allowed that cancellation
    far = np.maximum(a, 0.0)
    cancellation = 1.0 + far ** 2
    assert float((np.abs(out - exact[0]) / np.maximum(np.abs(exact[0]), 1.0)).max()) <= 4e-15
    for name, got, want, allowed in zip(("value", "loc", "scale", "low", "high"), slopes, exact[1:],
                                        (1.0, cancellation, cancellation * (1.0 + far), cancellation, cancellation)):
        error = np.abs(got - want) * scale / np.maximum(np.abs(want) * scale, 1.0)
        assert float((error / allowed).max()) <= 2e-15, name


@pytest.mark.parametrize("neighbours", ["unbounded", "one-sided"])
def test_log_prob_of_unbounded_elements_is_the_normals_and_matches_mpmath(neighbours):
    # no bound at all: alone, a batch the unbounded kind's loop takes whole; among one-sided elements (every other
    # one given a lower bound a scale under its value), a chunk classified by kind, where the one-sided elements
    # keep the values they have in a batch of their own
    rng = np.random.default_rng(59)
    n = 200
    loc, scale = rng.uniform(-1e3, 1e3, n), np.exp(rng.uniform(np.log(1e-3), np.log(1e3), n))
    value = loc + scale * rng.normal(0.0, 4.0, n)
    low, high = np.full(n, -np.inf), np.full(n, np.inf)
    if neighbours == "one-sided":
        low[::2] = value[::2] - scale[::2]
    out, slopes = np.empty(n), np.empty((5, n))
    _log_prob_serial(value, loc, scale, low, high, out, tuple(slopes), *_CONSTANTS)
    unbounded = np.isinf(low)
    rows = [row for row, keep in zip(zip(value, loc, scale, low, high), unbounded) if keep]
    exact = np.array([_log_prob_and_derivatives_by_mpmath(*row) for row in rows]).T
    got = out[unbounded]
    assert float((np.abs(got - exact[0]) / np.maximum(np.abs(exact[0]), 1.0)).max()) <= 4e-15
    for name, got, want in zip(("value", "loc", "scale", "low", "high"), slopes[:, unbounded], exact[1:]):
        error = np.abs(got - want) * scale[unbounded] / np.maximum(np.abs(want) * scale[unbounded], 1.0)
        assert float(error.max()) <= 2e-15, name
    if neighbours == "one-sided":
        one_sided = ~unbounded
        alone, alone_slopes = np.empty(int(one_sided.sum())), np.empty((5, int(one_sided.sum())))
        _log_prob_serial(*(column[one_sided] for column in (value, loc, scale, low, high)), alone,
                         tuple(alone_slopes), *_CONSTANTS)
        np.testing.assert_array_equal(out[one_sided], alone)
        np.testing.assert_array_equal(slopes[:, one_sided], alone_slopes)


def test_unbounded_elements_the_normals_formulas_do_not_hold_for_take_the_per_element_branches():
    # a value not finite, a scale under the vector log's floor, and one so large that t^2 leaves the floats
    rows = [(np.inf, 0.0, 1.0), (-np.inf, 0.0, 1.0), (np.nan, 0.0, 1.0), (0.5, 0.0, 1e-300), (1e300, -1e300, 1e-10),
            (0.25, 0.0, 1.0)]
    value, loc, scale = (np.array(column) for column in zip(*rows))
    low, high = np.full(len(rows), -np.inf), np.full(len(rows), np.inf)
    out, slopes = np.empty(len(rows)), np.empty((5, len(rows)))
    _log_prob_serial(value, loc, scale, low, high, out, tuple(slopes), *_CONSTANTS)
    branches = np.array([_log_prob_element(*row, *_CONSTANTS, True) for row in zip(value, loc, scale, low, high)]).T
    np.testing.assert_array_equal(out[:-1], branches[0][:-1])
    np.testing.assert_array_equal(slopes[:, :-1], branches[1:, :-1])
    assert out[-1] == pytest.approx(-0.5 * 0.25 ** 2 - 0.5 * math.log(2 * math.pi), rel=1e-15)


def test_every_log_prob_kind_in_one_chunk_keeps_the_values_it_has_in_a_batch_of_its_own():
    # one example of each kind the kernel gathers a chunk by -- bounds straddling loc, a narrow interval, no upper
    # bound, a wide interval on one side of loc, no lower bound, no bound at all, a bound not a number -- and a value
    # outside its support, repeated and shuffled into one chunk: each element as in a batch of its kind alone
    kinds = [(0.3, 0.0, 1.0, -1.0, 2.0), (0.0005, 0.0, 1.0, -1e-3, 1e-3), (1.5, 0.0, 1.0, 1.0, np.inf),
             (7.0, 0.0, 1.0, 5.0, 9.0), (-2.0, 0.0, 1.0, -np.inf, -1.0), (0.7, 0.2, 1.5, -np.inf, np.inf),
             (0.5, 0.0, 1.0, np.nan, 2.0), (3.0, 0.0, 1.0, -1.0, 2.0)]
    rng = np.random.default_rng(62)
    rows = [kinds[i] for i in rng.permutation(np.repeat(np.arange(len(kinds)), 40))]
    columns = [np.array(column) for column in zip(*rows)]
    out, slopes = np.empty(len(rows)), np.empty((5, len(rows)))
    _log_prob_serial(*columns, out, tuple(slopes), *_CONSTANTS)
    for row in kinds:
        alone = [np.full(3, x) for x in row]
        alone_out, alone_slopes = np.empty(3), np.empty((5, 3))
        _log_prob_serial(*alone, alone_out, tuple(alone_slopes), *_CONSTANTS)
        where = [i for i, r in enumerate(rows) if r is row]
        np.testing.assert_array_equal(out[where], np.full(len(where), alone_out[0]), err_msg=str(row))
        np.testing.assert_array_equal(slopes[:, where], np.repeat(alone_slopes[:, :1], len(where), axis=1),
                                      err_msg=str(row))
