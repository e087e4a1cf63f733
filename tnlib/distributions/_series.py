"""Asymptotic series in 1/a^2 for the far tail, where a = (low - loc)/scale is large and closed forms cancel.

Mills' ratio m(a), g(a) = 1 - a m(a) and the variance of the standardised variable on [a, inf) each have an
asymptotic series in 1/a^2; truncated where the next term falls below the dtype's rounding, each is exact past
its threshold, exactly where the closed form loses about a^2 ulps. ``_g`` serves the general regimes
(tnlib.distributions._regimes); ``_far_tail_series`` the variance and the one-sided fast path.
"""
from __future__ import annotations

from functools import lru_cache

import torch


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
