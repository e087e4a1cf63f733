"""The compiled CPU kernels (tnlib.distributions._kernels) against the torch route they stand in for."""
from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from test_truncated_normal import GRID, _points
from tnlib import TruncatedNormal
from tnlib.distributions._autograd import _CDF, _ICDF, _Entropy, _FastMean, _LogProb, _Mean, _Variance
from tnlib.distributions._cdf_kernels import KernelCDF
from tnlib.distributions._kernels import KernelLogProb
from tnlib.distributions._moment_kernels import _PARALLEL_FROM, STATISTICS, KernelStatistic
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
        value = KernelStatistic.apply(*leaves, STATISTICS[name])
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
    value32 = KernelStatistic.apply(*columns, STATISTICS[name])
    value64 = KernelStatistic.apply(*(c.double() for c in columns), STATISTICS[name])
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
