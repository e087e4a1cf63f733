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

``--cdf-passes`` times instead the cdf's two CPU routes in one run, forward and forward + backward (gradients to the
value and all four parameters), on a batch whose elements each take one of the regimes above at random: the
vectorized pass (tnlib.distributions._cdf_vector, what ``cdf`` takes) and the per-element kernel it replaced
(still what it leaves the far tails to), each as a ratio to torch's Normal cdf on the same values; medians of
``--repeats`` interleaved rounds, one thread. On the 2-core machine with a training campaign and the tests on it
(load average 6-8, which made Normal's own times vary 10x between rows: read the two routes against each other,
the figure in brackets), ``--cdf-passes --repeats 5``, time over Normal's, per-element kernel / vectorized pass
(how many times faster the pass is):

    1e5 float64: forward 113x / 32x (3.5x), forward + backward 55x / 7.2x (7.7x)
    1e5 float32: forward 12x / 4.6x (2.5x), forward + backward 416x / 57x (7.3x)
    1e6 float64: forward 22x / 6.8x (3.2x), forward + backward 42x / 5.1x (8.2x)
    1e6 float32: forward 51x / 16x (3.1x), forward + backward 105x / 14x (7.6x)

The pass costs about 0.5 us an element forward and 1.1 us forward + backward on that machine, against Normal's
15-130 ns: still far from numpyro's and TFP's jitted cdf (reports/speed.md section 9).

``--icdf-passes`` does the same for the icdf (what ``rsample`` takes) at uniform probabilities: its vectorized pass
(tnlib.distributions._icdf_vector) and the per-element kernel, against Normal's icdf. On the same machine (load
average 6-7, this project's tests running beside it), ``--icdf-passes --repeats 5``, time over Normal's, per-element
kernel / vectorized pass (how many times faster the pass is):

    1e5 float64: forward 49x / 13x (3.9x), forward + backward 47x / 8.2x (5.7x)
    1e5 float32: forward 214x / 63x (3.4x), forward + backward 444x / 58x (7.6x)
    1e6 float64: forward 25x / 7.3x (3.4x), forward + backward 41x / 6.6x (6.2x)
    1e6 float32: forward 59x / 15x (4.0x), forward + backward 120x / 17x (7.1x)

About 0.6-0.7 us an element forward and 1.7-1.9 us forward + backward, where the per-element kernel takes 2.2-2.5 us
and 11-14 us (its backward integrates the frame's moments by Gauss-Legendre panels); these batches are all closed
forms, none of the per-element kernel's Newton cases. A batch of one regime alone (1e5 float64, the two routes'
kernels called directly, medians of 7 interleaved rounds) shows where the mix's gain comes from: the forward pass is
5.9x faster in the tail [3, 5] and 1.7x on the narrow interval, but 0.82x, 0.87x and 0.56x the per-element kernel's
on [-1, 2], [0, inf) and both bounds infinite (1.4-1.5 us an element against 0.8-1.3 us), while the gradients' pass
takes 0.9-1.3 us an element in every regime (2.0x, 10x, 14x, 10x and 1.2x faster).

``--icdf-passes`` calls the pass at every size; ``icdf`` itself takes it from icdf_pass_from() = 32,768 elements on
(tnlib.distributions.cpu_route) and the per-element kernel below. Warm, the pass is the faster route at every size
(``--icdf-passes --sizes 256 2048 32768 --repeats 7``, load average 7-8, per-element kernel over pass): forward
1.1x and 1.8x at 256 elements (float64, float32), 2.6x and 3.5x at 2,048, 4.3x and 4.1x at 32,768; forward +
backward 2.6x and 2.8x, 9.3x and 19x, 5.5x and 6.7x. What the threshold weighs is a process's first call, which
compiles whichever route it takes (numba caches both on disk, so a later process loads them). ``--first-calls``
times it in fresh processes, first with numba's cache empty and then with what that process cached; in one run
(load average 7-8), seconds forward / backward, beside the tree without the pass (the per-element kernel at every
size, in brackets):

    1,000 float64, empty cache: 23.0 / 13.7 (24.7 / 14.3); float32 after it: 2.7 / 4.4 (3.7 / 5.6)
    32,768 float64, empty cache: 31.7 / 16.2 (22.3 / 20.2); float32 after it: 5.7 / 11.1 (2.5 / 12.9)
    either size, cached: 2.5-2.6 / 0.05-0.08 float64 (2.8-3.1 / 0.05-0.08), 0.03-0.05 / 0.05-0.07 float32

A small batch's first call compiles what the tree without the pass does; one at the threshold compiles the pass
beside the per-element kernel it leaves elements to, 11 s more forward + backward than a small batch's on that
machine (5 s more than the tree without the pass at that size), which the pass's saving there (0.21-0.23 s a forward
+ backward call) repays within about 50 calls. A cached process's first call is the imports and numba's own start
(its float32 call after the float64 one, 0.03-0.08 s, is what loading the kernels costs).
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from scipy.stats import truncnorm

from bench_truncated_normal_sampling import REGIMES, rate

from tnlib import TruncatedNormal
from tnlib.distributions import cdf_pass_from, cpu_route, icdf_pass_from

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


def routed(route: str, inverse: bool):
    """cdf, or with ``inverse`` icdf, on ``route`` (tnlib.distributions.cpu_route's): "per-element" for the
    per-element kernel alone, "vectorized" for the pass at every batch size, forward and backward."""
    def call(value, *theta):
        with cpu_route(route):
            d = TruncatedNormal(*theta, validate_args=False)
            return d.icdf(value) if inverse else d.cdf(value)
    return call


def passes(method: str, sizes: list[int], repeats: int) -> None:
    """The vectorized pass of ``method`` (cdf or icdf) and the per-element kernel against Normal's, forward and
    forward + backward, on mixed-regime batches: medians of ``repeats`` interleaved rounds."""
    inverse = method == "icdf"
    bounds = torch.tensor(list(REGIMES.values()), dtype=torch.float64)
    print(f"torch {torch.__version__}, 1 thread, {method} of mixed-regime batches ({', '.join(REGIMES)}), median of "
          f"{repeats} interleaved rounds; time over Normal's {method} on the same values")
    for n in sizes:
        for dtype in (torch.float64, torch.float32):
            pick = torch.randint(len(bounds), (n,), generator=torch.Generator().manual_seed(n))
            parameters = (torch.zeros(n, dtype=dtype), torch.ones(n, dtype=dtype), bounds[pick, 0].to(dtype),
                          bounds[pick, 1].to(dtype))
            p = torch.rand(n, generator=torch.Generator().manual_seed(1), dtype=dtype)
            x = p if inverse else TruncatedNormal(*parameters).icdf(p)

            def forward_backward(route, leaves):
                leaves = [t.clone().requires_grad_() for t in leaves]
                route(*leaves).sum().backward()

            def normal(value, loc, scale, low, high):
                plain = torch.distributions.Normal(loc, scale)
                return plain.icdf(value) if inverse else plain.cdf(value)

            # (the icdf's pass at every size: icdf itself takes it from icdf_pass_from() elements on)
            routes = {"Normal": normal, "vectorized pass": routed("vectorized", inverse),
                      "per-element kernel": routed("per-element", inverse)}
            times = {f"{name} {kind}": [] for kind in ("forward", "forward+backward") for name in routes}
            leaves = (x, *parameters)
            for route in routes.values():  # (compiles, or loads from numba's cache, each kernel first)
                forward_backward(route, leaves)
            for _ in range(repeats):
                for name, route in routes.items():
                    for kind, call in (("forward", lambda: route(*leaves)),
                                       ("forward+backward", lambda: forward_backward(route, leaves))):
                        started = time.perf_counter()
                        call()
                        times[f"{name} {kind}"].append(time.perf_counter() - started)
            for kind in ("forward", "forward+backward"):
                base = statistics.median(times[f"Normal {kind}"])
                cells = [f"{name} {statistics.median(times[f'{name} {kind}']) * 1e3:9.2f} ms "
                         f"({statistics.median(times[f'{name} {kind}']) / base:6.1f}x)" for name in routes]
                print(f"{n:>9,d} {str(dtype).replace('torch.', ''):<8s} {kind:<17s} " + "  ".join(cells), flush=True)


# a fresh process's first icdf, mean, variance or entropy (argv[2]) of n elements (argv[1]) on [-1, 2], forward then
# backward, float64 then float32
_FIRST_CALL = """
import sys, time, torch
from tnlib import TruncatedNormal
n, method = int(sys.argv[1]), sys.argv[2]
for dtype in (torch.float64, torch.float32):
    loc = torch.zeros(n, dtype=dtype, requires_grad=True)
    tn = TruncatedNormal(loc, torch.ones(n, dtype=dtype), torch.full((n,), -1.0, dtype=dtype),
                         torch.full((n,), 2.0, dtype=dtype))
    started = time.perf_counter()
    if method == "icdf":
        x = tn.icdf(torch.rand(n, dtype=dtype))
    elif method == "cdf":
        x = tn.cdf(3.0 * torch.rand(n, dtype=dtype) - 1.0)
    else:
        x = tn.entropy() if method == "entropy" else getattr(tn, method)
    forward = time.perf_counter() - started
    x.sum().backward()
    print(forward, time.perf_counter() - started - forward, flush=True)
"""


def first_calls(sizes: list[int], method: str = "icdf") -> None:
    """Seconds of a fresh process's first ``method`` call (icdf, cdf, mean, variance or entropy; forward, then backward)
    of each size: with numba's cache empty (everything compiled), then again in a second process that loads what
    the first cached."""
    print(f"torch {torch.__version__}, 1 thread, a fresh process's first {method} of n elements on [-1, 2], seconds"
          + (f"; the pass from {icdf_pass_from():,} elements" if method == "icdf" else "")
          + (f"; the pass from {cdf_pass_from():,} elements" if method == "cdf" else ""))
    root = Path(__file__).resolve().parents[1]
    for n in sizes:
        with tempfile.TemporaryDirectory() as cache:
            env = {**os.environ, "NUMBA_CACHE_DIR": cache, "OMP_NUM_THREADS": "1",
                   "PYTHONPATH": os.pathsep.join(filter(None, (str(root), os.environ.get("PYTHONPATH"))))}
            for process in ("empty cache", "cached"):
                out = subprocess.run([sys.executable, "-c", _FIRST_CALL, str(n), method], env=env, check=True,
                                     capture_output=True, text=True).stdout.split("\n")
                for dtype, line in zip(("float64", "float32"), out):
                    forward, backward = (float(v) for v in line.split())
                    print(f"{n:>9,d} {dtype:<8s} {process:<12s} forward {forward:7.2f} s  backward {backward:7.2f} s",
                          flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--points", type=int, default=200_000)
    parser.add_argument("--scipy-points", type=int, default=20_000,
                        help="elements for scipy's mean, var and entropy over arrays of bounds (default 20,000)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    parser.add_argument("--cdf-passes", action="store_true",
                        help="time the cdf's vectorized pass against the per-element kernel instead")
    parser.add_argument("--icdf-passes", action="store_true",
                        help="time the icdf's vectorized pass against the per-element kernel instead")
    parser.add_argument("--first-calls", action="store_true",
                        help="time a fresh process's first icdf (or --first-call-method), numba's cache empty and "
                             "then filled, instead")
    parser.add_argument("--first-call-method", choices=("icdf", "cdf", "mean", "variance", "entropy"), default="icdf")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="time the methods' table by the process's CPU time (the figures on a loaded machine) "
                             "or the wall clock (default)")
    parser.add_argument("--sizes", type=int, nargs="+", default=None,
                        help="batch sizes of --cdf-passes and --icdf-passes (default 100,000 and 1,000,000) and "
                             "--first-calls (default 1,000 and 100,000)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.first_calls:
        first_calls(args.sizes or [1_000, 100_000], args.first_call_method)
        return
    args.sizes = args.sizes or [100_000, 1_000_000]
    if args.cdf_passes or args.icdf_passes:
        passes("icdf" if args.icdf_passes else "cdf", args.sizes, args.repeats)
        return
    n = args.points
    rng = np.random.default_rng(0)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    print(f"torch {torch.__version__}, 1 thread, {n:,} values per call, best of {args.repeats}"
          + (", CPU time" if args.clock == "cpu" else "") + "; M values/s")
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
                ours = rate(tnlib_call(method, parameters, x, p), n, args.repeats, clock)
                theirs = math.nan
                if dtype == torch.float64:
                    call, points = scipy_call(method, low, high, x.numpy(), p.numpy(), args.scipy_points, rng)
                    theirs = rate(call, points, args.repeats, clock)
                plain = rate(normal_call(method, torch.distributions.Normal(*parameters[:2]), x, p), n,
                             args.repeats, clock)
                print(f"{method:<12s}{name:<22s}{str(dtype).replace('torch.', ''):<9s}{ours:9.2f}{theirs:9.2f}"
                      f"{plain:9.1f}{ours / theirs:9.2f}{ours / plain:9.3f}", flush=True)


if __name__ == "__main__":
    main()
