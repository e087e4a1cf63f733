"""NLM's exists/forall (masked max and min over an object axis, with their tie-splitting gradient): the numba
kernels of ``tnlib.learning.models`` against the plain torch route (``masked_fill`` + ``amax``/``amin``, autograd's
backward) that runs where the kernels do not (CUDA, half precision), timed in the same run on the same tensors.

Prints, per shape, forward and forward+backward milliseconds of each route, the kernels' speed-up over torch, and
whether both give the same values and gradients bit for bit.

    .venv/bin/python benchmarks/bench_extrema.py            # NLM shapes at batch 64, one thread
    .venv/bin/python benchmarks/bench_extrema.py --repeats 9 --threads 2
"""
from __future__ import annotations

import argparse
import statistics
import time

import torch

from tnlib.learning import nlm_autograd

# (objects, arity of the reduced predicate, channels): blocksworld/ferry-sized instances at NLM's breadth 3
SHAPES = ((10, 1, 8), (10, 2, 8), (10, 3, 8), (16, 3, 8))


def _timed(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    print(f"batch {args.batch_size}, {args.threads} thread(s), median of {args.repeats}; ms per call")
    print("objects arity channels | torch fwd  kernels fwd  speed-up | torch fwd+bwd  kernels fwd+bwd  speed-up | same")
    for n, arity, channels in SHAPES:
        # sigmoid-like values with exact ties (as symmetric objects give), two padded objects per state
        levels = torch.tensor([0.0, 0.25, 0.5, 0.75, 1.0])
        x = levels[torch.randint(5, (args.batch_size,) + (n,) * arity + (channels,), generator=g)]
        x = x + torch.rand(x.shape, generator=g) * (torch.rand(x.shape, generator=g) < 0.5)
        object_mask = torch.arange(n)[None, :] < torch.full((args.batch_size, 1), n - 2)
        grad = torch.randn(x.shape[:-2] + (2 * channels,), generator=g)
        results, rows = {}, {}
        for name, kernels in (("torch", False), ("kernels", True)):
            original = nlm_autograd.use_kernels
            nlm_autograd.use_kernels = lambda t, kernels=kernels: kernels
            try:
                def forward():
                    with torch.no_grad():
                        return nlm_autograd.exists_forall(x, object_mask, True)

                def both():
                    leaf = x.clone().requires_grad_(True)
                    nlm_autograd.exists_forall(leaf, object_mask, True).backward(grad)
                    return leaf.grad

                both()  # warm-up (numba compiles on first use)
                results[name] = (forward(), both())
                rows[name] = (_timed(forward, args.repeats), _timed(both, args.repeats))
            finally:
                nlm_autograd.use_kernels = original
        same = all(torch.equal(a, b) for a, b in zip(results["torch"], results["kernels"]))
        (tf, tb), (kf, kb) = rows["torch"], rows["kernels"]
        print(f"{n:7d} {arity:5d} {channels:8d} | {tf:9.2f} {kf:12.2f} {tf / kf:8.1f}x | {tb:13.2f} {kb:16.2f} "
              f"{tb / kb:8.1f}x | {same}")


if __name__ == "__main__":
    main()
