"""The numerical regimes of TN(loc, scale, low, high): the per-element state every statistic is computed from.

All regimes are written in one *canonical frame*:

* Mirror. ``TN(mu, s, l, u)`` is ``-TN(-mu, s, -u, -l)``; an interval lying left of ``loc`` is mirrored so the
  interval always reaches to the right of ``loc`` (standardised upper bound ``b > 0``).
* Right frame (``a = (l - mu)/s >= 0``): everything is written relative to the lower bound, ``t = a + d``, with
  the integral ``M0 = int_0^w exp(-a d - d^2/2) dd = m(a) - exp(-w(a+b)/2) m(b)`` where ``m(x) = sqrt(pi/2)
  erfcx(x/sqrt 2)`` is Mills' ratio. ``log Z = -a^2/2 - log sqrt(2 pi) + log M0`` never forms ``exp(-a^2/2)``, and
  the mean is ``l + s * D`` with ``D = E[t] - a`` computed without cancelling ``a`` against ``a``.
* Straddling (``a < 0 < b``): ``Z = (erf(b/sqrt 2) - erf(a/sqrt 2)) / 2`` adds two non-negative terms.
* Narrow intervals (``w * max(1, |centre|) <= 1``, ``w = (high - low)/scale``) integrate the same frame
  integrand with 16-point Gauss-Legendre quadrature, whose error there is far below double rounding.

``_core`` computes that state (``_Core``) in general; ``_fast_core`` (``_FastCore``) is the paper's training
configuration, no upper bound, in a handful of vectorised ops. The elementary functions of the standard normal
(``_ndtr``, ``_mills``) and the frame integral, closed form or Gauss-Legendre (``_frame_integral``,
``_frame_moments``), live here too; the statistics built on the state are in tnlib.distributions._statistics.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch

from tnlib.distributions._series import _g, _tail_moments


_SQRT_HALF = math.sqrt(0.5)
_SQRT_PI_OVER_2 = math.sqrt(math.pi / 2)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_NARROW = 1.0  # w * max(1, |c|) at or below this uses quadrature (see module docstring)


# ----------------------------------------------------------------------------------------------------------------
# Elementary functions of the standard normal, in forms that stay accurate for large arguments.
# ----------------------------------------------------------------------------------------------------------------

def _ndtr(x: torch.Tensor) -> torch.Tensor:
    """Phi(x) with full relative accuracy in the lower tail (torch.special.ndtr returns 0 below about -8)."""
    return 0.5 * torch.erfc(-x * _SQRT_HALF)


def _mills(x: torch.Tensor) -> torch.Tensor:
    """Mills' ratio m(x) = Phi(-x) / phi(x) = int_0^inf exp(-x t - t^2/2) dt, for any x (overflows for x < -37)."""
    return _SQRT_PI_OVER_2 * torch.special.erfcx(x * _SQRT_HALF)


# ----------------------------------------------------------------------------------------------------------------
# The frame integral J(a, d) = int_0^d exp(-a r - r^2/2) dr and the moments of its integrand: Gauss-Legendre
# quadrature where the interval is narrow or the closed forms cancel, closed forms elsewhere.
# ----------------------------------------------------------------------------------------------------------------

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


def _wide_panels(dtype: torch.dtype) -> int:
    """Panels of :func:`_frame_moments` for any (a >= 0, w): eight are exact to double rounding; in float32 two
    are (their largest relative error against eight, over a from 0 to 1e4 and w from 0.01 to infinite, is 2.4e-11
    on the third moment, 1e-13 on the mean), at a quarter of the work."""
    return 8 if dtype == torch.float64 else 2


def _frame_moments_any(a: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """:func:`_frame_moments` with one panel where (a, w) is narrow (what the per-element state already integrates
    so) and :func:`_wide_panels` elsewhere: a narrow interval would pay eight times the work for the same digits."""
    narrow = w * torch.clamp((a + 0.5 * w).abs(), min=1.0) <= _NARROW
    if bool(narrow.all()):
        return _frame_moments(a, w)
    if not bool(narrow.any()):
        return _frame_moments(a, w, panels=_wide_panels(a.dtype))
    moments = [torch.empty_like(a) for _ in range(4)]
    for mask, panels in ((narrow, 1), (~narrow, _wide_panels(a.dtype))):
        for out, part in zip(moments, _frame_moments(a[mask], w[mask], panels=panels)):
            out[mask] = part
    return tuple(moments)


# Gauss-Legendre nodes for the frame mass by the largest slope c = top (|a| + top) of the exponent a d + d^2/2 over
# the batch: n nodes integrate exp(-c x) on [0, 1] to about (n!)^4 / ((2n + 1) ((2n)!)^3) c^(2n) relative, 6e-10
# c^8 for 4 nodes and 2e-23 c^16 for 8 (the quadratic term, top^2 <= c, adds less): below 1e-22 at these bounds.
_MASS_NODES = ((0.01, 4), (0.2, 8))


def _frame_mass(a: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    """M0 of :func:`_frame_moments` with one panel, without the moments (the cdf and icdf need only the mass): the
    same cut, and as few nodes as the batch's narrowest exponent range allows (the Newton steps of a narrow
    interval's icdf evaluate it on every step)."""
    d_max = 90.0 / (torch.sqrt(a.square() + 90.0) + a)
    top = torch.minimum(w, torch.where(a >= 0, d_max, w))
    slope = float((top * (a.abs() + top)).max()) if top.numel() else 0.0
    count = next((n for bound, n in _MASS_NODES if slope <= bound), 16)
    nodes, weights = _gl(count, a)
    s = top[..., None] * nodes
    return (torch.exp(-s * (a[..., None] + 0.5 * s)) * weights).sum(-1) * top


def _frame_integral(a: torch.Tensor, d: torch.Tensor, skip: torch.Tensor | None = None) -> torch.Tensor:
    """J(a, d) = int_0^d exp(-a s - s^2/2) ds for a >= 0 or narrow (a, d); d may be infinite. Elements in ``skip``
    (a caller computes them otherwise) get no quadrature, and an unspecified value."""
    if skip is not None and bool(skip.any()):
        # the closed forms' erfcx calls are the cost: the other elements only (none: nothing to compute)
        rest = (~skip).nonzero().squeeze(1)
        out = torch.zeros_like(a)
        return out if rest.numel() == 0 else out.index_put((rest,), _frame_integral(a[rest], d[rest]))
    centre = a + 0.5 * d
    narrow = d * torch.clamp(centre.abs(), min=1.0) <= _NARROW
    if bool(narrow.all()):  # (a batch of narrow intervals: the closed forms below would all be thrown away)
        return _frame_mass(a, d)
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
        closed = closed.index_put((narrow,), _frame_mass(a[narrow], d[narrow]))
    return closed


# ----------------------------------------------------------------------------------------------------------------
# The per-element state shared by every statistic and its gradients.
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
    dtype: torch.dtype  # the caller's; the state is float64 whatever it is (_working)

    def shaped(self, x: torch.Tensor) -> torch.Tensor:
        """A flat working-precision result in the batch shape and the caller's dtype."""
        return x.reshape(self.shape).to(self.dtype)


def _zero_where(mask: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    return torch.where(mask, torch.zeros_like(x), x)


def _working(*tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The parameters flattened, detached and in float64, the precision every state is computed in.

    A float32 element computed in float32 loses a few dozen of its ulps wherever the closed forms lose a few
    dozen of the rounding's (a^2/2 in an exponent, a^2 ulps in g or the mean near a = 5-10, where the tail forms
    take over): in float64 the same forms are exact to far below a float32 ulp, so a float32 result is the exact
    value rounded once. Widening the inputs is exact, and the results are rounded back to the caller's dtype.
    """
    return tuple(t.detach().reshape(-1).to(torch.float64) for t in tensors)


def _core(loc: torch.Tensor, scale: torch.Tensor, low: torch.Tensor, high: torch.Tensor) -> _Core:
    shape, dtype = loc.shape, loc.dtype
    loc, scale, low, high = _working(loc, scale, low, high)
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
                 shape, dtype)


# ----------------------------------------------------------------------------------------------------------------
# Fast path for the paper's training configuration: no upper bound (high = +inf everywhere).
# ----------------------------------------------------------------------------------------------------------------
# With b = +inf and a below 1, Z = erfc(a/sqrt 2)/2 has full relative accuracy and the straddling formulas hold
# without cancellation worth counting (mean = loc + scale p_a loses at most a few ulps there). A handful of
# vectorised ops then do the whole forward and backward. From a = 1 up (loc below the bound) loc + scale p_a
# cancels (by a^2 ulps, and p_a = exp(-a^2/2)/Z carries a^2/2 ulps of its exponent): those elements take the
# frame form, relative to the bound, with the tail's own moments (_series), on just those elements.

def _fast_floor(dtype: torch.dtype) -> float:
    """-a beyond which phi(a) nears the dtype's smallest normal number (phi(37.5) = 1.3e-306, phi(13) = 8e-38)."""
    return 37.5 if dtype == torch.float64 else 13.0


def _fast_threshold(dtype: torch.dtype) -> float:
    return 1.0


@dataclass
class _FastCore:
    """One-sided (high = +inf) state. Elements with a >= 1 (``far``) take the frame form with the tail moments; their
    own parameters are gathered once here (log_prob, mean and both backwards read them)."""

    a: torch.Tensor
    log_z: torch.Tensor
    p_a: torch.Tensor  # phi(a)/Z = E[t]
    mean: torch.Tensor
    scale: torch.Tensor
    shape: torch.Size
    dtype: torch.dtype  # the caller's; the state is float64 (_working)
    far: torch.Tensor  # flat indices of frame (a >= 1) elements
    far_a: torch.Tensor | None = None
    far_low: torch.Tensor | None = None
    far_scale: torch.Tensor | None = None
    far_p_a: torch.Tensor | None = None  # 1/m(a)
    far_log_m: torch.Tensor | None = None  # log m(a) = log M0
    far_d: torch.Tensor | None = None  # E[t] - a
    far_v: torch.Tensor | None = None  # Var[t]

    def shaped(self, x: torch.Tensor) -> torch.Tensor:
        return x.reshape(self.shape).to(self.dtype)


def _fast_core(loc, scale, low, high) -> _FastCore:
    shape, dtype = loc.shape, loc.dtype
    loc, scale, low, high = _working(loc, scale, low, high)
    with torch.no_grad():
        # low = -inf becomes a = -1e15: the same values to the last bit, and products like a * p_a stay 0
        # instead of -inf * 0 = nan, which saves a nan_to_num in every backward
        a = ((low - loc) / scale).clamp_(min=-1e15)
        threshold = _fast_threshold(a.dtype)
        # Subnormal numbers cost the processor tens of cycles each (exp of -100 in float32: 140x exp of -50), so
        # the closed forms take a within [-below, threshold]: past the threshold erfc, then exp(-a^2/2), underflow
        # and the frame form replaces them; below -below (loc that many scales above the bound) p_a = phi(a)/Z
        # is under the smallest normal number, and is 0, while log Z is 0 to the last bit either way.
        below = _fast_floor(a.dtype)
        a_closed = a.clamp(min=-below, max=threshold)
        log_z = torch.log(torch.erfc(a_closed * _SQRT_HALF)).sub_(math.log(2.0))
        p_a = torch.addcmul(-_LOG_SQRT_2PI - log_z, a_closed, a_closed, value=-0.5).exp_()
        # one pass for the batch's range spares the masks below where no element needs them (the usual batch)
        lowest, highest = (float(x) for x in torch.aminmax(a)) if a.numel() else (0.0, 0.0)
        if lowest < -below:
            p_a.mul_(a >= -below)  # 0 there (a product with the mask costs half a masked_fill)
        mean = torch.addcmul(loc, scale, p_a)
        far = (a >= threshold).nonzero().squeeze(1) if highest >= threshold else a.new_empty(0, dtype=torch.long)
        fc = _FastCore(a, log_z, p_a, mean, scale, shape, dtype, far)
        if far.numel():
            fc.far_a, fc.far_low, fc.far_scale = a_f, low_f, scale_f = a[far], low[far], scale[far]
            m, fc.far_d, fc.far_v = _tail_moments(a_f)
            fc.far_log_m = torch.log(m)
            fc.far_p_a = 1.0 / m
            log_z[far] = -0.5 * a_f.square() - _LOG_SQRT_2PI + fc.far_log_m
            p_a[far] = fc.far_p_a
            mean[far] = torch.addcmul(low_f, scale_f, fc.far_d)
        torch.maximum(mean, low, out=mean)
    return fc
