"""Heuristic speed: tnlib's batch kernels against pyperplan on the same random reachable states.

    .venv/bin/python benchmarks/bench_heuristics.py [--states 400] [--pyperplan-states 60] [--domains ...]

For each domain (one generated instance at the paper's test-set scale, blocksworld with 16 blocks) it draws
random-walk states, times tnlib's ``Heuristic.batch`` over all of them (after a warm-up call, so numba's first
call -- reported separately -- is excluded) and pyperplan's heuristic on a prefix, and prints ms/state for both,
the speed-up, and how often the two agree (h_max/h_add must agree always; h_FF differs from stock pyperplan only
by hash-order tie-breaking; LM-cut implementations legitimately differ). ``lmcut-fd`` is tnlib's LM-cut breaking
supporter ties as Fast Downward does (:class:`tnlib.planning.heuristics.FastDownwardLMCutHeuristic`).
"""
from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from pyperplan.heuristics.lm_cut import LmCutHeuristic
from pyperplan.heuristics.relaxation import hAddHeuristic, hFFHeuristic, hMaxHeuristic
from pyperplan.search.searchspace import make_root_node

from tnlib.planning.generators import generate
from tnlib.planning.heuristics import FastDownwardLMCutHeuristic, make_heuristic
from tnlib.planning.search import random_walk_states
from tnlib.planning.task import load_task, parse_and_ground

INSTANCES = {
    "blocksworld": dict(blocks=16),
    "ferry": dict(locations=10, cars=10),
    "gripper": dict(balls=20),
    "visitall": dict(x=7, y=7, ratio=1.0),
}
PYPERPLAN = {"hmax": hMaxHeuristic, "hadd": hAddHeuristic, "ff": hFFHeuristic, "lmcut": LmCutHeuristic,
             "lmcut-fd": LmCutHeuristic}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--states", type=int, default=400, help="random-walk states per domain for tnlib")
    parser.add_argument("--pyperplan-states", type=int, default=60, help="prefix of them evaluated by pyperplan")
    parser.add_argument("--domains", nargs="*", default=list(INSTANCES), choices=list(INSTANCES))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="bench-heuristics-"))
    print(f"{'domain':<12} {'heuristic':<9} {'tnlib ms/state':>15} {'pyperplan ms/state':>19} {'speed-up':>9}"
          f" {'agree':>6} {'first call s':>13}")
    for domain in args.domains:
        path = workdir / f"{domain}.pddl"
        path.write_text(generate(domain, args.seed, **INSTANCES[domain]))
        task = load_task(domain, path)
        reference = parse_and_ground(task.domain_file, task.problem_file)
        states = random_walk_states(task, args.states, args.seed, restart=0.02)
        prefix = states[: args.pyperplan_states]
        nodes = [make_root_node(task.state_to_facts(s)) for s in prefix]
        for name in ("goalcount", "hmax", "hadd", "ff", "lmcut", "lmcut-fd"):
            # lmcut-fd: the same kernel breaking supporter ties as Fast Downward does
            heuristic = FastDownwardLMCutHeuristic(task) if name == "lmcut-fd" else make_heuristic(name, task)
            started = time.perf_counter()
            heuristic.batch(states[:1])  # numba: compile or load from cache
            first_call = time.perf_counter() - started
            started = time.perf_counter()
            ours = heuristic.batch(states)
            ours_ms = 1000 * (time.perf_counter() - started) / len(states)
            if name in PYPERPLAN:
                theirs_h = PYPERPLAN[name](reference)
                started = time.perf_counter()
                theirs = [theirs_h(node) for node in nodes]
                theirs_ms = 1000 * (time.perf_counter() - started) / len(nodes)
                agree = sum(a == b for a, b in zip(ours, theirs)) / len(nodes)
                print(f"{domain:<12} {name:<9} {ours_ms:>15.4f} {theirs_ms:>19.3f} {theirs_ms / ours_ms:>8.0f}x"
                      f" {agree:>6.0%} {first_call:>13.2f}")
            else:
                print(f"{domain:<12} {name:<9} {ours_ms:>15.4f} {'-':>19} {'-':>9} {'-':>6} {first_call:>13.2f}")
        print(f"{'':<12} ({task.num_facts} facts, {task.num_operators} operators, {len(states)} states,"
              f" pyperplan on {len(nodes)})")


if __name__ == "__main__":
    main()
