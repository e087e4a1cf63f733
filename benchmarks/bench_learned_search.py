"""Speed of GBFS with a learned heuristic: evaluations per second and where the time goes.

    .venv/bin/python benchmarks/bench_learned_search.py                  # NLM and linear, 16-block blocksworld
                                                                         # and 7x7 visitall, 2 threads
    .venv/bin/python benchmarks/bench_learned_search.py --models nlm hgn --domains blocksworld --seeds 1

For each instance and model, three routes plan with the same network (random but fixed weights: the model's
initialisation after ``torch.manual_seed(--weight-seed)``; speed does not depend on the weights, only the states
the search visits do) and the same head: TN with learned sigma, residual h_FF and the LM-cut lower bound (the
paper's main configuration), so each evaluation also runs h_FF and LM-cut:

* ``packed``   tnlib's :class:`tnlib.learning.learned_heuristic.LearnedHeuristic`: one batch per expansion, model inputs gathered
               straight from the search's packed states (``NLMPackedEncoder`` / ``HGNPackedEncoder``);
* ``strings``  the route before this work: one batch per expansion, each state written out as atom strings
               (a dataset item) and encoded by ``encoder.collate_items``, the baseline model forward
               (``benchmarks/baseline_models.py``);
* ``batch-1``  as the paper's planner: one state at a time through the ``strings`` route;
* ``packed-1`` the ``packed`` route one state at a time (what batching per expansion adds, by itself).

Each route runs eager GBFS from the initial state until it solves the instance or reaches its evaluation limit
(--evaluations, fewer for the slow routes); all figures are per evaluation, so the routes compare although they
stop at different points. Columns: evaluations per second over the whole search (successor generation and open
list included), and the shares of that time spent in the symbolic heuristics (h_FF residual, LM-cut bound, the
linear model's features), in building model inputs, and in the model with its head. With ``--repeats R`` every
route runs R times, alternating with the others (other processes make single timings noisy). The last lines give,
per route, the median over the repeats of total evaluations / total seconds over all instances, and the speed-up
of ``packed`` over the other routes.
"""
from __future__ import annotations

import argparse
import itertools
import math
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from baseline_models import baseline_forward, current_forward

from tnlib.learning.models import make_encoder
from tnlib.planning.generators import generate
from tnlib.learning.models import build_model, model_arguments
from tnlib.learning.learned_heuristic import LearnedHeuristic
from tnlib.planning.search import gbfs
from tnlib.planning.search_settings import SearchSettings
from tnlib.planning.pddl import resolve_domain
from tnlib.learning.checkpoints import CHECKPOINT_FORMAT
from tnlib.learning.training import TrainConfig

INSTANCES = {"blocksworld": dict(blocks=16), "visitall": dict(x=7, y=7, ratio=1.0)}


def random_checkpoint(folder: Path, domain: str, model_name: str, seed: int) -> Path:
    """A checkpoint of the model's seeded initialisation, as ``tnlib.learning.training.load_checkpoint`` reads it."""
    config = TrainConfig(domain=domain, model=model_name, seed=seed, out_dir=str(folder), device="cpu")
    encoder = make_encoder(model_name, domain)
    torch.manual_seed(seed)
    model = build_model(model_name, **encoder.model_kwargs())
    path = folder / f"{domain}-{model_name}-seed{seed}.pt"
    torch.save({"format": CHECKPOINT_FORMAT, "config": config.to_dict(),
                "model_kwargs": model_arguments(model_name, encoder.model_kwargs()),
                "model": model.state_dict(), "step": 0}, path)
    return path


class StringRoute:
    """The baseline evaluation: atom strings per state, ``collate_items``, the baseline forward; optionally
    one state at a time. Keeps the same time accounts as ``LearnedHeuristic.seconds``."""

    def __init__(self, heuristic: LearnedHeuristic, one_at_a_time: bool):
        self.h = heuristic
        self.one_at_a_time = one_at_a_time
        self.seconds = {"symbolic": 0.0, "encode": 0.0, "forward": 0.0}

    def __call__(self, states):
        if self.one_at_a_time:
            return np.concatenate([self.evaluate([s]) for s in states])
        return self.evaluate(states)

    def evaluate(self, states) -> np.ndarray:
        h = self.h
        started = time.perf_counter()
        values = {name: heuristic.batch(states) for name, heuristic in h.heuristics.items()}
        out = np.full(len(states), math.inf)
        alive = np.ones(len(states), dtype=bool)
        for v in values.values():
            alive &= np.isfinite(v)
        index = np.flatnonzero(alive)
        encoded = time.perf_counter()
        self.seconds["symbolic"] += encoded - started
        if index.size:
            subset = {name: v[index] for name, v in values.items()}
            batch = h.encoder.collate_items(h._items([states[i] for i in index], subset))
            forward = time.perf_counter()
            self.seconds["encode"] += forward - encoded
            with torch.no_grad():
                prediction = h.head(h.model(batch.inputs), batch.residual, batch.lower, batch.upper)
                out[index] = prediction.point_estimate().double().numpy()
            self.seconds["forward"] += time.perf_counter() - forward
        return out


def run_route(route: str, checkpoint: Path, domain: str, problem: Path, max_evaluations: int) -> dict:
    heuristic = LearnedHeuristic(checkpoint, resolve_domain(domain), problem)
    if route == "packed":
        evaluate, accounts = heuristic, heuristic.seconds
    elif route == "packed-1":
        accounts = heuristic.seconds

        def evaluate(states):
            return np.concatenate([heuristic([s]) for s in states])
    else:
        baseline_forward(heuristic.model)
        evaluate = StringRoute(heuristic, one_at_a_time=route == "batch-1")
        accounts = evaluate.seconds
    evaluate([heuristic.task.init])  # warm-up (first calls of the kernels and the model)
    for key in accounts:
        accounts[key] = 0.0
    result = gbfs(heuristic.task, evaluate, SearchSettings(max_evaluations=max_evaluations))
    current_forward(heuristic.model)
    seconds = result.seconds
    return {"route": route, "status": result.status, "evaluations": result.evaluations,
            "expansions": result.expansions, "seconds": seconds,
            **{key: value / seconds for key, value in accounts.items()}}


def check_routes_agree(checkpoint: Path, domain: str, problem: Path) -> float:
    """Largest difference between the packed and the strings route's values on the initial state's successors."""
    heuristic = LearnedHeuristic(checkpoint, resolve_domain(domain), problem)
    states = [s for _, s in heuristic.task.successors(heuristic.task.init)] + [heuristic.task.init]
    packed = heuristic(states)
    baseline_forward(heuristic.model)
    strings = StringRoute(heuristic, one_at_a_time=False)(states)
    finite = np.isfinite(packed)
    assert (finite == np.isfinite(strings)).all()
    return float(np.abs(packed[finite] - strings[finite]).max(initial=0.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domains", nargs="+", default=list(INSTANCES), choices=list(INSTANCES))
    parser.add_argument("--models", nargs="+", default=["nlm", "linear"], choices=["nlm", "linear", "hgn"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2], help="instance generator seeds")
    parser.add_argument("--weight-seed", type=int, default=0)
    parser.add_argument("--evaluations", type=int, default=3000, help="evaluation limit of the packed route")
    parser.add_argument("--baseline-evaluations", type=int, default=600,
                        help="evaluation limit of the strings and batch-1 routes")
    parser.add_argument("--routes", nargs="+", default=["packed", "strings", "batch-1", "packed-1"],
                        choices=["packed", "strings", "batch-1", "packed-1"])
    parser.add_argument("--repeats", type=int, default=1, help="runs of every route (median reported)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    folder = Path(tempfile.mkdtemp(prefix="bench-learned-search-"))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; GBFS with a learned heuristic "
          f"(TN, residual h_FF, LM-cut bound; random fixed weights, seed {args.weight_seed})")
    header = (f"{'instance':<26} {'model':<6} {'route':<8} {'status':<16} {'evals':>6} {'evals/s':>8} "
              f"{'symbolic':>8} {'encode':>7} {'forward':>8} {'other':>6}")
    totals: dict[tuple[str, str, str, int], list[float]] = {}
    for domain in args.domains:
        for model_name in args.models:
            checkpoint = random_checkpoint(folder, domain, model_name, args.weight_seed)
            print(header)
            for seed in args.seeds:
                problem = folder / f"{domain}-{seed}.pddl"
                problem.write_text(generate(domain, seed, **INSTANCES[domain]))
                disagreement = check_routes_agree(checkpoint, domain, problem)
                for repeat, route in itertools.product(range(args.repeats), args.routes):
                    limit = args.evaluations if route == "packed" else args.baseline_evaluations
                    row = run_route(route, checkpoint, domain, problem, limit)
                    other = 1.0 - row["symbolic"] - row["encode"] - row["forward"]
                    rate = row["evaluations"] / row["seconds"]
                    total = totals.setdefault((domain, model_name, route, repeat), [0.0, 0.0])
                    total[0] += row["evaluations"]
                    total[1] += row["seconds"]
                    print(f"{problem.stem:<26} {model_name:<6} {route:<8} {row['status']:<16} {row['evaluations']:>6}"
                          f" {rate:>8.0f} {row['symbolic']:>8.1%} {row['encode']:>7.1%} {row['forward']:>8.1%}"
                          f" {other:>6.1%}", flush=True)
                print(f"{'':<26} (packed and strings values differ by at most {disagreement:.2g})")
    rates: dict[tuple[str, str, str], list[float]] = {}
    for (domain, model_name, route, _), (evaluations, seconds) in totals.items():
        rates.setdefault((domain, model_name, route), []).append(evaluations / seconds)
    medians = {key: statistics.median(values) for key, values in rates.items()}
    print(f"\noverall evaluations per second (total evaluations / total seconds over the instances; median of "
          f"{args.repeats}) and speed-ups of packed:")
    for (domain, model_name, route), rate in medians.items():
        line = f"  {domain:<12} {model_name:<6} {route:<8} {rate:>8.0f}/s"
        if route == "packed":
            for other in ("strings", "batch-1", "packed-1"):
                if (domain, model_name, other) in medians:
                    line += f"   {rate / medians[(domain, model_name, other)]:6.1f}x {other}"
        print(line)


if __name__ == "__main__":
    main()
