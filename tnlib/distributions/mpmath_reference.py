"""mpmath references for the Truncated Normal at the exact floating-point inputs.

Everything is computed at 80 significant digits from the textbook formulas (which cancel catastrophically in
double precision but not at this precision). ``reference`` gives values and the derivatives of the mean and
log_prob in their analytic forms, not finite differences, so they stay exact on intervals only a few ulps
wide. ``reference_gradients`` differentiates every statistic numerically with mpmath's ``diff`` (a central
difference with step 2^-(prec + 10), about 1e-84, evaluated at twice the working precision, so it is exact to
far below double rounding even on intervals a few ulps wide): a reference that shares no formula with the
library's closed-form gradients.

The tests and the accuracy benchmarks hold the library to these; nothing in tnlib imports this module, so
importing tnlib needs no mpmath (torch's sympy brings it).
"""
from __future__ import annotations

import math

import mpmath as mp

DIGITS = 80
PARAMETERS = ("loc", "scale", "low", "high")


def _interval_mass(alpha, beta):
    """Phi(beta) - Phi(alpha), taking the tail that keeps both terms small."""
    if alpha >= 0:
        return mp.ncdf(-alpha) - mp.ncdf(-beta)
    return mp.ncdf(beta) - mp.ncdf(alpha)


def mpf_bound(value):
    """A float bound as an mpf, keeping infinities."""
    if value == math.inf:
        return mp.inf
    if value == -math.inf:
        return mp.ninf
    return mp.mpf(value)


def reference(loc: float, scale: float, low: float, high: float, x: float | None = None) -> dict[str, float]:
    """log Z, mean, variance, entropy, log_prob(x) and their derivatives w.r.t. loc and scale, as floats."""
    with mp.workdps(DIGITS):
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


# ------------------------------------------------------------------------------------------------------------
# Every statistic as an mpmath function of (loc, scale, low, high[, value]) at the current precision
# ------------------------------------------------------------------------------------------------------------

def _standardised(mu, s, low, high):
    alpha = (low - mu) / s if low != mp.ninf else mp.ninf
    beta = (high - mu) / s if high != mp.inf else mp.inf
    return alpha, beta, _interval_mass(alpha, beta)


def _moment_terms(alpha, beta, z):
    """p_a, p_b, alpha p_a, beta p_b (0 at an infinite bound)."""
    pa = mp.mpf(0) if alpha == mp.ninf else mp.npdf(alpha) / z
    pb = mp.mpf(0) if beta == mp.inf else mp.npdf(beta) / z
    apa = mp.mpf(0) if alpha == mp.ninf else alpha * pa
    bpb = mp.mpf(0) if beta == mp.inf else beta * pb
    return pa, pb, apa, bpb


def reference_log_normalizer(mu, s, low, high):
    alpha, beta, z = _standardised(mu, s, low, high)
    return mp.log(z)


def reference_mean(mu, s, low, high):
    alpha, beta, z = _standardised(mu, s, low, high)
    pa, pb, _, _ = _moment_terms(alpha, beta, z)
    return mu + s * (pa - pb)


def reference_variance(mu, s, low, high):
    alpha, beta, z = _standardised(mu, s, low, high)
    pa, pb, apa, bpb = _moment_terms(alpha, beta, z)
    return s**2 * (1 + apa - bpb - (pa - pb) ** 2)


def reference_stddev(mu, s, low, high):
    return mp.sqrt(reference_variance(mu, s, low, high))


def reference_entropy(mu, s, low, high):
    alpha, beta, z = _standardised(mu, s, low, high)
    _, _, apa, bpb = _moment_terms(alpha, beta, z)
    return mp.log(s) + mp.log(mp.sqrt(2 * mp.pi)) + mp.log(z) + (1 + apa - bpb) / 2


def reference_mode(mu, s, low, high):
    return min(max(mu, low), high)


def reference_log_prob(mu, s, low, high, x):
    alpha, beta, z = _standardised(mu, s, low, high)
    xi = (x - mu) / s
    return -mp.log(s) - mp.log(mp.sqrt(2 * mp.pi)) - xi**2 / 2 - mp.log(z)


def reference_cdf(mu, s, low, high, x):
    alpha, beta, z = _standardised(mu, s, low, high)
    return _interval_mass(alpha, (x - mu) / s) / z


def reference_icdf(mu, s, low, high, p):
    """The x with cdf(x) = p: bisection into the bulk (the cdf increases on [low, high], robust however steep
    it is), then Newton steps, each of which doubles the number of correct digits."""
    lo = low if low != mp.ninf else min(mu, high) - 40 * s
    hi = high if high != mp.inf else max(mu, low) + 40 * s
    for _ in range(120):
        middle = (lo + hi) / 2
        if reference_cdf(mu, s, low, high, middle) < p:
            lo = middle
        else:
            hi = middle
    x = (lo + hi) / 2
    for _ in range(6):
        x = x - (reference_cdf(mu, s, low, high, x) - p) / mp.exp(reference_log_prob(mu, s, low, high, x))
    return x


STATISTICS = {
    "log_normalizer": reference_log_normalizer, "mean": reference_mean, "variance": reference_variance,
    "stddev": reference_stddev, "entropy": reference_entropy, "mode": reference_mode,
}
STATISTICS_AT_VALUE = {"log_prob": reference_log_prob, "cdf": reference_cdf}


def reference_gradients(loc: float, scale: float, low: float, high: float, x: float,
                        p: float) -> dict[str, dict[str, float]]:
    """{statistic: {argument: derivative}} for every differentiable statistic, by mpmath differentiation.

    Statistics: those in STATISTICS, log_prob and cdf at ``x``, icdf at probability ``p`` (its "value"
    derivative is d icdf / dp). The derivative w.r.t. an infinite bound is 0.
    """
    out: dict[str, dict[str, float]] = {}
    with mp.workdps(DIGITS):
        point = [mp.mpf(loc), mp.mpf(scale), mpf_bound(low), mpf_bound(high)]
        x_mp, p_mp = mp.mpf(x), mp.mpf(p)

        def derivatives(function, arguments):
            grads = {}
            for i, name in enumerate((*PARAMETERS, "value")[: len(arguments)]):
                if mp.isinf(arguments[i]):
                    grads[name] = mp.mpf(0)
                    continue

                def along(v, i=i):
                    moved = list(arguments)
                    moved[i] = v
                    return function(*moved)

                grads[name] = mp.diff(along, arguments[i])
            return grads

        for name, function in STATISTICS.items():
            out[name] = derivatives(function, point)
        for name, function in STATISTICS_AT_VALUE.items():
            out[name] = derivatives(function, [*point, x_mp])
        # icdf: implicit differentiation of cdf(icdf(p); theta) = p
        x_p = reference_icdf(*point, p_mp)
        cdf_slopes = derivatives(reference_cdf, [*point, x_p])
        density = cdf_slopes.pop("value")
        out["icdf"] = {name: -slope / density for name, slope in cdf_slopes.items()}
        out["icdf"]["value"] = 1 / density
    return {stat: {k: float(v) for k, v in grads.items()} for stat, grads in out.items()}
