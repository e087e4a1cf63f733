"""GBFS speed: tnlib's eager GBFS against pyperplan's GBFS, both with h_FF, on 16-block blocksworld.

    .venv/bin/python benchmarks/bench_search.py [--seeds 1 2 3] [--blocks 16] [--pyperplan-evaluations 2000]

Figure of merit: heuristic evaluations per second over a whole search (successor generation, duplicate
detection, open list and heuristic together). tnlib runs each instance to the paper's limit of 10,000
evaluations (or the goal); pyperplan, about 50x slower, is stopped after --pyperplan-evaluations evaluations of
its heuristic (it evaluates every generated successor, duplicates included -- the counts are still heuristic
calls per second). Numba's first call (compile or cache load) is excluded and reported separately.
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from pyperplan.heuristics.relaxation import hFFHeuristic
from pyperplan.search.a_star import greedy_best_first_search

from tnlib.planning.generators import generate
from tnlib.planning.heuristics import make_heuristic
from tnlib.planning.plans import validate_plan
from tnlib.planning.search import gbfs
from tnlib.planning.search_settings import DISTINCT, SearchSettings
from tnlib.planning.task import load_task, parse_and_ground
from tnlib.planning.pddl import quiet_pyperplan


class _Stop(Exception):
    pass


class CountingHeuristic:
    """pyperplan heuristic wrapper that counts calls and stops the search after `limit` of them."""

    def __init__(self, inner, limit: int):
        self.inner, self.limit, self.calls = inner, limit, 0

    def __call__(self, node):
        self.calls += 1
        if self.calls > self.limit:
            raise _Stop
        return self.inner(node)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, nargs="*", default=[1, 2, 3, 4, 5])
    parser.add_argument("--blocks", type=int, default=16)
    parser.add_argument("--heuristics", nargs="*", default=["ff", "lmcut", "goalcount"])
    parser.add_argument("--pyperplan-evaluations", type=int, default=2000)
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="bench-search-"))
    print(f"GBFS on blocksworld, {args.blocks} blocks, limit 10,000 evaluations")
    print(f"{'seed':>4} {'planner':<16} {'status':<17} {'plan':>5} {'evals':>6} {'expans':>6} {'seconds':>8}"
          f" {'evals/s':>9}")
    totals: dict[str, list[float]] = {}
    for seed in args.seeds:
        path = workdir / f"bw{args.blocks}-{seed}.pddl"
        path.write_text(generate("blocksworld", seed, blocks=args.blocks))
        task = load_task("blocksworld", path)
        for name in args.heuristics:
            heuristic = make_heuristic(name, task)
            started = time.perf_counter()
            heuristic.batch([task.init])
            first_call = time.perf_counter() - started
            # Distinct-state counting: every counted evaluation is a computed one, as in pyperplan's loop.
            result = gbfs(task, heuristic, SearchSettings(protocol=DISTINCT))
            if result.solved:
                assert validate_plan(task, result.plan).valid
            rate = result.evaluations / result.seconds
            totals.setdefault(f"tnlib {name}", [0, 0])
            totals[f"tnlib {name}"][0] += result.evaluations
            totals[f"tnlib {name}"][1] += result.seconds
            print(f"{seed:>4} {'tnlib ' + name:<16} {result.status:<17} {result.plan_length or '-':>5}"
                  f" {result.evaluations:>6} {result.expansions:>6} {result.seconds:>8.3f} {rate:>9.0f}"
                  + (f"   (first call {first_call:.2f}s)" if first_call > 0.05 else ""))
        reference = parse_and_ground(task.domain_file, task.problem_file)
        counting = CountingHeuristic(hFFHeuristic(reference), args.pyperplan_evaluations)
        started = time.perf_counter()
        status = "solved"
        try:
            with quiet_pyperplan():
                greedy_best_first_search(reference, counting)
        except _Stop:
            status = "stopped"
        seconds = time.perf_counter() - started
        calls = min(counting.calls, args.pyperplan_evaluations)
        totals.setdefault("pyperplan ff", [0, 0])
        totals["pyperplan ff"][0] += calls
        totals["pyperplan ff"][1] += seconds
        print(f"{seed:>4} {'pyperplan ff':<16} {status:<17} {'-':>5} {calls:>6} {'-':>6} {seconds:>8.3f}"
              f" {calls / seconds:>9.0f}")
    print()
    print("overall evaluations per second (total evaluations / total seconds):")
    reference_rate = totals["pyperplan ff"][0] / totals["pyperplan ff"][1]
    for planner, (evaluations, seconds) in totals.items():
        rate = evaluations / seconds
        print(f"  {planner:<16} {rate:>9.0f}/s   {rate / reference_rate:>6.1f}x pyperplan ff")


if __name__ == "__main__":
    main()
