"""What finishing a sweep that trains until flat costs, beside starting it again with a faster training step.

    .venv/bin/python benchmarks/campaign_cost.py                 # reports/paper-scale-nlm5/runs, its pinned step times
    .venv/bin/python benchmarks/campaign_cost.py --speed-up 2.15 1.92 1.91 2.17

The grid is the preset's with ``--seeds`` and ``--configs`` (by default the campaign's 160 runs). Per domain, the
runs whose training has ended -- tested, or trained to the end of a chunk where the sweep stops them (flat, or at
max_steps) and waiting for their test -- give the mean number of steps a run of that domain trained to (6,000, then
on while still improving; the domain's configurations pooled); every other run is expected to end there, or at the
end of the chunk it is training in where that is further (in a domain with no ended run, there: a floor). A run
waiting for its test costs a test evaluation (``--test-seconds``).
Hours are steps times ``--step-seconds`` (one process; the defaults are the paper-scale campaign's pinned code's
`--dry-run` figures, validation included, in blocksworld / ferry / gripper / visitall order). ``--speed-up`` (the
same order; measured paired by ``benchmarks/bench_nlm_training_step.py --before CODE``) prices starting every run of
the grid again with a step that many times faster, each run again expected to end at its domain's mean. Both are
expectations: how far a run trains until flat depends on its rounding, so a restarted run may end elsewhere.
"""
from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from pathlib import Path

from tnlib.experiments.sweep_settings import Sweep
from tnlib.files import read_jsonl
from tnlib.learning.run_files import RunDir
from tnlib.learning.until_flat import still_improving
from tnlib.paper import DOMAINS

CAMPAIGN_STEP_SECONDS = (0.128, 0.06, 0.097, 0.41)
# the pinned code's --dry-run figure for a run's test evaluation
CAMPAIGN_TEST_SECONDS = 30.0


def reached_step(run: RunDir) -> int:
    """The last validated step of a run folder (0 where it has none)."""
    if not run.curves_file.is_file():
        return 0
    return max((int(row["step"]) for row in read_jsonl(run.curves_file) if "step" in row), default=0)


def ended_steps(run: RunDir, max_steps: int) -> int | None:
    """The steps a run's training ended at -- tested, or trained to the end of its chunk where the sweep stops it
    (its curve flat there, or at ``max_steps``: tnlib.experiments.running.cells.train_until_flat) --, else None."""
    if not run.config_file.is_file():
        return None
    steps = run.read_config()["steps"]
    if run.metrics_file("test").is_file():
        return steps
    if reached_step(run) < steps:
        return None
    curve = [row["val_mse"] for row in read_jsonl(run.curves_file) if "val_mse" in row]
    return steps if steps >= max_steps or still_improving(curve) is False else None


def positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", nargs="?", type=Path, default=Path("reports/paper-scale-nlm5/runs"))
    parser.add_argument("--preset", default="paper-scale", help="the sweep's preset (%(default)s)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--configs", nargs="+", default=["learn/ff", "fixed/none", "learn/none", "fixed/ff"])
    parser.add_argument("--step-seconds", nargs=len(DOMAINS), type=positive, default=CAMPAIGN_STEP_SECONDS,
                        metavar="S", help="seconds a step, one process, per domain (%(default)s)")
    parser.add_argument("--test-seconds", type=positive, default=CAMPAIGN_TEST_SECONDS,
                        help="seconds a run's test evaluation takes, one process (%(default)s)")
    parser.add_argument("--speed-up", nargs=len(DOMAINS), type=positive, metavar="X",
                        help="a faster step's speed-up per domain: also price starting the grid again with it")
    args = parser.parse_args(argv)
    if not args.results.is_dir():
        parser.error(f"{args.results} is not a folder")
    sweep = Sweep.from_parameters(args.preset, seeds=args.seeds, configs=args.configs, out_dir=str(args.results))
    step_seconds = dict(zip(DOMAINS, args.step_seconds))
    speed_up = dict(zip(DOMAINS, args.speed_up or [1.0] * len(DOMAINS)))
    # per domain: the steps each ended run ended at; (step reached, end of the chunk it is in) of each run left;
    # the ended runs still waiting for their test
    finished, left, untested = defaultdict(list), defaultdict(list), defaultdict(int)
    max_steps = sweep.max_steps or 0
    for config in sweep.train_configs():
        run = RunDir(args.results / config.name)
        ended = ended_steps(run, max_steps)
        if ended is not None:
            finished[config.domain].append(ended)
            untested[config.domain] += not run.metrics_file("test").is_file()
        else:
            chunk_end = run.read_config()["steps"] if run.config_file.is_file() else config.steps
            left[config.domain].append((reached_step(run), chunk_end))
    print(f"{args.results}: {sum(map(len, finished.values()))} runs trained ({sum(untested.values())} of them "
          f"waiting for their test), {sum(map(len, left.values()))} left to train")
    print("domain        ended  mean steps  left  s/step  finish h" + ("  restart h" if args.speed_up else ""))
    totals, floors = [0.0, 0.0], []
    for domain in sweep.domains:
        # no tested run to expect a length from: each run to the end of its chunk, a floor
        mean = statistics.mean(finished[domain]) if finished[domain] else None
        if mean is None:
            floors.append(domain)
        finish = sum(max(mean or 0, end) - step for step, end in left[domain]) * step_seconds[domain] / 3600
        finish += (untested[domain] + len(left[domain])) * args.test_seconds / 3600
        restart = sum(mean or end for _, end in left[domain]) + sum(finished[domain])
        restart *= step_seconds[domain] / speed_up[domain] / 3600
        totals = [totals[0] + finish, totals[1] + restart]
        print(f"{domain:<12} {len(finished[domain]):>6} {'-' if mean is None else f'{mean:,.0f}':>11} "
              f"{len(left[domain]):>5} {step_seconds[domain]:>7.3f} {finish:>9.1f}"
              + (f" {restart:>10.1f}" if args.speed_up else ""))
    print(f"{'all':<12} {'':>6} {'':>11} {'':>5} {'':>7} {totals[0]:>9.1f}"
          + (f" {totals[1]:>10.1f}" if args.speed_up else ""))
    if floors:
        print(f"at least: no run of {', '.join(floors)} ended yet, so those runs count to the end of their chunk")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
