"""Table 2's search with the lower bound l the run trained with: GBFS with a run's TN (or N+clip) heuristic, once
with l from tnlib's LM-cut (as Table 2 plans) and once from Fast Downward's (as data/paper's labels hold it, and
so as the run trained), on chosen instances of its plan set.

Where the two LM-cuts differ (visitall most: benchmarks/lmcut_supporter_ties.py) the heuristic GBFS follows is not
the one Table 1 scores (benchmarks/heuristic_at_bound.py). This plans both ways and prints the evaluations and
whether each search solved its instance, so the planning cost of the mismatch is measured rather than inferred:

    python benchmarks/plan_with_trained_bound.py reports/paper-scale-nlm5/runs/visitall-nlm-TN-fixed-none-llmcut-s0 \
        --instances visitall-x7-y6-r0.5-s3914477000100 [--estimate clip] [--max-evaluations 10000]
    python benchmarks/plan_with_trained_bound.py reports/paper-scale-nlm5/runs/visitall-nlm-TN-fixed-none-llmcut-s* \
        --planned     # every instance Table 2 planned, and per run and over the seeds

Fast Downward's l is computed by tnlib's kernel with Fast Downward's tie-breaking
(:class:`tnlib.planning.heuristics.FastDownwardLMCutHeuristic`, equal to Fast Downward's values on the states
tests/planning/test_heuristics.py compares), as fast as tnlib's. Instances are named as the plan set's manifest names them (`--instances` omitted: the run's planned
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
from tnlib.planning.pddl import resolve_domain  # noqa: E402
from tnlib.planning.search_settings import SearchSettings  # noqa: E402


BOUNDS = ("tnlib", "fast-downward")


def plan_both_ways(run, domain_file, problem, estimate: str, settings: SearchSettings) -> dict:
    """The search's outcome with l from tnlib's LM-cut and from Fast Downward's, on one problem."""
    outcome = {}
    for bound in BOUNDS:
        fast_downward = bound == "fast-downward"
        heuristic = LearnedHeuristic(run, domain_file, problem, estimate=estimate, device="cpu",
                                     fast_downward_lmcut=fast_downward)
        if not heuristic.uses_lower_bound:
            raise SystemExit(f"{run}: its {estimate} estimate does not read l (an N model's mu): nothing to compare")
        result = search_problem(heuristic, domain_file, problem, settings)
        outcome[bound] = {"solved": result.solved, "evaluations": result.evaluations,
                          "seconds": round(result.seconds, 1)}
    return outcome


def costliest_planned(run, estimate: str, most: int | None) -> list[str]:
    """The run's plan-set instances of most evaluations in its Table 2 records (``most`` None: all of them, in
    the records' order)."""
    path = RunDir(run).planning_file(estimate, "plan-set")
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if most is None:
        return [r["instance"] for r in records]
    return [r["instance"] for r in sorted(records, key=lambda r: -r["evaluations"])[:most]]


def paired_interval(differences, decimals: int) -> str:
    """Mean and 95% t-interval of per-seed differences, to ``decimals`` places."""
    from scipy import stats

    d = np.asarray(differences, dtype=float)
    if len(d) < 2 or np.all(d == d[0]):
        return f"{d.mean():+,.{decimals}f} (equal on every seed)"
    low, high = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
    return f"{d.mean():+,.{decimals}f} [{low:,.{decimals}f}, {high:,.{decimals}f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="run folders trained on data/paper (each with best.pt)")
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument("--instances", nargs="*", help="plan-set instance names (default: the costliest planned)")
    chosen.add_argument("--planned", action="store_true",
                        help="every instance the run planned for Table 2 (its planning records), with a summary")
    parser.add_argument("--most", type=int, default=3, help="without --instances: this many (default 3)")
    parser.add_argument("--estimate", default="default", choices=("default", "clip"))
    parser.add_argument("--max-evaluations", type=int, default=SearchSettings().max_evaluations)
    args = parser.parse_args()
    torch.set_num_threads(1)
    settings = SearchSettings(max_evaluations=args.max_evaluations)
    print("| run | instance | tnlib's l: evaluations (solved) | Fast Downward's l: evaluations (solved) |")
    print("|---|---|---|---|")
    per_run = {}
    for run in args.runs:
        config = read_run_config(run)
        table = planning_instances(config.data_root, config.domain, "plan-set")
        domain_file = resolve_domain(config.domain)
        if args.planned:
            names = costliest_planned(run, args.estimate, None)
        else:
            names = args.instances or costliest_planned(run, args.estimate, args.most)
        outcomes = []
        for name in names:
            o = plan_both_ways(run, domain_file, table.problem_path(name), args.estimate, settings)
            outcomes.append(o)
            print(f"| {os.path.basename(run.rstrip('/'))} | {name} | "
                  + " | ".join(f"{o[b]['evaluations']:,} ({'yes' if o[b]['solved'] else 'no'})"
                               for b in BOUNDS) + " |", flush=True)
        per_run[run] = {b: (np.mean([o[b]["solved"] for o in outcomes]),
                            np.mean([o[b]["evaluations"] for o in outcomes])) for b in BOUNDS}
    print("\n| run | coverage: tnlib's l / Fast Downward's | average evaluations: tnlib's l / Fast Downward's |")
    print("|---|---|---|")
    for run, r in per_run.items():
        print(f"| {os.path.basename(run.rstrip('/'))} | {r['tnlib'][0]:.2f} / {r['fast-downward'][0]:.2f} | "
              f"{r['tnlib'][1]:,.0f} / {r['fast-downward'][1]:,.0f} |")
    if len(per_run) > 1:
        runs = list(per_run.values())
        print(f"\nover the {len(runs)} runs (one a seed), Fast Downward's l - tnlib's, mean [95% t-interval]: "
              f"coverage {paired_interval([r['fast-downward'][0] - r['tnlib'][0] for r in runs], 3)}, "
              f"evaluations {paired_interval([r['fast-downward'][1] - r['tnlib'][1] for r in runs], 0)}")


if __name__ == "__main__":
    main()
