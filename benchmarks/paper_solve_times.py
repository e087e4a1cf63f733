"""Fast Downward A* + LM-cut solve times on the paper profile's larger sizes: what data/README.md's table of
measured solve times reports, and what the generation limits of data/paper were chosen from.

    .venv/bin/python benchmarks/paper_solve_times.py [--time-limit 30] [--seeds 2] [--sizes blocksworld-b12 ...]

For each size below it generates the test split's instances of seed numbers 1..SEEDS (attempt 0, the problem
`tnlib data generate --profile paper` draws first for that slot) and solves each with
:func:`tnlib.planning.fast_downward.solve` under the limit, printing one Markdown row per size: status and
seconds per seed. A time-out prints as ``> LIMIT``. The sizes are those where one machine's reach ends.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from tnlib.data.profiles import generator_seed, params_label
from tnlib.planning.fast_downward import solve
from tnlib.planning.generators import generate

SIZES = [("blocksworld", {"blocks": b}) for b in (11, 12, 13, 14, 16)] + [
    ("gripper", {"balls": 20}), ("gripper", {"balls": 40}),
    ("ferry", {"locations": 10, "cars": 10}), ("ferry", {"locations": 10, "cars": 15}),
    ("ferry", {"locations": 15, "cars": 10}),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--time-limit", type=float, default=30.0, help="seconds per solve (default 30)")
    parser.add_argument("--seeds", type=int, default=2, help="seed numbers per size (default 2)")
    labels = [params_label(domain, params) for domain, params in SIZES]
    parser.add_argument("--sizes", nargs="+", choices=labels, default=labels, metavar="SIZE",
                        help=f"only these sizes (default: all of {', '.join(labels)})")
    args = parser.parse_args()
    print(f"| size | {' | '.join(f'seed {n}' for n in range(1, args.seeds + 1))} |")
    print("|---|" + "---|" * args.seeds)
    for domain, params in (size for size, label in zip(SIZES, labels) if label in args.sizes):
        cells = []
        for n in range(1, args.seeds + 1):
            seed = generator_seed("test", domain, tuple(params.items()), n, 0)
            with tempfile.TemporaryDirectory(prefix="tnlib-bench-") as tmp:
                path = Path(tmp) / "problem.pddl"
                path.write_text(generate(domain, seed, **params))
                result = solve(domain, path, time_limit=args.time_limit, memory_limit_mb=8000)
            cells.append(f"{result.seconds:.1f} s (h* {len(result.plan)})" if result.solved
                         else f"> {args.time_limit:g} s ({result.status})")
        print(f"| {params_label(domain, params)} | {' | '.join(cells)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
