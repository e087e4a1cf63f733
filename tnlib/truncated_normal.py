"""The Truncated Normal distribution TN(loc, scale, low, high), exact in float64 and float32.

The paper models the optimal cost-to-go h* as TN(mu, sigma, l, u) with an admissible heuristic as l, trains by
its negative log-likelihood and plans with its mean. Both must stay exact exactly where the naive formulas fail:
when loc lies many scales outside [low, high] (the model predicts mu << l early in training), and when the
interval is narrow. This module does it in three regimes, all written in one *canonical frame*:

* Mirror. ``TN(mu, s, l, u)`` is ``-TN(-mu, s, -u, -l)``; an interval lying left of ``loc`` is mirrored so the
  interval always reaches to the right of ``loc`` (standardised upper bound ``b > 0``).
* Right frame (``a = (l - mu)/s >= 0``): everything is written relative to the lower bound, ``t = a + d``, with
  the integral ``M0 = int_0^w exp(-a d - d^2/2) dd = m(a) - exp(-w(a+b)/2) m(b)`` where ``m(x) = sqrt(pi/2)
  erfcx(x/sqrt 2)`` is Mills' ratio. ``log Z = -a^2/2 - log sqrt(2 pi) + log M0`` never forms ``exp(-a^2/2)``, and
  the mean is ``l + s * D`` with ``D = E[t] - a`` computed without cancelling ``a`` against ``a``.
* Straddling (``a < 0 < b``): ``Z = (erf(b/sqrt 2) - erf(a/sqrt 2)) / 2`` adds two non-negative terms.
* Narrow intervals (``w * max(1, |centre|) <= 1``, ``w = (high - low)/scale``) integrate the same frame
  integrand with 16-point Gauss-Legendre quadrature, whose error there is far below double rounding.

Gradients are analytic (custom autograd functions) and use the same frame quantities, so they are finite
wherever the value is. Every statistic (log_prob, cdf, icdf and rsample, mean, mode, variance, stddev, entropy,
log_normalizer) has first derivatives w.r.t. loc, scale, low and high (and the value or probability). They are
built from d/da E[f] = p_a (E[f] - f(a)), d/db E[f] = p_b (f(b) - E[f]) and, for moving both bounds at once, the
tilt identities d Var/d shift = -kappa_3 and d H/d shift = -(E[t] Var + kappa_3/2), whose terms share a sign.
Variance, entropy, the third cumulant and the mean's derivative in the far tail, where closed forms cancel
catastrophically, fall back to composite Gauss-Legendre moments of the frame integrand on just those elements;
the CDF's derivative splits the frame integral at the observation (each part is again a frame). Second
derivatives are not implemented: a backward pass with create_graph=True raises.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from functools import lru_cache
from numbers import Number

import numpy as np
import torch
from torch.distributions import Distribution, constraints
from torch.distributions.utils import broadcast_all

__all__ = ["TruncatedNormal"]

_SQRT_HALF = math.sqrt(0.5)
_SQRT_PI_OVER_2 = math.sqrt(math.pi / 2)
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_NARROW = 1.0  # w * max(1, |c|) at or below this uses quadrature (see module docstring)


def _first_order(backward):
    """Marks a custom backward whose gradients are closed forms evaluated outside autograd.

    Differentiating them again would silently give zero second derivatives, so a backward pass that builds a
    graph for higher derivatives (create_graph=True, which runs backward with grad mode on) raises instead.
    """

    @functools.wraps(backward)
    def wrapper(ctx, *grad_outputs):
        if torch.is_grad_enabled():
            raise RuntimeError(
                "TruncatedNormal: only first derivatives are implemented; backward with create_graph=True "
                "(second derivatives, Hessians, gradient penalties) is not supported")
        return backward(ctx, *grad_outputs)

    return wrapper


# ----------------------------------------------------------------------------------------------------------------
# Elementary functions of the standard normal, in forms that stay accurate for large arguments.
# ----------------------------------------------------------------------------------------------------------------

def _ndtr(x: torch.Tensor) -> torch.Tensor:
    """Phi(x) with full relative accuracy in the lower tail (torch.special.ndtr returns 0 below about -8)."""
    return 0.5 * torch.erfc(-x * _SQRT_HALF)


def _mills(x: torch.Tensor) -> torch.Tensor:
    """Mills' ratio m(x) = Phi(-x) / phi(x) = int_0^inf exp(-x t - t^2/2) dt, for any x (overflows for x < -37)."""
    return _SQRT_PI_OVER_2 * torch.special.erfcx(x * _SQRT_HALF)


# g(x) = 1 - x m(x) = int_0^inf t exp(-x t - t^2/2) dt. Directly it loses about x^2 ulps; past a threshold its
# asymptotic series (sum_k (-1)^(k+1) (2k-1)!! / x^(2k)) is used, truncated where the next term is below the
# dtype's rounding: 7 terms, from x = 100 in float64 and x = 7 in float32 (see tests for the measured error).
_G_SERIES = (1.0, -3.0, 15.0, -105.0, 945.0, -10395.0, 135135.0)


def _g_threshold(dtype: torch.dtype) -> float:
    return 100.0 if dtype == torch.float64 else 7.0


def _g(x: torch.Tensor, mills_x: torch.Tensor) -> torch.Tensor:
    """g(x) = 1 - x m(x) >= 0 for x >= 0 (and g(inf) = 0), given m(x)."""
    big = x >= _g_threshold(x.dtype)
    inv2 = torch.where(big, x, torch.ones_like(x)).reciprocal().square()
    series = torch.zeros_like(x)
    for coefficient in reversed(_G_SERIES):
        series = series * inv2 + coefficient
    return torch.where(big, series * inv2, 1.0 - x * mills_x)


# Var[t] on [a, inf) for large a: its asymptotic series in 1/a^2 (derived from Mills' ratio's), used where the
# closed form 1 - D (a + D) cancels; from a = 20 (float64) or 8 (float32) the truncation is below rounding.
_V_SERIES = (1.0, -6.0, 50.0, -518.0, 6354.0, -89782.0, 1435330.0, -25625910.0)


def _v_threshold(dtype: torch.dtype) -> float:
    return 20.0 if dtype == torch.float64 else 8.0


@lru_cache(maxsize=None)
def _gauss_legendre(n: int) -> tuple[np.ndarray, np.ndarray]:
    nodes, weights = np.polynomial.legendre.leggauss(n)
    return (nodes + 1.0) / 2.0, weights / 2.0  # on [0, 1]


def _gl(n: int, like: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    nodes, weights = _gauss_legendre(n)
    return (torch.as_tensor(nodes, dtype=like.dtype, device=like.device),
            torch.as_tensor(weights, dtype=like.dtype, device=like.device))


def _frame_moments(a: torch.Tensor, w: torch.Tensor, panels: int = 1) -> tuple[torch.Tensor, ...]:
    """Moments of the frame density  exp(-a d - d^2/2)  on  0 <= d <= w  by composite Gauss-Legendre.

    Returns (M0, mean, variance, third central moment) of d: M0 is the unnormalised mass, the moments are
    normalised. The range is cut where the integrand falls below exp(-45) of its peak, so ``w`` may be infinite.
    With one panel this is meant for narrow intervals (exponent variation <= 1.5); with 8 panels it is exact to
    double rounding for any a >= 0. Central moments are summed about the quadrature's own mean, so they keep
    their relative accuracy where the raw-moment combinations cancel (the far tail).
    """
    # beyond d_max the integrand is < exp(-45) * its value at 0 (a >= 0) -- negligible in any dtype
    d_max = 90.0 / (torch.sqrt(a.square() + 90.0) + a)  # sqrt(a^2 + 90) - a, without cancelling
    top = torch.minimum(w, torch.where(a >= 0, d_max, w))
    nodes, weights = _gl(16, a)
    edges = torch.linspace(0.0, 1.0, panels + 1, dtype=a.dtype, device=a.device)
    d = (edges[:-1, None] + nodes[None, :] / panels).reshape(-1)  # all nodes, on [0, 1]
    omega = (weights / panels).repeat(panels)
    s = top[..., None] * d  # (..., nodes)
    f = torch.exp(-s * (a[..., None] + 0.5 * s))
    fw = f * omega
    mass = fw.sum(-1)
    mean = (fw * s).sum(-1) / mass
    centred = s - mean[..., None]
    fw_c2 = fw * centred.square()
    variance = fw_c2.sum(-1) / mass
    third = (fw_c2 * centred).sum(-1) / mass
    return mass * top, mean, variance, third


# ----------------------------------------------------------------------------------------------------------------
# The per-element state shared by log_prob, mean and their gradients.
# ----------------------------------------------------------------------------------------------------------------

@dataclass
class _Core:
    """Canonical-frame quantities of TN(loc, scale, low, high); all tensors share the broadcast shape.

    ``flip`` marks mirrored elements. In canonical coordinates: ``a, b`` the standardised bounds (b > 0),
    ``w = b - a`` taken from (high - low)/scale, ``frame`` marks right-frame or narrow elements (relative to the
    lower bound) as opposed to straddling ones. ``log_z`` is log of the normalising mass; ``p_a, p_b`` are
    phi(a)/Z and phi(b)/Z; ``mean_t`` is E[t] for straddling elements and ``d_mean`` = E[t] - a for frame
    elements; ``log_m0`` is log M0 for frame elements.
    """

    flip: torch.Tensor
    a: torch.Tensor
    b: torch.Tensor
    w: torch.Tensor
    frame: torch.Tensor
    log_z: torch.Tensor
    log_m0: torch.Tensor
    p_a: torch.Tensor
    p_b: torch.Tensor
    mean_t: torch.Tensor
    d_mean: torch.Tensor
    c_low: torch.Tensor  # canonical low
    c_high: torch.Tensor  # canonical high
    c_loc: torch.Tensor  # canonical loc
    scale: torch.Tensor
    shape: torch.Size  # the batch shape; every tensor above is flattened to 1-D (masked updates need >= 1-D)

    def shaped(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(self.shape)


def _zero_where(mask: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return torch.where(mask, torch.zeros_like(x), x)


def _core(loc: torch.Tensor, scale: torch.Tensor, low: torch.Tensor, high: torch.Tensor) -> _Core:
    shape = loc.shape
    loc, scale, low, high = (t.reshape(-1) for t in (loc, scale, low, high))
    with torch.no_grad():
        flip = high <= loc
        c_loc = torch.where(flip, -loc, loc)
        c_low = torch.where(flip, -high, low)
        c_high = torch.where(flip, -low, high)
        a = (c_low - c_loc) / scale
        b = (c_high - c_loc) / scale
        w = (high - low) / scale  # exact width, not b - a
        centre = a + 0.5 * w
        narrow = w * torch.clamp(centre.abs(), min=1.0) <= _NARROW
        right = (a >= 0) & ~narrow
        frame = right | narrow
        straddle = ~frame
        zeros = torch.zeros_like(a)
        log_m0, d_mean, p_a, p_b, log_z_s, mean_s = (zeros.clone() for _ in range(6))

        # ---- right frame, closed form, on its elements only (erfcx is the expensive call)
        idx = right.nonzero().squeeze(1)
        if idx.numel():
            a_r, b_r, w_r = a[idx], b[idx], w[idx]
            m_a = _mills(a_r)
            m0_r = m_a.clone()
            num = _g(a_r, m_a)  # int_0^w d exp(-a d - d^2/2): the semi-infinite part ...
            p_b_r = torch.zeros_like(a_r)
            fin = torch.isfinite(b_r).nonzero().squeeze(1)
            if fin.numel():  # ... minus the part beyond the upper bound
                af, bf, wf = a_r[fin], b_r[fin], w_r[fin]
                delta = torch.exp(-wf * (af + 0.5 * wf))  # phi(b)/phi(a)
                m_b = _mills(bf)
                m0_f = m_a[fin] - delta * m_b
                m0_r[fin] = m0_f
                num[fin] = num[fin] - delta * (_g(bf, m_b) + wf * m_b)
                p_b_r[fin] = delta / m0_f
            log_m0[idx] = torch.log(m0_r)
            d_mean[idx] = num / m0_r
            p_a[idx] = 1.0 / m0_r
            p_b[idx] = p_b_r

        # ---- straddling, closed form (a < 0 < b)
        idx = straddle.nonzero().squeeze(1)
        if idx.numel():
            a_s, b_s, w_s = a[idx], b[idx], w[idx]
            z_s = 0.5 * (torch.erf(b_s * _SQRT_HALF) - torch.erf(a_s * _SQRT_HALF))
            # Z close to 1: log1p of the two excluded tails keeps log Z's relative accuracy
            tails = _ndtr(a_s) + _ndtr(-b_s)
            lz = torch.where(tails < 0.5, torch.log1p(-tails), torch.log(z_s))
            pa_s = torch.exp(-0.5 * a_s.square() - _LOG_SQRT_2PI - lz)
            pb_s = torch.exp(-0.5 * b_s.square() - _LOG_SQRT_2PI - lz)
            # phi(a) - phi(b) without cancellation: factor out the larger density; the ratio is exp(w (a+b)/2)
            half_gap = _zero_where(torch.isinf(a_s) & torch.isinf(b_s), 0.5 * w_s * (a_s + b_s))
            log_z_s[idx] = lz
            p_a[idx] = pa_s
            p_b[idx] = pb_s
            mean_s[idx] = torch.where(a_s.abs() <= b_s.abs(), -pa_s * torch.expm1(-half_gap),
                                      pb_s * torch.expm1(half_gap))

        # ---- narrow intervals: quadrature, only on the elements that need it
        if bool(narrow.any()):
            a_n, w_n = a[narrow], w[narrow]
            m0_n, d_n, _, _ = _frame_moments(a_n, w_n)
            log_m0 = log_m0.index_put((narrow,), torch.log(m0_n))
            d_mean = d_mean.index_put((narrow,), d_n)
            p_a = p_a.index_put((narrow,), 1.0 / m0_n)
            p_b = p_b.index_put((narrow,), torch.exp(-w_n * (a_n + 0.5 * w_n)) / m0_n)

        log_z = torch.where(frame, -0.5 * a.square() - _LOG_SQRT_2PI + log_m0, log_z_s)
        mean_t = torch.where(frame, a + d_mean, mean_s)
    return _Core(flip, a, b, w, frame, log_z, log_m0, p_a, p_b, mean_t, d_mean, c_low, c_high, c_loc, scale,
                 shape)


def _core_mean(core: _Core) -> torch.Tensor:
    """The mean, in the caller's coordinates."""
    frame_mean = core.c_low + core.scale * core.d_mean
    straddle_mean = core.c_loc + core.scale * core.mean_t
    mean = torch.where(core.frame, frame_mean, straddle_mean)
    # the mean never leaves [low, high]; rounding of the last ulp is clamped back
    mean = torch.minimum(torch.maximum(mean, core.c_low), core.c_high)
    return torch.where(core.flip, -mean, mean)


def _standardized_variance(core: _Core) -> torch.Tensor:
    """Var[t] of the standardised variable t = (X - loc)/scale, i.e. Var[X]/scale^2, exact in every regime.

    Closed form 1 + a p_a - b p_b - E[t]^2 (straddling) or 1 - p_a D_a - p_b D_b (frame); where that cancels by
    more than a safe factor (the far tail), quadrature moments of the frame integrand take over.
    """
    dedl, dedu = _mean_bound_derivatives(core)
    a_pa = _zero_where(torch.isinf(core.a), core.a * core.p_a)
    b_pb = _zero_where(torch.isinf(core.b), core.b * core.p_b)
    straddle_v = 1.0 + a_pa - b_pb - core.mean_t.square()
    frame_v = 1.0 - dedl - dedu
    v = torch.where(core.frame, frame_v, straddle_v)
    # condition number of the cancellation: |terms| / |result|
    # g(a), hence D and dedl, carry ~a^2 ulps below the series threshold: count them in the frame's terms
    g_ulps = 1.0 + core.a.clamp(0.0, _g_threshold(v.dtype)).square()
    terms = torch.where(core.frame, (dedl + dedu) * g_ulps, 1.0 + a_pa.abs() + b_pb.abs())
    # closed form loses eps * terms / v relatively; accept it while that stays below `tolerance`
    tolerance = 1e-12 if v.dtype == torch.float64 else 1e-6
    ill = (terms * torch.finfo(v.dtype).eps > tolerance * v.abs()) | (v <= 0)
    ill = ill & core.frame
    if bool(ill.any()):
        # semi-infinite far tail: the asymptotic series; anything else: quadrature moments of the frame
        series = ill & torch.isinf(core.w) & (core.a >= _v_threshold(v.dtype))
        if bool(series.any()):
            v = v.index_put((series,), _far_tail_series(core.a[series])[2])
        quad = ill & ~series
        if bool(quad.any()):
            _, _, var_q, _ = _frame_moments(core.a[quad], core.w[quad], panels=8)
            v = v.index_put((quad,), var_q)
    return v.clamp(min=0.0, max=1.0)


def _mean_bound_derivatives(core: _Core) -> tuple[torch.Tensor, torch.Tensor]:
    """d mean / d low and d mean / d high in canonical coordinates: p_a (E[t] - a) and p_b (b - E[t])."""
    frame_dl = core.p_a * core.d_mean
    frame_du = _zero_where(torch.isinf(core.w), core.p_b * (core.w - core.d_mean))
    straddle_dl = _zero_where(torch.isinf(core.a) | (core.p_a == 0), core.p_a * (core.mean_t - core.a))
    straddle_du = _zero_where(torch.isinf(core.b) | (core.p_b == 0), core.p_b * (core.b - core.mean_t))
    return torch.where(core.frame, frame_dl, straddle_dl), torch.where(core.frame, frame_du, straddle_du)


def _unflip_grads(core: _Core, g_loc, g_scale, g_low, g_high, odd: bool):
    """Map canonical-frame derivatives back through the mirror x -> -x.

    For a quantity q that is odd under the mirror (the mean) q = -q_c(-loc, scale, -high, -low); for an even one
    (log Z, log_prob at the mirrored point) q = q_c(...). The sign pattern follows from the chain rule.
    """
    f = core.flip
    if odd:  # q = -q_c:  dq/dloc = dq_c/dloc_c, dq/dscale = -dq_c/dscale, dq/dlow = dq_c/dhigh_c ...
        return (g_loc, torch.where(f, -g_scale, g_scale),
                torch.where(f, g_high, g_low), torch.where(f, g_low, g_high))
    return (torch.where(f, -g_loc, g_loc), g_scale,
            torch.where(f, -g_high, g_low), torch.where(f, -g_low, g_high))


def _mean_grads(core: _Core) -> tuple[torch.Tensor, ...]:
    """d mean / d (loc, scale, low, high), flattened."""
    v = _standardized_variance(core)  # d mean / d loc
    dedl, dedu = _mean_bound_derivatives(core)
    frame_ds = core.d_mean + core.a * v - _zero_where(torch.isinf(core.w), core.w * dedu)
    a_dl = _zero_where(dedl == 0, core.a * dedl)
    b_du = _zero_where(dedu == 0, core.b * dedu)
    straddle_ds = core.mean_t - a_dl - b_du
    ds = torch.where(core.frame, frame_ds, straddle_ds)
    return _unflip_grads(core, v, ds, dedl, dedu, odd=True)


def _log_prob_values(core: _Core, value: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """log_prob of flattened values, and (d, xi, inside) for its gradient."""
    c_value = torch.where(core.flip, -value, value)
    s = core.scale
    d = (c_value - core.c_low) / s  # distance above the lower bound, in scales
    xi = (c_value - core.c_loc) / s
    log_s = torch.log(s)
    frame_lp = -log_s - core.log_m0 - 0.5 * d * (d + 2.0 * core.a)
    straddle_lp = -log_s - _LOG_SQRT_2PI - 0.5 * xi.square() - core.log_z
    lp = torch.where(core.frame, frame_lp, straddle_lp)
    inside = (c_value >= core.c_low) & (c_value <= core.c_high)
    lp = torch.where(inside, lp, torch.full_like(lp, -math.inf))
    return lp, d, xi, inside


def _log_prob_grads(core: _Core, d, xi, inside) -> tuple[torch.Tensor, ...]:
    """d log_prob / d (value, loc, scale, low, high), flattened."""
    s = core.scale
    # d/dloc: (xi - E[t]) / s, written relative to the lower bound in the frame to avoid a - a
    g_loc = torch.where(core.frame, d - core.d_mean, xi - core.mean_t) / s
    w_pb = _zero_where(torch.isinf(core.w) | (core.p_b == 0), core.w * core.p_b)
    frame_gs = -1.0 + core.a * (2.0 * d - core.d_mean) + d.square() + w_pb
    a_pa = _zero_where(core.p_a == 0, core.a * core.p_a)
    b_pb = _zero_where(core.p_b == 0, core.b * core.p_b)
    straddle_gs = -1.0 + xi.square() - a_pa + b_pb
    g_scale = torch.where(core.frame, frame_gs, straddle_gs) / s
    g_low = core.p_a / s
    g_high = -core.p_b / s
    g_value_c = -xi / s
    g_loc, g_scale, g_low, g_high = _unflip_grads(core, g_loc, g_scale, g_low, g_high, odd=False)
    g_value = torch.where(core.flip, -g_value_c, g_value_c)
    grads = (g_value, g_loc, g_scale, g_low, g_high)
    return tuple(_zero_where(~inside, gi) for gi in grads)


class _Mean(torch.autograd.Function):
    @staticmethod
    def forward(ctx, loc, scale, low, high, core):
        ctx.core = core
        return core.shaped(_core_mean(core))

    @staticmethod
    @_first_order
    def backward(ctx, grad):
        core = ctx.core
        return tuple(core.shaped(grad.reshape(-1) * gi) for gi in _mean_grads(core)) + (None,)


class _LogNormalizer(torch.autograd.Function):
    @staticmethod
    def forward(ctx, loc, scale, low, high, core):
        ctx.core = core
        return core.shaped(core.log_z)

    @staticmethod
    @_first_order
    def backward(ctx, grad):
        core = ctx.core
        s = core.scale
        a_pa = _zero_where(core.p_a == 0, core.a * core.p_a)
        b_pb = _zero_where(core.p_b == 0, core.b * core.p_b)
        g = _unflip_grads(core, core.mean_t / s, (a_pa - b_pb) / s, -core.p_a / s, core.p_b / s, odd=False)
        return tuple(core.shaped(grad.reshape(-1) * gi) for gi in g) + (None,)


class _LogProb(torch.autograd.Function):
    @staticmethod
    def forward(ctx, value, loc, scale, low, high, core):
        lp, d, xi, inside = _log_prob_values(core, value.detach().reshape(-1))
        ctx.core = core
        ctx.save_for_backward(d, xi, inside)
        return core.shaped(lp)

    @staticmethod
    @_first_order
    def backward(ctx, grad):
        core = ctx.core
        grads = _log_prob_grads(core, *ctx.saved_tensors)
        return tuple(core.shaped(grad.reshape(-1) * gi) for gi in grads) + (None,)


# ----------------------------------------------------------------------------------------------------------------
# Variance, entropy and CDF: values from the core, first derivatives in closed form.
# ----------------------------------------------------------------------------------------------------------------
# For a quantity Q(a, b) of the standardised variable t = (X - loc)/scale on [a, b], the chain rule through
# a = (low - loc)/scale and b = (high - loc)/scale gives
#     dQ/dlow = Q_a / s,  dQ/dhigh = Q_b / s,  dQ/dloc = -(Q_a + Q_b) / s,  dQ/dscale = -(a Q_a + b Q_b) / s,
# so each statistic only needs Q_a, Q_b, their sum and a Q_a + b Q_b, in a form that does not cancel.

@dataclass
class _Slopes:
    """Q_a, Q_b, Q_a + Q_b and a Q_a + b Q_b of one standardised quantity Q(a, b) (flattened, canonical)."""

    at_low: torch.Tensor
    at_high: torch.Tensor
    shift: torch.Tensor
    spread: torch.Tensor

    def grads(self, core: _Core) -> tuple[torch.Tensor, ...]:
        """dQ / d(loc, scale, low, high) in canonical coordinates (not yet mapped through the mirror)."""
        s = core.scale
        return -self.shift / s, -self.spread / s, self.at_low / s, self.at_high / s


def _distances_to_bounds(core: _Core) -> tuple[torch.Tensor, torch.Tensor]:
    """E[t] - a and b - E[t]; in the frame both come from D = E[t] - a, so neither subtracts a from a."""
    dist_low = torch.where(core.frame, core.d_mean, core.mean_t - core.a)
    dist_high = torch.where(core.frame, core.w - core.d_mean, core.b - core.mean_t)
    return dist_low, dist_high


def _third_cumulant(core: _Core, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """kappa_3 of t and V_b = d Var[t] / db, given v = Var[t].

    From d/da E[f] = p_a (E[f] - f(a)) and d/db E[f] = p_b (f(b) - E[f]): V_a = p_a (V - (E[t] - a)^2) and
    V_b = p_b ((b - E[t])^2 - V). Shifting both bounds together tilts the density by exp(-delta t), so
    V_a + V_b = -kappa_3. In the far tail that sum cancels (t - a is nearly exponential, whose variance equals
    its squared mean): where the closed form's error bound exceeds the tolerance, kappa_3 is the quadrature's
    third central moment of the frame density instead, as the variance does.
    """
    dist_low, dist_high = _distances_to_bounds(core)
    no_a = core.p_a == 0  # includes a = -inf
    no_b = core.p_b == 0  # includes b = +inf
    v_a = _zero_where(no_a, core.p_a * (v - dist_low.square()))
    v_b = _zero_where(no_b, core.p_b * (dist_high.square() - v))
    kappa3 = -(v_a + v_b)
    terms = (_zero_where(no_a, core.p_a * (v + dist_low.square()))
             + _zero_where(no_b, core.p_b * (v + dist_high.square())))
    # D carries ~a^2 ulps below the g series threshold and V up to its own tolerance (_standardized_variance)
    g_ulps = 1.0 + core.a.clamp(0.0, _g_threshold(v.dtype)).square()
    v_tolerance, tolerance = (1e-12, 1e-10) if v.dtype == torch.float64 else (1e-6, 1e-4)
    error_bound = terms * (torch.finfo(v.dtype).eps * g_ulps + v_tolerance)
    ill = core.frame & ~(error_bound <= tolerance * kappa3.abs())
    if bool(ill.any()):
        _, _, _, third = _frame_moments(core.a[ill], core.w[ill], panels=8)
        kappa3 = kappa3.index_put((ill,), third)
    return kappa3, v_b


def _variance_and_entropy_slopes(core: _Core, v: torch.Tensor) -> tuple[_Slopes, _Slopes]:
    """Slopes of V = Var[t] and of H_t = log sqrt(2 pi) + log Z + E[t^2]/2 (the entropy of t).

    V_a + V_b = -kappa_3 and, differentiating the entropy along the same tilt, H_a + H_b = -(E[t] V + kappa_3/2);
    H_a = p_a (V - 2 + (E[t] - a)(E[t] + a))/2, H_b = p_b (2 - V + (b - E[t])(b + E[t]))/2. Straddling elements
    take V_a and H_a in closed form (exactly 0 at an infinite bound); frame elements take them as the sum minus
    the b-slope, and a Q_a + b Q_b as a (Q_a + Q_b) + w Q_b, which subtracts nothing of size a.
    """
    kappa3, v_b = _third_cumulant(core, v)
    dist_low, dist_high = _distances_to_bounds(core)
    no_a = core.p_a == 0
    no_b = core.p_b == 0
    b_plus_mean = torch.where(core.frame, 2.0 * core.a + core.w + core.d_mean, core.b + core.mean_t)
    h_b = _zero_where(no_b, 0.5 * core.p_b * (2.0 - v + dist_high * b_plus_mean))
    # straddling: closed forms at the lower bound
    v_a_s = _zero_where(no_a, core.p_a * (v - dist_low.square()))
    h_a_s = _zero_where(no_a, 0.5 * core.p_a * (v - 2.0 + dist_low * (core.mean_t + core.a)))
    # frame: the tilt sums
    v_shift_f = -kappa3
    h_shift_f = -(core.mean_t * v + 0.5 * kappa3)

    def slopes(q_a_s, q_b, q_shift_f) -> _Slopes:
        q_shift = torch.where(core.frame, q_shift_f, q_a_s + q_b)
        q_a = torch.where(core.frame, q_shift_f - q_b, q_a_s)
        w_q_b = _zero_where(no_b, core.w * q_b)
        spread_f = core.a * q_shift_f + w_q_b
        spread_s = _zero_where(no_a, core.a * q_a_s) + _zero_where(no_b, core.b * q_b)
        return _Slopes(q_a, q_b, q_shift, torch.where(core.frame, spread_f, spread_s))

    return slopes(v_a_s, v_b, v_shift_f), slopes(h_a_s, h_b, h_shift_f)


def _entropy_values(core: _Core, v: torch.Tensor) -> torch.Tensor:
    """H_t = H[X] - log(scale), flattened."""
    # H_t = log sqrt(2 pi) + log Z + E[t^2]/2; in the frame the a^2/2 terms cancel analytically
    frame_h = core.log_m0 + core.a * core.d_mean + 0.5 * (v + core.d_mean.square())
    straddle_h = _LOG_SQRT_2PI + core.log_z + 0.5 * (v + core.mean_t.square())
    return torch.where(core.frame, frame_h, straddle_h)


def _shaped_grads(core: _Core, grad: torch.Tensor, grads, needs) -> tuple:
    """grad * each gradient, in the batch shape, None where the input needs none."""
    grad = grad.reshape(-1)
    return tuple(core.shaped(grad * g) if need else None for g, need in zip(grads, needs))


class _Variance(torch.autograd.Function):
    """Var[X] = scale^2 V(a, b)."""

    @staticmethod
    def forward(ctx, loc, scale, low, high, core):
        v = _standardized_variance(core)
        ctx.core = core
        ctx.save_for_backward(v)
        return core.shaped(core.scale.square() * v)

    @staticmethod
    @_first_order
    def backward(ctx, grad):
        core = ctx.core
        (v,) = ctx.saved_tensors
        slopes, _ = _variance_and_entropy_slopes(core, v)
        g_loc, g_scale, g_low, g_high = slopes.grads(core)
        s2 = core.scale.square()
        # Var = s^2 V: d/dscale adds 2 s V to s^2 dV/dscale
        grads = _unflip_grads(core, s2 * g_loc, 2.0 * core.scale * v + s2 * g_scale, s2 * g_low, s2 * g_high,
                              odd=False)
        return _shaped_grads(core, grad, grads, ctx.needs_input_grad) + (None,)


class _Entropy(torch.autograd.Function):
    """H[X] = log(scale) + H_t(a, b)."""

    @staticmethod
    def forward(ctx, loc, scale, low, high, core):
        v = _standardized_variance(core)
        ctx.core = core
        ctx.save_for_backward(v)
        return core.shaped(torch.log(core.scale) + _entropy_values(core, v))

    @staticmethod
    @_first_order
    def backward(ctx, grad):
        core = ctx.core
        (v,) = ctx.saved_tensors
        _, slopes = _variance_and_entropy_slopes(core, v)
        g_loc, g_scale, g_low, g_high = slopes.grads(core)
        grads = _unflip_grads(core, g_loc, g_scale + 1.0 / core.scale, g_low, g_high, odd=False)
        return _shaped_grads(core, grad, grads, ctx.needs_input_grad) + (None,)


def _cdf_canonical(core: _Core, c_value: torch.Tensor) -> torch.Tensor:
    """The canonical CDF at c_value (flattened; clamped into the support), all regimes."""
    c_value = torch.minimum(torch.maximum(c_value, core.c_low), core.c_high)
    d = (c_value - core.c_low) / core.scale
    a = torch.where(core.frame, core.a, torch.ones_like(core.a))
    d_f = torch.where(core.frame, d, torch.zeros_like(d))
    frame_cdf = _frame_integral(a, d_f) * torch.exp(-core.log_m0)
    t = (c_value - core.c_loc) / core.scale
    lower = (_ndtr(t) - _ndtr(core.a)) / torch.exp(core.log_z)
    upper = (_ndtr(-t) - _ndtr(-core.b)) / torch.exp(core.log_z)
    straddle_cdf = torch.where(t <= 0, lower, 1.0 - upper)
    return torch.where(core.frame, frame_cdf, straddle_cdf).clamp(0.0, 1.0)


def _frame_cdf_slope(core: _Core, x, d, t, cdf, mask) -> torch.Tensor:
    """dF/da at fixed d and w of the frame CDF F = J(a, d) / J(a, w), on the elements in ``mask`` (0 elsewhere).

    F_a = F (D - D_head) = (1 - F) (d - D + D_tail): D_head is the frame mean on [0, d], D_tail the mean of the
    part above d measured from d (itself a frame, at a' = t, w' = w - d). The first form is used where d <= D,
    the second above, so neither subtracts nearly equal numbers; 1 - F is taken from the tail's own mass.
    """
    s = core.scale
    f_a = torch.zeros_like(d)
    head = mask & (d <= core.d_mean) & (d > 0)
    if bool(head.any()):
        _, d_head, _, _ = _frame_moments(core.a[head], d[head], panels=8)
        f_a = f_a.index_put((head,), cdf[head] * (core.d_mean[head] - d_head))
    tail = mask & (d > core.d_mean) & (x < core.c_high)
    if bool(tail.any()):
        rest = (core.c_high[tail] - x[tail]) / s[tail]  # w - d, +inf without an upper bound
        m0_tail, d_tail, _, _ = _frame_moments(t[tail], rest, panels=8)
        # 1 - F = exp(-d (a + d/2)) J(t, w - d) / M0, accurate where F is near 1
        upper = m0_tail * torch.exp(-d[tail] * (core.a[tail] + 0.5 * d[tail]) - core.log_m0[tail])
        f_a = f_a.index_put((tail,), upper * (d[tail] - core.d_mean[tail] + d_tail))
    return f_a


def _cdf_grads(core: _Core, c_value: torch.Tensor, cdf: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """dF / d(value, loc, scale, low, high) in canonical coordinates, 0 outside the support.

    Straddling: F = (Phi(t) - Phi(a)) / Z with F_t = phi(t)/Z, F_a = -p_a (1 - F), F_b = -p_b F. Frame:
    F = J(a, d) / J(a, w) with d = (x - low)/s, J(a, d) = int_0^d exp(-a r - r^2/2) dr, so F_d is the frame
    density at d, F_w = -F p_b and F_a comes from _frame_cdf_slope. Moving loc moves a alone (d and w stay),
    which is why the frame's loc-derivative is a single term there.
    """
    s = core.scale
    inside = (c_value >= core.c_low) & (c_value <= core.c_high)
    x = torch.minimum(torch.maximum(c_value, core.c_low), core.c_high)
    d = (x - core.c_low) / s
    t = (x - core.c_loc) / s
    no_a = core.p_a == 0
    no_b = core.p_b == 0
    # straddling, in (t, a, b): F_t, F_a, F_b
    f_t = torch.exp(-0.5 * t.square() - _LOG_SQRT_2PI - core.log_z)
    f_a = -_zero_where(no_a, core.p_a * (1.0 - cdf))
    f_b = -_zero_where(no_b, core.p_b * cdf)
    s_spread = t * f_t + _zero_where(no_a, core.a * f_a) + _zero_where(no_b, core.b * f_b)
    # frame, in (a, d, w) with d = t - a and w = b - a: F_a, F_d, F_w
    fr_a = _frame_cdf_slope(core, x, d, t, cdf, core.frame & inside)
    fr_d = torch.exp(-d * (core.a + 0.5 * d) - core.log_m0)
    fr_w = f_b  # -p_b F in both coordinate systems
    fr_spread = core.a * fr_a + d * fr_d + _zero_where(no_b, core.w * fr_w)
    frame = core.frame
    g_value = torch.where(frame, fr_d, f_t) / s
    g_loc = -torch.where(frame, fr_a, f_t + f_a + f_b) / s
    g_scale = -torch.where(frame, fr_spread, s_spread) / s
    g_low = torch.where(frame, fr_a - fr_d - fr_w, f_a) / s
    g_high = f_b / s
    grads = (g_value,) + _unflip_grads(core, g_loc, g_scale, g_low, g_high, odd=True)
    return tuple(_zero_where(~inside, g) for g in grads)


class _CDF(torch.autograd.Function):
    @staticmethod
    def forward(ctx, value, loc, scale, low, high, core):
        value = value.detach().reshape(-1)
        c_value = torch.where(core.flip, -value, value)
        cdf = _cdf_canonical(core, c_value)
        ctx.core = core
        ctx.save_for_backward(c_value, cdf)
        return core.shaped(torch.where(core.flip, 1.0 - cdf, cdf))

    @staticmethod
    @_first_order
    def backward(ctx, grad):
        core = ctx.core
        grads = _cdf_grads(core, *ctx.saved_tensors)
        return _shaped_grads(core, grad, grads, ctx.needs_input_grad) + (None,)


# ----------------------------------------------------------------------------------------------------------------
# Fast path for the paper's training configuration: no upper bound (high = +inf everywhere).
# ----------------------------------------------------------------------------------------------------------------
# With b = +inf and a below a threshold, Z = erfc(a/sqrt 2)/2 has full relative accuracy and the straddling
# formulas hold without cancellation worth counting (they lose ~a^2 ulps: < 1e-13 in float64 below a = 20, < 5e-6
# in float32 below a = 8). A handful of vectorised ops then do the whole forward and backward. Elements past the
# threshold (loc far below the bound) are handed to the general core above, on just those elements.

def _fast_threshold(dtype: torch.dtype) -> float:
    return 20.0 if dtype == torch.float64 else 8.0


# Mills' ratio m(a) = (1/a) sum_k (-1)^k (2k-1)!! / a^(2k): past the fast threshold 12 terms are below rounding
_M_SERIES = (1.0, -1.0, 3.0, -15.0, 105.0, -945.0, 10395.0, -135135.0, 2027025.0, -34459425.0, 654729075.0,
             -13749310575.0)


@lru_cache(maxsize=None)
def _series_coefficients(dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """The (K, 3) coefficient matrix of the m, g and Var series in powers of 1/a^2."""
    coefficients = torch.zeros(len(_M_SERIES), 3, dtype=dtype)
    for column, series in enumerate((_M_SERIES, _G_SERIES, _V_SERIES)):
        coefficients[: len(series), column] = torch.tensor(series, dtype=dtype)
    return coefficients.to(device)


def _far_tail_series(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """m(a), g(a) and Var[t] on [a, inf) from their series in 1/a^2, as one small matmul (few ops per call)."""
    coefficients = _series_coefficients(a.dtype, a.device)
    inv2 = a.reciprocal().square()
    # powers 1, x, x^2, ... by a running product (a float-exponent pow is slow)
    powers = torch.cat([torch.ones_like(inv2).unsqueeze(-1),
                        inv2.unsqueeze(-1).expand(-1, len(coefficients) - 1).cumprod(-1)], dim=-1)
    m, g, v = (powers @ coefficients).unbind(-1)
    return m / a, g * inv2, v * inv2


@dataclass
class _FastCore:
    """One-sided (high = +inf) state. Elements with a >= threshold (``far``) use far-tail series in the frame."""

    a: torch.Tensor
    log_z: torch.Tensor
    p_a: torch.Tensor  # phi(a)/Z = E[t]
    mean: torch.Tensor
    scale: torch.Tensor
    shape: torch.Size
    far: torch.Tensor  # flat indices of far-tail elements
    far_log_m: torch.Tensor | None = None  # log m(a) = log M0
    far_d: torch.Tensor | None = None  # E[t] - a
    far_v: torch.Tensor | None = None  # Var[t]

    def shaped(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(self.shape)


def _fast_core(loc, scale, low, high) -> _FastCore:
    shape = loc.shape
    loc, scale, low, high = (t.detach().reshape(-1) for t in (loc, scale, low, high))
    with torch.no_grad():
        # low = -inf becomes a = -1e15: the same values to the last bit, and products like a * p_a stay 0
        # instead of -inf * 0 = nan, which saves a nan_to_num in every backward
        a = ((low - loc) / scale).clamp_(min=-1e15)
        log_z = torch.log(torch.erfc(a * _SQRT_HALF)).sub_(math.log(2.0))
        p_a = torch.addcmul(-_LOG_SQRT_2PI - log_z, a, a, value=-0.5).exp_()
        mean = torch.addcmul(loc, scale, p_a)
        far = (a >= _fast_threshold(a.dtype)).nonzero().squeeze(1)
        fc = _FastCore(a, log_z, p_a, mean, scale, shape, far)
        if far.numel():
            a_f = a[far]
            m, g, fc.far_v = _far_tail_series(a_f)
            fc.far_log_m = torch.log(m)
            fc.far_d = g / m
            log_z[far] = -0.5 * a_f.square() - _LOG_SQRT_2PI + fc.far_log_m
            p_a[far] = 1.0 / m
            mean[far] = torch.addcmul(low[far], scale[far], fc.far_d)
        torch.maximum(mean, low, out=mean)
    return fc


class _FastMean(torch.autograd.Function):
    @staticmethod
    def forward(ctx, loc, scale, low, high, fc):
        ctx.fc = fc
        return fc.shaped(fc.mean)

    @staticmethod
    @_first_order
    def backward(ctx, grad):
        fc = ctx.fc
        grad = grad.reshape(-1)
        dedl = fc.p_a * (fc.p_a - fc.a)  # d mean / d low = p_a (E[t] - a)
        v = 1.0 - dedl  # d mean / d loc = Var[t]
        ds = fc.p_a - fc.a * dedl  # d mean / d scale = E[t] - a dedl
        if fc.far.numel():
            a_f = fc.a[fc.far]
            dedl[fc.far] = fc.far_d * fc.p_a[fc.far]
            v[fc.far] = fc.far_v
            ds[fc.far] = fc.far_d + a_f * fc.far_v  # D + a v, without forming E[t] - a E[t]
        needs = ctx.needs_input_grad
        return (fc.shaped(grad * v) if needs[0] else None,
                fc.shaped(grad * ds) if needs[1] else None,
                fc.shaped(grad * dedl) if needs[2] else None,
                torch.zeros_like(fc.shaped(grad)) if needs[3] else None, None)


class _FastLogProb(torch.autograd.Function):
    @staticmethod
    def forward(ctx, value, loc, scale, low, high, fc):
        value = value.detach().reshape(-1)
        low = low.detach().reshape(-1)
        xi = (value - loc.detach().reshape(-1)) / fc.scale
        lp = (-_LOG_SQRT_2PI - torch.log(fc.scale) - fc.log_z).addcmul_(xi, xi, value=-0.5)
        outside = value < low
        lp.masked_fill_(outside, -math.inf)
        d = None
        if fc.far.numel():
            # relative to the bound: -log s - log m(a) - d (d + 2a)/2, never forming xi^2/2 - a^2/2
            far = fc.far
            d = (value[far] - low[far]) / fc.scale[far]
            lp_far = -torch.log(fc.scale[far]) - fc.far_log_m - 0.5 * d * (d + 2.0 * fc.a[far])
            lp[far] = lp_far.masked_fill_(outside[far], -math.inf)
        ctx.fc, ctx.far_dist = fc, d
        ctx.save_for_backward(xi, outside)
        return fc.shaped(lp)

    @staticmethod
    @_first_order
    def backward(ctx, grad):
        fc = ctx.fc
        xi, outside = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_s = (grad.reshape(-1) / fc.scale).masked_fill_(outside, 0.0)  # grad / scale, 0 outside the support
        far, d = fc.far, ctx.far_dist
        out = []
        for i in range(4):
            if not needs[i]:
                out.append(None)
                continue
            if i == 0:  # d/dvalue * scale
                g = -xi
            elif i == 1:  # d/dloc * scale
                g = xi - fc.p_a
                if d is not None:
                    g[far] = d - fc.far_d
            elif i == 2:  # d/dscale * scale
                g = torch.addcmul((xi * xi).sub_(1.0), fc.a, fc.p_a, value=-1.0)
                if d is not None:
                    g[far] = -1.0 + fc.a[far] * (2.0 * d - fc.far_d) + d.square()
            else:  # d/dlow * scale
                g = fc.p_a
            out.append(fc.shaped(grad_s * g))
        return (*out, torch.zeros_like(fc.shaped(grad_s)) if needs[4] else None, None)


# ----------------------------------------------------------------------------------------------------------------
# Inverse CDF (for icdf and rsample): solved in the canonical frame by safeguarded Newton steps.
# ----------------------------------------------------------------------------------------------------------------

def _frame_integral(a: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    """J(a, d) = int_0^d exp(-a s - s^2/2) ds for a >= 0 or narrow (a, d); d may be infinite."""
    centre = a + 0.5 * d
    narrow = d * torch.clamp(centre.abs(), min=1.0) <= _NARROW
    d_safe = torch.where(torch.isinf(d), torch.zeros_like(d), d)
    ratio = torch.exp(-d_safe * (a + 0.5 * d_safe))
    far = _mills(torch.where(torch.isinf(d), torch.zeros_like(d), a + d))  # m(a + d)
    closed = _mills(a) - torch.where(torch.isinf(d), torch.zeros_like(d), ratio * far)
    # a < 0 and wide only happens for moderate |a| (straddling elements never reach here): use Phi differences
    neg = (a < 0) & ~narrow
    if bool(neg.any()):
        an, dn = a[neg], d[neg]
        phi_diff = _ndtr(an + dn) - _ndtr(an)
        closed = closed.index_put((neg,), phi_diff * torch.exp(0.5 * an.square() + _LOG_SQRT_2PI))
    if bool(narrow.any()):
        m0, _, _, _ = _frame_moments(a[narrow], d[narrow])
        closed = closed.index_put((narrow,), m0)
    return closed


def _icdf_canonical(core: _Core, p: torch.Tensor) -> torch.Tensor:
    """The canonical value x_c with canonical CDF p (0 <= p <= 1), all regimes."""
    s = core.scale
    dtype = p.dtype
    # straddling: invert Phi on whichever tail keeps the argument small, never subtracting near-equal numbers
    z = torch.exp(core.log_z)
    phi_a = _ndtr(core.a)
    phi_minus_b = _ndtr(-core.b)
    lower_mass = phi_a + p * z  # Phi(t)
    upper_mass = phi_minus_b + (1.0 - p) * z  # Phi(-t)
    t = torch.where(lower_mass <= 0.5, torch.special.ndtri(lower_mass), -torch.special.ndtri(upper_mass))
    t = torch.minimum(torch.maximum(t, core.a), core.b)
    x_straddle = core.c_loc + s * t

    # frame: solve J(a, d) = p J(a, w) for d in [0, w] (J(a, w) = M0)
    a = torch.where(core.frame, core.a, torch.ones_like(core.a))
    w = torch.where(core.frame, core.w, torch.ones_like(core.w))
    m0 = torch.exp(torch.where(core.frame, core.log_m0, torch.zeros_like(core.log_m0)))
    # start from the truncated-exponential inverse with rate max(a, 1e-3) (the far-tail shape)
    rate = a.clamp_min(1e-3)
    w_fin = torch.where(torch.isinf(w), torch.full_like(w, math.inf), w)
    d = -torch.log1p(p * torch.expm1(-rate * w_fin)) / rate
    d = torch.minimum(d.clamp_min(0.0), w)
    d = torch.where(torch.isfinite(d), d, torch.where(torch.isinf(w), 1.0 / rate, 0.5 * w))
    lo = torch.zeros_like(d)
    hi = w.clone()
    target_lower = p * m0
    target_upper = (1.0 - p) * m0
    use_upper = p > 0.5
    for _ in range(60 if dtype == torch.float64 else 40):
        j = _frame_integral(a, d)
        dens = torch.exp(-d * (a + 0.5 * d))
        # residual in the tail that has the smaller mass, relative so the step is scale-free
        upper_j = torch.clamp(m0 - j, min=0.0)
        resid = torch.where(use_upper, target_upper - upper_j, j - target_lower)
        # F increases with d: bracket the root
        too_high = torch.where(use_upper, upper_j < target_upper, j > target_lower)
        hi = torch.where(too_high, torch.minimum(hi, d), hi)
        lo = torch.where(too_high, lo, torch.maximum(lo, d))
        step = torch.where(use_upper, -resid, resid) / dens
        new_d = d - step
        bad = ~torch.isfinite(new_d) | (new_d <= lo) | (new_d >= hi)
        bisect = torch.where(torch.isinf(hi), 2.0 * lo + 1.0 / rate, 0.5 * (lo + hi))
        new_d = torch.where(bad, bisect, new_d)
        if bool((new_d == d).all()):
            break
        d = new_d
    x_frame = core.c_low + s * d
    x = torch.where(core.frame, x_frame, x_straddle)
    return torch.minimum(torch.maximum(x, core.c_low), core.c_high)


class _ICDF(torch.autograd.Function):
    """x(p; loc, scale, low, high) with the implicit-function gradients of F(x; theta) = p."""

    @staticmethod
    def forward(ctx, p, loc, scale, low, high, core):
        p = p.detach().reshape(-1)
        c_p = torch.where(core.flip, 1.0 - p, p)
        x_c = _icdf_canonical(core, c_p)
        ctx.core = core
        ctx.save_for_backward(x_c, c_p)
        return core.shaped(torch.where(core.flip, -x_c, x_c))

    @staticmethod
    @_first_order
    def backward(ctx, grad):
        core = ctx.core
        x_c, c_p = ctx.saved_tensors
        s = core.scale
        d = (x_c - core.c_low) / s
        t = (x_c - core.c_loc) / s
        # log phi(t) relative to phi(a) and phi(b), each formed as a product of small differences
        log_pdf = torch.where(core.frame, -torch.log(s) - core.log_m0 - 0.5 * d * (d + 2.0 * core.a),
                              -torch.log(s) - _LOG_SQRT_2PI - 0.5 * t.square() - core.log_z)
        # dx/dp = 1/pdf ; dx/dlow = (1 - F) pdf(low)/pdf(x) ; dx/dhigh = F pdf(high)/pdf(x)
        log_pa = torch.log(core.p_a) - torch.log(s)  # pdf at low = phi(a)/(Z s)
        log_pb = torch.log(core.p_b) - torch.log(s)
        dx_dp = torch.exp(-log_pdf)
        dx_dl = torch.exp(torch.log1p(-c_p) + log_pa - log_pdf)
        dx_du = torch.exp(torch.log(c_p) + log_pb - log_pdf)
        dx_dl = torch.nan_to_num(dx_dl, nan=0.0)
        dx_du = torch.nan_to_num(dx_du, nan=0.0)
        # dx/dloc = 1 - dx/dlow - dx/dhigh (shifting everything shifts x); in the frame that cancels when loc is
        # far below the interval, and dx/dloc = -dF/dloc / pdf(x) = F_a / (s pdf(x)) is taken directly
        frame = core.frame & (dx_dp > 0) & torch.isfinite(dx_dp)
        t_frame = torch.where(frame, t, torch.ones_like(t))
        f_a = _frame_cdf_slope(core, x_c, d, t_frame, c_p, frame)
        dx_dloc = torch.where(frame, f_a * dx_dp / s, 1.0 - dx_dl - dx_du)
        # dx/dscale = t - a dx/dlow - b dx/dhigh, with t - a = d in the frame
        frame_ds = core.a * dx_dloc + d - _zero_where(dx_du == 0, core.w * dx_du)
        straddle_ds = t - _zero_where(dx_dl == 0, core.a * dx_dl) - _zero_where(dx_du == 0, core.b * dx_du)
        dx_ds = torch.where(core.frame, frame_ds, straddle_ds)
        g_loc, g_scale, g_low, g_high = _unflip_grads(core, dx_dloc, dx_ds, dx_dl, dx_du, odd=True)
        grads = (dx_dp, g_loc, g_scale, g_low, g_high)
        return tuple(core.shaped(grad.reshape(-1) * gi) for gi in grads) + (None,)


# ----------------------------------------------------------------------------------------------------------------
# The distribution.
# ----------------------------------------------------------------------------------------------------------------

class _ExtendedReal(constraints.Constraint):
    """Real numbers including -inf and +inf, but not NaN."""

    def check(self, value):
        return ~torch.isnan(value)


class TruncatedNormal(Distribution):
    r"""Normal(loc, scale) conditioned on low <= X <= high.

    Args:
        loc: mean of the normal before truncation (mu).
        scale: its standard deviation (sigma > 0).
        low, high: the bounds; each may be ``-inf`` / ``+inf`` exactly, and with both infinite this is
            ``Normal(loc, scale)``. All four broadcast together.

    ``mean`` is the heuristic value the paper plans with; ``log_prob`` is the negative of its training loss;
    ``log_normalizer`` is log Z = log(Phi(beta) - Phi(alpha)). Values and gradients are exact in float64 and
    float32 (see the module docstring), including loc many scales outside the bounds and narrow intervals.
    Every statistic is differentiable (first order) w.r.t. all four parameters; the derivative w.r.t. an
    infinite bound is 0. Second derivatives (``create_graph=True``) raise a RuntimeError.

    Example::

        >>> import torch
        >>> d = TruncatedNormal(torch.tensor(0.0), torch.tensor(1.0), torch.tensor(0.2), torch.tensor(1.7))
        >>> round(d.mean.item(), 4)  # the paper's Figure 1: mu = 0 lies outside (l, u), the mean does not
        0.7895
    """

    arg_constraints = {
        "loc": constraints.real,
        "scale": constraints.positive,
        "low": _ExtendedReal(),
        "high": _ExtendedReal(),
    }
    has_rsample = True

    def __init__(self, loc, scale, low, high, validate_args=None):
        self.loc, self.scale, self.low, self.high = broadcast_all(loc, scale, low, high)
        if all(isinstance(v, Number) for v in (loc, scale, low, high)):
            batch_shape = torch.Size()
        else:
            batch_shape = self.loc.size()
        if validate_args is None:
            validate_args = Distribution._validate_args
        if validate_args:
            self._check_parameters()
        super().__init__(batch_shape, validate_args=validate_args)
        self._core_cache: _Core | None = None
        self._fast_cache: _FastCore | None = None
        # the paper's configuration (no upper bound) takes a fast path; decided once, here
        self._one_sided = bool(torch.isposinf(self.high).all()) and not self.loc.is_complex()

    def _check_parameters(self) -> None:
        names = ("loc", "scale", "low", "high")
        for name in names:
            value = getattr(self, name)
            if torch.isnan(value).any():
                raise ValueError(f"TruncatedNormal: {name} contains NaN")
        if torch.isinf(self.loc).any():
            raise ValueError("TruncatedNormal: loc must be finite")
        if not (self.scale > 0).all() or torch.isinf(self.scale).any():
            raise ValueError(f"TruncatedNormal: scale must be positive and finite, got min {self.scale.min().item()}")
        if not (self.low < self.high).all():
            bad = (self.low >= self.high).nonzero()[0].tolist()
            raise ValueError(
                f"TruncatedNormal: low must be < high, got low={self.low[tuple(bad)].item()} "
                f"high={self.high[tuple(bad)].item()} at index {bad}")

    # -- shared state --------------------------------------------------------------------------------------------
    @property
    def _core(self) -> _Core:
        if self._core_cache is None:
            self._core_cache = _core(self.loc.detach(), self.scale.detach(), self.low.detach(), self.high.detach())
        return self._core_cache

    @property
    def _fast(self) -> _FastCore:
        if self._fast_cache is None:
            self._fast_cache = _fast_core(self.loc, self.scale, self.low, self.high)
        return self._fast_cache

    @property
    def support(self):
        return constraints.interval(self.low, self.high)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(TruncatedNormal, _instance)
        batch_shape = torch.Size(batch_shape)
        new.loc = self.loc.expand(batch_shape)
        new.scale = self.scale.expand(batch_shape)
        new.low = self.low.expand(batch_shape)
        new.high = self.high.expand(batch_shape)
        new._core_cache = None
        new._fast_cache = None
        new._one_sided = self._one_sided
        super(TruncatedNormal, new).__init__(batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    # -- statistics ----------------------------------------------------------------------------------------------
    @property
    def log_normalizer(self) -> torch.Tensor:
        """log Z = log(Phi((high - loc)/scale) - Phi((low - loc)/scale))."""
        return _LogNormalizer.apply(self.loc, self.scale, self.low, self.high, self._core)

    @property
    def mean(self) -> torch.Tensor:
        if self._one_sided:
            return _FastMean.apply(self.loc, self.scale, self.low, self.high, self._fast)
        return _Mean.apply(self.loc, self.scale, self.low, self.high, self._core)

    @property
    def mode(self) -> torch.Tensor:
        return torch.minimum(torch.maximum(self.loc, self.low), self.high)

    @property
    def variance(self) -> torch.Tensor:
        return _Variance.apply(self.loc, self.scale, self.low, self.high, self._core)

    @property
    def stddev(self) -> torch.Tensor:
        return self.variance.sqrt()

    def entropy(self) -> torch.Tensor:
        return _Entropy.apply(self.loc, self.scale, self.low, self.high, self._core)

    def log_prob(self, value) -> torch.Tensor:
        value = torch.as_tensor(value, dtype=self.loc.dtype, device=self.loc.device)
        if self._validate_args:
            self._validate_sample(value)
        shape = torch.broadcast_shapes(value.shape, self.batch_shape)
        if shape != self.batch_shape:
            return self.expand(shape).log_prob(value.expand(shape))
        if self._one_sided:
            return _FastLogProb.apply(value.expand(shape), self.loc, self.scale, self.low, self.high, self._fast)
        return _LogProb.apply(value.expand(shape), self.loc, self.scale, self.low, self.high, self._core)

    def cdf(self, value) -> torch.Tensor:
        value = torch.as_tensor(value, dtype=self.loc.dtype, device=self.loc.device)
        if self._validate_args:
            self._validate_sample(value)
        shape = torch.broadcast_shapes(value.shape, self.batch_shape)
        if shape != self.batch_shape:
            return self.expand(shape).cdf(value.expand(shape))
        return _CDF.apply(value.expand(shape), self.loc, self.scale, self.low, self.high, self._core)

    def icdf(self, value) -> torch.Tensor:
        value = torch.as_tensor(value, dtype=self.loc.dtype, device=self.loc.device)
        shape = torch.broadcast_shapes(value.shape, self.batch_shape)
        if shape != self.batch_shape:
            return self.expand(shape).icdf(value.expand(shape))
        if self._validate_args and not ((value >= 0) & (value <= 1)).all():
            raise ValueError("TruncatedNormal.icdf: probabilities must lie in [0, 1]")
        return _ICDF.apply(value, self.loc, self.scale, self.low, self.high, self._core)

    def rsample(self, sample_shape=torch.Size()) -> torch.Tensor:
        shape = self._extended_shape(sample_shape)
        u = torch.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        # keep u away from exactly 0 and 1 by the smallest amount so icdf stays in the open interval
        tiny = torch.finfo(u.dtype).tiny
        u = u.clamp(tiny, 1.0 - torch.finfo(u.dtype).eps / 2)
        return self.icdf(u)

    def sample(self, sample_shape=torch.Size()) -> torch.Tensor:
        with torch.no_grad():
            return self.rsample(sample_shape)

    def __repr__(self) -> str:
        args = ", ".join(f"{k}: {getattr(self, k) if getattr(self, k).numel() == 1 else getattr(self, k).size()}"
                         for k in ("loc", "scale", "low", "high"))
        return f"TruncatedNormal({args})"
