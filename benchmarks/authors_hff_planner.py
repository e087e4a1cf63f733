"""Table 2's h_FF column by the authors' own planner: their GBFS and h_FF on tnlib's plan-set instances.

    git --git-dir=/work/.mirror/IBM+pddlsl/repo archive b4c807ad2ed7 pddlsl | tar -x -C /tmp/authors-pddlsl
    .venv/bin/python benchmarks/authors_hff_planner.py --authors-code /tmp/authors-pddlsl \\
        --domains blocksworld ferry --hash-seeds 0 1 2 3 4 --out /tmp/authors-hff.jsonl

The authors' planner (IBM/pddlsl, ``experiments/plan.py`` with heuristic ``ff``, as ``plan_all_symbolic.sh`` calls
it with ``--max-evaluations 10000``) is PyPI's pyperplan 2.1 (their requirements.txt pins it) with their
``pddlsl/custom_pyperplan`` modules: ``relaxation.hFFHeuristic`` and ``a_star.greedy_best_first_search``. This
script calls exactly those, on a task grounded as plan.py grounds it (``_parse``, then ``_ground`` keeping statics
and irrelevant operators), and counts as plan.py records: an unsolved instance counts ``max_evaluations``. It
imports their code from ``--authors-code`` (an export of their repository); nothing of it is copied here.

pyperplan's grounding collects objects in Python sets, so the operator order -- and with it GBFS's tie-breaking
and h_FF's choice among equally cheap achievers -- follows the string hash, which Python draws per process unless
``PYTHONHASHSEED`` is set. plan.py ran one process per instance, so every instance met its own hash seed; here
each ``--hash-seeds`` value is one child process that plans every selected instance under that seed. The child
processes run one after another. Records (one JSON line per instance and seed) are appended to ``--out``, and
instances already recorded there are skipped, so a stopped run resumes.

Their pure-Python h_FF costs 5-10 ms a state on a shared core (a blocksworld instance left unsolved at 10,000
evaluations takes one to two minutes), so ``--planner tnlib-their-order`` runs tnlib's GBFS and h_FF instead, with
the operators listed in the order the authors' grounding gives them under the same hash seed. Where the two h_FF
agree state for state -- ``--compare-h PROBLEM`` checks one instance: it runs their search and computes tnlib's
h_FF on every state theirs evaluated -- this is their search, evaluation for evaluation, at tnlib's speed; where
h_FF also depends on the order a state's facts enter its queue (pyperplan iterates a set there, tnlib sorts), the
values can differ and only the authors' planner counts.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from tnlib.data.plan_sets import load_plan_set
from tnlib.paper import FF_COVERAGE, MAX_EVALUATIONS


def _instances(data: str, domain: str, plan_set_name: str, per_cell: int | None) -> list[tuple[str, Path]]:
    plan_set = load_plan_set(data, domain, plan_set_name)
    cells: dict[str, list[str]] = {}
    for name in plan_set.instances():
        cells.setdefault(plan_set.record(name)["cell"], []).append(name)
    names = [n for group in cells.values() for n in group[:per_cell]]
    return [(n, plan_set.problem_path(n)) for n in names]


def _plan_one(domain_file: Path, problem_file: Path, max_evaluations: int) -> dict:
    """One call of the authors' plan.py with heuristic ``ff``, minus its file bookkeeping."""
    from pyperplan.planner import _ground, _parse
    from pddlsl.custom_pyperplan.a_star import greedy_best_first_search
    from pddlsl.custom_pyperplan.relaxation import hFFHeuristic

    problem = _parse(str(domain_file), str(problem_file))
    task = _ground(problem, remove_statics_from_initial_state=False, remove_irrelevant_operators=False)
    heuristic = hFFHeuristic(task)
    started = time.perf_counter()
    plan, evaluated = greedy_best_first_search(task, heuristic, max_evaluations=max_evaluations)
    seconds = time.perf_counter() - started
    return {"solved": plan is not None,
            "evaluations": evaluated if plan is not None else max_evaluations,
            "evaluations_counted": evaluated,
            "plan_length": None if plan is None else len(plan),
            "seconds": round(seconds, 3),
            "first_operators": [op.name for op in task.operators[:3]]}


def _plan_one_in_their_order(domain_file: Path, problem_file: Path, max_evaluations: int) -> dict:
    """tnlib's GBFS and h_FF with the operators listed in the order the authors' grounding gives them under this
    process's hash seed (state facts still enter h_FF's queue in tnlib's sorted order)."""
    from pyperplan.planner import _ground, _parse
    from plan_set_order_sensitivity import permute_operators
    from tnlib.planning.heuristics import make_heuristic
    from tnlib.planning.search import gbfs
    from tnlib.planning.search_settings import SearchSettings
    from tnlib.planning.task import load_search_task

    theirs = _ground(_parse(str(domain_file), str(problem_file)),
                     remove_statics_from_initial_state=False, remove_irrelevant_operators=False)
    task = load_search_task(domain_file, problem_file)
    order = np.asarray([task.operator_index[op.name] for op in theirs.operators])
    if sorted(order.tolist()) != list(range(task.num_operators)):
        raise ValueError(f"{problem_file}: the authors' grounding and tnlib's list different operators")
    task = permute_operators(task, order)
    result = gbfs(task, make_heuristic("ff", task), SearchSettings(max_evaluations=max_evaluations))
    return {"solved": result.solved, "evaluations": result.evaluations, "evaluations_counted": result.evaluations,
            "plan_length": result.plan_length, "seconds": round(result.seconds, 3),
            "first_operators": task.operator_names[:3]}


PLANNERS = {"authors": _plan_one, "tnlib-their-order": _plan_one_in_their_order}


def compare_h(domain_file: Path, problem_file: Path, max_evaluations: int, shown: int) -> None:
    """Run the authors' GBFS + h_FF on one instance under this process's hash seed and compute tnlib's h_FF on every
    state it evaluated: how often the two values differ, and the first ``shown`` states where they do."""
    from pyperplan.planner import _ground, _parse
    from pddlsl.custom_pyperplan.a_star import greedy_best_first_search
    from pddlsl.custom_pyperplan.relaxation import hFFHeuristic
    from tnlib.planning.heuristics import make_heuristic
    from tnlib.planning.task import load_search_task

    task = _ground(_parse(str(domain_file), str(problem_file)),
                   remove_statics_from_initial_state=False, remove_irrelevant_operators=False)
    theirs = hFFHeuristic(task)
    seen: dict[frozenset, float] = {}

    def recording(node):
        value = theirs(node)
        seen.setdefault(node.state, value)
        return value

    plan, evaluated = greedy_best_first_search(task, recording, max_evaluations=max_evaluations)
    ours_task = load_search_task(domain_file, problem_file)
    ours = make_heuristic("ff", ours_task)
    states = list(seen)
    values = ours.batch([ours_task.facts_to_state(f for f in s if f in ours_task.fact_index) for s in states])
    differ = [(s, seen[s], float(v)) for s, v in zip(states, values) if float(v) != seen[s]]
    higher = sum(t > o for _, t, o in differ)
    print(f"  {problem_file.name}, hash seed {os.environ.get('PYTHONHASHSEED')}: "
          f"{'solved' if plan else 'unsolved'} after {evaluated} evaluations; {len(states)} distinct states "
          f"evaluated, h_FF differs on {len(differ)} ({higher} higher in the authors' code, "
          f"{len(differ) - higher} lower)")
    for state, their_value, our_value in differ[:shown]:
        print(f"    authors {their_value:g}, tnlib {our_value:g}: {' '.join(sorted(state))}")


def _key(record: dict) -> tuple[str, str, str, str, str]:
    return (record["planner"], record["plan_set"], record["domain"], record["instance"], str(record["hash_seed"]))


def _records(out: Path) -> list[dict]:
    if not out.is_file():
        return []
    text = gzip.decompress(out.read_bytes()).decode() if out.suffix == ".gz" else out.read_text()
    records = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [{"planner": "authors", **r} for r in records]


def _child(args: argparse.Namespace) -> None:
    """Plan every selected instance under this process's PYTHONHASHSEED, appending records to ``--out``."""
    sys.path.insert(1, args.authors_code)  # behind this script's folder (sys.path[0]), ahead of the installed pyperplan
    seed = os.environ["PYTHONHASHSEED"]
    out = Path(args.out)
    done = {_key(r) for r in _records(out)}
    plan = PLANNERS[args.planner]
    for domain in args.domains:
        domain_file = Path(args.data) / domain / "domain.pddl"
        for name, problem_file in _instances(args.data, domain, args.plan_set, args.per_cell):
            record = {"planner": args.planner, "plan_set": args.plan_set, "domain": domain, "instance": name,
                      "hash_seed": int(seed), "max_evaluations": args.max_evaluations}
            if _key(record) in done:
                continue
            record.update(plan(domain_file, problem_file, args.max_evaluations))
            with out.open("a") as f:
                f.write(json.dumps(record) + "\n")
            print(f"  {args.planner} seed {seed} {domain:<12} {name:<40} {'solved' if record['solved'] else 'unsolved':<8} "
                  f"{record['evaluations_counted']:>6} evaluations {record['seconds']:>8.1f} s", flush=True)


def summarise(out: Path, plan_set_name: str) -> None:
    """Coverage and mean evaluations (unsolved at the limit) per planner, domain and hash seed, on the instances
    every seed of that planner and domain finished."""
    records = [r for r in _records(out) if r["plan_set"] == plan_set_name]
    groups: dict[tuple[str, str], dict[int, dict[str, dict]]] = {}
    for r in records:
        groups.setdefault((r["planner"], r["domain"]), {}).setdefault(r["hash_seed"], {})[r["instance"]] = r
    for (planner, domain), by_seed in groups.items():
        common = sorted(set.intersection(*(set(v) for v in by_seed.values())))
        coverages = []
        for seed, rows in sorted(by_seed.items()):
            chosen = [rows[n] for n in common]
            solved = sum(r["solved"] for r in chosen)
            coverages.append(solved / len(chosen))
            print(f"  {planner:<17} {plan_set_name} {domain:<12} hash seed {seed:>3}: coverage {coverages[-1]:.2f} "
                  f"({solved}/{len(chosen)}), mean evaluations {statistics.fmean(r['evaluations'] for r in chosen):,.0f}")
        print(f"  {planner:<17} {plan_set_name} {domain:<12} over {len(coverages)} hash seeds: coverage "
              f"{min(coverages):.2f}-{max(coverages):.2f} on {len(common)} instances; the paper's h_FF: "
              f"{FF_COVERAGE[domain]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--authors-code", required=True, help="an export of IBM/pddlsl (holds pddlsl/)")
    parser.add_argument("--data", default="data/paper")
    parser.add_argument("--plan-set", default="plan-set")
    parser.add_argument("--domains", nargs="+", default=["blocksworld", "ferry"])
    parser.add_argument("--per-cell", type=int, default=None, help="instances per grid cell (default: all)")
    parser.add_argument("--hash-seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--max-evaluations", type=int, default=MAX_EVALUATIONS)
    parser.add_argument("--out", required=True, help="JSON-lines file of per-instance records (appended)")
    parser.add_argument("--planner", choices=sorted(PLANNERS), default="authors",
                        help="the authors' code, or tnlib's search and h_FF in the authors' operator order")
    parser.add_argument("--compare-h", metavar="PROBLEM", help="only compare h_FF values on one problem file")
    parser.add_argument("--summary-only", action="store_true",
                        help="summarise --out (a .jsonl, or a .jsonl.gz) without planning")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.compare_h:
        sys.path.insert(0, args.authors_code)
        problem = Path(args.compare_h)
        compare_h(problem.parents[2] / "domain.pddl", problem, args.max_evaluations, shown=3)
        return
    if args.child:
        _child(args)
        return
    if args.summary_only:
        summarise(Path(args.out), args.plan_set)
        return
    print(f"The authors' GBFS + h_FF (pyperplan 2.1 + {args.authors_code}/pddlsl/custom_pyperplan), at most "
          f"{args.max_evaluations:,} evaluations, on {args.data} {args.plan_set}", flush=True)
    for seed in args.hash_seeds:
        command = [sys.executable, __file__, "--child", "--authors-code", args.authors_code, "--data", args.data,
                   "--plan-set", args.plan_set, "--planner", args.planner, "--domains", *args.domains, "--max-evaluations",
                   str(args.max_evaluations), "--out", args.out]
        if args.per_cell is not None:
            command += ["--per-cell", str(args.per_cell)]
        subprocess.run(command, check=True, env={**os.environ, "PYTHONHASHSEED": str(seed)})
    summarise(Path(args.out), args.plan_set)


if __name__ == "__main__":
    main()
