"""The distribution head: mu/sigma parametrisation, bounds, NLL and point estimates against their formulas."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from tnlib.learning.heads import SIGMA_FLOOR, DistributionHead, HeadConfig, Prediction, learned_sigma
from tnlib.paper import AUTHORS_FIXED_SIGMA, FIXED_SIGMA

torch.set_default_dtype(torch.float32)

RAW = torch.tensor([[0.5, -1.0], [3.0, 0.2], [-2.0, 1.5], [7.0, -30.0]], dtype=torch.float64)
RESIDUAL = torch.tensor([2.0, 5.0, 1.0, 0.0], dtype=torch.float64)
LOWER = torch.tensor([1.0, 6.0, 0.0, 4.0], dtype=torch.float64)
UPPER = torch.tensor([9.0, 12.0, 3.0, 20.0], dtype=torch.float64)
H_STAR = torch.tensor([3.0, 7.0, 2.0, 5.0], dtype=torch.float64)


def head(**kwargs):
    return DistributionHead(HeadConfig(**kwargs))


def softplus(x):
    return np.log1p(np.exp(x))


@pytest.mark.parametrize("residual", ["ff", "lmcut", "none"])
def test_mu_is_raw_or_residual_plus_raw(residual):
    p = head(residual=residual, distribution="N")(RAW, RESIDUAL, LOWER, UPPER)
    expected = RAW[:, 0] + (0 if residual == "none" else RESIDUAL)
    assert torch.equal(p.mu, expected)


def test_sigma_learned_is_softplus_plus_floor_and_fixed_is_one_over_sqrt2():
    learned = head(sigma="learn")(RAW, RESIDUAL, LOWER, UPPER).sigma.numpy()
    np.testing.assert_allclose(learned, softplus(RAW[:, 1].numpy()) + SIGMA_FLOOR, rtol=1e-15)
    assert (learned > 0).all()  # raw -30 still gives a positive sigma
    fixed = head(sigma="fixed")(RAW, RESIDUAL, LOWER, UPPER).sigma
    assert FIXED_SIGMA == 1 / math.sqrt(2)
    assert torch.all(fixed == FIXED_SIGMA)


def test_gaussian_nll_with_fixed_sigma_is_squared_error_plus_constant():
    p = head(distribution="N", sigma="fixed", residual="none")(RAW, RESIDUAL, LOWER, UPPER)
    expected = (H_STAR - RAW[:, 0]) ** 2 + 0.5 * math.log(math.pi)
    torch.testing.assert_close(p.nll(H_STAR), expected, rtol=1e-14, atol=1e-14)


def test_truncated_nll_and_mean_match_scipy_with_open_bounds():
    p = head(distribution="TN", sigma="learn", residual="ff", upper_bound="h_sat")(RAW, RESIDUAL, LOWER, UPPER)
    mu, sigma = p.mu.numpy(), p.sigma.numpy()
    low, high = LOWER.numpy() - 0.1, UPPER.numpy() + 0.1
    a, b = (low - mu) / sigma, (high - mu) / sigma
    np.testing.assert_allclose(p.nll(H_STAR).numpy(), -stats.truncnorm.logpdf(H_STAR.numpy(), a, b, mu, sigma),
                               rtol=1e-9)
    np.testing.assert_allclose(p.point_estimate().numpy(), stats.truncnorm.mean(a, b, mu, sigma), rtol=1e-9)
    assert (p.point_estimate() > LOWER - 0.1).all() and (p.point_estimate() < UPPER + 0.1).all()


def test_truncated_mean_with_formula_and_no_upper_bound():
    p = head(distribution="TN", sigma="fixed", residual="none")(RAW, RESIDUAL, LOWER, UPPER)
    assert torch.all(torch.isposinf(p.upper))
    mu, s, l = p.mu.numpy(), FIXED_SIGMA, LOWER.numpy() - 0.1
    alpha = (l - mu) / s
    expected = mu + s * stats.norm.pdf(alpha) / stats.norm.sf(alpha)  # E[X] = mu + s phi(a) / (1 - Phi(a))
    np.testing.assert_allclose(p.point_estimate().numpy(), expected, rtol=1e-10)


def test_gaussian_point_estimates_mu_and_clip():
    p = head(distribution="N", residual="none")(RAW, RESIDUAL, LOWER, UPPER)
    assert torch.equal(p.point_estimate(), RAW[:, 0])
    assert torch.equal(p.clipped_point_estimate(), torch.maximum(RAW[:, 0], LOWER))
    with pytest.raises(ValueError, match="N"):
        head(distribution="TN")(RAW, RESIDUAL, LOWER, UPPER).clipped_point_estimate()


def test_lower_bound_none_is_minus_infinity_and_makes_tn_a_normal():
    tn = head(distribution="TN", lower_bound="none")(RAW, RESIDUAL, LOWER, UPPER)
    n = head(distribution="N", lower_bound="none")(RAW, RESIDUAL, LOWER, UPPER)
    assert torch.all(torch.isneginf(tn.lower))
    torch.testing.assert_close(tn.nll(H_STAR), n.nll(H_STAR), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(tn.point_estimate(), n.point_estimate(), rtol=1e-12, atol=1e-12)
    assert torch.equal(n.clipped_point_estimate(), n.mu)


def test_gradients_flow_to_both_raw_outputs():
    raw = RAW.clone().requires_grad_(True)
    p = head(distribution="TN", sigma="learn")(raw, RESIDUAL, LOWER, UPPER)
    p.nll(H_STAR).sum().backward()
    assert torch.isfinite(raw.grad).all() and (raw.grad != 0).all()


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def test_bounded_sigma_is_the_authors_ten_sigmoid_plus_a_tenth():
    p = head(sigma="learn", sigma_link="bounded")(RAW, RESIDUAL, LOWER, UPPER)
    np.testing.assert_allclose(p.sigma.numpy(), 10 * sigmoid(RAW[:, 1].numpy()) + 0.1, rtol=1e-15)
    # the default link is unchanged by the option
    softplus_sigma = head(sigma="learn")(RAW, RESIDUAL, LOWER, UPPER).sigma
    np.testing.assert_allclose(softplus_sigma.numpy(), softplus(RAW[:, 1].numpy()) + SIGMA_FLOOR, rtol=1e-15)
    assert not torch.allclose(p.sigma, softplus_sigma)
    # a fixed sigma ignores the link
    fixed = head(sigma="fixed", sigma_link="bounded")(RAW, RESIDUAL, LOWER, UPPER).sigma
    assert torch.all(fixed == FIXED_SIGMA)


def test_bounded_sigma_stays_in_its_bounds_and_softplus_has_none_above():
    raw = torch.tensor([-1e4, -40.0, -5.0, 0.0, 5.0, 40.0, 1e4], dtype=torch.float64)
    bounded = learned_sigma(raw, "bounded")
    assert bounded[0] == 0.1 and bounded[-1] == 10.1  # the limits, reached in float64 at extreme inputs
    assert ((bounded >= 0.1) & (bounded <= 10.1)).all()
    assert (bounded.diff() >= 0).all() and bounded[3] == 5.1  # increasing; 10 * 1/2 + 0.1 at 0
    assert learned_sigma(raw, "softplus")[-1] == 1e4 + SIGMA_FLOOR  # softplus grows without bound


def test_bounded_sigma_gradient_is_ten_sigmoid_derivative():
    raw = RAW.clone().requires_grad_(True)
    p = head(distribution="TN", sigma="learn", sigma_link="bounded")(raw, RESIDUAL, LOWER, UPPER)
    p.sigma.sum().backward()
    s = sigmoid(RAW[:, 1].numpy())
    np.testing.assert_allclose(raw.grad[:, 1].numpy(), 10 * s * (1 - s), rtol=1e-12)
    assert torch.all(raw.grad[:, 0] == 0)
    assert torch.autograd.gradcheck(lambda x: learned_sigma(x, "bounded"), (RAW[:, 1].clone().requires_grad_(True),))
    raw.grad = None
    bounded_tn = head(distribution="TN", sigma="learn", sigma_link="bounded")
    bounded_tn(raw, RESIDUAL, LOWER, UPPER).nll(H_STAR).sum().backward()
    assert torch.isfinite(raw.grad).all() and (raw.grad != 0).all()


def test_a_fixed_sigma_is_the_papers_unless_the_authors_is_asked_for():
    assert torch.all(head(sigma="fixed")(RAW, RESIDUAL, LOWER, UPPER).sigma == FIXED_SIGMA)
    authors = head(sigma="fixed", fixed_sigma="authors")(RAW, RESIDUAL, LOWER, UPPER).sigma
    assert torch.all(authors == AUTHORS_FIXED_SIGMA) and AUTHORS_FIXED_SIGMA == pytest.approx(math.sqrt(2.0))
    # a learned sigma ignores it
    learned = head(sigma="learn", fixed_sigma="authors")(RAW, RESIDUAL, LOWER, UPPER).sigma
    assert torch.equal(learned, head(sigma="learn")(RAW, RESIDUAL, LOWER, UPPER).sigma)


@pytest.mark.parametrize("kwargs, word", [
    (dict(distribution="Gauss"), "distribution"), (dict(sigma="learned"), "sigma"), (dict(sigma_link="exp"), "link"),
    (dict(fixed_sigma="sqrt2"), "fixed sigma"),
    (dict(residual="hadd"), "residual"), (dict(lower_bound="ff"), "lower bound"),
    (dict(upper_bound="ff"), "upper bound"),
])
def test_unknown_names_are_rejected(kwargs, word):
    with pytest.raises(ValueError, match=word):
        HeadConfig(**kwargs)


def test_the_tables_name_each_point_estimate_by_its_head():
    from tnlib.learning.heads import ESTIMATE_COLUMNS, estimate_column

    assert ESTIMATE_COLUMNS == ("N", "N+clip", "TN")
    assert [estimate_column("N", "default"), estimate_column("N", "clip"), estimate_column("TN", "default")] == [
        "N", "N+clip", "TN"]
    with pytest.raises(ValueError, match="a TN head has no point estimate 'clip'"):
        estimate_column("TN", "clip")


def test_the_head_says_which_point_estimates_it_offers():
    from tnlib.learning.heads import POINT_ESTIMATES, point_estimates

    assert point_estimates("N") == POINT_ESTIMATES == ("default", "clip")
    assert point_estimates("TN") == ("default",)
    with pytest.raises(ValueError, match="unknown distribution 'Laplace'"):
        point_estimates("Laplace")
    mu, sigma = torch.tensor([0.0, 3.0]), torch.tensor([1.0, 1.0])
    lower, upper = torch.tensor([1.0, 1.0]), torch.tensor([math.inf, math.inf])
    assert Prediction("N", mu, sigma, lower, upper).clipped_point_estimate().tolist() == [1.0, 3.0]
    with pytest.raises(ValueError, match="N\\) only"):
        Prediction("TN", mu, sigma, lower, upper).clipped_point_estimate()
