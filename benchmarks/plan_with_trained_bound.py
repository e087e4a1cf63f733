"""Table 2's search with the lower bound l the run trained with: GBFS with a run's TN (or N+clip) heuristic, once
with l from tnlib's LM-cut (as Table 2 plans) and once from Fast Downward's (as data/paper's labels hold it, and
so as the run trained), on chosen instances of its plan set.

Where the two LM-cuts differ (visitall most: benchmarks/lmcut_supporter_ties.py) the heuristic GBFS follows is not
the one Table 1 scores (benchmarks/heuristic_at_bound.py). This plans both ways and prints the evaluations and
whether each search solved its instance, so the planning cost of the mismatch is measured rather than inferred:

    python benchmarks/plan_with_trained_bound.py reports/paper-scale-nlm5/runs/visitall-nlm-TN-fixed-none-llmcut-s0 \
        --instances visitall-x7-y6-r0.5-s3914477000100 [--estimate clip] [--max-evaluations 10000]

Fast Downward's l costs one search process a state (tens of milliseconds): a search of 10,000 evaluations takes
minutes. Instances are named as the plan set's manifest names them (`--instances` omitted: the run's planned
instances of largest evaluation count under tnlib's l, up to `--most`).
"""
from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from tnlib.learning.learned_heuristic import LearnedHeuristic, search_problem  # noqa: E402
from tnlib.learning.run_files import RunDir  # noqa: E402
from tnlib.learning.split_planning import planning_instances  # noqa: E402
from tnlib.learning.training import read_run_config  # noqa: E402
from tnlib.planning.fast_downward_states import fd_state_values, translate_once  # noqa: E402
from tnlib.planning.pddl import resolve_domain  # noqa: E402
from tnlib.planning.search_settings import SearchSettings  # noqa: E402


class FastDownwardLMCut:
    """Fast Downward's LM-cut of packed states of one problem, in the ``batch`` shape tnlib's heuristics have."""

    def __init__(self, heuristic: LearnedHeuristic, domain_file, problem_file):
        self.task = heuristic.task
        self.static_atoms = heuristic.static_atoms
        self.sas = translate_once(domain_file, problem_file)

    def batch(self, states) -> np.ndarray:
        atoms = [self.static_atoms + [self.task.fact_names[f] for f in self.task.state_to_indices(s)]
                 for s in states]
        return fd_state_values(self.sas, atoms)


def plan_both_ways(run, domain_file, problem, estimate: str, settings: SearchSettings) -> dict:
    """The search's outcome with tnlib's l and with Fast Downward's, on one problem."""
    outcome = {}
    for bound in ("tnlib", "fast-downward"):
        heuristic = LearnedHeuristic(run, domain_file, problem, estimate=estimate, device="cpu")
        if not heuristic.uses_lower_bound:
            raise SystemExit(f"{run}: its {estimate} estimate does not read l (an N model's mu): nothing to compare")
        if bound == "fast-downward":
            heuristic.heuristics[heuristic.config.head.lower_bound] = FastDownwardLMCut(heuristic, domain_file,
                                                                                        problem)
        result = search_problem(heuristic, domain_file, problem, settings)
        outcome[bound] = {"solved": result.solved, "evaluations": result.evaluations,
                          "seconds": round(result.seconds, 1)}
    return outcome


def costliest_planned(run, estimate: str, most: int) -> list[str]:
    """The run's plan-set instances of most evaluations in its Table 2 records."""
    path = RunDir(run).planning_file(estimate, "plan-set")
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r["instance"] for r in sorted(records, key=lambda r: -r["evaluations"])[:most]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="run folders trained on data/paper (each with best.pt)")
    parser.add_argument("--instances", nargs="*", help="plan-set instance names (default: the costliest planned)")
    parser.add_argument("--most", type=int, default=3, help="without --instances: this many (default 3)")
    parser.add_argument("--estimate", default="default", choices=("default", "clip"))
    parser.add_argument("--max-evaluations", type=int, default=SearchSettings().max_evaluations)
    args = parser.parse_args()
    torch.set_num_threads(1)
    settings = SearchSettings(max_evaluations=args.max_evaluations)
    print("| run | instance | tnlib's l: evaluations (solved) | Fast Downward's l: evaluations (solved) |")
    print("|---|---|---|---|")
    for run in args.runs:
        config = read_run_config(run)
        table = planning_instances(config.data_root, config.domain, "plan-set")
        domain_file = resolve_domain(config.domain)
        for name in args.instances or costliest_planned(run, args.estimate, args.most):
            o = plan_both_ways(run, domain_file, table.problem_path(name), args.estimate, settings)
            print(f"| {os.path.basename(run.rstrip('/'))} | {name} | "
                  + " | ".join(f"{o[b]['evaluations']:,} ({'yes' if o[b]['solved'] else 'no'})"
                               for b in ("tnlib", "fast-downward")) + " |", flush=True)


if __name__ == "__main__":
    main()
