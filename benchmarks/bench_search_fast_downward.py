"""GBFS with h_FF and with LM-cut at the paper's largest test sizes: tnlib against Fast Downward.

    .venv/bin/python benchmarks/bench_search_fast_downward.py [--domains ...] [--heuristics ff lmcut] [--repeats 3]

Per domain, on the largest instance of its plan set at the paper's test sizes (data/paper/DOMAIN/plan-set:
blocksworld 22 blocks, ferry 30 x 30, gripper 100 balls, visitall 7 x 7), eager GBFS with one heuristic in both
planners: tnlib's ``gbfs`` under distinct-state counting (each distinct state evaluated once, goal test at expansion,
as Fast Downward's ``eager_greedy``) and Fast Downward's search binary (the ``up-fast-downward`` wheel's, the one
tnlib labels data with) on its translation of the same PDDL. Both stop at the goal, at ``--evaluations``
evaluations (tnlib) or after the time tnlib took, doubled, plus a second (Fast Downward has no evaluation limit;
``max_time``). The figure of merit is evaluations per second over the whole search -- successor generation,
duplicate detection, open list and heuristic together: Fast Downward's "Evaluated N state(s)" over its "Search
time"; tnlib's evaluations over its search's seconds, after a warm-up search (numba's compiled kernels loaded).
Translation and grounding are not timed. The two searches break ties differently, so they visit different states;
the rates compare the cost of an evaluation, not the searches. Medians over ``--repeats`` runs.
"""
from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from bench_wl import DOMAINS, largest_plan_instance

from tnlib.planning.fast_downward import fast_downward_version, search_binary, translate_command
from tnlib.planning.heuristics import make_heuristic
from tnlib.planning.pddl import resolve_domain
from tnlib.planning.plans import validate_plan
from tnlib.planning.search import gbfs
from tnlib.planning.search_settings import DISTINCT, SearchSettings
from tnlib.planning.task import load_task

FAST_DOWNWARD_HEURISTIC = {"ff": "ff()", "lmcut": "lmcut()", "hadd": "add()", "goalcount": "goalcount()"}


def translate(domain_file: Path, problem: Path, folder: Path) -> Path:
    sas = folder / f"{problem.stem}.sas"
    subprocess.run(translate_command() + [str(domain_file), str(problem), "--sas-file", str(sas)],
                   capture_output=True, text=True, check=True, cwd=folder)
    return sas


def fast_downward_search(sas: Path, heuristic: str, max_seconds: float) -> dict:
    with open(sas) as stdin:
        out = subprocess.run([str(search_binary()), "--search",
                              f"eager_greedy([{FAST_DOWNWARD_HEURISTIC[heuristic]}], max_time={max_seconds:.1f})"],
                             stdin=stdin, capture_output=True, text=True, cwd=sas.parent)
    evaluated = re.search(r"Evaluated (\d+) state", out.stdout)
    seconds = re.search(r"Search time: ([0-9.]+)s", out.stdout)
    if evaluated is None or seconds is None:
        raise SystemExit(f"Fast Downward printed no evaluation count (exit {out.returncode}):\n{out.stdout[-2000:]}")
    return {"evaluations": int(evaluated.group(1)), "seconds": float(seconds.group(1)),
            "solved": "Solution found" in out.stdout}


def tnlib_search(task, heuristic: str, evaluations: int) -> dict:
    result = gbfs(task, make_heuristic(heuristic, task), SearchSettings(DISTINCT, evaluations))
    if result.solved and not validate_plan(task, result.plan).valid:
        raise SystemExit(f"tnlib's plan with {heuristic} does not validate")
    return {"evaluations": result.evaluations, "seconds": result.seconds, "solved": result.solved}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--domains", nargs="+", default=list(DOMAINS), choices=DOMAINS)
    parser.add_argument("--heuristics", nargs="+", default=["ff", "lmcut"], choices=sorted(FAST_DOWNWARD_HEURISTIC))
    parser.add_argument("--evaluations", type=int, default=10_000,
                        help="tnlib's evaluation limit (default: %(default)s, the paper's)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    print(f"{fast_downward_version()}; eager GBFS, distinct-state counting; medians of {args.repeats} runs")
    print(f"{'domain':12s} {'instance':34s} {'h':6s} {'tnlib evals':>11s} {'FD evals':>9s} {'tnlib eval/s':>12s} "
          f"{'FD eval/s':>10s} {'tnlib/FD':>8s}")
    with tempfile.TemporaryDirectory() as tmp:
        for domain in args.domains:
            problem = largest_plan_instance(domain)
            domain_file = resolve_domain(domain)
            sas = translate(Path(domain_file), problem, Path(tmp))
            task = load_task(domain, problem)
            for heuristic in args.heuristics:
                tnlib_search(task, heuristic, 50)  # warm-up: numba loads the compiled kernels
                mine, theirs = [], []
                for _ in range(args.repeats):
                    started = time.perf_counter()
                    mine.append(tnlib_search(task, heuristic, args.evaluations))
                    limit = 2 * (time.perf_counter() - started) + 1
                    theirs.append(fast_downward_search(sas, heuristic, limit))
                my_rate = statistics.median(r["evaluations"] / r["seconds"] for r in mine)
                their_rate = statistics.median(r["evaluations"] / r["seconds"] for r in theirs)

                def count(runs):
                    return f"{runs[0]['evaluations']:,}" + ("" if runs[0]["solved"] else "+")

                print(f"{domain:12s} {problem.stem:34s} {heuristic:6s} {count(mine):>11s} {count(theirs):>9s} "
                      f"{my_rate:12,.0f} {their_rate:10,.0f} {my_rate / their_rate:8.2f}", flush=True)
    print("evals: a search's evaluations (+: stopped unsolved, at tnlib's limit or Fast Downward's time limit)")


if __name__ == "__main__":
    main()
