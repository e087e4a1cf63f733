"""A dense sweep of the one-sided Truncated Normal N(-a, 1) on [0, inf) against mpmath, a from -5 to 1e5.

Every method, both dtypes, and both paths a batch can take: a batch whose upper bounds are all +inf (the
one-sided fast path) and the same elements beside one two-sided element (the general regimes); the statistics as
the CPU takes them (the compiled kernels where a method has them) and by the torch route other devices take. float64
must be exact to a few ulps (2e-14 relative; 1e-14 for the mean), float32 within 2 ulps of the exact value rounded to
float32. The reference is computed once per module at 50 digits at the exact floating inputs. Between the steps of
a near 0 the cdf is checked on its own, to the same tolerance on each route: the lower bound 1e-2 .. 1e-8 scales
under loc and the value just above loc.
"""
from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest
import torch

from tnlib import TruncatedNormal
from tnlib.distributions import truncated_normal

DIGITS = 50
A = np.concatenate([np.linspace(-5.0, 30.0, 141), np.geomspace(30.0, 1e5, 60)[1:]])
# observation points d scales above the bound, d = c / max(a, 1): the frame's own length scale
OFFSETS = (0.0, 0.3, 1.0, 3.0)
PROBABILITIES = (1e-6, 0.3, 0.5, 0.9)
STATISTICS = ("mean", "variance", "stddev", "entropy", "log_normalizer")
LOGARITHMIC = ("entropy", "log_normalizer", "log_prob")
DTYPES = {"float64": torch.float64, "float32": torch.float32}


def _exact_inputs(dtype: torch.dtype) -> tuple[list[float], list[list[float]]]:
    """loc = -a and the observation points, as the dtype holds them."""
    loc = [float(torch.tensor(-a, dtype=dtype)) for a in A]
    points = [[float(torch.tensor(c / max(a, 1.0), dtype=dtype)) for a in A] for c in OFFSETS]
    return loc, points


def _reference(dtype: torch.dtype) -> dict[str, np.ndarray]:
    loc, points = _exact_inputs(dtype)
    out: dict[str, list[float]] = {}
    with mp.workdps(DIGITS):
        for i, mu_float in enumerate(loc):
            mu = mp.mpf(mu_float)
            z = mp.ncdf(mu)  # the mass above 0 of N(mu, 1)
            p_a = mp.npdf(-mu) / z
            values = {"mean": mu + p_a, "variance": 1 - mu * p_a - p_a**2,
                      "entropy": mp.log(mp.sqrt(2 * mp.pi)) + mp.log(z) + (1 - mu * p_a) / 2, "log_normalizer": mp.log(z)}
            values["stddev"] = mp.sqrt(values["variance"])
            for c, column in zip(OFFSETS, points):
                xi = mp.mpf(column[i]) - mu
                values[f"log_prob {c}"] = -mp.log(mp.sqrt(2 * mp.pi)) - xi**2 / 2 - mp.log(z)
                values[f"cdf {c}"] = (z - mp.ncdf(-xi)) / z
            for name, value in values.items():
                out.setdefault(name, []).append(float(value))
    return {name: np.array(v) for name, v in out.items()}


@pytest.fixture(scope="module")
def references() -> dict[str, dict[str, np.ndarray]]:
    return {name: _reference(dtype) for name, dtype in DTYPES.items()}


def _distribution(dtype: torch.dtype, mixed: bool) -> TruncatedNormal:
    loc, _ = _exact_inputs(dtype)
    n = len(loc)
    params = [loc, [1.0] * n, [0.0] * n, [math.inf] * n]
    if mixed:  # one two-sided element sends the batch down the general regimes
        for column, value in zip(params, (0.0, 1.0, -1.0, 1.0)):
            column.append(value)
    d = TruncatedNormal(*(torch.tensor(p, dtype=dtype) for p in params))
    assert d._one_sided is not mixed  # the route under test is the one taken
    return d


def _error(name: str, got: np.ndarray, expected: np.ndarray, dtype: torch.dtype) -> np.ndarray:
    """The error in the units the tolerance is in: relative (of max(1, |value|) for logarithms) in float64,
    ulps of the exact value rounded to float32 (of max(1, |value|) for logarithms) in float32."""
    size = np.abs(expected)
    if name.split()[0] in LOGARITHMIC:
        size = np.maximum(size, 1.0)
    if dtype == torch.float32:
        size = np.spacing(size.astype(np.float32)).astype(np.float64)
    # an exact 0 (the cdf at the bound) must come out as 0
    return np.where(expected == 0.0, np.where(got == 0.0, 0.0, np.inf),
                    np.abs(got - expected) / np.where(size == 0.0, 1.0, size))


def _tolerance(name: str, dtype: torch.dtype) -> float:
    if dtype == torch.float32:
        return 2.0
    return 1e-14 if name == "mean" else 2e-14


def _computed(d: TruncatedNormal, dtype: torch.dtype) -> dict[str, np.ndarray]:
    _, points = _exact_inputs(dtype)
    n = len(A)
    got = {"mean": d.mean, "variance": d.variance, "stddev": d.stddev, "entropy": d.entropy(),
           "log_normalizer": d.log_normalizer}
    for c, column in zip(OFFSETS, points):
        x = torch.tensor(column + [0.0] * (d.batch_shape[0] - n), dtype=dtype)
        got[f"log_prob {c}"] = d.log_prob(x)
        got[f"cdf {c}"] = d.cdf(x)
    return {name: value[:n].double().numpy() for name, value in got.items()}


# "vectorized": the cdf's vectorized pass, which a batch of this size (below cdf_pass_from()) would not take
@pytest.mark.parametrize("route", ["kernels", "vectorized", "torch"])
@pytest.mark.parametrize("mixed", [False, True], ids=["one-sided batch", "mixed batch"])
@pytest.mark.parametrize("dtype_name", DTYPES)
def test_every_statistic_matches_mpmath_from_a_minus_5_to_1e5(references, dtype_name, mixed, route, monkeypatch):
    if route == "torch":
        monkeypatch.setattr(truncated_normal, "_kernels_serve", lambda tensor: False)
    dtype = DTYPES[dtype_name]
    expected = references[dtype_name]
    with truncated_normal.cpu_route("vectorized" if route == "vectorized" else "kernels"):
        got = _computed(_distribution(dtype, mixed), dtype)
    failures = []
    for name, values in got.items():
        error = _error(name, values, expected[name], dtype)
        worst = int(np.argmax(error))
        if not error[worst] <= _tolerance(name.split()[0], dtype):
            failures.append(f"{name}: error {error[worst]:.3g} at a = {A[worst]:.6g} (got {values[worst]!r}, "
                            f"mpmath {expected[name][worst]!r})")
    assert not failures, "\n".join(failures)


def _icdf_error(x: float, p: float, a: float, dtype: torch.dtype) -> float:
    """|x - x*| by Newton's first step from x (F(x) - p)/f(x), at 50 digits: relative to |x*|, or, where loc lies
    above the bound (a < 0), to max(|x*|, |loc|), the ulps an inversion about loc is formed in; in float32 in ulps
    of x* rounded to float32."""
    with mp.workdps(DIGITS):
        mu = mp.mpf(float(torch.tensor(-a, dtype=dtype)))
        z = mp.ncdf(mu)
        xi = mp.mpf(x) - mu
        step = ((z - mp.ncdf(-xi)) / z - mp.mpf(p)) / (mp.npdf(xi) / z)
        exact = float(mp.mpf(x) - step)
    size = abs(exact) if a >= 0 or dtype == torch.float32 else max(abs(exact), -a)
    if dtype == torch.float32:
        size = float(np.spacing(np.float32(size)))
    return abs(float(step)) / size


# "vectorized": the icdf's vectorized pass, which a batch of this size (below icdf_pass_from()) would not take
@pytest.mark.parametrize("route", ["kernels", "vectorized", "torch"])
@pytest.mark.parametrize("mixed", [False, True], ids=["one-sided batch", "mixed batch"])
@pytest.mark.parametrize("dtype_name", DTYPES)
def test_icdf_matches_mpmath_from_a_minus_5_to_1e5(dtype_name, mixed, route, monkeypatch):
    if route == "torch":
        monkeypatch.setattr(truncated_normal, "_kernels_serve", lambda tensor: False)
    dtype = DTYPES[dtype_name]
    d = _distribution(dtype, mixed)
    n = len(A)
    tolerance = 2.0 if dtype == torch.float32 else 2e-14
    failures = []
    for p in PROBABILITIES:
        p_exact = float(torch.tensor(p, dtype=dtype))
        with truncated_normal.cpu_route("vectorized" if route == "vectorized" else "kernels"):
            x = d.icdf(torch.full(d.batch_shape, p_exact, dtype=dtype))[:n].double().tolist()
        errors = [_icdf_error(xi, p_exact, a, dtype) for xi, a in zip(x, A)]
        worst = int(np.argmax(errors))
        if not errors[worst] <= tolerance:
            failures.append(f"icdf({p}): error {errors[worst]:.3g} at a = {A[worst]:.6g}")
    assert not failures, "\n".join(failures)


def _just_above_loc(dtype: torch.dtype) -> list[tuple[float, ...]]:
    """(loc, scale, low, high, value) as the dtype holds them: the lower bound 1e-2 .. 1e-8 scales under loc, the
    value from 1e-3 to 10 times that above it, one-sided and two-sided: a from just under 0, where the sweep's
    steps do not reach, and where 1 less the mass above the value would cancel."""
    rows = []
    for loc, scale in ((0.0, 1.0), (3.0, 2.0)):
        for below in (1e-2, 1e-3, 1e-4, 1e-5, 1e-6, 1e-7, 1e-8):
            for high in (math.inf, 0.5, 3.0):
                for above in (1e-3, 0.5, 1.0, 2.0, 10.0):
                    row = (loc, scale, loc - below * scale, loc + high * scale, loc + above * below * scale)
                    rows.append(tuple(float(torch.tensor(v, dtype=dtype)) for v in row))
    return rows


@pytest.mark.parametrize("route", ["vectorized", "per-element", "torch"])
@pytest.mark.parametrize("dtype_name", DTYPES)
def test_cdf_just_above_loc_with_the_lower_bound_just_under_it_matches_mpmath(dtype_name, route):
    from tnlib.distributions.mpmath_reference import mpf_bound, reference_cdf
    dtype = DTYPES[dtype_name]
    rows = _just_above_loc(dtype)
    with mp.workdps(DIGITS):
        expected = np.array([float(reference_cdf(*(mpf_bound(v) for v in row[:4]), mp.mpf(row[4])))
                             for row in rows])
    columns = [torch.tensor(column, dtype=dtype) for column in zip(*rows)]
    with truncated_normal.cpu_route(route):
        got = TruncatedNormal(*columns[:4]).cdf(columns[4]).double().numpy()
    error = _error("cdf", got, expected, dtype)
    worst = int(np.argmax(error))
    assert error[worst] <= _tolerance("cdf", dtype), (rows[worst], got[worst], expected[worst], error[worst])


def _mirrored(row: tuple[float, ...]) -> tuple[float, ...]:
    """The element and value mirrored about loc: an upper bound just above loc and the value just under it."""
    loc, scale, low, high, value = row
    return loc, scale, 2.0 * loc - high, 2.0 * loc - low, 2.0 * loc - value


def _reference_cdf_gradient(row: tuple[float, ...]) -> list[float]:
    """dF / d(value, loc, scale, low, high) at 50 digits, by mpmath's numerical derivative of the exact cdf."""
    from tnlib.distributions.mpmath_reference import mpf_bound, reference_cdf
    loc, scale, low, high, value = (mpf_bound(v) for v in row)
    arguments = [value, loc, scale, low, high]

    def cdf_of(k, v):
        args = list(arguments)
        args[k] = v
        return reference_cdf(args[1], args[2], args[3], args[4], args[0])

    with mp.workdps(DIGITS):
        return [0.0 if mp.isinf(arguments[k]) else float(mp.diff(lambda v: cdf_of(k, v), arguments[k]))
                for k in range(5)]


def _beside_loc(narrow: bool) -> list[tuple[float, ...]]:
    """_just_above_loc's float64 rows and their mirrors, those whose interval is half a scale wide (narrow: the
    frame's formulas) or the others (the straddling element's)."""
    rows = [row for row in _just_above_loc(torch.float64) if (row[3] - row[0] == 0.5 * row[1]) is narrow]
    return rows + [_mirrored(row) for row in rows]


@pytest.fixture(scope="module")
def cdf_gradient_references() -> dict[bool, np.ndarray]:
    return {narrow: np.array([_reference_cdf_gradient(row) for row in _beside_loc(narrow)])
            for narrow in (False, True)}


def _cdf_gradient_errors(rows: list[tuple[float, ...]], expected: np.ndarray, route: str) -> np.ndarray:
    """The relative error of each of dF / d(value, loc, scale, low, high) (columns) at each row on ``route``."""
    columns = [torch.tensor(column, dtype=torch.float64, requires_grad=True) for column in zip(*rows)]
    with truncated_normal.cpu_route(route):
        TruncatedNormal(*columns[:4]).cdf(columns[4]).sum().backward()
    got = np.stack([columns[k].grad.numpy() for k in (4, 0, 1, 2, 3)], axis=1)
    return np.abs(got - expected) / np.where(expected == 0.0, 1.0, np.abs(expected))


_GRADIENT_NAMES = ("value", "loc", "scale", "low", "high")


@pytest.mark.parametrize("route", ["kernels", "per-element", "torch"])
def test_cdf_gradients_near_loc_with_a_bound_just_beside_it_match_mpmath(cdf_gradient_references, route):
    # where the mass between the bound and the value is small beside the mass beyond loc: the derivatives weigh the
    # cdf and its complement by the densities at the bounds and at the value, which are all nearly phi(0), so a cdf
    # formed as 1 less the mass beyond the value, or a sum of those densities formed term by term, cancels; every
    # derivative of a wide interval, and all but the scale's of a narrow one
    rows = {narrow: _beside_loc(narrow) for narrow in (False, True)}
    errors = {narrow: _cdf_gradient_errors(rows[narrow], cdf_gradient_references[narrow], route)
              for narrow in (False, True)}
    errors[True][:, _GRADIENT_NAMES.index("scale")] = 0.0  # test_cdf_scale_gradient_of_a_narrow_interval_...
    for narrow, error in errors.items():
        worst = np.unravel_index(int(np.argmax(error)), error.shape)
        assert error[worst] <= 2e-14, (_GRADIENT_NAMES[worst[1]], rows[narrow][worst[0]], error[worst])


@pytest.mark.parametrize("route", ["kernels", "per-element", "torch"])
def test_cdf_scale_gradient_of_a_narrow_interval_near_its_upper_bound_matches_mpmath(cdf_gradient_references,
                                                                                      route):
    # next to the upper bound the density's term d f(d) and the width's w f(w) F are equal to first order: the
    # derivative is formed from the two parts' second moments instead
    error = _cdf_gradient_errors(_beside_loc(True), cdf_gradient_references[True], route)
    assert error[:, _GRADIENT_NAMES.index("scale")].max() <= 2e-14


def _reference_icdf_scale_gradient(row: tuple[float, ...]) -> tuple[float, float]:
    """(p, dx/dscale at p): p the exact cdf at the row's value rounded to float64, the derivative of the exact icdf
    at that p by the implicit function theorem, -dF/dscale over dF/dx at x = icdf(p), each by mpmath.diff."""
    from tnlib.distributions.mpmath_reference import mpf_bound, reference_cdf, reference_icdf
    loc, scale, low, high, value = (mpf_bound(v) for v in row)
    with mp.workdps(DIGITS):
        p = float(reference_cdf(loc, scale, low, high, value))
        x = reference_icdf(loc, scale, low, high, mp.mpf(p))
        d_scale = mp.diff(lambda v: reference_cdf(loc, v, low, high, x), scale)
        d_value = mp.diff(lambda v: reference_cdf(loc, scale, low, high, v), x)
        return p, float(-d_scale / d_value)


@pytest.fixture(scope="module")
def icdf_scale_gradient_references() -> np.ndarray:
    return np.array([_reference_icdf_scale_gradient(row) for row in _beside_loc(True)])


@pytest.mark.parametrize("route", ["vectorized", "per-element", "torch"])
def test_icdf_scale_gradient_of_a_narrow_interval_near_its_bounds_matches_mpmath(icdf_scale_gradient_references,
                                                                                 route):
    # the icdf's d/dscale is the cdf's over the density: the same two terms, a dx/dloc + d and w dx/dhigh, are
    # equal to first order next to the upper bound
    rows = _beside_loc(True)
    p, expected = icdf_scale_gradient_references[:, 0], icdf_scale_gradient_references[:, 1]
    columns = [torch.tensor(column, dtype=torch.float64, requires_grad=True) for column in list(zip(*rows))[:4]]
    with truncated_normal.cpu_route(route):
        TruncatedNormal(*columns).icdf(torch.tensor(p)).sum().backward()
    error = np.abs(columns[1].grad.numpy() - expected) / np.abs(expected)
    worst = int(np.argmax(error))
    assert error[worst] <= 2e-14, (rows[worst], p[worst], error[worst])


# wide intervals in scales from loc, straddling it or not, one-sided too, and the fractions of each at which the
# value lies (from the lower bound, or for a one-sided interval its distance from it in scales)
_WIDE_INTERVALS = ((0.0, 3.0), (2.0, 5.0), (10.0, 12.0), (30.0, 30.5), (-1.0, 3.0), (-3.0, 2.0), (-0.6, 0.55),
                   (2.0, math.inf), (-1.0, math.inf))
_WIDE_FRACTIONS = (1e-8, 1e-3, 0.5, 1.0 - 1e-3, 1.0 - 1e-8)


def _wide_rows() -> list[tuple[float, ...]]:
    """(loc, scale, low, high, value) on the wide intervals, the value next to either bound and between, each row
    beside its mirror about loc."""
    rows = []
    for loc, scale in ((0.0, 1.0), (0.5, 2.0)):
        for a, b in _WIDE_INTERVALS:
            low, high = loc + a * scale, loc + b * scale
            for f in _WIDE_FRACTIONS:
                value = low + (f * scale if math.isinf(b) else f * (high - low))
                rows.append((loc, scale, low, high, value))
    return rows + [_mirrored(row) for row in rows]


@pytest.fixture(scope="module")
def wide_references() -> dict[str, np.ndarray]:
    """mpmath's dF/dscale at each of _wide_rows, and (p, dx/dloc, dx/dscale) of the icdf at p, the exact cdf
    there rounded to float64."""
    from tnlib.distributions.mpmath_reference import mpf_bound, reference_cdf, reference_icdf
    cdf, icdf = [], []
    for row in _wide_rows():
        loc, scale, low, high, value = (mpf_bound(v) for v in row)
        with mp.workdps(DIGITS):
            cdf.append(float(mp.diff(lambda v: reference_cdf(loc, v, low, high, value), scale)))
            p = float(reference_cdf(loc, scale, low, high, value))
            x = reference_icdf(loc, scale, low, high, mp.mpf(p))
            density = mp.diff(lambda v: reference_cdf(loc, scale, low, high, v), x)
            icdf.append((p, float(-mp.diff(lambda v: reference_cdf(v, scale, low, high, x), loc) / density),
                         float(-mp.diff(lambda v: reference_cdf(loc, v, low, high, x), scale) / density)))
    return {"cdf": np.array(cdf), "icdf": np.array(icdf)}


def _relative(got: np.ndarray, expected: np.ndarray) -> np.ndarray:
    return np.abs(got - expected) / np.where(expected == 0.0, 1.0, np.abs(expected))


@pytest.mark.parametrize("route", ["vectorized", "per-element", "torch"])
def test_cdf_scale_gradient_of_a_wide_interval_near_its_bounds_matches_mpmath(wide_references, route):
    # next to the upper bound the density's term d f(d) and the width's w f(w) F (t f_t and b p_b F straddling) are
    # equal to first order, and next to a straddling element's lower bound t f_t and a p_a (1 - F): the derivative
    # is formed from the moments of the short part beside the bound instead
    rows = _wide_rows()
    columns = [torch.tensor(column, dtype=torch.float64, requires_grad=True) for column in zip(*rows)]
    with truncated_normal.cpu_route(route):
        TruncatedNormal(*columns[:4]).cdf(columns[4]).sum().backward()
    error = _relative(columns[1].grad.numpy(), wide_references["cdf"])
    worst = int(np.argmax(error))
    assert error[worst] <= 2e-14, (rows[worst], error[worst])


@pytest.mark.parametrize("route", ["vectorized", "per-element", "torch"])
def test_icdf_loc_and_scale_gradients_of_a_wide_interval_near_its_bounds_match_mpmath(wide_references, route):
    # the icdf's at p itself: next to a bound the short part's mass at the rounded x, and the distance d or t - b
    # from it, carry x's rounding, relatively as large as that part is short; dx/dloc is checked on the intervals
    # whose lower bound is not under loc (the frame's F_a over the density; a straddling element's 1 - dx/dlow -
    # dx/dhigh still cancels beside its bounds)
    rows = _wide_rows()
    p, loc_expected, scale_expected = wide_references["icdf"].T
    columns = [torch.tensor(column, dtype=torch.float64, requires_grad=True) for column in list(zip(*rows))[:4]]
    with truncated_normal.cpu_route(route):
        TruncatedNormal(*columns).icdf(torch.tensor(p)).sum().backward()
    frame = np.array([max(row[2] - row[0], row[0] - row[3]) >= 0.0 for row in rows])
    errors = {"scale": _relative(columns[1].grad.numpy(), scale_expected),
              "loc": np.where(frame, _relative(columns[0].grad.numpy(), loc_expected), 0.0)}
    # beyond 2e-14, what the density at x rounded to 2 ulps leaves: its logarithm moves by |t| / scale per unit x
    loc, scale, _, _, x = (np.array(column) for column in zip(*rows))
    tolerance = 2e-14 + 2.0 * np.spacing(np.abs(x)) * np.abs(x - loc) / scale ** 2
    for name, error in errors.items():
        worst = int(np.argmax(error / tolerance))
        assert error[worst] <= tolerance[worst], (name, rows[worst], p[worst], error[worst], tolerance[worst])
