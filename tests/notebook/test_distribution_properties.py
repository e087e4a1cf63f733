"""tnlib.notebook.distribution_properties: the classroom notebook's section 5b (the distribution's properties,
sampling and estimation) against tnlib, scipy and mpmath."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.stats import expon, truncnorm

from tnlib.notebook import demo_tensors, distribution_properties


@pytest.mark.parametrize("case", [(0.0, 1.0, 0.2, 1.7), (2.0, 1.5, 0.0, math.inf), (0.0, 1.0, 3.0, 5.0),
                                  (-1.0, 0.5, -math.inf, 0.0)])
def test_the_closed_forms_agree_with_tnlib_and_mpmath(case):
    import mpmath

    loc, scale, low, high = case
    rows = {name: (closed, ours, theirs) for name, closed, ours, theirs in distribution_properties.property_comparison(*case)}
    mpmath.mp.dps = 40
    a = mpmath.mpf(-mpmath.inf) if low == -math.inf else (mpmath.mpf(low) - loc) / scale
    b = mpmath.mpf(mpmath.inf) if high == math.inf else (mpmath.mpf(high) - loc) / scale
    Z = mpmath.ncdf(b) - mpmath.ncdf(a)
    pdf = lambda x: mpmath.npdf(x) if mpmath.isfinite(x) else 0  # noqa: E731
    xpdf = lambda x: x * mpmath.npdf(x) if mpmath.isfinite(x) else 0  # noqa: E731
    mean = loc + scale * (pdf(a) - pdf(b)) / Z
    variance = scale ** 2 * (1 + (xpdf(a) - xpdf(b)) / Z - ((pdf(a) - pdf(b)) / Z) ** 2)
    reference = {"mean": mean, "variance": variance,
                 "median": loc + scale * mpmath.sqrt(2) * mpmath.erfinv(2 * (mpmath.ncdf(a) + mpmath.ncdf(b)) / 2 - 1),
                 "entropy": mpmath.log(mpmath.sqrt(2 * mpmath.pi * mpmath.e) * scale * Z) + (xpdf(a) - xpdf(b)) / (2 * Z)}
    for name, value in reference.items():
        closed, ours, theirs = rows[name]
        assert ours == pytest.approx(float(value), rel=1e-9, abs=1e-12)
        assert closed == pytest.approx(float(value), rel=1e-6, abs=1e-9)
    closed, ours, theirs = rows["cdf(mean)"]
    assert ours == pytest.approx(closed, abs=1e-9)
    if high == math.inf:  # scipy's entropy: b phi(b) as inf * 0
        assert math.isnan(rows["entropy"][2])


def test_scipys_standardised_bounds_pitfall_moves_the_mean():
    values = list(distribution_properties.scipy_bounds_pitfall(3.0, 2.0, 1.0, 6.0).values())
    assert values[0] == pytest.approx(float(demo_tensors.truncated_normal(3.0, 2.0, 1.0, 6.0).mean), rel=1e-12)
    assert abs(values[1] - values[0]) > 2


def test_the_textbook_inverse_cdf_fails_in_the_far_tail_and_tnlibs_sampler_does_not():
    from scipy.stats import kstest

    assert np.all(~np.isfinite(distribution_properties.naive_inverse_cdf_samples(0.0, 1.0, 9.0, 10.0, 100, seed=0)))
    samples = distribution_properties.tnlib_samples(0.0, 1.0, 9.0, 10.0, 5000, seed=0)
    assert samples.min() >= 9.0 and samples.max() <= 10.0
    tn = demo_tensors.truncated_normal(0.0, 1.0, 9.0, 10.0)
    assert kstest(samples, lambda x: tn.cdf(torch.as_tensor(x, dtype=demo_tensors.DTYPE)).numpy()).pvalue > 0.01
    # the same seed, the same samples; the global generator left as it was
    state = torch.random.get_rng_state()
    assert np.array_equal(samples, distribution_properties.tnlib_samples(0.0, 1.0, 9.0, 10.0, 5000, seed=0))
    assert torch.equal(state, torch.random.get_rng_state())


def test_exercise_8_the_rejection_sampler_matches_tnlib():
    from scipy.stats import ks_2samp

    def tail_samples(a, b, count, seed):  # the exercise's solution
        rng, lam, out = np.random.default_rng(seed), (a + np.sqrt(a * a + 4)) / 2, []
        while len(out) < count:
            z = a + rng.exponential(1 / lam, count)
            keep = (rng.random(count) < np.exp(-(z - lam) ** 2 / 2)) & (z <= b)
            out.extend(z[keep])
        return np.array(out[:count])

    mine = tail_samples(9.0, 10.0, 20_000, seed=1)
    assert ks_2samp(mine, distribution_properties.tnlib_samples(0.0, 1.0, 9.0, 10.0, 20_000, seed=2)).pvalue > 0.01
    # nearer the bulk too, and the test can fail: a sampler that skips the acceptance step is caught there (in
    # the far tail the exponential proposal alone is already close to the target)
    near = tail_samples(1.0, 3.0, 20_000, seed=4)
    reference = distribution_properties.tnlib_samples(0.0, 1.0, 1.0, 3.0, 20_000, seed=5)
    assert ks_2samp(near, reference).pvalue > 0.01
    lam = (1.0 + np.sqrt(5.0)) / 2
    wrong = 1.0 + np.random.default_rng(3).exponential(1 / lam, 20_000)
    assert ks_2samp(wrong[wrong <= 3.0], reference).pvalue < 1e-6


def test_maximum_likelihood_recovers_loc_and_scale_from_truncated_samples():
    samples = distribution_properties.tnlib_samples(2.0, 1.5, 1.0, math.inf, 5000, seed=1)
    fit = distribution_properties.fit_truncated_normal(samples, 1.0, math.inf)
    assert fit.exists and fit.converged and fit.variance < fit.squared_distance
    assert fit.loc == pytest.approx(2.0, abs=0.15) and fit.scale == pytest.approx(1.5, abs=0.1)
    assert abs(samples.mean() - 2.0) > 0.4  # the naive estimate is biased
    # a maximum: the moments of the fitted TN are the samples' (the score equations of a two-parameter family)
    fitted = truncnorm((1.0 - fit.loc) / fit.scale, np.inf, loc=fit.loc, scale=fit.scale)
    assert fitted.mean() == pytest.approx(samples.mean(), abs=1e-5)
    assert fitted.var() == pytest.approx(samples.var(), abs=1e-5)
    assert "converged" in fit.describe() and "NOT" not in fit.describe()


def test_a_fit_without_a_maximum_says_so_and_gives_the_exponential_limit():
    # exponential draws have variance (mean - l)^2 in expectation; these exceed it: no Truncated Gaussian fits best
    samples = 1.0 + np.random.default_rng(0).exponential(2.0, 4000) ** 1.2
    fit = distribution_properties.fit_truncated_normal(samples, 1.0, math.inf)
    assert fit.variance >= fit.squared_distance and fit.exists is False and not fit.converged
    assert fit.limit_scale == pytest.approx(samples.mean() - 1.0)
    # the limit's NLL is the exponential's own at its MLE, and no Truncated Gaussian goes below it
    assert fit.limit_nll == pytest.approx(-expon(loc=1.0, scale=fit.limit_scale).logpdf(samples).mean(), abs=1e-9)
    for loc, scale in [(0.0, 2.0), (-10.0, 5.0), (-100.0, 15.0)]:
        nll = -truncnorm((1.0 - loc) / scale, np.inf, loc=loc, scale=scale).logpdf(samples).mean()
        assert nll > fit.limit_nll
    assert fit.nll >= fit.limit_nll - 1e-9 and fit.loc < -100  # the optimizer ran off toward the limit
    assert "no maximum" in fit.describe() and "exponential" in fit.describe()


def test_censored_data_need_the_tobit_likelihood_not_the_truncated_one():
    result = distribution_properties.censoring_versus_truncation(1.0, 2.0, 0.0, 5000, seed=0)
    assert 0.25 < result["share at the bound"] < 0.4
    assert result["censored (Tobit) MLE"] == pytest.approx(1.0, abs=0.1)
    # the lump at the bound leaves the truncated model without a maximum
    assert result["sample mean"] > 1.2 and result["truncated model on censored data"].exists is False


@pytest.mark.parametrize("x, mu, sigma, low, high", [(0.5, 0.0, 1.0, 0.2, 1.7), (3.0, 1.0, 2.0, -math.inf, 4.0),
                                                     (2.6, 0.0, 0.5, 2.5, math.inf)])
def test_the_textbook_nlls_section_5_prints_agree_with_scipy(x, mu, sigma, low, high):
    from scipy.stats import norm

    a, b = (low - mu) / sigma, (high - mu) / sigma
    assert distribution_properties.textbook_gaussian_nll(x, mu, sigma) == pytest.approx(-norm.logpdf(x, mu, sigma))
    assert distribution_properties.textbook_truncated_nll(x, mu, sigma, low, high) == pytest.approx(
        -truncnorm.logpdf(x, a, b, loc=mu, scale=sigma), rel=1e-8)  # 5 scales out Z's difference loses digits
    assert distribution_properties.textbook_truncated_nll(low - 1.0, mu, sigma, low, high) == math.inf
