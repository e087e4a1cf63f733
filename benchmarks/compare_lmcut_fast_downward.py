"""How often tnlib's LM-cut equals Fast Downward's on initial states, and that both stay admissible.

For generated instances of the four domains: tnlib's LM-cut, Fast Downward's LM-cut (``astar(lmcut(),
bound=0)``) and the optimal cost h* (Fast Downward A* + LM-cut). Both LM-cuts must be <= h*; they may differ where
the two break ties between equal-cost landmarks differently (and FD works on its translated SAS+ task).

With ``--dataset`` it reads a dataset's ``lmcut`` column instead (tnlib's LM-cut, the truncation's lower bound l)
at the initial states of the first ``--instances`` instances of each domain's train and test splits and sets Fast
Downward's beside it -- the LM-cut the paper's labels hold (the authors' data generation asks Fast Downward for
each state's heuristic values) -- with the mean of each and of h*.

    python benchmarks/compare_lmcut_fast_downward.py [--seeds 10]
    python benchmarks/compare_lmcut_fast_downward.py --dataset data/paper [--instances 25]
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


def dataset_rows(root: Path, instances: int) -> None:
    """The dataset's LM-cut (tnlib's) against Fast Downward's at the initial states of each split's first
    instances: how often FD's is higher, by how much on average and at most, and the means beside h*'s."""
    from tnlib.data.loading import load_split

    print(f"{'domain':12s} {'split':6s} {'states':>6s} {'FD>tnlib':>8s} {'FD<tnlib':>8s} {'mean FD-tnlib':>13s} "
          f"{'max':>4s} {'tnlib':>6s} {'FD':>6s} {'h*':>6s}")
    for domain in SIZES:
        for split in ("train", "test"):
            rows = load_split(root, domain, split).table.select(["problem", "step", "lmcut", "h_star"]).to_pylist()
            starts = [r for r in rows if r["step"] == 0][:instances]
            pairs = [(r["lmcut"], fd_heuristic_value(root / domain / "domain.pddl", root / r["problem"]), r["h_star"])
                     for r in starts]
            pairs = [p for p in pairs if p[1] is not None]
            gaps = [fd - ours for ours, fd, _ in pairs]
            n = len(pairs)
            print(f"{domain:12s} {split:6s} {n:6d} {sum(g > 0 for g in gaps):8d} {sum(g < 0 for g in gaps):8d} "
                  f"{sum(gaps) / n:13.2f} {max(gaps):4.0f} {sum(p[0] for p in pairs) / n:6.2f} "
                  f"{sum(p[1] for p in pairs) / n:6.2f} {sum(p[2] for p in pairs) / n:6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--dataset", type=Path, help="a dataset root, e.g. data/paper: its lmcut column against FD's")
    parser.add_argument("--instances", type=int, default=25, help="with --dataset: instances per domain and split")
    args = parser.parse_args()
    if args.dataset is not None:
        dataset_rows(args.dataset, args.instances)
        return
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
