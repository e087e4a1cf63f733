"""tnlib.notebook.classroom_demos: the classroom notebook's demonstrations (maximum likelihood, MSE as a Gaussian
NLL, maximum entropy, closed and open lower bounds, what a fixed sigma changes) against scipy, and the checks under
its exercises' solutions."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.stats
from scipy.stats import truncnorm

from tnlib.notebook import classroom_demos, demo_tensors, label_gaps
from tnlib.paper import OPEN_BOUND_EPSILON


def test_gaussian_nll_is_minimal_at_the_sample_mean():
    sample = classroom_demos.draw_gaussian_sample(50, 3.0, 1.5, seed=0)
    locs = np.linspace(0.0, 6.0, 601)
    assert locs[np.argmin(classroom_demos.gaussian_nll_curve(sample, locs, 1.5))] == pytest.approx(sample.mean(), abs=0.01)
    assert np.array_equal(sample, classroom_demos.draw_gaussian_sample(50, 3.0, 1.5, seed=0))


def test_mse_is_the_gaussian_nll_with_sigma_one_over_sqrt2_up_to_log_sqrt_pi():
    largest, smallest = classroom_demos.mse_nll_gap(np.array([1.0, 2.0, 7.5]), np.array([0.0, 2.5, 1.0]))
    assert largest == pytest.approx(math.log(math.sqrt(math.pi)), abs=1e-12)
    assert smallest == pytest.approx(math.log(math.sqrt(math.pi)), abs=1e-12)


def test_nll_versus_scale_is_minimal_at_the_rms_residual():
    residuals = np.array([0.5, -1.0, 2.0, -0.3])
    scales = np.linspace(0.2, 4.0, 3801)
    best = scales[np.argmin(classroom_demos.nll_versus_scale(residuals, scales))]
    assert best == pytest.approx(np.sqrt(np.mean(residuals**2)), abs=2e-3)


def test_gaussian_has_the_largest_entropy_for_a_given_variance():
    entropies = classroom_demos.equal_variance_entropies(1.0)
    assert entropies["Gaussian"] == pytest.approx(0.5 * math.log(2 * math.pi * math.e))
    assert entropies["Gaussian"] > entropies["Laplace"] > entropies["Uniform"]
    for variance in (1.0, 2.5):
        entropies = classroom_demos.equal_variance_entropies(variance)
        assert entropies["Laplace"] == pytest.approx(scipy.stats.laplace(scale=math.sqrt(variance / 2)).entropy())
        assert entropies["Uniform"] == pytest.approx(scipy.stats.uniform(scale=math.sqrt(12 * variance)).entropy())


def test_the_truncated_nll_is_the_gaussian_nll_plus_log_z_against_scipy():
    terms = classroom_demos.truncated_nll_decomposition(observed=0.5, loc=0.0, scale=1.0, low=0.2, high=1.7)
    assert terms["normal_nll"] == pytest.approx(-scipy.stats.norm.logpdf(0.5), rel=1e-14)
    assert terms["truncated_nll"] == pytest.approx(-scipy.stats.truncnorm.logpdf(0.5, 0.2, 1.7), rel=1e-14)
    assert terms["log_normalizer"] == pytest.approx(
        math.log(scipy.stats.norm.cdf(1.7) - scipy.stats.norm.cdf(0.2)), rel=1e-14)


def test_closed_bound_nll_decreases_without_limit_while_open_bound_has_a_minimum():
    locs = np.linspace(-40.0, 8.0, 961)
    curves = classroom_demos.bound_nll_curves(observed=5.0, scale=1.0, margin=0.1, locs=locs)
    closed, opened, gaussian = curves[classroom_demos.CLOSED_LABEL], curves[classroom_demos.OPEN_LABEL], curves[classroom_demos.GAUSSIAN_LABEL]
    assert np.all(np.isfinite(closed)) and np.all(np.isfinite(opened))
    assert np.all(np.diff(closed) > 0), "closed-bound NLL must fall as mu falls, everywhere"
    open_best = locs[np.argmin(opened)]
    # Exercise 4: mu* ~ l - eps - sigma^2/eps = -5.1 (a little higher in fact); interior, far from the grid edge.
    assert -6.0 < open_best < -4.0
    assert locs[np.argmin(gaussian)] == pytest.approx(5.0, abs=0.05)


def test_descent_diverges_under_the_closed_bound_and_settles_under_the_open_bound():
    paths = classroom_demos.descend_loc(observed=5.0, scale=1.0, margin=0.1, steps=300, learning_rate=0.2)
    closed, opened, gaussian = paths[classroom_demos.CLOSED_LABEL], paths[classroom_demos.OPEN_LABEL], paths[classroom_demos.GAUSSIAN_LABEL]
    assert len(closed) == 301
    assert closed[-1] < -15 and closed[-1] - closed[-11] < -0.2  # still falling
    assert -6.0 < opened[-1] < -4.0 and abs(opened[-1] - opened[-11]) < 0.05  # settled
    assert gaussian[-1] == pytest.approx(5.0, abs=1e-6)


def test_the_open_bound_optimum_has_the_truncated_mean_at_the_bound():
    """Exercise 4's solution: lambda(a) - a = eps / sigma at the optimum, near a = sigma / eps, where the TN mean is l."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    for eps in (0.1, 0.04):
        a = brentq(lambda a: np.exp(norm.logpdf(a) - norm.logsf(a)) - a - eps, 0.0, 100.0)
        assert abs(a - 1 / eps) < 0.1 / eps
        mu = 5.0 - eps - a
        mean = float(demo_tensors.truncated_normal(mu, 1.0, 5.0 - eps, math.inf).mean)
        assert mean == pytest.approx(5.0, abs=1e-9)
        locs = classroom_demos.bound_loc_grid(5.0, 1.0, eps)
        curves = classroom_demos.bound_nll_curves(5.0, 1.0, eps, locs)
        assert locs[0] < mu and abs(locs[np.nanargmin(curves[classroom_demos.OPEN_LABEL])] - mu) < 0.2


# Section 6b: what the value of a fixed sigma changes, each fit against scipy's optimiser on scipy's densities.

def _scipy_fixed_scale_fit(distribution, scale, shared, margin=OPEN_BOUND_EPSILON):
    """The same maximum likelihood as classroom_demos.fit_fixed_scale, by Nelder-Mead on scipy.stats' NLL."""
    from scipy import optimize

    groups = classroom_demos.FIXED_SCALE_GROUPS
    z = np.array([g[0] for g in groups for _ in g[2]])
    low = np.array([g[1] - margin for g in groups for _ in g[2]])
    cost = np.array([x for g in groups for x in g[2]])
    member = np.array([i for i, g in enumerate(groups) for _ in g[2]])
    design = np.stack([np.ones_like(z), z], 1) if shared else np.eye(len(groups))[member]

    def nll(weights):
        loc = design @ weights
        if distribution == "N":
            return -scipy.stats.norm(loc, scale).logpdf(cost).sum()
        return -truncnorm((low - loc) / scale, np.inf, loc=loc, scale=scale).logpdf(cost).sum()

    start = np.linalg.lstsq(design, cost, rcond=None)[0]
    weights = optimize.minimize(nll, start, method="Nelder-Mead",
                                options=dict(xatol=1e-10, fatol=1e-13, maxiter=20_000)).x
    loc = design @ weights
    first = [int(np.flatnonzero(member == i)[0]) for i in range(len(groups))]
    return loc[first], low[first]


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize("distribution", ["N", "TN"])
def test_a_fixed_scale_fit_is_scipys_maximum_likelihood(distribution, shared):
    for scale in (1 / np.sqrt(2), np.sqrt(2)):
        fit = classroom_demos.fit_fixed_scale(distribution, scale, shared, OPEN_BOUND_EPSILON)
        loc, low = _scipy_fixed_scale_fit(distribution, scale, shared)
        assert np.allclose(fit.loc, loc, atol=2e-6)
        expected = loc if distribution == "N" else truncnorm((low - loc) / scale, np.inf, loc=loc, scale=scale).mean()
        assert np.allclose(fit.heuristic, expected, atol=2e-6)


def test_a_fixed_sigma_rescales_the_gaussians_loss_and_changes_the_truncated_gaussians_fit():
    """N: the same fit for the paper's and the authors' sigma. TN: a mu per group matches each group's mean h*
    whatever sigma (moment matching, exercise 12) with a different mu; one line for all gives two heuristics."""
    fits = {(f.distribution, round(f.scale, 3), f.shared): f
            for f in classroom_demos.fixed_scale_fits(OPEN_BOUND_EPSILON)}
    assert len(fits) == 8
    means = [np.mean(g[2]) for g in classroom_demos.FIXED_SCALE_GROUPS]
    for shared in (False, True):
        paper, authors = fits[("N", .707, shared)], fits[("N", 1.414, shared)]
        assert np.allclose(paper.loc, authors.loc, atol=1e-9) and abs(paper.mse - authors.mse) < 1e-9
    for scale in (.707, 1.414):
        assert np.allclose(fits[("TN", scale, False)].heuristic, means, atol=1e-7)
    assert fits[("TN", 1.414, False)].loc[0] < fits[("TN", .707, False)].loc[0] - 4  # -3.15 against 1.08
    paper, authors = fits[("TN", .707, True)], fits[("TN", 1.414, True)]
    # the notebook's prose: the middle group's heuristic 4.83 against 4.56, the MSE 2.00 against 2.35
    assert (round(paper.heuristic[1], 2), round(authors.heuristic[1], 2)) == (4.83, 4.56)
    assert (round(paper.mse, 2), round(authors.mse, 2)) == (2.0, 2.35)
    assert round(fits[("TN", 1.414, False)].loc[0], 2) == -3.15
    assert np.allclose(fits[("N", .707, True)].loc, np.polyval(np.polyfit(
        [g[0] for g in classroom_demos.FIXED_SCALE_GROUPS for _ in g[2]],
        [x for g in classroom_demos.FIXED_SCALE_GROUPS for x in g[2]], 1), [0, .5, 1]), atol=1e-9)


def test_exercise_12_the_truncated_mean_matches_the_sample_mean_at_the_maximum_likelihood():
    fit = classroom_demos.fit_fixed_scale("TN", np.sqrt(2), False, 0.1)
    for (_, bound, costs), mu in zip(classroom_demos.FIXED_SCALE_GROUPS, fit.loc):
        mean = truncnorm((bound - 0.1 - mu) / np.sqrt(2), np.inf, loc=mu, scale=np.sqrt(2)).mean()
        assert abs(mean - np.mean(costs)) < 1e-6


def test_the_exercises_checks_hold():
    """The asserts under the solutions of exercises 1, 2, 3, 6 and 9 (exercises 4, 5 and 8 have tests of their
    own)."""
    from scipy.stats import laplace, norm, poisson

    x, mu = 2.5, 1.0
    assert abs(-laplace.logpdf(x, loc=mu, scale=1.0) - (abs(x - mu) + np.log(2))) < 1e-12
    residuals = np.random.default_rng(0).normal(0.0, 2.0, 1000)
    scales = np.linspace(0.5, 4.0, 3501)
    best = scales[np.argmin(classroom_demos.nll_versus_scale(residuals, scales))]
    assert abs(best - np.sqrt(np.mean(residuals ** 2))) < 1e-3
    assert abs(float(demo_tensors.truncated_normal(0.0, 1.0, 0.0, np.inf).mean) - np.sqrt(2 / np.pi)) < 1e-12
    train, test = label_gaps.label_gaps(None, split="train"), label_gaps.label_gaps(None, split="test")
    assert all(b.exact_fraction() < a.exact_fraction() for a, b in zip(train, test))
    rng = np.random.default_rng(0)
    x = rng.normal(3.0, 2.0, 100_000)
    assert np.abs(np.histogram(norm.cdf(x, 3.0, 2.0), bins=10, range=(0, 1))[0] / x.size - 0.1).max() < 0.01
    v = rng.poisson(3.0, 100_000)
    assert np.abs(np.histogram(poisson.cdf(v, 3.0), bins=10, range=(0, 1))[0] / v.size - 0.1).max() > 0.05
    u = poisson.cdf(v - 1, 3.0) + rng.random(v.size) * poisson.pmf(v, 3.0)
    assert np.abs(np.histogram(u, bins=10, range=(0, 1))[0] / v.size - 0.1).max() < 0.01


def test_the_open_bound_minimum_at_the_papers_margin_is_where_the_classroom_says():
    """Section 6's slider prose: with h* = l = 5, sigma = 1 and epsilon = 0.1 the open-bound NLL is smallest at
    mu = -4.90 (Exercise 4's approximation: -5.1), and the truncated mean there is h* itself (scipy's truncnorm)."""
    import scipy.optimize

    low = 5.0 - OPEN_BOUND_EPSILON
    result = scipy.optimize.minimize_scalar(lambda mu: -scipy.stats.truncnorm.logpdf(5.0, low - mu, np.inf, loc=mu),
                                            bounds=(-30.0, 5.0), method="bounded", options={"xatol": 1e-8})
    assert round(result.x, 2) == -4.90
    assert round(low - 1.0 / OPEN_BOUND_EPSILON, 1) == -5.1
    assert scipy.stats.truncnorm.mean(low - result.x, np.inf, loc=result.x) == pytest.approx(5.0, abs=1e-6)
