"""How often tnlib's LM-cut equals Fast Downward's on initial states, and that both stay admissible.

For generated instances of the four domains: tnlib's LM-cut, Fast Downward's LM-cut (``astar(lmcut(),
bound=0)``) and the optimal cost h* (Fast Downward A* + LM-cut). Both LM-cuts must be <= h*; they may differ where
the two break ties between equal-cost landmarks differently (and FD works on its translated SAS+ task).

    python benchmarks/compare_lmcut_fast_downward.py [--seeds 10]
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from tnlib.planning.generators import generate
from tnlib.planning.heuristics import make_heuristic
from tnlib.planning.fast_downward import fd_heuristic_value, solve
from tnlib.planning.task import load_task
from tnlib.planning.pddl import resolve_domain

SIZES = {
    "blocksworld": [{"blocks": n} for n in (5, 7, 9)],
    "ferry": [{"locations": 3, "cars": 3}, {"locations": 5, "cars": 4}],
    "gripper": [{"balls": 4}, {"balls": 8}],
    "visitall": [{"x": 3, "y": 3, "ratio": 1.0}, {"x": 4, "y": 4, "ratio": 0.5}],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    args = parser.parse_args()
    print(f"{'domain':12s} {'states':>6s} {'equal':>6s} {'tnlib>FD':>8s} {'tnlib<FD':>8s} {'admissible (both)':>18s}")
    with tempfile.TemporaryDirectory() as tmp:
        for domain, grid in SIZES.items():
            domain_file = resolve_domain(domain)
            n = equal = higher = lower = admissible = 0
            for params in grid:
                for seed in range(1, args.seeds + 1):
                    problem = Path(tmp) / f"{domain}-{seed}.pddl"
                    problem.write_text(generate(domain, seed, **params))
                    ours = make_heuristic("lmcut", load_task(domain_file, problem))(load_task(domain_file, problem).init)
                    theirs = fd_heuristic_value(domain_file, problem)
                    optimal = solve(domain_file, problem, time_limit=60)
                    if theirs is None or not optimal.solved:
                        continue
                    n += 1
                    equal += ours == theirs
                    higher += ours > theirs
                    lower += ours < theirs
                    admissible += ours <= optimal.cost and theirs <= optimal.cost
            print(f"{domain:12s} {n:6d} {equal / n:6.0%} {higher / n:8.0%} {lower / n:8.0%} {admissible:>14d}/{n}")


if __name__ == "__main__":
    main()
