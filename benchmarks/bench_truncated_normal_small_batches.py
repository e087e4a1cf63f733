"""The Truncated Normal's mean, variance, entropy, cdf and icdf on the small batches a learned search reads, in one run.

Learned GBFS takes the TN head's mean of each expansion's successors (typically 10-100 states) and validation of
batches of 1,024; both calls are dominated by per-call overhead, not arithmetic. Per batch size: microseconds per
call, float32, one thread, the distribution built inside each call and no gradients (``torch.inference_mode``, as
the search runs), best of ``--repeats`` interleaved rounds of ``--calls`` calls, for tnlib as a CPU call takes it
(the compiled kernels, tnlib.distributions._moment_kernels and _cdf_elements), tnlib's torch route (what other
devices take; on the CPU within tnlib.distributions.torch_route) and, as the floor, torch's ``Normal(loc,
scale).mean`` (no truncation); each ratio is to the torch route's time. Inputs are
bench_truncated_normal.make_mixed_inputs' regimes, no upper bound (the paper's configuration); the cdf is taken at
the optimal cost h*, the icdf of probabilities spread over (0, 1).

    OMP_NUM_THREADS=1 python benchmarks/bench_truncated_normal_small_batches.py [--sizes 32 1024] [--repeats 7]
"""
from __future__ import annotations

import argparse
import math
import time

import torch

from bench_truncated_normal import make_mixed_inputs

from tnlib import TruncatedNormal
from tnlib.distributions import torch_route


def _calls(value, probability, loc, scale, low, high) -> dict:
    def kernels(name):
        def call():
            d = TruncatedNormal(loc, scale, low, high, validate_args=False)
            if name == "cdf":
                return d.cdf(value)
            if name == "icdf":
                return d.icdf(probability)
            return d.entropy() if name == "entropy" else getattr(d, name)
        return call

    def by_torch(name):
        def call():
            with torch_route():
                return kernels(name)()
        return call

    calls = {"Normal mean (floor)": lambda: torch.distributions.Normal(loc, scale, validate_args=False).mean}
    for name in ("mean", "variance", "entropy", "cdf", "icdf"):
        calls[f"{name}: kernels"] = kernels(name)
        calls[f"{name}: torch route"] = by_torch(name)
    return calls


def best_times(calls: dict, repeats: int, count: int) -> dict[str, float]:
    """Best over ``repeats`` interleaved rounds of the mean seconds of ``count`` calls."""
    for call in calls.values():
        call()
    best = {name: math.inf for name in calls}
    for _ in range(repeats):
        for name, call in calls.items():
            start = time.perf_counter()
            for _ in range(count):
                call()
            best[name] = min(best[name], (time.perf_counter() - start) / count)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[32, 1024])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--calls", type=int, default=200, help="calls per timed round")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), float32, no upper bound, no gradients, "
          f"best of {args.repeats} rounds of {args.calls} calls")
    with torch.inference_mode():
        for size in args.sizes:
            h_star, loc, raw_scale, low = make_mixed_inputs(size)
            scale = torch.nn.functional.softplus(raw_scale) + 1e-3
            high = torch.full_like(low, math.inf)
            probability = (torch.arange(size, dtype=loc.dtype) + 0.5) / size
            times = best_times(_calls(h_star, probability, loc, scale, low, high), args.repeats, args.calls)
            print(f"batch of {size}:")
            for name, seconds in times.items():
                method = name.split(":")[0]
                route = times.get(f"{method}: torch route")
                ratio = f"{seconds / route:6.3f}x torch route" if route else ""
                print(f"  {name:24s} {seconds * 1e6:9.1f} us   {ratio}")


if __name__ == "__main__":
    main()
