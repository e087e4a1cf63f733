"""Sampling and the inverse CDF of tnlib's TruncatedNormal beside scipy.stats.truncnorm and torch's Normal.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_truncated_normal_sampling.py
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_truncated_normal_sampling.py --points 500000 --repeats 5

Per regime (standard normal truncated to the interval shown) and dtype: millions of values per second of
``TruncatedNormal.sample``, ``TruncatedNormal.icdf``, scipy's ``truncnorm.rvs`` and ``truncnorm.ppf`` (float64 only)
and ``torch.distributions.Normal.sample`` (no truncation: the speed a user gives up), measured in the same run on
one thread, best of ``--repeats``; the ratios tnlib / scipy and tnlib / Normal close each row.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch
from scipy.stats import truncnorm

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tnlib import TruncatedNormal  # noqa: E402

REGIMES = {"two-sided [-1, 2]": (-1.0, 2.0), "one-sided [0, inf)": (0.0, math.inf), "tail [3, 5]": (3.0, 5.0),
           "narrow [-1e-3, 1e-3]": (-1e-3, 1e-3), "both infinite": (-math.inf, math.inf)}


def rate(function, points: int, repeats: int) -> float:
    function()
    best = math.inf
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - started)
    return points / best / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    n = args.points
    print(f"torch {torch.__version__}, 1 thread, {n:,} values per call, best of {args.repeats}; M values/s")
    print(f"{'regime':<22s}{'dtype':<9s}{'tnlib sample':>13s}{'tnlib icdf':>12s}{'scipy rvs':>11s}{'scipy ppf':>11s}"
          f"{'Normal':>9s}{'sample/rvs':>12s}{'icdf/ppf':>10s}")
    rng = np.random.default_rng(0)
    for name, (low, high) in REGIMES.items():
        for dtype in (torch.float64, torch.float32):
            full = lambda v: torch.full((n,), v, dtype=dtype)  # noqa: E731
            tn = TruncatedNormal(full(0.0), full(1.0), full(low), full(high))
            normal = torch.distributions.Normal(full(0.0), full(1.0))
            p = torch.rand(n, dtype=dtype)
            ours_sample = rate(lambda: tn.sample(), n, args.repeats)
            ours_icdf = rate(lambda: tn.icdf(p), n, args.repeats)
            theirs_rvs = theirs_ppf = math.nan
            if dtype == torch.float64:
                frozen = truncnorm(low, high)
                u = p.numpy()
                theirs_rvs = rate(lambda: frozen.rvs(size=n, random_state=rng), n, args.repeats)
                theirs_ppf = rate(lambda: frozen.ppf(u), n, args.repeats)
            plain = rate(lambda: normal.sample(), n, args.repeats)
            print(f"{name:<22s}{str(dtype).replace('torch.', ''):<9s}{ours_sample:13.3f}{ours_icdf:12.3f}"
                  f"{theirs_rvs:11.3f}{theirs_ppf:11.3f}{plain:9.1f}{ours_sample / theirs_rvs:12.3f}"
                  f"{ours_icdf / theirs_ppf:10.3f}", flush=True)


if __name__ == "__main__":
    main()
