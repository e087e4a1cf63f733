"""How much Table 2's h_FF coverage depends on the order a planner lists operators in.

    .venv/bin/python benchmarks/plan_set_order_sensitivity.py --domains blocksworld ferry --orders 4

GBFS with h_FF under the paper's protocol (at most 10,000 evaluations) on a dataset's label-free plan set, once with
tnlib's operator order (sorted by name) and once per ``--orders`` random permutation of the operators. The order
decides which successor is generated first (and so which of equal-h states GBFS expands first, and when a goal is
met at generation) and which achiever h_FF's relaxed plan picks among equally cheap ones -- the two details the
authors' pyperplan fork leaves to Python's set and dict iteration order. The spread of coverage over the orders is
how far a planner that differs only there can land from tnlib's figure on the same instances.
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics

import numpy as np

from tnlib.data.plan_sets import load_plan_set
from tnlib.planning.heuristics import make_heuristic
from tnlib.planning.search import gbfs
from tnlib.planning.search_settings import SearchSettings
from tnlib.planning.task import Task, load_search_task
from tnlib.planning.pddl import resolve_domain
from tnlib.paper import FF_COVERAGE, MAX_EVALUATIONS


def _permute_csr(start: np.ndarray, items: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    groups = [items[start[i]:start[i + 1]] for i in order]
    new_start = np.zeros(len(order) + 1, dtype=start.dtype)
    np.cumsum([len(g) for g in groups], out=new_start[1:])
    return new_start, (np.concatenate(groups) if groups else items[:0]).astype(items.dtype)


def reorder_operators(task: Task, seed: int) -> Task:
    """The same task with its operators listed in a random order (``seed``)."""
    return permute_operators(task, np.random.default_rng(seed).permutation(task.num_operators))


def permute_operators(task: Task, order: np.ndarray) -> Task:
    """The same task with its operators listed in ``order`` (a permutation of the operator indices)."""
    fields = {f.name: getattr(task, f.name) for f in dataclasses.fields(task) if f.init}
    for kind in ("pre", "add", "del"):
        fields[f"{kind}_start"], fields[f"{kind}_facts"] = _permute_csr(
            getattr(task, f"{kind}_start"), getattr(task, f"{kind}_facts"), order)
    fields["operator_names"] = [task.operator_names[i] for i in order]
    return Task(**fields)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="data/paper")
    parser.add_argument("--plan-set", default="plan-set")
    parser.add_argument("--domains", nargs="+", default=["blocksworld", "ferry"])
    parser.add_argument("--orders", type=int, default=4, help="random operator orders besides tnlib's")
    parser.add_argument("--per-cell", type=int, default=None, help="instances per grid cell (default: all)")
    parser.add_argument("--max-evaluations", type=int, default=MAX_EVALUATIONS)
    args = parser.parse_args()
    print(f"GBFS h_FF, paper protocol, at most {args.max_evaluations:,} evaluations; coverage per operator order "
          f"(order 'sorted' is tnlib's), on {args.data} {args.plan_set}")
    for domain in args.domains:
        plan_set = load_plan_set(args.data, domain, args.plan_set)
        cells: dict[str, list[str]] = {}
        for name in plan_set.instances():
            cells.setdefault(plan_set.record(name)["cell"], []).append(name)
        names = [n for group in cells.values() for n in group[:args.per_cell]]
        coverage = {}
        for order in ["sorted"] + list(range(args.orders)):
            solved = 0
            for name in names:
                task = load_search_task(resolve_domain(domain), plan_set.problem_path(name))
                if order != "sorted":
                    task = reorder_operators(task, order)
                solved += gbfs(task, make_heuristic("ff", task), SearchSettings(max_evaluations=args.max_evaluations)).solved
            coverage[order] = solved / len(names)
            print(f"  {domain:<12} order {str(order):<7} coverage {coverage[order]:.2f} ({solved}/{len(names)})",
                  flush=True)
        values = list(coverage.values())
        print(f"  {domain:<12} over {len(values)} orders: min {min(values):.2f}, median {statistics.median(values):.2f},"
              f" max {max(values):.2f}; the paper's h_FF: {FF_COVERAGE[domain]:.2f}")


if __name__ == "__main__":
    main()
