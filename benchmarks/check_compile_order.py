"""The Truncated Normal's values do not depend on which kernel a process compiled first.

numba compiles a helper that leaves a flag unset under the flags of its first caller, and caches that code on disk;
tests/repository/test_compile_flags.py checks statically that every kernel states its flags. This checks the values:
two fresh processes, each with its own empty numba cache (NUMBA_CACHE_DIR), call every method -- log_prob with its
five derivatives, cdf, icdf, mean, variance, entropy, sample -- in both dtypes on one mixed batch, in opposite
orders (float64 first, methods forward; float32 first, methods backward), then a third process calls them again
from the first one's now full cache. Prints, per method and dtype, how many elements differ between the runs and by
how much (relative); exits 1 if any does. Each empty-cache process compiles every kernel: minutes of one core.

    OMP_NUM_THREADS=1 PYTHONPATH=. python benchmarks/check_compile_order.py [--points 30000] [--save FOLDER]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

METHODS = ("log_prob", "cdf", "icdf", "mean", "variance", "entropy", "sample")


def mixed_batch(points: int, dtype):
    """(x, loc, scale, low, high, u): intervals across loc, one-sided far, narrow, without a lower bound, left."""
    import torch
    rng = np.random.default_rng(5)
    loc, scale = rng.uniform(-1, 1, points), rng.uniform(0.5, 2, points)
    kind = rng.integers(0, 5, points)
    start = np.choose(kind, [rng.uniform(-3, 1, points), rng.uniform(2, 30, points), rng.uniform(-2, 2, points),
                             np.zeros(points), rng.uniform(-40, -2, points)])
    width = np.choose(kind, [rng.uniform(0.3, 4, points), np.full(points, np.inf), 10.0 ** rng.uniform(-6, -1, points),
                             np.zeros(points), rng.uniform(0.1, 3, points)])
    low = np.where(kind == 3, -np.inf, loc + scale * start)
    high = np.where(kind == 3, loc + scale * rng.uniform(-3, 3, points),
                    np.where(np.isinf(width), np.inf, low + scale * np.where(np.isinf(width), 0, width)))
    finite_low = np.where(np.isinf(low), high - 3 * scale, low)
    finite_high = np.where(np.isinf(high), finite_low + 3 * scale, high)
    x = finite_low + (finite_high - finite_low) * rng.uniform(size=points)
    u = rng.uniform(1e-6, 1 - 1e-6, points)
    return [torch.tensor(v, dtype=dtype) for v in (x, loc, scale, low, high, u)]


def method_values(method: str, points: int, dtype) -> dict[str, np.ndarray]:
    import torch
    from tnlib import TruncatedNormal
    x, loc, scale, low, high, u = mixed_batch(points, dtype)
    if method == "log_prob":
        wrt = [v.clone().requires_grad_(True) for v in (x, loc, scale, low, high)]
        value = TruncatedNormal(*wrt[1:], validate_args=False).log_prob(wrt[0])
        value.sum().backward()
        names = ("x", "loc", "scale", "low", "high")
        return {"log_prob": value.detach().numpy(), **{f"d/d{n}": v.grad.numpy() for n, v in zip(names, wrt)}}
    d = TruncatedNormal(loc, scale, low, high, validate_args=False)
    torch.manual_seed(11)
    value = {"cdf": lambda: d.cdf(x), "icdf": lambda: d.icdf(u), "mean": lambda: d.mean,
             "variance": lambda: d.variance, "entropy": d.entropy, "sample": lambda: d.sample((2,))}[method]()
    return {method: value.numpy()}


def run_order(order: list[str], points: int, out: Path) -> None:
    """In this process: every (method, dtype) of ``order`` in turn, all values saved to ``out``."""
    import torch
    torch.set_num_threads(1)
    saved = {}
    for item in order:
        method, bits = item.split(":")
        for name, value in method_values(method, points, torch.float64 if bits == "64" else torch.float32).items():
            saved[f"{name} float{bits}"] = value
    np.savez(out, **saved)


def differences(first: Path, second: Path) -> list[str]:
    a, b = np.load(first), np.load(second)
    rows = []
    for name in sorted(a.files):
        x, y = a[name], b[name]
        differ = ~((x == y) | (np.isnan(x) & np.isnan(y)))
        if differ.any():
            relative = np.abs(x[differ] - y[differ]) / np.maximum(np.abs(x[differ]), np.finfo(x.dtype).tiny)
            rows.append(f"{name:22s} {int(differ.sum()):6d} of {x.size} differ, up to {relative.max():.2e} relative")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--points", type=int, default=30_000)
    parser.add_argument("--save", type=Path, help="a folder to keep each run's values in (NumPy .npz)")
    parser.add_argument("--order", help=argparse.SUPPRESS)  # a child process: the order it compiles in
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.order:
        run_order(args.order.split(","), args.points, Path(args.out))
        return 0
    forward = [f"{m}:{bits}" for bits in ("64", "32") for m in METHODS]
    backward = [f"{m}:{bits}" for bits in ("32", "64") for m in reversed(METHODS)]
    with tempfile.TemporaryDirectory() as scratch:
        runs = {"forward, empty cache": (forward, "a"), "backward, empty cache": (backward, "b"),
                "forward, the first run's cache": (forward, "a")}
        outputs = []
        for label, (order, cache) in runs.items():
            out = Path(scratch) / f"{len(outputs)}.npz"
            env = dict(os.environ, NUMBA_CACHE_DIR=str(Path(scratch) / cache))
            subprocess.run([sys.executable, __file__, "--points", str(args.points), "--order", ",".join(order),
                            "--out", str(out)], env=env, check=True)
            outputs.append((label, out))
            if args.save:
                args.save.mkdir(parents=True, exist_ok=True)
                (args.save / f"{len(outputs)}.npz").write_bytes(out.read_bytes())
        failed = False
        for label, out in outputs[1:]:
            rows = differences(outputs[0][1], out)
            print(f"{label} against {outputs[0][0]}: " + ("bit for bit" if not rows else "differs"))
            for row in rows:
                print("  " + row)
            failed |= bool(rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
