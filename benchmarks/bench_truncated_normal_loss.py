"""The training loss of the Truncated Normal, -log_prob forward + backward, against torch's Normal NLL in one run.

On 1e6 elements of every regime training meets (bench_truncated_normal.make_mixed_inputs: sigma 0.1, 1 or 10, mu
20 sigma below the bound, within a sigma of it, or 20 sigma above it; no upper bound), float32 and float64, best of
``--repeats`` interleaved calls, the distribution built inside each call. Routes: tnlib as a CPU call takes it (the
compiled kernels, tnlib.distributions._log_prob_kernels), tnlib's torch route (what other devices take; on the CPU
within tnlib.distributions.torch_route), and torch's ``Normal``; each ratio is to Normal's time in the same run. Then
the paper's training case: batches of a few hundred to a few thousand (``--batches``), float32, the same regimes, sigma
learned (loc and scale carry gradients) or fixed (loc only), each timing ``--calls`` calls. Also the first log_prob
+ backward of a fresh process (numba's compiled code loaded from its cache), and numpyro / TFP / torchrl where
installed (this script installs nothing).

    python benchmarks/bench_truncated_normal_loss.py [--points 1000000] [--threads 1] [--repeats 15]
        [--batches 256 1024 4096] [--calls 50] [--clock wall|cpu] [--no-first-call]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import time

import torch

from bench_truncated_normal import make_mixed_inputs

from tnlib import TruncatedNormal
from tnlib.distributions import torch_route

FIRST_CALL = """
import time, torch
start, cpu = time.perf_counter(), time.process_time()
from tnlib import TruncatedNormal
loc = torch.tensor([-20.0, 0.0, 3.0], requires_grad=True)
d = TruncatedNormal(loc, torch.ones(3), torch.zeros(3), torch.full((3,), float('inf')))
d.log_prob(torch.ones(3)).sum().backward()
print(time.perf_counter() - start, time.process_time() - cpu)
"""
# the same first call in parts, each (wall, CPU) seconds: the imports tnlib's first log_prob makes, its kernels' load
# from numba's cache with numba's own start, the backward, then another kernel's first call (its load alone) and a
# warm log_prob + backward
FIRST_CALL_PARTS = """
import time, torch
def part(name, function):
    start, cpu = time.perf_counter(), time.process_time()
    result = function()
    print(f"{name:<46s}{time.perf_counter() - start:7.3f} s wall {time.process_time() - cpu:7.3f} s CPU")
    return result
part("from tnlib import TruncatedNormal", lambda: __import__("tnlib").TruncatedNormal)
part("import numba", lambda: __import__("numba"))
part("import scipy.special", lambda: __import__("scipy.special"))
part("import the kernels (their erfcx table)", lambda: __import__("tnlib.distributions._log_prob_kernels"))
from tnlib import TruncatedNormal
def distribution():
    loc = torch.tensor([-20.0, 0.0, 3.0], requires_grad=True)
    return TruncatedNormal(loc, torch.ones(3), torch.zeros(3), torch.full((3,), float('inf')))
lp = part("first log_prob (kernel load, numba's start)", lambda: distribution().log_prob(torch.ones(3)))
part("its backward", lambda: lp.sum().backward())
part("first mean (another kernel's load)", lambda: distribution().mean)
part("warm log_prob + backward", lambda: distribution().log_prob(torch.ones(3)).sum().backward())
"""


def _steps(x, loc0, scale0, low, high, learned_scale: bool = True, calls: int = 1) -> dict:
    """Normal's NLL, tnlib's CPU call and tnlib's torch route, each a function making ``calls`` steps."""
    def leaves():
        return loc0.clone().requires_grad_(), scale0.clone().requires_grad_(learned_scale)

    def normal():
        for _ in range(calls):
            loc, scale = leaves()
            (-torch.distributions.Normal(loc, scale, validate_args=False).log_prob(x).sum()).backward()

    def tnlib_cpu():
        for _ in range(calls):
            loc, scale = leaves()
            (-TruncatedNormal(loc, scale, low, high, validate_args=False).log_prob(x).sum()).backward()

    def tnlib_torch_route():
        for _ in range(calls):
            loc, scale = leaves()
            with torch_route():
                lp = TruncatedNormal(loc, scale, low, high, validate_args=False).log_prob(x)
            (-lp.sum()).backward()

    return {"Normal NLL": normal, "tnlib (CPU kernels)": tnlib_cpu, "tnlib torch route": tnlib_torch_route}


def _inputs(points: int, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
    """(x, loc, scale, low, high) of ``points`` mixed-regime elements in ``dtype``, no upper bound."""
    x, loc, raw_scale, low = (t.to(dtype) for t in make_mixed_inputs(points))
    scale = torch.nn.functional.softplus(raw_scale) + 1e-3
    return x, loc, scale, low, torch.full_like(low, float("inf"))


def _print_ratios(times: dict, calls: int = 1) -> None:
    normal = times["Normal NLL"]
    for name, seconds in times.items():
        per_call = seconds / calls
        figure = f"{per_call * 1e3:9.3f} ms" if per_call >= 1e-3 else f"{per_call * 1e6:9.1f} us"
        print(f"  {name:22s} {figure}   {seconds / normal:6.2f}x Normal")


def best_times(fns: dict, repeats: int, clock=time.perf_counter) -> dict[str, float]:
    """Best of ``repeats`` seconds per call of each function by ``clock``, interleaved so machine noise hits all
    alike."""
    for fn in fns.values():
        fn()
    best = {name: float("inf") for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = clock()
            fn()
            best[name] = min(best[name], clock() - start)
    return best


def first_call_seconds() -> tuple[float, float]:
    """(wall, CPU) seconds of the import of tnlib plus a first log_prob + backward in a fresh process (after one run
    has filled the cache), torch imported before; the CPU time is what a machine shared with other jobs inflates
    less."""
    env = dict(os.environ)
    for _ in range(2):  # the first run compiles and caches where no cache exists yet; the second is timed
        out = subprocess.run([sys.executable, "-c", FIRST_CALL], capture_output=True, text=True, env=env, check=True)
    wall, cpu = out.stdout.split()
    return float(wall), float(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=1_000_000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--batches", type=int, nargs="*", default=[256, 1024, 4096])
    parser.add_argument("--calls", type=int, default=50, help="calls per timing at the training batches")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="time by the wall clock, or by the process's CPU time (what a machine shared with other "
                             "jobs inflates less)")
    parser.add_argument("--no-first-call", action="store_true", help="skip the fresh process's first call")
    parser.add_argument("--first-call-parts", action="store_true",
                        help="only a fresh process's first log_prob + backward, in parts (after a run that fills "
                             "numba's cache)")
    args = parser.parse_args()
    if args.first_call_parts:
        for _ in range(2):  # the first run compiles and caches where no cache exists yet; the second is timed
            out = subprocess.run([sys.executable, "-c", FIRST_CALL_PARTS], capture_output=True, text=True,
                                 check=True)
        print("a fresh process, torch imported before, numba's cache filled by a run before:\n" + out.stdout)
        return
    torch.set_num_threads(args.threads)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    print(f"torch {torch.__version__}, {args.threads} thread(s), -log_prob forward + backward, best of "
          f"{args.repeats}, interleaved, the distribution built in each call, {args.clock} clock")
    for dtype in (torch.float32, torch.float64):
        times = best_times(_steps(*_inputs(args.points, dtype)), args.repeats, clock)
        print(f"{args.points:,} mixed-regime {str(dtype).removeprefix('torch.')} elements, sigma learned:")
        _print_ratios(times)
    for learned in (True, False):
        for batch in args.batches:
            steps = _steps(*_inputs(batch, torch.float32), learned_scale=learned, calls=args.calls)
            times = best_times(steps, args.repeats, clock)
            print(f"training batch of {batch:,} float32 elements, sigma {'learned' if learned else 'fixed'} "
                  f"(per call, {args.calls} calls a timing):")
            _print_ratios(times, args.calls)
    peers = {"numpyro": "numpyro", "TensorFlow Probability": "tensorflow_probability", "torchrl": "torchrl"}
    missing = [name for name, module in peers.items() if importlib.util.find_spec(module) is None]
    if missing:
        print("not installed (not timed): " + ", ".join(missing))
    if args.no_first_call:
        return
    wall, cpu = first_call_seconds()
    print(f"first call in a fresh process (import tnlib, log_prob + backward): {wall:.2f} s ({cpu:.2f} s of CPU)")


if __name__ == "__main__":
    main()
