"""How long the exact optimal costs of tnlib.planning.optimal_costs take per state, cell by cell of the paper's test
grids, beside what Fast Downward's A* with LM-cut took where data/paper records a solve.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_optimal_costs.py
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_optimal_costs.py --domains visitall --seeds 5 --max-nodes 200000

Per domain with an exact h* and per parameter combination of the paper profile's test grid, ``--seeds`` instances are
generated (seeds 1..N) and h* of each initial state is computed from its atoms (parsing excluded). Columns: the
median h*, the median and largest seconds per state, how many states visitall's search gave up on at
``--max-nodes`` nodes, and A*: the instances of the cell data/paper solved (test and plan splits) and their median
solve seconds (the manifest's record).
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from tnlib.data.profiles import get_profile
from tnlib.errors import OutsideFormulaScope
from tnlib.planning.generators import generate, problem_name
from tnlib.planning.optimal_costs import OPTIMAL_COSTS, visitall_optimal_cost
from tnlib.planning.pddl import problem_atoms

ROOT = Path(__file__).resolve().parents[1]


def astar_seconds(domain: str) -> dict[tuple, list[float]]:
    """The recorded A* solve seconds of data/paper's test and plan instances, by parameter combination."""
    manifest = json.loads((ROOT / "data" / "paper" / domain / "manifest.json").read_text())
    seconds: dict[tuple, list[float]] = {}
    for split in ("test", "plan"):
        for record in manifest["splits"].get(split, {}).get("instances", []):
            seconds.setdefault(tuple(record["params"].values()), []).append(record["solve_seconds"])
    return seconds


def time_cell(domain: str, params: dict, seeds: int, max_nodes: int, folder: Path) -> tuple[list, list, int]:
    costs, seconds, gave_up = [], [], 0
    for seed in range(1, seeds + 1):
        path = folder / f"{problem_name(domain, seed, **params)}.pddl"
        path.write_text(generate(domain, seed, **params), encoding="utf-8")
        state, goal = problem_atoms(domain, path)
        start = time.perf_counter()
        try:
            if domain == "visitall":
                costs.append(visitall_optimal_cost(state, goal, max_nodes=max_nodes))
            else:
                costs.append(OPTIMAL_COSTS[domain](state, goal))
        except OutsideFormulaScope:
            gave_up += 1
        seconds.append(time.perf_counter() - start)
    return costs, seconds, gave_up


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domains", nargs="+", default=sorted(OPTIMAL_COSTS), choices=sorted(OPTIMAL_COSTS))
    parser.add_argument("--seeds", type=int, default=3, help="instances per grid cell")
    parser.add_argument("--max-nodes", type=int, default=500_000, help="visitall's search gives up after these")
    args = parser.parse_args(argv)
    grid = get_profile("paper")
    print(f"{'domain':9} {'cell':22} {'h* med':>7} {'s/state med':>12} {'max':>9} {'gave up':>8} {'A* n':>5} "
          f"{'A* s med':>9}")
    with tempfile.TemporaryDirectory() as folder:
        for domain in args.domains:
            recorded = astar_seconds(domain)
            for params in grid.grid(domain, "test").combos:
                costs, seconds, gave_up = time_cell(domain, dict(params), args.seeds, args.max_nodes, Path(folder))
                solved = recorded.get(tuple(dict(params).values()), [])
                cell = " ".join(f"{k}={v:g}" for k, v in dict(params).items())
                print(f"{domain:9} {cell:22} {statistics.median(costs) if costs else '-':>7} "
                      f"{statistics.median(seconds):12.4f} {max(seconds):9.4f} {gave_up:8d} {len(solved):5d} "
                      f"{(f'{statistics.median(solved):.2f}' if solved else '-'):>9}", flush=True)


if __name__ == "__main__":
    main()
