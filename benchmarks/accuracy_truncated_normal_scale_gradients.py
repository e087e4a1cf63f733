"""The cdf's and the icdf's derivative w.r.t. the scale against mpmath, per CPU route, float64: narrow intervals with
the value anywhere in them (next to either bound included), and wide ones with the value next to the upper bound.

    OMP_NUM_THREADS=1 python benchmarks/accuracy_truncated_normal_scale_gradients.py

Rows: N(0, 1) on [a, a + w] and its mirror [-a - w, -a], w from 1e-6 to 1 and a from -0.75 to 30 where the
interval is narrow (w max(1, |a + w/2|) <= 1, the frame's quadrature regime), the value at the fractions 1e-8,
1e-3, 0.3, 0.5, 0.7, 1 - 1e-3 and 1 - 1e-8 of the interval; and, "wide", [0, 3], [2, 5], [10, 12], [-1, 3] and
[-3, 2] with the value at the same fractions. The reference is mpmath's derivative (``mpmath.diff``, 50 digits) of
the exact cdf at the exact floating inputs; the icdf's at p, the exact cdf at the row's value rounded to float64,
by the implicit function theorem at the exact icdf of that p (-dF/dscale over dF/dx). Printed: the worst relative
error per route and kind of row (absolute where the exact derivative is 0: the value in the middle of an
interval symmetric about loc), with the row (low, high, value or p) where it is reached.
"""
from __future__ import annotations

import mpmath as mp
import numpy as np
import torch

from tnlib import TruncatedNormal
from tnlib.distributions import truncated_normal
from tnlib.distributions.mpmath_reference import reference_cdf, reference_icdf

DIGITS = 50
FRACTIONS = (1e-8, 1e-3, 0.3, 0.5, 0.7, 1 - 1e-3, 1 - 1e-8)
WIDE = ((0.0, 3.0), (2.0, 5.0), (10.0, 12.0), (-1.0, 3.0), (-3.0, 2.0))


def rows() -> dict[str, list[tuple[float, float, float]]]:
    """{kind: [(low, high, value)]} of N(0, 1), each interval beside its mirror."""
    intervals = {"narrow": [(a, a + w) for w in (1e-6, 1e-3, 0.1, 0.5, 1.0)
                            for a in (-0.75, -0.5, -0.25, -1e-8, 0.0, 0.5, 3.0, 30.0)
                            if w * max(1.0, abs(a + 0.5 * w)) <= 1.0],
                 "wide": list(WIDE)}
    out = {}
    for kind, pairs in intervals.items():
        out[kind] = [row for low, high in pairs for f in FRACTIONS
                     for row in ((low, high, low + f * (high - low)), (-high, -low, -(low + f * (high - low))))]
    return out


def _exact(low: float, high: float, value: float) -> tuple[float, float, float]:
    """(dF/dscale at the value, p, dx/dscale at p)."""
    low, high, value = mp.mpf(low), mp.mpf(high), mp.mpf(value)
    zero, one = mp.mpf(0), mp.mpf(1)
    with mp.workdps(DIGITS):
        cdf_slope = mp.diff(lambda s: reference_cdf(zero, s, low, high, value), one)
        p = float(reference_cdf(zero, one, low, high, value))
        x = reference_icdf(zero, one, low, high, mp.mpf(p))
        icdf_slope = (-mp.diff(lambda s: reference_cdf(zero, s, low, high, x), one)
                      / mp.diff(lambda v: reference_cdf(zero, one, low, high, v), x))
        return float(cdf_slope), p, float(icdf_slope)


def _scale_gradient(method: str, route: str, kind_rows, arguments) -> np.ndarray:
    low, high = (torch.tensor(column, dtype=torch.float64) for column in list(zip(*kind_rows))[:2])
    scale = torch.ones_like(low, requires_grad=True)
    d = TruncatedNormal(torch.zeros_like(low), scale, low, high)
    with truncated_normal.cpu_route(route):
        (d.cdf if method == "cdf" else d.icdf)(torch.tensor(arguments, dtype=torch.float64)).sum().backward()
    return scale.grad.numpy()


def main() -> None:
    torch.set_num_threads(1)
    for kind, kind_rows in rows().items():
        exact = np.array([_exact(*row) for row in kind_rows])
        for method, arguments, expected in (("cdf", [row[2] for row in kind_rows], exact[:, 0]),
                                            ("icdf", exact[:, 1], exact[:, 2])):
            # (the kernels' route takes the per-element kernel alone on a batch this small: "vectorized" is the pass)
            for route in ("vectorized", "per-element", "torch"):
                got = _scale_gradient(method, route, kind_rows, arguments)
                error = np.abs(got - expected) / np.where(np.abs(expected) < 1e-30, 1.0, np.abs(expected))
                worst = int(np.argmax(error))
                where = kind_rows[worst][:2] + (float(arguments[worst]),)
                print(f"{kind:6s} {method:4s} {route:11s} worst relative error {error[worst]:.1e} at "
                      f"(low, high, {'value' if method == 'cdf' else 'p'}) = {where}")


if __name__ == "__main__":
    main()
