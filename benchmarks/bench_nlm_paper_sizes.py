"""Learned GBFS with the NLM at the paper's test sizes: evaluations per second and peak memory, beside the floor.

    .venv/bin/python benchmarks/bench_nlm_paper_sizes.py                    # the four domains' largest test sizes
    .venv/bin/python benchmarks/bench_nlm_paper_sizes.py --domains gripper --sizes 60 100 --evaluations 1000

For each instance (the paper's test grid's largest size per domain by default: blocksworld 22 blocks, ferry 30
locations and 30 cars, gripper 100 balls, visitall 7x7) two routes plan with the same network -- the authors' NLM
(breadth 3, depth 5) with random but fixed weights, head TN with learned sigma, residual h_FF and the LM-cut lower
bound, so each evaluation also runs h_FF and LM-cut:

* ``fused``     the NLM's inference forward (``NLM.forward`` without gradients): a chunk of states at a time, the
                last arity-3 layer projected and reduced in one kernel without storing its N^3 output;
* ``by-layer``  ``NLM.forward_by_layers``, the layer-by-layer pass that stores every arity tensor for the whole
                batch of successors (the route learned GBFS took before the fused forward).

Each route runs in a process of its own (its peak resident memory is that process's), eager GBFS under the paper's
protocol from the initial state until it solves the instance or reaches its evaluation limit. Speed does not depend
on the weights; only which states the search visits does, and both routes compute the same values (within
float32 rounding), so they visit the same states.

The floor, per state: the multiply-adds the network's layers cannot avoid (each sigmoid layer's Linear on every
position of every arity it computes, r! permutations times its inputs, and the exists / forall comparisons), at this
machine's float32 matrix-product rate measured in the same run (``np.dot`` of 2048 x 2048 matrices), and the bytes of the largest tensor one state needs (the arity-3 layer that feeds another).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from bench_learned_search import random_checkpoint

from tnlib.learning.learned_heuristic import LearnedHeuristic
from tnlib.learning.nlm import NLM
from tnlib.planning.generators import generate
from tnlib.planning.search import gbfs
from tnlib.planning.search_settings import SearchSettings
from tnlib.planning.pddl import resolve_domain

# The paper's test grid's largest instance per domain, and the parameter --sizes varies.
LARGEST = {"blocksworld": dict(blocks=22), "ferry": dict(locations=30, cars=30), "gripper": dict(balls=100),
           "visitall": dict(x=7, y=7, ratio=1.0)}
SIZE_PARAMETER = {"blocksworld": ("blocks",), "ferry": ("locations", "cars"), "gripper": ("balls",),
                  "visitall": ("x", "y")}
ROUTES = ("fused", "by-layer")


def nlm_floor(model: NLM, objects: int) -> tuple[float, int]:
    """Multiply-adds and comparisons per state that the layers' shapes force, and the bytes of the largest arity
    tensor a state must hold (an arity-r output that a later layer reads position by position)."""
    operations = 0.0
    largest = 0
    layers = list(model.layers) + ([model.output_layer] if model.output_layer is not None else [])
    for k, layer in enumerate(layers):
        following = layers[k + 1].out_arities if k + 1 < len(layers) else []
        for r in layer.out_arities:
            c_expand, c_same, c_reduce = layer.part_sizes(r)
            perms = math.factorial(r)
            operations += 2 * objects ** r * perms * (c_same + c_reduce) * layer.width  # Linear on r-ary inputs
            operations += 2 * objects ** max(r - 1, 0) * perms * c_expand * layer.width  # expand projected small
            if c_reduce:
                operations += 2 * objects ** (r + 1) * c_reduce / 2  # max and min over the reduced object
            if r in following or r + 1 in following:
                largest = max(largest, objects ** r * layer.width * 4)
    return operations, largest


def best_seconds(run, repeats: int = 3) -> float:
    """The shortest of ``repeats`` timed calls of ``run()``, after one untimed call (warm caches and pages)."""
    run()
    best = math.inf
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def matmul_rate() -> float:
    """Float32 multiply-add rate (flop/s) of a large matrix product, on the threads numpy's BLAS uses here (set
    ``OMP_NUM_THREADS`` to match ``--threads``)."""
    a = np.random.default_rng(0).random((2048, 2048), dtype=np.float32)
    return 2 * 2048 ** 3 / best_seconds(lambda: np.dot(a, a))


def run_one(route: str, checkpoint: str, domain: str, problem: str, evaluations: int, threads: int) -> dict:
    torch.set_num_threads(threads)
    heuristic = LearnedHeuristic(checkpoint, resolve_domain(domain), problem)
    if route == "by-layer":
        heuristic.model.forward = heuristic.model.forward_by_layers
    heuristic([heuristic.task.init])  # warm-up: compiled kernels load
    for key in heuristic.seconds:
        heuristic.seconds[key] = 0.0
    result = gbfs(heuristic.task, heuristic, SearchSettings(max_evaluations=evaluations))
    return {"route": route, "status": result.status, "evaluations": result.evaluations,
            "seconds": result.seconds, "forward": heuristic.seconds["forward"],
            "peak_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domains", nargs="+", default=list(LARGEST), choices=list(LARGEST))
    parser.add_argument("--sizes", type=int, nargs="+",
                        help="values of the domain's size parameter instead of the largest (blocks, locations "
                             "and cars, balls, grid side)")
    parser.add_argument("--routes", nargs="+", default=list(ROUTES), choices=ROUTES)
    parser.add_argument("--evaluations", type=int, default=300, help="evaluation limit of the fused route")
    parser.add_argument("--baseline-evaluations", type=int, default=100, help="evaluation limit of by-layer")
    parser.add_argument("--seed", type=int, default=1, help="instance generator seed")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--run-one", nargs=5, metavar=("ROUTE", "CHECKPOINT", "DOMAIN", "PROBLEM", "EVALS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.run_one:
        route, checkpoint, domain, problem, evaluations = args.run_one
        print(json.dumps(run_one(route, checkpoint, domain, problem, int(evaluations), args.threads)))
        return
    folder = Path(tempfile.mkdtemp(prefix="bench-nlm-paper-sizes-"))
    rate = matmul_rate()
    print(f"torch {torch.__version__}, {args.threads} thread(s); float32 matrix product {rate / 1e9:.0f} Gflop/s; "
          f"GBFS (paper protocol) with the authors' NLM, TN learned sigma, residual h_FF, LM-cut bound, random "
          f"fixed weights")
    print(f"{'instance':<24} {'objects':>7} {'route':<9} {'status':<16} {'evals':>6} {'evals/s':>8} "
          f"{'forward':>8} {'ms/state':>9} {'peak MB':>8} {'floor ms':>9} {'floor MB':>9}")
    rows = []
    for domain in args.domains:
        checkpoint = random_checkpoint(folder, domain, "nlm", 0)
        sizes = args.sizes or [None]
        for size in sizes:
            params = dict(LARGEST[domain])
            if size is not None:
                params.update({name: size for name in SIZE_PARAMETER[domain]})
            problem = folder / f"{domain}-{'-'.join(str(v) for v in params.values())}.pddl"
            problem.write_text(generate(domain, args.seed, **params))
            heuristic = LearnedHeuristic(checkpoint, resolve_domain(domain), problem)
            objects = heuristic.packed_encoder([heuristic.task.init]).object_mask.shape[1]
            flops, floor_bytes = nlm_floor(heuristic.model, objects)
            measured = {}
            for route in args.routes:
                limit = args.evaluations if route == "fused" else args.baseline_evaluations
                out = subprocess.run([sys.executable, __file__, "--threads", str(args.threads), "--run-one", route,
                                      str(checkpoint), domain, str(problem), str(limit)],
                                     capture_output=True, text=True, env={**os.environ})
                if out.returncode:
                    print(f"{problem.stem:<24} {route}: failed\n{out.stderr[-2000:]}")
                    continue
                row = json.loads(out.stdout.strip().splitlines()[-1])
                measured[route] = row
                per_state = row["forward"] / row["evaluations"] * 1e3
                print(f"{problem.stem:<24} {objects:>7} {route:<9} {row['status']:<16} {row['evaluations']:>6} "
                      f"{row['evaluations'] / row['seconds']:>8.1f} {row['forward'] / row['seconds']:>8.0%} "
                      f"{per_state:>9.2f} {row['peak_bytes'] / 2**20:>8.0f} {flops / rate * 1e3:>9.2f} "
                      f"{floor_bytes / 2**20:>9.1f}", flush=True)
            if len(measured) == 2:
                fused, layered = measured["fused"], measured["by-layer"]
                speedup = (fused["evaluations"] / fused["seconds"]) / (layered["evaluations"] / layered["seconds"])
                print(f"{'':<24} fused / by-layer: {speedup:.1f}x evaluations per second, "
                      f"{layered['peak_bytes'] / fused['peak_bytes']:.1f}x less peak memory")
            rows.append((problem.stem, measured))


if __name__ == "__main__":
    main()
