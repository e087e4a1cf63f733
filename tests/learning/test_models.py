"""tnlib.learning.models: linear regression against the closed-form least-squares solution, and the models
build_model makes by name."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from tnlib.learning.heads import DistributionHead, HeadConfig
from tnlib.learning.models import LinearRegression, build_model
from tnlib.learning.nlm import NLM
from tnlib.learning.strips_hgn import STRIPSHGN


def test_linear_least_squares_solution_is_a_stationary_point_of_the_fixed_sigma_gaussian_nll():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(64, 4, generator=g, dtype=torch.float64) * torch.tensor([10.0, 20.0, 30.0, 3.0])
    y = x @ torch.tensor([0.5, 0.8, -0.1, 1.0], dtype=torch.float64) + 2 + torch.randn(64, generator=g) * 0.3
    design = torch.cat([x, torch.ones(64, 1, dtype=torch.float64)], 1)
    solution = torch.linalg.lstsq(design, y[:, None]).solution[:, 0]
    model = LinearRegression().double()
    head = DistributionHead(HeadConfig("N", "fixed", "none", "none"))
    with torch.no_grad():
        model.linear.weight[0] = solution[:4]
        model.linear.bias[0] = solution[4]

    def loss():
        inf = torch.full_like(y, torch.inf)
        return head(model(x), torch.zeros_like(y), -inf, inf).nll(y).mean()

    value = loss()
    value.backward()
    assert model.linear.weight.grad[0].abs().max() < 1e-9 and model.linear.bias.grad[0].abs() < 1e-9
    # and it is the minimum: the NLL minus its constant is the MSE of least squares; any step increases it
    residual = design @ solution - y
    torch.testing.assert_close(value - 0.5 * np.log(np.pi), residual.square().mean(), rtol=1e-12, atol=1e-12)
    with torch.no_grad():
        model.linear.weight[0, 1] += 1e-3
    assert loss() > value


def test_build_model_names():
    assert isinstance(build_model("linear"), LinearRegression)
    assert isinstance(build_model("hgn", hidden=8, steps=2), STRIPSHGN)
    with pytest.raises(ValueError, match="unknown model"):
        build_model("mlp")
    with pytest.raises(ValueError, match="depth"):
        NLM([2, 2], depth=0)
