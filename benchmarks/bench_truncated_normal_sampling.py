"""Sampling and the inverse CDF of tnlib's TruncatedNormal beside its torch route, scipy.stats.truncnorm and torch's
Normal.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_truncated_normal_sampling.py
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_truncated_normal_sampling.py --points 500000 --repeats 5

Per regime (standard normal truncated to the interval shown) and dtype: millions of values per second of
``TruncatedNormal.sample`` as a CPU call takes it (the compiled kernels, tnlib.distributions._sample_kernels) and by
the torch route other devices take (tnlib.distributions._sampling), ``TruncatedNormal.icdf``, scipy's
``truncnorm.rvs`` and ``truncnorm.ppf`` (float64 only) and ``torch.distributions.Normal.sample`` (no truncation: the
speed a user gives up). One thread, best of ``--repeats`` calls interleaved, so that a loaded machine's noise hits
every column alike; ``batch`` rows draw once from each of ``--points`` distinct elements, ``one`` rows ``--points``
times from one distribution (``sample((n,))``). The two routes are timed on one distribution object reused (the
torch route keeps its choice of proposals, and its state, between calls) and on one built inside each call ("new"),
as a model's predicted distribution is. The ratios close each row: kernels / torch route (reused, new), kernels'
sample / rvs and icdf / ppf.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np
import torch
from scipy.stats import truncnorm

from tnlib import TruncatedNormal

REGIMES = {"two-sided [-1, 2]": (-1.0, 2.0), "one-sided [0, inf)": (0.0, math.inf), "tail [3, 5]": (3.0, 5.0),
           "narrow [-1e-3, 1e-3]": (-1e-3, 1e-3), "both infinite": (-math.inf, math.inf)}
# the one-sided far tail too (loc 1e5 scales below the bound), which the methods' benchmark leaves out
SAMPLING_REGIMES = {**REGIMES, "far tail [1e5, inf)": (1e5, math.inf)}


def rate(function, points: int, repeats: int, clock=time.perf_counter) -> float:
    function()
    best = math.inf
    for _ in range(repeats):
        started = clock()
        function()
        best = min(best, clock() - started)
    return points / best / 1e6


def interleaved_rates(functions: dict, points: int, repeats: int, clock=time.perf_counter) -> dict[str, float]:
    """Millions of values per second of each function, best of ``repeats`` rounds that call each in turn."""
    for function in functions.values():
        function()
    best = {name: math.inf for name in functions}
    for _ in range(repeats):
        for name, function in functions.items():
            started = clock()
            function()
            best[name] = min(best[name], clock() - started)
    return {name: points / seconds / 1e6 for name, seconds in best.items()}


def row_functions(parameters: list, normal, p: torch.Tensor, sample_shape: tuple, dtype, low: float, high: float,
                  rng) -> dict:
    n = p.numel()
    tn = TruncatedNormal(*parameters)
    shape = tn._extended_shape(sample_shape)
    functions = {"kernels": lambda: tn.sample(sample_shape), "torch route": lambda: tn._sample_by_torch(shape),
                 "kernels new": lambda: TruncatedNormal(*parameters).sample(sample_shape),
                 "torch route new": lambda: TruncatedNormal(*parameters)._sample_by_torch(shape),
                 "icdf": lambda: tn.icdf(p), "Normal": lambda: normal.sample(sample_shape)}
    if dtype == torch.float64:
        frozen = truncnorm(low, high)
        u = p.numpy()
        functions["rvs"] = lambda: frozen.rvs(size=n, random_state=rng)
        functions["ppf"] = lambda: frozen.ppf(u)
    return functions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: the process's CPU time, which a machine shared with other jobs inflates less")
    args = parser.parse_args()
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    torch.set_num_threads(1)
    n = args.points
    print(f"torch {torch.__version__}, 1 thread, {n:,} values per call, best of {args.repeats} interleaved, "
          f"{args.clock} time; M values/s")
    print(f"{'regime':<22s}{'rows':<7s}{'dtype':<9s}{'kernels':>9s}{'torch':>9s}{'kern new':>9s}{'torch new':>10s}"
          f"{'icdf':>8s}{'rvs':>8s}{'ppf':>8s}{'Normal':>8s}{'kern/torch':>11s}{'(new)':>7s}{'smp/rvs':>8s}"
          f"{'icdf/ppf':>9s}")
    rng = np.random.default_rng(0)
    for name, (low, high) in SAMPLING_REGIMES.items():
        for rows in ("batch", "one"):
            for dtype in (torch.float64, torch.float32):
                size = (n,) if rows == "batch" else ()
                full = lambda v: torch.full(size, v, dtype=dtype)  # noqa: E731
                parameters = [full(0.0), full(1.0), full(low), full(high)]
                normal = torch.distributions.Normal(full(0.0), full(1.0))
                sample_shape = () if rows == "batch" else (n,)
                p = torch.rand(n, dtype=dtype)
                functions = row_functions(parameters, normal, p, sample_shape, dtype, low, high, rng)
                if rows == "one":  # (the icdf and ppf of a batch of one distribution are the rows above)
                    functions.pop("icdf")
                    functions.pop("ppf", None)
                got = {"rvs": math.nan, "ppf": math.nan, "icdf": math.nan,
                       **interleaved_rates(functions, n, args.repeats, clock)}
                print(f"{name:<22s}{rows:<7s}{str(dtype).replace('torch.', ''):<9s}{got['kernels']:9.2f}"
                      f"{got['torch route']:9.2f}{got['kernels new']:9.2f}{got['torch route new']:10.2f}"
                      f"{got['icdf']:8.2f}{got['rvs']:8.2f}{got['ppf']:8.2f}{got['Normal']:8.1f}"
                      f"{got['kernels'] / got['torch route']:11.2f}{got['kernels new'] / got['torch route new']:7.2f}"
                      f"{got['kernels'] / got['rvs']:8.2f}{got['icdf'] / got['ppf']:9.2f}", flush=True)


if __name__ == "__main__":
    main()
