"""The compiled CPU kernels (tnlib.distributions._kernels) against the torch route they stand in for."""
from __future__ import annotations

import math

import numpy as np
import torch

from test_truncated_normal import GRID, _points
from tnlib import TruncatedNormal
from tnlib.distributions._autograd import _LogProb
from tnlib.distributions._kernels import KernelLogProb


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
