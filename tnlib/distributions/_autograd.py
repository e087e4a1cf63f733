"""The torch.autograd.Function classes behind TruncatedNormal's statistics.

Each forward evaluates a statistic from the per-element state of tnlib.distributions._regimes, passed in as the
last argument and computed once per distribution; each backward applies its closed-form first derivatives
(tnlib.distributions._statistics, or inline for the one-sided fast path). Second derivatives are not implemented:
a backward pass with create_graph=True raises (``_first_order``).
"""
from __future__ import annotations

import functools
import math

import torch

from tnlib.distributions._regimes import _LOG_SQRT_2PI, _Core, _zero_where
from tnlib.distributions._statistics import (
    _cdf_canonical,
    _cdf_grads,
    _core_mean,
    _entropy_values,
    _frame_cdf_slope,
    _head_spread,
    _icdf_canonical,
    _log_prob_grads,
    _log_prob_values,
    _mean_grads,
    _narrow_slopes,
    _sf_canonical,
    _standardized_variance,
    _tail_moments_above,
    _tail_spread,
    _unflip_grads,
    _variance_and_entropy_slopes,
)


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


def _shaped_grads(core: _Core, grad: torch.Tensor, grads, needs) -> tuple:
    """grad * each gradient, in the batch shape, None where the input needs none."""
    grad = grad.reshape(-1)
    return tuple(core.shaped(grad * g) if need else None for g, need in zip(grads, needs))


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
        # d log Z / d scale = (a p_a - b p_b) / s. On a narrow interval p_a and p_b are ~1/w and a ~ b, so that
        # difference cancels (relative error 1e-3 at w = 1e-13); in the frame take it as E[t^2] - 1 instead,
        # Var[t] + E[t]^2 - 1, which is the same identity with no term of size 1/w
        a_pa = _zero_where(core.p_a == 0, core.a * core.p_a)
        b_pb = _zero_where(core.p_b == 0, core.b * core.p_b)
        g_scale = a_pa - b_pb
        if bool(core.frame.any()):
            g_scale = torch.where(core.frame, _standardized_variance(core) + core.mean_t.square() - 1.0, g_scale)
        g = _unflip_grads(core, core.mean_t / s, g_scale / s, -core.p_a / s, core.p_b / s, odd=False)
        return tuple(core.shaped(grad.reshape(-1) * gi) for gi in g) + (None,)


class _LogProb(torch.autograd.Function):
    @staticmethod
    def forward(ctx, value, loc, scale, low, high, core):
        lp, d, xi, inside = _log_prob_values(core, value.detach().reshape(-1).double())
        ctx.core = core
        ctx.save_for_backward(d, xi, inside)
        return core.shaped(lp)

    @staticmethod
    @_first_order
    def backward(ctx, grad):
        core = ctx.core
        grads = _log_prob_grads(core, *ctx.saved_tensors)
        return tuple(core.shaped(grad.reshape(-1) * gi) for gi in grads) + (None,)


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


class _CDF(torch.autograd.Function):
    @staticmethod
    def forward(ctx, value, loc, scale, low, high, core):
        value = value.detach().reshape(-1).double()
        c_value = torch.where(core.flip, -value, value)
        cdf = _cdf_canonical(core, c_value)
        ctx.core = core
        ctx.save_for_backward(c_value, cdf)
        if not bool(core.flip.any()):
            return core.shaped(cdf)
        # a mirrored element's CDF is the canonical survival function, computed as such (not 1 - cdf)
        return core.shaped(torch.where(core.flip, _sf_canonical(core, c_value), cdf))

    @staticmethod
    @_first_order
    def backward(ctx, grad):
        core = ctx.core
        grads = _cdf_grads(core, *ctx.saved_tensors)
        return _shaped_grads(core, grad, grads, ctx.needs_input_grad) + (None,)


class _ICDF(torch.autograd.Function):
    """x(p; loc, scale, low, high) with the implicit-function gradients of F(x; theta) = p."""

    @staticmethod
    def forward(ctx, p, loc, scale, low, high, core):
        p = p.detach().reshape(-1).double()
        # canonical probability and its complement, each exact (a mirrored element's complement is p itself)
        any_flip = bool(core.flip.any())
        c_p = torch.where(core.flip, 1.0 - p, p) if any_flip else p
        c_q = torch.where(core.flip, p, 1.0 - p) if any_flip else 1.0 - p
        x_c = _icdf_canonical(core, c_p, c_q)
        ctx.core = core
        ctx.save_for_backward(x_c, c_p, c_q)
        return core.shaped(torch.where(core.flip, -x_c, x_c) if any_flip else x_c)

    @staticmethod
    @_first_order
    def backward(ctx, grad):
        core = ctx.core
        x_c, c_p, c_q = ctx.saved_tensors
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
        dx_dl = torch.exp(torch.log(c_q) + log_pa - log_pdf)
        dx_du = torch.exp(torch.log(c_p) + log_pb - log_pdf)
        dx_dl = torch.nan_to_num(dx_dl, nan=0.0)
        dx_du = torch.nan_to_num(dx_du, nan=0.0)
        # dx/dloc = 1 - dx/dlow - dx/dhigh (shifting everything shifts x); in the frame that cancels when loc is
        # far below the interval, and dx/dloc = -dF/dloc / pdf(x) = F_a / (s pdf(x)) is taken directly
        frame = core.frame & (dx_dp > 0) & torch.isfinite(dx_dp)
        t_frame = torch.where(frame, t, torch.ones_like(t))
        f_a = _frame_cdf_slope(core, x_c, d, t_frame, c_p, frame)
        # past the median with a narrow tail, the frame's F_a (past the mean) and minus s dF/ds from the tail's
        # moments at p itself: the tail's mass at the rounded x carries x's rounding, relatively as large as the
        # tail is short, and d - w dx/dhigh (t - b dx/dhigh) cancels next to the upper bound
        rest = (core.c_high - x_c) / s
        usable = (c_p > 0.5) & (dx_dp > 0) & torch.isfinite(dx_dp)
        tail, tail_mean, tail_var = _tail_moments_above(core, t, rest, usable)
        if tail_mean.numel():
            past = frame[tail] & (d[tail] > core.d_mean[tail])
            at_p = c_q[tail] * (d[tail] - core.d_mean[tail] + tail_mean)
            f_a = f_a.index_put((tail,), torch.where(past, at_p, f_a[tail]))
        dx_dloc = torch.where(frame, f_a * dx_dp / s, 1.0 - dx_dl - dx_du)
        # dx/dscale = t - a dx/dlow - b dx/dhigh, with t - a = d in the frame
        frame_ds = core.a * dx_dloc + d - _zero_where(dx_du == 0, core.w * dx_du)
        # on a narrow interval those terms cancel next to a bound: F_a and minus s dF/ds from the parts' moments
        # at p itself (1 - F at the rounded x would carry its rounding), each over s pdf(x)
        narrow, narrow_fa, narrow_spread = _narrow_slopes(core, d, t_frame, rest, c_p, c_q, frame)
        if narrow_spread.numel():
            over = dx_dp[narrow] / s[narrow]
            dx_dloc = dx_dloc.index_put((narrow,), narrow_fa * over)
            frame_ds = frame_ds.index_put((narrow,), narrow_spread * over)
        straddle_ds = t - _zero_where(dx_dl == 0, core.a * dx_dl) - _zero_where(dx_du == 0, core.b * dx_du)
        if tail_mean.numel():
            spread = _tail_spread(core, tail, d, t, f_a, c_q, tail_mean, tail_var) * dx_dp[tail] / s[tail]
            frame_ds = frame_ds.index_put((tail,), spread)
            straddle_ds = straddle_ds.index_put((tail,), spread)
        # and short of the median next to the lower bound, where d (t - a dx/dlow) carries x's rounding: from the
        # head's moments at p itself
        head, head_spread = _head_spread(core, d, c_p, (c_p <= 0.5) & (dx_dp > 0) & torch.isfinite(dx_dp))
        if head_spread.numel():
            head_ds = head_spread * dx_dp[head] / s[head]
            frame_ds = frame_ds.index_put((head,), head_ds)
            straddle_ds = straddle_ds.index_put((head,), head_ds)
        dx_ds = torch.where(core.frame, frame_ds, straddle_ds)
        g_loc, g_scale, g_low, g_high = _unflip_grads(core, dx_dloc, dx_ds, dx_dl, dx_du, odd=True)
        grads = (dx_dp, g_loc, g_scale, g_low, g_high)
        return tuple(core.shaped(grad.reshape(-1) * gi) for gi in grads) + (None,)


# ----------------------------------------------------------------------------------------------------------------
# The one-sided fast path (high = +inf everywhere), on _FastCore; its derivatives are inline.
# ----------------------------------------------------------------------------------------------------------------

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
            dedl[fc.far] = fc.far_d * fc.far_p_a
            v[fc.far] = fc.far_v
            ds[fc.far] = fc.far_d + fc.far_a * fc.far_v  # D + a v, without forming E[t] - a E[t]
        needs = ctx.needs_input_grad
        return (fc.shaped(grad * v) if needs[0] else None,
                fc.shaped(grad * ds) if needs[1] else None,
                fc.shaped(grad * dedl) if needs[2] else None,
                torch.zeros_like(fc.shaped(grad)) if needs[3] else None, None)


class _FastLogProb(torch.autograd.Function):
    @staticmethod
    def forward(ctx, value, loc, scale, low, high, fc):
        value = value.detach().reshape(-1).double()
        low = low.detach().reshape(-1).double()
        xi = (value - loc.detach().reshape(-1).double()) / fc.scale
        lp = (-_LOG_SQRT_2PI - torch.log(fc.scale) - fc.log_z).addcmul_(xi, xi, value=-0.5)
        outside = value < low
        # training never observes below the bound (h* >= an admissible l): the mask is then left unapplied
        any_outside = bool(outside.any())
        d = None
        if fc.far.numel():
            # relative to the bound: -log s - log m(a) - d (d + 2a)/2, never forming xi^2/2 - a^2/2
            far = fc.far
            d = (value[far] - fc.far_low) / fc.far_scale
            lp[far] = -torch.log(fc.far_scale) - fc.far_log_m - 0.5 * d * (d + 2.0 * fc.far_a)
        if any_outside:
            lp.masked_fill_(outside, -math.inf)
        ctx.fc, ctx.far_dist = fc, d
        ctx.save_for_backward(xi, outside if any_outside else None)
        return fc.shaped(lp)

    @staticmethod
    @_first_order
    def backward(ctx, grad):
        fc = ctx.fc
        xi, outside = ctx.saved_tensors
        needs = ctx.needs_input_grad
        grad_s = grad.reshape(-1) / fc.scale
        if outside is not None:
            grad_s.masked_fill_(outside, 0.0)  # 0 outside the support
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
                    g[far] = -1.0 + fc.far_a * (2.0 * d - fc.far_d) + d.square()
            else:  # d/dlow * scale
                g = fc.p_a
            out.append(fc.shaped(grad_s * g))
        return (*out, torch.zeros_like(fc.shaped(grad_s)) if needs[4] else None, None)
