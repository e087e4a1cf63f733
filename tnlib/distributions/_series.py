"""The tail of the standard normal past a = (low - loc)/scale >= 0, where closed forms cancel.

Mills' ratio m(a) = Phi(-a)/phi(a) has Laplace's continued fraction m(a) = 1/(a + R_1), R_k = k/(a + R_{k+1}). Its
tails R_1 and R_2 are the quantities the statistics need without cancellation: the distance of the mean from the
bound D = E[t] - a = 1/m - a is R_1 itself, g(a) = 1 - a m(a) = R_1/(a + R_1), and the variance of t on [a, inf)
is 1 - D (a + D) = R_1 (R_2 - R_1) (since a R_1 = 1 - R_1 R_2). The closed forms through erfcx lose about a^2 ulps
(g) and a^4 ulps (the variance); the fraction, summed backwards from a fixed depth, loses none, and converges the
faster the larger a is. ``_g`` serves the general regimes (tnlib.distributions._regimes); ``_tail_moments`` the
variance and the one-sided fast path.
"""
from __future__ import annotations

import torch

# The fraction is summed from a = 3 up (below, g's closed form loses at most 9 ulps and the fraction would need
# hundreds of terms); at depth 10 + 150/a it is exact to double rounding (measured against mpmath: a = 3 needs 59
# terms, a = 5 30, a = 10 15, a = 20 10; the tests sweep a from 3 to 1e5).
_FRACTION_START = 3.0


def _g_threshold(dtype: torch.dtype) -> float:
    """The a from which g (hence D) is exact to rounding; below it g carries about a^2 ulps."""
    return _FRACTION_START


def _fraction_depth(smallest: float) -> int:
    return int(10 + 150.0 / max(smallest, _FRACTION_START))


def _tail_fraction(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """R_1 and R_2 of Laplace's continued fraction at every x >= 3 (x = +inf gives 0 and 0), in float64 or the
    dtype's own rounding: a depth set by the batch's smallest x, summed backwards."""
    depth = _fraction_depth(float(x.min())) if x.numel() else 1
    r = torch.zeros_like(x)
    for k in range(depth, 1, -1):
        r = k / (x + r)
    return 1.0 / (x + r), r


def _g(x: torch.Tensor, mills_x: torch.Tensor) -> torch.Tensor:
    """g(x) = 1 - x m(x) >= 0 for x >= 0 (and g(inf) = 0), given m(x)."""
    far = x >= _FRACTION_START
    direct = 1.0 - x * torch.where(far, torch.zeros_like(mills_x), mills_x)
    if not bool(far.any()):
        return direct
    x_far = x[far]
    r1, _ = _tail_fraction(x_far)
    return direct.index_put((far,), r1 / (x_far + r1))


def _tail_moments(a: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """m(a), D = E[t] - a and Var[t] of the standard normal on [a, inf), for a >= 0 (+inf allowed): exact to a few
    ulps from a = 3 up (the fraction); below, m through erfcx, D with g's a^2 ulps and the variance with a^4 (at
    most 81 ulps)."""
    far = a >= _FRACTION_START
    if bool(far.all()):
        r1, r2 = _tail_fraction(a)
        return 1.0 / (a + r1), r1, r1 * (r2 - r1)
    m = 1.2533141373155003 * torch.special.erfcx(a * 0.7071067811865476)  # sqrt(pi/2) erfcx(a/sqrt 2)
    d = (1.0 - a * m) / m
    v = 1.0 - d * (a + d)
    if bool(far.any()):
        r1, r2 = _tail_fraction(a[far])
        m = m.index_put((far,), 1.0 / (a[far] + r1))
        d = d.index_put((far,), r1)
        v = v.index_put((far,), r1 * (r2 - r1))
    return m, d, v
