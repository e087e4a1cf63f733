"""Values and first derivatives of every statistic of TN(loc, scale, low, high), from the canonical-frame state.

Each function takes the ``_Core`` of tnlib.distributions._regimes (flattened, in canonical coordinates) and
returns a statistic or its first derivatives w.r.t. loc, scale, low and high (and the value or probability);
``_unflip_grads`` maps derivatives back through the mirror. Gradients are analytic and use the same frame
quantities as the values, so they are finite wherever the value is. They are built from
d/da E[f] = p_a (E[f] - f(a)), d/db E[f] = p_b (f(b) - E[f]) and, for moving both bounds at once, the tilt
identities d Var/d shift = -kappa_3 and d H/d shift = -(E[t] Var + kappa_3/2), whose terms share a sign.
Variance, entropy, the third cumulant and the mean's derivative in the far tail, where closed forms cancel
catastrophically, fall back to composite Gauss-Legendre moments of the frame integrand on just those elements;
the CDF's derivative splits the frame integral at the observation (each part is again a frame).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from tnlib.distributions._regimes import (
    _LOG_SQRT_2PI,
    _NARROW,
    _SQRT_HALF,
    _Core,
    _frame_integral,
    _frame_mass,
    _frame_moments,
    _frame_moments_any,
    _mills,
    _ndtr,
    _wide_panels,
    _zero_where,
)
from tnlib.distributions._series import _FRACTION_START, _g_threshold, _tail_moments


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
    tolerance = 4e-15 if v.dtype == torch.float64 else 1e-6
    ill = (terms * torch.finfo(v.dtype).eps > tolerance * v.abs()) | (v <= 0)
    ill = ill & core.frame
    if bool(ill.any()):
        # semi-infinite far tail: the continued fraction; anything else: quadrature moments of the frame
        series = ill & torch.isinf(core.w) & (core.a >= _FRACTION_START)
        if bool(series.any()):
            v = v.index_put((series,), _tail_moments(core.a[series])[2])
        quad = ill & ~series
        if bool(quad.any()):
            _, _, var_q, _ = _frame_moments_any(core.a[quad], core.w[quad])
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
    # d/dscale * s = xi^2 - E[t^2]; in the frame as (d - D)(2a + d + D) - Var[t], which keeps its relative
    # accuracy on narrow intervals (the form -1 + a (2d - D) + d^2 + w p_b cancels there: w p_b ~ 1)
    v = _standardized_variance(core) if bool(core.frame.any()) else torch.zeros_like(d)
    frame_gs = (d - core.d_mean) * (2.0 * core.a + d + core.d_mean) - v
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
    v_tolerance, tolerance = (4e-15, 1e-10) if v.dtype == torch.float64 else (1e-6, 1e-4)
    error_bound = terms * (torch.finfo(v.dtype).eps * g_ulps + v_tolerance)
    ill = core.frame & ~(error_bound <= tolerance * kappa3.abs())
    if bool(ill.any()):
        _, _, _, third = _frame_moments_any(core.a[ill], core.w[ill])
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


def _straddle_mass(core: _Core, c_value: torch.Tensor, t: torch.Tensor, index=slice(None),
                   above: bool = False) -> torch.Tensor:
    """The mass below c_value (clamped into the support; with ``above``, the mass above it) of the straddling
    elements ``index`` (t is theirs already), relatively exact.

    Below a value on the lower bound's side of loc it is (Phi(t) - Phi(a)) / Z, which cancels where t is close to
    a (1e-6 scales above the bound it keeps 6 digits fewer); over such a short stretch it is p_a J(a, t - a), the
    frame integral from the bound, by quadrature. Below a value past loc it is the masses on either side of loc,
    (erf(-a/sqrt 2) + erf(t/sqrt 2)) / 2Z, a sum: 1 less the mass above the value would cancel where a and t are
    both close to 0. The mass above the value is the mass below -t of the element mirrored about loc.
    """
    s, z = core.scale[index], torch.exp(core.log_z[index])
    # twice Z as the same sum of erf's: a mass that reaches an erf of 1 is then 1 exactly, as the CPU pass's
    twice_z = torch.erf(-core.a[index] * _SQRT_HALF) + torch.erf(core.b[index] * _SQRT_HALF)
    if above:
        t, start, bound, p_bound, sign = -t, -core.b[index], core.c_high[index], core.p_b[index], -1.0
    else:
        start, bound, p_bound, sign = core.a[index], core.c_low[index], core.p_a[index], 1.0
    across = (torch.erf(-start * _SQRT_HALF) + torch.erf(t * _SQRT_HALF)) / twice_z
    mass = torch.where(t > 0, across, (_ndtr(t) - _ndtr(start)) / z)
    length = sign * (c_value[index] - bound) / s  # distance from the bound into the support, in scales
    near = (t <= 0) & torch.isfinite(start) & (length * torch.clamp((start + 0.5 * length).abs(), min=1.0) <= _NARROW)
    if bool(near.any()):
        mass = mass.index_put((near,), p_bound[near] * _frame_mass(start[near], length[near]))
    return mass


def _by_regime(core: _Core, frame_part, straddle_part, like: torch.Tensor) -> torch.Tensor:
    """``frame_part(index)`` on the frame elements and ``straddle_part(index)`` on the straddling ones, each computed
    on its own elements only (quadrature and special functions on elements that do not need them would cost most
    of the time); a batch of one regime is taken whole, without indexing."""
    frame = core.frame.nonzero().squeeze(1)
    if frame.numel() == like.numel():
        return frame_part(slice(None))
    if frame.numel() == 0:
        return straddle_part(slice(None))
    out = torch.empty_like(like)
    out[frame] = frame_part(frame)
    straddle = (~core.frame).nonzero().squeeze(1)
    out[straddle] = straddle_part(straddle)
    return out


def _near_mode(a: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    """Frame elements whose mass below d is a difference of erf's without cancellation: the lower bound within a
    scale of the mode (0 <= a <= 1, so erf(a/sqrt 2) <= 0.69) and d at least a/8."""
    return (a >= 0.0) & (a <= 1.0) & (8.0 * d >= a)


def _cdf_canonical(core: _Core, c_value: torch.Tensor) -> torch.Tensor:
    """The canonical CDF at c_value (flattened; clamped into the support), all regimes."""
    c_value = torch.minimum(torch.maximum(c_value, core.c_low), core.c_high)

    def frame_cdf(i):
        a, d = core.a[i], (c_value[i] - core.c_low[i]) / core.scale[i]
        # near the mode (0 <= a <= 1, d >= a/8): the difference of erf's cancels at most 3 bits, no quadrature
        near = _near_mode(a, d)
        cdf = _frame_integral(a, d, skip=near) * torch.exp(-core.log_m0[i])
        if bool(near.any()):
            a_n, d_n = a[near], d[near]
            mass = torch.erf((a_n + d_n) * _SQRT_HALF) - torch.erf(a_n * _SQRT_HALF)
            cdf = cdf.index_put((near,), 0.5 * mass / torch.exp(core.log_z[i][near]))
        return cdf

    def straddle_cdf(i):
        t = (c_value[i] - core.c_loc[i]) / core.scale[i]
        return _straddle_mass(core, c_value, t, i)

    return _by_regime(core, frame_cdf, straddle_cdf, c_value).clamp(0.0, 1.0)


def _sf_canonical(core: _Core, c_value: torch.Tensor) -> torch.Tensor:
    """1 - the canonical CDF at c_value, with full relative accuracy where it is tiny.

    A mirrored element's CDF is this survival function at the mirrored value, so ``1 - cdf`` would lose it
    (TN(20, 1, 0, 5).cdf(1) is 2.3e-30, not 1 - (1 - 2.3e-30)). Frame: the mass above d is itself a frame
    integral, exp(-d (a + d/2)) J(a + d, w - d) / M0 (a + d >= a, so J stays in its accurate regimes).
    """
    c_value = torch.minimum(torch.maximum(c_value, core.c_low), core.c_high)

    def frame_sf(i):
        a, d = core.a[i], (c_value[i] - core.c_low[i]) / core.scale[i]
        # w - d measured from the upper bound (forming w - d would cancel next to it); +inf without one
        rest = (core.c_high[i] - c_value[i]) / core.scale[i]
        return _frame_integral(a + d, rest) * torch.exp(-d * (a + 0.5 * d) - core.log_m0[i])

    def straddle_sf(i):
        t = (c_value[i] - core.c_loc[i]) / core.scale[i]
        return _straddle_mass(core, c_value, t, i, above=True)

    return _by_regime(core, frame_sf, straddle_sf, c_value).clamp(0.0, 1.0)


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
        _, d_head, _, _ = _frame_moments(core.a[head], d[head], panels=_wide_panels(d.dtype))
        f_a = f_a.index_put((head,), cdf[head] * (core.d_mean[head] - d_head))
    tail = mask & (d > core.d_mean) & (x < core.c_high)
    if bool(tail.any()):
        rest = (core.c_high[tail] - x[tail]) / s[tail]  # w - d, +inf without an upper bound
        m0_tail, d_tail, _, _ = _frame_moments(t[tail], rest, panels=_wide_panels(d.dtype))
        # 1 - F = exp(-d (a + d/2)) J(t, w - d) / M0, accurate where F is near 1
        upper = m0_tail * torch.exp(-d[tail] * (core.a[tail] + 0.5 * d[tail]) - core.log_m0[tail])
        f_a = f_a.index_put((tail,), upper * (d[tail] - core.d_mean[tail] + d_tail))
    return f_a


def _straddle_loc_slope(core: _Core, t, d, rest, f_t, cdf, sf) -> torch.Tensor:
    """F_t + F_a + F_b = phi(t)/Z - p_a (1 - F) - p_b F of straddling elements (minus s times dF/dloc): F (E[t] -
    E_head) up to the mean and (1 - F) (E_tail - E[t]) past it, E_head and E_tail the means of the parts below and
    above the value, as (p_a - p_b) F - (p_a - phi(t)/Z) or (p_b - p_a) (1 - F) + phi(t)/Z - p_b, each difference
    of densities as p expm1 of the difference of their exponents where those are close (phi(t) and p_a both near
    phi(0) beside a bound just under loc would cancel)."""
    a, b, p_a, p_b, mean_t = core.a, core.b, core.p_a, core.p_b, core.mean_t
    below = -0.5 * d * (t + a)  # log phi(t) - log phi(a)
    drop = torch.where(below.abs() < 1.0, -p_a * torch.expm1(below.clamp(-1.0, 1.0)), p_a - f_t)
    above = 0.5 * rest * (b + t)  # log phi(t) - log phi(b)
    rise = torch.where(above.abs() < 1.0, p_b * torch.expm1(above.clamp(-1.0, 1.0)), f_t - p_b)
    return torch.where(t <= mean_t, mean_t * cdf - drop, rise - mean_t * sf)


def _narrow_slopes(core: _Core, d, t, rest, cdf, sf, mask) -> tuple[torch.Tensor, ...]:
    """(narrow, F_a, spread): the frame elements in ``mask`` whose interval is narrow and whose value is inside it,
    and on those F_a = F (1 - F) (d - D_head + D_tail), the distance between the means of the parts below and above
    the value, and minus s dF/ds as F (1 - F) (E_tail[t^2] - E_head[t^2]), each part's second moment from its mean
    and variance, by one panel of Gauss-Legendre each (the state's quadrature on the interval). There a F_a +
    d f(d) - w f(w) F would cancel (next to the upper bound its last two terms are equal)."""
    a, w = core.a, core.w
    narrow = mask & (w * torch.clamp((a + 0.5 * w).abs(), min=1.0) <= _NARROW) & (d > 0) & (rest > 0)
    if not bool(narrow.any()):
        return narrow, d.new_empty(0), d.new_empty(0)
    a_n, d_n, t_n = a[narrow], d[narrow], t[narrow]
    _, head_mean, head_var, _ = _frame_moments(a_n, d_n)
    _, tail_mean, tail_var, _ = _frame_moments(t_n, rest[narrow])
    apart = d_n - head_mean + tail_mean
    both = cdf[narrow] * sf[narrow]
    return narrow, both * apart, both * (apart * (a_n + head_mean + t_n + tail_mean) + tail_var - head_var)


def _tail_moments_above(core: _Core, t, rest, mask) -> tuple[torch.Tensor, ...]:
    """(tail, D_tail, V_tail): the elements in ``mask`` on a wide interval whose part above the value, from t for
    ``rest`` scales to the upper bound, is a narrow stretch, and on those that part's mean distance from the value
    and its variance, by one panel of Gauss-Legendre."""
    a, w = core.a, core.w
    wide = ~(w * torch.clamp((a + 0.5 * w).abs(), min=1.0) <= _NARROW)  # (NaN without a lower bound: wide)
    short = rest * torch.clamp((t + 0.5 * rest).abs(), min=1.0) <= _NARROW
    tail = mask & wide & short & (rest > 0) & (core.p_b > 0)
    if not bool(tail.any()):
        return tail, t.new_empty(0), t.new_empty(0)
    _, tail_mean, tail_var, _ = _frame_moments(t[tail], rest[tail])
    return tail, tail_mean, tail_var


def _tail_spread(core: _Core, tail, d, t, f_a, sf, tail_mean, tail_var) -> torch.Tensor:
    """Minus s dF/ds on the elements ``tail`` (_tail_moments_above's, past the median) from their tail's moments,
    1 - F ``sf`` and, in the frame, F_a: a F_a + d f(d) - w f(w) F (frame) and t f_t + a F_a + b F_b (straddling)
    cancel there, their terms in d and w (in t and b) equal next to the upper bound. As (r f(r))' = (1 - r t) f(r)
    with r = t - a, minus s dF/ds = a F_a + (1 - F) (E_tail[r t] - 1 + w p_b) in the frame, and in either regime
    (1 - F) (E_tail[t^2] - E[t^2]) with E[t^2] = 1 + a p_a - b p_b (straddling: terms that add; the frame's a p_a
    would cancel against E_tail[t^2] far out)."""
    a, b, w, p_a, p_b = (x[tail] for x in (core.a, core.b, core.w, core.p_a, core.p_b))
    d, t, sf = d[tail], t[tail], sf[tail]
    above = d + tail_mean
    frame = a * f_a[tail] + sf * (above * (t + tail_mean) + tail_var - 1.0 + w * p_b)
    straddle = sf * ((t + tail_mean).square() + tail_var - _straddling_second_moment(a, b, p_a, p_b))
    return torch.where(core.frame[tail], frame, straddle)


def _straddling_second_moment(a, b, p_a, p_b) -> torch.Tensor:
    """E[t^2] = 1 + a p_a - b p_b of straddling elements (terms that add), p_a and p_b 0 without the bound."""
    return 1.0 + _zero_where(p_a == 0, a * p_a) - _zero_where(p_b == 0, b * p_b)


def _head_spread(core: _Core, d, cdf, mask) -> tuple[torch.Tensor, torch.Tensor]:
    """(head, spread): the elements in ``mask`` (short of the median) on a wide interval whose part below the
    value, d scales from the lower bound, is a narrow stretch, and on those minus s dF/ds as F (E[t^2] -
    E_head[t^2]) from that part's moments (one panel): straddling, t f_t and a p_a (1 - F) cancel next to the lower
    bound; in the frame a F_a + d f(d) - w p_b F with d f(d) = F (1 - E_head[r t]), which the icdf takes at p
    (its d carries x's rounding there, relatively as large as d is short)."""
    a, w = core.a, core.w
    wide = ~(w * torch.clamp((a + 0.5 * w).abs(), min=1.0) <= _NARROW)  # (NaN without a lower bound: wide)
    short = d * torch.clamp((a + 0.5 * d).abs(), min=1.0) <= _NARROW
    head = mask & wide & short & torch.isfinite(a) & (d > 0)
    if not bool(head.any()):
        return head, d.new_empty(0)
    a, b, w, p_a, p_b, d_mean = (x[head] for x in (a, core.b, w, core.p_a, core.p_b, core.d_mean))
    _, head_mean, head_var, _ = _frame_moments(a, d[head])
    straddle = _straddling_second_moment(a, b, p_a, p_b) - (a + head_mean).square() - head_var
    frame = (a * (d_mean - 2.0 * head_mean) - head_mean.square() - head_var + 1.0
             - _zero_where(p_b == 0, w * p_b))
    return head, cdf[head] * torch.where(core.frame[head], frame, straddle)


def _cdf_grads(core: _Core, c_value: torch.Tensor, cdf: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """dF / d(value, loc, scale, low, high) in canonical coordinates, 0 outside the support.

    Straddling: F = (Phi(t) - Phi(a)) / Z with F_t = phi(t)/Z, F_a = -p_a (1 - F), F_b = -p_b F. Frame:
    F = J(a, d) / J(a, w) with d = (x - low)/s, J(a, d) = int_0^d exp(-a r - r^2/2) dr, so F_d is the frame
    density at d, F_w = -F p_b and F_a comes from _frame_cdf_slope. Moving loc moves a alone (d and w stay),
    which is why the frame's loc-derivative is a single term there. In either regime dF/dlow is -p_a (1 - F) over
    the scale, 1 - F formed as the mass above the value where F passes 1/2.
    """
    s = core.scale
    inside = (c_value >= core.c_low) & (c_value <= core.c_high)
    x = torch.minimum(torch.maximum(c_value, core.c_low), core.c_high)
    d = (x - core.c_low) / s
    t = (x - core.c_loc) / s
    rest = (core.c_high - x) / s
    no_a = core.p_a == 0
    no_b = core.p_b == 0
    sf = 1.0 - cdf
    if bool((cdf > 0.5).any()):
        sf = torch.where(cdf > 0.5, _sf_canonical(core, c_value), sf)
    # straddling, in (t, a, b): F_t, F_a, F_b
    f_t = torch.exp(-0.5 * t.square() - _LOG_SQRT_2PI - core.log_z)
    f_a = -_zero_where(no_a, core.p_a * sf)
    f_b = -_zero_where(no_b, core.p_b * cdf)
    s_spread = t * f_t + _zero_where(no_a, core.a * f_a) + _zero_where(no_b, core.b * f_b)
    # frame, in (a, d, w) with d = t - a and w = b - a: F_a, F_d, F_w
    fr_a = _frame_cdf_slope(core, x, d, t, cdf, core.frame & inside)
    fr_d = torch.exp(-d * (core.a + 0.5 * d) - core.log_m0)
    fr_w = f_b  # -p_b F in both coordinate systems
    fr_spread = core.a * fr_a + d * fr_d + _zero_where(no_b, core.w * fr_w)
    tail, tail_mean, tail_var = _tail_moments_above(core, t, rest, inside & (cdf > 0.5))
    if tail_mean.numel():
        spread = _tail_spread(core, tail, d, t, fr_a, sf, tail_mean, tail_var)
        fr_spread = fr_spread.index_put((tail,), spread)
        s_spread = s_spread.index_put((tail,), spread)
    head, head_spread = _head_spread(core, d, cdf, inside & (cdf <= 0.5) & ~core.frame)
    if head_spread.numel():
        s_spread = s_spread.index_put((head,), head_spread)
    narrow, narrow_fa, narrow_spread = _narrow_slopes(core, d, t, rest, cdf, sf, core.frame & inside)
    if narrow_spread.numel():
        fr_a = fr_a.index_put((narrow,), narrow_fa)
        fr_spread = fr_spread.index_put((narrow,), narrow_spread)
    frame = core.frame
    g_value = torch.where(frame, fr_d, f_t) / s
    g_loc = -torch.where(frame, fr_a, _straddle_loc_slope(core, t, d, rest, f_t, cdf, sf)) / s
    g_scale = -torch.where(frame, fr_spread, s_spread) / s
    g_low = f_a / s
    g_high = f_b / s
    grads = (g_value,) + _unflip_grads(core, g_loc, g_scale, g_low, g_high, odd=True)
    return tuple(_zero_where(~inside, g) for g in grads)


# ----------------------------------------------------------------------------------------------------------------
# Inverse CDF (for icdf and rsample): solved in the canonical frame by safeguarded Newton steps.
# ----------------------------------------------------------------------------------------------------------------

def _frame_icdf_start(core: _Core, idx, a, w, p, q, m0, use_upper) -> tuple[torch.Tensor, torch.Tensor]:
    """A starting d for the frame elements ``idx`` and where it is already the answer.

    Right frame (a >= 0, not narrow): the mass above t = a + d is Phi(-t) = phi(a) K with K = m(a) - p M0 (p <= 1/2)
    or K = q M0 + m(b) phi(b)/phi(a) (p > 1/2: the mass above t within the interval plus the mass beyond b, and
    phi(b)/phi(a) = M0 p_b); neither subtracts nearly equal numbers (m(a) >= M0 > 0 and p M0 <= M0/2), so
    t = -ndtri(phi(a) K) has full relative accuracy wherever phi(a) K is a normal number. d = t - a then carries an
    absolute error of a few ulps of max(t, 1.25), so x = low + s d one of a few ulps of s max(t, 1.25): that is the
    answer where that is within 8 times |x| (x off by a few tens of its ulps at most), and a start for Newton
    elsewhere (where x is small beside s t or s, as low = 0 with loc at or far below it and p small). A narrow
    interval within half a scale of loc inverts erf the same way. Other narrow elements, and far tails whose
    phi(a) K underflows, start from the truncated exponential with the log-density's slope at the interval's
    centre (narrow) or at a (right frame)."""
    dtype = a.dtype
    b = core.b[idx]
    tiny = math.log(torch.finfo(dtype).tiny)
    # near the mode Phi(-t) is close to 1/2 and rounds t's small value away: there t = sqrt 2 erfinv(v) with
    # v = erf(t/sqrt 2) = erf(a/sqrt 2) + 2 p Z (or erf(b/sqrt 2) - 2 q Z above the median), both terms exact
    z = torch.exp(core.log_z[idx])
    ea = torch.erf(a * _SQRT_HALF)
    no_upper = bool(torch.isposinf(b).all())
    if no_upper:
        # no upper bound (the paper's configuration): w is infinite, so every frame element is a right frame, and
        # M0 = m(a) makes both forms of K q M0 (q exact: no cancellation, and no erfcx). Both routes are taken on
        # every element and one kept: cheaper than picking each route's elements out of a batch and back, whose
        # random masks make the selection and the scatter branchy
        right = None
        v = torch.where(use_upper, 1.0 - 2.0 * q * z, ea + 2.0 * p * z)
        near_mode = v <= 0.5
        log_y = torch.log(q * m0) - 0.5 * a.square() - _LOG_SQRT_2PI
        representable = near_mode | (log_y > tiny)
        t = torch.where(near_mode, torch.erfinv(v) / _SQRT_HALF, -torch.special.ndtri(torch.exp(log_y)))
    else:
        right = (a >= 0) & ~(w * torch.clamp((a + 0.5 * w).abs(), min=1.0) <= _NARROW)
        eb = torch.erf(b * _SQRT_HALF)  # (the narrow route below reads it and ea too)
        v = torch.where(use_upper, eb - 2.0 * q * z, ea + 2.0 * p * z)
        near_mode = right & (v <= 0.5)
        # erfinv is cheap beside picking the near-mode elements out of the batch and back: taken on every element
        # (none in a batch of narrow intervals)
        t = torch.where(near_mode, torch.erfinv(v) / _SQRT_HALF, 0.0) if bool(near_mode.any()) else torch.zeros_like(a)
        representable = near_mode
        # elsewhere in the right frame, t = -ndtri(phi(a) K), on those elements only (erfcx is the cost)
        tail_idx = (right & ~near_mode).nonzero().squeeze(1)
        if tail_idx.numel():
            a_t, b_t, p_t, q_t, m0_t, up_t = (x[tail_idx] for x in (a, b, p, q, m0, use_upper))
            k_lower = _mills(a_t) - p_t * m0_t
            beyond = _zero_where(torch.isinf(b_t),
                                 _mills(torch.where(torch.isfinite(b_t), b_t, torch.zeros_like(b_t))))
            k = torch.where(up_t, m0_t * (q_t + core.p_b[idx][tail_idx] * beyond), k_lower)
            log_y = torch.log(k) - 0.5 * a_t.square() - _LOG_SQRT_2PI
            ok = (log_y > tiny) & (k > 0)
            t_tail = -torch.special.ndtri(torch.exp(torch.where(ok, log_y, torch.full_like(log_y, -1.0))))
            t = t.index_put((tail_idx,), t_tail)
            representable = representable.index_put((tail_idx,), ok)
    # a narrow interval within half a scale of loc: t = sqrt 2 erfinv(erf(a/sqrt 2) + p (erf(b/sqrt 2) -
    # erf(a/sqrt 2))), off by a few ulps of |erf(a/sqrt 2)| + |erf(b/sqrt 2)| (erfinv's slope is at most 1.14 there)
    any_near_loc = False
    if right is not None and not bool(right.all()):
        near_loc = ~right & (a.abs() <= 0.5) & (b.abs() <= 0.5)
        any_near_loc = bool(near_loc.any())
    if any_near_loc:
        v_loc = torch.where(use_upper, eb - q * (eb - ea), ea + p * (eb - ea))
        if bool(near_loc.all()):  # (a batch of narrow intervals around loc: no selects)
            t = torch.erfinv(v_loc) / _SQRT_HALF
        else:
            t = torch.where(near_loc, torch.erfinv(torch.where(near_loc, v_loc, 0.0)) / _SQRT_HALF, t)
        erf_sum = ea.abs() + eb.abs()
        representable = representable | near_loc
    d = torch.minimum((t - a).clamp_min(0.0), w)
    if not bool(representable.all()):
        # truncated exponential: d = -log1p(p expm1(-rate w)) / rate (rate 1e-8 where it vanishes: uniform)
        finite_w = torch.where(torch.isinf(w), torch.zeros_like(w), w)
        rate = a if right is None else torch.where(right, a, a + 0.5 * finite_w)
        rate = torch.where(rate.abs() < 1e-8, torch.full_like(rate, 1e-8), rate)
        d_exp = -torch.log1p(p * torch.expm1(-rate * w)) / rate
        d_exp = torch.where(torch.isfinite(d_exp), torch.minimum(d_exp.clamp_min(0.0), w),
                            torch.where(torch.isinf(w), 1.0 / rate.clamp_min(1e-3), 0.5 * w))
        d = torch.where(representable, d, d_exp)
    # accepted where what t is off by is within 8 ulps of the value returned, x = low + s d, or of low: x is formed
    # from low, so it carries low's rounding whatever d is (Newton's d too), and a value that crosses zero inside
    # the interval (a narrow one around loc) is exact to ulps of low, not of itself. t is off by a few ulps of
    # max(t, m(t)) (the inverse of Phi(-t) is conditioned like m(t)/t, and m(t) <= 1.26 for t >= 0)
    c_low = core.c_low[idx]
    x = c_low + core.scale[idx] * d
    off_by = torch.where(near_mode, a + d, a + d + 1.25)  # what t is off by, in its ulps of 1 (erfinv: relative)
    if any_near_loc:
        off_by = torch.where(near_loc, 2.0 * erf_sum, off_by)
    within = off_by * core.scale[idx] <= 8.0 * torch.maximum(x.abs(), c_low.abs())
    return d, representable & within & (d > 0) & (d < w)


def _icdf_canonical(core: _Core, p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """The canonical value x_c with canonical CDF p and survival 1 - p = q (both given, each exact), all regimes.

    q is passed separately because a mirrored element's probability arrives as q: forming 1 - p would round a
    q of 1e-30 away.
    """
    s = core.scale
    dtype = p.dtype
    x = torch.empty_like(p)
    idx = core.frame.nonzero().squeeze(1)
    # each regime's formulas on its own elements only (a batch of one regime is taken whole, without indexing)
    if idx.numel() < p.numel():
        straddle = slice(None) if idx.numel() == 0 else (~core.frame).nonzero().squeeze(1)
        # straddling: invert Phi on whichever tail keeps the argument small, never subtracting near-equal numbers
        a_s, b_s = core.a[straddle], core.b[straddle]
        z = torch.exp(core.log_z[straddle])
        lower_mass = _ndtr(a_s) + p[straddle] * z  # Phi(t)
        below = lower_mass <= 0.5
        t = torch.where(below, lower_mass, _ndtr(-b_s) + q[straddle] * z)  # Phi(t), or Phi(-t) above the median
        t = torch.special.ndtri(t)
        t = torch.where(below, t, -t)
        x[straddle] = core.c_loc[straddle] + s[straddle] * torch.minimum(torch.maximum(t, a_s), b_s)
    if idx.numel() == 0:
        return torch.minimum(torch.maximum(x, core.c_low), core.c_high)

    # frame: solve J(a, d) = p J(a, w) for d in [0, w] (J(a, w) = M0), or, where p > 1/2, the mass above d,
    # exp(-d (a + d/2)) J(a + d, w - d) = q M0 (taken directly, so a tiny q keeps its relative accuracy).
    if idx.numel() == p.numel():
        idx = slice(None)
    a, w, p_f, q_f = core.a[idx], core.w[idx], p[idx], q[idx]
    m0 = torch.exp(core.log_m0[idx])
    use_upper = p_f > 0.5
    d, solved = _frame_icdf_start(core, idx, a, w, p_f, q_f, m0, use_upper)
    # The rest by safeguarded Newton steps. Each element iterates until its step falls to a few ulps of d (the
    # step is a function of the element alone, so a mixed batch gives every element the value it gets alone).
    eps = torch.finfo(dtype).eps
    active = (~solved).nonzero().squeeze(1)
    if active.numel():
        rate = a.clamp_min(1e-3)
        lo = torch.zeros_like(d)
        hi = w.clone()
        target = torch.where(use_upper, q_f, p_f) * m0
    for _ in range(60 if dtype == torch.float64 else 40):
        if active.numel() == 0:
            break
        d_a, a_a, w_a, up = d[active], a[active], w[active], use_upper[active]
        dens = torch.exp(-d_a * (a_a + 0.5 * d_a))  # the frame integrand at d
        # the mass below d (lower) or above it (upper), whichever is the smaller: one frame integral either way
        start = torch.where(up, a_a + d_a, a_a)
        length = torch.where(up, (w_a - d_a).clamp_min(0.0), d_a)
        mass = _frame_integral(start, length) * torch.where(up, dens, torch.ones_like(dens))
        # the lower mass increases with d, the upper one decreases: bracket the root and take a Newton step. The
        # lower mass is concave in d, so plain Newton converges; the upper one is convex and nearly exponential in
        # the tail (plain Newton would crawl 1/a per step there), so its step is Newton's on log(mass)
        t_a = target[active]
        too_high = torch.where(up, mass < t_a, mass > t_a)
        hi_a = torch.where(too_high, torch.minimum(hi[active], d_a), hi[active])
        lo_a = torch.where(too_high, lo[active], torch.maximum(lo[active], d_a))
        new_d = torch.where(up, d_a + torch.log(mass / t_a) * mass / dens, d_a - (mass - t_a) / dens)
        # converged: a Newton step of at most 4 ulps of d (Newton's error after it is far smaller). It is kept even
        # where it touches the bracket: at the root the mass may equal the target, which makes d a bracket end.
        converged = torch.isfinite(new_d) & ((new_d - d_a).abs() <= 4.0 * eps * new_d)
        bad = ~converged & (~torch.isfinite(new_d) | (new_d <= lo_a) | (new_d >= hi_a))
        bisect = torch.where(torch.isinf(hi_a), 2.0 * lo_a + 1.0 / rate[active], 0.5 * (lo_a + hi_a))
        new_d = torch.where(bad, bisect, new_d)
        hi[active], lo[active], d[active] = hi_a, lo_a, new_d
        active = active[~converged]
    x[idx] = core.c_low[idx] + s[idx] * d
    return torch.minimum(torch.maximum(x, core.c_low), core.c_high)
