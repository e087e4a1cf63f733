"""TruncatedNormal as a torch user meets it: the generic checks torch runs over its own distributions, KL
divergences against numerical integration, and the torch features the README lists.

The generic checks are written after what PyTorch's test/distributions/test_distributions.py checks for every
distribution (support and arg_constraints attributes, sample and batch shapes, expand, cdf/icdf inverse, entropy
and moments against Monte Carlo, validate_args, pickling), over float32/float64, finite and infinite bounds and
batched shapes.
"""
from __future__ import annotations

import math
import pickle

import mpmath as mp
import pytest
import torch
from torch.distributions import (
    Distribution,
    ExpTransform,
    Independent,
    Normal,
    TransformedDistribution,
    constraints,
    kl_divergence,
)

from tnlib.distributions.mpmath_reference import mpf_bound, reference_log_prob, reference
from tnlib import TruncatedNormal

INF = math.inf
DTYPES = [torch.float32, torch.float64]

# batches of (loc, scale, low, high): both bounds finite; the one-sided fast path (high = +inf); upper bound only;
# no bounds; far tails (loc many scales outside) on either side
EXAMPLES = {
    "finite": [(0.3, 1.0, 0.0, 2.0), (-3.0, 0.7, 0.0, 1.5), (5.0, 1.0, -1.0, 1.0)],
    "one_sided": [(0.3, 1.0, 0.0, INF), (-2.0, 0.5, 0.0, INF), (5.0, 2.0, 1.0, INF)],
    "upper_only": [(-1.0, 2.0, -INF, 1.0), (3.0, 1.0, -INF, 0.0), (0.0, 0.5, -INF, 4.0)],
    "unbounded": [(0.0, 1.0, -INF, INF), (2.0, 3.0, -INF, INF), (-1.0, 0.2, -INF, INF)],
    "far_tail": [(-30.0, 1.0, 0.0, INF), (40.0, 2.0, -INF, 0.0), (-25.0, 1.0, 0.0, 0.5)],
}


def _make(name: str, dtype, shape=None, **kwargs) -> TruncatedNormal:
    columns = [torch.tensor(c, dtype=dtype) for c in zip(*EXAMPLES[name])]
    if shape is not None:  # a 2-D batch: the three elements along the last dimension, repeated
        columns = [c.expand(shape) for c in columns]
    return TruncatedNormal(*columns, **kwargs)


CASES = [(name, dtype) for name in EXAMPLES for dtype in DTYPES]
CASE_IDS = [f"{name}-{str(dtype).split('.')[-1]}" for name, dtype in CASES]


# ------------------------------------------------------------------------------------------------------------
# Generic distribution checks
# ------------------------------------------------------------------------------------------------------------

def test_support_and_arg_constraints_on_the_class():
    # code that inspects a distribution class (torch's own suite, Pyro, TransformedDistribution) reads these
    support = TruncatedNormal.support
    assert support.is_discrete is False and support.event_dim == 0
    assert constraints.is_dependent(support)
    for name, constraint in TruncatedNormal.arg_constraints.items():
        assert isinstance(constraint, constraints.Constraint), name
        assert constraint.event_dim == 0 and constraint.is_discrete is False, name
    assert TruncatedNormal.has_rsample is True and TruncatedNormal.has_enumerate_support is False


@pytest.mark.parametrize("name, dtype", CASES, ids=CASE_IDS)
def test_parameters_satisfy_constraints_and_samples_lie_in_the_support(name, dtype):
    d = _make(name, dtype)
    for param, constraint in d.arg_constraints.items():
        assert constraint.check(getattr(d, param)).all(), param
    assert isinstance(d.support, constraints.interval)
    torch.manual_seed(0)
    x = d.sample((50,))
    assert d.support.check(x).all()
    assert x.dtype == dtype


@pytest.mark.parametrize("name, dtype", CASES, ids=CASE_IDS)
def test_sample_batch_and_event_shapes(name, dtype):
    d = _make(name, dtype, shape=(2, 3))
    assert d.batch_shape == (2, 3) and d.event_shape == ()
    for sample_shape in [(), (4,), (4, 5)]:
        x = d.sample(sample_shape)
        assert x.shape == torch.Size(sample_shape) + (2, 3)
        assert d.log_prob(x).shape == x.shape and d.cdf(x).shape == x.shape
        assert d.rsample(sample_shape).shape == x.shape
    for stat in (d.mean, d.variance, d.stddev, d.mode, d.entropy()):
        assert stat.shape == (2, 3) and stat.dtype == dtype
    # a value broadcasting against the batch
    assert d.log_prob(torch.zeros(3, dtype=dtype).clamp(d.low[0], d.high[0])).shape == (2, 3)


@pytest.mark.parametrize("name, dtype", CASES, ids=CASE_IDS)
def test_expand(name, dtype):
    d = _make(name, dtype)
    e = d.expand((4, 3))
    assert isinstance(e, TruncatedNormal) and e.batch_shape == (4, 3)
    torch.manual_seed(0)
    x = e.sample()
    assert x.shape == (4, 3)
    torch.testing.assert_close(e.log_prob(x), d.log_prob(x))
    torch.testing.assert_close(e.mean, d.mean.expand(4, 3))
    torch.testing.assert_close(e.entropy(), d.entropy().expand(4, 3))
    assert e._validate_args == d._validate_args


@pytest.mark.parametrize("name, dtype", CASES, ids=CASE_IDS)
def test_cdf_icdf_inverse_and_cdf_derivative_is_the_density(name, dtype):
    d = _make(name, dtype)
    tol = dict(rtol=1e-9, atol=1e-9) if dtype == torch.float64 else dict(rtol=2e-4, atol=2e-4)
    torch.manual_seed(0)
    x = d.sample((20,))
    # icdf(cdf(x)) = x where the cdf is informative (not rounded to 0 or 1), relative to the truncated spread
    p = d.cdf(x)
    ok = (p > 1e-6) & (p < 1 - 1e-6)
    back = d.icdf(p)
    spread = d.stddev.expand_as(x)
    assert ((back - x).abs()[ok] <= tol["rtol"] * (x.abs() + spread)[ok] * 100).all()
    q = torch.linspace(0.02, 0.98, 9, dtype=dtype)[:, None].expand(9, 3)
    torch.testing.assert_close(d.cdf(d.icdf(q)), q, **tol)
    # d cdf / dx = exp(log_prob)
    x = x.detach().requires_grad_()
    (density,) = torch.autograd.grad(d.cdf(x).sum(), x)
    torch.testing.assert_close(density, d.log_prob(x).exp(), **tol)


@pytest.mark.parametrize("name, dtype", CASES, ids=CASE_IDS)
def test_entropy_mean_and_variance_against_monte_carlo(name, dtype):
    d = _make(name, dtype)
    torch.manual_seed(0)
    n = 5000
    x = d.sample((n,)).double()
    lp = d.log_prob(x.to(dtype)).double()
    # each estimate within 5 standard errors (fixed seed: deterministic; not hit by chance at this margin)
    for estimate, exact, spread in ((-lp.mean(0), d.entropy(), lp.std(0)),
                                    (x.mean(0), d.mean, x.std(0)),
                                    (x.var(0), d.variance, (x - x.mean(0)).square().std(0))):
        assert ((estimate - exact.double()).abs() <= 5 * spread / math.sqrt(n) + 1e-6).all(), (estimate, exact)


@pytest.mark.parametrize("dtype", DTYPES)
def test_has_rsample_gradients_and_sample_is_detached(dtype):
    loc = torch.tensor([0.3, -2.0, 1.0], dtype=dtype, requires_grad=True)
    d = TruncatedNormal(loc, torch.ones(3, dtype=dtype), torch.zeros(3, dtype=dtype),
                        torch.tensor([2.0, INF, INF], dtype=dtype))
    assert d.rsample((5,)).requires_grad and not d.sample((5,)).requires_grad
    (g,) = torch.autograd.grad(d.rsample((5,)).sum(), loc)
    assert torch.isfinite(g).all() and (g > 0).all()  # samples move up with loc


@pytest.mark.parametrize("dtype", DTYPES)
def test_validate_args(dtype):
    good = [torch.tensor(v, dtype=dtype) for v in (0.0, 1.0, 0.0, 2.0)]
    bad_scale = [torch.tensor(v, dtype=dtype) for v in (0.0, -1.0, 0.0, 2.0)]
    with pytest.raises(ValueError, match="scale"):
        TruncatedNormal(*bad_scale, validate_args=True)
    TruncatedNormal(*bad_scale, validate_args=False)  # no check asked for: no error
    strict = TruncatedNormal(*good, validate_args=True)
    with pytest.raises(ValueError):
        strict.log_prob(torch.tensor(3.0, dtype=dtype))  # outside the support
    with pytest.raises(ValueError):
        strict.icdf(torch.tensor(1.5, dtype=dtype))
    lax = TruncatedNormal(*good, validate_args=False)
    assert lax.log_prob(torch.tensor(3.0, dtype=dtype)).item() == -INF
    # torch's global default applies when validate_args is not given
    previous = Distribution._validate_args
    try:
        Distribution.set_default_validate_args(False)
        assert not TruncatedNormal(*good)._validate_args
        Distribution.set_default_validate_args(True)
        with pytest.raises(ValueError):
            TruncatedNormal(*bad_scale)
    finally:
        Distribution.set_default_validate_args(previous)


@pytest.mark.parametrize("name, dtype", CASES, ids=CASE_IDS)
def test_pickle_round_trip(name, dtype):
    d = _make(name, dtype)
    d.mean, d.variance  # fill the cached per-element state: it must pickle too
    e = pickle.loads(pickle.dumps(d))
    assert isinstance(e, TruncatedNormal) and e.batch_shape == d.batch_shape
    x = d.mean.detach()
    assert torch.equal(e.log_prob(x), d.log_prob(x)) and torch.equal(e.mean, d.mean)
    assert "TruncatedNormal(" in repr(e)


# ------------------------------------------------------------------------------------------------------------
# Torch features: TransformedDistribution, Independent, torch.compile, torch.vmap
# ------------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_transformed_distribution(dtype):
    base = _make("finite", dtype)
    d = TransformedDistribution(base, [ExpTransform()])
    y = torch.tensor([1.5, 1.2, 0.5], dtype=dtype)
    torch.testing.assert_close(d.log_prob(y), base.log_prob(y.log()) - y.log())
    torch.testing.assert_close(d.cdf(y), base.cdf(y.log()))
    torch.manual_seed(0)
    s = d.rsample((10,))
    assert d.support.check(s).all() and ((s >= base.low.exp()) & (s <= base.high.exp())).all()


@pytest.mark.parametrize("dtype", DTYPES)
def test_independent(dtype):
    base = _make("one_sided", dtype, shape=(2, 3))
    d = Independent(base, 1)
    assert d.batch_shape == (2,) and d.event_shape == (3,) and d.support.event_dim == 1
    torch.manual_seed(0)
    x = d.sample((4,))
    assert x.shape == (4, 2, 3)
    torch.testing.assert_close(d.log_prob(x), base.log_prob(x).sum(-1))
    torch.testing.assert_close(d.entropy(), base.entropy().sum(-1))
    other = Independent(_make("one_sided", dtype, shape=(2, 3)).expand((2, 3)), 1)
    torch.testing.assert_close(kl_divergence(d, other), torch.zeros(2, dtype=dtype))


# Dynamo warns that it traces through the lru_cache of the Gauss-Legendre nodes (a pure function of their
# count, so tracing it is correct)
@pytest.mark.filterwarnings("ignore:Dynamo detected a call to a .functools.lru_cache")
def test_torch_compile():
    # one tiny function: Dynamo breaks the graph at the data-dependent regime choices and runs those parts
    # eagerly. Traced, log_prob takes the torch route (numba's kernels are not traceable), eagerly on the CPU the
    # kernels: the two agree to rounding, values and gradients
    def nll(loc, low, x):
        return -TruncatedNormal(loc, torch.ones_like(loc), low, torch.full_like(low, INF)).log_prob(x).sum()

    compiled = torch.compile(nll, backend="eager")
    loc = torch.tensor([0.3, -40.0, 2.0], dtype=torch.float64, requires_grad=True)
    low, x = torch.zeros(3, dtype=torch.float64), torch.tensor([0.5, 0.01, 3.0], dtype=torch.float64)
    value = compiled(loc, low, x)
    (grad,) = torch.autograd.grad(value, loc)
    expected = nll(loc, low, x)
    (expected_grad,) = torch.autograd.grad(expected, loc)
    torch.testing.assert_close(value, expected, rtol=1e-14, atol=0.0)
    # (the kernels' gradients take D = g/m with g's a^2 ulps: 1600 at loc = -40)
    torch.testing.assert_close(grad, expected_grad, rtol=1e-12, atol=0.0)


def test_vmap_raises_a_clear_error():
    def mean(loc):
        return TruncatedNormal(loc, torch.ones_like(loc), torch.zeros_like(loc), torch.full_like(loc, INF)).mean

    with pytest.raises(RuntimeError, match="TruncatedNormal does not support torch.vmap.*batch dimension"):
        torch.vmap(mean)(torch.zeros(4, 3))
    # what to do instead: the batch as a batch dimension
    assert mean(torch.zeros(4, 3)).shape == (4, 3)


# ------------------------------------------------------------------------------------------------------------
# kl_divergence: TN || TN, TN || Normal, Normal || TN, against numerical integration with mpmath
# ------------------------------------------------------------------------------------------------------------

def _reference_kl(p: tuple[float, ...], q: tuple[float, ...]) -> float:
    """KL(p || q) = int p (log p - log q) over p's support by tanh-sinh quadrature at 40 digits, the range cut
    at points spread over p's bulk (its mean +- multiples of its standard deviation) so every piece is smooth."""
    ref = reference(*p)
    mean, std = ref["mean"], ref["std"]
    low, high = p[2], p[3]
    points = {min(max(mean + k * std, low), high) for k in (-60, -20, -6, -2, -0.5, 0, 0.5, 2, 6, 20, 60)}
    points |= {v for v in (low, high) if math.isfinite(v)}
    edges = sorted(points)
    if not math.isfinite(low):
        edges = [mean - 60 * std] + edges
    if not math.isfinite(high):
        edges = edges + [mean + 60 * std]
    with mp.workdps(40):
        pp = [mpf_bound(v) for v in p]
        qq = [mpf_bound(v) for v in q]

        def integrand(x):
            lp = reference_log_prob(*pp, x)
            return mp.exp(lp) * (lp - reference_log_prob(*qq, x))

        return float(mp.quad(integrand, [mp.mpf(e) for e in sorted(set(edges))]))


# (p, q) as (loc, scale, low, high); q with infinite bounds is also compared as a torch Normal
KL_PAIRS = [
    ((0.0, 1.0, -1.0, 2.0), (0.5, 2.0, -1.0, 2.0)),  # same bounds
    ((0.3, 1.0, 0.0, INF), (-1.0, 0.5, 0.0, INF)),  # one-sided, loc inside and below
    ((-40.0, 1.0, 0.0, INF), (-38.0, 2.0, 0.0, INF)),  # far tail, same bound
    ((-1e3, 1.0, 0.0, INF), (-999.0, 1.0, 0.0, INF)),  # 1e3 scales out: ~ two exponentials
    ((50.0, 2.0, -INF, 0.0), (45.0, 1.0, -INF, 0.0)),  # mirrored far tail
    ((0.0, 1.0, 0.0, 1.0), (1.0, 3.0, -2.0, 5.0)),  # p's support inside q's
    ((-30.0, 1.0, 0.0, 1.0), (0.0, 1.0, -INF, INF)),  # far-tail TN against a Normal
    ((0.5, 1.0, 0.0, INF), (-20.0, 1.0, 0.0, INF)),  # q in its far tail, p not
    ((0.0, 1.0, 0.3, 0.3 + 1e-6), (1.0, 2.0, 0.0, 1.0)),  # a narrow p
    ((0.0, 1.0, 0.0, INF), (1.0, 2.0, -INF, INF)),  # half-normal against a Normal
    ((2.0, 1.5, -INF, INF), (1.0, 2.0, -INF, INF)),  # both unbounded: Normal || Normal
]


@pytest.mark.parametrize("p, q", KL_PAIRS)
def test_kl_matches_numerical_integration(p, q):
    expected = _reference_kl(p, q)
    as_tn = [TruncatedNormal(*(torch.tensor(v, dtype=torch.float64) for v in params)) for params in (p, q)]
    got = kl_divergence(*as_tn).item()
    # the closed form adds O(1) terms: absolute error ~1e-15, so relative to max(KL, 1e-5)
    assert abs(got - expected) <= 1e-9 * max(expected, 1e-5), (got, expected)
    if q[2] == -INF and q[3] == INF:  # the same q as a Normal
        normal = Normal(torch.tensor(q[0], dtype=torch.float64), torch.tensor(q[1], dtype=torch.float64))
        assert kl_divergence(as_tn[0], normal).item() == pytest.approx(got, rel=1e-12, abs=1e-15)
    if p[2] == -INF and p[3] == INF:  # and p as a Normal
        normal = Normal(torch.tensor(p[0], dtype=torch.float64), torch.tensor(p[1], dtype=torch.float64))
        assert kl_divergence(normal, as_tn[1]).item() == pytest.approx(got, rel=1e-12)
        assert kl_divergence(normal, Normal(as_tn[1].loc, as_tn[1].scale)).item() == pytest.approx(got, rel=1e-12)


@pytest.mark.parametrize("p, q", [
    ((0.0, 1.0, -1.0, 2.0), (0.0, 1.0, 0.0, 2.0)),  # p reaches below q's lower bound
    ((0.0, 1.0, 0.0, INF), (0.0, 1.0, 0.0, 5.0)),  # p unbounded above, q not
    ((0.0, 1.0, -INF, INF), (0.0, 1.0, -INF, 3.0)),
])
def test_kl_is_infinite_where_p_leaves_q_support(p, q):
    as_tn = [TruncatedNormal(*(torch.tensor(v, dtype=torch.float64) for v in params)) for params in (p, q)]
    assert kl_divergence(*as_tn).item() == INF
    # Normal || TN with a finite bound: infinite, as torch does for supports that do not cover
    normal = Normal(torch.tensor(0.0), torch.tensor(1.0))
    assert kl_divergence(normal, TruncatedNormal(0.0, 1.0, -INF, 3.0)).item() == INF


def test_kl_float32_broadcasting_and_batches():
    p_rows = [pair[0] for pair in KL_PAIRS[:8]]
    q_rows = [pair[1] for pair in KL_PAIRS[:8]]
    expected = torch.stack([
        kl_divergence(TruncatedNormal(*(torch.tensor(v, dtype=torch.float64) for v in p)),
                      TruncatedNormal(*(torch.tensor(v, dtype=torch.float64) for v in q)))
        for p, q in zip(p_rows, q_rows)])
    for dtype in DTYPES:
        p = TruncatedNormal(*(torch.tensor(c, dtype=dtype) for c in zip(*p_rows)))
        q = TruncatedNormal(*(torch.tensor(c, dtype=dtype) for c in zip(*q_rows)))
        got = kl_divergence(p, q)
        assert got.shape == (8,) and got.dtype == dtype
        # float32: the O(1) terms of the closed form each rounded to ~1e-7
        tol = 1e-12 if dtype == torch.float64 else 1e-6
        assert ((got.double() - expected).abs() <= tol * (expected + 1.0)).all(), (got, expected)
    # broadcasting: p batch (8, 1) against q batch (3,) gives (8, 3), each entry the elementwise KL
    p = TruncatedNormal(*(torch.tensor(c, dtype=torch.float64)[:, None] for c in zip(*p_rows)))
    q = TruncatedNormal(*(torch.tensor(c, dtype=torch.float64) for c in zip(*q_rows[:3])))
    table = kl_divergence(p, q)
    assert table.shape == (8, 3)
    for i in range(8):
        for j in range(3):
            single = kl_divergence(TruncatedNormal(*(torch.tensor(v, dtype=torch.float64) for v in p_rows[i])),
                                   TruncatedNormal(*(torch.tensor(v, dtype=torch.float64) for v in q_rows[j])))
            assert table[i, j].item() == pytest.approx(single.item(), rel=1e-14, abs=1e-300)


def test_kl_gradcheck():
    # every parameter of both sides, finite bounds; p's support inside q's
    rows_p = [(0.0, 1.0, -1.0, 2.0), (-3.0, 0.7, 0.0, 1.5), (0.5, 1.0, 0.2, 0.9)]
    rows_q = [(0.5, 2.0, -1.5, 2.5), (-2.0, 1.0, -0.5, 3.0), (1.0, 3.0, 0.0, 1.0)]
    tensors = [torch.tensor(c, dtype=torch.float64, requires_grad=True) for c in (*zip(*rows_p), *zip(*rows_q))]

    def kl(*params):
        return kl_divergence(TruncatedNormal(*params[:4]), TruncatedNormal(*params[4:]))

    assert torch.autograd.gradcheck(kl, tensors, atol=1e-8, rtol=1e-6)
    # and against a Normal (one-sided p: the fast path's statistics)
    loc, scale, low = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in ([0.3, -2.0], [1.0, 0.5],
                                                                                             [0.0, 1.0]))
    n_loc, n_scale = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in ([1.0, 0.0], [2.0, 1.5]))
    high = torch.full((2,), INF, dtype=torch.float64)
    assert torch.autograd.gradcheck(
        lambda a, b, c, d, e: kl_divergence(TruncatedNormal(a, b, c, high), Normal(d, e)),
        (loc, scale, low, n_loc, n_scale), atol=1e-8, rtol=1e-6)


def test_transform_to_and_biject_to_map_reals_onto_every_parameter():
    """Optimising the parameters through ``transform_to(arg_constraints[name])``: each maps an unconstrained real to a
    valid value (the bounds by the identity), so a distribution built from them validates."""
    from torch.distributions import biject_to, transform_to

    unconstrained = torch.tensor([-3.0, 0.5, 2.0], dtype=torch.float64)
    values = {}
    for name, constraint in TruncatedNormal.arg_constraints.items():
        for registry in (transform_to, biject_to):
            value = registry(constraint)(unconstrained)
            assert bool(constraint.check(value).all()), name
        values[name] = transform_to(constraint)(unconstrained)
    assert torch.equal(values["low"], unconstrained) and bool((values["scale"] > 0).all())
    low, high = values["low"], values["low"] + 1.0
    TruncatedNormal(values["loc"], values["scale"], low, high, validate_args=True).log_prob(low + 0.5)
