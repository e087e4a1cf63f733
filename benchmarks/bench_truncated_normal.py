"""Speed of the Truncated Normal's training loss against torch's Normal (and stable-trunc-gaussian if present).

Times forward + backward of the training loss, ``-log_prob(x)`` (the NLL, as tnlib.learning.heads computes it), and
of ``-log_prob(x) + mean`` (the loss with the truncated mean's gradients too), float32, on ``--threads`` threads (1,
as tnlib's processes run), at 1e6 elements and at batch 256, on inputs shaped like heuristic learning (mu around h*,
lower bound l = LM-cut-like below h*), or with ``--inputs mixed`` on every regime training meets (mu far below, near
and far above the bound; sigma 0.1, 1, 10). Prints medians and the ratio to Normal's NLL (``-log_prob(x)``, forward
+ backward) measured in the same run (runs interleaved), plus stable-trunc-gaussian's NLL (forward + backward) and
scipy's (forward only, no gradients).

    python benchmarks/bench_truncated_normal.py [--repeats 10] [--threads 1] [--json FILE]

(``--repeats`` calls at 1e6, 20 times as many at 256; a function slower than SECONDS_PER_FUNCTION / repeats a
call runs fewer, at least MIN_REPEATS.)
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from tnlib import TruncatedNormal


def make_inputs(n: int, seed: int = 0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    h_star = torch.randint(1, 40, (n,), generator=g).to(dtype)
    low = (h_star - torch.randint(0, 6, (n,), generator=g).to(dtype)).clamp_min(0) - 0.1  # open bound l - 0.1
    loc = h_star + 3 * torch.randn(n, generator=g, dtype=dtype)
    raw_scale = torch.randn(n, generator=g, dtype=dtype)
    return h_star, loc, raw_scale, low


def make_mixed_inputs(n: int, seed: int = 0, dtype=torch.float32):
    """Inputs covering the regimes training meets: sigma 0.1, 1 or 10, and mu far below the bound (20 sigma, the
    far tail), near it (within a sigma either side) or far above it (20 sigma), h* in the support."""
    g = torch.Generator().manual_seed(seed)
    h_star = torch.randint(1, 40, (n,), generator=g).to(dtype)
    low = (h_star - torch.randint(0, 6, (n,), generator=g).to(dtype)).clamp_min(0) - 0.1
    scale = torch.tensor([0.1, 1.0, 10.0], dtype=dtype)[torch.randint(0, 3, (n,), generator=g)]
    offset = torch.tensor([-20.0, -1.0, 0.0, 1.0, 20.0], dtype=dtype)[torch.randint(0, 5, (n,), generator=g)]
    loc = low + offset * scale
    raw_scale = torch.log(torch.expm1(scale - 1e-3))  # softplus(raw) + 1e-3 = scale
    return h_star, loc, raw_scale, low


# Seconds of timed calls one function gets per row, and the fewest calls it gets: at 1e6 elements tnlib's loss with
# the mean and stable-trunc-gaussian take 0.2-0.4 s a call where Normal takes 12 ms, and at `repeats` calls each
# they would set the benchmark's length without making their medians much surer (the main job runs it twice, so
# three calls of the slow ones, and ten of Normal's, 200 at 256 elements, keep it to seconds).
SECONDS_PER_FUNCTION = 2.0
MIN_REPEATS = 3


def time_steps(fns: dict, repeats: int) -> dict[str, float]:
    """Median seconds per call of each function over ``repeats`` calls, interleaved so machine noise hits all of
    them alike; a function slower than SECONDS_PER_FUNCTION / repeats a call runs fewer times, at least
    MIN_REPEATS (or ``repeats`` if that is fewer)."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    counts = {}
    for name, fn in fns.items():
        fn()  # warm-up (compilation, caches)
        samples[name].append(_seconds(fn))
        counts[name] = min(repeats, max(MIN_REPEATS, int(SECONDS_PER_FUNCTION / samples[name][0])))
    for i in range(1, max(counts.values())):
        for name, fn in fns.items():
            if i < counts[name]:
                samples[name].append(_seconds(fn))
    return {name: statistics.median(v) for name, v in samples.items()}


def _seconds(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench(n: int, repeats: int, inputs=make_inputs) -> dict:
    x, loc0, raw0, low = inputs(n)
    high = torch.full_like(low, float("inf"))

    def normal_step():
        loc = loc0.clone().requires_grad_()
        raw = raw0.clone().requires_grad_()
        scale = torch.nn.functional.softplus(raw) + 1e-3
        loss = -torch.distributions.Normal(loc, scale, validate_args=False).log_prob(x).sum()
        loss.backward()

    def tnlib_step():
        loc = loc0.clone().requires_grad_()
        raw = raw0.clone().requires_grad_()
        scale = torch.nn.functional.softplus(raw) + 1e-3
        loss = -TruncatedNormal(loc, scale, low, high, validate_args=False).log_prob(x).sum()
        loss.backward()

    def tnlib_with_mean_step():
        loc = loc0.clone().requires_grad_()
        raw = raw0.clone().requires_grad_()
        scale = torch.nn.functional.softplus(raw) + 1e-3
        d = TruncatedNormal(loc, scale, low, high, validate_args=False)
        loss = (-d.log_prob(x) + d.mean).sum()
        loss.backward()

    steps = {"normal_s": normal_step, "tnlib_s": tnlib_step, "tnlib_with_mean_s": tnlib_with_mean_step}
    try:
        from stable_trunc_gaussian import TruncatedGaussian

        big = torch.full_like(low, 1e5)  # that package stands in for +inf with a large number

        def stg_step():
            loc = loc0.clone().requires_grad_()
            raw = raw0.clone().requires_grad_()
            scale = torch.nn.functional.softplus(raw) + 1e-3
            loss = -TruncatedGaussian(loc, scale, low, big).log_prob(x).sum()
            loss.backward()

        steps["stable_trunc_gaussian_s"] = stg_step
    except ImportError:
        pass
    result = {"n": n, **time_steps(steps, repeats)}
    # scipy has no gradients: its forward alone (float64 NumPy), for scale, timed on at most 2,000 elements and
    # scaled linearly to n (its per-element cost is flat from there).
    import numpy as np
    import scipy.stats

    m = min(n, 2_000)
    xs, locs, lows = x[:m].double().numpy(), loc0[:m].double().numpy(), low[:m].double().numpy()
    scales = (torch.nn.functional.softplus(raw0[:m]) + 1e-3).double().numpy()

    def scipy_forward():
        return -scipy.stats.truncnorm.logpdf(xs, (lows - locs) / scales, np.inf, loc=locs, scale=scales)

    with np.errstate(all="ignore"):
        result["scipy_forward_s"] = time_steps({"s": scipy_forward}, 3)["s"] * n / m
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", help="also write the figures to this JSON file")
    parser.add_argument("--inputs", choices=("heuristic", "mixed"), default="heuristic",
                        help="heuristic: mu around h*, the bound just below it (default); mixed: every regime "
                             "training meets (make_mixed_inputs)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    rows = []
    for n in (1_000_000, 256):
        r = bench(n, args.repeats if n > 1000 else args.repeats * 20,
                  make_mixed_inputs if args.inputs == "mixed" else make_inputs)
        rows.append(r)
        line = (f"n={n:>9,}  Normal NLL {r['normal_s'] * 1e3:8.3f} ms   tnlib NLL {r['tnlib_s'] * 1e3:8.3f} ms"
                f" ({r['tnlib_s'] / r['normal_s']:5.2f}x)   tnlib NLL + mean {r['tnlib_with_mean_s'] * 1e3:8.3f} ms"
                f" ({r['tnlib_with_mean_s'] / r['normal_s']:5.2f}x)")
        if "stable_trunc_gaussian_s" in r:
            line += (f"   stable-trunc-gaussian {r['stable_trunc_gaussian_s'] * 1e3:8.3f} ms"
                     f" ({r['stable_trunc_gaussian_s'] / r['normal_s']:5.1f}x)")
        line += f"   scipy forward only {r['scipy_forward_s'] * 1e3:8.1f} ms ({r['scipy_forward_s'] / r['normal_s']:5.1f}x)"
        print(line, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": args.threads, "dtype": "float32", "inputs": args.inputs, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
