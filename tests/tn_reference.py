"""mpmath references for the Truncated Normal at the exact floating-point inputs.

Everything is computed at 80 significant digits from the textbook formulas (which cancel catastrophically in
double precision but not at this precision); derivatives use their analytic forms, not finite differences,
so they stay exact on intervals only a few ulps wide.
"""
from __future__ import annotations

import math

import mpmath as mp


def _interval_mass(alpha, beta):
    """Phi(beta) - Phi(alpha), taking the tail that keeps both terms small."""
    if alpha >= 0:
        return mp.ncdf(-alpha) - mp.ncdf(-beta)
    return mp.ncdf(beta) - mp.ncdf(alpha)


def reference(loc: float, scale: float, low: float, high: float, x: float | None = None) -> dict[str, float]:
    """log Z, mean, variance, entropy, log_prob(x) and their derivatives w.r.t. loc and scale, as floats."""
    with mp.workdps(80):
        mu, s = mp.mpf(loc), mp.mpf(scale)
        alpha = mp.ninf if low == -math.inf else (mp.mpf(low) - mu) / s
        beta = mp.inf if high == math.inf else (mp.mpf(high) - mu) / s
        z = _interval_mass(alpha, beta)
        pa = mp.mpf(0) if alpha == mp.ninf else mp.npdf(alpha) / z
        pb = mp.mpf(0) if beta == mp.inf else mp.npdf(beta) / z
        apa = mp.mpf(0) if alpha == mp.ninf else alpha * pa
        bpb = mp.mpf(0) if beta == mp.inf else beta * pb
        mean_t = pa - pb  # E[t], t = (X - loc)/scale
        var_t = 1 + apa - bpb - mean_t**2
        # d E[t] / d alpha and d E[t] / d beta
        dm_da = mp.mpf(0) if alpha == mp.ninf else pa * (mean_t - alpha)
        dm_db = mp.mpf(0) if beta == mp.inf else pb * (beta - mean_t)
        a_dm_da = mp.mpf(0) if alpha == mp.ninf else alpha * dm_da
        b_dm_db = mp.mpf(0) if beta == mp.inf else beta * dm_db
        # Z within 1e-80 of 1 rounds to 1 at this precision: take log Z from the excluded tails there
        log_z = mp.log1p(-(mp.ncdf(alpha) + mp.ncdf(-beta))) if alpha < 0 < beta else mp.log(z)
        out = {
            "log_z": log_z,
            "mean": mu + s * mean_t,
            "variance": s**2 * var_t,
            "entropy": mp.log(s) + mp.log(mp.sqrt(2 * mp.pi)) + mp.log(z) + (1 + apa - bpb) / 2,
            "dmean_dloc": var_t,
            "dmean_dscale": mean_t - a_dm_da - b_dm_db,
            "std": s * mp.sqrt(var_t),
        }
        if x is not None:
            xi = (mp.mpf(x) - mu) / s
            out["log_prob"] = -mp.log(s) - mp.log(mp.sqrt(2 * mp.pi)) - xi**2 / 2 - mp.log(z)
            out["dlogp_dloc"] = (xi - mean_t) / s
            out["dlogp_dscale"] = (-1 + xi**2 - (apa - bpb)) / s
        return {k: float(v) for k, v in out.items()}
