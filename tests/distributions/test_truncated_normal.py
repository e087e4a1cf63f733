"""TruncatedNormal against mpmath (80 digits at the exact floating inputs), scipy, Normal, and itself."""
from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
import scipy.stats
import torch
from hypothesis import example, given, settings
from hypothesis import strategies as st

from tnlib.distributions.mpmath_reference import PARAMETERS as PARAMETER_NAMES
from tnlib.distributions.mpmath_reference import reference, reference_gradients
from tnlib import TruncatedNormal

INF = math.inf


def _grid() -> list[tuple[float, float, float, float]]:
    """(loc, scale, low, high) covering the regimes the implementation tells apart."""
    cases = []
    for scale in (1e-3, 1.0, 1e3):
        # one-sided bounds, loc up to 1e5 scales outside (below a lower bound / above an upper bound)
        for k in (0.0, 0.5, 3.0, 10.0, 37.0, 99.0, 101.0, 1e3, 1e5):
            cases.append((-k * scale, scale, 0.0, INF))
            cases.append((2.0 + k * scale, scale, -INF, 2.0))
            cases.append((k * scale, scale, 0.0, INF))  # loc inside, k scales above the bound
        # two-sided, loc far outside on either side, and inside
        for k in (-1e5, -300.0, -40.0, -2.0, 0.5, 2.0, 40.0, 300.0, 1e5):
            cases.append((1.0 + k * scale, scale, 1.0, 1.0 + 2.0 * scale))
        # narrow intervals: 1e-6 scale wide, and a few ulps wide, at several places
        for centre in (-50.0, -3.0, 0.0, 0.3, 3.0, 50.0):
            low = 7.0 + centre * scale
            cases.append((7.0, scale, low, low + 1e-6 * scale))
            cases.append((7.0, scale, low, float(np.nextafter(np.nextafter(np.nextafter(low, INF), INF), INF))))
    cases += [(0.0, 1.0, -INF, INF), (0.0, 1.0, 0.2, 1.7), (3.0, 2.0, -1.0, 1.0), (0.0, 1.0, -1e-3, 2e-3)]
    return cases


GRID = _grid()


def _points(loc, scale, low, high):
    """A few observation points inside [low, high]."""
    lo = low if low > -INF else min(loc, high) - 5 * scale
    hi = high if high < INF else max(loc, lo) + 5 * scale
    return sorted({lo, hi, lo + 0.25 * (hi - lo), lo + 1e-3 * (hi - lo)})


def _dist(params, dtype, requires_grad=False):
    tensors = [torch.tensor(p, dtype=dtype, requires_grad=requires_grad and i < 2) for i, p in enumerate(params)]
    return TruncatedNormal(*tensors), tensors


@pytest.mark.parametrize("params", GRID)
def test_float64_matches_mpmath(params):
    loc, scale, low, high = params
    d, (t_loc, t_scale, *_) = _dist(params, torch.float64, requires_grad=True)
    ref = reference(loc, scale, low, high)
    std = ref["std"]
    mean = d.mean
    assert low <= mean.item() <= high
    # relative 1e-10; where the mean is ~0 relative to the spread, 1e-10 of the truncated std
    assert abs(mean.item() - ref["mean"]) <= 1e-10 * max(abs(ref["mean"]), std)
    assert d.log_normalizer.item() == pytest.approx(ref["log_z"], rel=1e-10, abs=1e-300)
    assert d.variance.item() == pytest.approx(ref["variance"], rel=1e-10, abs=1e-300)
    assert d.entropy().item() == pytest.approx(ref["entropy"], rel=1e-9, abs=1e-9)
    g_loc, g_scale = torch.autograd.grad(mean, (t_loc, t_scale))
    width = min((high - low) / scale, 1.0)
    # derivatives of the mean are O(1) (d/dloc is Var/scale^2 <= 1); for a few-ulp interval they cancel to
    # O(width) terms, so the tolerance is taken relative to that natural size
    assert abs(g_loc.item() - ref["dmean_dloc"]) <= 1e-8 * max(abs(ref["dmean_dloc"]), 1e-30)
    assert abs(g_scale.item() - ref["dmean_dscale"]) <= 1e-8 * max(abs(ref["dmean_dscale"]), width)
    for x in _points(*params):
        assert low <= x <= high
        d, (t_loc, t_scale, *_) = _dist(params, torch.float64, requires_grad=True)
        lp = d.log_prob(torch.tensor(x, dtype=torch.float64))
        ref_x = reference(loc, scale, low, high, x)
        assert abs(lp.item() - ref_x["log_prob"]) <= 1e-10 * max(1.0, abs(ref_x["log_prob"]) * 1e-3), (x, lp)
        g_loc, g_scale = torch.autograd.grad(lp, (t_loc, t_scale))
        # d log p / d(loc, scale) are differences of O(|xi|/scale) terms: tolerance relative to that size
        size = (1.0 + abs(x - loc) / scale) / scale
        assert abs(g_loc.item() - ref_x["dlogp_dloc"]) <= 1e-8 * max(abs(ref_x["dlogp_dloc"]), size)
        assert abs(g_scale.item() - ref_x["dlogp_dscale"]) <= 1e-8 * max(abs(ref_x["dlogp_dscale"]), size * (
            1.0 + abs(x - loc) / scale))


@pytest.mark.parametrize("params", GRID)
def test_float32_matches_mpmath(params):
    # the reference is evaluated at the exact float32 inputs
    params32 = tuple(float(np.float32(p)) for p in params)
    loc, scale, low, high = params32
    if not low < high:  # a few-ulp float64 interval collapses in float32: make it a few float32 ulps wide
        high32 = np.float32(low)
        for _ in range(3):
            high32 = np.nextafter(high32, np.float32(INF))
        params32 = (loc, scale, low, float(high32))
        high = params32[3]
    d, (t_loc, t_scale, *_) = _dist(params32, torch.float32, requires_grad=True)
    ref = reference(*params32)
    mean = d.mean
    assert low <= mean.item() <= high
    assert abs(mean.item() - ref["mean"]) <= 1e-5 * max(abs(ref["mean"]), ref["std"])
    g = torch.autograd.grad(mean, (t_loc, t_scale))
    assert all(torch.isfinite(gi).all() for gi in g)
    for x in _points(*params32):
        x = min(max(float(np.float32(x)), low), high)
        d, (t_loc, t_scale, *_) = _dist(params32, torch.float32, requires_grad=True)
        lp = d.log_prob(torch.tensor(x, dtype=torch.float32))
        ref_lp = reference(*params32, x)["log_prob"]
        assert abs(lp.item() - ref_lp) <= 1e-4 * max(1.0, abs(ref_lp)), (x, lp.item(), ref_lp)
        g = torch.autograd.grad(lp, (t_loc, t_scale))
        assert all(torch.isfinite(gi).all() for gi in g)


def test_float32_narrow_interval_is_finite_where_stable_trunc_gaussian_is_not():
    # the regime stable-trunc-gaussian 1.3.9 returns +inf log_prob and NaN gradients in (see reports/)
    loc = torch.tensor([0.0, 0.0, -1e5], requires_grad=True)
    scale = torch.ones(3)
    low = torch.tensor([1.0, 3.0, 0.0])
    high = low + torch.tensor([1e-6, 1e-6, INF])
    d = TruncatedNormal(loc, scale, low, high)
    lp = d.log_prob(low)
    assert torch.isfinite(lp).all()
    (lp.sum() + d.mean.sum()).backward()
    assert torch.isfinite(loc.grad).all()


# ------------------------------------------------------------------------------------------------------------
# Gradients of every statistic w.r.t. all four parameters (and the value / probability where there is one)
# ------------------------------------------------------------------------------------------------------------

# (loc, scale, low, high, x, p) per element: x an observation inside [low, high], p a probability for icdf.
# General path: finite bounds in each regime the core distinguishes, plus one infinite lower bound.
GENERAL_BATCH = [
    (-3.0, 0.7, 0.0, 1.5, 0.2, 0.6),  # left tail: loc 4.3 scales below the interval (frame)
    (0.3, 1.0, 0.0, 2.0, 0.7, 0.3),  # straddling
    (5.0, 1.0, -1.0, 1.0, 0.4, 0.9),  # right tail: loc above the interval (mirrored frame)
    (0.2, 1.0, 0.5, 0.55, 0.53, 0.4),  # narrow interval (quadrature)
    (-37.5, 1.5, 0.0, 4.0, 0.01, 0.5),  # far left tail, a = 25 (third cumulant by quadrature)
    (-1.0, 2.0, -INF, 1.0, 0.0, 0.2),  # upper bound only
]
# One-sided fast path (high = +inf everywhere: the training configuration)
ONE_SIDED_BATCH = [
    (0.3, 1.0, 0.0, INF, 0.7, 0.3),  # loc inside
    (-2.0, 0.5, 0.0, INF, 0.3, 0.6),  # loc 4 scales below the bound
    (5.0, 2.0, 1.0, INF, 4.0, 0.1),  # loc above the bound
    (-37.5, 1.5, 0.0, INF, 0.01, 0.5),  # a = 25: the fast path's far-tail series
    (1.0, 1.0, -INF, INF, 0.5, 0.8),  # no bounds: a Normal
]
STATISTIC_NAMES = ["log_prob", "cdf", "icdf", "mean", "variance", "stddev", "entropy", "log_normalizer", "mode",
                   "rsample"]


def _statistic(name: str, loc, scale, low, high, value=None) -> torch.Tensor:
    d = TruncatedNormal(loc, scale, low, high)
    if name in ("log_prob", "cdf", "icdf"):
        return getattr(d, name)(value)
    if name == "entropy":
        return d.entropy()
    if name == "rsample":
        torch.manual_seed(0)  # the same uniforms in every evaluation: the reparameterised sample is a function
        return d.rsample((2,))
    return getattr(d, name)


def _batch_tensors(batch):
    return [torch.tensor(column, dtype=torch.float64, requires_grad=True) for column in zip(*batch)]


@pytest.mark.parametrize("path", ["general", "one_sided"])
@pytest.mark.parametrize("name", STATISTIC_NAMES)
def test_gradcheck_every_statistic(path, name):
    loc, scale, low, high, x, p = _batch_tensors(GENERAL_BATCH if path == "general" else ONE_SIDED_BATCH)
    d = TruncatedNormal(loc, scale, low, high)
    assert d._one_sided == (path == "one_sided")
    if path == "general":  # the batch reaches the regimes its comments name
        core = d._core
        assert core.flip.tolist() == [False, False, True, False, False, False]
        assert core.frame.tolist() == [True, False, True, True, True, False]
    value = {"log_prob": x, "cdf": x, "icdf": p}.get(name)
    inputs = (loc, scale, low, high) + ((value,) if value is not None else ())
    # infinite bounds stay infinite under the finite-difference steps: their numerical derivative is 0, and so
    # must the analytic one be. Tolerances are tight: central differences in float64 are good to ~1e-9 here.
    assert torch.autograd.gradcheck(lambda *args: _statistic(name, *args), inputs, atol=1e-8, rtol=1e-6)


# a few points of each regime, x inside the bulk, p for icdf
MPMATH_GRADIENT_POINTS = [
    ((0.3, 1.0, 0.0, 2.0), 0.7, 0.3),  # straddling
    ((0.3, 1.0, 0.0, INF), 0.7, 0.3),  # the same on the one-sided fast path
    ((-3.0, 0.7, 0.0, 1.5), 0.2, 0.6),
    ((5.0, 1.0, -1.0, 1.0), 0.4, 0.9),
    ((0.2, 1.0, 0.5, 0.51), 0.503, 0.4),
    ((-37.5, 1.5, 0.0, INF), 0.01, 0.5),
    ((-30.0, 1.5, 0.0, 0.05), 0.01, 0.5),
    ((-1e3, 1.0, 0.0, 2.0), 1e-4, 0.5),
    ((-1e5, 1.0, 0.0, INF), 3e-6, 0.7),
    ((2.0, 1.0, -INF, 0.0), -0.5, 0.5),
    # an interval three ulps wide, observed one ulp above its lower bound
    ((7.0, 1.0, 7.3, float(np.nextafter(np.nextafter(np.nextafter(7.3, INF), INF), INF))),
     float(np.nextafter(7.3, INF)), 0.4),
]


@pytest.mark.parametrize("params, x, p", MPMATH_GRADIENT_POINTS)
def test_gradients_match_mpmath(params, x, p):
    ref = reference_gradients(*params, x, p)
    assert set(ref) | {"rsample"} == set(STATISTIC_NAMES)
    for name, expected in ref.items():
        loc, scale, low, high = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in params)
        value = torch.tensor(p if name == "icdf" else x, dtype=torch.float64, requires_grad=True)
        inputs = [loc, scale, low, high] + ([value] if "value" in expected else [])
        out = _statistic(name, loc, scale, low, high, value)
        grads = torch.autograd.grad(out, inputs, allow_unused=True)  # the mode does not depend on scale
        # relative to the gradient's largest component: a component far below it (d Var / d loc at a few
        # scales' width, say) is the difference of terms of that size
        size = max(abs(v) for v in expected.values())
        for argument, grad in zip(expected, grads):
            if grad is None:  # no path from the argument: only right where the derivative is exactly 0
                assert expected[argument] == 0.0, (name, argument)
                continue
            assert abs(grad.item() - expected[argument]) <= 1e-9 * size, (name, argument, grad.item(), expected)


def test_variance_and_entropy_have_scale_gradients_only_at_a_fixed_shape():
    # TN(0.3, 1, 0, 2): autograd gave d Var / d scale = 0.541 and d H / d scale = 1.0 (the derivatives at a
    # fixed shape), and no gradient for loc, low, high
    ref = reference_gradients(0.3, 1.0, 0.0, 2.0, 0.7, 0.3)
    params = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (0.3, 1.0, 0.0, 2.0)]
    d = TruncatedNormal(*params)
    for name, out in (("variance", d.variance), ("entropy", d.entropy())):
        grads = torch.autograd.grad(out, params)
        for argument, grad in zip(PARAMETER_NAMES, grads):
            assert grad.item() == pytest.approx(ref[name][argument], rel=1e-12, abs=1e-15), (name, argument)


def test_reference_derivatives_agree_with_analytic_forms():
    # the mpmath differentiation behind reference_gradients against the closed forms of reference()
    for (loc, scale, low, high), x, p in MPMATH_GRADIENT_POINTS[:5]:
        numeric = reference_gradients(loc, scale, low, high, x, p)
        analytic = reference(loc, scale, low, high, x)
        assert numeric["mean"]["loc"] == pytest.approx(analytic["dmean_dloc"], rel=1e-14)
        assert numeric["mean"]["scale"] == pytest.approx(analytic["dmean_dscale"], rel=1e-14, abs=1e-300)
        assert numeric["log_prob"]["loc"] == pytest.approx(analytic["dlogp_dloc"], rel=1e-14)
        assert numeric["log_prob"]["scale"] == pytest.approx(analytic["dlogp_dscale"], rel=1e-14)


@pytest.mark.parametrize("batch", [GENERAL_BATCH, ONE_SIDED_BATCH])
def test_float32_gradients_agree_with_float64(batch):
    for name in STATISTIC_NAMES:
        if name == "rsample":  # the same seed draws different uniforms in float32 and float64
            continue
        grads = {}
        for dtype in (torch.float32, torch.float64):
            tensors = [torch.tensor(column, dtype=dtype, requires_grad=True) for column in zip(*batch)]
            loc, scale, low, high, x, p = tensors
            value = {"log_prob": x, "cdf": x, "icdf": p}.get(name)
            inputs = [loc, scale, low, high] + ([value] if value is not None else [])
            out = _statistic(name, loc, scale, low, high, value)
            found = torch.autograd.grad(out.sum(), inputs, allow_unused=True)
            grads[dtype] = torch.stack([torch.zeros_like(t) if g is None else g for g, t in zip(found, inputs)])
            grads[dtype] = grads[dtype].double()
        size = grads[torch.float64].abs().amax(dim=0)  # per element, over the arguments
        assert torch.isfinite(grads[torch.float32]).all(), name
        assert ((grads[torch.float32] - grads[torch.float64]).abs() <= 1e-4 * size + 1e-30).all(), name


def test_second_derivatives_raise_a_clear_error():
    loc = torch.tensor([0.3, -2.0], dtype=torch.float64, requires_grad=True)
    for high in (2.0, INF):  # general and one-sided paths
        d = TruncatedNormal(loc, torch.ones(2, dtype=torch.float64), torch.zeros(2, dtype=torch.float64),
                            torch.full((2,), high, dtype=torch.float64))
        x = torch.full((2,), 0.5, dtype=torch.float64)
        for out in (d.mean, d.variance, d.entropy(), d.log_prob(x), d.cdf(x), d.icdf(x), d.log_normalizer):
            with pytest.raises(RuntimeError, match="only first derivatives"):
                torch.autograd.grad(out.sum(), loc, create_graph=True)
            # first derivatives without a graph still work
            assert torch.isfinite(torch.autograd.grad(out.sum(), loc)[0]).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_infinite_bounds_equal_normal(dtype):
    loc = torch.linspace(-3, 3, 7, dtype=dtype)
    scale = torch.linspace(0.1, 4, 7, dtype=dtype)
    x = torch.linspace(-5, 5, 7, dtype=dtype)
    tn = TruncatedNormal(loc, scale, -INF, INF)
    n = torch.distributions.Normal(loc, scale)
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == torch.float64 else dict(rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(tn.log_prob(x), n.log_prob(x), **tol)
    torch.testing.assert_close(tn.mean, n.mean, **tol)
    torch.testing.assert_close(tn.variance, n.variance, **tol)
    torch.testing.assert_close(tn.entropy(), n.entropy(), **tol)
    torch.testing.assert_close(tn.cdf(x), n.cdf(x), **tol)
    p = torch.linspace(0.05, 0.95, 7, dtype=dtype)
    torch.testing.assert_close(tn.icdf(p), n.icdf(p), **tol)
    assert torch.equal(tn.mode, loc)


@pytest.mark.parametrize("params", [(0.0, 1.0, -1.0, 2.0), (1.0, 2.0, 0.0, INF), (-2.0, 0.5, -INF, -1.0),
                                    (3.0, 1.0, 0.0, 1.0), (0.0, 1.0, 2.0, 6.0)])
def test_agrees_with_scipy_in_moderate_regimes(params):
    loc, scale, low, high = params
    ref = scipy.stats.truncnorm((low - loc) / scale, (high - loc) / scale, loc=loc, scale=scale)
    d = TruncatedNormal(*(torch.tensor(p, dtype=torch.float64) for p in params))
    xs = np.linspace(max(low, loc - 4 * scale), min(high, loc + 4 * scale), 9)
    xt = torch.tensor(xs)
    np.testing.assert_allclose(d.log_prob(xt).numpy(), ref.logpdf(xs), rtol=1e-9)
    np.testing.assert_allclose(d.cdf(xt).numpy(), ref.cdf(xs), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(d.mean.item(), ref.mean(), rtol=1e-9)
    np.testing.assert_allclose(d.variance.item(), ref.var(), rtol=1e-8)
    with np.errstate(invalid="ignore"):  # scipy forms inf * 0 at an infinite bound and returns nan there
        ref_entropy = ref.entropy()
    if np.isfinite(ref_entropy):  # one-sided cases: the entropy is checked against mpmath elsewhere
        np.testing.assert_allclose(d.entropy().item(), ref_entropy, rtol=1e-8)
    ps = np.array([0.01, 0.3, 0.5, 0.9, 0.999])
    np.testing.assert_allclose(d.icdf(torch.tensor(ps)).numpy(), ref.ppf(ps), rtol=1e-8)


finite = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False)
scales = st.floats(min_value=1e-2, max_value=1e2)
widths = st.floats(min_value=1e-3, max_value=1e3)


@settings(max_examples=150, deadline=None)
@given(loc=finite, scale=scales, low=finite, width=widths, upper_open=st.booleans())
def test_mean_within_bounds_and_increasing_in_loc(loc, scale, low, width, upper_open):
    high = INF if upper_open else low + width
    locs = torch.tensor([loc - scale, loc, loc + scale], dtype=torch.float64)
    d = TruncatedNormal(locs, torch.tensor(scale, dtype=torch.float64), torch.tensor(low, dtype=torch.float64),
                        torch.tensor(high, dtype=torch.float64))
    mean = d.mean
    assert ((mean >= low) & (mean <= high)).all()
    assert (mean[1:] >= mean[:-1]).all()  # the mean is non-decreasing in loc (strictly, up to rounding)
    assert torch.isfinite(d.log_normalizer).all()


@settings(max_examples=100, deadline=None)
@given(loc=finite, scale=scales, low=finite, width=widths, q=st.lists(st.floats(0.001, 0.999), min_size=3,
                                                                         max_size=6))
# the upper tail of a straddling element across 36 scales, where the vectorized pass leaves the value to the
# per-element kernel: both must reach 1 alike
@example(loc=78.0, scale=10.3359375, low=0.0, width=465.0, q=[0.5, 0.5, 0.5])
def test_cdf_monotone_and_icdf_inverts(loc, scale, low, width, q):
    high = low + width
    d = TruncatedNormal(*(torch.tensor(v, dtype=torch.float64) for v in (loc, scale, low, high)))
    x = torch.linspace(low, high, 33, dtype=torch.float64)
    cdf = d.cdf(x)
    assert (cdf[1:] >= cdf[:-1]).all()
    assert cdf[0].item() == pytest.approx(0.0, abs=1e-12) and cdf[-1].item() == pytest.approx(1.0, abs=1e-12)
    # icdf(cdf(x)) = x at points where the cdf is informative (density not vanishing)
    inner = torch.tensor(sorted(q), dtype=torch.float64) * (high - low) + low
    p = d.cdf(inner)
    ok = (p > 1e-9) & (p < 1 - 1e-9)
    back = d.icdf(p[ok])
    spread = min(high - low, d.stddev.item() * 10)
    assert torch.allclose(back, inner[ok], rtol=0, atol=1e-7 * spread + 1e-12)


@pytest.mark.parametrize("params", [(0.0, 1.0, 0.2, 1.7), (-3.0, 1.0, 0.0, INF), (50.0, 2.0, -INF, 0.0),
                                    (0.0, 1.0, -INF, INF), (0.0, 1.0, 5.0, 5.001)])
def test_samples_follow_the_cdf(params):
    torch.manual_seed(0)
    d = TruncatedNormal(*(torch.tensor(p, dtype=torch.float64) for p in params))
    x = d.sample((4000,))
    low, high = params[2], params[3]
    assert ((x >= low) & (x <= high)).all()
    # Kolmogorov-Smirnov against the distribution's own cdf (fixed seed; the threshold is not hit by chance)
    result = scipy.stats.kstest(x.numpy(), lambda v: d.cdf(torch.as_tensor(v)).numpy())
    assert result.pvalue > 1e-3


def test_rsample_far_tail_is_accurate_and_differentiable():
    # loc 1e5 scales below the bound: samples follow the exponential-like tail, no clamping artefacts
    loc = torch.tensor(-1e5, dtype=torch.float64, requires_grad=True)
    d = TruncatedNormal(loc, torch.tensor(1.0, dtype=torch.float64), torch.tensor(0.0, dtype=torch.float64),
                        torch.tensor(INF, dtype=torch.float64))
    torch.manual_seed(1)
    x = d.rsample((20000,))
    assert (x > 0).all() and torch.isfinite(x).all()
    # the tail is approximately Exponential(rate = 1e5): mean 1e-5
    assert x.mean().item() == pytest.approx(1e-5, rel=0.03)
    x.mean().backward()
    # d sample / d loc = the conditional derivative, O(1/a^2) here: finite and small
    assert torch.isfinite(loc.grad) and abs(loc.grad.item()) < 1e-6


def test_broadcasting_expand_and_shapes():
    d = TruncatedNormal(torch.zeros(3, 1), torch.ones(1, 4), 0.0, INF)
    assert d.batch_shape == (3, 4)
    assert d.mean.shape == (3, 4) and d.variance.shape == (3, 4)
    assert d.log_prob(torch.ones(2, 3, 4)).shape == (2, 3, 4)
    assert d.sample((5,)).shape == (5, 3, 4)
    e = TruncatedNormal(0.0, 1.0, -1.0, 1.0).expand((2, 2))
    assert e.mean.shape == (2, 2)
    assert torch.allclose(e.mean, torch.zeros(2, 2))
    assert isinstance(d.support.check(torch.ones(3, 4)), torch.Tensor)



def test_float_tensors_of_one_shape_are_kept_as_given_and_others_broadcast():
    loc, scale = torch.zeros(3), torch.ones(3, dtype=torch.float64)
    low, high = torch.full((3,), -1.0), torch.full((3,), INF)
    d = TruncatedNormal(loc, scale, low, high)
    assert d.loc is loc and d.scale is scale and d.low is low and d.high is high
    assert d.batch_shape == (3,)
    widened = TruncatedNormal(torch.zeros(1), scale, low, high)
    assert widened.loc.shape == (3,) and widened.batch_shape == (3,)
    with pytest.raises(TypeError, match="loc is float16"):
        TruncatedNormal(loc.half(), scale, low, high)


def test_log_prob_outside_support():
    d = TruncatedNormal(torch.tensor(0.0), torch.tensor(1.0), torch.tensor(0.0), torch.tensor(1.0),
                        validate_args=False)
    assert d.log_prob(torch.tensor(2.0)).item() == -INF
    assert d.log_prob(torch.tensor(-0.1)).item() == -INF
    strict = TruncatedNormal(torch.tensor(0.0), torch.tensor(1.0), torch.tensor(0.0), torch.tensor(1.0),
                             validate_args=True)
    with pytest.raises(ValueError):
        strict.log_prob(torch.tensor(2.0))


@pytest.mark.parametrize("bad, message", [
    ((0.0, 0.0, 0.0, 1.0), "scale"),
    ((0.0, -1.0, 0.0, 1.0), "scale"),
    ((0.0, 1.0, 2.0, 1.0), "low must be < high"),
    ((math.nan, 1.0, 0.0, 1.0), "NaN"),
    ((0.0, 1.0, math.nan, 1.0), "NaN"),
])
def test_bad_parameters_raise_clear_errors(bad, message):
    with pytest.raises(ValueError, match=message):
        TruncatedNormal(*(torch.tensor(v) for v in bad), validate_args=True)


def test_paper_figure1_example():
    d = TruncatedNormal(torch.tensor(0.0, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64),
                        torch.tensor(0.2, dtype=torch.float64), torch.tensor(1.7, dtype=torch.float64))
    ref = scipy.stats.truncnorm(0.2, 1.7)
    assert d.mean.item() == pytest.approx(ref.mean(), rel=1e-12)
    assert 0.2 < d.mean.item() < 1.7  # the mean respects the bounds although loc = 0 lies outside
    assert d.mode.item() == pytest.approx(0.2)


def test_dtype_and_device_follow_inputs():
    for dtype in (torch.float32, torch.float64):
        d = TruncatedNormal(torch.zeros(2, dtype=dtype), torch.ones(2, dtype=dtype), 0.0, INF)
        assert d.mean.dtype == dtype and d.log_prob(torch.ones(2, dtype=dtype)).dtype == dtype


# ------------------------------------------------------------------------------------------------------------
# cdf, icdf and scale derivatives by relative error: mirrored elements and narrow intervals
# ------------------------------------------------------------------------------------------------------------

def _cdf_cases() -> list[tuple[tuple[float, float, float, float], float]]:
    """(params, x): loc far above the interval (mirrored: the cdf is a far-tail mass), far below, inside,
    and narrow intervals, at points spread over each support."""
    cases = [((20.0, 1.0, 0.0, 5.0), 1.0)]  # loc 15 scales above the interval: the cdf is 2.3e-30
    for loc, scale, low, high in [(20.0, 1.0, 0.0, 5.0), (8.0, 0.5, -1.0, 2.0), (30.0, 2.0, -INF, 0.0),
                                  (1e3, 30.0, 0.0, 50.0), (-20.0, 1.0, -5.0, 0.0), (-7.0, 3.0, 0.0, INF),
                                  (0.3, 1.0, 0.0, 2.0), (1.0, 1.0, -INF, 0.5), (5.0, 1.0, 4.0, INF)]:
        lo = low if low > -INF else high - 6 * scale
        hi = high if high < INF else low + 6 * scale
        cases += [((loc, scale, low, high), lo + f * (hi - lo)) for f in (1e-6, 0.01, 0.2, 0.5, 0.9, 0.999)]
    for scale in (1e-3, 1.0, 1e3):  # narrow intervals, loc below, inside and above
        for centre in (-40.0, -1.0, 0.0, 0.3, 2.0, 40.0):
            for width in (1e-13, 1e-6, 0.3):
                low = 3.0 + (centre - width / 2) * scale
                high = low + width * scale
                if low < high:
                    cases.append(((3.0, scale, low, high), low + 0.3 * (high - low)))
    return cases


CDF_CASES = _cdf_cases()


def _reference_cdf(params, x) -> float:
    from tnlib.distributions.mpmath_reference import DIGITS, mpf_bound, reference_cdf
    with mp.workdps(DIGITS):
        return float(reference_cdf(*(mpf_bound(v) for v in params), mp.mpf(x)))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_cdf_relative_error_against_mpmath(dtype):
    cast = float if dtype == torch.float64 else (lambda v: float(np.float32(v)))
    # rounding of each exp(-q) the cdf goes through costs ~eps |q| relatively; |log F| bounds that q
    eps = torch.finfo(dtype).eps
    tiny = 1e-300 if dtype == torch.float64 else 1e-30  # below: the reference underflows the dtype
    checked = 0
    for params, x in CDF_CASES:
        params, x = tuple(cast(v) for v in params), cast(x)
        if not params[2] < params[3]:
            continue
        expected = _reference_cdf(params, x)
        if expected < tiny:
            continue
        d = TruncatedNormal(*(torch.tensor(v, dtype=dtype) for v in params))
        got = d.cdf(torch.tensor(x, dtype=dtype)).item()
        tolerance = 64 * eps * (1.0 + abs(math.log(expected)))
        assert abs(got - expected) <= tolerance * expected, (params, x, got, expected)
        checked += 1
    assert checked > 60


@pytest.mark.parametrize("params, x", [
    ((0.0, 1.0, 0.0, INF), 1e-9), ((0.0, 1.0, 0.0, INF), 0.3), ((-0.5, 1.0, 0.0, INF), 0.0626),
    ((-0.5, 1.0, 0.0, INF), 0.0624), ((-1.0, 2.0, 0.0, 3.0), 0.26), ((-1.0, 2.0, 0.0, 3.0), 1e-7),
    ((0.0, 1.0, -1e-3, 1e-3), -1e-3 + 1e-9), ((0.3, 1.0, 0.0, 0.2), 0.1999),
])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_cdf_near_the_mode_keeps_its_relative_accuracy(params, x, dtype):
    # the lower bound within a scale of the mode: the cdf as a difference of erf's where it cancels at most 3 bits,
    # by quadrature closer to the bound, and in narrow intervals
    cast = float if dtype == torch.float64 else (lambda v: float(np.float32(v)))
    params, x = tuple(cast(v) for v in params), cast(x)
    expected = _reference_cdf(params, x)
    got = TruncatedNormal(*(torch.tensor(v, dtype=dtype) for v in params)).cdf(torch.tensor(x, dtype=dtype)).item()
    eps = torch.finfo(dtype).eps
    assert abs(got - expected) <= 64 * eps * (1.0 + abs(math.log(expected))) * expected, (params, x, got, expected)


def test_cdf_far_below_loc_is_the_far_tail_mass():
    d = TruncatedNormal(torch.tensor(20.0, dtype=torch.float64), torch.tensor(1.0, dtype=torch.float64),
                        torch.tensor(0.0, dtype=torch.float64), torch.tensor(5.0, dtype=torch.float64))
    expected = _reference_cdf((20.0, 1.0, 0.0, 5.0), 1.0)  # (Phi(-19) - Phi(-20)) / (Phi(-15) - Phi(-20)), about 2.3e-30
    assert d.cdf(torch.tensor(1.0, dtype=torch.float64)).item() == pytest.approx(expected, rel=1e-13)


@pytest.mark.parametrize("params, p", [
    ((20.0, 1.0, 0.0, 5.0), 2.3e-30),  # mirrored: the canonical probability is 1 - 2.3e-30
    ((50.0, 2.0, -INF, 0.0), 1e-17),
    ((20.0, 1.0, 0.0, 5.0), 0.3),
    ((-20.0, 1.0, 0.0, INF), 1.0 - 2.0**-20),  # the upper tail of a far-tail element
    ((0.3, 1.0, 0.0, 2.0), 0.9),
])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_icdf_relative_error_and_round_trip(params, p, dtype):
    from tnlib.distributions.mpmath_reference import DIGITS, mpf_bound, reference_icdf
    p = float(np.float32(p)) if dtype == torch.float32 else p  # the reference at the exact input
    with mp.workdps(DIGITS):
        expected = float(reference_icdf(*(mpf_bound(v) for v in params), mp.mpf(p)))
    d = TruncatedNormal(*(torch.tensor(v, dtype=dtype) for v in params))
    x = d.icdf(torch.tensor(p, dtype=dtype))
    # icdf is well conditioned here (|x dF/dx / F| is O(a)): relative error a few hundred ulps at most
    rtol = 1e-13 if dtype == torch.float64 else 1e-5
    assert abs(x.item() - expected) <= rtol * abs(expected), (x.item(), expected)
    back = d.cdf(x).item()
    assert back == pytest.approx(p, rel=1e-11 if dtype == torch.float64 else 1e-4)


# (loc, scale, low, high): the right frame solved in closed form (one-sided from the mode, a tail interval, loc far
# below a bound with x small beside it, where Newton refines the closed form) and a narrow interval (Newton alone)
ICDF_REGIMES = [(0.0, 1.0, 0.0, INF), (0.0, 1.0, 3.0, 5.0), (-20.0, 1.0, 0.0, INF), (2.0, 0.5, 3.0, INF),
                (-3.0, 0.7, 0.0, 1.5), (0.0, 1.0, -1e-3, 1e-3), (10.0, 2.0, -INF, 4.0)]
ICDF_PROBABILITIES = [1e-12, 1e-4, 0.3, 0.5, 0.7, 1.0 - 1e-6]


@pytest.mark.parametrize("params", ICDF_REGIMES)
def test_icdf_in_every_regime_has_the_relative_error_of_the_reference(params):
    from tnlib.distributions.mpmath_reference import DIGITS, mpf_bound, reference_icdf
    d = TruncatedNormal(*(torch.tensor(v, dtype=torch.float64) for v in params))
    got = d.icdf(torch.tensor(ICDF_PROBABILITIES, dtype=torch.float64)).tolist()
    for p, x in zip(ICDF_PROBABILITIES, got):
        with mp.workdps(DIGITS):
            expected = float(reference_icdf(*(mpf_bound(v) for v in params), mp.mpf(p)))
        # (x = 0 at the median of the symmetric interval: the reference's bisection leaves it at ~1e-82)
        assert abs(x - expected) <= 1e-13 * abs(expected) + 1e-60, (params, p, x, expected)


def _narrow_interval_cases():
    cases = []
    for scale in (1e-3, 1.0, 1e3):
        for width in (1e-13, 1e-9, 1e-3):
            for centre in (-50.0, -3.0, 0.3, 0.9, 3.0, 50.0):
                low = (centre - width / 2) * scale
                cases.append((0.0, scale, low, low + width * scale))
    return cases


@pytest.mark.parametrize("statistic", ["log_normalizer", "log_prob"])
def test_scale_derivative_on_narrow_intervals_by_relative_error(statistic):
    from tnlib.distributions.mpmath_reference import DIGITS, reference_log_normalizer, reference_log_prob
    for loc, scale, low, high in _narrow_interval_cases():
        x = low + 0.3 * (high - low)
        with mp.workdps(DIGITS):
            args = [mp.mpf(v) for v in (loc, scale, low, high, x)]
            if statistic == "log_normalizer":
                expected = mp.diff(lambda s: reference_log_normalizer(args[0], s, args[2], args[3]), args[1])
            else:
                expected = mp.diff(lambda s: reference_log_prob(args[0], s, args[2], args[3], args[4]), args[1])
        t = [torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (loc, scale, low, high)]
        d = TruncatedNormal(*t)
        out = d.log_normalizer if statistic == "log_normalizer" else d.log_prob(torch.tensor(x, dtype=torch.float64))
        (g_scale,) = torch.autograd.grad(out, t[1])
        assert abs(g_scale.item() - float(expected)) <= 1e-11 * abs(float(expected)), (
            (loc, scale, low, high), g_scale.item(), float(expected))


def test_icdf_of_a_mixed_batch_equals_each_elements_alone_bit_for_bit():
    """The inverse iterates only the elements that need it, each until it stops moving: an element's value must not
    depend on what else is in the batch (straddling, one-sided, far-tail, narrow and mirrored elements mixed)."""
    loc = torch.tensor([0.0, 0.0, 0.0, 0.0, 5.0, -2.0, 0.3], dtype=torch.float64)
    scale = torch.tensor([1.0, 1.0, 1.0, 1.0, 0.5, 2.0, 1e-3], dtype=torch.float64)
    low = torch.tensor([-1.0, 0.0, 3.0, -1e-3, -math.inf, 4.0, 0.2], dtype=torch.float64)
    high = torch.tensor([2.0, math.inf, 5.0, 1e-3, 0.0, 9.0, 0.31], dtype=torch.float64)
    p = torch.tensor([0.3, 0.9, 1e-12, 0.5, 0.999999, 0.2, 0.7], dtype=torch.float64)
    together = TruncatedNormal(loc, scale, low, high).icdf(p)
    for i in range(len(p)):
        alone = TruncatedNormal(loc[i:i + 1], scale[i:i + 1], low[i:i + 1], high[i:i + 1]).icdf(p[i:i + 1])
        assert torch.equal(alone, together[i:i + 1]), i
    assert bool(((together >= low) & (together <= high)).all())


@pytest.mark.parametrize("slope", [1e-4, 0.01, 0.15, 0.9], ids=["4-nodes", "4-nodes-edge", "8-nodes", "16-nodes"])
def test_frame_mass_with_the_fewest_nodes_agrees_with_mpmath(slope):
    """The narrow frame mass picks 4, 8 or 16 Gauss-Legendre nodes by the batch's exponent slope: each choice
    integrates exp(-a d - d^2/2) on [0, w] to within a few ulps of 40-digit quadrature."""
    from tnlib.distributions._regimes import _frame_mass

    gen = torch.Generator().manual_seed(7)
    a = (torch.rand(40, dtype=torch.float64, generator=gen) * 2.0 - 0.5) * 3.0
    # w with w (|a| + w) = slope * u for u in (0, 1], the batch's largest at slope
    u = torch.rand(40, dtype=torch.float64, generator=gen).clamp_min(0.05)
    u[0] = 1.0
    target = slope * u
    w = (-a.abs() + torch.sqrt(a.square() + 4.0 * target)) / 2.0
    got = _frame_mass(a, w)
    with mp.workdps(40):
        for ai, wi, gi in zip(a.tolist(), w.tolist(), got.tolist()):
            ref = mp.quad(lambda d: mp.exp(-mp.mpf(ai) * d - d * d / 2), [0, mp.mpf(wi)])
            assert abs(gi - float(ref)) <= 4e-16 * float(ref), (ai, wi)


def test_icdf_of_a_narrow_interval_around_loc_is_exact_to_ulps_of_its_bounds():
    """The value is formed as low + scale d, so where it crosses zero inside the interval it is exact to ulps of the
    bound, not of itself: the closed start is kept where it is within 8 of those."""
    from tnlib.distributions.mpmath_reference import DIGITS, mpf_bound, reference_icdf
    params = (0.0, 1.0, -1e-3, 1e-3)
    d = TruncatedNormal(*(torch.tensor(v, dtype=torch.float64) for v in params))
    p = torch.rand(200, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    got = d.icdf(p).tolist()
    eps = torch.finfo(torch.float64).eps
    for pi, x in zip(p.tolist(), got):
        with mp.workdps(DIGITS):
            expected = float(reference_icdf(*(mpf_bound(v) for v in params), mp.mpf(pi)))
        assert abs(x - expected) <= 8 * eps * max(abs(expected), 1e-3), (pi, x, expected)



@pytest.mark.parametrize("route", ["per-element", "vectorized"])
def test_float32_icdf_of_a_narrow_interval_crossing_zero_far_from_loc_is_exact_to_an_ulp_of_its_bounds(route):
    """A narrow interval 1,000 scales above loc whose values cross zero: the float32 value is formed as low + scale d
    too, so where it nears zero it is exact to an ulp of the bounds, not of itself, on either route (the vectorized
    pass's float32 narrow loop holds such elements); elsewhere to an ulp of itself."""
    from tnlib.distributions import truncated_normal
    from tnlib.distributions.mpmath_reference import DIGITS, mpf_bound, reference_cdf, reference_icdf
    params = tuple(float(np.float32(v)) for v in (-35.63276, 0.035204653, -2.5357121e-09, 5.3044985e-08))
    mpf_params = [mpf_bound(v) for v in params]
    with mp.workdps(DIGITS):
        at_zero = float(reference_cdf(*mpf_params, mp.mpf(0)))
    rng = np.random.default_rng(4)
    p = np.concatenate([at_zero * (1 + rng.uniform(-1e-5, 1e-5, 24)), rng.uniform(0, 1, 8)]).astype(np.float32)
    d = TruncatedNormal(*(torch.full((len(p),), v, dtype=torch.float32) for v in params), validate_args=False)
    with truncated_normal.cpu_route(route):
        got = d.icdf(torch.from_numpy(p)).double().tolist()
    eps = float(np.finfo(np.float32).eps)
    for pi, x in zip(p.tolist(), got):
        with mp.workdps(DIGITS):
            expected = float(reference_icdf(*mpf_params, mp.mpf(pi)))
        assert abs(x - expected) <= eps * max(abs(expected), abs(params[2])), (pi, x, expected)

@pytest.mark.parametrize("params", [(0.0, 1.0, 3.0, 5.0), (0.0, 1.0, 7.38, 10.31), (0.0, 1.0, 4.0, 6.0),
                                    (-3.0, 0.7, 0.0, 1.5), (0.0, 1.0, 2.0, 4.0)])
def test_float32_variance_and_entropy_match_mpmath_where_the_closed_form_cancels(params):
    # in float32 these tail intervals reject the closed forms and take the frame's quadrature moments
    params32 = tuple(float(np.float32(v)) for v in params)
    ref = reference(*params32)
    d = TruncatedNormal(*(torch.tensor(v, dtype=torch.float32) for v in params32))
    assert d.variance.item() == pytest.approx(ref["variance"], rel=2e-6)
    assert abs(d.entropy().item() - ref["entropy"]) <= 2e-6 * max(1.0, abs(ref["entropy"]))


def test_cdf_of_a_mixed_batch_equals_each_elements_alone_bit_for_bit():
    """Elements near the mode take a difference of erf's and skip the closed forms the others need: an element's
    value must not depend on what else is in the batch."""
    loc = torch.tensor([0.0, 0.0, -3.0, 0.5, -20.0, 0.2], dtype=torch.float64)
    scale = torch.tensor([1.0, 1.0, 0.7, 1.0, 1.0, 1.0], dtype=torch.float64)
    low = torch.tensor([0.0, 0.0, 0.0, 1.0, 0.0, 0.5], dtype=torch.float64)
    high = torch.full_like(low, INF)
    x = torch.tensor([1e-9, 0.3, 0.01, 2.0, 1e-3, 0.6], dtype=torch.float64)
    together = TruncatedNormal(loc, scale, low, high).cdf(x)
    for i in range(len(x)):
        alone = TruncatedNormal(loc[i:i + 1], scale[i:i + 1], low[i:i + 1], high[i:i + 1]).cdf(x[i:i + 1])
        assert torch.equal(alone, together[i:i + 1]), i


def test_within_torch_route_a_cpu_call_takes_the_torch_route_and_agrees_with_the_kernels(monkeypatch):
    from tnlib.distributions import torch_route
    from tnlib.distributions import truncated_normal as module

    loc = torch.tensor([-20.0, 0.0, 3.0, 0.5], dtype=torch.float64)
    scale, low = torch.tensor([1.0, 0.1, 10.0, 1.0], dtype=torch.float64), torch.zeros(4, dtype=torch.float64)
    for high in (torch.full_like(low, INF), torch.tensor([1.0, 2.0, 30.0, 0.7], dtype=torch.float64)):
        d = TruncatedNormal(loc, scale, low, high)
        x, p = torch.tensor([0.1, 0.05, 4.0, 0.3], dtype=torch.float64), torch.tensor([0.1, 0.5, 0.9, 0.3])

        def statistics():
            return [d.mean, d.variance, d.entropy(), d.log_prob(x), d.cdf(x), d.icdf(p.double())]

        by_kernels = statistics()
        with monkeypatch.context() as patched:
            patched.setattr(module, "_kernels", lambda: pytest.fail("a kernel served a call within torch_route"))
            with torch_route():
                by_torch = statistics()
            with pytest.raises(pytest.fail.Exception):  # outside it, the CPU call asks the kernels again
                d.mean
        for kernel, torch_value in zip(by_kernels, by_torch):
            assert torch.allclose(kernel, torch_value, rtol=1e-10, atol=1e-12)
