"""The float32 icdf of an element whose bounds straddle loc by erf's rational fit, held only where a proven bound on
its error cannot move its float32 rounding: the float32 pass's first loop over a chunk of straddling elements.

The mass below the value is Phi(a) + p (Phi(b) - Phi(a)) = 1/2 - ((1 - p) E_a - p E_b)/2 with E_a = erf(-a/sqrt 2)
and E_b = erf(b/sqrt 2), each by the float32 cdf's rational erf (tnlib.distributions._cdf_float32.erf_rational:
y P(y^2)/Q(y^2), within ERF_RATIONAL_BOUND relatively on [0, 3.5], 1 from 5.14; its fit and bound by
benchmarks/fit_float32_cdf_erf.py), the two quotients from one division; Phi^-1 of the mass (of 1 less it past 1/2)
by Wichura's approximation unrefined (tnlib.distributions._icdf_vector.ndtri_wichura_parts), its quotient and the
mass's relative error from one more division. No exp: the tails of tnlib.distributions._icdf_vector's
straddling_tails (an exp and erfcx's 23 terms each) cost twice these.

The bound, each part checked by benchmarks/check_float32_icdf_bounds.py (which prints the constants below):

* each E is relatively within ERF_RATIONAL_BOUND and the roundings of y (four, moving E by at most as much, as
  y E'(y) <= E(y)) and of its quotient (four): ERF_ERROR;
* the mass's error is then at most ERF_ERROR ((1 - p) E_a + p E_b)/2 and its own roundings, relative to the terms
  it sums (MASS_ROUNDING) -- absolute, so large relatively only where the mass is small beside the tail it comes
  from;
* Phi^-1 moves by that over the density at the root, phi(t) >= min(m, 1 - m) / sqrt(pi/2) (Mills' ratio is at
  most sqrt(pi/2) on [0, inf)), with the mass's error held below a thousandth of min(m, 1 - m); Wichura's own
  error and the quotient's roundings add NDTRI_ERROR |t|;
* x = loc + s t adds two roundings.

An element is held where every number within that bound of |x| rounds to float32 as |x| does
(tnlib.distributions._icdf_vector.rounding_certain_from_mass, as straddling_icdf_single's test): its float32
value is then the exact value correctly rounded. The rest -- a value near a rounding boundary (28 of the peer
benchmark's 1e5 moderate elements), a bound between 3.5 and 5.14 scales times sqrt 2 from loc (where the erf is
not held), a mass below Wichura's floor -- are the caller's, which takes them by the erfc route
(straddling_icdf_single, held by the same test) and then the float64 loops.
"""
from __future__ import annotations

import math

import numba

from tnlib.distributions._cdf_float32 import ERF_RATIONAL_BOUND, erf_rational
from tnlib.distributions._icdf_vector import (
    WICHURA_ERROR,
    WICHURA_NEAR_FLOOR,
    ndtri_wichura_parts,
    rounding_certain_from_mass,
)
from tnlib.kernel_cache import cache_by_folder_sources

cache_by_folder_sources(__file__)  # before the first njit(cache=True): tnlib.kernel_cache says why

_FUSED = {"contract"}  # fastmath's flag for fused multiply-adds alone (no reassociation, no finite-math shortcut)
_SQRT_HALF = math.sqrt(0.5)
_SQRT_2 = math.sqrt(2.0)
_UNIT_ROUNDOFF = 2.0 ** -53
# E's relative error: the fit's bound (its evaluation's rounding included) and eight roundings (y's four, the
# quotient's four), doubled for the slack the bound's arithmetic needs
ERF_ERROR = ERF_RATIONAL_BOUND + 16.0 * _UNIT_ROUNDOFF
# the mass's own roundings (two products, a difference, a subtraction from 1/2), relative to the terms it sums
MASS_ROUNDING = 4.0 * _UNIT_ROUNDOFF
# Phi^-1's relative error: Wichura's (its evaluation's rounding included) and the quotient's four roundings
NDTRI_ERROR = WICHURA_ERROR + 4.0 * _UNIT_ROUNDOFF


@numba.njit(cache=True, forceinline=True, error_model="numpy", fastmath=_FUSED)
def straddling_icdf_rational(prob, loc, s, low, high):
    """(icdf, held) of an element with low < loc < high, its arguments float32 values, by erf's rational fit and
    Wichura's Phi^-1 (the module's docstring): held where its float32 rounding is certain."""
    k = _SQRT_HALF / s
    ya = (loc - low) * k
    yb = (high - loc) * k
    numerator_a, denominator_a, held_a = erf_rational(ya)
    numerator_b, denominator_b, held_b = erf_rational(yb)
    inverse = 1.0 / (denominator_a * denominator_b)
    erf_a = numerator_a * denominator_b * inverse
    erf_b = numerator_b * denominator_a * inverse
    q = 1.0 - prob
    lower_mass = 0.5 - 0.5 * (q * erf_a - prob * erf_b)
    below = lower_mass <= 0.5
    mass = lower_mass if below else 1.0 - lower_mass  # (exact: Sterbenz)
    numerator, denominator = ndtri_wichura_parts(mass)
    over = 1.0 / (denominator * mass)
    root = numerator * mass * over
    t = root if below else -root
    a = -_SQRT_2 * ya  # (a product: a quotient by sqrt(1/2) would be a division, as it is not exact)
    b = _SQRT_2 * yb
    t = min(max(t, a), b)
    x = min(max(loc + s * t, low), high)
    mass_error = (ERF_ERROR + MASS_ROUNDING) * 0.5 * (q * erf_a + prob * erf_b) + MASS_ROUNDING * mass
    # the mass at or above Wichura's floor and a thousand times its error, 0 < p < 1, s > 0 (an infinite s gives
    # ya = 0) and low < loc < high, as one comparison of their least: each comparison more costs a loop of 1e5
    # about 0.15 ns an element. (& rather than and: a short circuit is a branch, which would stop the loop
    # vectorizing. A NaN argument fails erf_rational's held or makes x NaN, which float32_rounding_certain fails.)
    held = ((min(mass - WICHURA_NEAR_FLOOR, mass - 1000.0 * mass_error, prob * q, s, ya, yb) > 0.0) & held_a
            & held_b & rounding_certain_from_mass(x, t, loc, s, mass_error * denominator * over, NDTRI_ERROR))
    return x, held
