"""Labelling cost per state next to the optimal solve, and next to the paper's way of labelling.

    .venv/bin/python benchmarks/bench_labelling.py [--instances 6] [--fd-states 4] [--domains ...]

For each domain it generates instances at the ``small`` profile's test sizes, solves each with Fast Downward
(A* + LM-cut, what dataset generation does), and labels every state on the optimal plan with
:func:`tnlib.data.labels.label_instance`: grounding + plan validation, all heuristics and linear features in one
batch, and h_sat (a GBFS(h_FF) run per state, 10,000 evaluations at most). It prints ms/state for each part, the
solve time per instance, and labelling as a share of solving.

Baseline: the paper's code ran Fast Downward twice more per state to label it. The script times one Fast Downward
heuristic run (translate + evaluate LM-cut on the state as initial state) on ``--fd-states`` states per domain and
reports twice that as the baseline's ms/state. A warm-up instance is labelled first, so numba's compile or cache
load (reported once) is excluded from the per-state figures.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from tnlib.planning.generators import generate
from tnlib.data.labels import label_instance
from tnlib.planning.fast_downward import fd_heuristic_value, solve

SIZES = {
    "blocksworld": [dict(blocks=9), dict(blocks=10)],
    "ferry": [dict(locations=6, cars=6)],
    "gripper": [dict(balls=10)],
    "visitall": [dict(x=5, y=5, ratio=1.0)],
}


def with_initial_state(problem_text: str, atoms: list[str]) -> str:
    """The problem with its :init replaced by ``atoms`` (static atoms included, as the dataset stores states)."""
    head, rest = problem_text.split("(:init", 1)
    goal = rest[rest.index("(:goal"):]
    return head + "(:init\n    " + "\n    ".join(atoms) + "\n  )\n  " + goal


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", type=int, default=6, help="instances per domain")
    parser.add_argument("--fd-states", type=int, default=4, help="states per domain timed with Fast Downward")
    parser.add_argument("--domains", nargs="*", default=list(SIZES), choices=list(SIZES))
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        warm = folder / "warm.pddl"
        warm.write_text(generate("gripper", 1, balls=4))
        started = time.perf_counter()
        label_instance("gripper", warm, solve("gripper", warm).plan)
        print(f"warm-up (numba compile or cache load, pyperplan import): {time.perf_counter() - started:.2f} s\n")

        header = (f"{'domain':<12} {'inst':>4} {'states':>6} {'solve s/inst':>12} {'label ms/state':>14} "
                  f"{'ground':>7} {'heur':>6} {'h_sat':>6} {'label/solve':>11} {'paper-way ms/state':>18}")
        print(header)
        print("-" * len(header))
        totals = {"solve": 0.0, "label": 0.0, "states": 0, "baseline": []}
        for domain in args.domains:
            solve_s = ground = heur = sat = 0.0
            states = 0
            fd_times: list[float] = []
            for k in range(args.instances):
                params = SIZES[domain][k % len(SIZES[domain])]
                text = generate(domain, 1000 + k, **params)
                path = folder / f"{domain}-{k}.pddl"
                path.write_text(text)
                solved = solve(domain, path, time_limit=120)
                if not solved.solved or not solved.plan:
                    continue
                solve_s += solved.seconds
                records, timing = label_instance(domain, path, solved.plan)
                ground += timing.ground
                heur += timing.heuristics
                sat += timing.h_sat
                states += timing.states
                for record in records[: max(0, args.fd_states - len(fd_times))]:
                    probe = folder / f"{domain}-{k}-s{record['step']}.pddl"
                    probe.write_text(with_initial_state(text, record["state"]))
                    t0 = time.perf_counter()
                    value = fd_heuristic_value(domain, probe, "lmcut()")
                    fd_times.append(time.perf_counter() - t0)
                    assert value is not None
            label = ground + heur + sat
            baseline = 2 * statistics.mean(fd_times) * 1000 if fd_times else float("nan")
            instances = args.instances
            print(f"{domain:<12} {instances:>4} {states:>6} {solve_s / instances:>12.3f} "
                  f"{label / states * 1000:>14.2f} {ground / states * 1000:>7.2f} {heur / states * 1000:>6.2f} "
                  f"{sat / states * 1000:>6.2f} {label / solve_s:>10.1%} {baseline:>18.0f}")
            totals["solve"] += solve_s
            totals["label"] += label
            totals["states"] += states
            totals["baseline"] += [baseline]
        print("-" * len(header))
        per_state = totals["label"] / totals["states"] * 1000
        paper = statistics.mean(totals["baseline"])
        print(f"all: labelling {per_state:.2f} ms/state = {totals['label'] / totals['solve']:.1%} of solve time; "
              f"the paper's two Fast Downward runs per state: ~{paper:.0f} ms/state ({paper / per_state:.0f}x)")


if __name__ == "__main__":
    main()
