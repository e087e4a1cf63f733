"""Every public method of tnlib's TruncatedNormal beside scipy.stats.truncnorm and torch's Normal, in one run.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_truncated_normal_methods.py
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_truncated_normal_methods.py --points 100000 --repeats 5

Per method, regime (a batch of standard normals truncated to the interval shown, each element its own distribution)
and dtype: millions of values per second on one thread, best of ``--repeats``, for

* tnlib: ``log_prob``, ``cdf``, ``icdf``, ``rsample`` (inversion: the icdf of uniforms) and ``sample`` on one
  distribution object (its per-element state is built once and cached, as a user calling several methods gets
  it), and ``mean``, ``variance``, ``entropy`` on a fresh object each call (that state is what they cost);
  ``sample-one``: one distribution (scalar parameters) drawn ``--points`` times, ``sample((n,))``, as a histogram
  in class draws it;
* scipy: ``logpdf``, ``cdf``, ``ppf``, ``rvs`` (beside both ``rsample`` and ``sample``) of one frozen
  ``truncnorm``, and ``mean``, ``var``, ``entropy`` of ``truncnorm(a, b)`` with the bounds as arrays (per-element
  distributions, as tnlib's), float64 only;
* torch's ``Normal`` (no truncation: the speed a user gives up): ``log_prob``, ``cdf``, ``icdf``, ``rsample``,
  ``sample`` (``sample-one``: a scalar Normal's ``sample((n,))``), ``mean``, ``variance``, ``entropy``.

The last two columns are tnlib / scipy and tnlib / Normal. scipy's ``mean``, ``var`` and ``entropy`` run a
Python-level loop over arrays of bounds in some versions; they are timed on at most ``--scipy-points`` elements.
"""
from __future__ import annotations

import argparse
import math

import numpy as np
import torch
from scipy.stats import truncnorm

from bench_truncated_normal_sampling import REGIMES, rate

from tnlib import TruncatedNormal

METHODS = ("log_prob", "cdf", "icdf", "rsample", "sample", "sample-one", "mean", "variance", "entropy")


def tnlib_call(method: str, parameters, x, p):
    tn = TruncatedNormal(*parameters)
    one = TruncatedNormal(*(t[0] for t in parameters))
    calls = {"log_prob": lambda: tn.log_prob(x), "cdf": lambda: tn.cdf(x), "icdf": lambda: tn.icdf(p),
             "rsample": lambda: tn.rsample(), "sample": lambda: tn.sample(),
             # one distribution (scalar parameters) drawn n times, as a histogram in class draws it
             "sample-one": lambda: one.sample((len(x),)),
             "mean": lambda: TruncatedNormal(*parameters).mean,
             "variance": lambda: TruncatedNormal(*parameters).variance,
             "entropy": lambda: TruncatedNormal(*parameters).entropy()}
    return calls[method]


def scipy_call(method: str, low: float, high: float, x: np.ndarray, p: np.ndarray, small: int, rng):
    frozen = truncnorm(low, high)
    a, b = np.full(small, low), np.full(small, high)
    calls = {"log_prob": (lambda: frozen.logpdf(x), len(x)), "cdf": (lambda: frozen.cdf(x), len(x)),
             "icdf": (lambda: frozen.ppf(p), len(p)),
             "rsample": (lambda: frozen.rvs(size=len(x), random_state=rng), len(x)),
             "sample": (lambda: frozen.rvs(size=len(x), random_state=rng), len(x)),
             "sample-one": (lambda: frozen.rvs(size=len(x), random_state=rng), len(x)),
             "mean": (lambda: truncnorm.mean(a, b), small), "variance": (lambda: truncnorm.var(a, b), small),
             "entropy": (lambda: truncnorm.entropy(a, b), small)}
    return calls[method]


def normal_call(method: str, normal, x, p):
    calls = {"log_prob": lambda: normal.log_prob(x), "cdf": lambda: normal.cdf(x), "icdf": lambda: normal.icdf(p),
             "rsample": lambda: normal.rsample(), "sample": lambda: normal.sample(), "mean": lambda: normal.mean + 0.0,
             "sample-one": lambda: torch.distributions.Normal(normal.loc[0], normal.scale[0]).sample((len(x),)),
             "variance": lambda: normal.variance, "entropy": lambda: normal.entropy()}
    return calls[method]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=200_000)
    parser.add_argument("--scipy-points", type=int, default=20_000,
                        help="elements for scipy's mean, var and entropy over arrays of bounds (default 20,000)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    args = parser.parse_args()
    torch.set_num_threads(1)
    n = args.points
    rng = np.random.default_rng(0)
    print(f"torch {torch.__version__}, 1 thread, {n:,} values per call, best of {args.repeats}; M values/s")
    print(f"{'method':<12s}{'regime':<22s}{'dtype':<9s}{'tnlib':>9s}{'scipy':>9s}{'Normal':>9s}{'/scipy':>9s}"
          f"{'/Normal':>9s}")
    inputs = {}  # (regime, dtype) -> its parameters, uniforms and points: made once, timed by every method
    for name, (low, high) in REGIMES.items():
        for dtype in (torch.float64, torch.float32):
            parameters = tuple(torch.full((n,), v, dtype=dtype) for v in (0.0, 1.0, low, high))
            p = torch.rand(n, generator=torch.Generator().manual_seed(0), dtype=dtype)
            x = TruncatedNormal(*parameters).icdf(p)  # points inside the support, spread like the distribution
            inputs[name, dtype] = parameters, p, x
    for method in args.methods:
        for name, (low, high) in REGIMES.items():
            for dtype in (torch.float64, torch.float32):
                parameters, p, x = inputs[name, dtype]
                ours = rate(tnlib_call(method, parameters, x, p), n, args.repeats)
                theirs = math.nan
                if dtype == torch.float64:
                    call, points = scipy_call(method, low, high, x.numpy(), p.numpy(), args.scipy_points, rng)
                    theirs = rate(call, points, args.repeats)
                plain = rate(normal_call(method, torch.distributions.Normal(*parameters[:2]), x, p), n,
                             args.repeats)
                print(f"{method:<12s}{name:<22s}{str(dtype).replace('torch.', ''):<9s}{ours:9.2f}{theirs:9.2f}"
                      f"{plain:9.1f}{ours / theirs:9.2f}{ours / plain:9.3f}", flush=True)


if __name__ == "__main__":
    main()
