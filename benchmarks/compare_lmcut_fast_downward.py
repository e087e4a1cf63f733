"""How often tnlib's LM-cut equals Fast Downward's on initial states, and that both stay admissible.

For generated instances of the four domains: tnlib's LM-cut, Fast Downward's LM-cut (``astar(lmcut(),
bound=0)``) and the optimal cost h* (Fast Downward A* + LM-cut). Both LM-cuts must be <= h*; they may differ where
the two break ties between equal-cost landmarks differently (and FD works on its translated SAS+ task).

With ``--dataset`` it compares the two on every state of the first ``--instances`` instances of each domain's train
and test splits of a dataset -- Fast Downward's is the LM-cut the paper's labels hold (the authors' data generation
asks Fast Downward for each state's heuristic values) -- with the mean of each and of h*, and how often the
dataset's ``lmcut`` column (the truncation's lower bound l) equals each.

    python benchmarks/compare_lmcut_fast_downward.py [--seeds 10]
    python benchmarks/compare_lmcut_fast_downward.py --dataset data/paper [--instances 10]
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
    """tnlib's LM-cut against Fast Downward's on every state of each split's first instances of a dataset (Fast
    Downward's by one translation a problem: tnlib.planning.fast_downward_states), with how often the dataset's
    ``lmcut`` column equals each (after `tnlib data relabel-lmcut` it holds Fast Downward's, as the paper's labels),
    and stock pyperplan's mean beside them."""
    import numpy as np

    from tnlib.data.loading import load_split
    from tnlib.planning.fast_downward_states import fd_state_values, state_problem_text, translate_once

    print(f"{'domain':12s} {'split':6s} {'states':>6s} {'FD>tnlib':>8s} {'FD<tnlib':>8s} {'mean FD-tnlib':>13s} "
          f"{'max':>4s} {'tnlib':>6s} {'FD':>6s} {'pyperplan':>9s} {'h*':>6s} {'column=FD':>9s} {'column=tnlib':>12s}")
    for domain in SIZES:
        domain_path = root / domain / "domain.pddl"
        for split in ("train", "test"):
            rows = load_split(root, domain, split).table.select(["problem", "state", "lmcut", "h_star"]).to_pylist()
            problems = list(dict.fromkeys(r["problem"] for r in rows))[:instances]
            ours, theirs, stock, column, h_star = [], [], [], [], []
            with tempfile.TemporaryDirectory() as tmp:
                for problem in problems:
                    states = [r for r in rows if r["problem"] == problem]
                    theirs += list(fd_state_values(translate_once(domain_path, root / problem),
                                                   [r["state"] for r in states]))
                    text = (root / problem).read_text()
                    for r in states:
                        state_file = Path(tmp) / "state.pddl"
                        state_file.write_text(state_problem_text(text, r["state"]))
                        task = load_task(domain_path, state_file)
                        ours.append(make_heuristic("lmcut", task)(task.init))
                        stock.append(_pyperplan_lmcut(domain_path, state_file))
                    column += [r["lmcut"] for r in states]
                    h_star += [r["h_star"] for r in states]
            ours, theirs, column = np.array(ours), np.array(theirs), np.array(column)
            gaps = theirs - ours
            print(f"{domain:12s} {split:6s} {len(gaps):6d} {np.sum(gaps > 0):8d} {np.sum(gaps < 0):8d} "
                  f"{gaps.mean():13.2f} {np.abs(gaps).max():4.0f} {ours.mean():6.2f} {theirs.mean():6.2f} "
                  f"{np.mean(stock):9.2f} {np.mean(h_star):6.2f} {np.sum(column == theirs):9d} {np.sum(column == ours):12d}")


def _pyperplan_lmcut(domain_path: Path, problem: Path) -> float:
    """Stock pyperplan's LM-cut on the problem's initial state (the authors' planner took l from their fork of it)."""
    from pyperplan.grounding import ground
    from pyperplan.heuristics.lm_cut import LmCutHeuristic
    from pyperplan.pddl.parser import Parser
    from pyperplan.search.searchspace import make_root_node

    from tnlib.planning.pddl import quiet_pyperplan

    with quiet_pyperplan():
        parser = Parser(str(domain_path), str(problem))
        task = ground(parser.parse_problem(parser.parse_domain()))
    return float(LmCutHeuristic(task)(make_root_node(task.initial_state)))


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
