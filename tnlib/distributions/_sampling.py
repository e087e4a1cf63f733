"""Exact samplers of TN(loc, scale, low, high) by rejection, for ``sample`` (no gradients).

``rsample`` inverts the CDF, because its gradients are those of x(u; theta) with the uniform u held fixed; a plain
``sample`` needs only the distribution, and three rejection samplers give it for a few cheap operations per value
instead of the icdf's iterations. Each element takes the proposal with the highest acceptance rate (but for a
nearly flat interval at or above loc, which takes the uniform: ``_NEARLY_FLAT``):

* the Normal itself, t ~ N(0, 1) kept where a <= t <= b: acceptance Z (an interval that holds much of the mass);
  where the interval lies at or above loc (a >= 0) the folded Normal |t|, which has twice the density there:
  acceptance 2 Z (the half-normal, a = 0 and b = inf, keeps every draw);
* in the frame (a >= 0: the interval lies at or above loc, measured from its lower end, d = t - a in [0, w]), the
  exponential with the log-density's slope at the bound, d ~ Exp(a) truncated to [0, w], kept with probability
  exp(-d^2/2) (Robert 1995's proposal for the far tail): acceptance a M0 / (1 - exp(-a w));
* the uniform on the interval, kept with probability density / peak density: acceptance (mass) / (w peak), high
  on narrow intervals.

The best of the three rates is at least 0.49 over bounds from -1e4 to 1e4 scales and widths from 1e-6 scales to
infinite (a test checks it on that grid; the least, 0.4946, is an interval from just below loc, 2.55 scales wide), so
a draw takes about two candidates at most on average; an element whose best rate were below
``_MIN_ACCEPTANCE`` would be drawn by inversion instead. Every accepted value is an exact draw, so the samples
follow the distribution as the icdf's do; they are not the icdf's values at the same uniforms.
"""
from __future__ import annotations

import torch

from tnlib.distributions._regimes import _SQRT_2PI, _Core

_MIN_ACCEPTANCE = 0.05
_FEW_PENDING, _RETRIES = 4096, 8
_NORMAL, _EXPONENTIAL, _UNIFORM = 0, 1, 2
# an interval at or above loc whose log-density falls by at most this much across it, (a + w/2) w, takes the uniform
# even where the exponential keeps a little more (at most 1 - exp(-1/16), 6%, more): the uniform's candidate is a
# product and its test mostly decided by bounds on the exp, the exponential's a log1p, an expm1 and an exp
_NEARLY_FLAT = 1.0 / 16.0


def _acceptance_rates(core: _Core) -> torch.Tensor:
    """(3, N) acceptance rates of the Normal, exponential and uniform proposals (0 where a proposal does not apply)."""
    z = torch.exp(core.log_z)
    m0 = torch.exp(core.log_m0)
    a, w, frame = core.a, core.w, core.frame
    finite_w = torch.where(torch.isinf(w), torch.zeros_like(w), w)
    # exponential: the frame with a positive slope at the bound
    slope = torch.where(frame & (a > 0), a, torch.ones_like(a))
    exponential = torch.where(frame & (a > 0), slope * m0 / -torch.expm1(-slope * w), torch.zeros_like(a))
    # uniform: mass / (width x peak); the frame's peak is at d* = min(max(-a, 0), w), the straddle's at t = 0
    d_peak = torch.minimum((-a).clamp_min(0.0), finite_w)
    frame_uniform = m0 * torch.exp(d_peak * (a + 0.5 * d_peak)) / w
    uniform = torch.where(frame, frame_uniform, z * _SQRT_2PI / w)
    normal = torch.where(a >= 0, 2.0 * z, z)
    return torch.stack([normal, exponential, torch.nan_to_num(uniform, nan=0.0)])


def _propose(kind: int, core: _Core, e: torch.Tensor | None, size: int | None = None,
             fold: bool | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Candidate canonical values for the elements ``e`` (flat indices, repeats allowed; None: every element once,
    in order, or with ``size``, that many candidates of a one-element state, which broadcasts) and which of them
    are accepted. ``fold`` (the Normal's): whether every element folds (a >= 0), none does, or None: per element."""
    def take(x: torch.Tensor) -> torch.Tensor:
        return x if e is None else x.index_select(0, e)

    a, s = take(core.a), take(core.scale)
    like = dict(dtype=a.dtype, device=a.device)
    shape = a.shape if size is None else (size,)
    if kind == _NORMAL:
        t = torch.randn(shape, **like)
        # the folded draw where the interval lies at or above loc; a group of one kind (the usual) skips the select
        if fold is None:
            t = torch.where(a >= 0, t.abs(), t)
        elif fold:
            t = t.abs()
        keep = torch.clamp(t, a, take(core.b)) == t  # a <= t <= b, in two vectorised passes instead of three
        return torch.addcmul(take(core.c_loc), s, t), keep
    u = torch.rand(shape, **like)
    v = torch.rand(shape, **like)
    w = take(core.w)
    if kind == _EXPONENTIAL:
        d = torch.minimum(-torch.log1p(u * torch.expm1(-a * w)) / a, w)
        keep = v <= torch.exp(-0.5 * d.square())
        return torch.addcmul(take(core.c_low), s, d), keep
    # uniform over [0, w] from the lower end; the log-density relative to its peak, written as a product of the
    # distance to the peak so that nothing near-equal is subtracted
    d = u * w
    frame = take(core.frame)
    d_peak = torch.where(frame, torch.minimum((-a).clamp_min(0.0), w), -a)  # straddle: the peak is at t = 0
    log_ratio = torch.where(frame, -(d - d_peak) * (a + 0.5 * (d + d_peak)), -0.5 * (a + d).square())
    return torch.addcmul(take(core.c_low), s, d), v <= torch.exp(log_ratio)


def _proposals(core: _Core) -> list[tuple[int, torch.Tensor, bool | None]]:
    """Each proposal with the flat indices of the elements it draws (-1: by inversion) and, for the Normal, whether
    they all fold (None: some do), computed once per distribution object: a batch of distinct distributions drawn
    from once would otherwise pay for it each call."""
    rates = _acceptance_rates(core)
    best, kind = rates.max(0)
    nearly_flat = (core.a >= 0) & ((core.a + 0.5 * core.w) * core.w <= _NEARLY_FLAT)
    kind = torch.where(nearly_flat, torch.full_like(kind, _UNIFORM), kind)
    kind = torch.where(best >= _MIN_ACCEPTANCE, kind, torch.full_like(kind, -1))
    groups = []
    for k in (_NORMAL, _EXPONENTIAL, _UNIFORM, -1):
        elements = (kind == k).nonzero().squeeze(1)
        if elements.numel():
            folds = core.a[elements] >= 0
            fold = True if bool(folds.all()) else False if not bool(folds.any()) else None
            groups.append((k, elements, fold))
    return groups


def _sample_canonical(core: _Core, proposals, count: int, inverse) -> torch.Tensor:
    """``count`` independent canonical draws of every element, as a (count * N) tensor ordered draw-major.

    ``proposals`` is :func:`_proposals` of ``core``; ``inverse(elements)`` draws the given elements (flat
    indices) by inversion, for those no proposal suits.
    """
    n = core.a.numel()
    out = torch.empty(count * n, dtype=core.a.dtype, device=core.a.device)
    if out.numel() == 0:
        return out
    if n == 1 and proposals[0][0] != -1:  # one distribution (d.sample((count,)) of a scalar one): no gathers
        return _sample_one(core, proposals[0][0], count, proposals[0][2])
    # one pass over the draws of each proposal's elements, then again over the rejected ones
    for k, elements, fold in proposals:
        if count == 1 and elements.numel() == n and k != -1:
            # the first pass reads the state as it is, without gathering; its rejected values are overwritten below
            out, keep = _propose(k, core, None, fold=fold)
            pending = (~keep).nonzero().squeeze(1)
        elif elements.numel() == n:
            pending = torch.arange(count * n, device=out.device)
        else:
            pending = (torch.arange(count, device=out.device)[:, None] * n + elements).reshape(-1)
        if k == -1:
            out[pending] = inverse(pending % n)
            continue
        while pending.numel():
            drawn = pending if count == 1 else pending % n  # the element of each pending draw
            if pending.numel() > _FEW_PENDING:
                value, keep = _propose(k, core, drawn, fold=fold)
                kept = keep.nonzero().squeeze(1)
                out.index_copy_(0, pending.index_select(0, kept), value.index_select(0, kept))
                pending = pending[~keep]
                continue
            # few draws left: each pass's fixed costs would dominate the last several passes, so each pending draw
            # gets _RETRIES candidates at once and keeps its first accepted one (the choice depends on which were
            # accepted only, so the value kept is an exact draw)
            value, keep = _propose(k, core, drawn.repeat_interleave(_RETRIES), fold=fold)
            any_kept, first = keep.view(-1, _RETRIES).to(torch.uint8).max(1)
            chosen = value.view(-1, _RETRIES).gather(1, first[:, None]).squeeze(1)
            kept = any_kept.nonzero().squeeze(1)
            out.index_copy_(0, pending.index_select(0, kept), chosen.index_select(0, kept))
            pending = pending[any_kept == 0]
    out = out.reshape(count, n)
    return torch.clamp(out, core.c_low, core.c_high).reshape(-1)


def _sample_one(core: _Core, kind: int, count: int, fold: bool | None) -> torch.Tensor:
    """``count`` draws of a one-element state: candidates in batches sized by the acceptance rate (10% over what
    the rate says is needed), the accepted ones taken in order until there are ``count`` -- iid draws of one law,
    so which slot each fills does not matter."""
    rate = float(_acceptance_rates(core)[kind, 0])
    parts, filled = [], 0
    while filled < count:
        need = count - filled
        value, keep = _propose(kind, core, None, size=int(need / rate * 1.1) + 16, fold=fold)
        accepted = value[keep][:need]
        parts.append(accepted)
        filled += accepted.numel()
    out = torch.cat(parts) if len(parts) > 1 else parts[0]
    return torch.clamp(out, core.c_low, core.c_high)
